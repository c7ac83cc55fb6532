"""Tensors through multiprocessing: shared memory, not copies, for every start method
and both sharing strategies."""
import gc
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest

import ember as em
import ember.multiprocessing as mp
import ember_mp_testhelpers as H
from ember import nn

DTYPES = [em.bool, em.uint8, em.int8, em.int16, em.int32, em.int64, em.float16, em.float32,
          em.float64, em.complex64, em.complex128, em.bfloat16]
COMBOS = [(m, s) for m in ("fork", "spawn", "forkserver")
          for s in ("file_descriptor", "file_system")]


class Child:
    """A serving child process (ember_mp_testhelpers.serve) and a way to call it."""

    def __init__(self, method):
        ctx = mp.get_context(method)
        self.inbox, self.outbox = ctx.Queue(), ctx.Queue()
        self.proc = ctx.Process(target=H.serve, args=(self.inbox, self.outbox), daemon=True)
        self.proc.start()

    def __call__(self, name, *args):
        self.inbox.put((name, args))
        status, value = self.outbox.get(timeout=60)
        assert status == "ok", value
        return value

    def close(self):
        self.inbox.put(None)
        self.proc.join(30)
        assert self.proc.exitcode == 0


@pytest.fixture(scope="module", params=COMBOS, ids=[f"{m}-{s}" for m, s in COMBOS])
def served(request):
    method, strat = request.param
    c = Child(method)
    c.strategy = strat
    yield c
    c.close()


@pytest.fixture
def child(served, strategy):
    strategy(served.strategy)       # the strategy of the segments this process creates
    return served


def test_every_dtype_round_trips_without_a_copy(child):
    ts = [(em.arange(6) % 3).to(d) for d in DTYPES]
    child("keep", "x", ts)
    for t, d in zip(ts, child("info", "x")):
        assert d["values"] == t.tolist() and d["dtype"] == t.dtype.name and d["shared"]
        assert t.is_shared() and t.untyped_storage().owner.strategy == child.strategy
    back = child("echo", "x")
    for t, b in zip(ts, back):       # back here: the very same storages, mapped once
        assert b.untyped_storage() is t.untyped_storage() and b.tolist() == t.tolist()


def test_views_keep_their_layout_and_a_storage_maps_once(child):
    base = em.arange(24, dtype=em.float32).reshape(4, 6)
    views = [base, base[1:3, 2:5], base.T, base[:, ::2], base[3], base[2, 3],
             base.reshape(2, 12)[1, 3::2], base.unsqueeze(1)[2:]]
    others = [em.tensor(5.0), em.empty(0), em.empty(3, 0), em.ones(1, 1, 1)]
    child("keep", "v", views + others)
    got = child("info", "v")
    for t, d in zip(views + others, got):
        assert (d["shape"], d["stride"], d["offset"]) == (tuple(t.shape), tuple(t.stride()),
                                                          t.storage_offset())
        assert d["values"] == t.tolist()
    assert len({d["storage_id"] for d in got[:len(views)]}) == 1
    assert len({d["storage_ptr"] for d in got[:len(views)]}) == 1
    # a view of the same storage in a later message maps to the same storage again
    child("keep", "again", [base[1], em.tensor(1.0)])
    again = child("info", "again")
    assert again[0]["storage_id"] == got[0]["storage_id"]
    assert again[0]["storage_ptr"] == got[0]["storage_ptr"]
    assert again[0]["data_ptr"] == got[0]["storage_ptr"] + 6 * 4


def test_writes_are_visible_both_ways(child):
    t = em.zeros(1000)
    child("keep", "w", t)
    child("fill", "w", 3.0)
    assert t.tolist() == [3.0] * 1000
    t[10:20] = 5.0
    assert child("info", "w")["values"][9:21] == [3.0] + [5.0] * 10 + [3.0]


def test_parameters_and_leaves_keep_requires_grad(child):
    p = nn.Parameter(em.randn(3, 2))
    leaf = em.ones(4, requires_grad=True)
    child("keep", "p", [p, leaf, leaf.detach()])
    info = child("info", "p")
    assert [d["type"] for d in info] == ["Parameter", "Tensor", "Tensor"]
    assert [d["requires_grad"] for d in info] == [True, True, False]
    q, leaf2, _ = child("echo", "p")
    assert type(q) is nn.Parameter and q.requires_grad and q.untyped_storage() is \
        p.untyped_storage()
    assert leaf2.requires_grad and leaf2.is_leaf


