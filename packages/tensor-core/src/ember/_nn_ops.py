"""Fused numerics that deep learning spends its time in, over hand-written kernels
(kernels/cpu/softmax.c, ...). Each forward records itself for autograd, and its
backward kernel is exposed here for the derivative table to call."""
from __future__ import annotations

from ember._C import core as _core
from ember._C import nn_kernels as _k
from ember._registry import tensor_method

__all__ = ["softmax", "log_softmax"]


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
    from ember._dtypes import float32, float64
    return float64 if dtype is float64 else float32


def _softmax(input, dim, dtype, log, op):
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"{op}: expected a tensor, got {type(input).__name__}")
    if dim is None:
        raise TypeError(f"{op}: dim is required (e.g. {op}(x, dim=-1))")
    out_dtype = _compute_dtype(input, dtype, op)
    work = _work_dtype(out_dtype)
    with _core._no_record():
        x, d, back = _rows_last(input.to(work), dim, op)
        y = back(_k.softmax_rows(x, log))
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
        dx = back(_k.softmax_backward_rows(g, y, log))
        return dx.to(output.dtype) if dx.dtype is not output.dtype else dx.contiguous()
