"""ember.distributions against closed forms written here (math and NumPy; no SciPy):
log_prob, cdf/icdf, entropy, mean, mode, variance; sample moments for fixed seeds;
reparameterised gradients against analytic derivatives (and gradcheck in float64); KL
divergences against closed forms or numerical integration; validation errors."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
import ember.distributions as D
from ember.autograd import gradcheck
from ember.distributions import _special, constraints
from ember.distributions._linalg import cholesky, solve_lower


def T(a, grad=False, dtype=np.float64):
    t = em.from_numpy(np.array(a, dtype=dtype, order="C"))
    return t.requires_grad_() if grad else t


def N(t):
    return t.detach().numpy()


def close(got, want, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(N(got) if isinstance(got, em.Tensor) else got, want,
                               rtol=rtol, atol=atol)


def np_digamma(x):
    """Reference digamma: central difference of math.lgamma (independent of ember's)."""
    def one(v):
        h = 1e-5 * min(1.0, v)
        return (math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h)
    return np.vectorize(one)(x)


LG = np.vectorize(math.lgamma)


def trapz(y, x):
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)


# special functions ----------------------------------------------------------------------

def test_lgamma_digamma_erfinv_match_references():
    x = np.array([1e-3, 0.3, 1.0, 2.5, 7.99, 8.0, 30.0, 1e4])
    close(_special.lgamma(T(x)), LG(x), rtol=1e-12, atol=1e-9)
    close(_special.digamma(T(x)), np_digamma(x), rtol=1e-7, atol=1e-5)
    close(_special.np_digamma(x), np_digamma(x), rtol=1e-7, atol=1e-5)
    u = np.array([-0.999, -0.5, 0.0, 0.3, 0.9, 0.99999])
    y = N(_special.erfinv(T(u)))
    close(np.vectorize(math.erf)(y), u, rtol=1e-13, atol=1e-14)
    ends = N(_special.erfinv(T([-1.0, 1.0, 1.5])))
    assert ends[0] == -math.inf and ends[1] == math.inf and math.isnan(ends[2])


def test_special_functions_gradcheck():
    x = T([0.4, 1.7, 9.5], grad=True)
    assert gradcheck(_special.lgamma, (x,))
    assert gradcheck(_special.digamma, (x,))
    u = T([-0.7, 0.1, 0.95], grad=True)
    assert gradcheck(_special.erfinv, (u,))
    # lgamma' = digamma
    x2 = T([0.4, 1.7, 9.5], grad=True)
    _special.lgamma(x2).sum().backward()
    close(x2.grad, np_digamma([0.4, 1.7, 9.5]), rtol=1e-7)


def test_cholesky_and_triangular_solve():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 4))
    s = a @ a.transpose(0, 2, 1) + 0.5 * np.eye(4)
    L = cholesky(T(s))
    close(L, np.linalg.cholesky(s), rtol=1e-10, atol=1e-12)
    b = rng.standard_normal((3, 4, 2))
    close(solve_lower(L, T(b)), np.linalg.solve(np.linalg.cholesky(s), b), rtol=1e-9)
    with pytest.raises(ValueError, match="not positive-definite .the leading minor of order "
                                         "2 is not positive-definite"):
        cholesky(T([[1.0, 2.0], [2.0, 1.0]]))
    x = T(s[0], grad=True)
    assert gradcheck(lambda m: cholesky((m + m.mT) / 2), (x,))


# Normal -----------------------------------------------------------------------------------

def test_normal_closed_forms():
    loc, scale = np.array([0.0, 1.5, -2.0]), np.array([1.0, 0.5, 3.0])
    d = D.Normal(T(loc), T(scale))
    x = np.array([0.3, 1.0, -7.0])
    want = -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi)
    close(d.log_prob(T(x)), want)
    close(d.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale))
    close(d.mean, loc)
    close(d.mode, loc)
    close(d.variance, scale ** 2)
    close(d.stddev, scale)
    close(d.cdf(T(x)), [0.5 * (1 + math.erf((a - m) / (s * math.sqrt(2))))
                        for a, m, s in zip(x, loc, scale)])
    close(D.Normal(0.0, 1.0).icdf(T([0.975, 0.5, 0.025])),
          [1.959963984540054, 0.0, -1.959963984540054], rtol=1e-12, atol=1e-14)
    p = T([0.1, 0.6, 0.99])
    close(d.cdf(d.icdf(p)), N(p), rtol=1e-12)
    assert d.batch_shape == em.Size([3]) and d.event_shape == em.Size([])
    assert D.Normal(0.0, 1.0).batch_shape == em.Size([])


