"""complex64 / complex128: dtypes and promotion, creation, casts, the op table's
complex rows where test_elementwise does not reach (special values, refusals), the
reductions, the part views, conjugation, the matmul family, printing and interop,
against NumPy, on every device."""
from __future__ import annotations

import cmath
import io
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.ops import table
from ember_testing import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
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

C64, C128 = em.complex64, em.complex128


def _c(values, dtype=C64, device=None):
    return em.tensor(values, dtype=dtype, device=device)


# ----------------------------------------------------------------------------- dtypes

def test_dtype_objects():
    assert em.cfloat is C64 and em.cdouble is C128
    assert C64.itemsize == 8 and C128.itemsize == 16 and C64.bits == 64
    assert C64.is_complex and not C64.is_floating_point and C64.kind == "complex"
    assert not em.float32.is_complex
    assert C64.to_real() is em.float32 and C128.to_real() is em.float64
    assert em.float64.to_complex() is C128 and em.float16.to_complex() is C64
    assert em.float32.to_real() is em.float32
    assert C64 in em._dtypes.ALL_DTYPES and C128 in em._dtypes.ALL_DTYPES
    assert repr(C64) == "ember.complex64" and pickle.loads(pickle.dumps(C128)) is C128
    for name, d in [("complex64", C64), ("cfloat", C64), ("complex128", C128),
                    ("cdouble", C128), (np.complex64, C64), (np.dtype("complex128"), C128),
                    (complex, C64)]:
        assert em._dtypes.as_dtype(name) is d, name
    with pytest.raises(TypeError, match="to_complex"):
        em.int32.to_complex()


def test_finfo_of_complex_is_its_real_part():
    for c, r in ((C64, em.float32), (C128, em.float64)):
        fc, fr = em.finfo(c), em.finfo(r)
        assert (fc.eps, fc.max, fc.tiny, fc.bits, fc.dtype) == (fr.eps, fr.max, fr.tiny,
                                                                 fr.bits, r)
    with pytest.raises(TypeError, match="iinfo"):
        em.iinfo(C64)


@pytest.mark.parametrize("a", ALL_DTYPES, ids=lambda d: d.name)
def test_promotion_with_complex_matches_numpy(a):
    """The Array API's table (complex64 + float64 = complex128); bool and integers
    join a complex dtype as that dtype (PyTorch), where NumPy would widen."""
    for b in COMPLEX_DTYPES:
        got = em.promote_types(a, b)
        assert got is em.promote_types(b, a)
        if a.kind in ("bool", "int"):
            assert got is b
        elif a is em.float16:
            assert got is b
        else:
            assert got.name == np.promote_types(np_dtype(a), np_dtype(b)).name
        assert em.result_type(em.zeros(1, dtype=a), em.zeros(1, dtype=b)) is got


def test_python_complex_scalars_are_weak():
    f32, f64, f16 = (em.ones(2, dtype=d) for d in (em.float32, em.float64, em.float16))
    assert (f32 * 1j).dtype is C64 and (1j * f32).dtype is C64
    assert (f64 * 1j).dtype is C128 and (f16 * 1j).dtype is C64
    assert (em.ones(2, dtype=em.int32) * 1j).dtype is C64
    assert (em.ones(2, dtype=em.bool) + 1j).dtype is C64
    assert (_c([1j]) * 2.5).dtype is C64 and (_c([1j], C128) + 1).dtype is C128
    assert em.result_type(f32, 1j) is C64 and em.result_type(1j) is C64
    em.set_default_dtype(em.float64)
    try:
        assert (em.ones(2, dtype=em.int64) * 1j).dtype is C128
        assert em.tensor([1j]).dtype is C128 and (f32 * 1j).dtype is C64
    finally:
        em.set_default_dtype(em.float32)
    assert_close(f32 * (1 + 2j), np.array([1 + 2j, 1 + 2j], np.complex64))


def test_can_cast_kinds():
    """bool < int < float < complex: same_kind casting never goes down."""
    assert em.can_cast(em.float64, C64) and em.can_cast(em.int8, C128)
    assert em.can_cast(C128, C64) and em.can_cast(C64, C128)
    assert not em.can_cast(C64, em.float64) and not em.can_cast(C128, em.int64)
    assert not em.can_cast(C64, em.bool)
    assert em.can_cast(C64, em.float32, casting="unsafe")
    assert em.can_cast(em.float32, C64, casting="safe")
    assert not em.can_cast(em.float64, C64, casting="safe")


# ----------------------------------------------------------------------------- creation

