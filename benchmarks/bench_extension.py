#!/usr/bin/env python
"""The example extension (examples/extension: a fused bias + GELU in Cython + C) beside
the same computation in ember ops and in PyTorch, at 1 thread.

    python benchmarks/bench_extension.py [--rounds N] [--threads 1] [--quick] [--json PATH]

1. Fused op. Cases, float32, x of shape (rows, cols) and a bias of (cols,):
- fwd:      y = gelu(x + b)
- fwd+bwd:  the same with x and b requiring grad, then y.backward(g)
Columns: the fused op (compiled just in time by ember.utils.extension.load on the first
run, cached after), the unfused ember ops (nn.functional.gelu(x + b)), and PyTorch's
F.gelu(x + b) when installed. Ratios are other_time / fused_time (> 1: the fused op is
faster). Interleaved rounds, medians (benchmarks/harness.py); --quick: 3 rounds.
Nothing asserts.

2. Calling ember from Cython: add two 4-element tensors 100000 times in a Cython loop
through `cimport ember` (ember.elementwise with an op looked up once, ember.matmul)
against the same loop in Python (a + b, em.matmul), per call.
"""
from __future__ import annotations

import os

import numpy as np

import harness

CALLS_PYX = """
cimport ember
cdef ember.Op ADD = ember.elementwise_op("add")

def add_loop(a, b, int n):
    for _ in range(n):
        ember.elementwise(ADD, a, b)

def matmul_loop(a, b, int n):
    for _ in range(n):
        ember.matmul(a, b)
"""

SHAPES = [(64, 256), (256, 1024), (2048, 1024)]


def cases(mods, fused, shape):
    em = mods["ember"]
    from ember.nn import functional as F
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape).astype(np.float32)
    b_np = rng.standard_normal(shape[1]).astype(np.float32)
    g_np = rng.standard_normal(shape).astype(np.float32)
    x, b, g = (em.from_numpy(a).clone() for a in (x_np, b_np, g_np))
    xg, bg = x.clone().requires_grad_(), b.clone().requires_grad_()
    out = {
        "fused": (lambda: fused.bias_gelu(x, b), lambda: fused.bias_gelu(xg, bg).backward(g)),
        "ember": (lambda: F.gelu(x + b), lambda: F.gelu(xg + bg).backward(g)),
    }
    if "torch" in mods:
        torch = mods["torch"]
        tx, tb, tg = (torch.from_numpy(a.copy()) for a in (x_np, b_np, g_np))
        txg, tbg = tx.clone().requires_grad_(), tb.clone().requires_grad_()
        tF = torch.nn.functional
        out["torch"] = (lambda: tF.gelu(tx + tb), lambda: tF.gelu(txg + tbg).backward(tg))
    return out


def fused_op(mods, rounds):
    # the example package itself, from examples/extension (compiled just in time)
    fused = harness.load_example("extension/ember_fused")
    rows, results = [], {}
    for shape in SHAPES:
        fns = cases(mods, fused, shape)
        reps = max(1, 2_000_000 // (shape[0] * shape[1]))
        for k, label in enumerate(("fwd", "fwd+bwd")):
            case = f"{label} {'x'.join(map(str, shape))}"
            # the warm-up call is the first run's JIT build
            st = results[case] = harness.measure({name: f[k] for name, f in fns.items()},
                                                 number=reps, reps=rounds)
            rows.append([case] + [harness.fmt_time(st[c]["median"]) if c in st else "-"
                                  for c in ("fused", "ember", "torch")] +
                        [harness.fmt_ratio(harness.ratio(st, c, "fused"))
                         for c in ("ember", "torch")])
    print(harness.table(["case", "fused", "ember", "torch", "ember/fused", "torch/fused"],
                        rows))
    return results


def call_overhead(em, rounds):
    import tempfile

    from ember.utils.extension import load
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "ember_bench_calls.pyx"), "w") as f:
        f.write(CALLS_PYX)
    mod = load("ember_bench_calls", [os.path.join(folder, "ember_bench_calls.pyx")])
    a, b = em.ones(4), em.ones(4)
    m = em.ones(4, 4)
    n = 100_000

    def py_add():
        for _ in range(n):
            a + b

    def py_matmul():
        for _ in range(n):
            em.matmul(m, m)
    cases = {"add (4,)": {"cython": lambda: mod.add_loop(a, b, n), "python": py_add},
             "matmul (4, 4)": {"cython": lambda: mod.matmul_loop(m, m, n), "python": py_matmul}}
    results = {label: harness.measure(c, number=1, reps=rounds) for label, c in cases.items()}
    print()
    print(harness.table(["call from", "cython", "python", "py/cy"], [
        [label] + [harness.fmt_time(st[c]["median"] / n) for c in ("cython", "python")] +
        [harness.fmt_ratio(harness.ratio(st, "python", "cython"))]
        for label, st in results.items()]))
    return results


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    print(harness.describe(info))
    fused = fused_op(mods, 3 if args.quick else args.rounds)
    calls = call_overhead(mods["ember"], 3 if args.quick else 5)
    harness.save(args, info=info, fused=fused, calls=calls)


if __name__ == "__main__":
    main()
