"""ember as a Python Array API standard namespace (2024.12, with the linalg and fft
extensions as `ember.array_api.linalg` and `ember.array_api.fft`).

`x.__array_namespace__()` returns this module. Most names are ember's own functions
(the main namespace offers the standard's spellings beside PyTorch's); the ones
here adapt the signatures where PyTorch and the standard disagree: positional-only
arrays, `shape` where PyTorch says `size`, `axis` and `keepdims` instead of `dim` and
`keepdim`, `k` instead of `diagonal`, `sort` returning only the values, `unique_*`,
`cumulative_sum`, and the complex forms PyTorch leaves out (round, sign, linspace).
tools/array-api-tests runs the data-apis/array-api-tests suite against it; what is known
not to pass, and why, is listed in array-api-failures.txt.
"""
from __future__ import annotations

import builtins as _builtins

import ember as _em
from ember._args import dtype_arg as _dtype_arg, int_arg as _int_arg, sizes_arg as _sizes_arg
from ember._C import core as _core

__array_api_version__ = "2024.12"

# the versions x.__array_namespace__(api_version=...) accepts: this namespace serves them all
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

_SAME = """
bool uint8 uint16 uint32 uint64 int8 int16 int32 int64 float16 float32 float64 e inf nan pi
newaxis
complex64 complex128
asarray empty_like from_dlpack full_like ones_like zeros_like finfo iinfo result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil copysign cos cosh
divide exp expm1 floor floor_divide greater greater_equal hypot isfinite isinf
isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
logical_xor maximum minimum multiply negative not_equal positive pow reciprocal
remainder signbit sin sinh square sqrt subtract tan tanh trunc
take matmul matrix_transpose broadcast_to moveaxis stack tile where
""".split()


def __getattr__(name):
    if name in _SAME and hasattr(_em, name):   # complex64/128 where ember has them
        return getattr(_em, name)
    raise AttributeError(f"ember.array_api has no attribute {name!r}")


def __dir__():
    return sorted({n for n in _SAME if hasattr(_em, n)} |
                  {n for n in globals() if not n.startswith("_")})


# ---- creation: the standard's `shape`, `k`, `num`/`endpoint` and positional-only forms ----

def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    return _em.arange(start, stop, step, dtype=dtype, device=device)


def empty(shape, *, dtype=None, device=None):
    return _em.empty(shape, dtype=dtype, device=device)


def zeros(shape, *, dtype=None, device=None):
    return _em.zeros(shape, dtype=dtype, device=device)


