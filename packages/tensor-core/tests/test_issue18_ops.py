"""Issue 18: the tensor functions and methods training code uses that ember lacked
(addcmul ... vander), each against NumPy or a reference written here (PyTorch's
documented values where NumPy has no twin), on every device, with bad input named."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import (
    FLOAT_DTYPES,
    INT_DTYPES,
    assert_close,
    fewer_examples,
    np_dtype,
    shapes,
    to_numpy,
)

nan = math.nan
SETTINGS = settings(max_examples=fewer_examples(3), deadline=None)


def arr(rng, shape, d, lo=-3.0, hi=3.0):
    npd = np_dtype(d)
    if d.kind == "float":
        return rng.uniform(lo, hi, size=shape).astype(npd)
    return rng.integers(int(lo), int(hi) + 1, size=shape).astype(npd)


def T(a, device):
    return em.tensor(a, device=device)


floats = st.sampled_from([em.float32, em.float64])
seeds = st.integers(0, 2 ** 31)


# elementwise compositions ----------------------------------------------------------------

@SETTINGS
@given(shape=shapes(max_dims=3), d=floats, seed=seeds, value=st.sampled_from([1, 0.5, -2]))
def test_addcmul_addcdiv_match_numpy(shape, d, seed, value, device):
    rng = np.random.default_rng(seed)
    a, b, c = (arr(rng, shape, d) for _ in range(3))
    c = np.where(np.abs(c) < 0.1, 1, c).astype(a.dtype)
    x, y, z = (T(v, device) for v in (a, b, c))
    assert_close(em.addcmul(x, y, z, value=value), a + value * b * c, d)
    assert_close(x.addcdiv(y, z, value=value), a + value * b / c, d)
    w = x.clone()
    assert w.addcmul_(y, z, value=value) is w
    assert_close(w, a + value * b * c, d)
    w = x.clone()
    w.addcdiv_(y, z)
    assert_close(w, a + b / c, d)


def test_addcdiv_refuses_integer_division_and_bad_value(device):
    i = em.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="addcdiv: integer division"):
        em.addcdiv(i, i, i)
    with pytest.raises(TypeError, match="addcmul: value must be a number"):
        em.addcmul(i, i, i, value="x")
    with pytest.raises(TypeError, match="addcmul: tensor1 must be a Tensor"):
        em.addcmul(i, 3, i)


@SETTINGS
@given(shape=shapes(max_dims=3), d=floats, seed=seeds)
def test_frac_sinc_logit_deg_rad_match_numpy(shape, d, seed, device):
    rng = np.random.default_rng(seed)
    a = arr(rng, shape, d, -5, 5)
    a = np.where(rng.random(shape) < 0.2, 0, a).astype(a.dtype)
    x = T(a, device)
    assert_close(em.frac(x), a - np.trunc(a), d)
    assert_close(x.sinc(), np.sinc(a), d)
    assert_close(em.deg2rad(x), np.deg2rad(a), d)
    assert_close(x.rad2deg(), np.rad2deg(a), d)
    p = rng.uniform(0.01, 0.99, size=shape).astype(a.dtype)
    assert_close(em.logit(T(p, device)), np.log(p / (1 - p)), d)
    c = np.clip(p, .1, .9)
    assert_close(em.logit(T(p, device), eps=0.1), np.log(c / (1 - c)), d)
    assert_close(em.sgn(x), np.sign(a), d)
    y = x.clone()
    y.frac_()
    assert_close(y, a - np.trunc(a), d)


def test_frac_needs_float_and_integer_deg2rad_gives_float(device):
    with pytest.raises(TypeError, match="frac: needs a floating point"):
        em.frac(em.tensor([1, 2], device=device))
    assert em.deg2rad(em.tensor([180], device=device)).dtype is em.float32
    assert em.sinc(em.tensor([0.0], device=device)).item() == 1.0


@SETTINGS
@given(shape=shapes(max_dims=3), d=floats, seed=seeds)
def test_xlogy_logaddexp2_ldexp_heaviside_match_numpy(shape, d, seed, device):
    rng = np.random.default_rng(seed)
    a = np.where(rng.random(shape) < 0.3, 0, arr(rng, shape, d)).astype(np_dtype(d))
    b = arr(rng, shape, d, 0.0, 4.0)
    b = np.where(rng.random(shape) < 0.1, np.nan, b).astype(a.dtype)
    x, y = T(a, device), T(b, device)
    with np.errstate(all="ignore"):
        expected = np.where((a == 0) & ~np.isnan(b), 0, a * np.log(b))
    assert_close(em.xlogy(x, y), expected, d)
    assert_close(em.logaddexp2(x, x * 2), np.logaddexp2(a, a * 2), d)
    e = rng.integers(-3, 4, size=shape)
    assert_close(em.ldexp(x, T(e, device)), np.ldexp(a, e), d)
    v = arr(rng, shape, d)
    assert_close(em.heaviside(x, T(v, device)), np.heaviside(a, v), d)


def test_xlogy_documented_values_and_bad_input(device):
    x = em.tensor([0.0, 0, 0, 1, 2], device=device)
    y = em.tensor([-1.0, 0, nan, 2, 3], device=device)
    got = em.xlogy(x, y).tolist()   # PyTorch's documented example
    assert got[:2] == [0.0, 0.0] and math.isnan(got[2])
    assert got[3:] == pytest.approx([0.6931, 2.1972], abs=1e-4)
    assert em.xlogy(2, em.tensor([3.0], device=device)).item() == pytest.approx(2 * math.log(3))
    with pytest.raises(TypeError, match="xlogy: expected at least one Tensor"):
        em.xlogy(1, 2)
    with pytest.raises(TypeError, match="heaviside: input and values must have one dtype"):
        em.heaviside(em.tensor([1.0]), em.tensor([1], dtype=em.int64))


@SETTINGS
@given(shape=shapes(max_dims=2), d=st.sampled_from(INT_DTYPES), seed=seeds)
def test_gcd_lcm_match_numpy(shape, d, seed, device):
    rng = np.random.default_rng(seed)
    lo, hi = (0, 60) if not np.issubdtype(np_dtype(d), np.signedinteger) else (-60, 60)
    a = rng.integers(lo, hi, size=shape).astype(np_dtype(d))
    b = rng.integers(lo, hi, size=shape).astype(np_dtype(d))
    x, y = T(a, device), T(b, device)
    assert_close(em.gcd(x, y), np.gcd(a, b), d)
    if d.itemsize >= 2:
        assert_close(x.lcm(y), np.lcm(a, b), d)
    z = x.clone()
    z.gcd_(y)
    assert_close(z, np.gcd(a, b), d)


def test_gcd_needs_integers(device):
    with pytest.raises(TypeError, match="gcd: needs integer tensors"):
        em.gcd(em.tensor([1.0], device=device), em.tensor([2.0], device=device))
    assert em.gcd(em.tensor([12, 0], device=device), 8).tolist() == [4, 8]


# the add-a-product family, kron, cross, cdist --------------------------------------------

@SETTINGS
@given(d=floats, seed=seeds, n=st.integers(1, 4), m=st.integers(1, 4), p=st.integers(1, 4),
       b=st.integers(1, 3), beta=st.sampled_from([1, 0, 0.5]), alpha=st.sampled_from([1, -2]))
def test_baddbmm_addbmm_addmv_addr_addmm__match_numpy(d, seed, n, m, p, b, beta, alpha, device):
    rng = np.random.default_rng(seed)
    A, B = arr(rng, (b, n, m), d), arr(rng, (b, m, p), d)
    C = arr(rng, (n, p), d)
    v, w = arr(rng, (m,), d), arr(rng, (n,), d)
    t = lambda a: T(a, device)  # noqa: E731
    assert_close(em.baddbmm(t(C), t(A), t(B), beta=beta, alpha=alpha),
                 beta * C + alpha * (A @ B), d)
    assert_close(t(C).addbmm(t(A), t(B), beta=beta, alpha=alpha),
                 beta * C + alpha * (A @ B).sum(0), d)
    assert_close(em.addmv(t(w), t(A[0]), t(v), beta=beta, alpha=alpha),
                 beta * w + alpha * (A[0] @ v), d)
    assert_close(em.addr(t(C), t(w), t(C[0]), beta=beta, alpha=alpha),
                 beta * C + alpha * np.outer(w, C[0]), d)
    x = t(C)
    assert x.addmm_(t(A[0]), t(B[0]), beta=beta, alpha=alpha) is x
    assert_close(x, beta * C + alpha * (A[0] @ B[0]), d)
    x = t(np.broadcast_to(C, (b, n, p)).copy())
    x.baddbmm_(t(A), t(B))
    assert_close(x, C + A @ B, d)


def test_beta_zero_ignores_nan_and_shapes_are_checked(device):
    nanm = em.full((2, 2), nan, device=device)
    eye = em.eye(2, device=device)
    assert em.baddbmm(nanm, eye[None], eye[None], beta=0).isnan().sum().item() == 0
    with pytest.raises(ValueError, match="baddbmm: batch1 must be 3-d"):
        em.baddbmm(nanm, eye, eye)
    with pytest.raises(ValueError, match="addr: input of shape"):
        em.addr(em.ones(3, 3, device=device), em.ones(2, device=device), em.ones(2, device=device))
    with pytest.raises(TypeError, match="addmv: beta must be a number"):
        em.addmv(em.ones(2, device=device), eye, em.ones(2, device=device), beta="1")


@SETTINGS
@given(a=shapes(min_dims=0, max_dims=3, max_side=3), b=shapes(min_dims=0, max_dims=3, max_side=3),
       seed=seeds)
def test_kron_matches_numpy(a, b, seed, device):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(-5, 5, size=a), rng.integers(-5, 5, size=b)
    assert_close(em.kron(T(x, device), T(y, device)), np.kron(x, y), em.int64)


@SETTINGS
@given(shape=shapes(min_dims=1, max_dims=3, max_side=4), d=floats, seed=seeds)
def test_cross_matches_numpy(shape, d, seed, device):
    shape = shape[:-1] + (3,)
    rng = np.random.default_rng(seed)
    a, b = arr(rng, shape, d), arr(rng, shape[-1:], d)
    assert_close(em.linalg.cross(T(a, device), T(b, device)), np.cross(a, b), d)
    assert_close(T(a, device).cross(T(np.broadcast_to(b, shape).copy(), device), dim=-1),
                 np.cross(a, b), d)


def test_cross_default_dim_is_the_first_of_size_3(device):
    a = em.arange(9.0, device=device).reshape(3, 3)
    b = em.ones(3, 3, device=device)
    assert_close(em.cross(a, b), np.cross(to_numpy(a), to_numpy(b), axis=0), em.float32)
    with pytest.raises(ValueError, match="cross: dim 1 has size 2"):
        em.cross(em.ones(3, 2), em.ones(3, 2), dim=1)


@SETTINGS
@given(P=st.integers(1, 30), R=st.integers(1, 30), M=st.integers(1, 4), seed=seeds,
       p=st.sampled_from([0, 1, 2, 3, math.inf]), d=floats)
def test_cdist_matches_the_definition(P, R, M, seed, p, d, device):
    rng = np.random.default_rng(seed)
    a, b = arr(rng, (2, P, M), d), arr(rng, (2, R, M), d)
    diff = np.abs(a[:, :, None].astype(np.float64) - b[:, None].astype(np.float64))
    if p == 0:
        ref = (diff != 0).sum(-1)
    elif p == math.inf:
        ref = diff.max(-1)
    else:
        ref = (diff ** p).sum(-1) ** (1 / p)
    assert_close(em.cdist(T(a, device), T(b, device), p=p), ref, d, rtol=1e-3, atol=1e-3)


def test_cdist_bad_input():
    with pytest.raises(ValueError, match="cdist: x1 and x2 must have the same number of columns"):
        em.cdist(em.ones(2, 3), em.ones(2, 4))
    with pytest.raises(ValueError, match="cdist: p must be a non-negative"):
        em.cdist(em.ones(2, 3), em.ones(2, 3), p=-1)


# diagonals, blocks, products of sets -------------------------------------------------------

@SETTINGS
@given(n=st.integers(0, 4), m=st.integers(0, 4), k=st.integers(-3, 3), seed=seeds)
def test_diag_diagflat_diag_embed_match_numpy(n, m, k, seed, device):
    rng = np.random.default_rng(seed)
    v, M = rng.integers(-9, 9, size=n), rng.integers(-9, 9, size=(n, m))
    assert_close(em.diag(T(v, device), k), np.diag(v, k), em.int64)
    assert_close(T(M, device).diag(k), np.diag(M, k), em.int64)
    assert_close(em.diagflat(T(M, device), k), np.diagflat(M, k), em.int64)
    B = rng.integers(-9, 9, size=(2, max(n, 1)))
    got = em.diag_embed(T(B, device), k, 0, 2)
    ref = np.zeros((B.shape[1] + abs(k), 2, B.shape[1] + abs(k)), np.int64)
    for i in range(2):
        ref[:, i, :] = np.diag(B[i], k)
    assert_close(got, ref, em.int64)


def test_block_diag_cartesian_prod_combinations_documented_values(device):
    got = em.block_diag(em.tensor(1, device=device), em.tensor([2, 3], device=device),
                        em.tensor([[4.0]], device=device))
    assert got.tolist() == [[1, 0, 0, 0], [0, 2, 3, 0], [0, 0, 0, 4]]
    assert got.dtype is em.float32
    assert em.block_diag().shape == (1, 0)
    a, b = em.tensor([1, 2, 3], device=device), em.tensor([4, 5], device=device)
    ref = [list(p) for p in itertools.product([1, 2, 3], [4, 5])]
    assert em.cartesian_prod(a, b).tolist() == ref
    for r in range(0, 5):
        for rep in (False, True):
            make = itertools.combinations_with_replacement if rep else itertools.combinations
            ref = [list(c) for c in make([1, 2, 3], r)]
            got = em.combinations(a, r, with_replacement=rep)
            assert got.tolist() == (ref if r else [])
    with pytest.raises(ValueError, match="block_diag: item 0 must have at most 2 dims"):
        em.block_diag(em.ones(1, 1, 1))
    with pytest.raises(ValueError, match="combinations: expects a 1-d tensor"):
        em.combinations(em.ones(2, 2))


@SETTINGS
@given(n=st.integers(0, 5), N=st.one_of(st.none(), st.integers(0, 5)), inc=st.booleans(),
       seed=seeds)
def test_vander_matches_numpy(n, N, inc, seed, device):
    x = np.random.default_rng(seed).integers(-4, 5, size=n)
    got = em.vander(T(x, device), N, inc)
    assert got.dtype is em.int64
    assert_close(got, np.vander(x, N, inc), em.int64)


# scans --------------------------------------------------------------------------------------

def _cum_ref(a, axis, op):
    a = np.moveaxis(a, axis, -1)
    vals, idx = np.empty_like(a), np.zeros(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        best, bi = None, 0
        for j, v in enumerate(a[pos]):
            better = best is not None and (v >= best if op == "cummax" else v <= best)
            if best is None or (v != v) or (best == best and better):
                best, bi = v, j
            vals[pos + (j,)], idx[pos + (j,)] = best, bi
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@SETTINGS
@given(shape=shapes(min_dims=1, max_dims=3, max_side=5),
       d=st.sampled_from(FLOAT_DTYPES + INT_DTYPES), seed=seeds, data=st.data())
def test_cummax_cummin_match_the_reference(shape, d, seed, data, device):
    rng = np.random.default_rng(seed)
    a = arr(rng, shape, d, 0, 4) if d.kind == "int" else np.round(arr(rng, shape, d, -2, 2))
    if d.kind == "float":
        a = np.where(rng.random(shape) < 0.1, np.nan, a).astype(a.dtype)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    for op in ("cummax", "cummin"):
        v, i = getattr(em, op)(T(a, device), dim)
        rv, ri = _cum_ref(a, dim, op)
        assert_close(v, rv, d)
        assert i.tolist() == ri.tolist()


@SETTINGS
@given(shape=shapes(min_dims=0, max_dims=3, max_side=6), d=floats, seed=seeds, data=st.data())
def test_logcumsumexp_matches_numpy(shape, d, seed, data, device):
    rng = np.random.default_rng(seed)
    a = arr(rng, shape, d, -50, 50)
    dim = data.draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    ref = np.logaddexp.accumulate(a.astype(np.float64), axis=dim) if a.ndim else a
    assert_close(em.logcumsumexp(T(a, device), dim), ref, d)


def test_logcumsumexp_documented_values_and_bad_input(device):
    got = em.logcumsumexp(em.tensor([-1000.0, 0, -math.inf], device=device), 0).tolist()
    assert got == [-1000.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="logcumsumexp: needs a floating point"):
        em.logcumsumexp(em.tensor([1, 2]), 0)


# quantiles, mode, counts ----------------------------------------------------------------------

@SETTINGS
@given(shape=shapes(min_dims=0, max_dims=3, min_side=1, max_side=5), d=floats, seed=seeds,
       interp=st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]),
       nanq=st.booleans(), keepdim=st.booleans(), data=st.data())
def test_quantile_nanquantile_match_numpy(shape, d, seed, interp, nanq, keepdim, data, device):
    rng = np.random.default_rng(seed)
    a = arr(rng, shape, d)
    if rng.random() < 0.5:
        a = np.where(rng.random(shape) < 0.2, np.nan, a).astype(a.dtype)
    q = rng.random(data.draw(st.integers(1, 3))).astype(a.dtype)
    dim = data.draw(st.one_of(st.none(), st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1)))
    f = em.nanquantile if nanq else em.quantile
    ref_f = np.nanquantile if nanq else np.quantile
    method = {"nearest": "closest_observation"}.get(interp, interp)
    with np.errstate(all="ignore"), pytest.warns() if False else _quiet():
        if interp == "nearest":       # NumPy's nearest rounds like PyTorch's only at .5 ties
            method = "nearest"
        ref = ref_f(a.astype(np.float64), q.astype(np.float64),
                    axis=None if dim is None or a.ndim == 0 else dim,
                    keepdims=keepdim and a.ndim > 0, method=method)
    got = f(T(a, device), T(q, device), dim, keepdim, interpolation=interp)
    if keepdim and a.ndim == 0:
        ref = ref.reshape(got.shape)
    assert_close(got, ref, d, rtol=1e-4, atol=1e-4)
    scalar = f(T(a, device), float(q[0]), dim, keepdim, interpolation=interp)
    assert_close(scalar, ref[0], d, rtol=1e-4, atol=1e-4)


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def test_quantile_documented_values_and_bad_input(device):
    x = em.tensor([[1.0, 2, 3, 4], [nan, 1, 2, 3]], device=device)
    assert em.quantile(x, 0.4, dim=1, keepdim=True).tolist()[0] == pytest.approx([2.2])
    assert math.isnan(em.quantile(x, 0.4, dim=1)[1].item())
    got = em.nanquantile(x, em.tensor([0.4, 0.9], device=device), dim=1)
    assert got.reshape(-1).tolist() == pytest.approx([2.2, 1.8, 3.7, 2.8])
    with pytest.raises(ValueError, match=r"quantile: q values must be in the range \[0, 1\]"):
        em.quantile(x, 1.5)
    with pytest.raises(TypeError, match="quantile: input must be a floating point"):
        em.quantile(em.tensor([1, 2]), 0.5)
    with pytest.raises(ValueError, match="quantile: interpolation must be one of"):
        em.quantile(x, 0.5, interpolation="cubic")


def _mode_ref(a, axis):
    a = np.moveaxis(a, axis, -1)
    vals, idx = np.empty(a.shape[:-1], a.dtype), np.zeros(a.shape[:-1], np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        row = list(a[pos])
        counts = {}
        for j, v in enumerate(row):
            key = ("nan", j) if v != v else v
            counts[key] = counts.get(key, 0) + 1
        best = max(counts.values())
        v = min((k for k, c in counts.items() if c == best and not isinstance(k, tuple)),
                default=None)
        if v is None:   # only NaNs, each once: the first NaN in sorted (stable) order
            v = nan
            j = next(j for j, x in enumerate(row) if x != x)
        else:
            j = max(j for j, x in enumerate(row) if x == v)
        vals[pos], idx[pos] = v, j
    return vals, idx


@SETTINGS
@given(shape=shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
       d=st.sampled_from([em.float32, em.int64, em.int8]), seed=seeds, data=st.data())
def test_mode_matches_the_reference(shape, d, seed, data, device):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, size=shape).astype(np_dtype(d))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    v, i = em.mode(T(a, device), dim)
    rv, ri = _mode_ref(a, dim)
    assert_close(v, rv, d)
    assert i.tolist() == ri.tolist()
    vk, ik = T(a, device).mode(dim, keepdim=True)
    assert vk.shape == np.expand_dims(rv, dim).shape


def test_mode_documented_values(device):
    v, i = em.mode(em.tensor([3.0, 1, 1, 3], device=device))
    assert (v.item(), i.item()) == (1.0, 2)
    v, i = em.mode(em.tensor([1.0, nan, nan], device=device))
    assert (v.item(), i.item()) == (1.0, 0)
    with pytest.raises(IndexError, match="mode: cannot take the mode of the empty dim"):
        em.mode(em.ones(0))


@SETTINGS
@given(n=st.integers(0, 20), hi=st.integers(1, 10), minlength=st.integers(0, 12), seed=seeds,
       weighted=st.sampled_from([None, em.float32, em.float64, em.int64]))
def test_bincount_matches_numpy(n, hi, minlength, seed, weighted, device):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, hi, size=n)
    w = None if weighted is None else rng.integers(-3, 4, size=n).astype(np_dtype(weighted))
    got = em.bincount(T(x, device), None if w is None else T(w, device), minlength)
    ref = np.bincount(x, w, minlength)
    want = em.int64 if w is None else em.float32 if weighted is em.float32 else em.float64
    assert got.dtype is want
    assert_close(got, ref, want)


def test_bincount_bad_input(device):
    with pytest.raises(ValueError, match="bincount: input must be non-negative"):
        em.bincount(em.tensor([1, -1], device=device))
    with pytest.raises(ValueError, match="bincount: input must be a 1-d integer tensor"):
        em.bincount(em.tensor([1.0]))
    with pytest.raises(ValueError, match="bincount: weights must be a tensor"):
        em.bincount(em.tensor([1]), em.ones(2))


@SETTINGS
@given(n=st.integers(0, 30), bins=st.integers(1, 8), seed=seeds, density=st.booleans(),
       weighted=st.booleans(), explicit=st.sampled_from(["none", "range", "edges"]))
def test_histogram_matches_numpy(n, bins, seed, density, weighted, explicit, device):
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(-4, 4, size=n) * 4) / 4 + 0.01    # away from the edges below
    w = rng.uniform(0, 2, size=n) if weighted else None
    if explicit == "edges":
        edges = np.sort(rng.choice(np.arange(-5.0, 6.0), size=bins + 1, replace=False))
        h, e = em.histogram(T(x, device), T(edges, device),
                            weight=None if w is None else T(w, device), density=density)
        rh, re = np.histogram(x, edges, weights=w, density=density)
    elif explicit == "range":
        h, e = em.histogram(T(x, device), bins, range=(-5.0, 5.0),
                            weight=None if w is None else T(w, device), density=density)
        rh, re = np.histogram(x, bins, range=(-5, 5), weights=w, density=density)
    else:
        if n == 0:
            return
        h, e = em.histogram(T(x, device), bins=bins, weight=None if w is None else T(w, device),
                            density=density)
        rh, re = np.histogram(x, bins, weights=w, density=density)
    with np.errstate(all="ignore"):
        assert_close(e, re, em.float64, rtol=1e-9, atol=1e-9)
        assert_close(h, rh, em.float64, rtol=1e-6, atol=1e-6)


def test_histogram_documented_values(device):
    h, e = em.histogram(em.tensor([1.0, 2, 1], device=device), bins=4, range=(0.0, 3.0),
                        weight=em.tensor([1.0, 2.0, 4.0], device=device))
    assert h.tolist() == [0.0, 5.0, 2.0, 0.0] and e.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0]
    h, e = em.histogram(em.tensor([2.0, 2.0], device=device), bins=2)
    assert h.tolist() == [0.0, 2.0] and e.tolist() == [1.5, 2.0, 2.5]
    with pytest.raises(TypeError, match="histogram: needs a floating point"):
        em.histogram(em.tensor([1]), 2)
    with pytest.raises(ValueError, match="histogram: bins must be > 0"):
        em.histogram(em.tensor([1.0]), 0)


@SETTINGS
@given(shape=shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), d=floats, seed=seeds,
       p=st.sampled_from([1, 2, 3.5]), maxnorm=st.sampled_from([0.5, 2.0, 100.0]), data=st.data())
def test_renorm_matches_the_definition(shape, d, seed, p, maxnorm, data, device):
    a = arr(np.random.default_rng(seed), shape, d)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    moved = np.moveaxis(a.astype(np.float64), dim, 0)
    norms = (np.abs(moved.reshape(moved.shape[0], -1)) ** p).sum(1) ** (1 / p)
    factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    ref = np.moveaxis(moved * factor.reshape((-1,) + (1,) * (a.ndim - 1)), 0, dim)
    assert_close(em.renorm(T(a, device), p, dim, maxnorm), ref, d)
    x = T(a, device)
    x.renorm_(p, dim, maxnorm)
    assert_close(x, ref, d)


@SETTINGS
@given(shape=shapes(min_dims=0, max_dims=3, max_side=4), seed=seeds, data=st.data())
def test_sum_to_size_inverts_expand(shape, seed, data, device):
    a = np.random.default_rng(seed).integers(-5, 5, size=shape)
    size = tuple(data.draw(st.sampled_from([1, s])) for s in shape)
    lead = data.draw(st.integers(0, len(size)))
    size = size[lead:]
    ref = a.sum(axis=tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                                 if s == 1), keepdims=True)
    ref = ref.reshape(size)
    assert_close(T(a, device).sum_to_size(*size), ref, em.int64)
    assert_close(T(a, device).sum_to_size(size), ref, em.int64)


def test_sum_to_size_documented_and_bad(device):
    assert em.tensor([[1.0, 2], [3, 4]], device=device).sum_to_size(2, 1).tolist() == [[3.0], [7.0]]
    with pytest.raises(ValueError, match="sum_to_size: size .* is not expandable"):
        em.ones(2, 3).sum_to_size(2)


@SETTINGS
@given(shape=shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), d=floats, seed=seeds,
       how=st.sampled_from(["dx", "x1", "xnd", "none"]), data=st.data())
def test_trapezoid_and_cumulative_trapezoid_match_numpy(shape, d, seed, how, data, device):
    rng = np.random.default_rng(seed)
    y = arr(rng, shape, d)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    kw, ref_kw = {}, {}
    if how == "dx":
        kw = ref_kw = {"dx": 0.5}
    elif how == "x1":
        x = np.sort(rng.uniform(0, 5, size=shape[dim])).astype(y.dtype)
        kw, ref_kw = {"x": T(x, device)}, {"x": x}
    elif how == "xnd":
        x = np.sort(rng.uniform(0, 5, size=shape), axis=dim).astype(y.dtype)
        kw, ref_kw = {"x": T(x, device)}, {"x": x}
    got = em.trapezoid(T(y, device), dim=dim, **kw)
    ref = np.trapezoid(y, axis=dim, **ref_kw)
    assert_close(got, ref, d, rtol=1e-4, atol=1e-4)
    cum = em.cumulative_trapezoid(T(y, device), dim=dim, **kw)
    yy = np.moveaxis(y.astype(np.float64), dim, -1)
    if "x" in ref_kw:
        xx = ref_kw["x"].astype(np.float64)
        xx = np.moveaxis(xx, dim, -1) if xx.ndim > 1 else xx
        dxs = np.diff(xx, axis=-1)
    else:
        dxs = ref_kw.get("dx", 1.0)
    ref_cum = np.moveaxis(np.cumsum((yy[..., 1:] + yy[..., :-1]) / 2 * dxs, -1), -1, dim)
    assert_close(cum, ref_cum, d, rtol=1e-4, atol=1e-4)


def test_trace_and_trapezoid_documented(device):
    assert em.trace(em.tensor([[1, 2], [3, 4]], device=device)).item() == 5
    assert em.tensor([[1.0, 2, 3], [4, 5, 6]], device=device).trace().item() == 6.0
    assert em.trapezoid(em.tensor([1.0, 2, 3], device=device)).item() == 4.0
    assert em.trapezoid(em.tensor([1.0, 2, 3], device=device),
                        em.tensor([0.0, 1, 3], device=device)).item() == 6.5
    with pytest.raises(ValueError, match="trace: expects a 2-d tensor"):
        em.trace(em.ones(3))


@SETTINGS
@given(n=st.integers(0, 12), m=st.integers(0, 8), seed=seeds, invert=st.booleans(),
       d=st.sampled_from([em.int64, em.float32, em.int8]))
def test_isin_matches_numpy(n, m, seed, invert, d, device):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, size=(n, 2)).astype(np_dtype(d))
    b = rng.integers(-4, 5, size=m).astype(np_dtype(d))
    got = em.isin(T(a, device), T(b, device), invert=invert)
    assert got.dtype is em.bool
    assert got.tolist() == np.isin(a, b, invert=invert).tolist()


def test_isin_scalars_and_nan(device):
    assert em.isin(em.tensor([1, 2, 3], device=device), 2).tolist() == [False, True, False]
    assert em.isin(2, em.tensor([1, 2], device=device)).item() is True
    assert em.isin(em.tensor([nan, 1.0], device=device), em.tensor([nan, 1.0], device=device)
                   ).tolist() == [False, True]
    with pytest.raises(TypeError, match="isin: expected a Tensor"):
        em.isin(1, 2)


# in-place view ops, resize_, new_empty_strided -------------------------------------------------

def test_inplace_view_ops_change_self_and_return_it(device):
    a = np.arange(6.0).reshape(2, 3)
    x = T(a, device)
    assert x.t_() is x and x.shape == (3, 2) and x.tolist() == a.T.tolist()
    x.transpose_(0, 1)
    assert x.tolist() == a.tolist()
    x.unsqueeze_(1)
    assert x.shape == (2, 1, 3)
    x.squeeze_(1)
    assert x.shape == (2, 3)
    x.swapaxes_(0, 1)
    assert x.shape == (3, 2)
    x.swapdims_(0, 1)
    x.squeeze_()
    x.as_strided_((3,), (2,), 0)
    assert x.tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="t_|t:"):
        em.ones(2, 2, 2).t_()


def test_inplace_view_op_on_a_leaf_that_requires_grad_is_refused():
    w = em.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="t_: a leaf tensor that requires grad"):
        w.t_()
    with em.no_grad():
        w.t_()
    assert w.shape == (3, 2)


def test_resize_keeps_the_storage_prefix_and_grows(device):
    z = em.arange(6.0, device=device)
    assert z.resize_(2, 2) is z
    assert z.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    z.resize_(6)
    assert z.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    z.resize_(3, 3)
    assert z.shape == (3, 3) and z.stride() == (3, 1)
    assert z.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    y = em.empty(0, device=device)
    y.resize_as_(em.ones(2, 5))
    assert y.shape == (2, 5)
    with pytest.raises(RuntimeError, match="resize_: cannot resize a tensor that requires grad"):
        em.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(ValueError, match="resize_: negative dimension"):
        em.ones(2).resize_(-1)


def test_new_empty_strided(device):
    x = em.ones(2, dtype=em.float64, device=device)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert y.shape == (2, 3) and y.stride() == (1, 2)
    assert y.dtype is em.float64 and y.device == x.device
    assert x.new_empty_strided((2,), (1,), dtype=em.int32).dtype is em.int32


def test_new_names_are_functions_and_methods():
    for name in ("addcmul", "addcdiv", "baddbmm", "addbmm", "addmv", "addr", "diag", "diag_embed",
                 "diagflat", "cummax", "cummin", "logcumsumexp", "quantile", "nanquantile",
                 "mode", "kron", "cross", "gcd", "lcm", "frac", "renorm", "xlogy", "logaddexp2",
                 "heaviside", "deg2rad", "rad2deg", "sinc", "logit", "sgn", "ldexp", "trace"):
        assert hasattr(em, name) and hasattr(em.Tensor, name), name
    for name in ("addcmul_", "addcdiv_", "addmm_", "baddbmm_", "addbmm_", "addmv_", "addr_",
                 "frac_", "gcd_", "lcm_", "renorm_", "xlogy_", "t_", "transpose_", "squeeze_",
                 "unsqueeze_", "swapaxes_", "swapdims_", "as_strided_", "resize_", "resize_as_",
                 "sum_to_size", "new_empty_strided", "heaviside_", "logit_", "sinc_", "sgn_"):
        assert hasattr(em.Tensor, name), name
    for name in ("bincount", "histogram", "isin", "cdist", "block_diag", "cartesian_prod",
                 "combinations", "vander", "trapezoid", "cumulative_trapezoid", "chain_matmul"):
        assert hasattr(em, name), name


# the second batch: cov/corrcoef, dist, erfinv, scatter copies, unravel_index, predicates --

@SETTINGS
@given(v=st.integers(1, 4), n=st.integers(2, 8), seed=seeds, correction=st.integers(0, 1),
       fw=st.booleans(), aw=st.booleans())
def test_cov_corrcoef_match_numpy(v, n, seed, correction, fw, aw, device):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(v, n))
    f = rng.integers(1, 4, size=n) if fw else None
    a = rng.uniform(0.1, 2, size=n) if aw else None
    got = em.cov(T(x, device), correction=correction, fweights=None if f is None else T(f, device),
                 aweights=None if a is None else T(a, device))
    assert_close(got, np.cov(x, ddof=correction, fweights=f, aweights=a), em.float64)
    assert_close(T(x, device).corrcoef(), np.corrcoef(x), em.float64)
    assert_close(em.cov(T(x[0], device)), np.cov(x[0]), em.float64)


def test_cov_bad_input():
    with pytest.raises(TypeError, match="cov: fweights must be integers"):
        em.cov(em.ones(2, 3), fweights=em.ones(3))
    with pytest.raises(ValueError, match="cov: aweights must be a tensor of 3 elements"):
        em.cov(em.ones(2, 3), aweights=em.ones(2))


@SETTINGS
@given(shape=shapes(max_dims=3), seed=seeds, p=st.sampled_from([0, 1, 2, 3, math.inf]))
def test_dist_matches_numpy(shape, seed, p, device):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    diff = (a - b).reshape(-1)
    if diff.size == 0 and p == math.inf:   # the max of nothing: an error (ember's norm)
        return
    ref = np.linalg.norm(diff, p) if diff.size else 0.0
    assert_close(em.dist(T(a, device), T(b, device), p), ref, em.float64)


@SETTINGS
@given(shape=shapes(max_dims=2), d=floats, seed=seeds)
def test_erfinv_inverts_erf(shape, d, seed, device):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.9999, 0.9999, size=shape).astype(np_dtype(d))
    y = em.erfinv(T(x, device))
    assert y.dtype is d
    back = np.vectorize(math.erf, otypes=[np.float64])(to_numpy(y).astype(np.float64))
    tol = 1e-6 if d is em.float32 else 1e-13
    np.testing.assert_allclose(back, x.astype(np.float64), rtol=0, atol=tol)
    z = T(x, device)
    z.erfinv_()
    assert_close(z, to_numpy(y), d)


def test_erfinv_documented_values(device):
    got = em.erfinv(em.tensor([0.0, 0.5, -1.0, 1.0, 2.0], device=device)).tolist()
    assert got[0] == 0.0 and got[1] == pytest.approx(0.4769, abs=1e-4)
    assert got[2] == -math.inf and got[3] == math.inf and math.isnan(got[4])
    assert em.erfinv(em.tensor([0], device=device)).dtype is em.float32


def test_scatter_copies_and_unravel_index(device):
    z = em.zeros(4, 2, device=device)
    got = em.slice_scatter(z, em.ones(2, 2, device=device), 0, 1, 4, 2)
    assert got.tolist() == [[0, 0], [1, 1], [0, 0], [1, 1]] and z.sum().item() == 0
    got = em.zeros(2, 2, device=device).select_scatter(em.ones(2, device=device), 1, 0)
    assert got.tolist() == [[1, 0], [1, 0]]
    got = em.diagonal_scatter(em.zeros(3, 3, device=device), em.ones(2, device=device), 1)
    assert got.tolist() == [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    got = em.diagonal_scatter(em.zeros(2, 3, 3, device=device), em.ones(2, 2, device=device),
                              -1, 1, 2)
    ref = np.zeros((2, 3, 3))
    for i in range(2):
        ref[i] = np.diag(np.ones(2), -1)
    assert got.tolist() == ref.tolist()
    with pytest.raises(ValueError, match="slice_scatter: src has shape"):
        em.slice_scatter(z, em.ones(3, 2, device=device), 0, 0, 2)
    r, c = em.unravel_index(em.tensor([4, 7, -1], device=device), (2, 4))
    assert r.tolist() == [1, 1, 1] and c.tolist() == [0, 3, 3]
    ref = np.unravel_index([0, 5, 23], (2, 3, 4))
    got = em.unravel_index(em.tensor([0, 5, 23], device=device), (2, 3, 4))
    assert [g.tolist() for g in got] == [list(v) for v in ref]
    with pytest.raises(IndexError, match="unravel_index: an index is out of bounds"):
        em.unravel_index(em.tensor([8]), (2, 4))


def test_predicates_and_real_tensor_complex_names(device):
    x = em.ones(2, 3, device=device)
    assert x.nelement() == 6
    assert x.get_device() == (-1 if x.device.type == "cpu" else (x.device.index or 0))
    assert em.is_signed(x) and not em.tensor([1], dtype=em.uint8).is_signed()
    assert em.is_same_size(x, em.zeros(2, 3)) and not x.is_same_size(em.zeros(3))
    assert em.is_nonzero(em.tensor([2])) and not em.tensor(0.0).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero: a Tensor with 6 elements"):
        x.is_nonzero()
    assert x.conj() is x and em.resolve_conj(x) is x and x.resolve_neg() is x
    assert not x.is_conj() and not em.is_neg(x)
    assert x.real is x and em.real(x) is x
    c = em.conj_physical(x)
    assert c is not x and c.tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="imag: not implemented for tensors with non-complex"):
        _ = x.imag


def test_rsub_split_with_sizes_and_inplace_functions(device):
    x = em.tensor([1.0, 2.0], device=device)
    assert em.rsub(x, 5, alpha=2).tolist() == [3.0, 1.0]
    assert x.rsub(em.tensor([1.0, 1.0], device=device)).tolist() == [0.0, -1.0]
    parts = em.arange(5, device=device).split_with_sizes([2, 3])
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3, 4]]
    assert [p.tolist() for p in em.unsafe_chunk(em.arange(4), 2)] == [[0, 1], [2, 3]]
    y = em.tensor([-1.0, 4.0], device=device)
    assert em.abs_(y) is y and y.tolist() == [1.0, 4.0]
    em.sqrt_(y)
    em.clamp_(y, 1.5, 1.8)
    assert y.tolist() == pytest.approx([1.5, 1.8])
    em.relu_(y)
    with pytest.raises(TypeError, match="abs_: self must be a Tensor"):
        em.abs_(3)


# the third batch: samplers, nextafter, inf predicates, angle, fill_diagonal_, range, ... --

def test_log_normal_cauchy_geometric_samplers(device):
    em.manual_seed(0)
    x = em.empty(20000, dtype=em.float64, device=device)
    assert x.log_normal_(0.5, 0.25) is x
    logs = np.log(to_numpy(x))
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.25) < 0.01
    x.cauchy_(1.0, 2.0)
    assert abs(np.median(to_numpy(x)) - 1.0) < 0.1
    q = np.quantile(to_numpy(x), [0.25, 0.75])     # Cauchy quartiles: median -+ sigma
    assert abs(q[0] + 1.0) < 0.15 and abs(q[1] - 3.0) < 0.15
    g = em.empty(20000, dtype=em.int64, device=device).geometric_(0.25)
    gv = to_numpy(g)
    assert gv.min() >= 1 and abs(gv.mean() - 4.0) < 0.1      # mean 1 / p
    assert abs((gv == 1).mean() - 0.25) < 0.02
    with pytest.raises(ValueError, match=r"geometric_: p must be in \(0, 1\)"):
        g.geometric_(1.5)
    with pytest.raises(ValueError, match="cauchy_: sigma must be positive"):
        x.cauchy_(0, -1)


@SETTINGS
@given(shape=shapes(max_dims=2), d=st.sampled_from(FLOAT_DTYPES), seed=seeds)
def test_nextafter_matches_numpy(shape, d, seed, device):
    rng = np.random.default_rng(seed)
    npd = np_dtype(d)
    a = rng.choice(np.array([0.0, -0.0, 1.0, -2.5, 1e-30, np.inf, -np.inf, np.nan, 3.0]),
                   size=shape).astype(npd)
    b = rng.choice(np.array([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.0]),
                   size=shape).astype(npd)
    got = to_numpy(em.nextafter(T(a, device), T(b, device)))
    ref = np.nextafter(a, b)
    assert got.dtype == npd
    np.testing.assert_array_equal(got, ref)


def test_inf_predicates_angle_isreal(device):
    x = em.tensor([-math.inf, -1.0, 0.0, 2.0, math.inf, nan], device=device)
    assert em.isposinf(x).tolist() == [False, False, False, False, True, False]
    assert x.isneginf().tolist() == [True, False, False, False, False, False]
    assert em.isposinf(em.tensor([1, 2], device=device)).tolist() == [False, False]
    got = em.angle(x).tolist()
    assert got[:5] == pytest.approx([math.pi, math.pi, 0.0, 0.0, 0.0]) and math.isnan(got[5])
    assert em.isreal(x).all().item()


def test_fill_diagonal_matches_the_documented_values(device):
    a = em.zeros(3, 4, device=device)
    assert a.fill_diagonal_(5.0) is a
    assert a.tolist() == (np.eye(3, 4) * 5).tolist()
    b = em.zeros(7, 3, device=device).fill_diagonal_(1, wrap=True)
    ref = np.zeros((7, 3))
    for r in (0, 1, 2, 4, 5, 6):
        ref[r, r % 4] = 1
    assert b.tolist() == ref.tolist()
    c = em.zeros(7, 3, device=device).fill_diagonal_(1)
    assert c.tolist() == np.eye(7, 3).tolist()
    d3 = em.zeros(2, 2, 2, device=device).fill_diagonal_(3)
    assert d3[0, 0, 0].item() == 3 and d3[1, 1, 1].item() == 3 and d3.sum().item() == 6
    with pytest.raises(ValueError, match="fill_diagonal_: all dims must have one size"):
        em.zeros(2, 3, 2).fill_diagonal_(1)


def test_range_adjoint_and_module_functions(device):
    with pytest.warns(UserWarning, match="ember.range is deprecated"):
        r = em.range(0, 1, 0.25, device=device)
    assert r.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0] and r.dtype is em.float32
    with pytest.warns(UserWarning):
        assert em.range(1, 4).tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="range: step must be nonzero"):
        em.range(0, 1, 0)
    x = em.arange(6.0, device=device).reshape(2, 3)
    assert x.adjoint().tolist() == x.T.tolist() and em.adjoint(x).shape == (3, 2)
    y = em.fill(x, 2.0)
    assert y.tolist() == [[2.0] * 3] * 2 and x[0, 1].item() == 1.0
    assert em.zero_(em.fill_(y, 3.0)) is y and y.sum().item() == 0
    assert em.detach(x.requires_grad_()).requires_grad is False
    assert em.get_device(x) == x.get_device() and em.is_complex(x) is False
