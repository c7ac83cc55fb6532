"""SharedList and SharedDict: flat-buffer containers that DataLoader workers read
without copying them (PyTorch issue #13246)."""
import gc
import os
import pickle
import subprocess
import sys

import pytest

from ember.data import DataLoader, Dataset, SharedDict, SharedList


def test_shared_list_round_trips_items():
    items = [b"raw", "text \u00e9\U0001f600", "", b"", {"k": [1, 2]}, 3, None, 2.5, ("t",)]
    sl = SharedList(items)
    assert len(sl) == len(items) and list(sl) == items and sl == items
    assert [sl[i] for i in range(len(items))] == items
    assert type(sl[0]) is bytes and type(sl[1]) is str
    assert sl[-1] == ("t",) and sl[2:5] == ["", b"", {"k": [1, 2]}] and sl[::4] == items[::4]
    with pytest.raises(IndexError, match="out of range"):
        sl[len(items)]
    with pytest.raises(IndexError):
        sl[-len(items) - 1]
    assert sl.index(3) == 5 and 2.5 in sl
    a = sl[4]
    a["k"].append(9)             # each read is a fresh object
    assert sl[4] == {"k": [1, 2]}
    assert SharedList(sl) == sl and SharedList() == [] and len(SharedList()) == 0
    assert SharedList(x for x in "abc") == ["a", "b", "c"]
    assert sl.nbytes > 0 and "SharedList([b'raw'" in repr(sl)
    data, offsets, kinds = sl.tensors
    assert offsets.shape[0] == len(items) + 1 and kinds.shape[0] == len(items)


def test_shared_list_pickles_as_its_buffers():
    sl = SharedList(["a", b"b", [3]])
    back = pickle.loads(pickle.dumps(sl))
    assert back == sl and type(back) is SharedList


def test_shared_dict():
    d = {"a": 1, b"b": "two", 3: [3], ("x", 1): {"nested": True}}
    sd = SharedDict(d)
    assert len(sd) == 4 and dict(sd) == d and list(sd) == list(d)
    assert sd["a"] == 1 and sd[3] == [3] and sd[("x", 1)] == {"nested": True}
    assert "a" in sd and "zz" not in sd and 3.0 not in sd and [1] not in sd
    assert sd.get("missing", 5) == 5
    with pytest.raises(KeyError):
        sd["missing"]
    with pytest.raises(TypeError, match="keys must be str, bytes, int"):
        SharedDict({1.5: 0})
    big = SharedDict({f"k{i}": i for i in range(1000)})
    assert all(big[f"k{i}"] == i for i in range(0, 1000, 37))
    assert pickle.loads(pickle.dumps(big))["k999"] == 999
    assert SharedDict() == {} and "SharedDict(4 items" in repr(sd)


def test_shared_dict_hash_is_the_same_in_every_process():
    from ember.data.shared import _key_hash
    here = _key_hash("some key")
    code = "from ember.data.shared import _key_hash; print(_key_hash('some key'))"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True)
    assert int(out.stdout) == here


class Lengths(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return len(self.items[i])


def test_workers_read_shared_list_and_dict():
    sl = SharedList(f"item {i}" for i in range(100))
    out = [v for b in DataLoader(Lengths(sl), batch_size=16, num_workers=2) for v in b.tolist()]
    assert out == [len(f"item {i}") for i in range(100)]
    sd = SharedDict({i: "x" * i for i in range(50)})
    out = [v for b in DataLoader(Lengths(sd), batch_size=8, num_workers=2) for v in b.tolist()]
    assert out == list(range(50))


def worker_uss(items):
    """A fork worker's private memory after it read every item once."""
    loader = DataLoader(Lengths(items), batch_size=4096, num_workers=1,
                        persistent_workers=True)
    assert sum(int(b.sum()) for b in loader) == 1024 * len(items)
    pid = loader._iterator._workers[0].pid
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1]) * 1024
    del loader
    gc.collect()
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="Linux smaps_rollup")
def test_a_worker_does_not_copy_a_shared_list():
    n = 64 * 1024                                       # 64 MiB of 1 KiB items
    size = n * 1024
    # what a worker copies of the parent's heap whatever it reads (it grows with the
    # test process, e.g. under the whole suite), measured with a 16-item list
    base = worker_uss(SharedList(bytes([i]) * 1024 for i in range(16)))
    shared = SharedList(bytes([i % 251]) * 1024 for i in range(n))
    uss_shared = worker_uss(shared)
    del shared
    gc.collect()
    plain = [bytes([i % 251]) * 1024 for i in range(n)]
    uss_plain = worker_uss(plain)
    del plain
    gc.collect()
    # the plain list's pages are copied as the worker touches each item's refcount;
    # the SharedList's stay shared
    assert uss_plain - base > 0.75 * size, (uss_plain, base, size)
    assert uss_shared - base < 0.25 * size, (uss_shared, base, size)


class FreezeCount(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return gc.get_freeze_count()


def test_fork_workers_start_with_the_parents_objects_frozen():
    if gc.get_freeze_count():
        pytest.skip("this process froze objects itself")
    counts = [int(c) for c in DataLoader(FreezeCount(), batch_size=None, num_workers=1)]
    assert min(counts) > 1000                 # the parent's objects, in the worker
    assert gc.get_freeze_count() == 0         # and unfrozen again in the parent
