"""Reductions: an op-table reduction row over some dims of a tensor."""


def reduce(str name, TensorBase x not None, dims, bint keepdim=False):
    """Reduction row `name` over `dims` (a tuple of normalized dims, or None = all)."""
    cdef int r = RED_INDEX[name]
    cdef int nd = x._ndim, d, i
    cdef bint reduced[MAXD]
    for d in range(nd):
        reduced[d] = dims is None
    if dims is not None:
        for dim in dims:
            d = wrap_dim(dim, nd, name)
            if nd == 0:
                continue
            if reduced[d]:
                raise ValueError(f"{name}: dim {d} appears more than once in {tuple(dims)}")
            reduced[d] = True
    cdef int out_dtype = RED_OUT[r][x._dtype]
    if out_dtype < 0:
        raise TypeError(f"{name}: not supported for dtype {DTYPE_LIST[x._dtype]!r}")
    cdef int nreduced = 0, last = -1
    for d in range(nd):
        if reduced[d] and x._shape[d] > 1:
            nreduced += 1
        if x._shape[d] > 1:
            last = d
    # float16 / bfloat16 reduced along an outer dim would add into their own output
    # element by element (the outer loop), rounding every partial sum
    cdef bint low_outer = (x._dtype == FLOAT16 or x._dtype == BFLOAT16) and nreduced == 1 \
        and not reduced[last]
    if nreduced > 1 and x._dtype == FLOAT32 and x._storage.device.type_id == 0 and \
            x.contiguous_c():
        # the reduced dims are one block of a contiguous tensor (all of them, or a
        # bias's leading batch dims): the same reduction over one dim of a
        # (before, block, after) view, which float32 takes as is, not through a float64 copy
        block = _reduce_block(name, x, reduced, keepdim)
        if block is not None:
            return block
    if RED_WIDE[r] and KIND[x._dtype] == KIND_FLOAT and x._dtype != FLOAT64 and \
            x._storage.device.type_id == 0 and (
                nreduced > 1 or not x.contiguous_c() or low_outer):
        # The reduced elements don't form one run per output, so partial results
        # would round to the output dtype between runs: reduce in float64 instead.
        with _no_record():
            narrowed = cast_copy(reduce(name, cast_copy(x, FLOAT64), dims, keepdim), out_dtype)
        if needs_record(x, None, None):
            RECORDER(name, (x,), narrowed,
                     {"dim": tuple([d for d in range(nd) if reduced[d]]), "keepdim": keepdim})
        return narrowed
    cdef int64_t oshape[MAXD]
    cdef int64_t ostrides[MAXD]
    cdef int64_t istrides[MAXD]
    for d in range(nd):
        oshape[d] = 1 if reduced[d] else x._shape[d]
        if reduced[d] and x._shape[d] == 0 and name in ("amax", "amin"):
            raise ValueError(f"{name}: cannot reduce over dim {d} of size 0 (shape "
                             f"{tuple(x.shape)}): the maximum of nothing is undefined")
    cdef TensorBase o = new_tensor(nd, oshape, out_dtype, x._storage.device)
    cdef int64_t n_out = o.numel_c()
    if x._storage.device.type_id != 0:
        # the device's kernels accumulate float16/float32 sums wide in one pass
        backend_for(x._storage.device).reduce(
            name, x, tuple([d for d in range(nd) if reduced[d]]), o)
        return _reduce_finish(name, x, o, nd, reduced, keepdim)
    em_reduce_init(r, x._dtype)(o.ptr(), n_out)
    for d in range(nd):
        ostrides[d] = 0 if reduced[d] else o._strides[d] * o._itemsize
        istrides[d] = x._strides[d] * x._itemsize
    cdef em_reduce_inner_fn inner = em_reduce_inner(r, x._dtype)
    cdef em_reduce_outer_fn outer = em_reduce_outer(r, x._dtype)
    cdef em_reduce_init_fn init = em_reduce_init(r, x._dtype)
    cdef char *op_ = o.ptr()
    cdef char *ip = x.ptr()
    cdef int osize = o._itemsize
    # Partial results of a split reduction are stored in the output dtype and folded
    # by the reduction over that dtype: fine for float32 (its leaves already add in
    # float32), too coarse for float16 / bfloat16 sums, which never split.
    cdef em_reduce_inner_fn fold_inner = NULL
    cdef em_reduce_outer_fn fold_outer = NULL
    if not (RED_WIDE[r] and (x._dtype == FLOAT16 or x._dtype == BFLOAT16)):
        fold_inner = em_reduce_inner(r, o._dtype)
        fold_outer = em_reduce_outer(r, o._dtype)
    if x.numel_c() >= NBIG:
        with nogil:
            em_reduce(inner, outer, init, fold_inner, fold_outer, osize, op_, ostrides, ip,
                      istrides, nd, x._shape)
    else:
        em_reduce(inner, outer, init, fold_inner, fold_outer, osize, op_, ostrides, ip,
                  istrides, nd, x._shape)
    return _reduce_finish(name, x, o, nd, reduced, keepdim)


