// dtypes: float32 float64
/* LayerNorm on a device (backends/gpu/norm.py): a work-group per row for the forward
 * and the input gradient, a work-item per column for the parameters' gradients (each
 * sums its column over the rows). Dense (rows, n) matrices from element 0; the composed
 * ops' arithmetic (mean, then the variance of x - mean: no cancellation), op for op. */
#include "../group_reduce.h"

/* y = (x - mean) * rstd (* w) (+ b) per row; mean and rstd (1 / sqrt(var + eps)) saved */
EM_KERNEL void EM_NAME(layer_norm_rows)(em_int64 rows, em_int64 n, EM_GLOBAL const EM_T *x,
                                        EM_GLOBAL EM_T *y, EM_GLOBAL const EM_T *w,
                                        EM_GLOBAL const EM_T *b, int has_w, int has_b,
                                        EM_GLOBAL EM_T *mean, EM_GLOBAL EM_T *rstd,
                                        EM_CT eps) {
    EM_LOCAL EM_CT buf[256];
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        const em_int64 o = r * n;
        EM_CT s = 0;
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) s += EM_LD(x, o + k);
        const EM_CT m = EM_NAME(group_sum)(buf, s) / (EM_CT)n;
        EM_CT q = 0;
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
            const EM_CT d = EM_LD(x, o + k) - m;
            q += d * d;
        }
        const EM_CT rs = 1 / sqrt(EM_NAME(group_sum)(buf, q) / (EM_CT)n + eps);
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
            EM_CT v = (EM_LD(x, o + k) - m) * rs;
            if (has_w) v = v * EM_LD(w, k);
            if (has_b) v = v + EM_LD(b, k);
            EM_ST(y, o + k, v);
        }
        if (EM_LID() == 0) {
            EM_ST(mean, r, m);
            EM_ST(rstd, r, rs);
        }
    }
}

/* dx = rstd * ((wg - mean(wg)) - xhat * mean(wg * xhat)) per row, wg = g (* w),
 * xhat = (x - mean) * rstd */
EM_KERNEL void EM_NAME(layer_norm_backward_rows)(em_int64 rows, em_int64 n,
                                                 EM_GLOBAL const EM_T *g,
                                                 EM_GLOBAL const EM_T *x,
                                                 EM_GLOBAL const EM_T *mean,
                                                 EM_GLOBAL const EM_T *rstd,
                                                 EM_GLOBAL const EM_T *w, int has_w,
                                                 EM_GLOBAL EM_T *dx) {
    EM_LOCAL EM_CT buf[256];
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        const em_int64 o = r * n;
        const EM_CT m = EM_LD(mean, r), rs = EM_LD(rstd, r);
        EM_CT s1 = 0, s2 = 0;
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
            const EM_CT xh = (EM_LD(x, o + k) - m) * rs;
            const EM_CT wg = has_w ? EM_LD(g, o + k) * EM_LD(w, k) : EM_LD(g, o + k);
            s1 += wg;
            s2 += wg * xh;
        }
        const EM_CT a = EM_NAME(group_sum)(buf, s1) / (EM_CT)n;
        const EM_CT c = EM_NAME(group_sum)(buf, s2) / (EM_CT)n;
        for (em_int64 k = EM_LID(); k < n; k += EM_LSIZE()) {
            const EM_CT xh = (EM_LD(x, o + k) - m) * rs;
            const EM_CT wg = has_w ? EM_LD(g, o + k) * EM_LD(w, k) : EM_LD(g, o + k);
            EM_ST(dx, o + k, rs * ((wg - a) - xh * c));
        }
    }
}

/* dw[j] = sum over rows of g * xhat, db[j] = sum of g (each where asked) */
EM_KERNEL void EM_NAME(layer_norm_param_grads)(em_int64 rows, em_int64 n,
                                               EM_GLOBAL const EM_T *g,
                                               EM_GLOBAL const EM_T *x,
                                               EM_GLOBAL const EM_T *mean,
                                               EM_GLOBAL const EM_T *rstd,
                                               EM_GLOBAL EM_T *dw, EM_GLOBAL EM_T *db,
                                               int want_w, int want_b) {
    for (em_int64 j = EM_GID(); j < n; j += EM_GSIZE()) {
        EM_CT sw = 0, sb = 0;
        for (em_int64 r = 0; r < rows; ++r) {
            const EM_CT gi = EM_LD(g, r * n + j);
            sw += gi * ((EM_LD(x, r * n + j) - EM_LD(mean, r)) * EM_LD(rstd, r));
            sb += gi;
        }
        if (want_w) EM_ST(dw, j, sw);
        if (want_b) EM_ST(db, j, sb);
    }
}
