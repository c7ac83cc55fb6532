"""ember.special and the special functions of the main namespace: accuracy in ulps
against mpmath over the whole domain (the tails included), on every device, for float32
and float64; the bound each test asserts is the one the function's docstring states.

The references are computed once per module (a few hundred points per function, in
30-digit arithmetic) and kept as (hi, lo) float64 pairs, so the float64 error is measured
below its own rounding. Errors are |got - exact| / ulp(scale), where scale is the exact
value, or for functions with zeros or a reflection the quantity the docstring names.
"""
from __future__ import annotations

import functools
import math
import re

import mpmath as mp
import numpy as np
import pytest

import ember as em
import ember.special as S
from ember.ops.special import (
    ACCURACY,
    POLYNOMIAL_NMAX,
    POLYNOMIAL_ULPS,
    POLYNOMIAL_ULPS_OF,
    POLYNOMIALS,
)

mp.mp.dps = 30
RNG = np.random.default_rng(20261202)


def _f32(x):
    """float32-representable points (so one point set serves both dtypes)."""
    return np.unique(np.asarray(x, np.float64).astype(np.float32).astype(np.float64))


def _logspace(lo, hi, n, sign=1):
    return sign * np.exp(RNG.uniform(math.log(lo), math.log(hi), n))


def _grid(*parts):
    return _f32(np.concatenate([np.atleast_1d(np.asarray(p, np.float64)) for p in parts]))


def _sym(*parts):
    x = _grid(*parts)
    return _f32(np.concatenate([x, -x]))


def _env_bessel(x):
    return np.minimum(1.0, np.sqrt(2 / (np.pi * np.maximum(np.abs(x), 1e-300))))


def _env_recip(x, c=1.0):
    return np.minimum(1.0, 1 / np.maximum(np.abs(c * x), 1e-300))


def _ncdf(x):
    return mp.ncdf(x)


def _ndtri_ref(p):
    """Newton on log ncdf (nearly a parabola, so it converges from the tail's guess)."""
    if p == 0 or p == 1:
        return -mp.inf if p == 0 else mp.inf
    with mp.workdps(60):
        p = mp.mpf(p)
        q = min(p, 1 - p)
        y = -mp.sqrt(2) * mp.erfinv(1 - 2 * q) if q > 1e-10 else -mp.sqrt(-2 * mp.log(q))
        for _ in range(100):
            c = mp.ncdf(y)
            step = (mp.log(c) - mp.log(q)) * c / mp.npdf(y)
            y -= step
            if abs(step) <= abs(y) * mp.mpf(10) ** -45:
                break
        return -y if p > 0.5 else y


def _log_ndtr_ref(x):
    return mp.log(mp.ncdf(x)) if x < 0 else mp.log1p(-mp.ncdf(-x))


def _zeta_ref(s, q):
    """Hurwitz zeta by Euler-Maclaurin after 40 terms (mpmath's own zeta(s, q) loses
    digits for large q)."""
    with mp.workdps(40):
        n0 = 40
        a = q + n0
        r = mp.fsum((q + k) ** -s for k in range(n0))
        r += a ** (1 - s) / (s - 1) + a ** -s / 2
        for j in range(1, 25):
            b = mp.bernoulli(2 * j) / mp.factorial(2 * j)
            r += b * mp.rf(s, 2 * j - 1) * a ** (1 - s - 2 * j)
        return r


def _erfcx_ref(x):
    if x < 1e4:
        return mp.exp(x * x) * mp.erfc(x)
    z = 1 / (2 * x * x)     # the asymptotic series, far below its smallest term's size
    series = mp.fsum((-1) ** k * mp.fac2(2 * k - 1) * z ** k for k in range(12))
    return series / (x * mp.sqrt(mp.pi))


def _reflected(name, ref, x, v):
    """The error scale of a function computed by reflection for x < 0: the larger of
    |f(x)| and |f(1 - x)|."""
    other = np.array([float(_exact(name, ref, 1 - mp.mpf(t))) for t in x])
    return np.where(x < 0, np.maximum(np.abs(v), np.abs(other)), v)


def _lgamma_ref(x):
    return mp.re(mp.loggamma(x))


def _airy_ref(x):
    with mp.workdps(60):    # zeta = 2/3 |x|^1.5 reaches 7e14: its digits go to the phase
        return +mp.airyai(x)


def _airy_scale(x, v):
    """x < 0: the envelope min(Ai(0), |x|^(-1/4) / sqrt(pi)) (Ai oscillates there)."""
    env = np.minimum(0.3550280538878172, np.maximum(np.abs(x), 1e-300) ** -0.25 / np.sqrt(np.pi))
    return np.where(x < 0, np.maximum(np.abs(v), env), v)


