"""ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad in 1, 2 and 3
dims, over ember.nn.functional.pad."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, int_tuple, real
from ember.nn.modules.module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Zero", "Constant", "Reflection", "Replication",
                                         "Circular") for n in (1, 2, 3)]


class _PadNd(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        # an int pads every side; else (left, right[, top, bottom[, front, back]])
        self.padding = int_tuple(type(self).__name__, "padding", padding, 2 * self._dims)

    def forward(self, input):
        name, n = type(self).__name__, self._dims
        if self._mode != "constant" and input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{name}: expected {n + 1}D or {n + 2}D input, got shape "
                             f"{tuple(input.shape)}")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    @checked(value=real())
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    _dims = 1


class ZeroPad2d(_ZeroPadNd):
    _dims = 2


class ZeroPad3d(_ZeroPadNd):
    _dims = 3


class ReflectionPad1d(_PadNd):
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _dims, _mode = 3, "circular"
