"""End to end across the packages: the README's training loops learn, and a saved
model reloads to identical outputs."""
import os

import numpy as np
import pytest

import ember as em

nn = pytest.importorskip("ember.nn", reason="needs ember-nn")
data = pytest.importorskip("ember.data", reason="needs ember-data")


def test_quickstart_loop_loss_falls():
    em.manual_seed(0)
    x = em.randn(512, 10)
    y = x @ em.randn(10, 1) + 0.1 * em.randn(512, 1)
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = em.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    with em.no_grad():
        first = float(loss_fn(model(x), y))
    for _ in range(5):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
    with em.no_grad():
        assert float(loss_fn(model(x), y)) < 0.1 * first


def test_mlp_learns_xor():
    em.manual_seed(1)
    x = em.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = em.tensor([0, 1, 1, 0])
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = em.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    assert model(x).argmax(1).tolist() == [0, 1, 1, 0]


def test_save_load_gives_identical_outputs(tmp_path):
    em.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    opt = em.optim.Adam(model.parameters(), lr=1e-2)
    x = em.randn(8, 1, 8, 8)
    for _ in range(3):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    model.eval()
    path = os.path.join(tmp_path, "model.safetensors")
    em.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    loaded = em.load(path)
    clone = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    clone.load_state_dict(loaded["model"])
    clone.eval()
    assert loaded["epoch"] == 3
    np.testing.assert_array_equal(clone(x).detach().numpy(), model(x).detach().numpy())
    opt2 = em.optim.Adam(clone.parameters(), lr=1e-2)
    opt2.load_state_dict(loaded["optim"])
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
