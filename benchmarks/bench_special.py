#!/usr/bin/env python
"""torch.special's Airy function and orthogonal polynomials: ember beside PyTorch, at 1
thread (NumPy has none of them).

    python benchmarks/bench_special.py [--threads 1] [--quick] [--clock cpu] [--json PATH]

Cases, 10^6 elements (ratios are torch_time / ember_time, > 1: ember faster):
- airy_f64 / airy_f32: airy_ai on x uniform in [-20, 20].
- cheb_t5 / cheb_t50: chebyshev_polynomial_t on x in [-1, 1], n = 5 (both recurrences)
  and n = 50 (PyTorch cos(n acos x), ember the closed form from the half angle).
- legendre20, hermite20: n = 20 recurrences (x in [-1, 1] and [-4, 4]).

Each library works on its own copy of the same data into a preallocated result (out=);
results are checked against each other first (a disagreement is reported, not timed).
Interleaved rounds (benchmarks/harness.py), medians. Nothing asserts.
"""
from __future__ import annotations

import numpy as np

import harness

N = 10 ** 6
CASES = {  # case -> (torch.special / ember.special name, x range, n, float dtype)
    "airy_f64": ("airy_ai", (-20, 20), None, "float64"),
    "airy_f32": ("airy_ai", (-20, 20), None, "float32"),
    "cheb_t5": ("chebyshev_polynomial_t", (-1, 1), 5, "float64"),
    "cheb_t50": ("chebyshev_polynomial_t", (-1, 1), 50, "float64"),
    "legendre20": ("legendre_polynomial_p", (-1, 1), 20, "float64"),
    "hermite20": ("hermite_polynomial_h", (-4, 4), 20, "float64"),
}


def contenders(case, mods, rng, n):
    name, (lo, hi), deg, dt = CASES[case]
    x = rng.uniform(lo, hi, n).astype(dt)
    em = mods["ember"]
    ex, eo = em.from_numpy(x.copy()), em.empty(n, dtype=getattr(em, dt))
    ef = getattr(em.special, name)
    out = {"ember": (lambda: ef(ex, out=eo)) if deg is None else
           (lambda: ef(ex, deg, out=eo))}
    if "torch" in mods:
        torch = mods["torch"]
        tx, to = torch.from_numpy(x.copy()), torch.empty(n, dtype=getattr(torch, dt))
        tf = getattr(torch.special, name)
        out["torch"] = (lambda: tf(tx, out=to)) if deg is None else \
            (lambda: tf(tx, deg, out=to))
    return out


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--clock", choices=sorted(harness.CLOCKS), default="wall")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    print(harness.describe(info))
    rng = np.random.default_rng(0)
    n = N // 10 if args.quick else N
    rows, results = [], {}
    for case in CASES:
        fns = contenders(case, mods, rng, n)
        vals = {lib: np.asarray(fn().tolist() if lib == "ember" else fn().numpy(), np.float64)
                for lib, fn in fns.items()}
        # where both are finite, relative to the larger magnitude of the pair's scale
        agree = "-"
        if "torch" in vals:
            a, b = vals["ember"], vals["torch"]
            fin = np.isfinite(a) & np.isfinite(b)
            agree = f"{np.max(np.abs(a - b)[fin] / np.maximum(np.abs(b[fin]), 1)):.1e}"
        st = harness.measure(fns, args.quick, clock=args.clock, min_sample=0.05,
                             reps=3 if args.quick else args.rounds)
        results[case] = {"stats": st}
        r = harness.ratio(st, "torch")
        rows.append([case, harness.fmt_time(st["ember"]["median"]),
                     harness.fmt_time(st["torch"]["median"]) if "torch" in st else "-",
                     harness.fmt_ratio(r), agree,
                     f"{max(s['spread'] for s in st.values()):.0%}"])
    print(harness.table(["case", "ember", "torch", "pt/em", "max diff", "spread"], rows))
    print(f"{n} elements; {args.threads} thread(s), {args.clock} clock, medians of "
          f"interleaved rounds")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
