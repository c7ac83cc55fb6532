"""Shape functions: joining (cat, stack, ...), splitting (split, chunk, unbind, ...),
reordering (flip, roll, rot90), repeating (repeat, tile, repeat_interleave), the
triangles (tril, triu), meshgrid and diff (cumsum and cumprod: ember.ops.scan).

Splits return views; joins, flips, rolls and repeats return new tensors (as in
PyTorch: `x.flip(0)` is a copy; `x[::-1]` is the view). Most are composed from
views and cat, so autograd differentiates them through their parts; cat and flip
record themselves:
- "cat": attrs dim, sizes (the inputs' sizes along dim; backward splits);
- "flip": attrs dims.

Where PyTorch and the Array API standard spell a function differently, the
namespace follows the standard and the method follows PyTorch: ``ember.repeat(x,
repeats, axis=)`` repeats elements (np.repeat), while ``x.repeat(*sizes)`` tiles
(torch.Tensor.repeat).
"""
from __future__ import annotations

import numbers

from ember._args import int_arg, sizes_arg, tensor_input, tensors_arg
from ember._C import core as _core
from ember._registry import tensor_method

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "split", "chunk", "tensor_split", "array_split", "hsplit",
           "vsplit", "dsplit", "unbind", "unstack", "flip", "fliplr", "flipud", "rot90",
           "roll", "repeat", "tile", "repeat_interleave", "tril", "triu", "tril_indices",
           "triu_indices", "meshgrid", "diff"]

_ew = _core.elementwise
_record = _core.record
_norm = _core.normalize_dim
_TB = _core.TensorBase
_int64 = _core._dtype_by_name("int64")
_UNSET = object()


_tensors = tensors_arg


# joining ---------------------------------------------------------------------------

def cat(tensors, dim=0, *, axis=_UNSET, out=None):
    """Join tensors along an existing dim. dtypes promote (Array API rules); all
    shapes must match except along dim; 1-d empty tensors are skipped (PyTorch's
    legacy rule). axis=None (the Array API) joins the flattened tensors."""
    if axis is not _UNSET:
        if axis is None:
            tensors = [t.reshape(-1) for t in _tensors(tensors, "cat")]
            dim = 0
        else:
            dim = axis
    tensors = _tensors(tensors, "cat")
    dtype = _core.weak_result_type(*tensors)
    used = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    if not used:
        _norm(dim, 1, "cat")
        result = _core.empty((0,), dtype, tensors[0].device)
        return _out(result, out, "cat")
    ref = used[0]
    if ref.ndim == 0:
        raise ValueError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    d = _norm(dim, ref.ndim, "cat")
    shape = list(ref.shape)
    total = 0
    for i, t in enumerate(tensors):
        if t.ndim == 1 and t.shape[0] == 0:
            continue
        s = list(t.shape)
        if len(s) != len(shape) or any(a != b for k, (a, b) in enumerate(zip(s, shape))
                                       if k != d):
            raise ValueError(f"cat: tensors must have the same shape except in dim {d}, but "
                             f"item 0 has shape {tuple(ref.shape)} and item {i} has shape "
                             f"{tuple(s)}")
        total += s[d]
    shape[d] = total
    result = _core.empty(shape, dtype, ref.device)
    strides = result.stride()
    offset = 0
    for t in used:
        n = t.shape[d]
        part_shape = list(shape)
        part_shape[d] = n
        if n:
            _core.copy_into(result._view(part_shape, strides, offset * strides[d]), t)
        offset += n
    _record("cat", tuple(used), result, {"dim": d, "sizes": tuple(t.shape[d] for t in used)})
    return _out(result, out, "cat")


def _out(result, out, op):
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"{op}: the result has shape {tuple(result.shape)} but out has shape "
                         f"{tuple(out.shape)}")
    return out.copy_(result)


concat = concatenate = cat


def stack(tensors, dim=0, *, axis=None, out=None):
    """Join equally shaped tensors along a new dim."""
    if axis is not None:
        dim = axis
    tensors = _tensors(tensors, "stack")
    shape = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != shape:
            raise ValueError(f"stack: expects tensors of equal shape, but item 0 has shape "
                             f"{shape} and item {i} has shape {tuple(t.shape)}")
    d = _norm(dim, len(shape) + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d, out=out)


