"""Fold (col2im) and Unfold (im2col) over ember.nn.functional.fold/unfold."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import int_tuple
from ember.nn.modules.module import Module

__all__ = ["Fold", "Unfold"]


def _check(op, **values):
    for name, v in values.items():     # kept as given (PyTorch's attributes)
        int_tuple(op, name, v, 2)


class Fold(Module):
    """(N, C * prod(kernel_size), L) -> (N, C, *output_size), overlaps summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        _check("Fold", output_size=output_size, kernel_size=kernel_size, dilation=dilation,
               padding=padding, stride=stride)
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """(N, C, H, W) -> (N, C * prod(kernel_size), L): the sliding blocks as columns."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        _check("Unfold", kernel_size=kernel_size, dilation=dilation, padding=padding,
               stride=stride)
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
