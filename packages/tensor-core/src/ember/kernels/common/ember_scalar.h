/* Scalar helpers that op-table bodies call as em_<helper>_{T}(...).
 *
 * Shared by the C, CUDA and OpenCL renderings of the op table, so it is written in
 * the common subset of the three dialects: the including file first defines
 * EM_INLINE and the em_<dtype> C types (see the prelude each renderer emits).
 * Every helper is total: integer division by zero gives 0 (NumPy's result, without
 * the warning) and MIN / -1 wraps, because on x86 either would kill the process.
 */
#ifndef EMBER_SCALAR_H
#define EMBER_SCALAR_H

#define EM_MIN_uint8 0
#define EM_MAX_uint8 255
#define EM_MIN_int8 (-128)
#define EM_MAX_int8 127
#define EM_MIN_int16 (-32768)
#define EM_MAX_int16 32767
#define EM_MIN_int32 (-2147483647 - 1)
#define EM_MAX_int32 2147483647
#define EM_MIN_int64 (-9223372036854775807LL - 1)
#define EM_MAX_int64 9223372036854775807LL

#define EM_INT_HELPERS(T, CT, MIN, BITS)                                           \
    EM_INLINE CT em_floordiv_##T(CT a, CT b) {                                     \
        if (b == 0) return 0;                                                      \
        if (a == (CT)(MIN) && b == (CT)-1) return a;                               \
        CT q = (CT)(a / b);                                                        \
        if ((CT)(a % b) != 0 && ((a < 0) != (b < 0))) q = (CT)(q - 1);             \
        return q;                                                                  \
    }                                                                              \
    EM_INLINE CT em_mod_##T(CT a, CT b) {                                          \
        if (b == 0 || b == (CT)-1) return 0;                                       \
        CT r = (CT)(a % b);                                                        \
        if (r != 0 && ((r < 0) != (b < 0))) r = (CT)(r + b);                       \
        return r;                                                                  \
    }                                                                              \
    EM_INLINE CT em_fmod_int_##T(CT a, CT b) {                                     \
        if (b == 0 || b == (CT)-1) return 0;                                       \
        return (CT)(a % b);                                                        \
    }                                                                              \
    EM_INLINE CT em_ipow_##T(CT a, CT b) {                                         \
        if (b < 0) return (CT)(a == 1 ? 1 : (a == (CT)-1 ? ((b & 1) ? -1 : 1) : 0)); \
        em_uint64 base = (em_uint64)(em_int64)a, result = 1, e = (em_uint64)b;     \
        while (e) { if (e & 1) result *= base; base *= base; e >>= 1; }            \
        return (CT)result;                                                         \
    }                                                                              \
    EM_INLINE CT em_shl_##T(CT a, CT b) {                                          \
        return (b < 0 || b >= BITS) ? (CT)0 : (CT)((em_uint64)(em_int64)a << b);   \
    }                                                                              \
    EM_INLINE CT em_shr_##T(CT a, CT b) {                                          \
        if (b < 0 || b >= BITS) return (CT)(a < 0 ? -1 : 0);                       \
        return (CT)(a >> b);                                                       \
    }

EM_INT_HELPERS(uint8, em_uint8, 0, 8)
EM_INT_HELPERS(int8, em_int8, EM_MIN_int8, 8)
EM_INT_HELPERS(int16, em_int16, EM_MIN_int16, 16)
EM_INT_HELPERS(int32, em_int32, EM_MIN_int32, 32)
EM_INT_HELPERS(int64, em_int64, EM_MIN_int64, 64)

/* Python's float %: the result takes the divisor's sign. */
#define EM_FLOAT_HELPERS(T, CT)                                                    \
    EM_INLINE CT em_fmod_py_##T(CT a, CT b) {                                      \
        CT r = fmod(a, b);                                                         \
        if (r != 0 && ((r < 0) != (b < 0))) r += b;                                \
        else if (r == 0) r = copysign((CT)0, b);                                   \
        return r;                                                                  \
    }

EM_FLOAT_HELPERS(float16, float)
EM_FLOAT_HELPERS(float32, float)
EM_FLOAT_HELPERS(float64, double)

#endif
