/* ember's CPU convolution (see conv.h for the contract).
 *
 * Forward, three algorithms:
 *
 * - direct: no im2col. Each work item (image, group, band of output rows) copies
 *   a block of input channels, zero-padded, into a small scratch buffer whose
 *   columns are split by stride phase (column q of phase r is padded column
 *   q * sw + r), so that for every tap (channel, a, b) the inputs of NR adjacent
 *   outputs of one row are NR contiguous scratch elements. A register tile of
 *   MR output channels x NR outputs then takes one broadcast weight and two
 *   vector loads per tap, like a GEMM micro-kernel whose B panel is read in place
 *   through a table of tap offsets. Output channels are split into blocks of
 *   near-equal height <= MR, whose weights are packed once per call (interleaved,
 *   zero-padded). Taps are done TAPS_MAX at a time (channel blocks), accumulating
 *   into the output. Compiled for AVX2+FMA and for the baseline,
 *   chosen at run time.
 * - im2col + GEMM: a block of output rows' columns (taps x pixels) is built in a
 *   buffer of at most COLS_MAX elements and multiplied by the group's weights with
 *   the shared GEMM (gemm.h); a 1x1 stride-1 unpadded convolution multiplies the
 *   input in place.
 * - image-blocked direct (small outputs, stride 1: ResNet's 8x8 and 4x4 layers): the
 *   direct kernel's tile over NR images of one pixel instead of NR pixels of one row,
 *   summing only the taps inside the input (see blocked()).
 * use_blocked() and use_direct() choose by shape.
 *
 * Backward: grad_input = W^T @ grad_out per row block, scattered back by col2im
 * (one work item per image and group, since the blocks of an image overlap in the
 * input), or, at stride 1 where the forward would take the direct kernel, that
 * forward over grad_out with the weights transposed and flipped (as_forward; the
 * direct or the image-blocked kernel);
 * grad_weight = grad_out @ cols^T accumulated over images and row blocks, into one
 * buffer per thread that are summed at the end, or, with few taps per output channel
 * (a first layer's), by dot products of grad_out rows with shifted input rows
 * (gw_direct, AVX-512/AVX2/baseline chosen at run time), or, for small outputs at
 * column stride 1, by a GEMM per tap and output row over (pixel, image) that skips
 * the padding (gw_blocked). Small images
 * (images_per_item) put several images' columns side by side in one GEMM, forward
 * and backward.
 *
 * Work items are handed out through em_parallel_run when the call is large
 * (PAR_MIN multiply-adds); GEMMs made by a worker then run inline on it. A small
 * call, or one with a single item, runs on the caller, and its GEMMs may thread.
 *
 * This file is also its own template: the body at the end is included once for
 * float and once for double (CONV_TEMPLATE), and its im2col once more for bfloat16
 * (conv_bf16.c: the bfloat16 kernels).
 */
#ifndef CONV_TEMPLATE
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "conv.h"
#include "gemm.h"
#include "threads.h"

#define EM_FLOAT32 7
#define EM_FLOAT64 8
#define EM_BFLOAT16 11

#define PAR_MIN ((int64_t)1 << 22)    /* multiply-adds worth waking threads for */
#define COLS_MAX ((int64_t)1 << 18)   /* elements of an im2col block */
#define SCRATCH_MAX ((int64_t)1 << 16) /* elements of a direct-kernel input block */
#define OUT_MAX ((int64_t)1 << 15)   /* outputs of a direct-kernel item over several passes */
#define TAPS_MAX 256                  /* taps per direct-kernel pass */
#define MR 6                          /* output channels of a direct-kernel tile */
#define GW_DIRECT_TAPS 16             /* grad_weight by gw_direct up to these taps */

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define INLINE static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

static int conv_path;   /* 0 auto, 1 GEMM, 2 direct, 3 image-blocked direct */

void em_conv_set_path(int path) { conv_path = path >= 1 && path <= 3 ? path : 0; }

static int have_avx2_fma = -1;

static int have_avx512 = -1;

static int use_avx512(void) {
    if (have_avx512 < 0) {
        __builtin_cpu_init();
        have_avx512 = __builtin_cpu_supports("avx512f");
    }
    return have_avx512;
}

static int use_avx2(void) {
    if (have_avx2_fma < 0) {
        __builtin_cpu_init();
        have_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return have_avx2_fma;
}

/* floor(a / b) and ceil(a / b) for b > 0 and any a */
static inline int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* The outputs j of a row whose input column j * sw + off lies in [0, w): [*lo, *hi). */
static void valid_cols(int64_t ow, int64_t w, int64_t sw, int64_t off, int64_t *lo,
                       int64_t *hi) {
    int64_t l = MAX(0, ceil_div(-off, sw)), h = MIN(ow, floor_div(w - 1 - off, sw) + 1);
    *lo = MIN(l, ow);
    *hi = MAX(h, *lo);
}

static int is_identity(const em_conv_params *p) {
    return p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->ph == 0 && p->pw == 0 &&
           p->oh == p->h && p->ow == p->w;
}

/* Output rows per item of a row-blocked loop: the rows whose `per_row` elements fit
 * in `budget`, and with threads few enough for 4 items per thread over `images`. */
static int64_t rows_per_item(const em_conv_params *p, int64_t per_row, int64_t budget,
                             int64_t images, int threaded) {
    int64_t r = MAX(1, budget / MAX(per_row, 1));
    if (threaded) {
        int64_t want = 4 * (int64_t)em_get_num_threads();
        if (images < want) r = MIN(r, MAX(1, p->oh / ceil_div(want, MAX(images, 1))));
    }
    return MIN(r, MAX(p->oh, 1));
}

/* Shared state of one call's work items. */
typedef struct {
    const em_conv_params *p;
    const void *x, *w, *bias, *gy;
    void *out;
    void *wpack;                /* direct: packed weights */
    int64_t items, rows;        /* items, output rows per item */
    int64_t blocks;             /* row blocks per image and group */
    int64_t cb, wq;             /* direct: channels per pass, scratch columns per phase */
    int64_t cols;               /* elements of a thread's im2col buffer */
    int64_t ipi;                /* batched: images per item */
    int64_t *idx;               /* batched: tap_index() */
    atomic_llong next;
    atomic_int err;
    void *part[EM_MAX_THREADS]; /* grad_weight: the sums of threads 1.. (0 sums into out) */
} job_t;

static int threaded(int64_t items, int64_t work) {
    return items >= 2 && work >= PAR_MIN && em_get_num_threads() > 1 && !em_in_parallel();
}

/* fn over the job's items: on the pool when worth it, else on the caller. */
static int run(job_t *job, int64_t work, void (*fn)(void *, int, int)) {
    atomic_init(&job->next, 0);
    atomic_init(&job->err, 0);
    if (threaded(job->items, work))
        em_parallel_run((int)MIN(job->items, em_get_num_threads()), fn, job);
    else
        fn(job, 0, 1);
    return atomic_load(&job->err) ? EM_GEMM_ENOMEM : 0;
}

static inline int64_t next_item(job_t *job) {
    if (atomic_load_explicit(&job->err, memory_order_relaxed)) return job->items;
    return atomic_fetch_add(&job->next, 1);
}

/* Images per work item for the GEMM paths: 1, or, when an image's output is small
 * (P = oh * ow < BATCH_COLS) and its im2col is not the identity, several images whose
 * im2col blocks (and grad_out rows) lie side by side as one GEMM's columns: one
 * image's few columns would repack the weights (the GEMM's A) for a handful of
 * columns each time, and in grad_weight make k (the pixels) tiny. The batch is as
 * large as BATCH_MAX elements of im2col allow, up to BATCH_IMAGES_COLS columns (ResNet's
 * 4x4 layers: 64 images, 1024 columns, packing the 512x4608 weights once instead of 5
 * times), split into items of near-equal size. */
#define BATCH_COLS 256
#define BATCH_IMAGES_COLS 1024
#define BATCH_MAX ((int64_t)1 << 22)   /* elements of a batched im2col block */
/* Output rows at least this wide go through im2col/col2im's row copies in a batch
 * too; the tap index serves the narrower ones (perf, the small CNN's 14x14 layer's
 * grad_weight: the index gathers took 0.92x the GEMM micro-kernel's time, the row
 * copies 0.75x) */
#define ROW_COPY_MIN 8

static int64_t images_per_item(const em_conv_params *p) {
    int64_t P = p->oh * p->ow, kg = p->c / p->groups * p->kh * p->kw;
    if (P >= BATCH_COLS || p->n < 2 || is_identity(p)) return 1;
    int64_t b = MIN(p->n, BATCH_IMAGES_COLS / P);
    b = MIN(b, MAX(1, BATCH_MAX / MAX(kg * P, 1)));
    int nt = em_get_num_threads();
    if (nt > 1 && !em_in_parallel())    /* two items per thread at least */
        b = MIN(b, MAX(1, p->n * p->groups / (2 * nt)));
    int64_t items = (p->n + b - 1) / b;
    return (p->n + items - 1) / items;   /* 64 images by <= 56: 32 + 32, not 56 + 8 */
}

/* idx[t * P + q] = the offset (ih * w + iw) in its channel plane of the input that
 * tap t = (a, b) of output pixel q reads, -1 in the padding: the batched im2col and
 * col2im gather and scatter through it, one short loop per (channel, tap, image),
 * instead of a copy per output row (4 elements at 4x4). */
static int64_t *tap_index(const em_conv_params *p) {
    int64_t P = p->oh * p->ow;
    int64_t *idx = malloc(p->kh * p->kw * P * sizeof(int64_t));
    if (!idx) return NULL;
    for (int64_t a = 0, t = 0; a < p->kh; a++)
        for (int64_t b = 0; b < p->kw; b++, t++)
            for (int64_t i = 0; i < p->oh; i++)
                for (int64_t j = 0; j < p->ow; j++) {
                    int64_t ih = i * p->sh - p->ph + a * p->dh, iw = j * p->sw - p->pw + b * p->dw;
                    idx[t * P + i * p->ow + j] =
                        ih < 0 || ih >= p->h || iw < 0 || iw >= p->w ? -1 : ih * p->w + iw;
                }
    return idx;
}

/* Whether the GEMM has its AVX-512 kernel: the direct kernel (AVX2) then loses to
 * im2col + GEMM wherever the GEMM has rows enough. */
static int gemm_wide(void) { return strncmp(em_gemm_kernel_name(), "avx512", 6) == 0; }

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

#define CONV_TEMPLATE
#define T float
#define SUF f32
#define VL 8
#define DT EM_FLOAT32
#include "conv.c"
#undef T
#undef SUF
#undef VL
#undef DT
#define T double
#define SUF f64
#define VL 4
#define DT EM_FLOAT64
#include "conv.c"
#undef T
#undef SUF
#undef VL
#undef DT
#define CONV_IM2COL_ONLY   /* bfloat16: only im2col/im2row, which move the 2-byte values */
#define T uint16_t
#define SUF bf16
#define VL 16
#include "conv.c"
#undef CONV_IM2COL_ONLY

#include "conv_bf16.c"   /* bfloat16, both layouts, built on the helpers above */

#else /* CONV_TEMPLATE: the kernels for T (float or double), names suffixed SUF */

#define FN(name) CAT(name, SUF)
#define NR (2 * VL)
#define VEC FN(vec)

typedef T VEC __attribute__((vector_size(32)));

/* unaligned vector load and store (macros: a 32-byte vector argument of a function
 * compiled without AVX would change its ABI) */
#define LOADU(p) ({ VEC v_; memcpy(&v_, (p), sizeof v_); v_; })
#define STOREU(p, v) do { VEC v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)
#define LOADV(VT, p) ({ VT v_; memcpy(&v_, (p), sizeof v_); v_; })
typedef T FN(wvec) __attribute__((vector_size(64)));   /* gw_direct's AVX-512 vectors */
#define WVEC FN(wvec)

/* ------------------------------------------------------------ im2col / col2im */

/* cols[t * ld + (i - oh0) * ow + j] (tap t = (ci, a, b), output rows i in [oh0, oh1))
 * = the input x[ci, i * sh - ph + a * dh, j * sw - pw + b * dw] of one image and group,
 * 0 outside. ld: the row stride of cols ((oh1 - oh0) * ow, or more when several images
 * share the rows). */
static void FN(im2col)(const em_conv_params *p, int64_t cg, const T *restrict x,
                       int64_t oh0, int64_t oh1, T *restrict cols, int64_t ld) {
    int64_t np = ld, t = 0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t a = 0; a < p->kh; a++)
            for (int64_t b = 0; b < p->kw; b++, t++) {
                int64_t off = b * p->dw - p->pw, lo, hi;
                valid_cols(p->ow, p->w, p->sw, off, &lo, &hi);
                for (int64_t i = oh0; i < oh1; i++) {
                    T *restrict r = cols + t * np + (i - oh0) * p->ow;
                    int64_t ih = i * p->sh - p->ph + a * p->dh;
                    if (ih < 0 || ih >= p->h) {
                        memset(r, 0, p->ow * sizeof(T));
                        continue;
                    }
                    const T *restrict src = x + (ci * p->h + ih) * p->w;
                    for (int64_t j = 0; j < lo; j++) r[j] = 0;
                    if (p->sw == 1)
                        memcpy(r + lo, src + lo + off, (hi - lo) * sizeof(T));
                    else
                        for (int64_t j = lo; j < hi; j++) r[j] = src[j * p->sw + off];
                    for (int64_t j = hi; j < p->ow; j++) r[j] = 0;
                }
            }
}

