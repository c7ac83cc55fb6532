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
each result is first checked against a float64 reference (the recurrences in NumPy,
SciPy's airy; without SciPy the Airy cases are left out): one off by more than the
case's tolerance is reported WRONG, not timed (harness.checked_cases). Interleaved
rounds, medians; the target is PyTorch's time (pt/em >= 1.0). Nothing asserts.
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


TARGETS = {case: 1.0 for case in CASES}     # pt/em: at most PyTorch's time


def reference(case, x):
    """The case's function of x in float64: SciPy's Airy Ai; the polynomials by their
    three-term recurrences (Chebyshev T as cos(n acos x) on [-1, 1])."""
    name, _, deg, _ = CASES[case]
    x = x.astype(np.float64)
    if name == "airy_ai":
        from scipy.special import airy
        return airy(x)[0]
    if name == "chebyshev_polynomial_t":
        return np.cos(deg * np.arccos(x))
    p0, p1 = np.ones_like(x), (x if name == "legendre_polynomial_p" else 2 * x)
    for k in range(1, deg):
        p0, p1 = p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1) \
            if name == "legendre_polynomial_p" else 2 * x * p1 - 2 * k * p0
    return p1


def to64(result):
    return np.asarray(result.numpy(), np.float64)


def contenders(case, mods, rng, n):
    name, (lo, hi), deg, dt = CASES[case]
    x = rng.uniform(lo, hi, n).astype(dt)
    em = mods["ember"]
    ex, eo = em.from_numpy(x.copy()), em.empty(n, dtype=getattr(em, dt))
    ef = getattr(em.special, name)
    out = {"ember": ((lambda: ef(ex, out=eo)) if deg is None else
                     (lambda: ef(ex, deg, out=eo)), to64)}
    if "torch" in mods:
        torch = mods["torch"]
        tx, to = torch.from_numpy(x.copy()), torch.empty(n, dtype=getattr(torch, dt))
        tf = getattr(torch.special, name)
        out["torch"] = ((lambda: tf(tx, out=to)) if deg is None else
                        (lambda: tf(tx, deg, out=to)), to64)
    return out, reference(case, x)


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
    try:
        import scipy.special  # noqa: F401 (the Airy reference)
        targets = TARGETS
    except ImportError:
        targets = {c: t for c, t in TARGETS.items() if not c.startswith("airy")}
    text, results = harness.checked_cases(
        targets, lambda case: contenders(case, mods, rng, n), args, mods,
        lambda case: 2e-5 if CASES[case][3] == "float32" else 1e-9, vs="torch")
    print(text)
    print(f"{n} elements; {args.threads} thread(s), {args.clock} clock, medians of "
          f"interleaved rounds" + ("" if targets is TARGETS else "; no SciPy: Airy left out"))
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