def test_child_segments_come_back(child):
    t = child("make_shared", "m", 100, child.strategy)
    assert t.is_shared() and t.tolist() == [7.0] * 100
    assert t.untyped_storage().owner.strategy == child.strategy
    child("fill", "m", 2.0)
    assert t.tolist() == [2.0] * 100


# in one process ----------------------------------------------------------------------------

@pytest.mark.parametrize("strat", ["file_descriptor", "file_system"])
def test_share_memory_moves_the_storage_in_place(strategy, strat):
    strategy(strat)
    base = em.arange(12, dtype=em.float64).reshape(3, 4)
    view = base.T[1:]
    before = base.data_ptr()
    assert not base.is_shared() and not view.is_shared()
    assert base.share_memory_() is base
    assert base.is_shared() and view.is_shared() and base.data_ptr() != before
    assert view.untyped_storage() is base.untyped_storage()
    assert base.tolist() == em.arange(12, dtype=em.float64).reshape(3, 4).tolist()
    view[0, 0] = -1.0           # the view writes the new (shared) memory
    assert base[0, 1].item() == -1.0
    ptr = base.data_ptr()
    view.share_memory_()        # already shared: nothing moves
    assert base.data_ptr() == ptr
    assert em.empty(0).share_memory_().is_shared()


def test_module_share_memory():
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    out = m(em.ones(2, 4))
    assert m.share_memory() is m
    assert all(t.is_shared() for t in list(m.parameters()) + list(m.buffers()))
    assert m(em.ones(2, 4)).shape == out.shape
    m2 = pickle.loads(ForkingPickler.dumps(m))
    assert m2[0].weight.untyped_storage() is m[0].weight.untyped_storage()
    assert type(m2[0].weight) is nn.Parameter and m2[0].weight.requires_grad


def test_sending_shares_first_and_plain_pickle_still_copies():
    t = em.arange(5, dtype=em.float32)
    u = pickle.loads(pickle.dumps(t))
    assert not t.is_shared() and not u.is_shared() and u.tolist() == t.tolist()
    data = ForkingPickler.dumps(t)
    assert t.is_shared() and len(data) < 1000
    assert pickle.loads(data).untyped_storage() is t.untyped_storage()
    s = pickle.loads(ForkingPickler.dumps(t.untyped_storage()))   # a Storage on its own
    assert s is t.untyped_storage()


def test_subclass_state_travels():
    class_ = nn.Buffer
    b = class_(em.ones(3), persistent=False)
    b2 = pickle.loads(ForkingPickler.dumps(b))
    assert type(b2) is nn.Buffer and b2.persistent is False
    assert b2.untyped_storage() is b.untyped_storage()


def test_non_leaf_that_requires_grad_is_refused():
    x = em.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="requires grad and is not a leaf.*send .detach()"):
        ForkingPickler.dumps(y)
    q = mp.SimpleQueue()
    with pytest.raises(RuntimeError, match="not a leaf"):
        q.put([1, y])
    q.put(y.detach())
    z = q.get()
    assert not z.requires_grad and z.tolist() == [2.0] * 3


def test_strategy_api(strategy):
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    with pytest.raises(ValueError, match="unknown strategy 'shm'"):
        mp.set_sharing_strategy("shm")


def test_stdlib_api_is_reexported():
    import multiprocessing
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "Pipe", "get_context",
                 "set_start_method", "get_start_method", "cpu_count", "Manager", "Event",
                 "Lock", "current_process"):
        assert getattr(mp, name) is getattr(multiprocessing, name), name
        assert name in mp.__all__
    assert mp.spawn and "spawn" in mp.__all__


def test_pool_and_pipe_share(strategy):
    t = em.zeros(8)
    a, b = mp.Pipe()
    a.send(t)
    assert b.recv().untyped_storage() is t.untyped_storage()
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply(H.describe, (t,))["shared"]


def test_without_ember_mp_the_methods_say_what_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "ember.multiprocessing", None)
    with pytest.raises(ModuleNotFoundError, match="pip install ember-mp"):
        em.ones(2).share_memory_()


def test_storage_freed_when_last_view_dies(strategy):
    strategy("file_descriptor")
    t = em.ones(100).share_memory_()
    key = t.untyped_storage().owner.key
    assert key in mp._shared.live_segments()["file_descriptor"]
    del t
    gc.collect()
    assert key not in mp._shared.live_segments()["file_descriptor"]
