"""The base class of every distribution (torch.distributions.Distribution)."""
import warnings

import ember as em
from ember.distributions import constraints
from ember.distributions.utils import lazy_property


class Distribution:
    """A batch of probability distributions of shape `batch_shape`, each over events of
    shape `event_shape`. Subclasses set `arg_constraints` (parameter name -> constraint),
    `support`, `has_rsample`, and implement what they can of sample/rsample, log_prob,
    cdf, icdf, entropy, mean, mode, variance, enumerate_support.

    validate_args (default True, `Distribution.set_default_validate_args(False)` turns
    it off): the parameters are checked against `arg_constraints` at construction and
    the values given to log_prob/cdf/icdf against the support and shapes, raising
    ValueError as PyTorch does."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got "
                             f"{value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = em.Size(batch_shape)
        self._event_shape = em.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{type(self).__name__} does not define `arg_constraints`. "
                              f"Please set `arg_constraints = {{}}` or initialize the "
                              f"distribution with `validate_args=False` to turn off "
                              f"validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                        getattr(type(self), param, None), lazy_property):
                    continue       # a lazily computed parameter (probs from logits, ...)
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (views, no copy) to `batch_shape`."""
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Samples of shape sample_shape + batch_shape + event_shape, without gradient."""
        with em.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Reparameterised samples: differentiable in the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler "
                                  f"(has_rsample is False): use sample()")

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead",
                      UserWarning, stacklevel=2)
        return self.sample(em.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  f"enumerate_support")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        if not isinstance(sample_shape, em.Size):
            sample_shape = em.Size(sample_shape)
        return em.Size(tuple(sample_shape) + tuple(self._batch_shape) +
                       tuple(self._event_shape))

    def _validate_sample(self, value):
        """The value's shape must broadcast with batch_shape + event_shape and its values
        lie in the support (PyTorch's checks and messages)."""
        if not isinstance(value, em.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual_shape = value.shape
        expected_shape = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{tuple(actual_shape)} vs {expected_shape}.")
        support = self.support
        if support is None:
            return
        try:
            valid = support.check(value)
        except ValueError:        # a dependent support
            return
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support "
                             f"({support!r}) of the distribution {self!r}, but found "
                             f"invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} "
                                      f"that defines a custom __init__ method must also "
                                      f"define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        def show(t):
            return t.reshape(()).item() if t.numel() == 1 else t.shape
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {show(self.__dict__[p])}" for p in names)
        return f"{type(self).__name__}({args})"
