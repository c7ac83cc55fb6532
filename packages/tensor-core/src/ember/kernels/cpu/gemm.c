/* ember's CPU GEMM (see gemm.h for the contract).
 *
 * float32 / float64: the BLIS loop nest.
 *
 *   for k0 in K by ks:                 k super-chunks, so the packed B of a chunk
 *                                      stays under B_BUF_MAX with wide columns
 *     for jc in N by NC:               a chunk of columns; its B packed into
 *                                      NR-column panels, kc rows per k block
 *       strips of the chunk's columns, handed to the pool's threads dynamically
 *       (one strip of everything on one thread); each strip:
 *         for pc in ks by KC:
 *           for ic in M by MC:         A[ic:ic+mc, pc:pc+kc] in MR-row panels
 *                                      (L2): packed here, or, when several
 *                                      strips run, once by whichever strip
 *                                      gets there first and shared
 *             for jr in strip by NR:   one B micro-panel (kc x NR, L1), packed
 *                                      by row block 0 just before its first use
 *               for ir in mc by MR:    micro-kernel: an MR x NR tile of C in
 *                                      registers, kc rank-1 updates
 *
 * Too few columns for strips on several threads (a tall, narrow C): tasks (row
 * block, column strip) over a B packed up front, in parallel. A row-contiguous
 * B is packed eight rows at a time across the panels; a column-contiguous one (x
 * @ W.T) and row-contiguous A panels with AVX2 register transposes.
 *
 * The micro-kernels are 6x16 (float32) and 6x8 (float64) with AVX-512F (12 zmm
 * accumulators: even and odd k) or AVX2+FMA (12 ymm accumulators), chosen at run
 * time, and portable kernels of the same shape (GCC vector extensions) for other
 * CPUs. Packing reads any (row, column) strides, so
 * transposed and strided operands are never copied first, and pads edge panels
 * with zeros: the kernel always computes full tiles, and edge tiles (or a C that
 * is not row-contiguous) go through a small buffer. Blocks are balanced (k = 257
 * is two blocks of 129 and 128, not 256 + 1). Packing buffers are kept per
 * thread between calls, so a warm matmul does not page-fault.
 *
 * Special shapes: m == 1 or n == 1 is a matrix-vector product (no packing; four
 * rows or columns per pass); tiny problems (m*n*k <= 4096) a direct register
 * loop; a C that is column-contiguous is computed as C^T = B^T A^T.
 *
 * bfloat16: on a CPU with AVX512-BF16 its own blocked GEMM over bfloat16 pairs
 * (vdpbf16ps, float32 accumulation; see "bfloat16 with AVX512-BF16" below), else the
 * float32 GEMM over widened copies; either with a bfloat16 C or, for em_gemm_bf16_f32,
 * a float32 one.
 *
 * This file is also its own template: the GEMM body at the end is included once
 * for float and once for double (GEMM_TEMPLATE).
 */
#ifndef GEMM_TEMPLATE
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "gemm.h"
#include "threads.h"

#define EM_BOOL 0
#define EM_UINT8 1
#define EM_INT8 2
#define EM_INT16 3
#define EM_INT32 4
#define EM_INT64 5
#define EM_FLOAT16 6
#define EM_FLOAT32 7
#define EM_FLOAT64 8
#define EM_COMPLEX64 9
#define EM_COMPLEX128 10
#define EM_BFLOAT16 11

/* Threading thresholds, in multiply-adds (m*n*k): below PAR_MIN one thread does
 * the whole product (waking a worker costs ~50 us on a busy 2-vCPU machine); a
 * batch of small products is spread by batch when it totals PAR_MIN. */
#define PAR_MIN ((int64_t)1 << 22)
#define PAR_PACK_MIN ((int64_t)1 << 18)   /* elements of B worth packing in parallel */
#define TINY_MNK 4096                     /* direct loop below this */
#define GEMV_PAR_MIN ((int64_t)1 << 20)   /* m*k of a matrix-vector product */
#ifndef TASKS_PER_THREAD
#define TASKS_PER_THREAD 8                /* tasks per thread in the finer-grained plans */
#endif
#ifndef STRIPS_PER_THREAD
#define STRIPS_PER_THREAD 4               /* column strips per thread (with several row blocks) */
#endif
#ifndef MIN_STRIPS_PER_THREAD
#define MIN_STRIPS_PER_THREAD 1           /* fewer possible strips: row-block tasks instead */
#endif
#ifndef STRIP_MIN
#define STRIP_MIN 128                     /* columns of a strip task (with several row blocks) */
#endif
#define B_BUF_MAX ((size_t)16 << 20)      /* bytes of packed B per jc chunk */
#define KEEP_BUF_MAX ((size_t)64 << 20)   /* larger packing buffers are not kept */
#define A_SHARED_MAX ((size_t)32 << 20)   /* bytes of A packed up front for strips */

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ------------------------------------------------------------------ buffers */

/* Per-thread packing buffers, 64-byte aligned, kept between calls; freed when
 * their thread exits. */
typedef struct { void *p; size_t n; } buf_t;
/* A panel, B panels, shared A; w: bfloat16's float32 copies of A, B and C */
typedef struct { buf_t a, b, s, w[3]; } thread_bufs;
static __thread thread_bufs *tls_bufs;
static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;

static void free_bufs(void *p) {
    thread_bufs *t = p;
    if (!t) return;
    free(t->a.p);
    free(t->b.p);
    free(t->s.p);
    for (int i = 0; i < 3; i++) free(t->w[i].p);
    free(t);
}

static void make_key(void) { pthread_key_create(&bufs_key, free_bufs); }

static void *buf_get(int which, size_t n) {
    if (!tls_bufs) {
        pthread_once(&bufs_once, make_key);
        tls_bufs = calloc(1, sizeof(thread_bufs));
        if (!tls_bufs) return NULL;
        pthread_setspecific(bufs_key, tls_bufs);
    }
    buf_t *b = which >= 3 ? &tls_bufs->w[which - 3] : which == 2 ? &tls_bufs->s
             : which ? &tls_bufs->b : &tls_bufs->a;
    if (b->n >= n) return b->p;
    free(b->p);
    b->p = NULL;
    b->n = 0;
    if (posix_memalign(&b->p, 64, n ? n : 64)) {
        b->p = NULL;
        return NULL;
    }
    b->n = n;
    return b->p;
}

/* A big buffer is given back after the call rather than kept. */
static void buf_trim(int which) {
    if (!tls_bufs) return;
    buf_t *b = which >= 3 ? &tls_bufs->w[which - 3] : which == 2 ? &tls_bufs->s
             : which ? &tls_bufs->b : &tls_bufs->a;
    if (b->n > KEEP_BUF_MAX) {
        free(b->p);
        b->p = NULL;
        b->n = 0;
    }
}

/* ----------------------------------------------------------- kernel choice */

static int kernel_forced;   /* 0 auto, 1 generic, 2 avx2, 3 avx512, 4 avx512bf16 */
static int have_avx2 = -1, have_avx512 = -1;

static int cpu_has_avx2(void) {
    if (have_avx2 < 0) {
        __builtin_cpu_init();
        have_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return have_avx2;
}

static int cpu_has_avx512(void) {
    if (have_avx512 < 0) {
        __builtin_cpu_init();
        have_avx512 = cpu_has_avx2() && __builtin_cpu_supports("avx512f");
    }
    return have_avx512;
}

/* AVX2 stays in use beside the AVX-512 micro-kernels (packing, GEMV, tiny products) */
static int use_avx2(void) {
    if (kernel_forced == 1) return 0;
    return cpu_has_avx2();
}

static int use_avx512(void) {
    if (kernel_forced == 1 || kernel_forced == 2) return 0;
    return cpu_has_avx512();
}

void em_gemm_set_kernel(int which) { kernel_forced = which >= 1 && which <= 4 ? which : 0; }

static int use_bf16dot(void);

const char *em_gemm_kernel_name(void) {
    return use_bf16dot() ? "avx512bf16"
         : use_avx512() ? "avx512f" : use_avx2() ? "avx2-fma" : "generic";
}

/* ----------------------------------------------------------- micro-kernels */

#define S_MR 6
#define S_NR 16
#define D_MR 6
#define D_NR 8

/* c[i*rsc + j] (i < MR, j < NR) = alpha * sum_p a[p*MR + i] * b[p*NR + j] + beta * c,
 * with c not read when beta == 0. a and b are packed panels; b is 64-byte aligned. */
typedef void (*s_ukr_t)(int64_t kc, const float *a, const float *b, float *c, int64_t rsc,
                        float alpha, float beta);
typedef void (*d_ukr_t)(int64_t kc, const double *a, const double *b, double *c,
                        int64_t rsc, double alpha, double beta);

/* The portable kernels use GCC vector extensions (SSE2 on any x86-64, NEON on ARM):
 * each row of the tile is NR / VL vectors. */
typedef float v4sf __attribute__((vector_size(16)));
typedef double v2df __attribute__((vector_size(16)));

static void s_ukr_generic(int64_t kc, const float *restrict a, const float *restrict b,
                          float *restrict c, int64_t rsc, float alpha, float beta) {
    v4sf acc[S_MR][S_NR / 4];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++) {
        v4sf bv[S_NR / 4];
        memcpy(bv, b + p * S_NR, sizeof bv);
        for (int i = 0; i < S_MR; i++) {
            v4sf ai = {a[p * S_MR + i], a[p * S_MR + i], a[p * S_MR + i], a[p * S_MR + i]};
            for (int j = 0; j < S_NR / 4; j++) acc[i][j] += ai * bv[j];
        }
    }
    float out[S_MR][S_NR];
    memcpy(out, acc, sizeof out);
    for (int i = 0; i < S_MR; i++)
        for (int j = 0; j < S_NR; j++)
            c[i * rsc + j] = beta == 0.0f ? alpha * out[i][j]
                                          : alpha * out[i][j] + beta * c[i * rsc + j];
}

static void d_ukr_generic(int64_t kc, const double *restrict a, const double *restrict b,
                          double *restrict c, int64_t rsc, double alpha, double beta) {
    v2df acc[D_MR][D_NR / 2];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++) {
        v2df bv[D_NR / 2];
        memcpy(bv, b + p * D_NR, sizeof bv);
        for (int i = 0; i < D_MR; i++) {
            v2df ai = {a[p * D_MR + i], a[p * D_MR + i]};
            for (int j = 0; j < D_NR / 2; j++) acc[i][j] += ai * bv[j];
        }
    }
    double out[D_MR][D_NR];
    memcpy(out, acc, sizeof out);
    for (int i = 0; i < D_MR; i++)
        for (int j = 0; j < D_NR; j++)
            c[i * rsc + j] = beta == 0.0 ? alpha * out[i][j]
                                         : alpha * out[i][j] + beta * c[i * rsc + j];
}

#define AVX2 __attribute__((target("avx2,fma")))

/* row i of the tile (x0, x1) += A[i] * the B row (b0, b1) */
#define UKR256_ROW(BCAST, FMADD, i, x0, x1)                                             \
    ai = BCAST(a + (i));                                                                 \
    x0 = FMADD(ai, b0, x0);                                                              \
    x1 = FMADD(ai, b1, x1);

/* The AVX2 kernels: a row of the 6 x NR tile is two ymm vectors (W lanes each), A's
 * elements broadcast one at a time. */
#define UKR256(NAME, T, V, W, SET1, BCAST, LOAD, LOADU, STOREU, FMADD, MUL, ZERO)          \
    AVX2 static void NAME(int64_t kc, const T *restrict a, const T *restrict b,          \
                          T *restrict c, int64_t rsc, T alpha, T beta) {                 \
        V c00 = ZERO(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, \
          c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                         \
        for (int i = 0; i < 6; i++) {                                                    \
            _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);                      \
            _mm_prefetch((const char *)(c + i * rsc + 2 * W - 1), _MM_HINT_T0);          \
        }                                                                                \
        _Pragma("GCC unroll 4")                                                          \
        for (int64_t p = 0; p < kc; p++) {                                               \
            V b0 = LOAD(b), b1 = LOAD(b + W), ai;                                        \
            UKR256_ROW(BCAST, FMADD, 0, c00, c01) UKR256_ROW(BCAST, FMADD, 1, c10, c11)  \
            UKR256_ROW(BCAST, FMADD, 2, c20, c21) UKR256_ROW(BCAST, FMADD, 3, c30, c31)  \
            UKR256_ROW(BCAST, FMADD, 4, c40, c41) UKR256_ROW(BCAST, FMADD, 5, c50, c51)  \
            a += 6;                                                                      \
            b += 2 * W;                                                                  \
        }                                                                                \
        V acc[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41},        \
                       {c50, c51}};                                                      \
        V va = SET1(alpha);                                                              \
        if (beta == 0) {                                                                 \
            for (int i = 0; i < 6; i++) {                                                \
                STOREU(c + i * rsc, MUL(va, acc[i][0]));                                 \
                STOREU(c + i * rsc + W, MUL(va, acc[i][1]));                             \
            }                                                                            \
        } else {                                                                         \
            V vb = SET1(beta);                                                           \
            for (int i = 0; i < 6; i++) {                                                \
                T *ci = c + i * rsc;                                                     \
                STOREU(ci, FMADD(va, acc[i][0], MUL(vb, LOADU(ci))));                    \
                STOREU(ci + W, FMADD(va, acc[i][1], MUL(vb, LOADU(ci + W))));            \
            }                                                                            \
        }                                                                                \
    }

