/* Inclusive scans (cumsum, cumprod) in place along the middle dim of a contiguous
 * (outer, n, inner) block. With inner > 1 each step combines two whole contiguous
 * rows, which vectorises; float16, bfloat16 and float32 accumulate in a wider type (as
 * PyTorch on the CPU), integers wrap on overflow. */
#include <stdint.h>
#include <stdlib.h>
#include "ember_index.h"

#define EM_PLAIN(x) (x)
/* LD / ST: a stored T as ACC and back (bfloat16: its bits through ember_bf16.h) */
#define DEFINE_SCAN(SUFFIX, T, ACC, LD, ST)                                                 \
static int scan_##SUFFIX(int op, T *x, int64_t outer, int64_t n, int64_t inner)             \
{                                                                                           \
    if (n == 0 || inner == 0)                                                               \
        return 0;                                                                           \
    ACC *acc = (ACC *)malloc((size_t)inner * sizeof(ACC));                                  \
    if (!acc)                                                                               \
        return -1;                                                                          \
    for (int64_t o = 0; o < outer; o++) {                                                   \
        T *b = x + o * n * inner;                                                           \
        for (int64_t j = 0; j < inner; j++)                                                 \
            acc[j] = (ACC)LD(b[j]);                                                         \
        for (int64_t i = 1; i < n; i++) {                                                   \
            T *row = b + i * inner;                                                         \
            if (op == 0)                                                                    \
                for (int64_t j = 0; j < inner; j++) {                                       \
                    acc[j] = (ACC)(acc[j] + (ACC)LD(row[j]));                               \
                    row[j] = (T)ST(acc[j]);                                                 \
                }                                                                           \
            else                                                                            \
                for (int64_t j = 0; j < inner; j++) {                                       \
                    acc[j] = (ACC)(acc[j] * (ACC)LD(row[j]));                               \
                    row[j] = (T)ST(acc[j]);                                                 \
                }                                                                           \
        }                                                                                   \
    }                                                                                       \
    free(acc);                                                                              \
    return 0;                                                                               \
}

DEFINE_SCAN(u8, uint8_t, uint8_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(i8, int8_t, int8_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(i16, int16_t, int16_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(i32, int32_t, int32_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(i64, int64_t, int64_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(u16, uint16_t, uint32_t, EM_PLAIN, EM_PLAIN)   /* not int: 65535 * 65535 */
DEFINE_SCAN(u32, uint32_t, uint32_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(u64, uint64_t, uint64_t, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(f16, _Float16, float, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(bf16, em_bfloat16, float, em_bf16_to_f32, em_f32_to_bf16)
DEFINE_SCAN(f32, float, double, EM_PLAIN, EM_PLAIN)
DEFINE_SCAN(f64, double, double, EM_PLAIN, EM_PLAIN)

int em_scan(int op, int dtype, char *data, int64_t outer, int64_t n, int64_t inner)
{
    switch (dtype) {
    case EM_UINT8: return scan_u8(op, (uint8_t *)data, outer, n, inner);
    case EM_INT8: return scan_i8(op, (int8_t *)data, outer, n, inner);
    case EM_INT16: return scan_i16(op, (int16_t *)data, outer, n, inner);
    case EM_INT32: return scan_i32(op, (int32_t *)data, outer, n, inner);
    case EM_INT64: return scan_i64(op, (int64_t *)data, outer, n, inner);
    case EM_UINT16: return scan_u16(op, (uint16_t *)data, outer, n, inner);
    case EM_UINT32: return scan_u32(op, (uint32_t *)data, outer, n, inner);
    case EM_UINT64: return scan_u64(op, (uint64_t *)data, outer, n, inner);
    case EM_FLOAT16: return scan_f16(op, (_Float16 *)data, outer, n, inner);
    case EM_BFLOAT16: return scan_bf16(op, (em_bfloat16 *)data, outer, n, inner);
    case EM_FLOAT32: return scan_f32(op, (float *)data, outer, n, inner);
    case EM_FLOAT64: return scan_f64(op, (double *)data, outer, n, inner);
    }
    return -2;
}
