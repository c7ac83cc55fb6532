"""Scans: cumsum, cumprod (and their in-place forms) and the Array API's
cumulative_sum / cumulative_prod. The kernel is the `scan` family (ember._C.scan on
the CPU). bool and integer inputs accumulate in int64 unless dtype says otherwise
(as PyTorch). Recorded as "cumsum" / "cumprod" with attrs dim, dtype (the input's
dtype; dim None records the op on the flattened view).

Complex inputs: cumsum is the real kernel over the (re, im) view (the parts add
independently); cumprod is a doubling scan of complex multiplies (log2(n) passes of
the op table's mul), as the scan kernel has no complex body.
"""
from __future__ import annotations

import math

from ember._args import tensor_input
from ember._C import core as _core
from ember._dtypes import as_dtype
from ember._registry import tensor_method
from ember.ops.index import _check_inplace, _run
from ember.ops.shape import cat

__all__ = ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"]

_record = _core.record
_norm = _core.normalize_dim
_int64 = _core._dtype_by_name("int64")


def _scan(input, dim, dtype, op):
    """Inclusive sum / product along dim into a new contiguous tensor. bool and
    integer inputs accumulate in int64 unless dtype says otherwise (as PyTorch)."""
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _norm(dim, input.ndim, op)
        x = input
    if dtype is not None:
        out_dtype = as_dtype(dtype)
    else:
        out_dtype = _int64 if input.dtype.kind in ("bool", "int") else input.dtype
    work = _int64 if out_dtype.kind == "bool" else out_dtype
    shape = tuple(x.shape)
    y = _core.empty(shape, work, x.device)
    _core.copy_into(y, x)
    if x.ndim and work.kind == "complex":
        y = _complex_scan(y, d, op)
    elif x.ndim:
        outer = math.prod(shape[:d])
        inner = math.prod(shape[d + 1:])
        _run("scan", op, op, y, outer, shape[d], inner)
    if work is not out_dtype:
        y = _core.astype(y, out_dtype)
    # recorded on x (input, or its flattened view), which has y's shape
    _record(op, (x,), y, {"dim": d, "dtype": x.dtype})
    return y.reshape(()) if dim is None and input.ndim == 0 else y


def _complex_scan(y, d, op):
    """The scan of contiguous complex y along d (module doc), not recorded."""
    from ember.ops.complex import view_as_real
    shape = tuple(y.shape)
    with _core._no_record():
        if op == "cumsum":
            outer = math.prod(shape[:d])
            inner = math.prod(shape[d + 1:]) * 2
            _run("scan", op, op, view_as_real(y), outer, shape[d], inner)
            return y
        n, step = shape[d], 1
        while step < n:       # y[i] *= y[i - step] for i >= step (Hillis-Steele)
            y = cat([y.narrow(d, 0, step),
                     _core.elementwise("mul", y.narrow(d, step, n - step),
                                       y.narrow(d, 0, n - step))], d)
            step *= 2
        return y.contiguous()


@tensor_method
@tensor_input
def cumsum(input, dim=None, *, dtype=None, axis=None):
    """Running sums along dim (over the flattened input when dim is None)."""
    return _scan(input, axis if dim is None else dim, dtype, "cumsum")


@tensor_method
@tensor_input
def cumprod(input, dim=None, *, dtype=None, axis=None):
    """Running products along dim (over the flattened input when dim is None)."""
    return _scan(input, axis if dim is None else dim, dtype, "cumprod")


def _scan_(self, dim, op):
    _check_inplace(self, op + "_")
    r = _scan(self.detach(), dim, self.dtype, op)
    _core.copy_(self, r)
    return _record(op, (self,), self, {"dim": _norm(dim, self.ndim, op), "dtype": self.dtype,
                                       "inplace": True})


@tensor_method
@tensor_input
def cumsum_(input, dim):
    """In-place running sums along dim."""
    return _scan_(input, dim, "cumsum")


@tensor_method
@tensor_input
def cumprod_(input, dim):
    return _scan_(input, dim, "cumprod")


