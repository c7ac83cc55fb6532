"""conv1d / conv2d / conv_transpose1d / conv_transpose2d and their backward functions
against NumPy references written here (a gather over kernel taps for the convolution,
a scatter for the transpose), finite differences (float64), and the adjoint relation
between the two; both forward algorithms (direct and im2col + GEMM) on every shape."""
import contextlib

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import ember as em
from ember._C import conv as _k, core as _core
from ember.ops.conv import (
    conv1d_backward,
    conv2d_backward,
    conv_transpose1d_backward,
    conv_transpose2d_backward,
)

# references ----------------------------------------------------------------------------

def ref_conv2d(x, w, b, stride, pads, dilation, groups):
    """x (N, C, H, W), w (OC, C/g, kh, kw); pads ((top, bottom), (left, right))."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    (sh, sw), (dh, dw) = stride, dilation
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        for a in range(kh):
            for bb in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, a * dh:a * dh + sh * (oh - 1) + 1:sh,
                           bb * dw:bb * dw + sw * (ow - 1) + 1:sw]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, a, bb])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def ref_conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter each input pixel times the kernel into the (uncropped) output."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, cin, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    cig = cin // groups
    full = np.zeros((n, ocg * groups, (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0],
                     (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]))
    for g in range(groups):
        for a in range(kh):
            for bb in range(kw):
                full[:, g * ocg:(g + 1) * ocg, a * dh:a * dh + sh * (h - 1) + 1:sh,
                     bb * dw:bb * dw + sw * (wd - 1) + 1:sw] += np.einsum(
                    "nchw,co->nohw", x[:, g * cig:(g + 1) * cig],
                    w[g * cig:(g + 1) * cig, :, a, bb])
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + output_padding[1] + 1
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    if b is not None:
        out = out + b.astype(np.float64)[None, :, None, None]
    return out


def same_pads(ksize, dilation):
    return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                 for k, d in zip(ksize, dilation))


# helpers -------------------------------------------------------------------------------

@contextlib.contextmanager
def forward_path(name):
    _k._set_path(name)
    try:
        yield
    finally:
        _k._set_path("auto")


def as_tensor(a, layout):
    """`a` as an ember tensor: contiguous, with its last two dims stored transposed, or
    a view of every other element of a larger array."""
    if layout == "transposed" and a.ndim >= 2:
        return em.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in a.shape), a.dtype)
        big[tuple(slice(None, None, 2) for _ in a.shape)] = a
        return em.from_numpy(big)[tuple(slice(None, None, 2) for _ in a.shape)]
    return em.from_numpy(a.copy())


def check(got, want, dtype):
    assert got.dtype.name == dtype
    assert tuple(got.shape) == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    tol = 1e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=tol, atol=tol * scale)


def randn(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


dtypes = st.sampled_from(["float32", "float64"])
layouts = st.sampled_from(["contiguous", "transposed", "strided"])
paths = st.sampled_from(["auto", "gemm", "direct", "blocked"])


@st.composite
def conv2d_configs(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg = draw(st.integers(1, 3))
    ocg = draw(st.sampled_from([1, 2, 5, 6, 7, 13]))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    kind = draw(st.sampled_from(["int", "tuple", "same", "valid"]))
    stride = (1, 1) if kind == "same" else (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    if kind == "same":
        padding, pads = "same", same_pads((kh, kw), dilation)
    elif kind == "valid":
        padding, pads = "valid", ((0, 0), (0, 0))
    elif kind == "int":
        p = draw(st.integers(0, 2))
        padding, pads = p, ((p, p), (p, p))
    else:
        p = (draw(st.integers(0, 2)), draw(st.integers(0, 3)))
        padding, pads = p, ((p[0], p[0]), (p[1], p[1]))
    span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    hmin = max(1, span[0] - sum(pads[0]))
    h = draw(st.integers(hmin, hmin + 6))
    w = draw(st.sampled_from([max(1, span[1] - sum(pads[1])), 7, 16, 17, 33]))
    w = max(w, span[1] - sum(pads[1]), 1)
    n = draw(st.sampled_from([1, 2, 3]))
    return dict(x=(n, cg * groups, h, w), w=(ocg * groups, cg, kh, kw), stride=stride,
                padding=padding, pads=pads, dilation=dilation, groups=groups)


# conv2d / conv1d forward -----------------------------------------------------------------

@given(cfg=conv2d_configs(), dtype=dtypes, layout=layouts, path=paths, bias=st.booleans(),
       batched=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_conv2d_matches_reference(cfg, dtype, layout, path, bias, batched, seed):
    rng = np.random.default_rng(seed)
    x, w = randn(rng, cfg["x"], dtype), randn(rng, cfg["w"], dtype)
    b = randn(rng, cfg["w"][0], dtype) if bias else None
    want = ref_conv2d(x, w, b, cfg["stride"], cfg["pads"], cfg["dilation"], cfg["groups"])
    tx = as_tensor(x if batched else x[0], layout)
    with forward_path(path):
        got = em.conv2d(tx, as_tensor(w, layout), None if b is None else em.from_numpy(b),
                        cfg["stride"], cfg["padding"], cfg["dilation"], cfg["groups"])
    check(got, want if batched else want[0], dtype)


@given(cfg=conv2d_configs(), dtype=dtypes, path=paths, bias=st.booleans(),
       batched=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_conv1d_matches_reference(cfg, dtype, path, bias, batched, seed):
    rng = np.random.default_rng(seed)
    n, c, _, length = cfg["x"]
    oc, cg, _, k = cfg["w"]
    x, w = randn(rng, (n, c, length), dtype), randn(rng, (oc, cg, k), dtype)
    b = randn(rng, oc, dtype) if bias else None
    padding = cfg["padding"] if isinstance(cfg["padding"], str) else \
        (cfg["padding"][1] if isinstance(cfg["padding"], tuple) else cfg["padding"])
    want = ref_conv2d(x[:, :, None], w[:, :, None], b, (1, cfg["stride"][1]),
                      ((0, 0), cfg["pads"][1]), (1, cfg["dilation"][1]), cfg["groups"])[:, :, 0]
    with forward_path(path):
        got = em.conv1d(em.from_numpy(x if batched else x[0]), em.from_numpy(w),
                        None if b is None else em.from_numpy(b), cfg["stride"][1], padding,
                        cfg["dilation"][1], cfg["groups"])
    check(got, want if batched else want[0], dtype)


@pytest.mark.parametrize("path", ["direct", "gemm"])
@pytest.mark.parametrize("shape", [((2, 5, 13, 70), (13, 5, 3, 3), 1, 1),
                                   ((1, 12, 31, 63), (12, 4, 2, 5), 2, 3),
                                   ((3, 8, 9, 65), (16, 8, 1, 1), 1, 1),
                                   ((2, 6, 10, 40), (6, 1, 3, 3), 1, 6)])
def test_wider_rows_many_channels_and_threads(path, shape):
    """Rows spanning several register tiles, tap counts above one pass of the direct
    kernel (12 channels x 10 taps), depthwise and 1x1; one thread and two."""
    xs, ws, stride, groups = shape
    rng = np.random.default_rng(1)
    x, w, b = randn(rng, xs, "float32"), randn(rng, ws, "float32"), randn(rng, ws[0], "float32")
    want = ref_conv2d(x, w, b, (stride, stride), ((1, 1), (2, 2)), (1, 1), groups)
    prev = em.get_num_threads()
    try:
        for threads in (1, 2):
            em.set_num_threads(threads)
            with forward_path(path):
                got = em.conv2d(em.from_numpy(x), em.from_numpy(w), em.from_numpy(b), stride,
                                (1, 2), 1, groups)
            check(got, want, "float32")
    finally:
        em.set_num_threads(prev)


def test_many_channels_take_several_passes():
    """Enough taps (70 channels x 9) that the direct kernel accumulates over passes, with
    the work large enough to be threaded (row bands of the one image), and the backward
    kernels threaded (grad_weight summed over per-thread buffers)."""
    rng = np.random.default_rng(2)
    x, w = randn(rng, (1, 70, 40, 48), "float64"), randn(rng, (20, 70, 3, 3), "float64")
    want = ref_conv2d(x, w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    x2 = np.concatenate([x, x[:, ::-1]])
    g = randn(rng, (2,) + want.shape[1:], "float64")
    want_gw = ref_weight_grad(x2, g, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    want_gx = ref_conv_transpose2d(g, w, None, (1, 1), (1, 1), (0, 0), 1, (1, 1))
    prev = em.get_num_threads()
    try:
        for threads in (1, 2):
            em.set_num_threads(threads)
            for path in ("direct", "gemm"):
                with forward_path(path):
                    check(em.conv2d(em.from_numpy(x), em.from_numpy(w), padding=1), want,
                          "float64")
            gx, gw, _ = conv2d_backward(em.from_numpy(g), em.from_numpy(x2), em.from_numpy(w),
                                        padding=1)
            check(gx, want_gx, "float64")
            check(gw, want_gw, "float64")
    finally:
        em.set_num_threads(prev)


@pytest.mark.parametrize("xs,ws,pad,groups", [
    ((20, 8, 4, 4), (13, 8, 3, 3), 1, 1),      # 16 + 4 images: a block part zeros
    ((9, 16, 8, 8), (24, 8, 3, 3), 1, 2),      # two groups, 64 pixels
    ((17, 16, 5, 3), (14, 16, 3, 2), (3, 1), 1),   # output rows wholly in the padding
])
def test_small_outputs_blocked_by_image(xs, ws, pad, groups):
    """Outputs of at most 64 pixels under a stride-1 kernel run the direct kernel over
    blocks of images (auto picks it for these shapes in float32; forced: "blocked"),
    and so does grad_input as the flipped forward; grad_weight takes a GEMM per tap and
    output row (gw_blocked): against the reference, one thread and two."""
    rng = np.random.default_rng(5)
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    pads = ((ph, ph), (pw, pw))
    for dtype in ("float32", "float64"):
        x, w, b = randn(rng, xs, dtype), randn(rng, ws, dtype), randn(rng, ws[0], dtype)
        want = ref_conv2d(x, w, b, (1, 1), pads, (1, 1), groups)
        g = randn(rng, want.shape, dtype)
        full = ref_conv_transpose2d(g, w, None, (1, 1), (0, 0), (0, 0), groups, (1, 1))
        want_gx = full[:, :, ph:ph + xs[2], pw:pw + xs[3]]
        want_gw = ref_weight_grad(x, g, ws[2:], (1, 1), pads, (1, 1), groups)
        prev = em.get_num_threads()
        try:
            for threads, path in ((1, "auto"), (2, "blocked")):
                em.set_num_threads(threads)
                with forward_path(path):
                    check(em.conv2d(em.from_numpy(x), em.from_numpy(w), em.from_numpy(b),
                                    1, (ph, pw), 1, groups), want, dtype)
                    gx, gw, _ = conv2d_backward(em.from_numpy(g), em.from_numpy(x),
                                                em.from_numpy(w), 1, (ph, pw), 1, groups,
                                                output_mask=(True, True, False))
                check(gx, want_gx, dtype)
                check(gw, want_gw, dtype)
        finally:
            em.set_num_threads(prev)


@pytest.mark.parametrize("xs,ws,stride,pad,groups", [
    ((7, 6, 8, 8), (10, 6, 3, 3), 1, 1, 1),     # 64 pixels: 7 images (1 thread), 1 (2)
    ((70, 2, 4, 4), (3, 2, 3, 3), 1, 1, 1),     # 16 pixels: items of 35 + 35 images
    ((9, 3, 3, 5), (4, 3, 2, 3), 1, 2, 1),      # padding beyond the kernel: zero taps
    ((5, 4, 7, 7), (6, 2, 3, 3), 2, 1, 2),      # 16 pixels, two groups
    ((6, 8, 6, 6), (16, 8, 1, 1), 2, 0, 1),     # a strided 1x1 (ResNet's shortcut)
    ((3, 5, 17, 16), (7, 5, 3, 3), 1, 1, 1),    # 272 pixels: one image per item
])
def test_small_images_batched_into_one_gemm(xs, ws, stride, pad, groups):
    """Small outputs (fewer than 256 pixels an image) put several images' im2col blocks
    side by side in one GEMM, forward and both backward kernels; one thread and two."""
    rng = np.random.default_rng(4)
    for dtype in ("float32", "float64"):
        x, w, b = randn(rng, xs, dtype), randn(rng, ws, dtype), randn(rng, ws[0], dtype)
        pads = ((pad, pad), (pad, pad))
        want = ref_conv2d(x, w, b, (stride, stride), pads, (1, 1), groups)
        g = randn(rng, want.shape, dtype)
        want_gw = ref_weight_grad(x, g, ws[2:], (stride, stride), pads, (1, 1), groups)
        full = ref_conv_transpose2d(g, w, None, (stride, stride), (0, 0), (0, 0), groups,
                                    (1, 1))
        n, c, h, wd = xs
        want_gx = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
        want_gx[:, :, :full.shape[2], :full.shape[3]] = full
        want_gx = want_gx[:, :, pad:pad + h, pad:pad + wd]
        prev = em.get_num_threads()
        try:
            for threads in (1, 2):
                em.set_num_threads(threads)
                with forward_path("gemm"):
                    check(em.conv2d(em.from_numpy(x), em.from_numpy(w), em.from_numpy(b),
                                    stride, pad, 1, groups), want, dtype)
                gx, gw, gb = conv2d_backward(em.from_numpy(g), em.from_numpy(x),
                                             em.from_numpy(w), stride, pad, 1, groups)
                check(gx, want_gx, dtype)
                check(gw, want_gw, dtype)
                check(gb, g.astype(np.float64).sum((0, 2, 3)), dtype)
        finally:
            em.set_num_threads(prev)


def test_float16_computes_in_float32():
    rng = np.random.default_rng(3)
    x, w = randn(rng, (2, 3, 6, 7), "float16"), randn(rng, (4, 3, 3, 3), "float16")
    b = randn(rng, 4, "float16")
    got = em.conv2d(em.from_numpy(x), em.from_numpy(w), em.from_numpy(b), padding=1)
    assert got.dtype is em.float16
    want = ref_conv2d(x, w, b, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-2, atol=2e-2)
    y = em.conv_transpose2d(em.from_numpy(x), em.from_numpy(w.transpose(1, 0, 2, 3).copy()))
    assert y.dtype is em.float16 and tuple(y.shape) == (2, 4, 8, 9)


def test_empty_batch_and_same_padding_sizes():
    y = em.conv2d(em.zeros(0, 3, 5, 5), em.ones(4, 3, 3, 3), padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5)
    x = em.ones(1, 2, 6, 7)
    for k in (1, 2, 3, 4):
        for d in (1, 2):
            y = em.conv2d(x, em.ones(3, 2, k, k), padding="same", dilation=d)
            assert tuple(y.shape) == (1, 3, 6, 7)
    assert tuple(em.conv1d(em.ones(2, 9), em.ones(5, 2, 4), padding="same").shape) == (5, 9)
    assert tuple(em.conv2d(x, em.ones(3, 2, 3, 3), padding="valid").shape) == (1, 3, 4, 5)


# transposed convolutions -----------------------------------------------------------------

@st.composite
def transpose_configs(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cig, ocg = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 6, 7]))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    h, w = draw(st.integers(1, 6)), draw(st.sampled_from([1, 4, 9, 20]))
    out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1 for i, s, p, d, k, o in
           zip((h, w), stride, padding, dilation, (kh, kw), output_padding)]
    if min(out) < 1:
        padding = (0, 0)
    return dict(x=(draw(st.sampled_from([1, 2])), cig * groups, h, w),
                w=(cig * groups, ocg, kh, kw), stride=stride, padding=padding,
                output_padding=output_padding, dilation=dilation, groups=groups)


@given(cfg=transpose_configs(), dtype=dtypes, layout=layouts, bias=st.booleans(),
       batched=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_conv_transpose2d_matches_reference(cfg, dtype, layout, bias, batched, seed):
    rng = np.random.default_rng(seed)
    x, w = randn(rng, cfg["x"], dtype), randn(rng, cfg["w"], dtype)
    b = randn(rng, cfg["w"][1] * cfg["groups"], dtype) if bias else None
    want = ref_conv_transpose2d(x, w, b, cfg["stride"], cfg["padding"], cfg["output_padding"],
                                cfg["groups"], cfg["dilation"])
    got = em.conv_transpose2d(as_tensor(x if batched else x[0], layout), as_tensor(w, layout),
                              None if b is None else em.from_numpy(b), cfg["stride"],
                              cfg["padding"], cfg["output_padding"], cfg["groups"],
                              cfg["dilation"])
    check(got, want if batched else want[0], dtype)


@given(cfg=transpose_configs(), dtype=dtypes, bias=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_conv_transpose1d_matches_reference(cfg, dtype, bias, seed):
    rng = np.random.default_rng(seed)
    n, c, _, length = cfg["x"]
    x, w = randn(rng, (n, c, length), dtype), randn(rng, cfg["w"][:2] + (cfg["w"][3],), dtype)
    b = randn(rng, cfg["w"][1] * cfg["groups"], dtype) if bias else None
    want = ref_conv_transpose2d(x[:, :, None], w[:, :, None], b, (1, cfg["stride"][1]),
                                (0, cfg["padding"][1]), (0, cfg["output_padding"][1]),
                                cfg["groups"], (1, cfg["dilation"][1]))[:, :, 0]
    got = em.conv_transpose1d(em.from_numpy(x), em.from_numpy(w),
                              None if b is None else em.from_numpy(b), cfg["stride"][1],
                              cfg["padding"][1], cfg["output_padding"][1], cfg["groups"],
                              cfg["dilation"][1])
    check(got, want, dtype)


@given(cfg=conv2d_configs(), seed=st.integers(0, 2**31 - 1))
def test_conv2d_and_its_transpose_are_adjoint(cfg, seed):
    """<conv2d(x, w), y> == <x, conv_transpose2d(y, w)> (output_padding restores the
    input size where the stride drops rows)."""
    if any(a != b for a, b in cfg["pads"]):
        return   # asymmetric 'same': conv_transpose2d has symmetric padding only
    rng = np.random.default_rng(seed)
    x, w = randn(rng, cfg["x"], "float64"), randn(rng, cfg["w"], "float64")
    y = em.conv2d(em.from_numpy(x), em.from_numpy(w), None, cfg["stride"], cfg["padding"],
                  cfg["dilation"], cfg["groups"])
    g = randn(rng, tuple(y.shape), "float64")
    pad = tuple(p for p, _ in cfg["pads"])
    k = cfg["w"][2:]
    op = tuple(i + 2 * p - d * (kk - 1) - 1 - (o - 1) * s for i, p, d, kk, o, s in
               zip(cfg["x"][2:], pad, cfg["dilation"], k, y.shape[2:], cfg["stride"]))
    if any(o >= max(s, d) for o, s, d in zip(op, cfg["stride"], cfg["dilation"])):
        return   # PyTorch's rule: the transpose cannot add that many rows
    xt = em.conv_transpose2d(em.from_numpy(g), em.from_numpy(w), None, cfg["stride"], pad, op,
                             cfg["groups"], cfg["dilation"])
    lhs = float((y.numpy() * g).sum())
    rhs = float((x * xt.numpy()).sum())
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs))


# backward ------------------------------------------------------------------------------

def numerical_grads(f, arrays, g, eps=1e-6):
    """d sum(f(*arrays) * g) / d each array, by central differences (float64)."""
    out = []
    for i, a in enumerate(arrays):
        if a is None:
            out.append(None)
            continue
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            args = [x.copy() if x is not None else None for x in arrays]
            args[i][idx] += eps
            fp = (f(*args) * g).sum()
            args[i][idx] -= 2 * eps
            fm = (f(*args) * g).sum()
            num[idx] = (fp - fm) / (2 * eps)
        out.append(num)
    return out


def t(a):
    return None if a is None else em.from_numpy(a)


CONV2D_CASES = [
    dict(x=(2, 4, 5, 6), w=(4, 2, 3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
    dict(x=(1, 3, 6, 5), w=(2, 3, 2, 4), stride=1, padding="same", dilation=1, groups=1),
    dict(x=(2, 2, 4, 4), w=(3, 2, 1, 1), stride=1, padding=0, dilation=1, groups=1),
    dict(x=(5, 7, 6), w=(2, 5, 3, 3), stride=3, padding=2, dilation=2, groups=1),
]


@pytest.mark.parametrize("path", ["direct", "gemm", "blocked"])
@pytest.mark.parametrize("cfg", CONV2D_CASES)
def test_conv2d_backward_matches_finite_differences(cfg, path):
    rng = np.random.default_rng(4)
    x, w, b = randn(rng, cfg["x"], "float64"), randn(rng, cfg["w"], "float64"), \
        randn(rng, cfg["w"][0], "float64")
    args = (cfg["stride"], cfg["padding"], cfg["dilation"], cfg["groups"])
    with forward_path(path):
        def f(x_, w_, b_):
            return em.conv2d(t(x_), t(w_), t(b_), *args).numpy()
        g = randn(rng, f(x, w, b).shape, "float64")
        want = numerical_grads(f, [x, w, b], g)
        got = conv2d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(w), *args)
    for gg, ww in zip(got, want):
        np.testing.assert_allclose(gg.numpy(), ww, rtol=1e-6, atol=1e-8)
    gx, gw, gb = conv2d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(w), *args,
                                 output_mask=(False, True, False))
    assert gx is None and gb is None and gw is not None


TRANSPOSE_CASES = [
    dict(x=(2, 4, 3, 4), w=(4, 3, 3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
         groups=2, dilation=1),
    dict(x=(3, 2, 3), w=(3, 2, 2, 3), stride=1, padding=1, output_padding=(1, 0), groups=1,
         dilation=(2, 1)),
]


@given(n=st.integers(1, 3), cg=st.integers(1, 14), ocg=st.integers(1, 12),
       groups=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 19),
       k=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pad=st.tuples(st.floats(0, 1), st.floats(0, 1)), dtype=dtypes,
       seed=st.integers(0, 2**31 - 1))
def test_stride1_grad_input_as_flipped_forward(n, cg, ocg, groups, h, w, k, d, pad, dtype,
                                               seed):
    """A stride-1 grad_input (padding up to (k - 1) * d) runs as the direct forward
    convolution of grad_output with the flipped, transposed weights; the GEMM + col2im
    route (path "gemm") and the reference agree, with groups, dilation, up to 14 input
    channels a group (several register tiles of the direct kernel) and rows wider than
    a tile."""
    ph, pw = (round(f * (kk - 1) * dd) for f, kk, dd in zip(pad, k, d))
    oh, ow = h + 2 * ph - d[0] * (k[0] - 1), w + 2 * pw - d[1] * (k[1] - 1)
    assume(oh > 0 and ow > 0)
    rng = np.random.default_rng(seed)
    x = randn(rng, (n, cg * groups, h, w), dtype)
    wt = randn(rng, (ocg * groups, cg) + k, dtype)
    g = randn(rng, (n, ocg * groups, oh, ow), dtype)
    full = ref_conv_transpose2d(g, wt, None, (1, 1), (0, 0), (0, 0), groups, d)
    want = full[:, :, ph:ph + h, pw:pw + w]
    for path in ("auto", "direct", "gemm", "blocked"):   # auto: GEMM under 8 channels a group
        with forward_path(path):
            gx, _, _ = conv2d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(wt), 1,
                                       (ph, pw), d, groups, output_mask=(True, False, False))
        check(gx, want, dtype)


@given(n=st.integers(1, 3), cg=st.integers(1, 3), ocg=st.integers(1, 9),
       groups=st.integers(1, 2), h=st.integers(1, 8), w=st.integers(1, 37),
       k=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       s=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pad=st.tuples(st.integers(0, 2), st.integers(0, 2)), dtype=dtypes,
       threads=st.sampled_from([1, 2]), seed=st.integers(0, 2**31 - 1))
def test_grad_weight_with_few_taps_by_shifted_rows(n, cg, ocg, groups, h, w, k, s, d, pad,
                                                   dtype, threads, seed):
    """grad_weight with few taps a channel (up to 16: a first layer's) takes dot products
    of grad_output rows with shifted input rows (gw_direct), no im2col; path "direct"
    forces it on any shape, "gemm" the GEMM. Against the reference with stride,
    dilation, padding, groups, several register tiles of channels and taps, rows
    narrower and wider than a vector with a tail, one thread and two."""
    oh = (h + 2 * pad[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * pad[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    assume(oh > 0 and ow > 0)
    rng = np.random.default_rng(seed)
    x = randn(rng, (n, cg * groups, h, w), dtype)
    wt = randn(rng, (ocg * groups, cg) + k, dtype)
    g = randn(rng, (n, ocg * groups, oh, ow), dtype)
    want = ref_weight_grad(x, g, k, s, tuple((p, p) for p in pad), d, groups)
    prev = em.get_num_threads()
    try:
        em.set_num_threads(threads)
        for path in ("auto", "direct", "gemm"):
            with forward_path(path):
                _, gw, _ = conv2d_backward(em.from_numpy(g), em.from_numpy(x),
                                           em.from_numpy(wt), s, pad, d, groups,
                                           output_mask=(False, True, False))
            check(gw, want, dtype)
    finally:
        em.set_num_threads(prev)


@pytest.mark.parametrize("cfg", TRANSPOSE_CASES)
def test_conv_transpose2d_backward_matches_finite_differences(cfg):
    rng = np.random.default_rng(5)
    x, w = randn(rng, cfg["x"], "float64"), randn(rng, cfg["w"], "float64")
    b = randn(rng, cfg["w"][1] * cfg["groups"], "float64")
    args = (cfg["stride"], cfg["padding"], cfg["output_padding"], cfg["groups"], cfg["dilation"])

    def f(x_, w_, b_):
        return em.conv_transpose2d(t(x_), t(w_), t(b_), *args).numpy()
    g = randn(rng, f(x, w, b).shape, "float64")
    want = numerical_grads(f, [x, w, b], g)
    got = conv_transpose2d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(w), *args)
    for gg, ww in zip(got, want):
        np.testing.assert_allclose(gg.numpy(), ww, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("batched", [True, False])
def test_1d_backward_matches_finite_differences(batched):
    rng = np.random.default_rng(6)
    xs = (2, 4, 9) if batched else (4, 9)
    x, w, b = randn(rng, xs, "float64"), randn(rng, (6, 2, 3), "float64"), randn(rng, 6, "float64")

    def f(x_, w_, b_):
        return em.conv1d(t(x_), t(w_), t(b_), 2, 1, 2, 2).numpy()
    g = randn(rng, f(x, w, b).shape, "float64")
    want = numerical_grads(f, [x, w, b], g)
    got = conv1d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(w), 2, 1, 2, 2)
    for gg, ww in zip(got, want):
        np.testing.assert_allclose(gg.numpy(), ww, rtol=1e-6, atol=1e-8)

    wt = randn(rng, (4, 3, 2), "float64")

    def ft(x_, w_, b_):
        return em.conv_transpose1d(t(x_), t(w_), t(b_), 2, 1, 1, 2, 1).numpy()
    bt = randn(rng, 6, "float64")
    g = randn(rng, ft(x, wt, bt).shape, "float64")
    want = numerical_grads(ft, [x, wt, bt], g)
    got = conv_transpose1d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(wt),
                                    2, 1, 1, 2, 1)
    for gg, ww in zip(got, want):
        np.testing.assert_allclose(gg.numpy(), ww, rtol=1e-6, atol=1e-8)


def ref_weight_grad(x, gy, ksize, stride, pads, dilation, groups):
    """conv2d's weight gradient: the correlation of grad_output with the padded input."""
    (sh, sw), (dh, dw), (kh, kw) = stride, dilation, ksize
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pads[0], pads[1]))
    oc, (oh, ow) = gy.shape[1], gy.shape[2:]
    cg, ocg = x.shape[1] // groups, oc // groups
    gw = np.zeros((oc, cg, kh, kw))
    for gi in range(groups):
        for a in range(kh):
            for bb in range(kw):
                patch = xp[:, gi * cg:(gi + 1) * cg, a * dh:a * dh + sh * (oh - 1) + 1:sh,
                           bb * dw:bb * dw + sw * (ow - 1) + 1:sw]
                gw[gi * ocg:(gi + 1) * ocg, :, a, bb] = np.einsum(
                    "nohw,nchw->oc", gy[:, gi * ocg:(gi + 1) * ocg].astype(np.float64), patch)
    return gw


