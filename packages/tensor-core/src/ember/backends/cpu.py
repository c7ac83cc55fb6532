"""The CPU backend: the compiled kernels of ember._C.<family> under their
HAND_WRITTEN_KERNELS names (base.py), reached like every other backend's through
`ember.backends.kernel(...)`.

Memory, copies, fills, casts and the op table's elementwise and reduction loops of CPU
tensors run inside ember._C.core (the C fast path, with no Python call per op), so
this class holds only the hand-written kernels.
"""
from __future__ import annotations

import importlib

from ember._C import core as _core
from ember._dtypes import float16, float16_below, float32, float64
from ember.backends.base import HAND_WRITTEN_KERNELS, Backend


class CPUBackend(Backend):
    name = "cpu"

    def matmul(self, a, b):
        """The CPU matmul kernel (ember.matmul's own fast path calls it directly)."""
        return _matmul.cpu_matmul(a, b)

    def iota(self, n, device):
        return _core._iota(n)

    def random(self, kind, out, *args):
        """Philox numbers: random(kind, out, seed, offset, *params) fills `out` (any
        layout, any dtype the kind supports) with `kind` numbers from stream position
        `offset`; random("multinomial", weights, out, seed, offset, replacement) draws
        rows of category indices. ember._C.random fills contiguous float32/float64/int
        tensors; here the rest is brought to that."""
        if kind == "multinomial":
            weights, (out, seed, offset, replacement) = out, args
            w = _core.astype(weights, float64, True).reshape(out.shape[0], -1)
            _random.multinomial(w, out, seed, offset, replacement)
            return out
        if out.dtype is not float16 and out.is_contiguous() and out.numel():  # the usual case
            getattr(_random, kind)(out, *args)
            return out
        seed, offset, *params = args
        if out.numel() == 0:
            return out
        target = out if out.is_contiguous() else _core.empty(tuple(out.shape), out.dtype)
        if out.dtype is float16 and kind in ("uniform", "exponential"):
            target = _core.empty(tuple(out.shape), float32)   # same words as float16
        getattr(_random, kind)(target, seed, offset, *params)
        if kind == "uniform" and out.dtype is float16 and params[1] > params[0]:
            # rounding to float16 would turn values just below `to` into `to`
            target = _core.elementwise("minimum", target,
                                       max(float16_below(params[1]), params[0]))
        if target is not out:
            _core.copy_into(out, target)
        return out


_random = importlib.import_module("ember._C.random")
_matmul = importlib.import_module("ember._C.matmul")
for _name, _family in HAND_WRITTEN_KERNELS.items():
    if _name not in CPUBackend.__dict__:
        setattr(CPUBackend, _name,
                staticmethod(getattr(importlib.import_module(f"ember._C.{_family}"), _name)))

_backend = None


def get_backend():
    """The backend, created on first use (by ember._C.core's backend_for)."""
    global _backend
    if _backend is None:
        _backend = CPUBackend()
    return _backend
