# The argument checks and C prototypes shared by the float kernels of _C/softmax.pyx,
# norm.pyx, loss.pyx and dropout.pyx (kernels/cpu/softmax.c, norm.c, loss.c, dropout.c),
# included by each. The callers (ember.ops.<family>) validate the user's arguments; these
# checks keep a wrong layout from the Python side from reaching the C loops.

cdef extern from *:
    """
    void em_softmax_rows_f32(const float *x, float *y, int64_t rows, int64_t n, int log_softmax);
    void em_softmax_rows_f64(const double *x, double *y, int64_t rows, int64_t n, int log_softmax);
    void em_softmax_backward_rows_f32(const float *g, const float *y, float *dx, int64_t rows,
                                      int64_t n, int log_softmax);
    void em_softmax_backward_rows_f64(const double *g, const double *y, double *dx, int64_t rows,
                                      int64_t n, int log_softmax);
    """
    void em_softmax_rows_f32(const float *x, float *y, int64_t rows, int64_t n,
                             int log_softmax) nogil
    void em_softmax_rows_f64(const double *x, double *y, int64_t rows, int64_t n,
                             int log_softmax) nogil
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
    if t._storage.device.type != "cpu" or not t.contiguous_c() or \
            t._dtype not in (FLOAT32, FLOAT64):
        raise ValueError(f"{op}: internal kernel needs a contiguous float32/float64 CPU tensor")


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