UKR256(s_ukr_avx2, float, __m256, 8, _mm256_set1_ps, _mm256_broadcast_ss, _mm256_load_ps,
       _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps, _mm256_mul_ps, _mm256_setzero_ps)
UKR256(d_ukr_avx2, double, __m256d, 4, _mm256_set1_pd, _mm256_broadcast_sd, _mm256_load_pd,
       _mm256_loadu_pd, _mm256_storeu_pd, _mm256_fmadd_pd, _mm256_mul_pd, _mm256_setzero_pd)
#undef UKR256
#undef UKR256_ROW

/* The AVX-512 kernels: the same packed panels and tile (a row of the tile is one zmm
 * vector), two sets of accumulators (even and odd k) so that twelve independent FMA
 * chains hide the FMA latency; A's elements are broadcast from memory by the FMAs. */
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

#define UKR512(NAME, T, V, W, SET1, LOAD, LOADU, STOREU, FMADD, MUL, ADD, ZERO)           \
    AVX512 static void NAME(int64_t kc, const T *restrict a, const T *restrict b,        \
                            T *restrict c, int64_t rsc, T alpha, T beta) {               \
        V c0 = ZERO(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;                      \
        V e0 = c0, e1 = c0, e2 = c0, e3 = c0, e4 = c0, e5 = c0;                          \
        for (int i = 0; i < 6; i++) _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0); \
        int64_t p = 0;                                                                   \
        _Pragma("GCC unroll 2")                                                          \
        for (; p + 2 <= kc; p += 2) {                                                    \
            V b0 = LOAD(b), b1 = LOAD(b + W);                                            \
            c0 = FMADD(SET1(a[0]), b0, c0);                                              \
            c1 = FMADD(SET1(a[1]), b0, c1);                                              \
            c2 = FMADD(SET1(a[2]), b0, c2);                                              \
            c3 = FMADD(SET1(a[3]), b0, c3);                                              \
            c4 = FMADD(SET1(a[4]), b0, c4);                                              \
            c5 = FMADD(SET1(a[5]), b0, c5);                                              \
            e0 = FMADD(SET1(a[6]), b1, e0);                                              \
            e1 = FMADD(SET1(a[7]), b1, e1);                                              \
            e2 = FMADD(SET1(a[8]), b1, e2);                                              \
            e3 = FMADD(SET1(a[9]), b1, e3);                                              \
            e4 = FMADD(SET1(a[10]), b1, e4);                                             \
            e5 = FMADD(SET1(a[11]), b1, e5);                                             \
            a += 12;                                                                     \
            b += 2 * W;                                                                  \
        }                                                                                \
        if (p < kc) {                                                                    \
            V b0 = LOAD(b);                                                              \
            c0 = FMADD(SET1(a[0]), b0, c0);                                              \
            c1 = FMADD(SET1(a[1]), b0, c1);                                              \
            c2 = FMADD(SET1(a[2]), b0, c2);                                              \
            c3 = FMADD(SET1(a[3]), b0, c3);                                              \
            c4 = FMADD(SET1(a[4]), b0, c4);                                              \
            c5 = FMADD(SET1(a[5]), b0, c5);                                              \
        }                                                                                \
        V acc[6] = {ADD(c0, e0), ADD(c1, e1), ADD(c2, e2), ADD(c3, e3), ADD(c4, e4),      \
                    ADD(c5, e5)};                                                        \
        V va = SET1(alpha);                                                              \
        if (beta == 0)                                                                   \
            for (int i = 0; i < 6; i++) STOREU(c + i * rsc, MUL(va, acc[i]));            \
        else {                                                                           \
            V vb = SET1(beta);                                                           \
            for (int i = 0; i < 6; i++)                                                  \
                STOREU(c + i * rsc, FMADD(va, acc[i], MUL(vb, LOADU(c + i * rsc))));     \
        }                                                                                \
    }

UKR512(s_ukr_avx512, float, __m512, 16, _mm512_set1_ps, _mm512_load_ps, _mm512_loadu_ps,
       _mm512_storeu_ps, _mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps, _mm512_setzero_ps)
UKR512(d_ukr_avx512, double, __m512d, 8, _mm512_set1_pd, _mm512_load_pd, _mm512_loadu_pd,
       _mm512_storeu_pd, _mm512_fmadd_pd, _mm512_mul_pd, _mm512_add_pd, _mm512_setzero_pd)
#undef UKR512

/* Dot products for matrix-vector products: 32 float / 16 double partial sums. */
static float s_dot_generic(int64_t n, const float *restrict x, const float *restrict y) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += x[i + j] * y[i + j];
    float s = 0;
    for (; i < n; i++) s += x[i] * y[i];
    for (int j = 0; j < 8; j++) s += acc[j];
    return s;
}

static double d_dot_generic(int64_t n, const double *restrict x, const double *restrict y) {
    double acc[4] = {0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++) acc[j] += x[i + j] * y[i + j];
    double s = 0;
    for (; i < n; i++) s += x[i] * y[i];
    for (int j = 0; j < 4; j++) s += acc[j];
    return s;
}

AVX2 static float s_dot_avx2(int64_t n, const float *restrict x, const float *restrict y) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; i < n; i++) r += x[i] * y[i];
    return r;
}

AVX2 static double d_dot_avx2(int64_t n, const double *restrict x, const double *restrict y) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i), s0);
        s1 = _mm256_fmadd_pd(_mm256_loadu_pd(x + i + 4), _mm256_loadu_pd(y + i + 4), s1);
        s2 = _mm256_fmadd_pd(_mm256_loadu_pd(x + i + 8), _mm256_loadu_pd(y + i + 8), s2);
        s3 = _mm256_fmadd_pd(_mm256_loadu_pd(x + i + 12), _mm256_loadu_pd(y + i + 12), s3);
    }
    for (; i + 4 <= n; i += 4)
        s0 = _mm256_fmadd_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i), s0);
    __m256d s = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    h = _mm_add_sd(h, _mm_unpackhi_pd(h, h));
    double r = _mm_cvtsd_f64(h);
    for (; i < n; i++) r += x[i] * y[i];
    return r;
}

/* Four dot products at once (rows r, r + lda, r + 2 lda, r + 3 lda with x): x is
 * loaded once for the four rows. */
AVX2 static void s_dot4_avx2(int64_t n, const float *restrict r, int64_t lda,
                             const float *restrict x, float *out) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __m256 t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    const float *r0 = r, *r1 = r + lda, *r2 = r + 2 * lda, *r3 = r + 3 * lda;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 xa = _mm256_loadu_ps(x + i), xb = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + i), xa, s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + i), xa, s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + i), xa, s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + i), xa, s3);
        t0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + i + 8), xb, t0);
        t1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + i + 8), xb, t1);
        t2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + i + 8), xb, t2);
        t3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + i + 8), xb, t3);
    }
    __m256 v[4] = {_mm256_add_ps(s0, t0), _mm256_add_ps(s1, t1), _mm256_add_ps(s2, t2),
                   _mm256_add_ps(s3, t3)};
    const float *rows[4] = {r0, r1, r2, r3};
    for (int q = 0; q < 4; q++) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(v[q]), _mm256_extractf128_ps(v[q], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        float acc = _mm_cvtss_f32(h);
        for (int64_t j = i; j < n; j++) acc += rows[q][j] * x[j];
        out[q] = acc;
    }
}

AVX2 static void d_dot4_avx2(int64_t n, const double *restrict r, int64_t lda,
                             const double *restrict x, double *out) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    __m256d t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    const double *r0 = r, *r1 = r + lda, *r2 = r + 2 * lda, *r3 = r + 3 * lda;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d xa = _mm256_loadu_pd(x + i), xb = _mm256_loadu_pd(x + i + 4);
        s0 = _mm256_fmadd_pd(_mm256_loadu_pd(r0 + i), xa, s0);
        s1 = _mm256_fmadd_pd(_mm256_loadu_pd(r1 + i), xa, s1);
        s2 = _mm256_fmadd_pd(_mm256_loadu_pd(r2 + i), xa, s2);
        s3 = _mm256_fmadd_pd(_mm256_loadu_pd(r3 + i), xa, s3);
        t0 = _mm256_fmadd_pd(_mm256_loadu_pd(r0 + i + 4), xb, t0);
        t1 = _mm256_fmadd_pd(_mm256_loadu_pd(r1 + i + 4), xb, t1);
        t2 = _mm256_fmadd_pd(_mm256_loadu_pd(r2 + i + 4), xb, t2);
        t3 = _mm256_fmadd_pd(_mm256_loadu_pd(r3 + i + 4), xb, t3);
    }
    __m256d v[4] = {_mm256_add_pd(s0, t0), _mm256_add_pd(s1, t1), _mm256_add_pd(s2, t2),
                    _mm256_add_pd(s3, t3)};
    const double *rows[4] = {r0, r1, r2, r3};
    for (int q = 0; q < 4; q++) {
        __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v[q]), _mm256_extractf128_pd(v[q], 1));
        h = _mm_add_sd(h, _mm_unpackhi_pd(h, h));
        double acc = _mm_cvtsd_f64(h);
        for (int64_t j = i; j < n; j++) acc += rows[q][j] * x[j];
        out[q] = acc;
    }
}

/* Tiny products with unit column strides for B and C: each (row, 8 or 4 columns)
 * of C accumulates in one register over k, the tail columns masked. */
static const int32_t TAIL_MASK[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

AVX2 static void s_tiny_rows_avx2(int64_t m, int64_t n, int64_t k, float alpha,
                                  const float *restrict a, int64_t rsa, int64_t csa,
                                  const float *restrict b, int64_t rsb, float beta,
                                  float *restrict c, int64_t rsc) {
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        int64_t w = MIN(8, n - j0);
        __m256i mask = _mm256_loadu_si256((const __m256i *)(TAIL_MASK + 8 - w));
        for (int64_t i = 0; i < m; i++) {
            __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
            const float *ai = a + i * rsa;
            const float *bj = b + j0;
            int64_t p = 0;
            for (; p + 2 <= k; p += 2) {
                acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ai[p * csa]),
                                       _mm256_maskload_ps(bj + p * rsb, mask), acc0);
                acc1 = _mm256_fmadd_ps(_mm256_set1_ps(ai[(p + 1) * csa]),
                                       _mm256_maskload_ps(bj + (p + 1) * rsb, mask), acc1);
            }
            if (p < k)
                acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ai[p * csa]),
                                       _mm256_maskload_ps(bj + p * rsb, mask), acc0);
            __m256 r = _mm256_mul_ps(va, _mm256_add_ps(acc0, acc1));
            float *ci = c + i * rsc + j0;
            if (beta != 0.0f)
                r = _mm256_fmadd_ps(vb, _mm256_maskload_ps(ci, mask), r);
            _mm256_maskstore_ps(ci, mask, r);
        }
    }
}

