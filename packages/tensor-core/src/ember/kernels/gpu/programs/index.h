// dtypes: none bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 uint16 uint32 uint64
/* Indexing (kernels/cpu/index.c on the CPU): gather, scatter, nonzero, compress over
 * dense tensors unless an em_layout says otherwise, and iota (arange and linspace);
 * the dtype-free program `index` checks index tensors. Kernels whose CPU versions run
 * in order and let a later element see an earlier one's result (scatter with repeated
 * indices, nonzero and compress's output positions) run in one work-item, so every
 * device gives the CPU's answer; the rest are parallel. */
#ifdef EM_DT

#if defined(EM_DT_float16) || defined(EM_DT_bfloat16) || defined(EM_DT_float32) || \
    defined(EM_DT_float64)
#define EM_ISNAN(v) ((v) != (v))
#else
#define EM_ISNAN(v) 0     /* no self-comparison warnings for integers */
#endif

/* out[p] = src[p . src_strides + sum_k idx_k[p . idx_strides_k] * step_k], p over the
 * shape of L (operands: 0 out, 1 src, 2 idx0, 3 idx1); indices already checked */
EM_KERNEL void EM_NAME(gather)(em_int64 n, EM_GLOBAL EM_T *out, EM_GLOBAL const EM_T *src,
                               EM_GLOBAL const em_int64 *i0, EM_GLOBAL const em_int64 *i1,
                               em_int64 step0, em_int64 step1, int nidx, em_layout L) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        em_int64 off[4];
        for (int k = 0; k < 4; k++) off[k] = L.offset[k];
        em_layout_offsets(&L, 0, (int)L.nd, i, 4, off);
        em_int64 s = off[1];
        if (nidx > 0) s += i0[off[2]] * step0;
        if (nidx > 1) s += i1[off[3]] * step1;
        EM_ST(out, off[0], EM_LD(src, s));   /* half: through float, exact */
    }
}

/* dst[p . dst_strides + index terms] (op)= src[p . src_strides], in order (one
 * work-item): op 0 assign, 1 add, 2 multiply, 3 max, 4 min (bool: or/and/or/and) */
EM_KERNEL void EM_NAME(scatter)(em_int64 n, EM_GLOBAL EM_T *dst, EM_GLOBAL const EM_T *src,
                                EM_GLOBAL const em_int64 *i0, EM_GLOBAL const em_int64 *i1,
                                em_int64 step0, em_int64 step1, int nidx, int op, em_layout L) {
    if (EM_GID() != 0) return;
    for (em_int64 i = 0; i < n; i++) {
        em_int64 off[4];
        for (int k = 0; k < 4; k++) off[k] = L.offset[k];
        em_layout_offsets(&L, 0, (int)L.nd, i, 4, off);
        em_int64 d = off[0];
        if (nidx > 0) d += i0[off[2]] * step0;
        if (nidx > 1) d += i1[off[3]] * step1;
#ifdef EM_DT_bool
        const em_bool a = dst[d], b = src[off[1]];
        dst[d] = op == 0 ? b : (op == 1 || op == 3) ? (em_bool)(a | b) : (em_bool)(a & b);
#else
        EM_CT a = (EM_CT)EM_LD(dst, d), b = (EM_CT)EM_LD(src, off[1]);
        if (op == 1) a = a + b;
        else if (op == 2) a = a * b;
        else if (op == 3) a = (b > a || EM_ISNAN(b)) ? b : a;
        else if (op == 4) a = (b < a || EM_ISNAN(b)) ? b : a;
        else a = b;
        EM_ST(dst, d, a);
#endif
    }
}

/* the coordinates (count, ndim) of the true elements of a dense bool tensor of shape
 * L.shape[0 .. L.nd) (unmerged), in order (one work-item) */
EM_KERNEL void EM_NAME(nonzero)(em_int64 n, EM_GLOBAL const EM_T *mask,
                                EM_GLOBAL em_int64 *out, em_layout L) {
    if (EM_GID() != 0) return;
    em_int64 o = 0;
    for (em_int64 i = 0; i < n; i++) {
        if (EM_LD(mask, i) == 0) continue;
        em_int64 r = i;
        for (int d = (int)L.nd - 1; d >= 0; d--) {
            out[o * L.nd + d] = r % L.shape[d];
            r /= L.shape[d];
        }
        o++;
    }
}

/* out = the elements src[src_off + i * stride] where the dense bool mask is true */
EM_KERNEL void EM_NAME(compress)(em_int64 n, EM_GLOBAL const EM_T *src, em_int64 src_off,
                                 em_int64 stride, EM_GLOBAL const em_bool *mask,
                                 EM_GLOBAL EM_T *out) {
    if (EM_GID() != 0) return;
    em_int64 o = 0;
    for (em_int64 i = 0; i < n; i++)
        if (mask[i]) { EM_ST(out, o, EM_LD(src, src_off + i * stride)); o++; }
}

/* 0, 1, ..., n - 1 (arange and linspace build on it) */
EM_KERNEL void EM_NAME(iota)(em_int64 n, EM_GLOBAL EM_T *out) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) EM_ST(out, i, (EM_CT)i);
}

#else /* the dtype-free program */

/* out = idx (out may be idx) with negative indices wrapped (when allowed); the first
 * index outside [0, size) goes to flag[slot] (the device error flag, backends/gpu
 * deferred_check) */
EM_KERNEL void index_normalize(em_int64 n, EM_GLOBAL const em_int64 *idx,
                               EM_GLOBAL em_int64 *out, em_int64 size, int allow_negative,
                               EM_GLOBAL em_int64 *flag, em_int64 slot) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        em_int64 v = idx[i];
        if (v < 0 && allow_negative) v += size;
        if (v < 0 || v >= size) {
            em_atomic_min_int64(flag + slot, i);
            v = 0;    /* the kernels that follow read in bounds until the error is raised */
        }
        out[i] = v;
    }
}

#endif
