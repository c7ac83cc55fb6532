"""Views: new shapes and strides over the same storage, never a copy (the conversions
between layouts, dtypes and devices are ember.ops.conversion).

Every view is recorded for autograd under its own name with the arguments its
derivative needs."""
from __future__ import annotations

from ember._args import int_arg, sizes_arg, tensor_arg, tensor_input, tensors_arg
from ember._C import core as _core
from ember._layout import broadcast_shape
from ember._registry import tensor_method
from ember.ops.conversion import contiguous

_record = _core.record
_norm = _core.normalize_dim

__all__ = ["reshape", "view", "permute", "permute_dims", "transpose", "swapaxes", "swapdims",
           "expand", "broadcast_to", "squeeze", "unsqueeze", "expand_dims", "narrow",
           "diagonal", "flatten", "unflatten", "movedim", "moveaxis", "as_strided",
           "matrix_transpose", "broadcast_shapes", "broadcast_tensors", "t", "ravel",
           "atleast_1d", "atleast_2d", "atleast_3d"]


def _sizes(shape, op):
    return sizes_arg(shape, op, "shape")


def _other(other, op):
    """other's tensor-ness checked for the *_as methods (a TypeError naming op)."""
    return tensor_arg(other, op, "other")


_int = int_arg


def _infer(shape, numel, op, original):
    """Resolve one -1 in shape so the element count matches numel."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise ValueError(f"{op}: only one dimension can be -1, got {tuple(shape)}")
    for s in shape:
        if s < -1:
            raise ValueError(f"{op}: invalid size {s} in {tuple(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise ValueError(f"{op}: shape {tuple(shape)} is invalid for a tensor of "
                             f"{numel} elements (shape {tuple(original)})")
        shape = list(shape)
        shape[neg[0]] = numel // known
    elif known != numel:
        raise ValueError(f"{op}: shape {tuple(shape)} is invalid for a tensor of {numel} "
                         f"elements (shape {tuple(original)})")
    return shape


def _view_strides(old_shape, old_strides, new_shape):
    """Strides that let new_shape view the same elements in the same order, or None
    when the layout makes that impossible (then reshape copies, view raises)."""
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0 or not old_shape:
        out, st = [], 1
        for s in reversed(new_shape):
            out.append(st)
            st *= max(s, 1)
        return out[::-1]
    # group old dims into contiguous chunks, then split each chunk among new dims
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1] if old_strides else 1
    tensor_numel, view_numel = 1, 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return new_strides


def _view_general(input, *shape):
    """view's general entry: the calls _core.view leaves to Python (a dtype, sizes to
    parse, an error to raise; _C/core/views.pxi)."""
    if len(shape) == 1 and isinstance(shape[0], _core.DType):
        return _view_dtype(input, shape[0])
    shape = _infer(_sizes(shape, "view"), input.numel(), "view", input.shape)
    storage, dtype, old_shape, old_strides, offset = input._layout()
    strides = _view_strides(list(old_shape), list(old_strides), shape)
    if strides is None:
        raise RuntimeError(f"view: shape {tuple(shape)} is not compatible with the input's "
                           f"shape {tuple(old_shape)} and strides {tuple(old_strides)} (the "
                           f"tensor is not contiguous); use .reshape(...) to copy")
    return _record("view", (input,), input._view(shape, strides, offset), {"shape": tuple(shape)})


def _view_dtype(input, dtype):
    if dtype.itemsize != input.itemsize:
        raise ValueError(f"view: cannot view {input.dtype!r} as {dtype!r} (different "
                         f"element sizes)")
    storage, _, shape, strides, offset = input._layout()
    return _core.as_strided_from(storage, dtype, shape, strides, offset)


def _reshape_general(input, *shape):
    """reshape's general entry (and its copy)."""
    shape = _infer(_sizes(shape, "reshape"), input.numel(), "reshape", input.shape)
    storage, dtype, old_shape, old_strides, offset = input._layout()
    strides = _view_strides(list(old_shape), list(old_strides), shape)
    if strides is None:
        return view(contiguous(input), shape)
    return _record("view", (input,), input._view(shape, strides, offset), {"shape": tuple(shape)})


@tensor_method
def ravel(input):
    return reshape(input, -1)


@tensor_method
def flatten(input, start_dim=0, end_dim=-1):
    s, e = _norm(start_dim, input.ndim, "flatten"), _norm(end_dim, input.ndim, "flatten")
    if input.ndim == 0:
        return reshape(input, 1)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = list(input.shape)
    n = 1
    for d in range(s, e + 1):
        n *= shape[d]
    return reshape(input, shape[:s] + [n] + shape[e + 1:])


