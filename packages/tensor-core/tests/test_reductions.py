"""Reductions against NumPy: every row of the op table's REDUCTIONS (enumerated, so a
new row is tested without new test code) over any dims (int, tuple, negative, None)
with keepdim, over random shapes, layouts and dtypes; and the composites built on
them (mean, var/std with correction, argmax/argmin, max/min with dim, logsumexp,
norm, count_nonzero, nansum, nanmean)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ember as em
from ember.ops import table
from ember_testing import (
    DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    TOLERANCES,
    arrays,
    assert_close,
    dims_for,
    fewer_examples,
    layouts,
    normalize_dims,
    np_dtype,
    realize,
    shapes,
    to_numpy,
)

ROWS = [pytest.param(row, id=row.name) for row in table.REDUCTIONS]


def reduced_dtype(row, d):
    """The result dtype of reduction row over dtype d (ember's rules, written out):
    predicates give bool, sum/prod of bool and integers give int64, else d."""
    if row.out == "bool":
        return em.bool
    if row.out == "int64_if_int" and d.kind != "float":
        return em.int64
    return d


def reduced_oracle(row, vals, axis, keepdims):
    fn = getattr(np, row.numpy)
    with np.errstate(all="ignore"):
        if row.out == "int64_if_int":
            if vals.dtype.kind == "f":
                return fn(vals.astype(np.float64), axis=axis, keepdims=keepdims)
            return fn(vals, axis=axis, keepdims=keepdims, dtype=np.int64)
        return fn(vals, axis=axis, keepdims=keepdims)


def _reduces_empty(shape, axis):
    if not shape:
        return False
    dims = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return any(shape[d] == 0 for d in dims)


def _float_atol(d, vals, axis, keepdims):
    """Absolute tolerance of a float sum: the dtype's tolerance scaled by the largest
    sum of magnitudes that went into one output element."""
    r, a = TOLERANCES[d.name]
    mag = np.sum(np.abs(vals.astype(np.float64)), axis=axis, keepdims=keepdims)
    return a + r * (float(np.max(mag)) if np.size(mag) else 0.0)


@st.composite
def reduction_case(draw, dtypes, device, domain="all"):
    d = draw(st.sampled_from(dtypes))
    shape = draw(shapes(max_dims=4))
    t, vals = realize(draw(arrays(d, shape, domain)), draw(layouts), device)
    dim = draw(dims_for(len(shape)))
    keepdim = draw(st.booleans())
    return t, vals, d, dim, keepdim


def _row_dtypes(row):
    return tuple(d for d in DTYPES if d.kind in row.kinds)


@pytest.mark.parametrize("row", ROWS)
@given(data=st.data())
def test_reduction_row_matches_numpy(row, data, device):
    t, vals, d, dim, keepdim = data.draw(reduction_case(_row_dtypes(row), device))
    axis = normalize_dims(dim, vals.ndim)
    method = data.draw(st.booleans())

    def run():
        return getattr(t, row.name)(dim, keepdim) if method else \
            getattr(em, row.name)(t, dim, keepdim)

    if row.name in ("amax", "amin") and _reduces_empty(vals.shape, axis):
        with pytest.raises(ValueError, match=row.name):
            run()
        return
    expected = reduced_oracle(row, vals, axis, keepdim)
    out = reduced_dtype(row, d)
    msg = f"{row.name}({d.name}{vals.shape}, dim={dim}, keepdim={keepdim})"
    if out.kind == "float" and row.name == "sum":
        assert_close(run(), expected, out, atol=_float_atol(d, vals, axis, keepdim), msg=msg)
    else:
        assert_close(run(), expected, out, msg=msg)


def _red_special(d):
    if d.kind == "bool":
        return np.array([[False, True], [True, True], [False, False]])
    if d.kind == "int":
        info = np.iinfo(np_dtype(d))
        return np.array([[info.min, info.max, 0], [-1, 1, info.max], [info.min, 0, 0]],
                        np_dtype(d)) if info.min < 0 else \
            np.array([[0, info.max, 1], [info.max, info.max, 0], [0, 0, 0]], np_dtype(d))
    return np.array([[1.0, np.nan, -np.inf], [np.inf, -np.inf, 0.0], [-0.0, 2.0, np.inf],
                     [np.nan, 1.0, 3.0]], np_dtype(d))


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_reduction_edge_values(row, dtype, device):
    """NaN propagates through sum/prod/amax/amin, inf - inf is NaN, NaN is truthy for
    all/any, integer extremes wrap in int64 sums as in NumPy."""
    if dtype.kind not in row.kinds:
        with pytest.raises(TypeError, match=row.name):
            getattr(em, row.name)(em.zeros(2, dtype=dtype, device=device))
        return
    vals = _red_special(dtype)
    t = em.from_numpy(vals.copy()).to(device)
    for dim in (None, 0, 1, -1):
        axis = normalize_dims(dim, vals.ndim)
        expected = reduced_oracle(row, vals, axis, False)
        assert_close(getattr(em, row.name)(t, dim), expected, reduced_dtype(row, dtype),
                     msg=f"{row.name}({dtype.name}, dim={dim})")


# ----------------------------------------------------------------------------- accuracy

@pytest.fixture(scope="module")
def million():
    rng = np.random.default_rng(0)
    return rng.random(10 ** 6, dtype=np.float32) + np.float32(0.25)


def _rel_err(value, exact):
    return abs(float(value) - exact) / abs(exact)


def test_float32_sum_of_a_million_is_pairwise_accurate(million, device):
    """A naive float32 loop over 10**6 values drifts by ~1e-4 relative; NumPy's
    pairwise sum stays near 1e-7. ember must be as good as NumPy (or better)."""
    exact = float(np.sum(million.astype(np.float64)))
    ref_err = max(_rel_err(np.sum(million), exact), 1e-7)
    t = em.from_numpy(million).to(device)
    cases = {
        "1-d": t.sum(),
        "2-d all": t.reshape(1000, 1000).sum(),
        "transposed all": t.reshape(1000, 1000).T.sum(),
        "3-d all": t.reshape(100, 100, 100).sum(),
        "dims (0, 1)": t.reshape(1000, 1000).sum((0, 1)),
        "dims (1, 0) of T": t.reshape(1000, 1000).T.sum((1, 0)),
    }
    for name, value in cases.items():
        assert value.dtype == em.float32
        err = _rel_err(value.item(), exact)
        assert err <= 4 * ref_err, f"{name}: relative error {err:.2e}, NumPy's {ref_err:.2e}"


def test_float32_sum_along_a_long_dim_is_accurate(million, device):
    """Sums over one long dim, contiguous and strided: still no naive drift."""
    x = million.reshape(4, 250000)
    t = em.from_numpy(x.copy()).to(device)
    exact = x.astype(np.float64).sum(axis=1)
    for name, value in (("dim 1", t.sum(1)), ("dim 0 of T", t.T.sum(0)),
                        ("every other", t.unfold(1, 1, 2).sum((1, 2)))):
        ref = exact if name != "every other" else x[:, ::2].astype(np.float64).sum(axis=1)
        err = np.max(np.abs(to_numpy(value).astype(np.float64) - ref) / ref)
        assert err <= 1e-6, f"{name}: relative error {err:.2e}"



@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32"])
def test_large_reductions_that_widen_the_dtype(dtype, device):
    """Reductions big enough to be split across the pool, whose output dtype is wider
    than the input (int8 -> int64 sums) or a predicate: the partial results are folded
    in the output dtype, never reread as the input's."""
    rng = np.random.default_rng(7)
    vals = (rng.integers(0, 2, 1_000_003) if dtype == "bool"
            else rng.integers(-100 if dtype != "uint8" else 0, 100, 1_000_003)).astype(dtype)
    t = em.from_numpy(vals).to(device)
    for name, got, want in (("sum", t.sum(), vals.sum(dtype=np.int64)),
                            ("prod", (t != 0).prod(), np.prod(vals != 0, dtype=np.int64)),
                            ("sum of a predicate", (t > 0).sum(), (vals > 0).sum()),
                            ("2-d sum", t[:1_000_000].reshape(4, 250_000).sum(1),
                             vals[:1_000_000].reshape(4, 250_000).sum(1, dtype=np.int64)),
                            ("all", (t < 101).all(), True), ("any", (t > 100).any(), False)):
        np.testing.assert_array_equal(to_numpy(got), want, err_msg=f"{name} of {dtype}")



@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4), data=st.data(),
       keepdim=st.booleans(), name=st.sampled_from(["sum", "prod", "amax", "amin"]))
