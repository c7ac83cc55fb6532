"""The orthogonal polynomials of ember.special (torch.special's chebyshev_polynomial_t/u/v/w,
their shifted kinds, hermite_polynomial_h/he, laguerre_polynomial_l,
legendre_polynomial_p): against mpmath in 30 digits on every device, float32 and
float64, within the bound each docstring states (ulps of a scale: near a root only
absolute accuracy is possible), and PyTorch's edge cases."""
from __future__ import annotations

import re

import mpmath as mp
import numpy as np
import pytest

import ember as em
import ember.special as S
from ember.ops.special import POLYNOMIAL_ACCURACY, POLYNOMIAL_ULPS

mp.mp.dps = 30
RNG = np.random.default_rng(1202)
NS = [0, 1, 2, 3, 5, 6, 7, 8, 9, 12, 16, 25, 40, 64]


def _U(n, x):
    return mp.chebyu(n, x) if n >= 0 else mp.mpf(0)


def _L(n, x):
    """sum_k (-1)^k C(n, k) x^k / k! (mpmath's hypergeometric form fails at its roots)."""
    return mp.fsum((-1) ** k * mp.binomial(n, k) * x ** k / mp.factorial(k)
                   for k in range(n + 1))


def _He(n, x):
    return mp.hermite(n, x / mp.sqrt(2)) / mp.sqrt(2) ** n


# name -> (exact p_n(x), the scale its error is measured in, the points x)
_INSIDE = np.concatenate([RNG.uniform(-1, 1, 24), [-1.0, 1.0, 0.0, 0.999, -0.9999]])
_OUTSIDE = np.array([-2.0, -1.25, 1.1, 1.5, 2.0])
_CHEB_X = np.concatenate([_INSIDE, _OUTSIDE])


def _cheb_scale(env):
    return lambda n, x, v: mp.mpf(env(n)) if abs(x) <= 1 else abs(v)


REFS = {
    "chebyshev_polynomial_t": (lambda n, x: mp.chebyt(n, x), _cheb_scale(lambda n: 1), _CHEB_X),
    "chebyshev_polynomial_u": (lambda n, x: _U(n, x), _cheb_scale(lambda n: n + 1), _CHEB_X),
    "chebyshev_polynomial_v": (lambda n, x: _U(n, x) - _U(n - 1, x) if n else mp.mpf(1),
                               _cheb_scale(lambda n: 2 * n + 1), _CHEB_X),
    "chebyshev_polynomial_w": (lambda n, x: _U(n, x) + _U(n - 1, x) if n else mp.mpf(1),
                               _cheb_scale(lambda n: 2 * n + 1), _CHEB_X),
    "legendre_polynomial_p": (lambda n, x: mp.legendre(n, x), _cheb_scale(lambda n: 1), _CHEB_X),
    "hermite_polynomial_h": (lambda n, x: mp.hermite(n, x),
                             lambda n, x, v: abs(mp.hermite(n, 1j * abs(x))),
                             np.concatenate([RNG.uniform(-6, 6, 24), [0.0, 0.5, -3.0]])),
    "hermite_polynomial_he": (_He, lambda n, x, v: abs(_He(n, 1j * abs(x))),
                              np.concatenate([RNG.uniform(-8, 8, 24), [0.0, 1.0, -2.0]])),
    "laguerre_polynomial_l": (_L, lambda n, x, v: abs(_L(n, -abs(x))),
                              np.concatenate([RNG.uniform(0, 30, 24), [0.0, 1.0, -2.0, -0.5]])),
}
for _kind in "tuvw":
    _f, _s, _ = REFS[f"chebyshev_polynomial_{_kind}"]
    REFS[f"shifted_chebyshev_polynomial_{_kind}"] = (
        (lambda f: lambda n, x: f(n, 2 * x - 1))(_f),
        (lambda s: lambda n, x, v: s(n, 2 * x - 1, v))(_s),
        (_CHEB_X + 1) / 2)


def _points(name):
    exact, scale, xs = REFS[name]
    xs = np.unique(np.asarray(xs, np.float64).astype(np.float32).astype(np.float64))
    n = np.repeat(np.array(NS, np.float64), len(xs))
    x = np.tile(xs, len(NS))
    vals = [exact(int(k), mp.mpf(float(t))) for k, t in zip(n, x)]
    hi = np.array([float(v) for v in vals])
    lo = np.array([float(v - float(v)) if np.isfinite(float(v)) else 0.0 for v in vals])
    sc = np.array([float(max(scale(int(k), mp.mpf(float(t)), v), abs(v)))
                   for k, t, v in zip(n, x, vals)])
    return x, n, hi, lo, sc


