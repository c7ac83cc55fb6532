/* Fused scaled-dot-product attention on the CPU, forward and backward, flash-attention
 * style: the (L x S) score matrix is never materialised, only one BQ x BK block of it
 * per thread.
 *
 *   out = softmax(scale * q k^T + mask) v, with keys j > i masked when causal
 *   (top-left aligned, as PyTorch's is_causal); a row whose every key is masked gives
 *   zeros (as PyTorch), and its log-sum-exp is -inf.
 *
 * Operands are N matrices each (the batch dims flattened): operand X of batch n starts
 * at X + xoff[n] (elements) and has row stride xrs and column stride xcs, so a
 * transposed or split view (q of a GPT's c_attn(x).split(...).transpose(1, 2)) is read
 * in place; the block products run through em_gemm, which packs strided operands.
 * The mask, when given, is an additive float mask read the same way (stride 0 where
 * it broadcasts). out (N, L, Ev), lse (N, L), dq (N, L, E), dk (N, S, E),
 * dv (N, S, Ev) and dout (N, L, Ev) are contiguous.
 *
 * forward:  per (n, query block), online softmax over the key blocks: running row
 *           max m and sum l, the output rows rescaled by exp(m_old - m_new) as the max
 *           grows; lse = m + log(l) is saved for the backward.
 * backward: per n (dk and dv accumulate over query blocks), with D = rowsum(dout * out):
 *           P = exp(S - lse), dv += P^T dout, dP = dout v^T, dS = P (dP - D),
 *           dq += scale dS k, dk += scale dS^T q.
 * Work is shared out over the thread pool by (n, query block) forward and by n
 * backward; the GEMMs inside run on the calling thread. */
#include <stdlib.h>
#include <string.h>
#include "ember_cpu.h"
#include "ember_c_types.h"
#include "gemm.h"
#include "threads.h"
#include "attention.h"

#define BQ 64
#define BK 64



#define EXP_F32(x) em_exp_float32(x)
#define EXPNP_F32(x) em_exp_nonpos_float32(x)
#define EXPNP_F64(x) exp(x)
#define EXP_F64(x) exp(x)

/* S block (bq x bk, row stride BK) = scale q_i k_j^T + mask, causal keys -inf. */
#define SCORES(T, SFX, ATTR)                                                                  \
    ATTR static int scores_##SFX(const em_sdpa_args *a, int64_t n, int64_t i0, int64_t bq,   \
                            int64_t j0, int64_t bk, T *s) {                             \
        const T *q = (const T *)a->q + a->qoff[n] + i0 * a->qrs;                        \
        const T *k = (const T *)a->k + a->koff[n] + j0 * a->krs;                        \
        int rc = em_gemm(DT, bq, bk, a->E, a->scale, q, a->qrs, a->qcs, k, a->kcs,      \
                         a->krs, 0.0, s, BK, 1);                                        \
        if (rc) return rc;                                                              \
        if (a->mask) {                                                                  \
            const T *m = (const T *)a->mask + a->moff[n];                               \
            for (int64_t r = 0; r < bq; r++) {                                          \
                const T *mr = m + (i0 + r) * a->mrs + j0 * a->mcs;                      \
                T *sr = s + r * BK;                                                     \
                for (int64_t c = 0; c < bk; c++) sr[c] += mr[c * a->mcs];               \
            }                                                                           \
        }                                                                               \
        if (a->causal && j0 + bk - 1 > i0) {                                            \
            for (int64_t r = 0; r < bq; r++) {                                          \
                int64_t first = i0 + r + 1 - j0;  /* first masked column */             \
                for (int64_t c = first < 0 ? 0 : first; c < bk; c++)                    \
                    s[r * BK + c] = -INFINITY;                                          \
            }                                                                           \
        }                                                                               \
        return 0;                                                                       \
    }

