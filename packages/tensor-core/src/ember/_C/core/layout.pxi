"""Layouts given from Python: shapes, strides, offsets and dims parsed into C, and the
checked validators every view of a user's making passes (checked_view, check_bounds)."""

cdef str shape_str(int ndim, const int64_t *shape):
    if ndim == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join([str(shape[i]) for i in range(ndim)]) + ")"


cdef int64_t int64_arg(object v, str what, str op) except? -1:
    """v (anything with __index__) as an int64; TypeError / OverflowError naming op."""
    if type(v) is int and -(1 << 63) <= <object>v < (1 << 63):
        return v          # the common case, without the general path's conversions
    try:
        v = _operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int, got {v!r}") from None
    if not (-(1 << 63) <= v < (1 << 63)):
        raise OverflowError(f"{op}: {what} {v} does not fit in int64")
    return v


cdef int shape_from(object shape, int64_t *out, str op) except -1:
    """Parse a shape given as a tuple/list/Size of ints (or a single int)."""
    cdef int n
    if isinstance(shape, int):
        shape = (shape,)
    try:
        n = len(shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if n > MAXD:
        raise ValueError(f"{op}: {n} dimensions requested; ember supports at most {MAXD}")
    for i in range(n):
        v = shape[i]
        if type(v) is int and 0 <= <object>v < (1 << 63):
            out[i] = v    # the common case
            continue
        if isinstance(v, TensorBase):
            v = v.item()
        try:
            v = _operator.index(v)
        except TypeError:
            raise TypeError(f"{op}: shape must contain ints, got {shape!r}") from None
        if v < 0:
            raise ValueError(f"{op}: negative dimension {v} in shape {tuple(shape)}")
        out[i] = int64_arg(v, "size", op)
    return n


cdef int layout_from(object shape, object strides, int64_t *sh, int64_t *st,
                     str op) except -1:
    """Parse a (shape, strides) pair into C arrays of MAXD: as many strides as sizes,
    all ints (a float stride is a TypeError, not truncated)."""
    cdef int n = shape_from(shape, sh, op)
    try:
        ns = len(strides)
    except TypeError:
        raise TypeError(f"{op}: strides must be a sequence of ints, got {strides!r}") from None
    if ns != n:
        # the sizes as parsed (`shape` may be a bare int); the strides as given
        shown = tuple(strides) if isinstance(strides, (tuple, list)) else f"{strides!r:.200}"
        raise ValueError(f"{op}: {n} sizes {shape_str(n, sh)} but {ns} strides {shown}; "
                         f"they must have the same length")
    for i in range(n):
        st[i] = int64_arg(strides[i], "stride", op)
    return n


def as_strided_from(Storage storage not None, DType dtype not None, shape, strides, offset):
    """A tensor viewing `storage` with the given layout (elements); bounds-checked."""
    return checked_view(storage, dtype.num, shape, strides, offset, "as_strided")


cdef TensorBase checked_view(Storage storage, int dtype, object shape, object strides,
                             object offset, str op):
    """A tensor viewing `storage` with a layout given from Python (in elements): every
    view of a user's or a Python module's making comes through here, so every one is
    validated the same way (internal C code uses view_of on layouts it derived)."""
    cdef int64_t sh[MAXD]
    cdef int64_t st[MAXD]
    cdef int n = layout_from(shape, strides, sh, st, op)
    cdef int64_t off = int64_arg(offset, "storage offset", op)
    check_numel(n, sh, op)
    check_bounds(storage.nbytes // ITEMSIZE[dtype], n, sh, st, off, op)
    cdef TensorBase t = alloc_tensor_object()
    for i in range(n):
        t._shape[i] = sh[i]
        t._strides[i] = st[i]
    t._ndim = n
    t._dtype = dtype
    t._itemsize = ITEMSIZE[dtype]
    t._offset = off
    t._storage = storage
    return t


cdef int check_numel(int ndim, const int64_t *shape, str op) except -1:
    """A tensor's element count must fit in int64, so that numel() never wraps (a
    zero-stride view can have many more elements than its storage)."""
    cdef int64_t n = 1
    cdef int i
    for i in range(ndim):
        if shape[i] == 0:
            return 0
    for i in range(ndim):
        if em_mul_ovf(n, shape[i], &n):
            raise ValueError(f"{op}: numel: integer multiplication overflow: shape "
                             f"{shape_str(ndim, shape)} has more than 2**63 - 1 elements")
    return 0


cdef int layout_reach(int ndim, const int64_t *shape, const int64_t *strides,
                      int64_t offset, int64_t *lo, int64_t *hi, str op) except -1:
    """The lowest and highest element a layout touches, [lo, hi] (from the storage's
    start), in checked int64 arithmetic: a wrapped stride * (size - 1) would pass any
    bounds check. Returns 0 when the layout has no elements (lo and hi unset), else 1."""
    cdef int64_t step
    cdef int i
    for i in range(ndim):
        if shape[i] < 0:
            raise ValueError(f"{op}: negative dimension {shape[i]} in shape "
                             f"{shape_str(ndim, shape)}")
        if shape[i] == 0:
            return 0
    lo[0] = hi[0] = offset
    for i in range(ndim):
        if em_mul_ovf(strides[i], shape[i] - 1, &step) or \
                (em_add_ovf(hi[0], step, hi) if step > 0 else em_add_ovf(lo[0], step, lo)):
            raise ValueError(f"{op}: storage size calculation overflowed with sizes "
                             f"{shape_str(ndim, shape)}, strides {shape_str(ndim, strides)} "
                             f"and offset {offset}")
    return 1


cdef int check_bounds(int64_t capacity, int ndim, const int64_t *shape,
                      const int64_t *strides, int64_t offset, str op) except -1:
    """The one bounds check of a layout over a storage of `capacity` elements (views,
    strided creation, the indexing loops): every element inside, offset >= 0."""
    cdef int64_t lo, hi
    if offset < 0:
        raise ValueError(f"{op}: negative storage offset {offset}")
    if layout_reach(ndim, shape, strides, offset, &lo, &hi, op) and \
            (lo < 0 or hi >= capacity):
        raise ValueError(f"{op}: a view of shape {shape_str(ndim, shape)} with strides "
                         f"{shape_str(ndim, strides)} and offset {offset} reaches elements "
                         f"[{lo}, {hi}] outside the storage of {capacity} elements")
    return 0


cdef int wrap_dim(object dim, int ndim, str op) except -1:
    try:
        d = _operator.index(dim)   # a Python int: 2**63 is out of range, not a C overflow
    except TypeError:
        raise TypeError(f"{op}: dim must be an int, got {dim!r}") from None
    cdef int n = ndim if ndim > 0 else 1
    if d < -n or d >= n:
        raise IndexError(f"{op}: dim {d} is out of range for a tensor of {ndim} dims "
                         f"(expected {-n}..{n - 1})")
    return <int>(d + n if d < 0 else d)


def normalize_dim(dim, int ndim, str op="op"):
    """dim in [-ndim, ndim) -> [0, ndim); IndexError naming the op otherwise."""
    return wrap_dim(dim, ndim, op)
