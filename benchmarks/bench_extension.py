#!/usr/bin/env python
"""The example extension (examples/extension: a fused bias + GELU in Cython + C) beside
the same computation in ember ops and in PyTorch, at 1 thread.

    python benchmarks/bench_extension.py [--rounds N]

1. Fused op. Cases, float32, x of shape (rows, cols) and a bias of (cols,):
- fwd:      y = gelu(x + b)
- fwd+bwd:  the same with x and b requiring grad, then y.backward(g)
Columns: the fused op (compiled just in time by ember.utils.extension.load on the first
run, cached after), the unfused ember ops (nn.functional.gelu(x + b)), and PyTorch's
F.gelu(x + b) when installed. Ratios are other_time / fused_time (> 1: the fused op is
faster). Medians over rounds, each round timing every column once. Nothing asserts.

2. Calling ember from Cython: add two 4-element tensors 100000 times in a Cython loop
through `cimport ember` (ember.elementwise with an op looked up once, ember.matmul)
against the same loop in Python (a + b, em.matmul), per call.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[var] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("tensor-core", "autograd", "nn"):
    sys.path.insert(0, os.path.join(HERE, "..", "packages", sub, "src"))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "extension"))

import numpy as np  # noqa: E402

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


def timed(fn, reps):
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def cases(shape):
    import ember as em
    import ember_fused
    from ember.nn import functional as F
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape).astype(np.float32)
    b_np = rng.standard_normal(shape[1]).astype(np.float32)
    g_np = rng.standard_normal(shape).astype(np.float32)
    x, b, g = (em.from_numpy(a).clone() for a in (x_np, b_np, g_np))
    xg, bg = x.clone().requires_grad_(), b.clone().requires_grad_()
    out = {
        "fused": (lambda: ember_fused.bias_gelu(x, b),
                  lambda: ember_fused.bias_gelu(xg, bg).backward(g)),
        "ember": (lambda: F.gelu(x + b), lambda: F.gelu(xg + bg).backward(g)),
    }
    try:
        import torch
        torch.set_num_threads(1)
        tx, tb, tg = (torch.from_numpy(a.copy()) for a in (x_np, b_np, g_np))
        txg, tbg = tx.clone().requires_grad_(), tb.clone().requires_grad_()
        tF = torch.nn.functional
        out["torch"] = (lambda: tF.gelu(tx + tb), lambda: tF.gelu(txg + tbg).backward(tg))
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    import ember as em
    em.set_num_threads(1)
    print(f"{'case':<22}" + "".join(f"{c:>12}" for c in ("fused us", "ember us", "torch us",
                                                          "ember/fused", "torch/fused")))
    for shape in SHAPES:
        fns = cases(shape)
        reps = max(1, 2_000_000 // (shape[0] * shape[1]))
        for k, label in enumerate(("fwd", "fwd+bwd")):
            times = {name: [] for name in fns}
            for name in fns:          # warm up (and the first run's JIT build)
                fns[name][k]()
            for _ in range(args.rounds):
                for name in fns:
                    times[name].append(timed(fns[name][k], reps))
            med = {name: statistics.median(v) * 1e6 for name, v in times.items()}
            torch_us = med.get("torch", float("nan"))
            print(f"{label + ' ' + 'x'.join(map(str, shape)):<22}"
                  f"{med['fused']:>12.1f}{med['ember']:>12.1f}{torch_us:>12.1f}"
                  f"{med['ember'] / med['fused']:>12.2f}{torch_us / med['fused']:>12.2f}")


def call_overhead(rounds):
    import tempfile

    import ember as em
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
    rows = [("add (4,)", lambda: mod.add_loop(a, b, n), py_add),
            ("matmul (4, 4)", lambda: mod.matmul_loop(m, m, n), py_matmul)]
    print(f"\n{'call from':<22}{'cython ns':>12}{'python ns':>12}{'py/cy':>12}")
    for label, cy, py in rows:
        tc = statistics.median(timed(cy, 1) for _ in range(rounds)) / n * 1e9
        tp = statistics.median(timed(py, 1) for _ in range(rounds)) / n * 1e9
        print(f"{label:<22}{tc:>12.0f}{tp:>12.0f}{tp / tc:>12.2f}")


if __name__ == "__main__":
    main()
    call_overhead(5)
