"""The hot view entries (view, reshape, transpose, permute, narrow, split) for their
common call: a tensor and plain Python ints giving a valid layout, made and recorded
in C. Any other call (a -1 with zero sizes, a dtype, a Size of tensors, bad input) goes
to the general Python entry in ember/ops/views.py and ops/shape.py, which parses,
checks and raises; so the two agree by construction and every error stays there.
A model's forward calls these dozens of times a step on small tensors, where the
Python entry's parsing cost more than the view itself."""

cdef object VIEW_GENERAL = None
cdef object RESHAPE_GENERAL = None
cdef object TRANSPOSE_GENERAL = None
cdef object PERMUTE_GENERAL = None
cdef object NARROW_GENERAL = None
cdef object SPLIT_GENERAL = None


def _set_view_entry(str name, fn):
    """The general entry `name`'s fast path falls back to (ember.ops.views, shape)."""
    global VIEW_GENERAL, RESHAPE_GENERAL, TRANSPOSE_GENERAL, PERMUTE_GENERAL
    global NARROW_GENERAL, SPLIT_GENERAL
    if name == "view":
        VIEW_GENERAL = fn
    elif name == "reshape":
        RESHAPE_GENERAL = fn
    elif name == "transpose":
        TRANSPOSE_GENERAL = fn
    elif name == "permute":
        PERMUTE_GENERAL = fn
    elif name == "narrow":
        NARROW_GENERAL = fn
    elif name == "split":
        SPLIT_GENERAL = fn
    else:
        raise ValueError(f"_set_view_entry: no fast path named {name!r}")


cdef inline void record_view(str op, TensorBase x, TensorBase out, dict attrs):
    if not em_grad_off and RECORDER is not None and x._requires_grad:
        RECORDER(op, (x,), out, attrs)


cdef int plain_ints(tuple args, int64_t *out) except -2:
    """args (f(2, 3) or f((2, 3)) / f([2, 3]) / f(Size)) as up to MAXD Python ints in
    [-1, 2**62): their count, or -1 when the general parser must look at them."""
    cdef object seq = args
    cdef Py_ssize_t n, i
    if len(args) == 1 and type(args[0]) is not int:
        seq = args[0]
        if not isinstance(seq, (tuple, list)):
            return -1
    n = len(seq)
    if n > MAXD:
        return -1
    for i in range(n):
        v = seq[i]
        if type(v) is not int or not (-1 <= <object>v < (1 << 62)):
            return -1
        out[i] = v
    return <int>n


cdef int resolved_shape(TensorBase x, tuple args, int64_t *sh) except -2:
    """view/reshape's shape for x with its one -1 resolved, or -1 (the general path:
    a parse it must do, or a shape that does not fit, which it reports)."""
    cdef int n = plain_ints(args, sh)
    cdef int i, neg = -1
    cdef int64_t known = 1, numel = x.numel_c()
    if n < 0:
        return -1
    for i in range(n):
        if sh[i] == -1:
            if neg >= 0:
                return -1
            neg = i
        elif sh[i] == 0:
            return -1          # rare; the general path's rules for 0 with -1
        elif em_mul_ovf(known, sh[i], &known):
            return -1
    if neg >= 0:
        if numel % known:
            return -1
        sh[neg] = numel // known
    elif known != numel:
        return -1
    return n