AVX2 static void d_tiny_rows_avx2(int64_t m, int64_t n, int64_t k, double alpha,
                                  const double *restrict a, int64_t rsa, int64_t csa,
                                  const double *restrict b, int64_t rsb, double beta,
                                  double *restrict c, int64_t rsc) {
    static const int64_t DMASK[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
    __m256d va = _mm256_set1_pd(alpha), vb = _mm256_set1_pd(beta);
    for (int64_t j0 = 0; j0 < n; j0 += 4) {
        int64_t w = MIN(4, n - j0);
        __m256i mask = _mm256_loadu_si256((const __m256i *)(DMASK + 4 - w));
        for (int64_t i = 0; i < m; i++) {
            __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0;
            const double *ai = a + i * rsa;
            const double *bj = b + j0;
            int64_t p = 0;
            for (; p + 2 <= k; p += 2) {
                acc0 = _mm256_fmadd_pd(_mm256_set1_pd(ai[p * csa]),
                                       _mm256_maskload_pd(bj + p * rsb, mask), acc0);
                acc1 = _mm256_fmadd_pd(_mm256_set1_pd(ai[(p + 1) * csa]),
                                       _mm256_maskload_pd(bj + (p + 1) * rsb, mask), acc1);
            }
            if (p < k)
                acc0 = _mm256_fmadd_pd(_mm256_set1_pd(ai[p * csa]),
                                       _mm256_maskload_pd(bj + p * rsb, mask), acc0);
            __m256d r = _mm256_mul_pd(va, _mm256_add_pd(acc0, acc1));
            double *ci = c + i * rsc + j0;
            if (beta != 0.0)
                r = _mm256_fmadd_pd(vb, _mm256_maskload_pd(ci, mask), r);
            _mm256_maskstore_pd(ci, mask, r);
        }
    }
}

/* Packing with register transposes, for the layouts that would otherwise be
 * scalar gathers: a B panel whose columns are contiguous (B = W^T, the weight of
 * a linear layer) and an A panel whose rows are contiguous. */
#define TR8X8(r0, r1, r2, r3, r4, r5, r6, r7) do {                                   \
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);         \
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);         \
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);         \
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);         \
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE); \
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE); \
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE); \
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE); \
    r0 = _mm256_permute2f128_ps(u0, u4, 0x20); r1 = _mm256_permute2f128_ps(u1, u5, 0x20); \
    r2 = _mm256_permute2f128_ps(u2, u6, 0x20); r3 = _mm256_permute2f128_ps(u3, u7, 0x20); \
    r4 = _mm256_permute2f128_ps(u0, u4, 0x31); r5 = _mm256_permute2f128_ps(u1, u5, 0x31); \
    r6 = _mm256_permute2f128_ps(u2, u6, 0x31); r7 = _mm256_permute2f128_ps(u3, u7, 0x31); \
} while (0)

/* dst[p * 16 + j] = b[j * csb + p] for a full 16-column panel. The 16 columns are
 * often a power-of-two stride apart (one L1 set): each cache line is used up (two
 * 8 x 8 transposes, p and p + 8) before the next group of columns is loaded. */
AVX2 static void s_pack_bt_avx2(int64_t kc, const float *restrict b, int64_t csb,
                                float *restrict dst) {
    int64_t p = 0;
    for (; p + 16 <= kc; p += 16) {
        for (int h = 0; h < 2; h++) {
            for (int ph = 0; ph < 16; ph += 8) {
                const float *c0 = b + (8 * h) * csb + p + ph;
                __m256 r0 = _mm256_loadu_ps(c0), r1 = _mm256_loadu_ps(c0 + csb);
                __m256 r2 = _mm256_loadu_ps(c0 + 2 * csb), r3 = _mm256_loadu_ps(c0 + 3 * csb);
                __m256 r4 = _mm256_loadu_ps(c0 + 4 * csb), r5 = _mm256_loadu_ps(c0 + 5 * csb);
                __m256 r6 = _mm256_loadu_ps(c0 + 6 * csb), r7 = _mm256_loadu_ps(c0 + 7 * csb);
                TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
                float *d = dst + (p + ph) * 16 + 8 * h;
                _mm256_store_ps(d, r0);
                _mm256_store_ps(d + 16, r1);
                _mm256_store_ps(d + 32, r2);
                _mm256_store_ps(d + 48, r3);
                _mm256_store_ps(d + 64, r4);
                _mm256_store_ps(d + 80, r5);
                _mm256_store_ps(d + 96, r6);
                _mm256_store_ps(d + 112, r7);
            }
        }
    }
    for (; p < kc; p++)
        for (int j = 0; j < 16; j++) dst[p * 16 + j] = b[j * csb + p];
}

/* dst[p * 6 + r] = a[r * rsa + p] for a full 6-row panel */
AVX2 static void s_pack_a_rows_avx2(int64_t kc, const float *restrict a, int64_t rsa,
                                    float *restrict dst) {
    int64_t p = 0;
    __m256 z = _mm256_setzero_ps();
    for (; p + 8 <= kc; p += 8) {
        __m256 r0 = _mm256_loadu_ps(a + p), r1 = _mm256_loadu_ps(a + rsa + p);
        __m256 r2 = _mm256_loadu_ps(a + 2 * rsa + p), r3 = _mm256_loadu_ps(a + 3 * rsa + p);
        __m256 r4 = _mm256_loadu_ps(a + 4 * rsa + p), r5 = _mm256_loadu_ps(a + 5 * rsa + p);
        __m256 r6 = z, r7 = z;
        TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
        __m256 rows[8] = {r0, r1, r2, r3, r4, r5, r6, r7};
        float *d = dst + p * 6;
        for (int q = 0; q < 8; q++) {
            _mm_storeu_ps(d + 6 * q, _mm256_castps256_ps128(rows[q]));
            _mm_storel_pi((__m64 *)(d + 6 * q + 4), _mm256_extractf128_ps(rows[q], 1));
        }
    }
    for (; p < kc; p++)
        for (int r = 0; r < 6; r++) dst[p * 6 + r] = a[r * rsa + p];
}
#undef TR8X8

/* dst[p * 8 + j] = b[j * csb + p] for a full 8-column double panel */
AVX2 static void d_pack_bt_avx2(int64_t kc, const double *restrict b, int64_t csb,
                                double *restrict dst) {
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
        for (int h = 0; h < 2; h++) {
            const double *c0 = b + (4 * h) * csb + p;
            __m256d r0 = _mm256_loadu_pd(c0), r1 = _mm256_loadu_pd(c0 + csb);
            __m256d r2 = _mm256_loadu_pd(c0 + 2 * csb), r3 = _mm256_loadu_pd(c0 + 3 * csb);
            __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
            __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
            double *d = dst + p * 8 + 4 * h;
            _mm256_store_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_store_pd(d + 8, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_store_pd(d + 16, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_store_pd(d + 24, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
    }
    for (; p < kc; p++)
        for (int j = 0; j < 8; j++) dst[p * 8 + j] = b[j * csb + p];
}

/* y[i] += sum_q x[q] * a[i + q * lda] for q < 4 over contiguous columns (the
 * column-major matrix-vector product, four columns per pass over y) */
#define AXPY4_BODY                                                                   \
    const T *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;            \
    T x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];                                    \
    for (int64_t i = 0; i < n; i++)                                                  \
        y[i] += x0 * a0[i] + x1 * a1[i] + x2 * a2[i] + x3 * a3[i];
#define T float
static void s_axpy4(int64_t n, const T *x, const T *a, int64_t lda, T *restrict y) {
    AXPY4_BODY
}
AVX2 static void s_axpy4_avx2(int64_t n, const T *x, const T *a, int64_t lda, T *restrict y) {
    AXPY4_BODY
}
#undef T
#define T double
static void d_axpy4(int64_t n, const T *x, const T *a, int64_t lda, T *restrict y) {
    AXPY4_BODY
}
AVX2 static void d_axpy4_avx2(int64_t n, const T *x, const T *a, int64_t lda, T *restrict y) {
    AXPY4_BODY
}
#undef T
#undef AXPY4_BODY

/* The packing loops of every GEMM here (float, double, and bfloat16 pairs for
 * vdpbf16ps), parametrised by the load of a k-unit: an element, or a bfloat16 pair
 * along k (kc odd: the last pair's second half zero). LD(x, s, p): unit p of the line
 * (row of A, column of B) at x whose elements are s apart; LDC(x, p): the same with s
 * == 1 for a full unit, p < kfull; ku units in all (kfull, then a partial one).
 *
 * UNIT(x, p, ...): unit p of a line with unit stride, full or not (the two differ only by
 * the load; for float kfull == ku, so the test folds away).
 *
 * PACK_A_BODY: rows [0, mc) of the A block at a (strides rsa, csa) into MRX-row
 * panels, unit p of row r at dst[p * MRX + r], the rows past mc zero; FAST is a
 * statement `if (...) {...} else` tried first on each panel, or nothing. */
#define PACK_A_BODY(ET, MRX, ku, kfull, LD, LDC, FAST)                                \
    for (int64_t r0 = 0; r0 < mc; r0 += MRX) {                                       \
        int64_t mr = MIN(MRX, mc - r0);                                              \
        const ET *ap = a + r0 * rsa;                                                 \
        FAST                                                                         \
        if (mr == MRX && csa == 1) {                                                 \
            const ET *rows[MRX];                                                     \
            for (int r = 0; r < MRX; r++) rows[r] = ap + r * rsa;                    \
            for (int64_t p = 0; p < (ku); p++)                                       \
                for (int r = 0; r < MRX; r++)                                        \
                    dst[p * MRX + r] = UNIT(rows[r], p, kfull, LD, LDC);             \
        } else if (mr == MRX && rsa == 1) {                                          \
            for (int64_t p = 0; p < (ku); p++)                                       \
                for (int r = 0; r < MRX; r++) dst[p * MRX + r] = LD(ap + r, csa, p); \
        } else {                                                                     \
            for (int64_t p = 0; p < (ku); p++) {                                     \
                int r = 0;                                                           \
                for (; r < mr; r++) dst[p * MRX + r] = LD(ap + r * rsa, csa, p);     \
                for (; r < MRX; r++) dst[p * MRX + r] = 0;                           \
            }                                                                        \
        }                                                                            \
        dst += MRX * (ku);                                                           \
    }

/* PACK_B_COLUMNS: an NRX-column panel of B (columns [0, nr) at b, strides rsb, csb)
 * column by column, unit p of column j at d[p * NRX + j], the columns past nr zero. */
#define PACK_B_COLUMNS(d, NRX, ku, kfull, LD, LDC)                                    \
    for (int64_t j = 0; j < NRX; j++) {                                              \
        if (j >= nr) {                                                               \
            for (int64_t p = 0; p < (ku); p++) d[p * NRX + j] = 0;                   \
            continue;                                                                \
        }                                                                            \
        const __typeof__(*b) *col = b + j * csb;                                     \
        if (rsb == 1) {                                                              \
            for (int64_t p = 0; p < (ku); p++)                                       \
                d[p * NRX + j] = UNIT(col, p, kfull, LD, LDC);                       \
        } else {                                                                     \
            for (int64_t p = 0; p < (ku); p++) d[p * NRX + j] = LD(col, rsb, p);     \
        }                                                                            \
    }
#define UNIT(x, p, kfull, LD, LDC) ((p) < (kfull) ? LDC(x, p) : LD(x, 1, p))
#define ELEM_LD(x, s, p) ((x)[(p) * (s)])
#define ELEM_LDC(x, p) ((x)[p])

/* ---------------------------------------------------------- the templates */

#define GEMM_TEMPLATE
#define T float
#define P(name) s_##name
#define MR S_MR
#define NR S_NR
#define MC_DEF 144
#define KC_DEF 256
#define NC_DEF 4080
#define UKR_T s_ukr_t
#define UKR_AVX2 s_ukr_avx2
#define UKR_AVX512 s_ukr_avx512
#define UKR_GENERIC s_ukr_generic
#define DOT_AVX2 s_dot_avx2
#define DOT_GENERIC s_dot_generic
#define DOT4_AVX2 s_dot4_avx2
#define TINY_ROWS_AVX2 s_tiny_rows_avx2
#define PACK_BT_AVX2 s_pack_bt_avx2
#define PACK_A_ROWS_AVX2 s_pack_a_rows_avx2
#define AXPY_AVX2 s_axpy4_avx2
#define AXPY_GENERIC s_axpy4
#include "gemm.c"
#undef T
#undef P
#undef MR
#undef NR
#undef MC_DEF
#undef KC_DEF
#undef NC_DEF
#undef UKR_T
#undef UKR_AVX2
#undef UKR_AVX512
#undef UKR_GENERIC
#undef DOT_AVX2
#undef DOT_GENERIC
#undef DOT4_AVX2
#undef TINY_ROWS_AVX2
#undef PACK_BT_AVX2
#undef PACK_A_ROWS_AVX2
#undef AXPY_AVX2
#undef AXPY_GENERIC

#define T double
#define P(name) d_##name
#define MR D_MR
#define NR D_NR
#define MC_DEF 72
#define KC_DEF 256
#define NC_DEF 4080
#define UKR_T d_ukr_t
#define UKR_AVX2 d_ukr_avx2
#define UKR_AVX512 d_ukr_avx512
#define UKR_GENERIC d_ukr_generic
#define DOT_AVX2 d_dot_avx2
#define DOT_GENERIC d_dot_generic
#define DOT4_AVX2 d_dot4_avx2
#define TINY_ROWS_AVX2 d_tiny_rows_avx2
#define PACK_BT_AVX2 d_pack_bt_avx2
#define AXPY_AVX2 d_axpy4_avx2
#define AXPY_GENERIC d_axpy4
#include "gemm.c"
#undef T
#undef P
#undef MR
#undef NR
#undef MC_DEF
#undef KC_DEF
#undef NC_DEF
#undef UKR_T
#undef UKR_AVX2
#undef UKR_AVX512
#undef UKR_GENERIC
#undef DOT_AVX2
#undef DOT_GENERIC
#undef DOT4_AVX2
#undef TINY_ROWS_AVX2
#undef PACK_BT_AVX2
#undef PACK_A_ROWS_AVX2
#undef AXPY_AVX2
#undef AXPY_GENERIC
#undef GEMM_TEMPLATE

/* ------------------------------------------------------------------ float16 */

/* Widen A and B to float32, multiply in float32, round once into C. */
static int h_gemm(int64_t m, int64_t n, int64_t k, float alpha,
                  const _Float16 *a, int64_t rsa, int64_t csa,
                  const _Float16 *b, int64_t rsb, int64_t csb, float beta,
                  _Float16 *c, int64_t rsc, int64_t csc) {
    float *fa = malloc(sizeof(float) * (size_t)MAX(m * k, 1));
    float *fb = malloc(sizeof(float) * (size_t)MAX(k * n, 1));
    float *fc = malloc(sizeof(float) * (size_t)(m * n));
    int rc = 0;
    if (!fa || !fb || !fc) {
        rc = EM_GEMM_ENOMEM;
        goto out;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) fa[i * k + p] = (float)a[i * rsa + p * csa];
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++) fb[p * n + j] = (float)b[p * rsb + j * csb];
    rc = s_gemm(m, n, k, alpha, fa, k, 1, fb, n, 1, 0.0f, fc, n, 1);
    if (rc) goto out;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            _Float16 *cij = c + i * rsc + j * csc;
            float v = fc[i * n + j];
            *cij = (_Float16)(beta == 0.0f ? v : v + beta * (float)*cij);
        }
out:
    free(fa);
    free(fb);
    free(fc);
    return rc;
}