@given(cfg=conv2d_configs(), dtype=dtypes, layout=layouts, seed=st.integers(0, 2**31 - 1))
def test_conv2d_backward_matches_reference(cfg, dtype, layout, seed):
    """grad_input is the scatter reference of the transpose (conv2d's weight read as the
    transpose's), cropped to the unpadded input; grad_weight the correlation of
    grad_output with the padded input; grad_bias the sum."""
    rng = np.random.default_rng(seed)
    x, w = randn(rng, cfg["x"], dtype), randn(rng, cfg["w"], dtype)
    pads = cfg["pads"]
    y = ref_conv2d(x, w, None, cfg["stride"], pads, cfg["dilation"], cfg["groups"])
    g = randn(rng, y.shape, dtype)
    gx, gw, gb = conv2d_backward(as_tensor(g, layout), as_tensor(x, layout), as_tensor(w, layout),
                                 cfg["stride"], cfg["padding"], cfg["dilation"], cfg["groups"])
    n, c, h, wd = x.shape
    full = ref_conv_transpose2d(g, w, None, cfg["stride"], (0, 0), (0, 0), cfg["groups"],
                                cfg["dilation"])
    want_gx = np.zeros((n, c, h + sum(pads[0]), wd + sum(pads[1])))
    want_gx[:, :, :full.shape[2], :full.shape[3]] = full
    want_gx = want_gx[:, :, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]
    check(gx, want_gx, dtype)
    check(gw, ref_weight_grad(x, g, w.shape[2:], cfg["stride"], pads, cfg["dilation"],
                              cfg["groups"]), dtype)
    check(gb, g.astype(np.float64).sum((0, 2, 3)), dtype)


