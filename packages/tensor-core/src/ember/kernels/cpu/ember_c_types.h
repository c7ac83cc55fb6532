/* The em_<dtype> C types and the scalar helpers, as CPU C code sees them: included by
 * the generated loops (ops/render.py) and by hand-written kernels that evaluate the
 * op table's helpers (softmax.c). */
#ifndef EMBER_C_TYPES_H
#define EMBER_C_TYPES_H
#include <stdint.h>
#include <math.h>
#include <tgmath.h>   /* floor(float) is floorf: float32 helpers stay in float */
typedef uint8_t em_bool;
typedef uint8_t em_uint8;
typedef int8_t em_int8;
typedef int16_t em_int16;
typedef int32_t em_int32;
typedef int64_t em_int64;
typedef uint16_t em_uint16;
typedef uint32_t em_uint32;
typedef uint64_t em_uint64;
typedef _Float16 em_float16;
#include "ember_bf16.h"    /* em_bfloat16 and its conversions */
typedef float em_float32;
typedef double em_float64;
#define EM_INLINE static inline
/* Hot loops are compiled three times, for AVX-512F, AVX2 and the baseline, and picked
 * at load time (GCC function multi-versioning). AVX-512F brings FMA, which the
 * contraction of a * b + c would use in that clone only: fp-contract=off keeps every
 * clone's arithmetic the same, so results do not depend on the CPU. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EM_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), \
                                 optimize("fp-contract=off")))
#else
#define EM_CLONES
#endif
/* The loops of rows flagged fma (ops/table.py: the GELU rows), whose error bound
 * allows it: copies for the x86-64-v4 (AVX-512) and v3 (AVX2 + FMA) levels that
 * contract a * b + c into FMA (about 1.3x faster), and the baseline without FMA;
 * results may differ between those CPUs in the last ulps. ISA-level clones need GCC 12. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define EM_CLONES_FMA __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", \
                                                   "default"), optimize("fp-contract=fast")))
#else
#define EM_CLONES_FMA EM_CLONES
#endif
#include "../common/ember_scalar.h"
#endif
