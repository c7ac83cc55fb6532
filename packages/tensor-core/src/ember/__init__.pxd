# `cimport ember` in a Cython extension: zero-copy access to tensor memory, result
# allocation, and ember ops called from C without Python-level dispatch.
#
#     cimport ember
#     def scale(ember.TensorBase x, double a):
#         if ember.dtype(x) != ember.EM_FLOAT64:
#             raise TypeError("scale: expected float64")
#         x = ember.contiguous(x)
#         cdef ember.TensorBase out = ember.empty_like(x)
#         cdef double *src = <double *>ember.data_ptr(x)
#         cdef double *dst = <double *>ember.data_ptr(out)
#         for i in range(ember.numel(x)):
#             dst[i] = a * src[i]
#         return out
#
# `ember.tensor_view(t)` gives the plain C struct of include/ember/tensor.h for C and
# CUDA code. Build with ember.utils.extension (Extension/BuildExtension or load), which
# puts get_include() on the Cython and C include paths. The accessors borrow: keep
# the tensor alive while you use its pointers. Strides are in elements.
# In a module that also calls ember from Python, `import ember as em` beside
# `cimport ember`: `ember.empty`, `ember.matmul`... then name the C-level functions here.
from libc.stdint cimport int64_t

from ember._C.core cimport (
    TensorBase, Storage, DType, Device, em_tensor_view, tensor_view, new_tensor, view_of,
    dtype_object, as_device, cast_copy, ew,
)
from ember._C.matmul cimport matmul

cdef extern from "ember/tensor.h":
    ctypedef enum em_dtype:
        EM_BOOL, EM_UINT8, EM_INT8, EM_INT16, EM_INT32, EM_INT64, EM_FLOAT16, EM_FLOAT32,
        EM_FLOAT64, EM_COMPLEX64, EM_COMPLEX128, EM_BFLOAT16, EM_UINT16, EM_UINT32,
        EM_UINT64, EM_NUM_DTYPES
    ctypedef enum em_device_type:
        EM_CPU, EM_CUDA, EM_OPENCL


# accessors ------------------------------------------------------------------------

cdef inline void *data_ptr(TensorBase t) noexcept:
    """Address of element (0, ..., 0): the storage plus the view's offset."""
    return t.ptr()

cdef inline int ndim(TensorBase t) noexcept nogil:
    return t._ndim

cdef inline const int64_t *shape(TensorBase t) noexcept nogil:
    return t._shape

cdef inline const int64_t *strides(TensorBase t) noexcept nogil:
    """In elements; may be 0 (broadcast) or negative."""
    return t._strides

cdef inline int64_t size(TensorBase t, int dim) noexcept nogil:
    """shape[dim] for 0 <= dim < ndim (not checked: this is the C fast path)."""
    return t._shape[dim]

cdef inline int64_t stride(TensorBase t, int dim) noexcept nogil:
    return t._strides[dim]

cdef inline int dtype(TensorBase t) noexcept nogil:
    """The dtype code, an EM_* constant (ember.float32.num in Python)."""
    return t._dtype

cdef inline int itemsize(TensorBase t) noexcept nogil:
    return t._itemsize

cdef inline Device device(TensorBase t):
    return t._storage.device

cdef inline int device_type(TensorBase t) noexcept:
    """EM_CPU, EM_CUDA or EM_OPENCL."""
    return t._storage.device.type_id

cdef inline int device_index(TensorBase t) noexcept:
    return t._storage.device.index

cdef inline bint is_contiguous(TensorBase t):
    return t.contiguous_c()

cdef inline int64_t numel(TensorBase t):
    return t.numel_c()


# allocation -----------------------------------------------------------------------

cdef inline TensorBase empty(int ndim, const int64_t *shape, int dtype, Device device=None):
    """A new contiguous tensor with uninitialised values (device None: the CPU)."""
    if dtype < 0 or dtype >= EM_NUM_DTYPES:
        raise ValueError(f"ember.empty: {dtype} is not a dtype code (0 to {EM_NUM_DTYPES - 1})")
    if ndim < 0 or ndim > 16:
        raise ValueError(f"ember.empty: ndim={ndim}; ember supports 0 to 16 dimensions")
    return new_tensor(ndim, shape, dtype, as_device("cpu") if device is None else device)

cdef inline TensorBase empty_like(TensorBase t, int dtype=-1):
    """A new contiguous tensor of t's shape and device; t's dtype unless given."""
    return empty(t._ndim, t._shape, t._dtype if dtype < 0 else dtype, t._storage.device)


# ember ops from Cython ------------------------------------------------------------

cdef inline TensorBase contiguous(TensorBase t):
    """t itself when row-major, else a row-major copy (t.contiguous())."""
    if t.contiguous_c():
        return t
    if t._requires_grad:
        return t.contiguous()     # the Python path records the copy for autograd
    return cast_copy(t, t._dtype)

ctypedef struct Op:
    int code          # row of ember/ops/table.py
    int nin           # its number of operands

cdef inline Op elementwise_op(str name) except *:
    """Look up an op-table row once (e.g. at module import): "add", "exp", "where"..."""
    from ember._C.core import OP_INDEX
    from ember.ops.table import ELEMENTWISE
    cdef Op op
    if name not in OP_INDEX:
        raise ValueError(f"ember.elementwise_op: no elementwise op named {name!r}")
    op.code = OP_INDEX[name]
    op.nin = ELEMENTWISE[op.code].arity
    return op

cdef inline object elementwise(Op op, object a, object b=None, object c=None,
                               object out=None):
    """Run an op-table row on tensors/Python scalars (broadcasting, promotion and
    autograd recording as in Python), without the by-name dispatch."""
    if (b is not None and op.nin < 2) or (c is not None and op.nin < 3):
        raise TypeError(f"{_op_name(op)}: takes {op.nin} operand(s), got more")
    r = ew(op.code, a, b, c, op.nin, out)
    if r is NotImplemented:
        raise TypeError(f"{_op_name(op)}: unsupported operand types "
                        f"{', '.join([type(x).__name__ for x in (a, b, c)[:op.nin]])}")
    return r

cdef inline str _op_name(Op op):
    from ember._C.core import elementwise_names      # error path only
    return elementwise_names()[op.code]
