"""Reductions: the op table's rows (sum, prod, amax, amin, all, any) and the ones
composed from them (mean, var, std, argmax, logsumexp, norm, ...). Composites are
written with ember ops only, so they run on every device and autograd differentiates
them through their parts."""
from __future__ import annotations

import builtins as _builtins
import math
import numbers
from collections import namedtuple

from ember._args import int_arg as _int_arg, number_arg, tensor_arg, tensor_input
from ember._C import core as _core
from ember._dtypes import float32 as _float32, int64 as _int64
from ember._registry import METHODS, tensor_method

_reduce = _core.reduce
_ew = _core.elementwise

__all__ = ["sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "all",
           "any", "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "count_nonzero",
           "aminmax", "nansum", "nanmean", "median", "nanmedian", "histc"]

values_indices = namedtuple("values_indices", ["values", "indices"])


def dims_of(dim, ndim, op):
    """Normalise a dim argument (None, int, or a sequence) to a tuple, or None = all."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        return tuple(_core.normalize_dim(d, ndim, op) for d in dim)
    return (_core.normalize_dim(dim, ndim, op),)


def _count(x, dims):
    if dims is None:
        return x.numel()
    n = 1
    for d in dims:
        n *= x.shape[d] if x.ndim else 1
    return n


def _cast_for(x, dtype):
    return x if dtype is None or x.dtype is dtype else x.to(dtype)


def _wide(x):
    """The dtype a composite reduction computes in: float16 and bfloat16 go through
    float32 (their partial sums would round or overflow: 60000 + 60000), and the
    result is cast back once with _narrow, as PyTorch does."""
    return x.to(_float32) if x.dtype.name in ("float16", "bfloat16") else x


def _narrow(r, dtype):
    return r if r.dtype is dtype else r.to(dtype)


@tensor_method
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A001
    """Sum over dim (all dims when None). bool and integer inputs sum to int64;
    float sums are pairwise: float32 lanes within leaves of 1024 elements, float64
    across leaves (error O(log n), like NumPy)."""
    dim = axis if dim is None else dim
    dtype = _resolve(dtype)
    x = _cast_for(input, dtype)
    dims = dims_of(dim, x.ndim, "sum")
    if dims is not None and 1 < len(dims) < x.ndim and \
            sorted(dims) == list(range(len(dims))) and x.is_contiguous():
        # leading dims of a contiguous tensor (a bias gradient over batch and sequence):
        # one reduction over their merged length, 4-8x faster than over each in turn
        k, rest = len(dims), tuple(x.shape[len(dims):])
        r = _reduce("sum", x.reshape((-1,) + rest), (0,), False)
        r = r.reshape((1,) * k + rest) if keepdim else r
        return _narrow_to(r, dtype)
    # integer sums accumulate in int64; a narrower dtype= wraps as its own arithmetic would
    return _narrow_to(_reduce("sum", x, dims, keepdim), dtype)


@tensor_method
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = _ew("where", _ew("isnan", input), 0, input) if input.dtype.kind == "float" else input
    return sum(x, dim, keepdim, dtype=dtype)


@tensor_method
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    dim = axis if dim is None else dim
    dtype = _resolve(dtype)
    x = _cast_for(input, dtype)
    return _narrow_to(_reduce("prod", x, dims_of(dim, x.ndim, "prod"), keepdim), dtype)


def _narrow_to(r, dtype):
    return r if dtype is None else _narrow(r, dtype)


def _resolve(dtype):
    if dtype is None:
        return None
    from ember._dtypes import as_dtype
    return as_dtype(dtype)


def _float_only(x, op, dtype=None):
    if dtype is not None:
        return x.to(_resolve(dtype))
    if x.dtype.kind not in ("float", "complex"):
        raise TypeError(f"{op}: needs a floating point or complex tensor, got dtype "
                        f"{x.dtype!r}; pass dtype=ember.float32 or convert with .float()")
    return x


@tensor_method
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    """Arithmetic mean over dim; floating point tensors only (as in PyTorch)."""
    dim = axis if dim is None else dim
    x = _float_only(input, "mean", dtype)
    dims = dims_of(dim, x.ndim, "mean")
    return _narrow(_ew("div", _reduce("sum", _wide(x), dims, keepdim), _count(x, dims)), x.dtype)


@tensor_method
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    x = _float_only(input, "nanmean", dtype)
    keep = _ew("logical_not", _ew("isnan", x))
    dims = dims_of(dim, x.ndim, "nanmean")
    total = _reduce("sum", _ew("where", keep, _wide(x), 0), dims, keepdim)
    return _narrow(_ew("div", total, _reduce("sum", keep, dims, keepdim)), x.dtype)


@tensor_method
def amax(input, dim=None, keepdim=False):
    return _reduce("amax", input, dims_of(dim, input.ndim, "amax"), keepdim)


@tensor_method
def amin(input, dim=None, keepdim=False):
    return _reduce("amin", input, dims_of(dim, input.ndim, "amin"), keepdim)


@tensor_method(names=("all",))
def all(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001
    dim = axis if dim is None else dim
    return _reduce("all", input, dims_of(dim, input.ndim, "all"), keepdim)


@tensor_method(names=("any",))
def any(input, dim=None, keepdim=False, *, axis=None):  # noqa: A001
    dim = axis if dim is None else dim
    return _reduce("any", input, dims_of(dim, input.ndim, "any"), keepdim)


def _arg_extreme(input, dim, keepdim, name, red):
    """Index of the first max/min along dim (of the flattened tensor when dim is
    None); the first NaN wins, as in PyTorch."""
    from ember._dtypes import int64
    from ember.ops.creation import arange
    x = input
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = _core.normalize_dim(dim, x.ndim, name)
    if x.ndim == 0:
        r = _core.empty((), int64)
        r.fill_(0)
        return r
    if x.shape[d] == 0:
        raise ValueError(f"{name}: cannot take the {name} of an empty dim {d} "
                         f"(shape {tuple(input.shape)})")
    best = _reduce(red, x, (d,), True)
    hit = _ew("eq", x, best)
    if x.dtype.kind == "float":
        hit = _ew("logical_or", hit, _ew("logical_and", _ew("isnan", x), _ew("isnan", best)))
    n = x.shape[d]
    index_shape = [1] * x.ndim
    index_shape[d] = n
    pos = arange(n, dtype=int64, device=x.device).reshape(index_shape)
    r = _reduce("amin", _ew("where", hit, pos, n), (d,), True)
    if dim is None:
        return r.reshape(()) if not keepdim else r.reshape([1] * input.ndim)
    return r if keepdim else r.squeeze(d)


@tensor_method
def argmax(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, "argmax", "amax")


@tensor_method
def argmin(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, "argmin", "amin")


def _max_min(input, dim, keepdim, other, name):
    red, pair = ("amax", "maximum") if name == "max" else ("amin", "minimum")
    if isinstance(dim, _core.TensorBase) and other is None:
        return _ew(pair, input, dim)
    if other is not None:
        return _ew(pair, input, other)
    if dim is None:
        return _reduce(red, input, None, False)
    values = _reduce(red, input, dims_of(dim, input.ndim, name), keepdim)
    indices = _arg_extreme(input, dim, keepdim, "arg" + name, red)
    return values_indices(values, indices)


@tensor_method
def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """max(x): the largest element; max(x, dim): (values, indices); max(x, y): maximum."""
    return _max_min(input, dim, keepdim, other, "max")


@tensor_method
def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    return _max_min(input, dim, keepdim, other, "min")


@tensor_method
def aminmax(input, *, dim=None, keepdim=False):
    return namedtuple("aminmax", ["min", "max"])(amin(input, dim, keepdim),
                                                 amax(input, dim, keepdim))


def _var(input, dim, correction, keepdim, unbiased, name):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    correction = number_arg(correction, "correction", name)
    x = _float_only(input, name)
    dims = dims_of(dim, x.ndim, name)
    w = _wide(x)
    m = _ew("div", _reduce("sum", w, dims, True), _count(x, dims))
    d = _ew("sub", w, m)
    denom = _count(x, dims) - correction
    sq = _ew("mul", d, d) if d.dtype.kind != "complex" else _ew("square", _ew("abs", d))
    return _ew("div", _reduce("sum", sq, dims, keepdim), denom if denom > 0 else 0.0)


@tensor_method
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=1):
    """Variance over dim with `correction` (1: Bessel's, the default; 0: population)."""
    if isinstance(unbiased, int) and not isinstance(unbiased, bool) and dim is None:
        dim, unbiased = unbiased, None
    return _narrow(_var(input, dim, correction, keepdim, unbiased, "var"),
                   input.dtype.to_real())


@tensor_method
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=1):
    if isinstance(unbiased, int) and not isinstance(unbiased, bool) and dim is None:
        dim, unbiased = unbiased, None
    return _narrow(_ew("sqrt", _var(input, dim, correction, keepdim, unbiased, "std")),
                   input.dtype.to_real())