#define FORWARD(T, SFX, EXP, ATTR)                                                            \
    ATTR static void fwd_task_##SFX(void *ctx, int64_t begin, int64_t end) {                 \
        em_sdpa_args *a = (em_sdpa_args *)ctx;                                          \
        int64_t nqb = (a->L + BQ - 1) / BQ;                                             \
        T *s = (T *)malloc(sizeof(T) * BQ * BK);                                        \
        if (!s) { a->err = EM_GEMM_ENOMEM; return; }                                    \
        T m[BQ], l[BQ];                                                                 \
        for (int64_t t = begin; t < end; t++) {                                         \
            int64_t n = t / nqb, i0 = (t % nqb) * BQ;                                   \
            int64_t bq = a->L - i0 < BQ ? a->L - i0 : BQ;                               \
            int64_t Ev = a->Ev;                                                         \
            T *o = (T *)a->out + (n * a->L + i0) * Ev;                                  \
            T *lse = (T *)a->lse + n * a->L + i0;                                       \
            memset(o, 0, sizeof(T) * bq * Ev);                                          \
            for (int64_t r = 0; r < bq; r++) { m[r] = -INFINITY; l[r] = 0; }            \
            int64_t jend = a->causal ? (i0 + bq < a->S ? i0 + bq : a->S) : a->S;        \
            for (int64_t j0 = 0; j0 < jend; j0 += BK) {                                 \
                int64_t bk = jend - j0 < BK ? jend - j0 : BK;                           \
                int rc = scores_##SFX(a, n, i0, bq, j0, bk, s);                         \
                if (rc) { a->err = rc; free(s); return; }                               \
                for (int64_t r = 0; r < bq; r++) {                                      \
                    T *sr = s + r * BK;                                                 \
                    T mx = -INFINITY;                                                   \
                    for (int64_t c = 0; c < bk; c++) mx = sr[c] > mx ? sr[c] : mx;      \
                    T mnew = mx > m[r] ? mx : m[r];                                     \
                    if (mnew == -INFINITY) {        /* every key so far masked */       \
                        for (int64_t c = 0; c < bk; c++) sr[c] = 0;                     \
                        continue;                                                       \
                    }                                                                   \
                    T sum = 0;                                                          \
                    for (int64_t c = 0; c < bk; c++) {                                  \
                        T e = EXP(sr[c] - mnew);                                        \
                        sr[c] = e;                                                      \
                        sum += e;                                                       \
                    }                                                                   \
                    if (m[r] != mnew && l[r] != 0) {                                    \
                        T alpha = EXP(m[r] - mnew);                                     \
                        l[r] *= alpha;                                                  \
                        T *orow = o + r * Ev;                                           \
                        for (int64_t e = 0; e < Ev; e++) orow[e] *= alpha;              \
                    }                                                                   \
                    l[r] += sum;                                                        \
                    m[r] = mnew;                                                        \
                }                                                                       \
                const T *v = (const T *)a->v + a->voff[n] + j0 * a->vrs;                \
                rc = em_gemm(DT, bq, Ev, bk, 1.0, s, BK, 1, v, a->vrs, a->vcs, 1.0, o,  \
                             Ev, 1);                                                    \
                if (rc) { a->err = rc; free(s); return; }                               \
            }                                                                           \
            for (int64_t r = 0; r < bq; r++) {                                          \
                if (l[r] > 0) {                                                         \
                    T inv = 1 / l[r];                                                   \
                    T *orow = o + r * Ev;                                               \
                    for (int64_t e = 0; e < Ev; e++) orow[e] *= inv;                    \
                    lse[r] = m[r] + log(l[r]);                                          \
                } else {                                                                \
                    lse[r] = -INFINITY;                                                 \
                }                                                                       \
            }                                                                           \
        }                                                                               \
        free(s);                                                                        \
    }

