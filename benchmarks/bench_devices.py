#!/usr/bin/env python
"""ember on each device beside NumPy and PyTorch (CPU), in one run.

    python benchmarks/bench_devices.py [--quick] [--devices cpu,opencl] [--threads 1]
                                       [--steps-only] [--top N] [--json PATH]

Columns: time per op for NumPy, PyTorch (when installed) and ember on every device
given (opencl: each op is followed by a synchronize, so the time includes the launch
and the wait), interleaved rounds and medians (benchmarks/harness.py); ratios are
numpy_time / ember_time (> 1: ember faster). Then a training step of the digits CNN
(examples/train_digits.py, Adam, batch 64), of bench_models.py's small GPT (2 layers,
d=64, block 64, AdamW, clipping) and of its d=128 GPT under bfloat16 autocast and under
float16 autocast with a GradScaler per device, with the kernel launches and host<->device
transfers each step makes. --quick: smaller arrays, shorter rounds; --steps-only: the
training steps alone; --top N: each step's N most launched kernels (the histogram).

On PoCL (an OpenCL on the CPU, what CI has) the absolute opencl numbers say little
about a GPU: PoCL runs each work-group on a CPU thread. What holds on every device is
the structure: launches per step, and no host transfers besides the batch and loss.
"""
from __future__ import annotations

import numpy as np

import ember as em
import harness


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


def run_case(mods, name, arrays, generic, np_fn, devices, quick):
    torch = mods.get("torch")
    if name.startswith("softmax"):
        em_fn, pt_fn = (lambda x: em.softmax(x, -1)), (lambda x: torch.softmax(x, -1))
    elif name.startswith("conv2d"):
        em_fn, pt_fn = (lambda x, w: em.conv2d(x, w, padding=1)), \
            (lambda x, w: torch.nn.functional.conv2d(x, w, padding=1))
        np_fn = None
    else:
        em_fn = pt_fn = generic
        np_fn = np_fn or generic
    fns = {}
    if np_fn is not None:
        fns["numpy"] = lambda: np_fn(*arrays)
    if torch is not None:
        ts = [torch.from_numpy(x) for x in arrays]
        fns["torch"] = lambda: pt_fn(*ts)
    for dev in devices:
        ts = [em.from_numpy(x).to(dev) for x in arrays]
        sync = sync_for(dev)
        fns[f"ember:{dev}"] = lambda ts=ts, sync=sync: (em_fn(*ts), sync())
    return harness.measure(fns, quick)


def sync_for(dev):
    return em.opencl.synchronize if dev.startswith("opencl") else (lambda: None)


def digits_steps(devices):
    from ember import nn
    DigitsCNN = harness.load_example("train_digits.py").DigitsCNN
    rng = np.random.default_rng(0)
    x = em.from_numpy(rng.random((64, 1, 8, 8), dtype=np.float32))
    y = em.from_numpy(rng.integers(0, 10, 64))
    steps = {}
    for dev in devices:
        model = DigitsCNN().to(dev)
        opt = em.optim.Adam(model.parameters(), lr=3e-3)
        loss_fn = nn.CrossEntropyLoss()

        def step(model=model, opt=opt, loss_fn=loss_fn, dev=dev):
            opt.zero_grad()
            loss = loss_fn(model(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
            return loss.item()
        steps[dev] = step
    return steps


def gpt_steps(devices, case="gpt_small"):
    """bench_models.py's GPT step `case` on each device (the batch moved there once)."""
    import bench_models
    steps = {}
    for dev in devices:
        model, step = bench_models.setup_case(em, case, dev)
        steps[dev] = (lambda step=step: step(lambda: None).item())
    return steps


def training_step(make_steps, devices, quick):
    """Time per step on each device, and on a device the launches and transfers of one
    (with `kernels`: launches per kernel name)."""
    steps = make_steps(devices)
    st = harness.measure(steps, quick)
    counts = {}
    for dev, step in steps.items():
        if dev != "cpu":
            backend = em._C.core.backend_for(em.device(dev))
            kernels = {}
            launch = backend.launch

            def counted(device, kernel, *args, launch=launch, kernels=kernels):
                kernels[kernel] = kernels.get(kernel, 0) + 1
                return launch(device, kernel, *args)
            backend.launch = counted     # an instance attribute: shadows the method
            try:
                backend.reset_counters()
                step()
                counts[dev] = dict(backend.counters(), kernels=kernels)
            finally:
                del backend.launch
    return st, counts


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--devices", default="cpu,opencl" if em.opencl.is_available() else "cpu")
    ap.add_argument("--steps-only", action="store_true",
                    help="the training steps only (not the per-op table)")
    ap.add_argument("--top", type=int, default=0, metavar="N",
                    help="print each device step's N most launched kernels")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    devices = args.devices.split(",")
    print(harness.describe(info))
    if "opencl" in devices:
        print(f"# opencl:0 = {em.opencl.get_device_name(0)}")
    cols = ["numpy"] + (["torch"] if "torch" in mods else []) + [f"ember:{d}" for d in devices]
    rows, results = [], {}
    for name, arrays, generic, np_fn in [] if args.steps_only else cases(args.quick):
        st = results[name] = run_case(mods, name, arrays, generic, np_fn, devices, args.quick)
        rows.append([name] + [harness.fmt_time(st[c]["median"]) if c in st else "-"
                              for c in cols] +
                    [harness.fmt_ratio(harness.ratio(st, "numpy", f"ember:{d}"))
                     for d in devices])
    if rows:
        print(harness.table(["case"] + cols + [f"np/{d}" for d in devices], rows))
    train = {}
    for title, make_steps in (
            ("digits CNN training step (batch 64, Adam)", digits_steps),
            ("small GPT training step (bench_models gpt_small: 2 layers, d=64)", gpt_steps),
            ("GPT step in bfloat16 autocast (bench_models gpt_amp_bf16: 2 layers, d=128)",
             lambda devices: gpt_steps(devices, "gpt_amp_bf16")),
            ("GPT step in float16 autocast + GradScaler (the same GPT, gpt_amp_f16)",
             lambda devices: gpt_steps(devices, "gpt_amp_f16"))):
        print(f"\n{title}: time per step, and per step on a device: kernel launches / "
              "host transfers / deferred-check reads")
        st, counts = train[title] = training_step(make_steps, devices, args.quick)
        for dev, s in st.items():
            c = counts.get(dev)
            extra = f"  launches {c['launches']}, host transfers {c['host_transfers']}, " \
                    f"check reads {c['check_reads']}" if c else ""
            print(f"  {dev:10} {harness.fmt_time(s['median']):>10}{extra}")
            if c and args.top:
                top = sorted(c["kernels"].items(), key=lambda kv: -kv[1])[:args.top]
                print("             " + ", ".join(f"{k} {n}" for k, n in top))
    harness.save(args, info=info, results=results, train_steps=train)


if __name__ == "__main__":
    main()
