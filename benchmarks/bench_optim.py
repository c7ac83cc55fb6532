#!/usr/bin/env python
"""Optimizers: ember beside PyTorch, at 1 thread.

    python benchmarks/bench_optim.py [--rounds N] [--clock cpu] [--threads 1] [--quick]
                                     [--json PATH]

Cases (pt/em = torch_time / ember_time, > 1: ember faster):
- train_mlp_sgd: a whole training step of nn.Sequential(Linear(784, 256), ReLU,
  Linear(256, 256), ReLU, Linear(256, 10)) on a batch of 128: zero_grad, forward,
  squared-error loss, backward, SGD(lr=0.01).step(). Target >= 1.0.
- train_cnn_sgd: a whole training step of the small CNN of issue 5 on 32x1x28x28:
  conv 1->16 (3x3, pad 1), ReLU, max_pool 2; conv 16->32, ReLU, max_pool 2; Linear
  1568 -> 10; cross-entropy; SGD. Target >= 1/1.3 (ember at most 1.3x torch's time).
- step_{sgd,sgd_momentum,adam,adamw}: optimizer.step() alone on that model's
  parameters (269,322 float32 elements in 6 tensors), for the record. Target >= 1.0.
- step_adam_foreach: the same with Adam(foreach=True) in both libraries (ember: the
  multi-tensor em._foreach_* functions, looping in C over the list). Target >= 1.0.
- foreach_vs_loop_{add,addcmul}: ember only, pt/em column = (per-tensor Python loop time)
  / (em._foreach_* time) over 64 small tensors (64 float32 elements each), where the
  per-call overhead dominates: what the C loop saves. Target >= 1.0.

Interleaved rounds (benchmarks/harness.py), each sample >= 50 ms; medians. --clock
cpu measures thread CPU time instead of wall time (steadier on a busy machine; at 1
thread both libraries run on this one thread). Without torch only ember's times are
shown. Nothing asserts; FAIL marks a missed target.
"""
from __future__ import annotations

import numpy as np

import harness


def model_and_data(mod):
    rng = np.random.default_rng(0)
    nn = mod.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    with mod.no_grad():
        for p in model.parameters():
            w = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.05
            p.copy_(mod.from_numpy(w))
    x = mod.from_numpy(rng.standard_normal((128, 784)).astype(np.float32))
    y = mod.from_numpy(rng.standard_normal((128, 10)).astype(np.float32))
    return model, x, y


def setup_train(mod):
    model, x, y = model_and_data(mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        d = model(x) - y
        loss = (d * d).mean()
        loss.backward()
        opt.step()
    return step


def setup_train_cnn(mod):
    nn = mod.nn
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    with mod.no_grad():
        for p in model.parameters():
            w = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.05
            p.copy_(mod.from_numpy(w))
    x = mod.from_numpy(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
    y = mod.from_numpy(rng.integers(0, 10, size=32).astype(np.int64))
    opt = mod.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def setup_step(name, **kw):
    def setup(mod):
        model, x, y = model_and_data(mod)
        opt = getattr(mod.optim, name)(model.parameters(), lr=1e-3, **kw)
        d = model(x) - y
        (d * d).mean().backward()
        return opt.step
    return setup


def setup_foreach(kind):
    """In place of torch, the same work as a Python loop over the tensors (ember)."""
    import ember as em
    rng = np.random.default_rng(0)
    xs = [em.from_numpy(rng.standard_normal(64).astype(np.float32)) for _ in range(64)]
    ys = [em.from_numpy(rng.standard_normal(64).astype(np.float32)) for _ in range(64)]

    def foreach():
        if kind == "add":
            em._foreach_add_(xs, ys, alpha=1e-6)
        else:
            em._foreach_addcmul_(xs, ys, ys, 1e-6)

    def loop():
        for x, y in zip(xs, ys):
            if kind == "add":
                x.add_(y, alpha=1e-6)
            else:
                x.add_(em.mul(y, y).mul_(1e-6))   # what addcmul_ computes
    return {"ember": foreach, "torch": loop}


TARGETS = {"train_cnn_sgd": 1 / 1.3}
EMBER_ONLY = {"foreach_vs_loop_add": "add", "foreach_vs_loop_addcmul": "addcmul"}
CASES = {
    "train_mlp_sgd": setup_train,
    "train_cnn_sgd": setup_train_cnn,
    "step_sgd": setup_step("SGD"),
    "step_sgd_momentum": setup_step("SGD", momentum=0.9, nesterov=True),
    "step_adam": setup_step("Adam"),
    "step_adamw": setup_step("AdamW"),
    "step_adam_foreach": setup_step("Adam", foreach=True),
}


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    del mods["numpy"]                 # no nn, no optim
    print(harness.describe(info) + f" | clock {args.clock}")
    rows, results = [], {}
    for name, setup in CASES.items():
        st = harness.measure({lib: setup(mod) for lib, mod in mods.items()}, args.quick,
                             clock=args.clock, min_sample=0.05,
                             reps=3 if args.quick else args.rounds)
        results[name] = st
        r, target = harness.ratio(st, "torch"), TARGETS.get(name, 1.0)
        rows.append([name] + [harness.fmt_time(st[lib]["median"]) if lib in st else "-"
                              for lib in ("ember", "torch")] +
                    [harness.fmt_ratio(r), f">= {target:.2f}", harness.verdict(r, target)])
    for name, kind in EMBER_ONLY.items():
        st = harness.measure(setup_foreach(kind), args.quick, clock=args.clock, min_sample=0.05,
                             reps=3 if args.quick else args.rounds)
        results[name] = st
        r = harness.ratio(st, "torch")
        rows.append([name, harness.fmt_time(st["ember"]["median"]),
                     harness.fmt_time(st["torch"]["median"]) + " (loop)",
                     harness.fmt_ratio(r), ">= 1.00", harness.verdict(r, 1.0)])
    print(harness.table(["case", "ember", "torch", "pt/em", "target", "result"], rows,
                        left={"case", "result"}))
    harness.save(args, info=info, results=results)


if __name__ == "__main__":
    main()
