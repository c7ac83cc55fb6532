"""default_collate (a list of samples -> one batch) and default_convert (one sample's
NumPy arrays -> tensors, for ``batch_size=None``), as in PyTorch."""
from __future__ import annotations

import collections.abc
import re

import ember as em
from ember.data.dataset import GatheredSamples

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")


def _is_numpy(x):
    return type(x).__module__ == "numpy"


def _numpy_batch_to_tensor(batch, what):
    import numpy as np
    arr = np.stack(batch) if what == "array" else np.array(batch)
    if _NP_STR_OBJ.search(arr.dtype.str):
        raise TypeError(f"default_collate: NumPy arrays of dtype {arr.dtype} (strings or "
                        f"objects) can't become tensors")
    return em.from_numpy(np.ascontiguousarray(arr))


def default_collate(batch):
    """Stack a list of samples into a batch, recursively:

    ===========================  ==============================================
    sample element               batch
    ===========================  ==============================================
    tensor                       tensor with a new dim 0 (ember.stack)
    NumPy array or scalar        tensor (same dtype) with a new dim 0
    float / int / bool           float64 / int64 / bool tensor
    str / bytes                  list, unchanged
    Mapping                      same type, each key collated
    namedtuple                   same type, each field collated
    tuple / other Sequence       list (other sequences: their type when it takes a
                                 list) of each position collated; sizes must match
    ===========================  ==============================================

    A :class:`~ember.data.GatheredSamples` (from ``TensorDataset.__getitems__``) is
    already columns: it comes back as ``list(columns)``, with no copy."""
    if type(batch) is GatheredSamples:
        return list(batch.columns)
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    first = batch[0]
    if isinstance(first, em.Tensor):
        return em.stack(list(batch), 0)
    if _is_numpy(first):
        if getattr(first, "ndim", None) is not None and type(first).__name__ == "ndarray":
            if _NP_STR_OBJ.search(first.dtype.str):
                raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, "
                                f"numbers, dicts or lists; found an array of dtype "
                                f"{first.dtype}")
            return _numpy_batch_to_tensor(batch, "array")
        if hasattr(first, "dtype"):                     # a NumPy scalar
            return _numpy_batch_to_tensor(batch, "scalar")
    if isinstance(first, bool):
        return em.tensor(list(batch), dtype=em.bool)
    if isinstance(first, int):
        return em.tensor(list(batch), dtype=em.int64)
    if isinstance(first, float):
        return em.tensor(list(batch), dtype=em.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        out = {k: default_collate([b[k] for b in batch]) for k in first}
        if type(first) is dict:
            return out
        try:
            return type(first)(out)
        except TypeError:           # a Mapping whose constructor takes no dict
            return out
    if isinstance(first, tuple) and hasattr(first, "_fields"):       # namedtuple
        _check_sizes(batch)
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        _check_sizes(batch)
        cols = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(first, (tuple, list)):
            return cols
        try:
            return type(first)(cols)
        except TypeError:
            return cols
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, "
                    f"dicts or lists; found {type(first).__name__}")


def _check_sizes(batch):
    it = iter(batch)
    n = len(next(it))
    if not all(len(b) == n for b in it):
        sizes = sorted({len(b) for b in batch})
        raise RuntimeError(f"default_collate: each element in the batch should be of equal "
                           f"size, got sizes {sizes}")


def default_convert(data):
    """One sample's NumPy arrays and scalars as tensors (arrays share memory), through
    mappings, namedtuples and sequences; everything else unchanged. The DataLoader
    applies it when batch_size is None."""
    if isinstance(data, em.Tensor):
        return data
    if _is_numpy(data):
        if type(data).__name__ == "ndarray":
            if _NP_STR_OBJ.search(data.dtype.str):
                return data
            return em.as_tensor(data)
        if hasattr(data, "dtype") and not _NP_STR_OBJ.search(data.dtype.str):
            import numpy as np
            return em.from_numpy(np.array(data))
        return data
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        out = {k: default_convert(v) for k, v in data.items()}
        if type(data) is dict:
            return out
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        out = [default_convert(d) for d in data]
        if isinstance(data, list):
            return out
        try:
            return type(data)(out)
        except TypeError:
            return out
    return data
