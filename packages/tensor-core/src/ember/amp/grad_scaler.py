"""ember.amp.GradScaler: PyTorch's dynamic loss scaling for float16 training.

The loss is multiplied by the scale before backward, so small float16 gradients do not
flush to zero; unscale_ divides the gradients back (in place, one fused pass over all
of an optimizer's gradients per device: ember._amp_foreach_non_finite_check_and_unscale_)
and notes whether any was inf or NaN; step skips the optimizer's step when one was;
update halves the scale after an overflow and doubles it after growth_interval clean
steps (ember._amp_update_scale_). The scale, the growth tracker and the inf flags are
tensors on the gradients' device, and step hands the flag to an optimizer that takes it
(`_step_supports_amp_scaling`: ember.optim's Adam, AdamW and SGD, whose device kernels
skip the update there), so scale, unscale_, step and update make no host read; other
optimizers cost step one read of the flags.
"""
from __future__ import annotations

import enum
import numbers
import warnings
from collections import defaultdict

import ember as _em
from ember._C import core as _core

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _available(device_type):
    if device_type == "cpu":
        return True
    mod = getattr(_em, device_type, None)
    return bool(mod is not None and mod.is_available())


class GradScaler:
    """GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True), as torch.amp.GradScaler; ember.cuda.amp.GradScaler
    takes the same arguments without device. enabled=False (or a device type that is not
    available, with a warning) makes every method a pass-through."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if isinstance(device, _core.Device):
            device = device.type
        if not isinstance(device, str):
            raise TypeError(f"GradScaler: device must be a str such as 'cuda' or 'cpu', got "
                            f"{device!r}")
        self._device = device.split(":")[0]
        self._enabled = bool(enabled)
        if self._enabled and not _available(self._device):
            warnings.warn(f"ember.amp.GradScaler is enabled, but {self._device} is not "
                          f"available. Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor}")
            if not backoff_factor < 1.0:
                raise ValueError(f"GradScaler: backoff_factor should be < 1, got "
                                 f"{backoff_factor}")
            if not isinstance(growth_interval, numbers.Integral) or growth_interval <= 0:
                raise ValueError(f"GradScaler: growth_interval should be a positive int, got "
                                 f"{growth_interval!r}")
        self._init_scale = float(init_scale)
        self._scale = None
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- state ---------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier."
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  {fix}")
        if self._growth_tracker is None:
            raise RuntimeError(f"Attempted {funcname} but _growth_tracker is None.  {fix}")
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = _em.full((), self._init_scale, dtype=_em.float32, device=dev)
        self._growth_tracker = _em.full((), self._init_growth_tracker, dtype=_em.int32,
                                        device=dev)

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else \
            int(self._growth_tracker.item())

    # -- the steps -----------------------------------------------------------------
    def scale(self, outputs):
        """outputs * scale: a tensor, or any nesting of lists/tuples (and other
        iterables) of tensors."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _core.TensorBase):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        scales = {}

        def apply(val):
            if isinstance(val, _core.TensorBase):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                s = scales.get(val.device)
                if s is None:
                    s = scales[val.device] = self._scale.to(device=val.device)
                return val * s
            if isinstance(val, (list, tuple)):
                r = [apply(v) for v in val]
                return type(val)(r) if isinstance(val, tuple) and not hasattr(val, "_fields") \
                    else (type(val)(*r) if isinstance(val, tuple) else r)
            if hasattr(val, "__iter__") and not isinstance(val, (str, bytes, dict)):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device = defaultdict(list)          # device -> grads
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if not allow_fp16 and g.dtype is _em.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                per_device[g.device].append(g)
        found = {}
        for dev, grads in per_device.items():
            f = _em.zeros(1, dtype=_em.float32, device=dev) if found_inf is None else \
                found_inf.to(device=dev, copy=True)
            inv = inv_scale.to(device=dev)
            _em._amp_foreach_non_finite_check_and_unscale_(grads, f, inv)
            found[dev] = f
        return found

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place (call it before
        clipping them); once per optimizer between updates."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        with _em.no_grad():
            inv_scale = (1.0 / self._scale.double()).float().reshape(1)
            state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale,
                                                                 None, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        found = state["found_inf_per_device"]
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # PyTorch's protocol for its fused optimizers: step takes the flag
            # (optimizer.found_inf) and skips itself where the flag lies, so the step
            # makes no host read (ember.optim's Adam/AdamW/SGD; on a device their
            # kernels read it)
            flags = list(found.values())
            combined = flags[0]
            for f in flags[1:]:
                combined = combined + f.to(device=combined.device)
            optimizer.found_inf = combined
            try:
                return optimizer.step(*args, **kwargs)
            finally:
                del optimizer.found_inf
        if not sum(float(v.item()) for v in found.values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (unless done) and optimizer.step(*args, **kwargs), skipped when a
        gradient held an inf or NaN; returns what step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Grow or back off the scale from this iteration's inf checks (or set it to
        new_scale, a float or a one-element float32 tensor) and reset the per-optimizer
        stages."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        with _em.no_grad():
            if new_scale is not None:
                if isinstance(new_scale, numbers.Real):
                    scale.fill_(float(new_scale))
                else:
                    if not (isinstance(new_scale, _core.TensorBase) and new_scale.numel() == 1
                            and new_scale.dtype is _em.float32 and not new_scale.requires_grad):
                        raise ValueError("new_scale should be a float or a 1-element "
                                         "ember.float32 tensor with requires_grad=False.")
                    scale.copy_(new_scale.reshape(()))
            else:
                found_infs = [f.to(device=scale.device)
                              for state in self._per_optimizer_states.values()
                              for f in state["found_inf_per_device"].values()]
                if not found_infs:
                    raise AssertionError("No inf checks were recorded prior to update.")
                combined = found_infs[0]
                for f in found_infs[1:]:
                    combined = combined + f
                _em._amp_update_scale_(scale, tracker, combined.reshape(()),
                                       self._growth_factor, self._backoff_factor,
                                       self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- checkpoints ---------------------------------------------------------------
    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
