"""Train a small CNN on scikit-learn's handwritten digits (1,797 8x8 images) on the
default device, save it with em.save, load it back and check the accuracy again.

    python examples/train_digits.py [--epochs 30] [--device cpu|cuda|opencl]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

import ember as em
from ember import nn
from ember.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 2 x 2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def default_device():
    if em.cuda.is_available():
        return "cuda"
    return "cpu"


def progress(epoch, epochs, done, total, loss, width=30):
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    sys.stdout.write(f"\repoch {epoch + 1:2d}/{epochs} [{bar}] loss {loss:.4f}")
    sys.stdout.flush()


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    with em.no_grad():
        for xb, yb in loader:
            pred = model(xb.to(device)).argmax(1).cpu()
            correct += int((pred == yb).sum())
            total += len(yb)
    model.train()
    return correct / total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--device", default=default_device())
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    em.manual_seed(args.seed)

    from sklearn.datasets import load_digits  # here: DigitsCNN imports without scikit-learn
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]     # N x 1 x 8 x 8
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(labels))
    split = int(0.8 * len(labels))
    train_idx, test_idx = order[:split], order[split:]
    train = TensorDataset(em.from_numpy(images[train_idx]), em.from_numpy(labels[train_idx]))
    test = TensorDataset(em.from_numpy(images[test_idx]), em.from_numpy(labels[test_idx]))
    train_loader = DataLoader(train, batch_size=64, shuffle=True)
    test_loader = DataLoader(test, batch_size=256)

    model = DigitsCNN().to(args.device)
    optimizer = em.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training on {args.device}: {len(train)} images, testing on {len(test)}")
    start = time.perf_counter()
    for epoch in range(args.epochs):
        running, seen = 0.0, 0
        for i, (xb, yb) in enumerate(train_loader):
            xb, yb = xb.to(args.device), yb.to(args.device)
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            running += loss.item() * len(yb)
            seen += len(yb)
            progress(epoch, args.epochs, i + 1, len(train_loader), running / seen)
        sys.stdout.write("\n")
    elapsed = time.perf_counter() - start
    acc = accuracy(model, test_loader, args.device)
    print(f"test accuracy {acc:.2%} after {args.epochs} epochs in {elapsed:.1f} s")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits_cnn.safetensors")
        em.save(model.state_dict(), path)
        reloaded = DigitsCNN().to(args.device)
        reloaded.load_state_dict(em.load(path))
        again = accuracy(reloaded, test_loader, args.device)
        print(f"saved to {os.path.basename(path)} ({os.path.getsize(path)} bytes), reloaded: "
              f"test accuracy {again:.2%}")
    if again != acc:
        sys.exit("the reloaded model does not reproduce the accuracy")


if __name__ == "__main__":
    main()
