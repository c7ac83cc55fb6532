#!/usr/bin/env python
"""ResNet-18's convolutions one by one: forward, grad_input and grad_weight, ember beside
PyTorch, each library in its own worker process.

    python benchmarks/bench_conv.py [--threads 1] [--quick] [--json PATH] [--clock cpu]
                                    [--batch 64] [--reps 5] [--rounds 2]
                                    [--torch-python PATH] [--filter NAME]

The shapes are those of bench_models.py's CIFAR ResNet-18 (batch 64, float32, NCHW):
the stem, each stage's 3x3 convolutions and its strided 3x3 and 1x1 shortcut. Each
worker times every (shape, pass) `reps` times and reports the median; the parent runs
the workers `rounds` times alternately and keeps each library's best median (the
machine is shared; --quick: 3 and 1). pt/em = torch's time / ember's (> 1: ember
faster). The stem's grad_input is shown though a training step does not need it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import harness

# name: (cin, cout, h=w of the input, kernel, stride, padding)
SHAPES = {
    "stem 3-64 32x32": (3, 64, 32, 3, 1, 1),
    "3x3 64 32x32": (64, 64, 32, 3, 1, 1),
    "3x3 64-128 s2": (64, 128, 32, 3, 2, 1),
    "1x1 64-128 s2": (64, 128, 32, 1, 2, 0),
    "3x3 128 16x16": (128, 128, 16, 3, 1, 1),
    "3x3 128-256 s2": (128, 256, 16, 3, 2, 1),
    "1x1 128-256 s2": (128, 256, 16, 1, 2, 0),
    "3x3 256 8x8": (256, 256, 8, 3, 1, 1),
    "3x3 256-512 s2": (256, 512, 8, 3, 2, 1),
    "1x1 256-512 s2": (256, 512, 8, 1, 2, 0),
    "3x3 512 4x4": (512, 512, 4, 3, 1, 1),
}
# how often each shape runs in one ResNet-18 step (BasicBlock's second conv, and the
# first of the later blocks of a stage, keep the stage's size)
COUNT = {"stem 3-64 32x32": 1, "3x3 64 32x32": 4, "3x3 64-128 s2": 1, "1x1 64-128 s2": 1,
         "3x3 128 16x16": 3, "3x3 128-256 s2": 1, "1x1 128-256 s2": 1, "3x3 256 8x8": 3,
         "3x3 256-512 s2": 1, "1x1 256-512 s2": 1, "3x3 512 4x4": 3}
PASSES = ("fwd", "gx", "gw")


def worker(lib, args):
    import numpy as np
    clock = harness.CLOCKS[args.clock]
    rng = np.random.default_rng(0)
    if lib == "torch":
        import torch
        torch.set_num_threads(args.threads)
        mod = torch

        def fns(x, w, s, p):
            y = torch.nn.functional.conv2d(x, w, None, s, p)
            gy = torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))
            bwd = torch.ops.aten.convolution_backward

            def fwd():
                torch.nn.functional.conv2d(x, w, None, s, p)

            def gx():
                bwd(gy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                    [True, False, False])

            def gw():
                bwd(gy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                    [False, True, False])
            return fwd, gx, gw
    else:
        import ember as em
        from ember.ops.conv import conv2d_backward
        em.set_num_threads(args.threads)
        mod = em

        def fns(x, w, s, p):
            y = em.conv2d(x, w, None, s, p)
            gy = em.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))

            def fwd():
                em.conv2d(x, w, None, s, p)

            def gx():
                conv2d_backward(gy, x, w, s, p, output_mask=(True, False, False))

            def gw():
                conv2d_backward(gy, x, w, s, p, output_mask=(False, True, False))
            return fwd, gx, gw
    out = {}
    with mod.no_grad():
        for name, (cin, cout, hw, k, s, p) in SHAPES.items():
            if args.filter and args.filter not in name:
                continue
            x = mod.from_numpy(rng.standard_normal((args.batch, cin, hw, hw)).astype(np.float32))
            w = mod.from_numpy((rng.standard_normal((cout, cin, k, k)) /
                                (cin * k * k) ** 0.5).astype(np.float32))
            for pname, fn in zip(PASSES, fns(x, w, s, p)):
                fn()
                times = []
                for _ in range(args.reps):
                    t0 = clock()
                    fn()
                    times.append(clock() - t0)
                out[f"{name}|{pname}"] = statistics.median(times)
    print(json.dumps(out))


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=0, help="timed calls per sample (default 5)")
    ap.add_argument("--rounds", type=int, default=0, help="worker runs per library (default 2)")
    ap.add_argument("--filter", default="")
    ap.add_argument("--torch-python", default=os.environ.get("EMBER_BENCH_TORCH_PYTHON"))
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.reps = args.reps or (3 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 2)
    if args.lib:
        return worker(args.lib, args)
    env = dict(os.environ)
    for var in harness.THREAD_VARS:
        env[var] = str(args.threads)
    common = [os.path.abspath(__file__), "--threads", str(args.threads), "--clock", args.clock,
              "--batch", str(args.batch), "--reps", str(args.reps), "--filter", args.filter]
    libs = [("ember", sys.executable)]
    if args.torch_python:
        libs.append(("torch", args.torch_python))
    best = {}
    for r in range(args.rounds):
        for lib, py in (libs if r % 2 == 0 else libs[::-1]):
            res = json.loads(subprocess.run([py, *common, "--lib", lib], env=env, check=True,
                                            capture_output=True, text=True).stdout)
            for key, t in res.items():
                best[lib, key] = min(t, best.get((lib, key), float("inf")))
    have_torch = len(libs) > 1
    print(f"conv2d, batch {args.batch}, float32, {args.threads} thread(s), {args.clock} clock; "
          f"ms per call (best of {args.rounds} rounds of a median of {args.reps})")
    head = "| shape | x/step |" + "".join(
        f" {p} em | {p} pt | {p} pt/em |" if have_torch else f" {p} em |" for p in PASSES)
    print(head)
    print("|---|---:|" + "---:|" * (len(PASSES) * (3 if have_torch else 1)))
    tot = {lib: 0.0 for lib, _ in libs}
    for name in SHAPES:
        if ("ember", f"{name}|fwd") not in best:
            continue
        cells = []
        for pname in PASSES:
            em_t = best["ember", f"{name}|{pname}"]
            tot["ember"] += COUNT[name] * em_t
            cells.append(f"{em_t * 1e3:.2f}")
            if have_torch:
                pt_t = best["torch", f"{name}|{pname}"]
                tot["torch"] += COUNT[name] * pt_t
                cells += [f"{pt_t * 1e3:.2f}", f"{pt_t / em_t:.2f}"]
        print(f"| {name} | {COUNT[name]} | " + " | ".join(cells) + " |")
    line = f"per step (x/step weighted, all passes): ember {tot['ember'] * 1e3:.1f} ms"
    if have_torch:
        line += f", torch {tot['torch'] * 1e3:.1f} ms, pt/em {tot['torch'] / tot['ember']:.2f}"
    print(line)
    harness.save(args, times={f"{lib}|{key}": t for (lib, key), t in best.items()})


if __name__ == "__main__":
    main()
