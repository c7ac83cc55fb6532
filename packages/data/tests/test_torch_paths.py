"""ember.utils.data is ember.data (torch.utils.data needs only its prefix changed), and
ember.data.distributed.DistributedSampler is at PyTorch's path."""
from __future__ import annotations

import sys

import pytest

import ember as em
import ember.data


def test_utils_data_is_the_same_module():
    import ember.utils.data as d
    assert d is ember.data and em.utils.data is ember.data
    assert sys.modules["ember.utils.data"] is ember.data
    assert d.__name__ == "ember.data" and d.__spec__.name == "ember.data"
    from ember.utils.data import DataLoader, Dataset, TensorDataset
    assert DataLoader is ember.data.DataLoader and Dataset is ember.data.Dataset
    assert TensorDataset is ember.data.TensorDataset


def test_utils_data_submodules_are_ember_datas():
    import ember.data.dataloader
    import ember.data.distributed
    import ember.utils.data.dataset as ds
    from ember.utils.data.dataloader import DataLoader
    from ember.utils.data.distributed import DistributedSampler
    from ember.utils.data.sampler import RandomSampler
    assert DataLoader is ember.data.dataloader.DataLoader
    assert DistributedSampler is ember.data.distributed.DistributedSampler
    assert DistributedSampler is ember.data.DistributedSampler
    assert RandomSampler is ember.data.RandomSampler
    assert ds is sys.modules["ember.data.dataset"]
    assert sys.modules["ember.utils.data.distributed"] is ember.data.distributed


def test_utils_data_loader_runs():
    from ember.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(em.arange(10.0), em.arange(10))
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_distributed_sampler_pytorch_semantics():
    from ember.data.distributed import DistributedSampler
    # PyTorch: padding repeats the first indices; ranks take every num_replicas-th
    parts = [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
             for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    parts = [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
             for r in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = [DistributedSampler(range(20), 2, r, seed=7) for r in range(2)]
    e0 = [list(x) for x in s]
    assert sorted(e0[0] + e0[1]) == list(range(20))
    for x in s:
        x.set_epoch(1)
    e1 = [list(x) for x in s]
    assert sorted(e1[0] + e1[1]) == list(range(20)) and e1 != e0
    with pytest.raises(ValueError, match="invalid rank 3"):
        DistributedSampler(range(4), num_replicas=2, rank=3)


def test_distributed_sampler_defaults_need_an_initialised_group():
    from ember.data.distributed import DistributedSampler
    try:
        import ember.distributed as dist
        if dist.is_initialized():
            pytest.skip("a process group is initialised in this process")
    except ModuleNotFoundError:
        pass
    with pytest.raises(ValueError, match="num_replicas and rank are required"):
        DistributedSampler(range(4))
