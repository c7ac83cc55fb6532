"""ember.nn.functional: the stateless forms of the layers, activations and losses.

Each function is written with tensor-core ops (its fused kernels where there is one:
softmax, conv, pooling, norms, cross_entropy, dropout, embedding), so autograd
differentiates it through the derivative table and it runs on every device.
"""
from __future__ import annotations

import math

import ember as em

# activations ----------------------------------------------------------------------------


def relu(input, inplace=False):
    return input.relu_() if inplace else em.relu(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = em.where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    out = em.where(input > 0, input, alpha * em.expm1(input))
    return input.copy_(out) if inplace else out


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(input, alpha, inplace)


def celu(input, alpha=1.0, inplace=False):
    out = em.where(input > 0, input, alpha * em.expm1(input / alpha))
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x * Phi(x) (exact, with erf) or its tanh approximation."""
    if approximate == "none":
        return 0.5 * input * (1.0 + em.erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + em.tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False):
    out = input * em.sigmoid(input)
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above threshold (as PyTorch)."""
    bx = input * beta
    soft = em.log1p(em.exp(-em.abs(bx))) + em.relu(bx)   # stable for large |bx|
    return em.where(bx > threshold, input, soft / beta)


def mish(input, inplace=False):
    out = input * em.tanh(softplus(input))
    return input.copy_(out) if inplace else out


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} cannot be greater than max_val {max_val}")
    return input.clamp_(min_val, max_val) if inplace else em.clamp(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    return hardtanh(input / 6.0 + 0.5, 0.0, 1.0)


def hardswish(input, inplace=False):
    return input * hardsigmoid(input)


def logsigmoid(input):
    return -softplus(-input)


def tanh(input):
    return em.tanh(input)


def sigmoid(input):
    return em.sigmoid(input)


def softsign(input):
    return input / (1 + em.abs(input))


def tanhshrink(input):
    return input - em.tanh(input)


def threshold(input, threshold, value, inplace=False):
    out = em.where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def glu(input, dim=-1):
    a, b = input.chunk(2, dim)
    return a * em.sigmoid(b)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1     # PyTorch's legacy implicit choice
    return em.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return em.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


# dropout -------------------------------------------------------------------------------

def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training
    only), with ember's Philox generator."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    out = em.dropout(input, p, True)
    return input.copy_(out) if inplace else out


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    raise NotImplementedError("alpha_dropout is not implemented in ember.nn")


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 4, "dropout2d")


def _channel_dropout(input, p, training, inplace, batched_ndim, op):
    """Zero whole channels: one draw per (sample, channel)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise ValueError(f"{op}: expected {batched_ndim - 1}-D or {batched_ndim}-D input, got "
                         f"shape {tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    keep_shape = tuple(input.shape[:input.ndim - batched_ndim + 2]) + \
        (1,) * (batched_ndim - 2)
    mask = em.dropout(em.ones(keep_shape, dtype=input.dtype, device=input.device), p, True)
    out = input * mask
    return input.copy_(out) if inplace else out


# convolution and pooling ------------------------------------------------------------------

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return em.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return em.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return em.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return em.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return em.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return em.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return em.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return em.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def adaptive_avg_pool1d(input, output_size):
    return em.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return em.adaptive_avg_pool2d(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return em.adaptive_max_pool1d(input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return em.adaptive_max_pool2d(input, output_size, return_indices)


# normalization and embedding --------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return em.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    return em.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                         eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of channels of each sample: layer_norm over (C/G, *spatial)."""
    if input.ndim < 2:
        raise ValueError(f"group_norm: expected at least 2-D input (N, C, ...), got shape "
                         f"{tuple(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the number of "
                         f"channels {c} (input shape {tuple(input.shape)})")
    grouped = input.reshape(n, num_groups, -1)
    out = em.layer_norm(grouped, (grouped.shape[-1],), None, None, eps).reshape(input.shape)
    affine = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(affine)
    if bias is not None:
        out = out + bias.reshape(affine)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if not use_input_stats:
        raise NotImplementedError("instance_norm: use_input_stats=False is not supported")
    return group_norm(input, input.shape[1], weight, bias, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    return em.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


# linear --------------------------------------------------------------------------------

def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    if input.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: input has last dimension {input.shape[-1] if input.ndim else '()'} "
                         f"but weight has shape {tuple(weight.shape)} (in_features "
                         f"{weight.shape[-1]})")
    out = input @ weight.T
    return out + bias if bias is not None else out


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = x1[..., i] W[k, i, j] x2[..., j] + b[k]."""
    out = em.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out
