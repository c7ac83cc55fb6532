"""Upsampling layers (torch.nn.modules.upsampling) over F.interpolate."""
from __future__ import annotations

import numbers

from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


def _check(op, name, v, kind, what):
    """None, one `kind` (never a bool) or a tuple/list of them; else a TypeError naming the
    layer and the argument."""
    def ok(x):
        return isinstance(x, kind) and not isinstance(x, bool)
    if v is None or ok(v) or (isinstance(v, (tuple, list)) and v and all(ok(x) for x in v)):
        return
    raise TypeError(f"{op}: {name} must be {what}, got {type(v).__name__} {v!r:.60}")


class Upsample(Module):
    """F.interpolate as a layer: size or scale_factor (kept as floats, as PyTorch),
    mode ('nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', 'trilinear',
    'area'), align_corners, recompute_scale_factor."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        _check(self.name, "size", size, numbers.Integral, "an int or a tuple of ints")
        _check(self.name, "scale_factor", scale_factor, numbers.Real,
               "a number or a tuple of numbers")
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample(size, scale_factor, mode='nearest') for 4-d inputs."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample(size, scale_factor, mode='bilinear', align_corners=True)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
