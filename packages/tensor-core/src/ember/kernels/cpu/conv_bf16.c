/* bfloat16 convolution, NCHW and channels_last (NHWC), forward and both gradients:
 * float32 accumulation, each result rounded to bfloat16 once (nearest even, NaN kept:
 * ember_bf16.h), and no float32 copy of an activation or of the weights. Included by
 * conv.c after its templates (it uses their helpers: im2col_bf16, col2im_f32,
 * row2im_f32, is_identity, rows_per_item, COLS_MAX, conv_path).
 *
 * Where the products of one output are summed by a single GEMM, that GEMM is the
 * bfloat16 one (vdpbf16ps pairs on AVX512-BF16, else widened in its packing), the bias
 * its beta term: the forwards, a stride-1 grad_input as the forward of grad_out with the
 * weights flipped (as conv.c's as_forward), a 1x1 NHWC grad_weight (one GEMM over all
 * pixels). Where one output gathers several GEMMs' results (col2im's overlapping taps
 * at stride > 1, grad_weight's sum over images and pixel blocks), those GEMMs take the
 * same bfloat16 operands (grad_out and the weights as they are, im2col / im2row moving
 * the 2-byte values) and leave float32 sums (em_gemm_bf16_f32) in an image plane or a
 * weight-sized sum that is rounded once at the end. Work items run in turn; the GEMMs
 * thread themselves. */
#include "ember_bf16.h"

#define BF_BATCH_COLS 1024   /* columns (pixels) of the small images batched in one GEMM */
#define BF_MIN_K 256         /* pixels per grad_weight GEMM at least (its k) */
#define BF_MIN_ROWS 512      /* pixels per NHWC forward GEMM at least (its m: wide weights
                              * are packed once per GEMM) */

/* dst[i * ldd + j] = src[i * lds + j] + rbias[i] + cbias[j] (either bias may be NULL),
 * rounded to bfloat16 once */
__attribute__((target_clones("avx2", "default")))
static void bf16_round_rows(const float *restrict src, int64_t lds, int64_t rows, int64_t cols,
                            const uint16_t *rbias, const uint16_t *cbias,
                            uint16_t *restrict dst, int64_t ldd) {
    for (int64_t i = 0; i < rows; i++) {
        float rb = rbias ? em_bf16_to_f32(rbias[i]) : 0.0f;
        const float *restrict s = src + i * lds;
        uint16_t *restrict d = dst + i * ldd;
        if (cbias)
            for (int64_t j = 0; j < cols; j++)
                d[j] = em_f32_to_bf16(s[j] + rb + em_bf16_to_f32(cbias[j]));
        else
            for (int64_t j = 0; j < cols; j++) d[j] = em_f32_to_bf16(s[j] + rb);
    }
}

/* Images per GEMM of the NCHW paths: several small images side by side (their
 * columns, ld = nb * P), as conv.c's images_per_item, else 1. */
static int64_t bf16_images(const em_conv_params *p, int64_t kg) {
    int64_t P = p->oh * p->ow;
    if (P >= BATCH_COLS || p->n < 2) return 1;
    int64_t b = MIN(p->n, MIN(BF_BATCH_COLS / P, MAX(1, BATCH_MAX / MAX(kg * P, 1))));
    int64_t items = (p->n + b - 1) / b;
    return (p->n + items - 1) / items;
}

/* The bias, or 0, everywhere in y: rows x cols, bias along rows (rbias) or columns */
static void bf16_fill_bias(uint16_t *y, int64_t rows, int64_t cols, const uint16_t *rbias,
                           const uint16_t *cbias) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            y[i * cols + j] = rbias ? rbias[i] : cbias ? cbias[j] : 0;
}

/* The NCHW gradients' GEMMs that sum into float32, one walk: per group, blocks of
 * grad_out (ocg, ld) as they are (a band of one image's rows, ld = its pixels; or nb
 * small images' copied side by side), each with cols (kg, ld), the block's im2col:
 * grad_input (gx): cols = W_g^T @ block in float32, scattered by col2im into each
 * image's float32 plane, rounded once (+ bias) when its last band is in; grad_weight
 * (gw): the float32 sum acc = gw_g^T (kg, ocg) += bfloat16 cols @ block^T, rounded
 * once per group (this way round the GEMM packs the wide cols as its A, along their
 * rows, and only grad_out's ocg columns as its B: packing B's columns one by one cost
 * 10% of a 3x3 64-channel backward). */
