/* Stable merge sort of rows with their original positions, and binary search.
 *
 * NaN sorts as the largest value: last when ascending, first when descending (as
 * PyTorch and NumPy). Equal elements keep their order in both directions.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember_index.h"

#define EM_RUN 24   /* insertion-sorted run length before merging */

/* Ascending "a goes strictly before b", NaN last; descending, NaN first. */
#define LT_ASC(a, b) ((a) < (b) || ((a) == (a) && (b) != (b)))
#define LT_DESC(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))

#define DEFINE_SORT(NAME, T, LT)                                                            \
static void NAME(T *k, int64_t *ix, T *tk, int64_t *ti, int64_t n)                          \
{                                                                                           \
    for (int64_t s = 0; s < n; s += EM_RUN) {                                               \
        int64_t e = s + EM_RUN < n ? s + EM_RUN : n;                                        \
        for (int64_t i = s + 1; i < e; i++) {                                               \
            T v = k[i];                                                                     \
            int64_t vi = ix[i], j = i;                                                      \
            while (j > s && LT(v, k[j - 1])) {                                              \
                k[j] = k[j - 1];                                                            \
                ix[j] = ix[j - 1];                                                          \
                j--;                                                                        \
            }                                                                               \
            k[j] = v;                                                                       \
            ix[j] = vi;                                                                     \
        }                                                                                   \
    }                                                                                       \
    T *a = k, *b = tk;                                                                      \
    int64_t *ai = ix, *bi = ti;                                                             \
    for (int64_t w = EM_RUN; w < n; w *= 2) {                                               \
        for (int64_t s = 0; s < n; s += 2 * w) {                                            \
            int64_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;           \
            int64_t i = s, j = m, o = s;                                                    \
            while (i < m && j < e) {                                                        \
                if (LT(a[j], a[i])) { b[o] = a[j]; bi[o++] = ai[j++]; }                     \
                else { b[o] = a[i]; bi[o++] = ai[i++]; }                                    \
            }                                                                               \
            while (i < m) { b[o] = a[i]; bi[o++] = ai[i++]; }                               \
            while (j < e) { b[o] = a[j]; bi[o++] = ai[j++]; }                               \
        }                                                                                   \
        T *t = a; a = b; b = t;                                                             \
        int64_t *u = ai; ai = bi; bi = u;                                                   \
    }                                                                                       \
    if (a != k) {                                                                           \
        memcpy(k, a, (size_t)n * sizeof(T));                                                \
        memcpy(ix, ai, (size_t)n * sizeof(int64_t));                                        \
    }                                                                                       \
}

/* bfloat16: its bits compared as the floats they are (ember_bf16.h) */
#define LT_ASC_BF(a, b) LT_ASC(em_bf16_to_f32(a), em_bf16_to_f32(b))
#define LT_DESC_BF(a, b) LT_DESC(em_bf16_to_f32(a), em_bf16_to_f32(b))

/* K: "" or _BF, the comparisons' suffix */
#define DEFINE_ROWS(SUFFIX, T, K)                                                           \
DEFINE_SORT(sort_asc_##SUFFIX, T, LT_ASC##K)                                                \
DEFINE_SORT(sort_desc_##SUFFIX, T, LT_DESC##K)                                              \
static int rows_##SUFFIX(T *v, int64_t *idx, int64_t nrows, int64_t n, int desc)            \
{                                                                                           \
    T *tk = (T *)malloc((size_t)(n ? n : 1) * sizeof(T));                                   \
    int64_t *ti = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof(int64_t));                 \
    if (!tk || !ti) { free(tk); free(ti); return -1; }                                      \
    for (int64_t r = 0; r < nrows; r++) {                                                   \
        T *k = v + r * n;                                                                   \
        int64_t *ix = idx + r * n;                                                          \
        for (int64_t i = 0; i < n; i++)                                                     \
            ix[i] = i;                                                                      \
        if (desc) sort_desc_##SUFFIX(k, ix, tk, ti, n);                                     \
        else sort_asc_##SUFFIX(k, ix, tk, ti, n);                                           \
    }                                                                                       \
    free(tk);                                                                               \
    free(ti);                                                                               \
    return 0;                                                                               \
}                                                                                           \
static void search_##SUFFIX(const T *seq, int64_t srs, int64_t n, const T *vals,            \
                            int64_t nrows, int64_t m, int64_t *out, int right)              \
{                                                                                           \
    for (int64_t r = 0; r < nrows; r++) {                                                   \
        const T *s = seq + r * srs;                                                         \
        for (int64_t i = 0; i < m; i++) {                                                   \
            T v = vals[r * m + i];                                                          \
            int64_t lo = 0, hi = n;                                                         \
            while (lo < hi) {                                                               \
                int64_t mid = lo + (hi - lo) / 2;                                           \
                int go_right = right ? !LT_ASC##K(v, s[mid]) : LT_ASC##K(s[mid], v);        \
                if (go_right) lo = mid + 1; else hi = mid;                                  \
            }                                                                               \
            out[r * m + i] = lo;                                                            \
        }                                                                                   \
    }                                                                                       \
}

