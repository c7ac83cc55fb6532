"""Grad mode: whether ops on tensors that require grad are recorded for autograd.

Per thread, like PyTorch. Each switch works as a context manager and a decorator.
"""
from __future__ import annotations

import functools

from ember._C import core as _core

is_grad_enabled = _core.is_grad_enabled
is_inference_mode_enabled = _core.is_inference_mode_enabled


class _GradMode:
    """Base of the switches: subclasses set the mode in __enter__."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args = ()

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._prev)
        return False


class no_grad(_GradMode):
    """Ops inside don't record: results don't require grad.

        with ember.no_grad():
            w -= lr * w.grad
    """

    def __init__(self, orig_func=None):
        self._orig = orig_func

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if callable(orig_func) and not isinstance(orig_func, _GradMode):
            # used as a bare decorator: @ember.no_grad
            self.__init__()
            return self(orig_func)
        return self

    def __enter__(self):
        self._prev = _core._set_grad_enabled(False)
        return self


class enable_grad(_GradMode):
    """Re-enable recording inside a no_grad block."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if callable(orig_func):
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self._prev = _core._set_grad_enabled(True)
        return self


class set_grad_enabled(_GradMode):
    """Set grad mode to `mode`: as a function call (takes effect at once), a context
    manager (restored on exit) or a decorator."""

    def __init__(self, mode: bool):
        self._args = (mode,)
        self._prev = _core._set_grad_enabled(bool(mode))

    def __enter__(self):
        return self

    def __call__(self, fn):
        _core._set_grad_enabled(self._prev)   # decorating must not change the mode now
        return super().__call__(fn)


class inference_mode(_GradMode):
    """Like no_grad, for inference-only code (mode=False turns it off inside)."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode=True):
        self._args = (mode,)
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = _core._set_grad_enabled(not self._mode if self._mode else
                                             _core.is_grad_enabled())
        self._prev_inf = _core._set_inference_mode(self._mode)
        return self

    def __exit__(self, *exc):
        _core._set_inference_mode(self._prev_inf)
        return super().__exit__(*exc)
