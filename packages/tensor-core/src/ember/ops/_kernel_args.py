"""What the Python entries of the float kernel families (softmax, norm, loss, dropout,
conv, pool) share: the work dtype their kernels compute in (float16 goes through
float32), bringing operands to it and back, and the checks of their tensor and number
arguments."""
from __future__ import annotations

import numbers

from ember._args import tensor_arg
from ember._C import core as _core

_float32 = _core._dtype_by_name("float32")
_float64 = _core._dtype_by_name("float64")


def _rows_last(x, dim, op):
    """(contiguous view with `dim` last, the dim, and how to put it back)."""
    tensor_arg(x, op)
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
    """The kernels run in float32 or float64 (float16 and bfloat16 go through float32)."""
    return _float64 if dtype is _float64 else _float32


_tensor = tensor_arg


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
        if t.shape != shape:
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
    if t is None or (t.dtype is work and t.is_contiguous()):
        return t          # the common case, without to()'s argument parsing
    return t.to(work).contiguous()


def _cast_back(t, dtype):
    return t if t is None or t.dtype is dtype else t.to(dtype)
