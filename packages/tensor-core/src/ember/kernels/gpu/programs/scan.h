// dtypes: uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 uint16 uint32 uint64
/* Cumulative sums and products (kernels/cpu/scan.c on the CPU); no bool program: bool
 * and integer inputs are scanned in int64 or the requested dtype. */

/* inclusive cumsum (op 0) / cumprod (op 1) in place along the middle dim of dense x
 * viewed as (outer, n, inner): one work-item per column; float32 accumulates wide */
EM_KERNEL void EM_NAME(scan)(em_int64 outer, em_int64 n, em_int64 inner, EM_GLOBAL EM_T *x,
                             int op) {
    for (em_int64 c = EM_GID(); c < outer * inner; c += EM_GSIZE()) {
        const em_int64 o = c / inner, j = c % inner;
        EM_GLOBAL EM_T *b = x + o * n * inner + j;
#ifdef EM_DT_float32
        em_wide acc = 0;
#else
        EM_CT acc = 0;   /* integers wrap at their width, as the CPU */
#endif
        for (em_int64 i = 0; i < n; i++) {
            if (i == 0) acc = EM_LD(b, 0);
            else if (op == 0) acc = acc + EM_LD(b, i * inner);
            else acc = acc * EM_LD(b, i * inner);
            EM_ST(b, i * inner, acc);
        }
    }
}
