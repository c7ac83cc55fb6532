# kernels: norm.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU layer_norm and batch_norm kernels (kernels/cpu/norm.c), for ember.ops.norm; other
backends provide functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor
from ember._C import core as _core

include "float_kernels.pxi"


# layer_norm ------------------------------------------------------------------------

def layer_norm(TensorBase x not None, TensorBase weight, TensorBase bias, int k, double eps):
    """Normalise a contiguous tensor over its last k dims: (y, mean, rstd) with
    y = (x - mean) * rstd * weight + bias (weight, bias: the last k dims' elements
    or None) and mean, rstd of shape x.shape[:-k] + (1,) * k."""
    _check(x, "layer_norm")
    if not 1 <= k <= x._ndim:
        raise ValueError(f"layer_norm: cannot normalise the last {k} dims of {x._ndim}")
    cdef int64_t rows = _span(x, 0, x._ndim - k), n = _span(x, x._ndim - k, x._ndim)
    cdef const char *w = _opt(weight, x, n, "layer_norm", "weight")
    cdef const char *b = _opt(bias, x, n, "layer_norm", "bias")
    cdef int64_t stats[16]
    for d in range(x._ndim):
        stats[d] = x._shape[d] if d < x._ndim - k else 1
    cdef TensorBase y = _like(x)
    cdef TensorBase mean = _new(x, x._ndim, stats), rstd = _new(x, x._ndim, stats)
    cdef char *xp = x.ptr()
    cdef char *yp = y.ptr()
    cdef char *mp = mean.ptr()
    cdef char *rp = rstd.ptr()
    if rows and n:
        with nogil:
            if x._dtype == FLOAT32:
                em_layer_norm_f32(<const float *>xp, <const float *>w, <const float *>b,
                                  <float *>yp, <float *>mp, <float *>rp, rows, n, eps)
            else:
                em_layer_norm_f64(<const double *>xp, <const double *>w, <const double *>b,
                                  <double *>yp, <double *>mp, <double *>rp, rows, n, eps)
    return y, mean, rstd


def layer_norm_backward(TensorBase grad not None, TensorBase x not None,
                        TensorBase mean not None, TensorBase rstd not None,
                        TensorBase weight, int k, tuple output_mask):
    """(dx or None, dweight or None, dbias or None) of layer_norm over the last k dims
    of contiguous tensors, as output_mask (three bools) asks; dweight and dbias have
    the shape of x's last k dims."""
    _same(grad, x, "layer_norm_backward")
    if not 1 <= k <= x._ndim:
        raise ValueError(f"layer_norm_backward: cannot normalise the last {k} dims of "
                         f"{x._ndim}")
    cdef int64_t rows = _span(x, 0, x._ndim - k), n = _span(x, x._ndim - k, x._ndim)
    cdef const char *w = _opt(weight, x, n, "layer_norm_backward", "weight")
    cdef const char *mp = _opt(mean, x, rows, "layer_norm_backward", "mean")
    cdef const char *rp = _opt(rstd, x, rows, "layer_norm_backward", "rstd")
    cdef TensorBase dx = _like(x) if output_mask[0] else None
    cdef TensorBase dw = _new(x, k, x._shape + x._ndim - k) if output_mask[1] else None
    cdef TensorBase db = _new(x, k, x._shape + x._ndim - k) if output_mask[2] else None
    cdef char *dxp = dx.ptr() if dx is not None else NULL
    cdef char *dwp = dw.ptr() if dw is not None else NULL
    cdef char *dbp = db.ptr() if db is not None else NULL
    cdef char *gp = grad.ptr()
    cdef char *xp = x.ptr()
    if rows == 0:           # the sums over no rows
        for t in (dw, db):
            if t is not None:
                _core.fill_(t, 0)
        dwp = dbp = NULL
    cdef int rc = 0
    if n:
        with nogil:
            if x._dtype == FLOAT32:
                rc = em_layer_norm_backward_f32(<const float *>gp, <const float *>xp,
                                                <const float *>mp, <const float *>rp,
                                                <const float *>w, <float *>dxp, <float *>dwp,
                                                <float *>dbp, rows, n)
            else:
                rc = em_layer_norm_backward_f64(<const double *>gp, <const double *>xp,
                                                <const double *>mp, <const double *>rp,
                                                <const double *>w, <double *>dxp,
                                                <double *>dwp, <double *>dbp, rows, n)
    if rc:
        raise MemoryError(f"layer_norm_backward: out of memory for the partial sums of the "
                          f"weight and bias gradients ({tuple(x.shape)})")
    return dx, dw, db


