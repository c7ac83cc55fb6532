/* Special functions of the op table (ember.special and their main-namespace names):
 * digamma, polygamma, Hurwitz zeta, lgamma, erfcx, erfinv, ndtr, ndtri, log_ndtr, the
 * Bessel functions J0 J1 Y0 Y1 I0 I1 K0 K1 (and the exponentially scaled I and K),
 * spherical j0, the regularised incomplete gamma functions, entr, xlog1py.
 *
 * Included by ember_scalar.h, so it is written in the same subset of C that OpenCL C
 * and CUDA C++ compile: no constant arrays (series are unrolled code), only the libm
 * functions OpenCL has. Each function is written once over em_sp_w, the widest float
 * of the device: double everywhere but on an OpenCL device without cl_khr_fp64,
 * where it is float. float64 rows call the em_sp_*_w functions directly; float32
 * (and float16) rows compute in em_sp_w and round once, so where the device has
 * double a float32 result is correctly rounded but for double rounding (within 1
 * ulp). The accuracy each function reaches is stated in its Python docstring
 * (ember/ops/special.py) and checked against mpmath in tests/test_special.py.
 *
 * The Chebyshev and Taylor coefficients are ember's own fits, computed in 50-digit
 * arithmetic by tools/special_coefficients.py (run it to regenerate the block
 * between the GENERATED markers).
 */
#ifndef EMBER_SPECIAL_H
#define EMBER_SPECIAL_H

#if defined(__OPENCL_VERSION__) && !defined(EM_HAS_FP64)
typedef float em_sp_w;
#define EM_SP_EPS 5.9604645e-8f
#define EM_SP_ERFCX_BIG 9.0f        /* erfc underflows past 10 in float */
#define EM_SP_LOG_MAX 88.0f
#else
typedef double em_sp_w;
#define EM_SP_EPS 1.1102230246251565e-16
#define EM_SP_ERFCX_BIG 26.0        /* erfc is normal below 26.5 in double */
#define EM_SP_LOG_MAX 709.0
#endif
#define EM_SP_PI 3.14159265358979323846
#define EM_SP_SQRTPI 1.77245385090551602730
#define EM_SP_SQRT2 1.41421356237309504880
#define EM_SP_SQRT1_2_HI 0.70710678118654757         /* 1/sqrt(2) = HI + LO */
#define EM_SP_SQRT1_2_LO (-4.8336466567264567e-17)
#define EM_SP_2_PI 0.63661977236758134308            /* 2 / pi */

