// dtypes: float32 float64
/* Pooling over dense NCHW planes, or over channels_last (NHWC) storage read and
 * written as it is (cl = 1: element hw of plane n * C + c at (n * HW + hw) * C + c),
 * kernels/cpu/pool.c on the CPU, the same results:
 * one work-item per output for the forwards; the backwards scatter each plane's
 * gradients from one work-item (planes are independent, so no atomics are needed
 * and windows may overlap freely). Indices of max pools are flat h * W + w in the
 * plane, PyTorch's: the window's first position inside the input, then a later tap
 * wins when greater or NaN; -1 for a window wholly in the padding.
 *
 * Windows visit only their taps inside the input, found with int64 arithmetic that
 * cannot overflow, so a huge kernel or padding costs no more than the input it covers. */

/* The first tap k of a window starting at `start` (k * D from it) inside [0, size),
 * and the end of those taps: [first, end) is empty when none is inside. */
EM_INLINE em_int64 EM_NAME(first_tap)(em_int64 start, em_int64 D) {
    return start >= 0 ? 0 : -start / D + (-start % D != 0);
}
EM_INLINE em_int64 EM_NAME(end_tap)(em_int64 start, em_int64 K, em_int64 D, em_int64 size) {
    if (start >= size) return 0;
    const em_int64 n = (size - start) / D + ((size - start) % D != 0);
    return n < K ? n : K;
}

/* Where element hw (= h * W + w) of plane p lies: NCHW or NHWC storage. */
EM_INLINE em_int64 EM_NAME(at)(em_int64 p, em_int64 hw, em_int64 HW, em_int64 C, int cl) {
    return cl ? ((p / C) * HW + hw) * C + p % C : p * HW + hw;
}

/* min(start + len, limit) without computing start + len (len, limit >= 0) */
EM_INLINE em_int64 EM_NAME(clip_end)(em_int64 start, em_int64 len, em_int64 limit) {
    return len - limit < -start ? start + len : limit;
}

EM_KERNEL void EM_NAME(max_pool2d)(em_int64 total, em_int64 H, em_int64 W, em_int64 OH,
                                   em_int64 OW, em_int64 KH, em_int64 KW, em_int64 SH,
                                   em_int64 SW, em_int64 PH, em_int64 PW, em_int64 DH,
                                   em_int64 DW, EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *y,
                                   EM_GLOBAL em_int64 *ix, int with_indices, em_int64 C,
                                   int cl) {
    for (em_int64 o = EM_GID(); o < total; o += EM_GSIZE()) {
        const em_int64 ow = o % OW, oh = (o / OW) % OH, plane = o / (OW * OH);
        EM_CT m = -INFINITY;
        em_int64 best = -1;
        const em_int64 h0 = oh * SH - PH, w0 = ow * SW - PW;
        const em_int64 kw0 = EM_NAME(first_tap)(w0, DW), kw1 = EM_NAME(end_tap)(w0, KW, DW, W);
        const em_int64 kh1 = EM_NAME(end_tap)(h0, KH, DH, H);
        for (em_int64 kh = EM_NAME(first_tap)(h0, DH); kh < kh1; kh++) {
            const em_int64 ih = h0 + kh * DH;
            for (em_int64 kw = kw0; kw < kw1; kw++) {
                const em_int64 iw = w0 + kw * DW;
                const EM_CT v = x[EM_NAME(at)(plane, ih * W + iw, H * W, C, cl)];
                if (best < 0 || v > m || v != v) { m = v; best = ih * W + iw; }
            }
        }
        const em_int64 yo = EM_NAME(at)(plane, oh * OW + ow, OH * OW, C, cl);
        y[yo] = m;
        if (with_indices) ix[yo] = best;
    }
}

/* PyTorch's divisor: the window clipped to the padded input (count_include_pad) or
 * to the input, or divisor (divisor_override) when non-zero; 0 output where the
 * window holds no input */
EM_KERNEL void EM_NAME(avg_pool2d)(em_int64 total, em_int64 H, em_int64 W, em_int64 OH,
                                   em_int64 OW, em_int64 KH, em_int64 KW, em_int64 SH,
                                   em_int64 SW, em_int64 PH, em_int64 PW,
                                   EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *y,
                                   int count_include_pad, em_int64 divisor, em_int64 C,
                                   int cl) {
    for (em_int64 o = EM_GID(); o < total; o += EM_GSIZE()) {
        const em_int64 ow = o % OW, oh = (o / OW) % OH, plane = o / (OW * OH);
        const em_int64 h0 = oh * SH - PH, w0 = ow * SW - PW;
        const em_int64 h1 = EM_NAME(clip_end)(h0, KH, H + PH);
        const em_int64 w1 = EM_NAME(clip_end)(w0, KW, W + PW);
        const em_int64 hi = (h1 < H ? h1 : H) - (h0 > 0 ? h0 : 0);
        const em_int64 wi = (w1 < W ? w1 : W) - (w0 > 0 ? w0 : 0);
        EM_CT s = 0;
        for (em_int64 ih = h0 > 0 ? h0 : 0; ih < (h1 < H ? h1 : H); ih++)
            for (em_int64 iw = w0 > 0 ? w0 : 0; iw < (w1 < W ? w1 : W); iw++)
                s += x[EM_NAME(at)(plane, ih * W + iw, H * W, C, cl)];
        const EM_CT d = divisor             ? (EM_CT)divisor
                        : count_include_pad ? (EM_CT)(h1 - h0) * (EM_CT)(w1 - w0)
                                            : (EM_CT)(hi * wi);
        y[EM_NAME(at)(plane, oh * OW + ow, OH * OW, C, cl)] = (hi > 0 && wi > 0) ? s / d : (EM_CT)0;
    }
}

