"""ember.use_deterministic_algorithms and its readers (torch's names).

Every ember kernel is deterministic: the same inputs on the same device give the
same bits on every run. On the CPU, threads split work so that each element is
written once, and reductions fold fixed-size chunks in order, so results do not even
depend on the thread count (kernels/cpu/iterator.c). On CUDA and OpenCL, reductions
combine in a fixed tree; scatter with accumulation (index_put_(accumulate=True),
index_add_, scatter_add_, the backward of indexing and of embedding) runs in one
ordered work-item instead of with atomic adds, so repeated indices accumulate in
order; convolutions and matrix products are GEMMs with a fixed summation order.
Random numbers are deterministic given the seed (a counter-based Philox stream).

So use_deterministic_algorithms(True) is honoured trivially: no op needs another
algorithm and none has to raise, which PyTorch does for the ops it has only in a
nondeterministic form. The mode is recorded and read back by
are_deterministic_algorithms_enabled().
"""
from __future__ import annotations

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode"]

_mode = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Require deterministic algorithms (mode=True); every ember op already is one
    (see this module's docstring), so no op raises or warns under it."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got "
                        f"{type(mode).__name__}")
    _mode["enabled"], _mode["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _mode["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _mode["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """0 / "default", 1 / "warn", 2 / "error", as torch.set_deterministic_debug_mode:
    the same as use_deterministic_algorithms(False), (True, warn_only=True), (True)."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"set_deterministic_debug_mode: invalid mode {debug_mode!r}, "
                               f"expected one of {sorted(modes)}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2) or isinstance(debug_mode, bool):
        raise RuntimeError(f"set_deterministic_debug_mode: invalid mode {debug_mode!r}, "
                           f"expected 0, 1 or 2")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _mode["enabled"]:
        return 0
    return 1 if _mode["warn_only"] else 2