def var_mean(input, dim=None, *, correction=1, keepdim=False):
    return var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, *, correction=1, keepdim=False):
    return std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


@tensor_method
def logsumexp(input, dim=None, keepdim=False):
    """log(sum(exp(x))) over dim, without overflow. Complex input: the principal log of
    the sum, shifted by the largest real part (as PyTorch)."""
    out_dtype = input.dtype if input.dtype.kind in ("float", "complex") else \
        _core.get_default_dtype()
    x = _wide(_cast_for(input, out_dtype))
    dims = dims_of(dim, x.ndim, "logsumexp")
    re = x.real if x.dtype.kind == "complex" else x
    m = _reduce("amax", re, dims, True) if x.numel() else \
        _core.empty([1] * x.ndim, re.dtype, x.device).fill_(0)
    m = _core.elementwise("where", _ew("isinf", m), 0.0, m).detach()
    s = _ew("log", _reduce("sum", _ew("exp", _ew("sub", x, m)), dims, True))
    r = _ew("add", s, m)
    if not keepdim:
        r = r.reshape([n for i, n in enumerate(r.shape) if not (dims is None or i in dims)])
    return _narrow(r, out_dtype)


@tensor_method
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over dim (all elements when None); 'fro' is the 2-norm."""
    x = input if dtype is None else input.to(_resolve(dtype))
    if x.dtype.kind == "complex":
        x = _ew("abs", x)    # a complex vector's norms are those of |x| (real, as PyTorch)
    if x.dtype.kind != "float":
        x = x.to(_core.get_default_dtype())
    out_dtype, x = x.dtype, _wide(x)
    return _narrow(_norm(x, p, dims_of(dim, x.ndim, "norm"), keepdim), out_dtype)


def _norm(x, p, dims, keepdim):
    if p in ("fro", 2, 2.0):
        # one recorded op, so that its gradient can be 0 at a zero vector (a subgradient,
        # as PyTorch) instead of sqrt's 0 * inf = NaN
        with _core._no_record():
            y = _ew("sqrt", _reduce("sum", _ew("mul", x, x), dims, keepdim))
        reduced = tuple(range(x.ndim)) if dims is None else dims
        return _core.record("norm2", (x,), y, {"dim": reduced, "keepdim": keepdim})
    a = _ew("abs", x)
    if p == math.inf:
        return _reduce("amax", a, dims, keepdim)
    if p == -math.inf:
        return _reduce("amin", a, dims, keepdim)
    if p == 0:
        return _reduce("sum", _ew("ne", x, 0), dims, keepdim).to(x.dtype)
    if p == 1:
        return _reduce("sum", a, dims, keepdim)
    if not isinstance(p, (int, float)):
        raise ValueError(f"norm: unsupported p={p!r}")
    return _ew("pow", _reduce("sum", _ew("pow", a, p), dims, keepdim), 1.0 / p)


@tensor_method
def count_nonzero(input, dim=None):
    return _reduce("sum", _ew("ne", input, 0), dims_of(dim, input.ndim, "count_nonzero"), False)


def _median(input, dim, keepdim, op):
    """The lower median along dim (of the flattened input when dim is None) and its
    index, as PyTorch. median: NaN propagates (a slice holding one gives NaN and the
    index of its first NaN); nanmedian: the lower median of the slice's non-NaN
    elements (NaN where all are NaN)."""
    x, d = (input.reshape(-1), 0) if dim is None else \
        (input, _core.normalize_dim(dim, input.ndim, op))
    if x.ndim == 0:
        return x.clone(), _core.empty((), _int64, x.device).fill_(0)
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"{op}: cannot take the {op} of the empty dim {d} "
                         f"(shape {tuple(input.shape)})")
    s = x.sort(dim=d)            # stable, NaN last: the first NaN sorted is x's first NaN
    if x.dtype.kind == "float":
        valid = _ew("sub", n, _reduce("sum", _ew("isnan", x), (d,), True))  # non-NaN count
        if op == "median":
            pos = _ew("where", _ew("lt", valid, n), valid, (n - 1) // 2)
        else:
            pos = _ew("floor_divide", _ew("maximum", _ew("sub", valid, 1), 0), 2)
        v, i = s.values.gather(d, pos), s.indices.gather(d, pos)
    else:
        v, i = s.values.narrow(d, (n - 1) // 2, 1), s.indices.narrow(d, (n - 1) // 2, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return v, i


def _median_of_all(input, op):
    if input.numel() == 0:
        if input.dtype.kind != "float":
            raise IndexError(f"{op}: cannot take the {op} of an empty {input.dtype!r} tensor")
        return _core.empty((), input.dtype, input.device).fill_(math.nan)
    return _median(input, None, False, op)[0]


@tensor_method
def median(input, dim=None, keepdim=False):
    """The lower median (like PyTorch), NaN if there is a NaN; median(x, dim) gives
    (values, indices), the index of the first NaN where a slice holds one."""
    if dim is None:
        return _median_of_all(input, "median")
    return values_indices(*_median(input, dim, keepdim, "median"))


@tensor_method
def nanmedian(input, dim=None, keepdim=False):
    """median that skips NaN: the lower median of the non-NaN elements (NaN where
    every element is NaN); nanmedian(x, dim) gives (values, indices)."""
    if dim is None:
        return _median_of_all(input, "nanmedian")
    return values_indices(*_median(input, dim, keepdim, "nanmedian"))


@tensor_method
def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - PyTorch's names
    """Histogram of input's elements in `bins` equal-width bins over [min, max], as
    torch.histc: min == max means the data's own range (widened by 1 each way when
    all elements are one value, which must then be finite: no NaN or inf); elements
    outside [min, max] and NaN are not counted; the last bin includes max. The result
    has input's dtype (floating point only, as PyTorch on the CPU); not differentiable."""
    if input.dtype.kind != "float":
        raise TypeError(f"histc: needs a floating point tensor, got dtype {input.dtype!r}")
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral):
        raise TypeError(f"histc: bins must be an int, got {type(bins).__name__}")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"histc: bins must be > 0, got {bins}")
    try:
        lo, hi = float(min), float(max)
    except (TypeError, ValueError):
        raise TypeError(f"histc: min and max must be numbers, got {min!r} and {max!r}") from None
    if lo == hi and input.numel():
        lo, hi = float(amin(input)), float(amax(input))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"histc: range of [{lo}, {hi}] is not finite")
    if not lo < hi:
        raise RuntimeError(f"histc: max must be larger than min, got min={lo}, max={hi}")
    if out is not None and (not isinstance(out, _core.TensorBase) or
                            tuple(out.shape) != (bins,) or out.dtype is not input.dtype or
                            out.device != input.device):
        raise ValueError(f"histc: out must be a {input.dtype!r} tensor of shape ({bins},) "
                         f"on {input.device}, got {out!r:.200}")
    from ember.ops.creation import tensor, zeros
    with _core._no_record():
        x = input.detach().reshape(-1)
        # the edges and the bin arithmetic in input's dtype, as PyTorch's kernel:
        # bin = (x - min) * bins / (max - min), truncated; max itself is in the last bin
        edges = tensor([lo, hi], dtype=x.dtype, device=x.device)
        lo_t, hi_t = edges[0], edges[1]
        inside = _ew("logical_and", _ew("ge", x, lo_t), _ew("le", x, hi_t))
        f = _ew("div", _ew("mul", _ew("sub", x, lo_t), bins), _ew("sub", hi_t, lo_t))
        # the elements not counted go to an extra bin, dropped at the end
        idx = _ew("where", inside, _ew("minimum", f, bins - 1), bins).to(_int64)
        counts = zeros(bins + 1, dtype=_int64, device=x.device)
        counts.index_add_(0, idx, _core.empty(tuple(idx.shape), _int64, x.device).fill_(1))
        r = counts[:bins].to(x.dtype)
    return r if out is None else out.copy_(r)