/* ----------------------------------------------------------------- bfloat16 */

/* bfloat16 (the top half of a float32, its bits in a uint16_t) without AVX512-BF16
 * (or forced to "avx512" and below): the float32 GEMM over float32 copies of A and B, so the micro-kernel, packing and threading are
 * float32's and the products accumulate in float32; C is computed in a float32
 * buffer and rounded once (to nearest even, NaN kept: ember_bf16.h). Widening is a
 * shift, one pass over A and B (2 (mk + kn) bytes read): for a 1024^3 product about
 * 1% of the GEMM's time; the copies live in per-thread buffers kept between calls,
 * like the packing buffers, so a warm product does not page-fault. */
static inline float bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? ((u >> 16) | 0x40u) : r);
}

/* dst = src (rows x cols, strides rs, cs) as float32, laid out along src's unit (or
 * smaller) stride so both sides are read and written in order; *drs, *dcs: dst's
 * strides. */
__attribute__((target_clones("avx2", "default")))
static void bf16_widen(const uint16_t *src, int64_t rows, int64_t cols, int64_t rs,
                       int64_t cs, float *restrict dst, int64_t *drs, int64_t *dcs) {
    if (cs == 1 || llabs(rs) >= llabs(cs)) {
        *drs = cols, *dcs = 1;
        for (int64_t i = 0; i < rows; i++) {
            const uint16_t *s = src + i * rs;
            float *d = dst + i * cols;
            if (cs == 1)
                for (int64_t j = 0; j < cols; j++) d[j] = bf16_f32(s[j]);
            else
                for (int64_t j = 0; j < cols; j++) d[j] = bf16_f32(s[j * cs]);
        }
    } else {
        *drs = 1, *dcs = rows;
        for (int64_t j = 0; j < cols; j++) {
            const uint16_t *s = src + j * cs;
            float *d = dst + j * rows;
            if (rs == 1)
                for (int64_t i = 0; i < rows; i++) d[i] = bf16_f32(s[i]);
            else
                for (int64_t i = 0; i < rows; i++) d[i] = bf16_f32(s[i * rs]);
        }
    }
}

__attribute__((target_clones("avx2", "default")))
static void bf16_store(int64_t m, int64_t n, const float *restrict fc, float beta,
                       uint16_t *c, int64_t rsc, int64_t csc) {
    for (int64_t i = 0; i < m; i++) {
        const float *f = fc + i * n;
        uint16_t *ci = c + i * rsc;
        if (beta == 0.0f && csc == 1)
            for (int64_t j = 0; j < n; j++) ci[j] = f32_bf16(f[j]);
        else if (beta == 0.0f)
            for (int64_t j = 0; j < n; j++) ci[j * csc] = f32_bf16(f[j]);
        else
            for (int64_t j = 0; j < n; j++)
                ci[j * csc] = f32_bf16(f[j] + beta * bf16_f32(ci[j * csc]));
    }
}

/* C is bfloat16 (c), or float32 (cf: C = alpha A B + beta C in float32, no rounding) */
static int b_gemm(int64_t m, int64_t n, int64_t k, float alpha,
                  const uint16_t *a, int64_t rsa, int64_t csa,
                  const uint16_t *b, int64_t rsb, int64_t csb, float beta,
                  uint16_t *c, float *cf, int64_t rsc, int64_t csc) {
    float *fa = buf_get(3, sizeof(float) * (size_t)MAX(m * k, 1));
    float *fb = buf_get(4, sizeof(float) * (size_t)MAX(k * n, 1));
    float *fc = cf ? cf : buf_get(5, sizeof(float) * (size_t)(m * n));
    int rc = EM_GEMM_ENOMEM;
    if (fa && fb && fc) {
        int64_t ra, ca, rb, cb;
        bf16_widen(a, m, k, rsa, csa, fa, &ra, &ca);
        bf16_widen(b, k, n, rsb, csb, fb, &rb, &cb);
        if (cf)
            rc = s_gemm(m, n, k, alpha, fa, ra, ca, fb, rb, cb, beta, cf, rsc, csc);
        else if (!(rc = s_gemm(m, n, k, alpha, fa, ra, ca, fb, rb, cb, 0.0f, fc, n, 1)))
            bf16_store(m, n, fc, beta, c, rsc, csc);
    }
    for (int i = 3; i < 6; i++) buf_trim(i);
    return rc;
}

/* ------------------------------------------------ bfloat16 with AVX512-BF16 */

/* On a CPU with AVX512-BF16, `vdpbf16ps` multiplies bfloat16 pairs and adds both
 * products into a float32 lane: A and B are packed as bfloat16 pairs along k (an A
 * panel: for each k pair, BF_MR 32-bit words (A[i,2p], A[i,2p+1]); a B panel: for each
 * k pair, BF_NR words (B[2p,j], B[2p+1,j]); an odd k is padded with a zero), the
 * BF_MR x BF_NR tile accumulates in float32 registers, and C is rounded to bfloat16
 * once, after the last k block (earlier blocks leave their float32 sums in a
 * workspace). Half the bytes packed and twice the products per instruction of the
 * float32 kernel. The instruction ignores MXCSR: bfloat16 subnormal inputs count as
 * zero and subnormal float32 sums are flushed to zero (as PyTorch's oneDNN path). */
#ifndef BF_MR
#define BF_MR 8
#endif
#define BF_NR 32
#ifndef BF_KC
#define BF_KC 1024           /* k per block (even): a B micro-panel is 64 KB, streamed from L2 */
#endif
#ifndef BF_MC
#define BF_MC 192            /* rows per block: an A block is 192 KB, in L2 */
#endif
#define BF16DOT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))

static int have_bf16dot = -1;

static int cpu_has_bf16dot(void) {
    if (have_bf16dot < 0) {
        __builtin_cpu_init();
        have_bf16dot = cpu_has_avx512() && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512vl") &&
                       __builtin_cpu_supports("avx512bf16");
    }
    return have_bf16dot;
}

static int use_bf16dot(void) {
    return (kernel_forced == 0 || kernel_forced == 4) && cpu_has_bf16dot();
}

BF16DOT static inline void bf_store16(uint16_t *c, __mmask16 m, __m512 x, float alpha,
                                      float beta);

/* sums = (src ? src[i*lds + j] : 0) + sum_p a-pairs . b-pairs, a full tile; with c, the
 * last k block of a full tile of a row-contiguous C: c[i*rsc + j] = alpha sums + beta c
 * rounded to bfloat16 (c not read when beta == 0), else t[i*ldt + j] = sums. */
BF16DOT static void bf_ukr(int64_t kp, const uint32_t *restrict a, const uint16_t *restrict b,
                           const float *src, int64_t lds, float *t, int64_t ldt,
                           uint16_t *c, int64_t rsc, float alpha, float beta) {
    __m512 acc[BF_MR][2];
    for (int i = 0; i < BF_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 32);
        _Pragma("GCC unroll 8")
        for (int i = 0; i < BF_MR; i++) {
            __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
        a += BF_MR;
        b += 2 * BF_NR;
    }
    for (int i = 0; i < BF_MR; i++) {
        __m512 x0 = acc[i][0], x1 = acc[i][1];
        if (src) {
            x0 = _mm512_add_ps(x0, _mm512_loadu_ps(src + i * lds));
            x1 = _mm512_add_ps(x1, _mm512_loadu_ps(src + i * lds + 16));
        }
        if (!c) {
            _mm512_storeu_ps(t + i * ldt, x0);
            _mm512_storeu_ps(t + i * ldt + 16, x1);
            continue;
        }
        bf_store16(c + i * rsc, (__mmask16)0xffff, x0, alpha, beta);
        bf_store16(c + i * rsc + 16, (__mmask16)0xffff, x1, alpha, beta);
    }
}

/* float32 -> bfloat16 bits, nearest even, NaN kept quiet (f32_bf16's rule) */
BF16DOT static inline __m256i bf_round16(__m512 x) {
    __m512i u = _mm512_castps_si512(x);
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                         _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

/* c[j] = alpha x[j] + beta c[j] rounded to bfloat16 for the lanes j in m (c not read
 * when beta == 0): the one store of every tile, full (bf_ukr) or at an edge (bf_store) */
BF16DOT static inline void bf_store16(uint16_t *c, __mmask16 m, __m512 x, float alpha,
                                      float beta) {
    x = _mm512_mul_ps(_mm512_set1_ps(alpha), x);
    if (beta != 0.0f) {
        __m512i old = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, c));
        x = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_castsi512_ps(_mm512_slli_epi32(old, 16)),
                            x);
    }
    _mm256_mask_storeu_epi16(c, m, bf_round16(x));
}

/* C[mr x nr] = alpha * t + beta * C, rounded to bfloat16 (C not read when beta == 0) */
BF16DOT static void bf_store(int64_t mr, int64_t nr, const float *t, int64_t ldt, float alpha,
                             float beta, uint16_t *c, int64_t rsc, int64_t csc) {
    for (int64_t i = 0; i < mr; i++) {
        uint16_t *ci = c + i * rsc;
        const float *ti = t + i * ldt;
        if (csc != 1) {
            for (int64_t j = 0; j < nr; j++)
                ci[j * csc] = f32_bf16(beta == 0.0f ? alpha * ti[j]
                                                    : alpha * ti[j] + beta * bf16_f32(ci[j * csc]));
            continue;
        }
        for (int64_t j = 0; j < nr; j += 16) {
            __mmask16 m = nr - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nr - j)) - 1);
            bf_store16(ci + j, m, _mm512_maskz_loadu_ps(m, ti + j), alpha, beta);
        }
    }
}

static inline uint32_t bf_pair(const uint16_t *x, int64_t s, int has2) {
    return (uint32_t)x[0] | (has2 ? (uint32_t)x[s] << 16 : 0u);
}

static inline uint32_t bf_word(const uint16_t *x) {    /* a contiguous pair */
    uint32_t w;
    memcpy(&w, x, 4);
    return w;
}

/* a k-unit of the packing loops: the pair at k = 2p, 2p+1 */
#define BF_LD(x, s, p) bf_pair((x) + 2 * (p) * (s), (s), 2 * (p) + 1 < kc)
#define BF_LDC(x, p) bf_word((x) + 2 * (p))

/* Pack rows [0, mc) x k [0, kc) of A into BF_MR-row panels of k pairs, zero-padded. */
BF16DOT static void bf_pack_a(int64_t mc, int64_t kc, const uint16_t *a, int64_t rsa,
                              int64_t csa, uint32_t *restrict dst) {
    PACK_A_BODY(uint16_t, BF_MR, (kc + 1) / 2, kc / 2, BF_LD, BF_LDC, )
}

/* Pack one BF_NR-column panel of k pairs: rows [0, kc) x cols [0, nr), zero-padded. */
BF16DOT static void bf_pack_b(int64_t kc, int64_t nr, const uint16_t *b, int64_t rsb,
                              int64_t csb, uint16_t *restrict dst) {
    int64_t kp = (kc + 1) / 2;
    if (csb == 1) {
        /* two rows interleaved: each 16 columns widened to words, the second row shifted */
        for (int64_t p = 0; p < kp; p++) {
            const uint16_t *r0 = b + 2 * p * rsb;
            int has2 = 2 * p + 1 < kc;
            for (int j = 0; j < BF_NR; j += 16) {
                __mmask16 m = nr - j >= 16 ? (__mmask16)0xffff
                            : nr > j ? (__mmask16)((1u << (nr - j)) - 1) : 0;
                __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + j));
                if (has2)
                    x = _mm512_or_si512(x, _mm512_slli_epi32(_mm512_cvtepu16_epi32(
                                               _mm256_maskz_loadu_epi16(m, r0 + rsb + j)), 16));
                _mm512_store_si512(dst + 2 * (p * BF_NR + j), x);
            }
        }
        return;
    }
    uint32_t *d = (uint32_t *)dst;
    PACK_B_COLUMNS(d, BF_NR, kp, kc / 2, BF_LD, BF_LDC)
}

