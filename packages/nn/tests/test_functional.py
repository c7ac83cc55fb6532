"""pad, one_hot, normalize, scaled_dot_product_attention and interpolate against NumPy
references (forward), gradients by gradcheck in float64, and bad input."""
import math

import numpy as np
import pytest

import ember as em
from ember.autograd import gradcheck
from ember.nn import functional as F


def rand(*shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def T(a, grad=False):
    t = em.from_numpy(np.array(a, order="C"))
    return t.requires_grad_() if grad else t


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


# pad ------------------------------------------------------------------------------------

NP_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def np_pad(x, pad, mode, value=0.0):
    """The NumPy reference: positive amounts by np.pad, negative ones crop. PyTorch's
    circular mode crops first and wraps what is left; the others index the uncropped
    input (so pad, then crop)."""
    pairs = [(0, 0)] * (x.ndim - len(pad) // 2) + \
        [(pad[2 * k], pad[2 * k + 1]) for k in reversed(range(len(pad) // 2))]
    crop = tuple(slice(max(-lo, 0), x.shape[d] - max(-hi, 0)) for d, (lo, hi) in
                 enumerate(pairs))
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    kw = {"constant_values": value} if mode == "constant" else {}
    if mode == "circular":
        return np.pad(x[crop], grow, NP_MODES[mode])
    padded = np.pad(x, grow, NP_MODES[mode], **kw)
    crop = tuple(slice(max(-lo, 0), padded.shape[d] - max(-hi, 0)) for d, (lo, hi) in
                 enumerate(pairs))
    return padded[crop]


PADS = [(1, 2), (0, 3), (-1, 2), (2, -1), (1, 1, 2, 0), (2, -2, -1, 3), (3, 3, 1, 1),
        (1, 0, 0, 2, 1, 1)]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_forward(mode):
    for pad in PADS:
        x = rand(2, 3, *(4, 4, 5)[3 - len(pad) // 2:])   # (N, C, *padded dims)
        close(F.pad(T(x), pad, mode=mode), np_pad(x, pad, mode))
    x = rand(2, 3, 4, 5)
    if mode == "constant":
        close(F.pad(T(x), (1, 1, 0, 0, 2, 1, 1, 0), value=2.5),
              np_pad(x, (1, 1, 0, 0, 2, 1, 1, 0), mode, 2.5))
        assert F.pad(em.arange(3), (1, 1), value=7).tolist() == [7, 0, 1, 2, 7]
    else:   # an unbatched input: (C, W) for one padded dim
        close(F.pad(T(x[0, 0]), (2, 1), mode=mode), np_pad(x[0, 0], (2, 1), mode))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradients(mode):
    x = T(rand(1, 2, 3, 4), True)
    for pad in [(1, 2, 2, 1), (-1, 2, 1, -1)]:
        assert gradcheck(lambda a: F.pad(a, pad, mode=mode), (x,))
    assert gradcheck(lambda a: F.pad(a, (2, 1), mode=mode), (T(rand(2, 4), True),))


def test_pad_bad_input():
    x = T(rand(1, 2, 3))
    with pytest.raises(ValueError, match="pad: padding length must be even, got 3"):
        F.pad(x, (1, 1, 1))
    with pytest.raises(ValueError, match=r"pad: 8 padding values .*\(1, 2, 3\)"):
        F.pad(x, (1,) * 8)
    with pytest.raises(ValueError, match=r"pad: reflect padding \(3, 0\) must be less than the "
                                         r"size 3 of dim 2"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match=r"circular padding \(0, 4\) wraps around dim 2 of size "
                                         r"3 more than once"):
        F.pad(x, (0, 4), mode="circular")
    with pytest.raises(ValueError, match=r"padding \(-2, -2\) of dim 2 leaves size -1"):
        F.pad(x, (-2, -2))
    with pytest.raises(ValueError, match="mode 'replicate' doesn't take a value"):
        F.pad(x, (1, 1), mode="replicate", value=1.0)
    with pytest.raises(ValueError, match=r"6 padding values need a 4-d or 5-d input, got "
                                         r"shape \(1, 2, 3\)"):
        F.pad(x, (1,) * 6, mode="reflect")
    with pytest.raises(ValueError, match="mode must be 'constant', .* got 'mirror'"):
        F.pad(x, (1, 1), mode="mirror")


# one_hot and normalize ------------------------------------------------------------------

def test_one_hot():
    t = np.array([[0, 2], [1, 4]])
    got = F.one_hot(T(t))
    assert got.dtype == em.int64 and got.tolist() == np.eye(5, dtype=np.int64)[t].tolist()
    assert F.one_hot(T(t), 7).tolist() == np.eye(7, dtype=np.int64)[t].tolist()
    assert tuple(F.one_hot(em.zeros(0, 3, dtype=em.int64), 4).shape) == (0, 3, 4)
    with pytest.raises(ValueError, match=r"one_hot: class value 4 is out of range for "
                                         r"num_classes=3"):
        F.one_hot(T(t), 3)
    with pytest.raises(ValueError, match="class values must be non-negative, got -1"):
        F.one_hot(em.tensor([0, -1]))
    with pytest.raises(ValueError, match="empty tensor; pass num_classes"):
        F.one_hot(em.zeros(0, dtype=em.int64))
    with pytest.raises(TypeError, match="one_hot: expected an integer tensor.*float32"):
        F.one_hot(em.zeros(2))


def test_normalize():
    x = rand(3, 4, 2)
    for p in (1, 2.0, 3, math.inf):
        for dim in (0, 1, -1):
            norm = np.linalg.norm(np.moveaxis(x, dim, -1), ord=p, axis=-1)
            want = x / np.maximum(np.expand_dims(norm, dim), 1e-12)
            close(F.normalize(T(x), p, dim), want)
    z = np.zeros((2, 3))
    z[1] = [3.0, 0.0, 4.0]
    close(F.normalize(T(z), eps=1e-3), [[0, 0, 0], [0.6, 0, 0.8]])    # max(norm, eps)
    out = em.empty(2, 3, dtype=em.float64)
    F.normalize(T(z), out=out)
    close(out, [[0, 0, 0], [0.6, 0, 0.8]])
    xg = T(x, True)
    for p in (1, 2.0, 3):
        assert gradcheck(lambda a: F.normalize(a, p, 1), (xg,))


# scaled_dot_product_attention ------------------------------------------------------------

def np_sdpa(q, k, v, bias=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if bias is not None:
        s = s + bias
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)                       # every key masked: the row is zeros
    e = np.exp(s - np.where(dead, 0, m))
    a = np.where(dead, 0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    return a @ v


def test_sdpa_forward():
    q, k, v = rand(2, 3, 4, 8), rand(2, 3, 6, 8, seed=1), rand(2, 3, 6, 5, seed=2)
    close(F.scaled_dot_product_attention(T(q), T(k), T(v)), np_sdpa(q, k, v))
    close(F.scaled_dot_product_attention(T(q), T(k), T(v), scale=0.3),
          np_sdpa(q, k, v, scale=0.3))
    keep = rand(4, 6, seed=3) > 0
    keep[2] = False                              # a query that sees no key
    bias = np.where(keep, 0.0, -np.inf)
    close(F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(keep)),
          np_sdpa(q, k, v, bias))
    fmask = rand(2, 1, 4, 6, seed=4)
    close(F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(fmask)),
          np_sdpa(q, k, v, fmask))
    causal = np.where(np.tril(np.ones((4, 6), bool)), 0.0, -np.inf)
    close(F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True),
          np_sdpa(q, k, v, causal))
    kg, vg = rand(2, 1, 6, 8, seed=5), rand(2, 1, 6, 5, seed=6)   # grouped-query heads
    close(F.scaled_dot_product_attention(T(q), T(kg), T(vg), enable_gqa=True),
          np_sdpa(q, np.repeat(kg, 3, 1), np.repeat(vg, 3, 1)))


def test_sdpa_dropout_uses_em_dropout():
    q, k, v = T(rand(2, 4, 8)), T(rand(2, 6, 8, seed=1)), T(rand(2, 6, 5, seed=2))
    em.manual_seed(3)
    got = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    em.manual_seed(3)
    attn = em.dropout(em.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1), 0.4, True)
    close(got, (attn @ v).numpy())
    assert not np.allclose(got.numpy(), np_sdpa(q.numpy(), k.numpy(), v.numpy()))


def test_sdpa_gradients():
    q, k, v = T(rand(2, 3, 4), True), T(rand(2, 5, 4, seed=1), True), \
        T(rand(2, 5, 3, seed=2), True)
    keep = T(rand(3, 5, seed=3) > 0)
    keep[1] = False
    fmask = T(rand(3, 5, seed=4))
    for kw in ({}, {"attn_mask": keep}, {"attn_mask": fmask}, {"is_causal": True},
               {"scale": 0.7}):
        assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **kw),
                         (q, k, v))


def test_sdpa_bad_input():
    q, k, v = T(rand(2, 3, 4)), T(rand(2, 5, 4)), T(rand(2, 5, 3))
    with pytest.raises(ValueError, match=r"key must be .*query \(2, 3, 4\), key \(2, 5, 3\)"):
        F.scaled_dot_product_attention(q, T(rand(2, 5, 3)), v)
    with pytest.raises(ValueError, match=r"value \(2, 4, 3\)"):
        F.scaled_dot_product_attention(q, k, T(rand(2, 4, 3)))
    with pytest.raises(ValueError, match=r"attn_mask shape \(4, 5\) does not broadcast .*"
                                         r"\(2, 3, 5\)"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=T(rand(4, 5)))
    with pytest.raises(ValueError, match="attn_mask must not be given with is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=T(rand(3, 5)), is_causal=True)


# interpolate ----------------------------------------------------------------------------

def np_nearest_index(n, o, scale_factor, shortcuts=True):
    """PyTorch's rule in float32: min(floor(dst * scale), n - 1), scale = 1 / scale_factor
    when given, else n / o (o = n and o = 2n exactly on a 4-d input: PyTorch's 2-d kernel
    has those shortcuts, its 1-d and 3-d kernels not)."""
    if o == n and shortcuts:
        return np.arange(o)
    if o == 2 * n and shortcuts:
        return np.arange(o) // 2
    scale = np.float32(1.0 / scale_factor) if scale_factor else np.float32(n) / np.float32(o)
    return np.minimum(np.floor(np.arange(o, dtype=np.float32) * scale).astype(int), n - 1)


def np_nearest(x, out_size, scales):
    for k, (o, s) in enumerate(zip(out_size, scales)):
        x = np.take(x, np_nearest_index(x.shape[2 + k], o, s, x.ndim == 4), axis=2 + k)
    return x


def np_source(dst, n, o, align_corners, scale_factor):
    """The source coordinate of output position dst (PyTorch's area_pixel rules; a size
    kept is copied, whatever the scale)."""
    if o == n:
        return float(dst)
    if align_corners:
        return dst * (n - 1) / (o - 1) if o > 1 else 0.0
    scale = 1.0 / scale_factor if scale_factor else n / o
    return max(scale * (dst + 0.5) - 0.5, 0.0)


def np_bilinear(x, out_size, align_corners, scales=(None, None)):
    """Explicit loops over every output pixel (float64)."""
    N, C, H, W = x.shape
    OH, OW = out_size
    out = np.zeros((N, C, OH, OW))
    for oy in range(OH):
        sy = np_source(oy, H, OH, align_corners, scales[0])
        y0 = min(int(math.floor(sy)), H - 1)
        y1 = y0 + 1 if y0 < H - 1 else y0
        ly = sy - y0
        for ox in range(OW):
            sx = np_source(ox, W, OW, align_corners, scales[1])
            x0 = min(int(math.floor(sx)), W - 1)
            x1 = x0 + 1 if x0 < W - 1 else x0
            lx = sx - x0
            for n in range(N):
                for c in range(C):
                    out[n, c, oy, ox] = ((1 - ly) * ((1 - lx) * x[n, c, y0, x0] +
                                                     lx * x[n, c, y0, x1]) +
                                         ly * ((1 - lx) * x[n, c, y1, x0] +
                                               lx * x[n, c, y1, x1]))
    return out


SIZES = [dict(size=(3, 4)), dict(size=(9, 13)), dict(size=(5, 7)), dict(size=1),
         dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=(0.6, 2.5)),
         dict(scale_factor=1.7, recompute_scale_factor=True), dict(scale_factor=(1.1, 1.05))]


def out_size_and_scales(shape, kw):
    if "size" in kw:
        size = kw["size"] if isinstance(kw["size"], tuple) else (kw["size"],) * 2
        return size, (None, None)
    s = kw["scale_factor"] if isinstance(kw["scale_factor"], tuple) else \
        (kw["scale_factor"],) * 2
    size = tuple(math.floor(n * f) for n, f in zip(shape, s))
    return size, ((None, None) if kw.get("recompute_scale_factor") else s)


@pytest.mark.parametrize("kw", SIZES, ids=str)
def test_interpolate_nearest(kw):
    for dt in (np.float64, np.float32):
        x = rand(2, 3, 5, 7).astype(dt)
        size, scales = out_size_and_scales(x.shape[2:], kw)
        close(F.interpolate(T(x), **kw), np_nearest(x, size, scales))
        x1 = x[:, :, 0]                                  # 3-d: (N, C, W)
        kw1 = {k: (v[1] if isinstance(v, tuple) else v) for k, v in kw.items()}
        close(F.interpolate(T(x1), **kw1), np_nearest(x1, size[1:], scales[1:]))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", SIZES, ids=str)
def test_interpolate_bilinear_and_linear(kw, align_corners):
    x = rand(2, 2, 5, 7)
    size, scales = out_size_and_scales(x.shape[2:], kw)
    want = np_bilinear(x, size, align_corners, scales)
    close(F.interpolate(T(x), mode="bilinear", align_corners=align_corners, **kw), want)
    # linear on a 3-d input is bilinear on one row
    kw1 = {k: (v[1] if isinstance(v, tuple) else v) for k, v in kw.items()}
    got = F.interpolate(T(x[:, :, 0]), mode="linear", align_corners=align_corners, **kw1)
    want = np_bilinear(x[:, :, :1], (1, size[1]), align_corners, (None, scales[1]))
    close(got, want[:, :, 0])


def test_interpolate_float32_matches_float64():
    x = rand(1, 2, 5, 6)
    for ac in (False, True):
        got = F.interpolate(T(x.astype(np.float32)), size=(7, 4), mode="bilinear",
                            align_corners=ac)
        close(got, np_bilinear(x, (7, 4), ac), rtol=1e-5, atol=1e-5)


def test_interpolate_gradients():
    x = T(rand(1, 2, 3, 4), True)
    for kw in (dict(mode="nearest", size=(5, 3)), dict(mode="bilinear", size=(5, 6)),
               dict(mode="bilinear", scale_factor=0.7, align_corners=True),
               dict(mode="bilinear", scale_factor=1.5)):
        assert gradcheck(lambda a: F.interpolate(a, **kw), (x,))
    assert gradcheck(lambda a: F.interpolate(a, size=7, mode="linear"), (T(rand(2, 2, 3), True),))


def test_interpolate_bad_input():
    x = T(rand(1, 2, 3, 4))
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match=r"size \(2, 3, 4\) must have one entry per spatial dim; "
                                         r"the input's spatial dims are \(3, 4\)"):
        F.interpolate(x, size=(2, 3, 4))
    with pytest.raises(ValueError, match=r"mode 'bilinear' needs a 4-d input .*\(2, 3\)"):
        F.interpolate(T(rand(2, 3)), size=4, mode="bilinear")
    with pytest.raises(ValueError, match=r"mode 'linear' needs a 3-d input"):
        F.interpolate(x, size=4, mode="linear")
    with pytest.raises(ValueError, match="align_corners can only be set with"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(ValueError, match=r"sizes must be greater than 0, got input \(3, 4\) and "
                                         r"output \(0, 1\)"):
        F.interpolate(x, scale_factor=0.3)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful"):
        F.interpolate(x, size=4, recompute_scale_factor=True)
    with pytest.raises(NotImplementedError, match="mode 'cubic' is not supported"):
        F.interpolate(x, size=4, mode="cubic")
    with pytest.raises(ValueError, match="antialias=True is restricted to the modes"):
        F.interpolate(x, size=4, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match=r"mode 'trilinear' needs a 5-d input"):
        F.interpolate(x, size=4, mode="trilinear")


# issue 16 item 7: interpolate (and pad) built their source indices in a Python loop
# over every output position: size=2**33 grew memory until killed

_DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


@pytest.mark.parametrize("kw", [dict(size=2**61), dict(scale_factor=2**61),
                                dict(size=2**62, mode="linear"), dict(scale_factor=2.0**70),
                                dict(size=(2**40, 2**40)), dict(scale_factor=(2**31, 2**32),
                                                                  mode="bilinear")])
def test_issue16_item7_impossible_interpolate_fails_at_once(kw):
    two_d = isinstance(kw.get("size", kw.get("scale_factor")), tuple)
    x = em.ones(1, 1, 4, 4) if two_d else em.ones(1, 1, 4)
    with pytest.raises(MemoryError, match=r"interpolate: the output of shape .* elements "
                                          r"\(\d+ bytes\)"):
        F.interpolate(x, **kw)


def test_issue16_item7_interpolate_huge_but_addressable_fails_at_once():
    # 2**33 float32 outputs (32 GiB) fit int64: the first allocation says how many bytes
    with pytest.raises(MemoryError, match="bytes"):
        F.interpolate(em.ones(1, 1, 4), size=2**36)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("mode, n, o, align", [("nearest", 5, 3, None), ("nearest", 3, 7, None),
                                               ("nearest", 4, 8, None), ("linear", 5, 3, False),
                                               ("linear", 3, 7, True), ("linear", 4, 9, False)])
def test_issue16_item7_interpolate_indices_as_tensor_ops(device, mode, n, o, align):
    x = rand(2, 3, n)
    got = F.interpolate(T(x).to(device), size=o, mode=mode, align_corners=align)
    assert got.device.type == device
    if mode == "nearest":
        expect = x[..., np_nearest_index(n, o, None)]
    else:
        scale = (n - 1) / (o - 1) if align else n / o
        d = np.arange(o)
        src = d * scale if align else np.maximum((d + 0.5) * scale - 0.5, 0)
        i0 = np.minimum(np.floor(src).astype(int), n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        w1 = src - i0
        expect = x[..., i0] * (1 - w1) + x[..., i1] * w1
    np.testing.assert_allclose(got.cpu().numpy(), expect, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", _DEVICES)
def test_issue16_item7_pad_huge_and_modes(device):
    x = em.arange(4.0).reshape(1, 1, 4).to(device)
    for mode in ("constant", "replicate"):
        with pytest.raises(MemoryError, match="pad: the output of shape"):
            F.pad(x, (2**62, 2**62), mode=mode)
        # the allocator's error (a device's OutOfMemoryError is a RuntimeError, as in
        # PyTorch) says how many bytes
        with pytest.raises((MemoryError, RuntimeError), match="bytes"):
            F.pad(x, (2**40, 0), mode=mode)
    np.testing.assert_array_equal(F.pad(x, (3, 2), mode="reflect").cpu().numpy()[0, 0],
                                  [3, 2, 1, 0, 1, 2, 3, 2, 1])
    np.testing.assert_array_equal(F.pad(x, (2, 1), mode="replicate").cpu().numpy()[0, 0],
                                  [0, 0, 0, 1, 2, 3, 3])
    np.testing.assert_array_equal(F.pad(x, (2, -1), mode="circular").cpu().numpy()[0, 0],
                                  [1, 2, 0, 1, 2])
    np.testing.assert_array_equal(F.pad(x, (-1, 3), mode="circular").cpu().numpy()[0, 0],
                                  [1, 2, 3, 1, 2, 3])
