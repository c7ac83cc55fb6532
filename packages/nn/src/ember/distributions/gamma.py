"""Gamma, Beta and Dirichlet, and the reparameterised Gamma sampler they share.

Sampling: Marsaglia and Tsang's method ("A simple method for generating gamma
variables", ACM TOMS 2000) in ember ops, vectorised: every element draws a normal and a
uniform per round and keeps its first accepted candidate (acceptance is above 95% for
concentration >= 1, so a few rounds finish); concentration < 1 samples Gamma(a + 1) and
multiplies by U^(1/a). It runs on the parameters' device.

Gradient (rsample): implicit reparameterisation (Figurnov, Mohamed and Mnih, "Implicit
Reparameterization Gradients", 2018), as PyTorch does: for x ~ Gamma(a, 1) with CDF
F(x; a) held fixed, dx/da = -(dF/da)(x; a) / p(x; a). ember computes dF/da exactly
instead of PyTorch's fitted approximations: with the series
F(x; a) = x^a e^-x sum_n x^n / Gamma(a + n + 1), the ratio simplifies to
    dx/da = -(x / a) * sum_{n>=0} r_n (log x - digamma(a + n + 1)),
    r_0 = 1, r_{n+1} = r_n * x / (a + n + 1),
summed in float64 on the host until the terms are below 1e-16 of the sum (no overflow:
r_n peaks near exp((x - a)^2 / 2x)); for a > 1e4 the Wilson-Hilferty approximation
x = a (1 - 1/(9a) + z/(3 sqrt a))^3 is differentiated at fixed z instead (relative error
below 1e-6 there). Dirichlet and Beta samples are normalised Gammas, whose gradients are
then the implicit ones of each Gamma.
"""
import numbers

import numpy as np

import ember as em
from ember.distributions import constraints
from ember.distributions._special import digamma, lbeta, lgamma, np_digamma
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, _uniform01, broadcast_all

_WH_FROM = 1e4
_MAX_TERMS = 100000


def _marsaglia_tsang(alpha):
    """Gamma(alpha, 1) samples of alpha's shape, without gradient."""
    with em.no_grad():
        alpha = alpha.detach()
        boost = alpha < 1
        a = em.where(boost, alpha + 1, alpha)
        d = a - 1.0 / 3
        c = 1.0 / (9 * d).sqrt()
        out = em.zeros_like(alpha)
        todo = em.ones(alpha.shape, dtype=em.bool, device=alpha.device)
        for _ in range(1000):
            z = _standard_normal(alpha.shape, alpha.dtype, alpha.device)
            u = _uniform01(alpha.shape, alpha.dtype, alpha.device)
            v = (1 + c * z) ** 3
            vpos = v > 0
            vs = em.where(vpos, v, em.ones_like(v))
            ok = vpos & (u.log() < 0.5 * z * z + d - d * vs + d * vs.log())
            take = todo & ok
            out = em.where(take, d * vs, out)
            todo = todo & ~ok
            if not bool(todo.any()):
                break
        else:
            raise RuntimeError("Gamma.sample: Marsaglia-Tsang did not accept within 1000 "
                               "rounds (concentration not finite?)")
        u = _uniform01(alpha.shape, alpha.dtype, alpha.device)
        tiny = em.finfo(alpha.dtype).tiny
        boosted = out * u.clamp(min=tiny).pow(1.0 / alpha)
        return em.where(boost, boosted, out).clamp(min=tiny)


def _dx_dalpha(x, a):
    """dx/da at fixed CDF for x ~ Gamma(a, 1): NumPy float64 arrays of one shape."""
    x = np.maximum(np.asarray(x, np.float64), np.finfo(np.float64).tiny)
    a = np.asarray(a, np.float64)
    out = np.empty_like(x)
    wh = a > _WH_FROM
    if wh.any():
        aw, xw = a[wh], x[wh]
        s = np.sqrt(aw)
        z = ((xw / aw) ** (1 / 3) - 1 + 1 / (9 * aw)) * 3 * s
        g = 1 - 1 / (9 * aw) + z / (3 * s)
        out[wh] = g ** 3 + 3 * aw * g ** 2 * (1 / (9 * aw * aw) - z / (6 * aw * s))
    sr = ~wh
    if sr.any():
        xs, as_ = x[sr], a[sr]
        logx = np.log(xs)
        psi = np_digamma(as_ + 1)
        r = np.ones_like(xs)
        total = logx - psi
        n = 0
        live = np.ones(xs.shape, bool)
        while live.any() and n < _MAX_TERMS:
            r = np.where(live, r * xs / (as_ + n + 1), r)
            psi = psi + 1 / (as_ + n + 1)
            term = r * (logx - psi)
            total = np.where(live, total + term, total)
            n += 1
            live = live & ((as_ + n < xs + 1) | (np.abs(term) > 1e-16 * np.abs(total)))
        out[sr] = -(xs / as_) * total
    return out