def test_normal_samples_and_rsample_gradient():
    em.manual_seed(0)
    loc, scale = T([1.0, -2.0], grad=True), T([0.5, 2.0], grad=True)
    d = D.Normal(loc, scale)
    x = d.rsample((20000,))
    assert x.shape == em.Size([20000, 2]) and d.sample((2, 3)).shape == em.Size([2, 3, 2])
    close(N(x).mean(0), [1.0, -2.0], rtol=0, atol=0.05)
    close(N(x).std(0), [0.5, 2.0], rtol=0.03)
    x.sum().backward()
    close(loc.grad, [20000.0, 20000.0])                         # dx/dloc = 1
    close(scale.grad, ((N(x) - [1.0, -2.0]) / [0.5, 2.0]).sum(0), rtol=1e-8)  # = eps
    assert not d.sample().requires_grad
    assert gradcheck(lambda m, s: D.Normal(m, s).log_prob(T([0.3, 0.1])),
                     (T([0.2, 1.0], grad=True), T([0.7, 1.3], grad=True)))
    assert gradcheck(lambda s: D.Normal(0.0, 1.0).icdf(s), (T([0.2, 0.9], grad=True),))


# Uniform ----------------------------------------------------------------------------------

def test_uniform():
    d = D.Uniform(T([0.0, -1.0]), T([2.0, 3.0]))
    close(d.log_prob(T([1.0, 2.9])), [-math.log(2), -math.log(4)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert N(D.Uniform(T([0.0]), T([1.0]), validate_args=False)
                 .log_prob(T([1.5])))[0] == -math.inf
    close(d.entropy(), [math.log(2), math.log(4)])
    close(d.mean, [1.0, 1.0])
    close(d.variance, [4 / 12, 16 / 12])
    close(d.cdf(T([0.5, 0.0])), [0.25, 0.25])
    close(d.icdf(T([0.25, 0.5])), [0.5, 1.0])
    assert np.isnan(N(d.mode)).all()
    em.manual_seed(1)
    low, high = T([0.0], grad=True), T([2.0], grad=True)
    x = D.Uniform(low, high).rsample((10000,))
    assert N(x).min() >= 0 and N(x).max() < 2
    close(N(x).mean(), 1.0, rtol=0, atol=0.03)
    x.sum().backward()
    u = N(x)[:, 0] / 2
    close(low.grad, [(1 - u).sum()], rtol=1e-8)
    close(high.grad, [u.sum()], rtol=1e-8)
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(1.0, 1.0)
    with pytest.raises(ValueError, match=r"Expected value argument .* to be within the "
                                         r"support \(Interval"):
        d.log_prob(T([3.0, 0.0]))


# Bernoulli --------------------------------------------------------------------------------

def test_bernoulli():
    p = np.array([0.2, 0.5, 0.9])
    for d in (D.Bernoulli(T(p)), D.Bernoulli(logits=T(np.log(p / (1 - p))))):
        close(d.probs, p, rtol=1e-7)
        close(d.logits, np.log(p / (1 - p)), rtol=1e-6)
        close(d.log_prob(T([1.0, 0.0, 0.0])), np.log([0.2, 0.5, 0.1]), rtol=1e-7)
        close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-7)
        close(d.mean, p, rtol=1e-7)
        close(d.variance, p * (1 - p), rtol=1e-7)
    m = N(D.Bernoulli(T(p)).mode)
    assert m[0] == 0 and np.isnan(m[1]) and m[2] == 1
    em.manual_seed(2)
    s = D.Bernoulli(T(p)).sample((20000,))
    assert set(np.unique(N(s))) <= {0.0, 1.0} and s.shape == em.Size([20000, 3])
    close(N(s).mean(0), p, rtol=0, atol=0.015)
    close(D.Bernoulli(T(p)).enumerate_support(), [[0.0] * 3, [1.0] * 3])
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, "
                                         "but not both"):
        D.Bernoulli(0.5, logits=0.0)
    with pytest.raises(ValueError, match="Expected parameter probs .* to satisfy the "
                                         "constraint Interval"):
        D.Bernoulli(T([1.5]))
    assert gradcheck(lambda lg: D.Bernoulli(logits=lg).log_prob(T([1.0, 0.0])),
                     (T([0.3, -1.2], grad=True),))


# Categorical / OneHotCategorical --------------------------------------------------------

def test_categorical():
    probs = np.array([[1.0, 2.0, 7.0], [3.0, 3.0, 4.0]])
    pn = probs / probs.sum(-1, keepdims=True)
    for d in (D.Categorical(T(probs)), D.Categorical(logits=T(np.log(probs) + 5))):
        close(d.probs, pn, rtol=1e-7)
        close(d.log_prob(T([2, 0], dtype=np.int64)), np.log([pn[0, 2], pn[1, 0]]), rtol=1e-7)
        close(d.entropy(), -(pn * np.log(pn)).sum(-1), rtol=1e-7)
        assert d.batch_shape == em.Size([2]) and d.event_shape == em.Size([])
    d = D.Categorical(T(probs))
    close(d.mode, [2, 2])
    assert np.isnan(N(d.mean)).all()
    # log_prob broadcasts a sample dimension
    v = T([[0, 1], [2, 2], [1, 0]], dtype=np.int64)
    close(d.log_prob(v), np.log(pn[[0, 1], N(v)]), rtol=1e-7)
    em.manual_seed(3)
    s = d.sample((30000,))
    assert s.dtype == em.int64 and s.shape == em.Size([30000, 2])
    freq = np.stack([(N(s) == k).mean(0) for k in range(3)], -1)
    close(freq, pn, rtol=0, atol=0.01)
    close(d.enumerate_support(), [[0, 0], [1, 1], [2, 2]])
    assert d.enumerate_support(expand=False).shape == em.Size([3, 1])
    with pytest.raises(ValueError, match="to be within the support .IntegerInterval"
                                         ".lower_bound=0, upper_bound=2"):
        d.log_prob(T([3, 0], dtype=np.int64))
    assert gradcheck(lambda lg: D.Categorical(logits=lg).log_prob(T([1, 2], dtype=np.int64)),
                     (T([[0.3, -1.2, 0.5], [1.0, 0.0, 2.0]], grad=True),))
    assert gradcheck(lambda lg: D.Categorical(logits=lg).entropy(),
                     (T([[0.3, -1.2, 0.5]], grad=True),))


