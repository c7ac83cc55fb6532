#!/usr/bin/env python
"""uint16 / uint32 / uint64 on the CPU: ember beside NumPy at 1 thread (PyTorch has few
kernels for these dtypes: no add, floor_divide or sum of uint32 in 2.13).

    python benchmarks/bench_unsigned.py [--quick] [--n 1000000] [--json PATH]

Cases at n elements (issue 20): add (a + b), floor_divide by a scalar, sum, sort, and
the cast from float32. Times by the thread's CPU clock (harness.measure, interleaved);
np/em = NumPy's time over ember's (> 1: ember faster). Nothing asserts.
"""
from __future__ import annotations

import harness

DTYPES = ("uint16", "uint32", "uint64")


def _contenders(em, np, dt, a, b, f):
    """case -> {"ember": call, "numpy": call} over the same values."""
    ea, eb, ef, d = em.from_numpy(a), em.from_numpy(b), em.from_numpy(f), getattr(em, dt)
    return {
        "add": {"ember": lambda: ea + eb, "numpy": lambda: a + b},
        "floordiv_scalar": {"ember": lambda: ea // 7, "numpy": lambda: a // 7},
        "sum": {"ember": lambda: ea.sum(), "numpy": lambda: a.sum()},
        "sort": {"ember": lambda: em.sort(ea).values, "numpy": lambda: np.sort(a)},
        "from_float32": {"ember": lambda: ef.to(d), "numpy": lambda: f.astype(dt)},
    }


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--n", type=int, default=10 ** 6)
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    import numpy as np

    import ember as em
    em.set_num_threads(args.threads)
    _, info = harness.libs(args.threads, torch=False)
    print(harness.describe(info))
    rng = np.random.default_rng(0)
    rows, results = [], {}
    for dt in DTYPES:
        top = min(np.iinfo(dt).max, 2 ** 40)
        a = rng.integers(0, top, args.n).astype(dt)
        b = rng.integers(1, top, args.n).astype(dt)
        f = (rng.random(args.n) * 60000).astype(np.float32)
        for case, contenders in _contenders(em, np, dt, a, b, f).items():
            st = harness.measure(contenders, args.quick, clock="cpu")
            results[f"{case}_{dt}"] = {k: st[k]["median"] for k in ("ember", "numpy")}
            rows.append([f"{case} {dt}", harness.fmt_time(st["ember"]["median"]),
                         harness.fmt_time(st["numpy"]["median"]),
                         harness.fmt_ratio(harness.ratio(st, "numpy"))])
    print(harness.table(["case", "ember", "numpy", "np/em"], rows))
    harness.save(args, results=results)


if __name__ == "__main__":
    main()