@settings(max_examples=40, deadline=None)
def test_float32_reduction_over_a_block_of_dims(shape, data, keepdim, name):
    """Consecutive dims of a contiguous float32 tensor (all of them, leading ones as a
    bias's gradient, a middle block) reduce as one dim of a (before, block, after) view:
    NumPy's values in float64 within float32 rounding, its shape, and the recorded
    gradient."""
    nd = len(shape)
    a = data.draw(st.integers(0, nd - 1))
    b = data.draw(st.integers(a + 1, nd))
    dims = tuple(range(a, b))
    x = np.random.default_rng(len(shape)).uniform(0.5, 1.5, shape).astype(np.float32)
    t = em.from_numpy(x).requires_grad_()
    got = getattr(em, name)(t, dims, keepdim=keepdim)
    want = getattr(np, {"amax": "max", "amin": "min"}.get(name, name))(
        x.astype(np.float64), axis=dims, keepdims=keepdim)
    assert got.dtype == em.float32 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=2e-6 * x.size)
    if name == "sum":
        got.sum().backward()
        np.testing.assert_array_equal(t.grad.numpy(), np.ones_like(x))


# ----------------------------------------------------------------------------- composites

@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_mean_matches_numpy(data, device):
    t, vals, d, dim, keepdim = data.draw(reduction_case(FLOAT_DTYPES, device))
    axis = normalize_dims(dim, vals.ndim)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # mean of an empty slice: NaN
        expected = np.mean(vals.astype(np.float64), axis=axis, keepdims=keepdim)
    assert_close(em.mean(t, dim, keepdim), expected, d,
                 atol=_float_atol(d, vals, axis, keepdim) / max(1, vals.size),
                 msg=f"mean({d.name}{vals.shape}, {dim}, {keepdim})")