DEFINE_ROWS(u8, uint8_t, )
DEFINE_ROWS(i8, int8_t, )
DEFINE_ROWS(i16, int16_t, )
DEFINE_ROWS(i32, int32_t, )
DEFINE_ROWS(i64, int64_t, )
DEFINE_ROWS(u16, uint16_t, )
DEFINE_ROWS(u32, uint32_t, )
DEFINE_ROWS(u64, uint64_t, )
DEFINE_ROWS(f16, _Float16, )
DEFINE_ROWS(bf16, em_bfloat16, _BF)
DEFINE_ROWS(f32, float, )
DEFINE_ROWS(f64, double, )

int em_sort_rows(int dtype, char *vals, int64_t *idx, int64_t nrows, int64_t n, int desc)
{
    switch (dtype) {
    case EM_BOOL: case EM_UINT8: return rows_u8((uint8_t *)vals, idx, nrows, n, desc);
    case EM_INT8: return rows_i8((int8_t *)vals, idx, nrows, n, desc);
    case EM_INT16: return rows_i16((int16_t *)vals, idx, nrows, n, desc);
    case EM_INT32: return rows_i32((int32_t *)vals, idx, nrows, n, desc);
    case EM_INT64: return rows_i64((int64_t *)vals, idx, nrows, n, desc);
    case EM_UINT16: return rows_u16((uint16_t *)vals, idx, nrows, n, desc);
    case EM_UINT32: return rows_u32((uint32_t *)vals, idx, nrows, n, desc);
    case EM_UINT64: return rows_u64((uint64_t *)vals, idx, nrows, n, desc);
    case EM_FLOAT16: return rows_f16((_Float16 *)vals, idx, nrows, n, desc);
    case EM_BFLOAT16: return rows_bf16((em_bfloat16 *)vals, idx, nrows, n, desc);
    case EM_FLOAT32: return rows_f32((float *)vals, idx, nrows, n, desc);
    case EM_FLOAT64: return rows_f64((double *)vals, idx, nrows, n, desc);
    }
    return -2;
}

void em_searchsorted(int dtype, const char *seq, int64_t srs, int64_t n, const char *vals,
                     int64_t nrows, int64_t m, int64_t *out, int right)
{
    switch (dtype) {
    case EM_BOOL: case EM_UINT8:
        search_u8((const uint8_t *)seq, srs, n, (const uint8_t *)vals, nrows, m, out, right); break;
    case EM_INT8:
        search_i8((const int8_t *)seq, srs, n, (const int8_t *)vals, nrows, m, out, right); break;
    case EM_INT16:
        search_i16((const int16_t *)seq, srs, n, (const int16_t *)vals, nrows, m, out, right); break;
    case EM_INT32:
        search_i32((const int32_t *)seq, srs, n, (const int32_t *)vals, nrows, m, out, right); break;
    case EM_INT64:
        search_i64((const int64_t *)seq, srs, n, (const int64_t *)vals, nrows, m, out, right); break;
    case EM_UINT16:
        search_u16((const uint16_t *)seq, srs, n, (const uint16_t *)vals, nrows, m, out, right); break;
    case EM_UINT32:
        search_u32((const uint32_t *)seq, srs, n, (const uint32_t *)vals, nrows, m, out, right); break;
    case EM_UINT64:
        search_u64((const uint64_t *)seq, srs, n, (const uint64_t *)vals, nrows, m, out, right); break;
    case EM_FLOAT16:
        search_f16((const _Float16 *)seq, srs, n, (const _Float16 *)vals, nrows, m, out, right); break;
    case EM_BFLOAT16:
        search_bf16((const em_bfloat16 *)seq, srs, n, (const em_bfloat16 *)vals, nrows, m, out,
                    right);
        break;
    case EM_FLOAT32:
        search_f32((const float *)seq, srs, n, (const float *)vals, nrows, m, out, right); break;
    case EM_FLOAT64:
        search_f64((const double *)seq, srs, n, (const double *)vals, nrows, m, out, right); break;
    }
}
