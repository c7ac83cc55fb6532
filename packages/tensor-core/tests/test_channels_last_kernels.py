"""The channels_last kernels: conv2d (forward, input and weight gradients), conv_transpose2d,
the 2-d poolings (max, average, adaptive, forward and backward) and batch_norm on
channels_last inputs give the contiguous results, in channels_last, over Hypothesis-drawn
shapes, strides, paddings, dilations and groups, on every device; on the CPU the
kernels themselves take and return NHWC storage (ember._C.conv / ember._C.pool).
conv3d and the 3-d poolings accept channels_last_3d inputs and keep that layout."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em


def _cl_strides(shape):
    n, c, h, w = shape
    return (c * h * w, 1, w * c, c)


def _pair(device, a, dtype=np.float32):
    x = em.tensor(a.astype(dtype), device=device, requires_grad=True)
    xc = em.tensor(a.astype(dtype), device=device).contiguous(
        memory_format=em.channels_last).requires_grad_()
    return x, xc


def _close(a, b, tol):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol,
                               atol=tol)


def _is_cl(t):
    """t is stored NHWC (size-1 dims free), as PyTorch's channels_last results."""
    return t.is_contiguous(memory_format=em.channels_last)


def _keeps_cl(xc, yc):
    """A channels_last input (not also row-major: a size-1 dim can make it both, and
    then nothing tells the layouts apart) gives a channels_last result."""
    return xc.is_contiguous() or _is_cl(yc)


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg = draw(st.integers(1, 3))
    ocg = draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 8))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 8))
    n = draw(st.integers(1, 3))
    bias = draw(st.booleans())
    return dict(n=n, c=groups * cg, oc=groups * ocg, h=h, w=w, k=(kh, kw), stride=(sh, sw),
                padding=(ph, pw), dilation=(dh, dw), groups=groups, bias=bias,
                seed=draw(st.integers(0, 2**16)))


@settings(max_examples=40, deadline=None)
@given(case=conv_cases(), weight_cl=st.booleans())
def test_conv2d_forward_backward(device, case, weight_cl):
    rng = np.random.default_rng(case["seed"])
    x, xc = _pair(device, rng.standard_normal((case["n"], case["c"], case["h"], case["w"])))
    wa = rng.standard_normal((case["oc"], case["c"] // case["groups"]) + case["k"])
    w = em.tensor(wa.astype(np.float32), device=device, requires_grad=True)
    wc = em.tensor(wa.astype(np.float32), device=device)
    if weight_cl:
        wc = wc.contiguous(memory_format=em.channels_last)
    wc.requires_grad_()
    b = bc = None
    if case["bias"]:
        ba = rng.standard_normal(case["oc"]).astype(np.float32)
        b = em.tensor(ba, device=device, requires_grad=True)
        bc = em.tensor(ba, device=device, requires_grad=True)
    kw = dict(stride=case["stride"], padding=case["padding"], dilation=case["dilation"],
              groups=case["groups"])
    y, yc = em.conv2d(x, w, b, **kw), em.conv2d(xc, wc, bc, **kw)
    assert _keeps_cl(xc, yc)
    _close(yc, y, 1e-4)
    g = em.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32), device=device)
    (y * g).sum().backward()
    (yc * g).sum().backward()
    _close(xc.grad, x.grad, 1e-4)
    _close(wc.grad, w.grad, 1e-4)
    # the weight's own layout (strides of size-1 dims aside)
    assert (wc.grad.is_contiguous(), _is_cl(wc.grad)) == (wc.is_contiguous(), _is_cl(wc))
    if b is not None:
        _close(bc.grad, b.grad, 1e-4)


@settings(max_examples=20, deadline=None)
@given(case=conv_cases())
def test_conv_transpose2d(device, case):
    rng = np.random.default_rng(case["seed"])
    x, xc = _pair(device, rng.standard_normal((case["n"], case["c"], case["h"], case["w"])))
    wa = rng.standard_normal((case["c"], case["oc"] // case["groups"]) + case["k"])
    w = em.tensor(wa.astype(np.float32), device=device, requires_grad=True)
    wc = em.tensor(wa.astype(np.float32), device=device, requires_grad=True)
    kw = dict(stride=case["stride"], padding=(0, 0), dilation=case["dilation"],
              groups=case["groups"])
    y, yc = em.conv_transpose2d(x, w, None, **kw), em.conv_transpose2d(xc, wc, None, **kw)
    assert _keeps_cl(xc, yc)
    _close(yc, y, 1e-4)
    g = em.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32), device=device)
    (y * g).sum().backward()
    (yc * g).sum().backward()
    _close(xc.grad, x.grad, 1e-4)
    _close(wc.grad, w.grad, 1e-4)


