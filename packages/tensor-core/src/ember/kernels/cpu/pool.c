/* Pooling over NCHW planes (max, average, adaptive average, adaptive max) and the
 * backward kernels, float32 and float64 (the NHWC ones at the end bfloat16 too). 1-d
 * pooling is 2-d pooling with H = 1.
 *
 * Input, output, indices and gradients are contiguous: `planes` planes of H x W in,
 * OH x OW out. Planes are independent and shared out with em_parallel_for when
 * there is enough work.
 *
 * Max and average pooling build each output row from its windows' input rows: a
 * row is read in place, or copied with the padding (-inf or 0) around it when a
 * window reaches outside it, so the loops over a row's outputs need no bounds
 * tests. Windows 2 or 3 wide, undilated, at stride 1 or 2 (nearly all pooling in
 * practice) take all taps of a row, or of a whole square window, in one loop the
 * auto-vectoriser handles; other windows go tap by tap, in place, each tap over the
 * outputs it lands inside the input for, so a huge kernel, padding or stride costs
 * no more than the input it covers (its bounds computed without overflow). Every
 * output meets its window in PyTorch's scan order (kh, then kw): ties keep the
 * first maximum, a NaN anywhere in the window wins (the last NaN, like PyTorch's
 * index), and sums add up in the same order.
 *
 * Max-pool indices are flat h * W + w within the plane; a window that lies entirely
 * in the padding (possible with dilation) gives -inf and index -1, which the
 * backward skips. The CUDA and OpenCL backends implement the same entry points. */
#include <stdlib.h>
#include <string.h>
#include "ember_bf16.h"
#include "ember_c_types.h"
#include "threads.h"

#define EM_POOL_EINDEX 1    /* max_pool backward: an index outside the plane */
#define EM_POOL_ENOMEM 2

/* Below this many element visits per chunk of planes, one thread does the work
 * (waking a thread costs about 50 us). */
#define POOL_PAR_MIN ((int64_t)1 << 17)

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* A tap of a window row that lands inside the input: it reads column col + o * SW
 * for the outputs lo + o, o in [0, n). */
typedef struct { int64_t lo, n, col; } em_pool_tap;

typedef struct {
    int64_t H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW;
    int64_t span;   /* the columns one output row's windows span, from column -PW;
                     * 0 for the generic variant, which reads rows in place */
    const em_pool_tap *taps;   /* the taps landing inside, in scan order (tap_table) */
    int64_t ntaps;
} em_pool_geom;

/* a >= 0, b > 0; no a + b - 1, which overflows for a huge stride or dilation */
static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* min(start + len, limit) without computing start + len, which overflows for a huge
 * kernel (len >= 0, limit >= 0, start > INT64_MIN). */
static int64_t clip_end(int64_t start, int64_t len, int64_t limit) {
    return len - limit < -start ? start + len : limit;
}

/* The ow in [lo, hi) whose column ow * S + off lies in [0, W). */
static void col_range(const em_pool_geom *g, int64_t off, int64_t *lo, int64_t *hi) {
    *lo = off >= 0 ? 0 : ceil_div(-off, g->SW);
    int64_t last = g->W - 1 - off;   /* largest ow * S allowed */
    *hi = last < 0 ? 0 : last / g->SW + 1;
    if (*hi > g->OW) *hi = g->OW;
}

/* The taps of a window row that land inside the input for some output, into t (when
 * not NULL); returns their number. Only these are visited, so a huge kernel costs no
 * more than the row it covers; built once per call, keeping divisions out of the loops. */
static int64_t tap_table(const em_pool_geom *g, em_pool_tap *t) {
    int64_t reach = (g->OW - 1) * g->SW;   /* the last window's start, from column -PW */
    int64_t kw = g->PW > reach ? ceil_div(g->PW - reach, g->DW) : 0, n = 0;
    int64_t end = (g->PW + g->W - 1) / g->DW + 1;
    if (end > g->KW) end = g->KW;
    while (kw < end) {
        int64_t off = kw * g->DW - g->PW, lo, hi;
        col_range(g, off, &lo, &hi);
        if (lo < hi) {
            if (t) t[n] = (em_pool_tap){lo, hi - lo, lo * g->SW + off};
            n++;
            kw++;
        } else {   /* in a gap a stride wider than the row leaves between windows: on
                    * to the tap where output lo - 1 lands */
            kw = ceil_div(g->PW - (lo - 1) * g->SW, g->DW);
        }
    }
    return n;
}

static int64_t pool_grain(int64_t plane_work) {
    int64_t g = POOL_PAR_MIN / (plane_work > 0 ? plane_work : 1);
    return g > 0 ? g : 1;
}

/* The fused loops below take a whole window row (K = 2 or 3 taps, undilated) or a
 * whole K x K window per output, with the stride S (1 or 2) and K as literals: each
 * (S, K) has its own plane function, so the compiler unrolls the taps, vectorises
 * over the outputs and keeps the loop's values in registers. Other windows go tap
 * by tap ("generic", S = 0 below). */
enum { V_GENERIC, V_S1K2, V_S1K3, V_S2K2, V_S2K3, NVARIANTS };

/* Tap k of output o in a row prepared by row_of: e[o * S + k], except for 3 taps at
 * stride 2, whose strided loads would overrun the last output (so the vectoriser
 * would peel it off as slow scalar code): that row is split into its even columns e
 * and odd columns od, and every tap is a contiguous load. */
#define SPLIT(S, K) ((S) == 2 && (K) == 3)
#define TAP_AT(e, od, o, S, K, k)                                                       \
    (SPLIT(S, K) ? ((k) & 1 ? (od) : (e))[(o) + ((k) >> 1)] : (e)[(o) * (S) + (k)])

/* Scratch per row slot: a padded row, or its two split halves. */
static int64_t row_slot(const em_pool_geom *g) { return g->span + 2; }

/* Rows kh in [*kh0, *kh1) of the window starting at input row ih0 lie inside. */
static void row_range(const em_pool_geom *g, int64_t ih0, int64_t *kh0, int64_t *kh1) {
    if (g->DH == 1) {   /* no divisions in the common case */
        *kh0 = ih0 < 0 ? -ih0 : 0;
        *kh1 = g->H - ih0;
    } else {
        *kh0 = ih0 < 0 ? ceil_div(-ih0, g->DH) : 0;
        *kh1 = g->H <= ih0 ? 0 : ceil_div(g->H - ih0, g->DH);
    }
    if (*kh1 > g->KH) *kh1 = g->KH;
    if (*kh1 < *kh0) *kh1 = *kh0;
}

/* Input row xr as the windows see it, in *e (and *od, see TAP_AT): (*e)[c] is column
 * c - PW for c < span. The row itself when every window lies inside it, else a
 * copy into slot with `pad` (the identity of the pooling) around it, so the loops
 * over a row need no bounds; split rows are always copies. */
