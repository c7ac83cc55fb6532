"""Derivatives of the special functions beyond the table-driven gradchecks of
test_formulas.py: the arguments PyTorch does not differentiate raise, the composed
mvlgamma and the logit with eps, and derivatives at the points the formulas special-case."""
import math

import numpy as np
import pytest

import ember as em
import ember.special as S
from ember.autograd import gradcheck, gradgradcheck


def _leaf(values):
    return em.tensor(values, dtype=em.float64, requires_grad=True)


@pytest.mark.parametrize("op,first", [(S.zeta, 2.5), (em.igamma, 1.5), (em.igammac, 1.5)])
def test_the_argument_pytorch_does_not_differentiate_raises(op, first):
    a = _leaf([first, first + 1])
    x = em.tensor([0.7, 1.3], dtype=em.float64)
    y = op(a, x).sum()
    with pytest.raises(RuntimeError, match="not implemented"):
        y.backward()


def test_polygamma_n_is_not_differentiated():
    x = _leaf([0.5, 1.5, 3.0])
    em.polygamma(2, x).sum().backward()
    # d/dx polygamma(2, x) = polygamma(3, x) = 6 zeta(4, x)
    expected = [6 * sum((v + k) ** -4.0 for k in range(200000)) for v in (0.5, 1.5, 3.0)]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_lgamma_and_digamma_derivatives():
    x = _leaf([0.25, 1.0, 4.5])
    em.lgamma(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), em.digamma(x.detach()).numpy(), rtol=1e-14)
    x.grad = None
    em.digamma(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), em.polygamma(1, x.detach()).numpy(), rtol=1e-14)
    # polygamma(1, 1) = pi^2 / 6
    assert x.grad.numpy()[1] == pytest.approx(math.pi ** 2 / 6, rel=1e-14)
    assert gradcheck(em.lgamma, (_leaf([-0.5, 0.3, 2.5]),))
    assert gradgradcheck(em.digamma, (_leaf([0.3, 2.5]),))


def test_mvlgamma_gradient_and_check():
    x = _leaf([[2.5, 3.0], [4.0, 7.5]])
    assert gradcheck(lambda t: em.mvlgamma(t, 3), (x,))
    with pytest.raises(RuntimeError, match="greater than"):
        em.mvlgamma(em.tensor([0.5, 3.0]), 3)


def test_logit_with_eps_has_a_zero_gradient_outside():
    x = _leaf([0.001, 0.3, 0.999])
    em.logit(x, eps=0.01).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1 / (0.3 * 0.7), 0.0], rtol=1e-12)


@pytest.mark.parametrize("fn,at,expected", [
    (em.sinc, 0.0, 0.0), (S.spherical_bessel_j0, 0.0, 0.0), (S.bessel_j1, 0.0, 0.5),
    (S.i1, 0.0, 0.5), (S.i1e, 0.0, 0.5)])
def test_derivatives_at_the_special_cased_points(fn, at, expected):
    x = _leaf([at])
    fn(x).sum().backward()
    assert x.grad.item() == pytest.approx(expected, abs=1e-15)


_DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


@pytest.mark.parametrize("device", _DEVICES)
def test_derivatives_on_every_device(device):
    x = em.tensor([0.3, 1.7], dtype=em.float32, device=device, requires_grad=True)
    (em.lgamma(x) + S.i0e(x) + S.log_ndtr(x) + S.erfcx(x)).sum().backward()
    xs = np.array([0.3, 1.7])
    dig = em.digamma(em.tensor(xs)).numpy()
    i1e = S.i1e(em.tensor(xs)).numpy() - S.i0e(em.tensor(xs)).numpy()
    pdf = np.exp(-xs * xs / 2) / math.sqrt(2 * math.pi)
    cdf = S.ndtr(em.tensor(xs)).numpy()
    erfcx = S.erfcx(em.tensor(xs)).numpy()
    expected = dig + i1e + pdf / cdf + 2 * xs * erfcx - 2 / math.sqrt(math.pi)
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, rtol=1e-5)