typedef struct {
    int64_t m, n, k, kc, nkb, mc, n_ic, js_w, n_js, nc_pad;
    float alpha, beta;
    const uint16_t *a;
    int64_t rsa, csa;
    const uint16_t *b;
    int64_t rsb, csb;
    uint16_t *c;
    float *cf;        /* a float32 C instead (alpha 1, beta 0 or 1): it holds the partial sums */
    int64_t rsc, csc;
    uint16_t *bp;     /* packed B of the column chunk: k block at p0 from bp + p0 * nc_pad */
    float *ws;        /* float32 partial sums (several k blocks): row i, col j at i * nc_pad + j */
    _Atomic int failed;
} bf_job;

static void bf_pack_b_range(void *ctx, int64_t q0, int64_t q1) {
    bf_job *J = ctx;
    for (int64_t kb = 0; kb < J->nkb; kb++) {
        int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0), kp = (kcb + 1) / 2;
        for (int64_t q = q0; q < q1; q++)
            bf_pack_b(kcb, MIN(BF_NR, J->n - q * BF_NR), J->b + p0 * J->rsb + q * BF_NR * J->csb,
                      J->rsb, J->csb, J->bp + p0 * J->nc_pad + q * 2 * BF_NR * kp);
    }
}

/* Tasks (row block, column strip): every k block of that block of C. */
static void bf_tasks(void *ctx, int64_t t0, int64_t t1) {
    bf_job *J = ctx;
    uint32_t *abuf = buf_get(0, sizeof(uint32_t) * (size_t)(J->mc * ((J->kc + 1) / 2)));
    if (!abuf) {
        J->failed = 1;
        return;
    }
    float tile[BF_MR * BF_NR] __attribute__((aligned(64)));
    for (int64_t t = t0; t < t1; t++) {
        int64_t ic = t / J->n_js, js = t % J->n_js;
        int64_t i0 = ic * J->mc, mcb = MIN(J->mc, J->m - i0);
        int64_t j0 = js * J->js_w, jw = MIN(J->js_w, J->n - j0);
        for (int64_t kb = 0; kb < J->nkb; kb++) {
            int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0), kp = (kcb + 1) / 2;
            int last = kb == J->nkb - 1;
            bf_pack_a(mcb, kcb, J->a + i0 * J->rsa + p0 * J->csa, J->rsa, J->csa, abuf);
            for (int64_t jr = j0; jr < j0 + jw; jr += BF_NR) {
                const uint16_t *bpan = J->bp + p0 * J->nc_pad + jr * 2 * kp;
                for (int64_t ir = 0; ir < mcb; ir += BF_MR) {
                    if (J->cf) {   /* C += the block's sums (C = them at the first, beta 0) */
                        int64_t mr = MIN(BF_MR, mcb - ir), nr = MIN(BF_NR, J->n - jr);
                        float *cc = J->cf + (i0 + ir) * J->rsc + jr * J->csc;
                        int add = kb > 0 || J->beta != 0.0f;
                        if (J->csc == 1 && mr == BF_MR && nr == BF_NR) {
                            bf_ukr(kp, abuf + ir * kp, bpan, add ? cc : NULL, J->rsc, cc, J->rsc,
                                   NULL, 0, 1.0f, 0.0f);
                            continue;
                        }
                        bf_ukr(kp, abuf + ir * kp, bpan, NULL, 0, tile, BF_NR, NULL, 0, 1.0f,
                               0.0f);
                        for (int64_t i = 0; i < mr; i++)
                            for (int64_t j = 0; j < nr; j++) {
                                float *cij = cc + i * J->rsc + j * J->csc;
                                *cij = add ? tile[i * BF_NR + j] + *cij : tile[i * BF_NR + j];
                            }
                        continue;
                    }
                    float *w = J->ws ? J->ws + (i0 + ir) * J->nc_pad + jr : NULL;
                    const float *src = kb ? w : NULL;
                    uint16_t *cc = J->c + (i0 + ir) * J->rsc + jr * J->csc;
                    if (last && J->csc == 1 && mcb - ir >= BF_MR && J->n - jr >= BF_NR) {
                        bf_ukr(kp, abuf + ir * kp, bpan, src, J->nc_pad, tile, BF_NR, cc,
                               J->rsc, J->alpha, J->beta);
                    } else if (last) {
                        bf_ukr(kp, abuf + ir * kp, bpan, src, J->nc_pad, tile, BF_NR, NULL, 0,
                               1.0f, 0.0f);
                        bf_store(MIN(BF_MR, mcb - ir), MIN(BF_NR, J->n - jr), tile, BF_NR,
                                 J->alpha, J->beta, cc, J->rsc, J->csc);
                    } else {
                        bf_ukr(kp, abuf + ir * kp, bpan, src, J->nc_pad, w, J->nc_pad, NULL, 0,
                               1.0f, 0.0f);
                    }
                }
            }
        }
    }
}

/* sum_p x[p] y[p] of two contiguous bfloat16 vectors, pairs in float32 lanes */
BF16DOT static float bf_dot(int64_t k, const uint16_t *x, const uint16_t *y) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    int64_t p = 0;
    for (; p + 64 <= k; p += 64) {
        s0 = _mm512_dpbf16_ps(s0, (__m512bh)_mm512_loadu_si512(x + p),
                              (__m512bh)_mm512_loadu_si512(y + p));
        s1 = _mm512_dpbf16_ps(s1, (__m512bh)_mm512_loadu_si512(x + p + 32),
                              (__m512bh)_mm512_loadu_si512(y + p + 32));
    }
    for (; p < k; p += 32) {
        __mmask32 m = k - p >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (k - p)) - 1);
        s0 = _mm512_dpbf16_ps(s0, (__m512bh)_mm512_maskz_loadu_epi16(m, x + p),
                              (__m512bh)_mm512_maskz_loadu_epi16(m, y + p));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

/* 16 bfloat16 as float32, subnormals as zero (vdpbf16ps's rule) */
BF16DOT static inline __m512 bf_widen16(__mmask16 m, const uint16_t *p) {
    __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16);
    __mmask16 normal = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_castsi512_ps(_mm512_maskz_mov_epi32(normal, u));
}

/* The matrix-vector product with contiguous columns (M[i,p] at i + p cs): float32
 * axpys over blocks of rows, one column at a time (the same float32 sums of exact
 * products, subnormal inputs as zero) */
#define BF_GEMV_BLOCK 1024
BF16DOT static void bf_gemv_cols(int64_t rows, int64_t k, float alpha, const uint16_t *mat,
                                 int64_t cs, const uint16_t *x, float beta, uint16_t *y,
                                 int64_t incy) {
    float acc[BF_GEMV_BLOCK] __attribute__((aligned(64)));
    for (int64_t b0 = 0; b0 < rows; b0 += BF_GEMV_BLOCK) {
        int64_t len = MIN(BF_GEMV_BLOCK, rows - b0);
        memset(acc, 0, sizeof(float) * (size_t)len);
        for (int64_t p = 0; p < k; p++) {
            uint16_t xp = x[p];
            if ((xp & 0x7f80u) == 0) continue;      /* zero or subnormal */
            __m512 vx = _mm512_set1_ps(bf16_f32(xp));
            const uint16_t *col = mat + b0 + p * cs;
            for (int64_t i = 0; i < len; i += 16) {
                __mmask16 m = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1);
                _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(vx, bf_widen16(m, col + i),
                                                                  _mm512_maskz_loadu_ps(m, acc + i)));
            }
        }
        for (int64_t i = 0; i < len; i++) {
            uint16_t *yi = y + (b0 + i) * incy;
            float v = alpha * acc[i];
            *yi = f32_bf16(beta == 0.0f ? v : v + beta * bf16_f32(*yi));
        }
    }
}

/* y[i] (stride incy) = alpha sum_p M[i,p] x[p] + beta y[i], i < rows: a matrix-vector
 * product by dot products (a row or x not contiguous is copied first) */
static int bf_gemv(int64_t rows, int64_t k, float alpha, const uint16_t *mat, int64_t rs,
                   int64_t cs, const uint16_t *x, int64_t incx, float beta, uint16_t *y,
                   int64_t incy) {
    uint16_t *tmp = NULL;
    if (incx != 1 || cs != 1) {
        tmp = malloc(sizeof(uint16_t) * (size_t)(2 * k));
        if (!tmp) return EM_GEMM_ENOMEM;
        if (incx != 1) {
            for (int64_t p = 0; p < k; p++) tmp[k + p] = x[p * incx];
            x = tmp + k;
        }
    }
    if (cs != 1 && rs == 1) {
        bf_gemv_cols(rows, k, alpha, mat, cs, x, beta, y, incy);
        free(tmp);
        return 0;
    }
    for (int64_t i = 0; i < rows; i++) {
        const uint16_t *row = mat + i * rs;
        if (cs != 1) {
            for (int64_t p = 0; p < k; p++) tmp[p] = row[p * cs];
            row = tmp;
        }
        float v = alpha * bf_dot(k, row, x);
        uint16_t *yi = y + i * incy;
        *yi = f32_bf16(beta == 0.0f ? v : v + beta * bf16_f32(*yi));
    }
    free(tmp);
    return 0;
}

/* C = alpha A B + beta C for k >= 1 (the caller's check): every bfloat16 product
 * on such a CPU, so the flushing is the same for all shapes. A float32 C (cf, c NULL):
 * alpha 1, beta 0 or 1, the tiles' sums added into it block by block. */
