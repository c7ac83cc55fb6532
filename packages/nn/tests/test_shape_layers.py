"""Issue 18: PixelShuffle, PixelUnshuffle, ChannelShuffle, Fold, Unfold and the padding
layers against NumPy references (loops over PyTorch's documented index formulas, np.pad),
batched and unbatched; gradients by gradcheck in float64; cpu and opencl."""
import itertools

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


def arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape)


def t64(*shape, seed=0, grad=False):
    return em.from_numpy(arr(*shape, seed=seed)).requires_grad_(grad)


def np_pixel_shuffle(x, r):
    *b, c, h, w = x.shape
    out = np.zeros((*b, c // (r * r), h * r, w * r))
    for k, i, j, y, z in itertools.product(range(c // (r * r)), range(r), range(r), range(h),
                                           range(w)):
        out[..., k, y * r + i, z * r + j] = x[..., k * r * r + i * r + j, y, z]
    return out


@pytest.mark.parametrize("shape", [(2, 8, 2, 3), (8, 2, 3), (1, 2, 8, 1, 2)])
def test_pixel_shuffle_unshuffle(shape):
    x = t64(*shape)
    m = nn.PixelShuffle(2)
    assert repr(m) == "PixelShuffle(upscale_factor=2)"
    y = m(x)
    np.testing.assert_array_equal(y.numpy(), np_pixel_shuffle(x.numpy(), 2))
    back = nn.PixelUnshuffle(2)
    assert repr(back) == "PixelUnshuffle(downscale_factor=2)"
    np.testing.assert_array_equal(back(y).numpy(), x.numpy())
    assert gradcheck(lambda a: F.pixel_shuffle(a, 2), (t64(*shape, grad=True),))
    assert gradcheck(lambda a: F.pixel_unshuffle(a, 2), (t64(*y.shape, grad=True),))
    with pytest.raises(ValueError, match="pixel_shuffle: expected"):
        m(t64(2, 3, 2, 2))
    with pytest.raises(ValueError, match="pixel_unshuffle: expected"):
        back(t64(2, 3, 3, 2))


def test_channel_shuffle():
    # PyTorch's documented example: channels 1..4 in 2 groups -> 1, 3, 2, 4
    x = em.arange(1.0, 5.0).reshape(1, 4, 1, 1)
    m = nn.ChannelShuffle(2)
    assert repr(m) == "ChannelShuffle(groups=2)"
    assert m(x).flatten().tolist() == [1.0, 3.0, 2.0, 4.0]
    y = t64(2, 6, 3)
    np.testing.assert_array_equal(F.channel_shuffle(y, 3).numpy(), y.numpy()[:, [0, 2, 4, 1, 3, 5]])
    assert gradcheck(lambda a: F.channel_shuffle(a, 2), (t64(2, 4, 3, grad=True),))
    with pytest.raises(ValueError, match="channel_shuffle: expected"):
        m(t64(2, 3, 3))


def np_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch, i, j, y, z in itertools.product(range(c), range(k[0]), range(k[1]), range(oh),
                                            range(ow)):
        out[:, (ch * k[0] + i) * k[1] + j, y * ow + z] = \
            xp[:, ch, y * s[0] + i * d[0], z * s[1] + j * d[1]]
    return out


def np_fold(cols, size, k, d, p, s):
    n, ck, length = cols.shape
    c = ck // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    oh = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, hp, wp))
    for ch, i, j, y, z in itertools.product(range(c), range(k[0]), range(k[1]), range(oh),
                                            range(ow)):
        out[:, ch, y * s[0] + i * d[0], z * s[1] + j * d[1]] += \
            cols[:, (ch * k[0] + i) * k[1] + j, y * ow + z]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


CASES = [((2, 2), (1, 1), (0, 0), (1, 1)), ((3, 2), (1, 2), (1, 0), (2, 1)),
         ((2, 2), (2, 1), (1, 1), (1, 2))]


@pytest.mark.parametrize("k, d, p, s", CASES)
def test_unfold_fold(k, d, p, s):
    x = t64(2, 3, 6, 5)
    m = nn.Unfold(k, d, p, s)
    cols = m(x)
    np.testing.assert_allclose(cols.numpy(), np_unfold(x.numpy(), k, d, p, s))
    np.testing.assert_allclose(F.unfold(x[0], k, d, p, s).numpy(),
                               np_unfold(x.numpy()[:1], k, d, p, s)[0])
    f = nn.Fold((6, 5), k, d, p, s)
    c = cols.numpy()
    np.testing.assert_allclose(f(cols).numpy(), np_fold(c, (6, 5), k, d, p, s), atol=1e-12)
    np.testing.assert_allclose(F.fold(cols[1], (6, 5), k, d, p, s).numpy(),
                               np_fold(c[1:], (6, 5), k, d, p, s)[0], atol=1e-12)
    assert gradcheck(lambda a: F.unfold(a, k, d, p, s), (t64(1, 2, 5, 4, grad=True),))
    blocks = F.unfold(t64(1, 2, 5, 4), k, d, p, s).shape
    assert gradcheck(lambda a: F.fold(a, (5, 4), k, d, p, s),
                     (t64(*blocks, seed=1, grad=True),))


def test_fold_unfold_docs_and_errors():
    # PyTorch's docs: fold(unfold(x)) == x * divisor, divisor = fold(unfold(ones))
    x = t64(1, 2, 5, 5)
    kw = {"kernel_size": 2, "padding": 1, "stride": 1}
    div = F.fold(F.unfold(em.ones(1, 2, 5, 5, dtype=em.float64), **kw), (5, 5), **kw)
    np.testing.assert_allclose(F.fold(F.unfold(x, **kw), (5, 5), **kw).numpy(),
                               x.numpy() * div.numpy())
    assert repr(nn.Fold(4, 2)) == \
        "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold((2, 3), stride=2)) == \
        "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=2)"
    # the docs' example: (1, 3 * 2 * 2, 12) blocks of a (4, 5) output with a 2x2 kernel
    assert tuple(F.fold(em.randn(1, 12, 12), (4, 5), (2, 2)).shape) == (1, 3, 4, 5)
    with pytest.raises(ValueError, match="fold: expected size of input's dimension 1 to be "
                                         "divisible"):
        F.fold(em.randn(1, 5, 12), (4, 5), 2)
    with pytest.raises(ValueError, match="calculated number of sliding blocks"):
        F.fold(em.randn(1, 12, 11), (4, 5), 2)
    with pytest.raises(ValueError, match="unfold: expected a 3-D"):
        F.unfold(em.randn(2, 3), 2)
    with pytest.raises(TypeError, match="Unfold: kernel_size"):
        nn.Unfold("a")


PADS = [("Zero", "constant"), ("Constant", "constant"), ("Reflection", "reflect"),
        ("Replication", "edge"), ("Circular", "wrap")]


@pytest.mark.parametrize("kind, np_mode", PADS)
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("batched", [False, True])
def test_padding_layers(kind, np_mode, n, batched):
    pad = (1, 2, 2, 0, 0, 1)[:2 * n]
    cls = getattr(nn, f"{kind}Pad{n}d")
    m = cls(pad, 1.5) if kind == "Constant" else cls(pad)
    shape = (2, 3) + (3, 4, 3)[:n] if batched else (3,) + (3, 4, 3)[:n]
    x = t64(*shape)
    widths = [(0, 0)] * (len(shape) - n) + [(pad[2 * k], pad[2 * k + 1])
                                             for k in reversed(range(n))]
    if kind == "Constant":
        want = np.pad(x.numpy(), widths, constant_values=1.5)
        assert repr(m) == f"{cls.__name__}(padding={pad}, value=1.5)"
    else:
        want = np.pad(x.numpy(), widths, mode=np_mode)
        assert repr(m) == f"{cls.__name__}({pad})"
    np.testing.assert_array_equal(m(x).numpy(), want)
    if batched and n < 3:
        assert gradcheck(lambda a: m(a), (t64(*shape, grad=True),))


def test_padding_int_and_errors():
    assert nn.ZeroPad2d(2).padding == (2, 2, 2, 2)
    assert nn.ReflectionPad3d(1).padding == (1,) * 6
    assert tuple(nn.ZeroPad1d(-1)(em.ones(2, 5)).shape) == (2, 3)   # negative crops
    with pytest.raises(ValueError, match="ReflectionPad2d: expected 3D or 4D input"):
        nn.ReflectionPad2d(1)(em.ones(4, 4))
    with pytest.raises(ValueError, match="ReplicationPad1d: padding"):
        nn.ReplicationPad1d((1, 2, 3))
    with pytest.raises(TypeError, match="ConstantPad2d: value"):
        nn.ConstantPad2d(1, "a")


@pytest.mark.parametrize("device", DEVICES)
def test_on_device(device):
    x = em.from_numpy(arr(2, 8, 4, 4).astype(np.float32))
    for m in (nn.PixelShuffle(2), nn.PixelUnshuffle(2), nn.ChannelShuffle(4),
              nn.Unfold(2, padding=1, stride=2), nn.ReflectionPad2d(1), nn.CircularPad2d(2),
              nn.ReplicationPad3d(1), nn.ConstantPad3d(1, 2.0)):
        want = m(x).numpy()
        got = m(x.to(device))
        assert got.device.type == device
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    cols = em.from_numpy(arr(2, 8, 9).astype(np.float32))
    want = F.fold(cols, 4, 2, stride=1, padding=0).numpy()
    np.testing.assert_allclose(F.fold(cols.to(device), 4, 2).cpu().numpy(), want, rtol=1e-6)