#define ROW_OF(SUFFIX, T)                                                               \
    EM_CLONES __attribute__((noinline)) static void deinterleave_##SUFFIX(              \
            const T *restrict x, T *restrict ev, T *restrict odd, int64_t n) {          \
        for (int64_t c = 0; c < n; c++) {                                               \
            ev[c] = x[2 * c];                                                           \
            odd[c] = x[2 * c + 1];                                                      \
        }                                                                               \
    }                                                                                   \
    static inline T col_##SUFFIX(const em_pool_geom *g, const T *xr, int64_t c, T pad) {\
        return c >= g->PW && c - g->PW < g->W ? xr[c - g->PW] : pad;                    \
    }                                                                                   \
    static inline void row_of_##SUFFIX(const em_pool_geom *g, const T *restrict xr,     \
                                       T *restrict slot, T pad, int split, const T **e, \
                                       const T **od) {                                  \
        const int64_t span = g->span, P = g->PW;                                        \
        if (!split) {                                                                   \
            *e = *od = xr;                                                              \
            if (P == 0 && span <= g->W) return;                                         \
            int64_t lo = P < span ? P : span, hi = P + g->W < span ? P + g->W : span;   \
            for (int64_t c = 0; c < lo; c++) slot[c] = pad;                             \
            for (int64_t c = lo; c < hi; c++) slot[c] = xr[c - P];                      \
            for (int64_t c = hi > lo ? hi : lo; c < span; c++) slot[c] = pad;           \
            *e = *od = slot;                                                            \
            return;                                                                     \
        }                                                                               \
        /* columns 2c and 2c + 1 into ev[c] and odd[c]; both inside for c in [lo, hi) */\
        const int64_t half = (span + 1) / 2;                                            \
        T *restrict ev = slot, *restrict odd = slot + half;                             \
        int64_t lo = (P + 1) / 2, hi = (g->W + P) / 2;   /* 2c + 1 - P <= W - 1 */      \
        if (hi > span / 2) hi = span / 2;                                               \
        if (hi < lo) hi = lo;                                                           \
        for (int64_t c = 0; c < lo && c < half; c++) {                                  \
            ev[c] = col_##SUFFIX(g, xr, 2 * c, pad);                                    \
            odd[c] = 2 * c + 1 < span ? col_##SUFFIX(g, xr, 2 * c + 1, pad) : pad;      \
        }                                                                               \
        deinterleave_##SUFFIX(xr + 2 * lo - P, ev + lo, odd + lo, hi - lo);             \
        for (int64_t c = hi; c < half; c++) {                                           \
            ev[c] = col_##SUFFIX(g, xr, 2 * c, pad);                                    \
            odd[c] = 2 * c + 1 < span ? col_##SUFFIX(g, xr, 2 * c + 1, pad) : pad;      \
        }                                                                               \
        *e = ev;                                                                        \
        *od = odd;                                                                      \
    }

/* ---------------------------------------------------------------- max pooling */

/* One window position into a running maximum m (and its flat index i): greater or
 * NaN wins, PyTorch's test (bitwise |: no branches where it stays scalar). */
#define MAX_TAP(v, col)                                                                 \
    {                                                                                   \
        __typeof__(m) v_ = (v);                                                         \
        int t_ = (v_ > m) | (v_ != v_);                                                 \
        m = t_ ? v_ : m;                                                                \
        i = t_ ? (col) : i;                                                             \
    }
#define MAX_VALUE_TAP(v)                                                                \
    {                                                                                   \
        __typeof__(m) v_ = (v);                                                         \
        m = (v_ > m) | (v_ != v_) ? v_ : m;                                             \
    }

/* K taps of one row (e, od; b: the flat index of its column 0) into the running
 * maxima y[0..n) and their indices ix (may be NULL). */
#define MAX_ROW(SUFFIX, T)                                                              \
    ALWAYS_INLINE void max_row_##SUFFIX(T *restrict y, int64_t *restrict ix, int64_t n, \
                                        int64_t S, int64_t K, const T *restrict e,      \
                                        const T *restrict od, int64_t b) {              \
        if (ix) {                                                                       \
            for (int64_t o = 0; o < n; o++) {                                           \
                T m = y[o];                                                             \
                int64_t i = ix[o];                                                      \
                for (int64_t k = 0; k < K; k++)                                         \
                    MAX_TAP(TAP_AT(e, od, o, S, K, k), b + o * S + k)                   \
                y[o] = m;                                                               \
                ix[o] = i;                                                              \
            }                                                                           \
        } else {                                                                        \
            for (int64_t o = 0; o < n; o++) {                                           \
                T m = y[o];                                                             \
                for (int64_t k = 0; k < K; k++) MAX_VALUE_TAP(TAP_AT(e, od, o, S, K, k))\
                y[o] = m;                                                               \
            }                                                                           \
        }                                                                               \
    }

/* A whole K x K window per output from its K rows (e[], od[], b[] as for max_row):
 * each output is loaded and stored once. ix holds the initial indices. */
#define MAX_WINDOW(SUFFIX, T)                                                           \
    ALWAYS_INLINE void max_window_##SUFFIX(T *restrict y, int64_t *restrict ix,         \
                                           int64_t n, int64_t S, int64_t K,             \
                                           const T *restrict e0, const T *restrict od0, \
                                           const T *restrict e1, const T *restrict od1, \
                                           const T *restrict e2, const T *restrict od2, \
                                           int64_t b0, int64_t b1, int64_t b2) {        \
        if (ix) {                                                                       \
            for (int64_t o = 0; o < n; o++) {                                           \
                T m = -INFINITY;                                                        \
                int64_t i = ix[o];                                                      \
                for (int64_t k = 0; k < K; k++)                                         \
                    MAX_TAP(TAP_AT(e0, od0, o, S, K, k), b0 + o * S + k)                \
                for (int64_t k = 0; k < K; k++)                                         \
                    MAX_TAP(TAP_AT(e1, od1, o, S, K, k), b1 + o * S + k)                \
                if (K == 3)                                                             \
                    for (int64_t k = 0; k < K; k++)                                     \
                        MAX_TAP(TAP_AT(e2, od2, o, S, K, k), b2 + o * S + k)            \
                y[o] = m;                                                               \
                ix[o] = i;                                                              \
            }                                                                           \
        } else {                                                                        \
            for (int64_t o = 0; o < n; o++) {                                           \
                T m = -INFINITY;                                                        \
                for (int64_t k = 0; k < K; k++) MAX_VALUE_TAP(TAP_AT(e0, od0, o, S, K, k))\
                for (int64_t k = 0; k < K; k++) MAX_VALUE_TAP(TAP_AT(e1, od1, o, S, K, k))\
                if (K == 3)                                                             \
                    for (int64_t k = 0; k < K; k++)                                     \
                        MAX_VALUE_TAP(TAP_AT(e2, od2, o, S, K, k))                      \
                y[o] = m;                                                               \
            }                                                                           \
        }                                                                               \
    }

static int variant(const em_pool_geom *g) {
    if (!(g->KW == 2 || g->KW == 3) || g->DW != 1 || g->SW > 2) return V_GENERIC;
    return g->SW == 1 ? (g->KW == 2 ? V_S1K2 : V_S1K3) : (g->KW == 2 ? V_S2K2 : V_S2K3);
}

/* One plane of max pooling for stride S and window width K (S = 0: any, tap by tap).
 * scratch: 3 row slots; first_iw: each output column's first input column inside
 * its window, -1 for none (read only when ix is not NULL). */
