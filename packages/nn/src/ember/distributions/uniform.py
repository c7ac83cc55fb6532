import numbers

import ember as em
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _uniform01, broadcast_all


class Uniform(Distribution):
    """The uniform distribution on the half-open interval [low, high).
    rsample: low + u * (high - low), u ~ U[0, 1)."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        if isinstance(low, numbers.Number) and isinstance(high, numbers.Number):
            batch_shape = em.Size()
        else:
            batch_shape = self.low.shape
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and not bool(self.low.lt(self.high).all()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = em.Size(batch_shape)
        new.low = self.low.expand(*batch_shape)
        new.high = self.high.expand(*batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return em.full_like(self.high, float("nan"))

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rand = _uniform01(shape, self.low.dtype, self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()
