"""Containers that DataLoader workers read without copying them.

A forked worker shares its parent's memory page by page until a page is written, and
CPython writes to every object it touches: reading ``items[i]`` from a Python list
increments the reference count in the item's header, so over an epoch each worker
copies the pages of every item it read, which is the whole dataset per worker
(PyTorch issue #13246). ``gc.freeze()`` (the DataLoader calls it around fork) stops the
garbage collector from writing to them too, but not the reference counts.

:class:`SharedList` and :class:`SharedDict` keep their items as flat bytes in three
ember tensors (the bytes, int64 offsets, a uint8 kind per item) and build each item
when it is read, so a worker touches no per-item Python object of the parent's: its
pages stay shared. Items are stored as

- ``bytes``: as they are; ``str``: UTF-8 (both come back as the same type);
- anything else: pickled (protocol 5), unpickled on each read (so each read gives a
  new object; mutating it changes nothing in the container).

They pickle as their three tensors: under ``spawn``/``forkserver`` with
``ember.multiprocessing`` installed, workers receive shared-memory handles, not
copies; without it the buffers are copied into each worker.
"""
from __future__ import annotations

import array
import collections.abc
import hashlib
import operator
import pickle

import ember as em

__all__ = ["SharedList", "SharedDict"]

_BYTES, _STR, _PICKLE = 0, 1, 2


def _encode(x):
    t = type(x)
    if t is bytes:
        return _BYTES, x
    if t is str:
        return _STR, x.encode("utf-8", "surrogatepass")
    return _PICKLE, pickle.dumps(x, protocol=5)


def _tensor_from(buf, dtype):
    """An ember tensor holding a copy of buf (a bytes-like object)."""
    mv = memoryview(buf).cast("B")
    itemsize = 8 if dtype is em.int64 else 1
    t = em.empty((len(mv) // itemsize,), dtype=dtype)
    if len(mv):
        memoryview(t).cast("B")[:] = mv
    return t


def _pack(items):
    """(data, offsets, kinds) tensors for the items of an iterable."""
    data = bytearray()
    offsets = array.array("q", [0])
    kinds = bytearray()
    for x in items:
        kind, b = _encode(x)
        data += b
        offsets.append(len(data))
        kinds.append(kind)
    out = (_tensor_from(data, em.uint8), _tensor_from(offsets, em.int64),
           _tensor_from(kinds, em.uint8))
    return out


class SharedList(collections.abc.Sequence):
    """An immutable list kept as one flat buffer (bytes + offsets), which DataLoader
    workers read without copying it::

        paths = SharedList(p for p in huge_list_of_paths)      # str items
        records = SharedList(list_of_dicts)                     # pickled items

        class Files(Dataset):
            def __init__(self, paths): self.paths = paths
            def __getitem__(self, i): return load(self.paths[i])
            def __len__(self): return len(self.paths)

    Indexing builds a fresh object (``bytes``/``str`` as stored; other items are
    unpickled), slicing gives a list. ``nbytes`` is the size of the buffers."""

    __slots__ = ("_data", "_offsets", "_kinds", "_mv", "_off", "_kv", "_n", "__weakref__")

    def __init__(self, items=()):
        if isinstance(items, SharedList):
            self._set(items._data, items._offsets, items._kinds)
        else:
            self._set(*_pack(items))

    def _set(self, data, offsets, kinds):
        self._data, self._offsets, self._kinds = data, offsets, kinds
        self._mv = memoryview(data).cast("B") if data.numel() else memoryview(b"")
        self._off = memoryview(offsets).cast("B").cast("q")
        self._kv = memoryview(kinds).cast("B") if kinds.numel() else memoryview(b"")
        self._n = len(self._off) - 1

    @classmethod
    def _rebuild(cls, data, offsets, kinds):
        self = cls.__new__(cls)
        self._set(data, offsets, kinds)
        return self

    def __reduce__(self):
        return (type(self)._rebuild, (self._data, self._offsets, self._kinds))

    def __len__(self):
        return self._n

    def _item(self, i):
        off = self._off
        raw = self._mv[off[i]:off[i + 1]]
        kind = self._kv[i]
        if kind == _BYTES:
            return raw.tobytes()
        if kind == _STR:
            return str(raw, "utf-8", "surrogatepass")
        return pickle.loads(raw)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(self._n))]
        i = operator.index(index)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"SharedList index {index} out of range for {self._n} items")
        return self._item(i)

    def __iter__(self):
        for i in range(self._n):
            yield self._item(i)

    @property
    def nbytes(self):
        """Bytes held in the buffers (data + offsets + kinds)."""
        return len(self._mv) + 8 * (self._n + 1) + self._n

    @property
    def tensors(self):
        """The (data uint8, offsets int64, kinds uint8) tensors that hold the items."""
        return self._data, self._offsets, self._kinds

    def __eq__(self, other):
        if isinstance(other, SharedList):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        head = ", ".join(repr(x) for x in self[:3])
        more = ", ..." if self._n > 3 else ""
        return f"SharedList([{head}{more}], {self._n} items, {self.nbytes} bytes)"