@pytest.mark.parametrize("dtype", (em.bool,) + INT_DTYPES, ids=lambda d: d.name)
def test_mean_of_integers_raises(dtype, device):
    x = em.ones(3, dtype=dtype, device=device)
    with pytest.raises(TypeError, match=r"mean.*" + dtype.name):
        em.mean(x)
    with pytest.raises(TypeError, match="mean"):
        x.mean(0)
    assert em.mean(x, dtype=em.float32).item() == 1.0


@given(data=st.data(), correction=st.sampled_from([0, 1, 2]))
@settings(max_examples=fewer_examples(2))
def test_var_std_with_correction(data, correction, device):
    t, vals, d, dim, keepdim = data.draw(reduction_case(FLOAT_DTYPES, device))
    axis = normalize_dims(dim, vals.ndim)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # n - correction <= 0: inf / NaN
        w = vals.astype(np.float64)
        ev = np.var(w, axis=axis, ddof=correction, keepdims=keepdim)
        es = np.std(w, axis=axis, ddof=correction, keepdims=keepdim)
    r, a = TOLERANCES[d.name]
    got_v = em.var(t, dim, keepdim=keepdim, correction=correction)
    assert_close(got_v, ev, d, rtol=10 * r, atol=10 * a * 100,
                 msg=f"var({d.name}{vals.shape}, {dim}, correction={correction})")
    assert_close(em.std(t, dim, keepdim=keepdim, correction=correction), es, d, rtol=10 * r,
                 atol=10 * a * 10, msg=f"std({d.name}{vals.shape}, {dim}, correction={correction})")
    if correction in (0, 1):
        assert_close(em.var(t, dim, unbiased=bool(correction), keepdim=keepdim), ev, d,
                     rtol=10 * r, atol=10 * a * 100, msg="var(unbiased=...)")


