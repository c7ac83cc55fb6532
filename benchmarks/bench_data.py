#!/usr/bin/env python
"""ember.data's DataLoader beside PyTorch's torch.utils.data.DataLoader.

    python benchmarks/bench_data.py [--rounds N] [--epochs N] [--quick] [--json PATH]
    python benchmarks/bench_data.py --memory [--mb 300] [--workers 4]

Throughput (the default): a DataLoader over TensorDataset(x, y), x 60,000 x 784
float32 and y 60,000 int64 labels, batch 256, shuffle=True (235 batches an epoch);
the loop body only touches each batch. Cases, as batches per second (higher is
better; ratio = ember / torch, target >= 1.0):

- workers0: num_workers=0.
- workers2: num_workers=2, persistent_workers=True; steady state (the epochs after
  the first), so worker start-up is not counted.
- workers2_cold: num_workers=2 without persistent workers; one whole epoch including
  starting and stopping the workers.

Interleaved rounds (benchmarks/harness.py), each sample --epochs epochs; medians
over rounds (--quick: 2 rounds). Each library has its own copy of the same data.
ember's workers send batches through ember.multiprocessing's shared memory when it
is installed, else pickled by value (the header says which). Threads: --threads
(default 1) for both libraries and every pool. Without torch only ember's rates
are shown.

--memory: each worker's unique memory (USS = Private_Clean + Private_Dirty from
/proc/<pid>/smaps_rollup) and proportional share (PSS) after the first and after the
last of ``--mem-epochs`` shuffled epochs (persistent workers) over a dataset of
``--mb`` MiB of 1 KiB bytes items held (a) as a plain Python list and (b) as an
ember.data.SharedList, with ``--workers`` fork workers; no PyTorch. Linux only. Each
worker reads the items of the batches it is given (a quarter of them an epoch with
4 workers), so with a list its copy grows epoch after epoch towards the whole
dataset.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

import harness

N, D, BATCH = 60_000, 784, 256


def make_loader(mod, data_mod, x, y, workers, persistent):
    ds = data_mod.TensorDataset(x, y)
    gen = mod.Generator().manual_seed(0)
    kw = dict(batch_size=BATCH, shuffle=True, generator=gen, num_workers=workers)
    if workers:
        kw["persistent_workers"] = persistent
    return data_mod.DataLoader(ds, **kw)


def epoch(loader):
    for _ in loader:
        pass


def bench_throughput(args):
    import ember.data
    mods, info = harness.libs(args.threads)
    del mods["numpy"]
    data_mods = {"ember": ember.data}
    if "torch" in mods:
        import torch.utils.data
        data_mods["torch"] = torch.utils.data
    try:
        import ember.multiprocessing  # noqa: F401
        transport = "shared memory (ember.multiprocessing)"
    except ImportError:
        transport = "pickled by value (no ember.multiprocessing)"
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, D)).astype(np.float32)
    yn = rng.integers(0, 10, size=N).astype(np.int64)
    data = {lib: (m, data_mods[lib], m.from_numpy(xn.copy()), m.from_numpy(yn.copy()))
            for lib, m in mods.items()}
    # correctness first: the same batches (up to the libraries' different shuffles)
    for lib, (_, dm, x, y) in data.items():
        loader = dm.DataLoader(dm.TensorDataset(x, y), batch_size=BATCH, num_workers=2)
        xb, yb = next(iter(loader))
        assert tuple(xb.shape) == (BATCH, D) and np.array_equal(xb.numpy(), xn[:BATCH]), lib
        assert np.array_equal(yb.numpy(), yn[:BATCH]), lib
    print(harness.describe(info))
    print(f"# ember's workers send tensors {transport}; batches per second, higher is better")
    rows, results = [], {}
    for case, workers, persistent in (("workers0", 0, False), ("workers2", 2, True),
                                      ("workers2_cold", 2, False)):
        loaders = {lib: make_loader(*d, workers, persistent)
                   for lib, d in data.items()}
        batches = len(next(iter(loaders.values())))
        # the warm-up epoch also starts persistent workers
        st = harness.measure({lib: (lambda ld=ld: epoch(ld)) for lib, ld in loaders.items()},
                             number=args.epochs, reps=2 if args.quick else args.rounds)
        del loaders
        gc.collect()
        results[case] = st
        rate = {lib: batches / s["median"] for lib, s in st.items()}
        r = harness.ratio(st, "torch")
        rows.append([case, f"{rate['ember']:.0f}",
                     f"{rate['torch']:.0f}" if "torch" in rate else "-",
                     harness.fmt_ratio(r), ">= 1.0", harness.verdict(r, 1.0)])
    print(harness.table(["case", "ember b/s", "torch b/s", "em/pt", "target", "result"],
                        rows, left={"case", "result"}))
    harness.save(args, info=info, transport=transport, batches_per_epoch=batches,
                 results=results)


def uss(pid):
    """Private_Clean + Private_Dirty of a process, in bytes."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    return total


def pss(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


def bench_memory(args):
    import warnings
    warnings.filterwarnings("ignore", message="DataLoader: this process may use")
    import ember as em  # noqa: F401
    import ember.data as emd

    class Items(emd.Dataset):
        """Returns each item's length: the read is what matters, not the transfer."""

        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return len(self.items[i])

    item = 1024
    n = args.mb * 2**20 // item
    if not args.memory_case:
        print(f"dataset: {n} items of {item} bytes = {n * item / 2**20:.0f} MiB of payload; "
              f"{args.workers} workers (fork), batch 1024, shuffle; sizes in MiB")
        print(f"{'container':12s} {'epochs':>6s} {'parent USS':>11s} "
              f"{'worker USS (each)':>30s} {'worker PSS (each)':>30s}", flush=True)
    kinds = [args.memory_case] if args.memory_case else ["list", "SharedList"]
    if not args.memory_case:
        # each container in a fresh process, so that neither inherits the other's heap
        import subprocess
        for kind in kinds:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--memory",
                            "--memory-case", kind, "--mb", str(args.mb), "--workers",
                            str(args.workers), "--mem-epochs", str(args.mem_epochs)],
                           check=True)
        return
    kind = kinds[0]
    t0 = time.perf_counter()
    raw = (os.urandom(8) * (item // 8) for _ in range(n))
    items = list(raw) if kind == "list" else emd.SharedList(raw)
    build = time.perf_counter() - t0
    loader = emd.DataLoader(Items(items), batch_size=1024, num_workers=args.workers,
                            shuffle=True, persistent_workers=True)
    for ep in range(1, args.mem_epochs + 1):
        total = sum(int(b.sum()) for b in loader)
        assert total == n * item
        if ep not in (1, args.mem_epochs):
            continue
        pids = [w.pid for w in loader._iterator._workers]
        w_uss = [uss(p) / 2**20 for p in pids]
        w_pss = [pss(p) / 2**20 for p in pids]
        print(f"{kind:12s} {ep:6d} {uss(os.getpid()) / 2**20:11.0f} "
              f"{' '.join(f'{u:6.0f}' for u in w_uss):>30s} "
              f"{' '.join(f'{u:6.0f}' for u in w_pss):>30s}", flush=True)
    print(f"{'':12s} (built in {build:.1f} s)", flush=True)


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1, help="epochs per timed round")
    ap.add_argument("--memory", action="store_true", help="measure worker memory instead")
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--mem-epochs", type=int, default=4)
    ap.add_argument("--memory-case", choices=("list", "SharedList"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    if args.memory:
        bench_memory(args)
    else:
        bench_throughput(args)


if __name__ == "__main__":
    main()
