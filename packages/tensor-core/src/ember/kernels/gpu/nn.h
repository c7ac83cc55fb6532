// dtypes: float32 float64
/* Fused numerics over rows (kernels/cpu/softmax.c, loss.c, dropout.c on the CPU):
 * softmax / log_softmax and their backward, cross entropy with class targets and
 * its backward, nll_loss, dropout. Tensors are dense (contiguous from element 0);
 * a row-wise kernel gives each row one work-group (grid-stride over rows) whose
 * work-items stride over the row and combine through local memory. */

EM_INLINE EM_CT EM_NAME(group_sum)(EM_LPTR EM_CT *buf, EM_CT v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) buf[lid] += buf[lid + s];
        EM_BARRIER();
    }
    EM_CT r = buf[0];
    EM_BARRIER();
    return r;
}

/* the maximum, NaN winning (as the CPU kernels' comparisons) */
EM_INLINE EM_CT EM_NAME(group_max)(EM_LPTR EM_CT *buf, EM_CT v) {
    const int lid = EM_LID();
    buf[lid] = v;
    EM_BARRIER();
    for (int s = EM_LSIZE() / 2; s > 0; s >>= 1) {
        if (lid < s) {
            EM_CT a = buf[lid], b = buf[lid + s];
            buf[lid] = (b > a || b != b) ? b : a;
        }
        EM_BARRIER();
    }
    EM_CT r = buf[0];
    EM_BARRIER();
    return r;
}

EM_KERNEL void EM_NAME(softmax_rows)(em_int64 rows, em_int64 n, EM_GLOBAL EM_T *y,
                                     EM_GLOBAL const EM_T *x, int log_softmax) {
    EM_LOCAL EM_CT buf[256];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        EM_GLOBAL const EM_T *xr = x + r * n;
        EM_GLOBAL EM_T *yr = y + r * n;
        EM_CT m = -INFINITY;
        for (em_int64 k = lid; k < n; k += ls) m = (xr[k] > m || xr[k] != xr[k]) ? xr[k] : m;
        m = EM_NAME(group_max)(buf, m);
        if (isinf(m)) m = m > 0 ? m : 0;   /* all -inf: exp(-inf - 0) = 0 -> NaN as the CPU */
        EM_CT s = 0;
        for (em_int64 k = lid; k < n; k += ls) s += exp(xr[k] - m);
        s = EM_NAME(group_sum)(buf, s);
        const EM_CT lse = log(s), inv = 1 / s;
        for (em_int64 k = lid; k < n; k += ls)
            yr[k] = log_softmax ? xr[k] - m - lse : exp(xr[k] - m) * inv;
    }
}

/* softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g) */
EM_KERNEL void EM_NAME(softmax_backward_rows)(em_int64 rows, em_int64 n, EM_GLOBAL EM_T *dx,
                                              EM_GLOBAL const EM_T *g, EM_GLOBAL const EM_T *y,
                                              int log_softmax) {
    EM_LOCAL EM_CT buf[256];
    const int lid = EM_LID(), ls = EM_LSIZE();
    for (em_int64 r = EM_GROUP(); r < rows; r += EM_NGROUPS()) {
        const em_int64 o = r * n;
        EM_CT s = 0;
        for (em_int64 k = lid; k < n; k += ls) s += log_softmax ? g[o + k] : g[o + k] * y[o + k];
        s = EM_NAME(group_sum)(buf, s);
        for (em_int64 k = lid; k < n; k += ls)
            dx[o + k] = log_softmax ? g[o + k] - exp(y[o + k]) * s : y[o + k] * (g[o + k] - s);
    }
}

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
        const int skip = t == ignore;   /* no early exit: every work-item reaches every barrier */
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
        const int skip = t == ignore;
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
        if (t == ignore) { loss[p] = 0; wrow[p] = 0; continue; }
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
        if (t == ignore) continue;
        const EM_CT wt = has_w ? w[t] : (EM_CT)1;
        dx[(n * C + t) * S + s] = -wt * g[p * gstride] * scale;
    }
}

/* element i dropped when the float32 uniform of stream word offset + i is below p,
 * i.e. (w >> 8) < thr = ceil(float(p) * 2^24) (kernels/cpu/dropout.c) */
EM_KERNEL void EM_NAME(dropout)(em_int64 n, EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *y,
                                EM_GLOBAL em_bool *mask, em_uint32 thr, EM_CT scale,
                                em_uint32 key0, em_uint32 key1, em_int64 offset) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        const em_uint32 wd = em_philox_word(key0, key1, (em_uint64)offset + (em_uint64)i);
        const em_bool keep = (wd >> 8) >= thr;
        mask[i] = keep;
        y[i] = keep ? x[i] * scale : (EM_CT)0;
    }
}

EM_KERNEL void EM_NAME(dropout_backward)(em_int64 n, EM_GLOBAL const EM_T *g,
                                         EM_GLOBAL const em_bool *mask, EM_CT scale,
                                         EM_GLOBAL EM_T *dx) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) dx[i] = mask[i] ? g[i] * scale : (EM_CT)0;
}