def test_one_hot_categorical():
    p = np.array([0.1, 0.6, 0.3])
    d = D.OneHotCategorical(T(p))
    assert d.event_shape == em.Size([3]) and d.batch_shape == em.Size([])
    close(d.log_prob(T([0.0, 1.0, 0.0])), math.log(0.6), rtol=1e-7)
    close(d.entropy(), -(p * np.log(p)).sum(), rtol=1e-7)
    close(d.mean, p, rtol=1e-7)
    close(d.variance, p * (1 - p), rtol=1e-7)
    close(d.mode, [0.0, 1.0, 0.0])
    em.manual_seed(4)
    s = N(d.sample((20000,)))
    assert s.shape == (20000, 3) and (s.sum(-1) == 1).all()
    close(s.mean(0), p, rtol=0, atol=0.015)
    close(d.enumerate_support(), np.eye(3))
    with pytest.raises(ValueError, match=r"to be within the support \(OneHot\(\)\)"):
        d.log_prob(T([1.0, 1.0, 0.0]))


# Gamma ------------------------------------------------------------------------------------

def gamma_logpdf(x, a, r):
    return a * np.log(r) + (a - 1) * np.log(x) - r * x - LG(a)


def gamma_cdf(x, a):
    """P(a, x) by its series in float64 (math.lgamma), the test's own."""
    total, term, n = 1.0, 1.0, 0
    while True:
        n += 1
        term *= x / (a + n)
        total += term
        if term < 1e-17 * total and a + n > x:
            break
    return math.exp(a * math.log(x) - x - math.lgamma(a + 1)) * total


def test_gamma_closed_forms():
    a, r = np.array([0.5, 2.0, 7.5]), np.array([1.0, 3.0, 0.5])
    d = D.Gamma(T(a), T(r))
    x = np.array([0.2, 1.3, 20.0])
    close(d.log_prob(T(x)), gamma_logpdf(x, a, r), rtol=1e-10)
    close(d.entropy(), a - np.log(r) + LG(a) + (1 - a) * np_digamma(a), rtol=1e-7)
    close(d.mean, a / r)
    close(d.variance, a / r ** 2)
    close(d.mode, np.maximum((a - 1) / r, 0))
    close(d.cdf(T(x)), [gamma_cdf(xi * ri, ai) for xi, ai, ri in zip(x, a, r)], rtol=1e-9)
    # both branches (series below a + 1, continued fraction above), far tails included
    a2 = np.array([3.0, 3.0, 50.0, 50.0, 0.5, 200.0, 2.0])
    x2 = np.array([1.0, 9.0, 40.0, 70.0, 30.0, 260.0, 800.0])
    want = [gamma_cdf(xi, ai) if xi < 600 else 1.0 for xi, ai in zip(x2, a2)]
    close(D.Gamma(T(a2), 1.0).cdf(T(x2)), want, rtol=1e-10, atol=1e-14)
    assert gradcheck(lambda v: D.Gamma(T([3.0, 50.0]), 1.0).cdf(v), (T([2.0, 70.0], grad=True),))
    assert gradcheck(lambda c, rr: D.Gamma(c, rr).log_prob(T(x)),
                     (T(a, grad=True), T(r, grad=True)))


