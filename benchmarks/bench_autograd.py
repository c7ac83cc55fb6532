#!/usr/bin/env python
"""Autograd overhead: ember beside PyTorch, forward + backward, at 1 thread.

    python benchmarks/bench_autograd.py [--rounds N]

Cases (targets from issue 4, as ember_time / torch_time):
- chain100_1elem: 100 elementwise ops (mul, add, tanh, sub, repeated) on one-element
  tensors, then sum and backward; time per op. Target <= 0.5 (twice as fast as
  PyTorch on small graphs).
- mlp_784_256_256_10_b128: x @ W1 + b1, relu, @ W2 + b2, relu, @ W3 + b3, the mean of
  the squared outputs, backward. Target <= 1.2.

Each round times both libraries once (alternating which goes first); the table
shows medians over rounds. Both run with one thread (set before import through the
environment and by set_num_threads). Nothing asserts; FAIL marks a missed target.
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
for sub in ("tensor-core", "autograd"):
    sys.path.insert(0, os.path.join(HERE, "..", "packages", sub, "src"))

import numpy as np  # noqa: E402


def chain(lib, x):
    y = x
    for _ in range(25):
        y = y * 1.0001
        y = y + 0.5
        y = y.tanh()
        y = y - 0.1
    return y.sum()


def setup_chain(lib, mod):
    x = mod.ones(1, requires_grad=True)
    return lambda: chain(lib, x).backward(), 100


def setup_mlp(lib, mod):
    rng = np.random.default_rng(0)
    sizes = [784, 256, 256, 10]
    params = []
    for a, b in zip(sizes, sizes[1:]):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        params += [w, np.zeros(b, dtype=np.float32)]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    t = [mod.from_numpy(p).clone().requires_grad_() for p in params]
    xt = mod.from_numpy(x).clone()

    def step():
        h = xt
        for i in range(0, len(t), 2):
            h = h @ t[i] + t[i + 1]
            if i < len(t) - 2:
                h = h.relu()
        loss = (h * h).mean()
        loss.backward()
        for p in t:
            p.grad = None
    return step, 1


CASES = {"chain100_1elem": (setup_chain, 0.5), "mlp_784_256_256_10_b128": (setup_mlp, 1.2)}


def timed(fn, min_time=0.05):
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
        n *= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    import ember as em
    import torch
    em.set_num_threads(1)
    torch.set_num_threads(1)
    libs = {"ember": em, "torch": torch}
    print(f"{'case':28s} {'ember':>12s} {'torch':>12s} {'em/pt':>7s} {'target':>8s}")
    for name, (setup, target) in CASES.items():
        fns = {lib: setup(lib, mod) for lib, mod in libs.items()}
        times = {lib: [] for lib in libs}
        for r in range(args.rounds):
            order = list(libs) if r % 2 == 0 else list(libs)[::-1]
            for lib in order:
                fn, per = fns[lib]
                fn()
                times[lib].append(timed(fn) / per)
        med = {lib: statistics.median(v) for lib, v in times.items()}
        ratio = med["ember"] / med["torch"]
        unit = "us/op" if fns["ember"][1] > 1 else "ms"
        scale = 1e6 if unit == "us/op" else 1e3
        mark = "ok" if ratio <= target else "FAIL"
        print(f"{name:28s} {med['ember'] * scale:8.2f} {unit:>3s} "
              f"{med['torch'] * scale:8.2f} {unit:>3s} {ratio:7.2f} {'<= ' + str(target):>8s} "
              f"{mark}")


if __name__ == "__main__":
    main()
