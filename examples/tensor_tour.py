"""The main job until ember-nn lands: tensor-core at work on a small, real problem.

Fits a linear regression y = X w + noise by full-batch gradient descent written with
ember tensor ops only (random numbers, broadcasting, reductions, views, in-place
updates), then checks the fitted weights against the ones that made the data.
"""
import time

import ember as em


def main():
    em.manual_seed(0)
    n, d = 8192, 32
    X = em.randn(n, d)
    true_w = em.linspace(-1.0, 1.0, d)
    y = (X * true_w).sum(dim=1) + 0.01 * em.randn(n)

    w = em.zeros(d)
    lr = 0.1
    start = time.perf_counter()
    for step in range(201):
        err = (X * w).sum(dim=1) - y                   # (n,)   broadcasting
        grad = (X * err.unsqueeze(1)).mean(dim=0)      # (d,)   a reduction over rows
        w -= lr * grad                                 # in place
        if step % 40 == 0:
            print(f"step {step:3d}  mse {(err * err).mean().item():.6f}")
    elapsed = time.perf_counter() - start
    gap = (w - true_w).abs().max().item()
    print(f"max |w - true_w| = {gap:.4f} after 201 steps ({elapsed * 1000:.0f} ms)")
    print("first weights:", w[:4])
    if gap > 0.01:
        raise SystemExit(f"regression did not converge: max error {gap}")


if __name__ == "__main__":
    main()