#define MAX_PLANE(SUFFIX, T, V, S, K)                                                   \
    EM_CLONES static void max_plane_##V##_##SUFFIX(const em_pool_geom *g, const T *x,   \
                                                   T *y, int64_t *ix, T *scratch,       \
                                                   const int64_t *first_iw) {           \
        const int64_t W = g->W, OW = g->OW, slot = row_slot(g);                         \
        const int window = (S) && g->KH == (K) && g->DH == 1, split = SPLIT(S, K);      \
        const T *e[3] = {NULL, NULL, NULL}, *od[3] = {NULL, NULL, NULL};                \
        int64_t b[3] = {0, 0, 0};                                                       \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            T *yr = y + oh * OW;                                                        \
            int64_t *ir = ix ? ix + oh * OW : NULL;                                     \
            int64_t ih0 = oh * g->SH - g->PH, kh0, kh1;                                 \
            row_range(g, ih0, &kh0, &kh1);                                              \
            if (ir) {   /* PyTorch's start: the window's first position inside */       \
                int64_t first = kh0 < kh1 ? (ih0 + kh0 * g->DH) * W : -1;               \
                for (int64_t o = 0; o < OW; o++)                                        \
                    ir[o] = first >= 0 && first_iw[o] >= 0 ? first + first_iw[o] : -1;  \
            }                                                                           \
            if (window && kh1 - kh0 == (K)) {                                           \
                for (int64_t kh = 0; kh < (K); kh++) {                                  \
                    row_of_##SUFFIX(g, x + (ih0 + kh) * W, scratch + kh * slot,         \
                                    -INFINITY, split, &e[kh], &od[kh]);                 \
                    b[kh] = (ih0 + kh) * W - g->PW;                                     \
                }                                                                       \
                max_window_##SUFFIX(yr, ir, OW, S, K, e[0], od[0], e[1], od[1], e[2],   \
                                    od[2], b[0], b[1], b[2]);                           \
                continue;                                                               \
            }                                                                           \
            for (int64_t o = 0; o < OW; o++) yr[o] = -INFINITY;                         \
            for (int64_t kh = kh0; kh < kh1; kh++) {                                    \
                int64_t ih = ih0 + kh * g->DH;                                          \
                if (S) {                                                                \
                    row_of_##SUFFIX(g, x + ih * W, scratch, -INFINITY, split, &e[0],    \
                                    &od[0]);                                            \
                    max_row_##SUFFIX(yr, ir, OW, S, K, e[0], od[0], ih * W - g->PW);    \
                    continue;                                                           \
                }                                                                       \
                for (const em_pool_tap *t = g->taps; t < g->taps + g->ntaps; t++) {    \
                    int64_t c = ih * W + t->col, n = t->n;                              \
                    T *yo = yr + t->lo;                                                 \
                    int64_t *io = ir ? ir + t->lo : NULL;                               \
                    if (g->SW == 1) max_row_##SUFFIX(yo, io, n, 1, 1, x + c, x + c, c); \
                    else if (g->SW == 2) max_row_##SUFFIX(yo, io, n, 2, 1, x + c, x + c, c);\
                    else max_row_##SUFFIX(yo, io, n, g->SW, 1, x + c, x + c, c);        \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }

#define MAX_POOL(SUFFIX, T)                                                             \
    ROW_OF(SUFFIX, T)                                                                   \
    MAX_ROW(SUFFIX, T)                                                                  \
    MAX_WINDOW(SUFFIX, T)                                                               \
    MAX_PLANE(SUFFIX, T, V_GENERIC, 0, 0)                                               \
    MAX_PLANE(SUFFIX, T, V_S1K2, 1, 2)                                                  \
    MAX_PLANE(SUFFIX, T, V_S1K3, 1, 3)                                                  \
    MAX_PLANE(SUFFIX, T, V_S2K2, 2, 2)                                                  \
    MAX_PLANE(SUFFIX, T, V_S2K3, 2, 3)                                                  \
    typedef void (*max_plane_##SUFFIX##_fn)(const em_pool_geom *, const T *, T *,       \
                                            int64_t *, T *, const int64_t *);           \
    static const max_plane_##SUFFIX##_fn max_planes_##SUFFIX[NVARIANTS] = {             \
        max_plane_V_GENERIC_##SUFFIX, max_plane_V_S1K2_##SUFFIX, max_plane_V_S1K3_##SUFFIX,\
        max_plane_V_S2K2_##SUFFIX, max_plane_V_S2K3_##SUFFIX};

MAX_POOL(f32, float)
MAX_POOL(f64, double)

/* Each output column's first input column inside its window, -1 for none. */
static void first_columns(const em_pool_geom *g, int64_t *first_iw) {
    for (int64_t o = 0; o < g->OW; o++) {
        int64_t iw0 = o * g->SW - g->PW;
        int64_t kw0 = iw0 < 0 ? ceil_div(-iw0, g->DW) : 0;
        first_iw[o] = kw0 < g->KW && iw0 + kw0 * g->DW < g->W ? iw0 + kw0 * g->DW : -1;
    }
}

/* ---------------------------------------------------------------- average pooling */

/* PyTorch's divisor of each output: the window clipped to the padded input
 * (count_include_pad) or to the input, or divisor_override. It factors into a row
 * part and a column part; these are the column parts, per output column. */
static void avg_col_counts(const em_pool_geom *g, double *padded, double *inside) {
    for (int64_t o = 0; o < g->OW; o++) {
        int64_t w0 = o * g->SW - g->PW;
        int64_t w1 = clip_end(w0, g->KW, g->W + g->PW);
        padded[o] = (double)(w1 - w0);
        inside[o] = (double)((w1 < g->W ? w1 : g->W) - (w0 > 0 ? w0 : 0));
    }
}

/* The divisor of each output of row oh into d; 0 where the window holds no input
 * (PyTorch's output is then 0, and so is the gradient). */
#define AVG_DIVISORS(SUFFIX, T)                                                         \
    static inline void avg_divisors_##SUFFIX(const em_pool_geom *g, int64_t oh,         \
                                             const double *cpad, const double *cin,     \
                                             int count_include_pad, int64_t divisor,    \
                                             T *d) {                                    \
        int64_t h0 = oh * g->SH - g->PH;                                                \
        int64_t h1 = clip_end(h0, g->KH, g->H + g->PH);                                 \
        double hp = (double)(h1 - h0);                                                  \
        double hi = (double)((h1 < g->H ? h1 : g->H) - (h0 > 0 ? h0 : 0));              \
        for (int64_t o = 0; o < g->OW; o++) {                                           \
            double v = divisor ? (double)divisor : count_include_pad ? hp * cpad[o]     \
                                                                     : hi * cin[o];     \
            d[o] = hi > 0 && cin[o] > 0 ? (T)v : 0;                                     \
        }                                                                               \
    }

/* Sums in PyTorch's order (kh, then kw), as max_row and max_window. */
#define SUM_LOOPS(SUFFIX, T)                                                            \
    ALWAYS_INLINE void sum_row_##SUFFIX(T *restrict y, int64_t n, int64_t S, int64_t K, \
                                        const T *restrict e, const T *restrict od) {    \
        for (int64_t o = 0; o < n; o++) {                                               \
            T s = y[o];                                                                 \
            for (int64_t k = 0; k < K; k++) s += TAP_AT(e, od, o, S, K, k);             \
            y[o] = s;                                                                   \
        }                                                                               \
    }                                                                                   \
    ALWAYS_INLINE void sum_window_##SUFFIX(T *restrict y, int64_t n, int64_t S, int64_t K,\
                                           const T *restrict e0, const T *restrict od0, \
                                           const T *restrict e1, const T *restrict od1, \
                                           const T *restrict e2, const T *restrict od2) {\
        for (int64_t o = 0; o < n; o++) {                                               \
            T s = 0;                                                                    \
            for (int64_t k = 0; k < K; k++) s += TAP_AT(e0, od0, o, S, K, k);           \
            for (int64_t k = 0; k < K; k++) s += TAP_AT(e1, od1, o, S, K, k);           \
            if (K == 3)                                                                 \
                for (int64_t k = 0; k < K; k++) s += TAP_AT(e2, od2, o, S, K, k);       \
            y[o] = s;                                                                   \
        }                                                                               \
    }

/* One plane of average pooling, as max_plane: sums, then a division by each
 * divisor (not a multiplication by its reciprocal: PyTorch's roundings). scratch:
 * 3 row slots; d: a row of divisors. */