def _key_hash(key):
    """A hash of a key that is the same in every process (str's hash() is salted per
    process under spawn). Keys are str, bytes, int or tuples of these."""
    if type(key) is bool or not isinstance(key, (str, bytes, int, tuple)):
        raise TypeError(f"SharedDict: keys must be str, bytes, int or tuples of them, got "
                        f"{type(key).__name__}")
    if isinstance(key, tuple):
        for k in key:
            _key_hash(k)
    b = pickle.dumps(key, protocol=5)
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")


class SharedDict(collections.abc.Mapping):
    """An immutable dict stored like :class:`SharedList` (keys and values as flat
    bytes) plus an open-addressing hash table in an int64 tensor, so workers look keys
    up without touching per-item Python objects of the parent's. Keys are str, bytes,
    int or tuples of them (hashed the same way in every process)."""

    __slots__ = ("_keys", "_values", "_table", "_tv", "_mask", "__weakref__")

    def __init__(self, mapping=()):
        items = dict(mapping)
        n = len(items)
        size = 8
        while size < 2 * n:
            size *= 2
        table = array.array("q", [-1]) * size
        mask = size - 1
        for i, k in enumerate(items):
            h = _key_hash(k) & mask
            while table[h] != -1:
                h = (h + 1) & mask
            table[h] = i
        self._keys = SharedList(items.keys())
        self._values = SharedList(items.values())
        self._set_table(_tensor_from(table, em.int64))

    def _set_table(self, table):
        self._table = table
        self._tv = memoryview(table).cast("B").cast("q")
        self._mask = len(self._tv) - 1

    @classmethod
    def _rebuild(cls, keys, values, table):
        self = cls.__new__(cls)
        self._keys, self._values = keys, values
        self._set_table(table)
        return self

    def __reduce__(self):
        return (type(self)._rebuild, (self._keys, self._values, self._table))

    def _find(self, key):
        try:
            h = _key_hash(key) & self._mask
        except TypeError:
            return -1
        tv, mask, keys = self._tv, self._mask, self._keys
        while True:
            i = tv[h]
            if i == -1:
                return -1
            k = keys._item(i)
            if k == key and type(k) is type(key):
                return i
            h = (h + 1) & mask

    def __getitem__(self, key):
        i = self._find(key)
        if i < 0:
            raise KeyError(key)
        return self._values._item(i)

    def __contains__(self, key):
        return self._find(key) >= 0

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)

    @property
    def nbytes(self):
        return self._keys.nbytes + self._values.nbytes + 8 * len(self._tv)

    def __repr__(self):
        return f"SharedDict({len(self)} items, {self.nbytes} bytes)"