# name -> (ember function, mpmath reference, points, scale(points, exact) or None,
#          float64-only extra points)
UNARY = {
    "lgamma": (em.lgamma, _lgamma_ref,
               _grid(_logspace(1e-30, 1e30, 150), RNG.uniform(0, 10, 150), [0.5, 1.5, 2.5, 3],
                     -_logspace(1e-30, 1, 30), -RNG.uniform(0, 30, 120)),
               lambda x, v: _reflected("lgamma", _lgamma_ref, x, v),
               [1 + 1e-12, 2 - 1e-13, 1e300]),
    "digamma": (em.digamma, mp.digamma,
                _grid(_logspace(1e-30, 1e30, 150), RNG.uniform(0, 10, 150), [1.4616321, 1, 2],
                      -RNG.uniform(0, 30, 150), -_logspace(1e-20, 1, 20)),
                lambda x, v: _reflected("digamma", mp.digamma, x, v),
                [1.4616321449683622, 1e300]),
    "erfinv": (em.erfinv, mp.erfinv,
               _sym(RNG.uniform(0, 1, 200), 1 - _logspace(6e-8, 0.5, 150),
                    _logspace(1e-38, 1e-3, 50)),
               None, [1 - 2.0 ** -53, 1 - 1e-15, 1e-300, -(1 - 2.0 ** -53)]),
    "erfcx": (S.erfcx, _erfcx_ref,
              _grid(_logspace(1e-30, 1e30, 200), RNG.uniform(-9, 30, 200),
                    -_logspace(1e-20, 9, 60), [0, 25.9, 26, 26.1]),
              None, [1e300, -26.5, 1e-300]),
    "ndtr": (S.ndtr, _ncdf,
             _sym(_logspace(1e-30, 13, 250), RNG.uniform(0, 13, 150)), None,
             [-37.5, -30, -20, 8.2]),
    "ndtri": (S.ndtri, _ndtri_ref,
              _grid(RNG.uniform(0, 1, 200), _logspace(1e-37, 0.5, 200),
                    1 - _logspace(6e-8, 0.5, 100), [0.25, 0.5, 0.75]),
              None, [1e-300, 1e-100, 1 - 1e-16, 5e-324, 0.5 + 2.0 ** -53]),
    "log_ndtr": (S.log_ndtr, _log_ndtr_ref,
                 _sym(_logspace(1e-30, 1e18, 250), RNG.uniform(0, 10, 150)), None,
                 [1e150, -1e150, 38, 40]),
    "i0": (em.i0, lambda x: mp.besseli(0, x),
           _sym(_logspace(1e-30, 90, 300), [8, 7.9999995]), None, [700, 713.9]),
    "i0e": (S.i0e, lambda x: mp.exp(-abs(x)) * mp.besseli(0, x),
            _sym(_logspace(1e-30, 1e30, 300), [8, 7.9999995]), None, [1e300]),
    "i1": (S.i1, lambda x: mp.besseli(1, x),
           _sym(_logspace(1e-30, 90, 300), [8]), None, [700, 713.9, 1e-300]),
    "i1e": (S.i1e, lambda x: mp.exp(-abs(x)) * mp.besseli(1, x),
            _sym(_logspace(1e-30, 1e30, 300), [8]), None, [1e300, 1e-300]),
    "modified_bessel_k0": (S.modified_bessel_k0, lambda x: mp.besselk(0, x),
                           _grid(_logspace(1e-30, 85, 300), [2]), None, [700, 1e-300]),
    "modified_bessel_k1": (S.modified_bessel_k1, lambda x: mp.besselk(1, x),
                           _grid(_logspace(1e-30, 85, 300), [2]), None, [700]),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0,
                                  lambda x: mp.exp(x) * mp.besselk(0, x),
                                  _grid(_logspace(1e-30, 1e30, 300), [2]), None, [1e300]),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1,
                                  lambda x: mp.exp(x) * mp.besselk(1, x),
                                  _grid(_logspace(1e-30, 1e30, 300), [2]), None, [1e300]),
    "bessel_j0": (S.bessel_j0, lambda x: mp.besselj(0, x),
                  _sym(_logspace(1e-30, 1e6, 200), RNG.uniform(0, 40, 200), [8, 2.4048256]),
                  lambda x, v: np.maximum(np.abs(v), _env_bessel(x)), [1e10]),
    "bessel_j1": (S.bessel_j1, lambda x: mp.besselj(1, x),
                  _sym(_logspace(1e-30, 1e6, 200), RNG.uniform(0, 40, 200), [8]),
                  lambda x, v: np.maximum(np.abs(v), _env_bessel(x)), [1e10, 1e-300]),
    "bessel_y0": (S.bessel_y0, lambda x: mp.bessely(0, x),
                  _grid(_logspace(1e-30, 1e6, 200), RNG.uniform(0, 40, 200), [8]),
                  lambda x, v: np.maximum(np.abs(v), _env_bessel(x)), [1e10, 1e-300]),
    "bessel_y1": (S.bessel_y1, lambda x: mp.bessely(1, x),
                  _grid(_logspace(1e-30, 1e6, 200), RNG.uniform(0, 40, 200), [8]),
                  lambda x, v: np.maximum(np.abs(v), _env_bessel(x)), [1e10]),
    "spherical_bessel_j0": (S.spherical_bessel_j0, lambda x: mp.sin(x) / x if x else mp.mpf(1),
                            _sym(_logspace(1e-30, 1e10, 250), RNG.uniform(0, 40, 100), [0.5]),
                            lambda x, v: np.maximum(np.abs(v), _env_recip(x)), [1e100]),
    "sinc": (S.sinc, lambda x: mp.sinpi(x) / (mp.pi * x) if x else mp.mpf(1),
             _sym(_logspace(1e-30, 1e6, 250), RNG.uniform(0, 40, 100), [0.5, 1, 2.5]),
             lambda x, v: np.maximum(np.abs(v), _env_recip(x, np.pi)), [1e10 + 0.5]),
    "logit": (S.logit, lambda x: mp.log(x / (1 - x)),
              _grid(RNG.uniform(0, 1, 200), _logspace(1e-38, 0.5, 100),
                    1 - _logspace(6e-8, 0.5, 100), 0.5 + _logspace(1e-7, 0.2, 50)),
              None, [1e-300, 0.5 + 2.0 ** -52]),
    "entr": (S.entr, lambda x: -x * mp.log(x) if x else mp.mpf(0),
             _grid(_logspace(1e-38, 1e30, 300), [1, 0.5]), None, [1e-300, 1e300]),
    "erf": (S.erf, mp.erf, _sym(_logspace(1e-30, 6, 300), [0.875, 0.5]), None, [1e-300]),
    "erfc": (S.erfc, mp.erfc, _sym(_logspace(1e-30, 10.5, 300), [0.5, 0.875]), None,
             [26.5, 20]),
    "expit": (S.expit, lambda x: 1 / (1 + mp.exp(-x)), _sym(_logspace(1e-30, 100, 300)), None,
              [-700, 40]),
    "exp2": (S.exp2, lambda x: mp.mpf(2) ** x, _sym(_logspace(1e-30, 127, 300)), None,
             [1023.5, -1020]),
    "expm1": (S.expm1, mp.expm1, _sym(_logspace(1e-30, 88, 300)), None, [709, -700]),
    "airy_ai": (S.airy_ai, _airy_ref,
                _grid(RNG.uniform(-30, 30, 150), -_logspace(2.1, 1e10, 120),
                      _logspace(1e-30, 26, 100), -_logspace(1e-30, 2.1, 30),
                      [2.1, -2.1, 2.0999999, -2.0999999, -2.3381074, -1e10]),
                _airy_scale, [104, 2.0999999999999996, -2.3381074104597670, 1e-300]),
    "log1p": (S.log1p, mp.log1p, _grid(_logspace(1e-30, 1e30, 300), -_logspace(1e-30, 1, 100)),
              None, [1e300, -1 + 2.0 ** -53]),
}


