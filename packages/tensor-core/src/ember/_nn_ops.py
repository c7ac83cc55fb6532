"""Fused numerics that deep learning spends its time in, over hand-written kernels
(kernels/cpu/softmax.c, norm.c, loss.c, dropout.c): softmax, log_softmax,
layer_norm, batch_norm, cross_entropy, nll_loss, embedding and dropout, with
PyTorch's semantics.

Each forward records itself for autograd with attrs holding everything its
backward needs (saved statistics, masks, the op's arguments), and its backward is a
plain function here (``<op>_backward``) that the derivative table calls; backward
functions record nothing. float16 is computed in float32 and cast back. The CPU
runs the kernels of ember._C.nn_kernels; another device's backend provides
functions of the same names and arguments (see _kernels).
"""
from __future__ import annotations

import numbers
import operator

from ember._C import core as _core
from ember._C import nn_kernels as _k
from ember._args import int_arg
from ember._registry import tensor_method

__all__ = ["softmax", "log_softmax", "layer_norm", "batch_norm", "cross_entropy", "nll_loss",
           "embedding", "dropout", "dropout_"]

_int64 = _core._dtype_by_name("int64")
_float32 = _core._dtype_by_name("float32")
_float64 = _core._dtype_by_name("float64")


def _kernels(x):
    """The hand-written kernels for x's device: ember._C.nn_kernels on the CPU, the
    device's backend (functions of the same names and arguments) elsewhere."""
    return _k if x.device.type == "cpu" else _core.backend_for(x.device)


def _rows_last(x, dim, op):
    """(contiguous view with `dim` last, the dim, and how to put it back)."""
    if not isinstance(x, _core.TensorBase):
        raise TypeError(f"{op}: expected a tensor, got {type(x).__name__}")
    d = _core.normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return x.reshape(1), d, lambda y: y.reshape(())
    last = x.ndim - 1
    if d == last:
        return x.contiguous(), d, lambda y: y
    return x.movedim(d, last).contiguous(), d, lambda y: y.movedim(last, d)


def _compute_dtype(x, dtype, op):
    if dtype is not None:
        from ember._dtypes import as_dtype
        dtype = as_dtype(dtype)
    else:
        dtype = x.dtype if x.dtype.kind == "float" else _core.get_default_dtype()
    if dtype.kind != "float":
        raise TypeError(f"{op}: needs a floating point dtype, got {dtype!r}")
    return dtype


def _work_dtype(dtype):
    """The kernels run in float32 or float64 (float16 goes through float32)."""
    return _float64 if dtype is _float64 else _float32


def _softmax(input, dim, dtype, log, op):
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"{op}: expected a tensor, got {type(input).__name__}")
    if dim is None:
        raise TypeError(f"{op}: dim is required (e.g. {op}(x, dim=-1))")
    out_dtype = _compute_dtype(input, dtype, op)
    work = _work_dtype(out_dtype)
    with _core._no_record():
        x, d, back = _rows_last(input.to(work), dim, op)
        y = back(_kernels(x).softmax_rows(x, log))
        if y.dtype is not out_dtype:
            y = y.to(out_dtype)
        elif not y.is_contiguous():
            y = y.contiguous()
    return _core.record("log_softmax" if log else "softmax", (input,), y, {"dim": d})


@tensor_method
def softmax(input, dim=None, dtype=None):
    """exp(x) / exp(x).sum(dim), computed stably (the row max is subtracted first)."""
    return _softmax(input, dim, dtype, False, "softmax")


@tensor_method
def log_softmax(input, dim=None, dtype=None):
    """x - logsumexp(x, dim), computed in one fused pass per row."""
    return _softmax(input, dim, dtype, True, "log_softmax")


def softmax_backward(grad, output, dim, log=False):
    """Gradient w.r.t. the input of softmax/log_softmax, given the forward's output."""
    op = "log_softmax_backward" if log else "softmax_backward"
    work = _work_dtype(output.dtype)
    with _core._no_record():
        g, d, back = _rows_last(grad.to(work), dim, op)
        y, _, _ = _rows_last(output.to(work), dim, op)
        dx = back(_kernels(g).softmax_backward_rows(g, y, log))
        return dx.to(output.dtype) if dx.dtype is not output.dtype else dx.contiguous()


# argument checks ---------------------------------------------------------------------