def test_creation_from_python(device):
    z = em.tensor([1 + 2j, 3 - 1j], device=device)
    assert z.dtype is C64 and z.is_complex() and em.is_complex(z)
    assert z.tolist() == [1 + 2j, 3 - 1j]
    assert z[0].item() == 1 + 2j and type(z[0].item()) is complex
    assert complex(z[1]) == 3 - 1j
    assert em.tensor([1, 2.5 + 1j, True]).tolist() == [1 + 0j, 2.5 + 1j, 1 + 0j]
    assert em.tensor([[1j]], dtype=C128).dtype is C128
    assert em.tensor([1, 2.5], dtype=C64).tolist() == [1 + 0j, 2.5 + 0j]
    a = em.asarray(1j)
    assert a.dtype is C64 and a.ndim == 0 and a.item() == 1j
    assert em.tensor(np.complex128(1 - 1j)).dtype is C128
    for fn in (em.zeros, em.ones, em.empty):
        t = fn(2, 3, dtype=C128, device=device)
        assert t.dtype is C128 and tuple(t.shape) == (2, 3)
    assert em.zeros(2, dtype=em.cfloat, device=device).tolist() == [0j, 0j]
    assert em.ones(2, dtype=C64, device=device).tolist() == [1 + 0j, 1 + 0j]
    assert em.full((2,), 1 - 2j, device=device).tolist() == [1 - 2j, 1 - 2j]
    assert em.full((2,), 1 - 2j).dtype is C64
    t = em.zeros(3, dtype=C64, device=device).fill_(2 + 3j)
    assert t.tolist() == [2 + 3j] * 3
    assert (em.arange(3, device=device) * (1 + 1j)).tolist() == [0j, 1 + 1j, 2 + 2j]


def test_creation_refusals():
    with pytest.raises(TypeError, match="complex"):
        em.tensor([1j], dtype=em.float32)
    with pytest.raises(RuntimeError, match="fill_"):
        em.zeros(2).fill_(1j)
    with pytest.raises(RuntimeError, match="fill_"):
        em.zeros(2, dtype=em.int64).fill_(1 + 1j)
    x = em.zeros(2)
    with pytest.raises(TypeError, match="add"):
        x += 1j        # the result (complex64) can't go into a float32 tensor


# ----------------------------------------------------------------------------- casts

