/* softmax and log_softmax over the rows of a contiguous (rows x n) array, and their
 * backward kernels. Each row is three passes: max, sum of exp(x - max), write.
 * Partial maxima and sums live in 8 lanes so the loops vectorise without
 * reassociation flags; float32 exp is the vectorisable polynomial of ember_scalar.h.
 * The CUDA and OpenCL backends implement the same four entry points. */
#include "ember_cpu.h"
#include "ember_c_types.h"


#define LANES 8

#define SOFTMAX_ROWS(NAME, T, EXP, LOG)                                                 \
    EM_CLONES void NAME(const T *x, T *y, int64_t rows, int64_t n, int log_softmax) {     \
        for (int64_t r = 0; r < rows; r++) {                                            \
            const T *xr = x + r * n;                                                    \
            T *yr = y + r * n;                                                          \
            T m[LANES], s[LANES];                                                       \
            for (int k = 0; k < LANES; k++) { m[k] = -INFINITY; s[k] = 0; }             \
            int64_t i = 0;                                                              \
            /* the max may skip NaNs: a NaN input makes the sum, and so the row, NaN */ \
            for (; i + LANES <= n; i += LANES)                                          \
                for (int k = 0; k < LANES; k++)                                         \
                    m[k] = xr[i + k] > m[k] ? xr[i + k] : m[k];                         \
            for (; i < n; i++) m[0] = xr[i] > m[0] ? xr[i] : m[0];                      \
            T mx = m[0];                                                                \
            for (int k = 1; k < LANES; k++) mx = m[k] > mx ? m[k] : mx;                 \
            if (mx == -INFINITY || mx == INFINITY) mx = mx == INFINITY ? mx : 0;        \
            i = 0;                                                                      \
            if (log_softmax) {                                                          \
                for (; i + LANES <= n; i += LANES)                                      \
                    for (int k = 0; k < LANES; k++) s[k] += EXP(xr[i + k] - mx);        \
                for (; i < n; i++) s[0] += EXP(xr[i] - mx);                             \
            } else {                                                                    \
                for (; i + LANES <= n; i += LANES)                                      \
                    for (int k = 0; k < LANES; k++) {                                   \
                        T e = EXP(xr[i + k] - mx);                                      \
                        yr[i + k] = e;                                                  \
                        s[k] += e;                                                      \
                    }                                                                   \
                for (; i < n; i++) { T e = EXP(xr[i] - mx); yr[i] = e; s[0] += e; }     \
            }                                                                           \
            T sum = 0;                                                                  \
            for (int k = 0; k < LANES; k++) sum += s[k];                                \
            if (log_softmax) {                                                          \
                T lse = LOG(sum);   /* (x - max) - lse: exact where max + lse is not */ \
                for (i = 0; i < n; i++) yr[i] = (xr[i] - mx) - lse;                     \
            } else {                                                                    \
                T inv = 1 / sum;                                                        \
                for (i = 0; i < n; i++) yr[i] *= inv;                                   \
            }                                                                           \
        }                                                                               \
    }

/* softmax:     dx = y * (g - sum(g * y))
 * log_softmax: dx = g - exp(y) * sum(g)        (y is the forward's output) */
#define SOFTMAX_BACKWARD_ROWS(NAME, T, EXP)                                             \
    EM_CLONES void NAME(const T *g, const T *y, T *dx, int64_t rows, int64_t n,           \
                      int log_softmax) {                                                \
        for (int64_t r = 0; r < rows; r++) {                                            \
            const T *gr = g + r * n, *yr = y + r * n;                                   \
            T *dr = dx + r * n;                                                         \
            T s[LANES];                                                                 \
            for (int k = 0; k < LANES; k++) s[k] = 0;                                   \
            int64_t i = 0;                                                              \
            for (; i + LANES <= n; i += LANES)                                          \
                for (int k = 0; k < LANES; k++)                                         \
                    s[k] += log_softmax ? gr[i + k] : gr[i + k] * yr[i + k];            \
            for (; i < n; i++) s[0] += log_softmax ? gr[i] : gr[i] * yr[i];             \
            T sum = 0;                                                                  \
            for (int k = 0; k < LANES; k++) sum += s[k];                                \
            if (log_softmax)                                                            \
                for (i = 0; i < n; i++) dr[i] = gr[i] - EXP(yr[i]) * sum;               \
            else                                                                        \
                for (i = 0; i < n; i++) dr[i] = yr[i] * (gr[i] - sum);                  \
        }                                                                               \
    }

SOFTMAX_ROWS(em_softmax_rows_f32, float, em_exp_float32, em_log_float32)
SOFTMAX_ROWS(em_softmax_rows_f64, double, exp, log)
SOFTMAX_BACKWARD_ROWS(em_softmax_backward_rows_f32, float, em_exp_float32)
SOFTMAX_BACKWARD_ROWS(em_softmax_backward_rows_f64, double, exp)