static int bf16_nchw_grad(const em_conv_params *p, const uint16_t *x, const uint16_t *gy,
                          const uint16_t *w, const uint16_t *bias, uint16_t *gx,
                          uint16_t *gw) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t HW = p->h * p->w, P = p->oh * p->ow, nb = bf16_images(p, kg);
    int64_t rows = nb > 1 ? p->oh : rows_per_item(p, kg * p->ow, COLS_MAX, p->n * p->groups, 0);
    int64_t ldmax = nb * rows * p->ow;
    size_t colsz = gx ? sizeof(float) : sizeof(uint16_t);
    void *cols = malloc(kg * ldmax * colsz);
    uint16_t *gyb = nb > 1 ? malloc(ocg * ldmax * sizeof(uint16_t)) : NULL;
    float *acc = malloc((gx ? cg * HW : ocg * kg) * sizeof(float));   /* plane or sum */
    int rc = cols && acc && (nb == 1 || gyb) ? 0 : EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups && !rc; g++) {
        const uint16_t *wg = w ? w + g * ocg * kg : NULL;
        if (gw) memset(acc, 0, ocg * kg * sizeof(float));
        for (int64_t n0 = 0; n0 < p->n && !rc; n0 += nb) {
            int64_t cnt = MIN(nb, p->n - n0);
            for (int64_t oh0 = 0; oh0 < p->oh && !rc; oh0 += rows) {
                int64_t oh1 = MIN(p->oh, oh0 + rows), np = (oh1 - oh0) * p->ow, ld = cnt * np;
                const uint16_t *blk = gy + (n0 * p->oc + g * ocg) * P + oh0 * p->ow;
                if (cnt > 1) {
                    for (int64_t j = 0; j < cnt; j++)
                        for (int64_t o = 0; o < ocg; o++)
                            memcpy(gyb + o * ld + j * np, blk + (j * p->oc + o) * P,
                                   np * sizeof(uint16_t));
                    blk = gyb;
                }
                int64_t ldb = cnt > 1 ? ld : P;
                if (gw) {
                    for (int64_t j = 0; j < cnt; j++)
                        im2col_bf16(p, cg, x + ((n0 + j) * p->c + g * cg) * HW, oh0, oh1,
                                    (uint16_t *)cols + j * np, ld);
                    rc = em_gemm_bf16_f32(kg, ocg, ld, cols, ld, 1, blk, 1, ldb, 1.0f, acc, ocg,
                                          1);
                    continue;
                }
                rc = em_gemm_bf16_f32(kg, ld, ocg, wg, 1, kg, blk, ldb, 1, 0.0f, cols, ld, 1);
                /* nb > 1: one block holds the images' every row; nb == 1: the plane
                 * sums the row blocks of its image */
                for (int64_t j = 0; j < cnt && !rc; j++) {
                    if (oh0 == 0) memset(acc, 0, cg * HW * sizeof(float));
                    col2im_f32(p, cg, (float *)cols + j * np, oh0, oh1, acc, ld);
                    if (oh1 == p->oh)
                        bf16_round_rows(acc, HW, cg, HW, bias ? bias + g * cg : NULL, NULL,
                                        gx + ((n0 + j) * p->c + g * cg) * HW, HW);
                }
            }
        }
        if (gw && !rc)   /* acc is gw_g^T */
            for (int64_t o = 0; o < ocg; o++)
                for (int64_t t = 0; t < kg; t++)
                    gw[(g * ocg + o) * kg + t] = em_f32_to_bf16(acc[t * ocg + o]);
    }
    free(cols);
    free(gyb);
    free(acc);
    return rc;
}

/* ------------------------------------------------------------------ forward */

/* NCHW: the input's values go into the im2col blocks as they are and the bfloat16 GEMM
 * multiplies them; y starts as the bias (beta = 1), so each output is rounded once.
 * Row blocks of at most COLS_MAX column elements, images and groups in turn; small
 * images (bf16_images) nb at a time side by side, their GEMM into a block that starts
 * as the bias and is copied out (one GEMM instead of nb re-packing the weights). */
