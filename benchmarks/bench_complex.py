#!/usr/bin/env python
"""Complex elementwise and matmul: ember beside NumPy and PyTorch (when installed), at 1
thread.

    python benchmarks/bench_complex.py [--threads 1] [--quick] [--rounds N] [--json PATH]
    python benchmarks/bench_complex.py --matmul-sizes 512,1024 --clock cpu

Cases (issue 19; ratios are other_time / ember_time, > 1: ember faster), 10^7 elements:
- mul_c64 / mul_c128: z * w of two complex tensors. Target np/em >= 1.0.
- abs_c64 / abs_c128: |z| (a real result, overflow-safe hypot). Target >= 1.0.
- matmul<n>_c64 / matmul<n>_c128 (issue 20; --matmul-sizes, default 512,1024, "" skips
  them): n x n @ n x n (ember: one real GEMM of the complex flop count, gemm_complex.c;
  NumPy: OpenBLAS's cgemm/zgemm). Target np/em >= 0.8, as the real matmul's at 1
  thread.

Each library works on its own copy of the same data into a preallocated result (out=,
so allocation is not timed); results are checked against NumPy first (a wrong result is
reported, not timed). Interleaved rounds (benchmarks/harness.py), medians. Nothing
asserts; FAIL marks a missed target.
"""
from __future__ import annotations

import numpy as np

import harness

N = 10 ** 7
TARGETS = {"mul_c64": 1.0, "mul_c128": 1.0, "abs_c64": 1.0, "abs_c128": 1.0}


def matmul_contenders(case, mods, rng):
    op, kind = case.split("_")
    n = int(op[len("matmul"):])
    dt = np.complex64 if kind == "c64" else np.complex128
    a, b = ((rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dt)
            for _ in range(2))
    ref = a.astype(np.complex128) @ b.astype(np.complex128)
    em = mods["ember"]
    ea, eb = em.from_numpy(a.copy()), em.from_numpy(b.copy())
    eo = em.empty(n, n, dtype=ea.dtype)
    out = {"ember": (lambda: em.matmul(ea, eb, out=eo), lambda r: r.numpy())}
    no = np.empty((n, n), dtype=dt)
    out["numpy"] = (lambda: np.matmul(a, b, out=no), lambda r: r)
    if "torch" in mods:
        torch = mods["torch"]
        ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
        to = torch.empty(n, n, dtype=ta.dtype)
        out["torch"] = (lambda: torch.matmul(ta, tb, out=to), lambda r: r.numpy())
    return out, ref


def contenders(case, mods, rng, n):
    op, kind = case.split("_")
    if op.startswith("matmul"):
        return matmul_contenders(case, mods, rng)
    dt = np.complex64 if kind == "c64" else np.complex128
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    w = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    ref = z * w if op == "mul" else np.abs(z)
    out = {}
    em = mods["ember"]
    ez, ew = em.from_numpy(z.copy()), em.from_numpy(w.copy())
    eo = em.empty(n, dtype=ez.dtype if op == "mul" else ez.real.dtype)
    out["ember"] = ((lambda: em.mul(ez, ew, out=eo)) if op == "mul" else
                    (lambda: em.abs(ez, out=eo)), lambda r: r.numpy())
    no = np.empty(n, dtype=ref.dtype)
    out["numpy"] = ((lambda: np.multiply(z, w, out=no)) if op == "mul" else
                    (lambda: np.abs(z, out=no)), lambda r: r)
    if "torch" in mods:
        torch = mods["torch"]
        tz, tw = torch.from_numpy(z.copy()), torch.from_numpy(w.copy())
        to = torch.empty(n, dtype=tz.dtype if op == "mul" else tz.real.dtype)
        out["torch"] = ((lambda: torch.mul(tz, tw, out=to)) if op == "mul" else
                        (lambda: torch.abs(tz, out=to)), lambda r: r.numpy())
    return out, ref


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--matmul-sizes", default="512,1024", help="orders of the matmul cases")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="thread CPU time (1 thread only) or wall time")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    print(harness.describe(info))
    rng = np.random.default_rng(0)
    n = N // 10 if args.quick else N
    targets = dict(TARGETS)
    for size in filter(None, args.matmul_sizes.split(",")):
        targets.update({f"matmul{int(size)}_c64": 0.8, f"matmul{int(size)}_c128": 0.8})
    text, results = harness.checked_cases(
        targets, lambda case: contenders(case, mods, rng, n), args, mods,
        lambda case: (1e-5 if case.startswith("matmul") else 1e-6) if case.endswith("c64")
        else 1e-12)
    print(text)
    print(f"{n} elements; {args.threads} thread(s), {args.clock} clock, medians of "
          f"interleaved rounds")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
