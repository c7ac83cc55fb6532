"""softmax and log_softmax over one dim (kernels: the `softmax` family, ember._C.softmax
on the CPU). float16 is computed in float32 and cast back. softmax_backward is the
derivative table's; it records nothing."""
from __future__ import annotations

from ember._C import core as _core
from ember._registry import tensor_method
from ember.backends import kernel
from ember.ops._kernel_args import _compute_dtype, _rows_last, _work_dtype

__all__ = ['softmax', 'log_softmax']


def _softmax(input, dim, dtype, log, op):
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"{op}: expected a tensor, got {type(input).__name__}")
    if dim is None:
        raise TypeError(f"{op}: dim is required (e.g. {op}(x, dim=-1))")
    if input.dtype.kind == "complex":   # PyTorch refuses too (softmax has no complex kernel)
        raise TypeError(f"{op}: not supported for dtype {input.dtype!r}; it is not defined for "
                        f"complex numbers (apply it to x.real or x.abs())")
    out_dtype = _compute_dtype(input, dtype, op)
    work = _work_dtype(out_dtype)
    with _core._no_record():
        x, d, back = _rows_last(input.to(work), dim, op)
        y = back(kernel("softmax_rows", op, x)(x, log))
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
        dx = back(kernel("softmax_backward_rows", op, g)(g, y, log))
        return dx.to(output.dtype) if dx.dtype is not output.dtype else dx.contiguous()