@pytest.mark.parametrize("other", ALL_DTYPES, ids=lambda d: d.name)
def test_casts_between_complex_and_every_dtype(other, device):
    """real -> complex: imaginary part 0; complex -> real: the real part (with
    PyTorch's warning), complex -> bool: nonzero in either part (no warning)."""
    rng = np.random.default_rng(0)
    vals = (rng.uniform(-5, 5, 12) + 1j * rng.uniform(-5, 5, 12)).astype(np.complex128)
    vals[:3] = [0, 1j, 2.5]
    src_real = np.rint(vals.real) if other.kind in ("int", "bool") else vals.real
    for c in COMPLEX_DTYPES:
        z = em.from_numpy(vals.astype(np_dtype(c))).to(device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = z.to(other)
        drops = other.kind in ("int", "float")
        assert any("discards the imaginary part" in str(x.message) for x in w) == drops
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            if other.kind == "bool":
                expected = vals != 0
            else:
                expected = vals.astype(np_dtype(c)).astype(np_dtype(other))
        assert_close(r, expected, other, msg=f"{c.name} -> {other.name}")
        # and back: a real (or complex) tensor into this complex dtype
        x = em.from_numpy(src_real.astype(np_dtype(other)) if other.kind != "complex"
                          else vals.astype(np_dtype(other))).to(device)
        assert_close(x.to(c), to_numpy(x).astype(np_dtype(c)), c,
                     msg=f"{other.name} -> {c.name}")


def test_complex_to_real_warns_everywhere_as_pytorch():
    z = _c([1 + 2j])
    for f in (lambda: z.float(), lambda: z.double(), lambda: z.to(em.float32),
              lambda: em.zeros(1).copy_(z), lambda: z.long()):
        with pytest.warns(UserWarning, match="Casting complex values to real discards"):
            f()
    assert z.float().tolist() == [1.0]


# ----------------------------------------------------------------------------- op table

COMPLEX_ROWS = [r for r in table.ELEMENTWISE if "complex" in r.body]
REFUSING_ROWS = [r for r in table.ELEMENTWISE if "complex" not in r.body]


def test_the_rows_with_complex_bodies():
    have = {r.name for r in COMPLEX_ROWS}
    wanted = {"add", "sub", "mul", "div", "pow", "exp", "log", "log2", "log10", "log1p",
              "expm1", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
              "atan", "asinh", "acosh", "atanh", "neg", "positive", "reciprocal", "square",
              "sgn", "abs", "eq", "ne", "isnan", "isinf", "isfinite", "where", "lerp",
              "sigmoid", "rsqrt", "exp2", "angle", "conj_physical", "logical_and",
              "logical_or", "logical_xor", "logical_not"}
    assert wanted <= have, wanted - have
    assert table.ELEMENTWISE_BY_NAME["abs"].out == "real"


@pytest.mark.parametrize("row", REFUSING_ROWS, ids=lambda r: r.name)
def test_rows_without_a_complex_body_refuse_complex(row):
    """Never silently made real: a TypeError naming the op and the dtype."""
    z = _c([1 + 1j, 2 - 1j], C128)
    args = [z] * row.arity
    if row.name == "where":
        return
    with pytest.raises(TypeError, match=rf"{row.name}.*complex128"):
        em._C.core.elementwise(row.name, *args)
    with pytest.raises(TypeError, match=row.name):
        em._C.core.elementwise(row.name, em.ones(2), *([1j] * (row.arity - 1))) \
            if row.arity > 1 else em._C.core.elementwise(row.name, z)


def test_refusal_messages():
    z = _c([1j])
    with pytest.raises(TypeError, match="sign.*use sgn"):
        em.sign(z)
    with pytest.raises(TypeError, match="lt: not supported for dtype ember.complex64"):
        _ = z < z
    with pytest.raises(TypeError, match="floor"):
        em.floor(z)
    for f in (em.amax, em.amin):
        with pytest.raises(TypeError, match="complex64"):
            f(z)


# values where NumPy (the C library's complex functions) and C99 Annex G agree, with
# the result C99 gives: signed zeros on the branch cuts, infinities, NaN
_INF, _NAN = math.inf, math.nan
SPECIAL = {
    "sqrt": [(-4 + 0j, 2j), (complex(-4, -0.0), complex(0, -2)), (0j, 0j), (complex(-0.0, 0.0), 0j),
             (complex(1, _INF), complex(_INF, _INF)), (complex(_NAN, _INF), complex(_INF, _INF)),
             (complex(-_INF, 2), complex(0, _INF)), (complex(_INF, 2), complex(_INF, 0))],
    "log": [(0j, complex(-_INF, 0)), (complex(-1, 0.0), complex(0, math.pi)),
            (complex(-1, -0.0), complex(0, -math.pi)), (complex(_INF, 1), complex(_INF, 0)),
            (complex(_INF, _NAN), complex(_INF, _NAN))],
    "exp": [(0j, 1 + 0j), (complex(-_INF, 1), 0j), (complex(_NAN, 0.0), complex(_NAN, 0.0)),
            (complex(800, 0.0), complex(_INF, 0.0))],
    "abs": [(complex(_INF, _NAN), _INF), (complex(2e38, 2e38), 2.8284271247461903e38),
            (complex(-3, 4), 5.0)],
    "asin": [(complex(2, 0.0), complex(math.pi / 2, 1.3169578969248166)),
             (complex(2, -0.0), complex(math.pi / 2, -1.3169578969248166))],
    "acos": [(1 + 0j, complex(0, -0.0)), (complex(2, 0.0), complex(0, -1.3169578969248166)),
             (complex(2, -0.0), complex(0, 1.3169578969248166))],
    "atanh": [(1 + 0j, complex(_INF, 0)),
              (complex(2, 0.0), complex(0.5493061443340549, math.pi / 2)),
              (complex(2, -0.0), complex(0.5493061443340549, -math.pi / 2))],
    "tanh": [(complex(50, 1), complex(1, 0)), (complex(-50, 1), complex(-1, 0))],
    "div": None,
}


@pytest.mark.parametrize("name", [k for k, v in SPECIAL.items() if v], ids=str)
@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=lambda d: d.name)
def test_special_values(name, dtype, device):
    if dtype is C128 and device.type != "cpu" and not _fp64(device):
        pytest.skip("no float64 on this device")
    xs, ys = zip(*SPECIAL[name])
    with np.errstate(all="ignore"):
        got = to_numpy(getattr(em, name)(em.tensor(list(xs), dtype=dtype, device=device)))
        npr = getattr(np, {"asin": "arcsin", "acos": "arccos", "atanh": "arctanh",
                           "abs": "absolute"}.get(name, name))(np.array(xs, np_dtype(dtype)))
    for x, y, g, n in zip(xs, ys, got, npr):
        for want in (y, n):   # C99's value, and NumPy agrees with it
            for part_g, part_w in ((np.real(g), np.real(want)), (np.imag(g), np.imag(want))):
                if math.isnan(part_w):
                    assert math.isnan(part_g), (name, x, g, want)
                else:
                    assert math.isclose(part_g, part_w, rel_tol=1e-5, abs_tol=1e-6), \
                        (name, x, g, want)
                    if part_w == 0:
                        assert math.copysign(1, part_g) == math.copysign(1, part_w), \
                            (name, x, g, want)


def test_division_scales_without_overflow():
    """Smith's algorithm: |b|^2 would overflow, the quotient does not."""
    a = _c([complex(1e30, 1e30)])
    b = _c([complex(2e30, 1e30)])
    r = (a / b).item()
    assert cmath.isclose(r, complex(1e30, 1e30) / complex(2e30, 1e30), rel_tol=1e-6)
    big = _c([complex(1e300, 1e300)], C128)
    assert cmath.isclose((big / big).item(), 1, rel_tol=1e-12)
    tiny = _c([complex(1e-300, 1e-300)], C128)
    assert cmath.isclose((tiny / tiny).item(), 1, rel_tol=1e-12)


def test_pow_rules_as_numpy():
    z = _c([0j, 0j, 2 + 1j, 1 + 1j, 0j], C128)
    w = _c([0j, 2 + 0j, 0j, 2 + 0j, 1j], C128)
    r = (z ** w).tolist()
    assert r[0] == 1 and r[1] == 0 and r[2] == 1 and r[3] == 2j and cmath.isnan(r[4])
    assert (_c([1 + 1j]) ** 2).tolist() == [2j]
    assert cmath.isclose((_c([2j], C128) ** 0.5).item(), cmath.sqrt(2j), rel_tol=1e-14)