def _pairs(a, b):
    a, b = np.meshgrid(_f32(a), _f32(b))
    return a.ravel(), b.ravel()


BINARY = {
    "polygamma": (lambda n, x: S.polygamma(n, x),
                  lambda n, x: (-1) ** (int(n) + 1) * mp.factorial(int(n)) * _zeta_ref(n + 1, x),
                  _pairs(np.arange(1, 11), np.concatenate([_logspace(1e-5, 1e5, 30),
                                                           RNG.uniform(0, 5, 10)]))),
    "zeta": (S.zeta, _zeta_ref,
             _pairs(np.concatenate([[1.5, 2, 3, 4.5, 10, 30], RNG.uniform(1, 8, 4)]),
                    np.concatenate([_logspace(1e-3, 1e3, 25), [1]]))),
    "igamma": (S.gammainc, lambda a, x: mp.gammainc(a, 0, x, regularized=True),
               _pairs(np.concatenate([_logspace(1e-3, 100, 14), [0.5, 1, 2, 10]]),
                      np.concatenate([_logspace(1e-3, 300, 22), [1, 10]]))),
    "igammac": (S.gammaincc, lambda a, x: mp.gammainc(a, x, mp.inf, regularized=True),
                _pairs(np.concatenate([_logspace(1e-3, 100, 14), [0.5, 1, 2, 10]]),
                       np.concatenate([_logspace(1e-3, 300, 22), [1, 10]]))),
    "xlogy": (S.xlogy, lambda x, y: x * mp.log(y) if x else mp.mpf(0),
              _pairs(np.concatenate([_logspace(1e-30, 1e30, 12), -_logspace(1e-3, 1e3, 4), [0]]),
                     np.concatenate([_logspace(1e-30, 1e30, 20), 1 + _logspace(1e-7, 1e-1, 8)]))),
    "xlog1py": (S.xlog1py, lambda x, y: x * mp.log1p(y) if x else mp.mpf(0),
                _pairs(np.concatenate([_logspace(1e-30, 1e30, 12), -_logspace(1e-3, 1e3, 4),
                                       [0]]),
                       np.concatenate([_logspace(1e-30, 1e30, 20), -_logspace(1e-8, 1, 10)]))),
}


