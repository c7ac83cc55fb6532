# kernels: softmax.c norm.c loss.c dropout.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""Fused neural-network kernels over contiguous arrays: softmax, log_softmax,
layer_norm, batch_norm, cross_entropy, nll_loss, dropout (kernels/cpu/softmax.c,
norm.c, loss.c, dropout.c). Callers (ember._nn_ops) validate the arguments, bring
the data into the layout each kernel documents and handle dtypes; another device's
backend provides functions of the same names and arguments."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from ember._C.core cimport TensorBase, new_tensor
from ember._C import core as _core

cdef extern from *:
    """
    void em_softmax_rows_f32(const float *x, float *y, int64_t rows, int64_t n, int log_softmax);
    void em_softmax_rows_f64(const double *x, double *y, int64_t rows, int64_t n, int log_softmax);
    void em_softmax_backward_rows_f32(const float *g, const float *y, float *dx, int64_t rows,
                                      int64_t n, int log_softmax);
    void em_softmax_backward_rows_f64(const double *g, const double *y, double *dx, int64_t rows,
                                      int64_t n, int log_softmax);
    """
    void em_softmax_rows_f32(const float *x, float *y, int64_t rows, int64_t n, int log_softmax) nogil
    void em_softmax_rows_f64(const double *x, double *y, int64_t rows, int64_t n, int log_softmax) nogil
    void em_softmax_backward_rows_f32(const float *g, const float *y, float *dx, int64_t rows,
                                      int64_t n, int log_softmax) nogil
    void em_softmax_backward_rows_f64(const double *g, const double *y, double *dx, int64_t rows,
                                      int64_t n, int log_softmax) nogil

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the thread pool lives in ember._C.core (cpu_api.h)

cdef extern from *:
    """
    #define EM_NN_DECL(SFX, T) \
    void em_layer_norm_##SFX(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd, \
                             int64_t rows, int64_t n, double eps); \
    int em_layer_norm_backward_##SFX(const T *g, const T *x, const T *mean, const T *rstd, \
                                     const T *w, T *dx, T *dw, T *db, int64_t rows, \
                                     int64_t n); \
    void em_batch_norm_stats_##SFX(const T *x, T *mean, T *var, int64_t N, int64_t C, \
                                   int64_t S); \
    void em_batch_norm_backward_reduce_##SFX(const T *g, const T *x, const T *mean, \
                                             T *sum_g, T *sum_gxmu, int64_t N, int64_t C, \
                                             int64_t S); \
    void em_batch_norm_elemt_##SFX(const T *u, const T *v, const T *a, const T *b, \
                                   const T *d, T *out, int64_t N, int64_t C, int64_t S); \
    void em_cross_entropy_##SFX(const T *x, const int64_t *target, const T *w, T *loss, \
                                T *wrow, int64_t rows, int64_t C, int64_t ignore_index, \
                                double label_smoothing, double wtotal); \
    void em_cross_entropy_backward_##SFX(const T *x, const int64_t *target, const T *w, \
                                         const T *g, int64_t gstride, double scale, T *dx, \
                                         int64_t rows, int64_t C, int64_t ignore_index, \
                                         double label_smoothing, double wtotal); \
    void em_nll_loss_##SFX(const T *x, const int64_t *target, const T *w, T *loss, T *wrow, \
                           int64_t N, int64_t C, int64_t S, int64_t ignore_index); \
    void em_nll_loss_backward_##SFX(const int64_t *target, const T *w, const T *g, \
                                    int64_t gstride, double scale, T *dx, int64_t N, \
                                    int64_t C, int64_t S, int64_t ignore_index); \
    void em_dropout_##SFX(const T *x, T *y, uint8_t *mask, int64_t n, double p, \
                          uint64_t seed, uint64_t offset); \
    void em_dropout_backward_##SFX(const T *g, const uint8_t *mask, T *dx, int64_t n, \
                                   double scale);
    EM_NN_DECL(f32, float)
    EM_NN_DECL(f64, double)
    """
    void em_layer_norm_f32(const float *x, const float *w, const float *b, float *y, float *mean,
                           float *rstd, int64_t rows, int64_t n, double eps) nogil
    int em_layer_norm_backward_f32(const float *g, const float *x, const float *mean,
                                   const float *rstd, const float *w, float *dx, float *dw,
                                   float *db, int64_t rows, int64_t n) nogil
    void em_batch_norm_stats_f32(const float *x, float *mean, float *var, int64_t N, int64_t C,
                                 int64_t S) nogil
    void em_batch_norm_backward_reduce_f32(const float *g, const float *x, const float *mean,
                                           float *sum_g, float *sum_gxmu, int64_t N, int64_t C,
                                           int64_t S) nogil
    void em_batch_norm_elemt_f32(const float *u, const float *v, const float *a, const float *b,
                                 const float *d, float *out, int64_t N, int64_t C, int64_t S) nogil
    void em_cross_entropy_f32(const float *x, const int64_t *target, const float *w, float *loss,
                              float *wrow, int64_t rows, int64_t C, int64_t ignore_index,
                              double label_smoothing, double wtotal) nogil
    void em_cross_entropy_backward_f32(const float *x, const int64_t *target, const float *w,
                                       const float *g, int64_t gstride, double scale, float *dx,
                                       int64_t rows, int64_t C, int64_t ignore_index,
                                       double label_smoothing, double wtotal) nogil
    void em_nll_loss_f32(const float *x, const int64_t *target, const float *w, float *loss,
                         float *wrow, int64_t N, int64_t C, int64_t S, int64_t ignore_index) nogil
    void em_nll_loss_backward_f32(const int64_t *target, const float *w, const float *g,
                                  int64_t gstride, double scale, float *dx, int64_t N, int64_t C,
                                  int64_t S, int64_t ignore_index) nogil
    void em_dropout_f32(const float *x, float *y, uint8_t *mask, int64_t n, double p, uint64_t seed,
                        uint64_t offset) nogil
    void em_dropout_backward_f32(const float *g, const uint8_t *mask, float *dx, int64_t n,
                                 double scale) nogil

    void em_layer_norm_f64(const double *x, const double *w, const double *b, double *y,
                           double *mean, double *rstd, int64_t rows, int64_t n, double eps) nogil
    int em_layer_norm_backward_f64(const double *g, const double *x, const double *mean,
                                   const double *rstd, const double *w, double *dx,
                                   double *dw, double *db, int64_t rows, int64_t n) nogil
    void em_batch_norm_stats_f64(const double *x, double *mean, double *var, int64_t N, int64_t C,
                                 int64_t S) nogil
    void em_batch_norm_backward_reduce_f64(const double *g, const double *x, const double *mean,
                                           double *sum_g, double *sum_gxmu, int64_t N, int64_t C,
                                           int64_t S) nogil
    void em_batch_norm_elemt_f64(const double *u, const double *v, const double *a, const double *b,
                                 const double *d, double *out, int64_t N, int64_t C,
                                 int64_t S) nogil
    void em_cross_entropy_f64(const double *x, const int64_t *target, const double *w, double *loss,
                              double *wrow, int64_t rows, int64_t C, int64_t ignore_index,
                              double label_smoothing, double wtotal) nogil
    void em_cross_entropy_backward_f64(const double *x, const int64_t *target, const double *w,
                                       const double *g, int64_t gstride, double scale, double *dx,
                                       int64_t rows, int64_t C, int64_t ignore_index,
                                       double label_smoothing, double wtotal) nogil
    void em_nll_loss_f64(const double *x, const int64_t *target, const double *w, double *loss,
                         double *wrow, int64_t N, int64_t C, int64_t S, int64_t ignore_index) nogil
    void em_nll_loss_backward_f64(const int64_t *target, const double *w, const double *g,
                                  int64_t gstride, double scale, double *dx, int64_t N, int64_t C,
                                  int64_t S, int64_t ignore_index) nogil
    void em_dropout_f64(const double *x, double *y, uint8_t *mask, int64_t n, double p,
                        uint64_t seed, uint64_t offset) nogil
    void em_dropout_backward_f64(const double *g, const uint8_t *mask, double *dx, int64_t n,
                                 double scale) nogil