@given(cfg=transpose_configs(), seed=st.integers(0, 2**31 - 1))
def test_conv_transpose2d_backward_is_conv2d(cfg, seed):
    """The transpose's grad_input is conv2d of grad_output with the same weight (cropped
    where output_padding added rows), its grad_weight conv2d's weight gradient with the
    roles of input and grad_output swapped."""
    rng = np.random.default_rng(seed)
    x, w = randn(rng, cfg["x"], "float64"), randn(rng, cfg["w"], "float64")
    y = em.conv_transpose2d(em.from_numpy(x), em.from_numpy(w), None, cfg["stride"],
                            cfg["padding"], cfg["output_padding"], cfg["groups"], cfg["dilation"])
    g = randn(rng, tuple(y.shape), "float64")
    gx, gw, gb = conv_transpose2d_backward(em.from_numpy(g), em.from_numpy(x), em.from_numpy(w),
                                           cfg["stride"], cfg["padding"], cfg["output_padding"],
                                           cfg["groups"], cfg["dilation"])
    pads = tuple((p, p) for p in cfg["padding"])
    want_gx = ref_conv2d(g, w, None, cfg["stride"], pads, cfg["dilation"], cfg["groups"])
    check(gx, want_gx[:, :, :x.shape[2], :x.shape[3]], "float64")
    check(gw, ref_weight_grad(g, x, w.shape[2:], cfg["stride"], pads, cfg["dilation"],
                              cfg["groups"]), "float64")
    check(gb, g.sum((0, 2, 3)), "float64")


