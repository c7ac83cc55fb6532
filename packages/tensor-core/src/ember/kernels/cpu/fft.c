/* ember's FFT (see fft.h): plans, their cache, the complex vector operations the
 * butterflies are written with (fft_kern.h) and the line loops (fft_drv.h), built
 * for float and double, with AVX2/FMA and without (chosen at run time). */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fft.h"
#include "threads.h"

#define FFT_MAX_GENERIC 63      /* larger prime factors: Bluestein */
#define FFT_RSPLIT_MAX 13       /* odd real plans split off factors up to this */

static void *fft_alloc(size_t nbytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 64)) return NULL;
    return p;
}

static void fft_free(void *p) { free(p); }

/* The line buffers: each thread keeps its last one (up to FFT_KEEP bytes) for the next
 * call, so a large transform does not fault in fresh pages every time. */
#define FFT_KEEP ((size_t)64 << 20)
static __thread void *tl_buf;
static __thread size_t tl_cap;

static void *scratch_get(size_t nbytes) {
    if (tl_buf && tl_cap >= nbytes) {
        void *p = tl_buf;
        tl_buf = NULL;
        return p;
    }
    return fft_alloc(nbytes);
}

static void scratch_put(void *p, size_t nbytes) {
    if (nbytes > FFT_KEEP) {
        fft_free(p);
        return;
    }
    if (tl_buf) {
        if (tl_cap >= nbytes) {
            fft_free(p);
            return;
        }
        fft_free(tl_buf);
    }
    tl_buf = p;
    tl_cap = nbytes;
}

/* ------------------------------------------------------------------ plans */

typedef struct fft_plan fft_plan;
struct fft_plan {
    int kind;                 /* 0 complex, 1 real (r2c forward / c2r backward) */
    int dtype, fwd;
    int64_t n;
    int nfct;
    int64_t fct[64];
    void *tw[64];             /* per pass: (ip - 1) * ido complex twiddles, or NULL */
    void *roots[64];          /* per generic pass: ip complex roots of unity */
    int64_t work;             /* complex scratch entries exec needs beside the data */
    int64_t n2;               /* Bluestein: the convolution length (0: not Bluestein) */
    fft_plan *sub_f, *sub_b;
    void *bk, *bkf;           /* the chirp, and the FFT of its conjugate / n2 */
    fft_plan *half;           /* real: the complex plan of n / 2 (even n) or of the leaf
                                 (odd n) */
    void *rtw;                /* real, even n: W^k = exp(-2 pi i k / n), k <= n / 4 */
    int64_t leaf;             /* real, odd n: the leaf length (1: none; n: a prime);
                                 nfct, fct, tw, roots: the real passes after it */
    fft_plan *hblue;          /* real, odd n: the leaf's half Bluestein plan (or NULL) */
    size_t bytes;
};

static fft_plan *plan_get(int kind, int64_t n, int dtype, int fwd);
static void plan_release(fft_plan *p);

/* exp(2 pi i m / n) for m in [0, n) as 2n doubles, from an octant (n % 8 == 0) or
 * half (otherwise) of directly computed values, so every entry is within an ulp or
 * so of the true value. */
static double *unit_roots(int64_t n) {
    double *w = malloc((size_t)n * 2 * sizeof(double));
    if (!w) return NULL;
    const double a = 2 * M_PI / (double)n;
    if (n % 8 == 0) {
        const int64_t o = n / 8, q = n / 4;
        for (int64_t m = 0; m <= o; m++) {
            w[2 * m] = cos(a * (double)m);
            w[2 * m + 1] = sin(a * (double)m);
        }
        for (int64_t m = o + 1; m <= q; m++) {
            w[2 * m] = w[2 * (q - m) + 1];
            w[2 * m + 1] = w[2 * (q - m)];
        }
        for (int64_t m = q + 1; m <= n / 2; m++) {
            w[2 * m] = -w[2 * (m - q) + 1];
            w[2 * m + 1] = w[2 * (m - q)];
        }
    } else {
        for (int64_t m = 0; 2 * m <= n; m++) {
            w[2 * m] = cos(a * (double)m);
            w[2 * m + 1] = sin(a * (double)m);
        }
    }
    for (int64_t m = n / 2 + 1; m < n; m++) {
        w[2 * m] = w[2 * (n - m)];
        w[2 * m + 1] = -w[2 * (n - m) + 1];
    }
    return w;
}

/* [2], the odd primes ascending, the 8s, then a 4 (or two): the last pass (ido == 1)
 * is a radix-4 one where it can be, which has a vectorised form; radix 8 saves passes
 * over memory. */
static int factorize(int64_t n, int64_t *fct) {
    int nf = 0, twos = 0;
    while (n % 2 == 0) {
        twos++;
        n /= 2;
    }
    int fours = 0, eights = 0, two = 0;
    if (twos >= 2) {
        fours = 1;
        twos -= 2;
        eights = twos / 3;
        twos -= 3 * eights;
        if (twos == 2) fours++;
        else if (twos == 1) two = 1;
    } else {
        two = twos;
    }
    if (two) fct[nf++] = 2;
    for (int64_t p = 3; p * p <= n; p += 2)
        while (n % p == 0) {
            fct[nf++] = p;
            n /= p;
        }
    if (n > 1) fct[nf++] = n;
    while (eights--) fct[nf++] = 8;
    while (fours--) fct[nf++] = 4;
    return nf;
}

