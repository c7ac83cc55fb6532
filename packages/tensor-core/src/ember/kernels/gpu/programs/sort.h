// dtypes: bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 uint16 uint32 uint64
/* Sorting and searching over dense rows (kernels/cpu/sort.c on the CPU): a stable
 * merge sort per row, binary search in sorted rows; NaN sorts as the largest value. */

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