#define AVG_PLANE(SUFFIX, T, V, S, K)                                                   \
    EM_CLONES static void avg_plane_##V##_##SUFFIX(const em_pool_geom *g, const T *x,   \
                                                   T *y, T *scratch, const double *cpad,\
                                                   const double *cin, T *d,             \
                                                   int count_include_pad, int64_t divisor) {\
        const int64_t W = g->W, OW = g->OW, slot = row_slot(g);                         \
        const int window = (S) && g->KH == (K), split = SPLIT(S, K);                    \
        const T *e[3] = {NULL, NULL, NULL}, *od[3] = {NULL, NULL, NULL};                \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            T *restrict yr = y + oh * OW;                                               \
            int64_t ih0 = oh * g->SH - g->PH, kh0, kh1;                                 \
            row_range(g, ih0, &kh0, &kh1);                                              \
            if (window && kh1 - kh0 == (K)) {                                           \
                for (int64_t kh = 0; kh < (K); kh++)                                    \
                    row_of_##SUFFIX(g, x + (ih0 + kh) * W, scratch + kh * slot, 0, split,\
                                    &e[kh], &od[kh]);                                   \
                sum_window_##SUFFIX(yr, OW, S, K, e[0], od[0], e[1], od[1], e[2], od[2]);\
            } else {                                                                    \
                for (int64_t o = 0; o < OW; o++) yr[o] = 0;                             \
                for (int64_t kh = kh0; kh < kh1; kh++) {                                \
                    const T *xr = x + (ih0 + kh) * W;                                   \
                    if (S) {                                                            \
                        row_of_##SUFFIX(g, xr, scratch, 0, split, &e[0], &od[0]);       \
                        sum_row_##SUFFIX(yr, OW, S, K, e[0], od[0]);                    \
                        continue;                                                       \
                    }                                                                   \
                    for (const em_pool_tap *t = g->taps; t < g->taps + g->ntaps; t++) {\
                        const T *r = xr + t->col;                                       \
                        T *yo = yr + t->lo;                                             \
                        if (g->SW == 1) sum_row_##SUFFIX(yo, t->n, 1, 1, r, r);         \
                        else if (g->SW == 2) sum_row_##SUFFIX(yo, t->n, 2, 1, r, r);    \
                        else sum_row_##SUFFIX(yo, t->n, g->SW, 1, r, r);                \
                    }                                                                   \
                }                                                                       \
            }                                                                           \
            avg_divisors_##SUFFIX(g, oh, cpad, cin, count_include_pad, divisor, d);     \
            for (int64_t o = 0; o < OW; o++) yr[o] = d[o] != 0 ? yr[o] / d[o] : 0;      \
        }                                                                               \
    }

#define AVG_POOL(SUFFIX, T)                                                             \
    AVG_DIVISORS(SUFFIX, T)                                                             \
    SUM_LOOPS(SUFFIX, T)                                                                \
    AVG_PLANE(SUFFIX, T, V_GENERIC, 0, 0)                                               \
    AVG_PLANE(SUFFIX, T, V_S1K2, 1, 2)                                                  \
    AVG_PLANE(SUFFIX, T, V_S1K3, 1, 3)                                                  \
    AVG_PLANE(SUFFIX, T, V_S2K2, 2, 2)                                                  \
    AVG_PLANE(SUFFIX, T, V_S2K3, 2, 3)                                                  \
    typedef void (*avg_plane_##SUFFIX##_fn)(const em_pool_geom *, const T *, T *, T *,  \
                                            const double *, const double *, T *, int,   \
                                            int64_t);                                   \
    static const avg_plane_##SUFFIX##_fn avg_planes_##SUFFIX[NVARIANTS] = {             \
        avg_plane_V_GENERIC_##SUFFIX, avg_plane_V_S1K2_##SUFFIX, avg_plane_V_S1K3_##SUFFIX,\
        avg_plane_V_S2K2_##SUFFIX, avg_plane_V_S2K3_##SUFFIX};

AVG_POOL(f32, float)
AVG_POOL(f64, double)

/* dx[ih, iw] += dy[oh, ow] / divisor over every window holding (ih, iw). The passes
 * go tap by tap, so no two iterations of one pass write the same element. */
