"""ember.special: PyTorch's torch.special, as names of ember's functions.

Every elementwise function here is an op-table row (ember/ops/table.py, C in
kernels/common/ember_special.h), so it runs on every device and has its derivative
where PyTorch has one; each docstring states its accuracy in ulps (checked against
mpmath in tests/test_special.py). softmax, log_softmax and logsumexp are ember's own
(ember/ops/softmax.py, ember/ops/reduction.py).
"""
from __future__ import annotations

from ember.ops import elementwise as _ew, reduction as _red, softmax as _sm, special as _sp
from ember.ops.special import mvlgamma as _mvlgamma, polygamma

# the error function family
erf = _ew.erf
erfc = _ew.erfc
erfinv = _ew.erfinv
erfcx = _ew.special_erfcx
# the normal distribution
ndtr = _ew.special_ndtr
ndtri = _ew.special_ndtri
log_ndtr = _ew.special_log_ndtr
# logistic
expit = _ew.sigmoid
logit = _ew.logit
# gamma and zeta
gammaln = _ew.lgamma
digamma = psi = _ew.digamma
multigammaln = _mvlgamma
zeta = _ew.special_zeta
gammainc = _ew.igamma
gammaincc = _ew.igammac
# Bessel functions
i0 = modified_bessel_i0 = _ew.i0
i0e = _ew.special_i0e
i1 = modified_bessel_i1 = _ew.special_i1
i1e = _ew.special_i1e
modified_bessel_k0 = _ew.special_modified_bessel_k0
modified_bessel_k1 = _ew.special_modified_bessel_k1
scaled_modified_bessel_k0 = _ew.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _ew.special_scaled_modified_bessel_k1
bessel_j0 = _ew.special_bessel_j0
bessel_j1 = _ew.special_bessel_j1
bessel_y0 = _ew.special_bessel_y0
bessel_y1 = _ew.special_bessel_y1
spherical_bessel_j0 = _ew.special_spherical_bessel_j0
airy_ai = _ew.special_airy_ai
# orthogonal polynomials p_n(x): (input, n)
chebyshev_polynomial_t = _sp.special_chebyshev_polynomial_t
chebyshev_polynomial_u = _sp.special_chebyshev_polynomial_u
chebyshev_polynomial_v = _sp.special_chebyshev_polynomial_v
chebyshev_polynomial_w = _sp.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _sp.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _sp.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _sp.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _sp.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _sp.special_hermite_polynomial_h
hermite_polynomial_he = _sp.special_hermite_polynomial_he
laguerre_polynomial_l = _sp.special_laguerre_polynomial_l
legendre_polynomial_p = _sp.special_legendre_polynomial_p
# logarithms, exponentials and the rest
xlogy = _ew.xlogy
xlog1py = _ew.special_xlog1py
entr = _ew.special_entr
sinc = _ew.sinc
exp2 = _ew.exp2
expm1 = _ew.expm1
log1p = _ew.log1p


def round(input, *, decimals=0):  # noqa: A001
    """Round half to even to `decimals` decimal places (ember.round)."""
    return _ew.round(input, decimals)


def softmax(input, dim, *, dtype=None):
    """exp(x) / sum(exp(x)) along dim (ember.softmax)."""
    return _sm.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """x - logsumexp(x) along dim (ember.log_softmax)."""
    return _sm.log_softmax(input, dim, dtype)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over dim, without overflow (ember.logsumexp)."""
    return _red.logsumexp(input, dim, keepdim)


__all__ = [
    "erf", "erfc", "erfinv", "erfcx", "ndtr", "ndtri", "log_ndtr", "expit", "logit",
    "gammaln", "digamma", "psi", "polygamma", "multigammaln", "zeta", "gammainc",
    "gammaincc", "i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "spherical_bessel_j0", "xlogy", "xlog1py", "entr", "sinc", "exp2", "expm1", "log1p",
    "round", "softmax", "log_softmax", "logsumexp", "airy_ai", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
