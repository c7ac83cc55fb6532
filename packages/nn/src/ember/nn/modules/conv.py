"""Convolution layers over tensor-core's conv kernels, with PyTorch's parameters and
initialisation (kaiming_uniform_ with a=sqrt(5), bias U(-1/sqrt(fan_in), ...))."""
from __future__ import annotations

import math

import ember as em
from ember.nn import functional as F, init
from ember.nn._checks import checked, int_tuple, positive, size
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConv3d", "LazyConvTranspose3d"]


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    @checked(in_channels=size, out_channels=size, groups=positive)
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, output_padding=0):
        super().__init__()
        name, n = type(self).__name__, self._dims
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must be positive and divide both "
                             f"in_channels={in_channels} and out_channels={out_channels}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {list(_PADDING_MODES)}, "
                             f"but got padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'{name}: Only "zeros" padding mode is supported for {name}')
        self.in_channels, self.out_channels = in_channels, out_channels
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: padding must be 'same', 'valid', {n} ints or an int, "
                             f"got {padding!r}")
        # ints here; their values are the conv's to check at forward, as in PyTorch
        # (but a kernel size makes the weight)
        self.kernel_size = int_tuple(name, "kernel_size", kernel_size, n, 0)
        self.stride = int_tuple(name, "stride", stride, n)
        self.padding = padding if isinstance(padding, str) else \
            int_tuple(name, "padding", padding, n)
        self.dilation = int_tuple(name, "dilation", dilation, n)
        self.output_padding = int_tuple(name, "output_padding", output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        self.transposed = self._transposed
        if isinstance(self.padding, str):
            if self.padding == "same" and any(st != 1 for st in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions")
            pads = [(0, 0)] * n if self.padding == "valid" else [
                (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                for d, k in zip(self.dilation, self.kernel_size)]
        else:
            pads = [(p, p) for p in self.padding]
        # F.pad's order (last dim first), for the non-zeros padding modes
        self._reversed_padding_repeated_twice = [a for pair in reversed(pads) for a in pair]
        shape = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(em.empty(shape + self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(em.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, " \
            f"stride={self.stride}"
        if self.padding != (0,) * self._dims:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else \
                f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":       # PyTorch's repr leaves the mode unquoted
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, conv, input, weight, bias):
        """conv over input, padded first by F.pad in the 'reflect', 'replicate' or
        'circular' padding_mode (then convolved unpadded), as PyTorch."""
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice,
                              mode=self.padding_mode),
                        weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation,
                    self.groups)


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class Conv1d(_ConvNd):
    """1-d convolution over F.conv1d; padding_mode 'reflect', 'replicate' or
    'circular' pads with F.pad first, as PyTorch."""
    _dims = 1

    def forward(self, input):
        return self._conv_forward(F.conv1d, input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-d convolution over F.conv2d; padding_mode as Conv1d's."""

    def forward(self, input):
        return self._conv_forward(F.conv2d, input, self.weight, self.bias)


class ConvTranspose1d(_ConvNd):
    _dims = 1
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class ConvTranspose2d(ConvTranspose1d):
    _dims = 2

    def forward(self, input):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class _LazyConvMixin(LazyModuleMixin):
    """in_channels from the first input: dim 1 batched, dim 0 unbatched."""

    def _sizes_from_input(self, input, *args, **kwargs):
        name, n = type(self).__name__, self._dims
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{name}: expected {n + 1}D (unbatched) or {n + 2}D (batched) "
                             f"input, got shape {tuple(input.shape)}")
        c = input.shape[1] if input.ndim == n + 2 else input.shape[0]
        if c % self.groups:
            raise ValueError(f"{name}: groups={self.groups} must divide the input's "
                             f"{c} channels")
        self.in_channels = c

    def _sizes_from_state(self, shapes):
        w = shapes.get("weight", ())
        if len(w) != self._dims + 2:
            return False
        self.in_channels = w[0] if self.transposed else w[1] * self.groups
        return True

    def _lazy_shapes(self):
        c = self.in_channels
        shape = (c, self.out_channels // self.groups) if self.transposed else \
            (self.out_channels, c // self.groups)
        return {"weight": shape + self.kernel_size}


class LazyConv1d(_LazyConvMixin, Conv1d):
    cls_to_become = Conv1d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class LazyConv2d(_LazyConvMixin, Conv2d):
    cls_to_become = Conv2d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    cls_to_become = ConvTranspose1d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device, dtype)


class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    cls_to_become = ConvTranspose2d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """3-d convolution over F.conv3d; padding_mode as Conv1d's."""
    _dims = 3

    def forward(self, input):
        return self._conv_forward(F.conv3d, input, self.weight, self.bias)


class ConvTranspose3d(ConvTranspose1d):
    """The transposed 3-d convolution over F.conv_transpose3d."""
    _dims = 3

    def forward(self, input):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class LazyConv3d(_LazyConvMixin, Conv3d):
    """Conv3d with in_channels inferred from the first input."""
    cls_to_become = Conv3d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class LazyConvTranspose3d(_LazyConvMixin, ConvTranspose3d):
    """ConvTranspose3d with in_channels inferred from the first input."""
    cls_to_become = ConvTranspose3d

    @checked(out_channels=size, groups=positive)
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device, dtype)
