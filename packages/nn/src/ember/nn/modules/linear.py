"""Identity, Linear, LazyLinear, Bilinear, Flatten, Unflatten."""
from __future__ import annotations

import math

import ember as em
from ember.nn import functional as F, init
from ember.nn._checks import checked, index, ints, size
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "LazyLinear", "Bilinear", "Flatten", "Unflatten"]


class Identity(Module):
    _forward_tensors = ()     # returns whatever it is given, as PyTorch's

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ W.T + b, with W of shape (out_features, in_features), initialised
    U(-1/sqrt(in), 1/sqrt(in)) like PyTorch (kaiming_uniform_ with a=sqrt(5))."""

    @checked(in_features=size, out_features=size)
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(em.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(em.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        if input.ndim == 0 or input.shape[-1] != self.in_features:
            last = input.shape[-1] if input.ndim else "none (a 0-d tensor)"
            raise ValueError(f"{self!r} got input with last dimension {last} (input shape "
                             f"{tuple(input.shape)})")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of the first input; then a Linear."""

    cls_to_become = Linear

    @checked(out_features=size)
    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, bias, device, dtype)

    def _sizes_from_input(self, input, *args, **kwargs):
        if input.ndim == 0:
            raise ValueError("LazyLinear: cannot infer in_features from a 0-d input")
        self.in_features = input.shape[-1]

    def _sizes_from_state(self, shapes):
        if len(shapes.get("weight", ())) != 2:
            return False
        self.in_features = shapes["weight"][1]
        return True

    def _lazy_shapes(self):
        return {"weight": (self.out_features, self.in_features)}


class Bilinear(Module):
    """y = x1^T A x2 + b over the last dims, A of shape (out, in1, in2)."""

    @checked(in1_features=size, in2_features=size, out_features=size)
    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(em.empty(out_features, in1_features, in2_features,
                                         device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(em.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        last = tuple(t.shape[-1] if t.ndim else None for t in (input1, input2))
        if last != (self.in1_features, self.in2_features):
            raise ValueError(f"{self!r} got inputs of shapes {tuple(input1.shape)} and "
                             f"{tuple(input2.shape)}")
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    @checked(start_dim=index, end_dim=index)
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    @checked(dim=index, unflattened_size=ints())
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        d = self.dim if self.dim >= 0 else input.ndim + self.dim
        shape = tuple(input.shape)
        return input.reshape(shape[:d] + self.unflattened_size + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name, as torch.nn.modules.linear defines it (PyTorch's
    MultiheadAttention uses it for out_proj so its quantization tools skip that
    layer; ember has no quantization, so it is a Linear in every respect)."""
