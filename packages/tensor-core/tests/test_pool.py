"""Pooling (max, average, adaptive; 1-d and 2-d) and its backward kernels against NumPy
references written here from PyTorch's definitions, over shapes (odd sizes, unbatched,
empty batch), window arguments, dtypes and layouts; backward kernels against finite
differences in float64."""
import inspect

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import ember as em
from ember._C import core as _core
from ember.ops import pool as P
from ember_testing import LAYOUTS, realize

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}


# ----------------------------------------------------------------------- references

def out_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: floor (or ceil) of (n + 2p - d(k-1) - 1) / s,
    plus one; with ceil_mode the last window must start inside the input or the left
    padding."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def taps(shape_hw, k, s, p, d, ceil_mode):
    """Yield, for every window position (kh, kw) in scan order, the input row and
    column each output reads, broadcast to (OH, OW), and whether it is inside."""
    H, W = shape_hw
    OH, OW = (out_size(H, k[0], s[0], p[0], d[0], ceil_mode),
              out_size(W, k[1], s[1], p[1], d[1], ceil_mode))
    oh, ow = np.arange(OH)[:, None], np.arange(OW)[None, :]
    for kh in range(k[0]):
        for kw in range(k[1]):
            ih = np.broadcast_to(oh * s[0] - p[0] + kh * d[0], (OH, OW))
            iw = np.broadcast_to(ow * s[1] - p[1] + kw * d[1], (OH, OW))
            yield ih, iw, (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)


def ref_max_pool(x, k, s, p, d, ceil_mode):
    """(values, indices) over the last two dims. PyTorch's scan: the padding is -inf
    and never wins; a value wins when greater than the running maximum or NaN; the
    index starts at the window's first position inside the input (ember: -1 when the
    window holds none, a case PyTorch leaves undefined)."""
    H, W = x.shape[-2:]
    m = idx = None
    for ih, iw, inside in taps((H, W), k, s, p, d, ceil_mode):
        v = np.where(inside, x[..., np.clip(ih, 0, H - 1), np.clip(iw, 0, W - 1)], -np.inf)
        flat = ih * W + iw
        if m is None:
            m = np.full(v.shape, -np.inf)
            idx = np.full(v.shape, -1, np.int64)
        idx = np.where((idx == -1) & inside, flat, idx)
        take = (v > m) | np.isnan(v)
        m = np.where(take, v, m)
        idx = np.where(take, flat, idx)
    return m, idx


def ref_avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    """Window sums over the last two dims, divided by divisor_override, or the number
    of window positions inside the padded input (count_include_pad; a ceil_mode
    window's overhang beyond the padding does not count) or inside the input."""
    H, W = x.shape[-2:]
    total = inside_n = padded_n = 0
    for ih, iw, inside in taps((H, W), k, s, p, (1, 1), ceil_mode):
        total = total + np.where(inside, x[..., np.clip(ih, 0, H - 1), np.clip(iw, 0, W - 1)], 0)
        inside_n = inside_n + inside
        padded_n = padded_n + ((ih >= -p[0]) & (ih < H + p[0]) & (iw >= -p[1]) & (iw < W + p[1]))
    div = divisor_override or (padded_n if count_include_pad else inside_n)
    return np.where(inside_n > 0, total / np.where(div == 0, 1, div), 0)


