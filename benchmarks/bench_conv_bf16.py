#!/usr/bin/env python
"""conv2d in bfloat16 beside float32 on the CPU at 1 thread, forward and backward, NCHW
and channels_last, ember beside PyTorch in one process (issue 21: bfloat16 convolution
through the bfloat16 GEMM or with the conversion in its im2col, no float32 copy of a
whole tensor).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_conv_bf16.py [--reps 5] [--layouts nchw nhwc] [--phases fwd bwd]

Cases (batch, channels in -> out, image, kernel): a ResNet 3x3 layer at 32x32 and
at 8x8, a 1x1 projection, a 3x3 stride-2 downsampling, a 7x7 stride-2 stem. Phases: fwd
(conv2d with bias), bwd (grad_input and grad_weight in one call: ember's
ops.conv.conv2d_backward, PyTorch's aten.convolution_backward). Best of 5 of the mean
thread CPU time over reps calls, in ms; bf16/f32 = ember's bfloat16 time over its
float32 time, em/pt = ember's time over PyTorch's in the same dtype (< 1: ember
faster); without PyTorch, ember's columns alone. Nothing asserts.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as em
from ember.ops.conv import conv2d_backward

CASES = {  # name -> (n, c, oc, hw, k, stride, padding)
    "3x3 64@32": (8, 64, 64, 32, 3, 1, 1),
    "3x3 256@8": (8, 256, 256, 8, 3, 1, 1),
    "1x1 128@16": (8, 128, 256, 16, 1, 1, 0),
    "3x3/2 64@32": (8, 64, 128, 32, 3, 2, 1),
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
    ap.add_argument("--layouts", nargs="+", default=["nchw", "nhwc"], choices=["nchw", "nhwc"])
    ap.add_argument("--phases", nargs="+", default=["fwd", "bwd"], choices=["fwd", "bwd"])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    em.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("conv2d, ms per call, 1 thread, thread CPU time")
    print(f"{'case':12s} {'layout':6s} {'phase':5s} {'em f32':>8s} {'em bf16':>8s} "
          f"{'bf16/f32':>8s} {'pt f32':>8s} {'pt bf16':>8s} {'em/pt f32':>9s} "
          f"{'em/pt bf16':>10s}")
    for name in args.cases:
        n, c, oc, hw, k, s, p = CASES[name]
        x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        b = rng.standard_normal(oc).astype(np.float32)
        oh = (hw + 2 * p - k) // s + 1
        gy = rng.standard_normal((n, oc, oh, oh)).astype(np.float32)
        for layout in args.layouts:
            for phase in args.phases:
                row = {}
                for dt in ("float32", "bfloat16"):
                    ex, ew, eb, eg = (em.from_numpy(v).to(getattr(em, dt)) for v in (x, w, b, gy))
                    if layout == "nhwc":
                        ex, ew, eg = (t.contiguous(memory_format=em.channels_last)
                                      for t in (ex, ew, eg))
                    if phase == "fwd":
                        row["em", dt] = cpu_ms(args.reps, em.conv2d, ex, ew, eb, stride=s,
                                               padding=p)
                    else:
                        row["em", dt] = cpu_ms(args.reps, conv2d_backward, eg, ex, ew, s, p,
                                               1, 1, (True, True, False))
                    if torch is None:
                        continue
                    tx, tw, tb, tg = (torch.from_numpy(v).to(getattr(torch, dt))
                                      for v in (x, w, b, gy))
                    if layout == "nhwc":
                        tx, tw, tg = (t.contiguous(memory_format=torch.channels_last)
                                      for t in (tx, tw, tg))
                    if phase == "fwd":
                        row["pt", dt] = cpu_ms(args.reps, torch.nn.functional.conv2d, tx, tw, tb,
                                               stride=s, padding=p)
                    else:
                        row["pt", dt] = cpu_ms(args.reps, torch.ops.aten.convolution_backward,
                                               tg, tx, tw, None, [s, s], [p, p], [1, 1],
                                               False, [0, 0], 1, [True, True, False])
                cells = [f"{row['em', 'float32']:8.2f}", f"{row['em', 'bfloat16']:8.2f}",
                         f"{row['em', 'bfloat16'] / row['em', 'float32']:8.2f}"]
                if torch is not None:
                    cells += [f"{row['pt', 'float32']:8.2f}", f"{row['pt', 'bfloat16']:8.2f}",
                              f"{row['em', 'float32'] / row['pt', 'float32']:9.2f}",
                              f"{row['em', 'bfloat16'] / row['pt', 'bfloat16']:10.2f}"]
                print(f"{name:12s} {layout:6s} {phase:5s} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
