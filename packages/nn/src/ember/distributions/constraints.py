"""Constraints on parameters and supports (torch.distributions.constraints): each has
`check(value)`, a boolean tensor of the batch shape (event dimensions reduced), and
`event_dim`, `is_discrete`. Parameterised ones (interval, greater_than, ...) are
functions, as in PyTorch."""

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "independent", "integer_interval",
           "interval", "is_dependent", "less_than", "lower_cholesky", "nonnegative",
           "nonnegative_integer", "one_hot", "positive", "positive_definite", "positive_integer",
           "real", "real_vector", "simplex", "unit_interval"]


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError(f"{type(self).__name__}.check is defined by each "
                                  f"constraint")

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on other values (e.g. Categorical's
    number of classes): it can't be checked by itself."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        return self._is_discrete

    @property
    def event_dim(self):
        return self._event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """`@constraints.dependent_property`: a property of the distribution that is a
    constraint computed from its parameters (Uniform's interval(low, high))."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete,
                                  event_dim=self._event_dim)


def dependent_property(fn=None, *, is_discrete=False, event_dim=0):
    if fn is None:
        return _DependentProperty(is_discrete=is_discrete, event_dim=event_dim)
    return _DependentProperty(fn, is_discrete=is_discrete, event_dim=event_dim)


class _IndependentConstraint(Constraint):
    """`base` with its rightmost `reinterpreted_batch_ndims` dimensions as the event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            raise ValueError(f"Expected value.dim() >= {n + self.base_constraint.event_dim} "
                             f"but got {value.dim()}")
        if n:
            result = result.reshape(*result.shape[:result.dim() - n], -1).all(-1)
        return result

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, " \
               f"{self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, " \
               f"upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value):
        return value == value          # false for NaN only


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, " \
               f"upper_bound={self.upper_bound})"


class _OneHot(Constraint):
    """Vectors of zeros with a single one (OneHotCategorical's support)."""
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _Simplex(Constraint):
    """Nonnegative, summing to 1 (to 1e-6) over the last dimension."""
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerCholesky(Constraint):
    """Lower triangular with a positive diagonal."""
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric with a Cholesky factorisation (all leading minors positive)."""
    event_dim = 2

    def check(self, value):
        from ember.distributions._linalg import cholesky_ok
        sym = (value - value.mT).abs().reshape(*value.shape[:-2], -1).amax(-1) <= \
            1e-6 * (1 + value.abs().reshape(*value.shape[:-2], -1).amax(-1))
        return sym & cholesky_ok(value)


dependent = _Dependent()
boolean = _Boolean()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
one_hot = _OneHot()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
independent = _IndependentConstraint
