"""The special functions: the op-table rows of kernels/common/ember_special.h (lgamma,
digamma, polygamma, erfinv, i0, igamma, igammac, sinc, logit and the ``special_*`` rows
that ember.special names), their accuracy, the entries of the orthogonal polynomials
(PyTorch's argument names; n bounded where the recurrence runs n steps), and the few
that are not one row (polygamma's argument order, mvlgamma).

Accuracy is measured in ulps of the result's dtype against the exact value (mpmath,
in tests/test_special.py, over the whole domain including the tails): ``ACCURACY``
holds each function's bounds and the docstrings state them. A float32 (and float16)
result is computed in double where the device has it and rounded once.
"""
from __future__ import annotations

import math
import numbers
from collections import namedtuple

from ember._args import int_arg, tensor_arg
from ember._C import core as _core
from ember._registry import METHODS, tensor_method
from ember.ops import elementwise as _elementwise

_ew = _core.elementwise

# function -> (float32 ulps, float64 ulps, where the bound holds / how it is measured)
ACCURACY = {
    "lgamma": (1, 4, "for x > 0; for x < 0 the error is measured against "
               "max(|lgamma(x)|, |lgamma(1 - x)|), the terms of the reflection"),
    "digamma": (1, 8, "for x > 0; for x < 0 the error is measured against "
                "max(|digamma(x)|, |digamma(1 - x)|), the terms of the reflection"),
    "polygamma": (1, 8, "for x > 0 and n <= 10"),
    "zeta": (1, 8, "for x > 1, q > 0"),
    "erfinv": (1, 4, "on (-1, 1)"),
    "erfcx": (1, 4, "everywhere it does not overflow"),
    "ndtr": (1, 6, "for normal results"),
    "ndtri": (1, 5, "on (0, 1)"),
    "log_ndtr": (1, 4, "everywhere"),
    "i0": (1, 6, "everywhere it does not overflow"),
    "i0e": (1, 6, "everywhere"),
    "i1": (1, 16, "everywhere it does not overflow"),
    "i1e": (1, 10, "everywhere"),
    "modified_bessel_k0": (1, 8, "for normal results"),
    "modified_bessel_k1": (1, 4, "for normal results"),
    "scaled_modified_bessel_k0": (1, 6, "for x > 0"),
    "scaled_modified_bessel_k1": (1, 4, "for x > 0"),
    "bessel_j0": (1, 8, "measured against max(|J0(x)|, min(1, sqrt(2 / (pi |x|)))), the "
                  "envelope (J0 has zeros, where only absolute accuracy is possible)"),
    "bessel_j1": (1, 6, "measured against max(|J1(x)|, min(1, sqrt(2 / (pi |x|))))"),
    "bessel_y0": (1, 12, "for x > 0, measured against max(|Y0(x)|, min(1, sqrt(2 / (pi x))))"),
    "bessel_y1": (1, 8, "for x > 0, measured against max(|Y1(x)|, min(1, sqrt(2 / (pi x))))"),
    "spherical_bessel_j0": (1, 4, "measured against max(|j0(x)|, min(1, 1 / |x|))"),
    "sinc": (1, 4, "measured against max(|sinc(x)|, min(1, 1 / |pi x|))"),
    "logit": (1, 4, "on (0, 1)"),
    "entr": (1, 4, "for x >= 0"),
    "xlog1py": (1, 4, "for y > -1"),
    "airy_ai": (1, 4, "for x >= -1e10 (float32: -1e15), measured for x < 0 against max(|Ai(x)|, "
                "min(Ai(0), |x|^(-1/4) / sqrt(pi))), the envelope (Ai has zeros there)"),
    # rows and compositions that were there before ember.special
    "erf": (3, 2, "everywhere"),
    "erfc": (7, 2, "for normal results"),
    "expit": (3, 3, "for normal results"),
    "exp2": (1, 1, "for normal results"),
    "expm1": (1, 1, "everywhere it does not overflow"),
    "log1p": (1, 1, "for x > -1"),
    "xlogy": (2, 2, "for y > 0"),
    "igamma": (1, 128, "for a <= 100; in float64 per unit of 1 + |a log x - x - lgamma(a)| "
               "(the exponent of the prefactor x^a e^-x / Gamma(a), whose rounding it is)"),
    "igammac": (1, 128, "for a <= 100; in float64 per unit of 1 + |a log x - x - lgamma(a)| "
                "(the exponent of the prefactor x^a e^-x / Gamma(a), whose rounding it is)"),
}