@st.composite
def pool_cases(draw):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ph, pw = draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 9))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 9))
    return dict(shape=(draw(st.integers(1, 2)), draw(st.integers(1, 5)), h, w), k=(kh, kw),
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))), padding=(ph, pw),
                dilation=(dh, dw), ceil_mode=draw(st.booleans()),
                count_include_pad=draw(st.booleans()),
                divisor=draw(st.sampled_from([None, None, 3])),
                out=(draw(st.integers(1, 4)), draw(st.integers(1, 4))),
                ties=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


POOLS = {
    "max_pool2d": lambda x, c: em.max_pool2d(x, c["k"], c["stride"], c["padding"],
                                             c["dilation"], c["ceil_mode"]),
    "max_pool2d_indices": lambda x, c: em.max_pool2d(x, c["k"], c["stride"], c["padding"],
                                                     c["dilation"], c["ceil_mode"],
                                                     return_indices=True)[1],
    "avg_pool2d": lambda x, c: em.avg_pool2d(x, c["k"], c["stride"], c["padding"],
                                             c["ceil_mode"], c["count_include_pad"],
                                             c["divisor"]),
    "adaptive_avg_pool2d": lambda x, c: em.adaptive_avg_pool2d(x, c["out"]),
    "adaptive_max_pool2d": lambda x, c: em.adaptive_max_pool2d(x, c["out"]),
    "adaptive_max_pool2d_indices": lambda x, c: em.adaptive_max_pool2d(
        x, c["out"], return_indices=True)[1],
}


@pytest.mark.parametrize("name", list(POOLS))
@settings(max_examples=25, deadline=None)
@given(case=pool_cases())
def test_pooling(device, name, case):
    rng = np.random.default_rng(case["seed"])
    a = rng.standard_normal(case["shape"])
    if case["ties"]:            # repeated values: the first maximum's index must win
        a = np.round(a)
    x, xc = _pair(device, a)
    y, yc = POOLS[name](x, case), POOLS[name](xc, case)
    assert _keeps_cl(xc, yc)
    if name.endswith("indices"):
        np.testing.assert_array_equal(yc.cpu().numpy(), y.cpu().numpy())
        return
    _close(yc, y, 1e-5)
    g = em.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32), device=device)
    (y * g).sum().backward()
    (yc * g).sum().backward()
    _close(xc.grad, x.grad, 1e-5)


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                                  "adaptive_max_pool2d"])
@settings(max_examples=8, deadline=None)
@given(case=pool_cases())
def test_pooling_in_bfloat16(name, case):
    """The CPU's NHWC kernels take bfloat16 as it is (float32 sums, one rounding):
    forward, indices and gradient bit-identical to float32's NHWC kernels on the same
    values, rounded once; the result stays bfloat16 and channels_last."""
    rng = np.random.default_rng(case["seed"])
    a = rng.standard_normal(case["shape"])
    if case["ties"]:
        a = np.round(a)
    xb = em.tensor(a.astype(np.float32)).to(em.bfloat16)
    gy = None
    out = []
    for x in (xb, xb.float()):
        x = x.contiguous(memory_format=em.channels_last).requires_grad_()
        y = POOLS[name](x, case)
        if gy is None:
            gy = em.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32)).to(
                em.bfloat16).contiguous(memory_format=em.channels_last)
        y.backward(gy.to(x.dtype))
        idx = POOLS[name + "_indices"](x.detach(), case) if "max" in name else None
        out.append((y.detach(), x.grad, idx))
    (y16, g16, i16), (y32, g32, i32) = out
    for got, want in ((y16, y32), (g16, g32)):
        assert got.dtype is em.bfloat16 and got.stride() == want.stride()
        np.testing.assert_array_equal(got.view(em.int16).numpy(),
                                      want.to(em.bfloat16).view(em.int16).numpy())
    if i16 is not None:
        np.testing.assert_array_equal(i16.numpy(), i32.numpy())


def test_max_pool_nan_and_infinities(device):
    a = np.full((1, 3, 4, 4), -np.inf)
    a[0, 1, 1, 2] = np.nan
    a[0, 1, 3, 3] = np.nan
    a[0, 2] = np.arange(16).reshape(4, 4)
    x, xc = _pair(device, a)
    y, i = em.max_pool2d(x, 2, return_indices=True)
    yc, ic = em.max_pool2d(xc, 2, return_indices=True)
    np.testing.assert_array_equal(yc.detach().cpu().numpy(), y.detach().cpu().numpy())
    np.testing.assert_array_equal(ic.cpu().numpy(), i.cpu().numpy())


