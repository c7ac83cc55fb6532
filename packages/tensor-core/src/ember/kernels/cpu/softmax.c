/* softmax and log_softmax over the rows of a contiguous (rows x n) array, and their
 * backward kernels. Each row is three passes over data that stays in L1: max, then
 * exp(x - max) written out and summed, then a scale (softmax) or a shift
 * (log_softmax). Partial maxima and sums live in lanes so the loops vectorise
 * without reassociation flags. float32's exp is em_exp_nonpos_float32 (x - max is
 * never positive), compiled with FMA where the CPU has it. Blocks of rows go to the
 * thread pool when there are enough of them. The CUDA and OpenCL backends implement
 * the same four entry points. */
#include "ember_cpu.h"
#include "ember_c_types.h"
#include "threads.h"

/* Elements per chunk of rows handed to a thread (a row is never split): ~60 us of
 * float32 softmax, against 5-50 us to wake a thread. */
#define GRAIN ((int64_t)1 << 16)
#define LANES 16
#define MAX_LANES 32   /* what GCC vectorises as four independent vmaxps chains */

/* While one row computes in L1, the next row's lines are fetched: the passes over
 * memory and the exp overlap (4.0 -> 2.6 ms for 4096 x 1024 float32). Called once
 * per LANES elements. */
#define PREFETCH(T, px, py)                                                             \
    for (int l = 0; l < (int)sizeof(T) * LANES; l += 64) {                              \
        __builtin_prefetch((const char *)(px) + l, 0, 3);                               \
        __builtin_prefetch((const char *)(py) + l, 1, 3);                               \
    }

/* One row, x -> y. mx is the row's max with the NaNs skipped: a NaN input makes the
 * sum, and so the whole row, NaN. */
#define SOFTMAX_ROW(T, EXP, LOG)                                                        \
    {                                                                                   \
        T m[MAX_LANES], s[LANES];                                                       \
        for (int k = 0; k < MAX_LANES; k++) m[k] = -INFINITY;                           \
        for (int k = 0; k < LANES; k++) s[k] = 0;                                       \
        int64_t i = 0;                                                                  \
        for (; i + MAX_LANES <= n; i += MAX_LANES)                                      \
            for (int k = 0; k < MAX_LANES; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k]; \
        for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];                            \
        for (int w = MAX_LANES / 2; w >= 1; w /= 2)                                     \
            for (int k = 0; k < w; k++) m[k] = m[k + w] > m[k] ? m[k + w] : m[k];       \
        T mx = m[0];                                                                    \
        if (mx == -INFINITY || mx == INFINITY) mx = mx == INFINITY ? mx : 0;            \
        i = 0;                                                                          \
        if (log_softmax) {                                                              \
            for (; i + LANES <= n; i += LANES) {                                        \
                PREFETCH(T, x + n + i, y + n + i)                                         \
                for (int k = 0; k < LANES; k++) s[k] += EXP(x[i + k] - mx);             \
            }                                                                           \
            for (; i < n; i++) s[0] += EXP(x[i] - mx);                                  \
        } else {                                                                        \
            for (; i + LANES <= n; i += LANES) {                                        \
                PREFETCH(T, x + n + i, y + n + i)                                         \
                for (int k = 0; k < LANES; k++) {                                       \
                    T e = EXP(x[i + k] - mx);                                           \
                    y[i + k] = e;                                                       \
                    s[k] += e;                                                          \
                }                                                                       \
            }                                                                           \
            for (; i < n; i++) { T e = EXP(x[i] - mx); y[i] = e; s[0] += e; }           \
        }                                                                               \
        for (int w = LANES / 2; w >= 1; w /= 2)                                         \
            for (int k = 0; k < w; k++) s[k] += s[k + w];                               \
        if (log_softmax) {                                                              \
            T lse = LOG(s[0]);   /* (x - max) - lse: exact where max + lse is not */    \
            for (i = 0; i < n; i++) y[i] = (x[i] - mx) - lse;                           \
        } else {                                                                        \
            T inv = 1 / s[0];                                                           \
            for (i = 0; i < n; i++) y[i] *= inv;                                        \
        }                                                                               \
    }

/* softmax:     dx = y * (g - sum(g * y))
 * log_softmax: dx = g - exp(y) * sum(g)        (y is the forward's output, <= 0) */