EM_KERNEL void EM_NAME(avg_pool2d_backward)(em_int64 planes, em_int64 H, em_int64 W,
                                            em_int64 OH, em_int64 OW, em_int64 KH,
                                            em_int64 KW, em_int64 SH, em_int64 SW,
                                            em_int64 PH, em_int64 PW, EM_GLOBAL const EM_T *g,
                                            EM_GLOBAL EM_T *dx, int count_include_pad,
                                            em_int64 divisor, em_int64 C, int cl) {
    for (em_int64 p = EM_GID(); p < planes; p += EM_GSIZE()) {
        for (em_int64 i = 0; i < H * W; i++) dx[EM_NAME(at)(p, i, H * W, C, cl)] = 0;
        for (em_int64 oh = 0; oh < OH; oh++)
            for (em_int64 ow = 0; ow < OW; ow++) {
                const em_int64 h0 = oh * SH - PH, w0 = ow * SW - PW;
                const em_int64 h1 = EM_NAME(clip_end)(h0, KH, H + PH);
                const em_int64 w1 = EM_NAME(clip_end)(w0, KW, W + PW);
                const em_int64 hi = (h1 < H ? h1 : H) - (h0 > 0 ? h0 : 0);
                const em_int64 wi = (w1 < W ? w1 : W) - (w0 > 0 ? w0 : 0);
                if (hi <= 0 || wi <= 0) continue;
                const EM_CT d = divisor             ? (EM_CT)divisor
                                : count_include_pad ? (EM_CT)(h1 - h0) * (EM_CT)(w1 - w0)
                                                    : (EM_CT)(hi * wi);
                const EM_CT v = g[EM_NAME(at)(p, oh * OW + ow, OH * OW, C, cl)] / d;
                for (em_int64 ih = h0 > 0 ? h0 : 0; ih < (h1 < H ? h1 : H); ih++)
                    for (em_int64 iw = w0 > 0 ? w0 : 0; iw < (w1 < W ? w1 : W); iw++)
                        dx[EM_NAME(at)(p, ih * W + iw, H * W, C, cl)] += v;
            }
    }
}

/* adaptive windows: [o * size / n, ceil((o + 1) * size / n)) */
EM_KERNEL void EM_NAME(adaptive_pool2d)(em_int64 total, em_int64 H, em_int64 W, em_int64 OH,
                                        em_int64 OW, EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *y,
                                        EM_GLOBAL em_int64 *ix, int is_max, em_int64 C,
                                        int cl) {
    for (em_int64 o = EM_GID(); o < total; o += EM_GSIZE()) {
        const em_int64 ow = o % OW, oh = (o / OW) % OH, plane = o / (OW * OH);
        const em_int64 h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        const em_int64 w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        EM_CT m = -INFINITY, s = 0;
        em_int64 best = h0 * W + w0;
        for (em_int64 ih = h0; ih < h1; ih++)
            for (em_int64 iw = w0; iw < w1; iw++) {
                const EM_CT v = x[EM_NAME(at)(plane, ih * W + iw, H * W, C, cl)];
                s += v;
                if (v > m || v != v) { m = v; best = ih * W + iw; }
            }
        const em_int64 yo = EM_NAME(at)(plane, oh * OW + ow, OH * OW, C, cl);
        y[yo] = is_max ? m : s / (EM_CT)((h1 - h0) * (w1 - w0));
        if (is_max) ix[yo] = best;
    }
}

EM_KERNEL void EM_NAME(adaptive_avg_pool2d_backward)(em_int64 planes, em_int64 H, em_int64 W,
                                                     em_int64 OH, em_int64 OW,
                                                     EM_GLOBAL const EM_T *g, EM_GLOBAL EM_T *dx,
                                                     em_int64 C, int cl) {
    for (em_int64 p = EM_GID(); p < planes; p += EM_GSIZE()) {
        for (em_int64 i = 0; i < H * W; i++) dx[EM_NAME(at)(p, i, H * W, C, cl)] = 0;
        for (em_int64 oh = 0; oh < OH; oh++) {
            const em_int64 h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
            for (em_int64 ow = 0; ow < OW; ow++) {
                const em_int64 w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
                const EM_CT v = g[EM_NAME(at)(p, oh * OW + ow, OH * OW, C, cl)] /
                                (EM_CT)((h1 - h0) * (w1 - w0));
                for (em_int64 ih = h0; ih < h1; ih++)
                    for (em_int64 iw = w0; iw < w1; iw++)
                        dx[EM_NAME(at)(p, ih * W + iw, H * W, C, cl)] += v;
            }
        }
    }
}

/* any max pool's backward: grad added at each output's index (-1 adds nothing) */
EM_KERNEL void EM_NAME(max_pool_backward)(em_int64 planes, em_int64 HW, em_int64 OHW,
                                          EM_GLOBAL const EM_T *g, EM_GLOBAL const em_int64 *ix,
                                          EM_GLOBAL EM_T *dx, em_int64 C, int cl) {
    for (em_int64 p = EM_GID(); p < planes; p += EM_GSIZE()) {
        for (em_int64 i = 0; i < HW; i++) dx[EM_NAME(at)(p, i, HW, C, cl)] = 0;
        for (em_int64 o = 0; o < OHW; o++) {
            const em_int64 go = EM_NAME(at)(p, o, OHW, C, cl), i = ix[go];
            if (i >= 0) dx[EM_NAME(at)(p, i, HW, C, cl)] += g[go];
        }
    }
}