_CACHE = {}


def test_every_torch_polynomial_is_here_and_states_its_bound():
    assert set(POLYNOMIAL_ACCURACY) == set(REFS)
    for name in REFS:
        doc = getattr(S, name).__doc__
        m = re.search(r"within (\d+) n \+ 8 ulp \(float32\) and (\d+) n \+ 8 ulp \(float64\)",
                      doc)
        assert m and (int(m.group(1)), int(m.group(2))) == POLYNOMIAL_ULPS, name


@pytest.mark.parametrize("dtype", [em.float32, em.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(REFS))
def test_polynomials_against_mpmath(name, dtype, device):
    if name not in _CACHE:
        _CACHE[name] = _points(name)
    x, n, hi, lo, sc = _CACHE[name]
    npd = np.float32 if dtype is em.float32 else np.float64
    got = getattr(S, name)(em.tensor(x, dtype=dtype, device=device),
                           em.tensor(n, dtype=dtype, device=device)).cpu().numpy()
    got = got.astype(np.float64)
    big = np.finfo(npd).max
    finite = (np.abs(hi) < big) & (sc < big)
    per_n = POLYNOMIAL_ULPS[0 if dtype is em.float32 else 1]
    ulp = np.spacing(np.maximum(sc, np.finfo(npd).tiny).astype(npd)).astype(np.float64)
    with np.errstate(all="ignore"):
        err = np.where(finite, np.abs((got - hi) - lo) / ulp, 0.0)
    bound = per_n * n + 8
    worst = int(np.argmax(err / bound))
    assert err[worst] <= bound[worst], (
        f"{name} ({dtype.name}) at x={x[worst]!r}, n={n[worst]:g}: {got[worst]!r}, exact "
        f"{hi[worst]!r}: {err[worst]:.1f} ulp of {sc[worst]:.3g} > {bound[worst]:g}")
    # overflow: inf of the right sign
    over = ~finite & np.isfinite(sc) & (np.abs(hi) >= big)
    assert (np.isinf(got[over]) & (np.sign(got[over]) == np.sign(hi[over]))).all()


def test_values_and_edge_cases_as_pytorch():
    t = lambda v: em.tensor(v, dtype=em.float64)  # noqa: E731
    # (PyTorch 2.13's results)
    assert S.chebyshev_polynomial_t(t([0.3, -1.0, 1.0, 2.0]), 3).tolist() == \
        pytest.approx([-0.792, -1.0, 1.0, 26.0], rel=1e-14)
    assert S.legendre_polynomial_p(t([-1.0, -1.0]), t([1.0, 3.0])).tolist() == [-1.0, -1.0]
    assert S.chebyshev_polynomial_t(t([0.5]), 2.7).tolist() == pytest.approx([-0.5])  # n -> 2
    assert S.hermite_polynomial_h(t([0.5, 2.0]), 5).tolist() == [41.0, -16.0]
    np.testing.assert_allclose(S.laguerre_polynomial_l(t([0.5, 0.0]), 4).numpy(),
                               [0.3307291666666667 * -1, 1.0], rtol=1e-12)
    for name in REFS:
        f = getattr(S, name)
        assert f(t([0.3]), -1).tolist() == [0.0], name           # n < 0
        assert np.isnan(f(t([float("nan")]), 2).item()), name
        assert np.isnan(f(t([0.3]), float("nan")).item()), name
        assert f(t([0.3]), 0).tolist() == [1.0], name
    # integer inputs promote to the default float dtype; broadcasting of n
    r = S.chebyshev_polynomial_u(em.tensor([[1], [2]]), em.tensor([0, 1, 2]))
    assert r.dtype is em.float32 and r.tolist() == [[1, 2, 3], [1, 4, 15]]


def test_not_differentiable_as_in_pytorch():
    x = em.tensor([0.5, 0.25], dtype=em.float64, requires_grad=True)
    y = S.hermite_polynomial_he(x, 3)
    assert not y.requires_grad