def accuracy_note(name):
    f32, f64, where = ACCURACY[name]
    return (f"Accuracy: within {f32} ulp (float32) and {f64} ulp (float64) of the exact "
            f"value, {where}; float16 is computed in float32.")


_ROW_DOCS = {
    "lgamma": ("lgamma", "log |Gamma(x)| (inf at the poles 0, -1, -2, ...); its derivative is "
               "digamma."),
    "digamma": ("digamma", "The logarithmic derivative of Gamma, psi(x) (-inf at +0, +inf at "
                "-0, NaN at the negative integers, as PyTorch)."),
    "erfinv": ("erfinv", "The inverse error function: erf(erfinv(x)) = x on (-1, 1), +-inf at "
               "+-1, NaN outside."),
    "i0": ("i0", "The modified Bessel function of the first kind of order 0, I0(x)."),
    "special_i0e": ("i0e", "exp(-|x|) I0(x), the exponentially scaled I0."),
    "special_i1": ("i1", "The modified Bessel function of the first kind of order 1, I1(x)."),
    "special_i1e": ("i1e", "exp(-|x|) I1(x), the exponentially scaled I1."),
    "special_erfcx": ("erfcx", "The scaled complementary error function exp(x^2) erfc(x)."),
    "special_ndtr": ("ndtr", "The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, accurate "
                     "in the lower tail."),
    "special_ndtri": ("ndtri", "The inverse of ndtr: the x with ndtr(x) = p (+-inf at 1 and 0, "
                      "NaN outside [0, 1])."),
    "special_log_ndtr": ("log_ndtr", "log(ndtr(x)), without underflow for very negative x."),
    "special_entr": ("entr", "-x log x (0 at 0, -inf for x < 0)."),
    "special_bessel_j0": ("bessel_j0", "The Bessel function of the first kind of order 0."),
    "special_bessel_j1": ("bessel_j1", "The Bessel function of the first kind of order 1."),
    "special_bessel_y0": ("bessel_y0", "The Bessel function of the second kind of order 0 "
                          "(-inf at 0, NaN for x < 0)."),
    "special_bessel_y1": ("bessel_y1", "The Bessel function of the second kind of order 1 "
                          "(-inf at 0, NaN for x < 0)."),
    "special_modified_bessel_k0": ("modified_bessel_k0", "The modified Bessel function of the "
                                   "second kind of order 0 (inf at 0, NaN for x < 0)."),
    "special_modified_bessel_k1": ("modified_bessel_k1", "The modified Bessel function of the "
                                   "second kind of order 1 (inf at 0, NaN for x < 0)."),
    "special_scaled_modified_bessel_k0": ("scaled_modified_bessel_k0", "exp(x) K0(x)."),
    "special_scaled_modified_bessel_k1": ("scaled_modified_bessel_k1", "exp(x) K1(x)."),
    "special_spherical_bessel_j0": ("spherical_bessel_j0", "The spherical Bessel function "
                                    "j0(x) = sin(x) / x (1 at 0)."),
    "sinc": ("sinc", "sin(pi x) / (pi x), 1 at 0 (pi x reduced exactly, so large x keeps "
             "its accuracy)."),
    "special_zeta": ("zeta", "The Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x (inf at "
                     "x = 1, NaN for x < 1; differentiable in q only, as PyTorch)."),
    "special_xlog1py": ("xlog1py", "x log1p(y), 0 where x is 0 (unless y is NaN)."),
    "special_airy_ai": ("airy_ai", "The Airy function Ai(x), the solution of y'' = x y that "
                        "decays as x -> inf (0 at +inf, NaN at -inf as bessel_j0); not "
                        "differentiable (as PyTorch)."),
    "igamma": ("igamma", "The regularised lower incomplete gamma function P(a, x) = "
               "gamma(a, x) / Gamma(a) (differentiable in x only, as PyTorch)."),
    "igammac": ("igammac", "The regularised upper incomplete gamma function Q(a, x) = 1 - "
                "P(a, x) (differentiable in x only, as PyTorch)."),
}