def _tensor(x, op, what="input"):
    if not isinstance(x, _core.TensorBase):
        raise TypeError(f"{op}: {what} must be a tensor, got {type(x).__name__}")
    return x


def _float_tensor(x, op, what="input"):
    _tensor(x, op, what)
    if x.dtype.kind != "float":
        raise TypeError(f"{op}: {what} must be a floating point tensor, got {x.dtype!r}")
    return x


def _same_device(op, x, *others):
    for t in others:
        if t is not None and t.device != x.device:
            raise ValueError(f"{op}: expected all tensors on one device, got {x.device} and "
                             f"{t.device}")


def _param(t, shape, x, op, what):
    """Check an optional weight/bias-like tensor: floating point, `shape`, x's device."""
    if t is not None:
        _float_tensor(t, op, what)
        if tuple(t.shape) != shape:
            raise ValueError(f"{op}: {what} must have shape {shape}, got {tuple(t.shape)} "
                             f"(input {tuple(x.shape)})")
        _same_device(op, x, t)


def _number(v, op, what):
    if type(v) is float or type(v) is int:     # the common case, without the ABC checks
        return float(v)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {what} must be a number, got {type(v).__name__}")
    return float(v)


def _work(t, work):
    """t in the kernels' dtype, contiguous (None stays None)."""
    return None if t is None else t.to(work).contiguous()


def _cast_back(t, dtype):
    return t if t is None or t.dtype is dtype else t.to(dtype)


# layer_norm ----------------------------------------------------------------------------

def _normalized_shape(normalized_shape, input, op):
    if type(normalized_shape) is int or isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    try:
        shape = tuple(operator.index(s) for s in normalized_shape)
    except TypeError:
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got "
                        f"{normalized_shape!r}") from None
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise ValueError(f"{op}: normalized_shape {shape} does not match the last dims of "
                         f"the input {tuple(input.shape)}")
    return shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias, with the mean and the (biased)
    variance over the last len(normalized_shape) dims, in one fused kernel per row
    (two-pass statistics: no cancellation for large means). Records "layer_norm" with
    attrs normalized_shape, eps and the saved statistics mean and rstd (shape
    input.shape[:-k] + (1,) * k; float32 for float16 inputs)."""
    op = "layer_norm"
    _float_tensor(input, op)
    shape = _normalized_shape(normalized_shape, input, op)
    _param(weight, shape, input, op, "weight")
    _param(bias, shape, input, op, "bias")
    eps = _number(eps, op, "eps")
    work = _work_dtype(input.dtype)
    with _core._no_record():
        y, mean, rstd = _kernels(input).layer_norm(_work(input, work), _work(weight, work),
                                                   _work(bias, work), len(shape), eps)
        y = _cast_back(y, input.dtype)
    return _core.record(op, (input, weight, bias), y,
                        {"normalized_shape": shape, "eps": eps, "mean": mean, "rstd": rstd})


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None,
                        output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of layer_norm from the saved mean and rstd;
    an entry is None where output_mask says False or the parameter is None."""
    shape = _normalized_shape(normalized_shape, input, "layer_norm_backward")
    work = _work_dtype(input.dtype)
    mask = (bool(output_mask[0]), bool(output_mask[1]) and weight is not None,
            bool(output_mask[2]) and bias is not None)
    with _core._no_record():
        dx, dw, db = _kernels(input).layer_norm_backward(
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
    statistics. Records "batch_norm" with attrs training, momentum, eps and the saved
    per-channel mean and invstd (1 / sqrt(var + eps)) that were used."""
    op = "batch_norm"
    _float_tensor(input, op)
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
    K = _kernels(input)
    with _core._no_record():
        x = _work(input, work)
        if training:
            mean, var = K.batch_norm_stats(x)
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
        y = _cast_back(K.batch_norm_elemt(x, None, scale, None, shift), input.dtype)
    return _core.record(op, (input, weight, bias), y,
                        {"training": training, "momentum": momentum, "eps": eps,
                         "mean": mean, "invstd": invstd})


def batch_norm_backward(grad_out, input, weight, save_mean, save_invstd, training=True,
                        eps=1e-5, output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of batch_norm from the saved per-channel
    mean and invstd (eps is already in invstd; the argument is kept for PyTorch's
    signature). In training mode the statistics depend on the input, which adds the
    mean terms to grad_input; in evaluation mode grad_input = grad * weight * invstd.
    An entry is None where output_mask says False or weight is None."""
    C = input.shape[1]
    m = input.numel() // C if C else 0
    work = _work_dtype(input.dtype)
    K = _kernels(input)
    need_w = bool(output_mask[1]) and weight is not None
    need_b = bool(output_mask[2])
    dx = dw = db = None
    with _core._no_record():
        g, x = _work(grad_out, work), _work(input, work)
        mean, invstd, w = _work(save_mean, work), _work(save_invstd, work), _work(weight, work)
        if training or need_w or need_b:
            sum_g, sum_gxmu = K.batch_norm_backward_reduce(g, x, mean)
        if output_mask[0]:
            a = invstd if w is None else invstd * w
            if training:
                # dx = a * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)))
                b = -(a * invstd * invstd * sum_gxmu) / m
                dx = K.batch_norm_elemt(g, x, a, b, -(a * sum_g) / m - b * mean)
            else:
                dx = K.batch_norm_elemt(g, None, a, None, _core.empty((C,), work, input.device)
                                        .fill_(0))
            dx = _cast_back(dx, input.dtype)
        if need_w:
            dw = _cast_back(sum_gxmu * invstd, weight.dtype)
        if need_b:
            db = _cast_back(sum_g, input.dtype if weight is None else weight.dtype)
    return dx, dw, db


# losses --------------------------------------------------------------------------------

_REDUCTIONS = ("none", "mean", "sum")


def _classes(input):
    """(C, the shape of a class-index target) of a (C,) or (N, C, d1, ...) input."""
    if input.ndim == 1:
        return input.shape[0], ()
    return input.shape[1], (input.shape[0],) + tuple(input.shape[2:])


def _loss_args(input, target, weight, reduction, op):
    """(C, the class-index target shape) after the checks every loss shares."""
    _float_tensor(input, op)
    _tensor(target, op, "target")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have a class dim: (C,), (N, C) or (N, C, d1, ...), "
                         f"got a 0-d tensor")
    C, index_shape = _classes(input)
    _param(weight, (C,), input, op, "weight")
    _same_device(op, input, target)
    return C, index_shape


