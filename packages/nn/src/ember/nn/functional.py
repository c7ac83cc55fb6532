"""ember.nn.functional: the stateless forms of the layers, activations and losses.

Each function is written with tensor-core ops (its fused kernels where there is one:
softmax, conv, pooling, norms, cross_entropy, dropout, embedding), so autograd
differentiates it through the derivative table and it runs on every device.
"""
from __future__ import annotations

import math
import warnings

import ember as em
from ember._args import check_tensor_args as _check_tensor_args
from ember.nn._checks import (
    checked as _checked,
    index as _index_arg,
    ints as _ints,
    norm_order as _norm_order,
    optional as _optional,
    positive as _positive,
    real as _real,
    tensor as _tensor,
)

_number = _real()
_dim = _optional(_index_arg)

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
    return scale * elu(input, alpha, inplace)


@_checked(alpha=_number)
def celu(input, alpha=1.0, inplace=False):
    out = em.where(input > 0, input, alpha * em.expm1(input / alpha))
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x * Phi(x) (exact, with erf) or its tanh approximation."""
    if approximate == "none":
        return em.gelu(input)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + em.tanh(inner))
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


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    raise NotImplementedError("alpha_dropout is not implemented in ember.nn")


@_checked(p=_number)
def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


@_checked(p=_number)
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


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if not use_input_stats:
        raise NotImplementedError("instance_norm: use_input_stats=False is not supported")
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected input of at least 2 dims (N, C, ...), got "
                         f"shape {tuple(input.shape)}")
    return group_norm(input, input.shape[1], weight, bias, eps)


@_checked(padding_idx=_optional(_index_arg), max_norm=_optional(_number),
          norm_type=_number)
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    return em.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


# linear --------------------------------------------------------------------------------

def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    if weight.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be 1-D or 2-D, got shape {tuple(weight.shape)}")
    if input.shape[-1:] != weight.shape[-1:]:
        raise ValueError("linear: input has last dimension "
                         f"{input.shape[-1] if input.ndim else '()'} "
                         f"but weight has shape {tuple(weight.shape)} (in_features "
                         f"{weight.shape[-1]})")
    out = input @ weight.T
    return out + bias if bias is not None else out


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


@_checked(value=_tensor, dropout_p=_number, scale=_optional(_number))
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value for queries (..., L, E), keys
    (..., S, E) and values (..., S, Ev); scale defaults to 1 / sqrt(E). A bool attn_mask
    attends where True, a float one is added to the scores; is_causal masks keys after
    each query (top-left aligned). A query with every key masked gets zeros (as PyTorch),
    not NaN. enable_gqa lets query heads (dim -3) be a multiple of key/value heads."""
    op = "scaled_dot_product_attention"
    shapes = (f"query {tuple(query.shape)}, key {tuple(key.shape)}, "
              f"value {tuple(value.shape)}")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ValueError(f"{op}: query, key and value need at least 2 dims, got {shapes}")
    L, E = query.shape[-2:]
    S = key.shape[-2]
    if key.shape[-1] != E or value.shape[-2] != S:
        raise ValueError(f"{op}: key must be (..., S, E) for a query (..., L, E) and value "
                         f"(..., S, Ev), got {shapes}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: attn_mask must not be given with is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3:
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise ValueError(f"{op}: with enable_gqa the query heads (dim -3) must be a "
                             f"multiple of the key and value heads, got {shapes}")
        key = key.repeat_interleave(heads // key.shape[-3], -3)
        value = value.repeat_interleave(heads // value.shape[-3], -3)
    scores = (query @ key.transpose(-2, -1)) * (1 / math.sqrt(E) if scale is None else scale)
    if is_causal:
        attn_mask = em.ones(L, S, dtype=em.bool, device=query.device).tril()
    if attn_mask is None:
        attn = em.softmax(scores, -1)
    else:
        try:
            em.broadcast_shapes(attn_mask.shape, scores.shape)
        except ValueError:
            raise ValueError(f"{op}: attn_mask shape {tuple(attn_mask.shape)} does not "
                             f"broadcast with the scores (..., L, S) "
                             f"{tuple(scores.shape)}") from None
        if attn_mask.dtype == em.bool:
            scores = em.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
        # softmax of an all -inf row is NaN, and NaN gradients would reach every key
        dead = (scores == -math.inf).all(-1, keepdim=True)
        attn = em.where(dead, 0.0, em.softmax(em.where(dead, 0.0, scores), -1))
    if dropout_p > 0:
        attn = em.dropout(attn, dropout_p, True)
    return attn @ value


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

# Every function here: a clear TypeError naming it when a tensor parameter gets
# something else (not `'float' object has no attribute 'shape'` from inside). `value`
# is a tensor only in scaled_dot_product_attention (a number in threshold and pad).
_check_tensor_args(globals(), {"input", "input1", "input2", "target", "weight", "bias",
                               "query", "key", "attn_mask", "running_mean", "running_var",
                               "tensor"})
