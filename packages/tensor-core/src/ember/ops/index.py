"""Indexing: ``x[key]`` and ``x[key] = value`` with NumPy's semantics, the gather /
scatter family, masks, take/put and nonzero (sorting and searching: ember.ops.sort).

Subscripts follow NumPy:
- ints (negative from the end), slices (any step, negative too), None, Ellipsis
  give a *view* (basic indexing);
- bool masks and integer tensors / lists / NumPy arrays are *advanced* indices:
  they broadcast together, and the result is a copy. When the advanced indices
  (ints count as advanced next to them) are not side by side, their dims go first;
  otherwise they replace the indexed dims in place;
- a 0-d integer tensor is an int (so ``x[i]`` is a view for a tensor i); Python
  bools add a dim (``x[True]`` has a leading dim of 1, ``x[False]`` of 0).

Writes (``__setitem__``, index_put_, scatter_, index_copy_, ...) broadcast and cast
the value to the destination's dtype and bump its version. With repeated indices
the writes run in index order on the CPU, so the last one wins; other devices
may pick any of them (as in PyTorch and NumPy). Accumulating writes
(index_put_(accumulate=True), scatter_add_, index_add_) add every contribution.

Every index value is checked before any memory is touched; out-of-range values
raise IndexError naming the op, the value, the dim and its size.

Autograd records, with the attrs their derivatives need:
- "index_view" (basic indexing; attrs key = the full basic key of ints, slices and
  None, shape = the input's shape): backward is ``g = zeros(shape); g[key] = grad``;
- "index" (advanced; attrs indices = one entry per input dim, None or an int64
  tensor, the tensors adjacent): backward is
  ``zeros(shape).index_put_(indices, grad, accumulate=True)``;
- "setitem" (in place; inputs (x, value), attrs key, accumulate);
- "gather", "scatter", "scatter_add", "scatter_reduce", "index_select",
  "index_add", "index_copy", "index_fill" (attrs dim, index, ...); take_along_dim
  (and ember.ops.sort's sort, topk, kthvalue) record their values as "gather".
"""
from __future__ import annotations

import numbers
import operator

from ember._args import int_arg, tensor_input
from ember._C import core as _core
from ember._layout import broadcast_shape, broadcast_strides, contiguous_strides
from ember._registry import tensor_method
from ember.backends import run as _backend_run

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "index_reduce", "masked_fill",
           "masked_select", "masked_scatter", "take", "take_along_dim", "nonzero", "argwhere",
           "select", "flatnonzero"]

_ew = _core.elementwise
_record = _core.record
_norm = _core.normalize_dim
_TB = _core.TensorBase
_int64 = _core._dtype_by_name("int64")
_bool = _core._dtype_by_name("bool")


# helpers ---------------------------------------------------------------------------

def _run(kind, op, *args):
    """The index kernels (ember.backends.run), complex tensors included: the kernels
    move items of up to 8 bytes, so a complex gather / scatter runs on the (re, im)
    float view of its tensors, a trailing dim of 2 with every stride and index step
    doubled (an add scatters the parts independently, which is the complex add)."""
    if kind in ("gather", "scatter", "compress") and args[0].is_complex():
        return _COMPLEX_KERNELS[kind](op, *args)
    return _backend_run(kind, op, *args)


def _float_view(t, extra=True):
    """A complex tensor's storage as its float parts (not recorded): shape + (2,) with
    doubled strides, or (extra=False) the real parts alone."""
    storage, dtype, shape, strides, offset = t._layout()
    if not extra:
        return _core.as_strided_from(storage, dtype.to_real(), shape,
                                     tuple(2 * s for s in strides), 2 * offset)
    return _core.as_strided_from(storage, dtype.to_real(), tuple(shape) + (2,),
                                 tuple(2 * s for s in strides) + (1,), 2 * offset)


def _float_indices(indices):
    return [(t, tuple(st) + (0,), 2 * step, size) for t, st, step, size in indices]


def _complex_gather(op, out, src, src_strides, indices):
    _backend_run("gather", op, _float_view(out), _float_view(src),
                 tuple(2 * s for s in src_strides) + (1,), _float_indices(indices))
    return out


def _complex_scatter(op, dst, dst_strides, src, src_strides, shape, indices, reduce=None):
    if reduce not in (None, "assign", "add", "sum"):
        raise RuntimeError(f"{op}: a multiplying, max or min reduce is not supported for complex "
                           f"tensors (got {dst.dtype!r}); only assignment and a sum are")
    _backend_run("scatter", op, _float_view(dst), tuple(2 * s for s in dst_strides) + (1,),
                 _float_view(src), tuple(2 * s for s in src_strides) + (1,),
                 tuple(shape) + (2,), _float_indices(indices), reduce)
    return dst


def _complex_compress(op, src, stride, mask):
    re = _float_view(src, extra=False)
    storage, dtype, shape, strides, offset = re._layout()
    im = _core.as_strided_from(storage, dtype, shape, strides, offset + 1)
    parts = [_backend_run("compress", op, p, 2 * stride, mask) for p in (re, im)]
    out = _core.empty(tuple(parts[0].shape), src.dtype, src.device)
    both = _float_view(out)
    for i, p in enumerate(parts):
        storage, dtype, shape, strides, offset = both._layout()
        _core.copy_into(_core.as_strided_from(storage, dtype, shape[:-1], strides[:-1],
                                              offset + i), p)
    return out


_COMPLEX_KERNELS = {"gather": _complex_gather, "scatter": _complex_scatter,
                    "compress": _complex_compress}


def _to_tensor(obj, op, err=IndexError):
    """A list / tuple / NumPy array used as an index, as a tensor (an empty list is an
    empty int64 index, as in NumPy); `err` when it can't be one."""
    from ember.ops.creation import as_tensor
    try:
        t = as_tensor(obj)
    except (TypeError, ValueError, OverflowError) as e:
        raise err(f"{op}: could not use {type(obj).__name__} as an index: {e}") from None
    if isinstance(obj, (list, tuple)) and t.numel() == 0:
        t = _core.empty(tuple(t.shape), _int64)      # [] or [[]]: int64, as NumPy
    return t


def _index_arg(index, op, device):
    """An index argument (tensor, list, int) as an integer tensor, a list or int made
    on `device` (the indexed tensor's); TypeError otherwise."""
    if not isinstance(index, _TB):
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            from ember.ops.creation import tensor
            return tensor(int(index), device=device)
        index = _on(_to_tensor(index, op, TypeError), device)
    if index.dtype.kind != "int":
        raise TypeError(f"{op}: index tensors must have an integer dtype, got {index.dtype!r}")
    return index


def _on(t, device):
    """An index tensor on the indexed tensor's device: a subscript may use CPU indices
    (lists, NumPy arrays, CPU tensors) on any device, as in PyTorch, and the device
    kernels read their indices from device memory."""
    from ember.ops.conversion import _to_device
    return t if t.device == device else _to_device(t, device)


