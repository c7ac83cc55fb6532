#!/usr/bin/env python
"""conv2d forward in bfloat16 beside float32 on the CPU at 1 thread, ember beside PyTorch in
one process (issue 21: bfloat16 convolution through the bfloat16 GEMM, no float32 copy
of the input).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_conv_bf16.py [--reps 5]

Cases (batch, channels in -> out, image, kernel): a ResNet 3x3 layer at 32x32 and
at 8x8, a 1x1 projection, a 7x7 stride-2 stem. Best of 5 of the mean thread CPU time
over reps calls, in ms; bf16/f32 = ember's bfloat16 time over its float32 time, em/pt
= ember's time over PyTorch's in the same dtype (< 1: ember faster); without PyTorch,
ember's columns alone. Nothing asserts.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as em

CASES = {  # name -> (n, c, oc, hw, k, stride, padding)
    "3x3 64@32": (8, 64, 64, 32, 3, 1, 1),
    "3x3 256@8": (8, 256, 256, 8, 3, 1, 1),
    "1x1 128@16": (8, 128, 256, 16, 1, 1, 0),
    "7x7/2 stem": (8, 3, 64, 64, 7, 2, 3),
}


def cpu_ms(reps, f, *args, **kwargs):
    f(*args, **kwargs)
    best = float("inf")
    for _ in range(5):
        t = time.thread_time()
        for _ in range(reps):
            f(*args, **kwargs)
        best = min(best, (time.thread_time() - t) / reps)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    em.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("conv2d forward, ms per call, 1 thread, thread CPU time")
    print(f"{'case':12s} {'em f32':>8s} {'em bf16':>8s} {'bf16/f32':>8s} {'pt f32':>8s} "
          f"{'pt bf16':>8s} {'em/pt f32':>9s} {'em/pt bf16':>10s}")
    for name, (n, c, oc, hw, k, s, p) in CASES.items():
        x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        b = rng.standard_normal(oc).astype(np.float32)
        row = {}
        for dt in ("float32", "bfloat16"):
            ex, ew, eb = (em.from_numpy(v).to(getattr(em, dt)) for v in (x, w, b))
            row["em", dt] = cpu_ms(args.reps, em.conv2d, ex, ew, eb, stride=s, padding=p)
            if torch is not None:
                tx, tw, tb = (torch.from_numpy(v).to(getattr(torch, dt)) for v in (x, w, b))
                row["pt", dt] = cpu_ms(args.reps, torch.nn.functional.conv2d, tx, tw, tb,
                                       stride=s, padding=p)
        cells = [f"{row['em', 'float32']:8.2f}", f"{row['em', 'bfloat16']:8.2f}",
                 f"{row['em', 'bfloat16'] / row['em', 'float32']:8.2f}"]
        if torch is not None:
            cells += [f"{row['pt', 'float32']:8.2f}", f"{row['pt', 'bfloat16']:8.2f}",
                      f"{row['em', 'float32'] / row['pt', 'float32']:9.2f}",
                      f"{row['em', 'bfloat16'] / row['pt', 'bfloat16']:10.2f}"]
        print(f"{name:12s} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