/* ---------------------------------------------------------------- GENERATED begin */
/* i0e_small: 31 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_i0e_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.6691780069214961571e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.4153416464793393795e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3307945188222380978e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.4312798465479546936e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.7153912855551330306e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.1685332877993451681e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.6761854986049356169e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.8564467831119294609e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.9550526631296398346e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7268262914415557072e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 9.6758090353732369122e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.1897956016352629067e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.6598237246823866503e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.3000250099862480421e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.0469950225419189493e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6707938539406117339e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.1173875391201037182e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.4167383584587505636e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6448448070728897089e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.754195010082103704e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.8850288509584165573e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.7637557453858236588e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6394756169413357984e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.3243099950505759443e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0546460394594998318e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.3737414805899468816e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.9305284239670708488e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.4901097048047644421e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.7162090152220877535e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.0468267234319839868e-1;
    return s * b0 - b1 + 3.383976372047380425e-1;
}

/* i0e_large: 27 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_i0e_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.1936508908459820855e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 9.9214754121736985989e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.2331804878747539546e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.8305044859441820713e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.465621420296759999e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.4612228676974610931e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.8276239805165834849e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.4254856196772191346e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.7725601330565263836e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.8116806693526224207e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.5548466988283076487e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.1505693472872220866e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.5400862175214098269e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.8527783827421427011e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.1801244513836662337e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7941785315068061178e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.3215811840447713119e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.1499165279632413645e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.1889147107846438342e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.9406023882249695891e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3962320257083863452e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.2666689904981780646e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.0489185894690637418e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.891370520834756483e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.8897583469168239843e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3691164782556940899e-3;
    return s * b0 - b1 + 4.022452055070544158e-1;
}

/* i1e_small: 30 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_i1e_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.5415817725421362052e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.7779141127610463705e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.1114212143581660782e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.5536319577362004689e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.105596947735386308e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.6006842947354069341e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.0421855047279116871e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.2237933659455747098e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.9839743977649437152e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.1736186298890901631e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.6634897235020277422e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.625590281552117037e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8872497517228292879e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 9.3815373864957717839e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.4450591287963280807e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.0032947535521352623e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.5687202646954547407e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.4702513081376784767e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.3273163656039435828e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.7815651075500542264e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6176081582589674559e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.122859561685757729e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.513572450631253149e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.1564229443128881567e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.0564084894626198156e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.4726449030626516828e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.2945981208094991427e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0264365868984709538e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7641651835783405515e-1;
    return s * b0 - b1 + 1.2629359322181682741e-1;
}

/* i1e_large: 27 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_i1e_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.2421932751948909561e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.3141788673268833757e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.5172963108421048054e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.4143483230717079499e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.6503053684893583256e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.2095259219934239588e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.9626289976459501391e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3082023109209282827e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8803547755107824485e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.8144030724370078048e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0420276984128802764e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.2724400167119513543e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.101541842772664313e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.0835511110921973182e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.1985517762459085121e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.0356285441470895072e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.4125807436613781332e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.2526035830154882386e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8974958123505412345e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.5897434621965838069e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.835380385964237022e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6314688468895195068e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.5122362378702089253e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.8825648088776903935e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.1058893876262371629e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.7610974913614684078e-3;
    return s * b0 - b1 + 3.8928811750914006024e-1;
}

/* k0_small: 11 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_k0_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.570896528508373591e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.3744654358807508969e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.2598161427910825765e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0349695257633624585e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.904516377220208859e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.5347910790261494573e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.2862121031194517861e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.2646154114469259234e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.5979936515361501627e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.4428989992462848689e-1;
    return s * b0 - b1 - 2.6766369661695138436e-1;
}

/* k1_small: 11 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_k1_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.0238634793862875972e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.4274498505193659339e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.6669016941993290061e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.4114883926335277611e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.2133876307347258558e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.433406141565968235e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.730288957513052063e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.9757238596398643502e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.2261118082265714823e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.5315596077654487567e-1;
    return s * b0 - b1 + 7.6265011366947388527e-1;
}

/* k0e_large: 26 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_k0e_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7331712005821000278e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.300433771177335771e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6475805939842632815e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.2103917776435541125e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6782311257549006383e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.5120559994043333649e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8485933779209071694e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.3400764762766459661e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.2275133267462963604e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 8.0328907750683743694e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.9800969231481783548e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.1403405882073442347e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.5145978833745191751e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.855949114954926555e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.9574892444773970377e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.5773972814003284472e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6975345093890615156e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 8.5740340174142260858e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.6604898976879476656e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.7668136394450150761e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8317555227191194848e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.3949813718876499364e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.2849549581627802638e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.5698838857300533749e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.1448101311964500543e-2;
    return s * b0 - b1 + 1.2201515410329777273;
}

/* k1e_large: 26 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_k1e_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.8778651901623267401e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.7567444820733024503e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.7940510478863572914e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.6894628491936483743e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.8380935752430454256e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.0570472706430178228e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.0387031662398608799e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.0198370892147688513e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.4771544242195986813e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.9767051820101460692e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3484196660522431201e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.2891739609498229352e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.1396396734823435404e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.1299678384277910216e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 9.2183151876053141258e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.1903547593419255842e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.0150497551970346161e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.0345762465678097027e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.7410841254500492923e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.5019606030878125421e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.4064849478372171171e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.93619797416608296e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.9521551847135163111e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.8578168596227793868e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0392373657681723844e-1;
    return s * b0 - b1 + 1.3603130952422213347;
}

/* j0_small: 17 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_j0_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.2218515873961411034e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.5885081254475463376e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.1253205956343739326e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.9438346867370165706e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.8486963144794644165e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6792535305576728983e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.608163592418781867e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7619469077621507495e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.2460328821005080806e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.606261662062750475e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.8191800694676044968e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.4893769411408885163e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.5806710233209726128e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.7009499387264977903e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.6517861320333680987e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.7234423528522212908e-3;
    return s * b0 - b1 + 1.5772797147489011956e-1;
}

/* j1_small: 17 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_j1_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.6912682997929332622e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.4441972916190463893e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.4232144003513942316e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.2217552396517734285e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.1601545803480033215e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.1780266226958848398e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.6871337590971482385e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.5219847567504361821e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.9858774049915167414e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.2555548668572585168e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.0503377283548218331e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.6469406007692759578e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.221363965496603541e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.2680491766817906597e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6099926235720970255e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.4897514506765210906e-1;
    return s * b0 - b1 + 8.1044846325658115105e-2;
}

/* y0_small: 18 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_y0_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.9032584173475982707e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6977881152566835632e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6434898714919469038e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.7473412033107695544e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.0263308183061207531e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.5837552541812015122e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.2487947873305161232e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.4407233274018699479e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.2065325376548009793e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.6320791410569869751e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.5311359325777422807e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.2879624795520791794e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.7196689595763386875e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7730201278114358212e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.615673462550466368e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.7903431407718266299e-1;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.7447430552974526529e-1;
    return s * b0 - b1 - 3.3146113203284941656e-2;
}

/* y1_small: 17 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_y1_small(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.2249113720215846294e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.3466803857286701231e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.051185969447325274e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.5142915120500199545e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.4651518414115942418e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.3443379059115163947e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.1105500498992797819e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.770780455615440341e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.5380800186893499017e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.5059828733387438376e-5;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 6.4145514513263559874e-4;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.2898975441671130141e-3;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.8328123944594365554e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 8.4451972596523458368e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 9.5912045360830742472e-2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6087173047668750173e-2;
    return s * b0 - b1 + 2.5380132357417817303e-3;
}

/* p0_large: 14 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_p0_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.880866169482871202e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6305919233744184736e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.0011513723467785834e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.7480722157338737041e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.0690340959352360775e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.3265957431549405642e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.3045788699253912224e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.1682623873491924622e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.864091377237069999e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.6306464635151383095e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.170594537606097701e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.0751847875194746219e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.3652204681321174247e-4;
    return s * b0 - b1 + 9.9946034934751866537e-1;
}

/* q0_large: 17 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_q0_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.3369301722114218899e-19;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0473158973776097239e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.952892629886515942e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.486595238939051547e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.334885217150251704e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.7297031762426053902e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.8799441053120400078e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.4041800321963688986e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6690625482579415976e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.404916100281365049e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.5653979367973077957e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.3760975237349907551e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.8175327494930559835e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.4377965798375193428e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.9315987288485178116e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.4708159540893196795e-4;
    return s * b0 - b1 - 1.244468368426960728e-1;
}

/* p1_large: 14 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_p1_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 3.0492991197665872261e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.7312313216116334973e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.0667689114335412457e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.2211808422740179189e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.4526748960447171683e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 4.6842237839904892216e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 4.6991955152305423752e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 5.7048636403956447019e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 8.8168986595823388985e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.8718907491063066087e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.1776339606442985349e-8;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.9872843004889085228e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 8.9898983308594085557e-4;
    return s * b0 - b1 + 1.0009030408600136999;
}

/* q1_large: 16 Chebyshev coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_cheb_q1_large(em_sp_w s) {
    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.1012617187879590425e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.2192649196714082425e-18;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6267615898385291684e-17;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 1.4141084390211833283e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 8.2153180254585942908e-16;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 5.2066263662267071631e-15;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.6490019160618377554e-14;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.8774212663332233544e-13;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 2.6114525394623199408e-12;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 2.8121750359748864681e-11;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 3.7490909505415561844e-10;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 6.5833546621204433032e-9;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 1.6767825107266737968e-7;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 + 7.3108922063643632996e-6;
    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 - 7.7021788393256634594e-4;
    return s * b0 - b1 + 3.7422229655628260193e-1;
}

#define EM_SP_PSI_X0_HI 1.4616321449683622
#define EM_SP_PSI_X0_LO 9.549995429965697e-17
/* digamma around x0: 42 Taylor coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_digamma_root(em_sp_w t) {
    em_sp_w p = -8.1651151894884088408e-8;
    p = p * t + 1.1934394829830242779e-7;
    p = p * t - 1.7443695117727745218e-7;
    p = p * t + 2.5496265520215542567e-7;
    p = p * t - 3.7266161283438229589e-7;
    p = p * t + 5.4469419306694452785e-7;
    p = p * t - 7.9614254312419704004e-7;
    p = p * t + 1.1636675363548842703e-6;
    p = p * t - 1.7008538854332606582e-6;
    p = p * t + 2.4860227331295379489e-6;
    p = p * t - 3.6336507898010456684e-6;
    p = p * t + 5.3110609208898633873e-6;
    p = p * t - 7.7628176684620944253e-6;
    p = p * t + 1.1346384584663849807e-5;
    p = p * t - 1.6584242271854133375e-5;
    p = p * t + 2.4240066118601317653e-5;
    p = p * t - 3.5430070947659606316e-5;
    p = p * t + 5.178575795222080869e-5;
    p = p * t - 7.5691795821950659192e-5;
    p = p * t + 1.1063372768747410904e-4;
    p = p * t - 1.6170622091974803449e-4;
    p = p * t + 2.3635601564027052792e-4;
    p = p * t - 3.4546802510630769956e-4;
    p = p * t + 5.0495326583460203518e-4;
    p = p * t - 7.3807093899600512957e-4;
    p = p * t + 1.0788252019162965807e-3;
    p = p * t - 1.5769367714301972593e-3;
    p = p * t + 2.3051263267349278369e-3;
    p = p * t - 3.3698016554393280828e-3;
    p = p * t + 4.9267813957298534464e-3;
    p = p * t - 7.204534386356868241e-3;
    p = p * t + 1.0538791616612175388e-2;
    p = p * t - 1.5424765904948959139e-2;
    p = p * t + 2.259764823221810466e-2;
    p = p * t - 3.3161126474847359292e-2;
    p = p * t + 4.8804288164143107225e-2;
    p = p * t - 7.2199561256454710926e-2;
    p = p * t + 1.0782405069126236576e-1;
    p = p * t - 1.639427054424065275e-1;
    p = p * t + 2.5849976095565101062e-1;
    p = p * t - 4.4276316898359210609e-1;
    p = p * t + 9.6767224544762117043e-1;
    return p * t;
}
/* lgamma(1 + x) for |x| <= 1/4: 30 Taylor coefficients (tools/special_coefficients.py) */
EM_INLINE em_sp_w em_sp_lgamma1p_small(em_sp_w x) {
    em_sp_w p = 3.3333333364377581081e-2;
    p = p * x - 3.4482758684919300811e-2;
    p = p * x + 3.5714285847333358028e-2;
    p = p * x - 3.7037037312989325549e-2;
    p = p * x + 3.8461539034675185706e-2;
    p = p * x - 4.0000001192140140586e-2;
    p = p * x + 4.1666669150341210469e-2;
    p = p * x - 4.3478266053040259361e-2;
    p = p * x + 4.5454556293204669442e-2;
    p = p * x - 4.7619070330142227991e-2;
    p = p * x + 5.000004769810169364e-2;
    p = p * x - 5.2631679379616660734e-2;
    p = p * x + 5.5555767627403611102e-2;
    p = p * x - 5.8823978658684582339e-2;
    p = p * x + 6.2500955141213040742e-2;
    p = p * x - 6.6668705882420468033e-2;
    p = p * x + 7.1432946295361336059e-2;
    p = p * x - 7.6932516411352191473e-2;
    p = p * x + 8.3353840546109004025e-2;
    p = p * x - 9.0954017145829042233e-2;
    p = p * x + 1.0009945751278180853e-1;
    p = p * x - 1.1133426586956469049e-1;
    p = p * x + 1.2550966952474304242e-1;
    p = p * x - 1.4404989676884611812e-1;
    p = p * x + 1.6955717699740818995e-1;
    p = p * x - 2.0738555102867398527e-1;
    p = p * x + 2.7058080842778454788e-1;
    p = p * x - 4.0068563438653142847e-1;
    p = p * x + 8.2246703342411321824e-1;
    p = p * x - 5.7721566490153286061e-1;
    return p * x;
}
/* ---------------------------------------------------------------- GENERATED end */

