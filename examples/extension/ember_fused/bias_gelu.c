/* Exact GELU (with erf, as ember.nn.functional.gelu's default):
 *   gelu(z)  = z * Phi(z),            Phi(z) = (1 + erf(z / sqrt 2)) / 2
 *   gelu'(z) = Phi(z) + z * phi(z),   phi(z) = exp(-z^2 / 2) / sqrt(2 pi)
 * One body per direction, stamped out for float and double. */
#include <math.h>
#include <string.h>
#include "bias_gelu.h"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

#define BIAS_GELU(T, SUFFIX, ERF, EXP)                                                    \
void bias_gelu_forward_##SUFFIX(const T *x, const T *bias, T *y,                         \
                                int64_t rows, int64_t cols) {                            \
    for (int64_t i = 0; i < rows; i++) {                                                  \
        const T *xr = x + i * cols;                                                       \
        T *yr = y + i * cols;                                                             \
        for (int64_t j = 0; j < cols; j++) {                                              \
            T z = xr[j] + bias[j];                                                        \
            yr[j] = (T)0.5 * z * ((T)1 + ERF(z * (T)INV_SQRT2));                          \
        }                                                                                 \
    }                                                                                     \
}                                                                                         \
void bias_gelu_backward_##SUFFIX(const T *grad, const T *x, const T *bias, T *dx,        \
                                 T *dbias, int64_t rows, int64_t cols) {                 \
    memset(dbias, 0, (size_t)cols * sizeof(T));                                           \
    for (int64_t i = 0; i < rows; i++) {                                                  \
        const T *xr = x + i * cols, *gr = grad + i * cols;                                \
        T *dr = dx + i * cols;                                                            \
        for (int64_t j = 0; j < cols; j++) {                                              \
            T z = xr[j] + bias[j];                                                        \
            T cdf = (T)0.5 * ((T)1 + ERF(z * (T)INV_SQRT2));                              \
            T pdf = (T)INV_SQRT_2PI * EXP((T)-0.5 * z * z);                               \
            T d = gr[j] * (cdf + z * pdf);                                                \
            dr[j] = d;                                                                    \
            dbias[j] += d;                                                                \
        }                                                                                 \
    }                                                                                     \
}

BIAS_GELU(float, f32, erff, expf)
BIAS_GELU(double, f64, erf, exp)
