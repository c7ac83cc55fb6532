/* ember's CPU 2-d convolution over contiguous NCHW tensors (conv1d is conv2d with
 * H = 1; conv_transpose2d is conv2d's input gradient).
 *
 *   x  (n, c, h, w)              input
 *   w  (oc, c / groups, kh, kw)  weight
 *   y  (n, oc, oh, ow)           output
 *
 * y[n, o, i, j] = bias[o] + sum_{ci, a, b} w[o, ci, a, b] *
 *                 x[n, g * c/groups + ci, i * sh - ph + a * dh, j * sw - pw + b * dw]
 * with g = o / (oc / groups) and x zero outside the image. ph and pw are the top and
 * left padding; the bottom and right padding follow from oh and ow, so asymmetric
 * padding ('same' with an even kernel) needs nothing else.
 *
 * Every function returns 0, or EM_GEMM_ENOMEM (gemm.h) when a buffer could not be
 * allocated; the caller validates shapes first. The CUDA and OpenCL backends provide
 * the same three kernels (ember._C.conv names them conv2d_forward,
 * conv2d_backward_input and conv2d_backward_weight).
 */
#ifndef EMBER_CONV_H
#define EMBER_CONV_H
#include <stdint.h>

typedef struct em_conv_params {
    int64_t n, c, h, w;     /* input: batch, channels, height, width */
    int64_t oc, kh, kw;     /* weight: (oc, c / groups, kh, kw) */
    int64_t oh, ow;         /* output height and width */
    int64_t sh, sw;         /* stride */
    int64_t ph, pw;         /* padding at the top and at the left */
    int64_t dh, dw;         /* dilation */
    int64_t groups;
} em_conv_params;

/* y = conv2d(x, w) + bias (bias may be NULL); y is written, not read. */
int em_conv2d_forward_f32(const em_conv_params *p, const float *x, const float *w,
                          const float *bias, float *y);
int em_conv2d_forward_f64(const em_conv_params *p, const double *x, const double *w,
                          const double *bias, double *y);


/* gx (n, c, h, w) = the gradient of conv2d w.r.t. its input, given gy (n, oc, oh, ow),
 * plus bias[c] when bias is not NULL: this is conv_transpose2d(gy, w, bias). */
int em_conv2d_backward_input_f32(const em_conv_params *p, const float *gy, const float *w,
                                 const float *bias, float *gx);
int em_conv2d_backward_input_f64(const em_conv_params *p, const double *gy, const double *w,
                                 const double *bias, double *gx);

/* gw (oc, c / groups, kh, kw) = the gradient of conv2d w.r.t. its weight. */
int em_conv2d_backward_weight_f32(const em_conv_params *p, const float *x, const float *gy,
                                  float *gw);
int em_conv2d_backward_weight_f64(const em_conv_params *p, const double *x, const double *gy,
                                  double *gw);

/* The same three over channels_last (NHWC) activations: x (n, h, w, c), y and gy
 * (n, oh, ow, oc), gx (n, h, w, c) contiguous, and the weight and gw as
 * (oc, kh, kw, c / groups) ("OHWI", a channels_last weight's storage). */
int em_conv2d_forward_nhwc_f32(const em_conv_params *p, const float *x, const float *w,
                               const float *bias, float *y);
int em_conv2d_forward_nhwc_f64(const em_conv_params *p, const double *x, const double *w,
                               const double *bias, double *y);
int em_conv2d_backward_input_nhwc_f32(const em_conv_params *p, const float *gy,
                                      const float *w, const float *bias, float *gx);
int em_conv2d_backward_input_nhwc_f64(const em_conv_params *p, const double *gy,
                                      const double *w, const double *bias, double *gx);
int em_conv2d_backward_weight_nhwc_f32(const em_conv_params *p, const float *x,
                                       const float *gy, float *gw);
int em_conv2d_backward_weight_nhwc_f64(const em_conv_params *p, const double *x,
                                       const double *gy, double *gw);

/* bfloat16 (the bits, uint16_t): the same six, float32 accumulation, every result
 * rounded once (conv_bf16.c). */
int em_conv2d_forward_bf16(const em_conv_params *p, const uint16_t *x, const uint16_t *w,
                           const uint16_t *bias, uint16_t *y);
int em_conv2d_backward_input_bf16(const em_conv_params *p, const uint16_t *gy,
                                  const uint16_t *w, const uint16_t *bias, uint16_t *gx);
int em_conv2d_backward_weight_bf16(const em_conv_params *p, const uint16_t *x,
                                   const uint16_t *gy, uint16_t *gw);
int em_conv2d_forward_nhwc_bf16(const em_conv_params *p, const uint16_t *x, const uint16_t *w,
                                const uint16_t *bias, uint16_t *y);
int em_conv2d_backward_input_nhwc_bf16(const em_conv_params *p, const uint16_t *gy,
                                       const uint16_t *w, const uint16_t *bias, uint16_t *gx);
int em_conv2d_backward_weight_nhwc_bf16(const em_conv_params *p, const uint16_t *x,
                                        const uint16_t *gy, uint16_t *gw);

/* The forward's algorithm: 0 = chosen per shape, 1 = always im2col + GEMM, 2 = always
 * the direct kernel (tests and benchmarks); 1 also keeps a stride-1 grad_input on
 * GEMM + col2im (bfloat16: not as a forward). */
void em_conv_set_path(int path);
#endif
