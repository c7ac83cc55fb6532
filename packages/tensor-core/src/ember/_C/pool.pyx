# kernels: pool.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""Pooling kernels (kernels/cpu/pool.c) over (N, C, H, W) float32/float64 tensors,
contiguous or channels_last (whose NHWC storage the *_nhwc kernels read as it is, bfloat16
too: float32 sums rounded once; the result has the input's layout); 1-d pooling comes here
as H = 1. Callers (ember.ops.pool) validate the arguments, compute the output size and lay
the inputs out; the checks here only keep a direct caller from reading out of bounds."""
from libc.stdint cimport int64_t
from ember._C.core cimport Device, TensorBase, new_tensor, view_of

cdef extern from *:
    """
    /* pool.c's error codes */
    #define EM_POOL_EINDEX 1
    #define EM_POOL_ENOMEM 2
    int em_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                      const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                      const int64_t *s, const int64_t *p, const int64_t *d);
    int em_avg_pool2d(int f64, const void *x, void *y, int64_t planes, const int64_t *in_hw,
                      const int64_t *out_hw, const int64_t *k, const int64_t *s,
                      const int64_t *p, int count_include_pad, int64_t divisor);
    int em_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                               const int64_t *s, const int64_t *p, int count_include_pad,
                               int64_t divisor);
    int em_adaptive_avg_pool2d(int f64, const void *x, void *y, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw);
    int em_adaptive_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                                        const int64_t *in_hw, const int64_t *out_hw);
    int em_adaptive_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw);
    int em_max_pool_backward(int f64, const void *dy, const int64_t *ix, void *dx,
                             int64_t planes, int64_t in_size, int64_t out_size);
    int em_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n, int64_t C,
                           const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                           const int64_t *s, const int64_t *p, const int64_t *d);
    int em_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                           const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                           const int64_t *s, const int64_t *p, int count_include_pad,
                           int64_t divisor);
    int em_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n, int64_t C,
                                    const int64_t *in_hw, const int64_t *out_hw,
                                    const int64_t *k, const int64_t *s, const int64_t *p,
                                    int count_include_pad, int64_t divisor);
    int em_adaptive_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                                    const int64_t *in_hw, const int64_t *out_hw);
    int em_adaptive_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n,
                                             int64_t C, const int64_t *in_hw,
                                             const int64_t *out_hw);
    int em_adaptive_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n,
                                    int64_t C, const int64_t *in_hw, const int64_t *out_hw);
    int em_max_pool_backward_nhwc(int wt, const void *dy, const int64_t *ix, void *dx,
                                  int64_t n, int64_t C, int64_t in_size, int64_t out_size);
    """
    int EM_POOL_EINDEX
    int EM_POOL_ENOMEM
    int em_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                      const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                      const int64_t *s, const int64_t *p, const int64_t *d) nogil
    int em_avg_pool2d(int f64, const void *x, void *y, int64_t planes, const int64_t *in_hw,
                      const int64_t *out_hw, const int64_t *k, const int64_t *s,
                      const int64_t *p, int count_include_pad, int64_t divisor) nogil
    int em_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                               const int64_t *s, const int64_t *p, int count_include_pad,
                               int64_t divisor) nogil
    int em_adaptive_avg_pool2d(int f64, const void *x, void *y, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw) nogil
    int em_adaptive_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                                        const int64_t *in_hw, const int64_t *out_hw) nogil
    int em_adaptive_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                               const int64_t *in_hw, const int64_t *out_hw) nogil
    int em_max_pool_backward(int f64, const void *dy, const int64_t *ix, void *dx,
                             int64_t planes, int64_t in_size, int64_t out_size) nogil
    int em_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n, int64_t C,
                           const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                           const int64_t *s, const int64_t *p, const int64_t *d) nogil
    int em_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                           const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                           const int64_t *s, const int64_t *p, int count_include_pad,
                           int64_t divisor) nogil
    int em_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n, int64_t C,
                                    const int64_t *in_hw, const int64_t *out_hw,
                                    const int64_t *k, const int64_t *s, const int64_t *p,
                                    int count_include_pad, int64_t divisor) nogil
    int em_adaptive_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                                    const int64_t *in_hw, const int64_t *out_hw) nogil
    int em_adaptive_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n,
                                             int64_t C, const int64_t *in_hw,
                                             const int64_t *out_hw) nogil
    int em_adaptive_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n,
                                    int64_t C, const int64_t *in_hw, const int64_t *out_hw) nogil
    int em_max_pool_backward_nhwc(int wt, const void *dy, const int64_t *ix, void *dx,
                                  int64_t n, int64_t C, int64_t in_size, int64_t out_size) nogil

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the thread pool lives in ember._C.core (cpu_api.h)

include "channels_last.pxi"

DEF FLOAT32 = 7
DEF FLOAT64 = 8
DEF BFLOAT16 = 11
DEF INT64 = 5
DEF NOGIL_MIN = 1 << 14   # release the GIL above this many output elements


cdef int64_t check(TensorBase t, str op, int dtype=-1) except -1:
    """The number of (N, C) planes of a contiguous or channels_last 4-d CPU tensor of
    float32/float64, or bfloat16 when channels_last (or of `dtype`)."""
    cdef bint cl = nhwc(t)
    if t._storage.device.type != "cpu" or not (t.contiguous_c() or cl) or t._ndim != 4 or (
            not (t._dtype in (FLOAT32, FLOAT64) or (cl and t._dtype == BFLOAT16))
            if dtype < 0 else t._dtype != dtype):
        want = "float32/float64 (channels_last: or bfloat16)" if dtype < 0 else "int64"
        raise ValueError(f"{op}: internal kernel needs a contiguous or channels_last 4-d "
                         f"{want} CPU tensor, got {tuple(t.shape)} {t.dtype!r} on {t.device}")
    return t._shape[0] * t._shape[1]


cdef inline int work_type(TensorBase t):
    """The kernels' type code: 0 float32, 1 float64, 2 bfloat16 (channels_last only)."""
    return 1 if t._dtype == FLOAT64 else 2 if t._dtype == BFLOAT16 else 0


