/* layer_norm and batch_norm, forward and backward, over contiguous arrays.
 *
 * Statistics are two-pass (the mean, then the sum of squared deviations from it),
 * never E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std. Partial
 * sums live in LANES lanes of double, so the loops vectorise without reassociation
 * flags and float32 rows of any length keep their digits.
 *
 * Large problems are split over the thread pool (threads.h) along rows, channels or
 * column blocks. Every output element is computed by one thread in a fixed order, so
 * results do not depend on the number of threads.
 *
 * layer_norm: x is (rows, n); mean and rstd are (rows,).
 * batch_norm: x is (N, C, S) (S = the product of the spatial dims, 1 for (N, C));
 * the statistics are per channel, over N * S values.
 * The CUDA and OpenCL backends implement the same entry points. */
#include <stddef.h>
#include "ember_c_types.h"
#include "threads.h"

#define LANES 8
#define GRAIN 16384   /* elements of work below which a chunk is not worth a thread */
#define CBLOCK 256    /* columns (channels) one thread reduces together */

static inline int64_t grain_for(int64_t work_per_item) {
    return work_per_item >= GRAIN ? 1 : GRAIN / (work_per_item > 0 ? work_per_item : 1);
}

static inline int64_t nblocks(int64_t n) { return (n + CBLOCK - 1) / CBLOCK; }

/* layer_norm ----------------------------------------------------------------------- */