/* rows[q - q0, (a * kw + b) * cg + ci] = x[image, ih, iw, ci] of output pixel q, 0
 * outside; q = image * (oh * ow) + pixel may run across images (the rows of an NHWC
 * output are the batch's pixels in order); x points at channel g * cg of image 0. */
static void FN(im2row)(const em_conv_params *p, int64_t cg, const T *restrict x, int64_t q0,
                       int64_t q1, T *restrict rows) {
    int64_t P = p->oh * p->ow, kg = p->kh * p->kw * cg;
    for (int64_t q = q0; q < q1; q++) {
        int64_t i = q % P / p->ow, j = q % p->ow;
        const T *xn = x + q / P * p->h * p->w * p->c;
        T *restrict r = rows + (q - q0) * kg;
        for (int64_t a = 0; a < p->kh; a++) {
            int64_t ih = i * p->sh - p->ph + a * p->dh;
            for (int64_t b = 0; b < p->kw; b++, r += cg) {
                int64_t iw = j * p->sw - p->pw + b * p->dw;
                if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w)
                    memset(r, 0, cg * sizeof(T));
                else
                    memcpy(r, xn + (ih * p->w + iw) * p->c, cg * sizeof(T));
            }
        }
    }
}

#ifndef CONV_IM2COL_ONLY
/* The adjoint of im2col: gx[ci, ih, iw] += cols[t, pixel] for every valid pair. */
static void FN(col2im)(const em_conv_params *p, int64_t cg, const T *restrict cols,
                       int64_t oh0, int64_t oh1, T *restrict gx, int64_t ld) {
    int64_t np = ld, t = 0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t a = 0; a < p->kh; a++)
            for (int64_t b = 0; b < p->kw; b++, t++) {
                int64_t off = b * p->dw - p->pw, lo, hi;
                valid_cols(p->ow, p->w, p->sw, off, &lo, &hi);
                for (int64_t i = oh0; i < oh1; i++) {
                    int64_t ih = i * p->sh - p->ph + a * p->dh;
                    if (ih < 0 || ih >= p->h) continue;
                    const T *restrict r = cols + t * np + (i - oh0) * p->ow;
                    T *restrict dst = gx + (ci * p->h + ih) * p->w;
                    if (p->sw == 1)
                        for (int64_t j = lo; j < hi; j++) dst[j + off] += r[j];
                    else
                        for (int64_t j = lo; j < hi; j++) dst[j * p->sw + off] += r[j];
                }
            }
}

/* ---------------------------------------------------------- direct forward */

/* The first channel of block b when ocg channels are split into nob blocks of
 * near-equal height (32 = 6 + 6 + 5 + 5 + 5 + 5, not 6 * 5 + 2: fewer idle lanes). */
static inline int64_t FN(block_start)(int64_t ocg, int64_t nob, int64_t b) {
    return b * (ocg / nob) + MIN(b, ocg % nob);
}

/* One M x NR tile of y (row stride rsc; M x nr of it are real): the sum over kc taps
 * of a[k, 0:M] (packed, MR apart) times the NR inputs at xb + offs[k], added to y
 * (or to the bias when `first`, the first channel block). M is a constant after
 * inlining, so each block height gets its own register allocation. */
INLINE void FN(tile)(const int M, int64_t kc, const T *restrict a, const T *restrict xb,
                     const int64_t *restrict offs, T *restrict c, int64_t rsc, int64_t nr,
                     int first, const T *restrict bias) {
    VEC acc[MR][2];
    T tmp[NR];
    for (int i = 0; i < M; i++) {
        if (first) {
            acc[i][0] = acc[i][1] = (VEC){0} + (bias ? bias[i] : (T)0);
        } else if (nr == NR) {
            acc[i][0] = LOADU(c + i * rsc);
            acc[i][1] = LOADU(c + i * rsc + VL);
        } else {
            memset(tmp, 0, sizeof tmp);
            memcpy(tmp, c + i * rsc, nr * sizeof(T));
            acc[i][0] = LOADU(tmp);
            acc[i][1] = LOADU(tmp + VL);
        }
    }
    for (int64_t k = 0; k < kc; k++) {
        const T *restrict bp = xb + offs[k];
        const T *restrict ak = a + k * MR;
        VEC b0 = LOADU(bp), b1 = LOADU(bp + VL);
        for (int i = 0; i < M; i++) {
            acc[i][0] += ak[i] * b0;
            acc[i][1] += ak[i] * b1;
        }
    }
    for (int i = 0; i < M; i++) {
        if (nr == NR) {
            STOREU(c + i * rsc, acc[i][0]);
            STOREU(c + i * rsc + VL, acc[i][1]);
        } else {
            STOREU(tmp, acc[i][0]);
            STOREU(tmp + VL, acc[i][1]);
            memcpy(c + i * rsc, tmp, nr * sizeof(T));
        }
    }
}

