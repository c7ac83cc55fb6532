/* layer_norm and batch_norm, forward and backward, over contiguous arrays.
 *
 * Statistics are two-pass (the mean, then the sum of squared deviations from it),
 * never E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std. Partial
 * sums live in LANES lanes, so the loops vectorise without reassociation flags:
 * layer_norm sums a row's mean in double lanes and its squared deviations (small
 * numbers) and backward sums in lanes of its own dtype within leaves of LEAF
 * elements, in double across leaves; batch_norm sums in double lanes.
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
#include <stdlib.h>
#include "ember_c_types.h"
#include "threads.h"

#define LANES 8
#define LN_LANES 16   /* two AVX2 registers of float32 (four of float64) */
#define LEAF 1024
#define GRAIN 16384   /* elements of work below which a chunk is not worth a thread */
#define CBLOCK 256    /* columns (channels) one thread reduces together */
#define LN_CBLOCK 1024 /* layer_norm's dw/db: long runs of a row are what prefetchers like */
#define RLEAF 64      /* rows summed in the input's dtype before adding up in double */

static inline int64_t grain_for(int64_t work_per_item) {
    return work_per_item >= GRAIN ? 1 : GRAIN / (work_per_item > 0 ? work_per_item : 1);
}

static inline int64_t nblocks(int64_t n) { return (n + CBLOCK - 1) / CBLOCK; }

/* OUT (a double) = the sum over j in [0, n) of EXPR (an expression in j), in
 * LN_LANES lanes of double: the mean of a row, whose float32 partial sums would lose
 * the digits the deviations live in when |mean| >> std. */
#define DOUBLE_SUM(n, EXPR, OUT)                                                        \
    do {                                                                                \
        double a_[LN_LANES] = {0};                                                      \
        int64_t j = 0;                                                                  \
        for (; j + LN_LANES <= (n); j += LN_LANES)                                      \
            for (int k_ = 0; k_ < LN_LANES; k_++) a_[k_] += (EXPR)[k_];                 \
        for (; j < (n); j++) a_[0] += (EXPR)[0];                                        \
        OUT = 0;                                                                        \
        for (int k_ = 0; k_ < LN_LANES; k_++) OUT += a_[k_];                            \
    } while (0)

/* OUT0, OUT1 (doubles) = the sums over a row [0, n) of EXPR0(LD) and EXPR1(LD), in
 * two GCC vectors of T (32 bytes) each within leaves of LEAF elements, in double
 * across leaves. EXPRk is a function-like macro that reads the row through LD(p): a
 * vector of p's elements at the current position (VLD), or one element in the tail
 * (SLD). Explicit vectors keep the lanes in registers, which the auto-vectoriser
 * does not always do for arrays of lanes. */
#define VLD(p) ({ vec_t_ v_; __builtin_memcpy(&v_, (p) + o_, sizeof v_); v_; })
#define SLD(p) ((p)[o_])
#define LEAF_SUM2(T, n, EXPR0, EXPR1, OUT0, OUT1)                                       \
    do {                                                                                \
        typedef T vec_t_ __attribute__((vector_size(32)));                              \
        enum { W_ = 32 / sizeof(T) };                                                   \
        OUT0 = 0;                                                                       \
        OUT1 = 0;                                                                       \
        for (int64_t l_ = 0; l_ < (n); l_ += LEAF) {                                    \
            const int64_t e_ = (n) - l_ < LEAF ? (n) : l_ + LEAF;                       \
            vec_t_ a0_ = {0}, a1_ = {0}, b0_ = {0}, b1_ = {0};                          \
            T ta_ = 0, tb_ = 0;                                                         \
            int64_t o_ = l_;                                                            \
            for (; o_ + 2 * W_ <= e_; o_ += 2 * W_) {                                   \
                a0_ += EXPR0(VLD);                                                      \
                b0_ += EXPR1(VLD);                                                      \
                o_ += W_;                                                               \
                a1_ += EXPR0(VLD);                                                      \
                b1_ += EXPR1(VLD);                                                      \
                o_ -= W_;                                                               \
            }                                                                           \
            for (; o_ < e_; o_++) { ta_ += EXPR0(SLD); tb_ += EXPR1(SLD); }             \
            a0_ += a1_;                                                                 \
            b0_ += b1_;                                                                 \
            for (int k_ = 0; k_ < W_; k_++) { ta_ += a0_[k_]; tb_ += b0_[k_]; }         \
            OUT0 += ta_;                                                                \
            OUT1 += tb_;                                                                \
        }                                                                               \
    } while (0)

