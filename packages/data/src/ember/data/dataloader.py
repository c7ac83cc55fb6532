"""DataLoader: batches of a dataset, collated into tensors (in the main process in
this release)."""
from __future__ import annotations

import collections.abc
import numbers

import ember as em
from ember.data.dataset import IterableDataset
from ember.data.sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """Stack a list of samples: tensors into one tensor with a new dim 0, numbers into
    a tensor, and tuples/lists/dicts element by element."""
    first = batch[0]
    if isinstance(first, em.Tensor):
        return em.stack(batch, 0)
    if isinstance(first, bool):
        return em.tensor(batch, dtype=em.bool)
    if isinstance(first, numbers.Integral):
        return em.tensor(batch, dtype=em.int64)
    if isinstance(first, numbers.Real):
        return em.tensor(batch, dtype=em.float64)
    if isinstance(first, (str, bytes)):
        return batch
    if type(first).__module__ == "numpy" and hasattr(first, "shape"):
        return em.stack([em.as_tensor(b) for b in batch], 0)
    if isinstance(first, collections.abc.Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        sizes = {len(b) for b in batch}
        if len(sizes) != 1:
            raise RuntimeError("default_collate: each element in the batch should be of "
                               f"equal size, got sizes {sorted(sizes)}")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch elements must be tensors, numbers, strings, "
                    f"dicts or sequences; found {type(first).__name__}")


class DataLoader:
    """Iterate over a dataset in batches.

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
        for xb, yb in loader: ...
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=None, persistent_workers=False):
        if num_workers != 0:
            raise NotImplementedError("DataLoader: num_workers > 0 needs ember-mp's worker "
                                      "processes, which this release does not have yet")
        self.dataset = dataset
        self.num_workers = num_workers
        self.collate_fn = collate_fn or default_collate
        self.drop_last = drop_last
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size = None
        elif self._iterable:
            if shuffle or sampler is not None:
                raise ValueError("DataLoader: an IterableDataset has no indices to shuffle or "
                                 "sample")
        else:
            if sampler is not None and shuffle:
                raise ValueError("DataLoader: sampler option is mutually exclusive with "
                                 "shuffle")
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle \
                    else SequentialSampler(dataset)
            if batch_size is not None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler

    def __iter__(self):
        if self._iterable:
            return self._iter_stream()
        if self.batch_sampler is None:
            return (self.dataset[i] for i in self.sampler)     # batch_size=None: samples
        return (self.collate_fn([self.dataset[i] for i in batch])
                for batch in self.batch_sampler)

    def _iter_stream(self):
        if self.batch_size is None:
            yield from self.dataset
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            raise TypeError("DataLoader over an IterableDataset has no len()")
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
