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

#define LANES 8
#define GRAIN 16384   /* elements of work below which a chunk is not worth a thread */

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
    /* the row's max (0 when it is +-inf, so x - max stays meaningful) */               \
    static inline T ce_max_##SFX(const T *restrict xr, int64_t C) {                     \
        T m[LANES];                                                                     \
        for (int k = 0; k < LANES; k++) m[k] = -INFINITY;                               \
        int64_t i = 0;                                                                  \
        for (; i + LANES <= C; i += LANES)                                              \
            for (int k = 0; k < LANES; k++) m[k] = xr[i + k] > m[k] ? xr[i + k] : m[k]; \
        for (; i < C; i++) m[0] = xr[i] > m[0] ? xr[i] : m[0];                          \
        T mx = m[0];                                                                    \
        for (int k = 1; k < LANES; k++) mx = m[k] > mx ? m[k] : mx;                     \
        return isinf(mx) ? (mx > 0 ? mx : 0) : mx;                                      \
    }                                                                                   \
                                                                                        \
    EM_CLONES static void ce_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {             \
        const ce_ctx_##SFX *c = ctx;                                                    \
        const int64_t C = c->C;                                                         \
        const T *restrict w = c->w;                                                     \
        for (int64_t r = r0; r < r1; r++) {                                             \
            const int64_t t = c->target[r];                                             \
            if (t == c->ignore) { c->loss[r] = 0; c->wrow[r] = 0; continue; }           \
            const T *restrict xr = c->x + r * C;                                        \
            const T mx = ce_max_##SFX(xr, C);                                           \
            double s[LANES] = {0}, sw[LANES] = {0};                                     \
            int64_t i = 0;                                                              \
            for (; i + LANES <= C; i += LANES)                                          \
                for (int k = 0; k < LANES; k++) s[k] += EXP(xr[i + k] - mx);            \
            for (; i < C; i++) s[0] += EXP(xr[i] - mx);                                 \
            double sum = 0, smooth = 0;                                                 \
            for (int k = 0; k < LANES; k++) sum += s[k];                                \
            const double lse = log(sum), wt = w ? (double)w[t] : 1.0;                   \
            double loss = (1 - c->ls) * wt * (lse - ((double)xr[t] - mx));              \
            if (c->ls > 0) {                                                            \
                i = 0;                                                                  \
                if (w) {                                                                \
                    for (; i + LANES <= C; i += LANES)                                  \
                        for (int k = 0; k < LANES; k++)                                 \
                            sw[k] += (double)w[i + k] * (xr[i + k] - mx);               \
                    for (; i < C; i++) sw[0] += (double)w[i] * (xr[i] - mx);            \
                } else {                                                                \
                    for (; i + LANES <= C; i += LANES)                                  \
                        for (int k = 0; k < LANES; k++) sw[k] += xr[i + k] - mx;        \
                    for (; i < C; i++) sw[0] += xr[i] - mx;                             \
                }                                                                       \
                for (int k = 0; k < LANES; k++) smooth += sw[k];                        \
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
            double s[LANES] = {0};                                                      \
            int64_t i = 0;                                                              \
            for (; i + LANES <= C; i += LANES)                                          \
                for (int k = 0; k < LANES; k++) {                                       \
                    T e = EXP(xr[i + k] - mx);                                          \
                    dr[i + k] = e;                                                      \
                    s[k] += e;                                                          \
                }                                                                       \
            for (; i < C; i++) { T e = EXP(xr[i] - mx); dr[i] = e; s[0] += e; }         \
            double sum = 0;                                                             \
            for (int k = 0; k < LANES; k++) sum += s[k];                                \
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

CROSS_ENTROPY(f32, float, em_exp_float32)
CROSS_ENTROPY(f64, double, exp)
NLL_LOSS(f32, float)
NLL_LOSS(f64, double)
