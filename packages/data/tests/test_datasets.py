"""Datasets: TensorDataset (and its one-gather __getitems__), StackDataset,
ConcatDataset, ChainDataset, Subset, random_split."""
import pytest

import ember as em
from ember.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    GatheredSamples,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n=5):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_tensor_dataset_rows_and_errors():
    x = em.arange(12, dtype=em.float32).reshape(4, 3)
    y = em.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6.0, 7.0, 8.0] and b.item() == 2
    assert ds[-1][1].item() == 3
    with pytest.raises(ValueError, match="size mismatch between tensors"):
        TensorDataset(x, em.arange(3))
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(em.tensor(1.0))
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()
    with pytest.raises(TypeError, match="not a tensor"):
        TensorDataset(x, [0, 1, 2, 3])


def test_tensor_dataset_getitems_is_one_gather_per_tensor():
    x = em.arange(20, dtype=em.float32).reshape(10, 2)
    y = em.arange(10) * 10
    ds = TensorDataset(x, y)
    batch = ds.__getitems__([7, 0, 3, -1])
    assert isinstance(batch, GatheredSamples) and len(batch) == 4
    xs, ys = batch.columns
    assert xs.tolist() == [[14.0, 15.0], [0.0, 1.0], [6.0, 7.0], [18.0, 19.0]]
    assert ys.tolist() == [70, 0, 30, 90]
    # a sequence of samples for custom collate functions ...
    assert [s[1].item() for s in batch] == [70, 0, 30, 90]
    assert batch[1][0].tolist() == [0.0, 1.0] and [s[1].item() for s in batch[1:3]] == [0, 30]
    assert list(zip(*batch))[1][2].item() == 30
    # ... that default_collate returns as the gathered columns themselves
    out = default_collate(batch)
    assert isinstance(out, list) and out[0] is xs and out[1] is ys
    # equal to collating the rows one by one
    rows = default_collate([ds[i] for i in [7, 0, 3, -1]])
    assert rows[0].tolist() == xs.tolist() and rows[1].tolist() == ys.tolist()
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        ds.__getitems__([1, 10])
    assert "GatheredSamples(4 samples" in repr(batch)


def test_stack_dataset_tuple_and_dict():
    x = em.arange(5)
    tup = StackDataset(TensorDataset(x), Squares())
    assert len(tup) == 5
    (xi,), sq = tup[3]
    assert xi.item() == 3 and sq == 9
    d = StackDataset(a=Squares(), b=Squares())
    assert d[2] == {"a": 4, "b": 4}
    assert d.__getitems__([1, 2]) == [{"a": 1, "b": 1}, {"a": 4, "b": 4}]
    items = tup.__getitems__([4, 0])
    assert items[0][1] == 16 and items[1][0][0].item() == 0
    with pytest.raises(ValueError, match="size mismatch"):
        StackDataset(Squares(3), Squares(4))
    with pytest.raises(ValueError, match="not both"):
        StackDataset(Squares(), b=Squares())
    with pytest.raises(ValueError, match="at least one"):
        StackDataset()


def test_concat_dataset():
    cat = ConcatDataset([Squares(), Squares(3)])
    assert len(cat) == 8 and cat.cumulative_sizes == [5, 8]
    assert [cat[i] for i in range(8)] == [0, 1, 4, 9, 16, 0, 1, 4]
    assert cat[-1] == 4 and cat[-8] == 0
    with pytest.raises(IndexError):
        cat[8]
    with pytest.raises(IndexError):
        cat[-9]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Count(0, 3)])
    plus = Squares(2) + Squares(2)
    assert isinstance(plus, ConcatDataset) and len(plus) == 4


def test_chain_dataset():
    ch = ChainDataset([Count(0, 3), Count(10, 12)])
    assert list(ch) == [0, 1, 2, 10, 11] and list(ch) == [0, 1, 2, 10, 11]
    assert len(ch) == 5
    assert list(Count(0, 2) + Count(5, 6)) == [0, 1, 5]
    with pytest.raises(TypeError, match="only supports IterableDataset"):
        list(ChainDataset([Squares()]))


def test_subset():
    sub = Subset(Squares(), [4, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [16, 0, 4]
    assert sub.__getitems__([0, 2]) == [16, 4]
    tds = TensorDataset(em.arange(10))
    g = Subset(tds, [9, 8, 7]).__getitems__([0, 2])
    assert isinstance(g, GatheredSamples) and g.columns[0].tolist() == [9, 7]


def test_random_split_lengths_fractions_generator():
    ds = Squares(10)
    a, b = random_split(ds, [7, 3], generator=em.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(list(a.indices) + list(b.indices)) == list(range(10))
    a2, _ = random_split(ds, [7, 3], generator=em.Generator().manual_seed(0))
    a3, _ = random_split(ds, [7, 3], generator=em.Generator().manual_seed(1))
    assert a.indices == a2.indices and a.indices != a3.indices
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=em.Generator().manual_seed(2))
    assert [len(p) for p in parts] == [5, 3, 2]
    # remainders go round-robin to the first subsets
    parts = random_split(range(11), [1 / 3, 1 / 3, 1 / 3])
    assert [len(p) for p in parts] == [4, 4, 3]
    with pytest.warns(UserWarning, match="length of split at index 1 is 0"):
        random_split(range(2), [0.9, 0.1])
    with pytest.raises(ValueError, match="do not add up"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="non-negative"):
        random_split(range(10), [11, -1])