def ones(shape, *, dtype=None, device=None):
    return _em.ones(shape, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
    return _em.full(shape, fill_value, dtype=dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the k-th diagonal (k > 0 above the main one, k < 0 below), zeros elsewhere:
    the band k of a matrix of ones (triu(k) then tril(k))."""
    n_cols = n_rows if n_cols is None else n_cols
    k = _int_arg(k, "k", "eye")
    return _em.ones((n_rows, n_cols), dtype=dtype, device=device).triu(k).tril(k)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """num evenly spaced values from start to stop; with endpoint=False the interval is
    half-open (the first num of num + 1 points including stop)."""
    num = _int_arg(num, "num", "linspace")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if isinstance(start, complex) or isinstance(stop, complex) or (
            dtype is not None and _dtype_arg(dtype, "dtype", "linspace").kind == "complex"):
        # complex bounds (the standard allows them; ember.linspace is real, as PyTorch's
        # for Python scalars): the real and imaginary parts spaced separately
        if dtype is None:
            dtype = __array_namespace_info__().default_dtypes()["complex floating"]
        part = _em.float64 if dtype is _em.complex128 else _em.float32
        start, stop = complex(start), complex(stop)
        return _em.complex(
            linspace(start.real, stop.real, num, dtype=part, device=device, endpoint=endpoint),
            linspace(start.imag, stop.imag, num, dtype=part, device=device, endpoint=endpoint))
    if endpoint:
        return _em.linspace(start, stop, num, dtype=dtype, device=device)
    return _em.linspace(start, stop, num + 1, dtype=dtype, device=device)[:num]


def meshgrid(*arrays, indexing="xy"):
    """The standard's default is Cartesian ('xy') indexing; ember.meshgrid's is 'ij'."""
    return list(_em.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k=0):
    return _em.tril(x, k)


def triu(x, /, *, k=0):
    return _em.triu(x, k)


# ---- manipulation ----

def broadcast_arrays(*arrays):
    return list(_em.broadcast_tensors(*arrays))


def broadcast_shapes(*shapes):
    return tuple(_em.broadcast_shapes(*shapes))


def expand_dims(x, /, axis=0):
    axis = _int_arg(axis, "axis", "expand_dims")
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"expand_dims: axis {axis} is out of range for a result of "
                         f"{x.ndim + 1} dims")
    return _em.unsqueeze(x, axis)


def permute_dims(x, /, axes):
    return _em.permute(x, tuple(_sizes_arg((axes,), "permute_dims", "axes")))


def reshape(x, /, shape, *, copy=None):
    """x with the given shape: a view where the strides allow it. copy=True always copies;
    copy=False refuses (ValueError) when the result cannot be a view."""
    shape = tuple(shape)
    if copy:
        return _em.reshape(x, shape).clone()
    if copy is False:
        try:
            return x.view(shape)
        except RuntimeError as e:
            raise ValueError(f"reshape: copy=False but shape {shape} of a tensor of shape "
                             f"{tuple(x.shape)} and strides {x.stride()} needs a copy") from e
    return _em.reshape(x, shape)


def tensordot(x1, x2, /, *, axes=2):
    return _em.tensordot(x1, x2, axes)


def vecdot(x1, x2, /, *, axis=-1):
    return _em.vecdot(x1, x2, axis=axis)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    return _em.searchsorted(x1, x2, side=side, sorter=sorter)


def clip(x, /, min=None, max=None):  # noqa: A002
    """x limited to [min, max]; either bound may be None (both: a copy of x)."""
    if min is None and max is None:
        return _em.clone(x)
    return _em.clamp(x, min, max)


def conj(x, /):
    return _em.conj(x)


def real(x, /):
    return _em.real(x)


def imag(x, /):
    if x.dtype.kind != "complex":
        raise TypeError(f"imag: needs a complex array, got dtype {x.dtype!r}")
    return _em.imag(x)


def astype(x, dtype, /, *, copy=True, device=None):
    y = x.astype(dtype, copy=copy)
    return y if device is None else y.to(device)


# the standard's promotion lattices: a dtype casts only within its own (bool; the
# integers; the real and complex floating dtypes), where PyTorch also promotes across them
_LATTICE = {"bool": 0, "int": 1, "float": 2, "complex": 2}


def can_cast(from_, to, /):
    """The standard's rule: from_ converts to `to` when both are in one promotion lattice
    and promoting them gives `to` (so bool -> int8 and int8 -> float32 are refused, where
    ember.can_cast follows PyTorch's looser same-kind rule)."""
    src = from_.dtype if isinstance(from_, _core.TensorBase) else from_
    _dtype_arg(src, "from_", "can_cast"), _dtype_arg(to, "to", "can_cast")
    return _LATTICE[src.kind] == _LATTICE[to.kind] and _em.promote_types(src, to) is to


# ---- elementwise functions whose complex (or scalar) forms PyTorch leaves out ----

def round(x, /):  # noqa: A001
    """Round half to even; a complex x has its real and imaginary parts rounded
    (torch.round refuses complex)."""
    if x.dtype.kind == "complex":
        return _em.complex(_em.round(_em.real(x)), _em.round(_em.imag(x)))
    return _em.round(x)


def sign(x, /):
    """-1, 0 or 1 by the sign of x; for complex x, x / |x| (0 at 0): PyTorch's sgn."""
    return _em.sgn(x) if x.dtype.kind == "complex" else _em.sign(x)


def nextafter(x1, x2, /):
    """The next float after x1 towards x2; either may be a Python scalar (taking the other's
    dtype), as the standard's 2024.12 binary functions allow."""
    if not isinstance(x1, _core.TensorBase):
        x1 = _em.full_like(x2, x1) if isinstance(x2, _core.TensorBase) else x1
    if not isinstance(x2, _core.TensorBase):
        x2 = _em.full_like(x1, x2) if isinstance(x1, _core.TensorBase) else x2
    return _em.nextafter(x1, x2)


def nonzero(x, /):
    """A tuple of index tensors, one per dim (the standard's form; a 0-d x is an error,
    as the standard says)."""
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least 1 dim, got a 0-d array")
    return tuple(_em.nonzero(x, as_tuple=True))


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
        "complex floating": dtype.kind == "complex",
        "numeric": dtype.kind in ("int", "float", "complex"),
    }
    if kind not in kinds:
        raise ValueError(f"isdtype: unknown kind {kind!r}")
    return kinds[kind]


def _reduce(fn, x, axis, keepdims, **kw):
    """fn(x, axis, keepdims, **kw); the standard's axis=() reduces over no axis (ember's
    dim=() means all of them, as PyTorch's): a new trailing axis of size 1 is reduced."""
    if isinstance(axis, tuple) and not axis:
        return fn(_em.unsqueeze(x, -1), -1, False, **kw)
    return fn(x, axis, keepdims, **kw)


def _sum_dtype(x, dtype):
    """The dtype sum / prod / cumulative_* / trace accumulate in: the standard's default
    for an unsigned x is uint64 (ember's main namespace gives int64, as PyTorch; the bits
    are the same, both wrap modulo 2^64)."""
    if dtype is None and x.dtype.kind == "int" and not x.dtype.is_signed:
        return _em.uint64
    return dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return _reduce(_em.sum, x, axis, keepdims, dtype=_sum_dtype(x, dtype))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return _reduce(_em.prod, x, axis, keepdims, dtype=_sum_dtype(x, dtype))


def mean(x, /, *, axis=None, keepdims=False):
    return _reduce(_em.mean, x, axis, keepdims)


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_em.all, x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_em.any, x, axis, keepdims)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_em.amax, x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_em.amin, x, axis, keepdims)


