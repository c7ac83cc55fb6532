/* Gather / scatter over index tensors, and nonzero.
 *
 * One n-d loop serves every indexing op: advanced getitem, gather, index_select,
 * take (reads), and setitem, scatter, scatter_add/reduce, index_add/copy/fill,
 * index_put (writes). The caller describes an iteration space (shape) and, for
 * each point p of it,
 *
 *     indexed side:  base + sum_d p[d] * strides[d] + sum_k idx_k[p] * step_k
 *     plain side:    base + sum_d p[d] * strides[d]
 *
 * Index tensors are int64, validated (and wrapped to non-negative) by the caller;
 * the loops still check each value against its bound and stop at the first bad
 * one, so a caller's bug can't reach outside the storage.
 *
 * The walk visits rows (the last dim); a row whose indices don't change along it
 * (x[idx] picking whole rows) is one strided copy, found once per row.
 */
#include <stdint.h>
#include <string.h>
#include "ember_index.h"

/* Check the n values of a contiguous int64 index against [-size, size) (negatives
 * only when allow_negative) and wrap negatives in place. Returns -1 when all are
 * valid, else the position of the first bad value (nothing is changed then). */
int64_t em_index_normalize(int64_t *idx, int64_t n, int64_t size, int allow_negative)
{
    int64_t lo = allow_negative ? -size : 0;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < lo || idx[i] >= size)
            return i;
    if (allow_negative)
        for (int64_t i = 0; i < n; i++)
            if (idx[i] < 0)
                idx[i] += size;
    return -1;
}

static int itemsize_of(int dtype)
{
    switch (dtype) {
    case EM_BOOL: case EM_UINT8: case EM_INT8: return 1;
    case EM_INT16: case EM_UINT16: case EM_FLOAT16: case EM_BFLOAT16: return 2;
    case EM_INT32: case EM_UINT32: case EM_FLOAT32: return 4;
    default: return 8;
    }
}

/* One row of the walk: m points; plain side at pp (byte stride ps), indexed side at
 * xp (byte stride xs) before the index term; ip[k] the row's first value of index k,
 * is[k] its element stride along the row. Returns nonzero on a bad index value. */
typedef struct {
    int kind;          /* 0: gather (indexed -> plain), 1: scatter (plain -> indexed) */
    int dtype, op, itemsize;
} em_row_ctx;

typedef int (*em_row_fn)(const em_row_ctx *c, char *pp, int64_t ps, char *xp, int64_t xs,
                         int64_t m, int nidx, const int64_t *const *ip, const int64_t *is,
                         const em_index_arg *idx);

/* Visit every row of the iteration space. Dims of size 1 are dropped; the last
 * remaining dim is the row. */
static int walk(int ndim, const int64_t *shape, char *plain, const int64_t *pstrides,
                char *indexed, const int64_t *xstrides, int nidx, const em_index_arg *idx,
                em_row_fn row, const em_row_ctx *ctx)
{
    int64_t sh[EMBER_MAX_DIMS], ps[EMBER_MAX_DIMS], xs[EMBER_MAX_DIMS];
    int64_t is[EM_MAX_INDICES][EMBER_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0)
            return 0;
        if (shape[d] == 1)
            continue;
        sh[nd] = shape[d];
        ps[nd] = pstrides[d];
        xs[nd] = xstrides[d];
        for (int k = 0; k < nidx; k++)
            is[k][nd] = idx[k].strides[d];
        nd++;
    }
    if (nd == 0) {   /* one point */
        sh[0] = 1;
        ps[0] = xs[0] = 0;
        for (int k = 0; k < nidx; k++)
            is[k][0] = 0;
        nd = 1;
    }
    int64_t pos[EMBER_MAX_DIMS] = {0};
    int64_t poff = 0, xoff = 0, ioff[EM_MAX_INDICES] = {0};
    const int64_t *ip[EM_MAX_INDICES];
    int64_t istep[EM_MAX_INDICES];
    int last = nd - 1;
    for (int k = 0; k < nidx; k++)
        istep[k] = is[k][last];
    for (;;) {
        for (int k = 0; k < nidx; k++)
            ip[k] = idx[k].data + ioff[k];
        if (row(ctx, plain + poff, ps[last], indexed + xoff, xs[last], sh[last], nidx, ip,
                istep, idx))
            return -1;
        int d = last - 1;
        for (; d >= 0; d--) {
            if (++pos[d] < sh[d]) {
                poff += ps[d];
                xoff += xs[d];
                for (int k = 0; k < nidx; k++)
                    ioff[k] += is[k][d];
                break;
            }
            poff -= ps[d] * (sh[d] - 1);
            xoff -= xs[d] * (sh[d] - 1);
            for (int k = 0; k < nidx; k++)
                ioff[k] -= is[k][d] * (sh[d] - 1);
            pos[d] = 0;
        }
        if (d < 0)
            return 0;
    }
}

