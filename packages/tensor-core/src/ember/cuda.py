"""ember.cuda: the NVIDIA backend's public face (PyTorch's torch.cuda names).

The backend (ember._C.cuda) is built where nvcc is found (USE_CUDA=auto|0|1 at build
time). It links the CUDA runtime statically and loads the driver when first asked, so
on machines without a driver or GPU it imports, is_available() is False and every
call that needs a device raises a RuntimeError saying why.

Memory: each device has a caching allocator (size-binned blocks, split and reused,
returned to the driver by empty_cache() or when an allocation would otherwise fail);
memory_allocated / memory_reserved / memory_stats read its counters.
"""
from __future__ import annotations

from ember import _legacy
from ember._build_config import BUILD_CONFIG

__all__ = [
    "is_available", "is_built", "device_count", "current_device", "set_device",
    "get_device_name", "get_device_properties", "get_device_capability", "is_bf16_supported",
    "synchronize",
    "manual_seed", "manual_seed_all", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "memory_stats",
    "empty_cache", "mem_get_info", "Event", "OutOfMemoryError", "CudaError",
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
]


def _runtime():
    """ember._C.cuda, or a RuntimeError naming why there is none."""
    if not BUILD_CONFIG.get("cuda"):
        raise RuntimeError("ember.cuda: ember was built without CUDA support (nvcc was not "
                           "found at build time, or USE_CUDA=0); rebuild with USE_CUDA=1 "
                           "where nvcc is installed")
    from ember._C import cuda
    return cuda


import ember.backends.cuda  # noqa: E402,F401  (em.backends.cuda.matmul.allow_tf32 on every build)

if BUILD_CONFIG.get("cuda"):
    from ember._C.cuda import CudaError, OutOfMemoryError  # noqa: F401
else:
    from ember._errors import (
        AcceleratorError as _AcceleratorError,
        OutOfMemoryError,  # noqa: F401
    )

    class CudaError(_AcceleratorError):
        """An error reported by the CUDA runtime (raised on CUDA builds)."""


def get_backend():
    """The CUDA backend (ember._C.core's backend_for asks on first use), None in a build
    without CUDA. It exists also without a device: allocating then says why there is
    none."""
    return ember.backends.cuda.get() if BUILD_CONFIG.get("cuda") else None


def is_built() -> bool:
    """Whether this ember was compiled with the CUDA backend."""
    return bool(BUILD_CONFIG.get("cuda"))


def is_available() -> bool:
    """Whether a CUDA device can be used: built with CUDA, a driver and a GPU present."""
    return is_built() and _runtime().device_count() > 0


def device_count() -> int:
    return _runtime().device_count() if is_built() else 0


def _index(device=None) -> int:
    """The device index of None (the current device), an int, "cuda:N" or a device."""
    rt = _runtime()
    if device is None:
        return rt.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    from ember._C.core import as_device
    d = as_device(device)
    if d.type != "cuda":
        raise ValueError(f"ember.cuda: expected a cuda device, got {d}")
    return rt.current_device() if d.index < 0 else d.index


def current_device() -> int:
    return _runtime().current_device()


def set_device(device) -> None:
    _runtime().set_device(_index(device))


def get_device_properties(device=None) -> dict:
    """name, total_memory, major, minor, multi_processor_count, ... of a device."""
    return _runtime().get_device_properties(_index(device))


def get_device_name(device=None) -> str:
    return get_device_properties(device)["name"]


def get_device_capability(device=None) -> tuple:
    p = get_device_properties(device)
    return p["major"], p["minor"]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device supports bfloat16 (torch.cuda.is_bf16_supported):
    False where CUDA is not available; True on compute capability 8.0 and later
    (Ampere: bfloat16 tensor cores); on older devices, with including_emulation,
    whether a bfloat16 tensor can be made there (ember computes bfloat16 in float32
    on every device, so it can)."""
    if not is_available():
        return False
    if get_device_capability()[0] >= 8:
        return True
    if not including_emulation:
        return False
    try:
        import ember
        ember.ones(1, dtype=ember.bfloat16, device="cuda")
        return True
    except Exception:
        return False


def synchronize(device=None) -> None:
    """Wait for every kernel and copy queued on the device (all devices when None
    is given and none is current); raises a deferred index check's IndexError."""
    _runtime().synchronize(None if device is None else _index(device))
    if ember.backends.cuda._backend is not None:
        ember.backends.cuda._backend.check_errors()


def manual_seed(seed: int) -> None:
    """Seed the CUDA generators. ember has one Philox4x32-10 stream definition on every
    device, so this is the same seed as ember.manual_seed: a seed gives the same
    numbers on the CPU and on the GPU."""
    import ember
    ember.manual_seed(seed)


manual_seed_all = manual_seed


def _alloc(device):
    return _runtime().allocator(_index(device))


def memory_stats(device=None) -> dict:
    """The caching allocator's counters under PyTorch's key names
    ("allocated_bytes.all.current", "reserved_bytes.all.peak", "num_ooms", ...)."""
    return _alloc(device).stats()


def memory_allocated(device=None) -> int:
    """Bytes in blocks handed out to tensors (block sizes, rounded up to 512)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    """Bytes the allocator holds from the driver (allocated + cached)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    _alloc(device).reset_peak_stats()


def empty_cache() -> None:
    """Give every cached, unused block (all devices, and pinned host memory) back to
    the driver. Tensors still alive keep their memory."""
    if is_built() and _runtime().device_count() > 0:
        _runtime().empty_cache()


def _is_pinned_owner(owner) -> bool:
    """Whether a CPU storage's owner is a block of pinned memory (Tensor.is_pinned)."""
    return owner is not None and is_built() and _runtime().is_pinned_block(owner)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device, as the driver reports them."""
    return _runtime().mem_get_info(_index(device))


class Event:
    """A point in a device's stream: record() it, then elapsed_time(other) in ms."""

    def __init__(self, enable_timing=True, device=None):
        self._ev = _runtime().Event(_index(device))

    def record(self):
        self._ev.record()

    def synchronize(self):
        self._ev.synchronize()

    def query(self) -> bool:
        return self._ev.query()

    def elapsed_time(self, end: Event) -> float:
        return self._ev.elapsed_time(end._ev)


# PyTorch's legacy CUDA types (torch.cuda.FloatTensor, ...): ember._legacy's rules, on
# CUDA devices
FloatTensor = _legacy.make("FloatTensor", "float32", "cuda")
DoubleTensor = _legacy.make("DoubleTensor", "float64", "cuda")
HalfTensor = _legacy.make("HalfTensor", "float16", "cuda")
BFloat16Tensor = _legacy.make("BFloat16Tensor", "bfloat16", "cuda")
LongTensor = _legacy.make("LongTensor", "int64", "cuda")
IntTensor = _legacy.make("IntTensor", "int32", "cuda")
ShortTensor = _legacy.make("ShortTensor", "int16", "cuda")
CharTensor = _legacy.make("CharTensor", "int8", "cuda")
ByteTensor = _legacy.make("ByteTensor", "uint8", "cuda")
BoolTensor = _legacy.make("BoolTensor", "bool", "cuda")
