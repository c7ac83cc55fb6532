#!/usr/bin/env python
"""ember.data's DataLoader beside PyTorch's torch.utils.data.DataLoader.

    python benchmarks/bench_data.py [--rounds N] [--epochs N]
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

Each round runs both libraries (alternating which goes first); the table shows
medians over rounds. Each library has its own copy of the same data. ember's
workers send batches through ember.multiprocessing's shared memory when it is
installed, else pickled by value (the header says which). Threads: 1 for both
libraries (OMP/OpenBLAS/MKL/EMBER_NUM_THREADS=1 and torch.set_num_threads(1)).

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
import statistics
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[var] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("tensor-core", "autograd", "nn", "data", "mp"):
    path = os.path.join(HERE, "..", "packages", sub, "src")
    if os.path.isdir(path):
        sys.path.insert(0, path)

import numpy as np  # noqa: E402

N, D, BATCH = 60_000, 784, 256


def make_loaders(lib, mod, data_mod, x, y, workers, persistent):
    ds = data_mod.TensorDataset(x, y)
    gen = mod.Generator().manual_seed(0)
    kw = dict(batch_size=BATCH, shuffle=True, generator=gen, num_workers=workers)
    if workers:
        kw["persistent_workers"] = persistent
    return data_mod.DataLoader(ds, **kw)


def epoch(loader):
    n = 0
    for xb, yb in loader:
        n += 1
    return n


def bench_throughput(args):
    import ember as em
    import ember.data as emd
    import torch
    import torch.utils.data as tdata
    em.set_num_threads(1)
    torch.set_num_threads(1)
    try:
        import ember.multiprocessing  # noqa: F401
        transport = "shared memory (ember.multiprocessing)"
    except ImportError:
        transport = "pickled by value (no ember.multiprocessing)"
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, D)).astype(np.float32)
    yn = rng.integers(0, 10, size=N).astype(np.int64)
    libs = {"ember": (em, emd, em.from_numpy(xn.copy()), em.from_numpy(yn.copy())),
            "torch": (torch, tdata, torch.from_numpy(xn.copy()), torch.from_numpy(yn.copy()))}
    # correctness first: the same batches (up to the libraries' different shuffles)
    for lib, (mod, dm, x, y) in libs.items():
        loader = dm.DataLoader(dm.TensorDataset(x, y), batch_size=BATCH, num_workers=2)
        xb, yb = next(iter(loader))
        assert tuple(xb.shape) == (BATCH, D) and np.array_equal(xb.numpy(), xn[:BATCH]), lib
        assert np.array_equal(yb.numpy(), yn[:BATCH]), lib
    print(f"ember {em.__version__}, torch {torch.__version__}; ember's workers send tensors "
          f"{transport}; {os.cpu_count()} CPUs")
    print(f"{'case':16s} {'ember b/s':>10s} {'torch b/s':>10s} {'em/pt':>7s} {'target':>8s}")
    results = {}
    for case, workers, persistent in (("workers0", 0, False), ("workers2", 2, True),
                                      ("workers2_cold", 2, False)):
        loaders = {lib: make_loaders(lib, mod, dm, x, y, workers, persistent)
                   for lib, (mod, dm, x, y) in libs.items()}
        rates = {lib: [] for lib in libs}
        for lib in libs:                  # warm up (and start persistent workers)
            epoch(loaders[lib])
        for r in range(args.rounds):
            for lib in (list(libs) if r % 2 == 0 else list(libs)[::-1]):
                t0 = time.perf_counter()
                n = sum(epoch(loaders[lib]) for _ in range(args.epochs))
                rates[lib].append(n / (time.perf_counter() - t0))
        del loaders
        gc.collect()
        med = {lib: statistics.median(v) for lib, v in rates.items()}
        ratio = med["ember"] / med["torch"]
        results[case] = (med, ratio)
        print(f"{case:16s} {med['ember']:10.0f} {med['torch']:10.0f} {ratio:7.2f} "
              f"{'>= 1.0':>8s} {'ok' if ratio >= 1.0 else 'FAIL'}", flush=True)
    return results


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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1, help="epochs per timed round")
    ap.add_argument("--memory", action="store_true", help="measure worker memory instead")
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--mem-epochs", type=int, default=4)
    ap.add_argument("--memory-case", choices=("list", "SharedList"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory:
        bench_memory(args)
    else:
        bench_throughput(args)


if __name__ == "__main__":
    main()