cdef TensorBase new_like(TensorBase t, int64_t h, int64_t w, int dtype):
    """(N, C, h, w) in t's layout."""
    cdef int64_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = t._shape[0], t._shape[1], h, w
    if nhwc(t):
        return new_nhwc(shape[0], shape[1], h, w, dtype, t._storage.device)
    return new_tensor(4, shape, dtype, t._storage.device)


cdef int64_t unpack2(object pair, int64_t *dst, str op, int64_t lo) except -1:
    a, b = pair
    dst[0], dst[1] = a, b
    if dst[0] < lo or dst[1] < lo:
        raise ValueError(f"{op}: internal kernel got {tuple(pair)}, expected values >= {lo}")
    return 0


cdef int rc_check(int rc, str op) except -1:
    if rc == EM_POOL_ENOMEM:
        raise MemoryError(f"{op}: out of memory for a row buffer")
    if rc == EM_POOL_EINDEX:
        raise IndexError(f"{op}: an index is outside its input plane")
    if rc:
        raise RuntimeError(f"{op}: internal error {rc}")
    return 0


def max_pool2d(TensorBase x not None, kernel, stride, padding, dilation, out_size,
               bint with_indices):
    """(y, indices or None): max over each window; indices are flat h * W + w."""
    cdef int64_t planes = check(x, "max_pool2d")
    cdef bint cl = nhwc(x)
    cdef int64_t nb = x._shape[0], ch = x._shape[1]
    cdef int64_t k[2]
    cdef int64_t s[2]
    cdef int64_t p[2]
    cdef int64_t d[2]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(kernel, k, "max_pool2d", 1)
    unpack2(stride, s, "max_pool2d", 1)
    unpack2(padding, p, "max_pool2d", 0)
    unpack2(dilation, d, "max_pool2d", 1)
    unpack2(out_size, ohw, "max_pool2d", 1)
    ihw[0], ihw[1] = x._shape[2], x._shape[3]
    cdef TensorBase y = new_like(x, ohw[0], ohw[1], x._dtype)
    cdef TensorBase ix = new_like(x, ohw[0], ohw[1], INT64) if with_indices else None
    cdef int64_t *ixp = <int64_t *>ix.ptr() if with_indices else NULL
    cdef const void *xp = x.ptr()
    cdef void *yp = y.ptr()
    cdef int wt = work_type(x), rc
    if y.numel_c() >= NOGIL_MIN:
        with nogil:
            rc = em_max_pool2d_nhwc(wt, xp, yp, ixp, nb, ch, ihw, ohw, k, s, p, d) if cl else \
                em_max_pool2d(wt, xp, yp, ixp, planes, ihw, ohw, k, s, p, d)
    else:
        rc = em_max_pool2d_nhwc(wt, xp, yp, ixp, nb, ch, ihw, ohw, k, s, p, d) if cl else \
            em_max_pool2d(wt, xp, yp, ixp, planes, ihw, ohw, k, s, p, d)
    rc_check(rc, "max_pool2d")
    return y, ix