/* y = (x - mean) * rstd * w + b per row; w and b may be NULL. */
#define LAYER_NORM(SFX, T)                                                              \
    typedef struct {                                                                    \
        const T *x, *w, *b;                                                             \
        T *y, *mean, *rstd;                                                             \
        int64_t n;                                                                      \
        double eps;                                                                     \
    } ln_ctx_##SFX;                                                                     \
                                                                                        \
    EM_CLONES static void ln_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {             \
        const ln_ctx_##SFX *c = ctx;                                                    \
        const int64_t n = c->n;                                                         \
        const T *restrict w = c->w, *restrict b = c->b;                                 \
        for (int64_t r = r0; r < r1; r++) {                                             \
            const T *restrict xr = c->x + r * n;                                        \
            T *restrict yr = c->y + r * n;                                              \
            double s[LANES] = {0}, q[LANES] = {0};                                      \
            int64_t i = 0;                                                              \
            for (; i + LANES <= n; i += LANES)                                          \
                for (int k = 0; k < LANES; k++) s[k] += xr[i + k];                      \
            for (; i < n; i++) s[0] += xr[i];                                           \
            double mu = 0;                                                              \
            for (int k = 0; k < LANES; k++) mu += s[k];                                 \
            mu /= (double)n;                                                            \
            for (i = 0; i + LANES <= n; i += LANES)                                     \
                for (int k = 0; k < LANES; k++) {                                       \
                    double d = xr[i + k] - mu;                                          \
                    q[k] += d * d;                                                      \
                }                                                                       \
            for (; i < n; i++) { double d = xr[i] - mu; q[0] += d * d; }                \
            double var = 0;                                                             \
            for (int k = 0; k < LANES; k++) var += q[k];                                \
            double rs = 1.0 / sqrt(var / (double)n + c->eps);                           \
            c->mean[r] = (T)mu;                                                         \
            c->rstd[r] = (T)rs;                                                         \
            const T m = (T)mu, k = (T)rs;                                               \
            if (w && b)                                                                 \
                for (i = 0; i < n; i++) yr[i] = (xr[i] - m) * k * w[i] + b[i];          \
            else if (w)                                                                 \
                for (i = 0; i < n; i++) yr[i] = (xr[i] - m) * k * w[i];                 \
            else if (b)                                                                 \
                for (i = 0; i < n; i++) yr[i] = (xr[i] - m) * k + b[i];                 \
            else                                                                        \
                for (i = 0; i < n; i++) yr[i] = (xr[i] - m) * k;                        \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_layer_norm_##SFX(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd,  \
                             int64_t rows, int64_t n, double eps) {                     \
        ln_ctx_##SFX c = {x, w, b, y, mean, rstd, n, eps};                              \
        em_parallel_for(rows, grain_for(3 * n), ln_rows_##SFX, &c);                     \
    }

/* dx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)) with wg = g * w, per row;
 * dw = sum over rows of g * xhat, db = sum over rows of g, by column blocks. */
#define LAYER_NORM_BACKWARD(SFX, T)                                                     \
    typedef struct {                                                                    \
        const T *g, *x, *mean, *rstd, *w;                                               \
        T *dx, *dw, *db;                                                                \
        int64_t rows, n;                                                                \
    } lnb_ctx_##SFX;                                                                    \
                                                                                        \
    EM_CLONES static void lnb_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {            \
        const lnb_ctx_##SFX *c = ctx;                                                   \
        const int64_t n = c->n;                                                         \
        const T *restrict w = c->w;                                                     \
        for (int64_t r = r0; r < r1; r++) {                                             \
            const T *restrict gr = c->g + r * n, *restrict xr = c->x + r * n;           \
            T *restrict dr = c->dx + r * n;                                             \
            const T m = c->mean[r];                                                     \
            double sa[LANES] = {0}, sb[LANES] = {0};                                    \
            int64_t i = 0;                                                              \
            if (w) {                                                                    \
                for (; i + LANES <= n; i += LANES)                                      \
                    for (int k = 0; k < LANES; k++) {                                   \
                        double wg = gr[i + k] * w[i + k];                               \
                        sa[k] += wg;                                                    \
                        sb[k] += wg * (xr[i + k] - m);                                  \
                    }                                                                   \
                for (; i < n; i++) {                                                    \
                    double wg = gr[i] * w[i];                                           \
                    sa[0] += wg;                                                        \
                    sb[0] += wg * (xr[i] - m);                                          \
                }                                                                       \
            } else {                                                                    \
                for (; i + LANES <= n; i += LANES)                                      \
                    for (int k = 0; k < LANES; k++) {                                   \
                        sa[k] += gr[i + k];                                             \
                        sb[k] += (double)gr[i + k] * (xr[i + k] - m);                   \
                    }                                                                   \
                for (; i < n; i++) {                                                    \
                    sa[0] += gr[i];                                                     \
                    sb[0] += (double)gr[i] * (xr[i] - m);                               \
                }                                                                       \
            }                                                                           \
            double a = 0, bsum = 0;                                                     \
            for (int k = 0; k < LANES; k++) { a += sa[k]; bsum += sb[k]; }              \
            const double rs = c->rstd[r];                                               \
            /* xhat * mean(wg * xhat) = (x - mean) * rstd^2 * mean(wg * (x - mean)) */  \
            const T A = (T)(a / (double)n), B = (T)(bsum / (double)n * rs * rs);        \
            const T k = (T)rs;                                                          \
            if (w)                                                                      \
                for (i = 0; i < n; i++)                                                 \
                    dr[i] = k * (gr[i] * w[i] - A - (xr[i] - m) * B);                   \
            else                                                                        \
                for (i = 0; i < n; i++) dr[i] = k * (gr[i] - A - (xr[i] - m) * B);      \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    EM_CLONES static void lnb_cols_##SFX(void *ctx, int64_t b0, int64_t b1) {            \
        const lnb_ctx_##SFX *c = ctx;                                                   \
        const int64_t n = c->n;                                                         \
        for (int64_t blk = b0; blk < b1; blk++) {                                       \
            const int64_t j0 = blk * CBLOCK;                                            \
            const int64_t nj = n - j0 < CBLOCK ? n - j0 : CBLOCK;                       \
            double sw[CBLOCK] = {0}, sb[CBLOCK] = {0};                                  \
            int64_t r = 0;                                                              \
            /* four rows at a time: a quarter of the accumulator traffic */             \
            for (; r + 4 <= c->rows; r += 4) {                                          \
                const T *restrict g0 = c->g + r * n + j0, *restrict x0 = c->x + r * n + j0; \
                const T *restrict g1 = g0 + n, *restrict x1 = x0 + n;                   \
                const T *restrict g2 = g1 + n, *restrict x2 = x1 + n;                   \
                const T *restrict g3 = g2 + n, *restrict x3 = x2 + n;                   \
                const T m0 = c->mean[r], m1 = c->mean[r + 1], m2 = c->mean[r + 2],      \
                        m3 = c->mean[r + 3];                                            \
                const T s0 = c->rstd[r], s1 = c->rstd[r + 1], s2 = c->rstd[r + 2],      \
                        s3 = c->rstd[r + 3];                                            \
                for (int64_t j = 0; j < nj; j++) {                                      \
                    sw[j] += (g0[j] * ((x0[j] - m0) * s0) + g1[j] * ((x1[j] - m1) * s1)) \
                           + (g2[j] * ((x2[j] - m2) * s2) + g3[j] * ((x3[j] - m3) * s3)); \
                    sb[j] += (g0[j] + g1[j]) + (g2[j] + g3[j]);                         \
                }                                                                       \
            }                                                                           \
            for (; r < c->rows; r++) {                                                  \
                const T *restrict gr = c->g + r * n + j0, *restrict xr = c->x + r * n + j0; \
                const T m = c->mean[r], rs = c->rstd[r];                                \
                for (int64_t j = 0; j < nj; j++) {                                      \
                    sw[j] += gr[j] * ((xr[j] - m) * rs);                                \
                    sb[j] += gr[j];                                                     \
                }                                                                       \
            }                                                                           \
            if (c->dw)                                                                  \
                for (int64_t j = 0; j < nj; j++) c->dw[j0 + j] = (T)sw[j];              \
            if (c->db)                                                                  \
                for (int64_t j = 0; j < nj; j++) c->db[j0 + j] = (T)sb[j];              \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_layer_norm_backward_##SFX(const T *g, const T *x, const T *mean,             \
                                      const T *rstd, const T *w, T *dx, T *dw, T *db,   \
                                      int64_t rows, int64_t n) {                        \
        lnb_ctx_##SFX c = {g, x, mean, rstd, w, dx, dw, db, rows, n};                   \
        if (dx) em_parallel_for(rows, grain_for(4 * n), lnb_rows_##SFX, &c);            \
        if (dw || db)                                                                   \
            em_parallel_for(nblocks(n), grain_for(2 * rows * CBLOCK), lnb_cols_##SFX, &c); \
    }

/* batch_norm ----------------------------------------------------------------------- */

/* Per-channel sums over (N, C, S): mode STATS gives mean and the biased variance
 * (two passes); mode GRAD gives sum(g) and sum(g * (x - mean)). Channels are split
 * over threads (S > 1: one channel, N rows of S; S == 1: a block of CBLOCK channels,
 * summed down the N rows with the lanes across channels). */
enum { BN_STATS, BN_GRAD };

#define BATCH_NORM(SFX, T)                                                              \
    typedef struct {                                                                    \
        int mode;                                                                       \
        const T *x, *g;                                                                 \
        T *out0, *out1;         /* STATS: mean, var. GRAD: sum_g, sum_gxmu (mean in) */ \
        const T *mean;                                                                  \
        int64_t N, C, S;                                                                \
    } bn_ctx_##SFX;                                                                     \
                                                                                        \
    EM_CLONES static void bn_channels_##SFX(void *ctx, int64_t c0, int64_t c1) {         \
        const bn_ctx_##SFX *c = ctx;                                                    \
        const int64_t N = c->N, C = c->C, S = c->S;                                     \
        const double cnt = (double)N * (double)S;                                       \
        for (int64_t ch = c0; ch < c1; ch++) {                                          \
            double s0[LANES] = {0}, s1[LANES] = {0};                                    \
            double m = c->mode == BN_GRAD ? (double)c->mean[ch] : 0;                    \
            if (c->mode == BN_STATS) {                                                  \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + (nn * C + ch) * S;                    \
                    int64_t i = 0;                                                      \
                    for (; i + LANES <= S; i += LANES)                                  \
                        for (int k = 0; k < LANES; k++) s0[k] += xr[i + k];             \
                    for (; i < S; i++) s0[0] += xr[i];                                  \
                }                                                                       \
                for (int k = 0; k < LANES; k++) m += s0[k];                             \
                m /= cnt;                                                               \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + (nn * C + ch) * S;                    \
                    int64_t i = 0;                                                      \
                    for (; i + LANES <= S; i += LANES)                                  \
                        for (int k = 0; k < LANES; k++) {                               \
                            double d = xr[i + k] - m;                                   \
                            s1[k] += d * d;                                             \
                        }                                                               \
                    for (; i < S; i++) { double d = xr[i] - m; s1[0] += d * d; }        \
                }                                                                       \
                double q = 0;                                                           \
                for (int k = 0; k < LANES; k++) q += s1[k];                             \
                c->out0[ch] = (T)m;                                                     \
                c->out1[ch] = (T)(q / cnt);                                             \
            } else {                                                                    \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + (nn * C + ch) * S;                    \
                    const T *restrict gr = c->g + (nn * C + ch) * S;                    \
                    int64_t i = 0;                                                      \
                    for (; i + LANES <= S; i += LANES)                                  \
                        for (int k = 0; k < LANES; k++) {                               \
                            s0[k] += gr[i + k];                                         \
                            s1[k] += gr[i + k] * (xr[i + k] - m);                       \
                        }                                                               \
                    for (; i < S; i++) { s0[0] += gr[i]; s1[0] += gr[i] * (xr[i] - m); }\
                }                                                                       \
                double a = 0, b = 0;                                                    \
                for (int k = 0; k < LANES; k++) { a += s0[k]; b += s1[k]; }             \
                c->out0[ch] = (T)a;                                                     \
                c->out1[ch] = (T)b;                                                     \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    EM_CLONES static void bn_blocks_##SFX(void *ctx, int64_t b0, int64_t b1) {           \
        const bn_ctx_##SFX *c = ctx;                                                    \
        const int64_t N = c->N, C = c->C;                                               \
        for (int64_t blk = b0; blk < b1; blk++) {                                       \
            const int64_t j0 = blk * CBLOCK;                                            \
            const int64_t nj = C - j0 < CBLOCK ? C - j0 : CBLOCK;                       \
            double s0[CBLOCK] = {0}, s1[CBLOCK] = {0}, m[CBLOCK];                       \
            if (c->mode == BN_STATS) {                                                  \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + nn * C + j0;                          \
                    for (int64_t j = 0; j < nj; j++) s0[j] += xr[j];                    \
                }                                                                       \
                for (int64_t j = 0; j < nj; j++) m[j] = s0[j] / (double)N;              \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + nn * C + j0;                          \
                    for (int64_t j = 0; j < nj; j++) {                                  \
                        double d = xr[j] - m[j];                                        \
                        s1[j] += d * d;                                                 \
                    }                                                                   \
                }                                                                       \
                for (int64_t j = 0; j < nj; j++) {                                      \
                    c->out0[j0 + j] = (T)m[j];                                          \
                    c->out1[j0 + j] = (T)(s1[j] / (double)N);                           \
                }                                                                       \
            } else {                                                                    \
                for (int64_t j = 0; j < nj; j++) m[j] = c->mean[j0 + j];                \
                for (int64_t nn = 0; nn < N; nn++) {                                    \
                    const T *restrict xr = c->x + nn * C + j0;                          \
                    const T *restrict gr = c->g + nn * C + j0;                          \
                    for (int64_t j = 0; j < nj; j++) {                                  \
                        s0[j] += gr[j];                                                 \
                        s1[j] += gr[j] * (xr[j] - m[j]);                                \
                    }                                                                   \
                }                                                                       \
                for (int64_t j = 0; j < nj; j++) {                                      \
                    c->out0[j0 + j] = (T)s0[j];                                         \
                    c->out1[j0 + j] = (T)s1[j];                                         \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    static void bn_reduce_##SFX(bn_ctx_##SFX *c) {                                      \
        if (c->S == 1)                                                                  \
            em_parallel_for(nblocks(c->C), grain_for(2 * c->N * CBLOCK), bn_blocks_##SFX, c); \
        else                                                                            \
            em_parallel_for(c->C, grain_for(2 * c->N * c->S), bn_channels_##SFX, c);    \
    }                                                                                   \
                                                                                        \
    void em_batch_norm_stats_##SFX(const T *x, T *mean, T *var, int64_t N, int64_t C,    \
                                   int64_t S) {                                         \
        bn_ctx_##SFX c = {BN_STATS, x, NULL, mean, var, NULL, N, C, S};                 \
        bn_reduce_##SFX(&c);                                                            \
    }                                                                                   \
                                                                                        \
    void em_batch_norm_backward_reduce_##SFX(const T *g, const T *x, const T *mean,      \
                                             T *sum_g, T *sum_gxmu, int64_t N, int64_t C, \
                                             int64_t S) {                               \
        bn_ctx_##SFX c = {BN_GRAD, x, g, sum_g, sum_gxmu, mean, N, C, S};               \
        bn_reduce_##SFX(&c);                                                            \
    }                                                                                   \
                                                                                        \
    /* out = a[c] * u + b[c] * v + d[c] (v and b may be NULL): the forward is            \
     * scale * x + shift, the input gradient a * g + b * x + d */                        \
    typedef struct {                                                                    \
        const T *u, *v, *a, *b, *d;                                                     \
        T *out;                                                                         \
        int64_t C, S;                                                                   \
    } bne_ctx_##SFX;                                                                    \
                                                                                        \
    EM_CLONES static void bne_rows_##SFX(void *ctx, int64_t r0, int64_t r1) {            \
        const bne_ctx_##SFX *c = ctx;                                                   \
        const int64_t C = c->C, S = c->S;                                               \
        if (S == 1) {           /* rows are samples, the lanes run across channels */   \
            const T *restrict a = c->a, *restrict b = c->b, *restrict d = c->d;         \
            for (int64_t r = r0; r < r1; r++) {                                         \
                const T *restrict u = c->u + r * C;                                     \
                T *restrict o = c->out + r * C;                                         \
                if (c->v) {                                                             \
                    const T *restrict v = c->v + r * C;                                 \
                    for (int64_t j = 0; j < C; j++) o[j] = a[j] * u[j] + b[j] * v[j] + d[j]; \
                } else {                                                                \
                    for (int64_t j = 0; j < C; j++) o[j] = a[j] * u[j] + d[j];          \
                }                                                                       \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        for (int64_t r = r0; r < r1; r++) {   /* rows are (n, c) pairs */               \
            const int64_t ch = r % C;                                                   \
            const T *restrict u = c->u + r * S;                                         \
            T *restrict o = c->out + r * S;                                             \
            const T a = c->a[ch], d = c->d[ch];                                         \
            if (c->v) {                                                                 \
                const T *restrict v = c->v + r * S;                                     \
                const T b = c->b[ch];                                                   \
                for (int64_t s = 0; s < S; s++) o[s] = a * u[s] + b * v[s] + d;         \
            } else {                                                                    \
                for (int64_t s = 0; s < S; s++) o[s] = a * u[s] + d;                    \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_batch_norm_elemt_##SFX(const T *u, const T *v, const T *a, const T *b,       \
                                   const T *d, T *out, int64_t N, int64_t C, int64_t S) { \
        bne_ctx_##SFX c = {u, v, a, b, d, out, C, S};                                   \
        if (S == 1)                                                                     \
            em_parallel_for(N, grain_for(C), bne_rows_##SFX, &c);                       \
        else                                                                            \
            em_parallel_for(N * C, grain_for(S), bne_rows_##SFX, &c);                   \
    }

LAYER_NORM(f32, float)
LAYER_NORM(f64, double)
LAYER_NORM_BACKWARD(f32, float)
LAYER_NORM_BACKWARD(f64, double)
BATCH_NORM(f32, float)
BATCH_NORM(f64, double)
