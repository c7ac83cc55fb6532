/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
 *
 * The stream of a generator (seed, offset) is the sequence of 32-bit words
 * w[p] = philox(ctr = {lo(p/4), hi(p/4), 0, 0}, key = {lo(seed), hi(seed)})[p % 4].
 * Each distribution documents which words element i uses, so the CUDA and OpenCL
 * kernels compute the same numbers independently per element:
 *   uniform float32/float16: 1 word  (w[off+i] >> 8) * 2^-24 in [0, 1)
 *   uniform float64:         2 words (w[off+2i] << 21 | w[off+2i+1] >> 11) * 2^-53
 *   normal (Box-Muller, cos branch): 2 words (float32) or 4 words (float64) per element
 *   integers in [low, low+range): 1 word (range <= 2^32, w*range >> 32) else 2 words
 *   randperm: Fisher-Yates, word k decides the swap of position n-1-k.
 */
#include <math.h>
#include "ember_cpu.h"

#define M0 0xD2511F53u
#define M1 0xCD9E8D57u
#define W0 0x9E3779B9u
#define W1 0xBB67AE85u

void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)M0 * c0, p1 = (uint64_t)M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += W0;
        k1 += W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Words [pos, pos + n) of the stream, generated a block at a time. */
typedef struct { uint32_t key[2]; uint64_t block; uint32_t words[4]; int have; } stream;

static void stream_init(stream *s, uint64_t seed) {
    s->key[0] = (uint32_t)seed;
    s->key[1] = (uint32_t)(seed >> 32);
    s->have = 0;
}

static inline uint32_t word_at(stream *s, uint64_t pos) {
    uint64_t b = pos >> 2;
    if (!s->have || s->block != b) {
        uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0};
        em_philox4x32_10(ctr, s->key, s->words);
        s->block = b;
        s->have = 1;
    }
    return s->words[pos & 3];
}

static inline float u24(uint32_t w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }
static inline double u53(uint32_t hi, uint32_t lo) {
    return (double)(((uint64_t)hi << 21) | (lo >> 11)) * (1.0 / 9007199254740992.0);
}

void em_random_uniform(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                       double low, double high) {
    stream s;
    stream_init(&s, seed);
    if (dtype == EM_FLOAT64) {
        double *o = (double *)out;
        for (int64_t i = 0; i < n; i++) {
            uint64_t p = offset + 2 * (uint64_t)i;
            o[i] = low + (high - low) * u53(word_at(&s, p), word_at(&s, p + 1));
        }
    } else if (dtype == EM_FLOAT32) {
        float *o = (float *)out, lo = (float)low, span = (float)(high - low);
        for (int64_t i = 0; i < n; i++) o[i] = lo + span * u24(word_at(&s, offset + i));
    } else { /* float16 */
        _Float16 *o = (_Float16 *)out;
        float lo = (float)low, span = (float)(high - low);
        for (int64_t i = 0; i < n; i++) o[i] = (_Float16)(lo + span * u24(word_at(&s, offset + i)));
    }
}

void em_random_normal(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                      double mean, double std) {
    stream s;
    stream_init(&s, seed);
    const double two_pi = 6.283185307179586;
    for (int64_t i = 0; i < n; i++) {
        double z;
        if (dtype == EM_FLOAT64) {
            uint64_t p = offset + 4 * (uint64_t)i;
            double u1 = 1.0 - u53(word_at(&s, p), word_at(&s, p + 1)); /* (0, 1] */
            double u2 = u53(word_at(&s, p + 2), word_at(&s, p + 3));
            z = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
        } else {
            uint64_t p = offset + 2 * (uint64_t)i;
            float u1 = 1.0f - u24(word_at(&s, p));
            float u2 = u24(word_at(&s, p + 1));
            z = sqrtf(-2.0f * logf(u1)) * cosf((float)two_pi * u2);
        }
        z = mean + std * z;
        if (dtype == EM_FLOAT64) ((double *)out)[i] = z;
        else if (dtype == EM_FLOAT32) ((float *)out)[i] = (float)z;
        else ((_Float16 *)out)[i] = (_Float16)z;
    }
}

void em_random_int(int dtype, char *out, int64_t n, uint64_t seed, uint64_t offset,
                   int64_t low, uint64_t range) {
    stream s;
    stream_init(&s, seed);
    int wide = range > ((uint64_t)1 << 32);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r;
        if (wide) {
            uint64_t p = offset + 2 * (uint64_t)i;
            uint64_t v = ((uint64_t)word_at(&s, p) << 32) | word_at(&s, p + 1);
            r = (uint64_t)(((unsigned __int128)v * range) >> 64);
        } else {
            r = ((uint64_t)word_at(&s, offset + i) * range) >> 32;
        }
        int64_t v = low + (int64_t)r;
        switch (dtype) {
        case EM_BOOL: case EM_UINT8: ((uint8_t *)out)[i] = (uint8_t)v; break;
        case EM_INT8: ((int8_t *)out)[i] = (int8_t)v; break;
        case EM_INT16: ((int16_t *)out)[i] = (int16_t)v; break;
        case EM_INT32: ((int32_t *)out)[i] = (int32_t)v; break;
        case EM_INT64: case EM_UINT64: ((int64_t *)out)[i] = v; break;
        case EM_UINT16: ((uint16_t *)out)[i] = (uint16_t)v; break;
        case EM_UINT32: ((uint32_t *)out)[i] = (uint32_t)v; break;
        case EM_FLOAT16: ((_Float16 *)out)[i] = (_Float16)v; break;
        case EM_FLOAT32: ((float *)out)[i] = (float)v; break;
        default: ((double *)out)[i] = (double)v; break;
        }
    }
}

void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset) {
    stream s;
    stream_init(&s, seed);
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        uint64_t k = (uint64_t)(n - 1 - i);
        uint64_t j;
        if ((uint64_t)i < ((uint64_t)1 << 32)) {
            j = ((uint64_t)word_at(&s, offset + k) * (uint64_t)(i + 1)) >> 32;
        } else {
            uint64_t v = ((uint64_t)word_at(&s, offset + 2 * k) << 32) | word_at(&s, offset + 2 * k + 1);
            j = (uint64_t)(((unsigned __int128)v * (uint64_t)(i + 1)) >> 64);
        }
        int64_t t = out[i]; out[i] = out[j]; out[j] = t;
    }
}