def _hi_lo(v):
    hi = float(v)
    if math.isinf(hi) or math.isnan(hi) or v == 0:
        return hi, 0.0
    return hi, float(v - hi)


_AT_POLES = {"lgamma": mp.inf}   # what a function is where mpmath raises (a pole)


def _exact(name, ref, *args):
    try:
        return ref(*args)
    except (ValueError, ZeroDivisionError):
        return _AT_POLES.get(name, mp.nan)


@functools.cache
def reference(name):
    """(points as a tuple of float64 arrays, exact hi, exact lo, the float64 extras'
    count at the end)."""
    if name in UNARY:
        _, ref, pts, _, extra = UNARY[name]
        x = np.concatenate([pts, np.asarray(extra, np.float64)])
        vals = [_hi_lo(_exact(name, ref, mp.mpf(float(t)))) for t in x]
        args, n_extra = (x,), len(extra)
    else:
        _, ref, (a, b) = BINARY[name]
        vals = [_hi_lo(_exact(name, ref, mp.mpf(float(s)), mp.mpf(float(t))))
                for s, t in zip(a, b)]
        args, n_extra = (a, b), 0
    hi = np.array([v[0] for v in vals])
    lo = np.array([v[1] for v in vals])
    return args, hi, lo, n_extra


def _bound(name, dtype):
    fn = (UNARY.get(name) or (getattr(S, name),))[0] if name in UNARY else \
        getattr(S, {"igamma": "gammainc", "igammac": "gammaincc"}.get(name, name))
    m = re.search(r"within (\d+) ulp \(float32\) and (\d+) ulp \(float64\)", fn.__doc__ or "")
    assert m, f"{name}: no accuracy bound in its docstring"
    assert (int(m.group(1)), int(m.group(2))) == ACCURACY[name][:2]
    return int(m.group(1) if dtype is em.float32 else m.group(2))


def _ulp_errors(name, dtype, device):
    args, hi, lo, n_extra = reference(name)
    npd = np.float32 if dtype is em.float32 else np.float64
    if dtype is em.float32 and n_extra:
        args, hi, lo = tuple(a[:-n_extra] for a in args), hi[:-n_extra], lo[:-n_extra]
    fn = UNARY[name][0] if name in UNARY else BINARY[name][0]
    if name == "polygamma":
        got = np.concatenate([em.polygamma(int(n), em.tensor(args[1][args[0] == n], dtype=dtype,
                                                             device=device)).cpu().numpy()
                              for n in np.unique(args[0])])
        order = np.concatenate([np.nonzero(args[0] == n)[0] for n in np.unique(args[0])])
        hi, lo, args = hi[order], lo[order], tuple(a[order] for a in args)
    else:
        got = fn(*(em.tensor(a, dtype=dtype, device=device) for a in args)).cpu().numpy()
    got = got.astype(np.float64)
    with np.errstate(all="ignore"):
        expected = hi.astype(npd).astype(np.float64)   # the exact value, rounded
        scale = np.abs(hi)
        if name in UNARY and UNARY[name][3] is not None:
            scale = np.abs(UNARY[name][3](args[0], hi))
        finite = np.isfinite(expected)
        tiny = np.finfo(npd).tiny
        where = ACCURACY[name][2]
        if "normal results" in where:
            finite &= np.abs(hi) >= tiny
        if "does not overflow" in where or "not overflow" in where:
            finite &= np.abs(hi) < np.finfo(npd).max
        ulp = np.spacing(np.maximum(scale, tiny).astype(npd)).astype(np.float64)
        err = np.abs((got - hi) - lo) / ulp
        if name in ("igamma", "igammac") and dtype is em.float64:
            a, x = args
            lg = np.array([float(_lgamma_ref(mp.mpf(t))) for t in a])
            err = err / (1 + np.abs(a * np.log(x) - x - lg))
    special = ~finite
    # infinities and overflow exactly: the rounded exact value
    bad = special & np.isfinite(hi) & ~np.isclose(got, expected, equal_nan=True)
    bad |= special & ~np.isfinite(hi) & ~((got == hi) | (np.isnan(got) & np.isnan(hi)))
    err = np.where(finite, err, 0.0)
    return args, got, hi, err, bad


