"""Parameter: a tensor that a Module registers as one of its parameters."""
from __future__ import annotations

import ember as em


class Parameter(em.Tensor):
    """A leaf tensor that requires grad (by default) and that assigning to a Module
    attribute registers: `self.weight = nn.Parameter(em.empty(3, 4))`. It shares
    `data`'s memory."""

    __module__ = "ember.nn"

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = em.empty(0)
        if not isinstance(data, em.Tensor):
            raise TypeError(f"Parameter: expected a tensor, got {type(data).__name__}")
        p = em.Tensor.__new__(cls)
        p.data = data.detach()
        p.requires_grad = requires_grad
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = p
        return p


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(em.Tensor):
    """Marks a tensor as a buffer when assigned to a Module attribute
    (`self.running_mean = nn.Buffer(em.zeros(3))`), like register_buffer."""

    __module__ = "ember.nn"

    def __new__(cls, data, persistent=True):
        b = em.Tensor.__new__(cls)
        b.data = data.detach()
        b.persistent = persistent
        return b

    def __init__(self, data, persistent=True):
        pass