def hstack(tensors, *, out=None):
    """Join along dim 1 (dim 0 for 1-d tensors), as NumPy."""
    from ember.ops.views import atleast_1d
    ts = [atleast_1d(t) for t in _tensors(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Join along dim 0, 1-d tensors becoming rows."""
    from ember.ops.views import atleast_2d
    return cat([atleast_2d(t) for t in _tensors(tensors, "vstack")], 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Join along dim 2 (depth), after making every tensor at least 3-d."""
    from ember.ops.views import atleast_3d
    return cat([atleast_3d(t) for t in _tensors(tensors, "dstack")], 2, out=out)


def column_stack(tensors, *, out=None):
    """Join as columns: 0-d and 1-d tensors become columns, 2-d ones are kept."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _tensors(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# splitting -------------------------------------------------------------------------

_MAX_EMPTY_PARTS = 1 << 16


def _check_parts(k, n, op):
    """Refuse to build absurd numbers of (empty) views: at most the dim's size plus
    65536 parts, so chunk(x, 2**62) is an error, not an endless loop."""
    if k > n + _MAX_EMPTY_PARTS:
        raise ValueError(f"{op}: {k} parts requested for a dim of size {n}; at most "
                         f"{n + _MAX_EMPTY_PARTS} are allowed")


def _split_at(input, d, bounds):
    """Views input[..., a:b, ...] along d for consecutive (a, b) in bounds."""
    return tuple(input.narrow(d, a, b - a) for a, b in zip(bounds[:-1], bounds[1:]))


@tensor_input
def split(tensor, split_size_or_sections, dim=0):
    """split's general entry: the calls _core.split leaves (_C/core/views.pxi)."""
    d = _norm(dim, tensor.ndim, "split")
    if tensor.ndim == 0:
        raise ValueError("split: cannot split a 0-d tensor")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, numbers.Integral):
        s = int(split_size_or_sections)
        if s < 0 or (s == 0 and n):
            raise ValueError(f"split: split_size must be positive, got {s}")
        if n == 0:
            return (tensor.narrow(d, 0, 0),)
        bounds = list(range(0, n, s)) + [n]
    else:
        sizes = sizes_arg((split_size_or_sections,), "split", "split_size_or_sections",
                          limit=2 ** 24)
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            raise ValueError(f"split: sizes {tuple(sizes)} must be non-negative and add up to "
                             f"{n}, the size of dim {d}")
        bounds = [0]
        for s in sizes:
            bounds.append(bounds[-1] + s)
    return _split_at(tensor, d, bounds)


_split_general = split
_core._set_view_entry("split", split)
split = tensor_method(_core.split)     # the common call in C


@tensor_method
@tensor_input
def chunk(input, chunks, dim=0):
    """Split into `chunks` views of ceil(n / chunks) elements (fewer views when the
    last ones would be empty, as PyTorch)."""
    chunks = int_arg(chunks, "chunks", "chunk")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    d = _norm(dim, input.ndim, "chunk")
    if input.ndim == 0:
        raise ValueError("chunk: cannot chunk a 0-d tensor")
    n = input.shape[d]
    _check_parts(chunks, n, "chunk")
    if n == 0:
        return tuple(input.narrow(d, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), d)


@tensor_method
@tensor_input
def tensor_split(input, indices_or_sections, dim=0):
    """NumPy's array_split: an int k gives k views whose sizes differ by at most one
    (the first ones larger); a sequence gives the split points (clamped to the dim)."""
    d = _norm(dim, input.ndim, "tensor_split")
    if input.ndim == 0:
        raise ValueError("tensor_split: cannot split a 0-d tensor")
    n = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, _TB):
        if ios.dtype.kind != "int" or ios.ndim > 1:
            raise TypeError("tensor_split: a tensor argument must be a 0-d or 1-d integer "
                            "tensor")
        if ios.ndim == 0:
            ios = ios.item()      # a 1-d tensor is counted and converted by sizes_arg
    if isinstance(ios, numbers.Integral):
        k = int_arg(ios, "sections", "tensor_split")
        if k <= 0:
            raise ValueError(f"tensor_split: number of sections must be positive, got {k}")
        _check_parts(k, n, "tensor_split")
        q, r = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        points = [0] + sizes_arg((ios,), "tensor_split", "indices", limit=2 ** 24) + [n]
        parts = []
        for a, b in zip(points[:-1], points[1:]):   # NumPy slicing: clamped, maybe empty
            start, stop, _ = slice(a, b).indices(n)
            parts.append(input.narrow(d, start, max(stop - start, 0)))
        return tuple(parts)
    return _split_at(input, d, bounds)