/* tile() for a block of m <= MR output channels */
INLINE void FN(tile_m)(int64_t m, int64_t kc, const T *a, const T *xb, const int64_t *offs,
                       T *c, int64_t rsc, int64_t nr, int first, const T *bias) {
    switch (m) {
    case 6: FN(tile)(6, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    case 5: FN(tile)(5, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    case 4: FN(tile)(4, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    case 3: FN(tile)(3, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    case 2: FN(tile)(2, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    default: FN(tile)(1, kc, a, xb, offs, c, rsc, nr, first, bias); break;
    }
}

/* Channels [c0, c0 + nc) of one image (x points at its first channel), padded input
 * rows [r0, r0 + rows), into the scratch layout [channel][row][phase][q] (wq columns
 * per phase), followed by NR zeros that tail tiles may read. */
static void FN(fill)(const em_conv_params *p, const T *restrict x, int64_t nc, int64_t r0,
                     int64_t rows, int64_t wq, T *restrict s) {
    int64_t sw = p->sw, rstride = sw * wq;
    for (int64_t ci = 0; ci < nc; ci++)
        for (int64_t r = 0; r < rows; r++) {
            T *restrict dst = s + (ci * rows + r) * rstride;
            int64_t ih = r0 + r - p->ph;
            if (ih < 0 || ih >= p->h) {
                memset(dst, 0, rstride * sizeof(T));
                continue;
            }
            const T *restrict src = x + (ci * p->h + ih) * p->w;
            for (int64_t phase = 0; phase < sw; phase++) {
                int64_t off = phase - p->pw, lo, hi;   /* iw = q * sw + off */
                valid_cols(wq, p->w, sw, off, &lo, &hi);
                T *restrict d = dst + phase * wq;
                for (int64_t q = 0; q < lo; q++) d[q] = 0;
                if (sw == 1)
                    memcpy(d + lo, src + lo + off, (hi - lo) * sizeof(T));
                else
                    for (int64_t q = lo; q < hi; q++) d[q] = src[q * sw + off];
                for (int64_t q = hi; q < wq; q++) d[q] = 0;
            }
        }
    memset(s + nc * rows * rstride, 0, NR * sizeof(T));
}

INLINE void FN(direct_item)(job_t *job, int64_t item, T *restrict s, int64_t *restrict offs) {
    const em_conv_params *p = job->p;
    const T *x = job->x, *bias = job->bias, *wpack = job->wpack;
    T *y = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, g = (item / job->blocks) % p->groups;
    int64_t n = item / job->blocks / p->groups, blk = item % job->blocks;
    int64_t oh0 = blk * job->rows, oh1 = MIN(p->oh, oh0 + job->rows);
    int64_t rows = (oh1 - oh0 - 1) * p->sh + (p->kh - 1) * p->dh + 1;
    int64_t wq = job->wq, rstride = p->sw * wq, kk = p->kh * p->kw, taps = cg * kk;
    int64_t nob = (ocg + MR - 1) / MR, P = p->oh * p->ow;
    for (int64_t c0 = 0; c0 < cg; c0 += job->cb) {
        int64_t nc = MIN(job->cb, cg - c0), t = 0;
        FN(fill)(p, x + (n * p->c + g * cg + c0) * p->h * p->w, nc, oh0 * p->sh, rows, wq, s);
        for (int64_t ci = 0; ci < nc; ci++)
            for (int64_t a = 0; a < p->kh; a++)
                for (int64_t b = 0; b < p->kw; b++)
                    offs[t++] = (ci * rows + a * p->dh) * rstride + (b * p->dw % p->sw) * wq +
                                b * p->dw / p->sw;
        for (int64_t i = oh0; i < oh1; i++) {
            const T *xr = s + (i - oh0) * p->sh * rstride;
            for (int64_t j = 0; j < p->ow; j += NR) {
                int64_t nr = MIN(NR, p->ow - j);
                for (int64_t ob = 0, o = g * ocg; ob < nob; ob++) {
                    int64_t m = ocg / nob + (ob < ocg % nob);   /* see block_start() */
                    FN(tile_m)(m, t, wpack + ((g * nob + ob) * taps + c0 * kk) * MR, xr + j,
                               offs, y + (n * p->oc + o) * P + i * p->ow + j, P, nr, c0 == 0,
                               bias ? bias + o : NULL);
                    o += m;
                }
            }
        }
    }
}

static AVX2 void FN(direct_item_avx2)(job_t *job, int64_t item, T *s, int64_t *offs) {
    FN(direct_item)(job, item, s, offs);
}

static void FN(direct_item_generic)(job_t *job, int64_t item, T *s, int64_t *offs) {
    FN(direct_item)(job, item, s, offs);
}

static void FN(direct_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    int64_t rows = (job->rows - 1) * p->sh + (p->kh - 1) * p->dh + 1;
    T *s = malloc((job->cb * rows * p->sw * job->wq + NR) * sizeof(T));
    int64_t *offs = malloc(job->cb * p->kh * p->kw * sizeof(int64_t));
    void (*item_fn)(job_t *, int64_t, T *, int64_t *) =
        use_avx2() ? FN(direct_item_avx2) : FN(direct_item_generic);
    if (!s || !offs)
        atomic_store(&job->err, 1);
    else
        for (int64_t it; (it = next_item(job)) < job->items;) item_fn(job, it, s, offs);
    free(s);
    free(offs);
    (void)tid, (void)nthreads;
}

static int FN(direct)(const em_conv_params *p, const T *x, const T *w, const T *bias, T *y) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    int64_t taps = cg * kk, nob = (ocg + MR - 1) / MR;
    int64_t work = p->n * p->oc * p->oh * p->ow * taps;
    job_t job = {.p = p, .x = x, .bias = bias, .out = y};
    int64_t passes = (cg + MAX(1, TAPS_MAX / kk) - 1) / MAX(1, TAPS_MAX / kk);
    job.cb = (cg + passes - 1) / passes;   /* 64 channels: 22 + 22 + 20, not 28 + 28 + 8 */
    job.wq = p->ow + (p->kw - 1) * p->dw / p->sw;
    int64_t per_row = job.cb * p->sh * p->sw * job.wq;   /* scratch per output row */
    job.rows = rows_per_item(p, per_row, SCRATCH_MAX, p->n * p->groups,
                             threaded(p->n * p->groups * p->oh, work));
    if (passes > 1)   /* each pass adds to the item's outputs: keep them in L2 */
        job.rows = MIN(job.rows, MAX(1, OUT_MAX / (ocg * p->ow)));
    job.blocks = (p->oh + job.rows - 1) / job.rows;
    job.items = p->n * p->groups * job.blocks;
    T *wp = malloc(p->groups * nob * MR * taps * sizeof(T));
    if (!wp) return EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t ob = 0; ob < nob; ob++) {
            int64_t o0 = FN(block_start)(ocg, nob, ob), o1 = FN(block_start)(ocg, nob, ob + 1);
            for (int64_t t = 0; t < taps; t++)
                for (int64_t i = 0; i < MR; i++)
                    wp[((g * nob + ob) * taps + t) * MR + i] =
                        o0 + i < o1 ? w[(g * ocg + o0 + i) * taps + t] : 0;
        }
    job.wpack = wp;
    int rc = run(&job, work, FN(direct_worker));
    free(wp);
    return rc;
}

/* ------------------------------- image-blocked direct forward (small images) */

/* For outputs of few pixels (ResNet's 8x8 and 4x4 layers) a row holds less than a
 * register tile and im2col's columns are a third zeros (the padding of a 4x4 output
 * under a 3x3 kernel). Here the tile's NR lanes are NR images instead of NR pixels:
 * an item (NR images, one group) copies its input to xb[pixel][channel][image], so
 * that every tap (channel, a, b) of an output pixel is NR contiguous elements, and an
 * MR-channel tile sums over only the taps (a, b) that fall inside the input (the
 * padding is skipped, not multiplied). Weights are packed per block of MR output
 * channels as [tap (a, b)][channel][MR]. Channels go in passes of BLK_CC, and output
 * channels in groups of BLK_OB tiles, so that a group's packed weights stay in L2
 * while every pixel of the item uses them. */
#define BLK_CC 32
#define BLK_OB 24
#define BLK_MAX ((int64_t)1 << 21)   /* elements of an item's input or output block */

/* One M x NR tile: y (NR images of M output channels, NR apart) = bias or y, plus the
 * sum over nt taps of cc channels: packed weights a + tw[t] (MR per channel) times the
 * NR images at xb + toff[t] (NR per channel). */
INLINE void FN(btile)(const int M, int64_t nt, const int64_t *restrict toff,
                      const int64_t *restrict tw, int64_t cc, const T *restrict a,
                      const T *restrict xb, T *restrict y, int first, const T *restrict bias) {
    VEC acc[MR][2];
    for (int i = 0; i < M; i++) {
        if (first) {
            acc[i][0] = acc[i][1] = (VEC){0} + (bias ? bias[i] : (T)0);
        } else {
            acc[i][0] = LOADU(y + i * NR);
            acc[i][1] = LOADU(y + i * NR + VL);
        }
    }
    for (int64_t t = 0; t < nt; t++) {
        const T *restrict ap = a + tw[t], *restrict bp = xb + toff[t];
        for (int64_t k = 0; k < cc; k++) {
            VEC b0 = LOADU(bp + k * NR), b1 = LOADU(bp + k * NR + VL);
            for (int i = 0; i < M; i++) {
                acc[i][0] += ap[k * MR + i] * b0;
                acc[i][1] += ap[k * MR + i] * b1;
            }
        }
    }
    for (int i = 0; i < M; i++) {
        STOREU(y + i * NR, acc[i][0]);
        STOREU(y + i * NR + VL, acc[i][1]);
    }
}

INLINE void FN(btile_m)(int64_t m, int64_t nt, const int64_t *toff, const int64_t *tw,
                        int64_t cc, const T *a, const T *xb, T *y, int first, const T *bias) {
    switch (m) {
    case 6: FN(btile)(6, nt, toff, tw, cc, a, xb, y, first, bias); break;
    case 5: FN(btile)(5, nt, toff, tw, cc, a, xb, y, first, bias); break;
    case 4: FN(btile)(4, nt, toff, tw, cc, a, xb, y, first, bias); break;
    case 3: FN(btile)(3, nt, toff, tw, cc, a, xb, y, first, bias); break;
    case 2: FN(btile)(2, nt, toff, tw, cc, a, xb, y, first, bias); break;
    default: FN(btile)(1, nt, toff, tw, cc, a, xb, y, first, bias); break;
    }
}

/* xb: h * w * cg * NR, yb: P * ocg * NR elements; toff, tw: kh * kw each */
INLINE void FN(blocked_item)(job_t *job, int64_t item, T *restrict xb, T *restrict yb,
                             int64_t *restrict toff, int64_t *restrict tw) {
    const em_conv_params *p = job->p;
    const T *x = job->x, *bias = job->bias, *wpack = job->wpack;
    T *y = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    int64_t HW = p->h * p->w, P = p->oh * p->ow, nob = (ocg + MR - 1) / MR;
    int64_t g = item % p->groups, n0 = item / p->groups * NR, nb = MIN(NR, p->n - n0);
    for (int64_t ci = 0; ci < cg; ci++) {   /* xb[pixel][ci][image], zero past the batch */
        for (int64_t l = 0; l < nb; l++) {
            const T *restrict src = x + ((n0 + l) * p->c + g * cg + ci) * HW;
            for (int64_t q = 0; q < HW; q++) xb[(q * cg + ci) * NR + l] = src[q];
        }
        for (int64_t l = nb; l < NR; l++)
            for (int64_t q = 0; q < HW; q++) xb[(q * cg + ci) * NR + l] = 0;
    }
    const T *wg = wpack + g * nob * kk * cg * MR;
    for (int64_t c0 = 0; c0 < cg; c0 += BLK_CC) {
        int64_t cc = MIN(BLK_CC, cg - c0);
        for (int64_t ob0 = 0; ob0 < nob; ob0 += BLK_OB) {
            int64_t ob1 = MIN(nob, ob0 + BLK_OB);
            for (int64_t i = 0, q = 0; i < p->oh; i++)
                for (int64_t j = 0; j < p->ow; j++, q++) {
                    int64_t nt = 0;   /* the taps of pixel (i, j) inside the input */
                    for (int64_t a = 0; a < p->kh; a++) {
                        int64_t ih = i * p->sh - p->ph + a * p->dh;
                        if (ih < 0 || ih >= p->h) continue;
                        for (int64_t b = 0; b < p->kw; b++) {
                            int64_t iw = j * p->sw - p->pw + b * p->dw;
                            if (iw < 0 || iw >= p->w) continue;
                            toff[nt] = ((ih * p->w + iw) * cg + c0) * NR;
                            tw[nt++] = ((a * p->kw + b) * cg + c0) * MR;
                        }
                    }
                    for (int64_t ob = ob0; ob < ob1; ob++) {
                        int64_t o = FN(block_start)(ocg, nob, ob);
                        int64_t m = FN(block_start)(ocg, nob, ob + 1) - o;
                        FN(btile_m)(m, nt, toff, tw, cc, wg + ob * kk * cg * MR, xb,
                                    yb + (q * ocg + o) * NR, c0 == 0,
                                    bias ? bias + g * ocg + o : NULL);
                    }
                }
        }
    }
    for (int64_t l = 0; l < nb; l++)   /* y[image, channel, pixel] = yb[pixel, channel, image] */
        for (int64_t o = 0; o < ocg; o++) {
            T *restrict dst = y + ((n0 + l) * p->oc + g * ocg + o) * P;
            for (int64_t q = 0; q < P; q++) dst[q] = yb[(q * ocg + o) * NR + l];
        }
}

static AVX2 void FN(blocked_item_avx2)(job_t *job, int64_t item, T *xb, T *yb, int64_t *toff,
                                       int64_t *tw) {
    FN(blocked_item)(job, item, xb, yb, toff, tw);
}

static void FN(blocked_item_generic)(job_t *job, int64_t item, T *xb, T *yb, int64_t *toff,
                                     int64_t *tw) {
    FN(blocked_item)(job, item, xb, yb, toff, tw);
}

static void FN(blocked_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    int64_t kk = p->kh * p->kw;
    T *xb = malloc(p->h * p->w * (p->c / p->groups) * NR * sizeof(T));
    T *yb = malloc(p->oh * p->ow * (p->oc / p->groups) * NR * sizeof(T));
    int64_t *toff = malloc(2 * kk * sizeof(int64_t));
    void (*item_fn)(job_t *, int64_t, T *, T *, int64_t *, int64_t *) =
        use_avx2() ? FN(blocked_item_avx2) : FN(blocked_item_generic);
    if (!xb || !yb || !toff)
        atomic_store(&job->err, 1);
    else
        for (int64_t it; (it = next_item(job)) < job->items;)
            item_fn(job, it, xb, yb, toff, toff + kk);
    free(xb);
    free(yb);
    free(toff);
    (void)tid, (void)nthreads;
}

static int FN(blocked)(const em_conv_params *p, const T *x, const T *w, const T *bias, T *y) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    int64_t nob = (ocg + MR - 1) / MR;
    job_t job = {.p = p, .x = x, .bias = bias, .out = y};
    job.items = (p->n + NR - 1) / NR * p->groups;
    T *wp = malloc(p->groups * nob * kk * cg * MR * sizeof(T));
    if (!wp) return EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups; g++)   /* wp[g][ob][tap][ci][MR] */
        for (int64_t ob = 0; ob < nob; ob++) {
            int64_t o0 = FN(block_start)(ocg, nob, ob), o1 = FN(block_start)(ocg, nob, ob + 1);
            T *dst = wp + (g * nob + ob) * kk * cg * MR;
            for (int64_t t = 0; t < kk; t++)
                for (int64_t ci = 0; ci < cg; ci++)
                    for (int64_t i = 0; i < MR; i++)
                        dst[(t * cg + ci) * MR + i] =
                            o0 + i < o1 ? w[((g * ocg + o0 + i) * cg + ci) * kk + t] : 0;
        }
    job.wpack = wp;
    int rc = run(&job, p->n * p->oc * p->oh * p->ow * cg * kk, FN(blocked_worker));
    free(wp);
    return rc;
}

/* Whether an item's input and output blocks are of a sane size. */
static int FN(blocked_fits)(const em_conv_params *p) {
    return (double)p->h * p->w * (p->c / p->groups) * NR <= BLK_MAX &&
           (double)p->oh * p->ow * (p->oc / p->groups) * NR <= BLK_MAX;
}

/* The image-blocked kernel when the outputs are small (a row under half a tile, so
 * the direct kernel idles, and im2col's GEMM multiplies the padding), the batch
 * fills the lanes, and there are items for the threads. */
static int FN(use_blocked)(const em_conv_params *p) {
    if (!FN(blocked_fits)(p) || is_identity(p)) return 0;
    if (conv_path == 3) return 1;
    if (conv_path != 0) return 0;
    int64_t items = (p->n + NR - 1) / NR * p->groups;
    /* strided and 1x1 layers stay on im2col's GEMM, faster there (ResNet's 8x8 -> 4x4
     * 3x3 stride 2: 28 ms against 32, its 1x1 3.5 against 7.5) */
    return p->sh == 1 && p->sw == 1 && p->kh * p->kw > 1 && p->oh * p->ow <= 64 &&
           p->ow * 2 <= NR && p->n >= NR / 2 &&
           p->oc / p->groups >= 2 * MR && p->c / p->groups * p->kh * p->kw >= 64 &&
           items >= (em_in_parallel() ? 1 : em_get_num_threads());
}

/* ------------------------------------------- batched GEMM paths (small images) */

/* The batched items: item it is group it % groups of images [n0, n0 + nb); their
 * im2col blocks (and grad_out rows) lie side by side, ld = nb * P columns. */
static void FN(batch_item)(const job_t *job, int64_t it, int64_t *g, int64_t *n0,
                           int64_t *nb) {
    const em_conv_params *p = job->p;
    *g = it % p->groups;
    *n0 = it / p->groups * job->ipi;
    *nb = MIN(job->ipi, p->n - *n0);
}

/* tmp[o, j * P + q] = gy[n0 + j, g * ocg + o, q]: grad_out's rows of nb images. */
static void FN(gather_gy)(const em_conv_params *p, const T *gy, int64_t g, int64_t n0,
                          int64_t nb, T *restrict tmp) {
    int64_t ocg = p->oc / p->groups, P = p->oh * p->ow, ld = nb * P;
    for (int64_t j = 0; j < nb; j++)
        for (int64_t o = 0; o < ocg; o++)
            memcpy(tmp + o * ld + j * P, gy + ((n0 + j) * p->oc + g * ocg + o) * P,
                   P * sizeof(T));
}

/* im2col of images [0, nb) of a batched item (x: the first image's channel g * cg,
 * `stride` elements between images): cols[t, j * P + q] for tap t = (ci, a, b). */
static void FN(im2col_batch)(const em_conv_params *p, int64_t cg, const T *restrict x,
                             int64_t stride, int64_t nb, const int64_t *restrict idx,
                             T *restrict cols, int64_t ld) {
    int64_t P = p->oh * p->ow, kk = p->kh * p->kw, HW = p->h * p->w;
    if (p->ow >= ROW_COPY_MIN) {   /* rows wide enough to copy whole, as im2col does */
        for (int64_t j = 0; j < nb; j++) FN(im2col)(p, cg, x + j * stride, 0, p->oh, cols + j * P, ld);
        return;
    }
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t t = 0; t < kk; t++) {
            const int64_t *restrict ix = idx + t * P;
            T *restrict row = cols + (ci * kk + t) * ld;
            for (int64_t j = 0; j < nb; j++) {
                const T *restrict src = x + j * stride + ci * HW;
                T *restrict d = row + j * P;
                for (int64_t q = 0; q < P; q++) d[q] = ix[q] >= 0 ? src[ix[q]] : (T)0;
            }
        }
}

