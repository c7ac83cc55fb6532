// dtypes: float32 float64
/* softmax / log_softmax over the rows of a dense tensor and their backward
 * (kernels/cpu/softmax.c on the CPU): each row gets one work-group (grid-stride over
 * rows) whose work-items stride over the row and combine through local memory. */
#include "../group_reduce.h"

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