array_split = tensor_split


def _even_split(input, sections, d, op):
    if isinstance(sections, numbers.Integral) and sections <= 0:
        raise ValueError(f"{op}: number of sections must be positive, got {sections}")
    if isinstance(sections, numbers.Integral) and input.shape[d] % sections:
        raise ValueError(f"{op}: dim {d} of size {input.shape[d]} does not split evenly into "
                         f"{sections} sections")
    return tensor_split(input, sections, d)


@tensor_method
@tensor_input
def hsplit(input, sections):
    """Split along dim 1 (dim 0 for 1-d tensors); an int must divide the dim."""
    if input.ndim == 0:
        raise ValueError("hsplit: needs a tensor of at least 1 dim")
    return _even_split(input, sections, 1 if input.ndim > 1 else 0, "hsplit")


@tensor_method
@tensor_input
def vsplit(input, sections):
    if input.ndim < 2:
        raise ValueError(f"vsplit: needs a tensor of at least 2 dims, got {input.ndim}")
    return _even_split(input, sections, 0, "vsplit")


@tensor_method
@tensor_input
def dsplit(input, sections):
    if input.ndim < 3:
        raise ValueError(f"dsplit: needs a tensor of at least 3 dims, got {input.ndim}")
    return _even_split(input, sections, 2, "dsplit")


@tensor_method
@tensor_input
def unbind(input, dim=0):
    """The slices along dim as a tuple of views (the dim removed)."""
    from ember.ops.index import select
    if input.ndim == 0:
        raise ValueError("unbind: cannot unbind a 0-d tensor")
    d = _norm(dim, input.ndim, "unbind")
    return tuple(select(input, d, i) for i in range(input.shape[d]))


@tensor_input
def unstack(x, /, *, axis=0):
    """The Array API's unstack: unbind along axis."""
    return unbind(x, axis)


# reordering ---------------------------------------------------------------------------

def _dims_arg(dims, ndim, op):
    if dims is None:
        return tuple(range(ndim))
    dims = sizes_arg((dims,), op, "dims")
    ds = tuple(_norm(d, ndim, op) for d in dims)
    if len(set(ds)) != len(ds):
        raise ValueError(f"{op}: dim appears more than once in {tuple(dims)}")
    return ds


