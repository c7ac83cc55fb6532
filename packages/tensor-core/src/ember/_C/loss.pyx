# kernels: loss.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""CPU cross_entropy and nll_loss kernels and the target check (kernels/cpu/loss.c), for
ember.ops.loss; other backends provide functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor

include "float_kernels.pxi"


# losses ----------------------------------------------------------------------------

def check_targets(TensorBase target not None, int64_t C, int64_t ignore_index):
    """The position of the first value of a contiguous int64 tensor that is neither a
    class in [0, C) nor ignore_index, or -1 (run before the loss kernels)."""
    cdef int64_t n = target.numel_c()
    _check_index(target, n, "check_targets")
    cdef const int64_t *t = <const int64_t *>target.ptr()
    cdef int64_t i, bad = -1
    with nogil:
        for i in range(n):
            if (t[i] < 0 or t[i] >= C) and t[i] != ignore_index:
                bad = i
                break
    return bad


cdef double _wtotal(TensorBase weight, int64_t C):
    cdef double s = 0
    cdef int64_t i
    if weight is None:
        return <double>C
    if weight._dtype == FLOAT32:
        for i in range(C):
            s += (<const float *>weight.ptr())[i]
    else:
        for i in range(C):
            s += (<const double *>weight.ptr())[i]
    return s


def cross_entropy(TensorBase x not None, TensorBase target not None, TensorBase weight,
                  int64_t ignore_index, double label_smoothing):
    """Cross entropy per row of contiguous logits with the classes along the LAST dim
    (C = x.shape[-1]) and int64 targets (one per row, checked by check_targets):
    (loss, the target's weight (0 where ignored)), both of shape x.shape[:-1]."""
    _check(x, "cross_entropy")
    if x._ndim < 1:
        raise ValueError("cross_entropy: internal kernel needs a class dim")
    cdef int64_t C = x._shape[x._ndim - 1], rows = _span(x, 0, x._ndim - 1)
    _check_index(target, rows, "cross_entropy")
    cdef const char *w = _opt(weight, x, C, "cross_entropy", "weight")
    cdef double wtotal = _wtotal(weight, C)
    cdef TensorBase loss = _new(x, x._ndim - 1, x._shape)
    cdef TensorBase wrow = _new(x, x._ndim - 1, x._shape)
    cdef char *xp = x.ptr()
    cdef const int64_t *tp = <const int64_t *>target.ptr()
    cdef char *lp = loss.ptr()
    cdef char *wp = wrow.ptr()
    if rows:
        with nogil:
            if x._dtype == FLOAT32:
                em_cross_entropy_f32(<const float *>xp, tp, <const float *>w, <float *>lp,
                                     <float *>wp, rows, C, ignore_index, label_smoothing,
                                     wtotal)
            else:
                em_cross_entropy_f64(<const double *>xp, tp, <const double *>w, <double *>lp,
                                     <double *>wp, rows, C, ignore_index, label_smoothing,
                                     wtotal)
    return loss, wrow


cdef int64_t _gstride(TensorBase g, TensorBase like, int64_t n, str op) except -1:
    """0 when one grad value serves every position, else 1 (n contiguous values)."""
    _check(g, op)
    if g._dtype != like._dtype:
        raise ValueError(f"{op}: grad is {g.dtype!r}, expected {like.dtype!r}")
    if g.numel_c() == 1:
        return 0
    if g.numel_c() != n:
        raise ValueError(f"{op}: grad has {g.numel_c()} elements, expected 1 or {n}")
    return 1


