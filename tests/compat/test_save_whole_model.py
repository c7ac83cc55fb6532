"""PyTorch habit: save the whole model (and a training checkpoint), reload it, keep
training; load a state dict that PyTorch wrote. Written as PyTorch code, with only the
import changed."""
import os
import pickle

import pytest

import ember as torch

nn = pytest.importorskip("ember.nn", reason="needs ember-nn")
optim = pytest.importorskip("ember.optim", reason="needs ember-nn")
F = nn.functional

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "packages", "tensor-core", "tests",
                    "data")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)
        self.register_buffer("seen", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.seen += 1
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


def _batch():
    torch.manual_seed(0)
    return torch.randn(16, 1, 8, 8), torch.randint(0, 3, (16,))


def _train(model, optimizer, steps):
    x, y = _batch()
    losses = []
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_save_the_whole_model_reload_it_keep_training(tmp_path):
    torch.manual_seed(1)
    model = Net()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    first = _train(model, optimizer, 5)

    torch.save(model, tmp_path / "model.pt")
    torch.save({"epoch": 5, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(), "loss": first[-1]},
               tmp_path / "checkpoint.pt")

    loaded = torch.load(tmp_path / "model.pt", weights_only=False)
    assert type(loaded) is Net and loaded is not model
    assert loaded.seen.item() == model.seen.item() == 5
    assert all(isinstance(p, nn.Parameter) for p in loaded.parameters())
    model.eval()
    loaded.eval()
    x, _ = _batch()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))

    checkpoint = torch.load(tmp_path / "checkpoint.pt")          # weights_only: plain data
    assert checkpoint["epoch"] == 5
    resumed = optim.Adam(loaded.parameters(), lr=1e-2)
    resumed.load_state_dict(checkpoint["optimizer_state_dict"])

    ours = _train(model, optimizer, 5)                 # both keep training the same way
    theirs = _train(loaded, resumed, 5)
    assert theirs == pytest.approx(ours, rel=1e-5, abs=1e-6)
    assert theirs[-1] < first[0]

    # weights_only=True (the default) refuses the pickled classes, naming them
    with pytest.raises(pickle.UnpicklingError, match=r"refuses the global .*Net"):
        torch.load(tmp_path / "model.pt")


def test_load_a_state_dict_pytorch_wrote():
    """packages/tensor-core/tests/data/torch_linear_conv.pt was written by PyTorch
    (make_torch_fixtures.py there): the same architecture loads it and gives PyTorch's
    outputs."""
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(12, 4))
    missing = model.load_state_dict(torch.load(os.path.join(DATA, "torch_linear_conv.pt")))
    assert not missing.missing_keys and not missing.unexpected_keys
    model.eval()
    io = torch.load(os.path.join(DATA, "torch_linear_conv_io.pt"), map_location="cpu")
    with torch.no_grad():
        out = model(io["input"])
    assert torch.allclose(out, io["output"], atol=1e-5)
    assert model[1].num_batches_tracked.item() == 7
