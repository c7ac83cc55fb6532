#!/usr/bin/env python
"""GELU forward and its derivative row on the CPU at 1 thread, ember beside PyTorch in
one process (issue 22: the small GPT's MLP activation, shape (8, 64, 256)).

    PYTHONPATH=.venv/lib/python3.11/site-packages /work/torchvenv/bin/python \\
        benchmarks/bench_gelu.py [--shape 8 64 256] [--quick] [--json PATH]

For float32, float64, bfloat16 and float16, approximate='none' (erf) and 'tanh': medians
of interleaved rounds of the thread CPU time (harness.measure) of F.gelu and of the
derivative (ember's _gelu_grad / _gelu_tanh_grad, PyTorch's aten.gelu_backward), and
em/pt (< 1: ember faster); without PyTorch, ember's column alone. Nothing asserts.
"""
from __future__ import annotations

from functools import partial

import numpy as np

import harness

DTYPES = ("float32", "float64", "bfloat16", "float16")


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--shape", type=int, nargs="+", default=[8, 64, 256])
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    em, torch = mods["ember"], mods.get("torch")
    import ember.nn.functional as F
    print(harness.describe(info))
    x = np.random.default_rng(0).standard_normal(args.shape).astype(np.float32)
    rows, results = [], {}
    for name in DTYPES:
        ex = em.from_numpy(x).to(getattr(em, name))
        eg = em.ones_like(ex)
        if torch is not None:
            tx = torch.from_numpy(x).to(getattr(torch, name))
            tg = torch.ones_like(tx)
        for approx in ("none", "tanh"):
            egrad = em._gelu_grad if approx == "none" else em._gelu_tanh_grad
            contenders = {"em fwd": partial(F.gelu, ex, approximate=approx),
                          "em bwd": partial(egrad, eg, ex)}
            if torch is not None:
                contenders["pt fwd"] = partial(torch.nn.functional.gelu, tx, approximate=approx)
                contenders["pt bwd"] = partial(torch.ops.aten.gelu_backward, tg, tx,
                                               approximate=approx)
            st = harness.measure(contenders, args.quick, clock="cpu")
            t = {key: v["median"] for key, v in st.items()}
            results[f"{name} {approx}"] = t
            row = [name, approx]
            for d in ("fwd", "bwd"):
                row.append(harness.fmt_time(t[f"em {d}"]))
                if torch is not None:
                    row += [harness.fmt_time(t[f"pt {d}"]),
                            harness.fmt_ratio(t[f"em {d}"] / t[f"pt {d}"])]
            rows.append(row)
    cols = (["em", "pt", "em/pt"] if torch is not None else ["em"])
    head = ["dtype", "approx"] + [f"{d} {c}" for d in ("fwd", "bwd") for c in cols]
    print(harness.table(head, rows, left={"dtype", "approx"}))
    print(f"shape {tuple(args.shape)}; {args.threads} thread(s), medians of interleaved "
          f"rounds, thread CPU time")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