CASES = [pytest.param(n, id=n) for n in list(UNARY) + list(BINARY)]


@pytest.mark.parametrize("dtype", [em.float32, em.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", CASES)
def test_accuracy_against_mpmath(name, dtype, device):
    args, got, hi, err, bad = _ulp_errors(name, dtype, device)
    bound = _bound(name, dtype)
    worst = int(np.argmax(err))
    at = ", ".join(f"{a[worst]!r}" for a in args)
    assert err[worst] <= bound, (f"{name} ({dtype.name}) at ({at}): {got[worst]!r}, exact "
                                 f"{hi[worst]!r}: {err[worst]:.2f} ulp > {bound}")
    assert not bad.any(), (f"{name} ({dtype.name}): wrong non-finite results at "
                           f"{[tuple(a[bad][:5]) for a in args]}: {got[bad][:5]}, exact "
                           f"{hi[bad][:5]}")


# ----------------------------------------------------------------------------- the names

# torch.special's names (PyTorch 2.13) that ember.special has, and those it leaves
TORCH_SPECIAL = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta"]


def test_torch_special_names():
    missing = [n for n in TORCH_SPECIAL if not callable(getattr(S, n, None))]
    assert missing == []
    assert sorted(n for n in S.__all__ if n not in TORCH_SPECIAL) == []
    for n in ("lgamma", "digamma", "polygamma", "mvlgamma", "i0", "igamma", "igammac",
              "erfinv", "sinc", "logit", "frexp"):
        assert callable(getattr(em, n)), n
        assert callable(getattr(em.Tensor, n)), f"Tensor.{n}"
        if n != "frexp":
            assert callable(getattr(em.Tensor, n + "_")), f"Tensor.{n}_"
    assert S.psi is S.digamma and S.gammaln is em.lgamma and S.expit is em.sigmoid


def test_the_docstrings_state_the_bounds():
    for name in ACCURACY:
        _bound(name, em.float32)


# ----------------------------------------------------------------------------- values

def test_values_pytorch_documents(device):
    t = lambda v: em.tensor(v, dtype=em.float32, device=device)   # noqa: E731
    inf, nan = math.inf, math.nan
    cases = [
        (em.digamma(t([0.0, -0.0, -1.0, -2.0])), [-inf, inf, nan, nan]),
        (em.lgamma(t([0.0, -1.0, inf, -inf])), [inf, inf, inf, inf]),
        (em.erfinv(t([1.0, -1.0, 0.0, 2.0])), [inf, -inf, 0.0, nan]),
        (S.ndtri(t([0.0, 1.0, 0.5, -0.1])), [-inf, inf, 0.0, nan]),
        (S.entr(t([0.0, -1.0, 1.0])), [0.0, -inf, -0.0]),
        (S.xlog1py(t([0.0, 0.0, 2.0]), t([-2.0, nan, 0.0])), [0.0, nan, 0.0]),
        (S.zeta(t([1.0, 0.5, 2.0]), t([1.0, 1.0, 0.0])), [inf, nan, inf]),
        (em.igamma(t([0.0, 1.0, -1.0]), t([0.0, 0.0, 1.0])), [nan, 0.0, nan]),
        (em.igammac(t([1.0, 1.0]), t([0.0, inf])), [1.0, 0.0]),
        (S.modified_bessel_k0(t([0.0, -1.0])), [inf, nan]),
        (S.bessel_y0(t([0.0, -1.0])), [-inf, nan]),
        (em.polygamma(1, t([0.0])), [inf]),
        (em.sinc(t([0.0, 1.0, 0.5])), [1.0, 0.0, 2 / math.pi]),
        (S.i0e(t([0.0, inf])), [1.0, 0.0]),
        (S.log_ndtr(t([-inf, inf])), [-inf, 0.0]),
    ]
    for got, expected in cases:
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-6, atol=1e-7)


def test_polygamma_arguments():
    x = em.tensor([0.5, 2.0])
    assert em.polygamma(0, x).tolist() == pytest.approx(em.digamma(x).tolist())
    assert x.polygamma(2).tolist() == pytest.approx(em.polygamma(2, x).tolist())
    y = x.clone()
    assert y.polygamma_(1) is y and y.tolist() == pytest.approx(em.polygamma(1, x).tolist())
    with pytest.raises(RuntimeError, match="negative n"):
        em.polygamma(-1, x)
    with pytest.raises(TypeError, match="polygamma: n must be an integer"):
        em.polygamma(1.5, x)
    with pytest.raises(TypeError, match="polygamma"):
        em.polygamma(1, [1.0])


def test_mvlgamma_against_its_definition(device):
    x = em.tensor([[1.5, 2.25], [3.0, 10.5]], dtype=em.float64, device=device)
    for p in (1, 2, 4):
        xs = np.array([[1.5, 2.25], [3.0, 10.5]])
        if (xs <= (p - 1) / 2).any():
            continue
        expected = p * (p - 1) / 4 * math.log(math.pi) + sum(
            np.vectorize(math.lgamma)(xs - i / 2) for i in range(p))
        np.testing.assert_allclose(em.mvlgamma(x, p).cpu().numpy(), expected, rtol=1e-13)
        np.testing.assert_allclose(S.multigammaln(x, p).cpu().numpy(), expected, rtol=1e-13)
    with pytest.raises(RuntimeError, match="greater than"):
        em.mvlgamma(x, 5)
    with pytest.raises(ValueError, match="p has to be"):
        em.mvlgamma(x, 0)


@pytest.mark.parametrize("dtype", [em.float16, em.float32, em.float64], ids=lambda d: d.name)
def test_frexp_is_exact(dtype, device):
    npd = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[dtype.name]
    info = np.finfo(npd)
    vals = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-3, -7.25, float(info.max),
                     float(info.tiny), float(info.tiny) / 8, -float(info.smallest_subnormal),
                     math.inf, -math.inf, math.nan], npd)
    m, e = em.frexp(em.tensor(vals, dtype=dtype, device=device))
    em_m, em_e = np.frexp(vals)
    assert e.dtype is em.int32 and m.dtype is dtype
    np.testing.assert_array_equal(m.cpu().numpy(), em_m)
    finite = np.isfinite(vals)
    np.testing.assert_array_equal(e.cpu().numpy()[finite], em_e[finite])
    with pytest.raises(TypeError, match="frexp"):
        em.frexp(em.tensor([1, 2]))