#define AVG_POOL_BACKWARD(SUFFIX, T)                                                    \
    ALWAYS_INLINE void scatter_tap_##SUFFIX(T *restrict dxr, const T *restrict gr,      \
                                            int64_t n, int64_t S) {                     \
        for (int64_t o = 0; o < n; o++) dxr[o * S] += gr[o];                            \
    }                                                                                   \
    EM_CLONES static void avg_pool_backward_plane_##SUFFIX(                             \
            const em_pool_geom *g, const T *dy, T *dx, const double *cpad,              \
            const double *cin, T *r, int count_include_pad, int64_t divisor) {          \
        const int64_t W = g->W, OW = g->OW;                                             \
        memset(dx, 0, sizeof(T) * g->H * W);                                            \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            avg_divisors_##SUFFIX(g, oh, cpad, cin, count_include_pad, divisor, r);     \
            for (int64_t o = 0; o < OW; o++) r[o] = r[o] != 0 ? dy[oh * OW + o] / r[o] : 0;\
            int64_t ih0 = oh * g->SH - g->PH;                                           \
            for (int64_t kh = ih0 < 0 ? -ih0 : 0; kh < g->KH && ih0 + kh < g->H; kh++) {\
                T *dxr = dx + (ih0 + kh) * W;                                           \
                for (const em_pool_tap *t = g->taps; t < g->taps + g->ntaps; t++) {    \
                    T *d = dxr + t->col;                                                \
                    if (g->SW == 1) scatter_tap_##SUFFIX(d, r + t->lo, t->n, 1);        \
                    else if (g->SW == 2) scatter_tap_##SUFFIX(d, r + t->lo, t->n, 2);   \
                    else scatter_tap_##SUFFIX(d, r + t->lo, t->n, g->SW);               \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }

AVG_POOL_BACKWARD(f32, float)
AVG_POOL_BACKWARD(f64, double)

/* ---------------------------------------------------------------- adaptive pooling */

/* Output o of n over an input of size: [floor(o * size / n), ceil((o + 1) * size / n)). */
static int64_t ad_start(int64_t o, int64_t n, int64_t size) { return o * size / n; }
static int64_t ad_end(int64_t o, int64_t n, int64_t size) { return ceil_div((o + 1) * size, n); }

/* Sums in lanes of partial sums vectorise without reassociation flags: 8 lanes (one
 * AVX2 float vector), or 16 for long runs, where two vectors hide the add latency
 * (for short runs their longer start and finish cost more than they save). */
#define ADAPTIVE(SUFFIX, T)                                                             \
    static inline T lane_sum_##SUFFIX(const T *x, int64_t n) {                          \
        T s[16] = {0};                                                                  \
        int64_t i = 0;                                                                  \
        if (n >= 128) {                                                                 \
            for (; i + 16 <= n; i += 16)                                                \
                for (int k = 0; k < 16; k++) s[k] += x[i + k];                          \
            for (int k = 0; k < 8; k++) s[k] += s[k + 8];                               \
        }                                                                               \
        for (; i + 8 <= n; i += 8)                                                      \
            for (int k = 0; k < 8; k++) s[k] += x[i + k];                               \
        for (; i < n; i++) s[0] += x[i];                                                \
        T t = 0;                                                                        \
        for (int k = 0; k < 8; k++) t += s[k];                                          \
        return t;                                                                       \
    }                                                                                   \
    /* global average pooling (output 1 x 1): a plain loop over the planes */           \
    EM_CLONES static void global_avg_##SUFFIX(const T *x, T *y, int64_t planes, int64_t n) {\
        for (int64_t p = 0; p < planes; p++) y[p] = lane_sum_##SUFFIX(x + p * n, n) / (T)n;\
    }                                                                                   \
    EM_CLONES static void adaptive_avg_plane_##SUFFIX(const em_pool_geom *g, const T *x,\
                                                      T *y) {                           \
        const int64_t H = g->H, W = g->W;                                               \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            int64_t h0 = ad_start(oh, g->OH, H), h1 = ad_end(oh, g->OH, H);             \
            for (int64_t ow = 0; ow < g->OW; ow++) {                                    \
                int64_t w0 = ad_start(ow, g->OW, W), w1 = ad_end(ow, g->OW, W);         \
                T s = 0;                                                                \
                if (w0 == 0 && w1 == W)   /* whole rows: one contiguous block */        \
                    s = lane_sum_##SUFFIX(x + h0 * W, (h1 - h0) * W);                   \
                else                                                                    \
                    for (int64_t ih = h0; ih < h1; ih++)                                \
                        s += lane_sum_##SUFFIX(x + ih * W + w0, w1 - w0);               \
                y[oh * g->OW + ow] = s / (T)((h1 - h0) * (w1 - w0));                    \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    EM_CLONES static void adaptive_avg_backward_plane_##SUFFIX(const em_pool_geom *g,   \
                                                               const T *dy, T *dx) {    \
        const int64_t H = g->H, W = g->W;                                               \
        memset(dx, 0, sizeof(T) * H * W);                                               \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            int64_t h0 = ad_start(oh, g->OH, H), h1 = ad_end(oh, g->OH, H);             \
            for (int64_t ow = 0; ow < g->OW; ow++) {                                    \
                int64_t w0 = ad_start(ow, g->OW, W), w1 = ad_end(ow, g->OW, W);         \
                T v = dy[oh * g->OW + ow] / (T)((h1 - h0) * (w1 - w0));                 \
                for (int64_t ih = h0; ih < h1; ih++) {                                  \
                    T *restrict r = dx + ih * W;                                        \
                    for (int64_t iw = w0; iw < w1; iw++) r[iw] += v;                    \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    /* PyTorch's scan: row by row, a later value wins when greater or NaN */            \
    EM_CLONES static void adaptive_max_plane_##SUFFIX(const em_pool_geom *g, const T *x,\
                                                      T *y, int64_t *ix) {              \
        const int64_t H = g->H, W = g->W;                                               \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                        \
            int64_t h0 = ad_start(oh, g->OH, H), h1 = ad_end(oh, g->OH, H);             \
            for (int64_t ow = 0; ow < g->OW; ow++) {                                    \
                int64_t w0 = ad_start(ow, g->OW, W), w1 = ad_end(ow, g->OW, W);         \
                T m = -INFINITY;                                                        \
                int64_t best = h0 * W + w0;                                             \
                for (int64_t ih = h0; ih < h1; ih++)                                    \
                    for (int64_t iw = w0; iw < w1; iw++) {                              \
                        T v = x[ih * W + iw];                                           \
                        if (v > m || v != v) { m = v; best = ih * W + iw; }             \
                    }                                                                   \
                y[oh * g->OW + ow] = m;                                                 \
                ix[oh * g->OW + ow] = best;                                             \
            }                                                                           \
        }                                                                               \
    }

ADAPTIVE(f32, float)
ADAPTIVE(f64, double)

/* ---------------------------------------------------------------- max backward */

/* dx[plane, ix[i]] += dy[plane, i]; -1 (a window wholly in the padding) adds nothing.
 * Returns EM_POOL_EINDEX for an index outside the plane. */
#define MAX_BACKWARD(SUFFIX, T)                                                         \
    static int max_backward_plane_##SUFFIX(int64_t in_size, int64_t out_size,           \
                                           const T *dy, const int64_t *ix, T *dx) {     \
        memset(dx, 0, sizeof(T) * in_size);                                             \
        for (int64_t i = 0; i < out_size; i++) {                                        \
            int64_t k = ix[i];                                                          \
            if ((uint64_t)k < (uint64_t)in_size) dx[k] += dy[i];                        \
            else if (k != -1) return EM_POOL_EINDEX;                                    \
        }                                                                               \
        return 0;                                                                       \
    }

MAX_BACKWARD(f32, float)
MAX_BACKWARD(f64, double)

/* ---------------------------------------------------------------- entry points */

enum { K_MAX, K_AVG, K_AVG_BACKWARD, K_ADAPTIVE_AVG, K_ADAPTIVE_AVG_BACKWARD, K_ADAPTIVE_MAX,
       K_MAX_BACKWARD };

typedef struct {
    int kind, f64;
    em_pool_geom g;
    const char *in;     /* x, or dy for the backward kernels */
    char *out;          /* y, or dx */
    int64_t *ix;        /* indices (written by max, read by max backward) */
    int count_include_pad;
    int64_t divisor;
    int err;            /* an error of any chunk (written atomically) */
} pool_job;

/* The planes [b, e) of a job; forward kernels read planes of H x W and write
 * OH x OW, the backward kernels the reverse. */
#define PLANES(SUFFIX, T)                                                               \
    static int planes_##SUFFIX(const pool_job *J, int64_t b, int64_t e, T *rows,        \
                               const double *cpad, const double *cin, T *d,             \
                               const int64_t *first_iw) {                               \
        const em_pool_geom *g = &J->g;                                                  \
        const int64_t isz = g->H * g->W, osz = g->OH * g->OW;                           \
        const T *in = (const T *)J->in;                                                 \
        T *out = (T *)J->out;                                                           \
        const int v = variant(g);                                                       \
        if (J->kind == K_ADAPTIVE_AVG && g->OH == 1 && g->OW == 1) {                    \
            global_avg_##SUFFIX(in + b * isz, out + b, e - b, isz);                     \
            return 0;                                                                   \
        }                                                                               \
        for (int64_t p = b; p < e; p++) {                                               \
            int64_t *ix = J->ix ? J->ix + p * osz : NULL;                               \
            const T *fin = in + p * isz, *bin = in + p * osz;                           \
            T *fout = out + p * osz, *bout = out + p * isz;                             \
            switch (J->kind) {                                                          \
            case K_MAX: max_planes_##SUFFIX[v](g, fin, fout, ix, rows, first_iw); break;\
            case K_AVG:                                                                 \
                avg_planes_##SUFFIX[v](g, fin, fout, rows, cpad, cin, d,                \
                                       J->count_include_pad, J->divisor);               \
                break;                                                                  \
            case K_AVG_BACKWARD:                                                        \
                avg_pool_backward_plane_##SUFFIX(g, bin, bout, cpad, cin, d,            \
                                                 J->count_include_pad, J->divisor);     \
                break;                                                                  \
            case K_ADAPTIVE_AVG: adaptive_avg_plane_##SUFFIX(g, fin, fout); break;      \
            case K_ADAPTIVE_AVG_BACKWARD:                                               \
                adaptive_avg_backward_plane_##SUFFIX(g, bin, bout);                     \
                break;                                                                  \
            case K_ADAPTIVE_MAX: adaptive_max_plane_##SUFFIX(g, fin, fout, ix); break;  \
            case K_MAX_BACKWARD:                                                        \
                if (max_backward_plane_##SUFFIX(isz, osz, bin, ix, bout))               \
                    return EM_POOL_EINDEX;                                              \
                break;                                                                  \
            }                                                                           \
        }                                                                               \
        return 0;                                                                       \
    }

PLANES(f32, float)
PLANES(f64, double)