/* The adjoint: gx[image j, ci, idx] = sum of cols[t, j * P + q] (gx: the first image's
 * channel g * cg; written, not read). Each plane is summed in `plane` (HW + 1
 * elements: the padding's contributions land in the last one, so the loop has no
 * branch), in im2col's (ci, a, b, i, j) order as col2im's, then copied out. */
static void FN(col2im_batch)(const em_conv_params *p, int64_t cg, const T *restrict cols,
                             int64_t ld, int64_t nb, const int64_t *restrict idx,
                             T *restrict gx, int64_t stride, T *restrict plane) {
    int64_t P = p->oh * p->ow, kk = p->kh * p->kw, HW = p->h * p->w;
    if (p->ow >= ROW_COPY_MIN) {   /* col2im's row loops, the same sums in the same order */
        for (int64_t j = 0; j < nb; j++) {
            memset(gx + j * stride, 0, cg * HW * sizeof(T));
            FN(col2im)(p, cg, cols + j * P, 0, p->oh, gx + j * stride, ld);
        }
        return;
    }
    for (int64_t j = 0; j < nb; j++)
        for (int64_t ci = 0; ci < cg; ci++) {
            memset(plane, 0, (HW + 1) * sizeof(T));
            for (int64_t t = 0; t < kk; t++) {
                const int64_t *restrict ix = idx + t * P;
                const T *restrict r = cols + (ci * kk + t) * ld + j * P;
                for (int64_t q = 0; q < P; q++) plane[ix[q] >= 0 ? ix[q] : HW] += r[q];
            }
            memcpy(gx + j * stride + ci * HW, plane, HW * sizeof(T));
        }
}

static void FN(fwd_batched_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *w = job->w, *bias = job->bias;
    T *y = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, HW = p->h * p->w;
    T *cols = malloc(kg * job->ipi * P * sizeof(T)), *tmp = malloc(ocg * job->ipi * P * sizeof(T));
    if (!cols || !tmp) atomic_store(&job->err, 1);
    for (int64_t it; cols && tmp && (it = next_item(job)) < job->items;) {
        int64_t g, n0, nb;
        FN(batch_item)(job, it, &g, &n0, &nb);
        int64_t ld = nb * P;
        FN(im2col_batch)(p, cg, x + (n0 * p->c + g * cg) * HW, p->c * HW, nb, job->idx, cols,
                         ld);
        if (em_gemm(DT, ocg, ld, kg, 1.0, w + g * ocg * kg, kg, 1, cols, ld, 1, 0.0, tmp, ld,
                    1)) {
            atomic_store(&job->err, 1);
            break;
        }
        for (int64_t j = 0; j < nb; j++)
            for (int64_t o = 0; o < ocg; o++) {
                T *restrict dst = y + ((n0 + j) * p->oc + g * ocg + o) * P;
                const T *restrict src = tmp + o * ld + j * P;
                T v = bias ? bias[g * ocg + o] : 0;
                for (int64_t q = 0; q < P; q++) dst[q] = src[q] + v;
            }
    }
    free(cols);
    free(tmp);
    (void)tid, (void)nthreads;
}

static void FN(grad_input_batched_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *gy = job->gy, *w = job->w, *bias = job->bias;
    T *gx = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, HW = p->h * p->w;
    T *cols = malloc(kg * job->ipi * P * sizeof(T)), *tmp = malloc(ocg * job->ipi * P * sizeof(T));
    T *plane = malloc((HW + 1) * sizeof(T));
    if (!cols || !tmp || !plane) atomic_store(&job->err, 1);
    for (int64_t it; cols && tmp && plane && (it = next_item(job)) < job->items;) {
        int64_t g, n0, nb;
        FN(batch_item)(job, it, &g, &n0, &nb);
        int64_t ld = nb * P;
        FN(gather_gy)(p, gy, g, n0, nb, tmp);
        if (em_gemm(DT, kg, ld, ocg, 1.0, w + g * ocg * kg, 1, kg, tmp, ld, 1, 0.0, cols, ld,
                    1)) {
            atomic_store(&job->err, 1);
            break;
        }
        FN(col2im_batch)(p, cg, cols, ld, nb, job->idx, gx + (n0 * p->c + g * cg) * HW,
                         p->c * HW, plane);
        for (int64_t j = 0; j < nb; j++) {
            T *gxg = gx + ((n0 + j) * p->c + g * cg) * HW;
            if (bias)
                for (int64_t ci = 0; ci < cg; ci++) {
                    T v = bias[g * cg + ci], *r = gxg + ci * HW;
                    for (int64_t q = 0; q < HW; q++) r[q] += v;
                }
        }
    }
    free(cols);
    free(plane);
    free(tmp);
    (void)tid, (void)nthreads;
}

