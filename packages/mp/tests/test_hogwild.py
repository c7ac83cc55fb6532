"""A short run of examples/hogwild.py on synthetic data (no scikit-learn): processes
updating one shared model without locks reach the single-process accuracy."""
import os
import sys

import pytest

import ember as em

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))     # spawn children import it too
import hogwild  # noqa: E402


def blobs(n, dims=16, classes=6, seed=0):
    """Overlapping Gaussian blobs: hard enough that accuracy is not 100%."""
    g = em.Generator().manual_seed(seed)
    centers = em.randn(classes, dims, generator=em.Generator().manual_seed(123)) * 1.2
    y = em.randint(0, classes, (n,), generator=g)
    x = centers[y] + em.randn(n, dims, generator=g)
    return x, y


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_matches_single_process(method):
    x, y = blobs(1200, seed=1)
    xt, yt = blobs(600, seed=2)
    cfg = dict(epochs=4, batch_size=32, lr=0.05, momentum=0.9, seed=0, threads=1)
    r = hogwild.compare("mlp", x, y, xt, yt, 2, cfg, method, classes=6, hidden=32)
    assert r["single"] > 0.7, r
    assert abs(r["hogwild"] - r["single"]) <= 0.05, r
