/* dropout: y = keep ? x * scale : 0 with a fresh Philox mask, and its backward.
 *
 * Element i of a call with generator position (seed, offset) uses stream word
 * w = w[offset + i] (random.c's stream) and is dropped when its float32 uniform
 * u = (w >> 8) * 2^-24 is below p (p rounded to float32): exactly the draw of
 * ember.rand(n) < p, on every device, whatever the dtype. Since u is a multiple of
 * 2^-24, "u < p" is the integer test (w >> 8) < ceil(p * 2^24).
 *
 * The words come 8 Philox blocks at a time: with AVX2, one block per 32-bit lane
 * (the compilers do not vectorise the 32x32->64 bit multiplies of random.c's
 * one-block em_philox4x32_10, which computes the same function); without it, a
 * portable loop over the lanes. Chunks of the array go to the thread pool; every
 * element depends only on its position, so threads do not change the result.
 * The CUDA and OpenCL backends implement the same entry points. */
#include "ember_c_types.h"
#include "threads.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define LANES 8
#define CHUNK 4096          /* elements per task: a multiple of 4 words */
#define M0 0xD2511F53u
#define M1 0xCD9E8D57u
#define W0 0x9E3779B9u
#define W1 0xBB67AE85u

/* words [4 * b0, 4 * (b0 + nb)) of the stream of `seed` into out */
static void philox_blocks_portable(uint64_t seed, uint64_t b0, int64_t nb, uint32_t *out) {
    for (int64_t j0 = 0; j0 < nb; j0 += LANES) {
        uint32_t c0[LANES], c1[LANES], c2[LANES], c3[LANES];
        for (int k = 0; k < LANES; k++) {
            uint64_t b = b0 + (uint64_t)(j0 + k);
            c0[k] = (uint32_t)b;
            c1[k] = (uint32_t)(b >> 32);
            c2[k] = 0;
            c3[k] = 0;
        }
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            for (int k = 0; k < LANES; k++) {
                uint64_t p0 = (uint64_t)M0 * c0[k], p1 = (uint64_t)M1 * c2[k];
                uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[k] ^ k0;
                uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[k] ^ k1;
                c1[k] = (uint32_t)p1;
                c3[k] = (uint32_t)p0;
                c0[k] = n0;
                c2[k] = n2;
            }
            k0 += W0;
            k1 += W1;
        }
        int64_t m = nb - j0 < LANES ? nb - j0 : LANES;
        for (int k = 0; k < m; k++) {
            uint32_t *o = out + 4 * (j0 + k);
            o[0] = c0[k]; o[1] = c1[k]; o[2] = c2[k]; o[3] = c3[k];
        }
    }
}

#ifdef HAVE_X86
/* hi and lo 32 bits of the eight products a[k] * m */
__attribute__((target("avx2"))) static inline void mulhilo(__m256i a, __m256i m, __m256i *hi,
                                                           __m256i *lo) {
    __m256i even = _mm256_mul_epu32(a, m);                          /* lanes 0, 2, 4, 6 */
    __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);    /* lanes 1, 3, 5, 7 */
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

__attribute__((target("avx2"))) static void philox_blocks_avx2(uint64_t seed, uint64_t b0,
                                                               int64_t nb, uint32_t *out) {
    const __m256i m0 = _mm256_set1_epi32((int)M0), m1 = _mm256_set1_epi32((int)M1);
    for (int64_t j0 = 0; j0 < nb; j0 += 8) {
        uint32_t lo[8], hi[8];
        for (int k = 0; k < 8; k++) {
            uint64_t b = b0 + (uint64_t)(j0 + k);
            lo[k] = (uint32_t)b;
            hi[k] = (uint32_t)(b >> 32);
        }
        __m256i c0 = _mm256_loadu_si256((const __m256i *)lo);
        __m256i c1 = _mm256_loadu_si256((const __m256i *)hi);
        __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            __m256i h0, l0, h1, l1;
            mulhilo(c0, m0, &h0, &l0);
            mulhilo(c2, m1, &h1, &l1);
            c0 = _mm256_xor_si256(_mm256_xor_si256(h1, c1), _mm256_set1_epi32((int)k0));
            c2 = _mm256_xor_si256(_mm256_xor_si256(h0, c3), _mm256_set1_epi32((int)k1));
            c1 = l1;
            c3 = l0;
            k0 += W0;
            k1 += W1;
        }
        /* transpose to the stream's order: block k's words c0..c3 side by side */
        __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpacklo_epi32(c2, c3);
        __m256i t2 = _mm256_unpackhi_epi32(c0, c1), t3 = _mm256_unpackhi_epi32(c2, c3);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
        __m256i u2 = _mm256_unpacklo_epi64(t2, t3), u3 = _mm256_unpackhi_epi64(t2, t3);
        __m256i o[4] = {_mm256_permute2x128_si256(u0, u1, 0x20),    /* blocks 0, 1 */
                        _mm256_permute2x128_si256(u2, u3, 0x20),    /* blocks 2, 3 */
                        _mm256_permute2x128_si256(u0, u1, 0x31),    /* blocks 4, 5 */
                        _mm256_permute2x128_si256(u2, u3, 0x31)};   /* blocks 6, 7 */
        if (nb - j0 >= 8) {
            for (int q = 0; q < 4; q++)
                _mm256_storeu_si256((__m256i *)(out + 4 * j0 + 8 * q), o[q]);
        } else {
            uint32_t tmp[32];
            for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(tmp + 8 * q), o[q]);
            for (int64_t i = 0; i < 4 * (nb - j0); i++) out[4 * j0 + i] = tmp[i];
        }
    }
}
#endif