@settings(max_examples=15, deadline=None)
@given(shape=st.tuples(st.integers(2, 3), st.integers(1, 6), st.integers(1, 5),
                       st.integers(1, 5)), training=st.booleans(), seed=st.integers(0, 999))
def test_batch_norm(device, shape, training, seed):
    rng = np.random.default_rng(seed)
    x, xc = _pair(device, rng.standard_normal(shape))
    c = shape[1]
    prm = [em.tensor(v.astype(np.float32), device=device) for v in
           (rng.standard_normal(c), rng.random(c) + 0.5)]
    g = em.tensor((rng.random(c) + 0.5).astype(np.float32), device=device, requires_grad=True)
    gc = em.tensor(g.detach().cpu().numpy(), device=device, requires_grad=True)
    y = em.batch_norm(x, prm[0].clone(), prm[1].clone(), g, None, training=training)
    yc = em.batch_norm(xc, prm[0].clone(), prm[1].clone(), gc, None, training=training)
    assert _keeps_cl(xc, yc)
    _close(yc, y, 1e-4)
    go = em.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
    (y * go).sum().backward()
    (yc * go).sum().backward()
    _close(xc.grad, x.grad, 1e-4)
    _close(gc.grad, g.grad, 1e-4)


def test_cpu_kernels_take_nhwc():
    """No hidden transposes on the CPU: the kernels return NHWC storage for NHWC input."""
    from ember._C import conv, pool
    x = em.randn(2, 5, 7, 6).contiguous(memory_format=em.channels_last)
    w = em.randn(4, 5, 3, 3).contiguous(memory_format=em.channels_last)
    y = conv.conv2d_forward(x, w, None, (5, 4), (1, 1), (0, 0), (1, 1), 1)
    assert y.stride() == _cl_strides(y.shape)
    _close(y, em.conv2d(x.contiguous(), w.contiguous()), 1e-4)
    gx = conv.conv2d_backward_input(y, w, None, (7, 6), (1, 1), (0, 0), (1, 1), 1)
    assert gx.stride() == _cl_strides(gx.shape)
    gw = conv.conv2d_backward_weight(x, y, (3, 3), (1, 1), (0, 0), (1, 1), 1)
    assert gw.stride() == _cl_strides(gw.shape)
    m, ix = pool.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (3, 3), True)
    assert m.stride() == _cl_strides(m.shape) and ix.stride() == _cl_strides(ix.shape)
    assert pool.max_pool2d_backward(m, ix, tuple(x.shape)).stride() == x.stride()
    a = pool.avg_pool2d(x, (3, 3), (2, 2), (1, 1), (4, 3), True, 0)
    assert a.stride() == _cl_strides(a.shape)
    with pytest.raises(ValueError, match="layout"):
        pool.max_pool2d_backward(m, ix.contiguous(), tuple(x.shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_conv_pool_dtypes(dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 6, 6))
    dt = getattr(em, dtype)
    x = em.tensor(a).to(dt)
    xc = x.contiguous(memory_format=em.channels_last)
    w = em.tensor(rng.standard_normal((6, 4, 3, 3))).to(dt)
    for f in (lambda t: em.conv2d(t, w, padding=1), lambda t: em.max_pool2d(t, 2),
              lambda t: em.avg_pool2d(t, 3, 1, 1)):
        y, yc = f(x), f(xc)
        assert yc.dtype is dt and _is_cl(yc)
        np.testing.assert_array_equal(yc.float().cpu().numpy(), y.float().cpu().numpy()) \
            if dtype == "float64" else _close(yc.float(), y.float(), 2e-2)


def test_channels_last_3d(device):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    x = em.tensor(a, device=device, requires_grad=True)
    xc = em.tensor(a, device=device).contiguous(memory_format=em.channels_last_3d) \
        .requires_grad_()
    assert xc.is_contiguous(memory_format=em.channels_last_3d) and not xc.is_contiguous()
    assert xc.to(memory_format=em.contiguous_format).is_contiguous()
    w = em.tensor(rng.standard_normal((4, 3, 2, 3, 3)).astype(np.float32), device=device)
    for f in (lambda t: em.conv3d(t, w, padding=1, stride=(1, 2, 1)),
              lambda t: em.max_pool3d(t, 2), lambda t: em.avg_pool3d(t, 3, 1, 1),
              lambda t: em.adaptive_avg_pool3d(t, (2, 2, 3))):
        y, yc = f(x), f(xc)
        assert yc.is_contiguous(memory_format=em.channels_last_3d)
        _close(yc, y, 1e-4)
        g = em.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32), device=device)
        x.grad = xc.grad = None
        (y * g).sum().backward()
        (yc * g).sum().backward()
        _close(xc.grad, x.grad, 1e-4)
