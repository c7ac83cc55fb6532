"""The DataLoader in the main process: batching, shuffling, options and their checks."""
import pytest

import ember as em
from ember.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n=7, with_len=False):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no len")
        return self.n


def test_tensor_dataset_batches_in_order_with_drop_last():
    x = em.arange(10, dtype=em.float32).reshape(10, 1)
    y = em.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [tuple(b[0].shape) for b in batches] == [(4, 1), (4, 1), (2, 1)]
    assert batches[2][1].tolist() == [8, 9]
    assert len(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True))) == 2


def test_tensor_dataset_batches_come_from_one_getitems_call():
    calls = []

    class Counting(TensorDataset):
        def __getitem__(self, i):
            calls.append(("item", i))
            return super().__getitem__(i)

        def __getitems__(self, idx):
            calls.append(("items", len(idx)))
            return super().__getitems__(idx)

    loader = DataLoader(Counting(em.arange(10)), batch_size=4)
    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert calls == [("items", 4), ("items", 4), ("items", 2)]


def test_shuffle_is_a_permutation_and_repeats_under_a_seeded_generator():
    ds = TensorDataset(em.arange(20))
    seen = [int(v) for (b,) in DataLoader(ds, batch_size=6, shuffle=True) for v in b]
    assert sorted(seen) == list(range(20)) and seen != list(range(20))

    def order(seed):
        g = em.Generator().manual_seed(seed)
        return [int(v) for (b,) in DataLoader(ds, batch_size=5, shuffle=True, generator=g)
                for v in b]
    assert order(3) == order(3) and order(3) != order(4)


def test_batch_size_none_yields_converted_samples():
    import numpy as np

    class Arrays(Dataset):
        def __getitem__(self, i):
            return {"a": np.full(2, i, dtype=np.float32), "i": i}

        def __len__(self):
            return 3
    out = list(DataLoader(Arrays(), batch_size=None))
    assert len(out) == 3 and isinstance(out[1]["a"], em.Tensor) and out[1]["i"] == 1
    assert len(DataLoader(Arrays(), batch_size=None)) == 3


def test_batch_sampler_and_custom_collate():
    bs = BatchSampler(SequentialSampler(range(10)), 3, drop_last=True)
    loader = DataLoader(Squares(), batch_sampler=bs, collate_fn=lambda b: sum(b))
    assert list(loader) == [0 + 1 + 4, 9 + 16 + 25, 36 + 49 + 64] and len(loader) == 3
    assert list(DataLoader(Squares(4), batch_size=2, sampler=[3, 2, 1, 0])) is not None
    assert [b.tolist() for b in DataLoader(Squares(4), batch_size=2, sampler=[3, 2, 1, 0])] \
        == [[9, 4], [1, 0]]


def test_iterable_dataset_batches_and_len():
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                        [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Stream(7, with_len=True), batch_size=3)) == 3
    assert len(DataLoader(Stream(7, with_len=True), batch_size=3, drop_last=True)) == 2
    with pytest.raises(TypeError, match="no len"):
        len(DataLoader(Stream(), batch_size=3))


def test_option_checks():
    ds = Squares()
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], drop_last=True)
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="num_workers option should be a non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used"):
        DataLoader(ds, multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="not a start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(TypeError, match="worker_init_fn should be callable"):
        DataLoader(ds, num_workers=1, worker_init_fn=3)
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler"):
        DataLoader(Stream(), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler"):
        DataLoader(Stream(), batch_sampler=[[0]])
    loader = DataLoader(ds, batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3


def test_prefetch_and_defaults_with_workers():
    loader = DataLoader(Squares(), num_workers=2)
    assert loader.prefetch_factor == 2 and loader.persistent_workers is False
    assert DataLoader(Squares(), num_workers=2, prefetch_factor=4).prefetch_factor == 4


@pytest.mark.skipif(em.cuda.is_available(), reason="a CUDA device is present: batches are pinned")
def test_pin_memory_without_cuda_warns_and_yields_unpinned_batches():
    ds = TensorDataset(em.arange(6.0), em.arange(6))
    with pytest.warns(UserWarning, match="pin_memory=True but no CUDA device"):
        batches = list(DataLoader(ds, batch_size=4, pin_memory=True))
    assert [b[0].tolist() for b in batches] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
    assert not batches[0][0].is_pinned()


def test_pin_memory_walks_the_batch_structure():
    from collections import namedtuple

    from ember.data.dataloader import pin_memory

    class Custom:
        def pin_memory(self):
            return "pinned"

    Pair = namedtuple("Pair", "a b")
    batch = {"x": [Custom(), ("s", 3)], "y": Pair(Custom(), b"raw")}
    assert pin_memory(batch) == {"x": ["pinned", ("s", 3)], "y": Pair("pinned", b"raw")}
