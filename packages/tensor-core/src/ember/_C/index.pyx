# kernels: index.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU kernels of indexing: gather, scatter, nonzero, compress (kernels/cpu/index.c),
for ember.ops.index; other backends provide functions of the same names and arguments.

The Python modules decide shapes, dtypes and layouts; the functions here check that
every pointer the C loops will form stays inside its storage before they run (index
values are checked by the loops themselves), so a wrong layout from the Python side
raises instead of corrupting memory.
"""
from libc.stdint cimport int64_t, uint8_t
from ember._C.core cimport TensorBase, new_tensor, check_bounds

cdef extern from "ember_index.h" nogil:
    enum:
        EM_MAX_INDICES
    ctypedef struct em_index_arg:
        const int64_t *data
        int64_t strides[16]
        int64_t step
        int64_t size
    int64_t em_index_normalize(int64_t *idx, int64_t n, int64_t size, int allow_negative)
    int em_index_gather(int itemsize, int ndim, const int64_t *shape,
                        char *out, const int64_t *out_strides,
                        const char *src, const int64_t *src_strides,
                        int nidx, const em_index_arg *idx)
    int em_index_scatter(int dtype, int op, int ndim, const int64_t *shape,
                         char *dst, const int64_t *dst_strides,
                         const char *src, const int64_t *src_strides,
                         int nidx, const em_index_arg *idx)
    int64_t em_count_true(const uint8_t *mask, int64_t n)
    void em_compress(int itemsize, const char *src, int64_t ss, const uint8_t *mask, int64_t n,
                     int64_t count, char *out)
    void em_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t count,
                    int64_t *out)

DEF MAXD = 16
DEF NBIG = 1 << 16      # release the GIL above this many elements
DEF INT64 = 5
DEF BOOL = 0

SCATTER_OPS = {None: 0, "assign": 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2,
               "amax": 3, "amin": 4}


include "kernel_checks.pxi"


cdef int fill_args(list indices, int ndim, const int64_t *shape, em_index_arg *args,
                   int itemsize, int64_t *xshape, int64_t *xstrides, str op) except -1:
    """indices: [(int64 tensor, strides over the iteration dims, step in elements of
    the indexed tensor, size)] -> C args. xshape / xstrides hold the indexed tensor's
    layout over the iteration dims; each index appends a dim of its size and step,
    whose values it ranges over. Returns the number of dims of that layout."""
    cdef TensorBase t
    cdef int k, d
    cdef int64_t st[MAXD]
    if len(indices) > EM_MAX_INDICES:
        raise IndexError(f"{op}: at most {EM_MAX_INDICES} index tensors are supported")
    for k, (tensor, strides, step, size) in enumerate(indices):
        t = <TensorBase?>tensor
        cpu_only(t, op)
        if t._dtype != INT64:
            raise TypeError(f"{op}: internal error: index tensors must be int64")
        if len(strides) != ndim:
            raise ValueError(f"{op}: internal error: {len(strides)} index strides for "
                             f"{ndim} dims")
        for d in range(MAXD):
            args[k].strides[d] = 0
        for d in range(ndim):
            st[d] = strides[d]
            args[k].strides[d] = strides[d]
        check_span(t, ndim, shape, st, op)
        args[k].data = <const int64_t *>t.ptr()
        args[k].step = <int64_t>step * itemsize
        args[k].size = size
        xshape[ndim + k] = max(size, 1)   # size 0: no index value is valid, none is read
        xstrides[ndim + k] = step
    return ndim + len(indices)


def normalize(TensorBase idx, int64_t size, bint allow_negative):
    """Check a contiguous int64 index against size and wrap its negative values in
    place; returns the position of the first bad value, or -1."""
    cpu_only(idx, "index")
    if idx._dtype != INT64 or not dense(idx):
        raise TypeError("normalize: expects a contiguous int64 tensor")
    return em_index_normalize(<int64_t *>idx.ptr(), idx.numel_c(), size, allow_negative)


def gather(TensorBase out, TensorBase src, tuple src_strides, list indices):
    """out[p] = src[base + p . src_strides + sum_k index_k[p] * step_k] over out's
    shape (elements); see kernels/cpu/index.c."""
    cdef int nd = out._ndim, d
    cdef int64_t sst[MAXD]
    cdef int64_t ost[MAXD]
    cdef int64_t xsh[2 * MAXD]
    cdef int64_t xst[2 * MAXD]
    cdef em_index_arg args[MAXD]
    cpu_only(out, "index")
    cpu_only(src, "index")
    if out._dtype != src._dtype or len(src_strides) != nd:
        raise TypeError("gather: internal error: dtype or stride mismatch")
    for d in range(nd):
        sst[d] = xst[d] = src_strides[d]
        xsh[d] = out._shape[d]
    cdef int nx = fill_args(indices, nd, out._shape, args, src._itemsize, xsh, xst, "index")
    check_span(src, nx, xsh, xst, "index")
    check_span(out, nd, out._shape, out._strides, "index")
    for d in range(nd):
        sst[d] *= src._itemsize
        ost[d] = out._strides[d] * out._itemsize
    cdef int nidx = len(indices), rc
    cdef int itemsize = src._itemsize
    cdef char *op_ = out.ptr()
    cdef const char *sp = src.ptr()
    if out.numel_c() >= NBIG:
        with nogil:
            rc = em_index_gather(itemsize, nd, out._shape, op_, ost, sp, sst, nidx, args)
    else:
        rc = em_index_gather(itemsize, nd, out._shape, op_, ost, sp, sst, nidx, args)
    if rc:
        raise IndexError("index: an index value is out of range")
    return out


def scatter(TensorBase dst, tuple dst_strides, TensorBase src, tuple src_strides, tuple shape,
            list indices, reduce=None):
    """dst[base + p . dst_strides + sum_k index_k[p] * step_k] (op)= src[base + p .
    src_strides] for p in shape; op: None/'assign', 'add', 'multiply', 'amax', 'amin'.
    Runs in order, so with repeated indices the last write wins."""
    cdef int nd = len(shape), d
    cdef int64_t sh[MAXD]
    cdef int64_t dst_[MAXD]
    cdef int64_t sst[MAXD]
    cdef int64_t xsh[2 * MAXD]
    cdef int64_t xst[2 * MAXD]
    cdef em_index_arg args[MAXD]
    cdef int64_t n = 1
    cdef int op = SCATTER_OPS[reduce]
    cpu_only(dst, "index_put")
    cpu_only(src, "index_put")
    if dst._dtype != src._dtype or len(dst_strides) != nd or len(src_strides) != nd:
        raise TypeError("scatter: internal error: dtype or stride mismatch")
    for d in range(nd):
        sh[d] = xsh[d] = shape[d]
        dst_[d] = xst[d] = dst_strides[d]
        sst[d] = src_strides[d]
        n *= sh[d]
    cdef int nx = fill_args(indices, nd, sh, args, dst._itemsize, xsh, xst, "index_put")
    check_span(dst, nx, xsh, xst, "index_put")
    check_span(src, nd, sh, sst, "index_put")
    for d in range(nd):
        dst_[d] *= dst._itemsize
        sst[d] *= src._itemsize
    cdef int nidx = len(indices), rc, dtype = dst._dtype
    cdef char *dp = dst.ptr()
    cdef const char *sp = src.ptr()
    if n >= NBIG:
        with nogil:
            rc = em_index_scatter(dtype, op, nd, sh, dp, dst_, sp, sst, nidx, args)
    else:
        rc = em_index_scatter(dtype, op, nd, sh, dp, dst_, sp, sst, nidx, args)
    if rc:
        raise IndexError("index_put: an index value is out of range")
    return dst


def nonzero(TensorBase mask):
    """(count, ndim) int64 coordinates of the true elements of a contiguous bool tensor."""
    cpu_only(mask, "nonzero")
    if mask._dtype != BOOL or not dense(mask):
        raise TypeError("nonzero: internal error: expects a contiguous bool tensor")
    cdef int64_t n = em_count_true(<const uint8_t *>mask.ptr(), mask.numel_c())
    cdef int64_t sh[2]
    sh[0] = n
    sh[1] = mask._ndim
    cdef TensorBase out = new_tensor(2, sh, INT64, mask._storage.device)
    if n:
        em_nonzero(<const uint8_t *>mask.ptr(), mask._ndim, mask._shape, n, <int64_t *>out.ptr())
    return out


def compress(TensorBase src, int64_t stride, TensorBase mask):
    """The elements of src read as a run of mask.numel() items `stride` elements apart
    (from src's first element) where the contiguous bool mask is true, as a new 1-d
    tensor: x[mask] in one pass."""
    cpu_only(src, "getitem")
    if mask._dtype != BOOL or not dense(mask):
        raise TypeError("compress: internal error: expects a contiguous bool mask")
    cdef int64_t n = mask.numel_c()
    cdef int64_t sh[1]
    cdef int64_t st[1]
    sh[0] = n
    st[0] = stride
    check_span(src, 1, sh, st, "getitem")
    cdef const uint8_t *mp = <const uint8_t *>mask.ptr()
    sh[0] = em_count_true(mp, n)
    cdef TensorBase out = new_tensor(1, sh, src._dtype, src._storage.device)
    cdef int itemsize = src._itemsize
    cdef int64_t count = sh[0], bstride = stride * src._itemsize
    cdef const char *sp = src.ptr()
    cdef char *op_ = out.ptr()
    with nogil:
        em_compress(itemsize, sp, bstride, mp, n, count, op_)
    return out