def test_special_softmax_family_are_embers():
    x = em.tensor([[1.0, 2.0, 3.0]])
    assert S.softmax(x, 1).tolist() == em.softmax(x, 1).tolist()
    assert S.log_softmax(x, dim=-1).tolist() == em.log_softmax(x, -1).tolist()
    assert S.logsumexp(x, 1).tolist() == em.logsumexp(x, 1).tolist()
    assert S.round(em.tensor([1.2345]), decimals=2).tolist() == pytest.approx([1.23])


# ------------------------------------------------------------ the orthogonal polynomials

def _recurrence(x, n, kind):
    """p_n(x) by the defining three-term recurrence, in mpmath (n >= 1)."""
    one = mp.mpf(1)
    if kind in ("T", "U", "V", "W"):
        p, q = one, {"T": x, "U": 2 * x, "V": 2 * x - 1, "W": 2 * x + 1}[kind]
        for _ in range(1, n):
            p, q = q, 2 * x * q - p
        return q
    p, q = one, {"H": 2 * x, "He": x, "L": 1 - x, "P": x, "G": 2 * x, "Ge": x}[kind]
    for k in range(1, n):
        if kind == "H":
            p, q = q, 2 * x * q - 2 * k * p
        elif kind == "He":
            p, q = q, x * q - k * p
        elif kind == "G":           # |H_n(i y)|: all its terms added
            p, q = q, 2 * x * q + 2 * k * p
        elif kind == "Ge":
            p, q = q, x * q + k * p
        elif kind == "L":
            p, q = q, ((2 * k + 1 - x) * q - k * p) / (k + 1)
        else:
            p, q = q, ((2 * k + 1) * x * q - k * p) / (k + 1)
    return q


# name -> (kind, shifted, x points)
_PX = _sym(RNG.uniform(0, 1, 20), 1 - _logspace(1e-7, 0.5, 8), _logspace(1e-6, 0.5, 4),
           1 + _logspace(1e-7, 1, 6), [0, 1, 1.5, 3])
_PS = _grid(RNG.uniform(0, 1, 20), _logspace(1e-7, 0.5, 8), 1 - _logspace(1e-7, 0.5, 8),
            -_logspace(1e-7, 1, 4), 1 + _logspace(1e-7, 1, 4), [0, 0.5, 1, 2])
