"""Pooling layers over tensor-core's pooling kernels."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, int_tuple, real
from ember.nn.modules.module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "MaxPool3d", "AvgPool3d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool3d"]


def _check_window(layer, kernel_size, stride, padding, dilation=1):
    """Ints or tuples of the layer's rank; kept as given (PyTorch's attributes), their
    values checked by the pooling op."""
    op, n = type(layer).__name__, layer._dims
    int_tuple(op, "kernel_size", kernel_size, n)
    if stride is not None:
        int_tuple(op, "stride", stride, n)
    int_tuple(op, "padding", padding, n)
    int_tuple(op, "dilation", dilation, n)


class _MaxPool(Module):
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        _check_window(self, kernel_size, stride, padding, dilation)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool):
    _dims = 1

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool2d(_MaxPool):
    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool1d(Module):
    _dims = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        _check_window(self, kernel_size, stride, padding)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(AvgPool1d):
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _Adaptive(Module):
    _dims = 2

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        # None keeps that dim's input size
        int_tuple(type(self).__name__, "output_size", output_size, self._dims, 0, none_ok=True)
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    _dims = 1

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive):
    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_Adaptive):
    _dims = 1

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive):
    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class _LPPool(Module):
    _dims = 2

    @checked(norm_type=real())
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        _check_window(self, kernel_size, stride, 0)
        self.norm_type, self.kernel_size, self.stride = norm_type, kernel_size, stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """(sum over each window of x^p)^(1/p)."""
    _dims = 1

    def forward(self, input):
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(_LPPool):
    """(sum over each window of x^p)^(1/p)."""

    def forward(self, input):
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride,
                           self.ceil_mode)


class _MaxUnpool(Module):
    _dims = 2
    _forward_tensors = ("input", "indices")

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n, op = self._dims, type(self).__name__
        self.kernel_size = int_tuple(op, "kernel_size", kernel_size, n, 1)
        self.stride = int_tuple(op, "stride", stride if stride is not None else kernel_size,
                                n, 1)
        self.padding = int_tuple(op, "padding", padding, n, 0)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """MaxPool1d's partial inverse, from its indices."""
    _dims = 1

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool2d(_MaxUnpool):
    """MaxPool2d's partial inverse, from its indices."""

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool3d(_MaxUnpool):
    """MaxPool3d's partial inverse, from its indices."""
    _dims = 3

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxPool3d(_MaxPool):
    """Max pooling over (D, H, W) windows (F.max_pool3d)."""
    _dims = 3

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    """Average pooling over (D, H, W) windows (F.avg_pool3d)."""
    _dims = 3

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_Adaptive):
    """Adaptive average pooling to output_size (D, H, W) (F.adaptive_avg_pool3d)."""
    _dims = 3

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    """Adaptive max pooling to output_size (D, H, W) (F.adaptive_max_pool3d)."""
    _dims = 3

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)
