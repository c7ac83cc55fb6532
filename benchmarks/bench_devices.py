#!/usr/bin/env python
"""ember on each device beside NumPy and PyTorch (CPU), in one run.

    python benchmarks/bench_devices.py [--quick] [--devices cpu,opencl]

Columns: milliseconds per op for NumPy, PyTorch (when installed) and ember on every
device given (opencl: each op is followed by a synchronize, so the time includes the
launch and the wait); ratios are numpy_time / ember_time (> 1: ember faster). Then a
training step of the digits CNN (examples/train_digits.py, Adam, batch 64) per device,
with the kernel launches and host<->device transfers the step makes.

On PoCL (an OpenCL on the CPU, what CI has) the absolute opencl numbers say little
about a GPU: PoCL runs each work-group on a CPU thread. What holds on every device is
the structure: launches per step, and no host transfers besides the batch and loss.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

import ember as em  # noqa: E402

try:
    import torch
except ImportError:      # the torch column is optional
    torch = None


def timed(fn, sync, reps, warmup=2):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cases(quick):
    n = 10 ** 5 if quick else 10 ** 6
    m = 128 if quick else 512
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    A, B = rng.random((m, m), dtype=np.float32), rng.random((m, m), dtype=np.float32)
    X = rng.random((32, 3, 32, 32), dtype=np.float32)
    W = rng.random((16, 3, 3, 3), dtype=np.float32)
    S = rng.random((256, 1024), dtype=np.float32)

    def np_softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return [
        (f"add_{n}", (a, b), lambda x, y: x + y, None),
        (f"sum_{n}", (a,), lambda x: x.sum(), None),
        (f"transpose_add_{m}", (A, B), lambda x, y: x.T + y, None),
        (f"matmul_{m}", (A, B), lambda x, y: x @ y, None),
        ("softmax_256x1024", (S,), None, np_softmax),
        ("conv2d_32x3x32x32", (X, W), None, None),
    ]


def run_case(name, arrays, generic, np_fn, devices, reps):
    row = {}
    if name.startswith("softmax"):
        em_fn, pt_fn = (lambda x: em.softmax(x, -1)), (lambda x: torch.softmax(x, -1))
    elif name.startswith("conv2d"):
        em_fn, pt_fn = (lambda x, w: em.conv2d(x, w, padding=1)), \
            (lambda x, w: torch.nn.functional.conv2d(x, w, padding=1))
        np_fn = None
    else:
        em_fn = pt_fn = generic
        np_fn = np_fn or generic
    if np_fn is not None:
        row["numpy"] = timed(lambda: np_fn(*arrays), lambda: None, reps)
    if torch is not None:
        ts = [torch.from_numpy(x) for x in arrays]
        row["torch"] = timed(lambda: pt_fn(*ts), lambda: None, reps)
    for dev in devices:
        ts = [em.from_numpy(x).to(dev) for x in arrays]
        sync = (lambda: em.opencl.synchronize()) if dev.startswith("opencl") else (lambda: None)
        row[f"ember:{dev}"] = timed(lambda: em_fn(*ts), sync, reps)
    return row


def training_step(devices, reps):
    from ember import nn
    from train_digits import DigitsCNN
    rng = np.random.default_rng(0)
    x = em.from_numpy(rng.random((64, 1, 8, 8), dtype=np.float32))
    y = em.from_numpy(rng.integers(0, 10, 64))
    out = {}
    for dev in devices:
        model = DigitsCNN().to(dev)
        opt = em.optim.Adam(model.parameters(), lr=3e-3)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
            return loss.item()
        t = timed(step, lambda: None, reps)
        counts = None
        if dev != "cpu":
            backend = em._C.core.backend_for(em.device(dev))
            backend.reset_counters()
            step()
            counts = backend.counters()
        out[dev] = (t, counts)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--devices", default="cpu,opencl" if em.opencl.is_available() else "cpu")
    args = ap.parse_args()
    devices = args.devices.split(",")
    reps = 5 if args.quick else 20
    if "opencl" in devices:
        print(f"# opencl:0 = {em.opencl.get_device_name(0)}")
    cols = ["numpy"] + (["torch"] if torch is not None else []) + [f"ember:{d}" for d in devices]
    print(f"{'case':24}" + "".join(f"{c:>14}" for c in cols) + "   ratio np/ember per device")
    for name, arrays, generic, np_fn in cases(args.quick):
        row = run_case(name, arrays, generic, np_fn, devices, reps)
        cells = "".join(f"{row[c] * 1e3:14.3f}" if c in row else f"{'-':>14}" for c in cols)
        ratios = " ".join(f"{d}={row['numpy'] / row[f'ember:{d}']:.2f}" for d in devices
                          if "numpy" in row)
        print(f"{name:24}{cells}   {ratios}")
    print("\ndigits CNN training step (batch 64, Adam): ms per step, and per step on a "
          "device: kernel launches / host transfers / deferred-check reads")
    for dev, (t, c) in training_step(devices, max(3, reps // 4)).items():
        extra = f"  launches {c['launches']}, host transfers {c['host_transfers']}, " \
                f"check reads {c['check_reads']}" if c else ""
        print(f"  {dev:10} {t * 1e3:10.2f} ms{extra}")


if __name__ == "__main__":
    main()