static int bf_gemm(int64_t m, int64_t n, int64_t k, float alpha,
                   const uint16_t *a, int64_t rsa, int64_t csa,
                   const uint16_t *b, int64_t rsb, int64_t csb, float beta,
                   uint16_t *c, float *cf, int64_t rsc, int64_t csc) {
    if (n == 1 && !cf)
        return bf_gemv(m, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
    if (m == 1 && !cf)   /* c^T[n] = B^T[n,k] @ a^T[k] */
        return bf_gemv(n, k, alpha, b, csb, rsb, a, csa, beta, c, csc);
    int nthreads = em_in_parallel() ? 1 : em_get_num_threads();
    int par = nthreads > 1 && m * n * k >= PAR_MIN;
    bf_job J;
    memset(&J, 0, sizeof J);
    J.k = k, J.m = m, J.alpha = alpha, J.beta = beta;
    J.rsa = rsa, J.csa = csa, J.rsb = rsb, J.csb = csb, J.rsc = rsc, J.csc = csc;
    J.nkb = (k + BF_KC - 1) / BF_KC;
    J.kc = ((k + J.nkb - 1) / J.nkb + 1) / 2 * 2;        /* balanced, even */
    J.nkb = (k + J.kc - 1) / J.kc;
    int64_t n_ic = (m + BF_MC - 1) / BF_MC;
    J.mc = ((m + n_ic - 1) / n_ic + BF_MR - 1) / BF_MR * BF_MR;
    J.n_ic = (m + J.mc - 1) / J.mc;
    int64_t kpad = (k + 1) / 2 * 2;
    /* columns per chunk: the packed B (kpad x nc) within B_BUF_MAX */
    int64_t nc_max = MAX(BF_NR, (int64_t)(B_BUF_MAX / 2) / kpad / BF_NR * BF_NR);
    int64_t n_jc = (n + nc_max - 1) / nc_max;
    int64_t nc_even = ((n + n_jc - 1) / n_jc + BF_NR - 1) / BF_NR * BF_NR;
    int64_t mpad = J.n_ic * J.mc;
    uint16_t *bp = buf_get(1, sizeof(uint16_t) * (size_t)(kpad * nc_even));
    float *ws = J.nkb > 1 && !cf ? buf_get(3, sizeof(float) * (size_t)(mpad * nc_even)) : NULL;
    int rc = 0;
    if (!bp || (J.nkb > 1 && !cf && !ws)) rc = EM_GEMM_ENOMEM;
    for (int64_t jc = 0; jc < n && !rc; jc += nc_even) {
        J.n = MIN(nc_even, n - jc);
        J.nc_pad = (J.n + BF_NR - 1) / BF_NR * BF_NR;
        J.a = a, J.b = b + jc * csb, J.c = c ? c + jc * csc : NULL, J.bp = bp, J.ws = ws;
        J.cf = cf ? cf + jc * csc : NULL;
        int64_t npanels = J.nc_pad / BF_NR;
        if (par && k * J.n >= PAR_PACK_MIN)
            em_parallel_for(npanels, MAX(2, (PAR_PACK_MIN / 4) / (k * BF_NR)), bf_pack_b_range, &J);
        else
            bf_pack_b_range(&J, 0, npanels);
        /* strips of at least 4 panels, until there are TASKS_PER_THREAD tasks a thread */
        J.n_js = 1;
        if (par && J.n_ic < TASKS_PER_THREAD * nthreads)
            J.n_js = MIN((TASKS_PER_THREAD * nthreads + J.n_ic - 1) / J.n_ic,
                         MAX(1, npanels / 4));
        J.js_w = (npanels + J.n_js - 1) / J.n_js * BF_NR;
        J.n_js = (J.nc_pad + J.js_w - 1) / J.js_w;
        if (par && J.n_ic * J.n_js >= 2)
            em_parallel_for(J.n_ic * J.n_js, 1, bf_tasks, &J);
        else
            bf_tasks(&J, 0, J.n_ic * J.n_js);
        if (J.failed) rc = EM_GEMM_ENOMEM;
    }
    buf_trim(1);
    buf_trim(3);
    return rc;
}

/* --------------------------------------------------------- integers, bool */

/* Accumulate in int64 (wrapping), store into the output type (wrapping, as NumPy
 * does); bool: nonzero. Rows are spread over threads for large products. */
typedef struct {
    int dtype;
    int64_t m, n, k, alpha, beta;
    const char *a;
    int64_t rsa, csa;
    const char *b;
    int64_t rsb, csb;
    char *c;
    int64_t rsc, csc;
    _Atomic int failed;
} int_job;

#define INT_ROWS(NAME, TY, STORE)                                                      \
static void NAME(const int_job *J, int64_t i0, int64_t i1, int64_t *acc) {             \
    const TY *a = (const TY *)J->a, *b = (const TY *)J->b;                             \
    TY *c = (TY *)J->c;                                                                \
    int64_t n = J->n, k = J->k;                                                        \
    for (int64_t i = i0; i < i1; i++) {                                                \
        if (J->csb == 1) {                                                             \
            memset(acc, 0, sizeof(int64_t) * (size_t)n);                               \
            for (int64_t p = 0; p < k; p++) {                                          \
                int64_t av = (int64_t)a[i * J->rsa + p * J->csa];                      \
                if (av == 0) continue;                                                 \
                const TY *bp = b + p * J->rsb;                                         \
                for (int64_t j = 0; j < n; j++) acc[j] += av * (int64_t)bp[j];         \
            }                                                                          \
        } else {                                                                       \
            for (int64_t j = 0; j < n; j++) {                                          \
                int64_t s = 0;                                                         \
                for (int64_t p = 0; p < k; p++)                                        \
                    s += (int64_t)a[i * J->rsa + p * J->csa] *                         \
                         (int64_t)b[p * J->rsb + j * J->csb];                          \
                acc[j] = s;                                                            \
            }                                                                          \
        }                                                                              \
        for (int64_t j = 0; j < n; j++) {                                              \
            TY *cij = c + i * J->rsc + j * J->csc;                                     \
            int64_t v = J->alpha * acc[j];                                             \
            if (J->beta) v += J->beta * (int64_t)*cij;                                 \
            *cij = STORE;                                                              \
        }                                                                              \
    }                                                                                  \
}

INT_ROWS(rows_bool, uint8_t, (uint8_t)(v != 0))
INT_ROWS(rows_u8, uint8_t, (uint8_t)v)
INT_ROWS(rows_i8, int8_t, (int8_t)v)
INT_ROWS(rows_i16, int16_t, (int16_t)v)
INT_ROWS(rows_i32, int32_t, (int32_t)v)
INT_ROWS(rows_i64, int64_t, v)

static void int_range(void *ctx, int64_t i0, int64_t i1) {
    int_job *J = ctx;
    int64_t *acc = malloc(sizeof(int64_t) * (size_t)MAX(J->n, 1));
    if (!acc) {
        J->failed = 1;
        return;
    }
    switch (J->dtype) {
    case EM_BOOL: rows_bool(J, i0, i1, acc); break;
    case EM_UINT8: rows_u8(J, i0, i1, acc); break;
    case EM_INT8: rows_i8(J, i0, i1, acc); break;
    case EM_INT16: rows_i16(J, i0, i1, acc); break;
    case EM_INT32: rows_i32(J, i0, i1, acc); break;
    default: rows_i64(J, i0, i1, acc); break;
    }
    free(acc);
}

static int int_gemm(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa,
                    const void *b, int64_t rsb, int64_t csb, double beta,
                    void *c, int64_t rsc, int64_t csc) {
    int_job J = {dtype, m, n, k, (int64_t)alpha, (int64_t)beta, a, rsa, csa, b, rsb, csb,
                 c, rsc, csc, 0};
    int64_t row_work = MAX(n * k, 1);
    int64_t grain = MAX(1, (PAR_MIN / 4) / row_work);
    if (m * n * k >= PAR_MIN / 2)
        em_parallel_for(m, grain, int_range, &J);
    else
        int_range(&J, 0, m);
    return J.failed ? EM_GEMM_ENOMEM : 0;
}

/* --------------------------------------------------------------- dispatch */

/* A column-contiguous C: compute C^T = B^T A^T, whose rows are contiguous. */
#define ROWS_OF_C()                                                                   \
    if (csc != 1 && m > 1 && n > 1 && (rsc == 1 || llabs(rsc) < llabs(csc))) {       \
        int64_t t_;                                                                  \
        const void *tp_;                                                             \
        t_ = m, m = n, n = t_;                                                       \
        tp_ = a, a = b, b = tp_;                                                     \
        t_ = rsa, rsa = csb, csb = t_;                                               \
        t_ = csa, csa = rsb, rsb = t_;                                               \
        t_ = rsc, rsc = csc, csc = t_;                                               \
    }

int em_gemm(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
            const void *a, int64_t rsa, int64_t csa,
            const void *b, int64_t rsb, int64_t csb, double beta,
            void *c, int64_t rsc, int64_t csc) {
    if (dtype < EM_BOOL || dtype > EM_BFLOAT16) return EM_GEMM_EDTYPE;
    if (m <= 0 || n <= 0) return 0;
    ROWS_OF_C();
    switch (dtype) {
    case EM_FLOAT32:
        return s_gemm(m, n, k, (float)alpha, a, rsa, csa, b, rsb, csb, (float)beta, c, rsc,
                      csc);
    case EM_FLOAT64:
        return d_gemm(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
    case EM_FLOAT16:
        return h_gemm(m, n, k, (float)alpha, a, rsa, csa, b, rsb, csb, (float)beta, c, rsc,
                      csc);
    case EM_COMPLEX64:
    case EM_COMPLEX128:
        return em_gemm_complex(dtype, m, n, k, alpha, a, rsa, csa, 0, b, rsb, csb, 0, beta,
                               c, rsc, csc);
    case EM_BFLOAT16:
        if (use_bf16dot() && k >= 1 && alpha != 0.0)
            return bf_gemm(m, n, k, (float)alpha, a, rsa, csa, b, rsb, csb, (float)beta, c,
                           NULL, rsc, csc);
        return b_gemm(m, n, k, (float)alpha, a, rsa, csa, b, rsb, csb, (float)beta, c, NULL,
                      rsc, csc);
    default:
        return int_gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
    }
}

int em_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const void *a, int64_t rsa,
                     int64_t csa, const void *b, int64_t rsb, int64_t csb, float beta,
                     float *c, int64_t rsc, int64_t csc) {
    if (m <= 0 || n <= 0) return 0;
    ROWS_OF_C();
    if (k >= 1 && use_bf16dot()) {
        if (beta != 0.0f && beta != 1.0f)   /* its tiles add into C: scale C first */
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) c[i * rsc + j * csc] *= beta;
        return bf_gemm(m, n, k, 1.0f, a, rsa, csa, b, rsb, csb, beta != 0.0f, NULL, c, rsc,
                       csc);
    }
    return b_gemm(m, n, k, 1.0f, a, rsa, csa, b, rsb, csb, beta, NULL, c, rsc, csc);
}

static const int ITEMSIZE[12] = {1, 1, 1, 2, 4, 8, 2, 4, 8, 8, 16, 2};

/* Fold the batch into the rows: every batch dim of `bs_x` for X in {A, C} steps by
 * the rows below it, i.e. rows of A (and C) of all batches form one evenly strided
 * sequence. Returns the merged row stride of A in *rs_a, of C in *rs_c. */
static int fold_rows(int bdims, const int64_t *shape, const int64_t *bsa, const int64_t *bsc,
                     int64_t m, int64_t *rs_a, int64_t *rs_c) {
    int64_t ra = *rs_a, rc = *rs_c;
    if (m == 1) {          /* one row: its stride is free to be the batch step */
        ra = bsa[bdims - 1];
        rc = bsc[bdims - 1];
    }
    int64_t span = m;
    for (int d = bdims - 1; d >= 0; d--) {
        if (bsa[d] != span * ra || bsc[d] != span * rc) return 0;
        span *= shape[d];
    }
    *rs_a = ra;
    *rs_c = rc;
    return 1;
}

typedef struct {
    int dtype, bdims;
    const int64_t *shape, *bsa, *bsb, *bsc;
    int64_t m, n, k;
    double alpha, beta;
    const char *a;
    int64_t rsa, csa;
    const char *b;
    int64_t rsb, csb;
    char *c;
    int64_t rsc, csc;
    _Atomic int rc;
} batch_job;

static void batch_range(void *ctx, int64_t i0, int64_t i1) {
    batch_job *J = ctx;
    int isz = ITEMSIZE[J->dtype];
    for (int64_t i = i0; i < i1; i++) {
        int64_t rem = i, oa = 0, ob = 0, oc = 0;
        for (int d = J->bdims - 1; d >= 0; d--) {
            int64_t q = rem % J->shape[d];
            rem /= J->shape[d];
            oa += q * J->bsa[d];
            ob += q * J->bsb[d];
            oc += q * J->bsc[d];
        }
        int rc = em_gemm(J->dtype, J->m, J->n, J->k, J->alpha, J->a + oa * isz, J->rsa, J->csa,
                         J->b + ob * isz, J->rsb, J->csb, J->beta, J->c + oc * isz, J->rsc,
                         J->csc);
        if (rc) J->rc = rc;
    }
}

