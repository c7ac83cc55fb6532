// dtypes: float32 float64
/* Convolution as im2col + GEMM (the GEMM of matmul.h, batched over images and groups):
 * im2col unfolds dense x (N, C, H, W) into cols (N, C * KH * KW, OH * OW), which per
 * group g is the (Cg * KH * KW, OH * OW) block at row g * Cg * KH * KW; col2im folds
 * such columns back into an image, summing the taps that land on each input pixel
 * (one work-item per pixel, no atomics), plus an optional per-channel bias. */

EM_KERNEL void EM_NAME(im2col)(em_int64 total, em_int64 C, em_int64 H, em_int64 W,
                               em_int64 KH, em_int64 KW, em_int64 OH, em_int64 OW,
                               em_int64 SH, em_int64 SW, em_int64 PH, em_int64 PW,
                               em_int64 DH, em_int64 DW, EM_GLOBAL const EM_T *x,
                               EM_GLOBAL EM_T *cols) {
    for (em_int64 i = EM_GID(); i < total; i += EM_GSIZE()) {
        em_int64 r = i;
        const em_int64 ow = r % OW; r /= OW;
        const em_int64 oh = r % OH; r /= OH;
        const em_int64 kw = r % KW; r /= KW;
        const em_int64 kh = r % KH; r /= KH;
        const em_int64 c = r % C, n = r / C;
        const em_int64 ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
        cols[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[((n * C + c) * H + ih) * W + iw]
                                                           : (EM_T)0;
    }
}

EM_KERNEL void EM_NAME(col2im)(em_int64 total, em_int64 C, em_int64 H, em_int64 W,
                               em_int64 KH, em_int64 KW, em_int64 OH, em_int64 OW,
                               em_int64 SH, em_int64 SW, em_int64 PH, em_int64 PW,
                               em_int64 DH, em_int64 DW, EM_GLOBAL const EM_T *cols,
                               EM_GLOBAL EM_T *x, EM_GLOBAL const EM_T *bias, int has_bias) {
    for (em_int64 i = EM_GID(); i < total; i += EM_GSIZE()) {
        em_int64 r = i;
        const em_int64 w = r % W; r /= W;
        const em_int64 h = r % H; r /= H;
        const em_int64 c = r % C, n = r / C;
        EM_CT acc = has_bias ? (EM_CT)bias[c] : (EM_CT)0;
        for (em_int64 kh = 0; kh < KH; kh++) {
            const em_int64 th = h + PH - kh * DH;
            if (th < 0 || th % SH) continue;
            const em_int64 oh = th / SH;
            if (oh >= OH) continue;
            for (em_int64 kw = 0; kw < KW; kw++) {
                const em_int64 tw = w + PW - kw * DW;
                if (tw < 0 || tw % SW) continue;
                const em_int64 ow = tw / SW;
                if (ow >= OW) continue;
                acc += cols[(((n * C + c) * KH + kh) * KW + kw) * OH * OW + oh * OW + ow];
            }
        }
        x[i] = acc;
    }
}

/* channels_last (NHWC): im2row unfolds x (N, H, W, C) into rows (N, OH * OW, G, K) with
 * K = KH * KW * Cg ordered (kh, kw, ci), each tap a run of a group's channels, so that
 * rows @ w, w stored (OC, KH, KW, Cg) ("OHWI", a channels_last weight), is the NHWC
 * output; row2im folds cols (N, G, OH * OW, K) (the input gradient's GEMM) back into
 * gx (N, H, W, C), plus an optional per-channel bias. */
EM_KERNEL void EM_NAME(im2row_nhwc)(em_int64 total, em_int64 C, em_int64 H, em_int64 W,
                                    em_int64 KH, em_int64 KW, em_int64 OH, em_int64 OW,
                                    em_int64 SH, em_int64 SW, em_int64 PH, em_int64 PW,
                                    em_int64 DH, em_int64 DW, em_int64 G,
                                    EM_GLOBAL const EM_T *x, EM_GLOBAL EM_T *rows) {
    const em_int64 Cg = C / G;
    for (em_int64 i = EM_GID(); i < total; i += EM_GSIZE()) {
        em_int64 r = i;
        const em_int64 ci = r % Cg; r /= Cg;
        const em_int64 kw = r % KW; r /= KW;
        const em_int64 kh = r % KH; r /= KH;
        const em_int64 g = r % G; r /= G;
        const em_int64 ow = r % OW; r /= OW;
        const em_int64 oh = r % OH, n = r / OH;
        const em_int64 ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
        rows[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                      ? x[((n * H + ih) * W + iw) * C + g * Cg + ci] : (EM_T)0;
    }
}

EM_KERNEL void EM_NAME(row2im_nhwc)(em_int64 total, em_int64 C, em_int64 H, em_int64 W,
                                    em_int64 KH, em_int64 KW, em_int64 OH, em_int64 OW,
                                    em_int64 SH, em_int64 SW, em_int64 PH, em_int64 PW,
                                    em_int64 DH, em_int64 DW, em_int64 G,
                                    EM_GLOBAL const EM_T *cols, EM_GLOBAL EM_T *x,
                                    EM_GLOBAL const EM_T *bias, int has_bias) {
    const em_int64 Cg = C / G, K = KH * KW * Cg;
    for (em_int64 i = EM_GID(); i < total; i += EM_GSIZE()) {
        em_int64 r = i;
        const em_int64 c = r % C; r /= C;
        const em_int64 w = r % W; r /= W;
        const em_int64 h = r % H, n = r / H;
        const em_int64 g = c / Cg, ci = c % Cg;
        EM_CT acc = has_bias ? (EM_CT)bias[c] : (EM_CT)0;
        for (em_int64 kh = 0; kh < KH; kh++) {
            const em_int64 th = h + PH - kh * DH;
            if (th < 0 || th % SH) continue;
            const em_int64 oh = th / SH;
            if (oh >= OH) continue;
            for (em_int64 kw = 0; kw < KW; kw++) {
                const em_int64 tw = w + PW - kw * DW;
                if (tw < 0 || tw % SW) continue;
                const em_int64 ow = tw / SW;
                if (ow >= OW) continue;
                acc += cols[((n * G + g) * OH * OW + oh * OW + ow) * K + (kh * KW + kw) * Cg + ci];
            }
        }
        x[i] = acc;
    }
}
