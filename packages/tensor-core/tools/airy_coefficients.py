#!/usr/bin/env python3
"""Chebyshev fits for kernels/common/ember_special.h, computed in 50-digit arithmetic
(mpmath) and printed as the unrolled Clenshaw code the header uses (OpenCL C has no
constant arrays). Writes the block between the ``GENERATED airy begin`` / ``end``
markers:

    python tools/airy_coefficients.py               # rewrite the header's block
    python tools/airy_coefficients.py --print       # print it instead

Each fit is f(s) = sum_k c_k T_k(s) on s in [-1, 1], truncated where |c_k| falls below
2^-64 of the largest coefficient (well under the double rounding of the sum).

Airy Ai (em_sp_airy_ai_w), with zeta = 2/3 |x|^(3/2) and s = 1 / zeta:
  airy_pos: 2 sqrt(pi) x^(1/4) e^zeta Ai(x), x >= 2.1, in s over (0, 1 / zeta(2.1)]
  airy_a, airy_b: for x <= -2.1, Ai(x) = (sin(zeta + pi/4) A - cos(zeta + pi/4) B)
      / (sqrt(pi) |x|^(1/4)) (A = sqrt(pi) |x|^(1/4) (Ai sin + Bi cos), B = ... (Bi sin
      - Ai cos), phases zeta + pi/4), in s over (0, 1 / zeta(2.1)]
  airy_mid_neg: Ai(x) on [-2.1, 0];  airy_mid_pos: e^(1.5 x) Ai(x) on [0, 2.1]
(the header's other fits, i0e_small ... lgamma1p_small, come from special_coefficients.py
beside this script).
"""
from __future__ import annotations

import pathlib
import sys

import mpmath as mp

mp.mp.dps = 50
HEADER = (pathlib.Path(__file__).resolve().parent.parent / "src/ember/kernels/common"
          / "ember_special.h")
AIRY_CUT = mp.mpf("2.1")
NODES = 64


def chebyshev(f, a, b, n=NODES):
    """Coefficients of the degree n - 1 interpolant of f at the Chebyshev nodes of [a, b]."""
    ts = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    fs = [f((b - a) / 2 * t + (b + a) / 2) for t in ts]
    c = [2 * mp.fsum(fs[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n
         for j in range(n)]
    c[0] /= 2
    big = max(abs(v) for v in c)
    while abs(c[-1]) < big * mp.mpf(2) ** -64:
        c.pop()
    return c


def zeta(x):
    return mp.mpf(2) / 3 * abs(x) ** mp.mpf(1.5)


def x_of_s(s):
    return (mp.mpf(3) / 2 / s) ** (mp.mpf(2) / 3)


def airy_pos(s):
    x = x_of_s(s)
    return 2 * mp.sqrt(mp.pi) * x ** mp.mpf(0.25) * mp.exp(1 / s) * mp.airyai(x)


def airy_ab(s):
    x = x_of_s(s)
    phi = 1 / s + mp.pi / 4
    ai, bi = mp.airyai(-x), mp.airybi(-x)
    r = mp.sqrt(mp.pi) * x ** mp.mpf(0.25)
    return r * (ai * mp.sin(phi) + bi * mp.cos(phi)), r * (bi * mp.sin(phi) - ai * mp.cos(phi))


def fits():
    smax = 1 / zeta(AIRY_CUT)
    # s = 0 is x = inf: the limits there (1, 1, 0) stand in for the functions
    def at(f, lim):
        return lambda s: lim if s < mp.mpf(10) ** -40 else f(s)
    return [
        ("airy_pos", at(airy_pos, mp.mpf(1)), 0, smax),
        ("airy_a", at(lambda s: airy_ab(s)[0], mp.mpf(1)), 0, smax),
        ("airy_b", at(lambda s: airy_ab(s)[1], mp.mpf(0)), 0, smax),
        ("airy_mid_neg", mp.airyai, -AIRY_CUT, 0),
        ("airy_mid_pos", lambda x: mp.exp(mp.mpf(1.5) * x) * mp.airyai(x), 0, AIRY_CUT),
    ]


def c_literal(v):
    return mp.nstr(v, 20, min_fixed=-4, max_fixed=4, strip_zeros=False).replace("e-0", "e-")


def clenshaw(name, c):
    lines = [f"/* {name}: {len(c)} Chebyshev coefficients (tools/airy_coefficients.py) */",
             f"EM_INLINE em_sp_w em_sp_cheb_{name}(em_sp_w s) {{",
             "    em_sp_w s2 = 2 * s, b0 = 0, b1 = 0, b2;"]
    for v in reversed(c[1:]):
        sign = "-" if v < 0 else "+"
        lines.append(f"    b2 = b1; b1 = b0; b0 = s2 * b1 - b2 {sign} {c_literal(abs(v))};")
    sign = "-" if c[0] < 0 else "+"
    lines.append(f"    return s * b0 - b1 {sign} {c_literal(abs(c[0]))};")
    lines.append("}")
    return "\n".join(lines)


def block():
    smax = 1 / zeta(AIRY_CUT)
    out = [f"#define EM_SP_AIRY_CUT {mp.nstr(AIRY_CUT, 17)}\n"
           f"#define EM_SP_AIRY_SMAX {mp.nstr(smax, 20)}   /* 1 / zeta(EM_SP_AIRY_CUT) */"]
    for name, f, a, b in fits():
        out.append(clenshaw(name, chebyshev(f, mp.mpf(a), mp.mpf(b))))
        print(f"{name}: done", file=sys.stderr)
    return "\n\n".join(out) + "\n"


BEGIN = "/* ----------------------------------------------------------- GENERATED airy begin */\n"
END = "/* ------------------------------------------------------------- GENERATED airy end */\n"


def main():
    text = block()
    if "--print" in sys.argv:
        sys.stdout.write(text)
        return
    src = HEADER.read_text()
    head, rest = src.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    HEADER.write_text(head + BEGIN + text + END + tail)


if __name__ == "__main__":
    main()