@tensor_method
@tensor_input
def flip(input, *args, dims=_UNSET, axis=_UNSET):
    """A copy with the order of elements reversed along dims (all dims when None, as
    the Array API): flip(x, (0, 1)), flip(x, dims=(0, 1)) or x.flip(0, 1). For a view,
    index with a negative step: x[::-1]."""
    named = [d for d in (dims, axis) if d is not _UNSET]
    if len(named) + (len(args) > 0) > 1:
        raise TypeError("flip: give the dims once: positionally, as dims= or as axis=")
    dims = named[0] if named else (args[0] if len(args) == 1 else (args or None))
    ds = _dims_arg(dims, input.ndim, "flip") if input.ndim else ()
    _, _, shape, strides, offset = input._layout()
    strides = list(strides)
    for d in ds:
        if shape[d] > 1:
            offset += (shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    out = _core.contiguous_copy(input._view(shape, strides, offset))
    return _record("flip", (input,), out, {"dims": ds})


@tensor_method
@tensor_input
def fliplr(input):
    """Reverse dim 1 (left/right)."""
    if input.ndim < 2:
        raise ValueError(f"fliplr: needs a tensor of at least 2 dims, got {input.ndim}")
    return flip(input, (1,))


@tensor_method
@tensor_input
def flipud(input):
    """Reverse dim 0 (up/down)."""
    if input.ndim < 1:
        raise ValueError("fliplr: needs a tensor of at least 1 dim")
    return flip(input, (0,))


@tensor_method
@tensor_input
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of dims, from dims[0] toward dims[1]."""
    k = int_arg(k, "k", "rot90") % 4
    dims = sizes_arg((dims,), "rot90", "dims")
    if len(dims) != 2:
        raise ValueError(f"rot90: dims must name two dims, got {tuple(dims)}")
    if input.ndim < 2:
        raise ValueError(f"rot90: needs a tensor of at least 2 dims, got {input.ndim}")
    a, b = (_norm(d, input.ndim, "rot90") for d in dims)
    if a == b:
        raise ValueError(f"rot90: dims must differ, got {tuple(dims)}")
    if k == 1:
        return flip(input, (b,)).transpose(a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return flip(input, (a,)).transpose(a, b)
    return input.clone()


@tensor_method
@tensor_input
def roll(input, shifts=None, dims=None, *, shift=None, axis=None):
    """Shift elements along dims, wrapping around (over the flattened tensor when dims
    is None). Array API spelling: roll(x, shift=, axis=)."""
    shifts = shift if shifts is None else shifts
    dims = axis if dims is None else dims
    if shifts is None:
        raise TypeError("roll: missing the shifts argument")
    if dims is None:
        s = sizes_arg((shifts,), "roll", "shifts")
        if len(s) != 1:
            raise ValueError(f"roll: with dims None, shifts must be one int, got {shifts!r}")
        return roll(input.reshape(-1), s[0], 0).reshape(input.shape)
    shifts = sizes_arg((shifts,), "roll", "shifts")
    dims = sizes_arg((dims,), "roll", "dims")
    if len(shifts) != len(dims):
        raise ValueError(f"roll: shifts {tuple(shifts)} and dims {tuple(dims)} must have the "
                         f"same length")
    x = input
    for s, dim in zip(shifts, dims):
        d = _norm(dim, x.ndim, "roll")
        n = x.shape[d] if x.ndim else 1
        if x.ndim == 0 or n == 0 or s % n == 0:
            continue
        s %= n
        x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x.clone() if x is input else x


# repeating ----------------------------------------------------------------------------

def _tile_repeat(input, reps, op):
    if any(r < 0 for r in reps):
        raise ValueError(f"{op}: repeats must be non-negative, got {tuple(reps)}")
    if len(reps) < input.ndim:
        raise ValueError(f"{op}: {len(reps)} repeats given for a tensor of {input.ndim} dims; "
                         f"give at least one per dim")
    shape = [1] * (len(reps) - input.ndim) + list(input.shape)
    # view as (1, s0, 1, s1, ...), expand to (r0, s0, r1, s1, ...), copy as (r0*s0, ...)
    x = input.reshape([v for s in shape for v in (1, s)])
    x = x.expand([v for r, s in zip(reps, shape) for v in (r, s)])
    return x.reshape([r * s for r, s in zip(reps, shape)])


@tensor_input
def _tensor_repeat(input, *sizes):
    """PyTorch's Tensor.repeat: tile the tensor sizes[i] times along dim i (extra
    leading sizes add dims). Always a copy."""
    return _tile_repeat(input, sizes_arg(sizes, "repeat", "sizes"), "repeat")


tensor_method(_tensor_repeat, names=("repeat",))


@tensor_method
@tensor_input
def tile(input, dims):
    """Repeat the whole tensor dims[i] times along dim i; fewer dims than the tensor
    has are padded with leading 1s (NumPy's tile)."""
    reps = sizes_arg((dims,), "tile", "dims")
    reps = [1] * (input.ndim - len(reps)) + reps
    return _tile_repeat(input, reps, "tile")


def _repeat_index(repeats, op):
    """0 repeated repeats[0] times, 1 repeats[1] times, ... (int64)."""
    from ember.ops.creation import arange
    from ember.ops.sort import searchsorted
    r = repeats.to(_int64)
    if r.ndim != 1:
        raise ValueError(f"{op}: repeats must be 0-d or 1-d, got shape {tuple(repeats.shape)}")
    if r.numel() and bool(_core.reduce("any", _ew("lt", r, 0), None, False)):
        raise ValueError(f"{op}: repeats must be non-negative")
    from ember.ops.scan import cumsum  # scan imports this module
    ends = cumsum(r, 0)
    total = int(ends[-1].item()) if r.numel() else 0
    return searchsorted(ends, arange(total, device=r.device), right=True)


@tensor_method
@tensor_input
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (slice along dim) repeats times, or repeats[i] times for
    element i. Over the flattened input when dim is None. repeat_interleave(r) alone
    gives 0 r[0] times, 1 r[1] times, ..."""
    if repeats is None:
        if not isinstance(input, _TB) or input.dtype.kind != "int":
            raise TypeError("repeat_interleave: the one-argument form takes an integer "
                            "tensor of repeats")
        return _repeat_index(input.reshape(-1) if input.ndim == 0 else input,
                             "repeat_interleave")
    x = input
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _norm(dim, input.ndim, "repeat_interleave")
        if x.ndim == 0:
            x = x.reshape(1)
    n = x.shape[d]
    if isinstance(repeats, _TB) and repeats.numel() == 1 and (repeats.ndim == 0 or n != 1):
        repeats = int(repeats.item())
    if isinstance(repeats, numbers.Integral):
        r = int(repeats)
        if r < 0:
            raise ValueError(f"repeat_interleave: repeats must be non-negative, got {r}")
        shape = list(x.shape)
        big = shape[:d + 1] + [r] + shape[d + 1:]
        shape[d] = n * r
        return x.unsqueeze(d + 1).expand(big).reshape(shape)
    if not isinstance(repeats, _TB):
        from ember.ops.creation import tensor
        repeats = tensor(sizes_arg((repeats,), "repeat_interleave", "repeats", limit=n),
                         dtype=_int64)
    if repeats.dtype.kind != "int":
        raise TypeError(f"repeat_interleave: repeats must be integers, got {repeats.dtype!r}")
    if repeats.ndim != 1 or repeats.shape[0] != n:
        raise ValueError(f"repeat_interleave: repeats has shape {tuple(repeats.shape)} but dim "
                         f"{d} has size {n}")
    return x.index_select(d, _repeat_index(repeats, "repeat_interleave"))


@tensor_input
def repeat(x, repeats, /, *, axis=None):
    """The Array API's repeat (NumPy's np.repeat): each element repeated; see
    repeat_interleave. (Tensor.repeat is PyTorch's tiling.)"""
    return repeat_interleave(x, repeats, axis)


# triangles ----------------------------------------------------------------------------

def _tri_mask(input, diagonal, lower, op):
    from ember.ops.creation import arange
    if input.ndim < 2:
        raise ValueError(f"{op}: needs a tensor of at least 2 dims, got shape "
                         f"{tuple(input.shape)}")
    m, n = input.shape[-2], input.shape[-1]
    rows = arange(m, device=input.device).reshape(m, 1)
    cols = arange(n, device=input.device)
    off = _ew("sub", cols, rows)
    return _ew("le" if lower else "ge", off, int_arg(diagonal, "diagonal", op))


def _zero(input):
    return _core.empty((), input.dtype, input.device).fill_(0)


@tensor_method
@tensor_input
def tril(input, diagonal=0):
    """The lower triangle of the last two dims (elements on and below the diagonal
    `diagonal` above the main one); the rest zero."""
    return _ew("where", _tri_mask(input, diagonal, True, "tril"), input, _zero(input))


@tensor_method
@tensor_input
def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above diagonal `diagonal`)."""
    return _ew("where", _tri_mask(input, diagonal, False, "triu"), input, _zero(input))


@tensor_method
@tensor_input
def tril_(input, diagonal=0):
    return _ew("where", _tri_mask(input, diagonal, True, "tril_"), input, _zero(input),
               out=input)


@tensor_method
@tensor_input
def triu_(input, diagonal=0):
    return _ew("where", _tri_mask(input, diagonal, False, "triu_"), input, _zero(input),
               out=input)


def _tri_indices(row, col, offset, lower, op):
    from ember.ops.creation import empty
    from ember.ops.index import nonzero
    row, col = int_arg(row, "row", op), int_arg(col, "col", op)
    offset = int_arg(offset, "offset", op)
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be non-negative, got {row}, {col}")
    mask = _tri_mask(empty(row, col), offset, lower, op)
    return nonzero(mask).T.contiguous()


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) coordinates of the lower triangle of a row x col matrix."""
    r = _tri_indices(row, col, offset, True, "tril_indices")
    r = r if dtype is None else r.to(dtype)
    return r if device is None else r.to(device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    r = _tri_indices(row, col, offset, False, "triu_indices")
    r = r if dtype is None else r.to(dtype)
    return r if device is None else r.to(device)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-d tensors: result i varies along dim i ('ij', the
    default, as PyTorch) or with the first two dims swapped ('xy', as NumPy's
    default). The grids are broadcast views of the inputs."""
    if len(tensors) == 1 and not isinstance(tensors[0], _TB):
        tensors = tensors[0]   # meshgrid([x, y])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = _tensors(tensors, "meshgrid")
    for i, t in enumerate(ts):
        if t.ndim > 1:
            raise ValueError(f"meshgrid: expects 0-d or 1-d tensors, item {i} has shape "
                             f"{tuple(t.shape)}")
    ts = [t.reshape(-1) for t in ts]
    k = len(ts)
    pos = list(range(k))
    if indexing == "xy" and k >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * k
    for t, p in zip(ts, pos):
        shape[p] = t.shape[0]
    out = []
    for t, p in zip(ts, pos):
        view = [1] * k
        view[p] = t.shape[0]
        out.append(t.reshape(view).expand(shape))
    return tuple(out)


@tensor_method
@tensor_input
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim (x[i+1] - x[i]; for bool, x[i+1] != x[i]),
    after joining prepend / append (tensors or numbers) to the ends."""
    if input.ndim == 0:
        raise ValueError("diff: needs a tensor of at least 1 dim")
    n = int_arg(n, "n", "diff")
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    d = _norm(dim, input.ndim, "diff")
    parts = []
    for extra in (prepend, input, append):
        if extra is None:
            continue
        if not isinstance(extra, _TB):
            shape = list(input.shape)
            shape[d] = 1
            from ember.ops.creation import full
            extra = full(shape, extra, dtype=_core.weak_result_type(input, extra),
                         device=input.device)
        elif extra.ndim == 0:
            shape = list(input.shape)
            shape[d] = 1
            extra = extra.expand(shape)
        parts.append(extra)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        a, b = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = _ew("ne", a, b) if x.dtype.kind == "bool" else _ew("sub", a, b)
    return x


# diagonal matrices, block matrices, products of sets (issue 18): composed of zeros and
# a write into a view (recorded as setitem / copy_, so autograd differentiates them) ----

def _zeros(shape, like, dtype=None):
    from ember.ops.creation import zeros
    return zeros(shape, dtype=like.dtype if dtype is None else dtype, device=like.device)


def _embed(input, k):
    """(..., n, n) zeros with input's last dim written on diagonal k (an indexed write,
    recorded as setitem, so the result is differentiable in input)."""
    from ember.ops.creation import arange
    m = input.shape[-1]
    n = m + abs(k)
    out = _zeros(tuple(input.shape[:-1]) + (n, n), input)
    i = arange(m, dtype=_core._dtype_by_name("int64"), device=input.device)
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    out[..., rows, cols] = input
    return out


@tensor_method
@tensor_input
def diag(input, diagonal=0):
    """A 1-d input: the 2-d matrix with input on its diagonal `diagonal` (> 0 above the
    main one); a 2-d input: a copy of that diagonal, as 1-d."""
    k = int_arg(diagonal, "diagonal", "diag")
    if input.ndim == 1:
        return _embed(input, k)
    if input.ndim == 2:
        return input.diagonal(k).clone()
    raise ValueError(f"diag: expects a 1-d or 2-d tensor, got shape {tuple(input.shape)}")


@tensor_method
@tensor_input
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose (dim1, dim2) planes have input's last dim on their diagonal
    `offset` (the other elements 0): the inverse of diagonal(offset, dim1, dim2)."""
    offset = int_arg(offset, "offset", "diag_embed")
    if input.ndim == 0:
        raise ValueError("diag_embed: expects at least a 1-d tensor, got a 0-d one")
    nd = input.ndim + 1
    a, b = _core.normalize_dim(dim1, nd, "diag_embed"), _core.normalize_dim(dim2, nd, "diag_embed")
    if a == b:
        raise ValueError(f"diag_embed: dim1 and dim2 are both {a}")
    return _embed(input, offset).movedim((nd - 2, nd - 1), (a, b))


@tensor_method
@tensor_input
def diagflat(input, offset=0):
    """diag of input flattened: a 2-d matrix with input's elements on diagonal offset."""
    return diag(input.reshape(-1), offset)


def block_diag(*tensors):
    """The block-diagonal matrix of the given 0-d, 1-d (a row) and 2-d tensors,
    promoted to their common dtype."""
    ts = tensors_arg(tensors, "block_diag", nonempty=False)
    mats = []
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise ValueError(f"block_diag: item {i} must have at most 2 dims, got shape "
                             f"{tuple(t.shape)}")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    if not mats:
        from ember.ops.creation import empty
        return empty((1, 0))
    from ember._dtypes import result_type
    dt = result_type(*mats) if len(mats) > 1 else mats[0].dtype
    out = _zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), mats[0], dt)
    r = c = 0
    for m in mats:
        h, w = m.shape
        out[r:r + h, c:c + w] = m
        r, c = r + h, c + w
    return out