/* A pass's cost per point by its radix, fitted to measured times of the 7-smooth lengths
 * (AVX2, float32 and float64): radix 8 costs more per factor of two than 4 or 2. */
static double cost_guess(int64_t n) {
    int64_t f[64];
    int nf = factorize(n, f);
    double c = 0;
    for (int i = 0; i < nf; i++)
        c += f[i] == 8 ? 7.5 : f[i] == 7 ? 5.5 : f[i] == 2 || f[i] == 4 ? 3.0
             : f[i] <= 5 ? 4.0 : 1.1 * (double)f[i];
    return c * (double)n;
}

/* The length of Bluestein's convolution: the cheapest 2^a 3^b 5^c 7^d >= m below the
 * next power of two, where a length that is not a multiple of 16 costs 1.5x (its last
 * passes, short lines, run one complex number at a time): picked against the measured
 * times of every candidate for m near 1.5e3, 3e3, 1.5e4, 3e4, 1e5, 1.3e5, 1.5e5, 2e5,
 * within 13% of the fastest (the former guess: up to 2.7x). */
static double padded_cost(int64_t n) { return cost_guess(n) * (n % 16 ? 1.5 : 1.0); }

static int64_t good_size(int64_t m) {
    int64_t p2 = 1;
    while (p2 < m) p2 *= 2;
    int64_t best = p2;
    double best_cost = padded_cost(p2);
    for (int64_t a = 1; a <= p2; a *= 7)
        for (int64_t b = a; b <= p2; b *= 5)
            for (int64_t c = b; c <= p2; c *= 3) {
                int64_t x = c;
                while (x < m) x *= 2;
                if (x < p2) {
                    double cost = padded_cost(x);
                    if (cost < best_cost) {
                        best = x;
                        best_cost = cost;
                    }
                }
            }
    return best;
}

static int use_bluestein(int64_t n) {
    int64_t f[64];
    int nf = factorize(n, f);
    int64_t big = 0;
    for (int i = 0; i < nf; i++)
        if (f[i] != 8 && f[i] > big) big = f[i];
    if (big <= 7) return 0;
    if (big > FFT_MAX_GENERIC) return 1;
    return 3.0 * cost_guess(good_size(2 * n - 1)) < cost_guess(n);
}

static void *to_dtype(const double *src, int64_t count, int dtype, size_t *bytes) {
    size_t sz = dtype ? sizeof(double) : sizeof(float);
    void *dst = fft_alloc((size_t)count * sz);
    if (!dst) return NULL;
    *bytes += (size_t)count * sz;
    if (dtype) memcpy(dst, src, (size_t)count * sz);
    else
        for (int64_t i = 0; i < count; i++) ((float *)dst)[i] = (float)src[i];
    return dst;
}

static void plan_free(fft_plan *p) {
    if (!p) return;
    for (int f = 0; f < p->nfct; f++) {
        fft_free(p->tw[f]);
        fft_free(p->roots[f]);
    }
    if (p->sub_f) plan_release(p->sub_f);
    if (p->sub_b) plan_release(p->sub_b);
    if (p->half) plan_release(p->half);
    if (p->hblue) plan_release(p->hblue);
    fft_free(p->bk);
    fft_free(p->bkf);
    fft_free(p->rtw);
    free(p);
}
/* ------------------------------------------- complex vector operations */

#define FFT_INLINE static inline __attribute__((always_inline))

/* scalars: one complex number */
#define SC_OPS(P, TT)                                                                    \
    typedef struct { TT r, i; } P##_t;                                                   \
    FFT_INLINE P##_t P##_ld(const TT *p) { P##_t v = {p[0], p[1]}; return v; }          \
    FFT_INLINE P##_t P##_bc(const TT *p) { P##_t v = {p[0], p[1]}; return v; }          \
    FFT_INLINE void P##_st(TT *p, P##_t v) { p[0] = v.r; p[1] = v.i; }                  \
    FFT_INLINE P##_t P##_add(P##_t a, P##_t b) { P##_t v = {a.r + b.r, a.i + b.i}; return v; } \
    FFT_INLINE P##_t P##_sub(P##_t a, P##_t b) { P##_t v = {a.r - b.r, a.i - b.i}; return v; } \
    FFT_INLINE P##_t P##_mul(P##_t a, P##_t w) {                                         \
        P##_t v = {a.r * w.r - a.i * w.i, a.r * w.i + a.i * w.r}; return v; }            \
    FFT_INLINE P##_t P##_rotp(P##_t a) { P##_t v = {-a.i, a.r}; return v; }             \
    FFT_INLINE P##_t P##_rotm(P##_t a) { P##_t v = {a.i, -a.r}; return v; }             \
    FFT_INLINE P##_t P##_scale(P##_t a, TT s) { P##_t v = {a.r * s, a.i * s}; return v; } \
    FFT_INLINE P##_t P##_conj(P##_t a) { P##_t v = {a.r, -a.i}; return v; }             \
    FFT_INLINE P##_t P##_rev(P##_t a) { return a; }                                      \
    FFT_INLINE P##_t P##_ldg(const TT *p, int64_t s) { (void)s; return P##_ld(p); }     \
    FFT_INLINE void P##_stg(TT *p, int64_t s, P##_t v) { (void)s; P##_st(p, v); }       \
    FFT_INLINE P##_t P##_fma(P##_t a, TT s, P##_t c) {                                   \
        P##_t v = {a.r * s + c.r, a.i * s + c.i}; return v; }
