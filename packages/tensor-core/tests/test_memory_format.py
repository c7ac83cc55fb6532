"""Memory formats: em.channels_last / channels_last_3d / contiguous_format /
preserve_format in contiguous, to, clone, is_contiguous, empty and the *_like
factories; elementwise results that keep a channels_last input's layout; conv2d,
the 2-d poolings and batch_norm on channels_last inputs: the contiguous results and
gradients, with PyTorch's (channels_last) strides."""
import numpy as np
import pytest

import ember as em


def cl_strides(n, c, h, w):
    return (c * h * w, 1, w * c, c)


def test_objects():
    assert repr(em.channels_last) == "ember.channels_last"
    assert isinstance(em.contiguous_format, em.memory_format)
    assert em.channels_last is not em.channels_last_3d


def test_contiguous_and_strides(device):
    x = em.randn(2, 3, 4, 5, device=device)
    y = x.contiguous(memory_format=em.channels_last)
    assert y.stride() == cl_strides(2, 3, 4, 5)
    assert y.is_contiguous(memory_format=em.channels_last) and not y.is_contiguous()
    assert x.is_contiguous(memory_format=em.contiguous_format)
    assert not x.is_contiguous(memory_format=em.channels_last)
    assert y.contiguous(memory_format=em.channels_last) is y
    np.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy())
    z = y.contiguous()
    assert z.is_contiguous() and z.stride() == (60, 20, 5, 1)
    assert x.to(memory_format=em.channels_last).stride() == cl_strides(2, 3, 4, 5)
    assert x.to(em.float64, memory_format=em.channels_last).dtype is em.float64
    assert y.clone().stride() == y.stride()                      # preserve_format
    assert y.clone(memory_format=em.contiguous_format).is_contiguous()
    v = em.randn(2, 3, 4, 5, 6, device=device).contiguous(memory_format=em.channels_last_3d)
    assert v.stride() == (360, 1, 90, 18, 3)
    assert v.is_contiguous(memory_format=em.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4"):
        em.randn(3, 4, 5).contiguous(memory_format=em.channels_last)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        x.contiguous(memory_format=em.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")
    # size-1 dims: a (N, 1, H, W) row-major tensor is both
    one = em.randn(2, 1, 3, 3)
    assert one.is_contiguous() and one.is_contiguous(memory_format=em.channels_last)


def test_factories(device):
    e = em.empty(2, 3, 4, 5, memory_format=em.channels_last, device=device)
    assert e.shape == (2, 3, 4, 5) and e.stride() == cl_strides(2, 3, 4, 5)
    x = em.randn(2, 3, 4, 5, device=device).contiguous(memory_format=em.channels_last)
    for f in (em.empty_like, em.zeros_like, em.ones_like, em.rand_like, em.randn_like):
        r = f(x)
        assert r.stride() == x.stride(), f.__name__
        assert f(x, memory_format=em.contiguous_format).is_contiguous(), f.__name__
    assert em.full_like(x, 2.0).stride() == x.stride()
    assert em.randint_like(x, 5).stride() == x.stride()
    assert em.zeros_like(x).cpu().numpy().sum() == 0
    assert em.zeros_like(em.randn(2, 3, 4, 5), memory_format=em.channels_last).stride() == \
        cl_strides(2, 3, 4, 5)
    r = em.empty(2, 3, 4, 5, memory_format=em.channels_last, requires_grad=True)
    assert r.is_leaf and r.requires_grad


def test_elementwise_preserves(device):
    x = em.randn(2, 3, 4, 5, device=device)
    y = x.contiguous(memory_format=em.channels_last)
    for r in (y + 1, y.exp(), y * x, em.where(y > 0, y, 0.0), -y, y.relu()):
        assert r.stride() == y.stride()
    np.testing.assert_allclose((y * x + 1).cpu().numpy(), (x * x + 1).cpu().numpy(),
                               rtol=1e-6)
    assert (x + y).is_contiguous()          # the first operand decides
    # casts keep the layout: .to(dtype), and the operands a mixed-dtype op promotes
    for dt in (em.float16, em.bfloat16, em.float64):
        h = y.to(dt)
        assert h.stride() == y.stride() and h.dtype is dt
        np.testing.assert_allclose(h.float().cpu().numpy(), y.cpu().numpy(), rtol=1e-2)
    m = (y > 0) * y                          # bool promoted to float32 in NHWC order
    assert m.stride() == y.stride()
    np.testing.assert_array_equal(m.cpu().numpy(), np.maximum(y.cpu().numpy(), 0))
    assert y.to(em.float16, memory_format=em.contiguous_format).is_contiguous()
    v = em.randn(2, 3, 4, 5, 6, device=device).contiguous(memory_format=em.channels_last_3d)
    assert (v * 2).stride() == v.stride()
    # broadcast to a larger result: row-major as before
    assert (y + em.randn(3, 2, 3, 4, 5, device=device)).is_contiguous()


def _pair(device, shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    x = em.tensor(a, device=device, requires_grad=True)
    xc = em.tensor(a, device=device).contiguous(memory_format=em.channels_last) \
        .requires_grad_()
    return x, xc


CASES = {
    "conv2d": lambda x, p: em.conv2d(x, p["w"], p["b"], stride=1, padding=1),
    "conv2d_strided": lambda x, p: em.conv2d(x, p["w"], None, stride=2, padding=0),
    "max_pool2d": lambda x, p: em.max_pool2d(x, 2),
    "avg_pool2d": lambda x, p: em.avg_pool2d(x, 3, stride=2, padding=1),
    "adaptive_avg_pool2d": lambda x, p: em.adaptive_avg_pool2d(x, (2, 3)),
    "batch_norm_train": lambda x, p: em.batch_norm(x, None, None, p["g"], p["b3"],
                                                   training=True),
    "batch_norm_eval": lambda x, p: em.batch_norm(x, p["rm"], p["rv"], p["g"], p["b3"],
                                                  training=False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_channels_last_layers(device, name):
    x, xc = _pair(device, (2, 3, 6, 7))
    rng = np.random.default_rng(1)
    p = {"w": em.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), device=device),
         "b": em.tensor(rng.standard_normal(4).astype(np.float32), device=device),
         "g": em.tensor(rng.random(3).astype(np.float32) + 0.5, device=device),
         "b3": em.tensor(rng.standard_normal(3).astype(np.float32), device=device),
         "rm": em.tensor(rng.standard_normal(3).astype(np.float32), device=device),
         "rv": em.tensor(rng.random(3).astype(np.float32) + 0.5, device=device)}
    y, yc = CASES[name](x, p), CASES[name](xc, p)
    n, c, h, w = y.shape
    assert yc.stride() == cl_strides(n, c, h, w), name      # PyTorch's layout
    np.testing.assert_allclose(yc.detach().cpu().numpy(), y.detach().cpu().numpy(),
                               rtol=1e-5, atol=1e-5)
    g = em.tensor(np.random.default_rng(2).standard_normal(tuple(y.shape)).astype(np.float32),
                  device=device)
    (y * g).sum().backward()
    (yc * g).sum().backward()
    np.testing.assert_allclose(xc.grad.cpu().numpy(), x.grad.cpu().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_module_to_channels_last():
    nn = pytest.importorskip("ember.nn")
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Linear(5, 5))
    m.to(memory_format=em.channels_last)
    assert m[0].weight.stride() == cl_strides(4, 3, 3, 3)
    assert m[0].weight.is_leaf and m[0].weight.requires_grad
    assert m[2].weight.is_contiguous()
    x = em.randn(2, 3, 7, 7).contiguous(memory_format=em.channels_last)
    y = m[1](m[0](x))
    assert y.is_contiguous(memory_format=em.channels_last)