def _fp64(device):
    try:
        em.zeros(1, dtype=em.float64, device=device) + 1
        return True
    except TypeError:
        return False


# ----------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("name", ["sum", "prod", "mean", "all", "any", "var", "std"])
@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_reductions_match_numpy(name, data, device):
    dt = data.draw(st.sampled_from(COMPLEX_DTYPES))
    if dt is C128 and device.type != "cpu" and not _fp64(device):
        return
    vals = data.draw(arrays(dt, data.draw(shapes(max_side=5)), "all"))
    if name == "prod":
        vals = vals / 4                     # keep products of up to 125 terms finite
    t, v = realize(vals, data.draw(layouts), device)
    dim = data.draw(dims_for(v.ndim))
    keep = data.draw(st.booleans())
    axis = normalize_dims(dim, v.ndim)
    kw = {"keepdims": keep, "axis": axis}
    with np.errstate(all="ignore"):
        ref = v.astype(np.complex128)
        if name in ("var", "std"):
            n = ref.size if axis is None else np.prod([ref.shape[a] for a in np.atleast_1d(axis)])
            if n < 2:
                return
            expected = getattr(np, name)(ref, ddof=1, **kw)
        else:
            expected = getattr(np, name)(ref, **kw)
    got = getattr(em, name)(t, dim, keepdim=keep) if name not in ("all", "any") else \
        getattr(em, name)(t, dim, keepdim=keep)
    out = {"all": em.bool, "any": em.bool, "var": dt.to_real(), "std": dt.to_real()}.get(name, dt)
    if name == "mean" and v.size == 0:
        return
    assert_close(got, np.asarray(expected).astype(np_dtype(out)), out,
                 rtol=1e-4 if dt is C64 else 1e-10, atol=1e-4 if dt is C64 else 1e-10,
                 msg=f"{name}({dt.name}{v.shape}, dim={dim})")


def test_large_sum_is_accurate():
    rng = np.random.default_rng(1)
    v = (rng.uniform(0, 1, 100_003) + 1j * rng.uniform(0, 1, 100_003)).astype(np.complex64)
    got = em.from_numpy(v).sum().item()
    exact = v.astype(np.complex128).sum()
    assert abs(got - exact) / abs(exact) < 1e-6


# ------------------------------------------------ index ops, scans, norms (issue 19)

@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_index_ops_scans_and_norms_of_complex_tensors(dt, device):
    # the index kernels move items of up to 8 bytes: complex ones run on the float view
    # (ops/index.py); the scan kernel has no complex body (ops/scan.py); the norms are
    # those of |x| (real)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dt)
    z = em.from_numpy(x.copy()).to(device)
    got = lambda t: t.cpu().numpy()  # noqa: E731
    eq = np.testing.assert_array_equal
    eq(got(z.gather(1, em.tensor([[3, 0]] * 3, device=device))), x[:, [3, 0]])
    eq(got(z.index_select(1, em.tensor([2, 0], device=device))), x[:, [2, 0]])
    eq(got(z[em.tensor([2, 0, 2], device=device)]), x[[2, 0, 2]])
    eq(got(z[em.from_numpy(x.real > 0).to(device)]), x[x.real > 0])
    w = z.clone()
    w[em.tensor([0, 2], device=device), em.tensor([1, 3], device=device)] = 5j
    x2 = x.copy()
    x2[[0, 2], [1, 3]] = 5j
    eq(got(w), x2)
    acc = em.zeros(3, 4, dtype=z.dtype, device=device).index_add(
        0, em.tensor([0, 2, 0], device=device), z)
    np.testing.assert_allclose(got(acc), [x[0] + x[2], 0 * x[0], x[1]], rtol=1e-6)
    sa = em.zeros(3, 4, dtype=z.dtype, device=device).scatter_add(
        1, em.tensor([[0, 0, 1, 1]] * 3, device=device), z)
    want = np.zeros((3, 4), dt)
    want[:, 0], want[:, 1] = x[:, 0] + x[:, 1], x[:, 2] + x[:, 3]
    np.testing.assert_allclose(got(sa), want, rtol=1e-6)
    tol = 1e-5 if dt == np.complex64 else 1e-12
    np.testing.assert_allclose(got(z.cumsum(1)), np.cumsum(x, 1), rtol=tol)
    np.testing.assert_allclose(got(z.cumprod(0)), np.cumprod(x, 0), rtol=tol)
    n = em.linalg.vector_norm(z, dim=1)
    assert n.dtype is em.from_numpy(x.real.copy()).dtype
    np.testing.assert_allclose(got(n), np.linalg.norm(x, axis=1), rtol=tol)
    np.testing.assert_allclose(float(z.norm(p=1)), np.abs(x).sum(), rtol=tol)
    np.testing.assert_allclose(float(em.dist(z, 2 * z)), np.linalg.norm(x), rtol=tol)


