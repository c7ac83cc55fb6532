# The layout checks every CPU kernel module of ember._C runs before its C loops
# (included by index.pyx, sort.pyx and scan.pyx).

cdef inline bint dense(TensorBase t):
    """Row-major without gaps (an empty tensor always is: nothing is read)."""
    return t.numel_c() == 0 or t.contiguous_c()


cdef int cpu_only(TensorBase t, str op) except -1:
    if t._storage.device.type_id != 0:
        # the dispatch's wording (backends/base.py): a device tensor reached a CPU kernel
        raise NotImplementedError(f"{op}: no kernel for {t.device} ({t.dtype.name})")
    return 0


cdef int check_span(TensorBase t, int ndim, const int64_t *shape, const int64_t *strides,
                    str op) except -1:
    """Every element t's base + sum(p[d] * strides[d]) for p in shape (elements) must
    lie inside t's storage (core's one checked layout validator)."""
    return check_bounds(t._storage.nbytes // t._itemsize, ndim, shape, strides, t._offset, op)
