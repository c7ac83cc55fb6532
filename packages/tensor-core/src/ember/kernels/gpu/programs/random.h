// dtypes: bool uint8 int8 int16 int32 int64 float16 float32 float64 uint16 uint32 uint64
/* Philox random numbers into a dense output of dtype EM_DT, word for word the CPU's
 * (kernels/cpu/random.c): element i of a draw at stream position `offset` uses the
 * same words on every device. Seeds come as two 32-bit halves. u24: float32 uniform
 * from one word; u53: float64 uniform from two. */

/* a * b rounded before any addition: compilers may fuse a * b + c into one fma
 * (OpenCL C and nvcc do by default), which the CPU's loops do not */
#ifdef __OPENCL_VERSION__
#pragma OPENCL FP_CONTRACT OFF
#define EM_MULF(a, b) ((a) * (b))
#define EM_MULD(a, b) ((a) * (b))
#else
#define EM_MULF(a, b) __fmul_rn((a), (b))
#define EM_MULD(a, b) __dmul_rn((a), (b))
#endif

EM_INLINE float EM_NAME(u24)(em_uint32 w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }

#ifdef EM_HAS_FP64
EM_INLINE double EM_NAME(u53)(em_uint32 hi, em_uint32 lo) {
    return (double)((((em_uint64)hi) << 21) | (lo >> 11)) * (1.0 / 9007199254740992.0);
}
#endif

/* uniform in [low, high); float64 from two words, float32/float16 from one */
EM_KERNEL void EM_NAME(random_uniform)(em_int64 n, EM_GLOBAL EM_T *out, em_uint32 k0,
                                       em_uint32 k1, em_int64 offset, float lo, float span,
                                       double lo64, double span64) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
#if defined(EM_NEEDS_FP64)
        const em_uint64 p = (em_uint64)offset + 2 * (em_uint64)i;
        EM_ST(out, i, lo64 + EM_MULD(span64, EM_NAME(u53)(em_philox_word(k0, k1, p),
                                                           em_philox_word(k0, k1, p + 1))));
#else
        EM_ST(out, i, lo + EM_MULF(span, EM_NAME(u24)(em_philox_word(k0, k1, (em_uint64)offset + i))));
#endif
    }
}

/* Box-Muller: float64 from four words, the others from two, as the CPU */
EM_KERNEL void EM_NAME(random_normal)(em_int64 n, EM_GLOBAL EM_T *out, em_uint32 k0,
                                      em_uint32 k1, em_int64 offset, double mean, double std) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
#if defined(EM_NEEDS_FP64)
        const em_uint64 p = (em_uint64)offset + 4 * (em_uint64)i;
        const double u1 = 1.0 - EM_NAME(u53)(em_philox_word(k0, k1, p), em_philox_word(k0, k1, p + 1));
        const double u2 = EM_NAME(u53)(em_philox_word(k0, k1, p + 2), em_philox_word(k0, k1, p + 3));
        const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
#else
        const em_uint64 p = (em_uint64)offset + 2 * (em_uint64)i;
        const float u1 = 1.0f - EM_NAME(u24)(em_philox_word(k0, k1, p));
        const float u2 = EM_NAME(u24)(em_philox_word(k0, k1, p + 1));
        /* each float step rounded from double: the CPU's logf/cosf within an ulp */
        const float l = (float)log((em_wide)u1);
        const float c = (float)cos((em_wide)(6.2831855f * u2));
        const em_wide z = (float)sqrt((em_wide)(-2.0f * l)) * c;
#endif
        EM_ST(out, i, mean + EM_MULD(std, (double)z));
    }
}

/* low + r, r uniform in [0, span): one word (span <= 2^32) or two */
EM_KERNEL void EM_NAME(random_integers)(em_int64 n, EM_GLOBAL EM_T *out, em_uint32 k0,
                                        em_uint32 k1, em_int64 offset, em_int64 low,
                                        em_int64 span) {
    const em_uint64 range = (em_uint64)span;
    const int wide = range > ((em_uint64)1 << 32);
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
        em_uint64 r;
        if (wide) {
            const em_uint64 p = (em_uint64)offset + 2 * (em_uint64)i;
            const em_uint64 v = ((em_uint64)em_philox_word(k0, k1, p) << 32) | em_philox_word(k0, k1, p + 1);
            r = em_mulhi64(v, range);
        } else {
            r = ((em_uint64)em_philox_word(k0, k1, (em_uint64)offset + i) * range) >> 32;
        }
        EM_ST(out, i, (EM_CT)(low + (em_int64)r));
    }
}

/* -log1p(-u) / lambd from the uniform of the dtype (float32: computed wide) */
EM_KERNEL void EM_NAME(random_exponential)(em_int64 n, EM_GLOBAL EM_T *out, em_uint32 k0,
                                           em_uint32 k1, em_int64 offset, double lambd) {
    for (em_int64 i = EM_GID(); i < n; i += EM_GSIZE()) {
#if defined(EM_NEEDS_FP64)
        const em_uint64 p = (em_uint64)offset + 2 * (em_uint64)i;
        const double u = EM_NAME(u53)(em_philox_word(k0, k1, p), em_philox_word(k0, k1, p + 1));
        EM_ST(out, i, -log1p(-u) / lambd);
#else
        const em_wide u = EM_NAME(u24)(em_philox_word(k0, k1, (em_uint64)offset + i));
        EM_ST(out, i, (float)(-log1p(-u) / lambd));
#endif
    }
}

/* Fisher-Yates exactly as the CPU: one work-item (the swaps are sequential) */
EM_KERNEL void EM_NAME(randperm)(em_int64 n, EM_GLOBAL em_int64 *out, em_uint32 k0,
                                 em_uint32 k1, em_int64 offset) {
    if (EM_GID() != 0) return;
    for (em_int64 i = 0; i < n; i++) out[i] = i;
    for (em_int64 i = n - 1; i > 0; i--) {
        const em_uint64 k = (em_uint64)(n - 1 - i);
        em_uint64 j;
        if ((em_uint64)i < ((em_uint64)1 << 32)) {
            j = ((em_uint64)em_philox_word(k0, k1, (em_uint64)offset + k) * (em_uint64)(i + 1)) >> 32;
        } else {
            const em_uint64 v = ((em_uint64)em_philox_word(k0, k1, (em_uint64)offset + 2 * k) << 32)
                                | em_philox_word(k0, k1, (em_uint64)offset + 2 * k + 1);
            j = em_mulhi64(v, (em_uint64)(i + 1));
        }
        const em_int64 t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}