def test_var_std_forms(device):
    x = em.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]], device=device)
    a = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    assert math.isclose(em.var(x).item(), np.var(a, ddof=1), rel_tol=1e-6)
    assert math.isclose(x.std(correction=0).item(), np.std(a), rel_tol=1e-6)
    np.testing.assert_allclose(to_numpy(x.var(1)), np.var(a, axis=1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(x.var(1, True)), np.var(a, axis=1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(x.var(1, False)), np.var(a, axis=1), rtol=1e-6)
    v, m = em.var_mean(x, 0)
    np.testing.assert_allclose(to_numpy(v), np.var(a, axis=0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(m), np.mean(a, axis=0), rtol=1e-6)
    s, m = em.std_mean(x, 1, correction=0, keepdim=True)
    np.testing.assert_allclose(to_numpy(s), np.std(a, axis=1, keepdims=True), rtol=1e-6)
    with pytest.raises(TypeError, match="var"):
        em.var(em.tensor([1, 2], device=device))


@st.composite
def arg_case(draw, device):
    """Many ties (values from a tiny set) and, for floats, NaNs."""
    d = draw(st.sampled_from(DTYPES))
    shape = draw(shapes(min_dims=0, max_dims=3, min_side=1))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    if d.kind == "bool":
        pool = np.array([False, True])
    elif d.kind == "int":
        pool = np.array([-2, 0, 3] if d.is_signed else [0, 3, 255], np_dtype(d))
    else:
        pool = np.array([-1.5, 0.0, 2.0, np.nan, -np.inf], np_dtype(d))
    if d.kind == "float" and not draw(st.booleans()):
        pool = pool[:3]
    vals = rng.choice(pool, size=shape).astype(np_dtype(d))
    t, vals = realize(vals, draw(layouts), device)
    dim = draw(st.one_of(st.none(), st.integers(-max(len(shape), 1), max(len(shape), 1) - 1)))
    return t, vals, d, dim, draw(st.booleans())


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_argmax_argmin_first_occurrence_nan_wins(name, data, device):
    t, vals, d, dim, keepdim = data.draw(arg_case(device))
    axis = normalize_dims(dim, vals.ndim)
    if d.kind == "bool":
        npvals = vals.astype(np.int8)
    else:
        npvals = vals
    expected = getattr(np, name)(npvals, axis=axis, keepdims=keepdim)
    if dim is None and keepdim:
        expected = np.reshape(expected, (1,) * vals.ndim)
    got = getattr(em, name)(t, dim, keepdim)
    assert_close(got, np.asarray(expected), em.int64,
                 msg=f"{name}({d.name} {vals.tolist()}, dim={dim}, keepdim={keepdim})")


@pytest.mark.parametrize("name", ["max", "min"])
@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_max_min_with_dim_returns_values_and_indices(name, data, device):
    t, vals, d, dim, keepdim = data.draw(arg_case(device))
    if dim is None:
        dim = 0
    axis = normalize_dims(dim, vals.ndim)
    r = getattr(em, name)(t, dim, keepdim)
    values, indices = r
    assert r.values is values and r.indices is indices
    npvals = vals.astype(np.int8) if d.kind == "bool" else vals
    ev = getattr(np, name)(vals, axis=axis, keepdims=keepdim)
    ei = getattr(np, "arg" + name)(npvals, axis=axis, keepdims=keepdim)
    assert_close(values, np.asarray(ev), d, msg=f"{name} values")
    assert_close(indices, np.asarray(ei), em.int64, msg=f"{name} indices")
    # the method form, and the whole-tensor / elementwise forms
    assert_close(getattr(t, name)(dim, keepdim=keepdim).values, np.asarray(ev), d)
    assert_close(getattr(em, name)(t), np.asarray(getattr(np, name)(vals)), d)
    other = em.from_numpy(vals[::-1].copy()).to(device) if vals.ndim else t
    assert_close(getattr(em, name)(t, other),
                 getattr(np, "maximum" if name == "max" else "minimum")(vals, to_numpy(other)), d)


def test_argmax_empty_raises_and_0d(device):
    with pytest.raises(ValueError, match="argmax"):
        em.argmax(em.zeros(0, device=device))
    with pytest.raises(ValueError, match="argmin"):
        em.argmin(em.zeros(2, 0, device=device), 1)
    assert em.argmax(em.tensor(3.0, device=device)).item() == 0
    assert em.argmax(em.zeros(0, 3, device=device), 1).shape == (0,)


@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_logsumexp(data, device):
    d = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(shapes(max_dims=3))
    vals = data.draw(arrays(d, shape))
    if d.kind == "float":
        # large values (no overflow allowed), -inf rows (the result is -inf)
        vals = vals * data.draw(st.sampled_from([1, 50, 1000] if d.name != "float16" else [1, 5]))
        if vals.size and data.draw(st.booleans()):
            vals.reshape(-1)[0] = -np.inf
    t, vals = realize(vals, data.draw(layouts), device)
    dim = data.draw(dims_for(len(shape)))
    keepdim = data.draw(st.booleans())
    axis = normalize_dims(dim, vals.ndim)
    w = vals.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.max(w, axis=axis, keepdims=True) if w.size else np.zeros([1] * w.ndim)
        m = np.where(np.isinf(m), 0.0, m)
        expected = np.log(np.sum(np.exp(w - m), axis=axis, keepdims=True)) + m
        if not keepdim:
            expected = np.squeeze(expected, axis=axis) if axis is not None else expected.reshape(())
    out = d if d.kind == "float" else em.get_default_dtype()
    assert_close(em.logsumexp(t, dim, keepdim), expected, out,
                 msg=f"logsumexp({d.name}{vals.shape}, {dim}, {keepdim})")


def _vector_norm(x, p, axis, keepdims):
    """numpy.linalg.vector_norm (NumPy >= 2) for any NumPy, computed as ember does:
    |x| ** p elementwise in x's float dtype, float16 in float32 (as its sum, so
    that only the result rounds to float16); the sum in float64."""
    work = np.float32 if x.dtype == np.float16 else x.dtype
    with np.errstate(all="ignore"):
        a = np.abs(x.astype(work)).astype(x.dtype)
        if p == math.inf:
            return np.max(a, axis=axis, keepdims=keepdims)
        if p == -math.inf:
            return np.min(a, axis=axis, keepdims=keepdims)
        if p == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
        powered = (a.astype(work) ** p).astype(work).astype(np.float64)
        return np.sum(powered, axis=axis, keepdims=keepdims) ** (1.0 / p)


@pytest.mark.parametrize("p", [1, 2, math.inf, -math.inf, 0, 3, "fro", 0.5])
@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_norm_matches_numpy(p, data, device):
    d = data.draw(st.sampled_from(DTYPES[1:]))
    shape = data.draw(shapes(max_dims=3, min_side=1 if p in (math.inf, -math.inf) else 0))
    t, vals = realize(data.draw(arrays(d, shape)), data.draw(layouts), device)
    dim = data.draw(dims_for(len(shape)))
    keepdim = data.draw(st.booleans())
    axis = normalize_dims(dim, vals.ndim)
    out = d if d.kind == "float" else em.get_default_dtype()
    expected = _vector_norm(vals.astype(np_dtype(out)), 2 if p == "fro" else p, axis, keepdim)
    r, a = TOLERANCES[out.name]
    assert_close(em.norm(t, p, dim, keepdim), np.asarray(expected), out, rtol=4 * r,
                 atol=a * 10, msg=f"norm({d.name}{vals.shape}, p={p}, dim={dim})")


@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_count_nonzero_nansum_nanmean(data, device):
    t, vals, d, dim, keepdim = data.draw(reduction_case(DTYPES, device))
    axis = normalize_dims(dim, vals.ndim)
    assert_close(em.count_nonzero(t, dim), np.asarray(np.count_nonzero(vals, axis=axis)),
                 em.int64)
    if d.kind == "float":
        v = vals.copy()
        if v.size:
            v.reshape(-1)[::3] = np.nan
        tv = em.from_numpy(v.copy()).to(device)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            es = np.nansum(v.astype(np.float64), axis=axis, keepdims=keepdim)
            em_ = np.nanmean(v.astype(np.float64), axis=axis, keepdims=keepdim)
        assert_close(em.nansum(tv, dim, keepdim), es, d,
                     atol=_float_atol(d, np.nan_to_num(v), axis, keepdim))
        assert_close(em.nanmean(tv, dim, keepdim), em_, d, atol=TOLERANCES[d.name][1] * 20)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_sum_prod_dtype_argument(dtype, device):
    x = em.tensor([[1, 2], [3, 4]], dtype=dtype, device=device)
    assert em.sum(x).dtype == (dtype if dtype.kind == "float" else em.int64)
    assert em.sum(x, dtype=em.float64).dtype == em.float64
    expected = float(np.sum(np.array([[1, 2], [3, 4]]).astype(np_dtype(dtype))))
    assert em.sum(x, dtype=em.float64).item() == expected
    assert em.prod(x, 1, dtype=em.float32).dtype == em.float32


def test_reduction_of_0d_and_keepdim_shapes(device):
    x = em.tensor(5.0, device=device)
    for name in ("sum", "prod", "amax", "amin", "all", "any"):
        for dim in (None, 0, -1):
            r = getattr(em, name)(x, dim)
            assert r.shape == (), (name, dim, r.shape)
            assert getattr(em, name)(x, dim, True).shape == (), (name, dim)
    y = em.ones(2, 3, 4, device=device)
    assert em.sum(y, (0, 2), keepdim=True).shape == (1, 3, 1)
    assert em.sum(y, (-1, 0)).shape == (3,)
    assert em.sum(y, keepdim=True).shape == (1, 1, 1)
    assert em.sum(em.ones(2, 0, device=device), 1).tolist() == [0.0, 0.0]
    assert em.prod(em.ones(0, 2, device=device), 0).tolist() == [1.0, 1.0]
    assert em.all(em.ones(0, device=device)).item() is True
    assert em.any(em.ones(0, device=device)).item() is False


def test_multi_dim_reductions_accumulate_in_the_wide_type(device):
    """Reducing dims (0, 2) with dim 1 kept takes several runs; the partial results
    must not round to (or overflow) float16 between runs."""
    a = np.empty((2, 2, 2), np.float16)
    a[0], a[1] = 300.0, 0.01                      # partial product 90000 > float16 max
    expected = np.prod(a.astype(np.float64), axis=(0, 2)).astype(np.float16)
    assert_close(em.prod(em.from_numpy(a).to(device), (0, 2)), expected, em.float16)
    b = np.empty((2, 2, 2), np.float16)
    b[0, :, 0], b[0, :, 1], b[1, :, 0], b[1, :, 1] = 1, 2048, 1, 0   # exact sum 2050
    assert em.sum(em.from_numpy(b).to(device), (0, 2)).tolist() == [2050.0, 2050.0]


# issue 16 item 17: median propagates NaN; nanmedian skips it ------------------------------

def _lower_median_ref(vals, axis, skip_nan):
    """The lower median along axis, written out: with a NaN in the slice, NaN (median)
    or the lower median of the rest (nanmedian; NaN when nothing is left)."""
    moved = np.moveaxis(vals, axis, -1)
    out = np.empty(moved.shape[:-1], vals.dtype)
    for idx in np.ndindex(out.shape):
        row = moved[idx]
        nan = np.isnan(row) if vals.dtype.kind == "f" else np.zeros(row.shape, bool)
        if nan.any() and not skip_nan:
            out[idx] = np.nan
            continue
        row = np.sort(row[~nan])
        out[idx] = row[(row.size - 1) // 2] if row.size else np.nan
    return out


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_issue16_item17_median_nanmedian_match_the_reference(op, data, device):
    t, vals, d, dim, keepdim = data.draw(arg_case(device))
    if d.kind == "bool":
        t, vals, d = t.to(em.int64), vals.astype(np.int64), em.int64
    skip = op == "nanmedian"
    fn = getattr(em, op)
    if dim is None:
        got = fn(t)
        assert_close(got, _lower_median_ref(vals.reshape(1, -1), 1, skip)[0], d,
                     msg=f"{op}({vals.tolist()})")
        assert_close(getattr(t, op)(), _lower_median_ref(vals.reshape(1, -1), 1, skip)[0], d)
        return
    axis = dim % max(vals.ndim, 1)
    expected = _lower_median_ref(vals.reshape(vals.shape or (1,)), axis, skip)
    values, indices = fn(t, dim, keepdim)
    if keepdim and vals.ndim:
        expected = np.expand_dims(expected, axis)
    expected = expected.reshape(values.shape)
    assert_close(values, expected, d, msg=f"{op}({vals.tolist()}, {dim}, {keepdim})")
    assert indices.dtype == em.int64 and indices.shape == values.shape
    if vals.ndim:
        # the index points at the value; a NaN median at the slice's first NaN
        idx = to_numpy(indices if keepdim else indices.unsqueeze(dim))
        picked = np.take_along_axis(vals, idx, axis)
        assert_close(em.from_numpy(np.ascontiguousarray(picked)), expected.reshape(picked.shape), d)
        if d.kind == "float" and not skip:
            isnan = np.isnan(vals)
            has = isnan.any(axis=axis, keepdims=True)
            assert (idx[has] == np.argmax(isnan, axis=axis, keepdims=True)[has]).all()


def test_issue16_item17_median_nan_examples(device):
    nan = math.nan
    assert math.isnan(em.tensor([nan, 1., 2.], device=device).median().item())
    v, i = em.tensor([1., nan, 3.], device=device).median(0)
    assert math.isnan(v.item()) and i.item() == 1
    v, i = em.tensor([[1., nan, 3., nan], [4., 5., 6., 7.]], device=device).median(1)
    assert math.isnan(v[0].item()) and v[1].item() == 5.0 and i.tolist() == [1, 1]
    assert em.tensor([1., nan, 3., nan, 2.], device=device).nanmedian().item() == 2.0
    v, i = em.tensor([[nan, nan], [nan, 4.]], device=device).nanmedian(1)
    assert math.isnan(v[0].item()) and v[1].item() == 4.0 and i[1].item() == 1
    assert math.isnan(em.tensor([nan, nan], device=device).nanmedian().item())
    # the empty tensor's median is NaN (as PyTorch); an empty dim has none
    assert math.isnan(em.empty(0, device=device).median().item())
    with pytest.raises(IndexError, match="median.*empty dim 1"):
        em.ones(2, 0, device=device).median(1)
    # the other value-selecting ops already treat NaN as PyTorch does: the largest
    x = em.tensor([1., nan, 3., nan, 0.], device=device)
    assert x.sort().indices.tolist() == [4, 0, 2, 1, 3]
    assert x.sort(descending=True).indices.tolist() == [1, 3, 2, 0, 4]
    assert x.topk(2).indices.tolist() == [1, 3]
    assert x.topk(2, largest=False).indices.tolist() == [4, 0]
    assert x.kthvalue(4).indices.item() == 1
    for op in ("max", "min"):
        assert math.isnan(getattr(x, op)().item())
        assert getattr(x, op)(0).indices.item() == 1
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert math.isnan(x.amax().item()) and math.isnan(x.amin().item())


def test_issue16_item17_median_gradient_flows_to_the_picked_element():
    x = em.tensor([[3., 1., 2.], [5., 4., 6.]], requires_grad=True)
    x.median(1).values.sum().backward()
    assert x.grad.tolist() == [[0., 0., 1.], [1., 0., 0.]]


# issue 16 item 18: float16 reductions accumulate in float32 -----------------------------

_F16_BIG = [1.0, -2.0, 65504.0]          # float16 partial sums/squares overflow


def _f16(values, device):
    return em.tensor(values, dtype=em.float16, device=device)


def _pnorm(w, p):
    return (np.abs(w) ** p).sum() ** (1 / p)


@pytest.mark.parametrize("name, fn, values, expected", [
    ("mean", lambda t: t.mean(), [60000.0, 60000.0], np.mean),
    ("mean_dim", lambda t: t.reshape(2, 2).mean(0), [6e4, 3e4, 6e4, 4e4],
     lambda w: w.reshape(2, 2).mean(0)),
    ("nanmean", em.nanmean, [60000.0, math.nan, 60000.0], np.nanmean),
    ("nansum", lambda t: em.nansum(t, 0), [60000.0, math.nan, -60000.0, 5.0], np.nansum),
    ("std", lambda t: t.std(), _F16_BIG, lambda w: np.std(w, ddof=1)),
    ("std0", lambda t: em.std(t, correction=0), _F16_BIG, np.std),
    ("std_mean", lambda t: em.std_mean(t)[0], _F16_BIG, lambda w: np.std(w, ddof=1)),
    ("var_mean", lambda t: em.var_mean(t)[1], [60000.0, 60000.0], np.mean),
    ("norm", lambda t: t.norm(), _F16_BIG, np.linalg.norm),
    ("norm1", lambda t: t.norm(1), _F16_BIG, lambda w: _pnorm(w, 1)),
    ("norm3", lambda t: t.norm(3), _F16_BIG, lambda w: _pnorm(w, 3)),
    ("norm4", lambda t: em.norm(t, 4, 0), _F16_BIG, lambda w: _pnorm(w, 4)),
    ("norm_inf", lambda t: t.norm(math.inf), _F16_BIG, lambda w: np.abs(w).max()),
    ("vector_norm", em.linalg.vector_norm, _F16_BIG, np.linalg.norm),
    ("vector_norm3", lambda t: em.linalg.vector_norm(t, 3), _F16_BIG, lambda w: _pnorm(w, 3)),
    ("linalg_norm", em.linalg.norm, _F16_BIG, np.linalg.norm),
    ("logsumexp", lambda t: em.logsumexp(t, 0), [60000.0, 60000.0], np.logaddexp.reduce),
], ids=lambda v: v if isinstance(v, str) else "")
def test_issue16_item18_float16_composites_do_not_overflow(name, fn, values, expected, device):
    got = fn(_f16(values, device))
    assert np.isfinite(to_numpy(got)).all(), f"{name}: {got}"
    assert_close(got, np.asarray(expected(np.array(values, np.float64))), em.float16, msg=name)


def test_issue16_item18_float16_long_sums_and_scans(device):
    # sums of exp / of ones past 65504 inside logsumexp and softmax
    z = em.zeros(70000, dtype=em.float16, device=device)
    assert_close(em.logsumexp(z, 0), np.asarray(np.log(70000.0)), em.float16)
    assert_close(em.softmax(z, 0)[:3], np.full(3, 1 / 70000.0), em.float16)
    assert_close(em.log_softmax(z, 0)[:3], np.full(3, -np.log(70000.0)), em.float16)
    assert_close(z.add(1).mean(), np.asarray(1.0), em.float16)
    # cumsum runs in float32: each output rounds once (the middle one overflows)
    c = _f16([60000.0, 60000.0, -60000.0], device).cumsum(0)
    assert c.dtype == em.float16 and to_numpy(c).tolist() == [60000.0, math.inf, 60000.0]
    # the gradient of a float16 mean still reaches the input, in float16
    x = _f16([60000.0, 60000.0], "cpu").requires_grad_()
    x.mean().backward()
    assert x.grad.dtype == em.float16 and x.grad.tolist() == [0.5, 0.5]


@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_issue16_item18_float16_reductions_match_float64_rounded_once(data, device):
    """Values up to 60000: float16 partial sums overflow, the results (but std's and
    norm's, which may really exceed 65504: inf on both sides) do not."""
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    scale = data.draw(st.sampled_from([1.0, 300.0, 60000.0]))
    vals = (np.random.default_rng(seed).uniform(-1, 1, size=shape) * scale).astype(np.float16)
    t, vals = realize(vals, data.draw(layouts), device)
    dim = data.draw(dims_for(len(shape)))
    keepdim = data.draw(st.booleans())
    axis = normalize_dims(dim, vals.ndim)
    w = vals.astype(np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # std of one element: NaN
        cases = {
            "mean": (em.mean(t, dim, keepdim), np.mean(w, axis=axis, keepdims=keepdim)),
            "std": (em.std(t, dim, keepdim=keepdim),
                    np.std(w, axis=axis, ddof=1, keepdims=keepdim)),
            "norm": (em.norm(t, 2, dim, keepdim),
                     np.sqrt(np.sum(w * w, axis=axis, keepdims=keepdim))),
        }
    for name, (got, expected) in cases.items():
        # one float16 rounding (rtol 4e-3); the float32 partial sums err far less
        assert_close(got, np.asarray(expected), em.float16, atol=0.05,
                     msg=f"{name}({vals.tolist()}, {dim}, {keepdim})")


# issue 16 item 15: histc -----------------------------------------------------------------

_HISTC_MARGIN = {"float16": 4e-3, "float32": 1e-5, "float64": 1e-12}   # per bin, relative


@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_issue16_item15_histc_matches_numpy_histogram(data, device):
    d = data.draw(st.sampled_from(FLOAT_DTYPES))
    npd = np_dtype(d)
    shape = data.draw(shapes(max_dims=3))
    bins = data.draw(st.integers(1, 20))
    layout = data.draw(layouts)
    _, vals = realize(data.draw(arrays(d, shape)), layout)  # the values that layout holds
    vals = vals.astype(np.float64)
    explicit = data.draw(st.booleans()) or vals.size == 0
    if explicit:
        a, b = sorted(data.draw(st.tuples(st.floats(-12, 12), st.floats(-12, 12))))
        lo, hi = float(npd.type(a)), float(npd.type(b))
        if not lo < hi:
            lo, hi = lo - 1, hi + 1
    else:
        lo, hi = float(vals.min()), float(vals.max())
    constant = lo == hi
    if constant:
        lo, hi = lo - 1, hi + 1
    # the edges ember (and PyTorch) use: min and max in the input's dtype
    lo_e, hi_e = float(npd.type(lo)), float(npd.type(hi))
    # elements within rounding of an inner edge may land either side of it: move them
    # to the lowest edge (bin 0 in both), so that the comparison is exact
    f = (vals - lo_e) * bins / (hi_e - lo_e)
    near = (np.abs(f - np.round(f)) < _HISTC_MARGIN[d.name] * (bins + 1)) & \
        (np.round(f) >= 1) & (np.round(f) <= bins - 1)
    if not explicit:
        assume(not (constant and near.any()))   # the data's own range: keep its min
        vals = np.where(near, vals.min(), vals)
    else:
        vals = np.where(near, lo_e, vals)
    if explicit and vals.size:      # NaN and infinities are outside every range
        pick = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).random(vals.shape)
        vals = np.where(pick < 0.1, np.nan, np.where(pick > 0.95, np.inf, vals))
    vals = vals.astype(npd)
    t, vals = realize(vals, layout, device)
    finite = vals[np.isfinite(vals)].astype(np.float64)
    expected, _ = np.histogram(finite, bins=np.linspace(lo_e, hi_e, bins + 1))
    got = em.histc(t, bins, lo, hi) if explicit else em.histc(t, bins=bins)
    assert got.device == t.device
    assert_close(got, expected, d, rtol=0, atol=0,
                 msg=f"histc({vals.tolist()}, bins={bins}, min={lo}, max={hi})")
    assert_close(t.histc(bins, lo, hi), expected, d, rtol=0, atol=0)


def test_issue16_item15_histc_examples_and_errors(device):
    x = em.tensor([1., 2, 1], device=device)
    assert em.histc(x, bins=4, min=0, max=3).tolist() == [0., 2., 1., 0.]   # PyTorch's doc
    assert x.histc(4, 0, 3).tolist() == [0., 2., 1., 0.]
    assert em.histc(x, 4, 5, 5).tolist() == em.histc(x, 4).tolist()       # min == max: data
    assert em.histc(x, 2).tolist() == [2., 1.]                             # max in the last
    assert em.histc(em.tensor([2., 2.], device=device), 4).tolist() == [0., 0., 2., 0.]
    assert em.histc(em.empty(0, device=device), 3).tolist() == [0., 0., 0.]
    assert em.histc(em.tensor([-1., 0.5, 9.], device=device), 2, 0, 1).tolist() == [0., 1.]
    assert em.histc(em.ones(1000, device=device), 1).tolist() == [1000.]
    h = em.histc(em.tensor([0.25, 0.75], dtype=em.float16, device=device), 2, 0, 1)
    assert h.dtype == em.float16 and h.tolist() == [1., 1.]
    out = em.full((4,), 7.0, device=device)
    assert em.histc(x, 4, 0, 3, out=out) is out and out.tolist() == [0., 2., 1., 0.]
    # NaN and infinities: ignored within a given range, an error as the data's range
    nan, inf = math.nan, math.inf
    y = em.tensor([1., nan, 2., inf, -inf], device=device)
    assert em.histc(y, 2, 0, 2).tolist() == [0., 2.]
    for bad in ([1., nan], [1., inf], [-inf, 0.]):
        with pytest.raises(RuntimeError, match=r"histc: range of \[.*\] is not finite"):
            em.histc(em.tensor(bad, device=device))
    with pytest.raises(RuntimeError, match="histc: range of"):
        em.histc(x, 4, 0, inf)
    for bins in (0, -1):
        with pytest.raises(RuntimeError, match=f"histc: bins must be > 0, got {bins}"):
            em.histc(x, bins)
    with pytest.raises(RuntimeError, match="histc: max must be larger than min"):
        em.histc(x, 4, 3, 1)
    with pytest.raises(TypeError, match="histc: bins must be an int"):
        em.histc(x, 2.5)
    with pytest.raises(TypeError, match="histc: min and max must be numbers"):
        em.histc(x, 4, "a", 1)
    with pytest.raises(TypeError, match="histc: needs a floating point tensor"):
        em.histc(em.tensor([1, 2], device=device))
    with pytest.raises(ValueError,
                       match=r"histc: out must be a ember.float32 tensor of shape \(3,\)"):
        em.histc(x, 3, out=em.zeros(4, device=device))
    with pytest.raises(TypeError, match="histc"):
        em.histc([1.0, 2.0])