/* digamma. x < 0: the reflection psi(x) = psi(1 - x) - pi / tan(pi x), with pi x
 * reduced exactly (x - rint(x)); near the positive root x0 a Taylor series in
 * x - x0 (x0 as hi + lo, so the result keeps its relative precision at the root),
 * reached from (0, 10) by the recurrence; from 10 on the asymptotic series with the
 * Bernoulli numbers B2..B14. */
EM_INLINE em_sp_w em_sp_digamma_pos(em_sp_w x) {     /* x > 0 */
    em_sp_w acc = 0;
    if (x < 10) {
        /* into [0.96, 1.96), where the Taylor series holds: up by one step (psi(x) =
         * psi(x + 1) - 1/x) or down by up to 9 (psi(x) = psi(x - 1) + 1/(x - 1), terms of
         * one sign and x - 1 exact, so nothing cancels) */
        if (x < (em_sp_w)0.96) { acc = -1 / x; x = x + 1; }
        for (int k = 0; k < 9 && x >= (em_sp_w)1.96; k++) { x -= 1; acc += 1 / x; }
        return em_sp_digamma_root((x - (em_sp_w)EM_SP_PSI_X0_HI) - (em_sp_w)EM_SP_PSI_X0_LO) + acc;
    }
    em_sp_w z = 1 / (x * x);
    em_sp_w s = z * ((em_sp_w)(1.0 / 12) - z * ((em_sp_w)(1.0 / 120) - z * ((em_sp_w)(1.0 / 252)
                - z * ((em_sp_w)(1.0 / 240) - z * ((em_sp_w)(1.0 / 132) - z * ((em_sp_w)(691.0 / 32760)
                - z * (em_sp_w)(1.0 / 12)))))));
    return acc + (log(x) - (em_sp_w)0.5 / x - s);
}

EM_INLINE em_sp_w em_sp_digamma_w(em_sp_w x) {
    if (x != x || x == INFINITY) return x;
    if (x == 0) return x < 0 || 1 / x < 0 ? INFINITY : -INFINITY;  /* -0: +inf */
    if (x < 0) {
        if (x == floor(x)) return NAN;                   /* poles; -inf too */
        em_sp_w r = x - rint(x);
        return em_sp_digamma_pos(1 - x) - (em_sp_w)EM_SP_PI / tan((em_sp_w)EM_SP_PI * r);
    }
    return em_sp_digamma_pos(x);
}

/* Hurwitz zeta(x, q) = sum_k (q + k)^-x (Cephes' method): the first terms summed,
 * the rest by Euler-Maclaurin with 12 Bernoulli terms (the constants are (2j)! /
 * B_2j), and for q > 1e8 the first three terms of Euler-Maclaurin. q <= 0: inf at
 * integers, NaN unless x is an integer; q below -1000 (where the direct sum would need
 * over 1000 terms) gives NaN. */