# recording for autograd --------------------------------------------------------------------

@pytest.fixture
def recorded():
    log = []

    def record(op, inputs, out, attrs):
        log.append((op, inputs, out, attrs))
        out._set_autograd(None, True)      # as ember.autograd's recorder does

    prev = _core.set_recorder(record)
    try:
        yield log
    finally:
        _core.set_recorder(prev)


def test_records_carry_what_backward_needs(recorded):
    rng = np.random.default_rng(7)
    x = em.from_numpy(randn(rng, (2, 4, 7, 6), "float64")).requires_grad_()
    w = em.from_numpy(randn(rng, (6, 2, 2, 3), "float64")).requires_grad_()
    b = em.from_numpy(randn(rng, 6, "float64"))
    y = em.conv2d(x, w, b, stride=(1, 1), padding="same", dilation=(1, 2), groups=2)
    op, inputs, out, attrs = recorded[-1]
    assert op == "conv2d" and out is y and inputs == (x, w, b)
    assert attrs == {"stride": (1, 1), "padding": "same", "dilation": (1, 2), "groups": 2}
    g = em.from_numpy(randn(rng, tuple(y.shape), "float64"))
    with em.no_grad():
        gx, gw, gb = conv2d_backward(g, x, w, **attrs)
    assert tuple(gx.shape) == (2, 4, 7, 6) and tuple(gw.shape) == (6, 2, 2, 3)

    recorded.clear()
    yt = em.conv_transpose2d(x, w[:4], None, 2, 1, 1, 1, 1)
    op, inputs, out, attrs = recorded[-1]
    assert op == "conv_transpose2d" and out is yt and inputs[2] is None
    assert attrs == {"stride": (2, 2), "padding": (1, 1), "output_padding": (1, 1),
                     "groups": 1, "dilation": (1, 1)}

    recorded.clear()
    x1 = em.from_numpy(randn(rng, (4, 9), "float64")).requires_grad_()
    y1 = em.conv1d(x1, em.from_numpy(randn(rng, (3, 4, 3), "float64")), padding=1)
    ops = [r[0] for r in recorded]
    assert ops == ["view", "view", "conv2d", "view", "view"] and recorded[-1][2] is y1
    assert recorded[2][3] == {"stride": (1, 1), "padding": (0, 1), "dilation": (1, 1),
                              "groups": 1}


