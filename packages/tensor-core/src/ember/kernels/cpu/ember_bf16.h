/* bfloat16 on the CPU: em_bfloat16 holds the bits (the top half of a float32), and
 * these two conversions are the only way in or out (x86 has no bfloat16 arithmetic
 * before AVX-512 BF16, and GCC 12 no __bf16 type): widening is exact; narrowing rounds
 * to nearest, ties to even, overflows to inf, and keeps a NaN a NaN (its sign and top
 * payload bits, quieted). Both are branch-free, so loops over them vectorise. The
 * device dialect (kernels/gpu/ember_device.h) has the same two functions. */
#ifndef EMBER_BF16_H
#define EMBER_BF16_H
#include <stdint.h>
typedef uint16_t em_bfloat16;

/* (unions, not memcpy: GCC 12 vectorises these loops only through a union) */
static inline float em_bf16_to_f32(em_bfloat16 h) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}

static inline em_bfloat16 em_f32_to_bf16(float f) {
    union { float f; uint32_t u; } v;
    v.f = f;
    uint32_t u = v.u;
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (em_bfloat16)(((u & 0x7fffffffu) > 0x7f800000u) ? ((u >> 16) | 0x40u) : r);
}
#endif