def _prep(index, size, op, where, allow_negative=True):
    """A contiguous int64 copy of index with every value checked against size (and
    negatives wrapped when allowed); IndexError naming op, value and dim otherwise (on
    a device at the next synchronizing read: the index is checked there without a
    host read, a bad value standing as 0 until then)."""
    def error(bad):   # raised at once on the CPU, at the next sync on a device
        v = index.reshape(-1)[bad].item()
        return IndexError(f"{op}: index {v} is out of bounds for {where} with size {size}")
    return _run("normalize", op, index, size, allow_negative, error)


def _scalar_tensor(value, dtype, device, op):
    """A 0-d tensor of dtype holding value (a Python number or a one-element tensor)."""
    t = _core.empty((), dtype, device)
    if isinstance(value, _TB):
        if value.numel() != 1:
            raise ValueError(f"{op}: expected a scalar value or a one-element tensor, got "
                             f"shape {tuple(value.shape)}")
        return _core.copy_into(t, value.reshape(()))
    if not isinstance(value, (numbers.Number,)) and not hasattr(value, "item"):
        raise TypeError(f"{op}: expected a number, got {type(value).__name__}")
    try:
        return t.fill_(value.item() if hasattr(value, "item") else value)
    except (ValueError, OverflowError) as e:     # NaN into an int, 300 into uint8
        raise type(e)(f"{op}: can't store {value!r} as {dtype!r}: {e}") from None


# The checks of a tensor written in place (a leaf that requires grad, elements that
# share memory): one function in the core for every in-place op.
_check_inplace = _core.check_inplace


def _check_device(op, *tensors):
    dev = None
    for t in tensors:
        if isinstance(t, _TB):
            if dev is None:
                dev = t.device
            elif t.device != dev:
                raise RuntimeError(f"{op}: expected all tensors on one device, got {dev} and "
                                   f"{t.device}")


# subscripts: parsing ---------------------------------------------------------------

def _parse(ndim, key, op):
    """The key as entries (kind, value, position in the key); Ellipsis expanded to
    full slices that keep the Ellipsis' position (it separates advanced indices even
    when it stands for no dims, as in NumPy)."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    consumed = 0
    ellipsis_at = None
    for pos, k in enumerate(key):
        if k is None:
            entries.append(("none", None, pos))
        elif k is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
            ellipsis_at = len(entries)
            entries.append(("ellipsis", None, pos))
        elif isinstance(k, slice):
            entries.append(("slice", k, pos))
            consumed += 1
        elif isinstance(k, bool) or type(k).__name__ == "bool_":
            entries.append(("bool", bool(k), pos))
        elif isinstance(k, numbers.Integral):
            entries.append(("int", int(k), pos))
            consumed += 1
        else:
            if not isinstance(k, _TB):
                if isinstance(k, (list, tuple)) or hasattr(k, "__array_interface__"):
                    k = _to_tensor(k, op)
                elif isinstance(k, float):
                    raise IndexError(f"{op}: only integers, slices (:), ellipsis (...), None "
                                     f"and integer or bool tensors are valid indices (got "
                                     f"the float {k!r})")
                elif hasattr(type(k), "__index__"):   # the protocol is the type's (the
                    entries.append(("int", operator.index(k), pos))   # class bool is no index)
                    consumed += 1
                    continue
                else:
                    raise IndexError(f"{op}: only integers, slices (:), ellipsis (...), None "
                                     f"and integer or bool tensors are valid indices (got "
                                     f"{type(k).__name__})")
            kind = k.dtype.kind
            if kind == "bool":
                if k.ndim == 0:
                    entries.append(("bool", bool(k.item()), pos))
                else:
                    entries.append(("mask", k, pos))
                    consumed += k.ndim
            elif kind == "int":
                if k.ndim == 0:
                    entries.append(("int", int(k.item()), pos))
                else:
                    entries.append(("array", k, pos))
                consumed += 1
            else:
                raise IndexError(f"{op}: tensors used as indices must have an integer or bool "
                                 f"dtype, got {k.dtype!r}")
    if consumed > ndim:
        raise IndexError(f"{op}: too many indices for a tensor of {ndim} dims ({consumed} "
                         f"were indexed)")
    rest = ndim - consumed          # dims the key leaves to full slices
    if ellipsis_at is None:
        return entries + [("slice", slice(None), len(key) + i) for i in range(rest)]
    pos = entries[ellipsis_at][2]
    return (entries[:ellipsis_at] + [("ellipsis", None, pos)] +
            [("slice", slice(None), pos)] * rest + entries[ellipsis_at + 1:])


def _int_at(v, n, d, op):
    """An int index into a dim of size n, wrapped; IndexError when out of range."""
    if not -n <= v < n:
        raise IndexError(f"{op}: index {v} is out of bounds for dim {d} with size {n}")
    return v + n if v < 0 else v


def _slice_at(v, n, stride, op):
    """(start, length, new stride) of a slice of a dim of size n."""
    try:
        start, stop, step = v.indices(n)
    except (TypeError, ValueError) as e:      # a zero step, float bounds
        raise type(e)(f"{op}: {e}") from None
    length = len(range(start, stop, step))
    return (start if length else 0), length, stride * step


_BASIC_TYPES = (int, slice, type(None), type(Ellipsis))


def _basic_getitem(x, key, op):
    """x[key] for a tuple of ints, slices, None and at most one Ellipsis: a view."""
    _, _, shape, strides, offset = x._layout()
    nd = len(shape)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > nd:
        raise IndexError(f"{op}: too many indices for a tensor of {nd} dims ({consumed} were "
                         f"indexed)")
    vshape, vstrides, basic = [], [], []
    d = 0
    seen_ellipsis = False
    for k in key:
        if type(k) is int:
            i = _int_at(k, shape[d], d, op)
            offset += i * strides[d]
            basic.append(i)
            d += 1
        elif type(k) is slice:
            start, n, st = _slice_at(k, shape[d], strides[d], op)
            offset += start * strides[d]
            vshape.append(n)
            vstrides.append(st)
            basic.append(k)
            d += 1
        elif k is None:
            vshape.append(1)
            vstrides.append(0)
            basic.append(None)
        else:
            if seen_ellipsis:
                raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            for _ in range(nd - consumed):
                vshape.append(shape[d])
                vstrides.append(strides[d])
                basic.append(slice(None))
                d += 1
    vshape += shape[d:]
    vstrides += strides[d:]
    out = x._view(vshape, vstrides, offset)
    return _record("index_view", (x,), out, {"key": tuple(basic) + (slice(None),) * (nd - d),
                                             "shape": shape})


def _walk(x, entries, op):
    """Apply the basic part of the key: returns (shape, strides, offset) of the view,
    the advanced indices as [(kind, view dim, tensor, input dim)] (kind "array" or
    "mask"; a mask spans mask.ndim view dims), the basic key that makes the view (for
    autograd) and whether the advanced indices are adjacent."""
    _, _, shape, strides, offset = x._layout()
    vshape, vstrides, adv, basic = [], [], [], []
    adv_pos = set()
    d = 0
    for kind, v, pos in entries:
        if kind == "slice":
            start, n, st = _slice_at(v, shape[d], strides[d], op)
            offset += start * strides[d]
            vshape.append(n)
            vstrides.append(st)
            basic.append(v)
            d += 1
        elif kind == "int":
            i = _int_at(v, shape[d], d, op)
            offset += i * strides[d]
            basic.append(i)
            adv_pos.add(pos)
            d += 1
        elif kind == "none":
            vshape.append(1)
            vstrides.append(0)
            basic.append(None)
        elif kind == "array":
            adv.append(("array", len(vshape), _on(v, x.device), d))
            vshape.append(shape[d])
            vstrides.append(strides[d])
            basic.append(slice(None))
            adv_pos.add(pos)
            d += 1
        elif kind == "mask":
            k = v.ndim
            # NumPy lets a mask dim of size 0 stand against any dim (it selects nothing)
            if len(shape[d:d + k]) != k or any(m not in (0, n) for m, n in
                                                zip(v.shape, shape[d:d + k])):
                raise IndexError(f"{op}: the mask of shape {tuple(v.shape)} does not match the "
                                 f"indexed dims {tuple(shape[d:d + k])} at dim {d}")
            adv.append(("mask", len(vshape), _on(v, x.device), d))
            vshape += shape[d:d + k]
            vstrides += strides[d:d + k]
            basic += [slice(None)] * k
            d += k
            adv_pos.add(pos)
        elif kind == "bool":
            # a new size-1 dim, indexed by [0] (True) or [] (False)
            adv.append(("array", len(vshape),
                        _core.empty((1 if v else 0,), _int64, x.device).fill_(0), None))
            vshape.append(1)
            vstrides.append(0)
            basic.append(None)
            adv_pos.add(pos)
    adjacent = max(adv_pos) - min(adv_pos) + 1 == len(adv_pos) if adv else True
    return vshape, vstrides, offset, adv, tuple(basic), adjacent


def _mergeable(shape, strides, start, k):
    """Whether dims start .. start+k-1 read like one dim (row-major, no gaps)."""
    return all(strides[j] == strides[j + 1] * shape[j + 1] for j in range(start, start + k - 1))


class _Plan:
    """What a subscript does. shape0/strides0: the basic view; shape1/strides1: the
    same with each multi-dim mask's dims merged into one where the layout allows
    (the mask becomes one list of flat positions); perm: moves separated advanced
    dims to the front; then vshape/vstrides (the moved layout), the validated
    indices, the dims they index (vdims), their broadcast shape and its place p."""
    __slots__ = ("shape0", "strides0", "shape1", "strides1", "vshape", "vstrides", "offset",
                 "indices", "vdims", "bshape", "p", "perm", "basic")


def _plan(x, key, op):
    entries = _parse(x.ndim, key, op)
    vshape, vstrides, offset, adv, basic, adjacent = _walk(x, entries, op)
    pl = _Plan()
    pl.basic, pl.perm, pl.indices, pl.offset = basic, None, [], offset
    pl.shape0, pl.strides0 = vshape, vstrides
    shape1, strides1 = list(vshape), list(vstrides)
    if adv:
        vdims = []
        shift = 0   # view dims removed by merges so far
        # NumPy checks no index values when the broadcast result is empty
        shapes = [t.shape for kind, _, t, _ in adv if kind == "array"]
        empty = 0 in broadcast_shape(shapes, op, "indexing tensors", IndexError)
        for kind, vd, t, d in adv:
            vd -= shift
            if kind == "array":
                where = f"dim {d}" if d is not None else "a new dim"
                pl.indices.append(_prep(t, shape1[vd], op, where) if not empty else
                                  _core.astype(t, _int64))
                vdims.append(vd)
                continue
            k = t.ndim
            m = t if t.is_contiguous() else _core.contiguous_copy(t)
            if k == 1 or _mergeable(shape1, strides1, vd, k):
                size = 1
                for j in range(vd, vd + k):
                    size *= shape1[j]
                shape1[vd:vd + k] = [size]
                strides1[vd:vd + k] = [strides1[vd + k - 1]]
                shift += k - 1
                pl.indices.append(_run("nonzero", op, m.reshape(-1)).reshape(-1))
                vdims.append(vd)
            else:
                coords = _run("nonzero", op, m)
                for j in range(k):
                    pl.indices.append(_core.contiguous_copy(coords[:, j]))
                    vdims.append(vd + j)
        pl.bshape = broadcast_shape([t.shape for t in pl.indices], op, "indexing tensors",
                                    IndexError)
        if not adjacent:
            # NumPy: separated advanced indices put their dims first
            pl.perm = vdims + [i for i in range(len(shape1)) if i not in vdims]
            vdims = list(range(len(vdims)))
        pl.vdims = vdims
        pl.p = vdims[0]
    pl.shape1, pl.strides1 = shape1, strides1
    if pl.perm is None:
        pl.vshape, pl.vstrides = shape1, strides1
    else:
        pl.vshape = [shape1[i] for i in pl.perm]
        pl.vstrides = [strides1[i] for i in pl.perm]
    return pl


def _index_args(pl, res_ndim):
    """The kernel's index arguments: each index broadcast to bshape, placed at p."""
    args = []
    for t, vd in zip(pl.indices, pl.vdims):
        st = [0] * res_ndim
        bst = broadcast_strides(t, len(pl.bshape))
        st[pl.p:pl.p + len(pl.bshape)] = bst
        args.append((t, tuple(st), pl.vstrides[vd], pl.vshape[vd]))
    return args