static void philox_blocks(uint64_t seed, uint64_t b0, int64_t nb, uint32_t *out) {
#ifdef HAVE_X86
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2");
    if (avx2) {
        philox_blocks_avx2(seed, b0, nb, out);
        return;
    }
#endif
    philox_blocks_portable(seed, b0, nb, out);
}

#define DROPOUT(SFX, T)                                                                 \
    typedef struct {                                                                    \
        const T *x;                                                                     \
        T *y;                                                                           \
        uint8_t *mask;                                                                  \
        int64_t n;                                                                      \
        uint32_t thr;                                                                   \
        T scale;                                                                        \
        uint64_t seed, offset;                                                          \
    } do_ctx_##SFX;                                                                     \
                                                                                        \
    EM_CLONES static void do_chunks_##SFX(void *ctx, int64_t c0, int64_t c1) {           \
        const do_ctx_##SFX *c = ctx;                                                    \
        uint32_t words[CHUNK + 32];                                                      \
        for (int64_t ch = c0; ch < c1; ch++) {                                          \
            const int64_t i0 = ch * CHUNK;                                              \
            const int64_t m = c->n - i0 < CHUNK ? c->n - i0 : CHUNK;                    \
            const uint64_t p0 = c->offset + (uint64_t)i0;   /* first word */            \
            const uint64_t b0 = p0 >> 2, b1 = (p0 + (uint64_t)m + 3) >> 2;              \
            philox_blocks(c->seed, b0, (int64_t)(b1 - b0), words);                      \
            const uint32_t *restrict wd = words + (p0 & 3);                             \
            const T *restrict x = c->x + i0;                                            \
            T *restrict y = c->y + i0;                                                  \
            uint8_t *restrict mk = c->mask + i0;                                        \
            const uint32_t thr = c->thr;                                                \
            const T scale = c->scale;                                                   \
            for (int64_t i = 0; i < m; i++) {                                           \
                uint8_t keep = (wd[i] >> 8) >= thr;                                     \
                mk[i] = keep;                                                           \
                y[i] = keep ? x[i] * scale : 0;                                         \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
                                                                                        \
    void em_dropout_##SFX(const T *x, T *y, uint8_t *mask, int64_t n, double p,          \
                          uint64_t seed, uint64_t offset) {                             \
        double pf = (float)p;                                                           \
        do_ctx_##SFX c = {x, y, mask, n, (uint32_t)ceil(pf * 16777216.0),               \
                          (T)(p < 1 ? 1 / (1 - p) : 0), seed, offset};                  \
        em_parallel_for((n + CHUNK - 1) / CHUNK, 4, do_chunks_##SFX, &c);               \
    }                                                                                   \
                                                                                        \
    typedef struct { const T *g; const uint8_t *mask; T *dx; T scale; } dob_ctx_##SFX;  \
                                                                                        \
    EM_CLONES static void dob_range_##SFX(void *ctx, int64_t i0, int64_t i1) {           \
        const dob_ctx_##SFX *c = ctx;                                                   \
        const T *restrict g = c->g;                                                     \
        const uint8_t *restrict mk = c->mask;                                           \
        T *restrict dx = c->dx;                                                         \
        const T scale = c->scale;                                                       \
        for (int64_t i = i0; i < i1; i++) dx[i] = mk[i] ? g[i] * scale : 0;             \
    }                                                                                   \
                                                                                        \
    /* dx = g * mask * scale */                                                         \
    void em_dropout_backward_##SFX(const T *g, const uint8_t *mask, T *dx, int64_t n,    \
                                   double scale) {                                      \
        dob_ctx_##SFX c = {g, mask, dx, (T)scale};                                      \
        em_parallel_for(n, 1 << 16, dob_range_##SFX, &c);                               \
    }

DROPOUT(f32, float)
DROPOUT(f64, double)
