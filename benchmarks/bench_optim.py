#!/usr/bin/env python
"""Optimizers: ember beside PyTorch, at 1 thread.

    python benchmarks/bench_optim.py [--rounds N] [--clock cpu]

Cases (ember_time / torch_time):
- train_mlp_sgd: a whole training step of nn.Sequential(Linear(784, 256), ReLU,
  Linear(256, 256), ReLU, Linear(256, 10)) on a batch of 128: zero_grad, forward,
  squared-error loss, backward, SGD(lr=0.01).step(). Target <= 1.0.
- train_cnn_sgd: a whole training step of the small CNN of issue 5 on 32x1x28x28:
  conv 1->16 (3x3, pad 1), ReLU, max_pool 2; conv 16->32, ReLU, max_pool 2; Linear
  1568 -> 10; cross-entropy; SGD. Target <= 1.3.
- step_{sgd,sgd_momentum,adam,adamw}: optimizer.step() alone on that model's
  parameters (269,322 float32 elements in 6 tensors), for the record. Target <= 1.0.

Each round times both libraries once (alternating which goes first); the table
shows medians over rounds. --clock cpu measures thread CPU time instead of wall
time (steadier on a busy machine; both libraries run on this one thread). Nothing
asserts; FAIL marks a missed target.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[var] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("tensor-core", "autograd", "nn"):
    sys.path.insert(0, os.path.join(HERE, "..", "packages", sub, "src"))

import numpy as np  # noqa: E402


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


TARGETS = {"train_cnn_sgd": 1.3}
CASES = {
    "train_mlp_sgd": setup_train,
    "train_cnn_sgd": setup_train_cnn,
    "step_sgd": setup_step("SGD"),
    "step_sgd_momentum": setup_step("SGD", momentum=0.9, nesterov=True),
    "step_adam": setup_step("Adam"),
    "step_adamw": setup_step("AdamW"),
}


def timed(fn, clock, min_time=0.05):
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        dt = clock() - t0
        if dt >= min_time:
            return dt / n
        n *= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import ember as em
    import torch
    em.set_num_threads(1)
    torch.set_num_threads(1)
    libs = {"ember": em, "torch": torch}
    print(f"{'case':20s} {'ember':>10s} {'torch':>10s} {'em/pt':>7s} {'target':>8s}")
    for name, setup in CASES.items():
        fns = {lib: setup(mod) for lib, mod in libs.items()}
        times = {lib: [] for lib in libs}
        for r in range(args.rounds):
            for lib in (list(libs) if r % 2 == 0 else list(libs)[::-1]):
                fns[lib]()
                times[lib].append(timed(fns[lib], clock))
        med = {lib: statistics.median(v) for lib, v in times.items()}
        ratio = med["ember"] / med["torch"]
        target = TARGETS.get(name, 1.0)
        print(f"{name:20s} {med['ember'] * 1e6:7.0f} us {med['torch'] * 1e6:7.0f} us "
              f"{ratio:7.2f} {'<= ' + str(target):>8s} {'ok' if ratio <= target else 'FAIL'}")


if __name__ == "__main__":
    main()
