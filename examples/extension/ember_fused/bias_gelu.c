/* Exact GELU, as ember.nn.functional.gelu's default:
 *   gelu(z)  = z * Phi(z),            Phi(z) = erfc(-z / sqrt 2) / 2
 *   gelu'(z) = Phi(z) + z * phi(z),   phi(z) = exp(-z^2 / 2) / sqrt(2 pi)
 * float64 uses libm. float32 uses inline exp and erfc below, written without calls or
 * branches so that gcc -O3 vectorises the loops (libm's erff/expf are scalar calls and
 * would make the fused op slower than ember's unfused, vectorised ops). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "bias_gelu.h"

/* On x86-64, an AVX2 copy of each loop besides the baseline SSE2 one, picked when
 * the module loads (8 floats a step instead of 4). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* exp(x) in float32, relative error < 2e-7: x = k ln2 + r with |r| <= ln2 / 2,
 * exp(r) by its Taylor polynomial, 2^k by writing the exponent bits. */
static inline float exp_f32(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;   /* round to nearest */
    float r = x - k * 0.693145751953125f - k * 1.428606765330187e-06f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f
              + r * (8.3333338e-3f + r * 1.3888889e-3f)))));
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* erfc(a) for a >= 0, relative error < 1.2e-7 everywhere (Numerical Recipes' erfcc,
 * a Chebyshev fit): accurate in the tail, where 1 - erf(a) would cancel. */
static inline float erfc_pos_f32(float a) {
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
              + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f
              + t * (-0.82215223f + t * 0.17087277f))))))));
    return t * exp_f32(-a * a + q);
}

static inline float phi_cdf_f32(float z) {
    float a = z * (float)INV_SQRT2;
    float half_tail = 0.5f * erfc_pos_f32(fabsf(a));    /* Phi(-|z|) */
    return z < 0.0f ? half_tail : 1.0f - half_tail;
}

static inline float phi_pdf_f32(float z) {
    return (float)INV_SQRT_2PI * exp_f32(-0.5f * z * z);
}

static inline double phi_cdf_f64(double z) {
    return 0.5 * erfc(-z * INV_SQRT2);
}

static inline double phi_pdf_f64(double z) {
    return INV_SQRT_2PI * exp(-0.5 * z * z);
}

#define BIAS_GELU(T, SUFFIX)                                                              \
CLONES void bias_gelu_forward_##SUFFIX(const T *x, const T *bias, T *y,                         \
                                int64_t rows, int64_t cols) {                            \
    for (int64_t i = 0; i < rows; i++) {                                                  \
        const T *restrict xr = x + i * cols;                                              \
        T *restrict yr = y + i * cols;                                                    \
        for (int64_t j = 0; j < cols; j++) {                                              \
            T z = xr[j] + bias[j];                                                        \
            yr[j] = z * phi_cdf_##SUFFIX(z);                                              \
        }                                                                                 \
    }                                                                                     \
}                                                                                         \
CLONES void bias_gelu_backward_##SUFFIX(const T *grad, const T *x, const T *bias, T *dx,        \
                                 T *dbias, int64_t rows, int64_t cols) {                 \
    memset(dbias, 0, (size_t)cols * sizeof(T));                                           \
    for (int64_t i = 0; i < rows; i++) {                                                  \
        const T *restrict xr = x + i * cols, *restrict gr = grad + i * cols;              \
        T *restrict dr = dx + i * cols;                                                   \
        for (int64_t j = 0; j < cols; j++) {                                              \
            T z = xr[j] + bias[j];                                                        \
            T d = gr[j] * (phi_cdf_##SUFFIX(z) + z * phi_pdf_##SUFFIX(z));                \
            dr[j] = d;                                                                    \
            dbias[j] += d;                                                                \
        }                                                                                 \
    }                                                                                     \
}

BIAS_GELU(float, f32)
BIAS_GELU(double, f64)
