# kernels: softmax.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU softmax and log_softmax over the last dim of contiguous rows (kernels/cpu/softmax.c),
for ember.ops.softmax; other backends provide functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor

include "float_kernels.pxi"


def softmax_rows(TensorBase x not None, bint log_softmax):
    """softmax (or log_softmax) over the last dim of a contiguous float tensor."""
    _check(x, "softmax")
    cdef TensorBase y = new_tensor(x._ndim, x._shape, x._dtype, x._storage.device)
    cdef int64_t n = x._shape[x._ndim - 1] if x._ndim else 1
    cdef int64_t rows = x.numel_c() // n if n else 0
    if rows == 0 or n == 0:
        return y
    cdef char *xp = x.ptr()
    cdef char *yp = y.ptr()
    if x._dtype == FLOAT32:
        with nogil:
            em_softmax_rows_f32(<const float *>xp, <float *>yp, rows, n, log_softmax)
    else:
        with nogil:
            em_softmax_rows_f64(<const double *>xp, <double *>yp, rows, n, log_softmax)
    return y


def softmax_backward_rows(TensorBase grad not None, TensorBase out not None, bint log_softmax):
    """The gradient of softmax_rows w.r.t. its input, from the output and grad."""
    _check(grad, "softmax_backward")
    _check(out, "softmax_backward")
    if grad.shape != out.shape or grad._dtype != out._dtype:
        raise ValueError(f"softmax_backward: grad {tuple(grad.shape)} {grad.dtype!r} does not "
                         f"match output {tuple(out.shape)} {out.dtype!r}")
    cdef TensorBase dx = new_tensor(out._ndim, out._shape, out._dtype, out._storage.device)
    cdef int64_t n = out._shape[out._ndim - 1] if out._ndim else 1
    cdef int64_t rows = out.numel_c() // n if n else 0
    if rows == 0 or n == 0:
        return dx
    cdef char *gp = grad.ptr()
    cdef char *op = out.ptr()
    cdef char *dp = dx.ptr()
    if out._dtype == FLOAT32:
        with nogil:
            em_softmax_backward_rows_f32(<const float *>gp, <const float *>op, <float *>dp,
                                         rows, n, log_softmax)
    else:
        with nogil:
            em_softmax_backward_rows_f64(<const double *>gp, <const double *>op, <double *>dp,
                                         rows, n, log_softmax)
    return dx