static void pool_planes(void *ctx, int64_t b, int64_t e) {
    pool_job *J = ctx;
    const em_pool_geom *g = &J->g;
    /* scratch, in 8-byte slots: the divisors' column parts (cpad, cin), the first
     * columns of the max windows, a row of divisors, and 3 input row slots */
    double *mem = NULL;
    int64_t n = g->OW;
    if (J->kind == K_MAX || J->kind == K_AVG || J->kind == K_AVG_BACKWARD) {
        if (!(mem = malloc(sizeof(double) * (4 * n + 3 * row_slot(g))))) {
            __atomic_store_n(&J->err, EM_POOL_ENOMEM, __ATOMIC_RELAXED);
            return;
        }
        if (J->kind == K_MAX)
            first_columns(g, (int64_t *)(mem + 2 * n));
        else
            avg_col_counts(g, mem, mem + n);
    }
#define AT(k) (mem ? mem + (k) * n : NULL)
    int rc = J->f64 ? planes_f64(J, b, e, AT(4), AT(0), AT(1), AT(3), (const int64_t *)AT(2))
                    : planes_f32(J, b, e, (float *)AT(4), AT(0), AT(1), (float *)AT(3),
                                 (const int64_t *)AT(2));
#undef AT
    if (rc) __atomic_store_n(&J->err, rc, __ATOMIC_RELAXED);
    free(mem);
}

static int run(pool_job *J, int64_t planes, int64_t plane_work) {
    em_pool_tap *taps = NULL;
    if (J->kind == K_MAX || J->kind == K_AVG || J->kind == K_AVG_BACKWARD) {
        if (!(taps = malloc(sizeof(em_pool_tap) * (tap_table(&J->g, NULL) + 1))))
            return EM_POOL_ENOMEM;
        J->g.ntaps = tap_table(&J->g, taps);
        J->g.taps = taps;
    }
    J->err = 0;
    em_parallel_for(planes, pool_grain(plane_work), pool_planes, J);
    free(taps);
    return J->err;
}

static em_pool_geom geom(const int64_t *in_hw, const int64_t *out_hw, const int64_t *k,
                         const int64_t *s, const int64_t *p, const int64_t *d) {
    em_pool_geom g = {in_hw[0], in_hw[1], out_hw[0], out_hw[1], 1, 1, 1, 1, 0, 0, 1, 1, 0};
    if (k) { g.KH = k[0]; g.KW = k[1]; }
    if (s) { g.SH = s[0]; g.SW = s[1]; }
    if (p) { g.PH = p[0]; g.PW = p[1]; }
    if (d) { g.DH = d[0]; g.DW = d[1]; }
    /* small for the fused variants; it could overflow for a huge generic window */
    g.span = variant(&g) == V_GENERIC ? 0 : (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1;
    return g;
}

/* Element visits of a windowed pooling: only a window's taps inside the input count,
 * and the product of huge kernel sizes would overflow. */
static int64_t window_work(const int64_t *in_hw, const int64_t *out_hw, const int64_t *k) {
    return out_hw[0] * out_hw[1] * (k[0] < in_hw[0] ? k[0] : in_hw[0]) *
           (k[1] < in_hw[1] ? k[1] : in_hw[1]);
}

/* y (planes x OH x OW) = max over each window of x (planes x H x W); ix (same shape
 * as y, may be NULL) receives the flat h * W + w of each maximum. */
int em_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                  const int64_t in_hw[2], const int64_t out_hw[2], const int64_t k[2],
                  const int64_t s[2], const int64_t p[2], const int64_t d[2]) {
    pool_job J = {.kind = K_MAX, .f64 = f64, .g = geom(in_hw, out_hw, k, s, p, d),
                  .in = x, .out = y, .ix = ix};
    return run(&J, planes, window_work(in_hw, out_hw, k));
}

/* divisor: divisor_override, 0 for none. */
int em_avg_pool2d(int f64, const void *x, void *y, int64_t planes, const int64_t in_hw[2],
                  const int64_t out_hw[2], const int64_t k[2], const int64_t s[2],
                  const int64_t p[2], int count_include_pad, int64_t divisor) {
    pool_job J = {.kind = K_AVG, .f64 = f64, .g = geom(in_hw, out_hw, k, s, p, NULL),
                  .in = x, .out = y, .count_include_pad = count_include_pad,
                  .divisor = divisor};
    return run(&J, planes, window_work(in_hw, out_hw, k));
}

int em_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                           const int64_t in_hw[2], const int64_t out_hw[2], const int64_t k[2],
                           const int64_t s[2], const int64_t p[2], int count_include_pad,
                           int64_t divisor) {
    pool_job J = {.kind = K_AVG_BACKWARD, .f64 = f64, .g = geom(in_hw, out_hw, k, s, p, NULL),
                  .in = dy, .out = dx, .count_include_pad = count_include_pad,
                  .divisor = divisor};
    return run(&J, planes, window_work(in_hw, out_hw, k) + in_hw[0] * in_hw[1]);
}

int em_adaptive_avg_pool2d(int f64, const void *x, void *y, int64_t planes,
                           const int64_t in_hw[2], const int64_t out_hw[2]) {
    pool_job J = {.kind = K_ADAPTIVE_AVG, .f64 = f64, .g = geom(in_hw, out_hw, 0, 0, 0, 0),
                  .in = x, .out = y};
    return run(&J, planes, in_hw[0] * in_hw[1] + out_hw[0] * out_hw[1]);
}

int em_adaptive_avg_pool2d_backward(int f64, const void *dy, void *dx, int64_t planes,
                                    const int64_t in_hw[2], const int64_t out_hw[2]) {
    pool_job J = {.kind = K_ADAPTIVE_AVG_BACKWARD, .f64 = f64,
                  .g = geom(in_hw, out_hw, 0, 0, 0, 0), .in = dy, .out = dx};
    return run(&J, planes, in_hw[0] * in_hw[1] + out_hw[0] * out_hw[1]);
}

int em_adaptive_max_pool2d(int f64, const void *x, void *y, int64_t *ix, int64_t planes,
                           const int64_t in_hw[2], const int64_t out_hw[2]) {
    pool_job J = {.kind = K_ADAPTIVE_MAX, .f64 = f64, .g = geom(in_hw, out_hw, 0, 0, 0, 0),
                  .in = x, .out = y, .ix = ix};
    return run(&J, planes, in_hw[0] * in_hw[1] + out_hw[0] * out_hw[1]);
}

/* dx (planes x in_size) = scatter-add of dy (planes x out_size) at ix. Any max
 * pooling's backward (1-d, 2-d, adaptive). */
int em_max_pool_backward(int f64, const void *dy, const int64_t *ix, void *dx, int64_t planes,
                         int64_t in_size, int64_t out_size) {
    int64_t in_hw[2] = {1, in_size}, out_hw[2] = {1, out_size};
    pool_job J = {.kind = K_MAX_BACKWARD, .f64 = f64, .g = geom(in_hw, out_hw, 0, 0, 0, 0),
                  .in = dy, .out = dx, .ix = (int64_t *)ix};
    return run(&J, planes, in_size + out_size);
}

/* ------------------------------------------------------ channels_last (NHWC) pooling
 *
 * x (n, H, W, C), y and ix (n, OH, OW, C), contiguous: the storage of channels_last
 * tensors, read and written as it is. Each output pixel visits its window's taps
 * inside the input in PyTorch's scan order (kh, then kw), each tap a run of C
 * contiguous channels (the loops over the channels vectorise), with the NCHW
 * kernels' rules: ties keep the first maximum, a NaN wins (the last one), a window
 * wholly in the padding gives -inf and index -1, and the average's divisor is
 * avg_divisors'. Work is split over images x output rows (the backward of the
 * average: over images, whose rows overlap in the input). */

typedef struct {
    int kind, wt, count_include_pad;
    int64_t C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, divisor;
    const void *in;
    void *out;
    int64_t *ix;
    int err;
} nhwc_job;

