#!/usr/bin/env python
"""conv2d forward in bfloat16 beside float32 on the CPU at 1 thread, ember beside PyTorch in
one process (issue 21: bfloat16 convolution through the bfloat16 GEMM, no float32 copy
of the input).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_conv_bf16.py [--quick] [--json PATH]

Cases (batch, channels in -> out, image, kernel): a ResNet 3x3 layer at 32x32 and
at 8x8, a 1x1 projection, a 7x7 stride-2 stem. Medians of interleaved rounds of the
thread CPU time (harness.measure), in ms; bf16/f32 = ember's bfloat16 time over its
float32 time, em/pt = ember's time over PyTorch's in the same dtype (< 1: ember
faster); without PyTorch, ember's columns alone. Nothing asserts.
"""
from __future__ import annotations

from functools import partial

import numpy as np

import harness

CASES = {  # name -> (n, c, oc, hw, k, stride, padding)
    "3x3 64@32": (8, 64, 64, 32, 3, 1, 1),
    "3x3 256@8": (8, 256, 256, 8, 3, 1, 1),
    "1x1 128@16": (8, 128, 256, 16, 1, 1, 0),
    "7x7/2 stem": (8, 3, 64, 64, 7, 2, 3),
}
DTYPES = ("float32", "bfloat16")


def main():
    args = harness.parser(__doc__).parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    em, torch = mods["ember"], mods.get("torch")
    print(harness.describe(info))
    rng = np.random.default_rng(0)
    rows, results = [], {}
    for name, (n, c, oc, hw, k, s, p) in CASES.items():
        x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        b = rng.standard_normal(oc).astype(np.float32)
        contenders = {}
        for dt in DTYPES:
            ex, ew, eb = (em.from_numpy(v).to(getattr(em, dt)) for v in (x, w, b))
            contenders["em", dt] = partial(em.conv2d, ex, ew, eb, stride=s, padding=p)
            if torch is not None:
                tx, tw, tb = (torch.from_numpy(v).to(getattr(torch, dt)) for v in (x, w, b))
                contenders["pt", dt] = partial(torch.nn.functional.conv2d, tx, tw, tb,
                                               stride=s, padding=p)
        st = harness.measure(contenders, args.quick, clock="cpu")
        t = {key: v["median"] for key, v in st.items()}
        results[name] = {f"{lib} {dt}": v for (lib, dt), v in t.items()}
        row = [name, harness.fmt_time(t["em", "float32"]), harness.fmt_time(t["em", "bfloat16"]),
               harness.fmt_ratio(t["em", "bfloat16"] / t["em", "float32"])]
        if torch is not None:
            row += [harness.fmt_time(t["pt", "float32"]), harness.fmt_time(t["pt", "bfloat16"]),
                    harness.fmt_ratio(t["em", "float32"] / t["pt", "float32"]),
                    harness.fmt_ratio(t["em", "bfloat16"] / t["pt", "bfloat16"])]
        rows.append(row)
    head = ["case", "em f32", "em bf16", "bf16/f32"] + (
        ["pt f32", "pt bf16", "em/pt f32", "em/pt bf16"] if torch is not None else [])
    print(harness.table(head, rows))
    print(f"conv2d forward; {args.threads} thread(s), medians of interleaved rounds, "
          f"thread CPU time")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