# bad input -------------------------------------------------------------------------------

X, W = em.ones(2, 4, 8, 8), em.ones(6, 4, 3, 3)


@pytest.mark.parametrize("call, err, match", [
    (lambda: em.conv2d(em.ones(4, 8), W), ValueError,
     r"conv2d: expected a 4-d .*got shape \(4, 8\)"),
    (lambda: em.conv2d(X, em.ones(6, 4, 3)), ValueError, r"conv2d: expected a 4-d weight"),
    (lambda: em.conv1d(X, W), ValueError, r"conv1d: expected a 3-d \(batched\)"),
    (lambda: em.conv2d(X, em.ones(6, 3, 3, 3)), ValueError,
     r"conv2d: the weight \(6, 3, 3, 3\) with groups=1 expects 3 input channels, but the "
     r"input \(2, 4, 8, 8\) has 4"),
    (lambda: em.conv2d(X, em.ones(6, 1, 3, 3), groups=3), ValueError,
     r"conv2d: groups=3 does not divide the input's 4 channels \(input \(2, 4, 8, 8\)\)"),
    (lambda: em.conv2d(X, em.ones(5, 2, 3, 3), groups=2), ValueError,
     r"groups=2 does not divide the weight's 5 output channels"),
    (lambda: em.conv2d(X, em.ones(6, 4, 9, 3)), ValueError,
     r"conv2d: the kernel \(9, 3\) .* spans 9 along the height, more than the padded input's 8"),
    (lambda: em.conv2d(X, W, dilation=5), ValueError, r"spans 11"),
    (lambda: em.conv2d(X, W, padding=-1), ValueError, r"conv2d: padding must be non-negative"),
    (lambda: em.conv2d(X, W, stride=0), ValueError, r"conv2d: stride must be positive, got 0"),
    (lambda: em.conv2d(X, W, dilation=(1, -1)), ValueError, r"dilation must be positive"),
    (lambda: em.conv2d(X, W, stride=(1, 2, 3)), TypeError,
     r"stride must be an int or a tuple of 2"),
    (lambda: em.conv2d(X, W, groups=0), ValueError, r"conv2d: groups must be positive"),
    (lambda: em.conv2d(X, W, padding="same", stride=2), ValueError,
     r"conv2d: padding='same' needs stride 1"),
    (lambda: em.conv2d(X, W, padding="full"), ValueError, r"'valid' or 'same', got 'full'"),
    (lambda: em.conv2d(X, W, em.ones(5)), ValueError,
     r"conv2d: expected a bias of shape \(6,\) for the weight \(6, 4, 3, 3\), got \(5,\)"),
    (lambda: em.conv2d(X, W.double()), TypeError,
     r"conv2d: the input is ember.float32 but the weight is ember.float64"),
    (lambda: em.conv2d(X, W, em.ones(6, dtype=em.float64)), TypeError,
     r"the bias is ember.float64"),
    (lambda: em.conv2d(em.ones(2, 4, 8, 8, dtype=em.int64), em.ones(6, 4, 3, 3, dtype=em.int64)),
     TypeError, r"conv2d: expected a floating point input, got ember.int64"),
    (lambda: em.conv2d(X.numpy(), W), TypeError, r"conv2d: input must be a Tensor, got ndarray"),
    (lambda: em.conv2d(X, em.ones(0, 4, 3, 3)), ValueError, r"no zero-size dim"),
    (lambda: em.conv_transpose2d(X, em.ones(3, 2, 3, 3)), ValueError,
     r"conv_transpose2d: the weight \(3, 2, 3, 3\) expects 3 input channels, but the input "
     r"\(2, 4, 8, 8\) has 4"),
    (lambda: em.conv_transpose2d(X, em.ones(4, 2, 3, 3), stride=2, output_padding=2), ValueError,
     r"output_padding \(2, 2\) must be smaller than the stride \(2, 2\) or the dilation"),
    (lambda: em.conv_transpose2d(em.ones(1, 4, 1, 1), em.ones(4, 2, 1, 1), padding=1), ValueError,
     r"conv_transpose2d: the output size \(-1, -1\) would be less than 1"),
    (lambda: em.conv_transpose2d(X, em.ones(4, 2, 3, 3), padding="same"), ValueError,
     r"conv_transpose2d: padding must be an int or a tuple of ints"),
    (lambda: em.conv_transpose2d(X, em.ones(4, 2, 3, 3), groups=3), ValueError,
     r"groups=3 does not divide the input's 4 channels"),
    (lambda: em.conv_transpose1d(em.ones(2, 4, 5), em.ones(4, 2, 3), em.ones(3)), ValueError,
     r"conv_transpose1d: expected a bias of shape \(2,\)"),
    (lambda: conv2d_backward(em.ones(2, 6, 5, 5), X, W), ValueError,
     r"conv2d_backward: grad_output has shape \(2, 6, 5, 5\), but the output has shape "
     r"\(2, 6, 6, 6\)"),
    (lambda: conv2d_backward(em.ones(2, 6, 6, 6, dtype=em.float64), X, W), TypeError,
     r"conv2d_backward: grad_output is ember.float64 but the input is ember.float32"),
])
def test_bad_input_is_a_clear_error(call, err, match):
    with pytest.raises(err, match=match):
        call()