_ROW_DOCS.update({
    "erf": ("erf", "The error function, 2 / sqrt(pi) times the integral of exp(-t^2) from 0."),
    "erfc": ("erfc", "The complementary error function 1 - erf(x), accurate in the tail."),
    "sigmoid": ("expit", "The logistic function 1 / (1 + exp(-x)) (ember.special.expit)."),
    "exp2": ("exp2", "2 ** x."),
    "expm1": ("expm1", "exp(x) - 1, accurate near 0."),
    "log1p": ("log1p", "log(1 + x), accurate near 0."),
})

for _row, (_name, _text) in _ROW_DOCS.items():
    _fn = getattr(_elementwise, _row)
    _fn.__doc__ = f"{_text}\n\n{accuracy_note(_name)}\nOp-table row `{_row}` (every device)."
_elementwise.logit.__doc__ += "\n\n" + accuracy_note("logit")
_elementwise.xlogy.__doc__ += "\n\n" + accuracy_note("xlogy")


# The orthogonal polynomials p_n(x), rows special_<name>(x, n): their error is measured in
# ulps of a scale, since near a root only absolute accuracy is possible.
# name -> (definition, the scale)
POLYNOMIALS = {
    "chebyshev_polynomial_t": ("the Chebyshev polynomial of the first kind T_n(x) = cos(n "
                               "acos x)", "1 on [-1, 1], |T_n(x)| outside"),
    "chebyshev_polynomial_u": ("the Chebyshev polynomial of the second kind U_n(x) = "
                               "sin((n+1) t) / sin t, x = cos t", "n + 1 on [-1, 1], |U_n(x)| "
                               "outside"),
    "chebyshev_polynomial_v": ("the Chebyshev polynomial of the third kind V_n(x) = "
                               "cos((n+1/2) t) / cos(t/2), x = cos t", "2n + 1 on [-1, 1], "
                               "|V_n(x)| outside"),
    "chebyshev_polynomial_w": ("the Chebyshev polynomial of the fourth kind W_n(x) = "
                               "sin((n+1/2) t) / sin(t/2), x = cos t", "2n + 1 on [-1, 1], "
                               "|W_n(x)| outside"),
    "shifted_chebyshev_polynomial_t": ("T*_n(x) = T_n(2x - 1)", "that of T_n at 2x - 1"),
    "shifted_chebyshev_polynomial_u": ("U*_n(x) = U_n(2x - 1)", "that of U_n at 2x - 1"),
    "shifted_chebyshev_polynomial_v": ("V*_n(x) = V_n(2x - 1)", "that of V_n at 2x - 1"),
    "shifted_chebyshev_polynomial_w": ("W*_n(x) = W_n(2x - 1)", "that of W_n at 2x - 1"),
    "hermite_polynomial_h": ("the physicists' Hermite polynomial H_n(x) (H_1 = 2x, H_n+1 = 2x "
                             "H_n - 2n H_n-1)", "|H_n(i |x|)|, the sum of its terms' "
                             "magnitudes"),
    "hermite_polynomial_he": ("the probabilists' Hermite polynomial He_n(x) (He_1 = x, He_n+1 "
                              "= x He_n - n He_n-1)", "|He_n(i |x|)|, the sum of its terms' "
                              "magnitudes"),
    "laguerre_polynomial_l": ("the Laguerre polynomial L_n(x) ((n+1) L_n+1 = (2n+1-x) L_n - n "
                              "L_n-1)", "L_n(-|x|), the sum of its terms' magnitudes"),
    "legendre_polynomial_p": ("the Legendre polynomial P_n(x) ((n+1) P_n+1 = (2n+1) x P_n - n "
                              "P_n-1)", "1 on [-1, 1], |P_n(x)| outside"),
}
# float32 ulps of the scale; float64 ulps of the scale as (c, p): c n^p (Laguerre's
# recurrence loses about n^2 / 10 ulp at small x, the others about n); for n <= 1000
POLYNOMIAL_ULPS = (1, (3, 1))
POLYNOMIAL_ULPS_OF = {"laguerre_polynomial_l": (1, (1, 2))}
# Laguerre's and Legendre's recurrences run n steps without overflowing (for x in (0, inf)
# and [-1, 1]): n is bounded (EM_SP_POLY_NMAX in ember_special.h, which gives NaN beyond)
POLYNOMIAL_NMAX = 1048576
_BOUNDED_N = ("laguerre_polynomial_l", "legendre_polynomial_p")