def cross_entropy_backward(TensorBase x not None, TensorBase target not None,
                           TensorBase weight, TensorBase grad not None, double scale,
                           int64_t ignore_index, double label_smoothing):
    """The gradient w.r.t. the logits (layout of cross_entropy) of the per-row losses,
    each row's loss weighted by grad[r] * scale (grad: one value per row, or one for
    all)."""
    _check(x, "cross_entropy_backward")
    if x._ndim < 1:
        raise ValueError("cross_entropy_backward: internal kernel needs a class dim")
    cdef int64_t C = x._shape[x._ndim - 1], rows = _span(x, 0, x._ndim - 1)
    _check_index(target, rows, "cross_entropy_backward")
    cdef const char *w = _opt(weight, x, C, "cross_entropy_backward", "weight")
    cdef int64_t gs = _gstride(grad, x, rows, "cross_entropy_backward")
    cdef double wtotal = _wtotal(weight, C)
    cdef TensorBase dx = _like(x)
    cdef char *xp = x.ptr()
    cdef const int64_t *tp = <const int64_t *>target.ptr()
    cdef char *gp = grad.ptr()
    cdef char *dp = dx.ptr()
    if rows and C:
        with nogil:
            if x._dtype == FLOAT32:
                em_cross_entropy_backward_f32(<const float *>xp, tp, <const float *>w,
                                              <const float *>gp, gs, scale, <float *>dp,
                                              rows, C, ignore_index, label_smoothing, wtotal)
            else:
                em_cross_entropy_backward_f64(<const double *>xp, tp, <const double *>w,
                                              <const double *>gp, gs, scale, <double *>dp,
                                              rows, C, ignore_index, label_smoothing, wtotal)
    return dx


cdef void _nll_dims(TensorBase x, int64_t *N, int64_t *C, int64_t *S):
    """(C,) is one position; (N, C, ...) is N * S positions."""
    if x._ndim == 1:
        N[0], C[0], S[0] = 1, x._shape[0], 1
    else:
        N[0], C[0], S[0] = x._shape[0], x._shape[1], _span(x, 2, x._ndim)


def nll_loss(TensorBase x not None, TensorBase target not None, TensorBase weight,
             int64_t ignore_index):
    """-weight[t] * x[n, t, s] for contiguous log-probabilities (C,) or (N, C, ...) and
    int64 targets (checked by check_targets): (loss, the target's weight (0 where
    ignored)), both of target's shape."""
    _check(x, "nll_loss")
    if x._ndim < 1:
        raise ValueError("nll_loss: internal kernel needs a class dim")
    cdef int64_t N, C, S
    _nll_dims(x, &N, &C, &S)
    _check_index(target, N * S, "nll_loss")
    cdef const char *w = _opt(weight, x, C, "nll_loss", "weight")
    cdef TensorBase loss = _new(x, target._ndim, target._shape)
    cdef TensorBase wrow = _new(x, target._ndim, target._shape)
    cdef char *xp = x.ptr()
    cdef const int64_t *tp = <const int64_t *>target.ptr()
    cdef char *lp = loss.ptr()
    cdef char *wp = wrow.ptr()
    with nogil:
        if x._dtype == FLOAT32:
            em_nll_loss_f32(<const float *>xp, tp, <const float *>w, <float *>lp, <float *>wp,
                            N, C, S, ignore_index)
        else:
            em_nll_loss_f64(<const double *>xp, tp, <const double *>w, <double *>lp,
                            <double *>wp, N, C, S, ignore_index)
    return loss, wrow


def nll_loss_backward(TensorBase x not None, TensorBase target not None, TensorBase weight,
                      TensorBase grad not None, double scale, int64_t ignore_index):
    """The gradient of nll_loss w.r.t. its input x (only x's shape and dtype are
    read): -weight[t] * grad * scale at each target, 0 elsewhere (grad: one value per
    position, or one for all)."""
    _check(x, "nll_loss_backward")
    if x._ndim < 1:
        raise ValueError("nll_loss_backward: internal kernel needs a class dim")
    cdef int64_t N, C, S
    _nll_dims(x, &N, &C, &S)
    _check_index(target, N * S, "nll_loss_backward")
    cdef int64_t gs = _gstride(grad, x, N * S, "nll_loss_backward")
    cdef const char *w = _opt(weight, x, C, "nll_loss_backward", "weight")
    cdef TensorBase dx = _like(x)
    cdef const int64_t *tp = <const int64_t *>target.ptr()
    cdef char *gp = grad.ptr()
    cdef char *dp = dx.ptr()
    with nogil:
        if x._dtype == FLOAT32:
            em_nll_loss_backward_f32(tp, <const float *>w, <const float *>gp, gs, scale,
                                     <float *>dp, N, C, S, ignore_index)
        else:
            em_nll_loss_backward_f64(tp, <const double *>w, <const double *>gp, gs, scale,
                                     <double *>dp, N, C, S, ignore_index)
    return dx
