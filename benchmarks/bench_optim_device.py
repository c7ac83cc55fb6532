#!/usr/bin/env python
"""An AdamW step of bench_models' small GPT's 28 parameters on a device, three ways, in
one run: the multi-tensor kernels (16 tensors a launch, each its own buffer: what
ember.optim runs), one launch per parameter (the same kernel with one slot each: the
per-tensor form before), and the parameters packed in one flat buffer (one slot: the
lower bound of a flat-parameter design, which would also need the gradients in one
buffer, i.e. a copy per gradient each step).

    python benchmarks/bench_optim_device.py [--quick] [--device opencl] [--json PATH]

Each call ends with a synchronize; medians of interleaved rounds (harness.py).
"""
from __future__ import annotations

import math

import ember as em
import harness

# bench_models gpt_small (2 layers, d=64, block 64, vocab 65; the head tied to wte)
SHAPES = ([(65, 64), (64, 64)] + 2 * [(64,), (64,), (192, 64), (192,), (64, 64), (64,),
                                      (64,), (64,), (256, 64), (256,), (64, 256), (64,)]
          + [(64,), (64,)])


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--device", default="opencl")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    dev = em.device(args.device)
    backend = em._C.core.backend_for(dev)
    sync = em.opencl.synchronize if dev.type == "opencl" else em.cuda.synchronize
    print(harness.describe(harness.libs(args.threads, torch=False)[1]))
    print(f"# {len(SHAPES)} parameters, {sum(math.prod(s) for s in SHAPES)} elements")

    def tensors(shapes):
        return [[em.randn(*s, device=dev) for s in shapes] for _ in range(4)]

    def state(shapes):
        p, g, m, v = tensors(shapes)
        v = [x.abs() for x in v]
        return p, g, m, v, [None] * len(p), [em.zeros((), device=dev) for _ in p]

    hyper = (1e-3, 0.9, 0.99, 1e-8, 0.1, True, False)
    split, flat = state(SHAPES), state([(sum(math.prod(s) for s in SHAPES),)])

    def multi():
        backend.adam_(*split, *hyper)
        sync()

    def per_tensor():
        for i in range(len(SHAPES)):
            backend.adam_(*[[xs[i]] for xs in split], *hyper)
        sync()

    def packed():
        backend.adam_(*flat, *hyper)
        sync()

    launches = {}
    for name, f in (("multi-tensor", multi), ("per tensor", per_tensor), ("flat", packed)):
        f()
        backend.reset_counters()
        f()
        launches[name] = backend.counters()["launches"]
    st = harness.measure({"multi-tensor": multi, "per tensor": per_tensor, "flat": packed},
                         args.quick)
    rows = [[name, str(launches[name]), harness.fmt_time(s["median"]),
             f"{s['median'] / st['multi-tensor']['median']:.2f}"] for name, s in st.items()]
    print(harness.table(["AdamW step", "launches", "time", "/ multi-tensor"], rows))
    harness.save(args, results=st, launches=launches)


if __name__ == "__main__":
    main()