#define BACKWARD(T, SFX, EXP, ATTR)                                                           \
    ATTR static void bwd_task_##SFX(void *ctx, int64_t begin, int64_t end) {                 \
        em_sdpa_args *a = (em_sdpa_args *)ctx;                                          \
        int64_t L = a->L, S = a->S, E = a->E, Ev = a->Ev;                               \
        T *p = (T *)malloc(sizeof(T) * (2 * BQ * BK + L));                              \
        if (!p) { a->err = EM_GEMM_ENOMEM; return; }                                    \
        T *dp = p + BQ * BK, *D = dp + BQ * BK;                                         \
        for (int64_t n = begin; n < end; n++) {                                         \
            const T *o = (const T *)a->out + n * L * Ev;                                \
            const T *go = (const T *)a->dout + n * L * Ev;                              \
            const T *lse = (const T *)a->lse + n * L;                                   \
            for (int64_t i = 0; i < L; i++) {                                           \
                T acc = 0;                                                              \
                for (int64_t e = 0; e < Ev; e++) acc += o[i * Ev + e] * go[i * Ev + e]; \
                D[i] = acc;                                                             \
            }                                                                           \
            const T *q = (const T *)a->q + a->qoff[n];                                  \
            const T *k = (const T *)a->k + a->koff[n];                                  \
            const T *v = (const T *)a->v + a->voff[n];                                  \
            T *dq = (T *)a->dq + n * L * E;                                             \
            T *dk = (T *)a->dk + n * S * E;                                             \
            T *dv = (T *)a->dv + n * S * Ev;                                            \
            for (int64_t i0 = 0; i0 < L; i0 += BQ) {                                    \
                int64_t bq = L - i0 < BQ ? L - i0 : BQ;                                 \
                int64_t jend = a->causal ? (i0 + bq < S ? i0 + bq : S) : S;             \
                for (int64_t j0 = 0; j0 < jend; j0 += BK) {                             \
                    int64_t bk = jend - j0 < BK ? jend - j0 : BK;                       \
                    int rc = scores_##SFX(a, n, i0, bq, j0, bk, p);                     \
                    for (int64_t r = 0; r < bq && !rc; r++) {                           \
                        T ls = lse[i0 + r];                                             \
                        T *pr = p + r * BK;                                             \
                        if (ls == -INFINITY) {                                          \
                            for (int64_t c = 0; c < bk; c++) pr[c] = 0;                 \
                        } else {                                                        \
                            for (int64_t c = 0; c < bk; c++) pr[c] = EXP(pr[c] - ls);   \
                        }                                                               \
                    }                                                                   \
                    /* dv_j += P^T dout_i */                                            \
                    if (!rc) rc = em_gemm(DT, bk, Ev, bq, 1.0, p, 1, BK, go + i0 * Ev,  \
                                          Ev, 1, 1.0, dv + j0 * Ev, Ev, 1);             \
                    /* dP = dout_i v_j^T */                                             \
                    if (!rc) rc = em_gemm(DT, bq, bk, Ev, 1.0, go + i0 * Ev, Ev, 1,     \
                                          v + j0 * a->vrs, a->vcs, a->vrs, 0.0, dp, BK, \
                                          1);                                           \
                    if (rc) { a->err = rc; free(p); return; }                           \
                    for (int64_t r = 0; r < bq; r++) {                                  \
                        T d = D[i0 + r];                                                \
                        T *pr = p + r * BK, *dr = dp + r * BK;                          \
                        for (int64_t c = 0; c < bk; c++) dr[c] = pr[c] * (dr[c] - d);   \
                    }                                                                   \
                    /* dq_i += scale dS k_j;  dk_j += scale dS^T q_i */                 \
                    rc = em_gemm(DT, bq, E, bk, a->scale, dp, BK, 1, k + j0 * a->krs,   \
                                 a->krs, a->kcs, 1.0, dq + i0 * E, E, 1);               \
                    if (!rc) rc = em_gemm(DT, bk, E, bq, a->scale, dp, 1, BK,           \
                                          q + i0 * a->qrs, a->qrs, a->qcs, 1.0,         \
                                          dk + j0 * E, E, 1);                           \
                    if (rc) { a->err = rc; free(p); return; }                           \
                }                                                                       \
            }                                                                           \
        }                                                                               \
        free(p);                                                                        \
    }

#define DT EM_FLOAT32
#ifdef EM_F32_AVX2       /* the exp polynomial is a chain of multiply-adds */
SCORES(float, f32_avx2, EM_AVX2_FMA)
FORWARD(float, f32_avx2, EXPNP_F32, EM_AVX2_FMA)
BACKWARD(float, f32_avx2, EXP_F32, EM_AVX2_FMA)
#endif
SCORES(float, f32, )
FORWARD(float, f32, EXPNP_F32, )
BACKWARD(float, f32, EXP_F32, )
#undef DT
#define DT EM_FLOAT64
SCORES(double, f64, )
FORWARD(double, f64, EXPNP_F64, )
BACKWARD(double, f64, EXP_F64, )
#undef DT

int em_sdpa_forward(int dtype, em_sdpa_args *a) {
    int64_t nqb = (a->L + BQ - 1) / BQ;
    a->err = 0;
    em_parallel_for(a->N * nqb, 1, dtype == EM_FLOAT32 ? EM_F32(fwd_task) : fwd_task_f64, a);
    return a->err;
}

int em_sdpa_backward(int dtype, em_sdpa_args *a) {
    size_t el = dtype == EM_FLOAT32 ? sizeof(float) : sizeof(double);
    memset(a->dq, 0, el * a->N * a->L * a->E);
    memset(a->dk, 0, el * a->N * a->S * a->E);
    memset(a->dv, 0, el * a->N * a->S * a->Ev);
    a->err = 0;
    em_parallel_for(a->N, 1, dtype == EM_FLOAT32 ? EM_F32(bwd_task) : bwd_task_f64, a);
    return a->err;
}