def _check_n(name, n):
    if isinstance(n, _core.TensorBase):
        if n.numel() == 0 or n.dtype.kind not in ("int", "float"):
            return
        big = float(_core.reduce("amax", n.detach(), None))
    elif isinstance(n, numbers.Real):
        big = float(n)
    else:
        return
    if big > POLYNOMIAL_NMAX:
        raise ValueError(f"{name}: n = {big:.17g} is larger than {POLYNOMIAL_NMAX} (its "
                         f"recurrence takes n steps)")


def _polynomial(name):
    op = _core.OP_INDEX["special_" + name]
    f32, (c, p) = POLYNOMIAL_ULPS_OF.get(name, POLYNOMIAL_ULPS)
    f64 = f"{c} n" if p == 1 else f"n^{p}" if c == 1 else f"{c} n^{p}"
    text, scale = POLYNOMIALS[name]
    check = name in _BOUNDED_N

    def fn(input, n, *, out=None):
        if check:
            _check_n(name, n)
        return _core.ew_call(op, input, n, None, 2, out)

    fn.__name__ = fn.__qualname__ = name
    limit = (f" n <= {POLYNOMIAL_NMAX} (larger n raise ValueError: the recurrence takes n "
             f"steps)." if check else " Any n costs the same (closed forms, or a recurrence "
             "that overflows within a few hundred steps).")
    fn.__doc__ = (f"{name}(input, n, *, out=None): {text}, elementwise; n (a tensor or a "
                  f"number) is truncated to an integer, n < 0 gives 0 and n = 0 gives 1, as "
                  f"torch.special; not differentiable (as PyTorch).{limit}\n\nAccuracy: "
                  f"within {f32} ulp (float32) and {f64} ulp (float64) of the scale {scale}, "
                  f"for n <= 1000; float16 is computed in float32.\nOp-table row "
                  f"`special_{name}` (every device).")
    return fn


for _name in POLYNOMIALS:
    _fn = _polynomial(_name)
    globals()["special_" + _name] = _fn
    setattr(_elementwise, "special_" + _name, _fn)


def polygamma(n, input, *, out=None):
    if isinstance(n, bool) or not isinstance(n, (numbers.Integral, _core.TensorBase)):
        if isinstance(n, numbers.Real) and float(n).is_integer():
            n = int(n)
        else:
            raise TypeError(f"polygamma: n must be an integer, got {type(n).__name__} {n!r:.60}")
    if isinstance(n, numbers.Integral) and n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}")
    tensor_arg(input, "polygamma")
    return _ew("special_polygamma", n, input, out=out)


polygamma.__doc__ = f"""The n-th derivative of digamma, (-1)^(n+1) n! zeta(n + 1, x) (digamma
for n = 0); n a non-negative integer (an integer tensor works elementwise, a
non-integer n gives NaN).

{accuracy_note("polygamma")}
Op-table row `special_polygamma` (every device)."""


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_(self, n):
    return polygamma(n, self, out=self)


_polygamma_method.__name__ = _polygamma_method.__qualname__ = "polygamma"
_polygamma_.__name__ = _polygamma_.__qualname__ = "polygamma_"
METHODS["polygamma"] = _polygamma_method
METHODS["polygamma_"] = _polygamma_


