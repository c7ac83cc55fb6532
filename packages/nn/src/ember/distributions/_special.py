"""Special functions the distributions need and ember's op table does not have yet
(lgamma, digamma, erfinv), composed from ember ops so that they run on every device and
autograd differentiates them (lgamma's derivative is then digamma's formula, digamma's
trigamma's). Also their NumPy twins for the Gamma sampler's gradient, on the host.

Domain: lgamma and digamma for x > 0 (what the distributions' parameters are); the
recurrence shifts x below 8 up by 8 and the Stirling/asymptotic series then has an error
below 1e-12 (float64).
"""
import math

import numpy as np

import ember as em

_SHIFT = 8
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def lgamma(x):
    """log Gamma(x) for x > 0, from ember ops (Stirling's series after shifting x >= 8)."""
    small = x < _SHIFT
    xs = em.where(small, x, em.full_like(x, _SHIFT))   # keeps the shifted branch finite
    corr = em.zeros_like(x)
    for k in range(_SHIFT):
        corr = corr + (xs + k).log()
    z = em.where(small, xs + _SHIFT, x)
    r = 1.0 / z
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
    big = (z - 0.5) * z.log() - z + _HALF_LOG_2PI + series
    return big - em.where(small, corr, em.zeros_like(x))


def digamma(x):
    """d/dx log Gamma(x) for x > 0, from ember ops (recurrence, then the asymptotic
    series)."""
    small = x < _SHIFT
    xs = em.where(small, x, em.full_like(x, _SHIFT))
    corr = em.zeros_like(x)
    for k in range(_SHIFT):
        corr = corr + 1.0 / (xs + k)
    z = em.where(small, xs + _SHIFT, x)
    r2 = 1.0 / (z * z)
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))
    big = z.log() - 0.5 / z - series
    return big - em.where(small, corr, em.zeros_like(x))


def lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def np_digamma(x):
    """digamma on NumPy float64 arrays (x > 0), the same formula as digamma()."""
    x = np.asarray(x, np.float64)
    corr = np.zeros_like(x)
    small = x < _SHIFT
    z = x.copy()
    for _ in range(_SHIFT):
        corr = np.where(small, corr + 1.0 / np.where(small, z, 1.0), corr)
        z = np.where(small, z + 1.0, z)
    r2 = 1.0 / (z * z)
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))
    return np.log(z) - 0.5 / z - series - corr


# erfinv: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single
# precision polynomials, then Newton steps on erf. Its gradient is sqrt(pi)/2 exp(y^2).
_GILES_A = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_B = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
            -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _horner(coefs, w):
    p = em.full_like(w, coefs[0])
    for c in coefs[1:]:
        p = p * w + c
    return p


def erfinv(x):
    """The inverse of erf on (-1, 1) (+-inf at +-1), from ember ops: Giles's
    approximation refined by Newton steps, differentiable in x (the last Newton step is
    taken with gradient, whose derivative is 1/erf'(y) = sqrt(pi)/2 exp(y^2))."""
    with em.no_grad():
        xd = x.detach()
        w = -((1.0 - xd) * (1.0 + xd)).log()
        p1 = _horner(_GILES_A, w - 2.5)
        p2 = _horner(_GILES_B, w.clamp(min=0).sqrt() - 3.0)
        y = em.where(w < 5.0, p1, p2) * xd
        finite = xd.abs() < 1
        for _ in range(2):
            y = em.where(finite, y - (y.erf() - xd) / (_TWO_OVER_SQRT_PI * (-y * y).exp()), y)
        inf = em.where(xd > 0, em.full_like(xd, math.inf), em.full_like(xd, -math.inf))
        y = em.where(finite, y, em.where(xd.abs() == 1, inf, em.full_like(xd, math.nan)))
    if not x.requires_grad:
        return y
    step = (y.erf() - x) / (_TWO_OVER_SQRT_PI * (-y * y).exp())   # y fixed: d/dx = 1/erf'
    return em.where(finite, y - step, y)