DEF FLOAT32 = 7
DEF FLOAT64 = 8
DEF INT64 = 5
DEF BOOL = 0


cdef void _check(TensorBase t, str op) except *:
    if t._storage.device.type != "cpu" or not t.contiguous_c() or t._dtype not in (FLOAT32, FLOAT64):
        raise ValueError(f"{op}: internal kernel needs a contiguous float32/float64 CPU tensor")


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


# helpers ---------------------------------------------------------------------------

cdef TensorBase _like(TensorBase x):
    return new_tensor(x._ndim, x._shape, x._dtype, x._storage.device)


cdef TensorBase _new(TensorBase like, int ndim, const int64_t *shape):
    return new_tensor(ndim, shape, like._dtype, like._storage.device)


cdef TensorBase _vec(TensorBase like, int64_t n):
    return new_tensor(1, &n, like._dtype, like._storage.device)


cdef int64_t _span(TensorBase t, int a, int b):
    """The product of t's dims a .. b - 1."""
    cdef int64_t n = 1
    for d in range(a, b):
        n *= t._shape[d]
    return n


cdef char *_opt(TensorBase t, TensorBase like, int64_t n, str op, str what) except? NULL:
    """t's data (NULL for None) after checking it is contiguous, of like's dtype and of
    n elements."""
    if t is None:
        return NULL
    _check(t, op)
    if t._dtype != like._dtype or t.numel_c() != n:
        raise ValueError(f"{op}: {what} must be {n} elements of {like.dtype!r}, got "
                         f"{tuple(t.shape)} {t.dtype!r}")
    return t.ptr()


cdef void _same(TensorBase a, TensorBase b, str op) except *:
    _check(a, op)
    _check(b, op)
    if a.shape != b.shape or a._dtype != b._dtype:
        raise ValueError(f"{op}: {tuple(a.shape)} {a.dtype!r} does not match "
                         f"{tuple(b.shape)} {b.dtype!r}")


cdef void _check_index(TensorBase t, int64_t n, str op) except *:
    if t._storage.device.type != "cpu" or not t.contiguous_c() or t._dtype != INT64 \
            or t.numel_c() != n:
        raise ValueError(f"{op}: internal kernel needs {n} contiguous int64 targets, got "
                         f"{tuple(t.shape)} {t.dtype!r}")


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
