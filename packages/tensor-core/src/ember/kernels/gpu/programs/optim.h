// dtypes: float16 bfloat16 float32 float64
/* The optimizers', GradScaler's and gradient clipping's per-tensor steps on a device, one
 * launch each where the composed forms take 3 to ~10 op-table launches
 * (backends/gpu/optim.py; the CPU's are ember/_C/foreach.pyx's adam_, sgd_ and
 * non_finite_check_and_unscale, whose arithmetic these repeat op for op). Every buffer
 * is dense from its element offset. */
#include "../group_reduce.h"

/* out[o0] = sum of x^2 over n elements, accumulated in the compute type by one
 * work-group (clip_grad_norm_'s per-gradient squared 2-norms, into one buffer) */
EM_KERNEL void EM_NAME(sumsq_into)(em_int64 n, EM_GLOBAL const EM_T *x, em_int64 x0,
                                   EM_GLOBAL EM_CT *out, em_int64 o0) {
    EM_LOCAL EM_CT buf[256];
    EM_CT s = 0;
    for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
        const EM_CT v = EM_LD(x, x0 + k);
        s += v * v;
    }
    s = EM_NAME(group_sum)(buf, s);
    if (EM_LID() == 0) out[o0] = s;
}

/* g *= inv[i0]; found[f0] = 1 when any g was inf or NaN (only ever 1 is written, so the
 * work-items' stores race harmlessly; no host read) */
EM_KERNEL void EM_NAME(amp_unscale)(em_int64 n, EM_GLOBAL EM_T *g, em_int64 g0,
                                    EM_GLOBAL float *found, em_int64 f0,
                                    EM_GLOBAL const float *inv, em_int64 i0) {
    const EM_CT s = (EM_CT)inv[i0];
    int bad = 0;
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        const EM_CT x = EM_LD(g, g0 + i);
        bad |= !isfinite(x);
        EM_ST(g, g0 + i, x * s);
    }
    if (bad) found[f0] = 1.0f;
}

/* Adam / AdamW (em_adam_* of foreach.pyx): shrink = 1 - lr * wd when decoupled, l2 = wd
 * otherwise; m, v lerp to g, g^2; vmax (amsgrad) keeps the maximum, NaN propagating;
 * p += m / (sqrt(v) + eps2) * step. With amsgrad 0, vmax is any buffer (not read). */
EM_KERNEL void EM_NAME(adam_step)(em_int64 n, EM_GLOBAL EM_T *p, em_int64 p0,
                                  EM_GLOBAL const EM_T *g, em_int64 g0,
                                  EM_GLOBAL EM_T *m, em_int64 m0,
                                  EM_GLOBAL EM_T *v, em_int64 v0,
                                  EM_GLOBAL EM_T *vmax, em_int64 x0, int amsgrad,
                                  EM_CT shrink, EM_CT l2, int neg, EM_CT w1, EM_CT w2,
                                  EM_CT eps2, EM_CT step) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        EM_CT pi = EM_LD(p, p0 + i), gi = EM_LD(g, g0 + i);
        if (neg) gi = -gi;
        if (shrink != 1) pi = pi * shrink;
        if (l2 != 0) gi = pi * l2 + gi;
        const EM_CT mo = EM_LD(m, m0 + i), vo = EM_LD(v, v0 + i);
        const EM_CT mi = mo + w1 * (gi - mo);
        EM_CT vi = vo + w2 * (gi * gi - vo);
        EM_ST(m, m0 + i, mi);
        EM_ST(v, v0 + i, vi);
        if (amsgrad) {
            const EM_CT u = EM_LD(vmax, x0 + i);
            vi = (u != u || u > vi) ? u : vi;
            EM_ST(vmax, x0 + i, vi);
        }
        EM_ST(p, p0 + i, pi + mi / (sqrt(vi) + eps2) * step);
    }
}

/* SGD (em_sgd_*): d = g (negated to maximize) + l2 * p; with momentum (has_buf) buf = d
 * at the first step (fresh), else buf * mom + d * keep; d = buf, or d + mom * buf with
 * nesterov; p += d * nlr. */
EM_KERNEL void EM_NAME(sgd_step)(em_int64 n, EM_GLOBAL EM_T *p, em_int64 p0,
                                 EM_GLOBAL const EM_T *g, em_int64 g0,
                                 EM_GLOBAL EM_T *buf, em_int64 b0, int has_buf,
                                 EM_CT l2, int neg, EM_CT mom, EM_CT keep, int fresh,
                                 int nesterov, EM_CT nlr) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        const EM_CT pi = EM_LD(p, p0 + i);
        EM_CT d = EM_LD(g, g0 + i);
        if (neg) d = -d;
        if (l2 != 0) d = pi * l2 + d;
        if (has_buf) {
            const EM_CT b = fresh ? d : EM_LD(buf, b0 + i) * mom + (keep == 1 ? d : d * keep);
            EM_ST(buf, b0 + i, b);
            d = nesterov ? b * mom + d : b;
        }
        EM_ST(p, p0 + i, pi + d * nlr);
    }
}
