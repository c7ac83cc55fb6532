"""autograd and nn unchanged on a GPU backend (opencl here; cuda where built): a seeded
training run gives the CPU's losses step by step, a training step moves no data to the
host besides the batch and the loss (no op falls back to the host), and its kernel
launches are counted."""
import sys
from pathlib import Path

import numpy as np
import pytest

import ember as em

nn = pytest.importorskip("ember.nn", reason="needs ember-nn")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from train_digits import DigitsCNN  # noqa: E402  (found through the sys.path entry above)

DEVICES = [d for d, ok in (("opencl", em.opencl.is_available()), ("cuda", em.cuda.is_available()))
           if ok]
pytestmark = pytest.mark.skipif(not DEVICES, reason="no OpenCL or CUDA device here")


def batch(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return (em.from_numpy(rng.random((n, 1, 8, 8)).astype(np.float32)),
            em.from_numpy(rng.integers(0, 10, n)))


def train(device, steps, optimizer="adam"):
    em.manual_seed(0)
    model = DigitsCNN().to(device)                  # initialised on the CPU, then moved
    opt = em.optim.Adam(model.parameters(), lr=3e-3) if optimizer == "adam" else \
        em.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    em.manual_seed(1)                               # the dropout masks: each device's own
    loss_fn = nn.CrossEntropyLoss()                 # generator, seeded alike
    losses = []
    for step in range(steps):
        x, y = batch(seed=step)
        opt.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_same_losses_as_the_cpu(device, optimizer):
    want, cpu_model = train("cpu", 6, optimizer)
    got, dev_model = train(device, 6, optimizer)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(cpu_model.named_parameters(), dev_model.parameters()):
        assert q.device.type == device, name
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_a_training_step_stays_on_the_device(device):
    """Host transfers in a step: the batch's two tensors in, the loss out; the target
    check done on the device costs one 8-byte flag read at that same sync."""
    backend = em._C.core.backend_for(em.device(device))
    model = DigitsCNN().to(device)
    opt = em.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    x, y = batch()
    counts = []
    for _ in range(3):
        backend.reset_counters()
        opt.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        loss.item()
        counts.append(backend.counters())
    for c in counts[1:]:            # the first step also creates Adam's state
        assert c["host_transfers"] == 3, c
        assert c["check_reads"] <= 1, c
        assert 0 < c["launches"] < 200, c
    print(f"\n{device}: kernel launches per training step of the digits CNN (Adam): "
          f"{counts[-1]['launches']}")