def test_from_numpy_of_a_numpy_scalar_owns_a_copy():
    # a NumPy scalar's array interface points into a temporary (it read freed memory)
    a, b = em.from_numpy(np.float64(1.5)), em.from_numpy(np.complex128(2.5j))
    c = em.from_numpy(np.float64(-3.0))
    assert a.item() == 1.5 and b.item() == 2.5j and c.item() == -3.0
    assert a.shape == () and b.dtype is C128


# ----------------------------------------------------------------------------- views

def test_real_imag_are_writable_views(device):
    z = em.tensor([1 + 2j, 3 - 4j, 5j], device=device)
    re, im = z.real, z.imag
    assert re.dtype is em.float32 and im.dtype is em.float32
    assert re.stride() == (2,) and im.storage_offset() == 1
    assert re._shares_storage(z) and em.real(z).tolist() == [1, 3, 0]
    assert em.imag(z).tolist() == [2, -4, 5]
    im[0] = 7
    re.mul_(2)
    assert z.tolist() == [2 + 7j, 6 - 4j, 5j]
    z.real = em.tensor([0.0, 1.0, 2.0], device=device)
    z.imag = 1
    assert z.tolist() == [1j, 1 + 1j, 2 + 1j]
    x = em.ones(2, device=device)
    assert x.real is x and em.real(x) is x
    with pytest.raises(RuntimeError, match="imag.*non-complex"):
        _ = x.imag
    with pytest.raises(RuntimeError, match="imag"):
        em.imag(x)


@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_views_of_any_layout_match_numpy(data, device):
    dt = data.draw(st.sampled_from(COMPLEX_DTYPES))
    if dt is C128 and device.type != "cpu" and not _fp64(device):
        return
    vals = data.draw(arrays(dt, data.draw(shapes(min_dims=1)), "all"))
    t, v = realize(vals, data.draw(layouts), device)
    assert_close(t.real, v.real, dt.to_real())
    assert_close(t.imag, v.imag, dt.to_real())
    r = em.view_as_real(t)
    assert r._shares_storage(t) and tuple(r.shape) == v.shape + (2,)
    assert_close(r, np.stack([v.real, v.imag], -1), dt.to_real())
    if r.stride()[:-1] and all(s % 2 == 0 for s in r.stride()[:-1]):
        back = em.view_as_complex(r)
        assert back._shares_storage(t)
        assert_close(back, v, dt)
    assert_close(t.conj(), np.conj(v), dt)
    assert_close(em.angle(t), np.angle(v), dt.to_real())
    assert_close(em.isreal(t), np.isreal(v), em.bool)


def test_view_as_real_and_complex_share_memory():
    a = np.arange(8, dtype=np.float64).reshape(4, 2)
    x = em.from_numpy(a)
    z = em.view_as_complex(x)
    assert z.dtype is C128 and tuple(z.shape) == (4,) and z.data_ptr() == x.data_ptr()
    z[1] = 10 - 1j
    assert a[1].tolist() == [10.0, -1.0]
    r = em.view_as_real(z)
    assert r.data_ptr() == x.data_ptr() and r.stride() == (2, 1)
    assert em.view_as_complex(em.ones(2)).shape == ()
    assert em.view_as_real(em.tensor(1 + 2j)).tolist() == [1.0, 2.0]
    assert em.ones(4, 2).view_as_complex().dtype is C64


@pytest.mark.parametrize("make,match", [
    (lambda: em.ones(3, 3), "last dimension of size 2"),
    (lambda: em.ones(2, 3).t(), "last dimension with stride 1"),
    (lambda: em.ones(4, 4)[:, :2][:, :].as_strided((3, 2), (3, 1)), "stride divisible by 2"),
    (lambda: em.ones(9)[1:].view(4, 2), "storage_offset divisible by 2"),
    (lambda: em.ones(4, 2, dtype=em.int64), "float32 and float64"),
    (lambda: em.ones(4, 2, dtype=em.float16), "float32 and float64"),
    (lambda: em.ones(()), "one or more dimensions"),
])
def test_view_as_complex_refuses_wrong_layouts(make, match):
    with pytest.raises(RuntimeError, match=f"view_as_complex: .*{match}"):
        em.view_as_complex(make())


def test_view_as_real_refuses_real_tensors():
    with pytest.raises(RuntimeError, match="view_as_real: only supported for complex.*float32"):
        em.view_as_real(em.ones(4))


# ----------------------------------------------------------------------------- functions

def test_conj_family(device):
    z = em.tensor([1 + 2j, -3j], device=device)
    c = z.conj()
    assert c.tolist() == [1 - 2j, 3j] and not c._shares_storage(z)
    assert em.conj_physical(z).tolist() == [1 - 2j, 3j]
    assert not c.is_conj() and not em.is_conj(z) and not em.is_neg(z)
    assert em.resolve_conj(z) is z and em.resolve_neg(z) is z
    w = z.clone()
    w.conj_physical_()
    assert w.tolist() == [1 - 2j, 3j]
    x = em.ones(2, device=device)
    assert x.conj() is x
    m = em.tensor([[1 + 1j, 2j], [3, 4 - 1j]], device=device)
    assert m.mH.tolist() == [[1 - 1j, 3], [-2j, 4 + 1j]]
    assert em.adjoint(m).tolist() == m.mH.tolist()


