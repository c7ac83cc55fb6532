"""ember as a Python Array API standard namespace (2023.12).

`x.__array_namespace__()` returns this module. Most names are ember's own functions
(the main namespace offers the standard's spellings beside PyTorch's); the ones
here adapt the few signatures where PyTorch and the standard disagree: `axis` and
`keepdims` instead of `dim` and `keepdim`, `sort` returning only the values,
`unique_*`, `cumulative_sum`.
"""
from __future__ import annotations

import builtins as _builtins

import ember as _em
from ember._args import dtype_arg as _dtype_arg, sizes_arg as _sizes_arg
from ember._C import core as _core

__array_api_version__ = "2023.12"

_SAME = """
bool uint8 int8 int16 int32 int64 float16 float32 float64 e inf nan pi newaxis
arange asarray empty empty_like eye from_dlpack full full_like linspace ones
ones_like tril triu zeros zeros_like finfo iinfo result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip copysign cos cosh
divide exp expm1 floor floor_divide greater greater_equal hypot isfinite isinf
isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
logical_xor maximum minimum multiply negative not_equal positive pow reciprocal
remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
take matmul matrix_transpose tensordot vecdot broadcast_to
expand_dims moveaxis permute_dims reshape stack tile searchsorted where
""".split()


def __getattr__(name):
    if name in _SAME:
        return getattr(_em, name)
    if name == "fft":              # the fft extension (ember/_array_api_fft.py)
        from ember import _array_api_fft
        return _array_api_fft
    raise AttributeError(f"ember.array_api has no attribute {name!r}")


def __dir__():
    return sorted(set(_SAME) | {"fft"} | {n for n in globals() if not n.startswith("_")})


def broadcast_arrays(*arrays):
    return list(_em.broadcast_tensors(*arrays))


def astype(x, dtype, /, *, copy=True, device=None):
    y = x.astype(dtype, copy=copy)
    return y if device is None else y.to(device)


def can_cast(from_, to, /):
    """The standard's rule: from_ converts to `to` when promoting both gives `to`
    (ember.can_cast defaults to PyTorch's looser same-kind rule)."""
    src = from_.dtype if isinstance(from_, _core.TensorBase) else from_
    _dtype_arg(src, "from_", "can_cast"), _dtype_arg(to, "to", "can_cast")
    return _em.promote_types(src, to) is to


def nonzero(x, /):
    """A tuple of index tensors, one per dim (the standard's form)."""
    return tuple(_em.nonzero(x, as_tuple=True))


def meshgrid(*arrays, indexing="xy"):
    """The standard's default is Cartesian ('xy') indexing; ember.meshgrid's is 'ij'."""
    return list(_em.meshgrid(*arrays, indexing=indexing))


def equal(x1, x2, /):
    """Elementwise x1 == x2 (ember.equal is PyTorch's: one bool for the whole tensors)."""
    return _em.eq(x1, x2)


# This module defines the standard's sum, prod, mean, all, any, max and min, which
# shadow Python's builtins in every function here: those use _builtins.any etc.

def isdtype(dtype, kind):
    """Whether dtype is of `kind`: a dtype, a kind name, or a tuple of these."""
    if not isinstance(dtype, _core.DType):
        raise TypeError(f"isdtype: dtype must be an ember dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return _builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _core.DType):
        return dtype is kind
    if not isinstance(kind, str):
        raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of these, "
                        f"got {kind!r}")
    kinds = {
        "bool": dtype.kind == "bool",
        "signed integer": dtype.kind == "int" and dtype.is_signed,
        "unsigned integer": dtype.kind == "int" and not dtype.is_signed,
        "integral": dtype.kind == "int",
        "real floating": dtype.kind == "float",
        "complex floating": False,
        "numeric": dtype.kind in ("int", "float"),
    }
    if kind not in kinds:
        raise ValueError(f"isdtype: unknown kind {kind!r}")
    return kinds[kind]


def _reduction(name):
    def fn(x, /, *, axis=None, keepdims=False, **kw):
        return getattr(_em, name)(x, axis, keepdims, **kw)
    fn.__name__ = name
    return fn


