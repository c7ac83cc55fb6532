"""ember.cpu: torch.cpu's device-module functions for the CPU (what
ember.get_device_module("cpu") returns). CPU ops run synchronously on the calling
thread, so synchronize has nothing to wait for, as in PyTorch."""
from __future__ import annotations

from ember._C import core as _core

__all__ = ["is_available", "device_count", "current_device", "synchronize", "set_device"]


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
