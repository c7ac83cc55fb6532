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
#define EM_MIN_uint16 0
#define EM_MAX_uint16 65535
#define EM_MIN_uint32 0
#define EM_MAX_uint32 4294967295U
#define EM_MIN_uint64 0
#define EM_MAX_uint64 18446744073709551615ULL

#define EM_INT_HELPERS(T, CT, MIN, BITS)                                           \
    EM_INLINE CT em_floordiv_##T(CT a, CT b) {                                     \
        if (b == 0) return 0;                                                      \
        if (a == (CT)(MIN) && b == (CT)-1) return a;                               \
        CT q = (CT)(a / b);                                                        \
        if ((CT)(a % b) != 0 && ((a < 0) != (b < 0))) q = (CT)(q - 1);             \
        return q;                                                                  \
    }                                                                              \
    EM_INLINE CT em_mod_##T(CT a, CT b) {                                          \
        if (b == 0 || ((CT)-1 < 0 && b == (CT)-1)) return 0;                       \
        CT r = (CT)(a % b);                                                        \
        if (r != 0 && ((r < 0) != (b < 0))) r = (CT)(r + b);                       \
        return r;                                                                  \
    }                                                                              \
    EM_INLINE CT em_fmod_int_##T(CT a, CT b) {                                     \
        if (b == 0 || ((CT)-1 < 0 && b == (CT)-1)) return 0;                       \
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
EM_INT_HELPERS(uint16, em_uint16, 0, 16)
EM_INT_HELPERS(uint32, em_uint32, 0, 32)
EM_INT_HELPERS(uint64, em_uint64, 0, 64)

/* Python's float %: the result takes the divisor's sign. */
#define EM_FLOAT_HELPERS(T, CT)                                                    \
    EM_INLINE CT em_fmod_py_##T(CT a, CT b) {                                      \
        CT r = fmod(a, b);                                                         \
        if (r != 0 && ((r < 0) != (b < 0))) r += b;                                \
        else if (r == 0) r = copysign((CT)0, b);                                   \
        return r;                                                                  \
    }                                                                              \
    /* NumPy's floor division: exact where floor(a / b) would round first */      \
    EM_INLINE CT em_floordiv_f_##T(CT a, CT b) {                                   \
        if (b == 0) return a / b;                                                  \
        CT mod = fmod(a, b), div = (a - mod) / b;                                  \
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                          \
        CT fl = floor(div);                                                        \
        if (div - fl > (CT)0.5) fl += 1;                                           \
        return div == 0 ? copysign((CT)0, a / b) : fl;                             \
    }                                                                              \
    /* clamp = min(max(a, lo), hi), a NaN anywhere gives NaN (PyTorch, NumPy) */   \
    EM_INLINE CT em_clamp_##T(CT a, CT lo, CT hi) {                                \
        CT r = (a > lo || a != a) ? a : lo;                                        \
        r = lo != lo ? lo : r;                                                     \
        r = (r < hi || r != r) ? r : hi;                                           \
        return hi != hi ? hi : r;                                                  \
    }

EM_FLOAT_HELPERS(float16, float)
EM_FLOAT_HELPERS(bfloat16, float)

/* signbit; bfloat16's on the CPU reads the float's sign bit through a union: GCC 12
 * crashes (an internal compiler error) vectorising signbit of a value widened from
 * bfloat16 bits */
#define em_signbit_float16(x) signbit(x)
#define em_signbit_float32(x) signbit(x)
#define em_signbit_float64(x) signbit(x)
#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)
#define em_signbit_bfloat16(x) signbit(x)
#else
EM_INLINE int em_signbit_bfloat16(float x) {
    union { float f; uint32_t u; } v;
    v.f = x;
    return (int)(v.u >> 31);
}
#endif
EM_FLOAT_HELPERS(float32, float)
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)   /* OpenCL: only with cl_khr_fp64 */
EM_FLOAT_HELPERS(float64, double)
#endif

/* Transcendentals of the float32 rows. On the CPU, libm's expf/tanhf/logf are one
 * call per element, which the compiler cannot vectorise; these branch-free Cephes
 * polynomials (within 2 ulp over the whole range, NaN/inf/subnormal handled by
 * selects) vectorise with the loops. GPU renderers define EM_NATIVE_MATH and get
 * their own vector units' functions. float64 uses the C library (but for the GELU tanh forms, below). */