EM_INLINE em_sp_w em_sp_zeta_w(em_sp_w x, em_sp_w q) {
    if (x == 1) return INFINITY;
    if (x < 1) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (x != floor(x) || q < -1000) return NAN;
    }
    if (x != x || q != q) return x + q;
    if (q > (em_sp_w)1e8)       /* Euler-Maclaurin's first three terms are exact enough */
        return x == INFINITY ? 0 : (1 / (x - 1) + 1 / (2 * q) + x / (12 * q) / q) * pow(q, 1 - x);
    em_sp_w s = pow(q, -x), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9) {
        i++;
        a += 1;
        b = pow(a, -x);
        s += b;
        if (fabs(b / s) < EM_SP_EPS) return s;
        if (i > 1100) return NAN;
    }
    em_sp_w w = a;
    s += b * w / (x - 1);
    s -= (em_sp_w)0.5 * b;
    em_sp_w f = 1, k = 0, t;
#define EM_SP_ZETA_TERM(A)                                                         \
    f *= x + k; b /= w; t = f * b / (em_sp_w)(A); s += t;                           \
    if (fabs(t / s) < EM_SP_EPS) return s;                                          \
    k += 1; f *= x + k; b /= w; k += 1;
    EM_SP_ZETA_TERM(12.0)
    EM_SP_ZETA_TERM(-720.0)
    EM_SP_ZETA_TERM(30240.0)
    EM_SP_ZETA_TERM(-1209600.0)
    EM_SP_ZETA_TERM(47900160.0)
    EM_SP_ZETA_TERM(-1.8924375803183791606e9)
    EM_SP_ZETA_TERM(7.47242496e10)
    EM_SP_ZETA_TERM(-2.950130727918164224e12)
    EM_SP_ZETA_TERM(1.1646782814350067249e14)
    EM_SP_ZETA_TERM(-4.5979787224074726105e15)
    EM_SP_ZETA_TERM(1.8152105401943546773e17)
    EM_SP_ZETA_TERM(-7.1661652561756670113e18)
#undef EM_SP_ZETA_TERM
    return s;
}

/* polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, digamma for n = 0 (n is
 * a non-negative integer; NaN otherwise). */
EM_INLINE em_sp_w em_sp_polygamma_w(em_sp_w x, em_sp_w n) {
    if (!(n >= 0 && n == floor(n))) return NAN;
    if (n == 0) return em_sp_digamma_w(x);
    em_sp_w f = n > 171 ? INFINITY : 1;
    for (int k = 2; n <= 171 && k <= (int)n; k++) f *= k;
    em_sp_w z = em_sp_zeta_w(n + 1, x);
    em_sp_w h = (n + 1) * (em_sp_w)0.5;            /* (-1)^(n+1) */
    return (floor(h) == h ? f : -f) * z;
}

/* erfcx(x) = exp(x^2) erfc(x): x^2 as p + e exactly (fma), so exp(x^2) = exp(p) (1 +
 * e) carries no rounding of the square; beyond EM_SP_ERFCX_BIG (where erfc would
 * underflow) the asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k. */
EM_INLINE em_sp_w em_sp_erfcx_w(em_sp_w x) {
    if (x != x) return x;
    if (x < (em_sp_w)-26.7) return INFINITY;           /* 2 exp(x^2) overflows */
    if (x < EM_SP_ERFCX_BIG) {
        em_sp_w p = x * x, e = fma(x, x, -p);
        return exp(p) * (1 + e) * erfc(x);
    }
    em_sp_w z = (em_sp_w)0.5 / (x * x);
    em_sp_w s = 1 - z * (1 - z * (3 - z * (15 - z * (105 - z * (945 - z * (10395 - z * (135135
                - z * (em_sp_w)2027025)))))));
    return s / x / (em_sp_w)EM_SP_SQRTPI;
}

/* Giles' single-precision erfinv(x) / x in w = -log((1 - x)(1 + x)) (2010). */
EM_INLINE em_sp_w em_sp_giles(em_sp_w w) {
    em_sp_w p;
    if (w < 5) {
        w -= (em_sp_w)2.5;
        p = (em_sp_w)2.81022636e-08;
        p = p * w + (em_sp_w)3.43273939e-07;
        p = p * w - (em_sp_w)3.5233877e-06;
        p = p * w - (em_sp_w)4.39150654e-06;
        p = p * w + (em_sp_w)0.00021858087;
        p = p * w - (em_sp_w)0.00125372503;
        p = p * w - (em_sp_w)0.00417768164;
        p = p * w + (em_sp_w)0.246640727;
        return p * w + (em_sp_w)1.50140941;
    }
    w = sqrt(w) - 3;
    p = -(em_sp_w)0.000200214257;
    p = p * w + (em_sp_w)0.000100950558;
    p = p * w + (em_sp_w)0.00134934322;
    p = p * w - (em_sp_w)0.00367342844;
    p = p * w + (em_sp_w)0.00573950773;
    p = p * w - (em_sp_w)0.0076224613;
    p = p * w + (em_sp_w)0.00943887047;
    p = p * w + (em_sp_w)1.00167406;
    return p * w + (em_sp_w)2.83297682;
}

/* erfcinv(c) for c in (0, 1]: y with erfc(y) = c. Start: Giles (or, below c = 1e-7,
 * the asymptotic y^2 = -log(c) - log(y sqrt(pi))); then Newton steps on log erfc(y) =
 * log(erfcx(y)) - y^2, which is nearly a parabola, so the steps converge from far. */
EM_INLINE em_sp_w em_sp_erfcinv_w(em_sp_w c) {
    em_sp_w lc = log(c), w = -log(c * (2 - c)), y;
    if (w < 16) {
        y = (1 - c) * em_sp_giles(w);
    } else {
        y = sqrt(-lc);
        y = sqrt(-lc - log(y * (em_sp_w)EM_SP_SQRTPI));
    }
    for (int k = 0; k < 4; k++) {
        em_sp_w ex = em_sp_erfcx_w(y);
        em_sp_w h = log(ex) - y * y - lc;
        y += h * (em_sp_w)(EM_SP_SQRTPI / 2) * ex;      /* y -= h / (d/dy log erfc) */
    }
    return y;
}

/* erfinv: |x| < 1/2 Giles then Newton steps on erf; beyond, erfcinv(1 - |x|) with 1 -
 * |x| exact. */
EM_INLINE em_sp_w em_sp_erfinv_w(em_sp_w x) {
    em_sp_w ax = fabs(x);
    if (!(ax <= 1)) return NAN;
    if (ax == 1) return copysign((em_sp_w)INFINITY, x);
    if (ax >= (em_sp_w)0.5) return copysign(em_sp_erfcinv_w(1 - ax), x);
    em_sp_w y = x * em_sp_giles(-log((1 - x) * (1 + x)));
    for (int k = 0; k < 2; k++)
        y -= (erf(y) - x) * (em_sp_w)(EM_SP_SQRTPI / 2) * exp(y * y);
    return y;
}

