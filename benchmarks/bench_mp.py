#!/usr/bin/env python
"""Sending a 100 MB tensor through a multiprocessing Queue to another process:
ember.multiprocessing's shared memory beside pickling the bytes.

    python benchmarks/bench_mp.py [--mb 100] [--rounds 7] [--start-method spawn]

Each round puts one object on a Queue; a child process gets it and answers on a
second Queue; the time is put -> answer received (the child does not read the
data, it only receives it). Cases, medians over rounds:
- bytes_pickled: a NumPy array (pickled by value: the bytes go through the pipe).
  The baseline.
- ember_shared: an ember tensor already in shared memory (t.share_memory_(), or sent
  before): only a handle travels and the child maps the same memory.
- ember_first_send: a new ember tensor each round, not shared yet: sending moves its
  storage into shared memory first (written into a new segment), as a DataLoader
  worker's fresh batch does.
- torch_shared: the same with torch.multiprocessing, when torch is installed.
Both sharing strategies are measured for ember. The target: ember_shared at least
10x faster than bytes_pickled. Nothing asserts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("tensor-core", "autograd", "nn", "mp"):
    sys.path.insert(0, os.path.join(HERE, "..", "packages", sub, "src"))
# children started with spawn find ember the same way
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(HERE, "..", "packages", sub, "src") for sub in ("tensor-core", "mp")]
    + [os.environ.get("PYTHONPATH", "")])


def child(inbox, outbox, use_torch):
    if use_torch:
        import torch.multiprocessing  # noqa: F401  (its reducers)
    import ember.multiprocessing  # noqa: F401
    while True:
        item = inbox.get()
        if item is None:
            break
        outbox.put(len(item))
        del item


def measure(ctx, make, send_each, rounds, use_torch=False):
    """Median seconds from put to answer; make() builds the object (not timed)."""
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox, use_torch))
    p.start()
    times = []
    obj = make()
    for r in range(rounds + 1):
        if send_each:
            obj = make()
        t0 = time.perf_counter()
        inbox.put(obj)
        outbox.get()
        dt = time.perf_counter() - t0
        if r:                   # round 0 warms the child up (imports, first mapping)
            times.append(dt)
    inbox.put(None)
    p.join()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--start-method", default="spawn")
    args = ap.parse_args()
    import numpy as np
    import ember as em
    import ember.multiprocessing as mp
    ctx = mp.get_context(args.start_method)
    n = args.mb * (1 << 20) // 4
    print(f"{args.mb} MB float32 through a Queue ({args.start_method}), "
          f"median of {args.rounds} rounds")
    results = {}
    base = measure(ctx, lambda: np.ones(n, np.float32), False, args.rounds)
    results["bytes_pickled"] = base
    for strategy in ("file_descriptor", "file_system"):
        mp.set_sharing_strategy(strategy)
        results[f"ember_shared ({strategy})"] = measure(
            ctx, lambda: em.ones(n).share_memory_(), False, args.rounds)
        results[f"ember_first_send ({strategy})"] = measure(
            ctx, lambda: em.ones(n), True, args.rounds)
    mp.set_sharing_strategy("file_descriptor")
    try:
        import torch
        import torch.multiprocessing as tmp
        tctx = tmp.get_context(args.start_method)
        results["torch_shared (file_descriptor)"] = measure(
            tctx, lambda: torch.ones(n).share_memory_(), False, args.rounds, use_torch=True)
        results["torch_first_send (file_descriptor)"] = measure(
            tctx, lambda: torch.ones(n), True, args.rounds, use_torch=True)
    except ImportError:
        pass
    print(f"{'case':38s} {'time':>10s} {'speedup vs bytes':>17s}")
    for name, t in results.items():
        print(f"{name:38s} {t * 1e3:7.2f} ms {base / t:16.1f}x")
    ratio = base / results["ember_shared (file_descriptor)"]
    print(f"ember_shared vs bytes_pickled: {ratio:.1f}x (target >= 10x) "
          f"{'ok' if ratio >= 10 else 'FAIL'}")


if __name__ == "__main__":
    main()
