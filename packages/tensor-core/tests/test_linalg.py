"""Matrix products (matmul, mm, bmm, mv, dot, vdot, inner, outer, tensordot, einsum,
addmm), ember.linalg and the CPU thread pool, with NumPy as the oracle.

float32 results must be within 1e-4 (relative to the size of the products summed,
max |A| @ |B|) of a float64 reference; float64 within 1e-12; integers exact (with
NumPy's wrap-around); operands come contiguous, transposed, step-sliced, offset and
broadcast, in sizes around the kernel's block edges (1, 7, 63, 65, 257).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember._C import core as _core, matmul as _lin
from ember_testing import arrays, fewer_examples, layouts, realize, to_numpy

RNG = np.random.default_rng(1234)
FLOATS = (em.float32, em.float64)
INTS = (em.int8, em.int16, em.int32, em.int64, em.uint8)


def values(shape, dtype, rng=RNG):
    npd = np.dtype(dtype.name)
    if dtype.kind == "bool":
        return rng.random(shape) < 0.5
    if dtype.kind == "int":
        info = np.iinfo(npd)
        lo, hi = max(int(info.min), -100), min(int(info.max), 100)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(npd)
    return rng.uniform(-1, 1, size=shape).astype(npd)


def layout(vals, kind):
    """An ember tensor holding vals, laid out as `kind`: contiguous | transposed (last
    two dims swapped in memory) | fortran (all dims reversed in memory) | strided
    (every other element of a bigger tensor, along every dim) | offset (part-way
    into its storage)."""
    vals = np.asarray(vals)
    if kind == "transposed" and vals.ndim >= 2:
        t = em.from_numpy(np.ascontiguousarray(np.swapaxes(vals, -1, -2)).copy())
        return t.transpose(-1, -2)
    if kind == "fortran" and vals.ndim >= 2:
        t = em.from_numpy(np.ascontiguousarray(vals.T).copy())
        return t.permute(list(range(vals.ndim))[::-1])
    if kind == "strided" and vals.ndim >= 1:
        big = np.zeros(tuple(2 * s + 1 for s in vals.shape), vals.dtype)
        big[tuple(slice(1, 2 * s + 1, 2) for s in vals.shape)] = vals
        b = em.from_numpy(big)
        return b[tuple(slice(1, 2 * s + 1, 2) for s in vals.shape)]
    if kind == "offset":
        flat = vals.reshape(-1)
        pad = np.zeros(5, vals.dtype)
        return em.from_numpy(np.concatenate([pad, flat, pad])).narrow(0, 5, flat.size) \
            .reshape(vals.shape)
    return em.from_numpy(np.ascontiguousarray(vals).copy())


def reference(a, b):
    """matmul in float64 (ints: in int64, then wrapped to the result dtype)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "b" and b.dtype.kind == "b":
        return np.matmul(a, b)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        rt = np.result_type(a, b)
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(rt)
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def check_product(actual, a, b, dtype, what=""):
    a, b = np.asarray(a), np.asarray(b)
    expected = reference(a, b)
    got = to_numpy(actual)
    assert actual.dtype == dtype, f"{what}: dtype {actual.dtype!r}, expected {dtype!r}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    if dtype.kind != "float":
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    # the error bound of a sum of products: |C - C_ref| <= eps * (|A| @ |B|)
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    tol = {"float16": 2e-3, "float32": 1e-4, "float64": 1e-12}[dtype.name]
    err = np.abs(got.astype(np.float64) - expected)
    bound = tol * np.maximum(scale, 1e-30) + (tol * 1e-3 if dtype.name != "float64" else 0)
    bad = err > bound
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements off; worst error "
                           f"{err.max():.3g} vs scale {scale.max():.3g}")


# ------------------------------------------------------------------ matmul: shapes

SIZES_2D = [(1, 1, 1), (7, 7, 7), (63, 65, 257), (65, 63, 7), (257, 1, 65), (1, 257, 63),
            (64, 48, 1), (2, 3, 0), (0, 3, 4), (3, 0, 4), (150, 20, 300), (13, 300, 33)]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", SIZES_2D)
def test_matmul_2d_sizes(m, n, k, dtype):
    a, b = values((m, k), dtype), values((k, n), dtype)
    check_product(em.from_numpy(a) @ em.from_numpy(b), a, b, dtype, f"{m}x{k} @ {k}x{n}")


LAYOUTS = ("contiguous", "transposed", "fortran", "strided", "offset")


