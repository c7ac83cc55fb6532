"""Issue 18: InstanceNorm1d/2d/3d, RMSNorm, LocalResponseNorm, PReLU, RReLU, Hardshrink,
Softshrink and Softmax2d against NumPy references (PyTorch's documented formulas),
batched and unbatched; gradients by gradcheck in float64; cpu and opencl."""
import warnings

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


def np_instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    mu = x.mean(axes, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axes, keepdims=True) + eps)


@pytest.mark.parametrize("cls, spatial", [(nn.InstanceNorm1d, (5,)),
                                          (nn.InstanceNorm2d, (3, 4)),
                                          (nn.InstanceNorm3d, (2, 3, 2))])
def test_instance_norm_forward_batched_unbatched(cls, spatial):
    m = cls(3).double()
    assert m.weight is None and m.running_mean is None
    assert repr(m) == f"{cls.__name__}(3, eps=1e-05, momentum=0.1, affine=False, " \
                      f"track_running_stats=False)"
    x = t64(2, 3, *spatial)
    np.testing.assert_allclose(m(x).numpy(), np_instance_norm(x.numpy()), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(m(x[1]).numpy(), np_instance_norm(x.numpy()[1:])[0],
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match=f"{cls.__name__}: expected"):
        m(t64(*spatial))


def test_instance_norm_affine_running_stats_and_eval():
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double()
    with em.no_grad():
        m.weight.copy_(em.tensor([1.0, 2.0, -1.0], dtype=em.float64))
        m.bias.copy_(em.tensor([0.0, 0.5, 1.0], dtype=em.float64))
    x = t64(4, 3, 3, 2)
    xn = x.numpy()
    got = m(x).detach().numpy()
    want = np_instance_norm(xn) * np.array([1, 2, -1]).reshape(1, 3, 1, 1) + \
        np.array([0, 0.5, 1]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    flat = xn.reshape(4, 3, -1)
    rm = 0.1 * flat.mean(-1).mean(0)
    rv = 0.9 + 0.1 * flat.var(-1, ddof=1).mean(0)
    np.testing.assert_allclose(m.running_mean.numpy(), rm, rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(), rv, rtol=1e-10)
    assert int(m.num_batches_tracked) == 0        # PyTorch's InstanceNorm does not count
    m.eval()
    got = m(x).detach().numpy()
    want = (xn - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5) * \
        np.array([1, 2, -1]).reshape(1, 3, 1, 1) + np.array([0, 0.5, 1]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    m.train()
    assert gradcheck(lambda a, w, b: F.instance_norm(a, None, None, w, b),
                     (t64(2, 3, 4, grad=True), t64(3, seed=1, grad=True),
                      t64(3, seed=2, grad=True)))
    # affine with the wrong channel count: an error; without affine: a warning
    with pytest.raises(ValueError, match="InstanceNorm2d: expected input's size at dim 1"):
        m(t64(2, 4, 3, 3))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.InstanceNorm1d(3)(t64(2, 4, 3))
    assert any("num_features" in str(x.message) for x in w)


@pytest.mark.parametrize("shape, ns", [((2, 3, 4), 4), ((2, 3, 4), (3, 4)), ((5,), 5)])
def test_rms_norm(shape, ns):
    x = t64(*shape)
    ns_t = (ns,) if isinstance(ns, int) else ns
    axes = tuple(range(len(shape) - len(ns_t), len(shape)))
    m = nn.RMSNorm(ns).double()
    assert repr(m) == f"RMSNorm({ns_t}, eps=None, elementwise_affine=True)"
    with em.no_grad():
        m.weight.copy_(t64(*ns_t, seed=3))
    xn = x.numpy()
    eps = np.finfo(np.float64).eps
    want = xn / np.sqrt((xn ** 2).mean(axes, keepdims=True) + eps) * m.weight.detach().numpy()
    np.testing.assert_allclose(m(x).detach().numpy(), want, rtol=1e-12)
    want = xn / np.sqrt((xn ** 2).mean(axes, keepdims=True) + 0.1)
    np.testing.assert_allclose(F.rms_norm(x, ns_t, eps=0.1).numpy(), want, rtol=1e-12)
    assert gradcheck(lambda a, w: F.rms_norm(a, ns_t, w, 1e-3),
                     (t64(*shape, grad=True), t64(*ns_t, seed=1, grad=True)))
    assert nn.RMSNorm(ns, elementwise_affine=False).weight is None
    with pytest.raises(ValueError, match="rms_norm: normalized_shape"):
        F.rms_norm(x, (7,))


def np_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = x ** 2
    div = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - size // 2), min(c - 1, i + (size - 1) // 2)
        div[:, i] = sq[:, lo:hi + 1].sum(1)
    return x / (k + alpha / size * div) ** beta


@pytest.mark.parametrize("shape, size", [((2, 5, 3), 2), ((2, 4, 3, 3), 3), ((1, 6, 2, 2, 2), 5)])
def test_local_response_norm(shape, size):
    m = nn.LocalResponseNorm(size, alpha=0.5, beta=0.75, k=2.0)
    assert repr(m) == f"LocalResponseNorm({size}, alpha=0.5, beta=0.75, k=2.0)"
    x = t64(*shape)
    np.testing.assert_allclose(m(x).numpy(), np_lrn(x.numpy(), size, 0.5, 0.75, 2.0),
                               rtol=1e-12)
    assert gradcheck(lambda a: F.local_response_norm(a, size, 0.5, 0.75, 2.0),
                     (t64(*shape, grad=True),))
    with pytest.raises(ValueError, match="local_response_norm: expected 3D"):
        m(t64(2, 3))


def test_prelu():
    x = t64(2, 3, 4)
    m = nn.PReLU()
    assert repr(m) == "PReLU(num_parameters=1)" and float(m.weight) == 0.25
    np.testing.assert_allclose(m.double()(x).detach().numpy(),
                               np.where(x.numpy() >= 0, x.numpy(), 0.25 * x.numpy()))
    m3 = nn.PReLU(3, init=0.1).double()
    with em.no_grad():
        m3.weight.copy_(em.tensor([0.1, -0.5, 2.0], dtype=em.float64))
    a = np.array([0.1, -0.5, 2.0]).reshape(1, 3, 1)
    np.testing.assert_allclose(m3(x).detach().numpy(),
                               np.where(x.numpy() >= 0, x.numpy(), a * x.numpy()))
    # unbatched 1-d input has one channel
    np.testing.assert_allclose(m(t64(4)).detach().numpy(),
                               np.where(arr(4) >= 0, arr(4), 0.25 * arr(4)))
    assert gradcheck(lambda a_, w: F.prelu(a_, w), (t64(2, 3, 4, grad=True),
                                                     t64(3, seed=1, grad=True)))
    with pytest.raises(ValueError, match="prelu: mismatch"):
        m3(t64(2, 4))


def test_rrelu_train_random_eval_fixed():
    m = nn.RReLU(0.1, 0.3)
    assert repr(m) == "RReLU(lower=0.1, upper=0.3)"
    x = -em.ones(2000, dtype=em.float64)
    em.manual_seed(0)
    a = m(x).numpy()
    slopes = -a
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.04
    assert abs(slopes.mean() - 0.2) < 0.01
    em.manual_seed(0)
    np.testing.assert_array_equal(m(x).numpy(), a)          # ember's generator, seeded
    pos = em.ones(5, dtype=em.float64)
    np.testing.assert_array_equal(m(pos).numpy(), np.ones(5))
    m.eval()
    np.testing.assert_allclose(m(t64(3, 4)).numpy(),
                               np.where(arr(3, 4) >= 0, arr(3, 4), 0.2 * arr(3, 4)))
    assert gradcheck(lambda z: F.rrelu(z, 0.1, 0.3, training=False), (t64(3, 4, grad=True),))
    with pytest.raises(ValueError, match="RReLU: lower bound"):
        nn.RReLU(0.5, 0.1)


def test_shrinks_and_softmax2d():
    x = t64(2, 3, 4, 5)
    xn = x.numpy()
    np.testing.assert_array_equal(nn.Hardshrink(0.7)(x).numpy(),
                                  np.where(np.abs(xn) > 0.7, xn, 0))
    np.testing.assert_allclose(nn.Softshrink(0.7)(x).numpy(),
                               np.where(xn > 0.7, xn - 0.7, np.where(xn < -0.7, xn + 0.7, 0)))
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)" and repr(nn.Softshrink(1.0)) == \
        "Softshrink(1.0)"
    e = np.exp(xn)
    np.testing.assert_allclose(nn.Softmax2d()(x).numpy(), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2d()(x[0]).numpy(), (e / e.sum(1, keepdims=True))[0])
    with pytest.raises(ValueError, match="Softmax2d"):
        nn.Softmax2d()(t64(3, 4))
    with pytest.raises(ValueError, match="Softshrink: lambd"):
        nn.Softshrink(-1.0)
    # away from the kinks
    y = em.from_numpy(np.array([-2.0, -1.2, 0.1, 1.3, 2.5])).requires_grad_()
    assert gradcheck(lambda z: F.hardshrink(z, 0.7), (y,))
    assert gradcheck(lambda z: F.softshrink(z, 0.7), (y,))
    assert gradcheck(lambda z: nn.Softmax2d()(z), (t64(1, 3, 2, 2, grad=True),))


@pytest.mark.parametrize("device", DEVICES)
def test_on_device(device):
    x = em.from_numpy(arr(2, 4, 3, 3).astype(np.float32))
    for m in (nn.InstanceNorm2d(4, affine=True), nn.RMSNorm(3), nn.LocalResponseNorm(3),
              nn.PReLU(4), nn.Hardshrink(), nn.Softshrink(), nn.Softmax2d(),
              nn.RReLU().eval()):
        want = m(x).detach().numpy()
        got = m.to(device)(x.to(device))
        assert got.device.type == device
        np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    out = nn.RReLU()(-em.ones(100, device=device))
    assert out.device.type == device and float(out.max()) < 0


def test_instance_norm_one_spatial_element_in_training():
    with pytest.raises(ValueError, match="instance_norm: expected more than 1 spatial element"):
        F.instance_norm(t64(1, 3, 1))
