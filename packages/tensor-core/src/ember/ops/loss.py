"""cross_entropy and nll_loss (kernels: the `loss` family, ember._C.loss on the CPU),
with PyTorch's semantics (class indices or probabilities as targets, weights,
ignore_index, label smoothing, the three reductions). Each forward records itself;
the *_backward functions are the derivative table's and record nothing."""
from __future__ import annotations

import operator

from ember._C import core as _core
from ember.backends import kernel
from ember.ops._kernel_args import (
    _cast_back,
    _float_tensor,
    _number,
    _param,
    _same_device,
    _tensor,
    _work,
    _work_dtype,
)
from ember.ops.softmax import log_softmax

__all__ = ['cross_entropy', 'nll_loss']

_int64 = _core._dtype_by_name("int64")


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

        def error(bad):   # raised at once on the CPU, at the next sync on a device
            v = target.reshape(-1)[bad].item()
            return IndexError(f"{op}: target {v} is out of bounds for {C} classes (expected "
                              f"values in [0, {C - 1}] or ignore_index={ignore_index})")
        kernel("check_targets", op, t)(t, C, ignore_index, error)
    return t


def _reduce_loss(loss, wrow, reduction, attrs=None):
    """The reduced loss; 'mean' divides by the sum of the targets' weights, which it
    keeps in attrs["total"] (when given) for the backward."""
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    den = wrow.sum()
    if attrs is not None:
        attrs["total"] = den
    return total / den


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
        loss, wrow = kernel("cross_entropy", op, input)(x, t, _work(weight, work), ignore_index, ls)
        loss = _cast_back(_reduce_loss(loss, wrow, reduction, attrs), input.dtype)
    return _core.record(op, (input,), loss, attrs)


def _grad_scale(grad, t, weight, ignore_index, reduction, work, total=None):
    """(the output's grad in the work dtype, contiguous, scale): each position's loss
    enters the output times grad (its own, or the one value) * scale. total: the
    forward's sum of the targets' weights ('mean''s divisor), else summed here."""
    g = _work(grad, work)
    if reduction != "mean":
        return g, 1.0
    if total is None:
        valid = t != ignore_index
        if weight is None:
            total = valid.sum()
        else:
            from ember.ops.elementwise import where
            total = (weight.to(work).index_select(0, where(valid, t, 0).reshape(-1))
                     * valid.reshape(-1)).sum()
    if g.device.type != "cpu":
        # divide on the device: reading the total back would stall every backward
        total = total.to(work)
        if weight is None:
            # total is 0 only when every target is ignored: the kernel skips every row
            return (g / total).contiguous(), 1.0
        g = _core.elementwise("where", total == 0, 0.0, g / total).contiguous()
        return g, 1.0
    total = total.item()
    return g, (1.0 / total if total else 0.0)   # all ignored: PyTorch's grad is 0


def cross_entropy_backward(grad, input, target, weight=None, ignore_index=-100,
                           reduction="mean", label_smoothing=0.0, total=None):
    """The gradient of cross_entropy w.r.t. its input (logits). Class-index targets
    recompute the softmax from the input in the fused backward kernel; total: the
    forward's 'mean' divisor (its attrs["total"]), summed again when None."""
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
        g, scale = _grad_scale(grad, t, weight, ignore_index, reduction, work, total)
        dx = kernel("cross_entropy_backward", op, input)(x, t, _work(weight, work), g, scale,
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
        loss, wrow = kernel("nll_loss", op, input)(_work(input, work), t, _work(weight, work),
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
        dx = kernel("nll_loss_backward", op, input)(_work(input, work), t, _work(weight, work), g,
                                              scale, ignore_index)
        return _cast_back(dx, input.dtype)