static void FN(grad_weight_batched_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *gy = job->gy;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, HW = p->h * p->w;
    T *cols = malloc(kg * job->ipi * P * sizeof(T)), *tmp = malloc(ocg * job->ipi * P * sizeof(T));
    T *acc = NULL;
    if (!cols || !tmp) atomic_store(&job->err, 1);
    for (int64_t it; cols && tmp && (it = next_item(job)) < job->items;) {
        if (!acc) {   /* a thread's sum, made when it gets its first item */
            acc = tid == 0 ? job->out : calloc(p->oc * kg, sizeof(T));
            job->part[tid] = tid == 0 ? NULL : acc;
            if (!acc) {
                atomic_store(&job->err, 1);
                break;
            }
        }
        int64_t g, n0, nb;
        FN(batch_item)(job, it, &g, &n0, &nb);
        int64_t ld = nb * P;
        FN(gather_gy)(p, gy, g, n0, nb, tmp);
        FN(im2col_batch)(p, cg, x + (n0 * p->c + g * cg) * HW, p->c * HW, nb, job->idx, cols,
                         ld);
        if (em_gemm(DT, ocg, kg, ld, 1.0, tmp, ld, 1, cols, 1, ld, 1.0, acc + g * ocg * kg, kg,
                    1)) {
            atomic_store(&job->err, 1);
            break;
        }
    }
    free(cols);
    free(tmp);
    (void)nthreads;
}

/* The batched form of a call when images_per_item says so: job's items set, and the
 * worker run; 1 (no error code) when the call takes the per-image path. */
static int FN(run_batched)(job_t *job, int64_t work, void (*fn)(void *, int, int)) {
    const em_conv_params *p = job->p;
    job->ipi = images_per_item(p);
    if (job->ipi < 2) return 1;
    job->items = (p->n + job->ipi - 1) / job->ipi * p->groups;
    job->idx = p->ow >= ROW_COPY_MIN ? NULL : tap_index(p);
    if (p->ow < ROW_COPY_MIN && !job->idx) return EM_GEMM_ENOMEM;
    int rc = run(job, work, fn);
    free(job->idx);
    return rc;
}

/* ------------------------------------------------------------ GEMM forward */

static void FN(gemm_fwd_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *w = job->w, *bias = job->bias;
    T *y = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, ident = is_identity(p);
    T *cols = ident ? NULL : malloc(job->cols * sizeof(T));
    if (!ident && !cols) {
        atomic_store(&job->err, 1);
        return;
    }
    for (int64_t it; (it = next_item(job)) < job->items;) {
        int64_t blk = it % job->blocks, g = it / job->blocks % p->groups;
        int64_t n = it / job->blocks / p->groups;
        int64_t oh0 = blk * job->rows, oh1 = MIN(p->oh, oh0 + job->rows), np = (oh1 - oh0) * p->ow;
        const T *xg = x + (n * p->c + g * cg) * p->h * p->w;
        const T *b = ident ? xg + oh0 * p->ow : cols;
        if (!ident) FN(im2col)(p, cg, xg, oh0, oh1, cols, np);
        T *yg = y + (n * p->oc + g * ocg) * P + oh0 * p->ow;
        if (em_gemm(DT, ocg, np, kg, 1.0, w + g * ocg * kg, kg, 1, b, ident ? P : np, 1, 0.0,
                    yg, P, 1)) {
            atomic_store(&job->err, 1);
            break;
        }
        if (bias)
            for (int64_t o = 0; o < ocg; o++) {
                T v = bias[g * ocg + o], *r = yg + o * P;
                for (int64_t j = 0; j < np; j++) r[j] += v;
            }
    }
    free(cols);
    (void)tid, (void)nthreads;
}

static int FN(gemm_fwd)(const em_conv_params *p, const T *x, const T *w, const T *bias, T *y) {
    int64_t kg = p->c / p->groups * p->kh * p->kw;
    int64_t work = p->n * p->oc * p->oh * p->ow * kg;
    job_t job = {.p = p, .x = x, .w = w, .bias = bias, .out = y};
    int rc = FN(run_batched)(&job, work, FN(fwd_batched_worker));
    if (rc != 1) return rc;
    int64_t per_row = is_identity(p) ? 0 : kg * p->ow;
    job.rows = rows_per_item(p, per_row, COLS_MAX, p->n * p->groups,
                             threaded(p->n * p->groups * p->oh, work));
    job.blocks = (p->oh + job.rows - 1) / job.rows;
    job.items = p->n * p->groups * job.blocks;
    job.cols = job.rows * per_row;
    return run(&job, work, FN(gemm_fwd_worker));
}

/* The direct kernel unless the GEMM is faster: with many output channels per group
 * (the GEMM's rows) and rows much narrower than the tile, or, under the AVX2 GEMM,
 * many taps (its packed panels stream better than the direct kernel's scattered
 * reads). Measured on a 2-vCPU AMD EPYC (Zen 5), float32, batch 64, 1 thread: with
 * the AVX-512 GEMM, 3x3 convolutions of 64 channels at 32x32 take 49 ms direct and
 * 60 ms by im2col + GEMM, 128 channels at 16x16 46 and 57 ms, but 256 at 8x8 (half
 * a tile per row) 103 and 60 ms. */
static int FN(use_direct)(const em_conv_params *p) {
    int64_t ocg = p->oc / p->groups, kg = p->c / p->groups * p->kh * p->kw;
    double fill = (double)p->ow / ((p->ow + NR - 1) / NR * NR);
    return ocg < 32 || (fill >= 0.75 && (gemm_wide() || kg <= 1024));
}

/* Whether the direct kernel's scratch is of a sane size: it holds (kh - 1) * dh + sh
 * padded rows of sw * wq columns per output row, so strides or dilations far beyond
 * the input (sampling a huge padding) would make it huge or overflow int64; the
 * im2col buffers don't grow with them. */
static int FN(direct_fits)(const em_conv_params *p) {
    double wq = p->ow + (double)(p->kw - 1) * p->dw / p->sw;
    return ((double)(p->kh - 1) * p->dh + p->sh) * p->sw * wq <= 16.0 * SCRATCH_MAX;
}

int FN(em_conv2d_forward)(const em_conv_params *p, const T *x, const T *w, const T *bias,
                          T *y) {
    int64_t P = p->oh * p->ow;
    if (p->n == 0 || p->oc == 0 || P == 0) return 0;
    if (p->c == 0 || p->kh * p->kw == 0) {   /* an empty sum: the bias alone */
        for (int64_t r = 0; r < p->n * p->oc; r++)
            for (int64_t j = 0; j < P; j++) y[r * P + j] = bias ? bias[r % p->oc] : 0;
        return 0;
    }
    if (FN(use_blocked)(p)) return FN(blocked)(p, x, w, bias, y);
    int direct = FN(direct_fits)(p) &&
                 (conv_path == 2 || (conv_path == 0 && !is_identity(p) && FN(use_direct)(p)));
    return direct ? FN(direct)(p, x, w, bias, y) : FN(gemm_fwd)(p, x, w, bias, y);
}

/* -------------------------------------------------------- backward: input */

static void FN(grad_input_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *gy = job->gy, *w = job->w, *bias = job->bias;
    T *gx = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, HW = p->h * p->w, ident = is_identity(p);
    T *cols = ident ? NULL : malloc(job->cols * sizeof(T));
    if (!ident && !cols) {
        atomic_store(&job->err, 1);
        return;
    }
    for (int64_t it; (it = next_item(job)) < job->items;) {
        int64_t g = it % p->groups, n = it / p->groups;
        T *gxg = gx + (n * p->c + g * cg) * HW;
        const T *gyg = gy + (n * p->oc + g * ocg) * P, *wg = w + g * ocg * kg;
        int rc = 0;
        if (ident) {
            rc = em_gemm(DT, cg, P, ocg, 1.0, wg, 1, cg, gyg, P, 1, 0.0, gxg, HW, 1);
        } else {
            memset(gxg, 0, cg * HW * sizeof(T));
            for (int64_t oh0 = 0; oh0 < p->oh && !rc; oh0 += job->rows) {
                int64_t oh1 = MIN(p->oh, oh0 + job->rows), np = (oh1 - oh0) * p->ow;
                rc = em_gemm(DT, kg, np, ocg, 1.0, wg, 1, kg, gyg + oh0 * p->ow, P, 1, 0.0, cols,
                             np, 1);
                if (!rc) FN(col2im)(p, cg, cols, oh0, oh1, gxg, np);
            }
        }
        if (rc) {
            atomic_store(&job->err, 1);
            break;
        }
        if (bias)
            for (int64_t ci = 0; ci < cg; ci++) {
                T v = bias[g * cg + ci], *r = gxg + ci * HW;
                for (int64_t j = 0; j < HW; j++) r[j] += v;
            }
    }
    free(cols);
    (void)tid, (void)nthreads;
}

/* The forward problem whose output is a stride-1 convolution's grad_input: the
 * convolution of grad_out (oc channels, oh x ow) with the weights transposed per group
 * and flipped, padded by (k - 1) * d - p (top and left; the other side follows from
 * h and w). 0 when not of that kind, or when the forward would not take the direct
 * kernel (then col2im's GEMM is as good). */
static int FN(as_forward)(const em_conv_params *p, em_conv_params *q) {
    *q = *p;
    q->c = p->oc, q->h = p->oh, q->w = p->ow, q->oc = p->c, q->oh = p->h, q->ow = p->w;
    q->ph = (p->kh - 1) * p->dh - p->ph, q->pw = (p->kw - 1) * p->dw - p->pw;
    /* with a few input channels a group, the direct kernel's output (grad_input) is
     * too narrow to fill its register tile: col2im's GEMM stays faster there (bench_models'
     * small CNN: 1 channel at 28x28 runs 1.2 ms that way, 1.7 ms direct; at 16 channels
     * the direct kernel wins) */
    int wide = conv_path == 2 || p->c / p->groups >= 8;
    return p->sh == 1 && p->sw == 1 && q->ph >= 0 && q->pw >= 0 && conv_path != 1 &&
           (FN(use_blocked)(q) || (wide && FN(direct_fits)(q) && FN(use_direct)(q)));
}

