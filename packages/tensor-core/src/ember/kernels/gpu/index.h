// dtypes: bool uint8 int8 int16 int32 int64 float16 float32 float64
/* Indexing, sorting and scans (kernels/cpu/index.c, sort.c, scan.c on the CPU), over
 * dense tensors unless an em_layout says otherwise. Kernels whose CPU versions run in
 * order and let a later element see an earlier one's result (scatter with repeated
 * indices, nonzero and compress's output positions) run in one work-item, so every
 * device gives the CPU's answer; the rest are parallel. */

#if defined(EM_DT_float32) || defined(EM_DT_float16)
#define EM_ACC float
#else
#define EM_ACC EM_CT
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
        EM_ACC a = (EM_ACC)EM_LD(dst, d), b = (EM_ACC)EM_LD(src, off[1]);
        if (op == 1) a = a + b;
        else if (op == 2) a = a * b;
        else if (op == 3) a = (b > a || b != b) ? b : a;
        else if (op == 4) a = (b < a || b != b) ? b : a;
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

/* "a goes strictly before b": ascending with NaN last, descending with NaN first */
#define EM_LT_ASC(a, b) ((a) < (b) || ((a) == (a) && (b) != (b)))
#define EM_LT_DESC(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))
#define EM_LT(a, b) (desc ? EM_LT_DESC(a, b) : EM_LT_ASC(a, b))

/* stable bottom-up merge sort of each dense row (one work-item per row), idx the
 * original positions; tv/ti: scratch of the same size */
EM_KERNEL void EM_NAME(sort_rows)(em_int64 nrows, em_int64 n, EM_GLOBAL EM_T *v,
                                  EM_GLOBAL em_int64 *idx, EM_GLOBAL EM_T *tv,
                                  EM_GLOBAL em_int64 *ti, int desc) {
    for (em_int64 r = EM_GID(); r < nrows; r += EM_GSIZE()) {
        EM_GLOBAL EM_T *a = v + r * n, *b = tv + r * n;
        EM_GLOBAL em_int64 *ai = idx + r * n, *bi = ti + r * n;
        for (em_int64 i = 0; i < n; i++) ai[i] = i;
        int flipped = 0;
        for (em_int64 w = 1; w < n; w *= 2) {
            for (em_int64 s = 0; s < n; s += 2 * w) {
                em_int64 m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
                em_int64 i = s, j = m, o = s;
                while (i < m && j < e) {
                    EM_CT x = EM_LD(a, i), y = EM_LD(a, j);
                    if (EM_LT(y, x)) { EM_ST(b, o, y); bi[o++] = ai[j++]; }
                    else { EM_ST(b, o, x); bi[o++] = ai[i++]; }
                }
                while (i < m) { EM_ST(b, o, EM_LD(a, i)); bi[o++] = ai[i++]; }
                while (j < e) { EM_ST(b, o, EM_LD(a, j)); bi[o++] = ai[j++]; }
            }
            EM_GLOBAL EM_T *t = a; a = b; b = t;
            EM_GLOBAL em_int64 *u = ai; ai = bi; bi = u;
            flipped = !flipped;
        }
        if (flipped)
            for (em_int64 i = 0; i < n; i++) { EM_ST(b, i, EM_LD(a, i)); bi[i] = ai[i]; }
    }
}

/* out[r, i] = insertion point of vals[r, i] in row r of seq (rows srs apart) */
EM_KERNEL void EM_NAME(searchsorted)(em_int64 nrows, em_int64 m, em_int64 n,
                                     EM_GLOBAL const EM_T *seq, em_int64 srs,
                                     EM_GLOBAL const EM_T *vals, EM_GLOBAL em_int64 *out,
                                     int right) {
    for (em_int64 q = EM_GID(); q < nrows * m; q += EM_GSIZE()) {
        const em_int64 r = q / m;
        EM_GLOBAL const EM_T *s = seq + r * srs;
        const EM_CT v = EM_LD(vals, q);
        em_int64 lo = 0, hi = n;
        while (lo < hi) {
            const em_int64 mid = lo + (hi - lo) / 2;
            const EM_CT sm = EM_LD(s, mid);
            const int go_right = right ? !EM_LT_ASC(v, sm) : EM_LT_ASC(sm, v);
            if (go_right) lo = mid + 1; else hi = mid;
        }
        out[q] = lo;
    }
}

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
        EM_ACC acc = 0;
#endif
        for (em_int64 i = 0; i < n; i++) {
            if (i == 0) acc = EM_LD(b, 0);
            else if (op == 0) acc = acc + EM_LD(b, i * inner);
            else acc = acc * EM_LD(b, i * inner);
#ifndef EM_DT_float32
            acc = (EM_ACC)(EM_CT)acc;   /* integers wrap at their width, as the CPU */
#endif
            EM_ST(b, i * inner, acc);
        }
    }
}