/* the row sums of layer_norm: d = x - m - dm and d^2; g * w and g * w * (x - m); g
 * and g * (x - m) (names of the row loops' variables) */
#define LN_D(LD) ((LD(xr) - m) - dm)
#define LN_SQ(LD) (((LD(xr) - m) - dm) * ((LD(xr) - m) - dm))
#define LN_GW(LD) (LD(gr) * LD(w))
#define LN_GWX(LD) (LD(gr) * LD(w) * (LD(xr) - m))
#define LN_G(LD) (LD(gr))
#define LN_GX(LD) (LD(gr) * (LD(xr) - m))

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
            double mu, sd, sq;                                                          \
            DOUBLE_SUM(n, xr + j, mu);                                                  \
            mu /= (double)n;                                                            \
            /* x - mean as (x - m) - dm: x - m is exact near the mean, dm the rest */   \
            const T m = (T)mu, dm = (T)(mu - (double)m);                                \
            /* the corrected two-pass variance: sum(d)^2 / n takes out what is left of \
             * the mean's rounding error (Chan, Golub and LeVeque) */                   \
            LEAF_SUM2(T, n, LN_D, LN_SQ, sd, sq);                                       \
            const double var = (sq - sd * sd / (double)n) / (double)n;                  \
            double rs = 1.0 / sqrt((var > 0 ? var : 0) + c->eps);                       \
            c->mean[r] = m;                                                             \
            c->rstd[r] = (T)rs;                                                         \
            const T k = (T)rs;                                                          \
            int64_t i;                                                                  \
            if (w && b)                                                                 \
                for (i = 0; i < n; i++) yr[i] = ((xr[i] - m) - dm) * k * w[i] + b[i];   \
            else if (w)                                                                 \
                for (i = 0; i < n; i++) yr[i] = ((xr[i] - m) - dm) * k * w[i];          \
            else if (b)                                                                 \
                for (i = 0; i < n; i++) yr[i] = ((xr[i] - m) - dm) * k + b[i];          \
            else                                                                        \
                for (i = 0; i < n; i++) yr[i] = ((xr[i] - m) - dm) * k;                 \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_layer_norm_##SFX(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd,  \
                             int64_t rows, int64_t n, double eps) {                     \
        ln_ctx_##SFX c = {x, w, b, y, mean, rstd, n, eps};                              \
        em_parallel_for(rows, grain_for(3 * n), ln_rows_##SFX, &c);                     \
    }

/* dx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)) with wg = g * w, per row;
 * dw = sum over rows of g * xhat, db = sum over rows of g, by column blocks.
 * Returns 0, or -1 when the partial sums could not be allocated. */
#define LAYER_NORM_BACKWARD(SFX, T)                                                     \
    typedef struct {                                                                    \
        const T *g, *x, *mean, *rstd, *w;                                               \
        T *dx, *dw, *db;                                                                \
        int64_t rows, n;                                                                \
        double *part;           /* dw, db: per row chunk, 2 * n partial sums */         \
        int64_t nb, rpc;        /* column blocks, rows per chunk */                     \
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
            double a, bsum;                                                             \
            if (w)                                                                      \
                LEAF_SUM2(T, n, LN_GW, LN_GWX, a, bsum);                                \
            else                                                                        \
                LEAF_SUM2(T, n, LN_G, LN_GX, a, bsum);                                  \
            int64_t i;                                                                  \
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
    /* task t: column block t % nb over row chunk t / nb, into the chunk's partial sums */ \
    EM_CLONES static void lnb_cols_##SFX(void *ctx, int64_t t0, int64_t t1) {            \
        const lnb_ctx_##SFX *c = ctx;                                                   \
        const int64_t n = c->n;                                                         \
        for (int64_t t = t0; t < t1; t++) {                                             \
            const int64_t j0 = t % c->nb * LN_CBLOCK, chunk = t / c->nb;                \
            const int64_t nj = n - j0 < LN_CBLOCK ? n - j0 : LN_CBLOCK;                 \
            const int64_t ra = chunk * c->rpc;                                          \
            const int64_t rb = c->rows - ra < c->rpc ? c->rows : ra + c->rpc;           \
            double *restrict sw = c->part + 2 * chunk * n + j0, *restrict sb = sw + n;  \
            for (int64_t j = 0; j < nj; j++) sw[j] = sb[j] = 0;                         \
            for (int64_t r0 = ra; r0 < rb; r0 += RLEAF) {                               \
                /* RLEAF rows in T, four at a time; leaves add up in double */          \
                const int64_t r1 = rb - r0 < RLEAF ? rb : r0 + RLEAF;                   \
                T aw[LN_CBLOCK], ab[LN_CBLOCK];                                         \
                for (int64_t j = 0; j < nj; j++) aw[j] = ab[j] = 0;                     \
                int64_t r = r0;                                                         \
                for (; r + 4 <= r1; r += 4) {                                           \
                    const T *restrict g0 = c->g + r * n + j0, *restrict g1 = g0 + n;    \
                    const T *restrict g2 = g1 + n, *restrict g3 = g2 + n;               \
                    const T *restrict x0 = c->x + r * n + j0, *restrict x1 = x0 + n;    \
                    const T *restrict x2 = x1 + n, *restrict x3 = x2 + n;               \
                    const T *m = c->mean + r, *s = c->rstd + r;                         \
                    const T m0 = m[0], m1 = m[1], m2 = m[2], m3 = m[3];                 \
                    const T s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];                 \
                    for (int64_t j = 0; j < nj; j++) {                                  \
                        aw[j] += (g0[j] * ((x0[j] - m0) * s0) + g1[j] * ((x1[j] - m1) * s1)) \
                               + (g2[j] * ((x2[j] - m2) * s2) + g3[j] * ((x3[j] - m3) * s3)); \
                        ab[j] += (g0[j] + g1[j]) + (g2[j] + g3[j]);                     \
                    }                                                                   \
                }                                                                       \
                for (; r < r1; r++) {                                                   \
                    const T *restrict gr = c->g + r * n + j0;                           \
                    const T *restrict xr = c->x + r * n + j0;                           \
                    const T m = c->mean[r], rs = c->rstd[r];                            \
                    for (int64_t j = 0; j < nj; j++) {                                  \
                        aw[j] += gr[j] * ((xr[j] - m) * rs);                            \
                        ab[j] += gr[j];                                                 \
                    }                                                                   \
                }                                                                       \
                for (int64_t j = 0; j < nj; j++) { sw[j] += aw[j]; sb[j] += ab[j]; }    \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    int em_layer_norm_backward_##SFX(const T *g, const T *x, const T *mean,              \
                                     const T *rstd, const T *w, T *dx, T *dw, T *db,    \
                                     int64_t rows, int64_t n) {                         \
        lnb_ctx_##SFX c = {g, x, mean, rstd, w, dx, dw, db, rows, n, NULL, 0, 0};       \
        if (dx) em_parallel_for(rows, grain_for(4 * n), lnb_rows_##SFX, &c);            \
        if (!dw && !db) return 0;                                                       \
        /* dw and db: column blocks times row chunks, whose partial sums add up in a   \
         * fixed order (the chunks depend on the shape, not on the thread count) */     \
        int64_t nrc = rows / 256;                                                       \
        nrc = nrc < 1 ? 1 : nrc > 16 ? 16 : nrc;                                        \
        c.rpc = (rows + nrc - 1) / nrc;                                                 \
        c.nb = (n + LN_CBLOCK - 1) / LN_CBLOCK;                                         \
        c.part = malloc(sizeof(double) * 2 * (size_t)(n * nrc));                        \
        if (!c.part) return -1;                                                         \
        em_parallel_for(c.nb * nrc, grain_for(2 * c.rpc * LN_CBLOCK), lnb_cols_##SFX, &c); \
        for (int64_t j = 0; j < n; j++) {                                               \
            double a = 0, b = 0;                                                        \
            for (int64_t k = 0; k < nrc; k++) {                                         \
                a += c.part[2 * k * n + j];                                             \
                b += c.part[(2 * k + 1) * n + j];                                       \
            }                                                                           \
            if (dw) dw[j] = (T)a;                                                       \
            if (db) db[j] = (T)b;                                                       \
        }                                                                               \
        free(c.part);                                                                   \
        return 0;                                                                       \
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
