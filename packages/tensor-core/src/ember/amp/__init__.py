"""ember.amp: automatic mixed precision, as torch.amp.

    scaler = ember.amp.GradScaler("cpu")
    for x, y in data:
        with ember.autocast("cpu", dtype=ember.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()

`autocast` (autocast_mode.py) casts the ops of PyTorch's lists (_policy.py) inside a
region; `GradScaler` (grad_scaler.py) scales the loss so float16 gradients do not
underflow and skips the steps whose gradients overflowed.
"""
from __future__ import annotations

from ember.amp.autocast_mode import (  # noqa: F401
    autocast,
    custom_bwd,
    custom_fwd,
    is_autocast_available,
)
from ember.amp.grad_scaler import GradScaler, OptState  # noqa: F401

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available"]

from ember.amp import _device_amp as _device_amp  # noqa: E402

_device_amp.install()       # ember.cuda.amp, ember.cpu.amp