SC_OPS(s32, float)
SC_OPS(s64, double)

/* the generic build: scalar passes only */
#define T float
#define VL 1
#define OPS s32
#define KSUF s32
#include "fft_kern.h"
#define FK_BATCH 1
#undef KSUF
#define KSUF s32b
#include "fft_kern.h"
#undef FK_BATCH
#undef KSUF
#undef OPS
#undef VL
#define DSUF f32
#define KV s32
#define KS s32
#define KVB s32b
#define VLV 1
#define HAVE_T1 0
#define T1_4(...) ((void)0)
#include "fft_drv.h"
#undef T1_4
#undef HAVE_T1
#undef VLV
#undef KS
#undef KVB
#undef KV
#undef DSUF
#undef T

#define T double
#define VL 1
#define OPS s64
#define KSUF s64
#include "fft_kern.h"
#define FK_BATCH 1
#undef KSUF
#define KSUF s64b
#include "fft_kern.h"
#undef FK_BATCH
#undef KSUF
#undef OPS
#undef VL
#define DSUF f64
#define KV s64
#define KS s64
#define KVB s64b
#define VLV 1
#define HAVE_T1 0
#define T1_4(...) ((void)0)
#include "fft_drv.h"
#undef T1_4
#undef HAVE_T1
#undef VLV
#undef KS
#undef KVB
#undef KV
#undef DSUF
#undef T

/* AVX2 + FMA: 4 complex float32 or 2 complex float64 per register */
#pragma GCC push_options
#pragma GCC target("avx2,fma")

typedef __m256 v32_t;
FFT_INLINE v32_t v32_ld(const float *p) { return _mm256_loadu_ps(p); }
FFT_INLINE v32_t v32_bc(const float *p) {  /* one complex number in every lane */
    return _mm256_castpd_ps(_mm256_broadcast_sd((const double *)p));
}
FFT_INLINE void v32_st(float *p, v32_t v) { _mm256_storeu_ps(p, v); }
FFT_INLINE v32_t v32_add(v32_t a, v32_t b) { return _mm256_add_ps(a, b); }
FFT_INLINE v32_t v32_sub(v32_t a, v32_t b) { return _mm256_sub_ps(a, b); }
FFT_INLINE v32_t v32_mul(v32_t a, v32_t w) {
    v32_t wr = _mm256_moveldup_ps(w), wi = _mm256_movehdup_ps(w);
    return _mm256_fmaddsub_ps(a, wr, _mm256_mul_ps(_mm256_permute_ps(a, 0xB1), wi));
}
FFT_INLINE v32_t v32_rotp(v32_t a) {       /* (r, i) -> (-i, r) */
    return _mm256_xor_ps(_mm256_permute_ps(a, 0xB1),
                         _mm256_setr_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f));
}
FFT_INLINE v32_t v32_rotm(v32_t a) {       /* (r, i) -> (i, -r) */
    return _mm256_xor_ps(_mm256_permute_ps(a, 0xB1),
                         _mm256_setr_ps(0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f));
}
FFT_INLINE v32_t v32_rev(v32_t a) {        /* the 4 complex numbers in reverse order */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(a), 0x1B));
}
FFT_INLINE v32_t v32_conj(v32_t a) {
    return _mm256_xor_ps(a, _mm256_setr_ps(0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f));
}
FFT_INLINE v32_t v32_ldg(const float *p, int64_t s) {   /* 4 complex numbers s apart */
    __m128 z = _mm_setzero_ps();
    __m128 lo = _mm_loadh_pi(_mm_loadl_pi(z, (const __m64 *)p), (const __m64 *)(p + s)),
           hi = _mm_loadh_pi(_mm_loadl_pi(z, (const __m64 *)(p + 2 * s)),
                             (const __m64 *)(p + 3 * s));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}
FFT_INLINE void v32_stg(float *p, int64_t s, v32_t v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    _mm_storel_pi((__m64 *)p, lo);
    _mm_storeh_pi((__m64 *)(p + s), lo);
    _mm_storel_pi((__m64 *)(p + 2 * s), hi);
    _mm_storeh_pi((__m64 *)(p + 3 * s), hi);
}
FFT_INLINE v32_t v32_scale(v32_t a, float s) { return _mm256_mul_ps(a, _mm256_set1_ps(s)); }
FFT_INLINE v32_t v32_fma(v32_t a, float s, v32_t c) {
    return _mm256_fmadd_ps(a, _mm256_set1_ps(s), c);
}

