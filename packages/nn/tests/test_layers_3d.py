"""Conv3d (padding modes), ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d and
AdaptiveMaxPool3d as layers: forward against a NumPy reference written here, PyTorch's
parameter shapes, initialisation bounds and reprs, gradients through a small 3-d net, and
bad arguments."""
import itertools
import math

import numpy as np
import pytest

import ember as em
from ember import nn, optim
from ember.autograd import gradcheck
from ember.nn import functional as F

NP_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def np_conv3d(x, w, b, stride, pads, dilation, groups, mode="zeros"):
    """pads ((before, after),) * 3 filled as padding_mode does, then a gather of taps."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads), mode=NP_MODES[mode])
    n, oc, cg = x.shape[0], w.shape[0], w.shape[1]
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    out = np.zeros((n, oc) + tuple(out_sp))
    ocg = oc // groups
    for o in itertools.product(*(range(v) for v in out_sp)):
        for g in range(groups):
            acc = 0.0
            for t in itertools.product(*(range(v) for v in k)):
                pos = tuple(o[i] * stride[i] + t[i] * dilation[i] for i in range(3))
                acc = acc + np.einsum("nc,oc->no", xp[(slice(None), slice(g * cg, (g + 1) * cg)) +
                                                      pos],
                                      w[(slice(g * ocg, (g + 1) * ocg), slice(None)) + t])
            out[(slice(None), slice(g * ocg, (g + 1) * ocg)) + o] = acc
    return out + (0 if b is None else b[None, :, None, None, None])


def params(m):
    return m.weight.detach().numpy(), None if m.bias is None else m.bias.detach().numpy()


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, (1, 0, 2), "same", "valid"])
def test_conv3d_layer_padding_modes(mode, padding):
    em.manual_seed(0)
    m = nn.Conv3d(4, 6, (3, 2, 3), stride=1, padding=padding, dilation=(1, 2, 1), groups=2,
                  padding_mode=mode).double()
    x = np.random.default_rng(1).standard_normal((2, 4, 4, 5, 5))
    if padding == "same":
        pads = [(1, 1), (1, 1), (1, 1)]
    elif padding == "valid":
        pads = [(0, 0)] * 3
    else:
        p = (padding,) * 3 if isinstance(padding, int) else padding
        pads = [(q, q) for q in p]
    w, b = params(m)
    want = np_conv3d(x, w, b, (1, 1, 1), pads, (1, 2, 1), 2, mode)
    np.testing.assert_allclose(m(em.from_numpy(x)).detach().numpy(), want, rtol=1e-10,
                               atol=1e-10)


def test_conv3d_layer_stride_shapes_init_repr():
    m = nn.Conv3d(3, 8, 3, stride=(2, 1, 2), padding=1, bias=False)
    assert tuple(m.weight.shape) == (8, 3, 3, 3, 3) and m.bias is None
    bound = 1 / math.sqrt(3 * 27)
    assert float(m.weight.abs().max().item()) <= bound + 1e-7
    assert repr(m) == ("Conv3d(3, 8, kernel_size=(3, 3, 3), stride=(2, 1, 2), "
                       "padding=(1, 1, 1), bias=False)")
    assert repr(nn.Conv3d(2, 2, 1, padding_mode="circular")).endswith(
        "padding_mode=circular)")
    y = m(em.randn(2, 3, 5, 6, 7))
    assert tuple(y.shape) == (2, 8, 3, 6, 4)
    assert tuple(m(em.randn(3, 5, 6, 7)).shape) == (8, 3, 6, 4)      # unbatched
    t = nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=2, padding=(0, 1, 0), output_padding=1,
                           groups=2, dilation=(1, 1, 2))
    assert tuple(t.weight.shape) == (4, 3, 2, 3, 2) and tuple(t.bias.shape) == (6,)
    x = em.randn(1, 4, 3, 3, 3)
    got = t(x)
    want = F.conv_transpose3d(x, t.weight, t.bias, 2, (0, 1, 0), 1, 2, (1, 1, 2))
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert tuple(got.shape) == (1, 6, 7, 6, 8)
    assert "output_padding=(1, 1, 1)" in repr(t)


def test_pool3d_layers_match_functional():
    x = em.randn(2, 3, 5, 6, 7)
    mp = nn.MaxPool3d(3, stride=2, padding=1, dilation=1, return_indices=True, ceil_mode=True)
    v, i = mp(x)
    fv, fi = F.max_pool3d(x, 3, 2, 1, 1, True, True)
    np.testing.assert_array_equal(v.numpy(), fv.numpy())
    np.testing.assert_array_equal(i.numpy(), fi.numpy())
    assert repr(mp) == ("MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=1, "
                        "ceil_mode=True)")
    ap = nn.AvgPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True,
                      count_include_pad=False, divisor_override=None)
    np.testing.assert_array_equal(ap(x).numpy(), F.avg_pool3d(
        x, (2, 3, 2), (1, 2, 2), (1, 1, 0), True, False).numpy())
    np.testing.assert_allclose(nn.AvgPool3d(2, divisor_override=3)(x).numpy(),
                               F.avg_pool3d(x, 2).numpy() * 8 / 3, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(nn.AdaptiveAvgPool3d((2, None, 3))(x).numpy(),
                                  F.adaptive_avg_pool3d(x, (2, None, 3)).numpy())
    v, i = nn.AdaptiveMaxPool3d(2, return_indices=True)(x)
    fv, fi = F.adaptive_max_pool3d(x, 2, True)
    np.testing.assert_array_equal(i.numpy(), fi.numpy())
    assert tuple(nn.AdaptiveAvgPool3d(1)(x).shape) == (2, 3, 1, 1, 1)
    assert repr(nn.AdaptiveAvgPool3d((1, 2, 3))) == "AdaptiveAvgPool3d(output_size=(1, 2, 3))"


def test_small_3d_net_trains():
    em.manual_seed(0)
    net = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1, padding_mode="replicate"), nn.ReLU(),
                        nn.MaxPool3d(2), nn.ConvTranspose3d(4, 2, 2, stride=2),
                        nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(1), nn.Flatten())
    x, y = em.randn(2, 1, 4, 4, 4), em.randn(2, 2)
    opt = optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.grad is not None for p in net.parameters())


def test_conv3d_layer_gradcheck_with_padding_mode():
    m = nn.Conv3d(2, 2, 2, padding=1, padding_mode="reflect").double()
    x = em.randn(1, 2, 3, 3, 2, dtype=em.float64).requires_grad_()
    assert gradcheck(lambda a, w: F.conv3d(F.pad(a, [1] * 6, mode="reflect"), w), (x, m.weight))
    assert gradcheck(lambda a: m(a), (x,))


def test_3d_layers_bad_arguments():
    with pytest.raises(ValueError, match="Conv3d: padding_mode must be one of"):
        nn.Conv3d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Conv3d: padding='same' is not supported for strided"):
        nn.Conv3d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Conv3d: groups=3"):
        nn.Conv3d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="Conv3d: kernel_size must be an int or a tuple of 3"):
        nn.Conv3d(2, 2, (3, 3))
    with pytest.raises(ValueError, match="MaxPool3d: kernel_size must be an int or a tuple of "
                                         "3 ints"):
        nn.MaxPool3d((2, 2))
    with pytest.raises(ValueError, match=r"conv3d: expected a 5-d \(batched\) or 4-d"):
        nn.Conv3d(2, 2, 1)(em.randn(2, 3, 3))
