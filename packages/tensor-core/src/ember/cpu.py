"""ember.cpu: torch.cpu's device-module functions for the CPU (what
ember.get_device_module("cpu") returns). CPU ops run synchronously on the calling
thread, so synchronize has nothing to wait for, as in PyTorch."""
from __future__ import annotations

from ember._C import core as _core

__all__ = ["is_available", "device_count", "current_device", "synchronize", "set_device",
           "get_capabilities"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """Accepts only the CPU (torch.cpu.set_device does nothing else either)."""
    if _core.as_device(device).type != "cpu":
        raise ValueError(f"ember.cpu.set_device: expected the cpu device, got {device!r}")


def synchronize(device=None) -> None:
    """Waits for the CPU's work: there is none pending (ops are synchronous)."""
    if device is not None and _core.as_device(device).type != "cpu":
        raise ValueError(f"ember.cpu.synchronize: expected the cpu device, got {device!r}")


def get_capabilities():
    """The CPU's instruction sets as torch.cpu.get_capabilities names them (an
    immutable mapping: "architecture", then "avx2", "fma3", "avx512_f", "avx512_bf16",
    ... -> bool; off x86 only "architecture"). ember's kernels use AVX2 and FMA at most
    (ember.backends.cpu.get_cpu_capability)."""
    import platform
    from types import MappingProxyType
    caps = {"architecture": platform.machine()}
    if platform.machine() in ("x86_64", "AMD64"):
        caps.update(_core._cpu_features())
    return MappingProxyType(caps)