# issue 16 item 5: strides (and paddings, dilations) far beyond the input reached the
# kernels' buffer sizes and index arithmetic: 3.9 GB for stride 2**31, SIGSEGV at 2**61

HUGE_STRIDES = [2**31, 2**61, 2**62, 2**63 - 1]


@pytest.mark.parametrize("s", HUGE_STRIDES)
def test_issue16_item5_huge_stride_gives_one_output(device, s):
    x = em.arange(16.0).reshape(1, 1, 4, 4).to(device)
    w = em.ones(1, 1, 2, 2, device=device)
    y = em.conv2d(x, w, stride=s)
    assert y.shape == (1, 1, 1, 1) and y.item() == 0 + 1 + 4 + 5
    y = em.conv2d(x, w, stride=(1, s))
    np.testing.assert_array_equal(y.cpu().numpy()[0, 0, :, 0], [10, 26, 42])
    y = em.conv1d(x[0, :, 0], w[:, :, 0], stride=s)
    assert y.shape == (1, 1) and y.item() == 1
    # the transpose of a 1-pixel input: the stride is never applied
    t = em.conv_transpose2d(x[:, :, :1, :1] + 2, w, stride=s)
    np.testing.assert_array_equal(t.cpu().numpy(), np.full((1, 1, 2, 2), 2.0))
    # and the gradients through it
    xg = x.detach().requires_grad_()
    wg = w.detach().requires_grad_()
    em.conv2d(xg, wg, stride=s).sum().backward()
    expect = np.zeros((4, 4))
    expect[:2, :2] = 1
    np.testing.assert_array_equal(xg.grad.cpu().numpy()[0, 0], expect)
    np.testing.assert_array_equal(wg.grad.cpu().numpy()[0, 0], [[0, 1], [4, 5]])


