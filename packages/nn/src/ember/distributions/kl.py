"""kl_divergence(p, q) and register_kl, as torch.distributions.kl: the implementation is
looked up by the pair of types, the most specific registered pair (by method resolution
order) winning; among ember's distributions the pairs PyTorch implements are registered."""
import math
import warnings
from functools import total_ordering

import ember as em
from ember.distributions._linalg import solve_lower
from ember.distributions._special import digamma, lbeta, lgamma
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.categorical import Categorical, OneHotCategorical
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Beta, Dirichlet, Gamma
from ember.distributions.independent import Independent
from ember.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from ember.distributions.normal import Normal
from ember.distributions.uniform import Uniform
from ember.distributions.utils import softplus, sum_rightmost

_KL_REGISTRY = {}   # (type_p, type_q) -> fn: what register_kl was given
_KL_MEMOIZE = {}    # every looked-up pair -> fn


def register_kl(type_p, type_q):
    """Decorator registering fn(p, q) as KL(p || q) for p of type_p and q of type_q
    (subclasses included; the most specific registration wins)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], of the broadcast batch shape. Raises
    NotImplementedError for a pair nothing is registered for (as PyTorch)."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fun(p, q)


def _infinite_like(t):
    return em.full_like(t, math.inf)


def _xlogy(x, y):
    """x * log(y), 0 where x == 0."""
    safe = em.where(x == 0, em.ones_like(y), y)
    return em.where(x == 0, em.zeros_like(x), x * safe.log())


# the same family -----------------------------------------------------------------------

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = em.where(q.probs == 0, _infinite_like(t1), t1)
    t1 = em.where(p.probs == 0, em.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = em.where(q.probs == 1, _infinite_like(t2), t2)
    t2 = em.where(p.probs == 1, em.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sum_p, sum_q = a1 + b1, a2 + b2
    t1 = lgamma(a2) + lgamma(b2) + lgamma(sum_p)
    t2 = lgamma(a1) + lgamma(b1) + lgamma(sum_q)
    t3 = (a1 - a2) * digamma(a1)
    t4 = (b1 - b2) * digamma(b1)
    t5 = (sum_q - sum_p) * digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    qp, pp = em.broadcast_tensors(q.probs, p.probs)
    t = em.where(qp == 0, _infinite_like(t), t)
    t = em.where(pp == 0, em.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different event dims "
                                  "is not implemented")
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - \
        Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    term2 = solve_lower(Lq, Lp).pow(2).sum((-2, -1))          # tr(Sq^-1 Sp)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    batch = em.broadcast_shapes(p.batch_shape, q.batch_shape)
    return (half_term1 + 0.5 * (term2 + term3 - n)).expand(*batch)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return em.where((q.low > p.low) | (q.high < p.high), _infinite_like(result), result)


# across families -----------------------------------------------------------------------

@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    t1 = -p.entropy()
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (digamma(p.concentration1) -
                                  digamma(p.concentration1 + p.concentration0))
    t4 = q.rate * p.mean
    return t1 + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    E_beta = p.mean
    total = p.concentration1 + p.concentration0
    E2_beta = p.concentration1 * (p.concentration1 + 1) / (total * (total + 1))
    var_normal = q.scale.pow(2)
    t1 = -p.entropy()
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (E2_beta - 2 * E_beta * q.loc + q.loc.pow(2)) / (2 * var_normal)
    return t1 + t2 + t3


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return em.where((q.low > 0) | (q.high < 1), _infinite_like(result), result)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var_normal = q.scale.pow(2)
    E = p.concentration / p.rate
    E2 = p.concentration * (p.concentration + 1) / p.rate.pow(2)
    t1 = -p.entropy()
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (E2 - 2 * E * q.loc + q.loc.pow(2)) / (2 * var_normal)
    return t1 + t2 + t3


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p, q):
    return _infinite_like(p.concentration)


@register_kl(Normal, Beta)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p, q):
    return _infinite_like(p.loc)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    a, b = q.concentration1, q.concentration0
    # E_p[log x] and E_p[log(1 - x)] for x ~ U[low, high]
    e_log_x = (_xlogy(p.high, p.high) - _xlogy(p.low, p.low)) / width - 1
    one_l, one_h = 1 - p.low, 1 - p.high
    e_log_1mx = (_xlogy(one_l, one_l) - _xlogy(one_h, one_h)) / width - 1
    result = -width.log() - (a - 1) * e_log_x - (b - 1) * e_log_1mx + lbeta(a, b)
    return em.where((p.high > 1) | (p.low < 0), _infinite_like(result), result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    c, r = q.concentration, q.rate
    e_log_x = (_xlogy(p.high, p.high) - _xlogy(p.low, p.low)) / width - 1
    result = -width.log() - c * r.log() + lgamma(c) - (c - 1) * e_log_x + r * p.mean
    return em.where(p.low < 0, _infinite_like(result), result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)
