"""max_pool3d, avg_pool3d, adaptive_avg_pool3d and adaptive_max_pool3d (composed from
the 2-d kernels) against NumPy loops over every output voxel written here, on every
device, gradchecked in float64, and bad input."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck
from ember_testing import fewer_examples


def out_size(n, k, s, p, d, ceil_mode):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def ref_max_pool3d(x, k, s, p, d, ceil_mode):
    """Values and flat indices; the first maximum in (d, h, w) order wins."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    out = [out_size(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    vals = np.full((n, c) + tuple(out), -np.inf)
    idx = np.full((n, c) + tuple(out), -1, dtype=np.int64)
    for o in itertools.product(*(range(v) for v in out)):
        best, where = None, -1
        for t in itertools.product(*(range(v) for v in k)):
            pos = [o[i] * s[i] - p[i] + t[i] * d[i] for i in range(3)]
            if any(q < 0 or q >= sp[i] for i, q in enumerate(pos)):
                continue
            v = x[(slice(None), slice(None)) + tuple(pos)]
            flat = (pos[0] * sp[1] + pos[1]) * sp[2] + pos[2]
            if best is None:
                best, where = v.copy(), np.full(v.shape, flat)
            else:
                better = v > best
                best = np.where(better, v, best)
                where = np.where(better, flat, where)
        if best is not None:
            vals[(slice(None), slice(None)) + o] = best
            idx[(slice(None), slice(None)) + o] = where
    return vals, idx


