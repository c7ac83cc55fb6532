"""ember.cuda.amp and ember.cpu.amp: PyTorch's per-device spellings of autocast,
GradScaler and custom_fwd/custom_bwd, with the device type fixed."""
from __future__ import annotations

import sys
import types

from ember.amp import autocast_mode as _mode
from ember.amp.grad_scaler import GradScaler as _GradScaler


def _module(device_type, default_dtype_name):
    mod = types.ModuleType(f"ember.{device_type}.amp",
                           f"ember.{device_type}.amp: torch.{device_type}.amp's spellings.")

    class autocast(_mode.autocast):
        __doc__ = (f"autocast({device_type!r}, ...): ember.{device_type}.amp.autocast("
                   f"enabled=True, dtype={default_dtype_name}, cache_enabled=True).")

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            super().__init__(device_type, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = f"GradScaler({device_type!r}, ...), as torch.{device_type}.amp.GradScaler."

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    def custom_fwd(fwd=None, *, cast_inputs=None):
        return _mode.custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)

    def custom_bwd(bwd=None):
        return _mode.custom_bwd(bwd, device_type=device_type)

    for obj in (autocast, GradScaler):
        obj.__module__ = mod.__name__
        obj.__qualname__ = obj.__name__
    mod.autocast, mod.GradScaler = autocast, GradScaler
    mod.custom_fwd, mod.custom_bwd = custom_fwd, custom_bwd
    mod.__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
    return mod


def install():
    import ember.cpu
    import ember.cuda
    for name, parent, default in (("cuda", ember.cuda, "float16"),
                                  ("cpu", ember.cpu, "bfloat16")):
        mod = _module(name, default)
        sys.modules[mod.__name__] = mod
        parent.amp = mod
