# cython: language_level=3
"""The Cython half of the fused op: check the arguments, allocate the results with
ember, and hand raw pointers to the C kernels in bias_gelu.c (without the GIL)."""
cimport ember
from libc.stdint cimport int64_t

cdef extern from "bias_gelu.h" nogil:
    void bias_gelu_forward_f32(const float *x, const float *bias, float *y,
                               int64_t rows, int64_t cols)
    void bias_gelu_forward_f64(const double *x, const double *bias, double *y,
                               int64_t rows, int64_t cols)
    void bias_gelu_backward_f32(const float *grad, const float *x, const float *bias,
                                float *dx, float *dbias, int64_t rows, int64_t cols)
    void bias_gelu_backward_f64(const double *grad, const double *x, const double *bias,
                                double *dx, double *dbias, int64_t rows, int64_t cols)


cdef str describe(ember.TensorBase t):
    shape = tuple([ember.size(t, d) for d in range(ember.ndim(t))])
    return f"{ember.dtype_object(ember.dtype(t)).name} {shape} on {ember.device(t)}"


cdef ember.TensorBase checked(str op, str what, object t, ember.TensorBase like):
    """t as a contiguous CPU float tensor matching `like`, or a clear error."""
    if not isinstance(t, ember.TensorBase):
        raise TypeError(f"{op}: {what} must be an ember tensor, got {type(t).__name__}")
    cdef ember.TensorBase x = t
    if ember.dtype(x) != ember.EM_FLOAT32 and ember.dtype(x) != ember.EM_FLOAT64:
        raise TypeError(f"{op}: {what} must be float32 or float64, got {describe(x)}")
    if ember.device_type(x) != ember.EM_CPU:
        raise ValueError(f"{op}: only CPU tensors have a kernel here, got {what} {describe(x)}")
    if like is not None and ember.dtype(x) != ember.dtype(like):
        raise TypeError(f"{op}: {what} is {describe(x)} but x is {describe(like)}")
    return ember.contiguous(x)


cdef int64_t check_bias(str op, ember.TensorBase x, ember.TensorBase bias) except -1:
    """The number of columns: x's last dim, which bias must match."""
    if ember.ndim(x) == 0:
        raise ValueError(f"{op}: x must have at least one dimension, got {describe(x)}")
    cdef int64_t cols = ember.size(x, ember.ndim(x) - 1)
    if ember.ndim(bias) != 1 or ember.size(bias, 0) != cols:
        raise ValueError(f"{op}: bias must have shape ({cols},) to match x's last dim, "
                         f"got bias {describe(bias)} for x {describe(x)}")
    return cols


def bias_gelu_forward(x, bias):
    """gelu(x + bias) for x of shape (..., C) and bias of shape (C,)."""
    cdef ember.TensorBase xc = checked("bias_gelu", "x", x, None)
    cdef ember.TensorBase bc = checked("bias_gelu", "bias", bias, xc)
    cdef int64_t cols = check_bias("bias_gelu", xc, bc)
    cdef int64_t rows = ember.numel(xc) // cols if cols else 0
    cdef ember.TensorBase y = ember.empty_like(xc)
    cdef void *px = ember.data_ptr(xc)
    cdef void *pb = ember.data_ptr(bc)
    cdef void *py = ember.data_ptr(y)
    cdef bint f32 = ember.dtype(xc) == ember.EM_FLOAT32
    with nogil:
        if f32:
            bias_gelu_forward_f32(<float *>px, <float *>pb, <float *>py, rows, cols)
        else:
            bias_gelu_forward_f64(<double *>px, <double *>pb, <double *>py, rows, cols)
    return y


def bias_gelu_backward(grad, x, bias):
    """(dL/dx, dL/dbias) of y = gelu(x + bias), given grad = dL/dy."""
    cdef ember.TensorBase xc = checked("bias_gelu_backward", "x", x, None)
    cdef ember.TensorBase bc = checked("bias_gelu_backward", "bias", bias, xc)
    cdef ember.TensorBase gc = checked("bias_gelu_backward", "grad", grad, xc)
    cdef int64_t cols = check_bias("bias_gelu_backward", xc, bc)
    cdef int d
    if ember.ndim(gc) != ember.ndim(xc) or any(
            [ember.size(gc, d) != ember.size(xc, d) for d in range(ember.ndim(xc))]):
        raise ValueError(f"bias_gelu_backward: grad {describe(gc)} does not match "
                         f"x {describe(xc)}")
    cdef int64_t rows = ember.numel(xc) // cols if cols else 0
    cdef ember.TensorBase dx = ember.empty_like(xc)
    cdef ember.TensorBase dbias = ember.empty_like(bc)
    cdef void *pg = ember.data_ptr(gc)
    cdef void *px = ember.data_ptr(xc)
    cdef void *pb = ember.data_ptr(bc)
    cdef void *pdx = ember.data_ptr(dx)
    cdef void *pdb = ember.data_ptr(dbias)
    cdef bint f32 = ember.dtype(xc) == ember.EM_FLOAT32
    with nogil:
        if f32:
            bias_gelu_backward_f32(<float *>pg, <float *>px, <float *>pb, <float *>pdx,
                                   <float *>pdb, rows, cols)
        else:
            bias_gelu_backward_f64(<double *>pg, <double *>px, <double *>pb, <double *>pdx,
                                   <double *>pdb, rows, cols)
    return dx, dbias