int em_conv2d_forward_bf16(const em_conv_params *p, const uint16_t *x, const uint16_t *w,
                           const uint16_t *bias, uint16_t *y) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, ident = is_identity(p);
    if (p->n == 0 || p->oc == 0 || P == 0) return 0;
    if (bias || kg == 0)    /* the bias, or an empty sum's 0 */
        for (int64_t r = 0; r < p->n * p->oc; r++)
            for (int64_t j = 0; j < P; j++) y[r * P + j] = bias ? bias[r % p->oc] : 0;
    if (kg == 0) return 0;
    int64_t nb = ident ? 1 : bf16_images(p, kg);
    int64_t rows = ident ? p->oh : nb > 1 ? p->oh : MAX(1, MIN(p->oh, COLS_MAX / (kg * p->ow)));
    uint16_t *cols = ident ? NULL : malloc(nb * rows * p->ow * kg * sizeof(uint16_t));
    uint16_t *blk = nb > 1 ? malloc(ocg * nb * P * sizeof(uint16_t)) : NULL;
    int rc = (ident || cols) && (nb == 1 || blk) ? 0 : EM_GEMM_ENOMEM;
    for (int64_t n0 = 0; n0 < p->n && !rc; n0 += nb)
        for (int64_t g = 0; g < p->groups && !rc; g++)
            for (int64_t oh0 = 0; oh0 < p->oh && !rc; oh0 += rows) {
                int64_t oh1 = MIN(p->oh, oh0 + rows), np = (oh1 - oh0) * p->ow;
                int64_t cnt = MIN(nb, p->n - n0), ld = cnt * np;
                const uint16_t *xg = x + (n0 * p->c + g * cg) * p->h * p->w;
                uint16_t *yg = y + (n0 * p->oc + g * ocg) * P + oh0 * p->ow;
                for (int64_t j = 0; j < cnt && !ident; j++)
                    im2col_bf16(p, cg, xg + j * p->c * p->h * p->w, oh0, oh1, cols + j * np, ld);
                if (nb > 1 && bias)   /* the block starts as y's values: the bias */
                    for (int64_t o = 0; o < ocg; o++)
                        for (int64_t j = 0; j < cnt; j++)
                            memcpy(blk + o * ld + j * np, yg + (j * p->oc + o) * P,
                                   np * sizeof(uint16_t));
                rc = em_gemm(EM_BFLOAT16, ocg, ld, kg, 1.0, w + g * ocg * kg, kg, 1,
                             ident ? xg + oh0 * p->ow : cols, ident ? P : ld, 1,
                             bias ? 1.0 : 0.0, nb > 1 ? blk : yg, nb > 1 ? ld : P, 1);
                if (nb > 1)
                    for (int64_t o = 0; o < ocg; o++)
                        for (int64_t j = 0; j < cnt; j++)
                            memcpy(yg + (j * p->oc + o) * P, blk + o * ld + j * np,
                                   np * sizeof(uint16_t));
            }
    free(cols);
    free(blk);
    return rc;
}

/* NHWC: y (n * P, oc) starts as the bias; per group, blocks of pixels of the whole batch
 * (small images share a GEMM) gathered by im2row as bfloat16, times the OHWI weight
 * rows; a 1x1 stride-1 unpadded convolution multiplies the input in place. */
int em_conv2d_forward_nhwc_bf16(const em_conv_params *p, const uint16_t *x, const uint16_t *w,
                                const uint16_t *bias, uint16_t *y) {
    int64_t P = p->oh * p->ow, cg = p->c / p->groups, ocg = p->oc / p->groups;
    int64_t kg = cg * p->kh * p->kw, NP = p->n * P;
    if (p->n == 0 || p->oc == 0 || P == 0) return 0;
    if (bias || kg == 0) bf16_fill_bias(y, NP, p->oc, NULL, bias);
    if (kg == 0) return 0;
    double beta = bias ? 1.0 : 0.0;
    if (is_identity(p)) {
        for (int64_t g = 0; g < p->groups; g++)
            if (em_gemm(EM_BFLOAT16, NP, ocg, cg, 1.0, x + g * cg, p->c, 1, w + g * ocg * kg, 1,
                        kg, beta, y + g * ocg, p->oc, 1))
                return EM_GEMM_ENOMEM;
        return 0;
    }
    int64_t qb = MIN(NP, MAX(BF_MIN_ROWS, COLS_MAX / kg));
    uint16_t *rows = malloc(qb * kg * sizeof(uint16_t));
    if (!rows) return EM_GEMM_ENOMEM;
    int rc = 0;
    for (int64_t g = 0; g < p->groups && !rc; g++)
        for (int64_t Q0 = 0; Q0 < NP && !rc; Q0 += qb) {
            int64_t np = MIN(qb, NP - Q0);
            im2row_bf16(p, cg, x + g * cg, Q0, Q0 + np, rows);
            rc = em_gemm(EM_BFLOAT16, np, ocg, kg, 1.0, rows, kg, 1, w + g * ocg * kg, 1, kg,
                         beta, y + Q0 * p->oc + g * ocg, p->oc, 1);
        }
    free(rows);
    return rc;
}