/* Byte offset of the indexed element for row position i; -1 for a bad value. */
static inline int64_t index_term(int nidx, const int64_t *const *ip, const int64_t *is,
                                 const em_index_arg *idx, int64_t i)
{
    int64_t o = 0;
    for (int k = 0; k < nidx; k++) {
        int64_t v = ip[k][i * is[k]];
        if ((uint64_t)v >= (uint64_t)idx[k].size)
            return -1;
        o += v * idx[k].step;
    }
    return o;
}

/* A strided run of m items from src to dst. */
static void copy_run(char *dst, int64_t ds, const char *src, int64_t ss, int64_t m, int size)
{
    if (ds == size && ss == size) {
        memcpy(dst, src, (size_t)(m * size));
        return;
    }
#define RUN(T) for (int64_t i = 0; i < m; i++) *(T *)(dst + i * ds) = *(const T *)(src + i * ss)
    switch (size) {
    case 1: RUN(uint8_t); break;
    case 2: RUN(uint16_t); break;
    case 4: RUN(uint32_t); break;
    default: RUN(uint64_t); break;
    }
#undef RUN
}

/* The copying row (gather, or a scatter that assigns). */
static int copy_row(const em_row_ctx *c, char *pp, int64_t ps, char *xp, int64_t xs,
                    int64_t m, int nidx, const int64_t *const *ip, const int64_t *is,
                    const em_index_arg *idx)
{
    int size = c->itemsize, fixed = 1;
    for (int k = 0; k < nidx; k++)
        fixed &= is[k] == 0;
    if (fixed) {   /* the indices are constant along the row: one strided copy */
        int64_t o = index_term(nidx, ip, is, idx, 0);
        if (o < 0)
            return -1;
        if (c->kind == 0)
            copy_run(pp, ps, xp + o, xs, m, size);
        else
            copy_run(xp + o, xs, pp, ps, m, size);
        return 0;
    }
    if (nidx == 1) {   /* the common case, kept tight */
        const int64_t *p0 = ip[0];
        int64_t s0 = is[0], size0 = idx[0].size, step0 = idx[0].step;
#define LOOP1(T, DST, SRC)                                                                  \
        for (int64_t i = 0; i < m; i++) {                                                   \
            int64_t v = p0[i * s0];                                                         \
            if ((uint64_t)v >= (uint64_t)size0)                                             \
                return -1;                                                                  \
            *(T *)(DST) = *(const T *)(SRC);                                                \
        }
#define SIZES1(DST, SRC)                                                                    \
        switch (size) {                                                                     \
        case 1: LOOP1(uint8_t, DST, SRC); break;                                            \
        case 2: LOOP1(uint16_t, DST, SRC); break;                                           \
        case 4: LOOP1(uint32_t, DST, SRC); break;                                           \
        default: LOOP1(uint64_t, DST, SRC); break;                                          \
        }
        if (c->kind == 0)
            SIZES1(pp + i * ps, xp + i * xs + v * step0)
        else
            SIZES1(xp + i * xs + v * step0, pp + i * ps)
#undef SIZES1
#undef LOOP1
        return 0;
    }
#define LOOP(T, DST, SRC)                                                                   \
    for (int64_t i = 0; i < m; i++) {                                                       \
        int64_t o = index_term(nidx, ip, is, idx, i);                                       \
        if (o < 0)                                                                          \
            return -1;                                                                      \
        *(T *)(DST) = *(const T *)(SRC);                                                    \
    }
#define SIZES(DST, SRC)                                                                     \
    switch (size) {                                                                         \
    case 1: LOOP(uint8_t, DST, SRC); break;                                                 \
    case 2: LOOP(uint16_t, DST, SRC); break;                                                \
    case 4: LOOP(uint32_t, DST, SRC); break;                                                \
    default: LOOP(uint64_t, DST, SRC); break;                                               \
    }
    if (c->kind == 0)
        SIZES(pp + i * ps, xp + i * xs + o)
    else
        SIZES(xp + i * xs + o, pp + i * ps)
#undef SIZES
#undef LOOP
    return 0;
}