def test_angle_sgn_isreal(device):
    x = em.tensor([1.0, -2.0, 0.0, -0.0, math.nan], device=device)
    a = em.angle(x).tolist()
    assert a[:4] == [0.0, math.pi, 0.0, 0.0] or np.allclose(a[:4], [0, math.pi, 0, 0])
    assert math.isnan(a[4])
    assert em.angle(em.tensor([1, -1], device=device)).dtype is em.float32
    z = em.tensor([3 + 4j, 0j, -2j], device=device)
    assert np.allclose(to_numpy(em.sgn(z)), [0.6 + 0.8j, 0, -1j])
    assert em.sgn(em.tensor([-2.0, 0.0, 3.0], device=device)).tolist() == [-1, 0, 1]
    assert em.isreal(em.tensor([1 + 0j, 1j], device=device)).tolist() == [True, False]
    assert em.isreal(em.tensor([1.0], device=device)).tolist() == [True]
    assert em.angle(z).dtype is em.float32 and em.abs(z).tolist() == [5, 0, 2]


def test_complex_and_polar(device):
    re = em.tensor([1.0, 2.0], device=device)
    im = em.tensor([[3.0], [4.0]], device=device)
    assert em.complex(re, im).tolist() == [[1 + 3j, 2 + 3j], [1 + 4j, 2 + 4j]]
    d = em.complex(re.double(), re.double())
    assert d.dtype is C128
    p = em.polar(em.tensor([1.0, 2.0], device=device),
                 em.tensor([0.0, math.pi / 2], device=device))
    assert np.allclose(to_numpy(p), [1, 2j], atol=1e-6)
    with pytest.raises(TypeError, match="complex: .*float32 or float64"):
        em.complex(em.tensor([1]), em.tensor([2]))
    with pytest.raises(TypeError, match="complex: real and imag must have one dtype"):
        em.complex(re, re.double())
    with pytest.raises(TypeError, match="polar"):
        em.polar(re, re.double())


def test_autograd_runs_through_complex_views_not_dropped():
    # (issue 19: complex autograd; before it, this was refused. More in autograd's
    # test_complex_autograd.py.) |z w| with z = 1 + i, w = 1 + 2i: dL/dz* convention
    # gives conj(w) sgn(z w) = (5 + 5i) / sqrt(10), so each real leaf gets 5 / sqrt(10)
    x = em.ones(2, 2, requires_grad=True)
    z = em.view_as_complex(x)
    assert z.requires_grad and z.dtype is C64
    (z * (1 + 2j)).abs().sum().backward()
    assert x.grad.dtype is em.float32
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 5 / np.sqrt(10)), rtol=1e-6)
    c = em.zeros(2, dtype=C64).requires_grad_()
    assert c.requires_grad
    with pytest.raises(RuntimeError, match="requires_grad"):
        em.zeros(2, dtype=em.int32).requires_grad_()


# ----------------------------------------------------------------------------- matmul

def _crand(rng, shape, dt=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=str)
def test_matmul_family_matches_numpy(dt, device):
    if dt is np.complex128 and device.type != "cpu" and not _fp64(device):
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(2)
    tol = dict(rtol=1e-4, atol=1e-4) if dt is np.complex64 else dict(rtol=1e-12, atol=1e-12)
    A, B = _crand(rng, (3, 4), dt), _crand(rng, (4, 5), dt)
    S, V = _crand(rng, (2, 3, 4), dt), _crand(rng, (4,), dt)
    a, b, s, v = (em.from_numpy(x).to(device) for x in (A, B, S, V))
    d = em.from_numpy(A).dtype
    assert_close(a @ b, A @ B, d, **tol)
    assert_close(em.mm(a, b), A @ B, d, **tol)
    assert_close(em.matmul(s, b), S @ B, d, **tol)
    assert_close(em.bmm(s, s.transpose(1, 2)), S @ S.transpose(0, 2, 1), d, **tol)
    assert_close(em.mv(a, v), A @ V, d, **tol)
    assert_close(em.dot(v, v), np.dot(V, V), d, **tol)
    assert_close(em.vdot(v, v), np.vdot(V, V), d, **tol)
    assert_close(em.einsum("bij,jk->bik", s, b), np.einsum("bij,jk->bik", S, B), d, **tol)
    assert_close(em.tensordot(s, b, 1), np.tensordot(S, B, 1), d, **tol)
    assert_close(em.inner(v, v), np.inner(V, V), d, **tol)
    assert_close(em.outer(v, v), np.outer(V, V), d, **tol)
    R = rng.standard_normal((4, 5)).astype(dt(0).real.dtype)
    r = em.from_numpy(R).to(device)
    assert_close(a @ r, A @ R, d, **tol)          # complex @ real
    assert_close(r.T @ a.T, R.T @ A.T, d, **tol)  # real @ complex
    assert_close(a.T.conj() @ a, A.T.conj() @ A, d, **tol)   # strided operands


