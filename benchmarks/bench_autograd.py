#!/usr/bin/env python
"""Autograd overhead: ember beside PyTorch, forward + backward, at 1 thread.

    python benchmarks/bench_autograd.py [--rounds N] [--threads 1] [--quick] [--json PATH]

Cases (targets from issue 4, as pt/em = torch_time / ember_time, > 1: ember faster):
- chain100_1elem: 100 elementwise ops (mul, add, tanh, sub, repeated) on one-element
  tensors, then sum and backward; time per op. Target >= 1/0.3 (issue 22: ember's
  autograd overhead at most 0.3x PyTorch's per op; issue 4 asked for 2).
- mlp_784_256_256_10_b128: x @ W1 + b1, relu, @ W2 + b2, relu, @ W3 + b3, the mean of
  the squared outputs, backward. Target >= 1/1.2 (ember at most 1.2x torch's time).

Interleaved rounds (benchmarks/harness.py), each sample >= 50 ms; medians. Without
torch only ember's times are shown. Nothing asserts; FAIL marks a missed target.
"""
from __future__ import annotations

import numpy as np

import harness


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


CASES = {"chain100_1elem": (setup_chain, 1 / 0.3), "mlp_784_256_256_10_b128": (setup_mlp, 1 / 1.2)}


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    del mods["numpy"]                 # no autograd
    print(harness.describe(info))
    rows, results = [], {}
    for name, (setup, target) in CASES.items():
        fns = {lib: setup(lib, mod) for lib, mod in mods.items()}
        per = fns["ember"][1]
        st = harness.measure({lib: fn for lib, (fn, _) in fns.items()}, args.quick,
                             min_sample=0.05, reps=3 if args.quick else args.rounds)
        results[name] = st
        r = harness.ratio(st, "torch")
        rows.append([name] + [harness.fmt_time(st[lib]["median"] / per) if lib in st else "-"
                              for lib in ("ember", "torch")] +
                    [harness.fmt_ratio(r), f">= {target:.2f}", harness.verdict(r, target)])
    print(harness.table(["case", "ember", "torch", "pt/em", "target", "result"], rows,
                        left={"case", "result"}))
    print("(chain100_1elem: time per op)")
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