cdef object _reduce_block(str name, TensorBase x, bint *reduced, bint keepdim):
    """reduce() of a contiguous x whose reduced dims of size > 1 are consecutive (dims
    of size 1 between them may be either): over dim 1 of x viewed as (before, block,
    after), the result viewed in the shape reduce() gives; None when they are not."""
    cdef int nd = x._ndim, d, first = -1, end = -1, m = 0
    for d in range(nd):
        if x._shape[d] == 0:
            return None           # nothing to add up: the general path (and its errors)
        if reduced[d] and x._shape[d] > 1:
            if first < 0:
                first = d
            elif end >= 0:
                return None       # a kept dim of size > 1 between two reduced ones
        elif x._shape[d] > 1 and first >= 0 and end < 0:
            end = d
    if end < 0:
        end = nd
    cdef int64_t before = 1, block = 1, after = 1
    for d in range(nd):
        if d < first:
            before *= x._shape[d]
        elif d < end:
            block *= x._shape[d]
        else:
            after *= x._shape[d]
    cdef int64_t vshape[3]
    cdef int64_t vstrides[3]
    vshape[0], vshape[1], vshape[2] = before, block, after
    vstrides[0], vstrides[1], vstrides[2] = block * after, after, 1
    with _no_record():
        r = <TensorBase>reduce(name, view_of(x, 3, vshape, vstrides, x._offset), (1,), False)
    # r is contiguous (before, after): view it in the output's shape
    cdef int64_t oshape[MAXD]
    cdef int64_t ostrides[MAXD]
    for d in range(nd):
        if keepdim or not reduced[d]:
            oshape[m] = 1 if reduced[d] else x._shape[d]
            m += 1
    cdef int64_t st = 1
    for d in range(m - 1, -1, -1):
        ostrides[d] = st
        st *= oshape[d]
    result = view_of(r, m, oshape, ostrides, 0)
    if needs_record(x, None, None):
        RECORDER(name, (x,), result,
                 {"dim": tuple([d for d in range(nd) if reduced[d]]), "keepdim": keepdim})
    return result


cdef object _reduce_finish(str name, TensorBase x, TensorBase o, int nd, bint *reduced,
                           bint keepdim):
    """The keepdim=False view of a reduction's output, recorded for autograd."""
    cdef int64_t oshape[MAXD]
    cdef int64_t ostrides[MAXD]
    cdef int d
    cdef TensorBase result = o
    cdef int m = 0
    if not keepdim:
        for d in range(nd):
            if not reduced[d]:
                oshape[m] = o._shape[d]
                ostrides[m] = o._strides[d]
                m += 1
        result = view_of(o, m, oshape, ostrides, 0)
    if needs_record(x, None, None):
        RECORDER(name, (x,), result,
                 {"dim": tuple([d for d in range(nd) if reduced[d]]), "keepdim": keepdim})
    return result