POLY = {
    "chebyshev_polynomial_t": ("T", False, _PX), "chebyshev_polynomial_u": ("U", False, _PX),
    "chebyshev_polynomial_v": ("V", False, _PX), "chebyshev_polynomial_w": ("W", False, _PX),
    "shifted_chebyshev_polynomial_t": ("T", True, _PS),
    "shifted_chebyshev_polynomial_u": ("U", True, _PS),
    "shifted_chebyshev_polynomial_v": ("V", True, _PS),
    "shifted_chebyshev_polynomial_w": ("W", True, _PS),
    "hermite_polynomial_h": ("H", False, _sym(RNG.uniform(0, 20, 30), _logspace(1e-6, 1, 6), [0])),
    "hermite_polynomial_he": ("He", False, _sym(RNG.uniform(0, 20, 30), _logspace(1e-6, 1, 6))),
    "laguerre_polynomial_l": ("L", False, _grid(RNG.uniform(0, 60, 30), _logspace(1e-6, 1, 6),
                                                -RNG.uniform(0, 10, 6))),
    "legendre_polynomial_p": ("P", False, _PX),
}
_DEGREES = [1, 2, 3, 6, 7, 8, 9, 17, 64, 301]


@functools.cache
def _poly_reference(name):
    """(x, n, exact value, its scale) over the points and degrees."""
    kind, shifted, xs = POLY[name]
    rows = []
    with mp.workdps(40):
        for n in _DEGREES:
            for x in xs:
                y = 2 * mp.mpf(float(x)) - 1 if shifted else mp.mpf(float(x))
                v = _recurrence(y, n, kind)
                if kind in ("T", "U", "V", "W", "P"):
                    inside = {"T": 1, "U": n + 1, "V": 2 * n + 1, "W": 2 * n + 1, "P": 1}[kind]
                    scale = inside if abs(y) <= 1 else abs(v)
                elif kind in ("H", "He"):
                    scale = _recurrence(abs(y), n, "G" if kind == "H" else "Ge")
                else:
                    scale = _recurrence(-abs(y), n, "L")
                rows.append((float(x), n, v, max(abs(v), scale)))
    x = np.array([r[0] for r in rows])
    n = np.array([r[1] for r in rows], np.float64)
    hi = np.array([float(r[2]) for r in rows])
    lo = np.array([float(r[2] - mp.mpf(float(r[2]))) if mp.isfinite(r[2]) else 0.0 for r in rows])
    scale = np.array([float(r[3]) for r in rows])
    return x, n, hi, lo, scale