def avg_pool2d(TensorBase x not None, kernel, stride, padding, out_size,
               bint count_include_pad, int64_t divisor):
    """Mean over each window (divisor: divisor_override, 0 for none)."""
    cdef int64_t planes = check(x, "avg_pool2d")
    cdef bint cl = nhwc(x)
    cdef int64_t nb = x._shape[0], ch = x._shape[1]
    cdef int64_t k[2]
    cdef int64_t s[2]
    cdef int64_t p[2]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(kernel, k, "avg_pool2d", 1)
    unpack2(stride, s, "avg_pool2d", 1)
    unpack2(padding, p, "avg_pool2d", 0)
    unpack2(out_size, ohw, "avg_pool2d", 1)
    ihw[0], ihw[1] = x._shape[2], x._shape[3]
    cdef TensorBase y = new_like(x, ohw[0], ohw[1], x._dtype)
    cdef const void *xp = x.ptr()
    cdef void *yp = y.ptr()
    cdef int wt = work_type(x), rc
    if y.numel_c() >= NOGIL_MIN:
        with nogil:
            if cl:
                rc = em_avg_pool2d_nhwc(wt, xp, yp, nb, ch, ihw, ohw, k, s, p,
                                        count_include_pad, divisor)
            else:
                rc = em_avg_pool2d(wt, xp, yp, planes, ihw, ohw, k, s, p, count_include_pad,
                                   divisor)
    elif cl:
        rc = em_avg_pool2d_nhwc(wt, xp, yp, nb, ch, ihw, ohw, k, s, p, count_include_pad,
                                divisor)
    else:
        rc = em_avg_pool2d(wt, xp, yp, planes, ihw, ohw, k, s, p, count_include_pad, divisor)
    rc_check(rc, "avg_pool2d")
    return y


def avg_pool2d_backward(TensorBase grad not None, input_shape, kernel, stride, padding,
                        bint count_include_pad, int64_t divisor):
    """The gradient w.r.t. the (N, C, H, W) input of avg_pool2d, from grad (N, C, OH, OW)."""
    cdef int64_t planes = check(grad, "avg_pool2d_backward")
    cdef bint cl = nhwc(grad)
    cdef int64_t nb = grad._shape[0], ch = grad._shape[1]
    cdef int64_t k[2]
    cdef int64_t s[2]
    cdef int64_t p[2]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(kernel, k, "avg_pool2d_backward", 1)
    unpack2(stride, s, "avg_pool2d_backward", 1)
    unpack2(padding, p, "avg_pool2d_backward", 0)
    unpack2(tuple(input_shape)[2:], ihw, "avg_pool2d_backward", 1)
    ohw[0], ohw[1] = grad._shape[2], grad._shape[3]
    cdef TensorBase dx = new_like(grad, ihw[0], ihw[1], grad._dtype)
    cdef const void *gp = grad.ptr()
    cdef void *dp = dx.ptr()
    cdef int wt = work_type(grad), rc
    with nogil:
        if cl:
            rc = em_avg_pool2d_backward_nhwc(wt, gp, dp, nb, ch, ihw, ohw, k, s, p,
                                             count_include_pad, divisor)
        else:
            rc = em_avg_pool2d_backward(wt, gp, dp, planes, ihw, ohw, k, s, p,
                                        count_include_pad, divisor)
    rc_check(rc, "avg_pool2d_backward")
    return dx


def adaptive_avg_pool2d(TensorBase x not None, out_size):
    cdef int64_t planes = check(x, "adaptive_avg_pool2d")
    cdef bint cl = nhwc(x)
    cdef int64_t nb = x._shape[0], ch = x._shape[1]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(out_size, ohw, "adaptive_avg_pool2d", 1)
    ihw[0], ihw[1] = x._shape[2], x._shape[3]
    cdef TensorBase y = new_like(x, ohw[0], ohw[1], x._dtype)
    cdef const void *xp = x.ptr()
    cdef void *yp = y.ptr()
    cdef int wt = work_type(x), rc
    with nogil:
        rc = em_adaptive_avg_pool2d_nhwc(wt, xp, yp, nb, ch, ihw, ohw) if cl else \
            em_adaptive_avg_pool2d(wt, xp, yp, planes, ihw, ohw)
    rc_check(rc, "adaptive_avg_pool2d")
    return y