@pytest.mark.parametrize("a", [0.3, 1.0, 5.5, 200.0])
def test_gamma_sample_moments(a):
    em.manual_seed(5)
    x = N(D.Gamma(T([a]), T([2.0])).sample((40000,)))[:, 0]
    assert (x > 0).all()
    mean, var = a / 2, a / 4
    sd_mean = math.sqrt(var / len(x))
    assert abs(x.mean() - mean) < 5 * sd_mean, (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.05, (x.var(), var)


def implicit_reference(x, a, h=1e-6):
    """dx/da = -(dF/da) / p(x): dF/da by a central difference of the test's own series
    CDF, p(x) the closed-form density (independent of ember's series)."""
    dF = (gamma_cdf(x, a + h) - gamma_cdf(x, a - h)) / (2 * h)
    return -dF / math.exp(gamma_logpdf(x, a, 1.0))


@pytest.mark.parametrize("a", [0.2, 1.0, 4.0, 60.0])
def test_gamma_rsample_gradient_is_the_implicit_one(a):
    em.manual_seed(6)
    conc = T([a] * 6, grad=True)
    x = D.Gamma(conc, 1.0).rsample()
    x.sum().backward()
    want = [implicit_reference(xi, a) for xi in N(x)]
    close(conc.grad, want, rtol=2e-5, atol=1e-9)


def test_gamma_rsample_gradient_large_concentration_and_rate():
    # the Wilson-Hilferty branch (a > 1e4): dx/da at fixed CDF is close to
    # (x + a) / (2a) + O(1/a) (x = a + sqrt(a) z)
    em.manual_seed(7)
    conc = T([2e4] * 4, grad=True)
    x = D.Gamma(conc, 1.0).rsample()
    x.sum().backward()
    close(conc.grad, (N(x) + 2e4) / (2 * 2e4), rtol=2e-4)
    # the rate: x = g / rate, so dx/drate = -x / rate; and E[dx/dc] = 1 / rate
    conc, rate = T([3.0], grad=True), T([2.0], grad=True)
    x = D.Gamma(conc, rate).rsample((20000,))
    x.mean().backward()
    close(rate.grad, [-N(x).mean() / 2.0], rtol=1e-6)
    close(conc.grad, [0.5], rtol=0.03)


def test_gamma_rejects_bad_parameters_and_values():
    with pytest.raises(ValueError, match=r"Expected parameter concentration \(Tensor of "
                                         r"shape \(2,\)\) of distribution Gamma\(concentration"
                                         r": .*\) to satisfy the constraint GreaterThan"
                                         r"\(lower_bound=0.0\), but found invalid values"):
        D.Gamma(T([1.0, -1.0]), T([1.0, 1.0]))
    with pytest.raises(ValueError, match="to be within the support .GreaterThanEq"):
        D.Gamma(2.0, 1.0).log_prob(T(-1.0))
    D.Gamma(T([1.0, -1.0]), T([1.0, 1.0]), validate_args=False)     # allowed


# Beta, Dirichlet ----------------------------------------------------------------------------

def lbeta(a, b):
    return LG(a) + LG(b) - LG(a + b)


def test_beta_closed_forms_and_samples():
    a, b = np.array([0.5, 2.0, 5.0]), np.array([0.5, 3.0, 1.5])
    d = D.Beta(T(a), T(b))
    x = np.array([0.1, 0.4, 0.95])
    close(d.log_prob(T(x)), (a - 1) * np.log(x) + (b - 1) * np.log(1 - x) - lbeta(a, b),
          rtol=1e-10)
    ent = lbeta(a, b) - (a - 1) * np_digamma(a) - (b - 1) * np_digamma(b) + \
        (a + b - 2) * np_digamma(a + b)
    close(d.entropy(), ent, rtol=1e-6, atol=1e-7)
    close(d.mean, a / (a + b))
    close(d.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    close(D.Beta(T([2.0]), T([3.0])).mode, [1 / 3])
    em.manual_seed(8)
    s = N(d.sample((40000,)))
    assert ((s > 0) & (s < 1)).all()
    close(s.mean(0), a / (a + b), rtol=0, atol=0.01)
    close(s.var(0), a * b / ((a + b) ** 2 * (a + b + 1)), rtol=0.05)
    # reparameterised: d E[X] / da = b / (a + b)^2
    c1, c0 = T([2.0], grad=True), T([3.0], grad=True)
    D.Beta(c1, c0).rsample((40000,)).mean().backward()
    close(c1.grad, [3.0 / 25], rtol=0.05)
    close(c0.grad, [-2.0 / 25], rtol=0.05)
    assert gradcheck(lambda p, q: D.Beta(p, q).log_prob(T([0.3])),
                     (T([1.5], grad=True), T([2.5], grad=True)))
    assert repr(D.Beta(2.0, 3.0)) == "Beta(concentration1: 2.0, concentration0: 3.0)"


def test_dirichlet():
    c = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])
    d = D.Dirichlet(T(c))
    assert d.batch_shape == em.Size([2]) and d.event_shape == em.Size([3])
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    want = ((c - 1) * np.log(x)).sum(-1) + LG(c.sum(-1)) - LG(c).sum(-1)
    close(d.log_prob(T(x)), want, rtol=1e-10)
    a0 = c.sum(-1)
    ent = LG(c).sum(-1) - LG(a0) - (3 - a0) * np_digamma(a0) - \
        ((c - 1) * np_digamma(c)).sum(-1)
    close(d.entropy(), ent, rtol=1e-6)
    close(d.mean, c / a0[:, None])
    close(d.variance, c * (a0[:, None] - c) / (a0[:, None] ** 2 * (a0[:, None] + 1)))
    close(d.mode[0], [0.0, 1 / 3, 2 / 3])
    em.manual_seed(9)
    s = N(d.sample((30000,)))
    close(s.sum(-1), np.ones((30000, 2)), rtol=1e-12)
    close(s.mean(0), c / a0[:, None], rtol=0, atol=0.01)
    conc = T([1.0, 2.0, 3.0], grad=True)
    D.Dirichlet(conc).rsample((40000,))[..., 0].mean().backward()
    # d E[X_0] / d c = (delta_0j a0 - c_0) / a0^2
    close(conc.grad, [(6 - 1) / 36, -1 / 36, -1 / 36], rtol=0.1, atol=0.003)
    with pytest.raises(ValueError, match="to be within the support .Simplex"):
        d.log_prob(T([[0.2, 0.3, 0.6], [0.1, 0.1, 0.8]]))


