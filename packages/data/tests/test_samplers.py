"""Samplers: Sequential, Random, SubsetRandom, WeightedRandom, Batch, Distributed."""
import collections

import pytest

import ember as em
from ember.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def gen(seed):
    return em.Generator().manual_seed(seed)


def test_sequential_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4


def test_random_sampler_permutation_replacement_num_samples():
    perm = list(RandomSampler(range(20), generator=gen(0)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert perm == list(RandomSampler(range(20), generator=gen(0)))
    assert perm != list(RandomSampler(range(20), generator=gen(1)))
    # without replacement, more samples than the dataset: whole permutations in a row
    long = list(RandomSampler(range(5), num_samples=12, generator=gen(0)))
    assert len(long) == 12 and sorted(long[:5]) == list(range(5)) \
        and sorted(long[5:10]) == list(range(5))
    rep = list(RandomSampler(range(3), replacement=True, num_samples=200, generator=gen(0)))
    assert len(rep) == 200 and set(rep) == {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=7)) == 7
    assert list(RandomSampler(range(0))) == []
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_random_sampler_epochs_differ_with_one_generator():
    s = RandomSampler(range(30), generator=gen(3))
    assert list(s) != list(s)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    out = list(SubsetRandomSampler(idx, generator=gen(0)))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4
    assert out == list(SubsetRandomSampler(idx, generator=gen(0)))


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0]
    draws = list(WeightedRandomSampler(w, 4000, generator=gen(0)))
    counts = collections.Counter(draws)
    assert counts[0] == 0 and 0.65 < counts[2] / 4000 < 0.85
    assert draws == list(WeightedRandomSampler(em.tensor(w), 4000, generator=gen(0)))
    no_rep = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False, generator=gen(1)))
    assert sorted(no_rep) == [0, 1, 2]
    assert len(WeightedRandomSampler(w, 9)) == 9
    with pytest.raises(ValueError, match="without replacement from 3"):
        WeightedRandomSampler([1, 1, 1, 0], 4, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], 2)
    with pytest.raises(ValueError, match="sum to zero"):
        WeightedRandomSampler([0, 0], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1, 1], 0)
    with pytest.raises(ValueError, match="1-d"):
        WeightedRandomSampler(em.ones(2, 2), 1)


def test_batch_sampler():
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, True)) == [[0, 1], [2, 3]]
    assert list(BatchSampler(range(4), 2, True)) == [[0, 1], [2, 3]]
    assert len(BatchSampler(range(5), 2, False)) == 3
    assert len(BatchSampler(range(5), 2, True)) == 2
    assert list(BatchSampler(range(0), 3, False)) == []
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(5), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(5), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(5), 2, None)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                  (2, 4, False)])
def test_distributed_sampler_partitions(n, replicas, drop_last):
    parts = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
             for r in range(replicas)]
    sizes = {len(p) for p in parts}
    assert len(sizes) == 1
    flat = [i for p in parts for i in p]
    if drop_last:
        assert len(flat) == (n // replicas) * replicas and len(set(flat)) == len(flat)
    else:
        assert set(flat) == set(range(n)) and len(flat) == -(-n // replicas) * replicas
    assert all(len(DistributedSampler(range(n), replicas, r, drop_last=drop_last)) == len(p)
               for r, p in enumerate(parts))
    if not drop_last and n % replicas == 0:
        assert parts[0] == list(range(0, n, replicas))


def test_distributed_sampler_shuffle_epoch_seed():
    def shards(epoch, seed=0):
        out = []
        for r in range(2):
            s = DistributedSampler(range(20), num_replicas=2, rank=r, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out
    e0, e0b, e1, s1 = shards(0), shards(0), shards(1), shards(0, seed=1)
    assert sorted(e0[0] + e0[1]) == list(range(20)) and not set(e0[0]) & set(e0[1])
    assert e0 == e0b and e0 != e1 and e0 != s1


def test_distributed_sampler_needs_world():
    with pytest.raises(ValueError, match="num_replicas and rank are required"):
        DistributedSampler(range(10))
    with pytest.raises(ValueError, match="invalid rank 2"):
        DistributedSampler(range(10), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas should be a positive integer"):
        DistributedSampler(range(10), num_replicas=0, rank=0)
