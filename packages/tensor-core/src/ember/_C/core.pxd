# Public Cython view of ember's core types (`from ember._C.core cimport TensorBase`).
# Sibling extension modules and extension authors cimport this; see ember/__init__.pxd.
from libc.stdint cimport int64_t, uint64_t

cdef extern from "ember/tensor.h":
    enum:
        EMBER_MAX_DIMS
    ctypedef struct em_tensor_view:
        void *data
        int64_t offset
        int dtype
        int itemsize
        int ndim
        int device_type
        int device_index
        const int64_t *shape
        const int64_t *strides

cdef class DType:
    cdef readonly int num
    cdef readonly str name
    cdef readonly int itemsize
    cdef readonly str kind          # "bool", "int", "float"
    cdef readonly bint is_signed

cdef class Device:
    cdef readonly str type
    cdef readonly int index       # -1 when unspecified ("cuda" vs "cuda:0")
    cdef int type_id

cdef class Storage:
    cdef char *data               # host pointer (cpu) or device address (cuda)
    cdef readonly Py_ssize_t nbytes
    cdef readonly Device device
    cdef readonly object handle   # backend object for devices without raw pointers
    cdef readonly object owner    # keeps borrowed memory alive (numpy, dlpack, shm)
    cdef public int64_t version   # bumped by every in-place write
    cdef bint owns_data
    cdef readonly bint inference  # allocated under inference_mode (Tensor.is_inference)
    cdef object __weakref__

cdef class TensorBase:
    cdef Storage _storage
    cdef int _dtype
    cdef int _itemsize
    cdef int _ndim
    cdef int64_t _offset
    cdef int64_t _shape[16]
    cdef int64_t _strides[16]
    cdef bint _requires_grad
    cdef public object _grad
    cdef public object _grad_fn
    cdef public object _autograd      # ember.autograd's per-tensor state (hooks, ...)
    cdef object __weakref__

    cdef inline char *ptr(self):
        return self._storage.data + self._offset * self._itemsize
    cdef int64_t numel_c(self)
    cdef bint contiguous_c(self)

cdef DType dtype_object(int num)
cdef TensorBase new_tensor(int ndim, const int64_t *shape, int dtype, Device device)
cdef TensorBase view_of(TensorBase base, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset)
cdef em_tensor_view tensor_view(TensorBase t)
# the one checked layout validator (ValueError naming op) and the in-place write checks
cdef int check_bounds(int64_t capacity, int ndim, const int64_t *shape,
                      const int64_t *strides, int64_t offset, str op) except -1
cdef int check_write(TensorBase x, str op, bint overlap=*) except -1
# entry points for `cimport ember` (ember/__init__.pxd): no Python-level dispatch
cpdef Device as_device(object d)
cpdef Device resolve_device(Device device)
cdef TensorBase cast_copy(TensorBase src, int dtype)
cdef object ew(int op, object x0, object x1, object x2, int nin, object out)
