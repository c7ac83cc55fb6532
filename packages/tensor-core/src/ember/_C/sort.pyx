# kernels: sort.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU kernels of sorting and binary search (kernels/cpu/sort.c), for ember.ops.sort;
other backends provide functions of the same names and arguments."""
from libc.stdint cimport int64_t
from ember._C.core cimport TensorBase, check_bounds

cdef extern from "ember_index.h" nogil:
    int em_sort_rows(int dtype, char *vals, int64_t *idx, int64_t nrows, int64_t n,
                     int descending)
    void em_searchsorted(int dtype, const char *seq, int64_t seq_row_stride, int64_t n,
                         const char *vals, int64_t nrows, int64_t m, int64_t *out, int right)

DEF INT64 = 5
DEF BOOL = 0

include "kernel_checks.pxi"


def sort_rows(TensorBase vals, TensorBase idx, int64_t n, bint descending):
    """Sort the contiguous rows of n elements of vals in place (stable, NaN largest);
    idx (contiguous int64, same size) receives the original positions."""
    cpu_only(vals, "sort")
    cdef int64_t total = vals.numel_c()
    if not dense(vals) or not dense(idx) or idx._dtype != INT64 or \
            idx.numel_c() != total or (n == 0 and total) or (n and total % n):
        raise ValueError("sort: internal error: bad layout")
    if total == 0:
        return vals
    cdef int64_t nrows = total // n
    cdef int rc, dtype = vals._dtype
    cdef char *vp = vals.ptr()
    cdef int64_t *ip = <int64_t *>idx.ptr()
    with nogil:
        rc = em_sort_rows(dtype, vp, ip, nrows, n, descending)
    if rc:
        raise MemoryError(f"sort: out of memory sorting rows of {n} elements")
    return vals


def searchsorted(TensorBase seq, bint shared, TensorBase vals, TensorBase out, bint right):
    """out[r, i] = insertion point of vals[r, i] in row r of seq (row 0 for all when
    shared). All contiguous; seq rows have seq.shape[-1] elements, vals rows
    vals.shape[-1]."""
    cpu_only(seq, "searchsorted")
    if seq._dtype != vals._dtype or out._dtype != INT64 or not (
            dense(seq) and dense(vals) and dense(out)) or \
            out.numel_c() != vals.numel_c() or seq._ndim == 0 or vals._ndim == 0:
        raise ValueError("searchsorted: internal error: bad layout")
    cdef int64_t n = seq._shape[seq._ndim - 1], m = vals._shape[vals._ndim - 1]
    if vals.numel_c() == 0:
        return out
    cdef int64_t nrows = vals.numel_c() // m
    if not shared and seq.numel_c() != nrows * n:
        raise ValueError("searchsorted: internal error: row count mismatch")
    cdef int dtype = seq._dtype
    cdef int64_t stride = 0 if shared else n
    cdef const char *sp = seq.ptr()
    cdef const char *vp = vals.ptr()
    cdef int64_t *op_ = <int64_t *>out.ptr()
    with nogil:
        em_searchsorted(dtype, sp, stride, n, vp, nrows, m, op_, right)
    return out