# batch_norm: (N, C, *spatial) tensors, S = the spatial size ---------------------------

cdef void _check_nc(TensorBase x, str op) except *:
    _check(x, op)
    if x._ndim < 2:
        raise ValueError(f"{op}: internal kernel needs an (N, C, ...) tensor, got "
                         f"{tuple(x.shape)}")


def batch_norm_stats(TensorBase x not None):
    """(mean (C,), biased variance (C,)) of a contiguous (N, C, ...) tensor, per
    channel over the N * S values (N * S > 0)."""
    _check_nc(x, "batch_norm_stats")
    cdef int64_t N = x._shape[0], C = x._shape[1], S = _span(x, 2, x._ndim)
    cdef TensorBase mean = _vec(x, C), var = _vec(x, C)
    cdef char *xp = x.ptr()
    cdef char *mp = mean.ptr()
    cdef char *vp = var.ptr()
    with nogil:
        if x._dtype == FLOAT32:
            em_batch_norm_stats_f32(<const float *>xp, <float *>mp, <float *>vp, N, C, S)
        else:
            em_batch_norm_stats_f64(<const double *>xp, <double *>mp, <double *>vp, N, C, S)
    return mean, var


def batch_norm_backward_reduce(TensorBase grad not None, TensorBase x not None,
                               TensorBase mean not None):
    """(sum of grad, sum of grad * (x - mean)) per channel of contiguous (N, C, ...)
    tensors."""
    _check_nc(x, "batch_norm_backward_reduce")
    _same(grad, x, "batch_norm_backward_reduce")
    cdef int64_t N = x._shape[0], C = x._shape[1], S = _span(x, 2, x._ndim)
    cdef const char *mp = _opt(mean, x, C, "batch_norm_backward_reduce", "mean")
    cdef TensorBase sg = _vec(x, C), sgx = _vec(x, C)
    cdef char *gp = grad.ptr()
    cdef char *xp = x.ptr()
    cdef char *sp = sg.ptr()
    cdef char *sxp = sgx.ptr()
    if N * S == 0:
        _core.fill_(sg, 0)
        _core.fill_(sgx, 0)
        return sg, sgx
    with nogil:
        if x._dtype == FLOAT32:
            em_batch_norm_backward_reduce_f32(<const float *>gp, <const float *>xp,
                                              <const float *>mp, <float *>sp, <float *>sxp,
                                              N, C, S)
        else:
            em_batch_norm_backward_reduce_f64(<const double *>gp, <const double *>xp,
                                              <const double *>mp, <double *>sp,
                                              <double *>sxp, N, C, S)
    return sg, sgx


def batch_norm_elemt(TensorBase u not None, TensorBase v, TensorBase a not None,
                     TensorBase b, TensorBase d not None):
    """a[c] * u + b[c] * v + d[c] over contiguous (N, C, ...) tensors u and v (v and b
    None: a[c] * u + d[c]). The forward is scale * x + shift; the input gradient
    a * grad + b * x + d."""
    _check_nc(u, "batch_norm_elemt")
    cdef int64_t N = u._shape[0], C = u._shape[1], S = _span(u, 2, u._ndim)
    if (v is None) != (b is None):
        raise ValueError("batch_norm_elemt: give both v and b, or neither")
    if v is not None:
        _same(v, u, "batch_norm_elemt")
    cdef const char *ap = _opt(a, u, C, "batch_norm_elemt", "a")
    cdef const char *bp = _opt(b, u, C, "batch_norm_elemt", "b")
    cdef const char *dp = _opt(d, u, C, "batch_norm_elemt", "d")
    cdef TensorBase out = _like(u)
    cdef char *up = u.ptr()
    cdef char *vp = v.ptr() if v is not None else NULL
    cdef char *op = out.ptr()
    if out.numel_c():
        with nogil:
            if u._dtype == FLOAT32:
                em_batch_norm_elemt_f32(<const float *>up, <const float *>vp,
                                        <const float *>ap, <const float *>bp,
                                        <const float *>dp, <float *>op, N, C, S)
            else:
                em_batch_norm_elemt_f64(<const double *>up, <const double *>vp,
                                        <const double *>ap, <const double *>bp,
                                        <const double *>dp, <double *>op, N, C, S)
    return out
