#!/usr/bin/env python
"""Sub-step timings behind the run.py cases that miss their targets.

    python benchmarks/breakdown.py [--threads 1] [--filter chain,sum,transpose,overhead]

Same method as run.py (a subprocess per thread setting with the thread variables
set, interleaved rounds, medians), but one row per sub-step:
  chain      each of the chain's 10 ops alone, 16x16 and 1 element (the
             difference is the kernel's share; the 1-element time is call overhead)
  sum        a.sum() with the data in L2 (1e5), in L3 (1e6) and in DRAM (1e7): GB/s
             in cache shows whether the loop or the memory is the limit
  transpose  a.T + b at 4096 (power-of-two row stride) beside 4000 and 4104 and
             beside the contiguous a + b: GB/s counting three arrays
  overhead   one-element a + b through each entry point (operator, function,
             method, the core's positional fast path)
"""
from __future__ import annotations

import json
import sys

import harness
import run as R


def _rows_chain(mods, rng):
    ops = [("add", "a + b"), ("mul", "a * c"), ("sub", "a - c"), ("div", "a / b"),
           ("exp", "exp(a)"), ("tanh", "tanh(a)"), ("neg", "-a"), ("abs", "abs(a)"),
           ("maximum", "maximum(a, c)"), ("sqrt", "sqrt(a)")]
    for shape in ((16, 16), (1,)):
        arrays = {n: R._rand(rng, shape, 0.5, 1.5) for n in "abc"}
        for op, stmt in ops:
            out = {}
            for lib, m in mods.items():
                ns = {n: R._convert(mods, lib, a) for n, a in arrays.items()}
                ns.update(exp=m.exp, tanh=m.tanh, abs=m.abs, maximum=m.maximum, sqrt=m.sqrt)
                out[lib] = (stmt, ns)
            yield f"chain op {op} {'x'.join(map(str, shape))}", out, 0


def _rows_sum(mods, rng):
    for n in (10 ** 5, 10 ** 6, 10 ** 7):
        a = R._rand(rng, n)
        yield f"sum n={n:.0e}", {lib: ("a.sum()", {"a": R._convert(mods, lib, a)})
                                 for lib in mods}, n * 4


def _rows_transpose(mods, rng):
    for n in (4096, 4000, 4104):
        a, b = R._rand(rng, (n, n)), R._rand(rng, (n, n))
        for stmt in ("a.T + b", "a + b"):
            yield f"{stmt} n={n}", {lib: (stmt, {"a": R._convert(mods, lib, a),
                                                 "b": R._convert(mods, lib, b)})
                                    for lib in mods}, 3 * n * n * 4


def _rows_overhead(mods, rng):
    a, b = R._rand(rng, (1,)), R._rand(rng, (1,))
    try:
        from ember._C import core
        fast = ("call(OP, a, b, None, 2, None)",
                {"call": core.ew_call, "OP": core.OP_INDEX["add"]})
    except (ImportError, AttributeError, KeyError):
        fast = None
    forms = [("operator a + b", "a + b"), ("function add(a, b)", "add(a, b)"),
             ("method a.add(b)", "a.add(b)"), ("operator -a", "-a"),
             ("function abs(a)", "abs(a)")]
    for label, stmt in forms:
        out = {}
        for lib, m in mods.items():
            ns = {"a": R._convert(mods, lib, a), "b": R._convert(mods, lib, b),
                  "add": m.add, "abs": m.abs}
            if lib == "numpy" and stmt == "a.add(b)":
                continue
            out[lib] = (stmt, ns)
        if "numpy" not in out:      # keep a numpy column: its operator form
            out["numpy"] = ("a + b", {"a": a.copy(), "b": b.copy()})
        yield f"overhead {label}", out, 0
    if fast:
        stmt, extra = fast
        ns = {"a": R._convert(mods, "ember", a), "b": R._convert(mods, "ember", b), **extra}
        yield "overhead core.ew_call (no Python wrapper)", \
            {"ember": (stmt, ns), "numpy": ("a + b", {"a": a.copy(), "b": b.copy()})}, 0


GROUPS = {"chain": _rows_chain, "sum": _rows_sum, "transpose": _rows_transpose,
          "overhead": _rows_overhead}


def worker(args):
    import numpy as np
    mods, info = harness.libs(args.threads[0])
    rng = np.random.default_rng(0)
    rows = []
    for g in args.filter.split(","):
        for label, stmts, nbytes in GROUPS[g](mods, rng):
            for stmt, ns in stmts.values():
                eval(stmt, dict(ns))                 # warm-up call
            st = harness.measure(stmts, quick=True)
            rows.append((label, {k: v["median"] for k, v in st.items()}, nbytes))
    json.dump(rows, sys.stdout)


def main():
    ap = harness.parser(__doc__, threads="1", multi=True)
    ap.add_argument("--filter", default=",".join(GROUPS))
    args = ap.parse_args()
    bad = [g for g in args.filter.split(",") if g not in GROUPS]
    if bad:
        sys.exit(f"unknown group(s) {bad}; groups: {', '.join(GROUPS)}")
    if args._worker:
        return worker(args)
    libs = ("ember", "numpy", "torch")
    runs = harness.run_settings(args)
    for t, rows in runs.items():
        print(f"# {t} thread(s); medians; ratio = numpy / ember (> 1: ember faster)")
        print(harness.table(
            ["step", "ember", "numpy", "torch", "np/em", "GB/s em / np / pt"],
            [[label] + [harness.fmt_time(med.get(lib)) for lib in libs] +
             [f"{med['numpy'] / med['ember']:.2f}",
              " / ".join(f"{nbytes / med[lib] / 1e9:.1f}" if lib in med else "-"
                         for lib in libs) if nbytes else ""]
             for label, med, nbytes in rows],
            left={"step", "GB/s em / np / pt"}))
    harness.save(args, runs=runs)


if __name__ == "__main__":
    main()