@settings(max_examples=fewer_examples(12), deadline=None)
@given(st.sampled_from([C64, C128]),
       st.sampled_from([(3, 4, 5), (1, 1, 1), (4, 0, 3), (5, 130, 3), (2, 3, 515), (6, 1, 9)]),
       st.sampled_from([(), (2,), (3, 1)]), st.sampled_from([(), (1,), (2,)]), layouts,
       layouts, st.integers(0, 2 ** 32 - 1))
def test_cpu_complex_gemm_matches_numpy(dt, mkn, batch_a, batch_b, la, lb, seed):
    """Complex matmul on the CPU (em_gemm's complex64/complex128: one real GEMM over the
    expanded B, gemm_complex.c) against NumPy in complex128: shapes across its k (128)
    and n (512) blocks, batches broadcast (B shared: the folded GEMM), every layout
    (transposed: A's columns strided, copied first; C^T), 1-d operands, and addmm's
    fused form (real alpha and beta)."""
    m, k, n = mkn
    rng = np.random.default_rng(seed)
    npd = np.complex64 if dt is C64 else np.complex128
    (a, A), (b, B) = (realize(_crand(rng, s, npd), lay) for s, lay in
                      ((batch_a + (m, k), la), (batch_b + (k, n), lb)))
    A, B = A.astype(np.complex128), B.astype(np.complex128)
    tol = dict(rtol=0, atol=64 * max(k, 1) * (2.0 ** -23 if dt is C64 else 2.0 ** -52))
    assert_close(a @ b, A @ B, dt, **tol)
    row, col = (0,) * (a.ndim - 1), (0,) * (b.ndim - 2) + (slice(None), 0)
    assert_close(em.matmul(a[row], b), A[row] @ B, dt, **tol)     # 1-d @ n-d
    assert_close(em.matmul(a, b[col]), A @ B[col], dt, **tol)     # n-d @ 1-d
    if not batch_a and not batch_b:
        C = _crand(rng, (m, n), npd)
        got = em.addmm(em.from_numpy(C), a, b, beta=0.5, alpha=-2)
        assert_close(got, 0.5 * C.astype(np.complex128) - 2 * (A @ B), dt, **tol)
        assert_close(em.addmm(em.from_numpy(C), a, b, beta=0), A @ B, dt, **tol)


def test_matmul_mixed_precision_promotes():
    a = em.ones(2, 2, dtype=C64)
    assert (a @ em.ones(2, 2, dtype=em.float64)).dtype is C128
    assert (a @ em.ones(2, 2, dtype=C128)).dtype is C128


# ----------------------------------------------------------------------------- printing

def test_printing_like_pytorch():
    assert repr(em.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(em.tensor([1 + 2j], dtype=C128)) == "tensor([1.+2.j], dtype=ember.complex128)"
    assert repr(em.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(em.tensor([1.5 + 0j])) == "tensor([1.5000+0.j])"
    assert repr(em.tensor([[1j]])) == "tensor([[0.+1.j]])"
    assert repr(em.tensor([1e10 + 1j, 1j])) == "tensor([1.0000e+10+1.j, 0.0000e+00+1.j])"
    assert repr(em.tensor([0.1 + 0.2j, 1e-5j], dtype=C128)) == \
        "tensor([0.1000+2.0000e-01j, 0.0000+1.0000e-05j], dtype=ember.complex128)"
    assert repr(em.tensor([[1.5 + 2j, -3e-4 - 1j]])) == \
        "tensor([[ 1.5000e+00+2.j, -3.0000e-04-1.j]])"
    assert repr(em.tensor([math.nan + 1j, complex(0, math.inf)])) == "tensor([nan+1.j, 0.+infj])" \
        or repr(em.tensor([math.nan + 1j, complex(0, math.inf)])) == "tensor([nan+1.j, nan+infj])"
    assert repr(em.tensor([1.23456789 + 1j, 100.5 - 2j])) == "tensor([  1.2346+1.j, 100.5000-2.j])"
    assert repr(em.zeros(0, dtype=C64)) == "tensor([])"
    assert repr(em.zeros(0, dtype=C128)) == "tensor([], dtype=ember.complex128)"


# ----------------------------------------------------------------------------- interop

@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=str)
def test_numpy_zero_copy_both_ways(dt):
    a = np.array([1 + 2j, 3 - 4j, 5j], dt)
    t = em.from_numpy(a)
    assert t.dtype.name == np.dtype(dt).name and t.tolist() == a.tolist()
    t[0] = 9j
    assert a[0] == 9j
    n = t.numpy()
    n[1] = 1
    assert t[1].item() == 1 and np.shares_memory(n, a)
    assert np.asarray(t).dtype == dt and np.array(t).tolist() == t.tolist()
    assert em.asarray(a).data_ptr() == a.ctypes.data
    assert em.tensor(a).data_ptr() != a.ctypes.data
    s = em.from_numpy(a[::2])
    assert s.stride() == (2,) and s.tolist() == a[::2].tolist()
    mv = memoryview(t)
    assert mv.format == ("Zf" if dt is np.complex64 else "Zd") and mv.itemsize == a.itemsize


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=str)
def test_dlpack_round_trip(dt):
    a = np.array([[1 + 2j, 3 - 4j]], dt)
    t = em.from_dlpack(a)
    assert t.dtype.name == np.dtype(dt).name and t.data_ptr() == a.ctypes.data
    back = np.from_dlpack(t)
    assert back.dtype == dt and np.shares_memory(back, a)
    assert em.from_dlpack(t).data_ptr() == t.data_ptr()


