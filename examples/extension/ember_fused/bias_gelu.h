/* Fused bias + GELU: y = gelu(x + bias) in one pass over memory instead of three
 * (add, then erf, then the products), and a backward that produces both gradients
 * in one pass too. Plain C over contiguous rows: x is rows x cols, bias has cols. */
#ifndef EMBER_FUSED_BIAS_GELU_H
#define EMBER_FUSED_BIAS_GELU_H
#include <stdint.h>

void bias_gelu_forward_f32(const float *x, const float *bias, float *y,
                           int64_t rows, int64_t cols);
void bias_gelu_forward_f64(const double *x, const double *bias, double *y,
                           int64_t rows, int64_t cols);
/* dx = grad * gelu'(x + bias); dbias = dx summed over the rows. */
void bias_gelu_backward_f32(const float *grad, const float *x, const float *bias,
                            float *dx, float *dbias, int64_t rows, int64_t cols);
void bias_gelu_backward_f64(const double *grad, const double *x, const double *bias,
                            double *dx, double *dbias, int64_t rows, int64_t cols);
#endif
