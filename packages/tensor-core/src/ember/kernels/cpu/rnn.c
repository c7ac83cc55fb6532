/* The LSTM cell's pointwise part, forward and backward, over contiguous rows.
 *
 * gates (B, 4H) are the pre-activations x W_ih^T + b_ih + h W_hh^T + b_hh in
 * PyTorch's order (input, forget, cell, output); c (B, H) the previous cell state.
 * The forward writes hc (B, 2H) = [h' | c'] with
 *   c' = sigmoid(f) c + sigmoid(i) tanh(g),   h' = sigmoid(o) tanh(c'),
 * one pass instead of the ten ops of the composed cell. The backward takes
 * ghc = [dh' | dc'] and gives dgates (B, 4H) and dc (B, H), recomputing the gate
 * activations from the saved pre-activations (cheaper than storing them).
 * float32 uses the op table's own sigmoid (1 / (1 + exp(-x))) and tanh helpers
 * (ember_scalar.h), vectorised; float64 the C library's. The CUDA and OpenCL
 * backends compose the same cell from ember ops (backends/gpu/rnn.py). */
#include "ember_cpu.h"
#include "ember_c_types.h"

#define CELL_LOOPS(SUFFIX, ATTR, T, EXP, TANH)                                          \
    ATTR static void fwd_##SUFFIX(const T *restrict gates, const T *restrict c,           \
                                  T *restrict hc, int64_t B, int64_t H) {                \
        for (int64_t r = 0; r < B; r++, gates += 4 * H, c += H, hc += 2 * H) {          \
            const T *gi = gates, *gf = gates + H, *gg = gates + 2 * H, *go = gates + 3 * H; \
            T *h = hc, *cn = hc + H;                                                    \
            for (int64_t j = 0; j < H; j++) {                                           \
                T i = 1 / (1 + EXP(-gi[j])), f = 1 / (1 + EXP(-gf[j]));                 \
                T o = 1 / (1 + EXP(-go[j])), g = TANH(gg[j]);                           \
                T cj = f * c[j] + i * g;                                                \
                cn[j] = cj;                                                             \
                h[j] = o * TANH(cj);                                                    \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    ATTR static void bwd_##SUFFIX(const T *restrict ghc, const T *restrict gates,         \
                                  const T *restrict c, const T *restrict hc,             \
                                  T *restrict dgates, T *restrict dc, int64_t B,         \
                                  int64_t H) {                                           \
        for (int64_t r = 0; r < B; r++, ghc += 2 * H, gates += 4 * H, c += H, hc += 2 * H, \
                     dgates += 4 * H, dc += H) {                                         \
            const T *gi = gates, *gf = gates + H, *gg = gates + 2 * H, *go = gates + 3 * H; \
            for (int64_t j = 0; j < H; j++) {                                           \
                T i = 1 / (1 + EXP(-gi[j])), f = 1 / (1 + EXP(-gf[j]));                 \
                T o = 1 / (1 + EXP(-go[j])), g = TANH(gg[j]);                           \
                T tc = TANH(hc[H + j]), dh = ghc[j];                                    \
                T dcj = ghc[H + j] + dh * o * (1 - tc * tc);                            \
                dgates[j] = dcj * g * i * (1 - i);                                      \
                dgates[H + j] = dcj * c[j] * f * (1 - f);                               \
                dgates[2 * H + j] = dcj * i * (1 - g * g);                              \
                dgates[3 * H + j] = dh * tc * o * (1 - o);                              \
                dc[j] = dcj * f;                                                        \
            }                                                                           \
        }                                                                               \
    }

#ifdef EM_F32_AVX2       /* the exp and tanh polynomials are chains of multiply-adds */
CELL_LOOPS(f32_avx2, EM_AVX2_FMA, float, em_exp_float32, em_tanh_float32)
#endif
CELL_LOOPS(f32, , float, em_exp_float32, em_tanh_float32)
CELL_LOOPS(f64, , double, exp, tanh)

void em_lstm_cell_f32(const float *gates, const float *c, float *hc, int64_t B, int64_t H) {
    EM_F32(fwd)(gates, c, hc, B, H);
}

void em_lstm_cell_f64(const double *gates, const double *c, double *hc, int64_t B,
                      int64_t H) {
    fwd_f64(gates, c, hc, B, H);
}

void em_lstm_cell_backward_f32(const float *ghc, const float *gates, const float *c,
                               const float *hc, float *dgates, float *dc, int64_t B,
                               int64_t H) {
    EM_F32(bwd)(ghc, gates, c, hc, dgates, dc, B, H);
}

void em_lstm_cell_backward_f64(const double *ghc, const double *gates, const double *c,
                               const double *hc, double *dgates, double *dc, int64_t B,
                               int64_t H) {
    bwd_f64(ghc, gates, c, hc, dgates, dc, B, H);
}
