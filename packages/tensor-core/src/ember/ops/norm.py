"""layer_norm and batch_norm (kernels: the `norm` family, ember._C.norm on the CPU),
with PyTorch's semantics. Each forward records itself with attrs holding the saved
statistics its backward needs; layer_norm_backward and batch_norm_backward are the
derivative table's and record nothing. float16 and bfloat16 are computed in float32."""
from __future__ import annotations

import numbers
import operator

from ember import _layout_formats as _fmt
from ember._C import core as _core
from ember.backends import kernel
from ember.ops._kernel_args import _cast_back, _float_tensor, _number, _param, _work, _work_dtype

__all__ = ['layer_norm', 'batch_norm']


# layer_norm ----------------------------------------------------------------------------

def _normalized_shape(normalized_shape, input, op):
    if type(normalized_shape) is int or isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    if type(normalized_shape) is tuple and all(type(s) is int for s in normalized_shape):
        shape = normalized_shape      # the common call, without the conversions below
    else:
        try:
            shape = tuple(operator.index(s) for s in normalized_shape)
        except TypeError:
            raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, "
                            f"got {normalized_shape!r}") from None
    k = len(shape)
    if k == 0 or input.ndim < k or input.shape[input.ndim - k:] != shape:
        raise ValueError(f"{op}: normalized_shape {shape} does not match the last dims of "
                         f"the input {tuple(input.shape)}")
    return shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias, with the mean and the (biased)
    variance over the last len(normalized_shape) dims, in one fused kernel per row
    (two-pass statistics: no cancellation for large means). Records "layer_norm" with
    attrs normalized_shape, eps and the saved statistics mean and rstd (shape
    input.shape[:-k] + (1,) * k; float32 for float16 and bfloat16 inputs)."""
    op = "layer_norm"
    _float_tensor(input, op)
    shape = _normalized_shape(normalized_shape, input, op)
    _param(weight, shape, input, op, "weight")
    _param(bias, shape, input, op, "bias")
    eps = _number(eps, op, "eps")
    work = _work_dtype(input.dtype)
    with _core._no_record():
        y, mean, rstd = kernel("layer_norm", op, input)(_work(input, work), _work(weight, work),
                                                   _work(bias, work), len(shape), eps)
        y = _cast_back(y, input.dtype)
    return _core.record(op, (input, weight, bias), y,
                        {"normalized_shape": shape, "eps": eps, "mean": mean, "rstd": rstd})


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None,
                        output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of layer_norm from the saved mean and rstd;
    an entry is None where output_mask says False or the parameter is None."""
    op = "layer_norm_backward"
    shape = _normalized_shape(normalized_shape, input, op)
    work = _work_dtype(input.dtype)
    mask = (bool(output_mask[0]), bool(output_mask[1]) and weight is not None,
            bool(output_mask[2]) and bias is not None)
    with _core._no_record():
        dx, dw, db = kernel("layer_norm_backward", op, input)(
            _work(grad_out, work), _work(input, work), _work(mean, work), _work(rstd, work),
            _work(weight, work), len(shape), mask)
        return (_cast_back(dx, input.dtype), _cast_back(dw, None if dw is None else weight.dtype),
                _cast_back(db, None if db is None else bias.dtype))