def _cumulative(x, axis, dtype, include_initial, op, initial):
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"cumulative_{op[3:]}: axis is required for tensors of more "
                             f"than 1 dim")
        axis = 0
    r = _scan(x if x.ndim else x.reshape(1), axis, dtype, op)
    if include_initial:
        d = _norm(axis, r.ndim, op)
        shape = list(r.shape)
        shape[d] = 1
        r = cat([_core.empty(shape, r.dtype, r.device).fill_(initial), r], d)
    return r


@tensor_input
def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative_sum (include_initial prepends a zero)."""
    return _cumulative(x, axis, dtype, include_initial, "cumsum", 0)


@tensor_input
def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(x, axis, dtype, include_initial, "cumprod", 1)


# scans composed of op-table ops (issue 18): a Hillis-Steele scan, ceil(log2 n) rounds of
# one combine over whole tensors, so they run on every device and autograd
# differentiates them through their parts -----------------------------------------------

def _doubling_scan(ys, d, combine):
    """Inclusive scan along d of the tuple of tensors ys with an associative combine
    (earlier, later) -> combined (each a tuple)."""
    n = ys[0].shape[d]
    s = 1
    while s < n:
        early = tuple(y.narrow(d, 0, n - s) for y in ys)
        late = tuple(y.narrow(d, s, n - s) for y in ys)
        merged = combine(early, late)
        ys = tuple(cat([y.narrow(d, 0, s), m], d) for y, m in zip(ys, merged))
        s *= 2
    return ys


_ew = _core.elementwise


def _cum_extreme(input, dim, op):
    from ember.ops.reduction import values_indices
    d = _norm(dim, input.ndim, op)
    x = input.reshape(1) if input.ndim == 0 else input
    if x.ndim:
        d = _norm(dim, x.ndim, op)
    cmp = "ge" if op == "cummax" else "le"
    with _core._no_record():
        v0 = x.detach()
        shape = [1] * v0.ndim
        shape[d] = v0.shape[d]
        from ember.ops.creation import arange
        i0 = arange(v0.shape[d], dtype=_int64, device=v0.device).reshape(shape).expand(
            tuple(v0.shape)).contiguous()

        def combine(early, late):
            (ve, ie), (vl, il) = early, late
            take = _ew(cmp, vl, ve)
            if vl.dtype.kind == "float":
                take = _ew("logical_or", take, _ew("isnan", vl))
            return _ew("where", take, vl, ve), _ew("where", take, il, ie)
        _, idx = _doubling_scan((v0, i0), d, combine) if v0.numel() else (v0, i0)
    values = x.gather(d, idx)
    if input.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return values_indices(values, idx)


@tensor_method
@tensor_input
def cummax(input, dim):
    """(values, indices): the running maximum along dim and where it was taken (the
    last index among equal values; NaN propagates), as torch.cummax. The values are
    differentiable (a gather of input)."""
    return _cum_extreme(input, dim, "cummax")


@tensor_method
@tensor_input
def cummin(input, dim):
    """(values, indices): the running minimum along dim, as torch.cummin."""
    return _cum_extreme(input, dim, "cummin")


def _logaddexp(a, b):
    m = _ew("maximum", a, b)
    m = _ew("where", _ew("isinf", m), 0.0, m).detach()
    return _ew("add", m, _ew("log", _ew("add", _ew("exp", _ew("sub", a, m)),
                                        _ew("exp", _ew("sub", b, m)))))


@tensor_method
@tensor_input
def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim without overflow or underflow (a scan of
    logaddexp: exact where the values differ widely); floating point only, as
    PyTorch."""
    if input.dtype.kind != "float":
        raise TypeError(f"logcumsumexp: needs a floating point tensor, got dtype "
                        f"{input.dtype!r}")
    d = _norm(dim, input.ndim, "logcumsumexp")
    if input.ndim == 0 or input.numel() == 0:
        return input.clone()
    x = input.float() if input.dtype.name in ("float16", "bfloat16") else input
    (r,) = _doubling_scan((x,), d, lambda early, late: (_logaddexp(early[0], late[0]),))
    return r if r.dtype is input.dtype else r.to(input.dtype)


__all__ += ["cummax", "cummin", "logcumsumexp"]
