import ember as em
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import lazy_property, logits_to_probs, probs_to_logits


def _inverse_cdf(probs_2d, n):
    """n draws per row by inverting the CDF with ember ops (devices without a multinomial
    kernel): the index is how many cumulative probabilities lie below a uniform draw."""
    cdf = probs_2d.cumsum(-1)
    cdf = cdf / cdf[..., -1:]
    u = em.rand(n, probs_2d.shape[0], 1, dtype=probs_2d.dtype, device=probs_2d.device)
    idx = (u >= cdf.unsqueeze(0)).sum(-1)
    return idx.clamp(max=probs_2d.shape[-1] - 1).long()


class Categorical(Distribution):
    """A categorical distribution over {0, ..., K-1} given `probs` (nonnegative, summing
    to anything finite: normalised over the last dimension) or `logits` (unnormalised
    log probabilities). Samples are int64 indices drawn with ember.multinomial on the CPU
    and by inverting the CDF with ember ops on other devices."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else em.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = em.Size(batch_shape)
        param_shape = (*batch_shape, self._num_events)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return em.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                       device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return em.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                       device=self.probs.device)

    def sample(self, sample_shape=()):
        sample_shape = em.Size(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with em.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            if n == 0:
                return em.zeros(self._extended_shape(sample_shape), dtype=em.int64,
                                device=self.probs.device)
            if probs_2d.device.type == "cpu":
                samples_2d = em.multinomial(probs_2d, n, replacement=True).t()  # (n, batch)
            else:
                samples_2d = _inverse_cdf(probs_2d, n)
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = em.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = em.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        k = self._num_events
        values = em.arange(k, dtype=em.int64, device=self._param.device)
        values = values.reshape(-1, *((1,) * len(self._batch_shape)))
        if expand:
            values = values.expand(k, *self._batch_shape)
        return values


class OneHotCategorical(Distribution):
    """Categorical with one-hot samples: events of shape (K,)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = em.Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        mode = probs.argmax(-1)
        return em.nn.functional.one_hot(mode, probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        p = self._categorical.probs
        return p * (1 - p)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = em.Size(sample_shape)
        probs = self._categorical.probs
        k = self._categorical._num_events
        indices = self._categorical.sample(sample_shape)
        return em.nn.functional.one_hot(indices, k).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.argmax(-1)
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = em.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(n, *((1,) * len(self.batch_shape)), n)
        if expand:
            values = values.expand(n, *self.batch_shape, n)
        return values