def _result_layout(pl):
    """Result shape and the strides that read the (permuted) view along it."""
    k = len(pl.vdims)
    shape = pl.vshape[:pl.p] + list(pl.bshape) + pl.vshape[pl.p + k:]
    strides = pl.vstrides[:pl.p] + [0] * len(pl.bshape) + pl.vstrides[pl.p + k:]
    return shape, strides


# subscripts: get and set --------------------------------------------------------------

def _getitem(x, key, op="getitem"):
    if type(key) is int:   # the fast path: x[i] (iteration, loops)
        _, _, shape, strides, offset = x._layout()
        if not shape:
            raise IndexError(f"{op}: too many indices for a tensor of 0 dims (1 were indexed)")
        i = _int_at(key, shape[0], 0, op)
        out = x._view(shape[1:], strides[1:], offset + i * strides[0])
        return _record("index_view", (x,), out, {"key": (i,), "shape": tuple(shape)})
    if type(key) is slice:
        key = (key,)
    if type(key) is tuple and all(type(k) in _BASIC_TYPES for k in key):
        return _basic_getitem(x, key, op)
    if isinstance(key, _TB) and key.ndim and x.ndim and key.dtype.kind == "int":
        return _take_rows(x, key, op)       # x[idx]: rows picked by an index tensor
    if isinstance(key, _TB) and key.dtype is _bool and key.ndim and \
            tuple(key.shape) == tuple(x.shape) and not _core.any_requires_grad((x,)):
        _, _, shape, strides, _ = x._layout()
        if _mergeable(shape, strides, 0, len(shape)):   # x[mask] in one pass
            m = _on(key, x.device)
            m = m if m.is_contiguous() else _core.contiguous_copy(m)
            return _run("compress", op, x, strides[-1], m)
    pl = _plan(x, key, op)
    if tuple(pl.shape0) == tuple(x.shape) and tuple(pl.strides0) == x.stride() and \
            pl.offset == x.storage_offset():
        view = x          # nothing basic to do (x[idx], x[..., idx], x[mask])
    else:
        view = x._view(pl.shape0, pl.strides0, pl.offset)
        _record("index_view", (x,), view, {"key": pl.basic, "shape": tuple(x.shape)})
    if not pl.indices:
        return view
    if pl.shape1 != pl.shape0:   # masks over mergeable dims: one flat dim each
        from ember.ops.views import reshape
        view = reshape(view, pl.shape1)
    if pl.perm is not None:
        from ember.ops.views import permute
        view = permute(view, pl.perm)
    pl.vshape, pl.vstrides = list(view.shape), list(view.stride())
    shape, src_strides = _result_layout(pl)
    out = _core.empty(shape, x.dtype, x.device)
    _run("gather", op, out, view, tuple(src_strides), _index_args(pl, len(shape)))
    indices = [None] * len(pl.vshape)
    for t, vd in zip(pl.indices, pl.vdims):
        indices[vd] = t
    # key: the subscript as given (ember.onnx traces its tensors)
    return _record("index", (view,), out, {"indices": tuple(indices), "key": key})