typedef __m256d v64_t;
FFT_INLINE v64_t v64_ld(const double *p) { return _mm256_loadu_pd(p); }
FFT_INLINE v64_t v64_bc(const double *p) { return _mm256_broadcast_pd((const __m128d *)p); }
FFT_INLINE void v64_st(double *p, v64_t v) { _mm256_storeu_pd(p, v); }
FFT_INLINE v64_t v64_add(v64_t a, v64_t b) { return _mm256_add_pd(a, b); }
FFT_INLINE v64_t v64_sub(v64_t a, v64_t b) { return _mm256_sub_pd(a, b); }
FFT_INLINE v64_t v64_mul(v64_t a, v64_t w) {
    v64_t wr = _mm256_movedup_pd(w), wi = _mm256_permute_pd(w, 0xF);
    return _mm256_fmaddsub_pd(a, wr, _mm256_mul_pd(_mm256_permute_pd(a, 0x5), wi));
}
FFT_INLINE v64_t v64_rotp(v64_t a) {
    return _mm256_xor_pd(_mm256_permute_pd(a, 0x5), _mm256_setr_pd(-0., 0., -0., 0.));
}
FFT_INLINE v64_t v64_rotm(v64_t a) {
    return _mm256_xor_pd(_mm256_permute_pd(a, 0x5), _mm256_setr_pd(0., -0., 0., -0.));
}
FFT_INLINE v64_t v64_rev(v64_t a) { return _mm256_permute2f128_pd(a, a, 0x01); }
FFT_INLINE v64_t v64_conj(v64_t a) {
    return _mm256_xor_pd(a, _mm256_setr_pd(0., -0., 0., -0.));
}
FFT_INLINE v64_t v64_ldg(const double *p, int64_t s) {
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p)), _mm_loadu_pd(p + s), 1);
}
FFT_INLINE void v64_stg(double *p, int64_t s, v64_t v) {
    _mm_storeu_pd(p, _mm256_castpd256_pd128(v));
    _mm_storeu_pd(p + s, _mm256_extractf128_pd(v, 1));
}
FFT_INLINE v64_t v64_scale(v64_t a, double s) { return _mm256_mul_pd(a, _mm256_set1_pd(s)); }
FFT_INLINE v64_t v64_fma(v64_t a, double s, v64_t c) {
    return _mm256_fmadd_pd(a, _mm256_set1_pd(s), c);
}

#define BF4(fwd, ROTP, ROTM, ADD, SUB, a0, a1, a2, a3)                                  \
    do {                                                                                \
        __typeof__(a0) t1_ = SUB(a0, a2), t2_ = ADD(a0, a2), t3_ = ADD(a1, a3),          \
                       t4_ = (fwd) ? ROTM(SUB(a1, a3)) : ROTP(SUB(a1, a3));              \
        a0 = ADD(t2_, t3_);                                                             \
        a2 = SUB(t2_, t3_);                                                             \
        a1 = ADD(t1_, t4_);                                                             \
        a3 = SUB(t1_, t4_);                                                             \
    } while (0)

/* radix 4 with ido == 1: input (j, k) = cc[j + 4k], output ch[k + l1 j]; vectorised
 * over k by transposing 4 (float) or 2 (double) butterflies' inputs in registers. */
static void t1_4_f32(int64_t l1, const float *restrict cc, float *restrict ch, int fwd) {
    int64_t k = 0;
    for (; k + 4 <= l1; k += 4) {
        const float *c = cc + 8 * k;
        __m256d r0 = _mm256_castps_pd(_mm256_loadu_ps(c)),
                r1 = _mm256_castps_pd(_mm256_loadu_ps(c + 8)),
                r2 = _mm256_castps_pd(_mm256_loadu_ps(c + 16)),
                r3 = _mm256_castps_pd(_mm256_loadu_ps(c + 24));
        __m256d u0 = _mm256_unpacklo_pd(r0, r1), u1 = _mm256_unpackhi_pd(r0, r1),
                u2 = _mm256_unpacklo_pd(r2, r3), u3 = _mm256_unpackhi_pd(r2, r3);
        __m256 a0 = _mm256_castpd_ps(_mm256_permute2f128_pd(u0, u2, 0x20)),
               a2 = _mm256_castpd_ps(_mm256_permute2f128_pd(u0, u2, 0x31)),
               a1 = _mm256_castpd_ps(_mm256_permute2f128_pd(u1, u3, 0x20)),
               a3 = _mm256_castpd_ps(_mm256_permute2f128_pd(u1, u3, 0x31));
        BF4(fwd, v32_rotp, v32_rotm, v32_add, v32_sub, a0, a1, a2, a3);
        _mm256_storeu_ps(ch + 2 * k, a0);
        _mm256_storeu_ps(ch + 2 * (k + l1), a1);
        _mm256_storeu_ps(ch + 2 * (k + 2 * l1), a2);
        _mm256_storeu_ps(ch + 2 * (k + 3 * l1), a3);
    }
    for (; k < l1; k++) {
        const float *c = cc + 8 * k;
        s32_t a0 = s32_ld(c), a1 = s32_ld(c + 2), a2 = s32_ld(c + 4), a3 = s32_ld(c + 6);
        BF4(fwd, s32_rotp, s32_rotm, s32_add, s32_sub, a0, a1, a2, a3);
        s32_st(ch + 2 * k, a0);
        s32_st(ch + 2 * (k + l1), a1);
        s32_st(ch + 2 * (k + 2 * l1), a2);
        s32_st(ch + 2 * (k + 3 * l1), a3);
    }
}