# batch_norm ----------------------------------------------------------------------------

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) of an (N, C, *spatial) input over the other dims.

    training=True: with the batch's mean and biased variance, and, when running_mean
    and running_var are given, update them in place:
    running = (1 - momentum) * running + momentum * batch statistic, with the
    unbiased variance for running_var (as PyTorch). training=False: with the running
    statistics. Records "batch_norm" with attrs training, momentum, eps, the saved
    per-channel mean and invstd (1 / sqrt(var + eps)) that were used, and the
    running_mean and running_var tensors (for ember.onnx)."""
    op = "batch_norm"
    _float_tensor(input, op)
    if _fmt._channels_last_input(input):
        # NHWC read directly: the channels_last tensor viewed as (N*H*W, C) rows is
        # batch norm over dim 0 of that matrix; the result is viewed back (no copies)
        n, c, h, w = input.shape
        rows = input.permute(0, 2, 3, 1).reshape(n * h * w, c)
        y = batch_norm(rows, running_mean, running_var, weight, bias, training, momentum, eps)
        return y.reshape(n, h, w, c).permute(0, 3, 1, 2)
    if input.ndim < 2:
        raise ValueError(f"{op}: expected an input of shape (N, C, ...), got "
                         f"{tuple(input.shape)}")
    C = input.shape[1]
    count = input.numel() // C if C else 0
    for what, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _param(t, (C,), input, op, what)
    eps = _number(eps, op, "eps")
    training = bool(training)
    if training:
        momentum = _number(momentum, op, "momentum")
        if count <= 1 and C:
            raise ValueError(f"{op}: Expected more than 1 value per channel when training, "
                             f"got input size {tuple(input.shape)}")
    elif running_mean is None or running_var is None:
        raise ValueError(f"{op}: running_mean and running_var are required when "
                         f"training=False")
    work = _work_dtype(input.dtype)
    with _core._no_record():
        x = _work(input, work)
        if training:
            mean, var = kernel("batch_norm_stats", op, input)(x)
            if running_mean is not None:
                running_mean.copy_(running_mean.to(work) * (1 - momentum) + mean * momentum)
            if running_var is not None:
                unbiased = var * (count / (count - 1))
                running_var.copy_(running_var.to(work) * (1 - momentum) + unbiased * momentum)
        else:
            mean = _core.contiguous_copy(running_mean.to(work))  # a snapshot, for backward
            var = running_var.to(work)
        invstd = (var + eps).rsqrt()
        scale = invstd if weight is None else invstd * weight.to(work)
        shift = -(mean * scale) if bias is None else bias.to(work) - mean * scale
        y = kernel("batch_norm_elemt", op, input)(x, None, scale, None, shift)
        y = _cast_back(y, input.dtype)
    return _core.record(op, (input, weight, bias), y,
                        {"training": training, "momentum": momentum, "eps": eps,
                         "mean": mean, "invstd": invstd,
                         # for ember.onnx (the backward needs mean and invstd only)
                         "running_mean": running_mean, "running_var": running_var})


def batch_norm_backward(grad_out, input, weight, save_mean, save_invstd, training=True,
                        eps=1e-5, output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of batch_norm from the saved per-channel
    mean and invstd (eps is already in invstd; the argument is kept for PyTorch's
    signature). In training mode the statistics depend on the input, which adds the
    mean terms to grad_input; in evaluation mode grad_input = grad * weight * invstd.
    An entry is None where output_mask says False or weight is None."""
    op = "batch_norm_backward"
    C = input.shape[1]
    m = input.numel() // C if C else 0
    work = _work_dtype(input.dtype)
    need_w = bool(output_mask[1]) and weight is not None
    need_b = bool(output_mask[2])
    dx = dw = db = None
    with _core._no_record():
        g, x = _work(grad_out, work), _work(input, work)
        mean, invstd, w = _work(save_mean, work), _work(save_invstd, work), _work(weight, work)
        if training or need_w or need_b:
            sum_g, sum_gxmu = kernel("batch_norm_backward_reduce", op, input)(g, x, mean)
        if output_mask[0]:
            a = invstd if w is None else invstd * w
            if training:
                # dx = a * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)))
                b = -(a * invstd * invstd * sum_gxmu) / m
                dx = kernel("batch_norm_elemt", op, input)(g, x, a, b, -(a * sum_g) / m - b * mean)
            else:
                zero = _core.empty((C,), work, input.device).fill_(0)
                dx = kernel("batch_norm_elemt", op, input)(g, None, a, None, zero)
            dx = _cast_back(dx, input.dtype)
        if need_w:
            dw = _cast_back(sum_gxmu * invstd, weight.dtype)
        if need_b:
            db = _cast_back(sum_g, input.dtype if weight is None else weight.dtype)
    return dx, dw, db


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """ATen's native_layer_norm: (output, mean, rstd), output layer_norm's, mean and
    rstd = 1 / sqrt(biased var + eps) over the normalised dims, of shape
    input.shape[:-k] + (1,) * k (composed ops, differentiable)."""
    op = "native_layer_norm"
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    k = len(_normalized_shape(normalized_shape, input, op))
    dims = list(range(input.ndim - k, input.ndim))
    x = input if input.dtype.name not in ("float16", "bfloat16") else input.float()
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, correction=0, keepdim=True)
    return out, mean, (var + _number(eps, op, "eps")).rsqrt()


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """ATen's native_batch_norm: (output, save_mean, save_invstd): output batch_norm's
    (running statistics updated in training, as batch_norm); in training the batch's
    per-channel mean and 1 / sqrt(biased var + eps), in evaluation two empty tensors
    (as PyTorch's CPU kernel)."""
    op = "native_batch_norm"
    if not isinstance(training, bool):
        raise TypeError(f"{op}: training must be a bool, got {type(training).__name__}")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = _core.empty((0,), input.dtype, input.device)
        return out, empty, empty.clone()
    dims = [0] + list(range(2, input.ndim))
    x = input if input.dtype.name not in ("float16", "bfloat16") else input.float()
    mean = x.mean(dims)
    var = x.var(dims, correction=0)
    return out, mean, (var + _number(eps, op, "eps")).rsqrt()


__all__ += ["native_layer_norm", "native_batch_norm"]