def _class_targets(input, target, index_shape, C, ignore_index, op):
    """target as a contiguous int64 tensor, every value checked to be a class in
    [0, C) or ignore_index."""
    if target.dtype.kind != "int":
        raise TypeError(f"{op}: class-index targets must be an integer tensor, got "
                        f"{target.dtype!r}" + (" (float targets are class probabilities, "
                                               "of the input's shape)"
                                               if target.dtype.kind == "float" else ""))
    if tuple(target.shape) != index_shape:
        raise ValueError(f"{op}: target shape {tuple(target.shape)} does not match the "
                         f"input {tuple(input.shape)}: expected {index_shape}")
    with _core._no_record():
        t = _work(target, _int64)
        bad = _kernels(t).check_targets(t, C, ignore_index)
        if bad >= 0:
            v = t.reshape(-1)[bad].item()
            raise IndexError(f"{op}: target {v} is out of bounds for {C} classes (expected "
                             f"values in [0, {C - 1}] or ignore_index={ignore_index})")
    return t


def _reduce_loss(loss, wrow, reduction):
    if reduction == "none":
        return loss
    total = loss.sum()
    return total if reduction == "sum" else total / wrow.sum()


def _classes_last(input, work):
    """The logits as a contiguous tensor with the class dim last, and the inverse map
    for a gradient in that layout."""
    x = input.to(work)
    if input.ndim <= 2:
        return x.contiguous(), lambda g: g
    return (_core.contiguous_copy(x.movedim(1, -1)),
            lambda g: _core.contiguous_copy(g.movedim(-1, 1)))


def _smoothing(label_smoothing, op):
    ls = _number(label_smoothing, op, "label_smoothing")
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be between 0.0 and 1.0, got {ls}")
    return ls


def _class_view(t, ndim):
    """A (C,) tensor shaped to broadcast along the class dim of an ndim input."""
    return t if ndim <= 2 else t.reshape((t.shape[0],) + (1,) * (ndim - 2))


