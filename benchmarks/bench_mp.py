#!/usr/bin/env python
"""Sending a 100 MB tensor through a multiprocessing Queue to another process:
ember.multiprocessing's shared memory beside pickling the bytes.

    python benchmarks/bench_mp.py [--mb 100] [--rounds 7] [--start-method spawn] [--quick]
                                  [--json PATH]

Each case has its own child process; a sample puts one object on a Queue, the child
gets it and answers on a second Queue, and the time is put -> answer received (the
child does not read the data, it only receives it). Interleaved rounds (one sample
of every case each round, benchmarks/harness.py), after a warm-up round (imports,
first mapping); medians (--quick: 3 rounds). Cases:
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

import time

import harness


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


def sampler(ctx, make, send_each, strategy, mp, use_torch=False):
    """A child process for one case, and a function that takes one sample: seconds
    from put to answer (make() builds the object, not timed; a fresh one each sample
    with send_each). Returns (sample, stop)."""
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox, use_torch))
    p.start()
    if strategy:
        mp.set_sharing_strategy(strategy)
    kept = None if send_each else make()

    def sample():
        if strategy:      # the reduction of an ember tensor reads the current strategy
            mp.set_sharing_strategy(strategy)
        obj = make() if send_each else kept
        t0 = time.perf_counter()
        inbox.put(obj)
        outbox.get()
        return time.perf_counter() - t0

    def stop():
        inbox.put(None)
        p.join()
    return sample, stop


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--start-method", default="spawn")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    np, em = mods["numpy"], mods["ember"]
    import ember.multiprocessing as mp
    ctx = mp.get_context(args.start_method)
    n = args.mb * (1 << 20) // 4
    rounds = 3 if args.quick else args.rounds
    cases = {"bytes_pickled": sampler(ctx, lambda: np.ones(n, np.float32), False, None, mp)}
    for strategy in ("file_descriptor", "file_system"):
        cases[f"ember_shared ({strategy})"] = sampler(
            ctx, lambda: em.ones(n).share_memory_(), False, strategy, mp)
        cases[f"ember_first_send ({strategy})"] = sampler(
            ctx, lambda: em.ones(n), True, strategy, mp)
    if "torch" in mods:
        torch = mods["torch"]
        import torch.multiprocessing as tmp
        tctx = tmp.get_context(args.start_method)
        cases["torch_shared (file_descriptor)"] = sampler(
            tctx, lambda: torch.ones(n).share_memory_(), False, None, mp, use_torch=True)
        cases["torch_first_send (file_descriptor)"] = sampler(
            tctx, lambda: torch.ones(n), True, None, mp, use_torch=True)
    samples = harness.interleave({k: s for k, (s, _) in cases.items()}, rounds, warmup=1)
    for _, stop in cases.values():
        stop()
    mp.set_sharing_strategy("file_descriptor")
    st = {k: harness.stats(s) for k, s in samples.items()}
    print(harness.describe(info))
    print(f"# {args.mb} MB float32 through a Queue ({args.start_method}), "
          f"median of {rounds} rounds")
    print(harness.table(["case", "time", "speedup vs bytes"], [
        [k, harness.fmt_time(s["median"]), f"{harness.ratio(st, 'bytes_pickled', k):.1f}x"]
        for k, s in st.items()]))
    r = harness.ratio(st, "bytes_pickled", "ember_shared (file_descriptor)")
    print(f"ember_shared vs bytes_pickled: {r:.1f}x (target >= 10x) {harness.verdict(r, 10)}")
    harness.save(args, info=info, results=st)


if __name__ == "__main__":
    main()
