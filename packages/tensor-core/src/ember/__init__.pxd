# `cimport ember` in a Cython extension: zero-copy access to tensor memory.
#
#     cimport ember
#     def total(ember.TensorBase t):
#         cdef ember.em_tensor_view v = ember.tensor_view(t)
#         ...   # v.data, v.offset, v.shape[i], v.strides[i] (elements), v.dtype
#
# Build with ember.utils.extension.get_include() on the include path.
from ember._C.core cimport (
    TensorBase, Storage, DType, Device, em_tensor_view, tensor_view, new_tensor, view_of,
    dtype_object,
)