@pytest.mark.parametrize("dt", [C64, C128], ids=lambda d: d.name)
def test_save_load_and_pickle(dt, tmp_path):
    z = em.tensor([[1 + 2j, -3j], [0.5, 7 - 1j]], dtype=dt)
    for kw in ({}, {"format": "torch"}, {"format": "safetensors"}):
        f = io.BytesIO()
        em.save({"z": z, "view": z[:, 1]}, f, **kw)
        f.seek(0)
        back = em.load(f)
        assert back["z"].dtype is dt and back["z"].tolist() == z.tolist()
        assert back["view"].tolist() == z[:, 1].tolist()
    p = tmp_path / "z.safetensors"
    em.save(z, p)
    assert em.load(p).tolist() == z.tolist() and em.load(p).dtype is dt
    assert pickle.loads(pickle.dumps(z)).tolist() == z.tolist()


def test_torch_zip_format_storage_names():
    from ember.serialization import _torch
    assert _torch._EMBER_STORAGE["complex64"] == "ComplexFloatStorage"
    assert _torch._EMBER_STORAGE["complex128"] == "ComplexDoubleStorage"


# ----------------------------------------------------------------------------- devices

@pytest.mark.parametrize("dt", COMPLEX_DTYPES, ids=lambda d: d.name)
def test_device_copies_fills_casts(dt, device):
    if dt is C128 and device.type != "cpu" and not _fp64(device):
        pytest.skip("no float64 on this device")
    v = np.array([1 + 2j, -3j, 4.5], np_dtype(dt))
    t = em.from_numpy(v).to(device)
    assert t.device.type == device.type and t.cpu().tolist() == v.tolist()
    assert t[1:].clone().tolist() == v[1:].tolist()
    t2 = em.empty(3, dtype=dt, device=device).fill_(1 - 1j)
    assert t2.tolist() == [1 - 1j] * 3
    other = C128 if dt is C64 else C64
    if other is C128 and device.type != "cpu" and not _fp64(device):
        return
    assert_close(t.to(other), v.astype(np_dtype(other)), other)
    assert_close(t.to(em.bool), v != 0, em.bool)
    assert_close(t + em.ones(3, device=device), v + 1, dt)
    assert_close(t * 1j, v * 1j, dt)
    assert_close(em.where(t.real > 0, t, 2j), np.where(v.real > 0, v, 2j), dt)


# ------------------------------------------------------------- softmax and logsumexp

def test_softmax_refuses_complex_as_pytorch():
    z = _c([1 + 2j, 3 - 1j])
    for f in (em.softmax, em.log_softmax, em.special.softmax, em.special.log_softmax):
        name = f.__name__
        with pytest.raises(TypeError, match=f"{name}: not supported for dtype ember.complex64"):
            f(z, 0)
    with pytest.raises(TypeError, match="softmax: not supported for dtype ember.complex128"):
        z.to(em.complex128).softmax(0)


def test_logsumexp_of_complex(device):
    z = em.tensor([1 + 2j, 3 - 1j], device=device)
    r = em.logsumexp(z, 0)
    assert r.dtype is em.complex64
    # torch.logsumexp(torch.tensor([1+2j, 3-1j]), 0) = 2.8564-0.9780j; the principal log
    assert abs(complex(r.item()) - cmath.log(cmath.exp(1 + 2j) + cmath.exp(3 - 1j))) < 1e-5
    np.testing.assert_allclose(complex(r.item()), 2.8564 - 0.9780j, atol=1e-4)
    # large real parts: shifted by the largest, no overflow; along a dim, keepdim
    big = np.array([[800 + 1j, 799 - 2j, 0j], [1j, -2 + 0j, 3 - 3j]])
    got = em.logsumexp(em.tensor(big, device=device), 1, keepdim=True).cpu().numpy()
    m = big.real.max(1, keepdims=True)
    want = np.log(np.exp(big - m).sum(1, keepdims=True)) + m
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_logsumexp_of_complex_gradcheck():
    from ember.autograd import gradcheck
    z = em.tensor([[1 + 2j, 3 - 1j, -0.5 + 0.25j], [0.1j, 2 + 0j, -1 - 1j]],
                  dtype=em.complex128, requires_grad=True)
    assert gradcheck(lambda x: em.logsumexp(x, 1), (z,))
    assert gradcheck(lambda x: em.logsumexp(x, (0, 1)).abs(), (z,))