/* Always inlined: a helper GCC keeps out of line is compiled for the baseline ISA, and
 * every call from an AVX2 loop clone then pays an SSE/AVX transition (erfc went from 6
 * to 80 ns an element when the GELU rows became its third caller). */
#if defined(__GNUC__) && !defined(EM_NATIVE_MATH)
#define EM_VEC_INLINE EM_INLINE __attribute__((always_inline))
#else
#define EM_VEC_INLINE EM_INLINE
#endif
typedef union { float f; em_int32 i; } em_f32_bits;

EM_VEC_INLINE float em_exp2i_f32(em_int32 n) { /* 2^n for n in [-126, 127] */
    em_f32_bits b;
    b.i = (n + 127) << 23;
    return b.f;
}

#ifdef EM_NATIVE_MATH
#define em_exp_float32(x) exp(x)
#define em_tanh_float32(x) tanh(x)
#define em_log_float32(x) log(x)
#define em_exp_nonpos_float32(x) exp(x)
#define em_erf_float32(x) erf(x)
#define em_erfc_float32(x) erfc(x)
#else
EM_VEC_INLINE float em_exp_float32(float x) {
    float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    float fn = floor(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fn * 0.693359375f - fn * -2.12194440e-4f;
    float z = r * r;
    float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    em_int32 n = (em_int32)fn, h = n >> 1;  /* scale in two steps: subnormals and inf */
    float y = p * em_exp2i_f32(h) * em_exp2i_f32(n - h);
    return x != x ? x : y;
}

/* exp(x) for x <= 0 (and NaN), as kernels need it after subtracting a maximum
 * (softmax): a cheaper em_exp_float32, within 1 ulp where it matters. n =
 * round(x / ln 2) comes from adding a magic number (1.5 * 2^23 + 127, so the low
 * bits of the sum hold n + 127 and, shifted, make 2^n), not from floor; there is
 * no overflow side and no two-step scaling; results below FLT_MIN (x < -87.34,
 * -inf included) are 0 rather than subnormal. Correct for x up to 88 as well. */
EM_VEC_INLINE float em_exp_nonpos_float32(float x) {
    const float magic = 12583039.0f;
    em_f32_bits v;
    v.f = x * 1.44269504088896341f + magic;
    float fn = v.f - magic;
    v.i <<= 23;                                    /* 2^n */
    float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
    float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    float y = (p * (r * r) + r) * v.f + v.f;       /* 2^n (1 + r + r^2 p) */
    return x < -87.3365402f ? 0.0f : y;
}

EM_VEC_INLINE float em_tanh_float32(float x) {
    float ax = x < 0 ? -x : x, z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float big = 1.0f - 2.0f / (em_exp_float32(2.0f * ax) + 1.0f);
    big = x < 0 ? -big : big;
    return x == 0.0f ? x : (ax < 0.625f ? small : big);  /* tanh(-0) is -0 */
}

EM_VEC_INLINE float em_log_float32(float x) {
    int sub = x < 1.17549435e-38f;               /* subnormal: scale into range */
    em_f32_bits b;
    b.f = sub ? x * 8388608.0f : x;
    em_int32 e = ((b.i >> 23) & 0xff) - 126 - (sub ? 23 : 0);
    b.i = (b.i & (em_int32)0x807fffff) | 0x3f000000;  /* mantissa in [0.5, 1) */
    float m = b.f;
    int lowm = m < 0.707106781186547524f;
    float fe = (float)(e - lowm);
    m = lowm ? m + m - 1.0f : m - 1.0f;
    float z = m * m;
    float y = ((((((((7.0376836292e-2f * m - 1.1514610310e-1f) * m + 1.1676998740e-1f) * m
                    - 1.2420140846e-1f) * m + 1.4249322787e-1f) * m - 1.6668057665e-1f) * m
                 + 2.0000714765e-1f) * m - 2.4999993993e-1f) * m + 3.3333331174e-1f) * m * z;
    y += -2.12194440e-4f * fe - 0.5f * z;
    float r = m + y + 0.693359375f * fe;
    r = x == 0 ? -INFINITY : r;
    r = x < 0 ? NAN : r;
    return (x != x || x == INFINITY) ? x : r;
}

/* erf and erfc. erf(x) for |x| < 0.875 and erfc(x) for |x| < 0.5: x P(x^2), a
 * degree-6 fit of erf(x)/x (relative error 5e-10), and 1 minus it. Beyond: erfc(a) =
 * t exp(-a^2 + Q(t)), t = 1 / (1 + a/2) (the form of Numerical Recipes' erfcc,
 * refitted on [0.5, 10.1]: degree 9, 3e-9), with a^2 split into a head that squares
 * exactly and a small tail, so that the large exponent carries no rounding error into
 * the tail of erfc; erf = 1 - erfc has nothing to cancel past 0.875. Measured over
 * every 997th float32: erf within 2.4 ulp, erfc within 6.1 (test_elementwise checks a
 * grid). */
EM_VEC_INLINE float em_erf_small_f32(float x) {
    float z = x * x;
    return x * ((((((8.668693044e-05f * z - 8.207448409e-04f) * z + 5.206204485e-03f) * z
                   - 2.686124668e-02f) * z + 1.128372326e-01f) * z - 3.761263490e-01f) * z
                + 1.128379226e+00f);
}

EM_VEC_INLINE float em_erfc_tail_f32(float a) {      /* a >= 0.5 or NaN */
    a = a > 10.5f ? 10.5f : a;                   /* erfc underflows to 0 from 10.06 */
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = ((((((((2.570687532e-01f * t - 1.208213925e+00f) * t + 2.227609634e+00f) * t
                    - 1.924847960e+00f) * t + 7.946898341e-01f) * t - 3.985999823e-01f) * t
                 + 1.515132040e-01f) * t + 3.656106293e-01f) * t + 1.000740290e+00f) * t
              - 1.265537500e+00f;
    em_f32_bits head;
    head.f = a;
    head.i &= (em_int32)0xfffff000;              /* 12 significant bits: squares exactly */
    float tail = (a - head.f) * (a + head.f);    /* a^2 - head^2 */
    return t * em_exp_float32(-head.f * head.f) * em_exp_float32(q - tail);
}

EM_VEC_INLINE float em_erf_float32(float x) {
    float ax = x < 0 ? -x : x;
    float big = 1.0f - em_erfc_tail_f32(ax);
    big = x < 0 ? -big : big;
    return ax < 0.875f ? em_erf_small_f32(x) : big;
}

EM_VEC_INLINE float em_erfc_float32(float x) {
    float ax = x < 0 ? -x : x;
    float tail = em_erfc_tail_f32(ax);
    float big = x < 0 ? 2.0f - tail : tail;
    return ax < 0.5f ? 1.0f - em_erf_small_f32(x) : big;
}
#endif

/* GELU, x Phi(x), and its derivative Phi(x) + x phi(x), without erf: Phi(-|x|) =
 * t exp(-x^2/2) P(t), t = 1 / (1 + |x|/4), P a degree-9 fit on |x| <= 14.5 (relative
 * error 2e-8; past 14.5 x Phi(x) underflows). One division and one exp, whose
 * argument -x^2/2 is split into a head that squares exactly and a small tail (x, not
 * x / sqrt 2, so no rounding before the square), and whose 2^n scale comes last, so a
 * subnormal result rounds once. Phi(x) = 1 - Phi(-x) for x >= 0 has nothing to
 * cancel, and the negative tail keeps its relative precision. Branch-free: both signs
 * share the one exp (q = |x| Phi(-|x|), then y = -q or x - q), which lets the loops
 * vectorise without computing it twice. Error bound, every 1e-5 on [-15, 15] and 2e6
 * random points against float64, with and without FMA contraction (the CPU's
 * EM_CLONES_FMA copies): gelu within 5.9 ulp, the derivative within 6.4 ulp of
 * max(|d|, 1/4) (it crosses 0 at x = -0.75); test_elementwise checks 8 on every device:
 * this one formula is every device's float32 (and float16, bfloat16) GELU (on a GPU
 * too: the native erfc and exp of x^2 / 2 lose ~50 ulp in the negative tail, where
 * this keeps its relative precision). */
EM_VEC_INLINE float em_gelu_tp_f32(float ax) {        /* t P(t), 0 <= ax <= 14.5 */
    float t = 1.0f / (1.0f + 0.25f * ax);
    float p = ((((((((1.688929461e-02f * t - 6.452037394e-02f) * t + 5.584022775e-02f) * t
                    + 2.266286872e-02f) * t + 1.769183204e-02f) * t + 8.387404680e-02f) * t
                 + 7.300499082e-02f) * t + 9.528952092e-02f) * t + 9.952125698e-02f) * t
              + 9.974633902e-02f;
    return t * p;
}

EM_VEC_INLINE float em_mul_exp_halfsq_f32(float c, float ax) {  /* c exp(-ax^2/2) */
    em_f32_bits hb;
    hb.f = ax;
    hb.i &= (em_int32)0xfffff000;                /* 12 significant bits: squares exactly */
    float h = hb.f;
    float hi = -0.5f * (h * h), lo = -0.5f * ((ax - h) * (ax + h));
    const float magic = 12582912.0f;             /* 1.5 * 2^23: the sum rounds to an integer */
    float fn = (hi * 1.44269504088896341f + magic) - magic;
    float r = (hi - fn * 0.693359375f) - fn * -2.12194440e-4f + lo;  /* first step exact */
    float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    /* 2^n as 2^(n + 32) 2^-32: n >= -152 keeps 2^(n + 32) normal, and the last product
     * rounds once into the subnormals */
    return c * p * em_exp2i_f32((em_int32)fn + 32) * 2.3283064365386963e-10f;
}

EM_VEC_INLINE float em_gelu_float32(float x) {
    em_f32_bits b;
    b.f = x;
    b.i &= (em_int32)0x7fffffff;
    float ax = b.f > 14.5f ? 14.5f : b.f;        /* |x|, clamped; NaN stays */
    float q = em_mul_exp_halfsq_f32(ax * em_gelu_tp_f32(ax), ax);   /* |x| Phi(-|x|) */
    float y = x < 0 ? -q : x - q;
    return x < -14.5f ? 0.0f * x : y;            /* NaN at -inf, as PyTorch */
}

EM_VEC_INLINE float em_gelu_backward_float32(float g, float x) {
    em_f32_bits b, s, sx;
    b.f = x;
    em_int32 sign = b.i & (em_int32)0x80000000;
    b.i &= (em_int32)0x7fffffff;
    float ax = b.f > 14.5f ? 14.5f : b.f;
    s.f = em_gelu_tp_f32(ax);                    /* Phi(-|x|) exp(x^2/2) */
    s.i ^= sign ^ (em_int32)0x80000000;          /* negated where x >= 0 */
    sx.f = ax;
    sx.i |= sign;                                /* x, clamped */
    /* x < 0: Phi(x) + x phi(x) = (tp + x / sqrt(2 pi)) exp(-x^2/2); x >= 0: 1 + (x /
     * sqrt(2 pi) - tp) exp(-x^2/2) */
    float w = em_mul_exp_halfsq_f32(sx.f * 0.39894228040143267794f + s.f, ax);
    float d = sign ? w : 1.0f + w;              /* the sign bit, as above: -0 is "x < 0" */
    d = x > 14.5f ? 1.0f + 0.0f * x : (x < -14.5f ? 0.0f * x : d);  /* NaN at +-inf */
    return g * d;
}
#define em_exp_float16 em_exp_float32
#define em_tanh_float16 em_tanh_float32
#define em_log_float16 em_log_float32
#define em_erf_float16 em_erf_float32
#define em_erfc_float16 em_erfc_float32
#define em_gelu_float16 em_gelu_float32
#define em_exp_bfloat16 em_exp_float32
#define em_tanh_bfloat16 em_tanh_float32
#define em_log_bfloat16 em_log_float32
#define em_erf_bfloat16 em_erf_float32
#define em_erfc_bfloat16 em_erfc_float32
#define em_gelu_bfloat16 em_gelu_float32
#define em_exp_float64(x) exp(x)
#define em_tanh_float64(x) tanh(x)
#define em_log_float64(x) log(x)
#define em_erf_float64(x) erf(x)
#define em_erfc_float64(x) erfc(x)
#define em_gelu_float64(x) (0.5 * (x) * erfc((x) * -0.70710678118654752440))

/* GELU's derivative and its tanh form, one pass each (the op table's _gelu_grad,
 * _gelu_tanh and _gelu_tanh_grad rows: nn.functional.gelu and its formula):
 *   d/dx x Phi(x) = Phi(x) + x phi(x)
 *   tanh form: y = x (1 + tanh(u)) / 2 = x s, s = sigmoid(2u) = 1 / (1 + exp(-2u)),
 *   u = sqrt(2/pi) (x + 0.044715 x^3), dy/dx = s + 2 x s (1 - s) u', 1 - s = exp(-2u) s
 *   (the sigmoid form keeps 1 + tanh(u) accurate where tanh saturates, on every
 *   device's exp), and past |x| > 10 their limits: y = x, dy/dx = 1 above, y = 0 x
 *   (NaN at -inf, as PyTorch), dy/dx = 0 below (no inf * 0 in between).
 * On the CPU the float32 forms use the vectorising polynomials above. */
/* exp(x) for |x| <= 88, as the tanh forms need it (their argument is clamped): on the
 * CPU a float64 body that vectorises (libm's exp is a call per element, 3x PyTorch's
 * time): n = round(x / ln 2) from adding 1.5 * 2^52, whose low bits then make 2^n,
 * and a degree-12 Taylor polynomial on |r| <= ln(2)/2 (within 2 ulp). */
#define em_exp_bounded_float32 em_exp_float32
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)
#ifdef EM_NATIVE_MATH
#define em_exp_bounded_float64(x) exp(x)
#else
EM_VEC_INLINE double em_exp_bounded_float64(double x) {
    const double magic = 6755399441055744.0;
    union { double f; em_int64 i; } v;
    v.f = x * 1.4426950408889634074 + magic;
    double fn = v.f - magic;
    double r = (x - fn * 6.93147180369123816490e-1) - fn * 1.90821492927058770002e-10;
    double p = 1.0 / 479001600;
    p = p * r + 1.0 / 39916800;
    p = p * r + 1.0 / 3628800;
    p = p * r + 1.0 / 362880;
    p = p * r + 1.0 / 40320;
    p = p * r + 1.0 / 5040;
    p = p * r + 1.0 / 720;
    p = p * r + 1.0 / 120;
    p = p * r + 1.0 / 24;
    p = p * r + 1.0 / 6;
    p = p * r + 0.5;
    p = (p * r + 1.0) * r + 1.0;
    v.i = (v.i + 1023) << 52;                    /* the low bits of v held n */
    return p * v.f;
}
#endif
#endif
#define EM_GELU_FORMS(T, CT)                                                             \
    EM_VEC_INLINE CT em_gelu_tanh_##T(CT x) {                                            \
        CT xc = x > (CT)10 ? (CT)10 : (x < (CT)-10 ? (CT)-10 : x);                       \
        CT u = (CT)0.79788456080286535588 * (xc + (CT)0.044715 * xc * xc * xc);          \
        CT y = x / ((CT)1 + em_exp_bounded_##T((CT)-2 * u));                                     \
        return x > (CT)10 ? x : (x < (CT)-10 ? (CT)0 * x : y);                           \
    }                                                                                    \
    EM_VEC_INLINE CT em_gelu_tanh_backward_##T(CT g, CT x) {                             \
        CT xc = x > (CT)10 ? (CT)10 : (x < (CT)-10 ? (CT)-10 : x);                       \
        CT x2 = xc * xc;                                                                 \
        CT e = em_exp_bounded_##T((CT)-1.5957691216057307118 * (xc + (CT)0.044715 * x2 * xc)); \
        CT s = (CT)1 / ((CT)1 + e);                                                      \
        CT du = (CT)0.79788456080286535588 * ((CT)1 + (CT)0.134145 * x2);                \
        CT d = s + (CT)2 * xc * s * (e * s) * du;                                        \
        d = x > (CT)10 ? (CT)1 : (x < (CT)-10 ? (CT)0 : d);                              \
        return g * d;                                                                    \
    }
EM_GELU_FORMS(float32, float)
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)
EM_VEC_INLINE double em_gelu_backward_float64(double g, double x) {  /* float32's is above */
    return g * (0.5 * em_erfc_float64(x * -0.70710678118654752440) +
                x * em_exp_float64(x * x * -0.5) * 0.39894228040143267794);
}
EM_GELU_FORMS(float64, double)
#endif
#define em_gelu_backward_float16 em_gelu_backward_float32
#define em_gelu_tanh_float16 em_gelu_tanh_float32
#define em_gelu_tanh_backward_float16 em_gelu_tanh_backward_float32
#define em_gelu_backward_bfloat16 em_gelu_backward_float32
#define em_gelu_tanh_bfloat16 em_gelu_tanh_float32
#define em_gelu_tanh_backward_bfloat16 em_gelu_tanh_backward_float32

#include "ember_complex.h"
/* special functions (digamma, zeta, Bessel, ...): their own header */
#include "ember_special.h"

#endif