/* The combining row of a scatter: dst = op(dst, src). NaN propagates through max/min. */
#define EM_PLAIN(x) (x)
/* LD / ST: a stored T as ACC and back (bfloat16: its bits through ember_bf16.h) */
#define COMBINE_ROW(NAME, T, ACC, LD, ST)                                                   \
static int NAME(const em_row_ctx *c, char *pp, int64_t ps, char *xp, int64_t xs,           \
                int64_t m, int nidx, const int64_t *const *ip, const int64_t *is,           \
                const em_index_arg *idx)                                                    \
{                                                                                           \
    int op = c->op;                                                                         \
    for (int64_t i = 0; i < m; i++) {                                                       \
        int64_t o = index_term(nidx, ip, is, idx, i);                                       \
        if (o < 0)                                                                          \
            return -1;                                                                      \
        T *dst = (T *)(xp + i * xs + o);                                                    \
        ACC a = (ACC)LD(*dst), b = (ACC)LD(*(const T *)(pp + i * ps));                      \
        switch (op) {                                                                       \
        case EM_SCATTER_ADD: a = a + b; break;                                              \
        case EM_SCATTER_MUL: a = a * b; break;                                              \
        case EM_SCATTER_MAX: a = (b > a || b != b) ? b : a; break;                          \
        case EM_SCATTER_MIN: a = (b < a || b != b) ? b : a; break;                          \
        default: a = b;                                                                     \
        }                                                                                   \
        *dst = (T)ST(a);                                                                    \
    }                                                                                       \
    return 0;                                                                               \
}

COMBINE_ROW(row_u8, uint8_t, uint8_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_i8, int8_t, int8_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_i16, int16_t, int16_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_i32, int32_t, int32_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_i64, int64_t, int64_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_u16, uint16_t, uint32_t, EM_PLAIN, EM_PLAIN)   /* not int: 65535 * 65535 */
COMBINE_ROW(row_u32, uint32_t, uint32_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_u64, uint64_t, uint64_t, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_f16, _Float16, float, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_bf16, em_bfloat16, float, em_bf16_to_f32, em_f32_to_bf16)
COMBINE_ROW(row_f32, float, float, EM_PLAIN, EM_PLAIN)
COMBINE_ROW(row_f64, double, double, EM_PLAIN, EM_PLAIN)

/* bool: add is or, multiply is and, max is or, min is and. */
static int row_bool(const em_row_ctx *c, char *pp, int64_t ps, char *xp, int64_t xs,
                    int64_t m, int nidx, const int64_t *const *ip, const int64_t *is,
                    const em_index_arg *idx)
{
    for (int64_t i = 0; i < m; i++) {
        int64_t o = index_term(nidx, ip, is, idx, i);
        if (o < 0)
            return -1;
        uint8_t *dst = (uint8_t *)(xp + i * xs + o);
        uint8_t a = *dst != 0, b = *(const uint8_t *)(pp + i * ps) != 0;
        *dst = (c->op == EM_SCATTER_ADD || c->op == EM_SCATTER_MAX) ? (a | b) : (a & b);
    }
    return 0;
}