cdef bint view_strides(TensorBase x, int nn, const int64_t *nsh, int64_t *nst):
    """Strides that let shape nsh view x's elements in the same order (False when the
    layout makes that impossible): ops/views.py's _view_strides, for a shape whose
    element count is x's and has no 0."""
    cdef int on = x._ndim
    cdef const int64_t *osh = x._shape
    cdef const int64_t *ost = x._strides
    cdef int64_t st = 1, chunk_base, tensor_numel = 1, view_numel = 1
    cdef int d, view_d = nn - 1
    if on == 0:
        for d in range(nn - 1, -1, -1):
            nst[d] = st
            st *= nsh[d]
        return True
    chunk_base = ost[on - 1]
    cdef int64_t reach
    for d in range(on - 1, -1, -1):
        tensor_numel *= osh[d]
        # an int64 overflow anywhere: False, and the general path (Python ints) decides
        if em_mul_ovf(tensor_numel, chunk_base, &reach):
            return False
        if d == 0 or (osh[d - 1] != 1 and ost[d - 1] != reach):
            while view_d >= 0 and (view_numel < tensor_numel or nsh[view_d] == 1):
                if em_mul_ovf(view_numel, chunk_base, &nst[view_d]):
                    return False
                view_numel *= nsh[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base = ost[d - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


cdef inline tuple int_tuple(int n, const int64_t *v):
    return tuple([v[i] for i in range(n)])


cdef object view_or_none(object input, tuple shape):
    cdef int64_t sh[MAXD]
    cdef int64_t st[MAXD]
    if not isinstance(input, TensorBase):
        return None
    cdef TensorBase x = <TensorBase>input
    if x.numel_c() == 0:
        return None
    cdef int n = resolved_shape(x, shape, sh)
    if n < 0 or not view_strides(x, n, sh, st):
        return None
    cdef TensorBase out = view_of(x, n, sh, st, x._offset)
    record_view("view", x, out, {"shape": int_tuple(n, sh)})
    return out


def view(input, *shape):
    """The elements under a new shape, without copying; an error when the strides
    don't allow it (use reshape, which copies then)."""
    out = view_or_none(input, shape)
    return out if out is not None else VIEW_GENERAL(input, *shape)


def reshape(input, *shape):
    """The elements under a new shape: a view when the strides allow, else a copy."""
    out = view_or_none(input, shape)
    return out if out is not None else RESHAPE_GENERAL(input, *shape)


cdef int small_dim(object d, int ndim) except -2:
    """A plain int dim wrapped into [0, ndim), or -1 (the general path reports it)."""
    if type(d) is not int or ndim == 0 or not (-ndim <= <object>d < ndim):
        return -1
    return <int>(<object>d + ndim if d < 0 else d)


cdef TensorBase permuted(TensorBase x, int n, const int *dims):
    cdef int64_t sh[MAXD]
    cdef int64_t st[MAXD]
    for i in range(n):
        sh[i] = x._shape[dims[i]]
        st[i] = x._strides[dims[i]]
    cdef TensorBase out = view_of(x, n, sh, st, x._offset)
    record_view("permute", x, out, {"dims": tuple([dims[i] for i in range(n)])})
    return out


def transpose(input, dim0, dim1):
    """input with dims dim0 and dim1 swapped (a view)."""
    cdef int dims[MAXD]
    cdef int a, b, i
    if isinstance(input, TensorBase):
        x = <TensorBase>input
        a, b = small_dim(dim0, x._ndim), small_dim(dim1, x._ndim)
        if a >= 0 and b >= 0:
            for i in range(x._ndim):
                dims[i] = i
            dims[a], dims[b] = b, a
            return permuted(x, x._ndim, dims)
    return TRANSPOSE_GENERAL(input, dim0, dim1)


def permute(input, *args, dims=None):
    """Reorder the dims: result dim i is input dim dims[i]; permute(x, (1, 0)),
    permute(x, dims=(1, 0)) or x.permute(1, 0)."""
    cdef int64_t d[MAXD]
    cdef int p[MAXD]
    cdef int n, i, k
    cdef uint32_t seen = 0
    if dims is None and isinstance(input, TensorBase):
        x = <TensorBase>input
        n = plain_ints(args, d)
        if n == x._ndim and n > 0:
            for i in range(n):
                k = <int>d[i] if 0 <= d[i] < n else -1
                if k < 0 or seen & (1u << k):
                    break
                seen |= 1u << k
                p[i] = k
            else:
                return permuted(x, n, p)
    return PERMUTE_GENERAL(input, *args, dims=dims)


cdef TensorBase narrowed(TensorBase x, int d, int64_t start, int64_t length):
    cdef int64_t sh[MAXD]
    for i in range(x._ndim):
        sh[i] = x._shape[i]
    sh[d] = length
    cdef TensorBase out = view_of(x, x._ndim, sh, x._strides,
                                  x._offset + start * x._strides[d])
    record_view("narrow", x, out, {"dim": d, "start": start, "length": length})
    return out


def narrow(input, dim, start, length):
    """Elements start .. start+length-1 along dim, as a view."""
    cdef int d
    if isinstance(input, TensorBase) and type(start) is int and type(length) is int:
        x = <TensorBase>input
        d = small_dim(dim, x._ndim)
        if d >= 0 and 0 <= <object>start <= x._shape[d] and \
                0 <= <object>length <= x._shape[d] - <int64_t>start:
            return narrowed(x, d, start, length)
    return NARROW_GENERAL(input, dim, start, length)


def split(tensor, split_size_or_sections, dim=0):
    """Views of `split_size` elements along dim (the last may be shorter), or of the
    given list of sizes (which must add up to the dim's size)."""
    cdef int d
    cdef int64_t n, s, a
    if isinstance(tensor, TensorBase) and type(split_size_or_sections) is int:
        x = <TensorBase>tensor
        d = small_dim(dim, x._ndim)
        if d >= 0 and 0 < <object>split_size_or_sections < (1 << 62) and x._shape[d] > 0:
            n, s = x._shape[d], split_size_or_sections
            return tuple([narrowed(x, d, a, min(s, n - a)) for a in range(0, n, s)])
    return SPLIT_GENERAL(tensor, split_size_or_sections, dim)