# quantiles, mode, counts and friends (issue 18): composed of sort, gather, index_add,
# searchsorted and the op table (the differentiable ones through gather / arithmetic) --

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, op):
    from ember.ops.creation import as_tensor
    if input.dtype.kind != "float":
        raise TypeError(f"{op}: input must be a floating point tensor, got {input.dtype!r}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    scalar_q = not isinstance(q, _core.TensorBase)
    if scalar_q:
        q = as_tensor([number_arg(q, "q", op)], dtype=input.dtype, device=input.device)
    else:
        if q.ndim > 1:
            raise ValueError(f"{op}: q must be a scalar or a 1-d tensor, got shape "
                             f"{tuple(q.shape)}")
        if q.dtype is not input.dtype:
            raise TypeError(f"{op}: q must have input's dtype {input.dtype!r}, got {q.dtype!r}")
        if q.device != input.device:
            raise RuntimeError(f"{op}: q is on {q.device}, input on {input.device}")
        scalar_q = q.ndim == 0
        q = q.reshape(-1)
    if q.numel() and not bool(_reduce("all", _ew("logical_and", _ew("ge", q, 0),
                                                 _ew("le", q, 1)), None)):
        raise ValueError(f"{op}: q values must be in the range [0, 1], got {q.tolist()}")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _core.normalize_dim(dim, input.ndim, op)
        x = input.reshape(1) if input.ndim == 0 else input
    n = x.shape[d] if x.ndim else 1
    if n == 0 or x.numel() == 0:
        raise RuntimeError(f"{op}: input tensor must be non-empty (shape {tuple(input.shape)})")
    s = x.sort(dim=d).values.movedim(d, -1)           # (..., n), NaN last
    lead = tuple(s.shape[:-1])
    qs = q.reshape((-1,) + (1,) * len(lead) + (1,))   # (Q, 1.., 1)
    with _core._no_record():
        nans = _reduce("sum", _ew("isnan", s), (s.ndim - 1,), True)    # (..., 1)
        valid = _ew("sub", n, nans) if op == "nanquantile" else \
            _ew("add", _ew("mul", nans, 0), n)
        last = _ew("maximum", _ew("sub", valid, 1), 0).to(x.dtype)
        rank = _ew("mul", qs.detach(), last)                    # (Q, ..., 1)
        if interpolation == "nearest":
            rank = _ew("round", rank)
        lo = _ew("floor", rank).to(_int64)
        hi = _ew("ceil", rank).to(_int64)
        frac = _ew("sub", rank, lo.to(x.dtype))
    full = (q.shape[0],) + lead + (n,)
    se = s.unsqueeze(0).expand(full)
    vlo = se.gather(-1, lo.expand((q.shape[0],) + lead + (1,)))
    vhi = se.gather(-1, hi.expand((q.shape[0],) + lead + (1,)))
    if interpolation in ("lower", "nearest"):
        r = vlo
    elif interpolation == "higher":
        r = vhi
    elif interpolation == "midpoint":
        r = _ew("mul", _ew("add", vlo, vhi), 0.5)
    else:
        r = _ew("lerp", vlo, vhi, frac)
    if op == "quantile":       # a NaN in the slice makes its quantiles NaN
        r = _ew("where", _ew("gt", nans, 0), math.nan, r)
    r = r.squeeze(-1)                                          # (Q, ...)
    if keepdim:
        if dim is None:
            r = r.reshape((q.shape[0],) + (1,) * input.ndim)
        elif input.ndim:
            r = r.unsqueeze(d + 1)
    return r.squeeze(0) if scalar_q else r


@tensor_method
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of input along dim (of all elements when None), as
    torch.quantile: q a number or a 1-d tensor in [0, 1] (a 1-d q adds a leading dim),
    interpolation 'linear', 'lower', 'higher', 'midpoint' or 'nearest'; a NaN in a
    slice gives NaN. Differentiable (gathers of the sorted input)."""
    return _quantile(input, q, dim, keepdim, interpolation, "quantile")


@tensor_method
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile of the non-NaN elements (NaN where a slice has none)."""
    return _quantile(input, q, dim, keepdim, interpolation, "nanquantile")


@tensor_method
def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (the smallest among equally
    frequent ones; each NaN counts once) and the index of its last occurrence, as
    torch.mode."""
    from ember.ops.creation import arange
    from ember.ops.scan import cummax
    x = input.reshape(1) if input.ndim == 0 else input
    d = _core.normalize_dim(dim, x.ndim, "mode")
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"mode: cannot take the mode of the empty dim {d} "
                         f"(shape {tuple(input.shape)})")
    with _core._no_record():
        s = x.detach().sort(dim=d)
        v, si = s.values.movedim(d, -1), s.indices.movedim(d, -1)      # (..., n)
        pos = arange(n, dtype=_int64, device=x.device)
        new = _ew("ne", v.narrow(-1, 1, n - 1), v.narrow(-1, 0, n - 1)) if n > 1 else None
        from ember.ops.shape import cat
        starts = _ew("where", cat([_core.empty(tuple(v.shape[:-1]) + (1,), _core._dtype_by_name(
            "bool"), x.device).fill_(True), new], -1) if new is not None else True, pos, 0)
        if not isinstance(starts, _core.TensorBase) or starts.shape != v.shape:
            starts = _ew("add", _ew("mul", v, 0).to(_int64), starts)
        count = _ew("add", _ew("sub", pos, cummax(starts, -1).values), 1)
        best = _reduce("amax", count, (count.ndim - 1,), True)
        first = _arg_extreme(_ew("eq", count, best).to(_int64), -1, True, "argmax", "amax")
        idx = si.gather(-1, first).movedim(-1, d)
    values = x.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    if input.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return values_indices(values, idx)


@tensor_method
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-d tensor of non-negative integers (length max + 1,
    at least minlength); with weights, the sums of the weights instead (float32
    weights give float32, other weights float64, as PyTorch)."""
    from ember.ops.creation import zeros
    minlength = _int_arg(minlength, "minlength", "bincount")
    if input.ndim != 1 or input.dtype.kind not in ("int", "bool"):
        raise ValueError(f"bincount: input must be a 1-d integer tensor, got shape "
                         f"{tuple(input.shape)} and dtype {input.dtype!r}")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if weights is not None:
        if not isinstance(weights, _core.TensorBase) or tuple(weights.shape) != tuple(input.shape):
            raise ValueError(f"bincount: weights must be a tensor of input's shape "
                             f"{tuple(input.shape)}, got {weights!r:.80}")
    if input.numel() and bool(_reduce("any", _ew("lt", input, 0), None)):
        raise ValueError("bincount: input must be non-negative")
    n = _builtins.max(int(_reduce("amax", input, None)) + 1 if input.numel() else 0, minlength)
    idx = input.to(_int64)
    if weights is None:
        out = zeros(n, dtype=_int64, device=input.device)
        return out.index_add_(0, idx, _core.empty((input.numel(),), _int64,
                                                  input.device).fill_(1))
    wdt = weights.dtype if weights.dtype.name == "float32" else _core._dtype_by_name("float64")
    out = zeros(n, dtype=wdt, device=input.device)
    return out.index_add(0, idx, weights.to(wdt))


histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


@tensor_method
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """(hist, bin_edges), as torch.histogram: bins an int (equal bins over `range`,
    default the data's min and max, widened by 0.5 each way when they are equal) or a
    1-d tensor of increasing edges; each bin holds [edge_i, edge_i+1), the last one
    its right edge too; weight sums weights instead of counting; density divides by
    the total and the bin widths. Floating point input only; not differentiable."""
    from ember.ops.creation import linspace, zeros
    from ember.ops.sort import searchsorted
    if input.dtype.kind != "float":
        raise TypeError(f"histogram: needs a floating point tensor, got dtype {input.dtype!r}")
    if weight is not None and (not isinstance(weight, _core.TensorBase) or
                               tuple(weight.shape) != tuple(input.shape)):
        raise ValueError(f"histogram: weight must be a tensor of input's shape "
                         f"{tuple(input.shape)}, got {weight!r:.80}")
    with _core._no_record():
        x = input.detach().reshape(-1)
        if isinstance(bins, _core.TensorBase):
            if bins.ndim != 1 or bins.numel() < 1:
                raise ValueError(f"histogram: bins must be a 1-d tensor of edges, got shape "
                                 f"{tuple(bins.shape)}")
            edges = bins.to(x.dtype)
            k = edges.numel() - 1
            if k > 0 and bool(_reduce("any", _ew("gt", edges.narrow(0, 0, k),
                                                 edges.narrow(0, 1, k)), None)):
                raise ValueError("histogram: bin edges must be non-decreasing")
        else:
            nb = _int_arg(bins, "bins", "histogram")
            if nb <= 0:
                raise ValueError(f"histogram: bins must be > 0, got {nb}")
            if range is not None:
                try:
                    lo, hi = (float(v) for v in range)
                except (TypeError, ValueError):
                    raise TypeError(f"histogram: range must be a pair of numbers, got "
                                    f"{range!r:.60}") from None
            elif x.numel():
                lo, hi = float(_reduce("amin", x, None)), float(_reduce("amax", x, None))
            else:
                lo, hi = 0.0, 0.0
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"histogram: range [{lo}, {hi}] is not finite")
            if lo > hi:
                raise ValueError(f"histogram: range must have min <= max, got [{lo}, {hi}]")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = linspace(lo, hi, nb + 1, dtype=x.dtype, device=x.device)
        k = edges.numel() - 1
        w = None if weight is None else weight.detach().reshape(-1).to(x.dtype)
        hist = zeros(_builtins.max(k, 0) + 1, dtype=x.dtype, device=x.device)
        if k > 0 and x.numel():
            first, lastv = edges[0], edges[k]
            b = _ew("sub", searchsorted(edges, x, right=True), 1)
            b = _ew("where", _ew("eq", x, lastv), k - 1, b)
            inside = _ew("logical_and", _ew("ge", x, first), _ew("le", x, lastv))
            b = _ew("where", inside, b, k)
            vals = w if w is not None else _core.empty((x.numel(),), x.dtype, x.device).fill_(1)
            hist.index_add_(0, b, vals)
        hist = hist[:_builtins.max(k, 0)]
        if density and k > 0:
            widths = _ew("sub", edges.narrow(0, 1, k), edges.narrow(0, 0, k))
            hist = _ew("div", hist, _ew("mul", _reduce("sum", hist, None), widths))
    if out is not None:
        raise TypeError("histogram: out= is not supported by ember (use the returned tensors)")
    return histogram_result(hist, edges.clone())