int em_gemm_batched(int dtype, int bdims, const int64_t *bshape, const int64_t *bsa,
                    const int64_t *bsb, const int64_t *bsc,
                    int64_t m, int64_t n, int64_t k, double alpha,
                    const void *a, int64_t rsa, int64_t csa,
                    const void *b, int64_t rsb, int64_t csb, double beta,
                    void *c, int64_t rsc, int64_t csc) {
    if (dtype < EM_BOOL || dtype > EM_BFLOAT16) return EM_GEMM_EDTYPE;
    /* drop batch dims of size 1 */
    int64_t shape[16], sa[16], sb[16], sc[16];
    int nd = 0;
    int64_t total = 1;
    for (int d = 0; d < bdims && d < 16; d++) {
        if (bshape[d] == 1) continue;
        shape[nd] = bshape[d];
        sa[nd] = bsa[d];
        sb[nd] = bsb[d];
        sc[nd] = bsc[d];
        total *= bshape[d];
        nd++;
    }
    if (total == 0 || m <= 0 || n <= 0) return 0;
    if (nd == 0)
        return em_gemm(dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
    int bzero = 1, azero = 1;
    for (int d = 0; d < nd; d++) {
        bzero &= sb[d] == 0;
        azero &= sa[d] == 0;
    }
    /* B shared by the whole batch (x @ W): one GEMM over all the rows */
    if (bzero) {
        int64_t ra = rsa, rc = rsc;
        if (fold_rows(nd, shape, sa, sc, m, &ra, &rc))
            return em_gemm(dtype, m * total, n, k, alpha, a, ra, csa, b, rsb, csb, beta, c, rc,
                           csc);
    }
    /* A shared (W @ x): the same with columns, on the transposed problem */
    if (azero) {
        int64_t cb = csb, cc = csc;
        if (fold_rows(nd, shape, sb, sc, n, &cb, &cc))
            return em_gemm(dtype, m, n * total, k, alpha, a, rsa, csa, b, rsb, cb, beta, c, rsc,
                           cc);
    }
    batch_job J = {dtype, nd, shape, sa, sb, sc, m, n, k, alpha, beta, a, rsa, csa, b, rsb,
                   csb, c, rsc, csc, 0};
    int64_t mnk = MAX(m * n * MAX(k, 1), 1);
    if (mnk < PAR_MIN && total * mnk >= PAR_MIN && total >= 2)
        em_parallel_for(total, MAX(1, (PAR_MIN / 4) / mnk), batch_range, &J);
    else
        batch_range(&J, 0, total);
    return J.rc;
}

#else /* GEMM_TEMPLATE: the float / double GEMM body ------------------------ */

/* Pack rows [0, mc) x cols [0, kc) of A (a points at the block's first element)
 * into MR-row panels: panel r0 holds a[r0 + r, p] at p * MR + r, zero-padded. */
static void P(pack_a)(int64_t mc, int64_t kc, const T *restrict a, int64_t rsa, int64_t csa,
                      T *restrict dst, int avx2) {
    (void)avx2;
#ifdef PACK_A_ROWS_AVX2
#define PACK_A_FAST if (mr == MR && csa == 1 && avx2) PACK_A_ROWS_AVX2(kc, ap, rsa, dst); else
#else
#define PACK_A_FAST
#endif
    PACK_A_BODY(T, MR, kc, kc, ELEM_LD, ELEM_LDC, PACK_A_FAST)
#undef PACK_A_FAST
}

/* Pack one NR-column panel: rows [0, kc) x cols [0, nr) of B into dst[p * NR + j],
 * zero-padded to NR columns. */
static void P(pack_b_panel)(int64_t kc, int64_t nr, const T *restrict b, int64_t rsb,
                            int64_t csb, T *restrict dst, int avx2) {
    if (nr == NR && rsb == 1 && csb != 1 && avx2) {
        PACK_BT_AVX2(kc, b, csb, dst);
    } else if (nr == NR && csb == 1) {
        for (int64_t p = 0; p < kc; p++)
            for (int j = 0; j < NR; j++) dst[p * NR + j] = b[p * rsb + j];
    } else if (rsb == 1) {
        PACK_B_COLUMNS(dst, NR, kc, kc, ELEM_LD, ELEM_LDC)
    } else {
        for (int64_t p = 0; p < kc; p++) {
            int64_t j = 0;
            for (; j < nr; j++) dst[p * NR + j] = b[p * rsb + j * csb];
            for (; j < NR; j++) dst[p * NR + j] = 0;
        }
    }
}

/* Pack columns [0, ncols) of a k block into consecutive NR-column panels (dst +
 * q * NR * kc). A row-contiguous B is read eight rows at a time across all the
 * panels (one panel at a time would touch a new page on every row; one row at a
 * time scatters writes over all the panels); other layouts panel by panel. */
static void P(pack_b_group)(int64_t kc, int64_t ncols, const T *restrict b, int64_t rsb,
                            int64_t csb, T *restrict dst, int avx2) {
    int64_t npan = (ncols + NR - 1) / NR;
    if (csb != 1) {
        for (int64_t q = 0; q < npan; q++)
            P(pack_b_panel)(kc, MIN(NR, ncols - q * NR), b + q * NR * csb, rsb, csb,
                            dst + q * NR * kc, avx2);
        return;
    }
    for (int64_t p0 = 0; p0 < kc; p0 += 8) {
        int64_t rows = MIN(8, kc - p0);
        for (int64_t q = 0; q < npan; q++) {
            int64_t nr = MIN(NR, ncols - q * NR);
            const T *src = b + p0 * rsb + q * NR;
            T *d = dst + q * NR * kc + p0 * NR;
            if (nr == NR) {
                for (int64_t r = 0; r < rows; r++) {
                    if (p0 + 8 + r < kc)    /* the same columns, 8 rows on */
                        __builtin_prefetch(src + (8 + r) * rsb);
                    for (int j = 0; j < NR; j++) d[r * NR + j] = src[r * rsb + j];
                }
            } else {
                for (int64_t r = 0; r < rows; r++) {
                    int64_t j = 0;
                    for (; j < nr; j++) d[r * NR + j] = src[r * rsb + j];
                    for (; j < NR; j++) d[r * NR + j] = 0;
                }
            }
        }
    }
}

#ifndef LAZY_GROUP
#define LAZY_GROUP 16     /* B panels packed together on the fly (256 KB of float) */
#endif

/* C block [mc x nc] (+)= alpha * packed A @ packed B. With bsrc, each B panel is
 * packed (from bsrc, strides rsb, csb) into its place in bp just before its first
 * use, so it is still in L1 for the micro-kernels that read it. */
static void P(macro)(UKR_T ukr, int64_t mc, int64_t nc, int64_t kc, T alpha, const T *ap,
                     T *bp, T beta, T *c, int64_t rsc, int64_t csc,
                     const T *bsrc, int64_t rsb, int64_t csb, int avx2) {
    T tile[MR * NR] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
        int64_t nr = MIN(NR, nc - j0);
        T *b = bp + j0 * kc;
        if (bsrc && j0 % (LAZY_GROUP * NR) == 0)
            P(pack_b_group)(kc, MIN(LAZY_GROUP * NR, nc - j0), bsrc + j0 * csb, rsb, csb, b,
                            avx2);
        for (int64_t i0 = 0; i0 < mc; i0 += MR) {
            int64_t mr = MIN(MR, mc - i0);
            const T *a = ap + i0 * kc;
            T *cc = c + i0 * rsc + j0 * csc;
            if (mr == MR && nr == NR && csc == 1) {
                ukr(kc, a, b, cc, rsc, alpha, beta);
            } else {
                ukr(kc, a, b, tile, NR, (T)1, (T)0);
                for (int64_t i = 0; i < mr; i++)
                    for (int64_t j = 0; j < nr; j++) {
                        T *cij = cc + i * rsc + j * csc;
                        *cij = beta == (T)0 ? alpha * tile[i * NR + j]
                                            : alpha * tile[i * NR + j] + beta * *cij;
                    }
            }
        }
    }
}

typedef struct {
    UKR_T ukr;
    int avx2;
    int64_t m, k;
    T alpha, beta;
    const T *a;
    int64_t rsa, csa;
    const T *b;
    int64_t rsb, csb;
    T *c;
    int64_t rsc, csc;
    int64_t jc, nc, nc_pad;   /* the current chunk of columns */
    T *bp;                    /* its packed B: k block at p0 starts at bp + p0 * nc_pad */
    T *ap;                    /* all of A, packed once and shared by the strips on several
                               * threads (NULL: each strip packs its own): block (ic, kb)
                               * at ap + (ic * nkb + kb) * mc * kc, packed by the first
                               * strip that needs it */
    _Atomic unsigned char *astate;   /* per block: 0 not packed, 1 being packed, 2 ready */
    int nthreads;
    int64_t mc, kc, nkb;      /* balanced block sizes, number of k blocks */
    int64_t n_ic, n_js, js_w;
    _Atomic int64_t next;
    _Atomic int64_t done;
} P(job);

/* Pack panels [q0, q1) of the current column chunk, all k blocks (up front). */
static void P(pack_b_range)(void *ctx, int64_t q0, int64_t q1) {
    P(job) *J = ctx;
    int64_t j0 = q0 * NR, ncols = MIN(q1 * NR, J->nc) - j0;
    for (int64_t kb = 0; kb < J->nkb; kb++) {
        int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0);
        P(pack_b_group)(kcb, ncols, J->b + p0 * J->rsb + (J->jc + j0) * J->csb, J->rsb, J->csb,
                        J->bp + p0 * J->nc_pad + j0 * kcb, J->avx2);
    }
}

static void P(tasks)(void *ctx, int tid, int nt) {
    (void)tid; (void)nt;
    P(job) *J = ctx;
    int64_t ntasks = J->n_ic * J->n_js;
    T *abuf = NULL;
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&J->next, 1, memory_order_relaxed);
        if (t >= ntasks) break;
        if (!abuf) {
            abuf = buf_get(0, sizeof(T) * (size_t)(J->mc * J->kc));
            if (!abuf) break;     /* the task is lost: `done` stays short */
        }
        int64_t ic = t / J->n_js, js = t % J->n_js;
        int64_t i0 = ic * J->mc, mcb = MIN(J->mc, J->m - i0);
        int64_t j0 = js * J->js_w, jw = MIN(J->js_w, J->nc - j0);
        for (int64_t kb = 0; kb < J->nkb; kb++) {
            int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0);
            P(pack_a)(mcb, kcb, J->a + i0 * J->rsa + p0 * J->csa, J->rsa, J->csa, abuf, J->avx2);
            P(macro)(J->ukr, mcb, jw, kcb, J->alpha, abuf, J->bp + p0 * J->nc_pad + j0 * kcb,
                     kb == 0 ? J->beta : (T)1, J->c + i0 * J->rsc + (J->jc + j0) * J->csc,
                     J->rsc, J->csc, NULL, 0, 0, J->avx2);
        }
        atomic_fetch_add_explicit(&J->done, 1, memory_order_relaxed);
    }
}

/* The packed A block (ic, kb) for a strip: the shared copy, packed here by the
 * first strip that needs it; while another thread is still packing it, a private
 * copy in *abuf (never a wait: that thread may be descheduled on a busy machine). */
static const T *P(a_block)(P(job) *J, int64_t ic, int64_t kb, T **abuf) {
    int64_t i0 = ic * J->mc, mcb = MIN(J->mc, J->m - i0);
    int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0);
    const T *src = J->a + i0 * J->rsa + p0 * J->csa;
    if (J->ap) {
        int64_t blk = ic * J->nkb + kb;
        T *shared = J->ap + blk * J->mc * J->kc;
        unsigned char st = atomic_load_explicit(&J->astate[blk], memory_order_acquire);
        if (st == 2) return shared;
        unsigned char expect = 0;
        if (st == 0 && atomic_compare_exchange_strong_explicit(
                           &J->astate[blk], &expect, 1, memory_order_relaxed,
                           memory_order_relaxed)) {
            P(pack_a)(mcb, kcb, src, J->rsa, J->csa, shared, J->avx2);
            atomic_store_explicit(&J->astate[blk], 2, memory_order_release);
            return shared;
        }
    }
    if (!*abuf && !(*abuf = buf_get(0, sizeof(T) * (size_t)(J->mc * J->kc)))) return NULL;
    P(pack_a)(mcb, kcb, src, J->rsa, J->csa, *abuf, J->avx2);
    return *abuf;
}

/* Column-strip tasks: each takes a strip of the chunk's columns through the
 * blocks in BLIS order, k blocks outermost, packing its B panels as it first uses
 * them (the first row block) so one k block of the strip's B (kc x js_w) serves
 * every row block while it is still in the cache. With several strips, A is
 * packed once, block by block, by whichever strip needs a block first, and the
 * strips that run at the same time start at different row blocks (a rotation
 * that leaves each element's order of accumulation alone), so they pack
 * different blocks and then use each other's. One strip of all the columns is
 * the one-thread GEMM. */
static void P(strips)(void *ctx, int tid, int nt) {
    (void)tid; (void)nt;
    P(job) *J = ctx;
    T *abuf = NULL;
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&J->next, 1, memory_order_relaxed);
        if (t >= J->n_js) break;
        int64_t j0 = t * J->js_w, jw = MIN(J->js_w, J->nc - j0);
        int64_t rot = (t % J->nthreads) * J->n_ic / J->nthreads;
        int ok = 1;
        for (int64_t kb = 0; kb < J->nkb && ok; kb++) {
            int64_t p0 = kb * J->kc, kcb = MIN(J->kc, J->k - p0);
            for (int64_t q = 0; q < J->n_ic; q++) {
                int64_t ic = (q + rot) % J->n_ic;
                int64_t i0 = ic * J->mc, mcb = MIN(J->mc, J->m - i0);
                const T *ablk = P(a_block)(J, ic, kb, &abuf);
                if (!ablk) {      /* the strip is lost: `done` stays short */
                    ok = 0;
                    break;
                }
                const T *bsrc = q == 0 ? J->b + p0 * J->rsb + (J->jc + j0) * J->csb : NULL;
                P(macro)(J->ukr, mcb, jw, kcb, J->alpha, ablk, J->bp + p0 * J->nc_pad + j0 * kcb,
                         kb == 0 ? J->beta : (T)1, J->c + i0 * J->rsc + (J->jc + j0) * J->csc,
                         J->rsc, J->csc, bsrc, J->rsb, J->csb, J->avx2);
            }
        }
        if (!ok) break;
        atomic_fetch_add_explicit(&J->done, 1, memory_order_relaxed);
    }
}

/* y[m] (stride incy) = alpha * A[m,k] @ x[k] (stride incx) + beta * y */
typedef struct {
    int64_t m, k;
    T alpha, beta;
    const T *a;
    int64_t rsa, csa;
    const T *x;               /* contiguous */
    T *y;
    int64_t incy;
    int avx2;
} P(gemv_job);