static void t1_4_f64(int64_t l1, const double *restrict cc, double *restrict ch, int fwd) {
    int64_t k = 0;
    for (; k + 2 <= l1; k += 2) {
        const double *c = cc + 8 * k;
        __m256d x01 = _mm256_loadu_pd(c), x23 = _mm256_loadu_pd(c + 4),
                y01 = _mm256_loadu_pd(c + 8), y23 = _mm256_loadu_pd(c + 12);
        __m256d a0 = _mm256_permute2f128_pd(x01, y01, 0x20),
                a1 = _mm256_permute2f128_pd(x01, y01, 0x31),
                a2 = _mm256_permute2f128_pd(x23, y23, 0x20),
                a3 = _mm256_permute2f128_pd(x23, y23, 0x31);
        BF4(fwd, v64_rotp, v64_rotm, v64_add, v64_sub, a0, a1, a2, a3);
        _mm256_storeu_pd(ch + 2 * k, a0);
        _mm256_storeu_pd(ch + 2 * (k + l1), a1);
        _mm256_storeu_pd(ch + 2 * (k + 2 * l1), a2);
        _mm256_storeu_pd(ch + 2 * (k + 3 * l1), a3);
    }
    for (; k < l1; k++) {
        const double *c = cc + 8 * k;
        s64_t a0 = s64_ld(c), a1 = s64_ld(c + 2), a2 = s64_ld(c + 4), a3 = s64_ld(c + 6);
        BF4(fwd, s64_rotp, s64_rotm, s64_add, s64_sub, a0, a1, a2, a3);
        s64_st(ch + 2 * k, a0);
        s64_st(ch + 2 * (k + l1), a1);
        s64_st(ch + 2 * (k + 2 * l1), a2);
        s64_st(ch + 2 * (k + 3 * l1), a3);
    }
}

#define T float
#define VL 4
#define OPS v32
#define KSUF v32
#include "fft_kern.h"
#define FK_BATCH 1
#undef KSUF
#define KSUF v32b
#include "fft_kern.h"
#undef FK_BATCH
#undef KSUF
#undef OPS
#undef VL
#define VL 1
#define OPS s32
#define KSUF s32x
#include "fft_kern.h"
#undef KSUF
#undef OPS
#undef VL
#define DSUF f32x
#define KV v32
#define KS s32x
#define KVB v32b
#define VLV 4
#define HAVE_T1 1
#define T1_4 t1_4_f32
#include "fft_drv.h"
#undef T1_4
#undef HAVE_T1
#undef VLV
#undef KS
#undef KVB
#undef KV
#undef DSUF
#undef T

#define T double
#define VL 2
#define OPS v64
#define KSUF v64
#include "fft_kern.h"
#define FK_BATCH 1
#undef KSUF
#define KSUF v64b
#include "fft_kern.h"
#undef FK_BATCH
#undef KSUF
#undef OPS
#undef VL
#define VL 1
#define OPS s64
#define KSUF s64x
#include "fft_kern.h"
#undef KSUF
#undef OPS
#undef VL
#define DSUF f64x
#define KV v64
#define KS s64x
#define KVB v64b
#define VLV 2
#define HAVE_T1 1
#define T1_4 t1_4_f64
#include "fft_drv.h"
#undef T1_4
#undef HAVE_T1
#undef VLV
#undef KS
#undef KVB
#undef KV
#undef DSUF
#undef T

#pragma GCC pop_options

static int have_avx2 = -1, forced_generic;