@tensor_method
def renorm(input, p, dim, maxnorm):
    """Each slice input.select(dim, i) whose p-norm exceeds maxnorm is scaled to have
    norm maxnorm (by maxnorm / (norm + 1e-7), as PyTorch); the others are unchanged."""
    if input.dtype.kind != "float":
        raise TypeError(f"renorm: needs a floating point tensor, got dtype {input.dtype!r}")
    p = number_arg(p, "p", "renorm")
    maxnorm = number_arg(maxnorm, "maxnorm", "renorm")
    if not p > 0:
        raise ValueError(f"renorm: p must be positive, got {p}")
    if not maxnorm >= 0:
        raise ValueError(f"renorm: maxnorm must be non-negative, got {maxnorm}")
    if input.ndim <= 1:
        raise ValueError(f"renorm: input needs at least 2 dims, got shape {tuple(input.shape)}")
    d = _core.normalize_dim(dim, input.ndim, "renorm")
    others = tuple(i for i in range(input.ndim) if i != d)
    n = _norm(_wide(input), p, others, True)
    with _core._no_record():
        over = _ew("gt", n, maxnorm)
    factor = _ew("where", over, _ew("div", maxnorm, _ew("add", n, 1e-7)), 1.0)
    return _ew("mul", input, _narrow(factor, input.dtype))