/* --------------------------------------------------------------- grad_input */

/* Whether grad_input runs as the forward of grad_out with the weights flipped (q, as
 * conv.c's as_forward): at stride 1, unless the GEMM + col2im path is forced. */
static int bf16_as_forward(const em_conv_params *p, em_conv_params *q) {
    *q = *p;
    q->c = p->oc, q->h = p->oh, q->w = p->ow, q->oc = p->c, q->oh = p->h, q->ow = p->w;
    q->ph = (p->kh - 1) * p->dh - p->ph, q->pw = (p->kw - 1) * p->dw - p->pw;
    return p->sh == 1 && p->sw == 1 && q->ph >= 0 && q->pw >= 0 && conv_path != 1;
}

/* The flipped weights of bf16_as_forward's q: per group, input and output channels
 * swapped and the taps reversed; NCHW's (oc, cg, kh, kw) or NHWC's (oc, kh, kw, cg). */
static uint16_t *bf16_flipped(const em_conv_params *p, const uint16_t *w, int nhwc) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    uint16_t *wt = malloc(p->oc * cg * kk * sizeof(uint16_t));
    if (!wt) return NULL;
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t o = 0; o < ocg; o++)
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t t = 0; t < kk; t++) {
                    int64_t oi = g * ocg + o, ii = g * cg + ci, f = kk - 1 - t;
                    if (nhwc)   /* wt[ii, f, o] = w[oi, t, ci] */
                        wt[(ii * kk + f) * ocg + o] = w[(oi * kk + t) * cg + ci];
                    else        /* wt[ii, o, f] = w[oi, ci, t] */
                        wt[(ii * ocg + o) * kk + f] = w[(oi * cg + ci) * kk + t];
                }
    return wt;
}

int em_conv2d_backward_input_bf16(const em_conv_params *p, const uint16_t *gy,
                                  const uint16_t *w, const uint16_t *bias, uint16_t *gx) {
    int64_t kg = p->c / p->groups * p->kh * p->kw, HW = p->h * p->w, P = p->oh * p->ow;
    if (p->n == 0 || p->c == 0 || HW == 0) return 0;
    if (p->oc == 0 || P == 0 || kg == 0) {   /* no output: the bias alone */
        for (int64_t r = 0; r < p->n * p->c; r++)
            for (int64_t j = 0; j < HW; j++) gx[r * HW + j] = bias ? bias[r % p->c] : 0;
        return 0;
    }
    em_conv_params q;
    if (bf16_as_forward(p, &q)) {
        uint16_t *wt = bf16_flipped(p, w, 0);
        if (!wt) return EM_GEMM_ENOMEM;
        int rc = em_conv2d_forward_bf16(&q, gy, wt, bias, gx);
        free(wt);
        return rc;
    }
    return bf16_nchw_grad(p, NULL, gy, w, bias, gx, NULL);
}