def adaptive_avg_pool2d_backward(TensorBase grad not None, input_shape):
    cdef int64_t planes = check(grad, "adaptive_avg_pool2d_backward")
    cdef bint cl = nhwc(grad)
    cdef int64_t nb = grad._shape[0], ch = grad._shape[1]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(tuple(input_shape)[2:], ihw, "adaptive_avg_pool2d_backward", 1)
    ohw[0], ohw[1] = grad._shape[2], grad._shape[3]
    cdef TensorBase dx = new_like(grad, ihw[0], ihw[1], grad._dtype)
    cdef const void *gp = grad.ptr()
    cdef void *dp = dx.ptr()
    cdef int wt = work_type(grad), rc
    with nogil:
        rc = em_adaptive_avg_pool2d_backward_nhwc(wt, gp, dp, nb, ch, ihw, ohw) if cl else \
            em_adaptive_avg_pool2d_backward(wt, gp, dp, planes, ihw, ohw)
    rc_check(rc, "adaptive_avg_pool2d_backward")
    return dx


def adaptive_max_pool2d(TensorBase x not None, out_size):
    """(y, indices): max over each adaptive window, indices flat h * W + w."""
    cdef int64_t planes = check(x, "adaptive_max_pool2d")
    cdef bint cl = nhwc(x)
    cdef int64_t nb = x._shape[0], ch = x._shape[1]
    cdef int64_t ihw[2]
    cdef int64_t ohw[2]
    unpack2(out_size, ohw, "adaptive_max_pool2d", 1)
    ihw[0], ihw[1] = x._shape[2], x._shape[3]
    cdef TensorBase y = new_like(x, ohw[0], ohw[1], x._dtype)
    cdef TensorBase ix = new_like(x, ohw[0], ohw[1], INT64)
    cdef const void *xp = x.ptr()
    cdef void *yp = y.ptr()
    cdef int64_t *ixp = <int64_t *>ix.ptr()
    cdef int wt = work_type(x), rc
    with nogil:
        rc = em_adaptive_max_pool2d_nhwc(wt, xp, yp, ixp, nb, ch, ihw, ohw) if cl else \
            em_adaptive_max_pool2d(wt, xp, yp, ixp, planes, ihw, ohw)
    rc_check(rc, "adaptive_max_pool2d")
    return y, ix


def max_pool2d_backward(TensorBase grad not None, TensorBase indices not None, input_shape):
    """The gradient w.r.t. the (N, C, H, W) input of any max pooling: grad
    (N, C, OH, OW) added at the flat indices of each plane (-1 adds nothing)."""
    cdef int64_t planes = check(grad, "max_pool2d_backward")
    cdef bint cl = nhwc(grad)
    cdef int64_t nb = grad._shape[0], ch = grad._shape[1]
    check(indices, "max_pool2d_backward", INT64)
    if indices.shape != grad.shape or nhwc(indices) != cl:
        raise ValueError(f"max_pool2d_backward: indices {tuple(indices.shape)} and grad "
                         f"{tuple(grad.shape)} differ in shape or layout")
    cdef int64_t ihw[2]
    unpack2(tuple(input_shape)[2:], ihw, "max_pool2d_backward", 1)
    cdef TensorBase dx = new_like(grad, ihw[0], ihw[1], grad._dtype)
    cdef const void *gp = grad.ptr()
    cdef const int64_t *ixp = <const int64_t *>indices.ptr()
    cdef void *dp = dx.ptr()
    cdef int wt = work_type(grad), rc
    cdef int64_t osz = grad._shape[2] * grad._shape[3]
    with nogil:
        rc = em_max_pool_backward_nhwc(wt, gp, ixp, dp, nb, ch, ihw[0] * ihw[1], osz) if cl \
            else em_max_pool_backward(wt, gp, ixp, dp, planes, ihw[0] * ihw[1], osz)
    rc_check(rc, "max_pool2d_backward")
    return dx