# MultivariateNormal ---------------------------------------------------------------------------

def mvn_ref(x, mu, S):
    n = len(mu)
    d = x - mu
    return -0.5 * (n * math.log(2 * math.pi) + np.linalg.slogdet(S)[1] +
                   d @ np.linalg.solve(S, d))


def test_multivariate_normal_parameterisations_agree():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    S = a @ a.T + np.eye(3)
    mu = np.array([1.0, -1.0, 0.5])
    x = np.array([0.3, 0.2, -1.0])
    L = np.linalg.cholesky(S)
    ds = [D.MultivariateNormal(T(mu), covariance_matrix=T(S)),
          D.MultivariateNormal(T(mu), precision_matrix=T(np.linalg.inv(S))),
          D.MultivariateNormal(T(mu), scale_tril=T(L))]
    for d in ds:
        close(d.log_prob(T(x)), mvn_ref(x, mu, S), rtol=1e-10)
        close(d.entropy(), 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(S)[1]),
              rtol=1e-10)
        close(d.covariance_matrix, S, rtol=1e-9)
        close(d.precision_matrix, np.linalg.inv(S), rtol=1e-8)
        close(d.scale_tril, L, rtol=1e-9)
        close(d.variance, np.diag(S), rtol=1e-10)
        close(d.mean, mu)
        assert d.event_shape == em.Size([3]) and d.batch_shape == em.Size([])
    # batch broadcasting: loc (2, 3) with one covariance
    d = D.MultivariateNormal(T(np.stack([mu, -mu])), covariance_matrix=T(S))
    assert d.batch_shape == em.Size([2])
    close(d.log_prob(T(x)), [mvn_ref(x, mu, S), mvn_ref(x, -mu, S)], rtol=1e-10)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril"):
        D.MultivariateNormal(T(mu))
    with pytest.raises(ValueError, match="Expected parameter covariance_matrix .* "
                                         "PositiveDefinite"):
        D.MultivariateNormal(T(mu), covariance_matrix=T(-S))


def test_multivariate_normal_samples_and_gradients():
    S = np.array([[2.0, 0.6], [0.6, 1.0]])
    em.manual_seed(10)
    mu = T([1.0, -1.0], grad=True)
    Lt = T(np.linalg.cholesky(S), grad=True)
    d = D.MultivariateNormal(mu, scale_tril=Lt)
    x = d.rsample((40000,))
    assert x.shape == em.Size([40000, 2])
    close(N(x).mean(0), [1.0, -1.0], rtol=0, atol=0.03)
    close(np.cov(N(x).T), S, rtol=0, atol=0.05)
    x.sum().backward()
    close(mu.grad, [40000.0, 40000.0])
    assert gradcheck(lambda m, L: D.MultivariateNormal(m, scale_tril=L.tril()).log_prob(
        T([0.3, 0.1])), (T([0.2, 1.0], grad=True), T(np.linalg.cholesky(S), grad=True)))
    assert gradcheck(lambda c: D.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=(
        c + c.mT) / 2).log_prob(T([0.3, 0.1])), (T(S, grad=True),))


# Independent, expand ----------------------------------------------------------------------

def test_independent_and_expand():
    loc, scale = np.zeros((4, 3)), np.ones((4, 3)) * 2
    base = D.Normal(T(loc), T(scale))
    d = D.Independent(base, 1)
    assert d.batch_shape == em.Size([4]) and d.event_shape == em.Size([3])
    assert d.has_rsample
    x = np.arange(12.0).reshape(4, 3) / 10
    close(d.log_prob(T(x)), N(base.log_prob(T(x))).sum(-1))
    close(d.entropy(), N(base.entropy()).sum(-1))
    em.manual_seed(11)
    assert d.sample((5,)).shape == em.Size([5, 4, 3])
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= "
                                         "len.base_distribution.batch_shape., actual 3 vs 2"):
        D.Independent(base, 3)
    e = D.Normal(T([0.0]), T([1.0])).expand([5, 1])
    assert e.batch_shape == em.Size([5, 1]) and e.sample((2,)).shape == em.Size([2, 5, 1])
    close(e.log_prob(T(0.5)), np.full((5, 1), -0.125 - 0.5 * math.log(2 * math.pi)))
    for dist in (D.Gamma(T([2.0]), T([1.0])), D.Bernoulli(T([0.3])),
                 D.Categorical(T([[0.2, 0.8]])), D.Beta(T([2.0]), T([3.0])),
                 D.Uniform(T([0.0]), T([1.0]))):
        ex = dist.expand([3])
        assert type(ex) is type(dist) and ex.batch_shape == em.Size([3])
        assert ex.sample().shape[:1] == em.Size([3])
    assert D.Independent(D.Normal(T(loc), T(scale)), 1).expand([2, 4]).batch_shape == \
        em.Size([2, 4])