def adaptive_windows(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def ref_adaptive(x, out, kind):
    """Adaptive pooling over the last two dims: output i covers [floor(i n / o),
    ceil((i + 1) n / o)). kind "avg" gives the mean, "max" (values, indices) with
    ref_max_pool's scan."""
    H, W = x.shape[-2:]
    lead = x.shape[:-2]
    vals = np.zeros(lead + out)
    idx = np.zeros(lead + out, np.int64)
    for i, (h0, h1) in enumerate(adaptive_windows(H, out[0])):
        for j, (w0, w1) in enumerate(adaptive_windows(W, out[1])):
            if kind == "avg":
                vals[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
                continue
            m = np.full(lead, -np.inf)
            best = np.full(lead, h0 * W + w0, np.int64)
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    v = x[..., ih, iw]
                    take = (v > m) | np.isnan(v)
                    m = np.where(take, v, m)
                    best = np.where(take, ih * W + iw, best)
            vals[..., i, j], idx[..., i, j] = m, best
    return vals if kind == "avg" else (vals, idx)


def as_2d(x, sd):
    """A 1-d pooling's (..., L) array as (..., 1, L) for the references."""
    return x[..., None, :] if sd == 1 else x


def from_2d(y, sd):
    return y[..., 0, :] if sd == 1 else y


def pair(v, sd, fill):
    return (fill,) + v if sd == 1 else v


# ----------------------------------------------------------------------- strategies

SIDES = st.one_of(st.integers(1, 9), st.sampled_from([1, 7, 63]))


@st.composite
def pool_cases(draw, dilation=True):
    """(input values, sd, kernel, stride, padding, dilation, ceil_mode) with an output
    of at least one element, as PyTorch accepts them (padding <= kernel // 2)."""
    sd = draw(st.sampled_from([1, 2]))
    spatial = tuple(draw(SIDES) for _ in range(sd))
    if sum(spatial) > 70:   # one long side at most: keep the examples fast
        spatial = (spatial[0], min(spatial[1], 9)) if sd == 2 else spatial
    lead = draw(st.sampled_from([(2, 3), (1, 1), (3,), (0, 2)]))
    k = tuple(draw(st.integers(1, 4)) for _ in range(sd))
    s = tuple(draw(st.integers(1, 3)) for _ in range(sd))
    p = tuple(draw(st.integers(0, ki // 2)) for ki in k)
    d = tuple(draw(st.integers(1, 3)) for _ in range(sd)) if dilation else (1,) * sd
    ceil_mode = draw(st.booleans())
    assume(all(out_size(n, *a, ceil_mode) >= 1 for n, *a in zip(spatial, k, s, p, d)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(lead + spatial)
    if draw(st.booleans()):   # ties, signed zeros, NaN and -inf
        x = np.round(x)
        x[rng.random(x.shape) < 0.05] = np.nan
        x[rng.random(x.shape) < 0.05] = -np.inf
    return x, sd, k, s, p, d, ceil_mode


def em_input(x, dtype, layout):
    t, expected = realize(x.astype(dtype), layout)
    return t, expected.astype(np.float64)


def args(sd, v):
    """The API's form of an sd-tuple: sometimes a bare int when all entries agree."""
    return v[0] if len(set(v)) == 1 and sd == 1 else v


# ----------------------------------------------------------------------- forward

@given(case=pool_cases(), dtype=st.sampled_from(["float32", "float64"]),
       layout=st.sampled_from(LAYOUTS), stride_none=st.booleans())
def test_max_pool_matches_reference(case, dtype, layout, stride_none):
    x, sd, k, s, p, d, ceil_mode = case
    if stride_none:
        s = k
        assume(all(out_size(n, *a, ceil_mode) >= 1
                   for n, *a in zip(x.shape[-sd:], k, s, p, d)))
    t, x = em_input(x, dtype, layout)
    fn = em.max_pool2d if sd == 2 else em.max_pool1d
    y, ix = fn(t, args(sd, k), None if stride_none else args(sd, s), args(sd, p), args(sd, d),
               ceil_mode, return_indices=True)
    want, want_ix = ref_max_pool(as_2d(x, sd), pair(k, sd, 1), pair(s, sd, 1), pair(p, sd, 0),
                                 pair(d, sd, 1), ceil_mode)
    want, want_ix = from_2d(want, sd), from_2d(want_ix, sd)
    assert y.dtype.name == dtype and ix.dtype is em.int64
    assert tuple(y.shape) == want.shape == tuple(ix.shape)
    np.testing.assert_array_equal(y.numpy(), want.astype(dtype))   # a max is exact
    np.testing.assert_array_equal(ix.numpy(), want_ix)
    np.testing.assert_array_equal(fn(t, args(sd, k), None if stride_none else args(sd, s),
                                     args(sd, p), args(sd, d), ceil_mode).numpy(), y.numpy())


@given(case=pool_cases(dilation=False), dtype=st.sampled_from(["float32", "float64"]),
       layout=st.sampled_from(LAYOUTS), count_include_pad=st.booleans(),
       divisor=st.sampled_from([None, None, 1, 3, -2]))
def test_avg_pool_matches_reference(case, dtype, layout, count_include_pad, divisor):
    x, sd, k, s, p, _, ceil_mode = case
    x = np.nan_to_num(x, nan=0.5, neginf=-3.0)
    t, x = em_input(x, dtype, layout)
    if sd == 2:
        y = em.avg_pool2d(t, k, s, p, ceil_mode, count_include_pad, divisor)
    else:
        divisor = None
        y = em.avg_pool1d(t, args(sd, k), args(sd, s), args(sd, p), ceil_mode, count_include_pad)
    want = from_2d(ref_avg_pool(as_2d(x, sd), pair(k, sd, 1), pair(s, sd, 1), pair(p, sd, 0),
                                ceil_mode, count_include_pad, divisor), sd)
    assert y.dtype.name == dtype and tuple(y.shape) == want.shape
    np.testing.assert_allclose(y.numpy(), want, **TOL[dtype])


OUT_SIDES = st.one_of(st.integers(1, 9), st.none())


@given(data=st.data(), dtype=st.sampled_from(["float32", "float64"]),
       layout=st.sampled_from(LAYOUTS), kind=st.sampled_from(["avg", "max"]),
       sd=st.sampled_from([1, 2]), seed=st.integers(0, 2**32 - 1))
def test_adaptive_pool_matches_reference(data, dtype, layout, kind, sd, seed):
    spatial = tuple(data.draw(st.one_of(st.integers(1, 12), st.just(63))) for _ in range(sd))
    lead = data.draw(st.sampled_from([(2, 3), (3,), (0, 1)]))
    out = tuple(data.draw(OUT_SIDES) for _ in range(sd))
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(lead + spatial) * 2) / 2
    if kind == "max":
        x[rng.random(x.shape) < 0.05] = np.nan
    t, x = em_input(x, dtype, layout)
    size = out[0] if sd == 1 or data.draw(st.booleans()) and out[0] == out[1] else out
    fn = {("avg", 1): em.adaptive_avg_pool1d, ("avg", 2): em.adaptive_avg_pool2d,
          ("max", 1): em.adaptive_max_pool1d, ("max", 2): em.adaptive_max_pool2d}[kind, sd]
    osz = tuple(n if o is None else o for o, n in zip(out, spatial))
    if kind == "avg":
        y = fn(t, size)
        want = from_2d(ref_adaptive(as_2d(x, sd), pair(osz, sd, 1), "avg"), sd)
        assert y.dtype.name == dtype and tuple(y.shape) == want.shape
        np.testing.assert_allclose(y.numpy(), want, **TOL[dtype])
    else:
        y, ix = fn(t, size, return_indices=True)
        want, want_ix = ref_adaptive(as_2d(x, sd), pair(osz, sd, 1), "max")
        np.testing.assert_array_equal(y.numpy(), from_2d(want, sd).astype(dtype))
        np.testing.assert_array_equal(ix.numpy(), from_2d(want_ix, sd))


def test_pytorch_examples():
    """Values PyTorch 2 prints for these calls, written down."""
    x = em.arange(16, dtype=em.float32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(em.max_pool2d(x, 2).numpy()[0, 0], [[5, 7], [13, 15]])
    y, ix = em.max_pool2d(x, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(y.numpy()[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(ix.numpy()[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_allclose(em.avg_pool2d(x, 3, 2, 1).numpy()[0, 0],
                               [[10 / 9, 24 / 9], [51 / 9, 90 / 9]], rtol=1e-6)
    np.testing.assert_allclose(em.avg_pool2d(x, 3, 2, 1, count_include_pad=False).numpy()[0, 0],
                               [[2.5, 4.0], [8.5, 10.0]], rtol=1e-6)
    assert em.avg_pool2d(x, 3, 2, 1, ceil_mode=True).shape == (1, 1, 3, 3)
    assert em.max_pool2d(em.zeros(1, 1, 5, 5), 2, ceil_mode=True).shape == (1, 1, 3, 3)
    assert em.max_pool1d(em.zeros(1, 4), 2, 2, 1, ceil_mode=True).shape == (1, 3)
    assert em.adaptive_avg_pool2d(em.zeros(2, 3, 7, 5), (None, 2)).shape == (2, 3, 7, 2)


def test_nan_and_infinities():
    nan, inf = float("nan"), float("inf")
    x = em.tensor([[[1.0, nan, 3.0, 2.0, -inf, -inf]]])
    y, ix = em.max_pool1d(x, 2, return_indices=True)
    assert np.isnan(y.numpy()[0, 0, 0]) and y.numpy()[0, 0, 1] == 3 and y.numpy()[0, 0, 2] == -inf
    np.testing.assert_array_equal(ix.numpy()[0, 0], [1, 2, 4])   # all -inf: the first
    assert np.isnan(em.avg_pool1d(x, 2).numpy()[0, 0, 0])
    assert np.isnan(em.adaptive_max_pool1d(x, 1).numpy()).all()


def test_window_wholly_in_the_padding_gives_minus_inf_and_index_minus_one():
    x = em.tensor([[[4.0, 5.0]]])
    y, ix = em.max_pool1d(x, 2, stride=1, padding=1, dilation=3, return_indices=True)
    assert y.numpy().tolist() == [[[-float("inf")]]] and ix.numpy().tolist() == [[[-1]]]
    g = P.max_pool1d_backward(em.ones(1, 1, 1), x, ix)
    assert g.numpy().tolist() == [[[0.0, 0.0]]]


def test_float16_and_integer_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float16)
    y = em.max_pool2d(em.from_numpy(x), 3, 2, 1)
    want = ref_max_pool(x.astype(np.float64), (3, 3), (2, 2), (1, 1), (1, 1), False)[0]
    assert y.dtype is em.float16
    np.testing.assert_array_equal(y.numpy(), want.astype(np.float16))
    a = em.avg_pool2d(em.from_numpy(x), 2)
    assert a.dtype is em.float16
    np.testing.assert_allclose(a.numpy().astype(np.float64),
                               ref_avg_pool(x.astype(np.float64), (2, 2), (2, 2), (0, 0), False,
                                            True, None), rtol=2e-3, atol=2e-3)
    for dt in (np.int8, np.int32, np.int64):
        xi = rng.integers(-100, 100, (2, 5, 5)).astype(dt)
        yi, ix = em.max_pool2d(em.from_numpy(xi), 2, 1, 1, return_indices=True)
        want, want_ix = ref_max_pool(xi.astype(np.float64), (2, 2), (1, 1), (1, 1), (1, 1), False)
        assert yi.dtype is em.from_numpy(xi).dtype
        np.testing.assert_array_equal(yi.numpy(), want.astype(dt))
        np.testing.assert_array_equal(ix.numpy(), want_ix)
    big = em.from_numpy(np.array([[[2**60, 1]]], np.int64))
    with pytest.raises(ValueError, match=r"max_pool1d: int64 input with values beyond"):
        em.max_pool1d(big, 2)


def test_threads_give_the_same_result():
    x = em.from_numpy(np.random.default_rng(1).standard_normal((4, 64, 33, 32)).astype(np.float32))
    n = em.get_num_threads()
    try:
        em.set_num_threads(1)
        one = [em.max_pool2d(x, 3, 2, 1, return_indices=True), em.avg_pool2d(x, 2),
               em.adaptive_avg_pool2d(x, 1)]
        em.set_num_threads(3)
        three = [em.max_pool2d(x, 3, 2, 1, return_indices=True), em.avg_pool2d(x, 2),
                 em.adaptive_avg_pool2d(x, 1)]
    finally:
        em.set_num_threads(n)
    for a, b in zip([one[0][0], one[0][1]] + one[1:], [three[0][0], three[0][1]] + three[1:]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ----------------------------------------------------------------------- backward

def numeric_grad(f, x, g, eps=1e-6):
    """d(sum(f(x) * g)) / dx by central differences."""
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        num[i] = ((f(xp) - f(xm)) * g).sum() / (2 * eps)
    return num


BACKWARD_CASES = [  # (sd, input shape, kernel, stride, padding, dilation, ceil_mode)
    (2, (2, 2, 5, 6), (3, 3), (2, 2), (1, 1), (1, 1), True),
    (2, (3, 4, 7), (2, 3), (1, 2), (1, 0), (2, 1), False),
    (2, (1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False),
    (1, (2, 3, 9), (3,), (2,), (1,), (2,), True),
    (1, (3, 5), (2,), (1,), (1,), (1,), False),
]


@pytest.mark.parametrize("sd, shape, k, s, p, d, ceil_mode", BACKWARD_CASES)
def test_max_pool_backward_matches_finite_differences(sd, shape, k, s, p, d, ceil_mode):
    rng = np.random.default_rng(0)
    x = rng.permutation(np.prod(shape)).reshape(shape) / 7.0   # distinct: no ties
    fn, bw = (em.max_pool2d, P.max_pool2d_backward) if sd == 2 else \
        (em.max_pool1d, P.max_pool1d_backward)
    y, ix = fn(em.from_numpy(x), k, s, p, d, ceil_mode, return_indices=True)
    g = rng.standard_normal(tuple(y.shape))
    dx = bw(em.from_numpy(g), em.from_numpy(x), ix)
    num = numeric_grad(lambda v: fn(em.from_numpy(v), k, s, p, d, ceil_mode).numpy(), x, g)
    assert dx.dtype is em.float64 and tuple(dx.shape) == shape
    np.testing.assert_allclose(dx.numpy(), num, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(bw(em.from_numpy(g), shape, ix).numpy(), dx.numpy())


@pytest.mark.parametrize("sd, shape, k, s, p, ceil_mode, count_include_pad, divisor", [
    (sd, shape, k, s, p, ceil_mode, cip, div)
    for sd, shape, k, s, p, _, ceil_mode in BACKWARD_CASES
    for cip, div in [(True, None), (False, None), (True, 5)] if sd == 2 or div is None])
def test_avg_pool_backward_matches_finite_differences(sd, shape, k, s, p, ceil_mode,
                                                      count_include_pad, divisor):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    if sd == 2:
        def f(v):
            return em.avg_pool2d(em.from_numpy(v), k, s, p, ceil_mode, count_include_pad,
                                 divisor).numpy()
        bw = lambda g_, inp: P.avg_pool2d_backward(g_, inp, k, s, p, ceil_mode,  # noqa: E731
                                                    count_include_pad, divisor)
    else:
        def f(v):
            return em.avg_pool1d(em.from_numpy(v), k, s, p, ceil_mode, count_include_pad).numpy()
        bw = lambda g_, inp: P.avg_pool1d_backward(g_, inp, k, s, p, ceil_mode,  # noqa: E731
                                                    count_include_pad)
    g = rng.standard_normal(f(x).shape)
    dx = bw(em.from_numpy(g), em.from_numpy(x))
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sd, shape, out", [(2, (2, 3, 7, 5), (3, 2)), (2, (4, 6, 6), (4, 9)),
                                            (1, (2, 2, 11), (4,)), (1, (3, 5), (5,))])
def test_adaptive_backward_matches_finite_differences(sd, shape, out):
    rng = np.random.default_rng(2)
    x = rng.permutation(np.prod(shape)).reshape(shape) / 5.0
    avg, mx, avg_bw, max_bw = (
        (em.adaptive_avg_pool2d, em.adaptive_max_pool2d, P.adaptive_avg_pool2d_backward,
         P.max_pool2d_backward) if sd == 2 else
        (em.adaptive_avg_pool1d, em.adaptive_max_pool1d, P.adaptive_avg_pool1d_backward,
         P.max_pool1d_backward))
    g = rng.standard_normal(tuple(avg(em.from_numpy(x), out).shape))
    num = numeric_grad(lambda v: avg(em.from_numpy(v), out).numpy(), x, g)
    np.testing.assert_allclose(avg_bw(em.from_numpy(g), em.from_numpy(x)).numpy(), num,
                               rtol=1e-6, atol=1e-8)
    _, ix = mx(em.from_numpy(x), out, return_indices=True)
    num = numeric_grad(lambda v: mx(em.from_numpy(v), out).numpy(), x, g)
    np.testing.assert_allclose(max_bw(em.from_numpy(g), em.from_numpy(x), ix).numpy(), num,
                               rtol=1e-6, atol=1e-8)


@given(case=pool_cases(), dtype=st.sampled_from(["float32", "float64"]))
def test_max_pool_backward_scatters_to_the_indices(case, dtype):
    """Overlapping windows and ties: each gradient goes to its window's index once."""
    x, sd, k, s, p, d, ceil_mode = case
    fn, bw = (em.max_pool2d, P.max_pool2d_backward) if sd == 2 else \
        (em.max_pool1d, P.max_pool1d_backward)
    t = em.from_numpy(x.astype(dtype))
    _, ix = fn(t, k, s, p, d, ceil_mode, return_indices=True)
    g = np.random.default_rng(3).standard_normal(tuple(ix.shape)).astype(dtype)
    dx = bw(em.from_numpy(g).T.contiguous().T, t, ix)   # a non-contiguous grad too
    lead = x.shape[:-sd]
    want = np.zeros((int(np.prod(lead)), int(np.prod(x.shape[-sd:]))))
    n_out = int(np.prod(ix.shape[-sd:]))
    flat_ix, flat_g = ix.numpy().reshape(len(want), n_out), g.reshape(len(want), n_out)
    for r in range(len(want)):
        keep = flat_ix[r] >= 0
        np.add.at(want[r], flat_ix[r][keep], flat_g[r][keep])
    np.testing.assert_allclose(dx.numpy(), want.reshape(x.shape), **TOL[dtype])


def test_forward_records_what_the_backward_needs():
    seen = []

    def recorder(op, inputs, output, attrs):
        seen.append((op, inputs, attrs))

    prev = _core.set_recorder(recorder)
    try:
        x = em.from_numpy(np.random.default_rng(4).standard_normal((2, 3, 6, 5)))
        x.requires_grad_(True)
        x1 = em.from_numpy(np.random.default_rng(5).standard_normal((2, 3, 8)))
        x1.requires_grad_(True)
        calls = [
            ("max_pool2d", lambda: em.max_pool2d(x, 3, 2, 1), P.max_pool2d_backward, x),
            ("max_pool1d", lambda: em.max_pool1d(x1, 2), P.max_pool1d_backward, x1),
            ("avg_pool2d", lambda: em.avg_pool2d(x, 2, 1, 1, True, False, 3),
             P.avg_pool2d_backward, x),
            ("avg_pool1d", lambda: em.avg_pool1d(x1, 3, 2, 1), P.avg_pool1d_backward, x1),
            ("adaptive_avg_pool2d", lambda: em.adaptive_avg_pool2d(x, (2, None)),
             P.adaptive_avg_pool2d_backward, x),
            ("adaptive_avg_pool1d", lambda: em.adaptive_avg_pool1d(x1, 3),
             P.adaptive_avg_pool1d_backward, x1),
            ("adaptive_max_pool2d", lambda: em.adaptive_max_pool2d(x, 2),
             P.max_pool2d_backward, x),
            ("adaptive_max_pool1d", lambda: em.adaptive_max_pool1d(x1, 5),
             P.max_pool1d_backward, x1),
        ]
        for name, forward, backward, inp in calls:
            y = forward()
            op, inputs, attrs = seen[-1]
            assert op == name and len(inputs) == 1 and inputs[0] is inp
            g = em.ones(*y.shape, dtype=em.float64)
            # the derivative table's call, with the attrs the backward takes (max pooling
            # also records its window geometry, for ember.onnx)
            params = inspect.signature(backward).parameters
            needed = {k: v for k, v in attrs.items() if k in params}
            assert set(attrs) - set(needed) <= {"kernel_size", "stride", "padding", "dilation",
                                                "ceil_mode"}
            dx = backward(g, inp, **needed)
            assert tuple(dx.shape) == tuple(inp.shape) and dx.dtype is inp.dtype
    finally:
        _core.set_recorder(prev)


def test_empty_batch_and_unbatched():
    assert em.max_pool2d(em.zeros(0, 3, 5, 5), 2).shape == (0, 3, 2, 2)
    assert em.avg_pool1d(em.zeros(0, 2, 5), 2).shape == (0, 2, 2)
    y, ix = em.max_pool2d(em.zeros(0, 3, 5, 5), 2, return_indices=True)
    assert ix.shape == (0, 3, 2, 2)
    assert P.max_pool2d_backward(em.zeros(0, 3, 2, 2), (0, 3, 5, 5), ix).shape == (0, 3, 5, 5)
    x = em.from_numpy(np.arange(30.0).reshape(3, 2, 5))
    np.testing.assert_array_equal(em.max_pool2d(x, 2).numpy(),
                                  em.max_pool2d(x.reshape(1, 3, 2, 5), 2).numpy()[0])


# ----------------------------------------------------------------------- bad input

X4 = em.zeros(1, 2, 4, 4)


@pytest.mark.parametrize("call, error, match", [
    (lambda: em.max_pool2d(em.zeros(4, 4), 2), ValueError,
     r"max_pool2d: expected a 3-d \(unbatched\) or 4-d \(batched\) input, got shape \(4, 4\)"),
    (lambda: em.max_pool1d(X4, 2), ValueError,
     r"max_pool1d: expected a 2-d \(unbatched\) or 3-d .* got shape \(1, 2, 4, 4\)"),
    (lambda: em.avg_pool2d(em.zeros(1, 0, 4, 4), 2), ValueError,
     r"avg_pool2d: .*non-empty channel and spatial dims.*\(1, 0, 4, 4\)"),
    (lambda: em.max_pool2d(X4, 0), ValueError, r"max_pool2d: kernel_size must be positive"),
    (lambda: em.max_pool2d(X4, 2, stride=(1, 0)), ValueError,
     r"max_pool2d: stride must be positive, got stride=\(1, 0\)"),
    (lambda: em.max_pool2d(X4, 2, dilation=0), ValueError, r"dilation must be positive"),
    (lambda: em.avg_pool2d(X4, 3, padding=-1), ValueError,
     r"avg_pool2d: padding must be non-negative, got padding=\(-1, -1\)"),
    (lambda: em.max_pool2d(X4, 3, padding=2), ValueError,
     r"max_pool2d: pad should be at most half of kernel size, got padding=\(2, 2\) for "
     r"kernel_size=\(3, 3\)"),
    (lambda: em.max_pool2d(X4, (5, 2)), ValueError,
     r"max_pool2d: kernel larger than padded input: input \(1, 2, 4, 4\) with "
     r"kernel_size=\(5, 2\).* gives output size \(0, 2\)"),
    (lambda: em.max_pool1d(em.zeros(1, 3), 2, dilation=3), ValueError,
     r"max_pool1d: kernel larger than padded input"),
    (lambda: em.max_pool2d(X4, 2.5), TypeError,
     r"max_pool2d: kernel_size must be an int or a tuple of 2 ints, got 2.5"),
    (lambda: em.max_pool2d(X4, (2, 2, 2)), TypeError, r"tuple of 2 ints, got \(2, 2, 2\)"),
    (lambda: em.max_pool2d([[1.0]], 2), TypeError, r"max_pool2d: input must be a Tensor, got list"),
    (lambda: em.max_pool2d(em.zeros(1, 2, 2, dtype=em.bool), 2), TypeError,
     r"max_pool2d: expected a float or integer input"),
    (lambda: em.avg_pool2d(em.zeros(1, 2, 4, dtype=em.int32), 2), TypeError,
     r"avg_pool2d: expected a floating point input, got .*int32"),
    (lambda: em.avg_pool2d(X4, 2, divisor_override=0), ValueError,
     r"avg_pool2d: divisor_override must be nonzero"),
    (lambda: em.adaptive_avg_pool2d(X4, (0, 2)), ValueError,
     r"adaptive_avg_pool2d: output_size must be positive, got \(0, 2\) for input \(1, 2, 4, 4\)"),
    (lambda: em.adaptive_max_pool1d(em.zeros(2, 3), -1), ValueError,
     r"adaptive_max_pool1d: output_size must be positive"),
    (lambda: em.adaptive_avg_pool1d(em.zeros(2, 3, dtype=em.int64), 2), TypeError,
     r"adaptive_avg_pool1d: expected a floating point input"),
    (lambda: em.adaptive_avg_pool2d(X4, (1, 2, 3)), TypeError,
     r"adaptive_avg_pool2d: output_size must be an int or a tuple of 2 ints"),
    (lambda: P.avg_pool2d_backward(em.zeros(1, 2, 3, 3), X4, 2), ValueError,
     r"avg_pool2d_backward: grad_output has shape \(1, 2, 3, 3\), the forward's output for "
     r"input \(1, 2, 4, 4\) has shape \(1, 2, 2, 2\)"),
    (lambda: P.max_pool2d_backward(em.zeros(1, 2, 2, 2), X4, em.zeros(1, 2, 2, 2)), TypeError,
     r"max_pool2d_backward: indices must be int64"),
    (lambda: P.max_pool2d_backward(em.zeros(1, 2, 2, 2), X4,
                                    em.full((1, 2, 2, 2), 16, dtype=em.int64)), IndexError,
     r"max_pool2d_backward: an index is outside its input plane"),
    (lambda: P.max_pool2d_backward(em.zeros(1, 2, 2, 2), X4, em.zeros(1, 2, 2, 3,
                                                                        dtype=em.int64)),
     ValueError, r"max_pool2d_backward: grad_output \(1, 2, 2, 2\) and indices \(1, 2, 2, 3\)"),
    (lambda: P.adaptive_avg_pool2d_backward(em.zeros(1, 3, 2, 2), X4), ValueError,
     r"adaptive_avg_pool2d_backward: grad_output \(1, 3, 2, 2\) does not match an input of "
     r"shape \(1, 2, 4, 4\)"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# issue 16 item 5 (the pooling family): strides beyond the input give one output per
# dim; values beyond int64 raise naming the op

@pytest.mark.parametrize("s", [2**31, 2**61, 2**62, 2**63 - 1])
def test_issue16_item5_pool_huge_stride(device, s):
    x = em.arange(16.0).reshape(1, 1, 4, 4).to(device)
    assert em.max_pool2d(x, 2, stride=s).cpu().numpy().tolist() == [[[[5.0]]]]
    assert em.avg_pool2d(x, 2, stride=s).cpu().numpy().tolist() == [[[[2.5]]]]
    assert em.max_pool1d(x[0, :, 0], 2, stride=s).cpu().numpy().tolist() == [[1.0]]
    assert em.avg_pool1d(x[0, :, 0], 3, stride=s).cpu().numpy().tolist() == [[1.0]]


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("arg", ["stride", "padding", "kernel_size"])
def test_issue16_item5_pool_beyond_int64(name, arg):
    kwargs = {"kernel_size": 2, arg: 2**63}
    with pytest.raises(OverflowError, match=f"{name}: {arg}"):
        getattr(em, name)(em.ones(1, 1, 4, 4), **kwargs)


# issue 16 item 5 (the pooling family): huge kernels and paddings (a window covering
# the whole input, or a stride past it leaving gaps between windows) compute at once,
# forward and backward, since the kernels visit only the taps inside the input

def huge_taps(n, o, k, s, p, d):
    """The input positions window o of one dim reads, from the window's bounds alone
    (a huge kernel's taps are never listed)."""
    start = o * s - p
    first = -(start // d) if start < 0 else 0      # ceil(-start / d)
    end = min(k, -((start - n) // d))              # ceil((n - start) / d), clipped to k
    return [start + t * d for t in range(first, end)]


def ref_huge_pool(x, g, kind, k, s, p, d, ceil_mode, count_include_pad=True, divisor=None):
    """(output, indices or None, input gradient for output gradient g, ones if None)
    over the last two dims, window by window: max (first maximum in scan order) or avg
    (PyTorch's divisor: the window clipped to the padded input, or its taps inside, or
    divisor)."""
    H, W = x.shape[-2:]
    OH, OW = (out_size(n, *a, ceil_mode) for n, *a in zip((H, W), k, s, p, d))
    y = np.zeros(x.shape[:-2] + (OH, OW))
    g = np.ones(y.shape) if g is None else g
    ix = np.full(y.shape, -1, np.int64)
    dx = np.zeros(x.shape)
    for oh in range(OH):
        for ow in range(OW):
            rows = huge_taps(H, oh, k[0], s[0], p[0], d[0])
            cols = huge_taps(W, ow, k[1], s[1], p[1], d[1])
            if not rows or not cols:
                y[..., oh, ow] = -np.inf if kind == "max" else 0
                continue
            block = x[..., rows, :][..., cols].reshape(x.shape[:-2] + (-1,))
            gv = g[..., oh, ow]
            if kind == "max":
                best = np.argmax(block, axis=-1)
                y[..., oh, ow] = np.take_along_axis(block, best[..., None], -1)[..., 0]
                flat = (np.array(rows)[best // len(cols)] * W +
                        np.array(cols)[best % len(cols)])
                ix[..., oh, ow] = flat
                np.add.at(dx.reshape(x.shape[:-2] + (-1,)),
                          tuple(np.indices(flat.shape)) + (flat,), gv)
                continue
            if divisor:
                div = divisor
            elif count_include_pad:
                div = 1
                for o, n, ki, si, pi in zip((oh, ow), (H, W), k, s, p):
                    div *= min(o * si - pi + ki, n + pi) - (o * si - pi)
            else:
                div = len(rows) * len(cols)
            y[..., oh, ow] = block.sum(-1) / float(div)
            dx[..., np.array(rows)[:, None], np.array(cols)[None, :]] += \
                (gv / float(div))[..., None, None]
    return y, (ix if kind == "max" else None), dx


HUGE_POOL_CASES = [   # (sd, kernel, stride, padding, dilation, ceil_mode)
    (2, (2**62,) * 2, None, (2**61,) * 2, (1, 1), False),
    (2, (2**63 - 1,) * 2, None, (2**62 - 1,) * 2, (1, 1), False),
    (2, (2**63 - 1,) * 2, (2**62 + 1,) * 2, (2**62 - 1,) * 2, (1, 1), True),   # 2 x 2, gaps
    (2, (2**62, 3), (1, 2), (2**61, 1), (1, 1), False),   # a huge column of a 3-wide one
    (2, (3, 2**62), (2, 1), (1, 2**61), (1, 1), True),
    (2, (2**62, 2), (3, 2**62), (2**61, 1), (1, 1), True),
    (2, (3, 3), (2**62, 2**62), (1, 1), (2, 2), True),    # dilated, stride past the input
    (1, (2**62,), None, (2**61,), (1,), False),
    (1, (2**63 - 1,), (2**62 + 1,), (2**62 - 1,), (1,), True),
    (1, (2**62 - 7,), (3,), (2**61 - 4,), (1,), False),
]


@pytest.mark.parametrize("sd, k, s, p, d, ceil_mode", HUGE_POOL_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_issue16_item5_pool_huge_kernel_max(device, sd, k, s, p, d, ceil_mode, dtype):
    rng = np.random.default_rng(5)
    shape = (2, 4, 5) if sd == 2 else (2, 5)
    x = rng.permutation(np.prod(shape)).reshape(shape) - 20.0   # one maximum per window
    s_ = s if s is not None else k
    y_ref, ix_ref, _ = ref_huge_pool(as_2d(x, sd), None, "max", pair(k, sd, 1),
                                     pair(s_, sd, 1), pair(p, sd, 0), pair(d, sd, 1),
                                     ceil_mode)
    g = rng.uniform(1, 2, y_ref.shape)
    _, _, dx_ref = ref_huge_pool(as_2d(x, sd), g, "max", pair(k, sd, 1), pair(s_, sd, 1),
                                 pair(p, sd, 0), pair(d, sd, 1), ceil_mode)
    t = em.tensor(x, dtype=getattr(em, dtype), device=device).requires_grad_()
    fn = em.max_pool2d if sd == 2 else em.max_pool1d
    y, ix = fn(t, k, s, p, d, ceil_mode, return_indices=True)
    y.backward(em.tensor(from_2d(g, sd), dtype=t.dtype, device=device))
    np.testing.assert_array_equal(y.detach().cpu().numpy(), from_2d(y_ref, sd))
    np.testing.assert_array_equal(ix.cpu().numpy(), from_2d(ix_ref, sd))
    np.testing.assert_allclose(t.grad.cpu().numpy(), from_2d(dx_ref, sd), **TOL[dtype])


AVG_DIVISORS = [(True, None), (False, None), (True, 2**62), (False, -3)]   # 2-d: overrides


@pytest.mark.parametrize("sd, k, s, p, d, ceil_mode, count_include_pad, divisor", [
    c + a for c in HUGE_POOL_CASES if c[4] == (1,) * c[0]   # avg pools are undilated
    for a in AVG_DIVISORS[:4 if c[0] == 2 else 2]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_issue16_item5_pool_huge_kernel_avg(device, sd, k, s, p, d, ceil_mode,
                                            count_include_pad, divisor, dtype):
    rng = np.random.default_rng(7)
    x = rng.uniform(1, 2, (2, 4, 5) if sd == 2 else (2, 5))
    s_ = s if s is not None else k
    geometry = (pair(k, sd, 1), pair(s_, sd, 1), pair(p, sd, 0), (1, 1), ceil_mode)
    y_ref, _, _ = ref_huge_pool(as_2d(x, sd), None, "avg", *geometry, count_include_pad,
                                divisor)
    g = rng.uniform(1, 2, y_ref.shape)
    _, _, dx_ref = ref_huge_pool(as_2d(x, sd), g, "avg", *geometry, count_include_pad,
                                 divisor)
    t = em.tensor(x, dtype=getattr(em, dtype), device=device).requires_grad_()
    extra = {} if sd == 1 else {"divisor_override": divisor}
    fn = em.avg_pool2d if sd == 2 else em.avg_pool1d
    y = fn(t, k, s, p, ceil_mode, count_include_pad, **extra)
    y.backward(em.tensor(from_2d(g, sd), dtype=t.dtype, device=device))
    # the divisors reach 2**126: compare relatively, down to float32's smallest normals
    np.testing.assert_allclose(y.detach().cpu().numpy(), from_2d(y_ref, sd), rtol=1e-5,
                               atol=0)
    np.testing.assert_allclose(t.grad.cpu().numpy(), from_2d(dx_ref, sd), rtol=1e-5, atol=0)


@pytest.mark.parametrize("name, size", [("adaptive_avg_pool2d", 2**62),
                                        ("adaptive_max_pool2d", (2**31, 2**31)),
                                        ("adaptive_avg_pool1d", 2**62),
                                        ("adaptive_max_pool1d", 2**62)])
def test_issue16_item5_pool_huge_kernel_adaptive_output_fails_at_once(device, name, size):
    x = em.ones(1, 2, 4, 4).to(device)
    with pytest.raises((MemoryError, ValueError), match="bytes|too large"):
        getattr(em, name)(x if name.endswith("2d") else x[0], size)
    with pytest.raises(OverflowError, match=f"{name}: output_size=.* does not fit in int64"):
        getattr(em, name)(x if name.endswith("2d") else x[0], 2**63)


def test_issue16_item5_pool_huge_kernel_divisor_beyond_int64():
    with pytest.raises(OverflowError, match="avg_pool2d: divisor_override=.* int64"):
        em.avg_pool2d(em.ones(1, 1, 4, 4), 2, divisor_override=2**63)