def _take_rows(x, index, op):
    """x[index] for an integer tensor index (what the general path does, with less
    bookkeeping): the result has shape index.shape + x.shape[1:]."""
    _, _, shape, strides, _ = x._layout()
    idx = _prep(_on(index, x.device), shape[0], op, "dim 0")
    ishape = tuple(idx.shape)
    out = _core.empty(ishape + shape[1:], x.dtype, x.device)
    rest = len(shape) - 1
    _run("gather", op, out, x, (0,) * len(ishape) + strides[1:],
                 [(idx, tuple(contiguous_strides(ishape)) + (0,) * rest, strides[0], shape[0])])
    return _record("index", (x,), out, {"indices": (idx,) + (None,) * rest, "key": index})


def _value_tensor(value, x, op):
    """value as a tensor of x's dtype (Python scalars become 0-d)."""
    if isinstance(value, _TB):
        _check_device(op, x, value)
        return value if value.dtype is x.dtype else value.to(x.dtype)
    if isinstance(value, (numbers.Number,)) or type(value).__module__ == "numpy" and \
            getattr(value, "ndim", 1) == 0:
        return _scalar_tensor(value, x.dtype, x.device, op)
    from ember.ops.creation import as_tensor
    try:
        return as_tensor(value, dtype=x.dtype, device=x.device)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: can't assign a {type(value).__name__}: {e}") from None


def _strip_ones(v, ndim):
    """Drop leading size-1 dims of v beyond ndim (NumPy lets x[0] = ones(1, n))."""
    while v.ndim > ndim and v.shape[0] == 1:
        v = v.reshape(tuple(v.shape)[1:])
    return v


def _setitem(x, key, value, accumulate=False, op="setitem"):
    """x[key] = value (or += with accumulate, adding every repeated index)."""
    # Overlap is checked on what is written: a basic index writes a view (x[0] of
    # an expand() is fine, as in PyTorch), an advanced one writes x itself.
    _check_inplace(x, op, overlap=False)
    if not isinstance(value, _TB) and type(value).__module__ == "numpy" and \
            getattr(value, "ndim", 1) == 0:
        value = value.item()     # a NumPy scalar
    pl = _plan(x, key, op)
    if not pl.indices:
        view = x._view(pl.vshape, pl.vstrides, pl.offset)
        if accumulate:
            _ew("add", view, value if not isinstance(value, _TB) else
                _strip_ones(value, view.ndim), out=view)
        elif isinstance(value, _TB) or not isinstance(value, numbers.Number):
            v = _strip_ones(_value_tensor(value, x, op), view.ndim)
            _broadcast_value(v, view.shape, op)
            _core.copy_(view, v)
        else:
            view.fill_(value)
    else:
        _check_inplace(x, op)
        shape, dst_strides = _result_layout(pl)
        v = _strip_ones(_value_tensor(value, x, op), len(shape))
        _broadcast_value(v, shape, op)
        if v._shares_storage(x):
            v = _core.contiguous_copy(v)
        dst = x._view(pl.vshape, pl.vstrides, pl.offset)
        _run("scatter", op, dst, tuple(dst_strides), v, tuple(broadcast_strides(v, len(shape))),
             tuple(shape), _index_args(pl, len(shape)), "add" if accumulate else None)
        x._bump_version()
    return _record("setitem", (x, value), x, {"key": key, "accumulate": accumulate,
                                               "inplace": True})


