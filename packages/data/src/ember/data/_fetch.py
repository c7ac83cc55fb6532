"""Fetchers: turn one index message into one batch, in the main process or a worker."""
from __future__ import annotations


class _MapFetcher:
    """Map-style: the index is a list of indices (auto-collation) or one index."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self._getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index):
        if self.auto_collation:
            if self._getitems is not None:
                data = self._getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    """Iterable: the index is the batch size (auto-collation) or None (one sample).
    Raises StopIteration when the stream ends (or, with drop_last, when only a partial
    batch is left)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            nxt = self.dataset_iter.__next__
            for _ in range(index):
                try:
                    data.append(nxt())
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < index):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