def _renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


@tensor_method
def sum_to_size(input, *size):
    """input summed to `size` (which must expand to input's shape): the inverse of
    expand, as torch.Tensor.sum_to_size."""
    from ember._args import sizes_arg
    shape = tuple(sizes_arg(size, "sum_to_size"))
    ish = tuple(input.shape)
    lead = len(ish) - len(shape)
    if lead < 0 or _builtins.any(s != 1 and s != n for s, n in zip(shape, ish[lead:])):
        raise ValueError(f"sum_to_size: size {shape} is not expandable to the tensor's "
                         f"size {ish}")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and ish[lead + i] != 1)
    if not dims:
        return input
    r = _reduce("sum", input, dims, True)
    return r.reshape(shape)


@tensor_method
def trace(input):
    """The sum of a 2-d tensor's main diagonal (integers sum to int64)."""
    if input.ndim != 2:
        raise ValueError(f"trace: expects a 2-d tensor, got shape {tuple(input.shape)}")
    return sum(input.diagonal())


def _trapezoid_parts(y, x, dx, dim, op):
    if y.ndim == 0:
        raise ValueError(f"{op}: y must have at least 1 dim, got a 0-d tensor")
    d = _core.normalize_dim(dim, y.ndim, op)
    n = y.shape[d]
    if n == 0:
        return None, d
    ys = _ew("add", y.narrow(d, 1, n - 1), y.narrow(d, 0, n - 1))
    if x is None:
        step = 1 if dx is None else number_arg(dx, "dx", op)
        return _ew("mul", ys, step / 2), d
    if dx is not None:
        raise ValueError(f"{op}: give x or dx, not both")
    if not isinstance(x, _core.TensorBase):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ValueError(f"{op}: x has {x.shape[0]} points, y has {n} along dim {d}")
        shape = [1] * y.ndim
        shape[d] = n - 1
        dxs = _ew("sub", x.narrow(0, 1, n - 1), x.narrow(0, 0, n - 1)).reshape(shape)
    else:
        if x.ndim != y.ndim or x.shape[d] != n:
            raise ValueError(f"{op}: x of shape {tuple(x.shape)} does not match y of shape "
                             f"{tuple(y.shape)} along dim {d}")
        dxs = _ew("sub", x.narrow(d, 1, n - 1), x.narrow(d, 0, n - 1))
    return _ew("mul", _ew("mul", ys, dxs), 0.5), d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: with sample points x (1-d, or y's shape) or a
    constant spacing dx (default 1)."""
    y = y if y.dtype.kind == "float" else y.to(_core.get_default_dtype())
    parts, d = _trapezoid_parts(y, x, dx, dim, "trapezoid")
    if parts is None:
        shape = [s for i, s in enumerate(y.shape) if i != d]
        return _core.empty(shape, y.dtype, y.device).fill_(0)
    return _reduce("sum", parts, (d,), False)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one element fewer than y there)."""
    y = y if y.dtype.kind == "float" else y.to(_core.get_default_dtype())
    parts, d = _trapezoid_parts(y, x, dx, dim, "cumulative_trapezoid")
    if parts is None:
        return y.clone()
    return parts.cumsum(d)


trapz = trapezoid

__all__ += ["quantile", "nanquantile", "mode", "bincount", "histogram", "renorm", "sum_to_size",
            "trace", "trapezoid", "trapz", "cumulative_trapezoid"]


@tensor_method
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast)."""
    if not isinstance(other, _core.TensorBase):
        raise TypeError(f"dist: other must be a Tensor, got {type(other).__name__}")
    return norm(_ew("sub", input, other), number_arg(p, "p", "dist"))


@tensor_method
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its
    columns; a 1-d input is one variable), with frequency weights fweights (integers)
    and observation weights aweights, as torch.cov (numpy.cov's rule)."""
    if input.ndim > 2:
        raise ValueError(f"cov: expects a 1-d or 2-d tensor, got shape {tuple(input.shape)}")
    correction = _int_arg(correction, "correction", "cov")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x.dtype.kind != "float":
        x = x.to(_core.get_default_dtype())
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if not isinstance(wt, _core.TensorBase) or wt.ndim > 1 or wt.numel() != n:
            raise ValueError(f"cov: {name} must be a tensor of {n} elements (the "
                             f"observations), got {wt!r:.80}")
        if name == "fweights" and wt.dtype.kind != "int":
            raise TypeError(f"cov: fweights must be integers, got {wt.dtype!r}")
        if bool(_reduce("any", _ew("lt", wt, 0), None)):
            raise ValueError(f"cov: {name} must be non-negative")
        wt = wt.reshape(-1).to(x.dtype)
        w = wt if w is None else _ew("mul", w, wt)
    if w is None:
        wsum = float(n)
        avg = _ew("div", _reduce("sum", x, (1,), True), n)
    else:
        wsum_t = _reduce("sum", w, None, False)
        avg = _ew("div", _reduce("sum", _ew("mul", x, w), (1,), True), wsum_t)
    if w is None:
        norm_ = wsum - correction
    elif aweights is None or correction == 0:
        norm_ = _ew("sub", wsum_t, correction)
    else:
        aw = aweights.reshape(-1).to(x.dtype)
        norm_ = _ew("sub", wsum_t, _ew("div", _ew("mul", correction, _reduce(
            "sum", _ew("mul", w, aw), None, False)), wsum_t))
    xm = _ew("sub", x, avg)
    xw = xm if w is None else _ew("mul", xm, w)
    c = _ew("div", xw.matmul(xm.mT), _ew("maximum", norm_, 0) if isinstance(
        norm_, _core.TensorBase) else (norm_ if norm_ > 0 else 0.0))
    return c.reshape(()) if x.shape[0] == 1 else c


