"""Sorting and searching: sort, argsort, msort, topk, kthvalue, unique (and the Array
API's unique_*), searchsorted and bucketize. The kernels are the `sort` family
(sort_rows, searchsorted: ember._C.sort on the CPU); sort, topk and kthvalue record
their values as "gather" of the indices they found.
"""
from __future__ import annotations

import numbers
from collections import namedtuple

from ember._args import int_arg, tensor_input
from ember._C import core as _core
from ember._registry import tensor_method
from ember.ops.index import (
    _TB,
    _bool,
    _check_device,
    _ew,
    _gather,
    _index_arg,
    _int64,
    _norm,
    _record,
    _run,
    _scalar_tensor,
    _setitem,
    nonzero,
    scatter_reduce,
)
from ember.ops.reduction import values_indices
from ember.ops.scan import cumsum
from ember.ops.shape import cat

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
           "unique_values", "unique_counts", "unique_inverse", "unique_all", "searchsorted",
           "bucketize"]


# sorting -------------------------------------------------------------------------------

def _sort(input, dim, descending, op):
    """(values, indices) sorted along dim: stable, NaN the largest value."""
    if input.dtype.kind == "complex":
        # complex numbers have no order (PyTorch refuses them too); unique orders them
        # lexicographically through _complex_perm
        raise TypeError(f"{op}: not supported for complex dtype {input.dtype!r} "
                        f"(complex numbers are unordered); sort x.real or x.abs()")
    if input.ndim == 0:
        return _core.contiguous_copy(input), _core.empty((), _int64, input.device).fill_(0)
    d = _norm(dim, input.ndim, op)
    x = input.detach()
    last = d == input.ndim - 1
    if not last:
        x = x.movedim(d, -1)
    vals = _core.contiguous_copy(x)
    idx = _core.empty(tuple(vals.shape), _int64, input.device)
    _run("sort_rows", op, vals, idx, vals.shape[-1], bool(descending))
    if not last:
        vals = _core.contiguous_copy(vals.movedim(-1, d))
        idx = _core.contiguous_copy(idx.movedim(-1, d))
    return vals, idx


@tensor_method
@tensor_input
def sort(input, dim=-1, descending=False, stable=False, *, axis=None):
    """(values, indices) of input sorted along dim. Always stable (equal elements keep
    their order); NaN sorts as the largest value (last, or first when descending)."""
    if axis is not None:
        dim = axis
    values, indices = _sort(input, dim, descending, "sort")
    if input.ndim:
        _record("gather", (input,), values, {"dim": _norm(dim, input.ndim, "sort"),
                                             "index": indices})
    else:
        _record("clone", (input,), values, None)
    return values_indices(values, indices)


@tensor_method
@tensor_input
def argsort(input, dim=-1, descending=False, stable=False, *, axis=None):
    """The indices that sort input along dim (stable)."""
    if axis is not None:
        dim = axis
    return _sort(input, dim, descending, "argsort")[1]


@tensor_method
@tensor_input
def msort(input):
    """input sorted along its first dim."""
    return sort(input, 0).values


topk_result = namedtuple("topk", ["values", "indices"])


@tensor_method
@tensor_input
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
    """The k largest (or smallest) elements along dim and their indices, in sorted
    order; NaN counts as the largest value."""
    d = _norm(dim, input.ndim, "topk")
    n = input.shape[d] if input.ndim else 1
    k = int_arg(k, "k", "topk")
    if not 0 <= k <= n:
        raise IndexError(f"topk: k {k} is out of range for dim {d} of size {n}")
    if input.ndim == 0:
        s = sort(input)
        return topk_result(s.values, s.indices) if k else \
            topk_result(s.values.reshape(1)[:0], s.indices.reshape(1)[:0])
    idx = _sort(input, d, largest, "topk")[1].narrow(d, 0, k).contiguous()
    values = _gather(input, d, idx, "topk")
    return topk_result(values, idx)