def test_validate_args_switch_and_value_shape():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape "
                                         r"\(\)\) of distribution Normal\(loc: 0.0, scale: "
                                         r"-1.0\) to satisfy the constraint GreaterThan"):
        D.Normal(0.0, -1.0)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match=r"Value is not broadcastable with "
                                         r"batch_shape\+event_shape: \(4,\) vs \(3,\)"):
        D.Normal(T([0.0] * 3), T([1.0] * 3)).log_prob(T([0.0] * 4))
    with pytest.raises(ValueError, match="The right-most size of value must match "
                                         "event_shape"):
        D.Dirichlet(T([1.0, 1.0])).log_prob(T([0.5, 0.25, 0.25]))
    with pytest.raises(NotImplementedError, match="Bernoulli has no reparameterised "
                                                  "sampler"):
        D.Bernoulli(0.5).rsample()


# KL divergences ------------------------------------------------------------------------------

def kl_numeric(logp, logq, lo, hi, n=400001, power=1):
    """Trapezoidal KL(p || q) on [lo, hi]; power > 1 crowds the grid towards lo (for a
    log singularity of q there)."""
    x = lo + (hi - lo) * np.linspace(0, 1, n) ** power
    lp, lq = logp(x), logq(x)
    return trapz(np.exp(lp) * (lp - lq), x)


def norm_lp(m, s):
    return lambda x: -((x - m) ** 2) / (2 * s * s) - math.log(s) - 0.5 * math.log(2 * math.pi)


def gamma_lp(a, r):
    return lambda x: gamma_logpdf(x, a, r)


def beta_lp(a, b):
    return lambda x: (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - lbeta(a, b)


def test_kl_same_families():
    kl = D.kl_divergence
    got = kl(D.Normal(T([0.5]), T([2.0])), D.Normal(T([-1.0]), T([0.7])))
    close(got, [math.log(0.7 / 2.0) + (4 + 1.5 ** 2) / (2 * 0.49) - 0.5])
    close(kl(D.Bernoulli(T([0.3])), D.Bernoulli(T([0.6]))),
          [0.3 * math.log(0.3 / 0.6) + 0.7 * math.log(0.7 / 0.4)], rtol=1e-7)
    assert N(kl(D.Bernoulli(T([0.3])), D.Bernoulli(T([0.0]))))[0] == math.inf
    close(kl(D.Bernoulli(T([0.0])), D.Bernoulli(T([0.4]))), [math.log(1 / 0.6)], rtol=1e-6)
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.4, 0.4, 0.2])
    close(kl(D.Categorical(T(p)), D.Categorical(T(q))), (p * np.log(p / q)).sum(), rtol=1e-7)
    close(kl(D.OneHotCategorical(T(p)), D.OneHotCategorical(T(q))), (p * np.log(p / q)).sum(),
          rtol=1e-7)
    assert N(kl(D.Categorical(T(p)), D.Categorical(T([0.5, 0.5, 0.0])))) == math.inf
    close(kl(D.Uniform(T([0.0]), T([1.0])), D.Uniform(T([-1.0]), T([3.0]))), [math.log(4)])
    assert N(kl(D.Uniform(T([0.0]), T([2.0])), D.Uniform(T([0.0]), T([1.0]))))[0] == math.inf
    close(kl(D.Gamma(T([2.0]), T([1.5])), D.Gamma(T([3.5]), T([0.8]))),
          [kl_numeric(gamma_lp(2.0, 1.5), gamma_lp(3.5, 0.8), 1e-12, 60)], rtol=1e-6)
    close(kl(D.Beta(T([2.0]), T([3.0])), D.Beta(T([1.5]), T([1.2]))),
          [kl_numeric(beta_lp(2.0, 3.0), beta_lp(1.5, 1.2), 1e-9, 1 - 1e-9)], rtol=1e-6)
    # Dirichlet over 2 components is a Beta
    close(kl(D.Dirichlet(T([2.0, 3.0])), D.Dirichlet(T([1.5, 1.2]))),
          N(kl(D.Beta(T(2.0), T(3.0)), D.Beta(T(1.5), T(1.2)))), rtol=1e-10)
    # MVN: against NumPy's closed form, and diagonal = Independent Normals
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((2, 3, 3))
    S1, S2 = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    m1, m2 = rng.standard_normal((2, 3))
    want = 0.5 * (np.trace(np.linalg.solve(S2, S1)) + (m2 - m1) @ np.linalg.solve(S2, m2 - m1)
                  - 3 + np.linalg.slogdet(S2)[1] - np.linalg.slogdet(S1)[1])
    got = kl(D.MultivariateNormal(T(m1), covariance_matrix=T(S1)),
             D.MultivariateNormal(T(m2), covariance_matrix=T(S2)))
    close(got, want, rtol=1e-9)
    s1, s2 = np.array([1.0, 2.0, 0.5]), np.array([0.7, 1.0, 1.5])
    ind = kl(D.Independent(D.Normal(T(m1), T(s1)), 1), D.Independent(D.Normal(T(m2), T(s2)), 1))
    mv = kl(D.MultivariateNormal(T(m1), scale_tril=T(np.diag(s1))),
            D.MultivariateNormal(T(m2), scale_tril=T(np.diag(s2))))
    close(ind, N(mv), rtol=1e-10)


