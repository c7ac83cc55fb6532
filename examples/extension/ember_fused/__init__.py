"""ember-fused: a fused bias + GELU op written in Cython + C, differentiable through
em.autograd.Function, and an nn layer that uses it (see README.md)."""
import importlib.util
import os

import ember as em
from ember import nn

if importlib.util.find_spec("ember_fused._ops") is not None:
    from ember_fused import _ops as kernels  # built ahead of time: pip install .
else:
    # a source checkout: compile the same sources just in time (cached after the first run)
    from ember.utils.extension import load
    _here = os.path.dirname(os.path.abspath(__file__))
    kernels = load("ember_fused_ops", [os.path.join(_here, "_ops.pyx"),
                                       os.path.join(_here, "bias_gelu.c")])

__all__ = ["BiasGELU", "bias_gelu", "LinearGELU"]


class BiasGELU(em.autograd.Function):
    """y = gelu(x + bias), with both kernels in C."""

    @staticmethod
    def forward(ctx, x, bias):
        y = kernels.bias_gelu_forward(x, bias)      # checks the arguments first
        ctx.save_for_backward(x, bias)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, bias = ctx.saved_tensors
        return kernels.bias_gelu_backward(grad, x, bias)


def bias_gelu(x, bias):
    """gelu(x + bias) for x of shape (..., C) and bias of shape (C,), float32 or float64."""
    return BiasGELU.apply(x, bias)


class LinearGELU(nn.Module):
    """gelu(x @ weight.T + bias): nn.Linear followed by GELU, with the bias add and the
    activation fused into one kernel."""

    def __init__(self, in_features, out_features, dtype=None):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False, dtype=dtype)
        self.bias = nn.Parameter(em.zeros(out_features, dtype=dtype))

    def forward(self, x):
        return bias_gelu(self.linear(x), self.bias)
