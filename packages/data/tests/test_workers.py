"""Worker processes: the same batches, in the same order, for any num_workers, with
and without persistent workers and drop_last; get_worker_info; sharding; start
methods; the shared-memory hand-over contract (ForkingPickler reducers)."""
import multiprocessing.reduction
import os
import sys
import time

import pytest

import ember as em
from ember.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
    shard_for_worker,
    worker as worker_mod,
)

# more workers than this machine's 2 CPUs is the point of some cases
pytestmark = pytest.mark.filterwarnings("ignore:DataLoader. this process may use")


class Pairs(Dataset):
    """Map-style samples that are tuples of a tensor, an int and a string."""

    def __init__(self, n=23):
        self.n = n

    def __getitem__(self, i):
        return em.full((2,), float(i)), i, f"s{i}"

    def __len__(self):
        return self.n


class ShardedStream(IterableDataset):
    """An iterable dataset sharded with the helper in blocks of the batch size."""

    def __init__(self, n, block):
        self.n, self.block = n, block

    def __iter__(self):
        return shard_for_worker(((em.tensor([float(i)]), i) for i in range(self.n)),
                                block=self.block)


class ManualShardStream(IterableDataset):
    """An iterable dataset sharded by hand with get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class Unsharded(IterableDataset):
    def __iter__(self):
        return iter(range(6))


def as_lists(batches):
    out = []
    for b in batches:
        if isinstance(b, (list, tuple)):
            out.append([x.tolist() if isinstance(x, em.Tensor) else x for x in b])
        else:
            out.append(b.tolist() if isinstance(b, em.Tensor) else b)
    return out


@pytest.mark.parametrize("num_workers", [1, 2, 3])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_map_style_matches_single_process(num_workers, persistent, drop_last):
    ds = Pairs()
    ref = as_lists(DataLoader(ds, batch_size=4, drop_last=drop_last))
    loader = DataLoader(ds, batch_size=4, drop_last=drop_last, num_workers=num_workers,
                        persistent_workers=persistent)
    for _ in range(2 if persistent else 1):
        assert as_lists(loader) == ref
    assert len(loader) == len(ref)


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_shuffled_tensor_dataset_matches_single_process(num_workers):
    ds = TensorDataset(em.arange(60, dtype=em.float32).reshape(30, 2), em.arange(30))

    def run(nw):
        g = em.Generator().manual_seed(11)
        loader = DataLoader(ds, batch_size=7, shuffle=True, generator=g, num_workers=nw)
        return [as_lists(loader) for _ in range(2)]
    ref = run(0)
    assert ref[0] != ref[1]          # epochs differ ...
    assert run(num_workers) == ref   # ... and workers change nothing


@pytest.mark.parametrize("num_workers", [1, 2, 3])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_matches_single_process(num_workers, persistent, drop_last):
    ds = ShardedStream(22, block=4)
    ref = as_lists(DataLoader(ds, batch_size=4, drop_last=drop_last))
    assert len(ref) == (5 if drop_last else 6)
    loader = DataLoader(ds, batch_size=4, drop_last=drop_last, num_workers=num_workers,
                        persistent_workers=persistent)
    for _ in range(2 if persistent else 1):
        assert as_lists(loader) == ref


def test_batch_size_none_and_manual_sharding():
    assert list(DataLoader(Pairs(5), batch_size=None, num_workers=2))[3][1] == 3
    got = sorted(int(b) for b in DataLoader(ManualShardStream(9), batch_size=None,
                                            num_workers=3))
    assert got == list(range(9))
    got = sorted(v for b in DataLoader(ManualShardStream(9), batch_size=2, num_workers=2)
                 for v in b.tolist())
    assert got == list(range(9))


def test_unsharded_iterable_warns():
    with pytest.warns(UserWarning, match="same first batch"):
        out = list(DataLoader(Unsharded(), batch_size=3, num_workers=2))
    assert len(out) == 4                # every worker yields the whole stream


def test_out_of_order_when_asked():
    out = DataLoader(Pairs(12), batch_size=2, num_workers=2, in_order=False)
    assert sorted(b[1].tolist() for b in out) == [[2 * i, 2 * i + 1] for i in range(6)]


def test_shard_for_worker_main_process_and_ranks():
    assert list(shard_for_worker(range(5))) == [0, 1, 2, 3, 4]
    assert list(shard_for_worker(range(10), block=2, num_replicas=2, rank=1)) == [2, 3, 6, 7]
    with pytest.raises(ValueError, match="block should be a positive integer"):
        shard_for_worker(range(3), block=0)
    with pytest.raises(ValueError, match="rank 2 is not in"):
        shard_for_worker(range(3), num_replicas=2, rank=2)


class InfoDataset(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        info = get_worker_info()
        return [info.id, info.num_workers, info.seed, os.getpid(),
                type(info.dataset).__name__, init_marks.get(info.id, -1)]


init_marks = {}


def mark_init(worker_id):
    init_marks[worker_id] = worker_id * 10
    assert get_worker_info().id == worker_id


def test_worker_info_and_init_fn():
    assert get_worker_info() is None
    rows = [r for b in DataLoader(InfoDataset(), batch_size=None, num_workers=2,
                                  worker_init_fn=mark_init) for r in [b]]
    ids = [r[0] for r in rows]
    assert ids == [0, 1, 0, 1, 0, 1]            # round-robin, in order
    assert {r[1] for r in rows} == {2} and {r[4] for r in rows} == {"InfoDataset"}
    seeds = {r[0]: r[2] for r in rows}
    assert seeds[1] == seeds[0] + 1             # base_seed + worker id
    assert len({r[3] for r in rows}) == 2 and os.getpid() not in {r[3] for r in rows}
    assert [r[5] for r in rows[:2]] == [0, 10]
    with pytest.raises(RuntimeError, match="read-only"):
        worker_mod.WorkerInfo(id=0, num_workers=1, seed=0, dataset=None).id = 3


def test_persistent_workers_are_reused_and_fresh_workers_are_not():
    pers = DataLoader(InfoDataset(), batch_size=None, num_workers=2, persistent_workers=True)
    pids1 = {r[3] for r in pers}
    pids2 = {r[3] for r in pers}
    assert pids1 == pids2
    fresh = DataLoader(InfoDataset(), batch_size=None, num_workers=2)
    assert {r[3] for r in fresh}.isdisjoint({r[3] for r in fresh})


def test_epoch_restart_mid_iteration_with_persistent_workers():
    loader = DataLoader(Pairs(20), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)
    next(it)                                  # abandon this epoch part-way
    assert as_lists(loader) == as_lists(DataLoader(Pairs(20), batch_size=2))


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    ds = TensorDataset(em.arange(40).reshape(20, 2))
    ref = as_lists(DataLoader(ds, batch_size=3))
    t0 = time.monotonic()
    loader = DataLoader(ds, batch_size=3, num_workers=2, multiprocessing_context=method)
    assert as_lists(loader) == ref
    assert time.monotonic() - t0 < 30


# the ember.multiprocessing contract: reducers registered with ForkingPickler decide how
# a tensor crosses; the DataLoader must use them without knowing about them
_crossed = []


def _rebuild_marked(data, shape):
    _crossed.append(shape)
    return em.tensor(data).reshape(shape)


def _reduce_marked(t):
    return (_rebuild_marked, (t.reshape(-1).tolist(), tuple(t.shape)))


def test_tensors_cross_through_forking_pickler_reducers():
    fp = multiprocessing.reduction.ForkingPickler
    reg = fp._extra_reducers
    had = reg.get(em.Tensor)
    reg[em.Tensor] = _reduce_marked
    override = fp.__dict__.get("reducer_override")   # ember.multiprocessing may set one
    if override is not None:
        del fp.reducer_override
    try:
        _crossed.clear()
        out = as_lists(DataLoader(TensorDataset(em.arange(12).reshape(6, 2)), batch_size=4,
                                  num_workers=1))
    finally:
        if had is None:
            del reg[em.Tensor]
        else:
            reg[em.Tensor] = had
        if override is not None:
            fp.reducer_override = override
    assert out == [[[[0, 1], [2, 3], [4, 5], [6, 7]]], [[[8, 9], [10, 11]]]]
    assert _crossed == [(4, 2), (2, 2)]


def test_a_view_of_a_big_tensor_crosses_as_just_the_view():
    big = em.arange(100_000, dtype=em.float32).reshape(1000, 100)

    class Rows(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return big[i]               # a 400-byte view of a 400 kB storage
    compact = worker_mod._compact(big[2])
    assert compact.tolist() == big[2].tolist()
    sizes = [r.untyped_storage().nbytes for r in DataLoader(Rows(), batch_size=None,
                                                             num_workers=1)]
    sizes = [s() if callable(s) else s for s in sizes]
    assert max(sizes) <= 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork default is Linux's")
def test_default_context_is_fork_on_linux():
    from ember.data.dataloader import _resolve_context
    if multiprocessing.get_start_method(allow_none=True) is None:
        assert _resolve_context(None).get_start_method() == "fork"
    assert _resolve_context("spawn").get_start_method() == "spawn"
    with pytest.raises(TypeError, match="start method name or a multiprocessing context"):
        _resolve_context(3)
