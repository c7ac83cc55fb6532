"""The CPU backend (and torch.backends.cpu's query, get_cpu_capability): the compiled
kernels of ember._C.<family> under their HAND_WRITTEN_KERNELS names (base.py), reached
like every other backend's through `ember.backends.kernel(...)`.

Memory, copies, fills, casts and the op table's elementwise and reduction loops of CPU
tensors run inside ember._C.core (the C fast path, with no Python call per op), so
this class holds only the hand-written kernels.
"""
from __future__ import annotations

import importlib

from ember._C import core as _core
from ember._dtypes import bfloat16, float16, float32, float64, int64, low_float_below
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
        low = out.dtype is float16 or out.dtype is bfloat16
        if not low and out.is_contiguous() and out.numel():  # the usual case
            getattr(_random, kind)(out, *args)
            return out
        seed, offset, *params = args
        if out.numel() == 0:
            return out
        target = out if out.is_contiguous() else _core.empty(tuple(out.shape), out.dtype)
        if low and (kind in ("uniform", "exponential") or out.dtype is bfloat16):
            # float16: the same words as float32; bfloat16: always drawn as float32
            target = _core.empty(tuple(out.shape), float32)
        getattr(_random, kind)(target, seed, offset, *params)
        if kind == "uniform" and low and params[1] > params[0]:
            # rounding to float16 / bfloat16 would turn values just below `to` into `to`
            target = _core.elementwise("minimum", target,
                                       max(low_float_below(params[1], out.dtype), params[0]))
        if target is not out:
            _core.copy_into(out, target)
        return out


    # the checks raise error(position) at the first bad value (a device raises it at
    # its next synchronizing read: backends/gpu deferred_check)
    def normalize(self, index, size, allow_negative, error):
        c = _core.astype(index, int64)     # a contiguous copy, wrapped in place
        bad = _index.normalize(c, size, allow_negative)
        if bad >= 0:
            raise error(bad)
        return c

    def check_targets(self, target, C, ignore_index, error):
        bad = _loss.check_targets(target, C, ignore_index)
        if bad >= 0:
            raise error(bad)


_index = importlib.import_module("ember._C.index")
_loss = importlib.import_module("ember._C.loss")
_random = importlib.import_module("ember._C.random")
_matmul = importlib.import_module("ember._C.matmul")
for _name, _family in HAND_WRITTEN_KERNELS.items():
    if _name not in CPUBackend.__dict__:
        setattr(CPUBackend, _name,
                staticmethod(getattr(importlib.import_module(f"ember._C.{_family}"), _name)))

_backend = None


def get_cpu_capability() -> str:
    """The vector instruction set ember's CPU kernels use on this machine, in
    torch.backends.cpu.get_cpu_capability's words: "AVX2" where the CPU has AVX2 and
    FMA (the GEMM, conv, softmax and op-table loops then run their AVX2 versions),
    else "DEFAULT" (the portable kernels). ember has no AVX-512 kernels, so an
    AVX-512 CPU reports "AVX2" here where PyTorch would say "AVX512"; the instruction
    sets themselves are in ember.cpu.get_capabilities()."""
    f = _core._cpu_features()
    return "AVX2" if f["avx2"] and f["fma3"] else "DEFAULT"


def get_backend():
    """The backend, created on first use (by ember._C.core's backend_for)."""
    global _backend
    if _backend is None:
        _backend = CPUBackend()
    return _backend