class _StandardGamma(em.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha)
        ctx.save_for_backward(x, alpha)
        return x

    @staticmethod
    def backward(ctx, grad):
        x, alpha = ctx.saved_tensors
        d = _dx_dalpha(x.detach().cpu().double().numpy(), alpha.detach().cpu().double().numpy())
        d = em.tensor(d, dtype=alpha.dtype, device=alpha.device)
        return grad * d


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples of alpha's shape, differentiable in alpha (implicit
    reparameterisation)."""
    if alpha.requires_grad and em.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    return _marsaglia_tsang(alpha)


class Gamma(Distribution):
    """Gamma(concentration, rate): density rate^c x^(c-1) e^(-rate x) / Gamma(c).
    rsample: reparameterised (see the module's note on the gradient)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = em.Size()
        else:
            batch_shape = self.concentration.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = em.Size(batch_shape)
        new.concentration = self.concentration.expand(*batch_shape)
        new.rate = self.rate.expand(*batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        # never exactly 0 (log_prob stays finite), as PyTorch; the gradient passes unchanged
        tiny = em.finfo(value.dtype).tiny
        return value + (value.clamp(min=tiny) - value).detach()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return c * r.log() + (c - 1) * value.log() - r * value - lgamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _regularized_gamma(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)


def _regularized_gamma(a, x):
    """P(a, x), the lower regularised incomplete gamma function (Gamma's CDF), from ember
    ops and differentiable by composition: for x < a + 1 the series
    x^a e^-x sum x^n / Gamma(a+n+1) (until the terms are below 1e-17 of the sum), else
    1 - Q(a, x) with Q's continued fraction (modified Lentz, Numerical Recipes 6.2; 300
    terms at most, far more than x > a + 1 needs)."""
    a, x = em.broadcast_tensors(a, x)
    tiny = em.finfo(x.dtype).tiny
    use_series = x < a + 1
    # the series, where x < a + 1 (elsewhere fed a harmless x)
    xs = em.where(use_series, x, em.zeros_like(x)).clamp(min=tiny)
    term = em.ones_like(xs)
    total = em.ones_like(xs)
    for n in range(1, 1000):
        term = term * xs / (a + n)
        total = total + term
        if n % 8 == 0 and not bool((term > 1e-17 * total).any()):
            break
    p_series = (a * xs.log() - xs - lgamma(a + 1) + total.log()).exp()
    # the continued fraction, where x >= a + 1
    xc = em.where(use_series, a + 1, x)
    fpmin = tiny / em.finfo(x.dtype).eps
    b = xc + 1 - a
    c = em.full_like(xc, 1 / fpmin)
    d = 1 / b
    h = d
    for i in range(1, 300):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = em.where(d.abs() < fpmin, em.full_like(d, fpmin), d)
        c = b + an / c
        c = em.where(c.abs() < fpmin, em.full_like(c, fpmin), c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 8 == 0 and not bool(((delta - 1).abs() > 1e-16).any()):
            break
    q_cf = (-xc + a * xc.log() - lgamma(a)).exp() * h
    p = em.where(use_series, p_series, 1 - q_cf)
    return em.where(x > 0, p, em.zeros_like(x)).clamp(min=0, max=1)


class Dirichlet(Distribution):
    """Dirichlet(concentration) over the simplex of the last dimension; rsample: Gammas
    (reparameterised) normalised by their sum."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = em.Size(batch_shape)
        new.concentration = self.concentration.expand(*batch_shape, *self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(*shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ((c - 1) * value.log()).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        c = self.concentration
        concm1 = (c - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, keepdim=True)
        mask = (c < 1).all(-1)
        onehot = em.nn.functional.one_hot(c.argmax(-1), c.shape[-1]).to(mode.dtype)
        return em.where(mask.unsqueeze(-1), onehot, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(a0) -
                (k - a0) * digamma(a0) -
                ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1], as Dirichlet([c1, c0])'s first
    coordinate (rsample reparameterised through the Gammas)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Number) and \
                isinstance(concentration0, numbers.Number):
            c = em.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            c = em.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(c, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = em.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (a - 1) * value.log() + (b - 1) * (-value).log1p() - lbeta(a, b)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        return lbeta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b) + \
            (a + b - 2) * digamma(a + b)

    def __repr__(self):
        return f"Beta(concentration1: {_show(self.concentration1)}, " \
               f"concentration0: {_show(self.concentration0)})"


def _show(t):
    return t.reshape(()).item() if t.numel() == 1 else t.shape