#define SOFTMAX_BACKWARD_ROW(T, EXP)                                                    \
    {                                                                                   \
        T s[LANES];                                                                     \
        for (int k = 0; k < LANES; k++) s[k] = 0;                                       \
        int64_t i = 0;                                                                  \
        for (; i + LANES <= n; i += LANES)                                              \
            for (int k = 0; k < LANES; k++)                                             \
                s[k] += log_softmax ? g[i + k] : g[i + k] * y[i + k];                   \
        for (; i < n; i++) s[0] += log_softmax ? g[i] : g[i] * y[i];                    \
        for (int w = LANES / 2; w >= 1; w /= 2)                                         \
            for (int k = 0; k < w; k++) s[k] += s[k + w];                               \
        T sum = s[0];                                                                   \
        for (i = 0; i + LANES <= n; i += LANES) {                                       \
            PREFETCH(T, g + n + i, y + n + i)                                           \
            if (log_softmax)                                                            \
                for (int k = 0; k < LANES; k++) dx[i + k] = g[i + k] - EXP(y[i + k]) * sum; \
            else                                                                        \
                for (int k = 0; k < LANES; k++) dx[i + k] = y[i + k] * (g[i + k] - sum); \
        }                                                                               \
        for (; i < n; i++)                                                              \
            dx[i] = log_softmax ? g[i] - EXP(y[i]) * sum : y[i] * (g[i] - sum);         \
    }

/* The row loops, once per element type; `ATTR` picks the instruction set. */
#define ROW_LOOPS(SUFFIX, ATTR, T, EXP, LOG)                                            \
    ATTR static void softmax_##SUFFIX(const T *restrict x, T *restrict y, int64_t rows,   \
                                      int64_t n, int log_softmax) {                     \
        for (int64_t r = 0; r < rows; r++, x += n, y += n) SOFTMAX_ROW(T, EXP, LOG)     \
    }                                                                                   \
    ATTR static void backward_##SUFFIX(const T *restrict g, const T *restrict y,          \
                                       T *restrict dx, int64_t rows, int64_t n,         \
                                       int log_softmax) {                               \
        for (int64_t r = 0; r < rows; r++, g += n, y += n, dx += n)                     \
            SOFTMAX_BACKWARD_ROW(T, EXP)                                                \
    }

#ifdef EM_F32_AVX2       /* the exp polynomial is a chain of multiply-adds */
ROW_LOOPS(f32_avx2, EM_AVX2_FMA, float, em_exp_nonpos_float32, em_log_float32)
#endif
ROW_LOOPS(f32, , float, em_exp_nonpos_float32, em_log_float32)
ROW_LOOPS(f64, EM_CLONES, double, exp, log)

/* Rows [b, e) of one call, on whichever thread the pool hands them to. */
typedef struct {
    const void *a, *b;
    void *out;
    int64_t n;
    int log_softmax, f64;
} rows_job;

static void forward_range(void *ctx, int64_t b, int64_t e) {
    const rows_job *J = ctx;
    if (J->f64)
        softmax_f64((const double *)J->a + b * J->n, (double *)J->out + b * J->n, e - b, J->n,
                    J->log_softmax);
    else
        EM_F32(softmax)((const float *)J->a + b * J->n, (float *)J->out + b * J->n, e - b, J->n,
                     J->log_softmax);
}

static void backward_range(void *ctx, int64_t b, int64_t e) {
    const rows_job *J = ctx;
    int64_t o = b * J->n;
    if (J->f64)
        backward_f64((const double *)J->a + o, (const double *)J->b + o, (double *)J->out + o,
                     e - b, J->n, J->log_softmax);
    else
        EM_F32(backward)((const float *)J->a + o, (const float *)J->b + o, (float *)J->out + o,
                      e - b, J->n, J->log_softmax);
}

static int64_t row_grain(int64_t n) { return n >= GRAIN ? 1 : GRAIN / (n ? n : 1); }

void em_softmax_rows_f32(const float *x, float *y, int64_t rows, int64_t n, int log_softmax) {
    rows_job J = {x, 0, y, n, log_softmax, 0};
    em_parallel_for(rows, row_grain(n), forward_range, &J);
}

void em_softmax_rows_f64(const double *x, double *y, int64_t rows, int64_t n, int log_softmax) {
    rows_job J = {x, 0, y, n, log_softmax, 1};
    em_parallel_for(rows, row_grain(n), forward_range, &J);
}

void em_softmax_backward_rows_f32(const float *g, const float *y, float *dx, int64_t rows,
                                  int64_t n, int log_softmax) {
    rows_job J = {g, y, dx, n, log_softmax, 0};
    em_parallel_for(rows, row_grain(n), backward_range, &J);
}

void em_softmax_backward_rows_f64(const double *g, const double *y, double *dx, int64_t rows,
                                  int64_t n, int log_softmax) {
    rows_job J = {g, y, dx, n, log_softmax, 1};
    em_parallel_for(rows, row_grain(n), backward_range, &J);
}