def test_kl_across_families():
    kl = D.kl_divergence
    inf = math.inf
    cases = [
        (D.Beta(T(2.0), T(3.0)), D.Normal(T(0.3), T(0.5)),
         kl_numeric(beta_lp(2.0, 3.0), norm_lp(0.3, 0.5), 1e-9, 1 - 1e-9)),
        (D.Beta(T(2.0), T(3.0)), D.Gamma(T(2.0), T(3.0)),
         kl_numeric(beta_lp(2.0, 3.0), gamma_lp(2.0, 3.0), 1e-9, 1 - 1e-9)),
        (D.Beta(T(2.0), T(3.0)), D.Uniform(T(-0.5), T(1.5)),
         kl_numeric(beta_lp(2.0, 3.0), lambda x: np.full_like(x, -math.log(2)), 1e-9,
                    1 - 1e-9)),
        (D.Gamma(T(3.0), T(2.0)), D.Normal(T(1.0), T(0.8)),
         kl_numeric(gamma_lp(3.0, 2.0), norm_lp(1.0, 0.8), 1e-12, 40)),
        (D.Uniform(T(0.5), T(2.0)), D.Normal(T(1.0), T(0.8)),
         kl_numeric(lambda x: np.full_like(x, -math.log(1.5)), norm_lp(1.0, 0.8), 0.5, 2.0)),
        (D.Uniform(T(0.0), T(2.0)), D.Gamma(T(3.0), T(2.0)),
         kl_numeric(lambda x: np.full_like(x, -math.log(2)), gamma_lp(3.0, 2.0), 1e-12, 2.0,
                    power=4)),
        (D.Uniform(T(0.2), T(0.9)), D.Beta(T(2.0), T(3.0)),
         kl_numeric(lambda x: np.full_like(x, -math.log(0.7)), beta_lp(2.0, 3.0), 0.2, 0.9)),
        (D.Uniform(T(-0.1), T(0.9)), D.Beta(T(2.0), T(3.0)), inf),
        (D.Uniform(T(-1.0), T(1.0)), D.Gamma(T(2.0), T(3.0)), inf),
        (D.Beta(T(2.0), T(3.0)), D.Uniform(T(0.1), T(1.0)), inf),
        (D.Normal(T(0.0), T(1.0)), D.Uniform(T(0.0), T(1.0)), inf),
        (D.Normal(T(0.0), T(1.0)), D.Gamma(T(1.0), T(1.0)), inf),
        (D.Normal(T(0.0), T(1.0)), D.Beta(T(1.0), T(1.0)), inf),
        (D.Gamma(T(2.0), T(1.0)), D.Beta(T(1.0), T(1.0)), inf),
        (D.Gamma(T(2.0), T(1.0)), D.Uniform(T(0.0), T(1.0)), inf),
    ]
    for p, q, want in cases:
        got = float(N(kl(p, q)))
        if want == inf:
            assert got == inf, (p, q, got)
        else:
            assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9), (p, q, got, want)