static int use_avx2(void) {
    if (have_avx2 < 0) {
        __builtin_cpu_init();
        have_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return have_avx2 && !forced_generic;
}

const char *em_fft_kernel_name(void) { return use_avx2() ? "avx2-fma" : "generic"; }
void em_fft_force_generic(int on) { forced_generic = on != 0; }

/* ------------------------------------------------------------ building plans */

static fft_plan *plan_new(void) {
    fft_plan *p = calloc(1, sizeof(fft_plan));
    if (p) p->bytes = sizeof(fft_plan);
    return p;
}

/* half: a Bluestein plan for the real transforms of odd n, whose convolution need not
 * cover every pair of indices: forward, the outputs k <= n / 2 of a whole line (the
 * differences k - m in [1 - n, n / 2]); backward, every output of a line zero beyond
 * n / 2 (differences in [-n / 2, n - 1]). Either takes n2 >= n + n / 2, about 3/4 of
 * the 2n - 1 of a complex one. */
static fft_plan *build_complex(int64_t n, int dtype, int fwd, int half) {
    fft_plan *p = plan_new();
    if (!p) return NULL;
    p->n = n;
    p->dtype = dtype;
    p->fwd = fwd;
    const double sg = fwd ? -1 : 1;
    if (n > 1 && (half || use_bluestein(n))) {
        const int64_t h = n / 2, n2 = good_size(half ? n + h : 2 * n - 1);
        p->n2 = n2;
        p->sub_f = plan_get(0, n2, dtype, 1);
        p->sub_b = plan_get(0, n2, dtype, 0);
        fft_plan *dsub = plan_get(0, n2, 1, 1);
        double *b = calloc((size_t)n2 * 2, sizeof(double));
        double *bw = malloc((size_t)(dsub ? dsub->work : 0) * 2 * sizeof(double) + 16);
        if (!p->sub_f || !p->sub_b || !dsub || !b || !bw) {
            if (dsub) plan_release(dsub);
            free(b);
            free(bw);
            plan_free(p);
            return NULL;
        }
        p->work = 2 * n2 + (p->sub_f->work > p->sub_b->work ? p->sub_f->work : p->sub_b->work);
        /* chirp bk[m] = exp(sign i pi m^2 / n), with m^2 mod 2n kept exact */
        double *bk = malloc((size_t)n * 2 * sizeof(double));
        if (!bk) {
            plan_release(dsub);
            free(b);
            free(bw);
            plan_free(p);
            return NULL;
        }
        int64_t q = 0;
        for (int64_t m = 0; m < n; m++) {
            double a = M_PI * (double)q / (double)n;
            bk[2 * m] = cos(a);
            bk[2 * m + 1] = sg * sin(a);
            q += 2 * m + 1;
            q %= 2 * n;
        }
        /* b = conj(bk), wrapped (b[-m] = b[m]) over the differences used; bkf = FFT(b)
         * / n2, in double */
        for (int64_t m = 0; m < n; m++) {
            if (!half || !fwd || m <= h) {
                b[2 * m] = bk[2 * m];
                b[2 * m + 1] = -bk[2 * m + 1];
            }
            if (m && (!half || fwd || m <= h)) {
                b[2 * (n2 - m)] = bk[2 * m];
                b[2 * (n2 - m) + 1] = -bk[2 * m + 1];
            }
        }
        double *r = use_avx2() ? exec_f64x(dsub, b, bw) : exec_f64(dsub, b, bw);
        for (int64_t m = 0; m < 2 * n2; m++) r[m] /= (double)n2;
        p->bk = to_dtype(bk, 2 * n, dtype, &p->bytes);
        p->bkf = to_dtype(r, 2 * n2, dtype, &p->bytes);
        plan_release(dsub);
        free(bk);
        free(b);
        free(bw);
        if (!p->bk || !p->bkf) {
            plan_free(p);
            return NULL;
        }
        return p;
    }
    p->nfct = factorize(n, p->fct);
    p->work = n;
    double *w = n > 1 ? unit_roots(n) : NULL;
    if (n > 1 && !w) {
        plan_free(p);
        return NULL;
    }
    int64_t l1 = 1;
    for (int f = 0; f < p->nfct; f++) {
        const int64_t ip = p->fct[f], ido = n / (l1 * ip);
        if (ido > 1) {
            double *t = malloc((size_t)(ip - 1) * ido * 2 * sizeof(double));
            if (!t) break;
            for (int64_t j = 1; j < ip; j++)
                for (int64_t i = 0; i < ido; i++) {
                    int64_t m = (j * l1 * i) % n;
                    t[2 * ((j - 1) * ido + i)] = w[2 * m];
                    t[2 * ((j - 1) * ido + i) + 1] = sg * w[2 * m + 1];
                }
            p->tw[f] = to_dtype(t, 2 * (ip - 1) * ido, dtype, &p->bytes);
            free(t);
            if (!p->tw[f]) break;
        }
        if (ip > 8 || ip == 6) {
            double rt[2 * (FFT_MAX_GENERIC + 1)];
            for (int64_t m = 0; m < ip; m++) {
                rt[2 * m] = w[2 * ((m * (n / ip)) % n)];
                rt[2 * m + 1] = sg * w[2 * ((m * (n / ip)) % n) + 1];
            }
            p->roots[f] = to_dtype(rt, 2 * ip, dtype, &p->bytes);
            if (!p->roots[f]) break;
        }
        l1 *= ip;
    }
    free(w);
    if (l1 != n) {       /* out of memory above */
        plan_free(p);
        return NULL;
    }
    return p;
}

static fft_plan *build_real(int64_t n, int dtype, int fwd) {
    fft_plan *p = plan_new();
    if (!p) return NULL;
    p->kind = 1;
    p->n = n;
    p->dtype = dtype;
    p->fwd = fwd;
    if (n % 2) {
        /* one real pass per prime factor (those <= FFT_RSPLIT_MAX where the complex plan
         * of n is Bluestein's), the rest a leaf (see rodd_fwd in fft_drv.h) */
        int64_t f[64];
        const int nf = factorize(n, f), blue = use_bluestein(n);
        p->leaf = 1;
        for (int i = 0; i < nf; i++)
            if (blue && f[i] > FFT_RSPLIT_MAX) p->leaf *= f[i];
            else p->fct[p->nfct++] = f[i];
        if (!p->nfct) p->leaf = n;           /* a prime, or only large factors */
        const int64_t L0 = p->leaf;
        if (!p->nfct || L0 > 1) {
            /* the leaf lines in pairs by the complex plan, the last alone by the half
             * Bluestein plan where the complex one is Bluestein's */
            p->half = plan_get(0, L0, dtype, fwd);
            if (!p->half || (p->half->n2 && !(p->hblue = plan_get(2, L0, dtype, fwd)))) {
                plan_free(p);
                return NULL;
            }
            p->work = p->half->work;
            if (p->hblue && p->hblue->work > p->work) p->work = p->hblue->work;
            p->work += L0;
        }
        if (p->nfct) p->work += n;
        double *w = p->nfct ? unit_roots(n) : NULL;
        if (p->nfct && !w) {
            plan_free(p);
            return NULL;
        }
        const double sg = fwd ? -1 : 1;
        int64_t L = L0;
        for (int i = 0; i < p->nfct; i++) {
            const int64_t P = p->fct[i], hL = (L - 1) / 2, st = n / (P * L);
            double rt[2 * FFT_MAX_GENERIC];
            for (int64_t e = 0; e < P; e++) {
                rt[2 * e] = w[2 * (e * (n / P))];
                rt[2 * e + 1] = sg * w[2 * (e * (n / P)) + 1];
            }
            p->roots[i] = to_dtype(rt, 2 * P, dtype, &p->bytes);
            if (!p->roots[i]) break;
            if (hL) {           /* W_PL^(rk), r in [1, P), k in [1, hL], r major */
                double *t = malloc((size_t)(P - 1) * hL * 2 * sizeof(double));
                if (!t) break;
                for (int64_t r = 1; r < P; r++)
                    for (int64_t k = 1; k <= hL; k++) {
                        const int64_t e = (r * k) % (P * L) * st,
                                      o = 2 * ((r - 1) * hL + k - 1);
                        t[o] = w[2 * e];
                        t[o + 1] = sg * w[2 * e + 1];
                    }
                p->tw[i] = to_dtype(t, 2 * (P - 1) * hL, dtype, &p->bytes);
                free(t);
                if (!p->tw[i]) break;
            }
            L *= P;
        }
        free(w);
        if (L != n) {        /* out of memory above */
            plan_free(p);
            return NULL;
        }
        return p;
    }
    p->half = plan_get(0, n / 2, dtype, fwd);
    const int64_t q = n / 4 + 1;
    double *t = malloc((size_t)q * 2 * sizeof(double));
    double *w = unit_roots(n);
    if (!p->half || !t || !w) {
        free(t);
        free(w);
        plan_free(p);
        return NULL;
    }
    for (int64_t k = 0; k < q; k++) {
        t[2 * k] = w[2 * k];
        t[2 * k + 1] = -w[2 * k + 1];
    }
    p->rtw = to_dtype(t, 2 * q, dtype, &p->bytes);
    free(t);
    free(w);
    if (!p->rtw) {
        plan_free(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------- the plan cache */

typedef struct {
    fft_plan *plan;
    int kind, dtype, fwd, refs;
    int64_t n;
    uint64_t used;
} cache_entry;

#define FFT_CACHE_MAX 256
static cache_entry cache[FFT_CACHE_MAX];
static int cache_len, cache_cap = 64;
static uint64_t cache_tick;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Plans not in the cache (it was full of plans in use) are freed on release. */
typedef struct {
    fft_plan *plan;
    int refs;
} loose_ref;

static int cache_find(fft_plan *p) {
    for (int i = 0; i < cache_len; i++)
        if (cache[i].plan == p) return i;
    return -1;
}

/* Drop unused entries beyond the capacity, least recently used first; the caller
 * frees what is returned (outside the lock: freeing releases sub-plans). */
static int cache_trim(fft_plan **victims, int max) {
    int nv = 0;
    while (cache_len > cache_cap && nv < max) {
        int best = -1;
        for (int i = 0; i < cache_len; i++)
            if (cache[i].refs == 0 && (best < 0 || cache[i].used < cache[best].used)) best = i;
        if (best < 0) break;
        victims[nv++] = cache[best].plan;
        cache[best] = cache[--cache_len];
    }
    return nv;
}

static void free_victims(fft_plan **v, int nv) {
    for (int i = 0; i < nv; i++) plan_free(v[i]);
}

static fft_plan *plan_get(int kind, int64_t n, int dtype, int fwd) {
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_len; i++) {
        cache_entry *e = &cache[i];
        if (e->n == n && e->kind == kind && e->dtype == dtype && e->fwd == fwd) {
            e->refs++;
            e->used = ++cache_tick;
            fft_plan *p = e->plan;
            pthread_mutex_unlock(&cache_lock);
            return p;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    fft_plan *p = kind == 1 ? build_real(n, dtype, fwd) : build_complex(n, dtype, fwd, kind);
    if (!p) return NULL;
    fft_plan *victims[8];
    int nv = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_len; i++) {        /* built meanwhile by another thread? */
        cache_entry *e = &cache[i];
        if (e->n == n && e->kind == kind && e->dtype == dtype && e->fwd == fwd) {
            e->refs++;
            e->used = ++cache_tick;
            fft_plan *q = e->plan;
            pthread_mutex_unlock(&cache_lock);
            plan_free(p);
            return q;
        }
    }
    if (cache_len < FFT_CACHE_MAX) {
        cache[cache_len++] = (cache_entry){p, kind, dtype, fwd, 1, n, ++cache_tick};
        nv = cache_trim(victims, 8);
    } else {
        p->kind |= 2;     /* not cached: freed on release */
    }
    pthread_mutex_unlock(&cache_lock);
    free_victims(victims, nv);
    return p;
}

static void plan_release(fft_plan *p) {
    if (p->kind & 2) {
        p->kind &= 1;
        plan_free(p);
        return;
    }
    fft_plan *victims[8];
    int nv = 0;
    pthread_mutex_lock(&cache_lock);
    int i = cache_find(p);
    if (i >= 0) {
        cache[i].refs--;
        nv = cache_trim(victims, 8);
    }
    pthread_mutex_unlock(&cache_lock);
    free_victims(victims, nv);
}

int em_fft_cache_size(void) {
    pthread_mutex_lock(&cache_lock);
    int n = cache_len;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

int em_fft_cache_capacity(void) { return cache_cap; }

void em_fft_cache_set_capacity(int capacity) {
    if (capacity < 0) capacity = 0;
    if (capacity > FFT_CACHE_MAX) capacity = FFT_CACHE_MAX;
    fft_plan *victims[FFT_CACHE_MAX];
    pthread_mutex_lock(&cache_lock);
    cache_cap = capacity;
    int nv = cache_trim(victims, FFT_CACHE_MAX);
    pthread_mutex_unlock(&cache_lock);
    free_victims(victims, nv);
}

void em_fft_cache_clear(void) {
    int cap = cache_cap;
    em_fft_cache_set_capacity(0);
    pthread_mutex_lock(&cache_lock);
    cache_cap = cap;
    pthread_mutex_unlock(&cache_lock);
}

/* ------------------------------------------------------------------ entry points */

static int run(int kind, int dtype, const void *in, void *out, int64_t n, int64_t n_in,
               int64_t s_in, int64_t n_out, int64_t s_out, int bdims, const int64_t *bshape,
               const int64_t *bs_in, const int64_t *bs_out, int fwd, double scale) {
    if (n < 1 || bdims < 0 || bdims > EM_FFT_MAXDIM) return -2;
    fft_plan *p = plan_get(kind != 0, n, dtype, fwd);
    if (!p) return -1;
    int rc;
    if (use_avx2())
        rc = dtype ? run_f64x(kind, p, in, out, n, n_in, s_in, n_out, s_out, bdims, bshape,
                              bs_in, bs_out, scale)
                   : run_f32x(kind, p, in, out, n, n_in, s_in, n_out, s_out, bdims, bshape,
                              bs_in, bs_out, scale);
    else
        rc = dtype ? run_f64(kind, p, in, out, n, n_in, s_in, n_out, s_out, bdims, bshape,
                             bs_in, bs_out, scale)
                   : run_f32(kind, p, in, out, n, n_in, s_in, n_out, s_out, bdims, bshape,
                             bs_in, bs_out, scale);
    plan_release(p);
    return rc;
}

int em_fft_c2c(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t s_out, int bdims, const int64_t *bshape, const int64_t *bs_in,
               const int64_t *bs_out, int forward, double scale) {
    return run(0, dtype, in, out, n, n_in, s_in, n, s_out, bdims, bshape, bs_in, bs_out,
               forward != 0, scale);
}

int em_fft_r2c(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t n_out, int64_t s_out, int bdims, const int64_t *bshape,
               const int64_t *bs_in, const int64_t *bs_out, double scale) {
    return run(1, dtype, in, out, n, n_in, s_in, n_out, s_out, bdims, bshape, bs_in, bs_out,
               1, scale);
}

int em_fft_c2r(int dtype, const void *in, void *out, int64_t n, int64_t n_in, int64_t s_in,
               int64_t s_out, int bdims, const int64_t *bshape, const int64_t *bs_in,
               const int64_t *bs_out, double scale) {
    return run(2, dtype, in, out, n, n_in, s_in, n, s_out, bdims, bshape, bs_in, bs_out, 0,
               scale);
}
