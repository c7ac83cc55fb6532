"""Chebyshev coefficients of the Bessel-function fits in kernels/common/ember_special.h.

Run it (`python tools/special_coefficients.py`, needs mpmath) to regenerate the
`EM_SP_CHEB_*` blocks of the header; each fit is f(x) = sum c_k T_k(s(x)) over an
interval, the coefficients computed at Chebyshev nodes in 50-digit arithmetic and cut
where they fall below 2^-60 of the largest (so the truncation error is below the
float64 rounding of the sum).
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50
N = 96          # nodes


TOL = mp.mpf(2) ** -60
HALF = mp.mpf(1) / 2


def chebyshev(f, s_to_x, n=N, tol=TOL):
    """Coefficients c_0..c_m of f(x(s)) on s in [-1, 1] (c_0 not halved)."""
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    vals = [f(s_to_x(s)) for s in nodes]
    cs = []
    for k in range(n):
        c = mp.fsum(v * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j, v in enumerate(vals))
        cs.append(c * 2 / n)
    cs[0] /= 2
    big = max(abs(c) for c in cs)
    last = max(k for k, c in enumerate(cs) if abs(c) > tol * big)
    if last > n - 8:
        raise ValueError(f"not converged: |c_{n - 1}| = {abs(cs[-1])}")
    return cs[: last + 1]


def small(hi):     # x in [0, hi] as s = 2 x / hi - 1
    return lambda s: (s + 1) * hi / 2


def small_sq(hi):  # x^2 in [0, hi^2] as s = 2 x^2 / hi^2 - 1
    return lambda s: mp.sqrt((s + 1) / 2) * hi


def large(lo):     # x in [lo, inf) as s = 2 lo / x - 1
    return lambda s: 2 * lo / (s + 1) if s > -1 else mp.inf


def large_sq(lo):  # x in [lo, inf) as s = 2 lo^2 / x^2 - 1
    return lambda s: lo * mp.sqrt(2 / (s + 1))


def _pq(nu):
    """Hankel's P and x Q of order nu, from J and Y: J = sqrt(2/(pi x)) (P cos chi -
    Q sin chi), Y = sqrt(2/(pi x)) (P sin chi + Q cos chi), chi = x - (2 nu + 1) pi / 4."""
    def pq(x):
        chi = x - (2 * nu + 1) * mp.pi / 4
        j, y = mp.besselj(nu, x), mp.bessely(nu, x)
        m = mp.sqrt(mp.pi * x / 2)
        return m * (j * mp.cos(chi) + y * mp.sin(chi)), x * m * (y * mp.cos(chi) - j * mp.sin(chi))
    return pq


def _guard(f, at_inf):
    return lambda x: at_inf if x == mp.inf else f(x)


FITS = {
    # I0, I1: exp(-x) I(x) (/ x for I1) on [0, 8]; sqrt(x) exp(-x) I(x) beyond
    "i0e_small": (lambda x: mp.exp(-x) * mp.besseli(0, x), small(8)),
    "i0e_large": (_guard(lambda x: mp.sqrt(x) * mp.exp(-x) * mp.besseli(0, x),
                         1 / mp.sqrt(2 * mp.pi)), large(8)),
    "i1e_small": (lambda x: mp.exp(-x) * mp.besseli(1, x) / x if x else mp.mpf(1) / 2, small(8)),
    "i1e_large": (_guard(lambda x: mp.sqrt(x) * mp.exp(-x) * mp.besseli(1, x),
                         1 / mp.sqrt(2 * mp.pi)), large(8)),
    # K0, K1 on [0, 2]: the parts left after the logarithms, entire in x^2
    "k0_small": (lambda x: mp.besselk(0, x) + mp.log(x / 2) * mp.besseli(0, x) if x
                 else -mp.euler, small_sq(2)),
    "k1_small": (lambda x: x * (mp.besselk(1, x) - mp.log(x / 2) * mp.besseli(1, x)) if x
                 else mp.mpf(1), small_sq(2)),
    "k0e_large": (_guard(lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(0, x),
                         mp.sqrt(mp.pi / 2)), large(2)),
    "k1e_large": (_guard(lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(1, x),
                         mp.sqrt(mp.pi / 2)), large(2)),
    # J0, J1 / x, Y0 - 2/pi log(x) J0, (Y1 - 2/pi log(x) J1 + 2/(pi x)) / x on [0, 8]
    "j0_small": (lambda x: mp.besselj(0, x), small_sq(8)),
    "j1_small": (lambda x: mp.besselj(1, x) / x if x else mp.mpf(1) / 2, small_sq(8)),
    "y0_small": (lambda x: mp.bessely(0, x) - 2 / mp.pi * mp.log(x) * mp.besselj(0, x) if x
                 else 2 / mp.pi * (mp.euler - mp.log(2)), small_sq(8)),
    "y1_small": (lambda x: (mp.bessely(1, x) - 2 / mp.pi * mp.log(x) * mp.besselj(1, x)
                            + 2 / (mp.pi * x)) / x if x
                 else (2 * mp.euler - 2 * mp.log(2) - 1) / (2 * mp.pi), small_sq(8)),
    # Hankel's P and x Q beyond 8, in 128 / x^2 - 1
    "p0_large": (_guard(lambda x: _pq(0)(x)[0], mp.mpf(1)), large_sq(8)),
    "q0_large": (_guard(lambda x: _pq(0)(x)[1], mp.mpf(-1) / 8), large_sq(8)),
    "p1_large": (_guard(lambda x: _pq(1)(x)[0], mp.mpf(1)), large_sq(8)),
    "q1_large": (_guard(lambda x: _pq(1)(x)[1], mp.mpf(3) / 8), large_sq(8)),
}


def _num(c):
    return mp.nstr(c, 20, min_fixed=-1, max_fixed=-1)


def _plus(c):
    """ + c or - |c|, as source text."""
    return f" - {_num(-c)}" if c < 0 else f" + {_num(c)}"


def c_block(name, cs):
    """A Clenshaw evaluation of the series, unrolled: plain code that C, OpenCL C and
    CUDA compile alike (no constant arrays)."""
    lines = [f"/* {name}: {len(cs)} Chebyshev coefficients (tools/special_coefficients.py) */",
             f"EM_INLINE em_sp_w em_sp_cheb_{name}(em_sp_w s) {{",
             "    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;"]
    for c in reversed(cs[1:]):
        lines.append(f"    b2 = b1; b1 = b0; b0 = s2 * b1 - b2{_plus(c)};")
    lines.append(f"    return s * b0 - b1{_plus(cs[0])};")
    lines.append("}")
    return "\n".join(lines)


def digamma_root_taylor(radius=HALF):
    """x0 (the positive root of digamma) as hi + lo, and the Taylor coefficients of
    digamma around it, c_k = psi^(k)(x0) / k!, up to where c_k radius^k < 2^-64."""
    x0 = mp.findroot(mp.digamma, 1.46)
    hi = float(x0)
    lo = float(x0 - hi)
    cs, k = [], 1
    while True:
        c = mp.polygamma(k, x0) / mp.factorial(k)
        cs.append(c)
        if abs(c) * radius ** k < mp.mpf(2) ** -64:
            return hi, lo, cs
        k += 1


def lgamma1p_taylor(n=30):
    """lgamma(1 + x) = -gamma x + sum_k (-1)^k zeta(k) / k x^k, for |x| <= 1/4."""
    return [-mp.euler] + [(-1) ** k * mp.zeta(k) / k for k in range(2, n + 1)]


def _main():
    for name, (f, s_to_x) in FITS.items():
        print(c_block(name, chebyshev(f, s_to_x)))
        print()
    hi, lo, cs = digamma_root_taylor()
    print(f"#define EM_SP_PSI_X0_HI {hi!r}\n#define EM_SP_PSI_X0_LO {lo!r}")
    print(f"/* digamma around x0: {len(cs)} Taylor coefficients (tools/special_coefficients.py) */")
    print("EM_INLINE em_sp_w em_sp_digamma_root(em_sp_w t) {")
    print(f"    em_sp_w p = {_num(cs[-1])};")
    for c in reversed(cs[:-1]):
        print(f"    p = p * t{_plus(c)};")
    print("    return p * t;\n}")
    cs = lgamma1p_taylor()
    print(f"/* lgamma(1 + x) for |x| <= 1/4: {len(cs)} Taylor coefficients "
          "(tools/special_coefficients.py) */")
    print("EM_INLINE em_sp_w em_sp_lgamma1p_small(em_sp_w x) {")
    print(f"    em_sp_w p = {_num(cs[-1])};")
    for c in reversed(cs[:-1]):
        print(f"    p = p * x{_plus(c)};")
    print("    return p * x;\n}")


if __name__ == "__main__":
    _main()