/* grad_input by the direct forward kernel (as_forward's q): ResNet's 32x32 and 16x16
 * layers run 15-20% faster than GEMM + col2im (whose GEMM has k = oc / groups). */
static int FN(grad_input_direct)(const em_conv_params *p, const em_conv_params *q,
                                 const T *gy, const T *w, const T *bias, T *gx) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    T *wt = malloc(p->oc * cg * kk * sizeof(T));
    if (!wt) return EM_GEMM_ENOMEM;
    for (int64_t g = 0; g < p->groups; g++)   /* wt[g, ci, o, flipped tap] = w[g, o, ci, tap] */
        for (int64_t o = 0; o < ocg; o++)
            for (int64_t ci = 0; ci < cg; ci++) {
                const T *src = w + ((g * ocg + o) * cg + ci) * kk;
                T *dst = wt + ((g * cg + ci) * ocg + o) * kk;
                for (int64_t t = 0; t < kk; t++) dst[kk - 1 - t] = src[t];
            }
    int rc = FN(use_blocked)(q) ? FN(blocked)(q, gy, wt, bias, gx)
                                : FN(direct)(q, gy, wt, bias, gx);
    free(wt);
    return rc;
}

int FN(em_conv2d_backward_input)(const em_conv_params *p, const T *gy, const T *w,
                                 const T *bias, T *gx) {
    int64_t HW = p->h * p->w, kg = p->c / p->groups * p->kh * p->kw;
    if (p->n == 0 || p->c == 0 || HW == 0) return 0;
    if (p->oc == 0 || p->oh * p->ow == 0 || kg == 0) {   /* no output: the bias alone */
        for (int64_t r = 0; r < p->n * p->c; r++)
            for (int64_t j = 0; j < HW; j++) gx[r * HW + j] = bias ? bias[r % p->c] : 0;
        return 0;
    }
    em_conv_params q;
    if (FN(as_forward)(p, &q)) return FN(grad_input_direct)(p, &q, gy, w, bias, gx);
    job_t job = {.p = p, .gy = gy, .w = w, .bias = bias, .out = gx};
    int rc = FN(run_batched)(&job, p->n * p->oc * p->oh * p->ow * kg,
                             FN(grad_input_batched_worker));
    if (rc != 1) return rc;
    job.items = p->n * p->groups;
    job.rows = rows_per_item(p, kg * p->ow, COLS_MAX, job.items, 0);
    job.cols = job.rows * kg * p->ow;
    return run(&job, p->n * p->oc * p->oh * p->ow * kg, FN(grad_input_worker));
}

/* ------------------------------------------------------- backward: weight */

static void FN(grad_weight_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *gy = job->gy;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow, ident = is_identity(p);
    T *cols = ident ? NULL : malloc(job->cols * sizeof(T)), *acc = NULL;
    if (!ident && !cols) {
        atomic_store(&job->err, 1);
        return;
    }
    for (int64_t it; (it = next_item(job)) < job->items;) {
        if (!acc) {   /* a thread's sum, made when it gets its first item */
            acc = tid == 0 ? job->out : calloc(p->oc * kg, sizeof(T));
            job->part[tid] = tid == 0 ? NULL : acc;
            if (!acc) {
                atomic_store(&job->err, 1);
                break;
            }
        }
        int64_t blk = it % job->blocks, g = it / job->blocks % p->groups;
        int64_t n = it / job->blocks / p->groups;
        int64_t oh0 = blk * job->rows, oh1 = MIN(p->oh, oh0 + job->rows), np = (oh1 - oh0) * p->ow;
        const T *xg = x + (n * p->c + g * cg) * p->h * p->w;
        const T *b = ident ? xg + oh0 * p->ow : cols;
        if (!ident) FN(im2col)(p, cg, xg, oh0, oh1, cols, np);
        if (em_gemm(DT, ocg, kg, np, 1.0, gy + (n * p->oc + g * ocg) * P + oh0 * p->ow, P, 1, b,
                    1, ident ? P : np, 1.0, acc + g * ocg * kg, kg, 1)) {
            atomic_store(&job->err, 1);
            break;
        }
    }
    free(cols);
    (void)nthreads;
}

/* grad_weight without im2col (gw_direct), for few taps per output channel (the
 * GEMM's columns, cg * kh * kw: a first layer's 1 or 3 channels), where the GEMM's
 * tile would be mostly padding. Work item: one input channel ci of one group, over
 * all images, so items write disjoint parts of gw. Its kw shifted rows
 * xs[image][ih][b][j] = x[ih, j * sw - pw + b * dw] (0 outside the input and for
 * j >= ow; rows padded to owr, a whole number of vectors) and grad_out's rows padded
 * the same way make gw[o, ci, a, b] the sum over images and output rows i (input row
 * i * sh - ph + a * dh inside) of the dot products of gy row (o, i) and xs row
 * (ih, b): register tiles of GW_OB output channels x GW_KB taps b, accumulated in
 * vectors over all those rows and summed across lanes once. */
#define GW_OB 4
#define GW_KB 3
#define GW_XS_MAX ((int64_t)1 << 16)   /* elements of an item's shifted rows per pass */

/* the tile's body for vectors of type VT, W elements */
#define GW_TILE_BODY(VT, W)                                                             \
    do {                                                                                \
        VT acc[GW_OB][GW_KB];                                                           \
        for (int o = 0; o < OB; o++)                                                    \
            for (int b = 0; b < KB; b++) acc[o][b] = (VT){0};                           \
        for (int64_t n = 0; n < nb; n++) {                                              \
            const T *restrict gr = g + n * gimg, *restrict xr = xa + n * ximg;          \
            for (int64_t i = 0; i < rows; i++, gr += owr, xr += xsr)                    \
                for (int64_t v = 0; v < owr; v += W) {                                  \
                    VT xv[GW_KB];                                                       \
                    for (int b = 0; b < KB; b++) xv[b] = LOADV(VT, xr + b * owr + v);   \
                    for (int o = 0; o < OB; o++) {                                      \
                        VT gv = LOADV(VT, gr + o * gys + v);                            \
                        for (int b = 0; b < KB; b++) acc[o][b] += gv * xv[b];           \
                    }                                                                   \
                }                                                                       \
        }                                                                               \
        for (int o = 0; o < OB; o++)                                                    \
            for (int b = 0; b < KB; b++) {                                              \
                T sum = 0;                                                              \
                for (int l = 0; l < W; l++) sum += acc[o][b][l];                        \
                out[o * ldo + b] += sum;                                                \
            }                                                                           \
    } while (0)

/* OB x KB sums over nb images (gimg, ximg apart) of `rows` rows of owr elements
 * (owr, xsr apart), added to out (ldo apart per channel); WIDE: 64-byte vectors */
INLINE void FN(gw_tile)(const int WIDE, const int OB, const int KB, int64_t nb,
                        int64_t rows, const T *restrict g, int64_t gys, int64_t gimg,
                        int64_t owr, const T *restrict xa, int64_t xsr, int64_t ximg,
                        T *restrict out, int64_t ldo) {
    if (WIDE)
        GW_TILE_BODY(WVEC, 2 * VL);
    else
        GW_TILE_BODY(VEC, VL);
}

#define GW_ARGS nb, rows, g, gys, gimg, owr, xa, xsr, ximg, out, ldo
INLINE void FN(gw_tile_kb)(const int WIDE, const int OB, int64_t kb, int64_t nb,
                           int64_t rows, const T *g, int64_t gys, int64_t gimg, int64_t owr,
                           const T *xa, int64_t xsr, int64_t ximg, T *out, int64_t ldo) {
    switch (kb) {
    case 3: FN(gw_tile)(WIDE, OB, 3, GW_ARGS); break;
    case 2: FN(gw_tile)(WIDE, OB, 2, GW_ARGS); break;
    default: FN(gw_tile)(WIDE, OB, 1, GW_ARGS); break;
    }
}

/* Images per pass of a gw_direct item: as many as GW_XS_MAX elements of shifted rows hold */
static int64_t FN(gw_images)(const em_conv_params *p) {
    int64_t per = p->h * p->kw * (p->ow + 2 * VL);
    return MAX(1, MIN(p->n, GW_XS_MAX / MAX(per, 1)));
}

INLINE void FN(gw_direct_item)(const int WIDE, job_t *job, int64_t it, T *restrict xs) {
    const em_conv_params *p = job->p;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw, kg = cg * kk;
    int64_t g = it / cg, ci = it % cg, W = WIDE ? 2 * VL : VL;
    int64_t owr = (p->ow + W - 1) / W * W, gys = p->oh * owr, gimg = p->oc * gys;
    int64_t xsr = p->sh * p->kw * owr, ximg = p->h * p->kw * owr, ipp = FN(gw_images)(p);
    /* grad_out itself when its rows are whole vectors, else the padded copy */
    const T *gs = owr == p->ow ? job->gy : job->wpack;
    T *out0 = (T *)job->out + g * ocg * kg + ci * kk;
    for (int64_t n0 = 0; n0 < p->n; n0 += ipp) {
        int64_t nb = MIN(ipp, p->n - n0);
        for (int64_t n = 0; n < nb; n++) {
            const T *xc = (const T *)job->x + ((n0 + n) * p->c + g * cg + ci) * p->h * p->w;
            for (int64_t b = 0; b < p->kw; b++) {
                int64_t off = b * p->dw - p->pw, lo, hi;
                valid_cols(p->ow, p->w, p->sw, off, &lo, &hi);
                for (int64_t ih = 0; ih < p->h; ih++) {
                    T *restrict r = xs + n * ximg + (ih * p->kw + b) * owr;
                    const T *restrict src = xc + ih * p->w;
                    for (int64_t j = 0; j < lo; j++) r[j] = 0;
                    for (int64_t j = lo; j < hi; j++) r[j] = src[j * p->sw + off];
                    for (int64_t j = hi; j < owr; j++) r[j] = 0;
                }
            }
        }
        for (int64_t a = 0; a < p->kh; a++) {
            int64_t top = p->ph - a * p->dh;   /* output row i reads input row i * sh - top */
            int64_t i0 = MAX(0, ceil_div(top, p->sh));
            int64_t i1 = MIN(p->oh, floor_div(p->h - 1 + top, p->sh) + 1), rows = i1 - i0;
            if (rows <= 0) continue;
            for (int64_t o0 = 0; o0 < ocg; o0 += GW_OB)
                for (int64_t b0 = 0; b0 < p->kw; b0 += GW_KB) {
                    int64_t ob = MIN(GW_OB, ocg - o0), kb = MIN(GW_KB, p->kw - b0);
                    const T *g = gs + (n0 * p->oc + it / cg * ocg + o0) * gys + i0 * owr;
                    const T *xa = xs + ((i0 * p->sh - top) * p->kw + b0) * owr;
                    T *out = out0 + o0 * kg + a * p->kw + b0;
                    int64_t ldo = kg;
                    switch (ob) {
                    case 4: FN(gw_tile_kb)(WIDE, 4, kb, GW_ARGS); break;
                    case 3: FN(gw_tile_kb)(WIDE, 3, kb, GW_ARGS); break;
                    case 2: FN(gw_tile_kb)(WIDE, 2, kb, GW_ARGS); break;
                    default: FN(gw_tile_kb)(WIDE, 1, kb, GW_ARGS); break;
                    }
                }
        }
    }
}
#undef GW_ARGS