@pytest.mark.parametrize("dtype", [em.float32, em.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(POLY))
def test_polynomial_accuracy_against_mpmath(name, dtype, device):
    x, n, hi, lo, scale = _poly_reference(name)
    npd = np.float32 if dtype is em.float32 else np.float64
    fn = getattr(S, name)
    got = fn(em.tensor(x, dtype=dtype, device=device),
             em.tensor(n, dtype=dtype, device=device)).cpu().numpy().astype(np.float64)
    f32, (c, p) = POLYNOMIAL_ULPS_OF.get(name, POLYNOMIAL_ULPS)
    m = re.search(r"within (\d+) ulp \(float32\) and (\d+ )?n(\^\d+)? ulp \(float64\)",
                  fn.__doc__)
    assert m, fn.__doc__
    assert (int(m.group(1)), int(m.group(2) or 1), int((m.group(3) or "^1")[1:])) == (f32, c, p)
    bound = np.full(n.shape, float(f32)) if dtype is em.float32 else c * n ** p
    with np.errstate(all="ignore"):
        normal = np.isfinite(scale.astype(npd)) & (np.abs(hi) < np.finfo(npd).max)
        ulp = np.spacing(scale.astype(npd)).astype(np.float64)
        err = np.where(normal, np.abs((got - hi) - lo) / ulp, 0.0)
    worst = int(np.argmax(err / bound))
    assert err[worst] <= bound[worst], (f"{name} ({dtype.name}) at x={x[worst]!r}, "
                                        f"n={n[worst]:g}: {got[worst]!r}, exact {hi[worst]!r}: "
                                        f"{err[worst]:.2f} ulp of {scale[worst]:.3g} > "
                                        f"{bound[worst]:g}")
    # where the value itself overflows: inf of its sign
    over = ~normal & np.isfinite(hi) & (np.abs(hi) >= np.finfo(npd).max)
    assert (got[over] == np.sign(hi[over]) * np.inf).all()


def test_polynomial_conventions(device):
    t = lambda v, dt=em.float64: em.tensor(v, dtype=dt, device=device)   # noqa: E731
    nan, inf = math.nan, math.inf
    T, U, V, W = (S.chebyshev_polynomial_t, S.chebyshev_polynomial_u,
                  S.chebyshev_polynomial_v, S.chebyshev_polynomial_w)
    cases = [
        # n truncated; n < 0 gives 0, n = 0 gives 1 whatever x (PyTorch's order)
        (T(t([0.5, 0.5, 0.5, nan, 0.5]), t([3.7, -1.0, -0.5, 0.0, nan])),
         [-1.0, 0.0, 1.0, 1.0, nan]),
        (S.legendre_polynomial_p(0.5, t([3.7])), [-0.4375]),   # as torch's example
        (S.legendre_polynomial_p(t([0.5]), 3.7), [-0.4375]),
        (S.hermite_polynomial_h(t([0.0, 1.0]), t([nan, -1.0])), [nan, 0.0]),
        # |x| = 1, for small n (the recurrence) and large n (the closed forms)
        (T(t([1.0, -1.0, -1.0]), t([5.0, 5.0, 300.0])), [1.0, -1.0, 1.0]),
        (U(t([1.0, -1.0, -1.0]), t([5.0, 5.0, 301.0])), [6.0, -6.0, -302.0]),
        (V(t([1.0, -1.0, -1.0]), t([9.0, 9.0, 300.0])), [1.0, -19.0, 601.0]),
        (W(t([1.0, -1.0, -1.0]), t([9.0, 9.0, 300.0])), [19.0, -1.0, 1.0]),
        (S.shifted_chebyshev_polynomial_t(t([1.0, 0.0, 0.0]), t([9.0, 9.0, 8.0])),
         [1.0, -1.0, 1.0]),
        # infinities: the limits (PyTorch's recurrence gives NaN), odd Hermite at 0 is 0
        (T(t([inf, -inf, -inf]), t([9.0, 9.0, 10.0])), [inf, -inf, inf]),
        (S.hermite_polynomial_h(t([0.0, 0.0]), t([1001.0, 3.0])), [0.0, 0.0]),
        (S.hermite_polynomial_he(t([0.0]), t([4.0])), [3.0]),
        (S.laguerre_polynomial_l(t([0.0, 1.0]), t([50.0, 2.0])), [1.0, -0.5]),
    ]
    for got, expected in cases:
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-13)
    # float32 keeps its dtype, an integer n promotes as the rows do, `n=` by keyword
    r = T(t([0.5], em.float32), n=em.tensor([3], device=device))
    assert r.dtype is em.float32 and r.tolist() == [-1.0]
    assert S.chebyshev_polynomial_t is em.special_chebyshev_polynomial_t
    assert sorted(POLY) == sorted(POLYNOMIALS)


def test_polynomials_of_huge_n_do_not_hang(device):
    x = em.tensor([0.3, -0.999, 1.0000001, 5.0], dtype=em.float64, device=device)
    for name in POLY:
        fn = getattr(S, name)
        if name in ("laguerre_polynomial_l", "legendre_polynomial_p"):
            with pytest.raises(ValueError, match=f"{name}: n = 1e\\+18 is larger than "
                                                 f"{POLYNOMIAL_NMAX}"):
                fn(x, 1e18)
            with pytest.raises(ValueError, match=name):
                fn(x, em.tensor([2.0, 3.0, 1e18, 1.0], device=device))
            assert np.isfinite(fn(x[:1], POLYNOMIAL_NMAX).cpu().numpy()).all()   # |p_n| <= 1
            continue
        r = fn(x, 1e18).cpu().numpy()   # closed forms, or overflow within a few hundred steps
        if name.startswith("chebyshev"):
            assert np.isfinite(r[:2]).all() and (np.abs(r[:2]) <= 2e18 + 1).all()
            assert np.isinf(r[2:]).all()


def test_airy_and_polynomials_are_not_differentiable():
    x = em.tensor([0.5, 1.5], requires_grad=True)
    for y in (S.airy_ai(x), S.chebyshev_polynomial_t(x, 3), S.hermite_polynomial_h(x, 2)):
        assert not y.requires_grad
        with pytest.raises(RuntimeError):
            y.sum().backward()


def test_airy_values(device):
    t = lambda v: em.tensor(v, dtype=em.float64, device=device)   # noqa: E731
    got = S.airy_ai(t([0.0, math.inf, -math.inf, math.nan, 200.0])).cpu().numpy()
    np.testing.assert_array_equal(got, [0.3550280538878172, 0.0, math.nan, math.nan, 0.0])
    # torch.special.airy_ai's values (PyTorch 2.13, float64)
    np.testing.assert_allclose(S.airy_ai(t([-3.0, 2.0])).cpu().numpy(),
                               [-3.7881e-01, 3.4924e-02], rtol=1e-4)