@tensor_method
def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p: sum over i < p of
    lgamma(x - i / 2), plus p (p - 1) / 4 log(pi), as torch.mvlgamma (every element must
    exceed (p - 1) / 2). Composed from the lgamma row (so it runs on every device and
    autograd differentiates it through lgamma); as accurate as p lgamma terms summed."""
    tensor_arg(input, "mvlgamma")
    if out is not None:
        tensor_arg(out, "mvlgamma", "out")
    p = int_arg(p, "p", "mvlgamma")
    if p < 1:
        raise ValueError(f"mvlgamma: p has to be greater than or equal to 1, got p={p}")
    x = input if input.dtype.kind == "float" else input.to(_core.get_default_dtype())
    if x.numel() == 0:
        r = _ew("mul", x, 0)
        return r if out is None else out.copy_(r)
    if not bool(_core.reduce("all", _ew("gt", x.detach(), (p - 1) / 2), None)):
        raise RuntimeError(f"mvlgamma: all elements must be greater than (p-1)/2 = "
                           f"{(p - 1) / 2}")
    from ember.ops.creation import arange
    halves = _ew("mul", arange(p, dtype=x.dtype, device=x.device), -0.5)
    terms = _elementwise.lgamma(_ew("add", x.unsqueeze(-1), halves))
    r = _ew("add", terms.sum(-1), p * (p - 1) / 4 * math.log(math.pi))
    if out is None:
        return r
    return out.copy_(r)


METHODS["mvlgamma_"] = lambda self, p: mvlgamma(self, p, out=self)
METHODS["mvlgamma_"].__name__ = METHODS["mvlgamma_"].__qualname__ = "mvlgamma_"

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])

# float dtype -> (integer dtype of its size, mantissa bits, exponent mask, bias - 1)
_FREXP = {"float16": ("int16", 10, 0x1F, 14), "bfloat16": ("int16", 7, 0xFF, 126),
          "float32": ("int32", 23, 0xFF, 126),
          "float64": ("int64", 52, 0x7FF, 1022)}


@tensor_method
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1)
    and exponent int32, as torch.frexp (0, inf and NaN keep their value with exponent 0).
    Exact: the fields are read from the bit pattern (through a view of the integer dtype
    of the float's size; subnormals are scaled into range first). Not differentiated."""
    tensor_arg(input, "frexp")
    if input.dtype.kind != "float":
        raise TypeError(f"frexp: needs a floating point tensor, got dtype {input.dtype!r}")
    from ember._dtypes import finfo
    iname, mbits, emask, bias = _FREXP[input.dtype.name]
    ibits = _core._dtype_by_name(iname)
    int32 = _core._dtype_by_name("int32")
    with _core._no_record():
        x = input.detach().contiguous()
        sub = _ew("logical_and", _ew("ne", x, 0), _ew("lt", _ew("abs", x), finfo(x.dtype).tiny))
        xs = _ew("where", sub, _ew("mul", x, float(2 ** (mbits + 1))), x).contiguous()
        bits = xs.view(ibits)
        raw = _ew("bitwise_and", _ew("bitwise_right_shift", bits, mbits), emask)
        special = _ew("logical_or", _ew("eq", x, 0), _ew("logical_not", _ew("isfinite", x)))
        e = _ew("sub", _ew("sub", raw, bias), _ew("mul", sub.to(ibits), mbits + 1))
        exponent = _ew("where", special, 0, e).to(int32)
        mbits_set = _ew("bitwise_or", _ew("bitwise_and", bits, ~(emask << mbits)), bias << mbits)
        mantissa = _ew("where", special, x, mbits_set.contiguous().view(x.dtype))
    if out is None:
        return frexp_result(mantissa, exponent)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("frexp: out must be a (mantissa, exponent) pair of tensors")
    out[0].copy_(mantissa)
    out[1].copy_(exponent)
    return frexp_result(out[0], out[1])


__all__ = ["polygamma", "mvlgamma", "frexp"] + ["special_" + _n for _n in POLYNOMIALS]