/* ndtr(x) = erfc(-x / sqrt 2) / 2, with x / sqrt 2 = z + dz to twice the precision;
 * in the lower tail dz corrects erfc to first order (its relative derivative there is
 * 2 / (sqrt(pi) erfcx)), so the tail keeps full relative precision. */
EM_INLINE em_sp_w em_sp_ndtr_w(em_sp_w x) {
    em_sp_w z = x * (em_sp_w)EM_SP_SQRT1_2_HI;
    em_sp_w r = (em_sp_w)0.5 * erfc(-z);
    if (x < 0 && r > 0) {
        em_sp_w dz = fma(x, (em_sp_w)EM_SP_SQRT1_2_HI, -z) + x * (em_sp_w)EM_SP_SQRT1_2_LO;
        r += r * dz * 2 / ((em_sp_w)EM_SP_SQRTPI * em_sp_erfcx_w(-z));
    }
    return r;
}

/* log_ndtr: below -1 log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 (no underflow), else
 * log1p(-ndtr(-x)) with the tail-accurate ndtr. */
EM_INLINE em_sp_w em_sp_log_ndtr_w(em_sp_w x) {
    if (x < -1) return log(em_sp_erfcx_w(-x * (em_sp_w)EM_SP_SQRT1_2_HI) * (em_sp_w)0.5)
                       - x * x * (em_sp_w)0.5;
    return log1p(-em_sp_ndtr_w(-x));
}

/* ndtri(p) = sqrt 2 erfinv(2p - 1) for p in (1/4, 3/4) (2p - 1 exact), else -+sqrt 2
 * erfcinv(2 min(p, 1 - p)) (1 - p exact). */
EM_INLINE em_sp_w em_sp_ndtri_w(em_sp_w p) {
    if (!(p >= 0 && p <= 1)) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    if (p > (em_sp_w)0.25 && p < (em_sp_w)0.75) return (em_sp_w)EM_SP_SQRT2 * em_sp_erfinv_w(2 * p - 1);
    em_sp_w y = (em_sp_w)EM_SP_SQRT2 * em_sp_erfcinv_w(2 * (p < (em_sp_w)0.5 ? p : 1 - p));
    return p < (em_sp_w)0.5 ? -y : y;
}

/* Modified Bessel functions of the first kind: Chebyshev fits of exp(-x) I(x) (/ x for
 * I1) on [0, 8] and of sqrt(x) exp(-x) I(x) beyond; I = the scaled one times exp(|x|),
 * applied as two halves so that I is finite as long as it is representable. */
EM_INLINE em_sp_w em_sp_i0e_w(em_sp_w x) {
    em_sp_w ax = fabs(x);
    return ax <= 8 ? em_sp_cheb_i0e_small(ax * (em_sp_w)0.25 - 1)
                   : em_sp_cheb_i0e_large(16 / ax - 1) / sqrt(ax);
}
EM_INLINE em_sp_w em_sp_i1e_w(em_sp_w x) {
    em_sp_w ax = fabs(x);
    return ax <= 8 ? x * em_sp_cheb_i1e_small(ax * (em_sp_w)0.25 - 1)
                   : copysign(em_sp_cheb_i1e_large(16 / ax - 1) / sqrt(ax), x);
}
EM_INLINE em_sp_w em_sp_i0_w(em_sp_w x) {
    em_sp_w h = exp(fabs(x) * (em_sp_w)0.5);
    return em_sp_i0e_w(x) * h * h;
}
EM_INLINE em_sp_w em_sp_i1_w(em_sp_w x) {
    em_sp_w h = exp(fabs(x) * (em_sp_w)0.5);
    return em_sp_i1e_w(x) * h * h;
}

/* Modified Bessel functions of the second kind (x >= 0): on [0, 2] K0 = R0(x^2) -
 * log(x/2) I0, K1 = log(x/2) I1 + R1(x^2) / x; beyond, fits of sqrt(x) exp(x) K(x). */
EM_INLINE em_sp_w em_sp_k0e_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? INFINITY : NAN;
    if (x <= 2) return exp(x) * (em_sp_cheb_k0_small(x * x * (em_sp_w)0.5 - 1)
                                 - log(x * (em_sp_w)0.5) * em_sp_i0_w(x));
    return em_sp_cheb_k0e_large(4 / x - 1) / sqrt(x);
}
EM_INLINE em_sp_w em_sp_k1e_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? INFINITY : NAN;
    if (x <= 2) return exp(x) * (log(x * (em_sp_w)0.5) * em_sp_i1_w(x)
                                 + em_sp_cheb_k1_small(x * x * (em_sp_w)0.5 - 1) / x);
    return em_sp_cheb_k1e_large(4 / x - 1) / sqrt(x);
}
EM_INLINE em_sp_w em_sp_k0_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? INFINITY : NAN;
    if (x <= 2) return em_sp_cheb_k0_small(x * x * (em_sp_w)0.5 - 1) - log(x * (em_sp_w)0.5) * em_sp_i0_w(x);
    em_sp_w h = exp(-x * (em_sp_w)0.5);
    return em_sp_cheb_k0e_large(4 / x - 1) / sqrt(x) * h * h;
}
EM_INLINE em_sp_w em_sp_k1_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? INFINITY : NAN;
    if (x <= 2) return log(x * (em_sp_w)0.5) * em_sp_i1_w(x) + em_sp_cheb_k1_small(x * x * (em_sp_w)0.5 - 1) / x;
    em_sp_w h = exp(-x * (em_sp_w)0.5);
    return em_sp_cheb_k1e_large(4 / x - 1) / sqrt(x) * h * h;
}

/* Bessel functions J0 J1 Y0 Y1: on [0, 8] fits in x^2 of J0, J1 / x and of Y less its
 * logarithmic part; beyond, Hankel's form sqrt(2 / (pi x)) (P cos chi -+ Q sin chi)
 * with fits of P and x Q in 128 / x^2 - 1, and cos chi, sin chi from the library's
 * cos x and sin x (exactly reduced), so large x keeps its absolute accuracy; NaN at
 * +-inf, as PyTorch and SciPy. */
