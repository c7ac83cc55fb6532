"""Train the digits CNN of train_digits.py data-parallel: every rank holds the model,
reads its shard of each epoch (DistributedSampler) and DistributedDataParallel averages
the gradients, so all ranks take the same steps as one process on the global batch.

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_digits.py [--epochs 15]
    mpiexec -n 2 python examples/ddp_digits.py          # the same, started by MPI itself
    mpiexec -f hosts -n 8 python examples/ddp_digits.py  # across machines (MPICH hostfile)
"""
import argparse
import sys
import time

import numpy as np
from sklearn.datasets import load_digits

import ember as em
import ember.distributed as dist
from ember import nn
from ember.data import DataLoader, DistributedSampler, TensorDataset
from ember.nn.parallel import DistributedDataParallel as DDP
from train_digits import DigitsCNN  # the model of the single-process example


def evaluate(model, loader):
    """Accuracy over the whole test set: each rank counts its shard, all_reduce sums."""
    model.eval()
    counts = em.zeros(2, dtype=em.int64)
    with em.no_grad():
        for xb, yb in loader:
            counts[0] += int((model(xb).argmax(1) == yb).sum())
            counts[1] += len(yb)
    model.train()
    dist.all_reduce(counts)
    return int(counts[0]) / int(counts[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=32, help="per rank")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    em.manual_seed(args.seed)

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train = TensorDataset(em.from_numpy(images[order[:split]]),
                          em.from_numpy(labels[order[:split]]))
    test = TensorDataset(em.from_numpy(images[order[split:]]),
                         em.from_numpy(labels[order[split:]]))
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    # drop_last=False pads the last shard with repeats; for an exact count every test
    # image is seen once: shard by hand
    test_loader = DataLoader(test, batch_size=256,
                             sampler=list(range(rank, len(test), world)))

    model = DDP(DigitsCNN())            # rank 0's initial weights go to every rank
    optimizer = em.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"{world} ranks, {len(train)} training images ({len(sampler)} per rank and "
              f"epoch), global batch {args.batch_size * world}")
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)        # a new shuffle, the same on every rank
        total = em.zeros(2, dtype=em.float64)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()             # gradients are averaged across ranks here
            optimizer.step()
            total[0] += loss.item() * len(yb)
            total[1] += len(yb)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1:2d}/{args.epochs} loss {float(total[0] / total[1]):.4f}")
    elapsed = time.perf_counter() - start
    acc = evaluate(model, test_loader)

    # every rank must hold the same parameters: compare with rank 0's
    flat = em.cat([p.detach().reshape(-1) for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    same = em.tensor([int(bool((flat == ref).all()))], dtype=em.int32)
    dist.all_reduce(same, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"test accuracy {acc:.2%} after {args.epochs} epochs in {elapsed:.1f} s; "
              f"parameters identical on all {world} ranks: {bool(same.item())}")
    dist.destroy_process_group()
    if not same.item() or acc < 0.9:
        sys.exit("ddp_digits: the ranks diverged or the model did not learn")


if __name__ == "__main__":
    main()