static AVX512 void FN(gw_direct_item_avx512)(job_t *job, int64_t it, T *xs) {
    FN(gw_direct_item)(1, job, it, xs);
}

static AVX2 void FN(gw_direct_item_avx2)(job_t *job, int64_t it, T *xs) {
    FN(gw_direct_item)(0, job, it, xs);
}

static void FN(gw_direct_item_generic)(job_t *job, int64_t it, T *xs) {
    FN(gw_direct_item)(0, job, it, xs);
}

static void FN(gw_direct_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    T *xs = malloc(FN(gw_images)(p) * p->h * p->kw * (p->ow + 2 * VL) * sizeof(T));
    void (*item_fn)(job_t *, int64_t, T *) =
        use_avx512() ? FN(gw_direct_item_avx512)
        : use_avx2() ? FN(gw_direct_item_avx2) : FN(gw_direct_item_generic);
    if (!xs) atomic_store(&job->err, 1);
    for (int64_t it; xs && (it = next_item(job)) < job->items;) item_fn(job, it, xs);
    free(xs);
    (void)tid, (void)nthreads;
}

/* gw_direct over all items; grad_out copied with its rows padded to whole vectors
 * first unless they are already */
static int FN(gw_direct)(const em_conv_params *p, const T *x, const T *gy, T *gw) {
    int64_t W = use_avx512() ? 2 * VL : VL, owr = (p->ow + W - 1) / W * W;
    job_t job = {.p = p, .x = x, .gy = gy, .out = gw, .cb = W};
    T *gyp = NULL;
    if (owr != p->ow) {
        int64_t rows = p->n * p->oc * p->oh;
        if (!(gyp = malloc(rows * owr * sizeof(T)))) return EM_GEMM_ENOMEM;
        for (int64_t r = 0; r < rows; r++) {
            memcpy(gyp + r * owr, gy + r * p->ow, p->ow * sizeof(T));
            memset(gyp + r * owr + p->ow, 0, (owr - p->ow) * sizeof(T));
        }
        job.wpack = gyp;
    }
    job.items = p->groups * (p->c / p->groups);
    int rc = run(&job, p->n * p->oc * p->oh * p->ow * p->c / p->groups * p->kh * p->kw,
                 FN(gw_direct_worker));
    free(gyp);
    return rc;
}

/* Whether grad_weight takes gw_direct: few taps (the GEMM's columns), where its tile
 * would be mostly padding, and a shifted-row buffer of sane size. Measured (1 thread,
 * float32, AVX-512): the small CNN's 1-channel 28x28 layer 0.21-0.29 ms against the
 * GEMM's 0.41-0.58; at 27 taps (ResNet's 3-channel stem) and 144 the GEMM is faster.
 * Into at most 32 output channels 27 taps go faster here (Zen 5, AVX-512): bench_models'
 * conv net's 3-32 32x32 layer, batch 32, 1.12-1.17 ms against 1.37-1.80 (ResNet's stem,
 * 64 channels, batch 64: the GEMM's 5.0 against 6.4). */
static int FN(use_gw_direct)(const em_conv_params *p) {
    int64_t kg = p->c / p->groups * p->kh * p->kw;
    if (conv_path == 1 || (double)p->h * p->kw * (p->ow + VL) > 16.0 * SCRATCH_MAX) return 0;
    return conv_path == 2 || kg <= GW_DIRECT_TAPS ||
           (kg <= 27 && p->oc / p->groups <= 32);
}

/* grad_weight for small outputs (the blocked forward's layers) without im2col: with x
 * as [pixel][image][channel] and grad_out as [pixel][image][channel], the products of
 * tap (a, b) over one output row's valid pixels and every image are one GEMM whose k
 * runs over (pixel, image) contiguously in both, so the padding is skipped instead of
 * multiplied (a third of im2col's columns at 4x4); a tap whose rows are whole (ow == w)
 * takes all its valid rows in one GEMM. Sums into gwt[tap][o][ci], permuted into gw. */
static int FN(gw_blocked)(const em_conv_params *p, const T *x, const T *gy, T *gw) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kk = p->kh * p->kw;
    int64_t HW = p->h * p->w, P = p->oh * p->ow, N = p->n;
    T *x2 = malloc(HW * N * p->c * sizeof(T)), *g2 = malloc(P * N * p->oc * sizeof(T));
    T *gwt = calloc(kk * p->oc * cg, sizeof(T));
    int rc = !x2 || !g2 || !gwt ? EM_GEMM_ENOMEM : 0;
    if (!rc) {
        for (int64_t n = 0; n < N; n++)   /* x2[q][n][c] = x[n][c][q] */
            for (int64_t c = 0; c < p->c; c++) {
                const T *restrict src = x + (n * p->c + c) * HW;
                T *restrict dst = x2 + n * p->c + c;
                for (int64_t q = 0; q < HW; q++) dst[q * N * p->c] = src[q];
            }
        for (int64_t n = 0; n < N; n++)
            for (int64_t o = 0; o < p->oc; o++) {
                const T *restrict src = gy + (n * p->oc + o) * P;
                T *restrict dst = g2 + n * p->oc + o;
                for (int64_t q = 0; q < P; q++) dst[q * N * p->oc] = src[q];
            }
    }
    for (int64_t g = 0; g < p->groups && !rc; g++)
        for (int64_t a = 0; a < p->kh && !rc; a++)
            for (int64_t b = 0; b < p->kw && !rc; b++) {
                int64_t off = b * p->dw - p->pw, j0, j1;
                valid_cols(p->ow, p->w, 1, off, &j0, &j1);
                if (j0 >= j1) continue;
                int64_t whole = j0 == 0 && j1 == p->ow && p->ow == p->w && p->sh == 1;
                T *c = gwt + ((a * p->kw + b) * p->oc + g * ocg) * cg;
                for (int64_t i = 0; i < p->oh && !rc; i++) {
                    int64_t ih = i * p->sh - p->ph + a * p->dh, rows = 1;
                    if (ih < 0 || ih >= p->h) continue;
                    if (whole)   /* this and the following valid rows, contiguous */
                        while (i + rows < p->oh && ih + rows < p->h) rows++;
                    int64_t k = ((rows - 1) * p->ow + j1 - j0) * N;
                    const T *ga = g2 + (i * p->ow + j0) * N * p->oc + g * ocg;
                    const T *xa = x2 + (ih * p->w + j0 + off) * N * p->c + g * cg;
                    rc = em_gemm(DT, ocg, cg, k, 1.0, ga, 1, p->oc, xa, p->c, 1, 1.0, c, cg, 1);
                    i += rows - 1;
                }
            }
    if (!rc)
        for (int64_t t = 0; t < kk; t++)
            for (int64_t o = 0; o < p->oc; o++)
                for (int64_t ci = 0; ci < cg; ci++)
                    gw[(o * cg + ci) * kk + t] = gwt[(t * p->oc + o) * cg + ci];
    free(x2);
    free(g2);
    free(gwt);
    return rc;
}

/* gw_blocked for the blocked forward's small outputs (forced by its path), given its
 * column stride 1 and copies of a sane size. Measured (1 thread, float32, batch 64):
 * ResNet's 512-channel 4x4 layer 41-44 ms against the batched im2col GEMM's 54-58,
 * its 256-channel 8x8 59-62 against 63-71. */
static int FN(use_gw_blocked)(const em_conv_params *p) {
    double copies = (double)p->n * (p->h * p->w * p->c + p->oh * p->ow * p->oc);
    if (p->sw != 1 || is_identity(p) || copies > 8.0 * BLK_MAX) return 0;
    if (conv_path == 3) return 1;
    return conv_path == 0 && p->kh * p->kw > 1 && p->oh * p->ow <= 64 && p->n >= 8;
}

int FN(em_conv2d_backward_weight)(const em_conv_params *p, const T *x, const T *gy, T *gw) {
    int64_t kg = p->c / p->groups * p->kh * p->kw, P = p->oh * p->ow;
    memset(gw, 0, p->oc * kg * sizeof(T));
    if (p->n == 0 || P == 0 || p->oc == 0 || kg == 0) return 0;
    job_t job = {.p = p, .x = x, .gy = gy, .out = gw};
    int64_t work = p->n * p->oc * P * kg;
    int rc = 1;
    if (FN(use_gw_blocked)(p)) {
        rc = FN(gw_blocked)(p, x, gy, gw);
    } else if (FN(use_gw_direct)(p)) {
        rc = FN(gw_direct)(p, x, gy, gw);
    } else {
        rc = FN(run_batched)(&job, work, FN(grad_weight_batched_worker));
    }
    if (rc == 1) {
        int64_t per_row = is_identity(p) ? 0 : kg * p->ow;
        job.rows = rows_per_item(p, per_row, COLS_MAX, p->n * p->groups,
                                 threaded(p->n * p->groups * p->oh, work));
        job.blocks = (p->oh + job.rows - 1) / job.rows;
        job.items = p->n * p->groups * job.blocks;
        job.cols = job.rows * per_row;
        rc = run(&job, work, FN(grad_weight_worker));
    }
    for (int t = 1; t < EM_MAX_THREADS; t++) {
        T *part = job.part[t];
        if (!part) continue;
        for (int64_t i = 0; i < p->oc * kg; i++) gw[i] += part[i];
        free(part);
    }
    return rc;
}

/* ------------------------------------------- channels_last (NHWC) convolution */

/* Over NHWC activations the taps of one pixel are channel runs: a pixel's row of
 * the (pixels x taps) matrix is kh * kw copies of cg contiguous channels (im2row),
 * the output is (pixels x oc) with its channels contiguous, and the weight is taken
 * as (oc, kh, kw, cg) ("OHWI"), so every product is one GEMM of row-major operands;
 * a 1x1 stride-1 unpadded convolution multiplies the input in place, over all
 * images at once. */

