"""ember.nn.functional: the stateless forms of the layers, activations and losses.

Each function is written with tensor-core ops (its fused kernels where there is one:
softmax, conv, pooling, norms, cross_entropy, dropout, embedding), so autograd
differentiates it through the derivative table and it runs on every device.
"""
from __future__ import annotations

import math
import numbers
import sys
import warnings

import ember as em
from ember._args import check_tensor_args as _check_tensor_args
from ember._C import core as _core
from ember.nn._checks import (
    checked as _checked,
    index as _index_arg,
    int_or_ints as _int_or_ints,
    int_tuple as _int_tuple,
    ints as _ints,
    norm_order as _norm_order,
    optional as _optional,
    positive as _positive,
    real as _real,
    tensor as _tensor,
)
from ember.ops import attention as _attention

_number = _real()
_dim = _optional(_index_arg)
_no_record, _record, _transpose = _core._no_record, _core.record, _core.transpose

# activations ----------------------------------------------------------------------------




def relu(input, inplace=False):
    return input.relu_() if inplace else em.relu(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


@_checked(negative_slope=_number)
def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = em.where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


@_checked(alpha=_number)
def elu(input, alpha=1.0, inplace=False):
    out = em.where(input > 0, input, alpha * em.expm1(input))
    return input.copy_(out) if inplace else out


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    out = scale * elu(input, alpha)
    return input.copy_(out) if inplace else out


@_checked(alpha=_number)
def celu(input, alpha=1.0, inplace=False):
    out = em.where(input > 0, input, alpha * em.expm1(input / alpha))
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x * Phi(x) (exact, with erf) or its tanh approximation."""
    if approximate == "none":
        return em.gelu(input)
    if approximate == "tanh":     # one pass (op-table row), its derivative another
        return em._gelu_tanh(input)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False):
    out = input * em.sigmoid(input)
    return input.copy_(out) if inplace else out


@_checked(beta=_number, threshold=_number)
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above threshold (as PyTorch)."""
    bx = input * beta
    soft = em.log1p(em.exp(-em.abs(bx))) + em.relu(bx)   # stable for large |bx|
    return em.where(bx > threshold, input, soft / beta)


def mish(input, inplace=False):
    out = input * em.tanh(softplus(input))
    return input.copy_(out) if inplace else out


@_checked(min_val=_number, max_val=_number)
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


def hardshrink(input, lambd=0.5):
    """input where |input| > lambd, else 0 (ember.hardshrink)."""
    return em.hardshrink(input, lambd)


@_checked(lambd=_number)
def softshrink(input, lambd=0.5):
    """input - lambd above lambd, input + lambd below -lambd, else 0."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be no less than zero, got {lambd}")
    return em.where(input > lambd, input - lambd, em.where(input < -lambd, input + lambd, 0.0))


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight of one value or one per channel (dim 1;
    an input of fewer than 2 dims has one channel): ember.prelu."""
    return em.prelu(input, weight)


@_checked(lower=_number, upper=_number)
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomised leaky ReLU: in training, negative inputs are scaled by a slope drawn
    from U(lower, upper) per element with ember's generator; in eval, by the fixed
    (lower + upper) / 2."""
    if lower > upper:
        raise ValueError(f"rrelu: lower bound {lower} must be at most the upper bound {upper}")
    if training:
        slope = em.empty(input.shape, dtype=input.dtype, device=input.device).uniform_(
            lower, upper)
    else:
        slope = (lower + upper) / 2
    out = em.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


@_checked(threshold=_number, value=_number)
def threshold(input, threshold, value, inplace=False):
    out = em.where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


@_checked(dim=_index_arg)
def glu(input, dim=-1):
    if not -input.ndim <= dim < input.ndim:     # a 0-d input has nothing to halve
        raise IndexError(f"glu: dim {dim} is out of range for an input of shape "
                         f"{tuple(input.shape)}")
    if input.shape[dim] % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {dim} of the "
                         f"input shape {tuple(input.shape)} is not")
    a, b = input.chunk(2, dim)
    return a * em.sigmoid(b)


@_checked(dim=_dim)
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1     # PyTorch's legacy implicit choice
    return em.softmax(input, dim, dtype=dtype)


@_checked(dim=_dim)
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return em.log_softmax(input, dim, dtype=dtype)


@_checked(dim=_dim)
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


# dropout -------------------------------------------------------------------------------

@_checked(p=_number)
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training
    only), with ember's Philox generator."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    out = em.dropout(input, p, True)
    return input.copy_(out) if inplace else out


_SELU_ALPHA_PRIME = -1.7580993408473766     # -scale * alpha of SELU


def _alpha_dropout(input, p, training, inplace, feature, op):
    """Alpha dropout (Klambauer et al. 2017): dropped values are set to SELU's negative
    saturation and the result affinely rescaled to keep zero mean and unit variance;
    feature=True drops whole channels (one draw per (N, C))."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
        return input.copy_(out) if inplace else out
    if feature:
        if input.ndim < 2:
            raise ValueError(f"{op}: expected an input of at least 2 dims (N, C, *), got "
                             f"shape {tuple(input.shape)}")
        keep_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    else:
        keep_shape = tuple(input.shape)
    keep = em.dropout(em.ones(keep_shape, dtype=input.dtype, device=input.device), p, True)
    keep = (keep != 0).to(input.dtype)
    ap = _SELU_ALPHA_PRIME
    a = ((1 - p) * (1 + p * ap * ap)) ** -0.5
    b = -a * ap * p
    out = (input * keep + ap * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


@_checked(p=_number)
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False, "alpha_dropout")


@_checked(p=_number)
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True, "feature_alpha_dropout")


@_checked(p=_number)
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, L) or (C, L) input."""
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


@_checked(p=_number)
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, H, W) input, as PyTorch: a 3-D input is taken as
    (N, C, L) (with PyTorch's warning) and any other rank warns and drops per (N, C)
    entry, so a 2-D input is dropped per element."""
    op = "dropout2d"
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. "
                      f"Note that dropout2d exists to provide channel-wise dropout on inputs "
                      f"with 2 spatial dimensions, a channel dimension, and an optional batch "
                      f"dimension (i.e. 3D or 4D inputs).", UserWarning, stacklevel=2)
    elif input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      UserWarning, stacklevel=2)
    if input.ndim < 2:
        return dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


@_checked(p=_number)
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input; other ranks warn
    (as PyTorch) and drop per (N, C) entry."""
    op = "dropout3d"
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. "
                      f"Note that dropout3d exists to provide channel-wise dropout on inputs "
                      f"with 3 spatial dimensions, a channel dimension, and an optional batch "
                      f"dimension (i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    if not training or p == 0.0:
        return input
    if input.ndim == 4:           # unbatched (C, D, H, W)
        out = _feature_dropout(input.unsqueeze(0), p, True, False).squeeze(0)
        return input.copy_(out) if inplace else out
    if input.ndim < 2:
        return dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


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


def _feature_dropout(input, p, training, inplace):
    """One keep/drop draw per (N, C), broadcast over the other dims."""
    if not training or p == 0.0:
        return input
    keep_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
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


@_checked(norm_type=_number)
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), as PyTorch: avg_pool of x^p times the window
    size (negative sums clamped to 0), then the 1/p power."""
    (k,) = _int_tuple("lp_pool1d", "kernel_size", kernel_size, 1)
    out = em.avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (em.sign(out) * em.relu(em.abs(out)) * k).pow(1.0 / norm_type)


