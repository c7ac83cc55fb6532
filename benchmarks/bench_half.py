#!/usr/bin/env python
"""Half-precision elementwise on the CPU: float16 and bfloat16 beside float32, ember beside
PyTorch (when an interpreter has it), at 1 thread.

    python benchmarks/bench_half.py [--quick] [--n 1000000] [--torch-python PATH] [--json PATH]

Cases at n elements (issue 21): add (a + b), mul (a * b with a broadcast scalar), exp,
sum, and the casts to and from float32. Columns: each dtype's time; f16/f32 and
bf16/f32 = ember's half time over its float32 time (the target: about 1, at most 1.5:
the half loops convert with F16C / shifts into float32 arithmetic); pt/em f16 and pt/em
bf16 = PyTorch's time over ember's (> 1: ember faster). PyTorch runs in a worker
process of its own interpreter (it is not in ember's environment), timed by the same
harness.measure with the thread's CPU clock; nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess

import harness

CASES = ("add", "mul_scalar", "exp", "sum", "to_float32", "from_float32")
DTYPES = ("float32", "float16", "bfloat16")


def timings(mod, n, quick):
    """case -> dtype -> median seconds, for library `mod` (ember or torch)."""
    mod.manual_seed(0)
    out = {}
    for case in CASES:
        row = {}
        contenders = {}
        for dt in DTYPES:
            d = getattr(mod, dt)
            a = mod.randn(n).to(d)
            b = mod.randn(n).to(d)
            f = mod.randn(n)
            contenders[dt] = {
                "add": lambda a=a, b=b: a + b,
                "mul_scalar": lambda a=a: a * 1.5,
                "exp": lambda a=a: a.exp(),
                "sum": lambda a=a: a.sum(),
                "to_float32": lambda a=a: a.to(mod.float32),
                "from_float32": lambda f=f, d=d: f.to(d),
            }[case]
        st = harness.measure(contenders, quick, clock="cpu")
        for dt in DTYPES:
            row[dt] = st[dt]["median"]
        out[case] = row
    return out


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--n", type=int, default=10 ** 6)
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--_torch", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    if args._torch:
        import torch
        torch.set_num_threads(args.threads)
        print(json.dumps({"version": torch.__version__,
                          "times": timings(torch, args.n, args.quick)}))
        return
    import ember
    ember.set_num_threads(args.threads)
    mods, info = harness.libs(args.threads, torch=False)
    print(harness.describe(info))
    em = timings(ember, args.n, args.quick)
    pt = None
    tp = args.torch_python or os.environ.get("EMBER_BENCH_TORCH_PYTHON") or (
        "/tmp/torchvenv/bin/python" if os.path.exists("/tmp/torchvenv/bin/python") else None)
    if tp:
        cmd = [tp, __file__, "--_torch", "--n", str(args.n), "--threads", str(args.threads)] + \
            (["--quick"] if args.quick else [])
        res = subprocess.run(cmd, capture_output=True, text=True,
                             env=harness.thread_env(args.threads))
        if res.returncode == 0:
            pt = json.loads(res.stdout.strip().splitlines()[-1])
            print(f"torch {pt['version']} ({tp})")
    rows = []
    for case in CASES:
        e = em[case]
        row = [case] + [harness.fmt_time(e[dt]) for dt in DTYPES] + \
            [harness.fmt_ratio(e["float16"] / e["float32"]),
             harness.fmt_ratio(e["bfloat16"] / e["float32"])]
        if pt:
            t = pt["times"][case]
            row += [harness.fmt_time(t["float16"]), harness.fmt_time(t["bfloat16"]),
                    harness.fmt_ratio(t["float16"] / e["float16"]),
                    harness.fmt_ratio(t["bfloat16"] / e["bfloat16"])]
        rows.append(row)
    head = ["case"] + [f"em {dt}" for dt in DTYPES] + ["f16/f32", "bf16/f32"] + \
        (["pt float16", "pt bfloat16", "pt/em f16", "pt/em bf16"] if pt else [])
    print(harness.table(head, rows))
    print(f"{args.n} elements; {args.threads} thread(s), medians of interleaved rounds, "
          f"thread CPU time")
    harness.save(args, info=info, ember=em, torch=pt)


if __name__ == "__main__":
    main()