EM_INLINE em_sp_w em_sp_j0_w(em_sp_w x) {
    em_sp_w ax = fabs(x);
    if (ax <= 8) return em_sp_cheb_j0_small(ax * ax * (em_sp_w)(1.0 / 32) - 1);
    if (ax == INFINITY) return NAN;                      /* as PyTorch and SciPy */
    em_sp_w s = 128 / (ax * ax) - 1, p = em_sp_cheb_p0_large(s), q = em_sp_cheb_q0_large(s) / ax;
    em_sp_w c = cos(ax), sn = sin(ax);
    return (p * (c + sn) - q * (sn - c)) / sqrt((em_sp_w)EM_SP_PI * ax);
}
EM_INLINE em_sp_w em_sp_j1_w(em_sp_w x) {
    em_sp_w ax = fabs(x);
    if (ax <= 8) return x * em_sp_cheb_j1_small(ax * ax * (em_sp_w)(1.0 / 32) - 1);
    if (ax == INFINITY) return NAN;
    em_sp_w s = 128 / (ax * ax) - 1, p = em_sp_cheb_p1_large(s), q = em_sp_cheb_q1_large(s) / ax;
    em_sp_w c = cos(ax), sn = sin(ax);
    em_sp_w r = (p * (sn - c) + q * (sn + c)) / sqrt((em_sp_w)EM_SP_PI * ax);
    return x < 0 ? -r : r;
}
EM_INLINE em_sp_w em_sp_y0_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? -INFINITY : NAN;
    if (x <= 8) return em_sp_cheb_y0_small(x * x * (em_sp_w)(1.0 / 32) - 1)
                       + (em_sp_w)EM_SP_2_PI * log(x) * em_sp_j0_w(x);
    if (x == INFINITY) return NAN;
    em_sp_w s = 128 / (x * x) - 1, p = em_sp_cheb_p0_large(s), q = em_sp_cheb_q0_large(s) / x;
    em_sp_w c = cos(x), sn = sin(x);
    return (p * (sn - c) + q * (c + sn)) / sqrt((em_sp_w)EM_SP_PI * x);
}
EM_INLINE em_sp_w em_sp_y1_w(em_sp_w x) {
    if (!(x > 0)) return x == 0 ? -INFINITY : NAN;
    if (x <= 8) return x * em_sp_cheb_y1_small(x * x * (em_sp_w)(1.0 / 32) - 1)
                       + (em_sp_w)EM_SP_2_PI * (log(x) * em_sp_j1_w(x) - 1 / x);
    if (x == INFINITY) return NAN;
    em_sp_w s = 128 / (x * x) - 1, p = em_sp_cheb_p1_large(s), q = em_sp_cheb_q1_large(s) / x;
    em_sp_w c = cos(x), sn = sin(x);
    return (q * (sn - c) - p * (sn + c)) / sqrt((em_sp_w)EM_SP_PI * x);
}

/* spherical j0 = sin(x) / x, its Taylor series below |x| = 1/2. */
EM_INLINE em_sp_w em_sp_sph_j0_w(em_sp_w x) {
    if (fabs(x) == INFINITY) return 0;
    em_sp_w z = x * x;
    if (fabs(x) < (em_sp_w)0.5)
        return 1 - z * ((em_sp_w)(1.0 / 6) - z * ((em_sp_w)(1.0 / 120) - z * ((em_sp_w)(1.0 / 5040)
               - z * ((em_sp_w)(1.0 / 362880) - z * ((em_sp_w)(1.0 / 39916800)
               - z * (em_sp_w)(1.0 / 6227020800.0))))));
    return sin(x) / x;
}

/* The regularised incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P
 * (igammac), Cephes' method: P's power series for x < a + 1 or x < 1, else Q's
 * continued fraction (Lentz-free form with rescaling), the other as 1 minus it, and for
 * x <= 1.1 and small a SciPy's series of Q itself (1 - P would cancel). The
 * prefactor x^a e^-x / Gamma(a) is exp(a log x - x - lgamma(a)), whose rounding grows
 * with |a log x| (the docstrings bound it). */
EM_INLINE em_sp_w em_sp_igam_prefix(em_sp_w a, em_sp_w x) {
    em_sp_w ax = a * log(x) - x - lgamma(a);
    return ax < -EM_SP_LOG_MAX ? 0 : exp(ax);
}
EM_INLINE em_sp_w em_sp_igam_series(em_sp_w a, em_sp_w x) {
    em_sp_w pre = em_sp_igam_prefix(a, x);
    if (pre == 0) return 0;
    em_sp_w r = a, c = 1, s = 1;
    for (int k = 0; k < 10000; k++) {
        r += 1;
        c *= x / r;
        s += c;
        if (c <= s * EM_SP_EPS) break;
    }
    return s * pre / a;
}
EM_INLINE em_sp_w em_sp_igamc_cf(em_sp_w a, em_sp_w x) {
    em_sp_w pre = em_sp_igam_prefix(a, x);
    if (pre == 0) return 0;
    const em_sp_w big = (em_sp_w)4.503599627370496e15, biginv = (em_sp_w)2.22044604925031308085e-16;
    em_sp_w y = 1 - a, z = x + y + 1, c = 0;
    em_sp_w pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x, ans = pkm1 / qkm1, t;
    for (int k = 0; k < 10000; k++) {
        c += 1; y += 1; z += 2;
        em_sp_w yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
        if (qk != 0) { em_sp_w r = pk / qk; t = fabs((ans - r) / r); ans = r; }
        else t = 1;
        pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
        if (fabs(pk) > big) { pkm2 *= biginv; pkm1 *= biginv; qkm2 *= biginv; qkm1 *= biginv; }
        if (t <= EM_SP_EPS) break;
    }
    return ans * pre;
}
/* lgamma(1 + a), accurate for small a too (where 1 + a would round away a's digits). */
EM_INLINE em_sp_w em_sp_lgamma1p(em_sp_w a) {
    if (fabs(a) <= (em_sp_w)0.25) return em_sp_lgamma1p_small(a);
    return lgamma(1 + a);
}
/* Q(a, x) for x <= 1.1 and small a, where 1 - P would cancel: Q = -expm1(a log x -
 * lgamma(1 + a)) - x^a / Gamma(a) sum_n>=1 (-x)^n / (n! (a + n)) (SciPy's igamc_series). */
EM_INLINE em_sp_w em_sp_igamc_series(em_sp_w a, em_sp_w x) {
    em_sp_w fac = 1, sum = 0, term;
    for (int n = 1; n < 2000; n++) {
        fac *= -x / n;
        term = fac / (a + n);
        sum += term;
        if (fabs(term) <= EM_SP_EPS * fabs(sum)) break;
    }
    em_sp_w lx = log(x);
    return -expm1(a * lx - em_sp_lgamma1p(a)) - exp(a * lx - lgamma(a)) * sum;
}
/* Which of the two gives Q for x <= 1.1: the Q series where P is close to 1. */
EM_INLINE int em_sp_igamc_use_series(em_sp_w a, em_sp_w x) {
    return x <= (em_sp_w)0.5 ? -(em_sp_w)0.4 / log(x) >= a : x * (em_sp_w)1.1 >= a;
}