@tensor_method
@tensor_input
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element along dim (k from 1) and its index."""
    d = _norm(dim, input.ndim, "kthvalue")
    n = input.shape[d] if input.ndim else 1
    k = int_arg(k, "k", "kthvalue")
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue: k {k} is out of range for dim {d} of size {n}")
    if input.ndim == 0:
        return values_indices(input.clone(), _core.empty((), _int64).fill_(0))
    idx = _sort(input, d, False, "kthvalue")[1].narrow(d, k - 1, 1).contiguous()
    values = _gather(input, d, idx, "kthvalue")
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return values_indices(values, idx)


# unique --------------------------------------------------------------------------------

def _distinct(a, b):
    """a != b elementwise, with NaN equal to NaN (NumPy's unique)."""
    ne = _ew("ne", a, b)
    if a.dtype.kind == "float":
        ne = _ew("logical_and", ne, _ew("logical_not",
                                         _ew("logical_and", _ew("isnan", a), _ew("isnan", b))))
    return ne


def _groups(first, perm, n, shape, return_inverse, return_counts):
    """inverse (positions -> group) and counts from the group-start mask."""
    out = []
    if return_inverse:
        gid = _ew("sub", _cumsum_int(first), 1)
        inverse = _core.empty((n,), _int64, first.device)
        if n:
            _setitem(inverse, (perm,), gid)
        out.append(inverse.reshape(shape))
    if return_counts:
        starts = nonzero(first)[:, 0]
        end = _core.empty((1,), _int64, first.device).fill_(n)
        bounds = cat([starts, end])
        out.append(_ew("sub", bounds[1:], bounds[:-1]))
    return out


def _cumsum_int(mask):
    return cumsum(mask, 0)


def _first_mask(distinct, n, device):
    head = _core.empty((1 if n else 0,), _bool, device).fill_(True)
    return cat([head, distinct])


def _unique_rows(input, d, sort_rows, return_inverse, return_counts):
    """unique along dim d: the distinct slices, as rows of (n, -1)."""
    from ember.ops.creation import arange
    x = input.detach().movedim(d, 0)
    n = x.shape[0]
    m = 1
    for s in tuple(x.shape)[1:]:
        m *= s
    rows = x.reshape(n, m)
    perm = arange(n, device=input.device)
    if sort_rows:
        for c in range(rows.shape[1] - 1, -1, -1):   # LSD: stable sorts, last column first
            perm = perm[_argsort_1d(rows[perm, c], "unique")]
    srt = rows[perm]
    if rows.shape[1] == 0:
        distinct = _core.empty((max(n - 1, 0),), _bool, input.device).fill_(False)
    else:
        distinct = _core.reduce("any", _distinct(srt[1:], srt[:-1]), (1,), False)
    first = _first_mask(distinct, n, input.device)
    count = int(_core.reduce("sum", first, None, False).item())
    uniq = srt[first].reshape((count,) + tuple(x.shape)[1:]).movedim(0, d)
    if return_inverse or return_counts:
        return (uniq, *_groups(first, perm, n, (n,), return_inverse, return_counts))
    return uniq


def _argsort_1d(x, op):
    """The stable sorting permutation of the 1-d x; complex x in NumPy's lexicographic
    order (real part, then imaginary part), which unique needs to group equal values."""
    if x.dtype.kind != "complex":
        return _sort(x, 0, False, op)[1]
    perm = _sort(_core.contiguous_copy(x.imag), 0, False, op)[1]
    return perm[_sort(_core.contiguous_copy(x.real[perm]), 0, False, op)[1]]


def _unique_flat(input, sort_values, return_inverse, return_counts):
    flat = input.detach().reshape(-1)
    n = flat.numel()
    if sort_values:
        perm = _argsort_1d(flat, "unique")
        v = flat[perm]
    else:
        from ember.ops.creation import arange
        v, perm = flat, arange(n, device=input.device)
    distinct = _distinct(v[1:], v[:-1]) if n else _core.empty((0,), _bool)
    first = _first_mask(distinct, n, input.device)
    uniq = v[first]
    if return_inverse or return_counts:
        return (uniq, *_groups(first, perm, n, tuple(input.shape), return_inverse,
                               return_counts))
    return uniq


@tensor_method
@tensor_input
def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """The distinct elements (sorted; NaNs count as one, as in NumPy), or with dim the
    distinct slices along dim. return_inverse adds, for each input element (slice),
    the position of its value in the result; return_counts how often each occurs."""
    if dim is None:
        return _unique_flat(input, True, return_inverse, return_counts)
    d = _norm(dim, input.ndim, "unique")
    return _unique_rows(input, d, True, return_inverse, return_counts)


@tensor_method
@tensor_input
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (slices along dim) to one."""
    if dim is None:
        return _unique_flat(input, False, return_inverse, return_counts)
    d = _norm(dim, input.ndim, "unique_consecutive")
    return _unique_rows(input, d, False, return_inverse, return_counts)


UniqueAll = namedtuple("UniqueAll", ["values", "indices", "inverse_indices", "counts"])
UniqueCounts = namedtuple("UniqueCounts", ["values", "counts"])
UniqueInverse = namedtuple("UniqueInverse", ["values", "inverse_indices"])


@tensor_input
def unique_values(x, /):
    """The Array API's unique_values: the distinct elements (sorted)."""
    return unique(x)


@tensor_input
def unique_counts(x, /):
    return UniqueCounts(*unique(x, return_counts=True))


@tensor_input
def unique_inverse(x, /):
    return UniqueInverse(*unique(x, return_inverse=True))


@tensor_input
def unique_all(x, /):
    """values, the flat index of each value's first occurrence, inverse, counts."""
    values, inverse, counts = unique(x, return_inverse=True, return_counts=True)
    flat_inv = inverse.reshape(-1)
    from ember.ops.creation import arange
    n = flat_inv.numel()
    first = _core.empty((values.numel(),), _int64).fill_(n)
    if n:
        pos = arange(n)
        first = scatter_reduce(first, 0, flat_inv, pos, "amin")
    return UniqueAll(values, first, inverse, counts)


# binary search -------------------------------------------------------------------------

def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Insertion points of values in sorted_sequence (along its last dim): the first
    position with an element >= value ('left') or > value (right=True / 'right').
    NaN sorts last. A 1-d sequence serves every value; an n-d one must match values'
    leading dims."""
    from ember._dtypes import result_type
    op = "searchsorted"
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"{op}: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ValueError(f"{op}: right=True contradicts side='left'")
        right = side == "right"
    seq = sorted_sequence
    if not isinstance(seq, _TB):
        from ember.ops.creation import as_tensor
        seq = as_tensor(seq)
    if seq.ndim == 0:
        raise ValueError(f"{op}: the sorted sequence must have at least 1 dim")
    scalar = not isinstance(values, _TB)
    if scalar:
        if not isinstance(values, numbers.Number):
            from ember.ops.creation import as_tensor
            values = as_tensor(values)
            scalar = False
        elif seq.ndim != 1:
            raise ValueError(f"{op}: a scalar value needs a 1-d sorted sequence, got shape "
                             f"{tuple(seq.shape)}")
    _check_device(op, seq, values)
    if sorter is not None:
        sorter = _index_arg(sorter, op, seq.device)
        _check_device(op, seq, sorter)
        if tuple(sorter.shape) != tuple(seq.shape):
            raise ValueError(f"{op}: sorter of shape {tuple(sorter.shape)} doesn't match the "
                             f"sequence's shape {tuple(seq.shape)}")
        seq = _gather(seq, seq.ndim - 1, sorter, op)
    dtype = result_type(seq, values)
    if scalar:
        values = _scalar_tensor(values, dtype, seq.device, op)
    vshape = tuple(values.shape)
    if seq.ndim > 1 and (values.ndim != seq.ndim or vshape[:-1] != tuple(seq.shape)[:-1]):
        raise ValueError(f"{op}: the leading dims of the sequence {tuple(seq.shape)} and of "
                         f"the values {vshape} must match")
    s = seq.detach().to(dtype).contiguous()
    v = values.detach().to(dtype)
    v = v.reshape(1, -1) if seq.ndim == 1 else v
    v = v if v.is_contiguous() else _core.contiguous_copy(v)
    out = _core.empty(vshape, _int64, seq.device)
    _run("searchsorted", "searchsorted", s, seq.ndim == 1, v, out, bool(right))
    if out_int32:
        out = out.to(_core._dtype_by_name("int32"))
    return out


@tensor_method
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each input element among the 1-d sorted boundaries: i such that
    boundaries[i-1] < x <= boundaries[i] (right=False) or boundaries[i-1] <= x <
    boundaries[i] (right=True)."""
    if not isinstance(boundaries, _TB) or boundaries.ndim != 1:
        raise ValueError("bucketize: boundaries must be a 1-d tensor")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)