def _var(x, axis, keepdims, correction):
    return _em.var(x, axis, keepdim=keepdims, correction=correction)


def _std(x, axis, keepdims, correction):
    return _em.std(x, axis, keepdim=keepdims, correction=correction)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _reduce(_var, x, axis, keepdims, correction=correction)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _reduce(_std, x, axis, keepdims, correction=correction)


def argmax(x, /, *, axis=None, keepdims=False):
    return _em.argmax(x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    return _em.argmin(x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    if isinstance(axis, tuple) and not axis:
        return _em.ne(x, 0).to(_em.int64)
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
    r = fn(x, axis, dtype=_sum_dtype(x, dtype))
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


# the standard's dtypes (float16 and bfloat16 are ember's extras, outside it)
_STANDARD_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float32", "float64", "complex64", "complex128")


class _Info:
    """The inspection namespace (`__array_namespace_info__()`)."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 16}

    def default_device(self):
        return _em.device("cpu")

    def devices(self):
        devices = [_em.device("cpu")]
        for kind in ("cuda", "opencl"):
            try:
                n = getattr(_em, kind).device_count()
            except Exception:   # no driver, or the package's backend not importable
                n = 0
            devices += [_em.device(kind, i) for i in range(n)]
        return devices

    def default_dtypes(self, *, device=None):
        out = {"real floating": _em.get_default_dtype(), "integral": _em.int64,
               "indexing": _em.int64}
        if hasattr(_em, "complex64"):
            out["complex floating"] = (_em.complex128 if _em.get_default_dtype() is _em.float64
                                       else _em.complex64)
        return out

    def dtypes(self, *, device=None, kind=None):
        """{name: dtype} of the standard's dtypes ember has, of `kind` (a kind name, a
        dtype or a tuple of these, as isdtype) when given."""
        found = [getattr(_em, n) for n in _STANDARD_DTYPES if hasattr(_em, n)]
        return {d.name: d for d in found if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# the functions defined here: a clear TypeError naming the function when an array
# parameter gets something else
from ember._args import check_tensor_args as _check_tensor_args  # noqa: E402

_check_tensor_args(globals(), {"x", "indices"})

from ember.array_api import fft, linalg  # noqa: E402,F401
