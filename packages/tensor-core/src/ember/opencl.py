"""ember.opencl: the OpenCL backend's public face (AMD, Intel, NVIDIA, CPUs through PoCL).

`em.device("opencl")` / `"opencl:N"` name the devices of every OpenCL platform in
order; EMBER_OPENCL_PLATFORM=<index or part of a platform name> keeps one platform.
The backend (ember/backends/opencl.py) needs pyopencl and an OpenCL driver
(`pip install ember-tensor-core[opencl]` installs pyopencl and PoCL, an OpenCL on
the CPU); without them is_available() is False.
"""
from __future__ import annotations

from ember._C import core as _core

_backend = None
_error = None


def get_backend():
    """The backend, created on first use (ember._C.core's backend_for asks), None where
    pyopencl or an OpenCL driver is missing."""
    global _backend, _error
    if _backend is None and _error is None:
        try:
            from ember.backends.opencl import OpenCLBackend
            _backend = OpenCLBackend()
        except ImportError as e:   # no pyopencl, or no ICD loader
            _error = f"pyopencl is not usable ({e}); pip install pyopencl pocl-binary-distribution"
    return _backend


def _require():
    b = get_backend()
    if b is None or not b.devices:
        raise RuntimeError(f"ember.opencl: no OpenCL device is available "
                           f"({_error or _unusable() or 'no platform reports a device'})")
    return b


def _unusable():
    from ember.backends.opencl import UNUSABLE
    return "; ".join(f"{name} cannot build programs: {why}" for name, why in UNUSABLE)


def _device(device):
    d = _core.as_device("opencl" if device is None else
                        f"opencl:{device}" if isinstance(device, int) else device)
    if d.type != "opencl":
        raise ValueError(f"ember.opencl: expected an opencl device, got {d}")
    return d


def is_available() -> bool:
    b = get_backend()
    return b is not None and bool(b.devices)


def device_count() -> int:
    b = get_backend()
    return 0 if b is None else len(b.devices)


def get_device_name(device=None) -> str:
    b = _require()
    d = _device(device)
    idx = d.index if d.index >= 0 else b.current_index
    if idx >= len(b.devices):
        raise RuntimeError(f"ember.opencl: device {d} does not exist ({len(b.devices)} "
                           f"device(s))")
    dev = b.devices[idx]
    return f"{dev.name.strip()} ({dev.platform.name.strip()})"


def synchronize(device=None):
    """Wait for every launch and copy queued; raises a deferred index check's
    IndexError (an index or class target out of range found by an earlier launch)."""
    if _backend is not None:
        _backend.synchronize(device)
        _backend.check_errors()


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by live tensors (rounded to the pool's bins)."""
    return _require().memory_allocated(_device(device))


def memory_reserved(device=None) -> int:
    """Bytes the memory pool holds: in use plus cached for reuse."""
    return _require().memory_reserved(_device(device))


def empty_cache(device=None):
    """Return the pool's cached (unused) blocks to the driver."""
    _require().empty_cache(_device(device))


def counters() -> dict:
    """Kernel launches and host<->device transfers since reset_counters()."""
    return _require().counters()


def reset_counters():
    _require().reset_counters()


def manual_seed(seed: int):
    """Seed the generators (every device shares the CPU's Philox stream definition)."""
    import ember
    ember.manual_seed(seed)
