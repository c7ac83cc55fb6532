"""Datasets: map-style (``__getitem__``/``__len__``) and iterable (``__iter__``).

A map-style dataset may also define ``__getitems__(indices) -> samples`` (PyTorch 2.x's
protocol): the DataLoader then fetches a whole batch with one call instead of one
``__getitem__`` per index. TensorDataset, StackDataset and Subset use it:
TensorDataset gathers a batch with one advanced-indexing read per tensor and returns a
:class:`GatheredSamples`, which ``default_collate`` hands back as the gathered tensors
without splitting them into rows and stacking them again.
"""
from __future__ import annotations

import array
import bisect
import collections.abc
import math
import numbers
import operator
import warnings

import ember as em

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "GatheredSamples"]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` and ``__len__``.

    Subclasses may add ``__getitems__(indices)`` returning the samples of a list of
    indices (a sequence as long as ``indices``); the DataLoader uses it when present."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: ``__iter__``.

    With ``num_workers > 0`` every worker process iterates its own copy of the dataset,
    so an unsharded stream comes out ``num_workers`` times. Shard it inside
    ``__iter__`` with :func:`ember.data.get_worker_info` or, simplest, with
    :func:`ember.data.shard_for_worker`::

        class Lines(IterableDataset):
            def __iter__(self):
                return shard_for_worker(open(self.path))
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


def _index_tensor(indices):
    """A list of integer indices as an int64 tensor (through the buffer protocol: about
    15 us for 256 indices, where ember.tensor(list) takes hundreds)."""
    if isinstance(indices, em.Tensor):
        return indices
    buf = array.array("q", indices)
    t = em.empty((len(buf),), dtype=em.int64)
    if len(buf):
        memoryview(t).cast("B")[:] = memoryview(buf).cast("B")
    return t


class GatheredSamples(collections.abc.Sequence):
    """The samples of a batch held as gathered columns: sample ``i`` is
    ``tuple(column[i] for column in columns)``.

    It is a read-only sequence of samples, so a custom ``collate_fn`` sees what it
    would see for a list of samples; ``default_collate`` returns ``list(columns)``
    directly (what stacking the rows would give), without splitting and re-stacking."""

    __slots__ = ("columns",)

    def __init__(self, columns):
        self.columns = tuple(columns)

    def __len__(self):
        return self.columns[0].shape[0]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return tuple(c[i] for c in self.columns)

    def __iter__(self):
        for i in range(len(self)):
            yield tuple(c[i] for c in self.columns)

    def __reduce__(self):
        return (GatheredSamples, (self.columns,))

    def __repr__(self):
        shapes = ", ".join(str(tuple(c.shape)) for c in self.columns)
        return f"GatheredSamples({len(self)} samples; columns {shapes})"


class TensorDataset(Dataset):
    """Samples are the i-th rows of the given tensors (which share dim 0)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, em.Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, "
                                f"not a tensor")
        n = tensors[0].shape[0] if tensors[0].ndim else None
        for i, t in enumerate(tensors):
            if t.ndim == 0 or t.shape[0] != n:
                raise ValueError(f"TensorDataset: size mismatch between tensors: tensor 0 has "
                                 f"shape {tuple(tensors[0].shape)}, tensor {i} has shape "
                                 f"{tuple(t.shape)}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices):
        """A batch with one gather per tensor (no per-row reads). Out-of-range indices
        raise IndexError (from the gather)."""
        idx = _index_tensor(indices)
        return GatheredSamples([t[idx] for t in self.tensors])

    def __len__(self):
        return self.tensors[0].shape[0]


def _getitems(dataset, indices):
    """dataset's samples at indices: through __getitems__ when it has one."""
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is not None:
        return getitems(indices)
    return [dataset[i] for i in indices]


class StackDataset(Dataset):
    """Datasets of equal length side by side: ``StackDataset(a, b)[i] == (a[i], b[i])``
    and ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets either as positional arguments "
                             "(tuple samples) or as keywords (dict samples), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self.datasets = args if args else kwargs
        items = list(enumerate(args)) if args else list(kwargs.items())
        lengths = {k: len(d) for k, d in items}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"StackDataset: size mismatch between datasets: {lengths}")
        self._length = next(iter(lengths.values()))

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            cols = {k: _getitems(d, indices) for k, d in self.datasets.items()}
            for k, c in cols.items():
                _check_getitems_len(c, indices, k)
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [_getitems(d, indices) for d in self.datasets]
        for k, c in enumerate(cols):
            _check_getitems_len(c, indices, k)
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self):
        return self._length


def _check_getitems_len(samples, indices, which):
    if len(samples) != len(indices):
        raise ValueError(f"StackDataset: nested dataset {which!r}'s __getitems__ returned "
                         f"{len(samples)} samples for {len(indices)} indices")


class Subset(Dataset):
    """The samples of dataset at the given indices."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        return _getitems(self.dataset, [self.indices[i] for i in indices])

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use "
                                "ChainDataset)")
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = operator.index(index)
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} out of range for {len(self)}")
            index += len(self)
        if index >= len(self):
            raise IndexError(f"ConcatDataset: index {index} out of range for {len(self)}")
        d = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[d - 1] if d else 0
        return self.datasets[d][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (computed lazily, each time it's iterated)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            total += len(d)
        return total


def random_split(dataset, lengths, generator=None):
    """Split a dataset into non-overlapping random subsets of the given lengths, or of
    the given fractions of its length (which sum to 1; a remainder goes round-robin
    to the first subsets). ``generator`` (an ember.Generator) makes it reproducible;
    without one it draws from ember's default generator."""
    n = len(dataset)
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths must not be empty")
    for x in lengths:
        if not isinstance(x, numbers.Real) or isinstance(x, bool) or x < 0:
            raise ValueError(f"random_split: lengths must be non-negative numbers, got {x!r}")
    if all(0 <= x <= 1 for x in lengths) and math.isclose(sum(lengths), 1) and \
            sum(lengths) <= 1 and not all(isinstance(x, numbers.Integral) for x in lengths):
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this "
                              f"results in an empty dataset", stacklevel=2)
        lengths = counts
    for x in lengths:
        if not isinstance(x, numbers.Integral):
            raise ValueError(f"random_split: lengths must be integers or fractions that sum "
                             f"to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} do not add up to the "
                         f"dataset's length {n}")
    perm = em.randperm(n, generator=generator).tolist() if n else []
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out