@tensor_method
def unflatten(input, dim, sizes):
    d = _norm(dim, input.ndim, "unflatten")
    shape = list(input.shape)
    sizes = _infer(_sizes((sizes,), "unflatten"), shape[d], "unflatten", input.shape)
    return view(input, shape[:d] + list(sizes) + shape[d + 1:]) if input.is_contiguous() else \
        reshape(input, shape[:d] + list(sizes) + shape[d + 1:])


def _permute_general(input, *args, dims=None):
    """permute's general entry."""
    if dims is not None and args:
        raise TypeError("permute: give the dims once: positionally or as dims=")
    dims = sizes_arg(args if dims is None else (dims,), "permute", "dims")
    n = input.ndim
    if len(dims) != n:
        raise ValueError(f"permute: {len(dims)} dims given for a tensor of {n} dims")
    dims = tuple(_norm(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise ValueError(f"permute: repeated dim in {dims}")
    return _permute(input, dims)


def _permute(input, dims):
    """permute with dims already a valid permutation (transpose, T: no parsing)."""
    storage, dtype, shape, strides, offset = input._layout()
    out = input._view([shape[d] for d in dims], [strides[d] for d in dims], offset, "permute")
    return _record("permute", (input,), out, {"dims": dims})


def _transpose_general(input, dim0, dim1):
    """transpose's general entry."""
    n = input.ndim
    if n == 0:
        _norm(dim0, n, "transpose"), _norm(dim1, n, "transpose")
        return _permute_general(input)
    a, b = _norm(dim0, n, "transpose"), _norm(dim1, n, "transpose")
    dims = list(range(n))
    dims[a], dims[b] = dims[b], dims[a]
    return _permute(input, tuple(dims))


@tensor_method
def t(input):
    if input.ndim > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dims, got {input.ndim}; use "
                         f"transpose or mT")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def matrix_transpose(x):
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dims, got shape {tuple(x.shape)}")
    return transpose(x, -2, -1)


def _T(self):
    return permute(self, tuple(range(self.ndim))[::-1])


def _mT(self):
    return matrix_transpose(self)


@tensor_method(names=("movedim", "moveaxis"))
def movedim(input, source, destination):
    n = input.ndim

    def dims(x):
        if isinstance(x, (tuple, list)):
            return [_int(d, "dims", "movedim") for d in x]
        return [_int(x, "source and destination", "movedim")]
    src, dst = dims(source), dims(destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: source {source} and destination {destination} differ "
                         f"in length")
    src = [_norm(d, n, "movedim") for d in src]
    dst = [_norm(d, n, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"movedim: repeated dim in {source} or {destination}")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(input, order)


moveaxis = movedim


def broadcast_shapes(*shapes):
    """The shape all given shapes broadcast to (NumPy rules)."""
    shapes = [tuple(sizes_arg((s,), "broadcast_shapes", "shape")) for s in shapes]
    out = broadcast_shape(shapes, "broadcast_shapes")
    from ember._tensor import Size
    return Size(out)


@tensor_method
def expand(input, *sizes):
    """A view repeating size-1 dims (stride 0) to `sizes`; -1 keeps a dim."""
    sizes = _sizes(sizes, "expand")
    storage, dtype, shape, strides, offset = input._layout()
    if len(sizes) < len(shape):
        raise ValueError(f"expand: the target shape {tuple(sizes)} has fewer dims than the "
                         f"tensor's shape {shape}")
    lead = len(sizes) - len(shape)
    new_shape, new_strides = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise ValueError(f"expand: -1 is not allowed for a new leading dim in "
                                 f"{tuple(sizes)}")
            new_shape.append(s)
            new_strides.append(0)
            continue
        old, st = shape[i - lead], strides[i - lead]
        if s == -1 or s == old:
            new_shape.append(old)
            new_strides.append(st)
        elif old == 1 and s >= 0:
            new_shape.append(s)
            new_strides.append(0)
        else:
            raise ValueError(f"expand: shape {shape} cannot be expanded to {tuple(sizes)} "
                             f"(dim {i} has size {old}, not 1)")
    out = input._view(new_shape, new_strides, offset, "expand")
    return _record("expand", (input,), out, {"shape": tuple(new_shape)})


@tensor_method
def expand_as(input, other):
    return expand(input, _other(other, "expand_as").shape)


@tensor_method
def broadcast_to(input, shape):
    shape = _sizes((shape,), "broadcast_to")
    broadcast_shapes(input.shape, shape)
    return expand(input, shape)


def broadcast_tensors(*tensors):
    tensors = tensors_arg(tensors, "broadcast_tensors", nonempty=False, same_device=False)
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def broadcast_arrays(*arrays):
    return list(broadcast_tensors(*arrays))


@tensor_method
def squeeze(input, dim=None):
    """Drop size-1 dims (all of them, or the given dim(s) when they have size 1)."""
    storage, dtype, shape, strides, offset = input._layout()
    if dim is None:
        drop = {d for d, s in enumerate(shape) if s == 1}
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        drop = {d for d in (_norm(x, input.ndim, "squeeze") for x in dims)
                if input.ndim and shape[d] == 1}
    keep = [d for d in range(len(shape)) if d not in drop]
    out = input._view([shape[d] for d in keep], [strides[d] for d in keep], offset, "squeeze")
    return _record("view", (input,), out, {"shape": tuple(out.shape)})


@tensor_method
def unsqueeze(input, dim):
    """Insert a size-1 dim at position dim (in the result)."""
    storage, dtype, shape, strides, offset = input._layout()
    d = _norm(dim, input.ndim + 1, "unsqueeze")
    st = strides[d] * shape[d] if d < len(shape) else 1
    out = input._view(list(shape[:d]) + [1] + list(shape[d:]),
                      list(strides[:d]) + [st] + list(strides[d:]), offset, "unsqueeze")
    return _record("view", (input,), out, {"shape": tuple(out.shape)})


def expand_dims(x, /, *, axis=0):
    return unsqueeze(x, axis)


def _narrow_general(input, dim, start, length):
    """narrow's general entry."""
    d = _norm(dim, input.ndim, "narrow")
    storage, dtype, shape, strides, offset = input._layout()
    start = _int(start, "start", "narrow")
    length = _int(length, "length", "narrow")
    if start < 0:
        start += shape[d]
    if start < 0 or length < 0 or start + length > shape[d]:
        raise IndexError(f"narrow: start {start} and length {length} are out of range for "
                         f"dim {d} of size {shape[d]}")
    new_shape = list(shape)
    new_shape[d] = length
    out = input._view(new_shape, strides, offset + start * strides[d], "narrow")
    return _record("narrow", (input,), out, {"dim": d, "start": start, "length": length})


@tensor_method
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes as a view; offset > 0 is above."""
    n = input.ndim
    if n < 2:
        raise ValueError(f"diagonal: needs at least 2 dims, got shape {tuple(input.shape)}")
    a, b = _norm(dim1, n, "diagonal"), _norm(dim2, n, "diagonal")
    offset = _int(offset, "offset", "diagonal")
    if a == b:
        raise ValueError(f"diagonal: dim1 and dim2 are both {a}")
    storage, dtype, shape, strides, off = input._layout()
    if offset >= 0:
        length = max(0, min(shape[a], shape[b] - offset))
        start = off + offset * strides[b] if length else off
    else:
        length = max(0, min(shape[a] + offset, shape[b]))
        start = off - offset * strides[a] if length else off
    keep = [d for d in range(n) if d not in (a, b)]
    out = input._view([shape[d] for d in keep] + [length],
                      [strides[d] for d in keep] + [strides[a] + strides[b]], start, "diagonal")
    return _record("diagonal", (input,), out, {"offset": offset, "dim1": a, "dim2": b})


@tensor_method
def unfold(input, dimension, size, step):
    """All windows of `size` elements along `dimension`, `step` apart, as a view with
    a new last dim of length size."""
    d = _norm(dimension, input.ndim, "unfold")
    size, step = _int(size, "size", "unfold"), _int(step, "step", "unfold")
    storage, dtype, shape, strides, off = input._layout()
    n = shape[d] if shape else 1
    if size < 0 or size > n:
        raise ValueError(f"unfold: size {size} is out of range for dim {d} of size {n}")
    if step <= 0:
        raise ValueError(f"unfold: step must be positive, got {step}")
    new_shape = list(shape)
    new_strides = list(strides)
    if shape:
        new_shape[d] = (n - size) // step + 1
        new_strides[d] = strides[d] * step
    out = input._view(new_shape + [size], new_strides + [strides[d] if shape else 1], off,
                      "unfold")
    return _record("unfold", (input,), out, {"dim": d, "size": size, "step": step})


@tensor_method
def as_strided(input, size, stride, storage_offset=None):
    size = sizes_arg((size,), "as_strided", "size")
    stride = sizes_arg((stride,), "as_strided", "stride")
    if storage_offset is not None:
        storage_offset = int_arg(storage_offset, "storage_offset", "as_strided")
    storage, dtype, shape, strides, off = input._layout()
    out = _core.as_strided_from(storage, dtype, size, stride,
                                off if storage_offset is None else storage_offset)
    return _record("as_strided", (input,), out,
                   {"size": tuple(out.shape), "stride": out.stride(),
                    "storage_offset": storage_offset})


@tensor_method
def view_as(input, other):
    return view(input, _other(other, "view_as").shape)


@tensor_method
def reshape_as(input, other):
    return reshape(input, _other(other, "reshape_as").shape)


def _atleast(tensors, op):
    """atleast_1d(a, b) and atleast_1d((a, b)): the tensors."""
    if len(tensors) == 1 and not isinstance(tensors[0], _core.TensorBase):
        tensors = tensors[0]
    return tensors_arg(tensors, op, nonempty=False, same_device=False)


def atleast_1d(*tensors):
    r = [t if t.ndim >= 1 else reshape(t, 1) for t in _atleast(tensors, "atleast_1d")]
    return r[0] if len(r) == 1 else tuple(r)


def atleast_2d(*tensors):
    r = [t if t.ndim >= 2 else reshape(t, (1,) * (2 - t.ndim) + tuple(t.shape))
         for t in _atleast(tensors, "atleast_2d")]
    return r[0] if len(r) == 1 else tuple(r)


def atleast_3d(*tensors):
    def one(t):
        if t.ndim >= 3:
            return t
        if t.ndim == 2:
            return unsqueeze(t, -1)
        return reshape(t, (1,) + ((t.shape[0],) if t.ndim else (1,)) + (1,))
    r = [one(t) for t in _atleast(tensors, "atleast_3d")]
    return r[0] if len(r) == 1 else tuple(r)


# in-place view ops: self takes the layout of the view (PyTorch's t_, transpose_, ...) --

def _restride_(self, view, op):
    """Give self the storage and layout of `view` (a view of self), and, under autograd,
    make self the output of the view's node. A leaf that requires grad cannot change in
    place (PyTorch's rule), outside no_grad."""
    if self.requires_grad and self.is_leaf and _core.is_grad_enabled():
        raise RuntimeError(f"{op}: a leaf tensor that requires grad is being used in an "
                           f"in-place operation")
    self.data = view
    if view.requires_grad:
        self._set_autograd(view.grad_fn, True)
    return self


@tensor_method
@tensor_input
def t_(input):
    """In-place t: self becomes its transpose (a 0-d or 1-d tensor is unchanged)."""
    return _restride_(input, t(input), "t_")


@tensor_method(names=("transpose_", "swapaxes_", "swapdims_"))
@tensor_input
def transpose_(input, dim0, dim1):
    """In-place transpose: self's dims dim0 and dim1 are swapped (its layout, not its
    data)."""
    return _restride_(input, transpose(input, dim0, dim1), "transpose_")


@tensor_method
@tensor_input
def squeeze_(input, dim=None):
    """In-place squeeze."""
    return _restride_(input, squeeze(input, dim), "squeeze_")


@tensor_method
@tensor_input
def unsqueeze_(input, dim):
    """In-place unsqueeze."""
    return _restride_(input, unsqueeze(input, dim), "unsqueeze_")


@tensor_method
@tensor_input
def as_strided_(input, size, stride, storage_offset=None):
    """In-place as_strided: self views its storage with the given layout."""
    return _restride_(input, as_strided(input, size, stride, storage_offset), "as_strided_")


def _contiguous_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return strides[::-1]


@tensor_method
@tensor_input
def resize_(input, *sizes, memory_format=None):
    """PyTorch's resize_: self gets the shape `sizes` with contiguous strides over its
    storage from its storage offset; the existing elements keep their places in the
    storage (so a shrink then a grow gives the old values back). When the storage is
    too small, self gets a new, larger storage holding a copy of the old one (the new
    elements are uninitialised; other tensors that shared the old storage keep it,
    where PyTorch grows the shared storage). A tensor that requires grad cannot be
    resized (PyTorch's rule)."""
    if memory_format is not None and str(memory_format) not in (
            "contiguous_format", "torch.contiguous_format", "ember.contiguous_format"):
        raise ValueError(f"resize_: memory_format {memory_format!r} is not supported "
                         f"(ember tensors are laid out contiguously)")
    shape = [int_arg(s, "size", "resize_") for s in sizes_arg(sizes, "resize_")]
    for s in shape:
        if s < 0:
            raise ValueError(f"resize_: negative dimension {s} in size {tuple(shape)}")
    if input.requires_grad:
        raise RuntimeError("resize_: cannot resize a tensor that requires grad")
    storage, dtype, _, _, offset = input._layout()
    n = 1
    for s in shape:
        n *= s
    have = len(storage) // dtype.itemsize
    strides = _contiguous_strides(shape)
    if offset + n > have:
        from ember.ops.creation import empty
        base = empty(offset + n, dtype=dtype, device=input.device)
        if have:
            old = _core.as_strided_from(storage, dtype, [have], [1], 0)
            _core.copy_into(base._view([have], [1], 0), old)
        storage = base._layout()[0]
    input.data = _core.as_strided_from(storage, dtype, shape, strides, offset)
    input._bump_version()
    return input


@tensor_method
@tensor_input
def resize_as_(input, the_template, *, memory_format=None):
    """resize_ to the_template's shape."""
    return resize_(input, _other(the_template, "resize_as_").shape, memory_format=memory_format)


__all__ += ["resize_as_", "as_strided_"]


@tensor_method
@tensor_input
def adjoint(input):
    """The conjugate transpose of the last two dims: transpose(-2, -1), a view for real
    tensors, conjugated (a new tensor: ember conjugates eagerly) for complex ones."""
    if input.ndim < 2:
        raise ValueError(f"adjoint: needs at least 2 dims, got shape {tuple(input.shape)}")
    return _conj(transpose(input, -2, -1))


__all__ += ["adjoint"]


# the *_copy forms --------------------------------------------------------------------
# PyTorch's functionalization names (torch.view_copy, ...): the view op, its result
# copied into new contiguous memory, so no output shares storage with the input.
# Composed of the view and a copy: autograd differentiates them through both.

def _fresh(view, op, out=None):
    result = view.clone()
    if out is None:
        return result
    if not isinstance(out, _core.TensorBase):
        raise TypeError(f"{op}: out must be a tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    return out.copy_(result)


def _copies(views, op, out=None):
    results = [v.clone() for v in views]
    if out is None:
        return results
    if len(out) != len(results):
        raise ValueError(f"{op}: out has {len(out)} tensors, the result {len(results)}")
    for o, r in zip(out, results):
        if tuple(o.shape) != tuple(r.shape):
            raise ValueError(f"{op}: an out tensor has shape {tuple(o.shape)}, its result "
                             f"{tuple(r.shape)}")
        o.copy_(r)
    return None


def alias_copy(input, *, out=None):
    """A copy of input (torch.alias_copy: the alias, copied)."""
    return _fresh(tensor_arg(input, "alias_copy"), "alias_copy", out)


def detach_copy(input, *, out=None):
    """input.detach(), copied: a new tensor outside the graph."""
    return _fresh(tensor_arg(input, "detach_copy").detach(), "detach_copy", out)


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    return _fresh(diagonal(tensor_arg(input, "diagonal_copy"), offset, dim1, dim2),
                  "diagonal_copy", out)


def expand_copy(input, size, *, implicit=False, out=None):
    """input.expand(size), copied (the repeated values materialised)."""
    return _fresh(expand(tensor_arg(input, "expand_copy"), size), "expand_copy", out)


def narrow_copy(input, dim, start, length, *, out=None):
    """input.narrow(dim, start, length), copied."""
    return _fresh(narrow(tensor_arg(input, "narrow_copy"), dim, start, length),
                  "narrow_copy", out)


def permute_copy(input, dims, *, out=None):
    return _fresh(permute(tensor_arg(input, "permute_copy"), dims), "permute_copy", out)


def select_copy(input, dim, index, *, out=None):
    return _fresh(tensor_arg(input, "select_copy").select(dim, index), "select_copy", out)


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """input[..., start:end:step, ...] along dim (torch.slice_copy), copied; step > 0."""
    input = tensor_arg(input, "slice_copy")
    d = _norm(int_arg(dim, "dim", "slice_copy"), input.ndim)
    step = int_arg(step, "step", "slice_copy")
    if step <= 0:
        raise ValueError(f"slice_copy: step must be positive, got {step}")
    index = (slice(None),) * d + (slice(start, end, step),)
    return _fresh(input[index], "slice_copy", out)


def split_copy(input, split_size, dim=0, *, out=None):
    """input.split(split_size, dim) (an int size), each piece copied."""
    return _copies(tensor_arg(input, "split_copy").split(split_size, dim), "split_copy", out)


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    return _copies(tensor_arg(input, "split_with_sizes_copy").split_with_sizes(split_sizes, dim),
                   "split_with_sizes_copy", out)


def squeeze_copy(input, dim=None, *, out=None):
    return _fresh(squeeze(tensor_arg(input, "squeeze_copy"), dim), "squeeze_copy", out)


def t_copy(input, *, out=None):
    return _fresh(t(tensor_arg(input, "t_copy")), "t_copy", out)


def transpose_copy(input, dim0, dim1, *, out=None):
    return _fresh(transpose(tensor_arg(input, "transpose_copy"), dim0, dim1),
                  "transpose_copy", out)


def unbind_copy(input, dim=0, *, out=None):
    return _copies(tensor_arg(input, "unbind_copy").unbind(dim), "unbind_copy", out)


def unfold_copy(input, dimension, size, step, *, out=None):
    return _fresh(unfold(tensor_arg(input, "unfold_copy"), dimension, size, step),
                  "unfold_copy", out)


def unsqueeze_copy(input, dim, *, out=None):
    return _fresh(unsqueeze(tensor_arg(input, "unsqueeze_copy"), dim), "unsqueeze_copy", out)


def view_copy(input, size, *, out=None):
    """input.view(size) (a shape, or a dtype of the same item size), copied."""
    input = tensor_arg(input, "view_copy")
    if isinstance(size, (_core.DType, str)):
        return _fresh(input.view(size), "view_copy", out)
    return _fresh(view(input, size), "view_copy", out)


tensor_method(narrow_copy)


@tensor_method
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of slicing (torch.slice_inverse): a view of input's storage with
    src's sizes, strides and storage offset, i.e. the base that `input` was sliced from
    when src is that base's geometry; dim/start/end/step are what the slice was
    (PyTorch takes them for its tracing and does not use them either)."""
    input = tensor_arg(input, "slice_inverse")
    src = tensor_arg(src, "slice_inverse", "src")
    return as_strided(input, tuple(src.shape), src.stride(), src.storage_offset())


def view_as_real_copy(input, *, out=None):
    """view_as_real(input), copied: a real (..., 2) tensor of its own."""
    from ember.ops.complex import view_as_real
    return _fresh(view_as_real(tensor_arg(input, "view_as_real_copy")), "view_as_real_copy",
                  out)


def view_as_complex_copy(input, *, out=None):
    """view_as_complex(input), copied."""
    from ember.ops.complex import view_as_complex
    return _fresh(view_as_complex(tensor_arg(input, "view_as_complex_copy")),
                  "view_as_complex_copy", out)


__all__ += ["view_as_real_copy", "view_as_complex_copy"]
__all__ += ["alias_copy", "detach_copy", "diagonal_copy", "expand_copy", "narrow_copy",
            "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
            "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
            "unsqueeze_copy", "view_copy", "slice_inverse"]


# the entries: the common call in C (_C/core/views.pxi), the rest through the general
# entries above (split's is ember.ops.shape's)
for _name, _fn in (("view", _view_general), ("reshape", _reshape_general),
                   ("permute", _permute_general), ("transpose", _transpose_general),
                   ("narrow", _narrow_general)):
    _core._set_view_entry(_name, _fn)
view = tensor_method(_core.view)
reshape = tensor_method(_core.reshape)
permute = permute_dims = tensor_method(names=("permute", "permute_dims"))(_core.permute)
transpose = swapaxes = swapdims = tensor_method(names=("transpose", "swapaxes", "swapdims"))(
    _core.transpose)
narrow = tensor_method(_core.narrow)


def _install_properties(cls):
    cls.T = property(_T, doc="All dims reversed (a view).")
    cls.mT = property(_mT, doc="The last two dims swapped (a view).")
    cls.H = property(lambda self: _conj(_T(self)),
                     doc="The conjugate transpose (complex: a new tensor; real: a view).")
    cls.mH = property(lambda self: _conj(_mT(self)),
                      doc="The conjugate of the last two dims swapped.")
    from ember.ops.complex import _install_properties as complex_properties
    complex_properties(cls)


def _conj(x):
    from ember.ops.complex import conj
    return conj(x)


for _name in __all__:
    if _name not in ("broadcast_shapes", "broadcast_tensors", "atleast_1d", "atleast_2d",
                     "atleast_3d"):
        globals()[_name] = tensor_input(globals()[_name])
