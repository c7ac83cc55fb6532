body = r'''
EM_INLINE em_##T em_cmake_##T(R re, R im) {
    em_##T z; z.re = re; z.im = im; return z;
}
EM_INLINE em_##T em_cadd_##T(em_##T a, em_##T b) {
    return em_cmake_##T(a.re + b.re, a.im + b.im);
}
EM_INLINE em_##T em_csub_##T(em_##T a, em_##T b) {
    return em_cmake_##T(a.re - b.re, a.im - b.im);
}
EM_INLINE em_##T em_cmul_##T(em_##T a, em_##T b) {
    return em_cmake_##T(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
EM_INLINE em_##T em_cscale_##T(em_##T a, R s) {
    return em_cmake_##T(a.re * s, a.im * s);
}
/* Smith's algorithm (NumPy's division): no spurious overflow of |b|^2 */
EM_INLINE em_##T em_cdiv_##T(em_##T a, em_##T b) {
    R abr = fabs(b.re), abi = fabs(b.im);
    if (abr >= abi) {
        if (abr == 0 && abi == 0)
            return em_cmake_##T(a.re / abr, a.im / abr);
        R rat = b.im / b.re, scl = (R)1 / (b.re + b.im * rat);
        return em_cmake_##T((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
    }
    R rat = b.re / b.im, scl = (R)1 / (b.im + b.re * rat);
    return em_cmake_##T((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
EM_INLINE em_##T em_cneg_##T(em_##T a) { return em_cmake_##T(-a.re, -a.im); }
EM_INLINE em_##T em_cconj_##T(em_##T a) { return em_cmake_##T(a.re, -a.im); }
EM_INLINE em_##T em_crecip_##T(em_##T a) {
    return em_cdiv_##T(em_cmake_##T((R)1, (R)0), a);
}
EM_INLINE em_##T em_csquare_##T(em_##T a) { return em_cmul_##T(a, a); }
EM_INLINE R em_cangle_##T(em_##T a) { return atan2(a.im, a.re); }
EM_INLINE int em_ceq_##T(em_##T a, em_##T b) { return a.re == b.re && a.im == b.im; }
EM_INLINE int em_cne_##T(em_##T a, em_##T b) { return a.re != b.re || a.im != b.im; }
EM_INLINE int em_cnz_##T(em_##T a) { return a.re != 0 || a.im != 0; }
EM_INLINE int em_cisnan_##T(em_##T a) { return a.re != a.re || a.im != a.im; }
EM_INLINE int em_cisinf_##T(em_##T a) { return (isinf(a.re) || isinf(a.im)) ? 1 : 0; }
EM_INLINE int em_cisfinite_##T(em_##T a) {
    return (isfinite(a.re) && isfinite(a.im)) ? 1 : 0;
}
/* z / |z|, 0 at 0 (torch.sgn) */
EM_INLINE em_##T em_csgn_##T(em_##T a) {
    R h = hypot(a.re, a.im);
    if (h == 0) return em_cmake_##T((R)0, (R)0);
    return em_cmake_##T(a.re / h, a.im / h);
}
EM_INLINE em_##T em_cexp_##T(em_##T a) {
    if (a.im == 0) return em_cmake_##T(exp(a.re), a.im);
    if (a.re < 0 && isinf(a.re) && !isfinite(a.im)) return em_cmake_##T((R)0, (R)0);
    if (a.re > LN_MAX - 1 && isfinite(a.re) && isfinite(a.im)) {
        /* exp(re) alone would overflow where exp(re) cos(im) need not */
        R l = exp(a.re - (R)1), e1 = (R)2.718281828459045235;
        return em_cmake_##T(l * cos(a.im) * e1, l * sin(a.im) * e1);
    }
    R l = exp(a.re);
    return em_cmake_##T(l * cos(a.im), l * sin(a.im));
}
EM_INLINE em_##T em_clog_##T(em_##T a) {
    R ax = fabs(a.re), ay = fabs(a.im), r;
    if (ax > LARGE || ay > LARGE) {
        r = log(hypot(ax / 2, ay / 2)) + (R)0.6931471805599453094;
    } else if (ax < SMALL && ay < SMALL) {
        if (ax > 0 || ay > 0)
            r = log(hypot(ax * (R)SUP, ay * (R)SUP)) + log((R)SDOWN * (R)SDOWN);
        else
            r = -INFINITY;
    } else {
        R h = hypot(ax, ay);
        if ((R)0.71 <= h && h <= (R)1.73) {   /* |z| near 1: log1p keeps the digits */
            R am = ax > ay ? ax : ay, an = ax > ay ? ay : ax;
            r = log1p((am - 1) * (am + 1) + an * an) / 2;
        } else {
            r = log(h);
        }
    }
    return em_cmake_##T(r, atan2(a.im, a.re));
}
EM_INLINE em_##T em_clog2_##T(em_##T a) {
    return em_cscale_##T(em_clog_##T(a), (R)1.442695040888963407);
}
EM_INLINE em_##T em_clog10_##T(em_##T a) {
    return em_cscale_##T(em_clog_##T(a), (R)0.4342944819032518277);
}
/* log(1 + z) without the rounding of 1 + z near 0 */
EM_INLINE em_##T em_clog1p_##T(em_##T a) {
    if (fabs(a.re) < (R)0.5 && fabs(a.im) < (R)0.5)
        return em_cmake_##T(log1p(a.re * (2 + a.re) + a.im * a.im) / 2, atan2(a.im, 1 + a.re));
    return em_clog_##T(em_cmake_##T(1 + a.re, a.im));
}
/* exp(z) - 1 (NumPy's formula) */
EM_INLINE em_##T em_cexpm1_##T(em_##T a) {
    if (a.im == 0) return em_cmake_##T(expm1(a.re), a.im);
    R s = sin(a.im / 2);
    return em_cmake_##T(expm1(a.re) * cos(a.im) - 2 * s * s, exp(a.re) * sin(a.im));
}
EM_INLINE em_##T em_cexp2_##T(em_##T a) {
    return em_cexp_##T(em_cscale_##T(a, (R)0.6931471805599453094));
}
/* principal branch, signed zeros as C99: sqrt(-4 - 0i) = -2i */
EM_INLINE em_##T em_csqrt_##T(em_##T a) {
    if (a.re == 0 && a.im == 0) return em_cmake_##T((R)0, a.im);
    if (isinf(a.im)) return em_cmake_##T((R)INFINITY, a.im);
    R ax = fabs(a.re), ay = fabs(a.im), s;
    if (ax < SMALL && ay < SMALL) {   /* hypot would be subnormal: scale */
        ax *= (R)SUP;
        s = sqrt(ax + hypot(ax, ay * (R)SUP)) * (R)SDOWN;
    } else {
        ax /= 8;
        s = 2 * sqrt(ax + hypot(ax, ay / 8));
    }
    R d = ay / (2 * s);
    if (a.re >= 0 || a.re != a.re) return em_cmake_##T(s, copysign(d, a.im));
    return em_cmake_##T(d, copysign(s, a.im));
}
EM_INLINE em_##T em_crsqrt_##T(em_##T a) { return em_crecip_##T(em_csqrt_##T(a)); }
/* NumPy's cpow: z^0 = 1, 0^w = 0 for Re w > 0 (else nan), small integer powers
 * by squaring (exact for z**2), else exp(w log z) */
EM_INLINE em_##T em_cpow_##T(em_##T a, em_##T b) {
    if (b.re == 0 && b.im == 0) return em_cmake_##T((R)1, (R)0);
    if (a.re == 0 && a.im == 0) {
        if (b.re > 0) return em_cmake_##T((R)0, (R)0);
        return em_cmake_##T((R)NAN, (R)NAN);
    }
    if (b.im == 0 && b.re == floor(b.re) && fabs(b.re) < 100) {
        int n = (int)b.re, m = n < 0 ? -n : n;
        em_##T r = em_cmake_##T((R)1, (R)0), p = a;
        while (m) {
            if (m & 1) r = em_cmul_##T(r, p);
            p = em_cmul_##T(p, p);
            m >>= 1;
        }
        return n < 0 ? em_crecip_##T(r) : r;
    }
    return em_cexp_##T(em_cmul_##T(b, em_clog_##T(a)));
}
EM_INLINE em_##T em_csinh_##T(em_##T a) {
    if (a.im == 0) return em_cmake_##T(sinh(a.re), a.im);
    return em_cmake_##T(sinh(a.re) * cos(a.im), cosh(a.re) * sin(a.im));
}
EM_INLINE em_##T em_ccosh_##T(em_##T a) {
    if (a.im == 0) return em_cmake_##T(cosh(a.re), signbit(a.re) ? -a.im : a.im);
    return em_cmake_##T(cosh(a.re) * cos(a.im), sinh(a.re) * sin(a.im));
}
/* Kahan's tanh (FreeBSD's ctanh): no overflow of sinh, cosh */
EM_INLINE em_##T em_ctanh_##T(em_##T a) {
    if (a.im == 0) return em_cmake_##T(tanh(a.re), a.im);
    if (fabs(a.re) > (R)TBIG) {
        R e = exp(-2 * fabs(a.re));
        if (!isfinite(a.im))   /* C99: +-inf + i(inf or NaN) is +-1 + i0; finite a: NaN */
            return isinf(a.re) ? em_cmake_##T(copysign((R)1, a.re), copysign((R)0, a.im))
                               : em_cmake_##T(a.im - a.im, a.im - a.im);
        return em_cmake_##T(copysign((R)1, a.re), 4 * sin(a.im) * cos(a.im) * e);
    }
    R t = tan(a.im), beta = 1 + t * t, s = sinh(a.re), rho = sqrt(1 + s * s);
    R den = 1 + beta * s * s;
    return em_cmake_##T(beta * rho * s / den, t / den);
}
/* sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz) */
EM_INLINE em_##T em_csin_##T(em_##T a) {
    em_##T r = em_csinh_##T(em_cmake_##T(-a.im, a.re));
    return em_cmake_##T(r.im, -r.re);
}
EM_INLINE em_##T em_ccos_##T(em_##T a) { return em_ccosh_##T(em_cmake_##T(-a.im, a.re)); }
EM_INLINE em_##T em_ctan_##T(em_##T a) {
    em_##T r = em_ctanh_##T(em_cmake_##T(-a.im, a.re));
    return em_cmake_##T(r.im, -r.re);
}
/* The inverse functions: Kahan's formulas (CPython's cmath) */
EM_INLINE em_##T em_casinh_##T(em_##T a) {
    if (fabs(a.re) > LARGE || fabs(a.im) > LARGE) {
        R r = log(hypot(a.re / 2, a.im / 2)) + 2 * (R)0.6931471805599453094;
        return em_cmake_##T(copysign(r, a.re), atan2(a.im, fabs(a.re)));
    }
    em_##T s1 = em_csqrt_##T(em_cmake_##T(1 + a.im, -a.re));
    em_##T s2 = em_csqrt_##T(em_cmake_##T(1 - a.im, a.re));
    return em_cmake_##T(asinh(s1.re * s2.im - s2.re * s1.im),
                        atan2(a.im, s1.re * s2.re - s1.im * s2.im));
}
EM_INLINE em_##T em_casin_##T(em_##T a) {   /* -i asinh(iz) */
    em_##T r = em_casinh_##T(em_cmake_##T(-a.im, a.re));
    return em_cmake_##T(r.im, -r.re);
}
EM_INLINE em_##T em_cacos_##T(em_##T a) {
    if (fabs(a.re) > LARGE || fabs(a.im) > LARGE) {
        R r = log(hypot(a.re / 2, a.im / 2)) + 2 * (R)0.6931471805599453094;
        return em_cmake_##T(atan2(fabs(a.im), a.re), copysign(r, -a.im));
    }
    em_##T s1 = em_csqrt_##T(em_cmake_##T(1 - a.re, -a.im));
    em_##T s2 = em_csqrt_##T(em_cmake_##T(1 + a.re, a.im));
    return em_cmake_##T(2 * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
}
EM_INLINE em_##T em_cacosh_##T(em_##T a) {
    if (fabs(a.re) > LARGE || fabs(a.im) > LARGE) {
        R r = log(hypot(a.re / 2, a.im / 2)) + 2 * (R)0.6931471805599453094;
        return em_cmake_##T(r, atan2(a.im, a.re));
    }
    em_##T s1 = em_csqrt_##T(em_cmake_##T(a.re - 1, a.im));
    em_##T s2 = em_csqrt_##T(em_cmake_##T(a.re + 1, a.im));
    return em_cmake_##T(asinh(s1.re * s2.re + s1.im * s2.im), 2 * atan2(s1.im, s2.re));
}
EM_INLINE em_##T em_catanh_pos_##T(em_##T a) {   /* a.re >= 0 or NaN */
    R ay = fabs(a.im);
    if (isinf(a.re) || isinf(ay))   /* C99: +-0 + i pi/2 (a.re / h^2 would be inf / inf) */
        return em_cmake_##T(copysign((R)0, a.re),
                            a.im != a.im ? a.im : copysign((R)1.570796326794896619, a.im));
    if (a.re > SQRT_LARGE || ay > SQRT_LARGE) {
        R h = hypot(a.re / 2, a.im / 2);
        return em_cmake_##T(a.re / 4 / h / h, -copysign((R)1.570796326794896619, -a.im));
    }
    if (a.re == 1 && ay < SQRT_SMALL) {
        if (ay == 0) return em_cmake_##T((R)INFINITY, a.im);
        return em_cmake_##T(-log(sqrt(ay) / sqrt(hypot(ay, (R)2))),
                            copysign(atan2((R)2, -ay) / 2, a.im));
    }
    R om = 1 - a.re;
    return em_cmake_##T(log1p(4 * a.re / (om * om + ay * ay)) / 4,
                        -atan2(-2 * a.im, om * (1 + a.re) - ay * ay) / 2);
}
EM_INLINE em_##T em_catanh_##T(em_##T a) {
    if (a.re < 0) return em_cneg_##T(em_catanh_pos_##T(em_cneg_##T(a)));
    return em_catanh_pos_##T(a);
}
EM_INLINE em_##T em_catan_##T(em_##T a) {   /* -i atanh(iz) */
    em_##T r = em_catanh_##T(em_cmake_##T(-a.im, a.re));
    return em_cmake_##T(r.im, -r.re);
}
EM_INLINE em_##T em_csigmoid_##T(em_##T a) {
    return em_crecip_##T(em_cadd_##T(em_cmake_##T((R)1, (R)0), em_cexp_##T(em_cneg_##T(a))));
}
EM_INLINE em_##T em_clerp_##T(em_##T a, em_##T b, em_##T w) {
    return em_cadd_##T(a, em_cmul_##T(w, em_csub_##T(b, a)));
}
'''
lines = body.strip("\n").split("\n")
w = max(len(line) for line in lines) + 2
macro = "\n".join(line.ljust(w) + "\\" for line in lines)
head = '''/* Complex numbers: em_complex64 / em_complex128, interleaved (re, im) like C99's
 * float _Complex and NumPy's complex64 / complex128 (generated by gen_complex.py in
 * this directory: edit that, then run it).
 *
 * A plain struct, so the one definition serves C, CUDA C++ and OpenCL C; the op
 * table's complex bodies (ops/table.py, kind "complex") call the em_c<op>_<dtype>
 * helpers below, written once for both precisions. The formulas: NumPy's for
 * division (Smith's algorithm), pow and expm1; CPython cmath's for sqrt, log and the
 * inverse functions (Kahan's: branch cuts follow the sign of zero, as C99 Annex G);
 * FreeBSD's (Kahan's) for tanh. Included by ember_scalar.h. */
#ifndef EMBER_COMPLEX_H
#define EMBER_COMPLEX_H

typedef struct { float re, im; } em_complex64;
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)
typedef struct { double re, im; } em_complex128;
#endif

/* |z|. The devices' hypot is fast; on the CPU hypot is a libm call per element (9x
 * NumPy's time), so the CPU's forms vectorise: complex64 squares in double (a float's
 * square can neither overflow nor go subnormal there), complex128 scales by an exact
 * power of two when |z| nears overflow or underflow. An infinite part gives inf even
 * beside a NaN, as hypot. */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)
EM_INLINE float em_cabs_complex64(em_complex64 a) { return hypot(a.re, a.im); }
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)
EM_INLINE double em_cabs_complex128(em_complex128 a) { return hypot(a.re, a.im); }
#endif
#else
EM_INLINE float em_cabs_complex64(em_complex64 a) {
    double x = a.re, y = a.im;
    float h = (float)sqrt(x * x + y * y);
    return (isinf(a.re) || isinf(a.im)) ? (float)INFINITY : h;
}
EM_INLINE double em_cabs_complex128(em_complex128 a) {
    double ax = fabs(a.re), ay = fabs(a.im), m = ax > ay ? ax : ay;
    int big = m > 0x1p511, tiny = m < 0x1p-511;
    double s = big ? 0x1p-600 : (tiny ? 0x1p600 : 1.0);
    double x = ax * s, y = ay * s;
    double h = sqrt(x * x + y * y) * (big ? 0x1p600 : (tiny ? 0x1p-600 : 1.0));
    return (isinf(ax) || isinf(ay)) ? (double)INFINITY : h;
}
#endif

/* T: the complex dtype's name; R: its real type; LARGE = R's max / 4; SQRT_LARGE;
 * SMALL = R's smallest normal; SQRT_SMALL; SUP = 2^2k and SDOWN = 2^-k (scaling of
 * subnormals); LN_MAX = log(max); TBIG: |x| past which tanh(x) rounds to +-1. */
#define EM_COMPLEX_HELPERS(T, R, LARGE, SQRT_LARGE, SMALL, SQRT_SMALL, SUP, SDOWN, LN_MAX, TBIG) \\
'''
tail = '''

EM_COMPLEX_HELPERS(complex64, float, 8.5070591730234616e37f, 9.2233720368547758e18f,
                   1.17549435e-38f, 1.0842021724855044e-19f, 16777216.0f, 2.44140625e-4f,
                   88.72283905206835f, 9.0f)
#if !defined(__OPENCL_VERSION__) || defined(EM_HAS_FP64)
EM_COMPLEX_HELPERS(complex128, double, 4.49423283715578976e307, 6.703903964971299e153,
                   2.2250738585072014e-308, 1.4916681462400413e-154, 18014398509481984.0,
                   7.450580596923828125e-9, 709.782712893384, 22.0)
#endif

#endif /* EMBER_COMPLEX_H */
'''
open("ember_complex.h", "w").write(head + macro[:-1].rstrip() + tail)
