"""ember.distributed.get_default_backend_for_device: MPI for every device type."""
from __future__ import annotations

import pytest

import ember as em

dist = pytest.importorskip("ember.distributed")


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "opencl", em.device("cpu"),
                                    em.device("opencl:0")])
def test_every_device_gets_mpi(device):
    # PyTorch answers "gloo" for cpu and "nccl" for cuda; ember's one engine is MPI
    assert dist.get_default_backend_for_device(device) == "mpi"


def test_the_accelerator_gets_mpi():
    acc = em.accelerator.current_accelerator() or em.device("cpu")
    assert dist.get_default_backend_for_device(acc) == "mpi"


@pytest.mark.parametrize("bad", ["tpu", "cpu:x", 3, None])
def test_not_a_device(bad):
    with pytest.raises(ValueError, match="get_default_backend_for_device"):
        dist.get_default_backend_for_device(bad)