def test_register_kl_dispatch_and_missing_pair():
    class MyNormal(D.Normal):
        pass

    # a subclass uses its parent's registration until it registers its own
    p, q = MyNormal(T(0.0), T(1.0)), D.Normal(T(1.0), T(1.0))
    close(D.kl_divergence(p, q), 0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return em.tensor(42.0)
    try:
        assert D.kl_divergence(p, q).item() == 42.0
        assert D.kl_divergence(q, q).item() == 0.0
    finally:
        from ember.distributions import kl as klmod
        del klmod._KL_REGISTRY[MyNormal, D.Normal]
        klmod._KL_MEMOIZE.clear()
    with pytest.raises(NotImplementedError, match="No KL.p .. q. is implemented for p type "
                                                  "Categorical and q type Normal"):
        D.kl_divergence(D.Categorical(T([0.5, 0.5])), q)
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_kl_gradients_and_constraints():
    assert gradcheck(lambda m, s: D.kl_divergence(D.Normal(m, s), D.Normal(0.0, 1.0)),
                     (T([0.3, -0.2], grad=True), T([0.8, 1.4], grad=True)))
    assert gradcheck(lambda a, b: D.kl_divergence(D.Gamma(a, b), D.Gamma(T([2.0]), T([1.0]))),
                     (T([1.3], grad=True), T([0.7], grad=True)))
    assert bool(constraints.simplex.check(T([0.2, 0.8])))
    assert not bool(constraints.lower_cholesky.check(T([[1.0, 1.0], [0.0, 1.0]])))
    assert bool(constraints.positive_definite.check(T([[2.0, 0.5], [0.5, 1.0]])))
    assert constraints.independent(constraints.real, 1).event_dim == 1
    assert D.Categorical(T([0.5, 0.5])).support.upper_bound == 1


# other devices ---------------------------------------------------------------------------------

def usable(name):
    try:
        d = em.device(name)
        em.zeros(2, device=d).cpu()
        return d
    except (RuntimeError, ValueError, NotImplementedError, ImportError):
        return None


@pytest.mark.parametrize("name", ["opencl", "cuda"])
def test_distributions_run_on_other_devices(name):
    dev = usable(name)
    if dev is None:
        pytest.skip(f"no {name} device here")

    def on(a):
        return em.tensor(np.asarray(a, np.float32), device=dev)

    def cpu(a):
        return em.tensor(np.asarray(a, np.float32))

    def both(make, value):
        """make(t)/value(t) on the device and on the CPU: the same log_prob and entropy."""
        got, want = make(on), make(cpu)
        for g, w in ((got.log_prob(value(on)), want.log_prob(value(cpu))),
                     (got.entropy(), want.entropy())):
            assert g.device.type == dev.type
            np.testing.assert_allclose(N(g.cpu()), N(w), rtol=2e-5, atol=2e-6)
        s = got.sample((3,))
        assert s.device.type == dev.type and s.shape == want.sample((3,)).shape

    both(lambda t: D.Normal(t([0.0, 1.0]), t([1.0, 2.0])), lambda t: t([0.5, -0.5]))
    both(lambda t: D.Gamma(t([0.5, 3.0]), t([1.0, 2.0])), lambda t: t([0.5, 2.5]))
    both(lambda t: D.Beta(t([2.0]), t([3.0])), lambda t: t([0.3]))
    both(lambda t: D.Dirichlet(t([1.0, 2.0, 3.0])), lambda t: t([0.2, 0.3, 0.5]))
    both(lambda t: D.Bernoulli(t([0.3, 0.8])), lambda t: t([1.0, 0.0]))
    both(lambda t: D.Uniform(t([0.0]), t([2.0])), lambda t: t([1.5]))
    both(lambda t: D.MultivariateNormal(t([0.0, 1.0]), covariance_matrix=t(
        [[2.0, 0.5], [0.5, 1.0]])), lambda t: t([0.3, 0.2]))
    c = D.Categorical(on([0.2, 0.3, 0.5]))
    em.manual_seed(12)
    s = N(c.sample((20000,)).cpu())
    np.testing.assert_allclose([(s == k).mean() for k in range(3)], [0.2, 0.3, 0.5], atol=0.015)
    a = em.tensor([2.0], device=dev, requires_grad=True)
    D.Gamma(a, 1.0).rsample((2000,)).mean().backward()
    assert a.grad.device.type == dev.type and abs(a.grad.cpu().item() - 1.0) < 0.1


# shapes, over random batch and sample shapes ----------------------------------------------------

SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


def families(batch, rng):
    pos = lambda *extra: T(rng.uniform(0.5, 2.0, batch + extra))  # noqa: E731
    S = np.eye(2) + 0.3
    return [D.Normal(T(rng.standard_normal(batch)), pos()),
            D.Uniform(T(np.zeros(batch)), pos()),
            D.Bernoulli(T(rng.uniform(0.1, 0.9, batch))),
            D.Categorical(logits=T(rng.standard_normal(batch + (4,)))),
            D.OneHotCategorical(logits=T(rng.standard_normal(batch + (4,)))),
            D.Gamma(pos(), pos()), D.Beta(pos(), pos()), D.Dirichlet(pos(3)),
            D.MultivariateNormal(T(rng.standard_normal(batch + (2,))),
                                 covariance_matrix=T(np.broadcast_to(S, batch + (2, 2))))]


@settings(max_examples=20, deadline=None)
@given(batch=SHAPES, sample=st.lists(st.integers(1, 3), max_size=2).map(tuple),
       seed=st.integers(0, 2 ** 16))
def test_shapes_of_samples_log_prob_entropy(batch, sample, seed):
    rng = np.random.default_rng(seed)
    em.manual_seed(seed)
    for d in families(batch, rng):
        ev = tuple(d.event_shape)
        assert tuple(d.batch_shape) == batch, d
        x = d.sample(sample)
        assert tuple(x.shape) == sample + batch + ev, (d, x.shape)
        if d.has_rsample:
            assert tuple(d.rsample(sample).shape) == sample + batch + ev
        assert tuple(d.log_prob(x).shape) == sample + batch, d
        assert tuple(d.entropy().shape) == batch, d
        e = d.expand((2,) + batch)
        assert tuple(e.batch_shape) == (2,) + batch and \
            tuple(e.sample().shape) == (2,) + batch + ev
        assert tuple(D.kl_divergence(d, d).shape) == batch
        np.testing.assert_allclose(N(D.kl_divergence(d, d)), 0.0, atol=1e-5)