@_checked(norm_type=_number)
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The 2-d lp_pool1d."""
    kh, kw = _int_tuple("lp_pool2d", "kernel_size", kernel_size, 2)
    out = em.avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (em.sign(out) * em.relu(em.abs(out)) * (kh * kw)).pow(1.0 / norm_type)


def _max_unpool(op, input, indices, kernel_size, stride, padding, output_size, nd):
    kernel_size = _int_tuple(op, "kernel_size", kernel_size, nd, 1)
    stride = kernel_size if stride is None else _int_tuple(op, "stride", stride, nd, 1)
    padding = _int_tuple(op, "padding", padding, nd, 0)
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: expected a {nd + 1}-D or {nd + 2}-D input, got shape "
                         f"{tuple(input.shape)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: indices shape {tuple(indices.shape)} must match the input "
                         f"shape {tuple(input.shape)}")
    if indices.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: indices must be an integer tensor, got {indices.dtype!r}")
    spatial = tuple(input.shape[-nd:])
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in
                    zip(spatial, stride, padding, kernel_size))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-nd:]
        if len(size) != nd:
            raise ValueError(f"{op}: output_size must have {nd} (or {nd + 2}) elements, got "
                             f"{tuple(output_size)}")
        lo = tuple(d - s + 1 for d, s in zip(default, stride))
        hi = tuple(d + s - 1 for d, s in zip(default, stride))
        if not all(a <= o <= b for a, o, b in zip(lo, size, hi)):
            raise ValueError(f"{op}: invalid output_size {tuple(output_size)} (each dim size "
                             f"must be between {lo} and {hi})")
    lead = tuple(input.shape[:-nd])
    plane = math.prod(size)
    flat_idx = indices.reshape(*lead, -1).to(em.int64)
    if flat_idx.numel() and (int(flat_idx.min().item()) < 0 or
                             int(flat_idx.max().item()) >= plane):
        raise ValueError(f"{op}: found an invalid max index {int(flat_idx.max().item())} "
                         f"(output volume of size {size})")
    out = em.zeros(*lead, plane, dtype=input.dtype, device=input.device)
    out = out.scatter(-1, flat_idx, input.reshape(*lead, -1))
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool1d's partial inverse: each value put back at its index (from max_pool1d's
    return_indices), zeros elsewhere. A scatter, so autograd differentiates it."""
    return _max_unpool("max_unpool1d", input, indices, kernel_size, stride, padding,
                       output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool2d's partial inverse (indices flat over each H * W plane)."""
    return _max_unpool("max_unpool2d", input, indices, kernel_size, stride, padding,
                       output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool3d's partial inverse (indices flat over each D * H * W volume)."""
    return _max_unpool("max_unpool3d", input, indices, kernel_size, stride, padding,
                       output_size, 3)


# normalization and embedding --------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return em.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    return em.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                         eps)


@_checked(num_groups=_positive, eps=_number)
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


@_checked(momentum=_number, eps=_number)
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims (group_norm with one
    channel per group). With use_input_stats and running stats given, these are updated
    in place with the batch's mean of the instances' means and unbiased variances; with
    use_input_stats=False the running stats normalise instead (PyTorch's eval mode)."""
    op = "instance_norm"
    if input.ndim < 2:
        raise ValueError(f"{op}: expected input of at least 2 dims (N, C, ...), got shape "
                         f"{tuple(input.shape)}")
    if use_input_stats and input.shape[0] * math.prod(input.shape[2:]) == 1:
        raise ValueError(f"{op}: expected more than 1 spatial element when training, got "
                         f"input size {tuple(input.shape)}")   # PyTorch's check
    c = input.shape[1]
    affine = (1, c) + (1,) * (input.ndim - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise ValueError(f"{op}: {name} must have shape ({c},) for input shape "
                             f"{tuple(input.shape)}, got {tuple(t.shape)}")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: use_input_stats=False needs running_mean and "
                             f"running_var")
        out = (input - running_mean.reshape(affine)) / \
            em.sqrt(running_var.reshape(affine) + eps)
    else:
        out = group_norm(input, c, None, None, eps)
        if running_mean is not None or running_var is not None:
            with em.no_grad():
                flat = input.detach().reshape(input.shape[0], c, -1)
                n = flat.shape[-1]
                if running_mean is not None:
                    mean = flat.mean(-1).mean(0).to(running_mean.dtype)
                    running_mean.mul_(1 - momentum).add_(mean * momentum)
                if running_var is not None:
                    var = flat.var(-1, correction=1 if n > 1 else 0).mean(0)
                    running_var.mul_(1 - momentum).add_(var.to(running_var.dtype) * momentum)
    if weight is not None:
        out = out * weight.reshape(affine)
    if bias is not None:
        out = out + bias.reshape(affine)
    return out


def _norm_dims(op, input, normalized_shape):
    shape = tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise ValueError(f"{op}: normalized_shape {shape} must be the trailing dims of the "
                         f"input shape {tuple(input.shape)}")
    return tuple(range(input.ndim - len(shape), input.ndim))


@_checked(normalized_shape=_int_or_ints(0), eps=_optional(_number))
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2 over the normalized_shape dims) + eps) * weight; eps
    defaults to finfo(input.dtype).eps as in PyTorch. Composed from ember ops."""
    dims = _norm_dims("rms_norm", input, normalized_shape)
    if eps is None:
        eps = em.finfo(input.dtype).eps
    if weight is not None and tuple(weight.shape) != tuple(normalized_shape):
        raise ValueError(f"rms_norm: weight shape {tuple(weight.shape)} must be "
                         f"normalized_shape {tuple(normalized_shape)}")
    out = input * em.rsqrt((input * input).mean(dims, keepdim=True) + eps) if dims else \
        input * em.rsqrt(input * input + eps)
    return out * weight if weight is not None else out


@_checked(size=_positive, alpha=_number, beta=_number, k=_number)
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha / size * sum of input^2 over `size` neighbouring channels)^beta,
    the window zero-padded (size // 2 before, (size - 1) // 2 after), as PyTorch's.
    Composed from pad, unfold and mean."""
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: expected 3D or higher dimensional input, got "
                         f"shape {tuple(input.shape)}")
    if input.numel() == 0:
        return input
    sq = (input * input).movedim(1, -1)
    sq = pad(sq, (size // 2, (size - 1) // 2))
    div = sq.unfold(-1, size, 1).mean(-1).movedim(-1, 1)
    return input / (div * alpha + k) ** beta


@_checked(padding_idx=_optional(_index_arg), max_norm=_optional(_number),
          norm_type=_number)
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    return em.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


@_checked(max_norm=_optional(_number), norm_type=_number,
          padding_idx=_optional(_index_arg))
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings without the intermediate (bag, item,
    dim) tensor for sum and mean: a 2-D input holds one bag per row; a 1-D input is cut
    into bags at `offsets` (their starts; with include_last_offset the last offset is the
    end). Entries equal to padding_idx are left out (and not counted by mean); an empty
    bag gives zeros. per_sample_weights scale each entry (mode 'sum' only). Composed from
    embedding, repeat_interleave and index_add (max: a masked amax)."""
    op = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{op}: mode has to be one of sum, mean or max, got {mode!r}")
    if sparse:
        raise NotImplementedError(f"{op}: sparse gradients are not supported by ember")
    if input.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: expected an integer tensor of indices, got {input.dtype!r}")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight has to be a 2-D tensor, got shape "
                         f"{tuple(weight.shape)}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"{op}: per_sample_weights is only supported for mode='sum' "
                             f"(got mode={mode!r})")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"{op}: per_sample_weights shape "
                             f"{tuple(per_sample_weights.shape)} must match the input "
                             f"shape {tuple(input.shape)}")
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise ValueError(f"{op}: padding_idx {padding_idx} must be within num_embeddings "
                             f"{n}")
        padding_idx %= n
    device = input.device
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{op}: if input is 2D, then offsets has to be None, as input is "
                             f"treated as a mini-batch of fixed length sequences")
        bags, length = input.shape
        flat = input.reshape(-1)
        bag_ids = em.arange(bags, device=device).repeat_interleave(length)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif input.ndim == 1:
        if offsets is None or offsets.ndim != 1:
            raise ValueError(f"{op}: offsets has to be a 1D Tensor when input is 1D, got "
                             f"{None if offsets is None else tuple(offsets.shape)}")
        if offsets.dtype.kind not in ("int", "uint"):
            raise TypeError(f"{op}: offsets must be an integer tensor, got {offsets.dtype!r}")
        total = input.shape[0]
        offsets = offsets.to(em.int64).to(device)
        if include_last_offset:
            if offsets.shape[0] < 1:
                raise ValueError(f"{op}: include_last_offset needs at least one offset")
            end = int(offsets[-1].item())
            starts = offsets[:-1]
        else:
            end, starts = total, offsets
        bags = starts.shape[0]
        if bags and int(starts[0].item()) != 0:
            raise ValueError(f"{op}: offsets[0] has to be 0, i.e., the first sequence in the "
                             f"mini-batch has to start from position 0. However, got "
                             f"{int(starts[0].item())}")
        if not 0 <= end <= total:
            raise ValueError(f"{op}: the last offset {end} must be within the input length "
                             f"{total}")
        bounds = em.cat([starts, em.tensor([end], dtype=em.int64, device=device)])
        lengths = bounds[1:] - bounds[:-1]
        if bags and int(lengths.min().item()) < 0:
            raise ValueError(f"{op}: offsets must be non-decreasing and at most the input "
                             f"length {total}, got {offsets.tolist()}")
        flat = input[:end]
        bag_ids = em.arange(bags, device=device).repeat_interleave(lengths)
        psw = per_sample_weights[:end] if per_sample_weights is not None else None
    else:
        raise ValueError(f"{op}: input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    dim = weight.shape[1]
    emb = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    keep = None if padding_idx is None else (flat != padding_idx)
    if mode == "max":
        if flat.shape[0] == 0 or bags == 0:
            return em.zeros(bags, dim, dtype=weight.dtype, device=weight.device) + \
                weight.sum() * 0
        member = bag_ids.unsqueeze(0) == em.arange(bags, device=device).unsqueeze(1)
        if keep is not None:
            member = member & keep.unsqueeze(0)
        scores = em.where(member.unsqueeze(-1), emb.unsqueeze(0), float("-inf"))
        out = scores.amax(1)
        return em.where(member.any(1).unsqueeze(-1), out, 0.0)
    if psw is not None:
        emb = emb * psw.unsqueeze(-1).to(emb.dtype)
    if keep is not None:
        emb = emb * keep.unsqueeze(-1).to(emb.dtype)
    out = em.zeros(bags, dim, dtype=emb.dtype, device=emb.device).index_add(0, bag_ids, emb)
    if mode == "mean":
        ones = em.ones(flat.shape[0], dtype=emb.dtype, device=emb.device)
        if keep is not None:
            ones = ones * keep.to(emb.dtype)
        counts = em.zeros(bags, dtype=emb.dtype, device=emb.device).index_add(0, bag_ids,
                                                                              ones)
        out = out / counts.clamp_min(1).unsqueeze(-1)
    return out


# distances -----------------------------------------------------------------------------

@_checked(dim=_index_arg, eps=_number)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along dim, x1 and x2 broadcast to
    one shape (that dim squeezed)."""
    try:
        shape = em.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 shape {tuple(x1.shape)} and x2 shape "
                         f"{tuple(x2.shape)} do not broadcast") from None
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = em.linalg.vector_norm(x1, 2, dim).clamp_min(eps)
    n2 = em.linalg.vector_norm(x2, 2, dim).clamp_min(eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


@_checked(p=_number, eps=_number)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (0-d for 1-D inputs)."""
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"pairwise_distance: expected inputs of at least 1 dim, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return em.linalg.vector_norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


# linear --------------------------------------------------------------------------------

@_checked(p=_number)
def pdist(input, p=2):
    """The p-norm distances between every pair of rows of an (N, M) input, i < j in
    row-major order (the upper triangle of cdist(input, input), flattened): N (N - 1) / 2
    values. Composed of triu_indices, indexing and vector_norm, so it is differentiable
    (zero distances get a zero gradient, as PyTorch)."""
    op = "pdist"
    if not isinstance(input, em.Tensor) or input.ndim != 2:
        raise ValueError(f"{op}: expected a 2-d (N, M) tensor, got "
                         f"{tuple(input.shape) if isinstance(input, em.Tensor) else input!r}")
    if input.dtype.kind != "float":
        raise TypeError(f"{op}: needs a floating point tensor, got {input.dtype!r}")
    p = float(p)
    if p < 0:
        raise ValueError(f"{op}: p must be non-negative, got {p}")
    n = input.shape[0]
    i, j = em.triu_indices(n, n, 1, device=input.device)
    diff = input[i] - input[j]
    if p == 0:
        return (diff != 0).sum(1).to(input.dtype) + diff.sum(1) * 0
    if p == math.inf:
        return diff.abs().amax(1)
    a = diff.abs()
    if p == 1:
        return a.sum(1)
    # PyTorch's backward of the p-norm at a zero distance is zero: scale by the max so
    # the root never sees 0 for nonzero rows, and mask the zero rows.
    m = a.amax(1, keepdim=True)
    zero = m == 0
    safe = em.where(zero, 1.0, m)
    scaled = em.where(zero, 1.0, a / safe)
    r = (scaled ** p).sum(1) ** (1.0 / p) * safe.squeeze(1)
    return em.where(zero.squeeze(1), 0.0, r)


def linear(input, weight, bias=None):
    """input @ weight.T + bias: float32/float64 operands of one dtype as one recorded op
    "linear", others composed of matmul and add."""
    wn = weight.ndim
    if wn != 2 and wn != 1:
        raise ValueError(f"linear: weight must be 1-D or 2-D, got shape {tuple(weight.shape)}")
    xs, ws = input.shape, weight.shape
    if xs[-1:] != ws[-1:]:
        raise ValueError("linear: input has last dimension "
                         f"{xs[-1] if input.ndim else '()'} "
                         f"but weight has shape {tuple(ws)} (in_features {ws[-1]})")
    dt = input.dtype
    if (wn == 2 and input.ndim >= 2 and dt in _LINEAR_DTYPES and weight.dtype is dt and
            (bias is None or (bias.dtype is dt and bias.ndim == 1 and
                              bias.shape[0] == ws[0])) and
            not _onnx_exporting()):
        # one recorded op (its derivative: autograd's "linear" row) instead of three
        # (the weight's transposed view, matmul, the bias add), each a node to build
        # and to run backward
        with _no_record():
            out = input @ _transpose(weight, 0, 1)
            if bias is not None:
                out += bias
        return _record("linear", (input, weight, bias), out)
    out = input @ weight.T
    return out + bias if bias is not None else out


_LINEAR_DTYPES = (em.float32, em.float64)


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = x1[..., i] W[k, i, j] x2[..., j] + b[k]."""
    out = em.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out


# losses --------------------------------------------------------------------------------

def _reduction(size_average, reduce, reduction, op, allowed=("none", "mean", "sum")):
    """The reduction string; PyTorch's deprecated size_average/reduce override it."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"{op}: size_average and reduce are deprecated, use "
                      f"reduction={reduction!r} instead", UserWarning, stacklevel=3)
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {', '.join(map(repr, allowed))}, "
                         f"got {reduction!r}")
    return reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _broadcast_target(input, target, op):
    """(input, target) expanded to one shape. A target of another shape warns, as in
    PyTorch, since broadcasting there is rarely what was meant."""
    if tuple(target.shape) == tuple(input.shape):
        return input, target
    try:
        shape = em.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ValueError(f"{op}: target shape {tuple(target.shape)} does not broadcast with "
                         f"input shape {tuple(input.shape)}") from None
    warnings.warn(f"{op}: using a target shape {tuple(target.shape)} that is different from "
                  f"the input shape {tuple(input.shape)}; they are broadcast to {tuple(shape)}, "
                  f"which is likely not what was meant", UserWarning, stacklevel=3)
    return input.expand(shape), target.expand(shape)


def _same_shape(input, target, op, name="target"):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{op}: {name} shape {tuple(target.shape)} must be the same as the "
                         f"input shape {tuple(input.shape)}")


def _weighted(loss, weight, reduction, op, weighted_mean):
    """Apply an elementwise weight (of the loss's shape) and reduce. weighted_mean:
    'mean' divides by the sum of the weights (mse/l1) rather than the element count
    (huber), following PyTorch."""
    if weight is None:
        return _reduce(loss, reduction)
    _same_shape(loss, weight, op, "weight")
    loss = loss * weight
    if reduction == "mean" and weighted_mean:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, optionally weighted elementwise."""
    reduction = _reduction(size_average, reduce, reduction, "mse_loss")
    input, target = _broadcast_target(input, target, "mse_loss")
    return _weighted((input - target).square(), weight, reduction, "mse_loss", True)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, optionally weighted elementwise."""
    reduction = _reduction(size_average, reduce, reduction, "l1_loss")
    input, target = _broadcast_target(input, target, "l1_loss")
    return _weighted(em.abs(input - target), weight, reduction, "l1_loss", True)


@_checked(beta=_number)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target);
    beta = 0 is the L1 loss."""
    reduction = _reduction(size_average, reduce, reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    input, target = _broadcast_target(input, target, "smooth_l1_loss")
    d = em.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(em.where(d < beta, 0.5 * d.square() / beta, d - 0.5 * beta), reduction)


@_checked(delta=_number)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (d = input - target),
    optionally weighted elementwise."""
    reduction = _reduction(None, None, reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    input, target = _broadcast_target(input, target, "huber_loss")
    d = em.abs(input - target)
    loss = em.where(d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta))
    return _weighted(loss, weight, reduction, "huber_loss", False)


@_checked(ignore_index=_index_arg)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-weight[t] * input[t] for log-probabilities input (C,), (N, C) or (N, C, d1, ...)
    (tensor-core's fused kernel)."""
    reduction = _reduction(size_average, reduce, reduction, "nll_loss")
    return em.nll_loss(input, target, weight, ignore_index=ignore_index, reduction=reduction)


@_checked(ignore_index=_index_arg, label_smoothing=_number)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """log_softmax over dim 1 (dim 0 for a (C,) input) then the NLL at class-index
    targets, or -sum(target * log_softmax) for class-probability targets of the input's
    shape (tensor-core's fused kernel)."""
    reduction = _reduction(size_average, reduce, reduction, "cross_entropy")
    return em.cross_entropy(input, target, weight, ignore_index=ignore_index,
                            reduction=reduction, label_smoothing=label_smoothing)


def _clamped_log(x):
    """max(log(x), -100) as in PyTorch's binary_cross_entropy, with a zero gradient (not
    0 * inf = NaN) where x <= 0: an input of exactly 0 or 1 is common (saturated sigmoid)."""
    pos = x > 0
    return em.where(pos, em.log(em.where(pos, x, 1.0)), -100.0).clamp_min(-100.0)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-weight * (target log(input) + (1 - target) log(1 - input)) for probabilities
    input in [0, 1], each log clamped at -100 as PyTorch does."""
    op = "binary_cross_entropy"
    reduction = _reduction(size_average, reduce, reduction, op)
    _same_shape(input, target, op)
    if em.logical_not((input >= 0) & (input <= 1)).any().item():
        raise ValueError(f"{op}: all elements of input should be between 0 and 1, got values "
                         f"in [{input.min().item()}, {input.max().item()}]")
    loss = -(target * _clamped_log(input) + (1 - target) * _clamped_log(1 - input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) in the stable form
    (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x), pos_weight scaling the positive
    term (broadcast against target)."""
    op = "binary_cross_entropy_with_logits"
    reduction = _reduction(size_average, reduce, reduction, op)
    _same_shape(input, target, op)
    log_sig = logsigmoid(input)
    if pos_weight is not None:
        log_sig = (1 + (pos_weight - 1) * target) * log_sig
    loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _xlogx(t):
    """t log t with 0 at t = 0 (and a zero gradient there instead of NaN)."""
    zero = t == 0
    return em.where(zero, 0.0, t * em.log(em.where(zero, 1.0, t)))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log target - input) with input log-probabilities
    (target too if log_target). 'batchmean' divides the sum by the batch size (the true KL
    divergence per sample); 'mean' divides by the element count."""
    op = "kl_div"
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides the total loss by both the batch size "
                      "and the support size; 'batchmean' divides only by the batch size and "
                      "is the KL divergence", UserWarning, stacklevel=2)
    reduction = _reduction(size_average, reduce, reduction, op,
                           ("none", "mean", "sum", "batchmean"))
    try:
        em.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ValueError(f"{op}: target shape {tuple(target.shape)} does not broadcast with "
                         f"input shape {tuple(input.shape)}") from None
    if log_target:
        loss = em.exp(target) * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


@_checked(eps=_number)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log likelihood: exp(input) - target * input (log_input), else
    input - target * log(input + eps); full adds Stirling's target * log(target) - target
    + log(2 pi target) / 2 where target > 1."""
    reduction = _reduction(size_average, reduce, reduction, "poisson_nll_loss")
    input, target = _broadcast_target(input, target, "poisson_nll_loss")
    if log_input:
        loss = em.exp(input) - target * input
    else:
        loss = input - target * em.log(input + eps)
    if full:
        safe = em.where(target > 1, target, 1.0)
        stirling = safe * em.log(safe) - safe + 0.5 * em.log(2 * math.pi * safe)
        loss = loss + em.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


@_checked(eps=_number)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood 0.5 * (log(var) + (input - target)^2 / var) (+ 0.5
    log(2 pi) with full), var the same shape as input, or with its last dim 1 or omitted
    (one variance per sample), or a number. var is clamped to eps for the value only (the
    gradient passes as if unclamped), as PyTorch does."""
    op = "gaussian_nll_loss"
    reduction = _reduction(None, None, reduction, op)
    if not isinstance(var, em.Tensor):
        if not isinstance(var, numbers.Real):
            raise TypeError(f"{op}: var must be a Tensor or a number, got "
                            f"{type(var).__name__}")
        var = em.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)           # homoscedastic: one var per sample
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError(f"{op}: var is of incorrect size {tuple(var.shape)} for input "
                             f"shape {tuple(input.shape)}")
    if bool((var < 0).any()):
        raise ValueError(f"{op}: var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (em.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_checked(margin=_number)
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), target of 1 or -1."""
    reduction = _reduction(size_average, reduce, reduction, "margin_ranking_loss")
    if not (input1.ndim == input2.ndim == target.ndim):
        raise ValueError(f"margin_ranking_loss: all input tensors should have the same number "
                         f"of dims, got shapes {tuple(input1.shape)}, {tuple(input2.shape)} and "
                         f"{tuple(target.shape)}")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@_checked(margin=_number)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1."""
    reduction = _reduction(size_average, reduce, reduction, "hinge_embedding_loss")
    margin_part = em.where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = em.where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)


@_checked(margin=_number)
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1;
    inputs (N, D) with target (N,), or (D,) with a 0-d target."""
    op = "cosine_embedding_loss"
    reduction = _reduction(size_average, reduce, reduction, op)
    if input1.ndim not in (1, 2) or tuple(input1.shape) != tuple(input2.shape) or \
            target.ndim != input1.ndim - 1:
        raise ValueError(f"{op}: expected inputs of one shape (N, D) or (D,) and a target "
                         f"(N,) or (), got {tuple(input1.shape)}, {tuple(input2.shape)} and "
                         f"{tuple(target.shape)}")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / em.sqrt(mag)
    loss = em.where(target == 1, 1 - cos, 0.0) + \
        em.where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, reduction)


@_checked(margin=_number, p=_number, eps=_number)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm
    pairwise_distance; swap takes the smaller of d(a, n) and d(p, n)."""
    op = "triplet_margin_loss"
    reduction = _reduction(size_average, reduce, reduction, op)
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise ValueError(f"{op}: expected anchor, positive and negative of 1 or 2 dims "
                         f"alike, got shapes {tuple(anchor.shape)}, {tuple(positive.shape)} "
                         f"and {tuple(negative.shape)}")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = em.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


@_checked(margin=_number)
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (pairwise_distance by
    default)."""
    op = "triplet_margin_with_distance_loss"
    reduction = _reduction(None, None, reduction, op)
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    dist = distance_function if distance_function is not None else pairwise_distance
    if not callable(dist):
        raise TypeError(f"{op}: distance_function must be callable, got "
                        f"{type(dist).__name__}")
    d_ap, d_an = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_an = em.minimum(d_an, dist(positive, negative))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


def _class_targets(op, input, target):
    """(N, C) input and (N,) int64 targets, from batched or unbatched ones."""
    if input.ndim not in (1, 2) or target.ndim != input.ndim - 1 or \
            (input.ndim == 2 and target.shape[0] != input.shape[0]):
        raise ValueError(f"{op}: expected input (N, C) with target (N,), or (C,) with a 0-d "
                         f"target, got {tuple(input.shape)} and {tuple(target.shape)}")
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: target must be class indices (an integer tensor), got "
                        f"{target.dtype!r}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    y = target.reshape(-1).to(em.int64)
    c = x.shape[1]
    if y.numel() and (int(y.min().item()) < 0 or int(y.max().item()) >= c):
        raise IndexError(f"{op}: target values must be in [0, {c}), got {y.tolist()}")
    return x, y


@_checked(p=_number, margin=_number)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p / C,
    each term scaled by weight[y]."""
    op = "multi_margin_loss"
    reduction = _reduction(size_average, reduce, reduction, op)
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 supported, got {p}")
    x, y = _class_targets(op, input, target)
    n, c = x.shape
    if weight is not None and tuple(weight.shape) != (c,):
        raise ValueError(f"{op}: weight must have shape ({c},), got {tuple(weight.shape)}")
    xy = x.gather(1, y.unsqueeze(1))
    terms = (margin - xy + x).clamp_min(0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.index_select(0, y).unsqueeze(1)
    not_y = em.arange(c, device=x.device).unsqueeze(0) != y.unsqueeze(1)
    loss = em.where(not_y, terms, 0.0).sum(1) / c
    if input.ndim == 1:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over the target classes j and the other classes i of
    max(0, 1 - (x[j] - x[i])) / C; target holds class indices, ended by the first -1."""
    op = "multilabel_margin_loss"
    reduction = _reduction(size_average, reduce, reduction, op)
    if input.ndim not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{op}: expected input (N, C) or (C,) and a target of the same shape, "
                         f"got {tuple(input.shape)} and {tuple(target.shape)}")
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: target must be an integer tensor, got {target.dtype!r}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    t = (target.unsqueeze(0) if target.ndim == 1 else target).to(em.int64)
    n, c = x.shape
    if t.numel() and (int(t.min().item()) < -1 or int(t.max().item()) >= c):
        raise IndexError(f"{op}: target values must be in [-1, {c}), got {t.tolist()}")
    # the targets up to the first -1
    valid = ((t < 0).long().cumsum(1) == 0)
    idx = em.where(valid, t, 0)
    member = (idx.unsqueeze(2) == em.arange(c, device=x.device)) & valid.unsqueeze(2)
    is_target = member.any(1)                                   # (N, C)
    xj = x.gather(1, idx)                                       # (N, C): x at each target
    terms = (1 - xj.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # (N, j, i)
    mask = valid.unsqueeze(2) & (~is_target).unsqueeze(1)
    loss = em.where(mask, terms, 0.0).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class, averaged over
    the classes."""
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(size_average, reduce, reduction, op)
    _same_shape(input, target, op)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1] if input.ndim else loss
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), target of 1 or -1."""
    reduction = _reduction(size_average, reduce, reduction, "soft_margin_loss")
    input, target = _broadcast_target(input, target, "soft_margin_loss")
    return _reduce(softplus(-target * input), reduction)


def _log_add(*terms):
    """log(sum(exp(terms))) of same-shape tensors, -inf where every term is -inf, with
    finite gradients there (the `where` on both sides of the log)."""
    m = terms[0]
    for t in terms[1:]:
        m = em.maximum(m, t)
    finite = m > float("-inf")
    m_safe = em.where(finite, m, 0.0).detach()
    total = em.exp(terms[0] - m_safe)
    for t in terms[1:]:
        total = total + em.exp(t - m_safe)
    ok = total > 0
    return em.where(ok, m_safe + em.log(em.where(ok, total, 1.0)), float("-inf"))


def _lengths(op, name, v, n, device):
    if isinstance(v, em.Tensor):
        if v.dtype.kind not in ("int", "uint"):
            raise TypeError(f"{op}: {name} must be integers, got {v.dtype!r}")
        v = v.reshape(-1).to(em.int64).cpu()
    else:
        try:
            v = em.tensor([int(x) for x in v], dtype=em.int64)
        except TypeError:
            raise TypeError(f"{op}: {name} must be a Tensor or a sequence of ints, got "
                            f"{type(v).__name__}") from None
    if v.shape[0] != n:
        raise ValueError(f"{op}: {name} must have one entry per batch element ({n}), got "
                         f"{v.shape[0]}")
    if n and int(v.min().item()) < 0:
        raise ValueError(f"{op}: {name} must be non-negative, got {v.tolist()}")
    return v


@_checked(blank=_index_arg)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss (Graves et al. 2006): minus the log of
    the total probability of all alignments of each target. log_probs (T, N, C) (or
    (T, C) unbatched) are log-softmax outputs; targets (N, S) padded or 1-D concatenated
    (sum(target_lengths)); input_lengths and target_lengths per sample. The forward
    (alpha) recursion runs in log space over the blank-extended labels, composed from
    ember ops (so autograd gives the gradient and it runs on every device). 'mean'
    divides each loss by its target length, then averages; zero_infinity zeroes
    impossible alignments' infinite losses and their gradients."""
    op = "ctc_loss"
    reduction = _reduction(None, None, reduction, op)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.ndim == 1:
            targets = targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise ValueError(f"{op}: log_probs must be (T, N, C) or (T, C), got shape "
                         f"{tuple(log_probs.shape)}")
    if log_probs.dtype.kind != "float":
        raise TypeError(f"{op}: log_probs must be floating point, got {log_probs.dtype!r}")
    if targets.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: targets must be an integer tensor, got {targets.dtype!r}")
    T, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise ValueError(f"{op}: blank must be in label range [0, {c}), got {blank}")
    dev = log_probs.device
    in_len = _lengths(op, "input_lengths", input_lengths, n, dev)
    tg_len = _lengths(op, "target_lengths", target_lengths, n, dev)
    if n and int(in_len.max().item()) > T:
        raise ValueError(f"{op}: input_lengths must be at most the input's length T={T}, got "
                         f"{in_len.tolist()}")
    smax = int(tg_len.max().item()) if n else 0
    targets = targets.to(em.int64).to(dev)
    if targets.ndim == 2:
        if targets.shape[0] != n or smax > targets.shape[1]:
            raise ValueError(f"{op}: targets of shape {tuple(targets.shape)} do not hold "
                             f"target_lengths {tg_len.tolist()} for batch size {n}")
        padded = targets[:, :smax]
    elif targets.ndim == 1:
        total = int(tg_len.sum().item())
        if targets.shape[0] != total:
            raise ValueError(f"{op}: 1-D targets must have sum(target_lengths) = {total} "
                             f"entries, got {targets.shape[0]}")
        start = (tg_len.cumsum(0) - tg_len).to(dev)
        pos = start.unsqueeze(1) + em.arange(smax, device=dev).unsqueeze(0)
        padded = targets[pos.clamp(0, max(total - 1, 0))] if total else \
            em.zeros(n, smax, dtype=em.int64, device=dev)
    else:
        raise ValueError(f"{op}: targets must be 1-D or 2-D, got shape "
                         f"{tuple(targets.shape)}")
    valid = em.arange(smax, device=dev).unsqueeze(0) < tg_len.to(dev).unsqueeze(1)
    padded = em.where(valid, padded, blank)
    if bool(((padded < 0) | (padded >= c)).any()):
        raise ValueError(f"{op}: target labels must be in [0, {c})")
    # the extended labels: blank, l1, blank, l2, ..., blank  (N, L)
    L = 2 * smax + 1
    ext = em.full((n, L), blank, dtype=em.int64, device=dev)
    if smax:
        ext[:, 1::2] = padded
    # skips over a blank are allowed onto a non-blank label unlike the one two back
    if L > 2:
        skip = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
        skip = em.cat([em.zeros(n, 2, dtype=em.bool, device=dev), skip], 1)
    else:
        skip = em.zeros(n, L, dtype=em.bool, device=dev)
    lp = log_probs.gather(2, ext.unsqueeze(0).expand(T, n, L))      # (T, N, L)
    neg_inf = float("-inf")
    pad1 = em.full((n, 1), neg_inf, dtype=lp.dtype, device=dev)
    pad2 = em.full((n, 2), neg_inf, dtype=lp.dtype, device=dev)
    init = em.full((n, L), neg_inf, dtype=lp.dtype, device=dev)
    first = em.arange(L, device=dev).unsqueeze(0) < 2
    alpha = em.where(first, lp[0], init) if T else init
    steps = in_len.to(dev).unsqueeze(1)
    for t in range(1, T):
        a1 = em.cat([pad1, alpha[:, :-1]], 1)
        a2 = em.where(skip, em.cat([pad2, alpha[:, :-2]], 1), neg_inf) if L > 2 else None
        new = (_log_add(alpha, a1, a2) if a2 is not None else _log_add(alpha, a1)) + lp[t]
        alpha = em.where(t < steps, new, alpha)
    ends = (2 * tg_len).to(dev).unsqueeze(1)                         # index L_n - 1
    last = alpha.gather(1, ends).squeeze(1)
    before = alpha.gather(1, (ends - 1).clamp_min(0)).squeeze(1)
    before = em.where(tg_len.to(dev) > 0, before, neg_inf)
    ll = _log_add(last, before)
    if T == 0:
        ll = em.where(tg_len.to(dev) == 0, 0.0, neg_inf).to(lp.dtype)
    else:
        # an empty input sequence: only the empty target has probability (1)
        ll = em.where(in_len.to(dev) == 0, em.where(tg_len.to(dev) == 0, 0.0, neg_inf), ll)
    loss = -ll
    if zero_infinity:
        loss = em.where(loss == float("inf"), 0.0, loss)
    if reduction == "mean":
        return (loss / tg_len.to(dev).clamp_min(1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


# padding, one-hot, normalize, attention, resampling ------------------------------------------

@_checked(pad=_ints(), value=_optional(_number))
def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims, pad = (last_left, last_right, 2nd_last_left, ...);
    negative amounts crop. 'constant' fills with value (default 0); 'reflect' mirrors
    without repeating the edge, 'replicate' repeats the edge and 'circular' wraps around,
    each over the last 1, 2 or 3 dims of a batched or unbatched input (PyTorch's rule).
    Built from narrow, cat and index_select, so autograd differentiates it."""
    op = "pad"
    if len(pad) % 2:
        raise ValueError(f"{op}: padding length must be even, got {len(pad)} values {pad}")
    if len(pad) > 2 * input.ndim:
        raise ValueError(f"{op}: {len(pad)} padding values are more than two per dim of the "
                         f"input shape {tuple(input.shape)}")
    dims = [(input.ndim - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]
    for dim, lo, hi in dims:
        if input.shape[dim] + lo + hi < (0 if mode == "constant" else 1):
            raise ValueError(f"{op}: padding ({lo}, {hi}) of dim {dim} leaves size "
                             f"{input.shape[dim] + lo + hi} (input shape {tuple(input.shape)})")
    shape = list(input.shape)
    for dim, lo, hi in dims:
        shape[dim] += lo + hi
    _check_output(op, input, shape)
    if mode == "constant":
        out = input
        for dim, lo, hi in dims:
            start = max(-lo, 0)
            out = out.narrow(dim, start, out.shape[dim] - max(-hi, 0) - start)
            if lo > 0 or hi > 0:
                shape, sides = list(out.shape), []
                for amount in (max(lo, 0), max(hi, 0)):
                    shape[dim] = amount
                    sides.append(em.full(shape, 0 if value is None else value,
                                         dtype=out.dtype, device=out.device))
                out = em.cat([sides[0], out, sides[1]], dim)
        return out
    if mode not in ("reflect", "replicate", "circular"):
        raise ValueError(f"{op}: mode must be 'constant', 'reflect', 'replicate' or "
                         f"'circular', got {mode!r}")
    if value is not None and value != 0:
        raise ValueError(f"{op}: mode {mode!r} doesn't take a value (got {value})")
    if len(dims) not in (1, 2, 3) or input.ndim not in (len(dims) + 1, len(dims) + 2):
        raise ValueError(f"{op}: mode {mode!r} pads the last 1, 2 or 3 dims of a batched or "
                         f"unbatched input: {len(pad)} padding values need a "
                         f"{len(dims) + 1}-d or {len(dims) + 2}-d input, got shape "
                         f"{tuple(input.shape)}")
    out = input
    for dim, lo, hi in dims:
        n = input.shape[dim]
        if mode == "reflect" and max(lo, hi) >= n:
            raise ValueError(f"{op}: reflect padding ({lo}, {hi}) must be less than the size "
                             f"{n} of dim {dim} (input shape {tuple(input.shape)})")
        if mode == "circular" and max(lo, hi) > n:
            raise ValueError(f"{op}: circular padding ({lo}, {hi}) wraps around dim {dim} of "
                             f"size {n} more than once (input shape {tuple(input.shape)})")
        if mode == "replicate" and n == 0:
            raise ValueError(f"{op}: replicate padding of dim {dim} needs a non-empty dim "
                             f"(input shape {tuple(input.shape)})")
        # the input position each output position reads, as tensor ops (no Python loop
        # over a padding that may be huge)
        src = em.arange(-lo, n + hi, device=input.device)
        if mode == "reflect":    # |lo|, |hi| < n: one mirror at each end
            idx = (n - 1) - ((n - 1) - src.abs()).abs()
        elif mode == "replicate":
            idx = src.clamp(0, n - 1)
        else:    # PyTorch crops first, then wraps around what is left
            start, kept = max(-lo, 0), n + min(lo, 0) + min(hi, 0)
            idx = em.arange(-max(lo, 0), kept + max(hi, 0), device=input.device) % kept + start
        out = out.index_select(dim, idx)
    return out


@_checked(upscale_factor=_positive)
def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): a reshape and a permute."""
    r = upscale_factor
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: expected input of at least 3 dims whose channel dim "
                         f"(-3) is divisible by upscale_factor^2 = {r * r}, got shape "
                         f"{tuple(input.shape)}")
    *batch, c, h, w = input.shape
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    n = len(batch)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


@_checked(downscale_factor=_positive)
def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), pixel_shuffle's inverse."""
    r = downscale_factor
    if input.ndim < 3 or input.shape[-1] % r or input.shape[-2] % r:
        raise ValueError(f"pixel_unshuffle: expected input of at least 3 dims whose height and "
                         f"width are divisible by downscale_factor={r}, got shape "
                         f"{tuple(input.shape)}")
    *batch, c, h, w = input.shape
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    n = len(batch)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


@_checked(groups=_positive)
def channel_shuffle(input, groups):
    """(N, C, *) with the channels as (groups, C / groups) transposed (ShuffleNet)."""
    if input.ndim < 3 or input.shape[1] % groups:
        raise ValueError(f"channel_shuffle: expected input of at least 3 dims whose channel "
                         f"dim (1) is divisible by groups={groups}, got shape "
                         f"{tuple(input.shape)}")
    n, c, *rest = input.shape
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


def _pairs(op, **values):
    return [_int_tuple(op, name, v, 2) for name, v in values.items()]


def _patch_weight(channels, kernel_size, dtype, device):
    """(C * kh * kw, 1, kh, kw): for each channel, one one-hot filter per kernel position,
    so that a grouped conv2d is im2col and its transpose col2im."""
    kh, kw = kernel_size
    k = kh * kw
    eye = em.eye(k, dtype=dtype, device=device).reshape(k, 1, kh, kw)
    return eye.repeat(channels, 1, 1, 1) if channels != 1 else eye


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) or (C, H, W) -> (N, C * kh * kw, L), each column one sliding
    block, L = oh * ow blocks. Composed as a grouped conv2d with one-hot filters, so it
    runs on every device and autograd differentiates it."""
    op = "unfold"
    kernel_size, dilation, padding, stride = _pairs(op, kernel_size=kernel_size,
                                                    dilation=dilation, padding=padding,
                                                    stride=stride)
    if input.ndim not in (3, 4):
        raise ValueError(f"{op}: expected a 3-D (unbatched) or 4-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    for name, v, lo in (("kernel_size", kernel_size, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("stride", stride, 1)):
        if min(v) < lo:
            raise ValueError(f"{op}: {name} must be {'positive' if lo else 'non-negative'}, "
                             f"got {v}")
    x = input.unsqueeze(0) if input.ndim == 3 else input
    n, c, h, w = x.shape
    out = [(size + 2 * p - d * (k - 1) - 1) // s + 1 for size, p, d, k, s in
           zip((h, w), padding, dilation, kernel_size, stride)]
    if min(out) < 1:
        raise ValueError(f"{op}: the {kernel_size} kernel (dilation {dilation}, padding "
                         f"{padding}) does not fit the input shape {tuple(input.shape)}")
    weight = _patch_weight(c, kernel_size, x.dtype, x.device)
    cols = em.conv2d(x, weight, None, stride, padding, dilation, c)
    cols = cols.reshape(n, c * kernel_size[0] * kernel_size[1], out[0] * out[1])
    return cols.squeeze(0) if input.ndim == 3 else cols


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, unfold's adjoint: (N, C * kh * kw, L) or (C * kh * kw, L) -> (N, C, H, W),
    overlapping values summed. Composed as a grouped conv_transpose2d with one-hot
    filters."""
    op = "fold"
    output_size, kernel_size, dilation, padding, stride = _pairs(
        op, output_size=output_size, kernel_size=kernel_size, dilation=dilation,
        padding=padding, stride=stride)
    if input.ndim not in (2, 3):
        raise ValueError(f"{op}: expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    for name, v, lo in (("kernel_size", kernel_size, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("stride", stride, 1),
                        ("output_size", output_size, 1)):
        if min(v) < lo:
            raise ValueError(f"{op}: {name} must be {'positive' if lo else 'non-negative'}, "
                             f"got {v}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    n, ck, length = x.shape
    k = kernel_size[0] * kernel_size[1]
    if ck % k:
        raise ValueError(f"{op}: expected size of input's dimension 1 to be divisible by the "
                         f"product of kernel_size {kernel_size}, but got input.size(1)={ck}")
    blocks = [(size + 2 * p - d * (kk - 1) - 1) // s + 1 for size, p, d, kk, s in
              zip(output_size, padding, dilation, kernel_size, stride)]
    if min(blocks) < 1 or blocks[0] * blocks[1] != length:
        raise ValueError(f"{op}: given output_size={output_size}, kernel_size={kernel_size}, "
                         f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                         f"size of input's dimension 2 to match the calculated number of "
                         f"sliding blocks {blocks[0]} * {blocks[1]} = "
                         f"{blocks[0] * blocks[1]}, but got input.size(2)={length}")
    c = ck // k
    extra = [size + 2 * p - ((b - 1) * s + d * (kk - 1) + 1) for size, p, d, kk, s, b in
             zip(output_size, padding, dilation, kernel_size, stride, blocks)]
    weight = _patch_weight(c, kernel_size, x.dtype, x.device)
    out = em.conv_transpose2d(x.reshape(n, ck, *blocks), weight, None, stride, padding,
                              tuple(extra), c, dilation)
    return out.squeeze(0) if input.ndim == 2 else out


@_checked(num_classes=_index_arg)
def one_hot(tensor, num_classes=-1):
    """An int64 tensor of shape tensor.shape + (num_classes,), 1 at each value's class;
    num_classes=-1 takes the largest value + 1."""
    op = "one_hot"
    if tensor.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: expected an integer tensor of class indices, got {tensor.dtype!r}")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise ValueError(f"{op}: cannot infer the number of classes from an empty tensor; "
                             f"pass num_classes")
    else:
        lo, hi = tensor.min().item(), tensor.max().item()
        if lo < 0:
            raise ValueError(f"{op}: class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise ValueError(f"{op}: class value {hi} is out of range for "
                             f"num_classes={num_classes}")
    return (tensor.unsqueeze(-1) == em.arange(num_classes, device=tensor.device)).long()


@_checked(p=_norm_order, dim=_index_arg, eps=_number)
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps), the norm taken along dim."""
    denom = em.norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return em.div(input, denom, out=out)


def _onnx_exporting():
    """ember.onnx.export traces the primitives (it has no fused attention node)."""
    onnx = sys.modules.get("ember.onnx")
    return onnx is not None and onnx.is_in_onnx_export()


@_checked(value=_tensor, dropout_p=_number, scale=_optional(_number))
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value for queries (..., L, E), keys
    (..., S, E) and values (..., S, Ev); scale defaults to 1 / sqrt(E). A bool attn_mask
    attends where True, a float one is added to the scores; is_causal masks keys after
    each query (top-left aligned). A query with every key masked gets zeros (as PyTorch),
    not NaN. enable_gqa lets query heads (dim -3) be a multiple of key/value heads.
    CPU float32/float64 without dropout: one fused kernel forward and backward
    (ember.ops.attention, flash-attention style: a block of the scores at a time); other
    devices and dropout_p > 0: composed of matmul, softmax and where."""
    op = "scaled_dot_product_attention"

    def shapes():        # only for a message: not formatted on every call
        return (f"query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ValueError(f"{op}: query, key and value need at least 2 dims, got {shapes()}")
    L, E = query.shape[-2:]
    S = key.shape[-2]
    if key.shape[-1] != E or value.shape[-2] != S:
        raise ValueError(f"{op}: key must be (..., S, E) for a query (..., L, E) and value "
                         f"(..., S, Ev), got {shapes()}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: attn_mask must not be given with is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3:
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise ValueError(f"{op}: with enable_gqa the query heads (dim -3) must be a "
                             f"multiple of the key and value heads, got {shapes()}")
        key = key.repeat_interleave(heads // key.shape[-3], -3)
        value = value.repeat_interleave(heads // value.shape[-3], -3)
    scale = 1 / math.sqrt(E) if scale is None else scale
    mask = None
    if attn_mask is not None:
        try:
            em.broadcast_shapes(attn_mask.shape, tuple(query.shape[:-1]) + (S,))
        except ValueError:
            raise ValueError(f"{op}: attn_mask shape {tuple(attn_mask.shape)} does not "
                             f"broadcast with the scores (..., L, S) "
                             f"{tuple(query.shape[:-1]) + (S,)}") from None
        mask = _attention.additive_mask(attn_mask, query)
    if dropout_p == 0 and not _onnx_exporting() and \
            _attention.fused_applies(query, key, value, mask):
        # one kernel, forward and backward, never the whole score matrix (CPU)
        return _attention.sdpa_fused(query, key, value, mask, is_causal, scale)
    return _attention.sdpa_composite(query, key, value, mask, is_causal, scale, dropout_p)


def _check_output(op, input, shape):
    """MemoryError at once for an output of input's dtype whose size can't exist (before
    any tensor of that length is made), naming its shape, elements and bytes."""
    shape = tuple(shape)
    numel = math.prod(shape)
    nbytes = numel * input.element_size()
    if nbytes >= 2**63:
        raise MemoryError(f"{op}: the output of shape {shape} would have {numel} elements "
                          f"({nbytes} bytes), more than any allocation can hold")


# interpolate, grid_sample, affine_grid (and the deprecated upsample aliases) live in
# ember.nn._sampling
from ember.nn._sampling import (  # noqa: E402, F401
    affine_grid,
    grid_sample,
    interpolate,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

# 3-d convolution and pooling: tensor-core composes them from its 2-d kernels

def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return em.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return em.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return em.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return em.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def adaptive_avg_pool3d(input, output_size):
    return em.adaptive_avg_pool3d(input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return em.adaptive_max_pool3d(input, output_size, return_indices)


# PyTorch's in-place and *_with_indices spellings -----------------------------------------

def relu_(input):
    """relu in place (F.relu_)."""
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """max_pool1d returning (output, indices) (PyTorch's F.max_pool1d_with_indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


native_channel_shuffle = channel_shuffle


@_checked(tau=_number, dim=_index_arg)
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution (Jang et al. 2016), as PyTorch:
    softmax((logits + g) / tau) with g = -log(Exponential(1)) noise; hard=True returns
    the one-hot of the argmax with the soft sample's gradient (straight-through)."""
    if not isinstance(logits, em.Tensor):
        raise TypeError(f"gumbel_softmax: logits must be a tensor, got "
                        f"{type(logits).__name__}")
    if not tau > 0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau}")
    gumbels = -em.empty_like(logits).exponential_().log()
    y_soft = em.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = em.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft

# Every function here: a clear TypeError naming it when a tensor parameter gets
# something else (not `'float' object has no attribute 'shape'` from inside). `value`
# is a tensor only in scaled_dot_product_attention (a number in threshold and pad);
# gaussian_nll_loss's var may be a number.
_check_tensor_args(globals(), {"input", "input1", "input2", "target", "weight", "bias",
                               "query", "key", "attn_mask", "running_mean", "running_var",
                               "tensor", "x1", "x2", "offsets", "per_sample_weights",
                               "indices", "anchor", "positive", "negative", "log_probs",
                               "targets"})

# autocast's lists (ember/amp/_policy.py): linear, conv, ... run in the region's low
# dtype; losses, norms, softmax (the CUDA list) in float32
from ember.amp import _policy as _amp_policy  # noqa: E402

_amp_policy.wrap_namespace(globals(), _amp_policy.NN_FUNCTIONAL)