int em_conv2d_backward_input_nhwc_bf16(const em_conv_params *p, const uint16_t *gy,
                                       const uint16_t *w, const uint16_t *bias, uint16_t *gx) {
    int64_t HW = p->h * p->w, P = p->oh * p->ow, cg = p->c / p->groups;
    int64_t ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    if (p->n == 0 || p->c == 0 || HW == 0) return 0;
    if (p->oc == 0 || P == 0 || kg == 0) {
        bf16_fill_bias(gx, p->n * HW, p->c, NULL, bias);
        return 0;
    }
    if (is_identity(p)) {   /* gx (n * P, cg) = gy (n * P, ocg) @ w (ocg, cg) + bias */
        if (bias) bf16_fill_bias(gx, p->n * HW, p->c, NULL, bias);
        for (int64_t g = 0; g < p->groups; g++)
            if (em_gemm(EM_BFLOAT16, p->n * P, cg, ocg, 1.0, gy + g * ocg, p->oc, 1,
                        w + g * ocg * kg, kg, 1, bias ? 1.0 : 0.0, gx + g * cg, p->c, 1))
                return EM_GEMM_ENOMEM;
        return 0;
    }
    em_conv_params q;
    if (bf16_as_forward(p, &q)) {
        uint16_t *wt = bf16_flipped(p, w, 1);
        if (!wt) return EM_GEMM_ENOMEM;
        int rc = em_conv2d_forward_nhwc_bf16(&q, gy, wt, bias, gx);
        free(wt);
        return rc;
    }
    /* per image and group: rows (np, kg) = grad_out's pixel block @ W_g in float32,
     * scattered by row2im into the image's float32 plane (HW, cg), rounded once */
    em_conv_params pc = *p;   /* the plane's pixel stride is cg */
    pc.c = cg, pc.groups = 1;
    int64_t qb = MIN(P, MAX(1, COLS_MAX / kg));
    float *rows = malloc(qb * kg * sizeof(float)), *plane = malloc(HW * cg * sizeof(float));
    int rc = rows && plane ? 0 : EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups && !rc; g++)
        for (int64_t n = 0; n < p->n && !rc; n++) {
            memset(plane, 0, HW * cg * sizeof(float));
            for (int64_t q0 = 0; q0 < P && !rc; q0 += qb) {
                int64_t np = MIN(qb, P - q0);
                rc = em_gemm_bf16_f32(np, kg, ocg, gy + (n * P + q0) * p->oc + g * ocg, p->oc,
                                      1, w + g * ocg * kg, kg, 1, 0.0f, rows, kg, 1);
                if (!rc) row2im_f32(&pc, cg, rows, q0, q0 + np, plane);
            }
            if (!rc)
                bf16_round_rows(plane, cg, HW, cg, NULL, bias ? bias + g * cg : NULL,
                                gx + n * HW * p->c + g * cg, p->c);
        }
    free(rows);
    free(plane);
    return rc;
}

/* -------------------------------------------------------------- grad_weight */

int em_conv2d_backward_weight_bf16(const em_conv_params *p, const uint16_t *x,
                                   const uint16_t *gy, uint16_t *gw) {
    int64_t kg = p->c / p->groups * p->kh * p->kw;
    memset(gw, 0, p->oc * kg * sizeof(uint16_t));
    if (p->n == 0 || p->oh * p->ow == 0 || p->oc == 0 || kg == 0) return 0;
    return bf16_nchw_grad(p, x, gy, NULL, NULL, NULL, gw);
}

/* NHWC: gw_g (ocg, kg) = grad_out^T @ im2row over the batch's pixels; a 1x1 stride-1
 * unpadded convolution is one bfloat16 GEMM over all of them (one rounding), else
 * float32 GEMMs over pixel blocks (at least BF_MIN_K pixels: the sum's k) into a
 * float32 sum rounded once. */
int em_conv2d_backward_weight_nhwc_bf16(const em_conv_params *p, const uint16_t *x,
                                        const uint16_t *gy, uint16_t *gw) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t NP = p->n * p->oh * p->ow;
    memset(gw, 0, p->oc * kg * sizeof(uint16_t));
    if (NP == 0 || p->oc == 0 || kg == 0) return 0;
    if (is_identity(p)) {
        for (int64_t g = 0; g < p->groups; g++)
            if (em_gemm(EM_BFLOAT16, ocg, cg, NP, 1.0, gy + g * ocg, 1, p->oc, x + g * cg, p->c,
                        1, 0.0, gw + g * ocg * kg, kg, 1))
                return EM_GEMM_ENOMEM;
        return 0;
    }
    int64_t qb = MIN(NP, MAX(BF_MIN_K, COLS_MAX / kg));
    float *acc = malloc(ocg * kg * sizeof(float));
    uint16_t *rows = malloc(qb * kg * sizeof(uint16_t));
    int rc = acc && rows ? 0 : EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups && !rc; g++) {
        for (int64_t Q0 = 0; Q0 < NP && !rc; Q0 += qb) {
            int64_t np = MIN(qb, NP - Q0);
            im2row_bf16(p, cg, x + g * cg, Q0, Q0 + np, rows);
            rc = em_gemm_bf16_f32(ocg, kg, np, gy + Q0 * p->oc + g * ocg, 1, p->oc, rows, kg, 1,
                                  Q0 ? 1.0f : 0.0f, acc, kg, 1);
        }
        if (!rc) bf16_round_rows(acc, kg, ocg, kg, NULL, NULL, gw + g * ocg * kg, kg);
    }
    free(acc);
    free(rows);
    return rc;
}