int em_index_gather(int itemsize, int ndim, const int64_t *shape,
                    char *out, const int64_t *out_strides,
                    const char *src, const int64_t *src_strides,
                    int nidx, const em_index_arg *idx)
{
    em_row_ctx c = {0, 0, 0, itemsize};
    return walk(ndim, shape, out, out_strides, (char *)src, src_strides, nidx, idx,
                copy_row, &c);
}

int em_index_scatter(int dtype, int op, int ndim, const int64_t *shape,
                     char *dst, const int64_t *dst_strides,
                     const char *src, const int64_t *src_strides,
                     int nidx, const em_index_arg *idx)
{
    em_row_ctx c = {1, dtype, op, itemsize_of(dtype)};
    em_row_fn fn;
    if (op == EM_SCATTER_ASSIGN) {
        fn = copy_row;
    } else {
        switch (dtype) {
        case EM_BOOL: fn = row_bool; break;
        case EM_UINT8: fn = row_u8; break;
        case EM_INT8: fn = row_i8; break;
        case EM_INT16: fn = row_i16; break;
        case EM_INT32: fn = row_i32; break;
        case EM_INT64: fn = row_i64; break;
        case EM_UINT16: fn = row_u16; break;
        case EM_UINT32: fn = row_u32; break;
        case EM_UINT64: fn = row_u64; break;
        case EM_FLOAT16: fn = row_f16; break;
        case EM_BFLOAT16: fn = row_bf16; break;
        case EM_FLOAT32: fn = row_f32; break;
        case EM_FLOAT64: fn = row_f64; break;
        default: return -2;
        }
    }
    return walk(ndim, shape, (char *)src, src_strides, dst, dst_strides, nidx, idx, fn, &c);
}

/* out = the elements of a strided run (byte stride ss, n items) where the contiguous
 * mask is true; count = how many are (out has room for exactly that many). */
void em_compress(int itemsize, const char *src, int64_t ss, const uint8_t *mask, int64_t n,
                 int64_t count, char *out)
{
    int64_t c = 0;
#define COMPRESS(T)                                                                         \
    for (int64_t i = 0; i < n && c < count; i++) {                                         \
        ((T *)out)[c] = *(const T *)(src + i * ss);                                         \
        c += mask[i] != 0;                                                                  \
    }
    switch (itemsize) {
    case 1: COMPRESS(uint8_t); break;
    case 2: COMPRESS(uint16_t); break;
    case 4: COMPRESS(uint32_t); break;
    default: COMPRESS(uint64_t); break;
    }
#undef COMPRESS
}

/* Number of true elements of a contiguous bool array. */
int64_t em_count_true(const uint8_t *mask, int64_t n)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++)
        c += mask[i] != 0;
    return c;
}

/* Coordinates of the `count` true elements of a contiguous bool array of `shape`,
 * in row-major order: out is (count, ndim) int64. */
void em_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t count,
                int64_t *out)
{
    int64_t n = 1, pos[EMBER_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    if (ndim == 0)
        return;   /* (count, 0): no coordinates to write */
    if (ndim == 1) {   /* branch-free: write every position, advance on true */
        int64_t c = 0;
        for (int64_t i = 0; c < count; i++) {
            out[c] = i;
            c += mask[i] != 0;
        }
        return;
    }
    int64_t inner = shape[ndim - 1];
    for (int64_t base = 0; base < n; base += inner) {
        for (int64_t j = 0; j < inner; j++) {
            if (mask[base + j]) {
                for (int d = 0; d < ndim - 1; d++)
                    *out++ = pos[d];
                *out++ = j;
            }
        }
        for (int d = ndim - 2; d >= 0; d--) {
            if (++pos[d] < shape[d])
                break;
            pos[d] = 0;
        }
    }
}
