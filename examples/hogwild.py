"""Hogwild: several processes train one model in shared memory, without locks, on
scikit-learn's handwritten digits; then the same training in one process, for
comparison.

    python examples/hogwild.py --processes 2 [--epochs 20] [--model cnn|mlp]
                               [--start-method spawn|fork|forkserver]

`model.share_memory()` moves the parameters into shared memory. Each process gets
the model (its parameters arrive as views of the same memory), takes its own shard
of the training data and runs its own optimizer, whose in-place updates every
other process sees at once (Hogwild!, Niu et al. 2011). Every process does
`--epochs` passes over its shard, so all of them together see the data as often as
the single process does in `--epochs` epochs, from the same initial weights.
"""
import argparse
import os
import time

import ember as em
import ember.multiprocessing as mp
from ember import nn


class DigitsCNN(nn.Module):
    """The small CNN of examples/train_digits.py (8x8 images)."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 2 x 2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(128, classes))

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)))


def make_model(kind, in_features=64, classes=10, hidden=128):
    if kind == "cnn":
        return DigitsCNN(classes)
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def train_worker(rank, model, x, y, cfg):
    """One Hogwild process: SGD on shard `rank` of (x, y), updating `model` in place."""
    em.set_num_threads(cfg["threads"])
    em.manual_seed(cfg["seed"] * 1000 + rank)
    shard = em.arange(rank, len(y), cfg["processes"])
    xs, ys = x[shard], y[shard]
    optimizer = em.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    n, bs = len(ys), cfg["batch_size"]
    for _ in range(cfg["epochs"]):
        order = em.randperm(n)
        for i in range(0, n, bs):
            idx = order[i:i + bs]
            optimizer.zero_grad()
            loss = loss_fn(model(xs[idx]), ys[idx])
            loss.backward()
            optimizer.step()


def train(model, x, y, processes, cfg, start_method=None):
    """Train `model` on (x, y) with `processes` Hogwild processes (1: in this process).
    Returns the wall time in seconds."""
    cfg = dict(cfg, processes=processes)
    start = time.perf_counter()
    if processes == 1:
        threads = em.get_num_threads()
        train_worker(0, model, x, y, dict(cfg, threads=cfg.get("threads") or threads))
        em.set_num_threads(threads)
    else:
        cfg.setdefault("threads", max(1, (os.cpu_count() or 1) // processes))
        model.share_memory()
        x.share_memory_()       # the data too: the processes map it, nobody copies it
        y.share_memory_()
        mp.spawn(train_worker, args=(model, x, y, cfg), nprocs=processes,
                 start_method=start_method or mp.get_start_method())
    return time.perf_counter() - start


def accuracy(model, x, y):
    model.eval()
    with em.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return float((pred == y).sum()) / len(y)


def compare(kind, x_train, y_train, x_test, y_test, processes, cfg, start_method=None,
            classes=10, hidden=128):
    """Hogwild with `processes` processes, then one process, from the same initial
    weights. Returns {'hogwild': acc, 'single': acc, 'hogwild_s': s, 'single_s': s}."""
    em.manual_seed(cfg["seed"])
    init = {k: v.clone() for k, v in
            make_model(kind, x_train.shape[1], classes, hidden).state_dict().items()}
    results = {}
    for name, n in (("hogwild", processes), ("single", 1)):
        model = make_model(kind, x_train.shape[1], classes, hidden)
        model.load_state_dict(init)
        results[name + "_s"] = train(model, x_train, y_train, n, cfg, start_method)
        results[name] = accuracy(model, x_test, y_test)
    return results


def load_digits_data(seed):
    """scikit-learn's digits, split 80/20 as examples/train_digits.py does."""
    import numpy as np
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32).reshape(len(digits.target), 64)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    tr, te = order[:split], order[split:]
    return (em.from_numpy(images[tr].copy()), em.from_numpy(labels[tr].copy()),
            em.from_numpy(images[te].copy()), em.from_numpy(labels[te].copy()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--start-method", choices=mp.get_all_start_methods(),
                    default=mp.get_start_method())
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    x_train, y_train, x_test, y_test = load_digits_data(args.seed)
    cfg = dict(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
               momentum=args.momentum, seed=args.seed)
    print(f"{args.model} on digits: {len(y_train)} training images, {len(y_test)} test; "
          f"{args.epochs} epochs; Hogwild with {args.processes} processes "
          f"({args.start_method}) vs 1 process")
    r = compare(args.model, x_train, y_train, x_test, y_test, args.processes, cfg,
                args.start_method)
    print(f"hogwild, {args.processes} processes: test accuracy {r['hogwild']:.2%} "
          f"({r['hogwild_s']:.1f} s)")
    print(f"single process:       test accuracy {r['single']:.2%} ({r['single_s']:.1f} s)")
    print(f"difference: {100 * (r['hogwild'] - r['single']):+.1f} points")


if __name__ == "__main__":
    main()