def _prob_parts(input, target, weight, label_smoothing, work):
    """(log_softmax(input), smoothed target times the class weights, class dim)."""
    cd = 0 if input.ndim == 1 else 1
    C = input.shape[cd]
    logp = log_softmax(input.to(work), cd)
    t = target.to(work)
    if label_smoothing > 0:
        t = t * (1 - label_smoothing) + label_smoothing / C
    if weight is not None:
        t = t * _class_view(weight.to(work), input.ndim)
    return logp, t, cd


def _prob_grad(grad, input, reduction, work):
    """The output's grad, broadcastable against the input, with 'mean' divided out."""
    C = input.shape[0] if input.ndim == 1 else input.shape[1]
    g = grad.to(work)
    if reduction == "mean":
        g = g / (input.numel() // C)
    elif reduction == "none" and input.ndim > 1:
        g = g.unsqueeze(1)
    return g


def cross_entropy(input, target, weight=None, *, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy of logits `input` ((C,), (N, C) or (N, C, d1, ...), classes along
    dim 1) with `target`:

    - class indices (integer, the input's shape without the class dim): fused
      log-softmax + NLL per row. loss = (1 - ls) * w[t] * -logp[t]
      + ls / C * sum_c w[c] * -logp[c]; positions whose target is ignore_index count
      0 and 'mean' divides by the sum of w[t] over the others (PyTorch's rules);
    - class probabilities (floating point, the input's shape): loss =
      -sum_c w[c] * t'[c] * logp[c], t' = (1 - ls) * t + ls / C; 'mean' divides by
      the number of positions.

    reduction: 'none' | 'mean' | 'sum'. The options after weight are keyword-only
    (PyTorch's deprecated positional size_average/reduce do not exist here).
    Records "cross_entropy" with attrs target, weight, ignore_index, reduction and
    label_smoothing; probability targets are an input too (they have a gradient)."""
    op = "cross_entropy"
    C, index_shape = _loss_args(input, target, weight, reduction, op)
    ls = _smoothing(label_smoothing, op)
    ignore_index = operator.index(ignore_index)
    work = _work_dtype(input.dtype)
    attrs = {"target": target, "weight": weight, "ignore_index": ignore_index,
             "reduction": reduction, "label_smoothing": ls}
    if target.dtype.kind == "float" and tuple(target.shape) == tuple(input.shape):
        if ignore_index >= 0:
            raise ValueError(f"{op}: ignore_index={ignore_index} is not supported for class "
                             f"probability (floating point) targets")
        with _core._no_record():
            logp, t, cd = _prob_parts(input, target, weight, ls, work)
            loss = -(logp * t).sum(cd)
            if reduction != "none":
                loss = loss.sum() / (1 if reduction == "sum" else input.numel() // C)
            loss = _cast_back(loss, input.dtype)
        return _core.record(op, (input, target), loss, attrs)
    t = _class_targets(input, target, index_shape, C, ignore_index, op)
    with _core._no_record():
        x, _ = _classes_last(input, work)
        loss, wrow = _kernels(input).cross_entropy(x, t, _work(weight, work), ignore_index, ls)
        loss = _cast_back(_reduce_loss(loss, wrow, reduction), input.dtype)
    return _core.record(op, (input,), loss, attrs)


def _grad_scale(grad, t, weight, ignore_index, reduction, work):
    """(the output's grad in the work dtype, contiguous, scale): each position's loss
    enters the output times grad (its own, or the one value) * scale."""
    g = _work(grad, work)
    if reduction != "mean":
        return g, 1.0
    valid = t != ignore_index
    if weight is None:
        total = valid.sum()
    else:
        from ember._elementwise import where
        total = (weight.to(work).index_select(0, where(valid, t, 0).reshape(-1))
                 * valid.reshape(-1)).sum()
    if g.device.type != "cpu":
        # divide on the device: reading the total back would stall every backward
        total = total.to(work)
        g = _core.elementwise("where", total == 0, 0.0, g / total).contiguous()
        return g, 1.0
    total = total.item()
    return g, (1.0 / total if total else 0.0)   # all ignored: PyTorch's grad is 0


def cross_entropy_backward(grad, input, target, weight=None, ignore_index=-100,
                           reduction="mean", label_smoothing=0.0):
    """The gradient of cross_entropy w.r.t. its input (logits). Class-index targets
    recompute the softmax from the input in the fused backward kernel."""
    op = "cross_entropy_backward"
    work = _work_dtype(input.dtype)
    with _core._no_record():
        if target.dtype.kind == "float":
            logp, t, cd = _prob_parts(input, target, weight, label_smoothing, work)
            # d/dx of -sum_c t_c logp_c is softmax * sum_c t_c - t
            dx = (logp.exp() * t.sum(cd, keepdim=True) - t) * _prob_grad(grad, input,
                                                                         reduction, work)
            return _cast_back(_core.contiguous_copy(dx), input.dtype)
        C, index_shape = _classes(input)
        t = _class_targets(input, target, index_shape, C, ignore_index, op)
        x, back = _classes_last(input, work)
        g, scale = _grad_scale(grad, t, weight, ignore_index, reduction, work)
        dx = _kernels(input).cross_entropy_backward(x, t, _work(weight, work), g, scale,
                                                   ignore_index, float(label_smoothing))
        return _cast_back(back(dx), input.dtype)


def cross_entropy_target_backward(grad, input, target, weight=None, reduction="mean",
                                  label_smoothing=0.0):
    """The gradient of cross_entropy w.r.t. class-probability targets:
    -(1 - ls) * w * log_softmax(input), times the output's grad."""
    work = _work_dtype(input.dtype)
    with _core._no_record():
        cd = 0 if input.ndim == 1 else 1
        dt = log_softmax(input.to(work), cd) * -(1 - label_smoothing)
        if weight is not None:
            dt = dt * _class_view(weight.to(work), input.ndim)
        dt = dt * _prob_grad(grad, input, reduction, work)
        return _cast_back(_core.contiguous_copy(dt), target.dtype)


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of log-probabilities `input` ((C,), (N, C) or
    (N, C, d1, ...)) at integer class targets: loss = -w[t] * input[t]; targets equal
    to ignore_index count 0 and 'mean' divides by the sum of w[t] over the others.
    Records "nll_loss" with attrs target, weight, ignore_index and reduction."""
    op = "nll_loss"
    C, index_shape = _loss_args(input, target, weight, reduction, op)
    ignore_index = operator.index(ignore_index)
    t = _class_targets(input, target, index_shape, C, ignore_index, op)
    work = _work_dtype(input.dtype)
    with _core._no_record():
        loss, wrow = _kernels(input).nll_loss(_work(input, work), t, _work(weight, work),
                                             ignore_index)
        loss = _cast_back(_reduce_loss(loss, wrow, reduction), input.dtype)
    return _core.record(op, (input,), loss, {"target": target, "weight": weight,
                                             "ignore_index": ignore_index,
                                             "reduction": reduction})


def nll_loss_backward(grad, input, target, weight=None, ignore_index=-100, reduction="mean"):
    """The gradient of nll_loss w.r.t. its input: -w[t] * grad at each target, 0
    elsewhere."""
    op = "nll_loss_backward"
    work = _work_dtype(input.dtype)
    with _core._no_record():
        C, index_shape = _classes(input)
        t = _class_targets(input, target, index_shape, C, ignore_index, op)
        g, scale = _grad_scale(grad, t, weight, ignore_index, reduction, work)
        dx = _kernels(input).nll_loss_backward(_work(input, work), t, _work(weight, work), g,
                                              scale, ignore_index)
        return _cast_back(dx, input.dtype)


# embedding -----------------------------------------------------------------------------

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of `weight` (num_embeddings, dim) at the integer indices `input`:
    shape input.shape + (dim,). The argument order is torch.nn.functional.embedding's
    (indices first). padding_idx (negative counts from the end) gets no gradient;
    max_norm renormalises, in place in weight, the rows it looks up whose norm_type
    norm exceeds it (as PyTorch). Records "embedding" with attrs indices,
    num_weights, padding_idx and scale_grad_by_freq."""
    op = "embedding"
    _tensor(input, op, "indices")
    _float_tensor(weight, op, "weight")
    if input.dtype.kind != "int":
        raise TypeError(f"{op}: indices must be an integer tensor, got {input.dtype!r}")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-d (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    if sparse:
        raise NotImplementedError(f"{op}: sparse gradients are not supported")
    _same_device(op, weight, input)
    num, dim = weight.shape
    if padding_idx is not None:
        padding_idx = int_arg(padding_idx, "padding_idx", op)
        if not -num <= padding_idx < num:
            raise ValueError(f"{op}: padding_idx={padding_idx} must be within the "
                             f"{num} embeddings")
        padding_idx %= num
    from ember._indexing import _prep, index_select
    with _core._no_record():
        idx = _prep(input.reshape(-1), num, op, "dim 0 of the weight", allow_negative=False)
        if max_norm is not None:
            _renorm_rows_(weight, idx, _number(max_norm, op, "max_norm"),
                          _number(norm_type, op, "norm_type"))
        out = index_select(weight, 0, idx).reshape(tuple(input.shape) + (dim,))
    return _core.record(op, (weight,), out,
                        {"indices": idx.reshape(tuple(input.shape)), "num_weights": num,
                         "padding_idx": padding_idx,
                         "scale_grad_by_freq": bool(scale_grad_by_freq)})


def _renorm_rows_(weight, idx, max_norm, norm_type):
    """weight[i] *= max_norm / (norm + 1e-7) for the looked-up rows whose norm exceeds
    max_norm (PyTorch's embedding_renorm_), in place."""
    from ember._elementwise import where
    from ember._indexing import unique
    from ember.linalg import vector_norm
    rows = unique(idx)
    w = weight.index_select(0, rows)
    norms = vector_norm(w, norm_type, dim=1, keepdim=True)
    scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    weight.index_copy_(0, rows, (w * scale).to(weight.dtype))


def embedding_backward(grad, indices, num_weights, padding_idx=None, scale_grad_by_freq=False):
    """The gradient w.r.t. embedding's weight: grad's rows added up at their indices
    (index_add), each divided by how often its index occurs when scale_grad_by_freq;
    the padding_idx row is zero."""
    dim = grad.shape[-1]
    work = _work_dtype(grad.dtype)
    with _core._no_record():
        idx = _work(indices, _int64).reshape(-1)
        g = _work(grad, work).reshape(-1, dim)
        out = _core.empty((num_weights, dim), work, grad.device).fill_(0)
        out.index_add_(0, idx, g)
        if scale_grad_by_freq:
            counts = _core.empty((num_weights,), work, grad.device).fill_(0)
            counts.index_add_(0, idx, _core.empty((idx.shape[0],), work, grad.device).fill_(1))
            out = out / counts.clamp_min(1).unsqueeze(1)
        if padding_idx is not None:
            out[padding_idx] = 0
        return _cast_back(out, grad.dtype)


# dropout -------------------------------------------------------------------------------

def _dropout_args(input, p, op):
    _float_tensor(input, op)
    p = _number(p, op, "p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return p


def _dropout(input, p, generator, op):
    """(y, mask) from the generator's next input.numel() words (see dropout.c)."""
    from ember._random import _generator
    gen = _generator(generator, input.device, op)
    seed, offset = gen._reserve(input.numel())
    work = _work_dtype(input.dtype)
    with _core._no_record():
        y, mask = _kernels(input).dropout(_work(input, work), p, seed, offset)
        return _cast_back(y, input.dtype), mask


def dropout(input, p=0.5, train=True, *, generator=None):
    """Zero each element with probability p and scale the others by 1 / (1 - p)
    (torch.dropout's arguments; nn.functional.dropout's `training` is `train`).
    With train=False or p=0 the input itself is returned. Element i (row-major) is
    dropped when the float32 uniform of the generator's next word i is below p, so
    em.manual_seed(s) gives the same mask on every device. Records "dropout" with
    attrs p and the bool mask (True = kept)."""
    op = "dropout"
    p = _dropout_args(input, p, op)
    if not train or p == 0:
        return input
    y, mask = _dropout(input, p, generator, op)
    return _core.record(op, (input,), y, {"p": p, "mask": mask})


def dropout_(input, p=0.5, train=True, *, generator=None):
    """dropout in place (the same numbers as dropout)."""
    from ember._indexing import _check_inplace
    op = "dropout_"
    p = _dropout_args(input, p, op)
    _check_inplace(input, op)
    if not train or p == 0:
        return input
    y, mask = _dropout(input, p, generator, op)
    with _core._no_record():
        input.copy_(y)
    return _core.record("dropout", (input,), input, {"p": p, "mask": mask, "inplace": True})


def dropout_backward(grad, mask, p):
    """grad * mask / (1 - p) (0 where p = 1)."""
    work = _work_dtype(grad.dtype)
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    with _core._no_record():
        dx = _kernels(grad).dropout_backward(_work(grad, work), mask.contiguous(), scale)
        return _cast_back(dx, grad.dtype)
