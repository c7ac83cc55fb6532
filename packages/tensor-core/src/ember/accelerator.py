"""ember.accelerator: the current accelerator, as torch.accelerator names it.

The accelerator is CUDA when a CUDA device is available (ember built with CUDA, a
driver and a GPU), else OpenCL when an OpenCL device is (ember.opencl), else there is
none: is_available() is False, current_accelerator() is None, device_count() is 0.

The device returned by current_accelerator() (``ember.device("cuda")`` or
``ember.device("opencl")``, without an index, as in PyTorch) is an ordinary
ember.device: ``tensor.to(dev)``, ``ember.zeros(3, device=dev)``, ``module.to(dev)``
all take it. A bare device type means the current device index, which
set_device_index() / device_index() change: for CUDA that is ember.cuda's current
device; for OpenCL it is the index a bare ``"opencl"`` resolves to (0 at start).
Streams (torch.accelerator.current_stream/set_stream) are not exposed: ember queues
each device's work on one stream.
"""
from __future__ import annotations

import operator

from ember._C import core as _core

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize", "device_index"]


def _kind():
    """"cuda", "opencl" or None: the first available of CUDA and OpenCL."""
    from ember import cuda, opencl
    if cuda.is_available():
        return "cuda"
    if opencl.is_available():
        return "opencl"
    return None


def is_available() -> bool:
    """Whether there is an accelerator: a CUDA or an OpenCL device can be used."""
    return _kind() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ember.device (no index), or None when there
    is none. ember picks the accelerator among the available ones, so it is always
    available (check_available, PyTorch's option to return None for an accelerator
    that was compiled in but is not usable, is accepted and changes nothing)."""
    kind = _kind()
    return None if kind is None else _core.Device(kind)


def device_count() -> int:
    """How many devices the accelerator has; 0 when there is none."""
    kind = _kind()
    if kind == "cuda":
        from ember import cuda
        return cuda.device_count()
    if kind == "opencl":
        from ember import opencl
        return opencl.device_count()
    return 0


def _require(op):
    kind = _kind()
    if kind is None:
        raise RuntimeError(f"ember.accelerator.{op}: there is no accelerator (no CUDA or "
                           f"OpenCL device is available); check "
                           f"ember.accelerator.is_available() first")
    return kind


def _opencl_backend():
    from ember import opencl
    return opencl.get_backend()


def current_device_index() -> int:
    """The index of the accelerator's current device (what a bare "cuda" or "opencl"
    device means). Raises RuntimeError when there is no accelerator."""
    kind = _require("current_device_index")
    if kind == "cuda":
        from ember import cuda
        return cuda.current_device()
    return _opencl_backend().current_index


def _index_of(device, kind, op):
    """The index in `device` (an int, "cuda:1", ember.device); -1 for a bare type."""
    if isinstance(device, (str, _core.Device)):
        d = _core.as_device(device)
        if d.type != kind:
            raise ValueError(f"ember.accelerator.{op}: {d} does not match the current "
                             f"accelerator ({kind})")
        return d.index
    try:
        return operator.index(device)
    except TypeError:
        raise TypeError(f"ember.accelerator.{op}: expected an int, a str or an "
                        f"ember.device, got {type(device).__name__}") from None


def set_device_index(device, /) -> None:
    """Make `device` (an index, "cuda:1", ember.device("opencl:0")) the current device
    of the accelerator; a negative index (a bare device type) changes nothing, as in
    PyTorch. An index past the last device raises."""
    kind = _require("set_device_index")
    idx = _index_of(device, kind, "set_device_index")
    if idx < 0:
        return
    n = device_count()
    if idx >= n:
        raise RuntimeError(f"ember.accelerator.set_device_index: device index {idx} is out "
                           f"of range: the {kind} accelerator has {n} device(s)")
    if kind == "cuda":
        from ember import cuda
        cuda.set_device(idx)
    else:
        _opencl_backend().current_index = idx


set_device_idx = set_device_index          # PyTorch's deprecated spelling
current_device_idx = current_device_index  # PyTorch's deprecated spelling


def synchronize(device=None, /) -> None:
    """Wait until every kernel and copy queued on the accelerator's device has finished
    (the current device when `device` is None). Raises when there is no accelerator."""
    kind = _require("synchronize")
    if device is not None:
        idx = _index_of(device, kind, "synchronize")
        device = _core.Device(kind, idx) if idx >= 0 else None
    if kind == "cuda":
        from ember import cuda
        cuda.synchronize(device)
    else:
        from ember import opencl
        opencl.synchronize(device)


class device_index:
    """``with ember.accelerator.device_index(1): ...`` makes device 1 current inside
    the block and restores the previous current device after it; ``None`` changes
    nothing."""

    def __init__(self, device, /):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False