def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements` (either may be a
    number, not both), as torch.isin: a bool tensor of elements' shape. Sorts
    test_elements once and looks each element up with searchsorted (O((n + m) log m));
    NaN is in nothing."""
    from ember._dtypes import result_type
    from ember.ops.creation import as_tensor
    if not isinstance(elements, _TB) and not isinstance(test_elements, _TB):
        raise TypeError(f"isin: expected a Tensor for elements or test_elements, got "
                        f"{type(elements).__name__} and {type(test_elements).__name__}")
    for name, v in (("elements", elements), ("test_elements", test_elements)):
        if not isinstance(v, (_TB, numbers.Real)):
            raise TypeError(f"isin: {name} must be a Tensor or a number, got "
                            f"{type(v).__name__} {v!r:.60}")
    dev = (elements if isinstance(elements, _TB) else test_elements).device
    e = elements if isinstance(elements, _TB) else as_tensor(elements, device=dev)
    t = test_elements if isinstance(test_elements, _TB) else as_tensor(test_elements, device=dev)
    if e.device != t.device:
        raise RuntimeError(f"isin: expected both tensors on one device, got {e.device} and "
                           f"{t.device}")
    dt = result_type(e, t)
    with _core._no_record():
        ev = e.detach().to(dt)
        if t.numel() == 0:
            hit = _core.empty(tuple(e.shape), _core._dtype_by_name("bool"), dev).fill_(False)
        else:
            s = t.detach().reshape(-1).to(dt).sort().values
            pos = searchsorted(s, ev.reshape(-1))
            pos = _core.elementwise("minimum", pos, s.numel() - 1)
            hit = _core.elementwise("eq", s.gather(0, pos), ev.reshape(-1)).reshape(tuple(e.shape))
    return _core.elementwise("logical_not", hit) if invert else hit


__all__ += ["isin"]