def cartesian_prod(*tensors):
    """All tuples of one element of each 1-d tensor, in order (like itertools.product):
    (N, len(tensors)); one tensor is returned as it is."""
    ts = tensors_arg(tensors, "cartesian_prod")
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ValueError(f"cartesian_prod: expects 1-d tensors, item {i} has shape "
                             f"{tuple(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


@tensor_input
def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-d tensor's elements (itertools.combinations,
    or combinations_with_replacement), as rows of an (N, r) tensor."""
    import itertools
    r = int_arg(r, "r", "combinations")
    if input.ndim != 1:
        raise ValueError(f"combinations: expects a 1-d tensor, got shape {tuple(input.shape)}")
    if r < 0:
        raise ValueError(f"combinations: r must be non-negative, got {r}")
    if r == 0:
        return _zeros((0,), input)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(make(range(input.shape[0]), r))
    if not idx:
        return _zeros((0, r), input)
    from ember.ops.creation import tensor
    index = tensor(idx, dtype=_core._dtype_by_name("int64"), device=input.device)
    return input.index_select(0, index.reshape(-1)).reshape(len(idx), r)


@tensor_input
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d x: columns x**(N-1), ..., x**0 (reversed with
    increasing); integers give int64 (as PyTorch). Built as a cumulative product, so
    its gradient is finite at 0."""
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-d, got shape {tuple(x.shape)}")
    N = x.shape[0] if N is None else int_arg(N, "N", "vander")
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if x.dtype.kind != "float":
        x = x.to(_core._dtype_by_name("int64"))
    n = x.shape[0]
    if N == 0:
        return _zeros((n, 0), x)
    from ember.ops.creation import ones
    cols = [ones((n, 1), dtype=x.dtype, device=x.device)]
    if N > 1:
        cols.append(x.unsqueeze(1).expand(n, N - 1).cumprod(1))
    v = cat(cols, 1)
    return v if increasing else flip(v, (1,))


__all__ += ["diag", "diag_embed", "diagflat", "block_diag", "cartesian_prod", "combinations",
            "vander"]


@tensor_method(names=("split_with_sizes", "unsafe_split_with_sizes"))
@tensor_input
def split_with_sizes(input, split_sizes, dim=0):
    """split with a list of sizes (which must sum to the dim's size)."""
    if isinstance(split_sizes, numbers.Integral) or isinstance(split_sizes, _TB):
        raise TypeError(f"split_with_sizes: split_sizes must be a sequence of ints, got "
                        f"{type(split_sizes).__name__}")
    return split(input, list(sizes_arg((split_sizes,), "split_with_sizes", "split_sizes",
                                       limit=1 << 20)), dim)


# PyTorch's unsafe_* variants differ only in not tracking the views' versions
unsafe_split, unsafe_chunk, unsafe_split_with_sizes = split, chunk, split_with_sizes
for _n, _f in (("unsafe_split", split), ("unsafe_chunk", chunk)):
    tensor_method(_f, names=(_n,))

__all__ += ["split_with_sizes", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes"]
