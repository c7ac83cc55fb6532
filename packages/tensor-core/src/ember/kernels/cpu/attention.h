/* Fused scaled-dot-product attention (attention.c): the arguments of both entry
 * points. Offsets and strides in elements; see attention.c for the layouts. */
#ifndef EMBER_ATTENTION_H
#define EMBER_ATTENTION_H
#include <stdint.h>

typedef struct {
    int64_t N, L, S, E, Ev;
    const void *q, *k, *v, *mask;
    const int64_t *qoff, *koff, *voff, *moff;
    int64_t qrs, qcs, krs, kcs, vrs, vcs, mrs, mcs;
    int causal;
    double scale;
    void *out, *lse;
    const void *dout;
    void *dq, *dk, *dv;
    int err;
} em_sdpa_args;

/* 0, or EM_GEMM_ENOMEM when a buffer could not be allocated. dtype: EM_FLOAT32 or
 * EM_FLOAT64. */
int em_sdpa_forward(int dtype, em_sdpa_args *a);
int em_sdpa_backward(int dtype, em_sdpa_args *a);
#endif
