#!/usr/bin/env python
"""GELU forward and its derivative row on the CPU at 1 thread, ember beside PyTorch in
one process (issue 22: the small GPT's MLP activation, shape (8, 64, 256)).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_gelu.py [--shape 8 64 256] [--reps 200]

For float32, float64, bfloat16 and float16, approximate='none' (erf) and 'tanh': best
of 5 of the mean thread CPU time over reps calls of F.gelu and of the derivative
(ember's _gelu_grad / _gelu_tanh_grad, PyTorch's aten.gelu_backward), in µs, and
em/pt (< 1: ember faster); without PyTorch, ember's column alone. Nothing asserts.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as em
import ember.nn.functional as F


def cpu_us(reps, f, *args, **kwargs):
    f(*args, **kwargs)
    best = float("inf")
    for _ in range(5):
        t = time.thread_time()
        for _ in range(reps):
            f(*args, **kwargs)
        best = min(best, (time.thread_time() - t) / reps)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs="+", default=[8, 64, 256])
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    em.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(args.shape).astype(np.float32)
    print(f"shape {tuple(args.shape)}, µs per call, 1 thread, thread CPU time")
    print(f"{'dtype':9s} {'approx':6s} {'fwd em':>8s} {'fwd pt':>8s} {'em/pt':>6s}"
          f" {'bwd em':>8s} {'bwd pt':>8s} {'em/pt':>6s}")
    for name in ("float32", "float64", "bfloat16", "float16"):
        ex = em.from_numpy(x).to(getattr(em, name))
        eg = em.ones_like(ex)
        if torch is not None:
            tx = torch.from_numpy(x).to(getattr(torch, name))
            tg = torch.ones_like(tx)
        for approx in ("none", "tanh"):
            egrad = em._gelu_grad if approx == "none" else em._gelu_tanh_grad
            ef = cpu_us(args.reps, F.gelu, ex, approximate=approx)
            eb = cpu_us(args.reps, egrad, eg, ex)
            if torch is None:
                print(f"{name:9s} {approx:6s} {ef:8.1f} {'-':>8s} {'-':>6s}"
                      f" {eb:8.1f} {'-':>8s} {'-':>6s}", flush=True)
                continue
            tf = cpu_us(args.reps, torch.nn.functional.gelu, tx, approximate=approx)
            tb = cpu_us(args.reps, torch.ops.aten.gelu_backward, tg, tx, approximate=approx)
            print(f"{name:9s} {approx:6s} {ef:8.1f} {tf:8.1f} {ef / tf:6.2f}"
                  f" {eb:8.1f} {tb:8.1f} {eb / tb:6.2f}", flush=True)


if __name__ == "__main__":
    main()
