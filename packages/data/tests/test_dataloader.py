"""The single-process DataLoader, datasets, samplers and default_collate."""
import numpy as np
import pytest

import ember as em
from ember.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                        RandomSampler, SequentialSampler, Subset, TensorDataset,
                        default_collate, random_split)


def test_tensor_dataset_batches_in_order_with_drop_last():
    x = em.arange(10, dtype=em.float32).reshape(10, 1)
    y = em.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [tuple(b[0].shape) for b in batches] == [(4, 1), (4, 1), (2, 1)]
    assert batches[2][1].tolist() == [8, 9]
    assert len(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)) == 2
    with pytest.raises(ValueError, match="size mismatch between tensors"):
        TensorDataset(x, em.arange(3))


def test_shuffle_is_a_permutation_and_repeats_under_a_seeded_generator():
    ds = TensorDataset(em.arange(20))
    seen = [int(v) for (b,) in DataLoader(ds, batch_size=6, shuffle=True) for v in b]
    assert sorted(seen) == list(range(20)) and seen != list(range(20))

    def order(seed):
        g = em.Generator().manual_seed(seed)
        return [int(v) for (b,) in DataLoader(ds, batch_size=5, shuffle=True, generator=g)
                for v in b]
    assert order(3) == order(3) and order(3) != order(4)


def test_default_collate_nests():
    batch = [{"x": em.ones(2), "y": 1, "name": "a"}, {"x": em.zeros(2), "y": 2, "name": "b"}]
    out = default_collate(batch)
    assert tuple(out["x"].shape) == (2, 2) and out["y"].tolist() == [1, 2]
    assert out["name"] == ["a", "b"]
    pairs = default_collate([(1.5, em.ones(3)), (2.5, em.ones(3))])
    assert pairs[0].dtype is em.float64 and tuple(pairs[1].shape) == (2, 3)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])


def test_iterable_dataset_and_samplers():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                        [6]]
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(), shuffle=True)
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(list(RandomSampler(range(5), replacement=True, num_samples=12))) == 12
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(SequentialSampler(range(5)), 0, False)


def test_subset_concat_random_split():
    class Squares(Dataset):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 5

    cat = ConcatDataset([Squares(), Squares()])
    assert len(cat) == 10 and cat[7] == 4 and cat[-1] == 16
    assert Subset(Squares(), [4, 0])[0] == 16
    a, b = random_split(Squares(), [3, 2], generator=em.Generator().manual_seed(0))
    assert sorted([a[i] for i in range(3)] + [b[i] for i in range(2)]) == [0, 1, 4, 9, 16]
    parts = random_split(range(10), [0.5, 0.5])
    assert [len(p) for p in parts] == [5, 5]
    with pytest.raises(ValueError, match="do not add up"):
        random_split(range(10), [3, 3])


def test_workers_are_not_in_this_release():
    with pytest.raises(NotImplementedError, match="num_workers"):
        DataLoader(TensorDataset(em.ones(2)), num_workers=2)


def test_numpy_samples_collate():
    out = default_collate([np.ones(3, dtype=np.float32), np.zeros(3, dtype=np.float32)])
    assert out.dtype is em.float32 and tuple(out.shape) == (2, 3)
