# kernels: dropout.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU dropout and its backward (kernels/cpu/dropout.c), for ember.ops.dropout; other
backends provide functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor

include "float_kernels.pxi"


# dropout ---------------------------------------------------------------------------

def dropout(TensorBase x not None, double p, uint64_t seed, uint64_t offset):
    """(y, mask) for a contiguous tensor: element i is dropped when the float32
    uniform of stream word offset + i is below p (see dropout.c); kept elements are
    scaled by 1 / (1 - p). mask is bool, 1 where kept."""
    _check(x, "dropout")
    cdef TensorBase y = _like(x)
    cdef TensorBase mask = new_tensor(x._ndim, x._shape, BOOL, x._storage.device)
    cdef int64_t n = x.numel_c()
    cdef char *xp = x.ptr()
    cdef char *yp = y.ptr()
    cdef uint8_t *mp = <uint8_t *>mask.ptr()
    if n:
        with nogil:
            if x._dtype == FLOAT32:
                em_dropout_f32(<const float *>xp, <float *>yp, mp, n, p, seed, offset)
            else:
                em_dropout_f64(<const double *>xp, <double *>yp, mp, n, p, seed, offset)
    return y, mask


def dropout_backward(TensorBase grad not None, TensorBase mask not None, double scale):
    """grad * mask * scale for contiguous grad and bool mask of the same shape."""
    _check(grad, "dropout_backward")
    if mask._storage.device.type != "cpu" or not mask.contiguous_c() or mask._dtype != BOOL \
            or mask.shape != grad.shape:
        raise ValueError(f"dropout_backward: mask must be a contiguous bool tensor of shape "
                         f"{tuple(grad.shape)}, got {tuple(mask.shape)} {mask.dtype!r}")
    cdef TensorBase dx = _like(grad)
    cdef int64_t n = grad.numel_c()
    cdef char *gp = grad.ptr()
    cdef char *dp = dx.ptr()
    cdef const uint8_t *mp = <const uint8_t *>mask.ptr()
    if n:
        with nogil:
            if grad._dtype == FLOAT32:
                em_dropout_backward_f32(<const float *>gp, mp, <float *>dp, n, scale)
            else:
                em_dropout_backward_f64(<const double *>gp, mp, <double *>dp, n, scale)
    return dx
