#!/usr/bin/env python
"""conv2d in bfloat16 beside float32 on the CPU at 1 thread, forward and backward, NCHW
and channels_last, ember beside PyTorch in one process (issue 21: bfloat16 convolution
through the bfloat16 GEMM or with the conversion in its im2col, no float32 copy of a
whole tensor).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_conv_bf16.py [--quick] [--json PATH] [--layouts nchw nhwc]
        [--phases fwd bwd] [--cases NAME ...]

Cases (batch, channels in -> out, image, kernel): a ResNet 3x3 layer at 32x32 and
at 8x8, a 1x1 projection, a 3x3 stride-2 downsampling, a 7x7 stride-2 stem. Phases: fwd
(conv2d with bias), bwd (grad_input and grad_weight in one call: ember's
ops.conv.conv2d_backward, PyTorch's aten.convolution_backward). Medians of interleaved
rounds of the thread CPU time (harness.measure), in ms; bf16/f32 = ember's bfloat16
time over its float32 time, em/pt = ember's time over PyTorch's in the same dtype (< 1:
ember faster); without PyTorch, ember's columns alone. Nothing asserts.
"""
from __future__ import annotations

from functools import partial

import numpy as np

import harness

CASES = {  # name -> (n, c, oc, hw, k, stride, padding)
    "3x3 64@32": (8, 64, 64, 32, 3, 1, 1),
    "3x3 256@8": (8, 256, 256, 8, 3, 1, 1),
    "1x1 128@16": (8, 128, 256, 16, 1, 1, 0),
    "3x3/2 64@32": (8, 64, 128, 32, 3, 2, 1),
    "7x7/2 stem": (8, 3, 64, 64, 7, 2, 3),
}
DTYPES = ("float32", "bfloat16")


def contenders_for(em, torch, arrays, layout, phase, s, p):
    """("em"|"pt", dtype) -> the call to time."""
    from ember.ops.conv import conv2d_backward
    x, w, b, gy = arrays
    out = {}
    for dt in DTYPES:
        ex, ew, eb, eg = (em.from_numpy(v).to(getattr(em, dt)) for v in (x, w, b, gy))
        if layout == "nhwc":
            ex, ew, eg = (t.contiguous(memory_format=em.channels_last) for t in (ex, ew, eg))
        out["em", dt] = (partial(em.conv2d, ex, ew, eb, stride=s, padding=p) if phase == "fwd"
                         else partial(conv2d_backward, eg, ex, ew, s, p, 1, 1,
                                      (True, True, False)))
        if torch is None:
            continue
        tx, tw, tb, tg = (torch.from_numpy(v).to(getattr(torch, dt)) for v in (x, w, b, gy))
        if layout == "nhwc":
            tx, tw, tg = (t.contiguous(memory_format=torch.channels_last) for t in (tx, tw, tg))
        out["pt", dt] = (partial(torch.nn.functional.conv2d, tx, tw, tb, stride=s, padding=p)
                         if phase == "fwd" else
                         partial(torch.ops.aten.convolution_backward, tg, tx, tw, None, [s, s],
                                 [p, p], [1, 1], False, [0, 0], 1, [True, True, False]))
    return out


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--layouts", nargs="+", default=["nchw", "nhwc"], choices=["nchw", "nhwc"])
    ap.add_argument("--phases", nargs="+", default=["fwd", "bwd"], choices=["fwd", "bwd"])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    em, torch = mods["ember"], mods.get("torch")
    print(harness.describe(info))
    rng = np.random.default_rng(0)
    rows, results = [], {}
    for name in args.cases:
        n, c, oc, hw, k, s, p = CASES[name]
        oh = (hw + 2 * p - k) // s + 1
        arrays = (rng.standard_normal((n, c, hw, hw)).astype(np.float32),
                  (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32),
                  rng.standard_normal(oc).astype(np.float32),
                  rng.standard_normal((n, oc, oh, oh)).astype(np.float32))
        for layout in args.layouts:
            for phase in args.phases:
                st = harness.measure(contenders_for(em, torch, arrays, layout, phase, s, p),
                                     args.quick, clock="cpu")
                t = {key: v["median"] for key, v in st.items()}
                results[f"{name} {layout} {phase}"] = {f"{lib} {dt}": v
                                                       for (lib, dt), v in t.items()}
                row = [name, layout, phase, harness.fmt_time(t["em", "float32"]),
                       harness.fmt_time(t["em", "bfloat16"]),
                       harness.fmt_ratio(t["em", "bfloat16"] / t["em", "float32"])]
                if torch is not None:
                    row += [harness.fmt_time(t["pt", "float32"]),
                            harness.fmt_time(t["pt", "bfloat16"]),
                            harness.fmt_ratio(t["em", "float32"] / t["pt", "float32"]),
                            harness.fmt_ratio(t["em", "bfloat16"] / t["pt", "bfloat16"])]
                rows.append(row)
    head = ["case", "layout", "phase", "em f32", "em bf16", "bf16/f32"] + (
        ["pt f32", "pt bf16", "em/pt f32", "em/pt bf16"] if torch is not None else [])
    print(harness.table(head, rows))
    print(f"conv2d; {args.threads} thread(s), medians of interleaved rounds, thread CPU time")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