@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_matmul_layouts(la, lb, dtype):
    for m, n, k in [(37, 41, 67), (6, 16, 256), (65, 7, 63)]:
        a, b = values((m, k), dtype), values((k, n), dtype)
        ta, tb = layout(a, la), layout(b, lb)
        check_product(em.matmul(ta, tb), a, b, dtype, f"{la} @ {lb} {m}x{k}x{n}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_matmul_negative_strides_and_column_major_out(dtype):
    a, b = values((30, 20), dtype), values((20, 25), dtype)
    ta = em.from_numpy(a).flip(0)
    check_product(ta @ em.from_numpy(b), a[::-1], b, dtype, "flipped rows")
    # C written column-major through addmm's in-place kernel
    c = em.zeros(25, 30, dtype=dtype).t()
    _lin.gemm_(c, em.from_numpy(a), em.from_numpy(b), 1.0, 0.0)
    check_product(c, a, b, dtype, "column-major C")


SHAPE_PAIRS = [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5,)), ((5,), (2, 5, 3)),
    ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)),
    ((1, 3, 4), (7, 4, 2)), ((7, 3, 4), (1, 4, 2)), ((2, 1, 6, 7), (1, 3, 7, 5)),
    ((3, 1, 7), (3, 7, 1)), ((4, 7, 1), (4, 1, 9)), ((0, 3, 4), (4, 5)), ((2, 3, 0), (2, 0, 5)),
    ((10, 33, 17), (17, 65)), ((6, 1, 40), (40, 50)), ((3, 40, 1), (3, 1, 50)),
]


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
@pytest.mark.parametrize("dtype", FLOATS + (em.int32,), ids=lambda d: d.name)
def test_matmul_batched_and_vectors(sa, sb, dtype):
    a, b = values(sa, dtype), values(sb, dtype)
    check_product(em.matmul(em.from_numpy(a), em.from_numpy(b)), a, b, dtype, f"{sa} @ {sb}")


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS[5:14])
@pytest.mark.parametrize("la", ("transposed", "strided", "offset"))
def test_matmul_batched_layouts(sa, sb, la):
    a, b = values(sa, em.float64), values(sb, em.float64)
    check_product(layout(a, la) @ layout(b, "fortran"), a, b, em.float64, f"{la} {sa} @ {sb}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_matmul_long_k(dtype):
    """A k too long for one packed B panel set is done in chunks that accumulate."""
    a, b = values((9, 60000), dtype), values((60000, 70), dtype)
    check_product(em.from_numpy(a) @ em.from_numpy(b), a, b, dtype, "long k")
    check_product(layout(a, "transposed") @ layout(b, "transposed"), a, b, dtype,
                  "long k, transposed")


def test_matmul_broadcast_operand_expanded():
    w = values((8, 6), em.float32)
    x = values((5, 3, 6, 4), em.float32)
    tw = em.from_numpy(w).expand(5, 3, 8, 6)       # stride-0 batch dims
    check_product(tw @ em.from_numpy(x), np.broadcast_to(w, (5, 3, 8, 6)), x, em.float32,
                  "expanded A")
    tx = em.from_numpy(values((4, 6), em.float32))
    check_product(em.from_numpy(x.swapaxes(-1, -2).copy()) @ tx.t().expand(5, 3, 6, 4),
                  x.swapaxes(-1, -2), np.broadcast_to(to_numpy(tx).T, (5, 3, 6, 4)),
                  em.float32, "expanded B")


def test_matmul_linear_layer_folds_batch():
    # (B, T, in) @ W^T: the batch folds into one GEMM over B*T rows
    x = values((4, 33, 70), em.float32)
    w = values((50, 70), em.float32)
    check_product(em.from_numpy(x) @ em.from_numpy(w).t(), x, w.T, em.float32, "x @ W.T")
    xs = layout(x, "strided")
    check_product(xs @ em.from_numpy(w).t(), x, w.T, em.float32, "strided x @ W.T")


@pytest.mark.parametrize("dtype", INTS + (em.bool,), ids=lambda d: d.name)
def test_matmul_integers_exact(dtype):
    for sa, sb in [((7, 9), (9, 5)), ((3, 4, 20), (20, 6)), ((9,), (9,)), ((2, 6, 5), (2, 5, 1))]:
        a, b = values(sa, dtype), values(sb, dtype)
        for la in ("contiguous", "transposed"):
            r = em.matmul(layout(a, la), em.from_numpy(b))
            check_product(r, a, b, dtype, f"{dtype.name} {la} {sa} @ {sb}")


def test_matmul_integers_wrap_like_numpy():
    a = np.full((3, 40), 100, np.int8)
    b = np.full((40, 2), 100, np.int8)
    r = em.from_numpy(a) @ em.from_numpy(b)
    np.testing.assert_array_equal(to_numpy(r), np.matmul(a, b))
    a32 = np.full((2, 3), 2 ** 30, np.int32)
    np.testing.assert_array_equal(to_numpy(em.from_numpy(a32) @ em.from_numpy(a32.T.copy())),
                                  np.matmul(a32, a32.T))


def test_matmul_large_integers_threaded():
    a, b = values((130, 140), em.int32), values((140, 150), em.int32)
    check_product(em.from_numpy(a) @ em.from_numpy(b), a, b, em.int32, "int32 threaded")


def test_matmul_float16():
    a, b = values((20, 70), em.float16), values((70, 9), em.float16)
    r = em.from_numpy(a) @ em.from_numpy(b)
    assert r.dtype == em.float16
    ref = np.matmul(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(to_numpy(r).astype(np.float32), ref, rtol=2e-3, atol=2e-2)
    r = layout(a, "transposed") @ em.from_numpy(b).t().t()
    np.testing.assert_allclose(to_numpy(r).astype(np.float32), ref, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("da,db,dr", [
    (em.int32, em.float32, em.float32), (em.float32, em.float64, em.float64),
    (em.int8, em.int64, em.int64), (em.bool, em.int16, em.int16),
    (em.uint8, em.int8, em.int16), (em.float16, em.float32, em.float32)])
def test_matmul_promotion(da, db, dr):
    a, b = values((4, 5), da), values((5, 3), db)
    r = em.from_numpy(a) @ em.from_numpy(b)
    assert r.dtype == dr
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(to_numpy(r).astype(np.float64), ref, rtol=1e-3, atol=1e-3)


def test_matmul_ignores_garbage_and_writes_fresh():
    # the output is write-only (beta = 0): NaN-filled recycled memory never leaks
    for _ in range(3):
        junk = em.full((64, 64), float("nan"))
        del junk
        a = em.from_numpy(values((64, 64), em.float32))
        assert not np.isnan(to_numpy(a @ a)).any()


def test_matmul_k_zero_gives_zeros():
    r = em.zeros(3, 0) @ em.zeros(0, 4)
    assert tuple(r.shape) == (3, 4) and not to_numpy(r).any()
    r = em.zeros(0) @ em.zeros(0)
    assert r.shape == () and r.item() == 0


@pytest.mark.parametrize("which", ["generic", "avx2", "avx512"])
def test_matmul_each_kernel(which):
    """Each micro-kernel (portable, AVX2, AVX-512; a CPU without one falls back to the
    next one down) gives the same results: odd k (the AVX-512 kernel's k pairs) and
    edge tiles."""
    _lin._set_kernel(which)
    try:
        name = _lin.kernel_name()
        assert name == "generic" if which == "generic" else name != "avx512f" or \
            which == "avx512"
        for m, n, k in [(63, 65, 257), (7, 17, 5), (100, 1, 30), (200, 190, 180),
                        (13, 33, 1), (50, 40, 3)]:
            for dtype in FLOATS:
                a, b = values((m, k), dtype), values((k, n), dtype)
                check_product(layout(a, "transposed") @ em.from_numpy(b), a, b, dtype,
                              f"{which} {m}x{k}x{n}")
    finally:
        _lin._set_kernel("auto")
    with pytest.raises(ValueError, match="_set_kernel"):
        _lin._set_kernel("sse9")


@settings(max_examples=fewer_examples(2))
@given(st.data())
def test_matmul_hypothesis(data):
    dtype = data.draw(st.sampled_from((em.float32, em.float64, em.int64)))
    m, n, k = (data.draw(st.integers(1, 20)) for _ in range(3))
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2))
    bb = [data.draw(st.sampled_from([s, 1])) for s in batch]
    av = data.draw(arrays(dtype, tuple(batch) + (m, k), small=True))
    bv = data.draw(arrays(dtype, tuple(bb) + (k, n), small=True))
    ta, ea = realize(av, data.draw(layouts))
    tb, eb = realize(bv, data.draw(layouts))
    check_product(ta @ tb, ea, eb, dtype, f"{ea.shape} @ {eb.shape}")


# ------------------------------------------------------------------ matmul: errors

def test_matmul_inner_mismatch_message():
    with pytest.raises((ValueError, RuntimeError),
                       match=r"matmul: \(3x4\) @ \(5x6\): inner dimensions 4 and 5 differ"):
        em.ones(3, 4) @ em.ones(5, 6)
    with pytest.raises(ValueError, match=r"inner dimensions 3 and 4 differ"):
        em.matmul(em.ones(3), em.ones(4))
    with pytest.raises(ValueError, match="batch dimensions"):
        em.ones(2, 3, 4) @ em.ones(3, 4, 5)


def test_matmul_bad_input():
    with pytest.raises(ValueError, match="at least 1-d"):
        em.matmul(em.tensor(2.0), em.ones(3))
    with pytest.raises(ValueError, match="at least 1-d"):
        em.matmul(em.ones(3), 2.0)
    with pytest.raises(TypeError):
        em.matmul(em.ones(3), "abc")
    with pytest.raises(ValueError, match="mm: expected 2-d"):
        em.mm(em.ones(2, 3, 4), em.ones(4, 5))
    with pytest.raises(ValueError, match="bmm: expected 3-d"):
        em.bmm(em.ones(3, 4), em.ones(4, 5))
    with pytest.raises(ValueError, match="bmm: batch sizes 2 and 3 differ"):
        em.bmm(em.ones(2, 3, 4), em.ones(3, 4, 5))
    with pytest.raises(ValueError, match="mv:"):
        em.mv(em.ones(3, 4), em.ones(4, 1))
    with pytest.raises(ValueError, match="dot: 1-d tensors of sizes 3 and 4"):
        em.dot(em.ones(3), em.ones(4))


def test_matmul_out():
    a, b = em.ones(3, 4), em.ones(4, 2)
    out = em.empty(3, 2)
    r = em.matmul(a, b, out=out)
    assert r is out and (to_numpy(out) == 4).all()
    with pytest.raises(ValueError, match="out has shape"):
        em.matmul(a, b, out=em.empty(2, 2))


def test_matmul_rmatmul_and_methods():
    a, b = values((3, 4), em.float64), values((4, 2), em.float64)
    ta, tb = em.from_numpy(a), em.from_numpy(b)
    for r in (ta @ tb, ta.matmul(tb), ta.mm(tb), em.mm(ta, tb), tb.__rmatmul__(ta)):
        check_product(r, a, b, em.float64)
    check_product(ta[None].bmm(tb[None]), a[None], b[None], em.float64)
    check_product(ta.mv(tb[:, 0]), a, b[:, 0], em.float64)


# ------------------------------------------------------------------ the family

def test_dot_vdot_inner_outer():
    x, y = values((9,), em.float64), values((9,), em.float64)
    tx, ty = em.from_numpy(x), em.from_numpy(y)
    assert abs(em.dot(tx, ty).item() - np.dot(x, y)) < 1e-12
    assert tx.dot(ty).shape == ()
    assert abs(em.vdot(em.from_numpy(x.reshape(3, 3)), ty).item() - np.vdot(x, y)) < 1e-12
    np.testing.assert_allclose(to_numpy(em.outer(tx, ty)), np.outer(x, y))
    np.testing.assert_allclose(to_numpy(tx.outer(ty[:4])), np.outer(x, y[:4]))
    a, b = values((2, 3, 5), em.float64), values((4, 5), em.float64)
    np.testing.assert_allclose(to_numpy(em.inner(em.from_numpy(a), em.from_numpy(b))),
                               np.inner(a, b), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(em.from_numpy(a).inner(em.from_numpy(b))),
                               np.inner(a, b), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(em.inner(em.tensor(2.0, dtype=em.float64),
                                                 em.from_numpy(b))), 2 * b)
    # NumPy's dot beyond 2-d
    c = values((3, 5, 2), em.float64)
    np.testing.assert_allclose(to_numpy(em.dot(em.from_numpy(a), em.from_numpy(c))),
                               np.dot(a, c), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(em.dot(em.from_numpy(a[0]), em.from_numpy(b.T.copy()))),
                               np.dot(a[0], b.T), rtol=1e-12)
    with pytest.raises(ValueError, match="inner: last dimensions"):
        em.inner(em.ones(2, 3), em.ones(4))
    with pytest.raises(ValueError, match="vdot"):
        em.vdot(em.ones(2, 3), em.ones(5))


@pytest.mark.parametrize("sa,sb,dims", [
    ((3, 4, 5), (4, 5, 6), 2), ((3, 4), (4, 5), 1), ((3, 4), (5, 6), 0),
    ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((2, 3), (3, 2), ([1, 0], [0, 1])),
    ((4, 5, 6), (6, 4), ([2, 0], [0, 1])), ((3, 4), (4,), ([1], [0])), ((3, 4), (3, 4), 2),
    ((2, 3), (3, 2), (1, 0)),
])
def test_tensordot(sa, sb, dims):
    a, b = values(sa, em.float64), values(sb, em.float64)
    axes = dims if isinstance(dims, int) else tuple(dims)
    r = em.tensordot(em.from_numpy(a), em.from_numpy(b), dims)
    np.testing.assert_allclose(to_numpy(r), np.tensordot(a, b, axes), rtol=1e-12, atol=1e-12)


def test_tensordot_bad():
    with pytest.raises(ValueError, match="tensordot"):
        em.tensordot(em.ones(3, 4), em.ones(5, 6), 1)
    with pytest.raises(ValueError, match="tensordot"):
        em.tensordot(em.ones(3, 4), em.ones(4, 6), ([1], [0, 1]))
    with pytest.raises(ValueError, match="tensordot"):
        em.tensordot(em.ones(3, 4), em.ones(4, 6), 3)


def test_addmm():
    a, b = values((5, 7), em.float64), values((7, 3), em.float64)
    c = values((5, 3), em.float64)
    bias = values((3,), em.float64)
    ta, tb = em.from_numpy(a), em.from_numpy(b)
    np.testing.assert_allclose(to_numpy(em.addmm(em.from_numpy(c), ta, tb)), c + a @ b)
    np.testing.assert_allclose(to_numpy(em.addmm(em.from_numpy(bias), ta, tb, beta=0.5,
                                                 alpha=2.0)), 0.5 * bias + 2 * a @ b)
    nan = em.full((5, 3), float("nan"), dtype=em.float64)
    np.testing.assert_allclose(to_numpy(em.addmm(nan, ta, tb, beta=0)), a @ b)
    np.testing.assert_allclose(to_numpy(em.from_numpy(bias).addmm(ta, tb)), bias + a @ b)
    ai = values((4, 6), em.int32)
    bi = values((6, 2), em.int32)
    np.testing.assert_array_equal(
        to_numpy(em.addmm(em.ones(2, dtype=em.int32), em.from_numpy(ai), em.from_numpy(bi),
                          alpha=2)), 1 + 2 * (ai @ bi))
    with pytest.raises(ValueError, match="addmm"):
        em.addmm(em.ones(4, 4), em.ones(5, 7), em.ones(7, 3))
    with pytest.raises(ValueError, match="addmm"):
        em.addmm(em.ones(3), em.ones(5, 7), em.ones(6, 3))


# ------------------------------------------------------------------ einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ik,jk->ij", [(3, 4), (5, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bki", [(2, 3, 4), (2, 5, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ijji->", [(2, 3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("j,ij->i", [(4,), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...i,...i->...", [(2, 3, 4), (3, 4)]),
    ("i...->...", [(3, 2, 4)]),
    ("...", [(2, 3)]),
    ("ij...,jk...->ik...", [(3, 4, 2), (4, 5, 2)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("ab,bc,cd,da->", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 5, 6), (2, 3, 6, 4)]),
    ("ii,jj->ij", [(3, 3), (4, 4)]),
    ("iji,j->i", [(3, 4, 3), (4,)]),
    ("ijk,ikl,jl->", [(2, 3, 4), (2, 4, 5), (3, 5)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("ij,kl->ijkl", [(2, 3), (4, 5)]),
    ("ij,kl->ikjl", [(2, 3), (4, 5)]),
    ("Ab,bC->AC", [(3, 4), (4, 2)]),
    (",ij->ij", [(), (3, 4)]),
    ("ij,->", [(3, 4), ()]),
    ("ij,ik->jk", [(1, 4), (3, 5)]),
    ("bi,bj->bij", [(1, 3), (4, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] or "scalar" for c in EINSUM_CASES])
@pytest.mark.parametrize("dtype", (em.float64, em.int64), ids=lambda d: d.name)
def test_einsum_matches_numpy(eq, shapes, dtype):
    vals = [values(s, dtype) for s in shapes]
    if eq in ("ij,ik->jk", "bi,bj->bij"):
        # a size-1 dim broadcasts against the other operand (NumPy only does this
        # for ellipsis dims, so the reference gets it broadcast already)
        n = shapes[1][0]
        expected = np.einsum(eq, np.broadcast_to(vals[0], (n,) + vals[0].shape[1:]), vals[1])
    else:
        expected = np.einsum(eq, *vals)
    r = em.einsum(eq, *[em.from_numpy(np.ascontiguousarray(v).copy()) if v.ndim else
                        em.tensor(v.item(), dtype=dtype) for v in vals])
    assert r.dtype == dtype
    np.testing.assert_allclose(to_numpy(r), expected, rtol=1e-12, atol=1e-12, err_msg=eq)


def test_einsum_layouts_and_lists():
    a, b = values((5, 6), em.float32), values((6, 7), em.float32)
    r = em.einsum("ij,jk->ik", [layout(a, "transposed"), layout(b, "strided")])
    check_product(r, a, b, em.float32, "einsum list form")
    r = em.einsum(em.from_numpy(a), [0, 1], em.from_numpy(b), [1, 2], [0, 2])
    check_product(r, a, b, em.float32, "sublist form")
    r = em.einsum(em.from_numpy(a), [Ellipsis, 1], em.from_numpy(b), [1, 2])
    check_product(r, a, b, em.float32, "sublist with ellipsis")
    r = em.einsum("i j , j k -> i k", em.from_numpy(a), em.from_numpy(b))
    check_product(r, a, b, em.float32, "spaces")


def test_einsum_promotes_and_bool():
    a, b = values((3, 4), em.int32), values((4, 2), em.float32)
    r = em.einsum("ij,jk->ik", em.from_numpy(a), em.from_numpy(b))
    assert r.dtype == em.float32
    np.testing.assert_allclose(to_numpy(r), a @ b, rtol=1e-5)
    m = values((3, 4), em.bool)
    n = values((4, 2), em.bool)
    r = em.einsum("ij,jk->ik", em.from_numpy(m), em.from_numpy(n))
    assert r.dtype == em.bool
    np.testing.assert_array_equal(to_numpy(r), np.einsum("ij,jk->ik", m, n))


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk->ik", [(3, 4), (5, 6)], "size"),
    ("ij,jk", [(3, 4)], "operands"),
    ("ij->k", [(3, 4)], "does not appear"),
    ("ij->ii", [(3, 4)], "more than once"),
    ("ijk->ij", [(3, 4)], "dims"),
    ("i1->i", [(3, 4)], "invalid"),
    ("ii->i", [(3, 4)], "size"),
    ("i->i->i", [(3,)], "->"),
    ("....i->i", [(3,)], "ellipsis"),
])
def test_einsum_bad_input(eq, shapes, msg):
    with pytest.raises(ValueError, match=msg):
        em.einsum(eq, *[em.ones(*s) for s in shapes])


@settings(max_examples=fewer_examples(2))
@given(st.data())
def test_einsum_hypothesis(data):
    """Random two-operand contractions over labels a-e (repeats allowed), explicit
    or implicit output."""
    sizes = {c: data.draw(st.integers(1, 4)) for c in "abcde"}
    t1 = "".join(data.draw(st.lists(st.sampled_from("abcde"), min_size=0, max_size=4)))
    t2 = "".join(data.draw(st.lists(st.sampled_from("abcde"), min_size=0, max_size=4)))
    used = sorted(set(t1 + t2))
    explicit = data.draw(st.booleans())
    if explicit:
        out = "".join(data.draw(st.permutations(used))[:data.draw(st.integers(0, len(used)))])
        eq = f"{t1},{t2}->{out}"
    else:
        eq = f"{t1},{t2}"
    a = values(tuple(sizes[c] for c in t1), em.float64)
    b = values(tuple(sizes[c] for c in t2), em.float64)
    ta, tb = (em.from_numpy(np.ascontiguousarray(v).copy()) if v.ndim
              else em.tensor(v.item(), dtype=em.float64) for v in (a, b))
    np.testing.assert_allclose(to_numpy(em.einsum(eq, ta, tb)), np.einsum(eq, a, b),
                               rtol=1e-12, atol=1e-12, err_msg=eq)


# ------------------------------------------------------------------ ember.linalg

def test_linalg_namespace():
    a = values((4, 5), em.float64)
    ta = em.from_numpy(a)
    assert em.linalg.matmul is em.matmul
    np.testing.assert_allclose(em.linalg.norm(ta).item(), np.linalg.norm(a))
    np.testing.assert_allclose(to_numpy(em.linalg.vector_norm(ta, 1, dim=1)),
                               np.linalg.norm(a, 1, axis=1))
    np.testing.assert_allclose(to_numpy(em.linalg.vector_norm(ta, float("inf"), dim=0)),
                               np.abs(a).max(0))
    for ord_ in ("fro", 1, -1, float("inf"), -float("inf")):
        np.testing.assert_allclose(em.linalg.matrix_norm(ta, ord_).item(),
                                   np.linalg.norm(a, ord_), rtol=1e-12)
        np.testing.assert_allclose(em.linalg.norm(ta, ord_).item(), np.linalg.norm(a, ord_),
                                   rtol=1e-12)
    b3 = values((2, 4, 5), em.float64)
    np.testing.assert_allclose(to_numpy(em.linalg.matrix_norm(em.from_numpy(b3), 1,
                                                              keepdim=True)),
                               np.linalg.norm(b3, 1, axis=(-2, -1), keepdims=True))
    np.testing.assert_allclose(to_numpy(em.linalg.vecdot(em.from_numpy(b3), ta)),
                               (b3 * a).sum(-1))
    x = em.linalg.vecdot(em.from_numpy(values((3, 4), em.int32)), em.ones(4, dtype=em.int32))
    assert x.dtype == em.int32
    np.testing.assert_allclose(to_numpy(em.linalg.matrix_transpose(em.from_numpy(b3))),
                               b3.swapaxes(-1, -2))
    np.testing.assert_allclose(to_numpy(em.linalg.diagonal(em.from_numpy(b3))),
                               np.diagonal(b3, 0, -2, -1))
    np.testing.assert_allclose(em.linalg.trace(em.from_numpy(a[:, :4])).item(), np.trace(a[:, :4]))
    # the decompositions exist (test_linalg_decompositions.py tests them): 'nuc' is the
    # sum of the singular values
    np.testing.assert_allclose(em.linalg.matrix_norm(ta, "nuc").item(), np.linalg.norm(a, "nuc"),
                               rtol=1e-12)
    np.testing.assert_allclose(to_numpy(em.linalg.svdvals(ta)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-12)
    with pytest.raises(AttributeError):
        _ = em.linalg.does_not_exist


def test_multi_dot():
    shapes = [(10,), (10, 3), (3, 40), (40, 2), (2,)]
    vs = [values(s, em.float64) for s in shapes]
    r = em.linalg.multi_dot([em.from_numpy(v) for v in vs])
    np.testing.assert_allclose(to_numpy(r), np.linalg.multi_dot(vs), rtol=1e-12)
    with pytest.raises(ValueError, match="multi_dot"):
        em.linalg.multi_dot([em.ones(3, 4), em.ones(5, 6)])


# ------------------------------------------------------------------ autograd hooks

def test_matmul_family_records_for_autograd():
    seen = []

    def recorder(op, inputs, output, attrs):
        seen.append(op)
        output._set_autograd(None, True)      # as ember.autograd's recorder does

    prev = _core.set_recorder(recorder)
    try:
        a = em.ones(3, 4).requires_grad_()
        b = em.ones(4, 5)
        a @ b
        assert seen == ["matmul"]
        seen.clear()
        em.einsum("ij,jk->ki", a, b)
        assert "matmul" in seen and "permute" in seen
        seen.clear()
        em.tensordot(a, b, 1)
        assert "matmul" in seen
        seen.clear()
        em.addmm(em.ones(5), a, b)
        assert "matmul" in seen and "add" in seen
        seen.clear()
        with em.no_grad():
            a @ b
        assert seen == []
        em.ones(3, 4) @ b
        assert seen == []
    finally:
        _core.set_recorder(prev)


# ------------------------------------------------------------------ threads

def test_num_threads_roundtrip():
    n = em.get_num_threads()
    assert n >= 1
    try:
        em.set_num_threads(1)
        assert em.get_num_threads() == 1
        a = values((300, 200), em.float32)
        b = values((200, 250), em.float32)
        r1 = to_numpy(em.from_numpy(a) @ em.from_numpy(b))
        em.set_num_threads(3)
        assert em.get_num_threads() == 3
        r3 = to_numpy(em.from_numpy(a) @ em.from_numpy(b))
        check_product(em.from_numpy(r3), a, b, em.float32)
        np.testing.assert_allclose(r1, r3, rtol=1e-5, atol=1e-5)
    finally:
        em.set_num_threads(n)
    with pytest.raises(ValueError, match="set_num_threads"):
        em.set_num_threads(0)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_parallel_paths(dtype):
    """Matrix-vector products (row- and column-major), batches of small products
    and a product with one row block, each large enough to be split over threads."""
    n = em.get_num_threads()
    try:
        em.set_num_threads(2)
        a, x = values((1500, 1100), dtype), values((1100,), dtype)
        check_product(em.from_numpy(a) @ em.from_numpy(x), a, x, dtype, "gemv rows")
        check_product(layout(a, "transposed") @ em.from_numpy(x), a, x, dtype, "gemv cols")
        y = values((1500,), dtype)
        check_product(em.from_numpy(y) @ em.from_numpy(a), y, a, dtype, "vector @ matrix")
        p, q = values((8300, 8, 8), dtype), values((8300, 8, 8), dtype)
        check_product(em.from_numpy(p) @ layout(q, "transposed"), p, q, dtype, "many small")
        r, s = values((40, 900), dtype), values((900, 700), dtype)
        check_product(em.from_numpy(r) @ layout(s, "transposed"), r, s, dtype, "one row block")
        check_product(em.from_numpy(r) @ em.from_numpy(s), r, s, dtype, "one row block NN")
    finally:
        em.set_num_threads(n)


def test_threaded_matmul_from_python_threads():
    """Several Python threads multiplying at once (the pool serves one, the others
    run on their own thread) all get right answers."""
    import threading
    a = values((260, 270), em.float32)
    b = values((270, 250), em.float32)
    ta, tb = em.from_numpy(a), em.from_numpy(b)
    ref = reference(a, b)
    errors = []

    def work():
        for _ in range(3):
            r = to_numpy(ta @ tb)
            if np.abs(r - ref).max() > 1e-3:
                errors.append(np.abs(r - ref).max())

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import ember as em
    em.set_num_threads(2)
    a = em.from_numpy(np.random.default_rng(0).random((400, 400), dtype=np.float32))
    for _ in range(3):
        ref = np.asarray(a @ a)          # the pool's workers are up and have run
    pid = os.fork()
    if pid == 0:
        try:
            r = np.asarray(a @ a)        # a threaded op in the child: fresh workers
            r2 = np.asarray(a @ a)
            ok = np.allclose(r, ref, rtol=1e-4) and np.allclose(r2, ref, rtol=1e-4)
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    # the parent's pool still works after the fork
    assert np.allclose(np.asarray(a @ a), ref, rtol=1e-4)
    sys.exit(os.waitstatus_to_exitcode(status))
""")


def test_fork_after_threaded_work():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, "-c", FORK_SCRIPT], env=env, timeout=120,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


# issue 16 item 14: matmul of integer (and bool) tensors on every device, exact with the
# CPU's wrap-around, across the kernel's 64-wide tiles and batch broadcasting

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_issue16_item14_integer_matmul_family(device, dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype) if dtype != "bool" else None
    lo, hi = (0, 2) if info is None else (max(info.min, -100), min(info.max, 100))

    def draw(*shape):
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)

    def expect(a, b):
        if dtype == "bool":
            return np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dtype)   # wraps

    def on(a):
        return em.tensor(a, device=device)

    a, b = draw(3, 70, 65), draw(65, 66)
    for got, want in [(on(a) @ on(b), expect(a, b)),
                      (em.mm(on(a[0]), on(b)), expect(a[0], b)),
                      (em.bmm(on(a), on(draw(3, 65, 5))), None),
                      (em.mv(on(a[1]), on(b[:, 0])), expect(a[1], b[:, 0])),
                      (on(a[0]).T @ on(a[0]), expect(a[0].T, a[0]))]:
        assert got.device == on(a).device and str(got.dtype) == f"ember.{dtype}"
        if want is not None:
            np.testing.assert_array_equal(got.cpu().numpy(), want)
    c = draw(3, 65, 5)
    np.testing.assert_array_equal(em.bmm(on(a), on(c)).cpu().numpy(), expect(a, c))
    v, w = draw(40), draw(40)
    assert em.dot(on(v), on(w)).cpu().numpy() == expect(v, w)
    # the same on CPU, so the devices agree with ember's own CPU GEMM too
    np.testing.assert_array_equal((em.tensor(a) @ em.tensor(b)).numpy(), expect(a, b))