def test_issue16_item5_huge_padding_samples_the_input(device):
    # padding 2**40 and stride 2**40: a 3 x 3 output whose centre window is the input's
    # top-left 2 x 2 (PyTorch's answer), computed at once
    x = em.arange(16.0).reshape(1, 1, 4, 4).to(device)
    y = em.conv2d(x, em.ones(1, 1, 2, 2, device=device), stride=2**40,
                                padding=2**40)
    expect = np.zeros((3, 3))
    expect[1, 1] = 10
    np.testing.assert_array_equal(y.cpu().numpy()[0, 0], expect)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(stride=2**63), OverflowError, "conv2d: stride"),
    (dict(stride=(1, 2**64)), OverflowError, "conv2d: stride"),
    (dict(padding=2**62), OverflowError, "overflows int64"),
    (dict(padding=2**63), OverflowError, "conv2d: padding"),
    (dict(dilation=2**62), ValueError, "spans"),
    (dict(dilation=2**63), OverflowError, "conv2d: dilation"),
    (dict(stride=0), ValueError, "stride must be positive"),
    (dict(stride=-2**62), ValueError, "stride must be positive"),
    (dict(dilation=0), ValueError, "dilation must be positive"),
    (dict(padding=-1), ValueError, "padding must be non-negative"),
])
def test_issue16_item5_impossible_arguments_raise(kwargs, error, words):
    with pytest.raises(error, match=words):
        em.conv2d(em.ones(1, 1, 4, 4), em.ones(1, 1, 2, 2), **kwargs)


def test_issue16_item5_transpose_overflow_raises():
    with pytest.raises(OverflowError, match="conv_transpose2d: the output size"):
        em.conv_transpose2d(em.ones(1, 1, 4, 4), em.ones(1, 1, 2, 2), stride=2**62)
    with pytest.raises(OverflowError, match="conv_transpose1d: stride"):
        em.conv_transpose1d(em.ones(1, 1, 4), em.ones(1, 1, 2), stride=2**63)
    with pytest.raises((MemoryError, ValueError), match="element count|elements|bytes"):
        em.conv_transpose2d(em.ones(1, 1, 2, 2), em.ones(1, 1, 2, 2), stride=2**61)
