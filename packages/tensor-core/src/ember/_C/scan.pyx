# kernels: scan.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU kernel of cumulative sums and products (kernels/cpu/scan.c), for ember.ops.scan;
other backends provide a function of the same name and arguments."""
from libc.stdint cimport int64_t
from ember._C.core cimport TensorBase, check_bounds

cdef extern from "ember_index.h" nogil:
    int em_scan(int op, int dtype, char *data, int64_t outer, int64_t n, int64_t inner)

DEF INT64 = 5
DEF BOOL = 0

include "kernel_checks.pxi"


def scan(str op, TensorBase x, int64_t outer, int64_t n, int64_t inner):
    """Inclusive cumulative sum/prod in place along the middle dim of contiguous x
    viewed as (outer, n, inner)."""
    cpu_only(x, op)
    if not dense(x) or outer * n * inner != x.numel_c() or x._dtype == BOOL:
        raise ValueError(f"{op}: internal error: bad layout")
    cdef int rc, dtype = x._dtype, code = 0 if op == "cumsum" else 1
    cdef char *p = x.ptr()
    with nogil:
        rc = em_scan(code, dtype, p, outer, n, inner)
    if rc:
        raise MemoryError(f"{op}: out of memory")
    return x