def ref_avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    n, c = x.shape[:2]
    sp = x.shape[2:]
    out = [out_size(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3)]
    res = np.zeros((n, c) + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        starts = [o[i] * s[i] - p[i] for i in range(3)]
        ends = [min(starts[i] + k[i], sp[i] + p[i]) for i in range(3)]
        pool = math.prod(e - b for b, e in zip(starts, ends))
        cs = [max(b, 0) for b in starts]
        ce = [min(e, sp[i]) for i, e in enumerate(ends)]
        total = x[:, :, cs[0]:ce[0], cs[1]:ce[1], cs[2]:ce[2]].sum(axis=(2, 3, 4))
        div = divisor_override if divisor_override else pool if count_include_pad else \
            math.prod(e - b for b, e in zip(cs, ce))
        res[(slice(None), slice(None)) + o] = total / div
    return res


def adaptive_windows(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def ref_adaptive3d(x, out, kind):
    n, c = x.shape[:2]
    sp = x.shape[2:]
    wins = [adaptive_windows(sp[i], out[i]) for i in range(3)]
    vals = np.zeros((n, c) + tuple(out))
    idx = np.zeros((n, c) + tuple(out), dtype=np.int64)
    for o in itertools.product(*(range(v) for v in out)):
        (a0, a1), (b0, b1), (c0, c1) = (wins[i][o[i]] for i in range(3))
        box = x[:, :, a0:a1, b0:b1, c0:c1]
        if kind == "avg":
            vals[(slice(None), slice(None)) + o] = box.mean(axis=(2, 3, 4))
        else:
            flat = box.reshape(n, c, -1)
            j = flat.argmax(axis=2)
            vals[(slice(None), slice(None)) + o] = flat.max(axis=2)
            dd, hh, ww = np.unravel_index(j, box.shape[2:])
            idx[(slice(None), slice(None)) + o] = ((dd + a0) * sp[1] + hh + b0) * sp[2] + \
                ww + c0
    return vals, idx


def np_of(t):
    return t.cpu().numpy()


@st.composite
def window_configs(draw, dilation=True):
    k = tuple(draw(st.integers(1, 3)) for _ in range(3))
    s = tuple(draw(st.integers(1, 3)) for _ in range(3))
    p = tuple(draw(st.integers(0, kk // 2)) for kk in k)
    d = tuple(draw(st.integers(1, 2)) for _ in range(3)) if dilation else (1, 1, 1)
    sp = tuple(draw(st.integers(max(1, dd * (kk - 1) + 1 - 2 * pp), 6))
               for kk, pp, dd in zip(k, p, d))
    return dict(k=k, s=s, p=p, d=d, sp=sp, ceil_mode=draw(st.booleans()),
                n=draw(st.integers(1, 2)), c=draw(st.integers(1, 2)))


@settings(max_examples=fewer_examples(2), deadline=None)
@given(cfg=window_configs(), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_max_pool3d_matches_reference(device, cfg, dtype, seed):
    rng = np.random.default_rng(seed)
    # small integers: ties, whose first maximum must win
    x = rng.integers(-3, 4, (cfg["n"], cfg["c"]) + cfg["sp"]).astype(dtype)
    want, widx = ref_max_pool3d(x, cfg["k"], cfg["s"], cfg["p"], cfg["d"], cfg["ceil_mode"])
    assume(np.isfinite(want).all())     # a window wholly in the padding: PyTorch's index is
    got, gidx = em.max_pool3d(em.from_numpy(x).to(device), cfg["k"], cfg["s"], cfg["p"],
                              cfg["d"], cfg["ceil_mode"], return_indices=True)
    np.testing.assert_array_equal(np_of(got), want)
    np.testing.assert_array_equal(np_of(gidx), widx)
    unbatched = em.max_pool3d(em.from_numpy(x[0]).to(device), cfg["k"], cfg["s"], cfg["p"],
                              cfg["d"], cfg["ceil_mode"])
    np.testing.assert_array_equal(np_of(unbatched), want[0])


@settings(max_examples=fewer_examples(2), deadline=None)
@given(cfg=window_configs(dilation=False), dtype=st.sampled_from(["float32", "float64"]),
       count_include_pad=st.booleans(), divisor=st.sampled_from([None, None, 3, -2]),
       seed=st.integers(0, 2**16))
def test_avg_pool3d_matches_reference(device, cfg, dtype, count_include_pad, divisor, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cfg["n"], cfg["c"]) + cfg["sp"]).astype(dtype)
    want = ref_avg_pool3d(x.astype(np.float64), cfg["k"], cfg["s"], cfg["p"],
                          cfg["ceil_mode"], count_include_pad, divisor)
    got = em.avg_pool3d(em.from_numpy(x).to(device), cfg["k"], cfg["s"], cfg["p"],
                        cfg["ceil_mode"], count_include_pad, divisor)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert got.dtype.name == dtype
    np.testing.assert_allclose(np_of(got), want, rtol=tol, atol=tol)


@settings(max_examples=fewer_examples(2), deadline=None)
@given(sp=st.tuples(*(st.integers(1, 7) for _ in range(3))),
       out=st.tuples(*(st.integers(1, 5) for _ in range(3))),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_adaptive_pool3d_matches_reference(device, sp, out, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3) + sp).astype(dtype)
    t = em.from_numpy(x).to(device)
    want, _ = ref_adaptive3d(x.astype(np.float64), out, "avg")
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(np_of(em.adaptive_avg_pool3d(t, out)), want, rtol=tol,
                               atol=tol)
    want, widx = ref_adaptive3d(x, out, "max")
    got, gidx = em.adaptive_max_pool3d(t, out, return_indices=True)
    np.testing.assert_array_equal(np_of(got), want.astype(dtype))
    np.testing.assert_array_equal(np_of(gidx), widx)
    np.testing.assert_array_equal(np_of(em.adaptive_max_pool3d(t[0], out)), want[0])


def test_adaptive_pool3d_none_keeps_size():
    x = em.randn(1, 2, 3, 4, 5)
    assert tuple(em.adaptive_avg_pool3d(x, (None, 2, None)).shape) == (1, 2, 3, 2, 5)
    assert tuple(em.adaptive_max_pool3d(x, 2).shape) == (1, 2, 2, 2, 2)


def test_pool3d_gradcheck(device):
    rng = np.random.default_rng(3)
    # distinct values: max is differentiable away from ties
    x = em.from_numpy(rng.permutation(2 * 5 * 4 * 5).reshape(1, 2, 5, 4, 5) / 7.0)
    x = x.to(device).requires_grad_()
    assert gradcheck(lambda a: em.max_pool3d(a, (2, 3, 2), (2, 1, 2), (1, 1, 0),
                                             (1, 1, 2), True), (x,))
    assert gradcheck(lambda a: em.avg_pool3d(a, (3, 2, 2), (2, 1, 2), (1, 1, 0), True,
                                             False), (x,))
    assert gradcheck(lambda a: em.avg_pool3d(a, 2, 1, 1, divisor_override=5), (x,))
    assert gradcheck(lambda a: em.adaptive_avg_pool3d(a, (3, 3, 2)), (x,))
    assert gradcheck(lambda a: em.adaptive_max_pool3d(a, (2, 3, 2)), (x,))


def test_max_pool3d_integer_input_and_nan():
    x = em.arange(2 * 3 * 4 * 5).reshape(1, 2, 3, 4, 5)
    y = em.max_pool3d(x, 2)
    assert y.dtype == em.int64
    np.testing.assert_array_equal(y.numpy(), ref_max_pool3d(x.numpy(), (2,) * 3, (2,) * 3,
                                                            (0,) * 3, (1,) * 3, False)[0])
    f = em.zeros(1, 1, 2, 2, 2)
    f[0, 0, 1, 0, 1] = float("nan")
    assert math.isnan(em.max_pool3d(f, 2).item())


def test_pool3d_bad_input():
    x = em.randn(1, 2, 3, 4, 5)
    with pytest.raises(ValueError, match=r"max_pool3d: expected a 4-d \(unbatched\) or 5-d"):
        em.max_pool3d(em.randn(2, 3, 4), 2)
    with pytest.raises(ValueError, match="avg_pool3d: pad should be at most half of kernel"):
        em.avg_pool3d(x, 2, padding=(2, 0, 0))
    with pytest.raises(TypeError, match="max_pool3d: kernel_size must be an int or a tuple "
                                        "of 3 ints"):
        em.max_pool3d(x, (2, 2))
    with pytest.raises(ValueError, match="adaptive_avg_pool3d: output_size must be positive"):
        em.adaptive_avg_pool3d(x, (0, 1, 1))
    with pytest.raises(TypeError, match="avg_pool3d: expected a floating point input"):
        em.avg_pool3d(em.ones((1, 1, 2, 2, 2), dtype=em.int64), 2)
    with pytest.raises(ValueError, match="max_pool3d: kernel larger than padded input"):
        em.max_pool3d(x, (4, 1, 1))
