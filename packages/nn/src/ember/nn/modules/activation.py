"""Activation modules: thin layers over ember.nn.functional."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, index, optional, real
from ember.nn.modules.module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
           "Softplus", "Tanh", "Sigmoid", "Hardtanh", "Hardsigmoid", "Hardswish",
           "LogSigmoid", "Softsign", "Tanhshrink", "Threshold", "GLU", "Softmax",
           "LogSoftmax", "Softmin"]


class _Inplace(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    def forward(self, input):
        return F.relu(input, self.inplace)


class ReLU6(_Inplace):
    def forward(self, input):
        return F.relu6(input, self.inplace)


class SiLU(_Inplace):
    def forward(self, input):
        return F.silu(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input):
        return F.mish(input, self.inplace)


class SELU(_Inplace):
    def forward(self, input):
        return F.selu(input, self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input):
        return F.hardsigmoid(input)


class Hardswish(_Inplace):
    def forward(self, input):
        return F.hardswish(input)


class LeakyReLU(Module):
    @checked(negative_slope=real())
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    @checked(alpha=real())
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    @checked(beta=real(), threshold=real())
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class Hardtanh(Module):
    @checked(min_val=real(), max_val=real())
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + \
            (", inplace=True" if self.inplace else "")


class Threshold(Module):
    @checked(threshold=real(), value=real())
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}"


class GLU(Module):
    @checked(dim=index)
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _DimModule(Module):
    @checked(dim=optional(index))
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_DimModule):
    def forward(self, input):
        return F.softmax(input, self.dim)


class LogSoftmax(_DimModule):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


class Softmin(_DimModule):
    def forward(self, input):
        return F.softmin(input, self.dim)