@tensor_method
def corrcoef(input):
    """The Pearson correlation coefficients of input's rows (cov normalised by the
    standard deviations, clipped to [-1, 1]), as torch.corrcoef."""
    c = cov(input)
    if c.ndim == 0:
        return _ew("div", c, c)
    d = c.diagonal()
    s = _ew("sqrt", d)
    r = _ew("div", _ew("div", c, s.unsqueeze(1)), s.unsqueeze(0))
    return _ew("clamp", r, -1, 1)


__all__ += ["dist", "cov", "corrcoef"]


# The module-level functions check that their input is a Tensor (the methods don't
# need to: their self is one).
for _name in __all__:
    globals()[_name] = tensor_input(globals()[_name])

METHODS["renorm_"] = _renorm_


# numerical gradients, n-d histograms, legacy norms --------------------------------------

def _coords_along(spacing, dims, input, op):
    """Per dim: a float h (uniform spacing) or a 1-d coordinate tensor."""
    if isinstance(spacing, (numbers.Real, _core.TensorBase)) and not (
            isinstance(spacing, _core.TensorBase) and spacing.ndim == 1):
        if isinstance(spacing, _core.TensorBase):
            if spacing.ndim != 0:
                raise ValueError(f"{op}: a tensor spacing must be 0-d or a list of 1-d "
                                 f"coordinate tensors, got shape {tuple(spacing.shape)}")
            spacing = spacing.item()
        return [float(spacing)] * len(dims)
    if isinstance(spacing, _core.TensorBase):
        spacing = [spacing]
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(f"{op}: spacing must be a number, a list of numbers or a list of "
                        f"1-d tensors, got {type(spacing).__name__}")
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise ValueError(f"{op}: expected spacing to be unspecified, a scalar or a list of "
                         f"length {len(dims)} (one per dim), got a list of length "
                         f"{len(spacing)}")
    out = []
    for d, s in zip(dims, spacing):
        if isinstance(s, _core.TensorBase):
            if s.ndim == 0:
                out.append(float(s.item()))
                continue
            if s.ndim != 1 or s.shape[0] != input.shape[d]:
                raise ValueError(f"{op}: the coordinates of dim {d} must be a 1-d tensor of "
                                 f"its size {input.shape[d]}, got shape {tuple(s.shape)}")
            if s.device != input.device:
                raise ValueError(f"{op}: coordinates on {s.device}, input on {input.device}")
            out.append(s)
        elif isinstance(s, numbers.Real):
            out.append(float(s))
        else:
            raise TypeError(f"{op}: spacing entries must be numbers or 1-d tensors, got "
                            f"{type(s).__name__}")
    return out


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The gradient of input sampled on a grid, one tensor per dim (torch.gradient,
    numpy.gradient's method): second-order central differences inside and one-sided
    differences of `edge_order` (1 or 2) at the boundaries. spacing is one number for
    every dim, a list of numbers (one per dim), or a list of 1-d coordinate tensors;
    dim an int, a list of dims or None (all). Composed of slices and arithmetic, so it
    runs on every device and is differentiable; integer input gives float results."""
    op = "gradient"
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"{op}: input must be a tensor, got {type(input).__name__}")
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise ValueError(f"{op}: edge_order must be 1 or 2, got {edge_order!r}")
    if dim is None:
        dims = list(_builtins.range(input.ndim))
    elif isinstance(dim, (list, tuple)):
        dims = [_core.normalize_dim(d, input.ndim, op) for d in dim]
    else:
        dims = [_core.normalize_dim(dim, input.ndim, op)]
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim} has repeated dims")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise ValueError(f"{op}: torch.gradient expected each dimension size to be at "
                             f"least edge_order+1, dim {d} of shape {tuple(input.shape)} "
                             f"has {input.shape[d]} (edge_order={edge_order})")
    coords = _coords_along(spacing, dims, input, op)
    f = input if input.dtype.kind == "float" else input.to(_core.get_default_dtype())
    return tuple(_gradient_along(f, d, h, edge_order) for d, h in zip(dims, coords))


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]
    shape = [1] * f.ndim
    shape[d] = -1

    def sl(start, length):
        return f.narrow(d, start, length)

    parts = []
    if isinstance(h, float):
        if n > 2:
            parts_inner = (sl(2, n - 2) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (sl(1, 1) - sl(0, 1)) / h
            last = (sl(n - 1, 1) - sl(n - 2, 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2.0 * sl(1, 1) - 0.5 * sl(2, 1)) / h
            last = (0.5 * sl(n - 3, 1) - 2.0 * sl(n - 2, 1) + 1.5 * sl(n - 1, 1)) / h
    else:
        x = h.to(f.dtype)
        dx = x.narrow(0, 1, n - 1) - x.narrow(0, 0, n - 1)        # spacing between points
        if n > 2:
            hl = dx.narrow(0, 0, n - 2).reshape(shape)             # x[i] - x[i-1]
            hr = dx.narrow(0, 1, n - 2).reshape(shape)             # x[i+1] - x[i]
            a = -hr / (hl * (hl + hr))
            b = (hr - hl) / (hl * hr)
            c = hl / (hr * (hl + hr))
            parts_inner = a * sl(0, n - 2) + b * sl(1, n - 2) + c * sl(2, n - 2)
        if edge_order == 1:
            first = (sl(1, 1) - sl(0, 1)) / dx.narrow(0, 0, 1).reshape(shape)
            last = (sl(n - 1, 1) - sl(n - 2, 1)) / dx.narrow(0, n - 2, 1).reshape(shape)
        else:
            h1, h2 = dx[0], dx[1]
            a = -(2.0 * h1 + h2) / (h1 * (h1 + h2))
            b = (h1 + h2) / (h1 * h2)
            c = -h1 / (h2 * (h1 + h2))
            first = a * sl(0, 1) + b * sl(1, 1) + c * sl(2, 1)
            h1, h2 = dx[n - 3], dx[n - 2]
            a = h2 / (h1 * (h1 + h2))
            b = -(h2 + h1) / (h1 * h2)
            c = (2.0 * h2 + h1) / (h2 * (h1 + h2))
            last = a * sl(n - 3, 1) + b * sl(n - 2, 1) + c * sl(n - 1, 1)
    parts = [first] + ([parts_inner] if n > 2 else []) + [last]
    from ember.ops.shape import cat
    return cat(parts, d)


histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])


def histogramdd(input, bins=10, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """(hist, bin_edges) of the points in input's last dim (torch.histogramdd, as
    numpy.histogramdd): input of shape (..., D); bins an int (every dim), a list of D
    ints, or a list of D 1-d tensors of increasing edges; range a flat list
    [min0, max0, min1, max1, ...]; each bin holds [edge_i, edge_i+1), the last its right
    edge too; points outside are not counted. weight (input.shape[:-1]) sums weights;
    density normalises by the total and the bin volumes. Floating point only."""
    from ember.ops.creation import linspace, zeros
    from ember.ops.sort import searchsorted
    op = "histogramdd"
    if not isinstance(input, _core.TensorBase) or input.dtype.kind != "float":
        raise TypeError(f"{op}: needs a floating point tensor, got {input!r:.60}")
    if input.ndim < 1:
        raise ValueError(f"{op}: input must have at least 1 dim (..., D), got a 0-d tensor")
    if out is not None:
        raise TypeError(f"{op}: out= is not supported by ember (use the returned tensors)")
    D = input.shape[-1]
    with _core._no_record():
        pts = input.detach().reshape(-1, D)
        npts = pts.shape[0]
        if weight is not None:
            if not isinstance(weight, _core.TensorBase) or \
                    tuple(weight.shape) != tuple(input.shape[:-1]):
                raise ValueError(f"{op}: weight must be a tensor of shape "
                                 f"{tuple(input.shape[:-1])}, got {weight!r:.80}")
            w = weight.detach().reshape(-1).to(pts.dtype)
        if isinstance(bins, numbers.Integral):
            bins = [int(bins)] * D
        bins = list(bins)
        if len(bins) != D:
            raise ValueError(f"{op}: expected {D} bins (one per dim of the points), got "
                             f"{len(bins)}")
        if range is not None:
            range = [float(v) for v in range]
            if len(range) != 2 * D:
                raise ValueError(f"{op}: range must have 2 * {D} values (min, max per dim), "
                                 f"got {len(range)}")
        edges = []
        for k, b in enumerate(bins):
            if isinstance(b, _core.TensorBase):
                if b.ndim != 1 or b.numel() < 2:
                    raise ValueError(f"{op}: bins[{k}] must be a 1-d tensor of at least 2 "
                                     f"edges, got shape {tuple(b.shape)}")
                e = b.to(pts.dtype)
                if bool(_reduce("any", _ew("gt", e[:-1], e[1:]), None)):
                    raise ValueError(f"{op}: bins[{k}] edges must be non-decreasing")
                edges.append(e)
                continue
            nb = _int_arg(b, "bins", op)
            if nb <= 0:
                raise ValueError(f"{op}: bins must be > 0, got {nb} for dim {k}")
            if range is not None:
                lo, hi = range[2 * k], range[2 * k + 1]
            elif npts:
                col = pts[:, k]
                lo, hi = float(_reduce("amin", col, None)), float(_reduce("amax", col, None))
            else:
                lo, hi = 0.0, 0.0
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"{op}: range [{lo}, {hi}] of dim {k} is not finite")
            if lo > hi:
                raise ValueError(f"{op}: range of dim {k} must have min <= max, got "
                                 f"[{lo}, {hi}]")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(linspace(lo, hi, nb + 1, dtype=pts.dtype, device=pts.device))
        nbins = [e.numel() - 1 for e in edges]
        total = 1
        for nb in nbins:
            total *= nb
        hist = zeros(total + 1, dtype=pts.dtype, device=pts.device)
        if npts and total:
            flat = _core.empty((npts,), _int64, pts.device).fill_(0)
            inside = None
            for k, e in enumerate(edges):
                x = pts[:, k]
                nb = nbins[k]
                b = _ew("sub", searchsorted(e, x.contiguous(), right=True), 1)
                b = _ew("where", _ew("eq", x, e[nb]), nb - 1, b)
                ok = _ew("logical_and", _ew("ge", x, e[0]), _ew("le", x, e[nb]))
                inside = ok if inside is None else _ew("logical_and", inside, ok)
                b = _ew("clamp", b, 0, _builtins.max(nb - 1, 0))
                flat = _ew("add", _ew("mul", flat, nb), b)
            flat = _ew("where", inside, flat, total)
            vals = w if weight is not None else _core.empty((npts,), pts.dtype,
                                                             pts.device).fill_(1)
            hist.index_add_(0, flat, vals)
        hist = hist[:total].reshape(nbins)
        if density and total:
            vol = None
            for k, e in enumerate(edges):
                widths = _ew("sub", e[1:], e[:-1]).reshape(
                    [-1 if j == k else 1 for j in _builtins.range(D)])
                vol = widths if vol is None else _ew("mul", vol, widths)
            hist = _ew("div", hist, _ew("mul", _reduce("sum", hist, None), vol))
    return histogramdd_result(hist, [e.clone() for e in edges])


def frobenius_norm(input, dim=(), keepdim=False, *, out=None):
    """sqrt(sum(input ** 2)) over dim (PyTorch's deprecated torch.frobenius_norm; use
    ember.linalg.vector_norm(input, 2, dim, keepdim)); dim () or None is every dim."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"frobenius_norm: input must be a tensor, got {type(input).__name__}")
    if isinstance(dim, numbers.Integral):
        dim = (dim,)
    if dim is not None and not (isinstance(dim, (list, tuple)) and _builtins.all(
            isinstance(d, numbers.Integral) for d in dim)):
        raise TypeError(f"frobenius_norm: dim must be an int or a list of ints, got "
                        f"{dim!r:.60}")
    dims = None if dim is None or len(dim) == 0 else list(dim)
    r = _ew("sqrt", input.mul(input).sum(dims, keepdim=keepdim) if dims is not None
            else input.mul(input).sum())
    if keepdim and dims is None:
        r = r.reshape((1,) * input.ndim)
    if out is not None:
        return tensor_arg(out, "frobenius_norm", "out").copy_(r)
    return r


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - PyTorch's names
    """The `pow`-norm of v over every dim but `dim`, kept as size-1 dims
    (torch.norm_except_dim, the norm of weight_norm); dim=-1 is the norm of all of v
    (0-d)."""
    if not isinstance(v, _core.TensorBase):
        raise TypeError(f"norm_except_dim: v must be a tensor, got {type(v).__name__}")
    dim = _int_arg(dim, "dim", "norm_except_dim")
    if dim == -1:
        return norm(v, pow)
    d = _core.normalize_dim(dim, v.ndim, "norm_except_dim")
    others = [i for i in _builtins.range(v.ndim) if i != d]
    if not others:
        return _ew("abs", v) if pow != 0 else _ew("ne", v, 0).to(v.dtype)
    return norm(v, pow, others, keepdim=True)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values (torch.nuclear_norm, deprecated there for
    ember.linalg.matrix_norm(input, "nuc", dim, keepdim)): of a matrix when dim is None,
    else of the matrices spanned by the two dims in dim. Also nuclear_norm(input,
    keepdim) as PyTorch's overload."""
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"nuclear_norm: input must be a tensor, got {type(input).__name__}")
    if isinstance(dim, bool):                   # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if dim is None:
        if input.ndim != 2:
            raise ValueError(f"nuclear_norm: expected a 2-D tensor when dim is not given, "
                             f"got shape {tuple(input.shape)}")
        dim = (0, 1)
    if not (isinstance(dim, (list, tuple)) and len(dim) == 2):
        raise ValueError(f"nuclear_norm: dim must be a pair of dims, got {dim!r:.60}")
    from ember.linalg import matrix_norm
    r = matrix_norm(input, "nuc", tuple(dim), keepdim)
    if out is not None:
        return tensor_arg(out, "nuclear_norm", "out").copy_(r)
    return r


__all__ += ["gradient", "histogramdd", "frobenius_norm", "norm_except_dim", "nuclear_norm"]