/* The taps of output o along one dim: first input index, count and step. */
static void nhwc_taps(int adaptive, int64_t o, int64_t size, int64_t out, int64_t K,
                      int64_t S, int64_t P, int64_t D, int64_t *first, int64_t *count,
                      int64_t *step) {
    if (adaptive) {
        *first = ad_start(o, out, size);
        *count = ad_end(o, out, size) - *first;
        *step = 1;
        return;
    }
    int64_t i0 = o * S - P;
    int64_t k0 = i0 < 0 ? ceil_div(-i0, D) : 0;
    int64_t k1 = i0 >= size ? 0 : ceil_div(size - i0, D);
    if (k1 > K) k1 = K;
    *first = i0 + k0 * D;
    *count = k1 > k0 ? k1 - k0 : 0;
    *step = D;
}

/* The average's divisor of output (oh, ow) (avg_divisors), 0 where no input is held. */
static double nhwc_divisor(const nhwc_job *J, int64_t oh, int64_t ow) {
    if (J->kind == K_ADAPTIVE_AVG || J->kind == K_ADAPTIVE_AVG_BACKWARD)
        return (double)((ad_end(oh, J->OH, J->H) - ad_start(oh, J->OH, J->H)) *
                        (ad_end(ow, J->OW, J->W) - ad_start(ow, J->OW, J->W)));
    int64_t h0 = oh * J->SH - J->PH, h1 = clip_end(h0, J->KH, J->H + J->PH);
    int64_t w0 = ow * J->SW - J->PW, w1 = clip_end(w0, J->KW, J->W + J->PW);
    double hi = (double)((h1 < J->H ? h1 : J->H) - (h0 > 0 ? h0 : 0));
    double wi = (double)((w1 < J->W ? w1 : J->W) - (w0 > 0 ? w0 : 0));
    if (hi <= 0 || wi <= 0) return 0;
    if (J->divisor) return (double)J->divisor;
    return J->count_include_pad ? (double)(h1 - h0) * (double)(w1 - w0) : hi * wi;
}

/* S: the stored type, T: the one computed in. S == T: in place in the output; bfloat16
 * (S uint16_t, T float): a pixel's C sums (an image's gradient plane) in float32
 * scratch, rounded once into the output (a max only moves a value: no rounding). */
#define NHWC_POOL(SUFFIX, S, T, LD, ST)                                                 \
    EM_CLONES static int nhwc_rows_##SUFFIX(nhwc_job *J, int64_t b, int64_t e) {        \
        const int64_t C = J->C, W = J->W, OW = J->OW;                                   \
        const int adaptive = J->kind == K_ADAPTIVE_AVG || J->kind == K_ADAPTIVE_MAX;    \
        const int is_max = J->kind == K_MAX || J->kind == K_ADAPTIVE_MAX;               \
        T *acc = sizeof(S) == sizeof(T) ? NULL : malloc(C * sizeof(T));                 \
        if (sizeof(S) != sizeof(T) && !acc) return EM_POOL_ENOMEM;                      \
        for (int64_t r = b; r < e; r++) {   /* r = image * OH + oh */                    \
            int64_t n = r / J->OH, oh = r % J->OH, h0, hc, hs;                          \
            nhwc_taps(adaptive, oh, J->H, J->OH, J->KH, J->SH, J->PH, J->DH, &h0, &hc, &hs);\
            const S *x = (const S *)J->in + n * J->H * W * C;                           \
            for (int64_t ow = 0; ow < OW; ow++) {                                       \
                int64_t w0, wc, ws;                                                     \
                nhwc_taps(adaptive, ow, W, OW, J->KW, J->SW, J->PW, J->DW, &w0, &wc, &ws);\
                S *yo = (S *)J->out + (r * OW + ow) * C;                                \
                T *restrict y = acc ? acc : (T *)yo;                                    \
                int64_t *restrict ix = J->ix ? J->ix + (r * OW + ow) * C : NULL;        \
                for (int64_t c = 0; c < C; c++) y[c] = is_max ? (T)-INFINITY : (T)0;    \
                if (ix)                                                                 \
                    for (int64_t c = 0; c < C; c++) ix[c] = -1;                         \
                for (int64_t a = 0; a < hc; a++)                                        \
                    for (int64_t q = 0; q < wc; q++) {                                  \
                        int64_t ih = h0 + a * hs, iw = w0 + q * ws, at = ih * W + iw;   \
                        const S *restrict v = x + at * C;                               \
                        if (!is_max)                                                    \
                            for (int64_t c = 0; c < C; c++) y[c] += LD(v[c]);           \
                        else if (a == 0 && q == 0) { /* -inf inputs get an index, too */\
                            for (int64_t c = 0; c < C; c++) y[c] = LD(v[c]);            \
                            if (ix)                                                     \
                                for (int64_t c = 0; c < C; c++) ix[c] = at;             \
                        } else if (ix)                                                  \
                            for (int64_t c = 0; c < C; c++) {                           \
                                T vc = LD(v[c]);                                        \
                                int take = vc > y[c] || vc != vc;                       \
                                y[c] = take ? vc : y[c];                                \
                                ix[c] = take ? at : ix[c];                              \
                            }                                                           \
                        else                                                            \
                            for (int64_t c = 0; c < C; c++) {                           \
                                T vc = LD(v[c]);                                        \
                                y[c] = vc > y[c] || vc != vc ? vc : y[c];               \
                            }                                                           \
                    }                                                                   \
                if (!is_max) {                                                          \
                    T d = (T)nhwc_divisor(J, oh, ow);                                   \
                    for (int64_t c = 0; c < C; c++) y[c] = d != 0 ? y[c] / d : 0;       \
                }                                                                       \
                if (acc)                                                                \
                    for (int64_t c = 0; c < C; c++) yo[c] = ST(acc[c]);                 \
            }                                                                           \
        }                                                                               \
        free(acc);                                                                      \
        return 0;                                                                       \
    }                                                                                   \
    /* the backwards over images [b, e), into dx (T: the output; else a float32 plane  \
     * rounded once an image is done): the average's dx += dy / divisor over each     \
     * window, the max's dx[ix] += dy per channel */                                   \
    EM_CLONES static int nhwc_back_##SUFFIX(nhwc_job *J, int64_t b, int64_t e) {        \
        const int64_t C = J->C, W = J->W, OW = J->OW, HWC = J->H * W * C;               \
        const int64_t OHW = J->OH * OW;                                                 \
        const int adaptive = J->kind == K_ADAPTIVE_AVG_BACKWARD;                        \
        T *plane = sizeof(S) == sizeof(T) ? NULL : malloc(HWC * sizeof(T));             \
        if (sizeof(S) != sizeof(T) && !plane) return EM_POOL_ENOMEM;                    \
        int rc = 0;                                                                     \
        for (int64_t n = b; n < e && !rc; n++) {                                        \
            S *dxo = (S *)J->out + n * HWC;                                             \
            T *dx = plane ? plane : (T *)dxo;                                           \
            const S *g = (const S *)J->in + n * OHW * C;                                \
            memset(dx, 0, sizeof(T) * HWC);                                             \
            if (J->kind == K_MAX_BACKWARD) {                                            \
                const int64_t *ix = J->ix + n * OHW * C;                                \
                for (int64_t o = 0; o < OHW && !rc; o++)                                \
                    for (int64_t c = 0; c < C; c++) {                                   \
                        int64_t i = ix[o * C + c];                                      \
                        if (i == -1) continue;                                          \
                        if (i < 0 || i >= J->H * W) {                                   \
                            rc = EM_POOL_EINDEX;                                        \
                            break;                                                      \
                        }                                                               \
                        dx[i * C + c] += LD(g[o * C + c]);                              \
                    }                                                                   \
            } else                                                                      \
                for (int64_t oh = 0; oh < J->OH; oh++) {                                \
                    int64_t h0, hc, hs;                                                 \
                    nhwc_taps(adaptive, oh, J->H, J->OH, J->KH, J->SH, J->PH, J->DH, &h0, &hc,\
                              &hs);                                                     \
                    for (int64_t ow = 0; ow < OW; ow++) {                               \
                        int64_t w0, wc, ws;                                             \
                        nhwc_taps(adaptive, ow, W, OW, J->KW, J->SW, J->PW, J->DW, &w0, &wc,\
                                  &ws);                                                 \
                        const S *restrict go = g + (oh * OW + ow) * C;                  \
                        T d = (T)nhwc_divisor(J, oh, ow);                               \
                        if (d == 0) continue;                                           \
                        for (int64_t a = 0; a < hc; a++)                                \
                            for (int64_t q = 0; q < wc; q++) {                          \
                                T *restrict o = dx + ((h0 + a * hs) * W + w0 + q * ws) * C;\
                                for (int64_t c = 0; c < C; c++) o[c] += LD(go[c]) / d;  \
                            }                                                           \
                    }                                                                   \
                }                                                                       \
            if (plane)                                                                  \
                for (int64_t i = 0; i < HWC; i++) dxo[i] = ST(plane[i]);                \
        }                                                                               \
        free(plane);                                                                    \
        return rc;                                                                      \
    }