/* The adjoint of im2row: gx[ih, iw, ci] += rows[q - q0, tap] for every valid pair. */
static void FN(row2im)(const em_conv_params *p, int64_t cg, const T *restrict rows, int64_t q0,
                       int64_t q1, T *restrict gx) {
    int64_t kg = p->kh * p->kw * cg;
    for (int64_t q = q0; q < q1; q++) {
        int64_t i = q / p->ow, j = q % p->ow;
        const T *restrict r = rows + (q - q0) * kg;
        for (int64_t a = 0; a < p->kh; a++) {
            int64_t ih = i * p->sh - p->ph + a * p->dh;
            for (int64_t b = 0; b < p->kw; b++, r += cg) {
                int64_t iw = j * p->sw - p->pw + b * p->dw;
                if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
                T *restrict d = gx + (ih * p->w + iw) * p->c;
                for (int64_t ci = 0; ci < cg; ci++) d[ci] += r[ci];
            }
        }
    }
}

/* y[q, o] += bias[o] over rows [0, np) of row stride ld, nc channels */
static void FN(add_bias_rows)(T *restrict y, int64_t np, int64_t ld, int64_t nc,
                              const T *restrict bias) {
    for (int64_t q = 0; q < np; q++)
        for (int64_t o = 0; o < nc; o++) y[q * ld + o] += bias[o];
}

/* Pixel blocks: job->rows pixels per item (not output rows), blocks per image. */
static void FN(nhwc_blocks)(job_t *job, const em_conv_params *p, int64_t per_pixel,
                            int64_t work) {
    int64_t P = p->oh * p->ow, q = MAX(1, COLS_MAX / MAX(per_pixel, 1));
    if (threaded(p->n * p->groups * P, work)) {
        int64_t want = 4 * (int64_t)em_get_num_threads(), images = p->n * p->groups;
        if (images < want) q = MIN(q, MAX(1, P / ceil_div(want, MAX(images, 1))));
    }
    job->rows = MIN(q, MAX(P, 1));
    job->blocks = (P + job->rows - 1) / job->rows;
    job->items = p->n * p->groups * job->blocks;
    job->cols = job->rows * per_pixel;
}

static void FN(nhwc_fwd_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *w = job->w, *bias = job->bias;
    T *y = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow;
    T *rows = malloc(job->cols * sizeof(T));
    if (!rows) {
        atomic_store(&job->err, 1);
        return;
    }
    for (int64_t it; (it = next_item(job)) < job->items;) {
        int64_t blk = it % job->blocks, g = it / job->blocks % p->groups;
        int64_t n = it / job->blocks / p->groups;
        int64_t q0 = blk * job->rows, q1 = MIN(P, q0 + job->rows), np = q1 - q0;
        FN(im2row)(p, cg, x + n * p->h * p->w * p->c + g * cg, q0, q1, rows);
        T *yg = y + (n * P + q0) * p->oc + g * ocg;
        if (em_gemm(DT, np, ocg, kg, 1.0, rows, kg, 1, w + g * ocg * kg, 1, kg, 0.0, yg,
                    p->oc, 1)) {
            atomic_store(&job->err, 1);
            break;
        }
        if (bias) FN(add_bias_rows)(yg, np, p->oc, ocg, bias + g * ocg);
    }
    free(rows);
    (void)tid, (void)nthreads;
}

int FN(em_conv2d_forward_nhwc)(const em_conv_params *p, const T *x, const T *w,
                               const T *bias, T *y) {
    int64_t P = p->oh * p->ow, cg = p->c / p->groups, ocg = p->oc / p->groups;
    int64_t kg = cg * p->kh * p->kw;
    if (p->n == 0 || p->oc == 0 || P == 0) return 0;
    if (p->c == 0 || kg == 0) {
        for (int64_t r = 0; r < p->n * P; r++)
            for (int64_t o = 0; o < p->oc; o++) y[r * p->oc + o] = bias ? bias[o] : 0;
        return 0;
    }
    if (is_identity(p)) {   /* (n * P, cg) @ (cg, ocg) per group, the input in place */
        for (int64_t g = 0; g < p->groups; g++) {
            if (em_gemm(DT, p->n * P, ocg, cg, 1.0, x + g * cg, p->c, 1, w + g * ocg * kg, 1, kg,
                        0.0, y + g * ocg, p->oc, 1))
                return EM_GEMM_ENOMEM;
            if (bias) FN(add_bias_rows)(y + g * ocg, p->n * P, p->oc, ocg, bias + g * ocg);
        }
        return 0;
    }
    job_t job = {.p = p, .x = x, .w = w, .bias = bias, .out = y};
    int64_t work = p->n * p->oc * P * kg;
    FN(nhwc_blocks)(&job, p, kg, work);
    return run(&job, work, FN(nhwc_fwd_worker));
}

static void FN(nhwc_grad_input_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *gy = job->gy, *w = job->w;
    T *gx = job->out;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow;
    T *rows = malloc(job->cols * sizeof(T));
    if (!rows) {
        atomic_store(&job->err, 1);
        return;
    }
    /* one item per image and group: its pixel blocks overlap in the input */
    for (int64_t it; (it = next_item(job)) < job->items;) {
        int64_t g = it % p->groups, n = it / p->groups;
        T *gxg = gx + n * p->h * p->w * p->c + g * cg;
        int rc = 0;
        for (int64_t q0 = 0; q0 < P && !rc; q0 += job->rows) {
            int64_t q1 = MIN(P, q0 + job->rows), np = q1 - q0;
            rc = em_gemm(DT, np, kg, ocg, 1.0, gy + (n * P + q0) * p->oc + g * ocg, p->oc, 1,
                         w + g * ocg * kg, kg, 1, 0.0, rows, kg, 1);
            if (!rc) FN(row2im)(p, cg, rows, q0, q1, gxg);
        }
        if (rc) {
            atomic_store(&job->err, 1);
            break;
        }
    }
    free(rows);
    (void)tid, (void)nthreads;
}

int FN(em_conv2d_backward_input_nhwc)(const em_conv_params *p, const T *gy, const T *w,
                                      const T *bias, T *gx) {
    int64_t HW = p->h * p->w, P = p->oh * p->ow, cg = p->c / p->groups;
    int64_t ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    if (p->n == 0 || p->c == 0 || HW == 0) return 0;
    int rc = 0;
    if (p->oc == 0 || P == 0 || kg == 0) {
        memset(gx, 0, p->n * HW * p->c * sizeof(T));
    } else if (is_identity(p)) {   /* gx (n * P, cg) = gy (n * P, ocg) @ w (ocg, cg) */
        for (int64_t g = 0; g < p->groups && !rc; g++)
            rc = em_gemm(DT, p->n * P, cg, ocg, 1.0, gy + g * ocg, p->oc, 1, w + g * ocg * kg,
                         kg, 1, 0.0, gx + g * cg, p->c, 1);
    } else {
        memset(gx, 0, p->n * HW * p->c * sizeof(T));
        job_t job = {.p = p, .gy = gy, .w = w, .out = gx};
        job.items = p->n * p->groups;
        job.rows = MIN(MAX(1, COLS_MAX / kg), P);
        job.cols = job.rows * kg;
        rc = run(&job, p->n * p->oc * P * kg, FN(nhwc_grad_input_worker));
    }
    if (!rc && bias) FN(add_bias_rows)(gx, p->n * HW, p->c, p->c, bias);
    return rc;
}

static void FN(nhwc_grad_weight_worker)(void *ctx, int tid, int nthreads) {
    job_t *job = ctx;
    const em_conv_params *p = job->p;
    const T *x = job->x, *gy = job->gy;
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow;
    T *rows = malloc(job->cols * sizeof(T)), *acc = NULL;
    if (!rows) {
        atomic_store(&job->err, 1);
        return;
    }
    for (int64_t it; (it = next_item(job)) < job->items;) {
        if (!acc) {
            acc = tid == 0 ? job->out : calloc(p->oc * kg, sizeof(T));
            job->part[tid] = tid == 0 ? NULL : acc;
            if (!acc) {
                atomic_store(&job->err, 1);
                break;
            }
        }
        int64_t blk = it % job->blocks, g = it / job->blocks % p->groups;
        int64_t n = it / job->blocks / p->groups;
        int64_t q0 = blk * job->rows, q1 = MIN(P, q0 + job->rows), np = q1 - q0;
        FN(im2row)(p, cg, x + n * p->h * p->w * p->c + g * cg, q0, q1, rows);
        /* gw (ocg, kg) += gy^T (ocg, np) @ rows (np, kg) */
        if (em_gemm(DT, ocg, kg, np, 1.0, gy + (n * P + q0) * p->oc + g * ocg, 1, p->oc, rows,
                    kg, 1, 1.0, acc + g * ocg * kg, kg, 1)) {
            atomic_store(&job->err, 1);
            break;
        }
    }
    free(rows);
    (void)nthreads;
}

int FN(em_conv2d_backward_weight_nhwc)(const em_conv_params *p, const T *x, const T *gy,
                                       T *gw) {
    int64_t cg = p->c / p->groups, ocg = p->oc / p->groups, kg = cg * p->kh * p->kw;
    int64_t P = p->oh * p->ow;
    memset(gw, 0, p->oc * kg * sizeof(T));
    if (p->n == 0 || P == 0 || p->oc == 0 || kg == 0) return 0;
    if (is_identity(p)) {   /* gw (ocg, cg) = gy^T (ocg, n * P) @ x (n * P, cg) */
        for (int64_t g = 0; g < p->groups; g++)
            if (em_gemm(DT, ocg, cg, p->n * P, 1.0, gy + g * ocg, 1, p->oc, x + g * cg, p->c, 1,
                        0.0, gw + g * ocg * kg, kg, 1))
                return EM_GEMM_ENOMEM;
        return 0;
    }
    job_t job = {.p = p, .x = x, .gy = gy, .out = gw};
    int64_t work = p->n * p->oc * P * kg;
    FN(nhwc_blocks)(&job, p, kg, work);
    int rc = run(&job, work, FN(nhwc_grad_weight_worker));
    for (int t = 1; t < EM_MAX_THREADS; t++) {
        T *part = job.part[t];
        if (!part) continue;
        for (int64_t i = 0; i < p->oc * kg; i++) gw[i] += part[i];
        free(part);
    }
    return rc;
}

#endif /* CONV_IM2COL_ONLY */
#undef FN
#undef NR
#undef VEC
#undef LOADU
#undef STOREU
#undef LOADV
#undef WVEC
#endif
