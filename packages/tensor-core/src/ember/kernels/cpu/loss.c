/* cross_entropy with class-index targets, fused: one row of logits gives its loss
 * from its max, its sum of exp(x - max) and (with label smoothing) its weighted sum
 * of x - max, so the log-softmax is never written out. The backward recomputes the
 * softmax from the logits, row by row. nll_loss picks one log-probability per
 * position of an (N, C, S) array.
 *
 * Targets are int64 and already checked (in [0, C) or ignore_index) by the caller.
 * w is the class weights (C,), or NULL for all ones; wtotal is their sum (C when
 * NULL). Each kernel also writes, per position, the weight of its target (0 where
 * ignored): the denominator of the 'mean' reduction. The CUDA and OpenCL backends
 * implement the same entry points. */
#include <string.h>
#include "ember_c_types.h"
#include "threads.h"

#define LANES 32
#define GRAIN 16384   /* elements of work below which a chunk is not worth a thread */
#define BLOCK 256     /* elements summed in T lanes before their total goes to double
                        (a multiple of LANES) */

static inline int64_t grain_for(int64_t work_per_item) {
    return work_per_item >= GRAIN ? 1 : GRAIN / (work_per_item > 0 ? work_per_item : 1);
}

/* With lse = log(sum_c exp(x_c - max)) and t the row's target:
 *   loss = (1 - ls) * w_t * (lse - (x_t - max))
 *        + ls / C * sum_c w_c * (lse - (x_c - max))                (PyTorch's formula) */