/* Q(a, x) for a > 1e7 near x = a, where the series would need too many terms: the
 * first two terms of Temme's uniform expansion, Q = erfc(eta sqrt(a/2)) / 2 + exp(-a
 * eta^2 / 2) / sqrt(2 pi a) (C0(eta) + C1(eta) / a), eta^2 / 2 = lambda - 1 - log lambda,
 * lambda = x / a (relative error about a^-2). `lower` gives P instead. */
EM_INLINE em_sp_w em_sp_igam_temme(em_sp_w a, em_sp_w x, int lower) {
    em_sp_w t = (x - a) / a, tl;        /* tl = t - log1p(t) */
    if (fabs(t) < (em_sp_w)0.1) {
        em_sp_w p = 0;
        for (int k = 12; k >= 2; k--) p = p * t + ((k & 1) ? (em_sp_w)-1 : (em_sp_w)1) / k;
        tl = p * t * t;
    } else {
        tl = t - log1p(t);
    }
    em_sp_w eta = sqrt(2 * tl);
    eta = t < 0 ? -eta : eta;
    em_sp_w c0, c1;
    if (fabs(eta) < (em_sp_w)0.1) {
        c0 = -(em_sp_w)(1.0 / 3) + eta * ((em_sp_w)(1.0 / 12) + eta * (-(em_sp_w)(2.0 / 135)
             + eta * ((em_sp_w)(1.0 / 864) + eta * (em_sp_w)(1.0 / 2835))));
        c1 = -(em_sp_w)(1.0 / 540) - eta * (em_sp_w)(1.0 / 288);
    } else {
        c0 = 1 / t - 1 / eta;
        c1 = 1 / (eta * eta * eta) - 1 / (t * t * t) - 1 / (t * t) - 1 / (12 * t);
    }
    em_sp_w r = exp(-a * tl) / sqrt(2 * (em_sp_w)EM_SP_PI * a) * (c0 + c1 / a);
    em_sp_w u = eta * sqrt(a * (em_sp_w)0.5);
    return lower ? (em_sp_w)0.5 * erfc(-u) - r : (em_sp_w)0.5 * erfc(u) + r;
}

EM_INLINE em_sp_w em_sp_igamma_w(em_sp_w a, em_sp_w x) {
    if (a != a || x != x || a < 0 || x < 0) return NAN;
    if (a == 0) return x > 0 ? 1 : NAN;
    if (x == 0) return 0;
    if (a == INFINITY) return x == INFINITY ? NAN : 0;
    if (x == INFINITY) return 1;
    if (a > (em_sp_w)1e7 && fabs(x - a) < (em_sp_w)0.5 * a) return em_sp_igam_temme(a, x, 1);
    if (x > 1 && x > a) return 1 - em_sp_igamc_cf(a, x);
    return em_sp_igam_series(a, x);
}
EM_INLINE em_sp_w em_sp_igammac_w(em_sp_w a, em_sp_w x) {
    if (a != a || x != x || a < 0 || x < 0) return NAN;
    if (a == 0) return x > 0 ? 0 : NAN;
    if (x == 0) return 1;
    if (a == INFINITY) return x == INFINITY ? NAN : 1;
    if (x == INFINITY) return 0;
    if (a > (em_sp_w)1e7 && fabs(x - a) < (em_sp_w)0.5 * a) return em_sp_igam_temme(a, x, 0);
    if (x <= (em_sp_w)1.1)
        return em_sp_igamc_use_series(a, x) ? em_sp_igamc_series(a, x) : 1 - em_sp_igam_series(a, x);
    if (x < a) return 1 - em_sp_igam_series(a, x);
    return em_sp_igamc_cf(a, x);
}

/* sinc(x) = sin(pi x) / (pi x) with pi x reduced exactly: sin(pi x) = (-1)^k sin(pi (x -
 * k)), k = rint(x); logit(x) = log(x / (1 - x)), as 2 atanh(2x - 1) on [1/4, 3/4] where
 * the quotient would round near 1. */
EM_INLINE em_sp_w em_sp_sinc_w(em_sp_w x) {
    if (x == 0) return 1;
    if (fabs(x) == INFINITY) return NAN;                 /* as PyTorch and NumPy */
    em_sp_w k = rint(x), s = sin((em_sp_w)EM_SP_PI * (x - k));
    s = floor(k * (em_sp_w)0.5) == k * (em_sp_w)0.5 ? s : -s;
    return s / ((em_sp_w)EM_SP_PI * x);
}
EM_INLINE em_sp_w em_sp_logit_w(em_sp_w x) {
    if (x >= (em_sp_w)0.25 && x <= (em_sp_w)0.75) return 2 * atanh(2 * x - 1);
    return log(x / (1 - x));
}

/* entr(x) = -x log x (0 at 0, -inf below), xlog1py(x, y) = x log1p(y) (0 at x = 0
 * unless y is NaN), lgamma in the wide type. */
EM_INLINE em_sp_w em_sp_entr_w(em_sp_w x) {
    if (x != x) return x;
    if (x > 0) return -x * log(x);
    return x == 0 ? 0 : -INFINITY;
}
EM_INLINE em_sp_w em_sp_xlog1py_w(em_sp_w x, em_sp_w y) {
    return (x == 0 && y == y) ? 0 : x * log1p(y);
}
EM_INLINE em_sp_w em_sp_lgamma_w(em_sp_w x) { return lgamma(x); }

/* The op table's per-dtype names: float64 is the wide function, float32 / float16
 * compute in em_sp_w and round once. */
#define EM_SP_UNARY(name)                                                           \
    EM_INLINE float em_##name##_float32(float x) { return (float)em_sp_##name##_w((em_sp_w)x); }
#define EM_SP_BINARY(name)                                                          \
    EM_INLINE float em_##name##_float32(float x, float y) {                         \
        return (float)em_sp_##name##_w((em_sp_w)x, (em_sp_w)y);                     \
    }
