// dtypes: float32 float64
/* Dropout over dense tensors (kernels/cpu/dropout.c on the CPU, the same masks). */

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