static void P(gemv_rows)(void *ctx, int64_t i0, int64_t i1) {
    P(gemv_job) *J = ctx;
    for (int64_t i = i0; i < i1;) {
        const T *row = J->a + i * J->rsa;
        T s[4];
        int nr = 1;
        if (J->csa == 1 && J->avx2 && i + 4 <= i1) {
            DOT4_AVX2(J->k, row, J->rsa, J->x, s);
            nr = 4;
        } else if (J->csa == 1) {
            s[0] = J->avx2 ? DOT_AVX2(J->k, row, J->x) : DOT_GENERIC(J->k, row, J->x);
        } else {
            s[0] = 0;
            for (int64_t p = 0; p < J->k; p++) s[0] += row[p * J->csa] * J->x[p];
        }
        for (int q = 0; q < nr; q++) {
            T *yi = J->y + (i + q) * J->incy;
            *yi = J->beta == (T)0 ? J->alpha * s[q] : J->alpha * s[q] + J->beta * *yi;
        }
        i += nr;
    }
}

/* columns contiguous (rsa == 1): y block += x[p] * A[block, p], four columns a pass */
#define GEMV_BLOCK 2048
static void P(gemv_cols)(void *ctx, int64_t i0, int64_t i1) {
    P(gemv_job) *J = ctx;
    T acc[GEMV_BLOCK];
    for (int64_t b0 = i0; b0 < i1; b0 += GEMV_BLOCK) {
        int64_t len = MIN(GEMV_BLOCK, i1 - b0);
        memset(acc, 0, sizeof(T) * (size_t)len);
        int64_t p = 0;
        for (; p + 4 <= J->k; p += 4) {
            const T *col = J->a + b0 + p * J->csa;
            if (J->avx2)
                AXPY_AVX2(len, J->x + p, col, J->csa, acc);
            else
                AXPY_GENERIC(len, J->x + p, col, J->csa, acc);
        }
        for (; p < J->k; p++) {
            const T *col = J->a + b0 + p * J->csa;
            T xp = J->x[p];
            for (int64_t i = 0; i < len; i++) acc[i] += xp * col[i];
        }
        for (int64_t i = 0; i < len; i++) {
            T *yi = J->y + (b0 + i) * J->incy;
            *yi = J->beta == (T)0 ? J->alpha * acc[i] : J->alpha * acc[i] + J->beta * *yi;
        }
    }
}

static int P(gemv)(int64_t m, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa,
                   const T *x, int64_t incx, T beta, T *y, int64_t incy) {
    T *xc = NULL;
    if (incx != 1 && k > 0) {
        xc = malloc(sizeof(T) * (size_t)k);
        if (!xc) return EM_GEMM_ENOMEM;
        for (int64_t p = 0; p < k; p++) xc[p] = x[p * incx];
        x = xc;
    }
    P(gemv_job) J = {m, k, alpha, beta, a, rsa, csa, x, y, incy, use_avx2()};
    int par = m * k >= GEMV_PAR_MIN;
    if (rsa == 1 && csa != 1 && m > 1) {
        if (par)
            em_parallel_for(m, MAX(1, GEMV_PAR_MIN / 4 / MAX(k, 1) / GEMV_BLOCK) * GEMV_BLOCK,
                            P(gemv_cols), &J);
        else
            P(gemv_cols)(&J, 0, m);
    } else {
        if (par)
            em_parallel_for(m, MAX(1, GEMV_PAR_MIN / 4 / MAX(k, 1)), P(gemv_rows), &J);
        else
            P(gemv_rows)(&J, 0, m);
    }
    free(xc);
    return 0;
}

/* Direct loop for tiny products: each row of C accumulated in registers / L1 from
 * rank-1 updates, then stored (alpha, beta applied once). Compiled twice: for
 * the baseline ISA and for AVX2+FMA. */
#define TINY_BODY                                                                      \
    T acc[TINY_MNK];                                                                   \
    for (int64_t i = 0; i < m; i++) {                                                  \
        for (int64_t j = 0; j < n; j++) acc[j] = 0;                                    \
        for (int64_t p = 0; p < k; p++) {                                              \
            T aip = a[i * rsa + p * csa];                                              \
            const T *bp = b + p * rsb;                                                 \
            if (csb == 1)                                                              \
                for (int64_t j = 0; j < n; j++) acc[j] += aip * bp[j];                 \
            else                                                                       \
                for (int64_t j = 0; j < n; j++) acc[j] += aip * bp[j * csb];           \
        }                                                                              \
        T *ci = c + i * rsc;                                                           \
        if (beta == (T)0)                                                              \
            for (int64_t j = 0; j < n; j++) ci[j * csc] = alpha * acc[j];              \
        else                                                                           \
            for (int64_t j = 0; j < n; j++) ci[j * csc] = alpha * acc[j] + beta * ci[j * csc]; \
    }

static void P(tiny)(int64_t m, int64_t n, int64_t k, T alpha, const T *restrict a,
                    int64_t rsa, int64_t csa, const T *restrict b, int64_t rsb, int64_t csb,
                    T beta, T *restrict c, int64_t rsc, int64_t csc) {
    TINY_BODY
}

AVX2 static void P(tiny_avx2)(int64_t m, int64_t n, int64_t k, T alpha, const T *restrict a,
                              int64_t rsa, int64_t csa, const T *restrict b, int64_t rsb,
                              int64_t csb, T beta, T *restrict c, int64_t rsc, int64_t csc) {
    TINY_BODY
}
#undef TINY_BODY

/* The blocked GEMM for one k super-chunk (see the top of the file). */
static int P(gemm_blocked)(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa,
                           int64_t csa, const T *b, int64_t rsb, int64_t csb, T beta, T *c,
                           int64_t rsc, int64_t csc) {
    int nthreads = em_in_parallel() ? 1 : em_get_num_threads();
    int par = nthreads > 1 && m * n * k >= PAR_MIN;

    P(job) J;
    memset(&J, 0, sizeof J);
    J.avx2 = use_avx2();
    J.ukr = use_avx512() ? UKR_AVX512 : J.avx2 ? UKR_AVX2 : UKR_GENERIC;
    J.m = m;
    J.k = k;
    J.alpha = alpha;
    J.beta = beta;
    J.a = a, J.rsa = rsa, J.csa = csa;
    J.b = b, J.rsb = rsb, J.csb = csb;
    J.c = c, J.rsc = rsc, J.csc = csc;
    J.nkb = (k + KC_DEF - 1) / KC_DEF;
    J.kc = (k + J.nkb - 1) / J.nkb;
    int64_t n_ic = (m + MC_DEF - 1) / MC_DEF;
    J.mc = ((m + n_ic - 1) / n_ic + MR - 1) / MR * MR;
    J.n_ic = (m + J.mc - 1) / J.mc;

    /* columns per chunk: all of n when the packed B (k x nc) fits the budget */
    int64_t nc_max = (int64_t)(B_BUF_MAX / sizeof(T)) / k / NR * NR;
    nc_max = MAX(NR, MIN(nc_max, NC_DEF));
    int64_t n_jc = (n + nc_max - 1) / nc_max;
    int64_t nc_even = ((n + n_jc - 1) / n_jc + NR - 1) / NR * NR;

    T *bp = buf_get(1, sizeof(T) * (size_t)(k * nc_even));
    if (!bp) return EM_GEMM_ENOMEM;
    int rc = 0;
    for (int64_t jc = 0; jc < n; jc += nc_even) {
        J.jc = jc;
        J.nc = MIN(nc_even, n - jc);
        J.nc_pad = (J.nc + NR - 1) / NR * NR;
        J.bp = bp;
        int64_t npanels = J.nc_pad / NR;
        atomic_store(&J.next, 0);
        atomic_store(&J.done, 0);
        /* Plan: (1) one thread: a single strip of all the columns. (2) column
         * strips, STRIPS_PER_THREAD per thread (TASKS_PER_THREAD with a single
         * row block, whose re-packing costs little), at least STRIP_MIN columns
         * wide; strips are handed out dynamically, so a thread that is slowed
         * down by other processes takes fewer. (3) too few columns for that:
         * tasks (row block, column strip) over a B packed up front, in parallel. */
        int64_t n_strips = 1;
        if (par) {
            int64_t min_w = J.n_ic == 1 ? 4 * NR : STRIP_MIN;
            int64_t want = (J.n_ic == 1 ? TASKS_PER_THREAD : STRIPS_PER_THREAD) * (int64_t)nthreads;
            n_strips = MIN(want, MAX(1, J.nc_pad / min_w));
            if (n_strips >= nthreads)     /* a multiple of the threads: no odd one out */
                n_strips = n_strips / nthreads * nthreads;
            if (n_strips < (J.n_ic == 1 ? 2 : MIN_STRIPS_PER_THREAD * (int64_t)nthreads))
                n_strips = 0;
        }
        if (n_strips >= 1) {
            J.js_w = (npanels + n_strips - 1) / n_strips * NR;
            J.n_js = (J.nc_pad + J.js_w - 1) / J.js_w;
            J.ap = NULL;
            J.nthreads = nthreads;
            if (J.n_js >= 2) {
                /* every strip needs all of A: share one packed copy when it fits
                 * (else each strip packs its own) */
                int64_t nblk = J.n_ic * J.nkb;
                size_t abytes = sizeof(T) * (size_t)(nblk * J.mc * J.kc);
                char *abig = abytes <= A_SHARED_MAX ? buf_get(2, abytes + (size_t)nblk) : NULL;
                if (abig) {
                    J.ap = (T *)abig;
                    J.astate = (_Atomic unsigned char *)(abig + abytes);
                    memset((void *)J.astate, 0, (size_t)nblk);
                }
                em_parallel_run(nthreads, P(strips), &J);
            } else {
                P(strips)(&J, 0, 1);
            }
            if (atomic_load(&J.done) != J.n_js) {
                rc = EM_GEMM_ENOMEM;
                break;
            }
            continue;
        }
        if (k * J.nc >= PAR_PACK_MIN)
            em_parallel_for(npanels, MAX(4, (PAR_PACK_MIN / 4) / (k * NR)), P(pack_b_range), &J);
        else
            P(pack_b_range)(&J, 0, npanels);
        /* row blocks, split into column strips (each re-packs its A block) until
         * there are about TASKS_PER_THREAD per thread */
        J.n_js = 1;
        J.js_w = J.nc_pad;
        if (J.n_ic < TASKS_PER_THREAD * nthreads) {
            int64_t want = (TASKS_PER_THREAD * nthreads + J.n_ic - 1) / J.n_ic;
            J.n_js = MIN(want, MAX(1, J.nc_pad / (4 * NR)));
            J.js_w = (npanels + J.n_js - 1) / J.n_js * NR;
            J.n_js = (J.nc_pad + J.js_w - 1) / J.js_w;
        }
        if (J.n_ic * J.n_js >= 2)
            em_parallel_run(nthreads, P(tasks), &J);
        else
            P(tasks)(&J, 0, 1);
        if (atomic_load(&J.done) != J.n_ic * J.n_js) {
            rc = EM_GEMM_ENOMEM;
            break;
        }
    }
    return rc;
}

static int P(gemm)(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa,
                   int64_t csa, const T *b, int64_t rsb, int64_t csb, T beta, T *c,
                   int64_t rsc, int64_t csc) {
    if (m <= 0 || n <= 0) return 0;
    if (k <= 0 || alpha == (T)0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                T *cij = c + i * rsc + j * csc;
                *cij = beta == (T)0 ? (T)0 : beta * *cij;
            }
        return 0;
    }
    if (n == 1)
        return P(gemv)(m, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
    if (m == 1)   /* c^T[n] = B^T[n,k] @ a^T[k] */
        return P(gemv)(n, k, alpha, b, csb, rsb, a, csa, beta, c, csc);
    if (m * n * k <= TINY_MNK) {
        if (use_avx2() && csb == 1 && csc == 1)
            TINY_ROWS_AVX2(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        else
            (use_avx2() ? P(tiny_avx2) : P(tiny))(m, n, k, alpha, a, rsa, csa, b, rsb, csb,
                                                  beta, c, rsc, csc);
        return 0;
    }

    /* k in super-chunks whose packed B (ks x min(n, NC)) fits B_BUF_MAX: a large k
     * then keeps wide column chunks (A is re-packed once per column chunk), and
     * the chunks after the first accumulate into C */
    int64_t nc_target = MIN((n + NR - 1) / NR * NR, NC_DEF);
    int64_t ks_max = (int64_t)(B_BUF_MAX / sizeof(T)) / nc_target / KC_DEF * KC_DEF;
    ks_max = MAX(ks_max, KC_DEF);
    int64_t n_ks = (k + ks_max - 1) / ks_max;
    int64_t ks = (k + n_ks - 1) / n_ks;
    int rc = 0;
    for (int64_t k0 = 0; k0 < k && !rc; k0 += ks)
        rc = P(gemm_blocked)(m, n, MIN(ks, k - k0), alpha, a + k0 * csa, rsa, csa,
                             b + k0 * rsb, rsb, csb, k0 == 0 ? beta : (T)1, c, rsc, csc);
    buf_trim(1);
    buf_trim(2);
    return rc;
}

#endif /* GEMM_TEMPLATE */