EM_SP_UNARY(lgamma)
EM_SP_UNARY(digamma)
EM_SP_UNARY(erfcx)
EM_SP_UNARY(erfinv)
EM_SP_UNARY(ndtr)
EM_SP_UNARY(ndtri)
EM_SP_UNARY(log_ndtr)
EM_SP_UNARY(i0)
EM_SP_UNARY(i0e)
EM_SP_UNARY(i1)
EM_SP_UNARY(i1e)
EM_SP_UNARY(k0)
EM_SP_UNARY(k0e)
EM_SP_UNARY(k1)
EM_SP_UNARY(k1e)
EM_SP_UNARY(j0)
EM_SP_UNARY(j1)
EM_SP_UNARY(y0)
EM_SP_UNARY(y1)
EM_SP_UNARY(sph_j0)
EM_SP_UNARY(entr)
EM_SP_UNARY(sinc)
EM_SP_UNARY(logit)
EM_SP_BINARY(polygamma)
EM_SP_BINARY(zeta)
EM_SP_BINARY(igamma)
EM_SP_BINARY(igammac)
EM_SP_BINARY(xlog1py)
#undef EM_SP_UNARY
#undef EM_SP_BINARY
#define em_lgamma_float16 em_lgamma_float32
#define em_digamma_float16 em_digamma_float32
#define em_erfcx_float16 em_erfcx_float32
#define em_erfinv_float16 em_erfinv_float32
#define em_ndtr_float16 em_ndtr_float32
#define em_ndtri_float16 em_ndtri_float32
#define em_log_ndtr_float16 em_log_ndtr_float32
#define em_i0_float16 em_i0_float32
#define em_i0e_float16 em_i0e_float32
#define em_i1_float16 em_i1_float32
#define em_i1e_float16 em_i1e_float32
#define em_k0_float16 em_k0_float32
#define em_k0e_float16 em_k0e_float32
#define em_k1_float16 em_k1_float32
#define em_k1e_float16 em_k1e_float32
#define em_j0_float16 em_j0_float32
#define em_j1_float16 em_j1_float32
#define em_y0_float16 em_y0_float32
#define em_y1_float16 em_y1_float32
#define em_sph_j0_float16 em_sph_j0_float32
#define em_entr_float16 em_entr_float32
#define em_sinc_float16 em_sinc_float32
#define em_logit_float16 em_logit_float32
#define em_polygamma_float16 em_polygamma_float32
#define em_zeta_float16 em_zeta_float32
#define em_igamma_float16 em_igamma_float32
#define em_igammac_float16 em_igammac_float32
#define em_xlog1py_float16 em_xlog1py_float32
#define em_lgamma_bfloat16 em_lgamma_float32
#define em_digamma_bfloat16 em_digamma_float32
#define em_erfcx_bfloat16 em_erfcx_float32
#define em_erfinv_bfloat16 em_erfinv_float32
#define em_ndtr_bfloat16 em_ndtr_float32
#define em_ndtri_bfloat16 em_ndtri_float32
#define em_log_ndtr_bfloat16 em_log_ndtr_float32
#define em_i0_bfloat16 em_i0_float32
#define em_i0e_bfloat16 em_i0e_float32
#define em_i1_bfloat16 em_i1_float32
#define em_i1e_bfloat16 em_i1e_float32
#define em_k0_bfloat16 em_k0_float32
#define em_k0e_bfloat16 em_k0e_float32
#define em_k1_bfloat16 em_k1_float32
#define em_k1e_bfloat16 em_k1e_float32
#define em_j0_bfloat16 em_j0_float32
#define em_j1_bfloat16 em_j1_float32
#define em_y0_bfloat16 em_y0_float32
#define em_y1_bfloat16 em_y1_float32
#define em_sph_j0_bfloat16 em_sph_j0_float32
#define em_entr_bfloat16 em_entr_float32
#define em_sinc_bfloat16 em_sinc_float32
#define em_logit_bfloat16 em_logit_float32
#define em_polygamma_bfloat16 em_polygamma_float32
#define em_zeta_bfloat16 em_zeta_float32
#define em_igamma_bfloat16 em_igamma_float32
#define em_igammac_bfloat16 em_igammac_float32
#define em_xlog1py_bfloat16 em_xlog1py_float32
#define em_cheb_t_float16 em_cheb_t_float32
#define em_cheb_u_float16 em_cheb_u_float32
#define em_cheb_v_float16 em_cheb_v_float32
#define em_cheb_w_float16 em_cheb_w_float32
#define em_scheb_t_float16 em_scheb_t_float32
#define em_scheb_u_float16 em_scheb_u_float32
#define em_scheb_v_float16 em_scheb_v_float32
#define em_scheb_w_float16 em_scheb_w_float32
#define em_hermite_h_float16 em_hermite_h_float32
#define em_hermite_he_float16 em_hermite_he_float32
#define em_laguerre_l_float16 em_laguerre_l_float32
#define em_legendre_p_float16 em_legendre_p_float32
#define em_cheb_t_bfloat16 em_cheb_t_float32
#define em_cheb_u_bfloat16 em_cheb_u_float32
#define em_cheb_v_bfloat16 em_cheb_v_float32
#define em_cheb_w_bfloat16 em_cheb_w_float32
#define em_scheb_t_bfloat16 em_scheb_t_float32
#define em_scheb_u_bfloat16 em_scheb_u_float32
#define em_scheb_v_bfloat16 em_scheb_v_float32
#define em_scheb_w_bfloat16 em_scheb_w_float32
#define em_hermite_h_bfloat16 em_hermite_h_float32
#define em_hermite_he_bfloat16 em_hermite_he_float32
#define em_laguerre_l_bfloat16 em_laguerre_l_float32
#define em_legendre_p_bfloat16 em_legendre_p_float32
#define em_lgamma_float64 em_sp_lgamma_w
#define em_digamma_float64 em_sp_digamma_w
#define em_erfcx_float64 em_sp_erfcx_w
#define em_erfinv_float64 em_sp_erfinv_w
#define em_ndtr_float64 em_sp_ndtr_w
#define em_ndtri_float64 em_sp_ndtri_w
#define em_log_ndtr_float64 em_sp_log_ndtr_w
#define em_i0_float64 em_sp_i0_w
#define em_i0e_float64 em_sp_i0e_w
#define em_i1_float64 em_sp_i1_w
#define em_i1e_float64 em_sp_i1e_w
#define em_k0_float64 em_sp_k0_w
#define em_k0e_float64 em_sp_k0e_w
#define em_k1_float64 em_sp_k1_w
#define em_k1e_float64 em_sp_k1e_w
#define em_j0_float64 em_sp_j0_w
#define em_j1_float64 em_sp_j1_w
#define em_y0_float64 em_sp_y0_w
#define em_y1_float64 em_sp_y1_w
#define em_sph_j0_float64 em_sp_sph_j0_w
#define em_entr_float64 em_sp_entr_w
#define em_sinc_float64 em_sp_sinc_w
#define em_logit_float64 em_sp_logit_w
#define em_polygamma_float64 em_sp_polygamma_w
#define em_zeta_float64 em_sp_zeta_w
#define em_igamma_float64 em_sp_igamma_w
#define em_igammac_float64 em_sp_igammac_w
#define em_xlog1py_float64 em_sp_xlog1py_w

#endif /* EMBER_SPECIAL_H */
