"""Samplers: which indices, in which order."""
from __future__ import annotations

import math
import numbers
import operator

import ember as em

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]


def _positive_int(value, what, owner):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {what} should be a positive integer, got {value!r}")
    return int(value)


def _bool(value, what, owner):
    if not isinstance(value, bool):
        raise ValueError(f"{owner}: {what} should be a boolean, got {value!r}")
    return value


class Sampler:
    """Base class: ``__iter__`` yields indices (or lists of indices for batch
    samplers); ``__len__`` when the count is known."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch; with ``num_samples`` larger than the dataset,
    permutations one after another; with ``replacement=True``, num_samples
    independent uniform draws. ``generator`` makes it reproducible (ember's default
    generator otherwise)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = _bool(replacement, "replacement", "RandomSampler")
        self._num_samples, self.generator = num_samples, generator
        if num_samples is not None:
            _positive_int(num_samples, "num_samples", "RandomSampler")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if n == 0:
            return iter(())
        if self.replacement:
            return iter(em.randint(0, n, (self.num_samples,), generator=self.generator)
                        .tolist())
        out = []
        while len(out) < self.num_samples:
            out += em.randperm(n, generator=self.generator).tolist()
        return iter(out[:self.num_samples])

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        if len(self.indices) == 0:
            return iter(())
        perm = em.randperm(len(self.indices), generator=self.generator).tolist()
        return (self.indices[i] for i in perm)

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in [0, len(weights)), index i drawn with probability
    proportional to weights[i] (with or without replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        self.num_samples = _positive_int(num_samples, "num_samples", "WeightedRandomSampler")
        self.replacement = _bool(replacement, "replacement", "WeightedRandomSampler")
        if isinstance(weights, em.Tensor):
            w = weights.to(em.float64)
        else:
            w = em.tensor([float(x) for x in weights], dtype=em.float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1-d sequence, got "
                             f"shape {tuple(w.shape)}")
        if w.shape[0] == 0:
            raise ValueError("WeightedRandomSampler: weights should not be empty")
        vals = w.tolist()
        if any(not math.isfinite(v) or v < 0 for v in vals):
            raise ValueError("WeightedRandomSampler: weights should be finite and "
                             "non-negative")
        if sum(vals) <= 0:
            raise ValueError("WeightedRandomSampler: the weights sum to zero")
        if not replacement and self.num_samples > sum(1 for v in vals if v > 0):
            raise ValueError(f"WeightedRandomSampler: cannot draw {self.num_samples} samples "
                             f"without replacement from {sum(1 for v in vals if v > 0)} "
                             f"indices of non-zero weight")
        self.weights, self.generator = w, generator

    def __iter__(self):
        return iter(em.multinomial(self.weights, self.num_samples, self.replacement,
                                   generator=self.generator).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of batch_size (the last one shorter
    unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        self.batch_size = _positive_int(batch_size, "batch_size", "BatchSampler")
        self.drop_last = _bool(drop_last, "drop_last", "BatchSampler")
        self.sampler = sampler

    def __iter__(self):
        it = iter(self.sampler)
        size = self.batch_size
        while True:
            batch = []
            for i in it:
                batch.append(i)
                if len(batch) == size:
                    break
            if len(batch) == size:
                yield batch
            else:
                if batch and not self.drop_last:
                    yield batch
                return

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _distributed_world():
    """(num_replicas, rank) from ember.distributed when it is importable and
    initialized; None otherwise."""
    try:
        import ember.distributed as dist
    except ImportError:
        return None
    try:
        if hasattr(dist, "is_available") and not dist.is_available():
            return None
        if hasattr(dist, "is_initialized") and not dist.is_initialized():
            return None
        return dist.get_world_size(), dist.get_rank()
    except Exception:       # a partial ember.distributed: behave as not initialized
        return None


class DistributedSampler(Sampler):
    """The share of a dataset that process ``rank`` of ``num_replicas`` reads.

    Each epoch every replica draws the same permutation (seeded by ``seed + epoch``;
    call :meth:`set_epoch` at the start of each epoch) and takes every
    ``num_replicas``-th index from position ``rank``. The dataset is padded by
    repeating indices to a multiple of num_replicas, or trimmed when ``drop_last``.

    ``num_replicas`` and ``rank`` come from ``ember.distributed`` when it is
    initialized; otherwise they are required."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            world = _distributed_world()
            if world is None:
                raise ValueError("DistributedSampler: num_replicas and rank are required "
                                 "arguments when ember.distributed is not initialized")
            if num_replicas is None:
                num_replicas = world[0]
            if rank is None:
                rank = world[1]
        num_replicas = _positive_int(num_replicas, "num_replicas", "DistributedSampler")
        rank = operator.index(rank)
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank}, rank should be in "
                             f"the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle = _bool(shuffle, "shuffle", "DistributedSampler")
        self.drop_last = _bool(drop_last, "drop_last", "DistributedSampler")
        self.seed, self.epoch = int(seed), 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = em.Generator().manual_seed(self.seed + self.epoch)
            indices = em.randperm(n, generator=g).tolist() if n else []
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad > 0 and indices:
                reps = math.ceil(pad / len(indices))
                indices += (indices * reps)[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch: with shuffle=True, each epoch gets its own order (the same on
        every replica)."""
        self.epoch = operator.index(epoch)