def _broadcast_value(v, shape, op):
    nd = len(shape)
    ok = v.ndim <= nd and all(s in (1, t) for s, t in zip(tuple(v.shape)[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"{op}: shape mismatch: a value of shape {tuple(v.shape)} can't be "
                         f"broadcast to the indexing result of shape {tuple(shape)}")


@tensor_method(names=("__getitem__",))
def _tensor_getitem(self, key):
    """x[key]: a view for ints, slices, None and Ellipsis; a copy for advanced
    indices (integer tensors / lists, bool masks), with NumPy's rules."""
    return _getitem(self, key)


@tensor_method(names=("__setitem__",))
def _tensor_setitem(self, key, value):
    """x[key] = value: value broadcasts and is cast to x's dtype; writes through views."""
    _setitem(self, key, value)


@tensor_method
@tensor_input
def select(input, dim, index):
    """The slice at `index` along `dim`, as a view with that dim removed."""
    d = _norm(dim, input.ndim, "select")
    if input.ndim == 0:
        raise IndexError("select: cannot select from a 0-d tensor")
    return _getitem(input, (slice(None),) * d + (int_arg(index, "index", "select"),), "select")


@tensor_method
@tensor_input
def index_put_(input, indices, values, accumulate=False):
    """input[indices] = values in place (indices: a tuple of index tensors or None
    for full dims); accumulate=True adds, summing repeated indices."""
    return _setitem(input, _index_tuple(indices, "index_put_"), values, accumulate,
                    "index_put_")


@tensor_method
@tensor_input
def index_put(input, indices, values, accumulate=False):
    return _setitem(input.clone(), _index_tuple(indices, "index_put"), values, accumulate,
                    "index_put")


def _index_tuple(indices, op):
    """index_put's indices (a tuple or list of index tensors and Nones) as a key."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}: indices must be a tuple of tensors, got "
                        f"{type(indices).__name__} {indices!r:.60}")
    return tuple(slice(None) if i is None else i for i in indices)


# gather / scatter -------------------------------------------------------------------

def _dim_and_index(input, dim, index, op):
    index = _index_arg(index, op, input.device)
    _check_device(op, input, index)
    d = _norm(dim, input.ndim, op)
    if index.ndim != input.ndim and not (input.ndim <= 1 and index.ndim <= 1):
        raise ValueError(f"{op}: index has {index.ndim} dims but input has {input.ndim}; "
                         f"they must match")
    return d, index


def _as1d(t):
    return t.reshape(1) if t.ndim == 0 else t


def _gather(input, d, index, op, allow_negative=False):
    """out[p] = input[p with dim d replaced by index[p]] over index's shape."""
    x, ix = _as1d(input), _as1d(index)
    n = x.shape[d]
    for k in range(x.ndim):
        if k != d and ix.shape[k] > x.shape[k]:
            raise ValueError(f"{op}: index has size {ix.shape[k]} in dim {k} but the input "
                             f"only {x.shape[k]} (shapes {tuple(index.shape)} and "
                             f"{tuple(input.shape)})")
    idx = _prep(ix, n, op, f"dim {d}", allow_negative)
    strides = list(x.stride())
    strides[d] = 0
    out = _core.empty(tuple(ix.shape), x.dtype, x.device)
    _run("gather", op, out, x, tuple(strides),
         [(idx, tuple(contiguous_strides(ix.shape)), x.stride(d), n)])
    if index.ndim == 0:
        out = out.reshape(())
    # index_arg: the index as given (ember.onnx traces it; the backward uses index)
    return _record("gather", (input,), out, {"dim": d, "index": idx.reshape(tuple(index.shape)),
                                             "index_arg": index})


@tensor_method
@tensor_input
def gather(input, dim, index, *, sparse_grad=False):
    """out[i][j] = input[index[i][j]][j] (dim 0): pick along dim by index, same
    number of dims, index no bigger than input off dim. Negative indices are an error."""
    d, index = _dim_and_index(input, dim, index, "gather")
    return _gather(input, d, index, "gather")


@tensor_method
@tensor_input
def take_along_dim(input, indices, dim=None):
    """NumPy's take_along_axis: gather after broadcasting input and indices off dim;
    with dim None, over the flattened input. Negative indices count from the end."""
    indices = _index_arg(indices, "take_along_dim", input.device)
    _check_device("take_along_dim", input, indices)
    if dim is None:
        return _gather(input.reshape(-1), 0, indices.reshape(-1), "take_along_dim", True)
    d = _norm(dim, input.ndim, "take_along_dim")
    if indices.ndim != input.ndim:
        raise ValueError(f"take_along_dim: indices have {indices.ndim} dims but input has "
                         f"{input.ndim}")
    xs, ixs = list(input.shape), list(indices.shape)
    xs[d] = ixs[d] = 1
    b = list(broadcast_shape([xs, ixs], "take_along_dim", "input and indices", ValueError))
    xb, ib = list(b), list(b)
    xb[d], ib[d] = input.shape[d], indices.shape[d]
    return _gather(input.expand(xb), d, indices.expand(ib), "take_along_dim", True)


def _scatter_into(out, d, index, src, reduce, op):
    """out[p with dim d replaced by index[p]] (reduce)= src[p] over index's shape."""
    x, ix = _as1d(out), _as1d(index)
    s = src.expand(tuple(ix.shape)) if src.ndim == 0 else _as1d(src)
    n = x.shape[d]
    for k in range(x.ndim):
        if ix.shape[k] > s.shape[k] or (k != d and ix.shape[k] > x.shape[k]):
            raise ValueError(f"{op}: index of shape {tuple(index.shape)} is too big for the "
                             f"input of shape {tuple(out.shape)} or the source of shape "
                             f"{tuple(src.shape)} at dim {k}")
    idx = _prep(ix, n, op, f"dim {d}", allow_negative=False)
    strides = list(x.stride())
    strides[d] = 0
    if s._shares_storage(out):
        s = _core.contiguous_copy(s)
    _run("scatter", op, x, tuple(strides), s, tuple(s.stride()), tuple(ix.shape),
                  [(idx, tuple(contiguous_strides(ix.shape)), x.stride(d), n)], reduce)
    out._bump_version()
    return idx.reshape(tuple(index.shape))


def _src_or_value(out, src, value, op):
    """The source as a tensor of out's dtype (a 0-d one for a number)."""
    if src is None and value is None:
        raise TypeError(f"{op}: expected a src tensor or a value")
    if isinstance(src, _TB):
        _check_device(op, out, src)
        if src.ndim != out.ndim and not (out.ndim <= 1 and src.ndim <= 1):
            raise ValueError(f"{op}: src has {src.ndim} dims but input has {out.ndim}")
        return src if src.dtype is out.dtype else src.to(out.dtype)
    return _scalar_tensor(src if src is not None else value, out.dtype, out.device, op)


_SCATTER_REDUCE = (None, "add", "multiply")   # a tuple: `in` must not hash reduce


@tensor_method
@tensor_input
def scatter_(input, dim, index, src=None, value=None, *, reduce=None):
    """In place: input[index[i][j]][j] = src[i][j] (dim 0); src may be a number.
    reduce='add' / 'multiply' combine instead of overwrite."""
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"scatter_: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    _check_inplace(input, "scatter_")
    d, index = _dim_and_index(input, dim, index, "scatter_")
    s = _src_or_value(input, src, value, "scatter_")
    idx = _scatter_into(input, d, index, s, reduce, "scatter_")
    srcs = (input, src) if isinstance(src, _TB) else (input,)
    return _record("scatter", srcs, input, {"dim": d, "index": idx, "reduce": reduce,
                                            "value": None if isinstance(src, _TB) else
                                            (src if src is not None else value),
                                            "inplace": True})


@tensor_method
@tensor_input
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """scatter_ on a copy of input."""
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    d, index = _dim_and_index(input, dim, index, "scatter")
    out = _core.contiguous_copy(input)
    s = _src_or_value(out, src, value, "scatter")
    idx = _scatter_into(out, d, index, s, reduce, "scatter")
    srcs = (input, src) if isinstance(src, _TB) else (input,)
    return _record("scatter", srcs, out, {"dim": d, "index": idx, "reduce": reduce,
                                          "value": None if isinstance(src, _TB) else
                                          (src if src is not None else value)})


@tensor_method
@tensor_input
def scatter_add_(input, dim, index, src):
    """In place: input[index[i][j]][j] += src[i][j] (dim 0), adding every repeat."""
    _check_inplace(input, "scatter_add_")
    d, index = _dim_and_index(input, dim, index, "scatter_add_")
    s = _src_or_value(input, src, None, "scatter_add_")
    idx = _scatter_into(input, d, index, s, "add", "scatter_add_")
    return _record("scatter_add", (input, src), input, {"dim": d, "index": idx, "inplace": True})


@tensor_method
@tensor_input
def scatter_add(input, dim, index, src):
    d, index = _dim_and_index(input, dim, index, "scatter_add")
    out = _core.contiguous_copy(input)
    s = _src_or_value(out, src, None, "scatter_add")
    idx = _scatter_into(out, d, index, s, "add", "scatter_add")
    return _record("scatter_add", (input, src), out, {"dim": d, "index": idx})


_REDUCE_OPS = {"sum": "add", "prod": "multiply", "amax": "amax", "amin": "amin", "mean": "add"}


def _identity(dtype, reduce):
    """The start value of a reduction that leaves any element unchanged."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "float":
        return float("-inf") if reduce == "amax" else float("inf")
    if dtype.kind == "bool":
        return reduce == "amin"
    from ember._dtypes import iinfo
    info = iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_into(out, d, index, s, reduce, include_self, op):
    if reduce not in _REDUCE_OPS:
        raise ValueError(f"{op}: reduce must be one of {', '.join(_REDUCE_OPS)}, got {reduce!r}")
    if not include_self:
        ident = _scalar_tensor(_identity(out.dtype, reduce), out.dtype, out.device, op)
        _scatter_into(out, d, index, ident, None, op)
    idx = _scatter_into(out, d, index, s, _REDUCE_OPS[reduce], op)
    if reduce == "mean":
        from ember.ops.creation import ones_like
        count = _core.empty(tuple(out.shape), _int64, out.device).fill_(1 if include_self else 0)
        _scatter_into(count, d, index, ones_like(index, dtype=_int64), "add", op)
        count = _ew("maximum", count, 1)
        if out.dtype.kind == "float":
            mean = _ew("div", out, count)
        else:
            mean = _ew("floor_divide", out, count)
        _core.copy_(out, mean)
    return idx


@tensor_method
@tensor_input
def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    """In place: input[index[i][j]][j] = reduce(input[...], src[i][j]...) with reduce
    'sum', 'prod', 'mean', 'amax' or 'amin' over every element scattered to a
    position (and the input's own value unless include_self=False)."""
    _check_inplace(input, "scatter_reduce_")
    d, index = _dim_and_index(input, dim, index, "scatter_reduce_")
    s = _src_or_value(input, src, None, "scatter_reduce_")
    idx = _scatter_reduce_into(input, d, index, s, reduce, include_self, "scatter_reduce_")
    return _record("scatter_reduce", (input, src), input,
                   {"dim": d, "index": idx, "reduce": reduce, "include_self": include_self,
                    "inplace": True})


@tensor_method
@tensor_input
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    d, index = _dim_and_index(input, dim, index, "scatter_reduce")
    out = _core.contiguous_copy(input)
    s = _src_or_value(out, src, None, "scatter_reduce")
    idx = _scatter_reduce_into(out, d, index, s, reduce, include_self, "scatter_reduce")
    return _record("scatter_reduce", (input, src), out,
                   {"dim": d, "index": idx, "reduce": reduce, "include_self": include_self})


# index_* along one dim ---------------------------------------------------------------

def _dim_index1d(input, dim, index, op):
    """(dim, validated 1-d int64 index) for the index_* family (no negatives)."""
    index = _index_arg(index, op, input.device)
    _check_device(op, input, index)
    if index.ndim > 1:
        raise ValueError(f"{op}: index must be 0-d or 1-d, got shape {tuple(index.shape)}")
    d = _norm(dim, input.ndim, op)
    n = input.shape[d] if input.ndim else 1
    return d, _prep(index.reshape(-1), n, op, f"dim {d}", allow_negative=False)


def _along(x, d, idx):
    """Layout of x with dim d driven by the index: (strides with d -> 0, index arg)."""
    strides = list(x.stride())
    st = [0] * x.ndim
    st[d] = 1
    strides[d] = 0
    return tuple(strides), [(idx, tuple(st), x.stride(d), x.shape[d])]


@tensor_method
@tensor_input
def index_select(input, dim, index):
    """The entries of input at positions index along dim (a copy)."""
    d, idx = _dim_index1d(input, dim, index, "index_select")
    x = _as1d(input)
    shape = list(x.shape)
    shape[d] = idx.shape[0]
    out = _core.empty(shape, x.dtype, x.device)
    strides, args = _along(x, d, idx)
    _run("gather", "index_select", out, x, strides, args)
    if input.ndim == 0 and out.numel() == 1:
        out = out.reshape(())
    return _record("index_select", (input,), out, {"dim": d, "index": idx, "index_arg": index})


def _index_write(input, d, idx, source, reduce, op):
    x = _as1d(input)
    s = _as1d(source)
    expect = list(x.shape)
    expect[d] = idx.shape[0]
    if list(s.shape) != expect:
        raise ValueError(f"{op}: source has shape {tuple(source.shape)} but {tuple(expect)} "
                         f"was expected (the input's shape with dim {d} the index's length)")
    if s._shares_storage(x):
        s = _core.contiguous_copy(s)
    strides, args = _along(x, d, idx)
    _run("scatter", op, x, strides, s, tuple(s.stride()), tuple(expect), args, reduce)
    input._bump_version()
    return input


def _source(input, source, op):
    if not isinstance(source, _TB):
        raise TypeError(f"{op}: source must be a tensor, got {type(source).__name__}")
    _check_device(op, input, source)
    return source if source.dtype is input.dtype else source.to(input.dtype)


@tensor_method
@tensor_input
def index_add_(input, dim, index, source, *, alpha=1):
    """In place: input[..., index[i], ...] += alpha * source[..., i, ...] along dim;
    repeated indices add up."""
    _check_inplace(input, "index_add_")
    d, idx = _dim_index1d(input, dim, index, "index_add_")
    s = _source(input, source if alpha == 1 else _ew("mul", source, alpha), "index_add_")
    _index_write(input, d, idx, s, "add", "index_add_")
    return _record("index_add", (input, source), input,
                   {"dim": d, "index": idx, "alpha": alpha, "inplace": True})


@tensor_method
@tensor_input
def index_add(input, dim, index, source, *, alpha=1):
    d, idx = _dim_index1d(input, dim, index, "index_add")
    out = _core.contiguous_copy(input)
    s = _source(out, source if alpha == 1 else _ew("mul", source, alpha), "index_add")
    _index_write(out, d, idx, s, "add", "index_add")
    return _record("index_add", (input, source), out, {"dim": d, "index": idx, "alpha": alpha})


@tensor_method
@tensor_input
def index_copy_(input, dim, index, source):
    """In place: input[..., index[i], ...] = source[..., i, ...] along dim."""
    _check_inplace(input, "index_copy_")
    d, idx = _dim_index1d(input, dim, index, "index_copy_")
    _index_write(input, d, idx, _source(input, source, "index_copy_"), None, "index_copy_")
    return _record("index_copy", (input, source), input, {"dim": d, "index": idx,
                                                          "inplace": True})


@tensor_method
@tensor_input
def index_copy(input, dim, index, source):
    d, idx = _dim_index1d(input, dim, index, "index_copy")
    out = _core.contiguous_copy(input)
    _index_write(out, d, idx, _source(out, source, "index_copy"), None, "index_copy")
    return _record("index_copy", (input, source), out, {"dim": d, "index": idx})


def _index_fill_into(x, d, idx, value, op):
    v = _scalar_tensor(value, x.dtype, x.device, op)
    shape = list(_as1d(x).shape)
    shape[d] = idx.shape[0]
    _index_write(x, d, idx, v.expand(shape), None, op)


@tensor_method
@tensor_input
def index_fill_(input, dim, index, value):
    """In place: input[..., index[i], ...] = value along dim."""
    _check_inplace(input, "index_fill_")
    d, idx = _dim_index1d(input, dim, index, "index_fill_")
    _index_fill_into(input, d, idx, value, "index_fill_")
    ins = (input, value) if isinstance(value, _TB) else (input,)
    return _record("index_fill", ins, input, {"dim": d, "index": idx, "inplace": True})


@tensor_method
@tensor_input
def index_fill(input, dim, index, value):
    d, idx = _dim_index1d(input, dim, index, "index_fill")
    out = _core.contiguous_copy(input)
    _index_fill_into(out, d, idx, value, "index_fill")
    ins = (input, value) if isinstance(value, _TB) else (input,)
    return _record("index_fill", ins, out, {"dim": d, "index": idx})


@tensor_method
@tensor_input
def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    """In place: reduce ('prod', 'mean', 'amax', 'amin') source's slices into input
    along dim at index (like scatter_reduce_ with a 1-d index)."""
    _check_inplace(input, "index_reduce_")
    d, idx = _dim_index1d(input, dim, index, "index_reduce_")
    s = _source(input, source, "index_reduce_")
    shape = [1] * max(input.ndim, 1)
    shape[d] = idx.shape[0]
    full = list(_as1d(s).shape)
    big = idx.reshape(shape).expand(full)
    _scatter_reduce_into(input, d, big, s, reduce, include_self, "index_reduce_")
    return _record("scatter_reduce", (input, source), input,
                   {"dim": d, "index": big, "reduce": reduce, "include_self": include_self,
                    "inplace": True})


@tensor_method
@tensor_input
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    return index_reduce_(_core.contiguous_copy(input) if not input.requires_grad else
                         input.clone(), dim, index, source, reduce, include_self=include_self)


# masks ---------------------------------------------------------------------------------

def _mask_arg(mask, op):
    if not isinstance(mask, _TB):
        from ember.ops.creation import as_tensor
        mask = as_tensor(mask)
    if mask.dtype is not _bool:
        raise TypeError(f"{op}: mask must be a bool tensor, got {mask.dtype!r}")
    return mask


def _fill_value(input, value, op):
    if isinstance(value, _TB):
        if value.ndim != 0:
            raise ValueError(f"{op}: value must be a number or a 0-d tensor, got a tensor "
                             f"of shape {tuple(value.shape)}")
        return value if value.dtype is input.dtype else value.to(input.dtype)
    return _scalar_tensor(value, input.dtype, input.device, op)


@tensor_method
@tensor_input
def masked_fill(input, mask, value):
    """value where mask is True, input elsewhere (mask and input broadcast)."""
    mask = _mask_arg(mask, "masked_fill")
    return _ew("where", mask, _fill_value(input, value, "masked_fill"), input)


@tensor_method
@tensor_input
def masked_fill_(input, mask, value):
    """In place: input[mask] = value, mask broadcast to input's shape."""
    mask = _mask_arg(mask, "masked_fill_")
    _broadcast_to_input(mask, input, "masked_fill_")
    _check_inplace(input, "masked_fill_")
    return _ew("where", mask, _fill_value(input, value, "masked_fill_"), input, out=input)


def _broadcast_to_input(mask, input, op):
    shape = broadcast_shape([mask.shape, input.shape], op, "mask and input", ValueError)
    if tuple(shape) != tuple(input.shape):
        raise ValueError(f"{op}: mask of shape {tuple(mask.shape)} can't be broadcast to the "
                         f"input's shape {tuple(input.shape)}")


@tensor_method
@tensor_input
def masked_select(input, mask):
    """The elements of input where mask is True, as a 1-d tensor (both broadcast)."""
    mask = _mask_arg(mask, "masked_select")
    shape = broadcast_shape([input.shape, mask.shape], "masked_select", "input and mask",
                            ValueError)
    x = input.expand(shape) if tuple(input.shape) != shape else input
    m = mask.expand(shape) if tuple(mask.shape) != shape else mask
    if x.ndim == 0:
        x, m = x.reshape(1), m.reshape(1)
    return _getitem(x, m, "masked_select")


@tensor_method
@tensor_input
def masked_scatter_(input, mask, source):
    """In place: the True positions of mask (in row-major order) take consecutive
    elements of source."""
    mask = _mask_arg(mask, "masked_scatter_")
    _broadcast_to_input(mask, input, "masked_scatter_")
    m = mask.expand(input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    count = int(_core.reduce("sum", m, None, False).item())
    if not isinstance(source, _TB):
        raise TypeError(f"masked_scatter_: source must be a tensor, got {type(source).__name__}")
    if source.numel() < count:
        raise ValueError(f"masked_scatter_: the mask selects {count} elements but source has "
                         f"only {source.numel()}")
    if input.ndim == 0:
        if count:
            _setitem(input, (), source.reshape(-1)[0], op="masked_scatter_")
        return input
    return _setitem(input, m, source.reshape(-1)[:count], op="masked_scatter_")


@tensor_method
@tensor_input
def masked_scatter(input, mask, source):
    shape = broadcast_shape([input.shape, _mask_arg(mask, "masked_scatter").shape],
                       "masked_scatter", "input and mask", ValueError)
    return masked_scatter_(input.expand(shape).clone(), mask, source)


# take / put ----------------------------------------------------------------------------

@tensor_method
@tensor_input
def take(input, index, *, axis=None):
    """Elements of the flattened input at index (result has index's shape); negative
    indices count from the end. With axis (the Array API), index_select along it."""
    index = _index_arg(index, "take", input.device)
    _check_device("take", input, index)
    if axis is not None:
        if index.ndim != 1:
            raise ValueError(f"take: with axis, indices must be 1-d, got shape "
                             f"{tuple(index.shape)}")
        d = _norm(axis, input.ndim, "take")
        n = input.shape[d] if input.ndim else 1
        idx = _prep(index, n, "take", f"dim {d}")
        return index_select(input, d, idx)
    flat = input.reshape(-1)
    if index.ndim == 0:
        return _getitem(flat, (index.reshape(1),), "take").reshape(())
    return _getitem(flat, (index,), "take")


@tensor_method
@tensor_input
def put_(input, index, source, accumulate=False):
    """In place: the flattened input's elements at index take source's (in order);
    accumulate=True adds instead, summing repeated indices."""
    index = _index_arg(index, "put_", input.device)
    _check_device("put_", input, index, source)
    if not isinstance(source, _TB):
        raise TypeError(f"put_: source must be a tensor, got {type(source).__name__}")
    if source.numel() != index.numel():
        raise ValueError(f"put_: index has {index.numel()} elements but source has "
                         f"{source.numel()}")
    _check_inplace(input, "put_")
    n = input.numel()
    idx = _prep(index.reshape(-1), n, "put_", "the flattened input")
    if input.ndim == 0:
        _setitem(input.reshape(1), (idx,), source.reshape(-1), accumulate, "put_")
        return input
    # unravel the flat positions into one index per dim (works for any layout)
    coords, rest = [], idx
    for size in reversed(tuple(input.shape)):
        coords.append(_ew("remainder", rest, size))
        rest = _ew("floor_divide", rest, size)
    return _setitem(input, tuple(reversed(coords)), source.reshape(-1), accumulate, "put_")


@tensor_method
@tensor_input
def put(input, index, source, accumulate=False):
    """Out of place put_: a copy of input whose flattened elements at index take
    source's (accumulate=True adds them, repeated indices summed), as torch.put."""
    return put_(input.clone(), index, source, accumulate)


# nonzero --------------------------------------------------------------------------------

def _as_bool_contiguous(input):
    if input.dtype is _bool:
        return input if input.is_contiguous() else _core.contiguous_copy(input)
    return _ew("ne", input, 0)


@tensor_method
@tensor_input
def nonzero(input, *, as_tuple=False):
    """Coordinates of the nonzero elements in row-major order: a (count, ndim) int64
    tensor, or with as_tuple a tuple of ndim 1-d tensors (one per dim)."""
    m = _as_bool_contiguous(input)
    if as_tuple and m.ndim == 0:
        m = m.reshape(1)
    coords = _run("nonzero", "nonzero", m)
    if not as_tuple:
        return coords
    return tuple(_core.contiguous_copy(coords[:, j]) for j in range(m.ndim))


@tensor_method
@tensor_input
def argwhere(input):
    """nonzero(input): a (count, ndim) tensor of coordinates."""
    return nonzero(input)


@tensor_input
def flatnonzero(input):
    """Positions of the nonzero elements of the flattened input."""
    return nonzero(input.reshape(-1))[:, 0]


# the scatter-into-a-copy ops and unravel_index (issue 18): a clone and an indexed
# write (recorded as setitem, so differentiable in both operands) -----------------------

@tensor_method
@tensor_input
def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src."""
    d = _norm(dim, input.ndim, "select_scatter")
    key = (slice(None),) * d + (int_arg(index, "index", "select_scatter"),)
    return _scatter_key(input, src, key, "select_scatter")


@tensor_method
@tensor_input
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[..., start:end:step, ...] (along dim) replaced by src."""
    d = _norm(dim, input.ndim, "slice_scatter")
    for name, v in (("start", start), ("end", end)):
        if v is not None:
            int_arg(v, name, "slice_scatter")
    step = int_arg(step, "step", "slice_scatter")
    if step <= 0:
        raise ValueError(f"slice_scatter: step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_key(input, src, key, "slice_scatter")


@tensor_method
@tensor_input
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with its diagonal(offset, dim1, dim2) replaced by src."""
    from ember.ops.creation import arange
    offset = int_arg(offset, "offset", "diagonal_scatter")
    diag = input.diagonal(offset, dim1, dim2)
    n = input.ndim
    a, b = _norm(dim1, n, "diagonal_scatter"), _norm(dim2, n, "diagonal_scatter")
    m = diag.shape[-1]
    i = arange(m, dtype=_core._dtype_by_name("int64"), device=input.device)
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    # the diagonal's dim is last in diagonal(); put a and b last, index them, move back
    moved = input.clone().movedim((a, b), (n - 2, n - 1))
    if not isinstance(src, _TB):
        raise TypeError(f"diagonal_scatter: src must be a Tensor, got {type(src).__name__}")
    if tuple(src.shape) != tuple(diag.shape):
        raise ValueError(f"diagonal_scatter: src has shape {tuple(src.shape)}, the diagonal "
                         f"has shape {tuple(diag.shape)}")
    moved[..., rows, cols] = src
    return moved.movedim((n - 2, n - 1), (a, b))


def _scatter_key(input, src, key, op):
    if not isinstance(src, _TB):
        raise TypeError(f"{op}: src must be a Tensor, got {type(src).__name__}")
    out = input.clone()
    shape = tuple(out[key].shape)
    if tuple(src.shape) != shape:
        raise ValueError(f"{op}: src has shape {tuple(src.shape)}, the slice it fills has "
                         f"shape {shape}")
    out[key] = src
    return out


def unravel_index(indices, shape):
    """The coordinates of flat indices in a tensor of `shape` (row-major): a tuple of
    int64 tensors of indices' shape, as torch.unravel_index."""
    from ember._args import sizes_arg
    from ember.ops.creation import as_tensor
    dims = tuple(sizes_arg((shape,), "unravel_index", "shape"))
    if any(s < 0 for s in dims):
        raise ValueError(f"unravel_index: shape {dims} has a negative size")
    if not isinstance(indices, _TB):
        if isinstance(indices, bool) or not isinstance(indices, numbers.Integral):
            raise TypeError(f"unravel_index: indices must be an integer Tensor or int, got "
                            f"{type(indices).__name__}")
        indices = as_tensor(indices)
    if indices.dtype.kind != "int":
        raise TypeError(f"unravel_index: indices must be integers, got {indices.dtype!r}")
    total = 1
    for s in dims:
        total *= s
    idx = indices.to(_core._dtype_by_name("int64"))
    if idx.numel() and (bool(_core.reduce("any", _ew("lt", idx, -total), None)) or
                        bool(_core.reduce("any", _ew("ge", idx, total), None))):
        raise IndexError(f"unravel_index: an index is out of bounds for shape {dims} "
                         f"({total} elements)")
    idx = _ew("remainder", idx, total) if total else idx
    out = []
    for s in reversed(dims):
        out.append(_ew("remainder", idx, s) if s else idx)
        idx = _ew("floor_divide", idx, s) if s else idx
    return tuple(reversed(out))


__all__ += ["index_put_", "select_scatter", "slice_scatter", "diagonal_scatter",
            "unravel_index"]


@tensor_method
@tensor_input
def fill_diagonal_(input, fill_value, wrap=False):
    """Fill the main diagonal (input[i, i, ..., i]) with fill_value in place, as
    torch.Tensor.fill_diagonal_: a 2-d input may be tall; with wrap, a tall matrix's
    diagonal restarts every ncols + 1 rows. More than 2 dims need equal sizes."""
    if input.ndim < 2:
        raise ValueError(f"fill_diagonal_: needs at least 2 dims, got shape "
                         f"{tuple(input.shape)}")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise ValueError(f"fill_diagonal_: all dims must have one size when there are more "
                         f"than 2, got shape {tuple(input.shape)}")
    if not isinstance(fill_value, (numbers.Real, _TB)):
        raise TypeError(f"fill_diagonal_: fill_value must be a number, got "
                        f"{type(fill_value).__name__}")
    if input.ndim == 2:
        rows, cols = input.shape
        period = cols + 1 if wrap else rows
        for start in range(0, rows, max(period, 1)):
            input.narrow(0, start, min(cols, rows - start)).diagonal().fill_(fill_value)
        return input
    n = input.shape[0]
    _, _, _, strides, off = input._layout()
    input.as_strided((n,), (sum(strides),), off).fill_(fill_value)
    return input




@tensor_method
def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) as a (size, input.ndim) int64 tensor of a fixed number of rows
    (torch.nonzero_static): the first `size` coordinates in row-major order, rows past
    the count filled with fill_value."""
    if not isinstance(input, _TB):
        raise TypeError(f"nonzero_static: input must be a tensor, got {type(input).__name__}")
    size = int_arg(size, "size", "nonzero_static")
    if size < 0:
        raise ValueError(f"nonzero_static: size must be non-negative, got {size}")
    fill_value = int_arg(fill_value, "fill_value", "nonzero_static")
    coords = nonzero(input)
    ndim = coords.shape[1]
    count = coords.shape[0]
    if count >= size:
        return _core.contiguous_copy(coords[:size])
    out = _core.empty((size, ndim), coords.dtype, coords.device).fill_(fill_value)
    if count:
        out[:count] = coords
    return out


__all__ += ["put", "nonzero_static"]