#define CROSS_ENTROPY(SFX, T, EXP)                                                      \
    typedef struct {                                                                    \
        const T *x, *w, *g;                                                             \
        const int64_t *target;                                                          \
        T *loss, *wrow, *dx;                                                            \
        int64_t C, ignore, gstride;                                                     \
        double ls, wtotal, scale;                                                       \
    } ce_ctx_##SFX;                                                                     \
                                                                                        \
    /* The row's max (0 when it is +-inf, so x - max stays meaningful) and              \
     * sum_c exp(x_c - mx), in LANES lanes that stay in vector registers: a row of at    \
     * least LANES ends with one more full chunk, overlapping the last one (the max      \
     * does not mind, the sum masks the repeated elements), never a scalar tail; the    \
     * sum goes to double every BLOCK elements (a long row's error stays that of         \
     * BLOCK / LANES terms). With dst, each exp is also written there. */               \
    static inline T ce_max_##SFX(const T *restrict xr, int64_t C) {                     \
        T mx = -INFINITY;                                                               \
        if (C < LANES) {                                                                \
            for (int64_t i = 0; i < C; i++) mx = xr[i] > mx ? xr[i] : mx;               \
        } else {                                                                        \
            T m[LANES];                                                                 \
            for (int k = 0; k < LANES; k++) m[k] = -INFINITY;                           \
            for (int64_t i = 0;; i += LANES) {                                          \
                if (i + LANES > C) i = C - LANES;                                       \
                for (int k = 0; k < LANES; k++) m[k] = xr[i + k] > m[k] ? xr[i + k] : m[k]; \
                if (i + LANES == C) break;                                              \
            }                                                                           \
            for (int w = LANES / 2; w >= 1; w /= 2)                                     \
                for (int k = 0; k < w; k++) m[k] = m[k + w] > m[k] ? m[k + w] : m[k];   \
            mx = m[0];                                                                  \
        }                                                                               \
        return isinf(mx) ? (mx > 0 ? mx : 0) : mx;                                      \
    }                                                                                   \
                                                                                        \
    static inline double ce_expsum_##SFX(const T *restrict xr, T *restrict dst,         \
                                         int64_t C, T mx) {                             \
        double sum = 0;                                                                 \
        if (C < LANES) {                                                                \
            T s = 0;                                                                    \
            for (int64_t i = 0; i < C; i++) {                                           \
                T v = EXP(xr[i] - mx);                                                  \
                if (dst) dst[i] = v;                                                    \
                s += v;                                                                 \
            }                                                                           \
            return s;                                                                   \
        }                                                                               \
        T s[LANES];                                                                     \
        for (int k = 0; k < LANES; k++) s[k] = 0;                                       \
        for (int64_t i = 0, done = 0;; i += LANES) {                                    \
            if (i + LANES > C) { done = i; i = C - LANES; }                             \
            for (int k = 0; k < LANES; k++) {                                           \
                T v = EXP(xr[i + k] - mx);                                              \
                if (dst) dst[i + k] = v;                                                \
                s[k] += i + k >= done ? v : 0;                                          \
            }                                                                           \
            if (i + LANES == C || (i + LANES) % BLOCK == 0) {                           \
                for (int w = LANES / 2; w >= 1; w /= 2)                                 \
                    for (int k = 0; k < w; k++) s[k] += s[k + w];                       \
                sum += s[0];                                                            \
                for (int k = 0; k < LANES; k++) s[k] = 0;                               \
                if (i + LANES == C) break;                                              \
            }                                                                           \
            done = 0;                                                                   \
        }                                                                               \
        return sum;                                                                     \
    }                                                                                   \
                                                                                        \
    /* one row at a time, the row read from memory once (its max, then its exps from   \
     * L1): the log-softmax at the target and the smoothing sum, never written out */   \
    EM_CLONES static void ce_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {             \
        const ce_ctx_##SFX *c = ctx;                                                    \
        const int64_t C = c->C;                                                         \
        const T *restrict w = c->w;                                                     \
        for (int64_t r = r0; r < r1; r++) {                                             \
            const int64_t t = c->target[r];                                             \
            if (t == c->ignore) { c->loss[r] = 0; c->wrow[r] = 0; continue; }           \
            const T *restrict xr = c->x + r * C;                                        \
            const T mx = ce_max_##SFX(xr, C);                                           \
            const double lse = log(ce_expsum_##SFX(xr, NULL, C, mx));                   \
            const double wt = w ? (double)w[t] : 1.0;                                   \
            double loss = (1 - c->ls) * wt * (lse - ((double)xr[t] - mx));              \
            if (c->ls > 0) {                                                            \
                double smooth = 0;                                                      \
                if (w)                                                                  \
                    for (int64_t i = 0; i < C; i++) smooth += (double)w[i] * (xr[i] - mx); \
                else                                                                    \
                    for (int64_t i = 0; i < C; i++) smooth += xr[i] - mx;               \
                loss += c->ls / (double)C * (lse * c->wtotal - smooth);                 \
            }                                                                           \
            c->loss[r] = (T)loss;                                                       \
            c->wrow[r] = (T)wt;                                                         \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_cross_entropy_##SFX(const T *x, const int64_t *target, const T *w, T *loss,  \
                                T *wrow, int64_t rows, int64_t C, int64_t ignore_index, \
                                double label_smoothing, double wtotal) {                \
        ce_ctx_##SFX c = {x, w, NULL, target, loss, wrow, NULL, C, ignore_index, 0,     \
                          label_smoothing, wtotal, 0};                                  \
        em_parallel_for(rows, grain_for(3 * C), ce_rows_##SFX, &c);                     \
    }                                                                                   \
                                                                                        \
    /* dx_c = gr * ((1 - ls) * w_t * (p_c - [c == t]) + ls / C * (W * p_c - w_c)),       \
     * gr = g[r * gstride] * scale, p the softmax of the row, W = wtotal */              \
    EM_CLONES static void ce_back_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {        \
        const ce_ctx_##SFX *c = ctx;                                                    \
        const int64_t C = c->C;                                                         \
        const T *restrict w = c->w;                                                     \
        for (int64_t r = r0; r < r1; r++) {                                             \
            const int64_t t = c->target[r];                                             \
            T *restrict dr = c->dx + r * C;                                             \
            if (t == c->ignore) { memset(dr, 0, C * sizeof(T)); continue; }             \
            const T *restrict xr = c->x + r * C;                                        \
            const T mx = ce_max_##SFX(xr, C);                                           \
            const double sum = ce_expsum_##SFX(xr, dr, C, mx);                          \
            int64_t i;                                                                  \
            const double gr = (double)c->g[r * c->gstride] * c->scale;                  \
            const double wt = w ? (double)w[t] : 1.0;                                   \
            const T alpha = (T)(gr * ((1 - c->ls) * wt + c->ls / (double)C * c->wtotal) / sum); \
            const T beta = (T)(gr * c->ls / (double)C);                                 \
            if (w && c->ls > 0)                                                         \
                for (i = 0; i < C; i++) dr[i] = alpha * dr[i] - beta * w[i];            \
            else                                                                        \
                for (i = 0; i < C; i++) dr[i] = alpha * dr[i] - beta;                   \
            dr[t] -= (T)(gr * (1 - c->ls) * wt);                                        \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_cross_entropy_backward_##SFX(const T *x, const int64_t *target, const T *w,  \
                                         const T *g, int64_t gstride, double scale,     \
                                         T *dx, int64_t rows, int64_t C,                \
                                         int64_t ignore_index, double label_smoothing,  \
                                         double wtotal) {                               \
        ce_ctx_##SFX c = {x, w, g, target, NULL, NULL, dx, C, ignore_index, gstride,    \
                          label_smoothing, wtotal, scale};                              \
        em_parallel_for(rows, grain_for(4 * C), ce_back_rows_##SFX, &c);                \
    }

/* nll_loss over x (N, C, S): loss[n, s] = -w_t * x[n, t, s], t = target[n, s]. */
#define NLL_LOSS(SFX, T)                                                                \
    void em_nll_loss_##SFX(const T *x, const int64_t *target, const T *w, T *loss,       \
                           T *wrow, int64_t N, int64_t C, int64_t S,                    \
                           int64_t ignore_index) {                                      \
        for (int64_t n = 0; n < N; n++)                                                 \
            for (int64_t s = 0; s < S; s++) {                                           \
                const int64_t p = n * S + s, t = target[p];                             \
                if (t == ignore_index) { loss[p] = 0; wrow[p] = 0; continue; }          \
                const T wt = w ? w[t] : 1;                                              \
                loss[p] = -wt * x[(n * C + t) * S + s];                                 \
                wrow[p] = wt;                                                           \
            }                                                                           \
    }                                                                                   \
                                                                                        \
    /* dx[n, t, s] = -w_t * g[(n * S + s) * gstride] * scale, zero elsewhere */         \
    void em_nll_loss_backward_##SFX(const int64_t *target, const T *w, const T *g,       \
                                    int64_t gstride, double scale, T *dx, int64_t N,    \
                                    int64_t C, int64_t S, int64_t ignore_index) {       \
        memset(dx, 0, (size_t)(N * C * S) * sizeof(T));                                 \
        for (int64_t n = 0; n < N; n++)                                                 \
            for (int64_t s = 0; s < S; s++) {                                           \
                const int64_t p = n * S + s, t = target[p];                             \
                if (t == ignore_index) continue;                                        \
                const double wt = w ? (double)w[t] : 1.0;                               \
                dx[(n * C + t) * S + s] = (T)(-wt * g[p * gstride] * scale);            \
            }                                                                           \
    }

CROSS_ENTROPY(f32, float, em_exp_nonpos_float32)   /* x - max <= 0 (or NaN) */
CROSS_ENTROPY(f64, double, exp)
NLL_LOSS(f32, float)
NLL_LOSS(f64, double)
