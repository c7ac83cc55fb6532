// dtypes: none float32 float64
/* Losses with class targets (kernels/cpu/loss.c on the CPU): cross entropy (one
 * work-group per row of logits, combining through local memory) and its backward,
 * nll_loss and its backward, over dense tensors; and the dtype-free program `loss`:
 * the targets' check, which reports to the host later instead of waiting on the
 * device now. */
#ifdef EM_DT
#include "../group_reduce.h"

/* loss = (1 - ls) * w_t * (lse - (x_t - max)) + ls / C * sum_c w_c * (lse - (x_c - max))
 * per row of (rows, C) logits; wrow = w_t (0 where the target is ignore_index) */
EM_KERNEL void EM_NAME(cross_entropy)(em_int64 rows, em_int64 C, EM_GLOBAL const EM_T *x,
                                      EM_GLOBAL const em_int64 *target, EM_GLOBAL const EM_T *w,
                                      int has_w, EM_GLOBAL EM_T *loss, EM_GLOBAL EM_T *wrow,
                                      em_int64 ignore, EM_CT lsm, EM_CT wtotal) {
    EM_LOCAL EM_CT buf[256];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        const em_int64 t = target[r];
        EM_GLOBAL const EM_T *xr = x + r * C;
        /* no early exit: every work-item reaches every barrier; a target out of range
         * (its error raised at the next sync) is skipped so nothing reads outside x */
        const int skip = t == ignore || t < 0 || t >= C;
        EM_CT m = -INFINITY;
        for (em_int64 k = lid; k < C; k += ls) m = xr[k] > m ? xr[k] : m;
        m = EM_NAME(group_max)(buf, m);
        if (isinf(m)) m = m > 0 ? m : 0;
        EM_CT s = 0, sw = 0;
        for (em_int64 k = lid; k < C; k += ls) {
            s += exp(xr[k] - m);
            sw += (has_w ? w[k] : (EM_CT)1) * (xr[k] - m);
        }
        s = EM_NAME(group_sum)(buf, s);
        sw = EM_NAME(group_sum)(buf, sw);
        if (lid == 0) {
            const EM_CT lse = log(s), wt = skip ? (EM_CT)0 : has_w ? w[t] : (EM_CT)1;
            EM_CT l = skip ? (EM_CT)0 : (1 - lsm) * wt * (lse - (xr[t] - m));
            if (lsm > 0 && !skip) l += lsm / (EM_CT)C * (lse * wtotal - sw);
            loss[r] = l;
            wrow[r] = wt;
        }
    }
}

/* dx_c = gr * ((1 - ls) * w_t * (p_c - [c == t]) + ls / C * (W * p_c - w_c)),
 * gr = g[r * gstride] * scale */
EM_KERNEL void EM_NAME(cross_entropy_backward)(em_int64 rows, em_int64 C, EM_GLOBAL const EM_T *x,
                                               EM_GLOBAL const em_int64 *target,
                                               EM_GLOBAL const EM_T *w, int has_w,
                                               EM_GLOBAL const EM_T *g, em_int64 gstride,
                                               EM_CT scale, EM_GLOBAL EM_T *dx, em_int64 ignore,
                                               EM_CT lsm, EM_CT wtotal) {
    EM_LOCAL EM_CT buf[256];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        const em_int64 t = target[r];
        EM_GLOBAL const EM_T *xr = x + r * C;
        EM_GLOBAL EM_T *dr = dx + r * C;
        /* no early exit for ignored rows: every work-item reaches every barrier */
        const int skip = t == ignore || t < 0 || t >= C;   /* out of range: raised later */
        EM_CT m = -INFINITY;
        for (em_int64 k = lid; k < C; k += ls) m = xr[k] > m ? xr[k] : m;
        m = EM_NAME(group_max)(buf, m);
        if (isinf(m)) m = m > 0 ? m : 0;
        EM_CT s = 0;
        for (em_int64 k = lid; k < C; k += ls) s += exp(xr[k] - m);
        s = EM_NAME(group_sum)(buf, s);
        const EM_CT gr = skip ? (EM_CT)0 : g[r * gstride] * scale;
        const EM_CT wt = (has_w && !skip) ? w[t] : (EM_CT)1;
        const EM_CT alpha = gr * ((1 - lsm) * wt + lsm / (EM_CT)C * wtotal) / s;
        const EM_CT beta = gr * lsm / (EM_CT)C;
        for (em_int64 k = lid; k < C; k += ls) {
            EM_CT d = alpha * exp(xr[k] - m) - beta * ((has_w && lsm > 0) ? w[k] : (EM_CT)1);
            if (k == t) d -= gr * (1 - lsm) * wt;
            dr[k] = skip ? (EM_CT)0 : d;
        }
    }
}

/* x (N, C, S): loss[n, s] = -w_t * x[n, t, s] */
EM_KERNEL void EM_NAME(nll_loss)(em_int64 N, em_int64 C, em_int64 S, EM_GLOBAL const EM_T *x,
                                 EM_GLOBAL const em_int64 *target, EM_GLOBAL const EM_T *w,
                                 int has_w, EM_GLOBAL EM_T *loss, EM_GLOBAL EM_T *wrow,
                                 em_int64 ignore) {
    for (em_int64 p = EM_GID(); p < N * S; p += EM_GSIZE()) {
        const em_int64 n = p / S, s = p % S, t = target[p];
        if (t == ignore || t < 0 || t >= C) { loss[p] = 0; wrow[p] = 0; continue; }
        const EM_CT wt = has_w ? w[t] : (EM_CT)1;
        loss[p] = -wt * x[(n * C + t) * S + s];
        wrow[p] = wt;
    }
}

/* dx[n, t, s] = -w_t * g[p * gstride] * scale (dx is zero-filled first) */
EM_KERNEL void EM_NAME(nll_loss_backward)(em_int64 N, em_int64 C, em_int64 S,
                                          EM_GLOBAL const em_int64 *target, EM_GLOBAL const EM_T *w,
                                          int has_w, EM_GLOBAL const EM_T *g, em_int64 gstride,
                                          EM_CT scale, EM_GLOBAL EM_T *dx, em_int64 ignore) {
    for (em_int64 p = EM_GID(); p < N * S; p += EM_GSIZE()) {
        const em_int64 n = p / S, s = p % S, t = target[p];
        if (t == ignore || t < 0 || t >= C) continue;
        const EM_CT wt = has_w ? w[t] : (EM_CT)1;
        dx[(n * C + t) * S + s] = -wt * g[p * gstride] * scale;
    }
}

#else /* the dtype-free program */

/* flag[slot] (the device error flag, backends/gpu deferred_check) = the least of
 * itself and the first position whose target is neither a class in [0, C) nor ignore */
EM_KERNEL void check_targets(em_int64 n, EM_GLOBAL const em_int64 *t, em_int64 C,
                             em_int64 ignore, EM_GLOBAL em_int64 *flag, em_int64 slot) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE())
        if ((t[i] < 0 || t[i] >= C) && t[i] != ignore) em_atomic_min_int64(flag + slot, i);
}

#endif