#define SAME(v) (v)
NHWC_POOL(f32, float, float, SAME, SAME)
NHWC_POOL(f64, double, double, SAME, SAME)
NHWC_POOL(bf16, uint16_t, float, em_bf16_to_f32, em_f32_to_bf16)
#undef SAME

/* nhwc_job.wt: the work type, 0 float32, 1 float64, 2 bfloat16 */
static void nhwc_range(void *ctx, int64_t b, int64_t e) {
    nhwc_job *J = ctx;
    int back = J->kind == K_AVG_BACKWARD || J->kind == K_ADAPTIVE_AVG_BACKWARD ||
               J->kind == K_MAX_BACKWARD;
    int rc = J->wt == 2 ? (back ? nhwc_back_bf16 : nhwc_rows_bf16)(J, b, e)
           : J->wt == 1 ? (back ? nhwc_back_f64 : nhwc_rows_f64)(J, b, e)
                        : (back ? nhwc_back_f32 : nhwc_rows_f32)(J, b, e);
    if (rc) __atomic_store_n(&J->err, rc, __ATOMIC_RELAXED);
}

/* The job of pooling kind `kind` (k, s, p, d may be NULL: 1, 1, 0, 1). */
static nhwc_job nhwc_geom(int kind, int wt, int64_t C, const int64_t *in_hw,
                          const int64_t *out_hw, const int64_t *k, const int64_t *s,
                          const int64_t *p, const int64_t *d) {
    nhwc_job J = {.kind = kind, .wt = wt, .C = C, .H = in_hw[0], .W = in_hw[1],
                  .OH = out_hw[0], .OW = out_hw[1], .KH = 1, .KW = 1, .SH = 1, .SW = 1,
                  .DH = 1, .DW = 1};
    if (k) { J.KH = k[0]; J.KW = k[1]; }
    if (s) { J.SH = s[0]; J.SW = s[1]; }
    if (p) { J.PH = p[0]; J.PW = p[1]; }
    if (d) { J.DH = d[0]; J.DW = d[1]; }
    return J;
}

/* Over images (backward) or image rows (forward), per_item element visits each. */
static int nhwc_run(nhwc_job *J, int64_t items, int64_t per_item) {
    J->err = 0;
    em_parallel_for(items, pool_grain(per_item), nhwc_range, J);
    return J->err;
}

int em_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n, int64_t C,
                       const int64_t in_hw[2], const int64_t out_hw[2], const int64_t k[2],
                       const int64_t s[2], const int64_t p[2], const int64_t d[2]) {
    nhwc_job J = nhwc_geom(K_MAX, wt, C, in_hw, out_hw, k, s, p, d);
    J.in = x, J.out = y, J.ix = ix;
    return nhwc_run(&J, n * out_hw[0], window_work(in_hw, out_hw, k) / out_hw[0] * C);
}

int em_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                       const int64_t in_hw[2], const int64_t out_hw[2], const int64_t k[2],
                       const int64_t s[2], const int64_t p[2], int count_include_pad,
                       int64_t divisor) {
    nhwc_job J = nhwc_geom(K_AVG, wt, C, in_hw, out_hw, k, s, p, NULL);
    J.in = x, J.out = y, J.count_include_pad = count_include_pad, J.divisor = divisor;
    return nhwc_run(&J, n * out_hw[0], window_work(in_hw, out_hw, k) / out_hw[0] * C);
}

int em_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n, int64_t C,
                                const int64_t in_hw[2], const int64_t out_hw[2],
                                const int64_t k[2], const int64_t s[2], const int64_t p[2],
                                int count_include_pad, int64_t divisor) {
    nhwc_job J = nhwc_geom(K_AVG_BACKWARD, wt, C, in_hw, out_hw, k, s, p, NULL);
    J.in = dy, J.out = dx, J.count_include_pad = count_include_pad, J.divisor = divisor;
    return nhwc_run(&J, n, (window_work(in_hw, out_hw, k) + in_hw[0] * in_hw[1]) * C);
}

int em_adaptive_avg_pool2d_nhwc(int wt, const void *x, void *y, int64_t n, int64_t C,
                                const int64_t in_hw[2], const int64_t out_hw[2]) {
    nhwc_job J = nhwc_geom(K_ADAPTIVE_AVG, wt, C, in_hw, out_hw, 0, 0, 0, 0);
    J.in = x, J.out = y;
    return nhwc_run(&J, n * out_hw[0], (in_hw[0] * in_hw[1] / out_hw[0] + out_hw[1]) * C);
}

int em_adaptive_avg_pool2d_backward_nhwc(int wt, const void *dy, void *dx, int64_t n,
                                         int64_t C, const int64_t in_hw[2],
                                         const int64_t out_hw[2]) {
    nhwc_job J = nhwc_geom(K_ADAPTIVE_AVG_BACKWARD, wt, C, in_hw, out_hw, 0, 0, 0, 0);
    J.in = dy, J.out = dx;
    return nhwc_run(&J, n, (in_hw[0] * in_hw[1] + out_hw[0] * out_hw[1]) * C);
}

int em_adaptive_max_pool2d_nhwc(int wt, const void *x, void *y, int64_t *ix, int64_t n,
                                int64_t C, const int64_t in_hw[2], const int64_t out_hw[2]) {
    nhwc_job J = nhwc_geom(K_ADAPTIVE_MAX, wt, C, in_hw, out_hw, 0, 0, 0, 0);
    J.in = x, J.out = y, J.ix = ix;
    return nhwc_run(&J, n * out_hw[0], (in_hw[0] * in_hw[1] / out_hw[0] + out_hw[1]) * C);
}

int em_max_pool_backward_nhwc(int wt, const void *dy, const int64_t *ix, void *dx, int64_t n,
                              int64_t C, int64_t in_size, int64_t out_size) {
    int64_t in_hw[2] = {1, in_size}, out_hw[2] = {1, out_size};
    nhwc_job J = nhwc_geom(K_MAX_BACKWARD, wt, C, in_hw, out_hw, 0, 0, 0, 0);
    J.in = dy, J.out = dx, J.ix = (int64_t *)ix;
    return nhwc_run(&J, n, (in_size + out_size) * C);
}