sum = _reduction("sum")  # noqa: A001
prod = _reduction("prod")
mean = _reduction("mean")
all = _reduction("all")  # noqa: A001
any = _reduction("any")  # noqa: A001


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _em.amax(x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _em.amin(x, axis, keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _em.var(x, axis, keepdim=keepdims, correction=correction)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _em.std(x, axis, keepdim=keepdims, correction=correction)


def argmax(x, /, *, axis=None, keepdims=False):
    return _em.argmax(x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    return _em.argmin(x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    r = _em.count_nonzero(x, axis)
    if keepdims:
        dims = range(x.ndim) if axis is None else ([axis] if isinstance(axis, int) else axis)
        for d in sorted(_core.normalize_dim(d, x.ndim, "count_nonzero") for d in dims):
            r = r.unsqueeze(d)
    return r


def concat(arrays, /, *, axis=0):
    if axis is None:
        return _em.cat([a.reshape(-1) for a in arrays])
    return _em.cat(arrays, axis)


def squeeze(x, /, axis):
    dims = _sizes_arg((axis,), "squeeze", "axis")
    for d in dims:
        d = _core.normalize_dim(d, x.ndim, "squeeze")
        if x.ndim and x.shape[d] != 1:
            raise ValueError(f"squeeze: dim {d} has size {x.shape[d]}, not 1")
    return _em.squeeze(x, dims)


def flip(x, /, *, axis=None):
    return _em.flip(x, axis)


def roll(x, /, shift, *, axis=None):
    return _em.roll(x, shift, axis)


def repeat(x, repeats, /, *, axis=None):
    return _em.repeat_interleave(x, repeats, axis)


def unstack(x, /, *, axis=0):
    return tuple(_em.unbind(x, axis))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    return _em.sort(x, dim=axis, descending=descending, stable=stable).values


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    return _em.argsort(x, dim=axis, descending=descending, stable=stable)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_em.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_em.cumprod, 1, x, axis, dtype, include_initial)


def _cumulative(fn, initial, x, axis, dtype, include_initial):
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_sum: axis is required for tensors of more than 1 dim")
        axis = 0
    r = fn(x, axis, dtype=dtype)
    if include_initial:
        shape = list(r.shape)
        shape[_core.normalize_dim(axis, r.ndim, "cumulative_sum")] = 1
        r = _em.cat([_em.full(shape, initial, dtype=r.dtype), r], axis)
    return r


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    return _em.diff(x, n, axis, prepend, append)


def take_along_axis(x, indices, /, *, axis=-1):
    return _em.take_along_dim(x, indices, axis)


def unique_values(x, /):
    return _em.unique(x)


def unique_counts(x, /):
    v, c = _em.unique(x, return_counts=True)
    return _UniqueCounts(v, c)


def unique_inverse(x, /):
    v, inv = _em.unique(x, return_inverse=True)
    return _UniqueInverse(v, inv.reshape(x.shape))


def unique_all(x, /):
    v, inv, c = _em.unique(x, return_inverse=True, return_counts=True)
    # first occurrence of each value: the smallest flat position mapping to it
    n = x.numel()
    pos = _em.arange(n)
    first = _em.full((v.numel(),), n, dtype=_em.int64).scatter_reduce(
        0, inv.reshape(-1), pos, reduce="amin")
    return _UniqueAll(v, first, inv.reshape(x.shape), c)


from collections import namedtuple as _nt  # noqa: E402

_UniqueCounts = _nt("UniqueCountsResult", ["values", "counts"])
_UniqueInverse = _nt("UniqueInverseResult", ["values", "inverse_indices"])
_UniqueAll = _nt("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])


class _Info:
    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 16}

    def default_device(self):
        return _em.device("cpu")

    def devices(self):
        return [_em.device("cpu")]

    def default_dtypes(self, *, device=None):
        return {"real floating": _em.get_default_dtype(), "integral": _em.int64,
                "indexing": _em.int64}

    def dtypes(self, *, device=None, kind=None):
        from ember._dtypes import ALL_DTYPES
        return {d.name: d for d in ALL_DTYPES if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# the functions defined here: a clear TypeError naming the function when an array
# parameter gets something else
from ember._args import check_tensor_args as _check_tensor_args  # noqa: E402

_check_tensor_args(globals(), {"x", "indices"})
