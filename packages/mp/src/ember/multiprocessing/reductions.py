"""Tensor-aware pickling for multiprocessing: every pickle that multiprocessing makes
(Queue, SimpleQueue, Pipe, Pool, Manager, Process arguments under spawn and
forkserver) goes through `multiprocessing.reduction.ForkingPickler`; importing
ember.multiprocessing teaches it ember's tensors and storages.

A tensor travels as (its class, its storage, dtype, shape, strides, offset,
requires_grad, instance __dict__); its storage travels as a handle to shared memory
(moved there first if it isn't yet). The receiver maps the same memory: no copy,
and writes are visible to both sides. Two views of one storage sent in one message
share one handle (the pickle memo), and across messages each process maps a
segment once (see _shared). Ordinary `pickle` is untouched: it still copies bytes.
"""
from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import ember as em
from ember._C import core as _core
from ember.multiprocessing import _shared

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor", "reduce_storage"]

reduce_storage = _shared.reduce_storage


def reduce_tensor(tensor):
    """(rebuild_tensor, args) for ForkingPickler: the storage goes as a shared handle."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            f"ember.multiprocessing: cannot send a tensor that requires grad and is not a "
            f"leaf: its graph can't cross processes; send .detach() (a tensor of shape "
            f"{tuple(tensor.shape)} made by {_node_name(tensor.grad_fn)})")
    storage, dtype, shape, strides, offset = tensor._layout()
    if storage.device.type != "cpu":
        raise RuntimeError(f"ember.multiprocessing: sending a tensor on {storage.device} "
                           f"between processes is not supported yet; send .cpu()")
    state = getattr(tensor, "__dict__", None) or None
    return rebuild_tensor, (type(tensor), storage, dtype.name, shape, strides, offset,
                            bool(tensor.requires_grad), state)


def _node_name(node):
    name = getattr(node, "name", None)
    try:
        return name() if callable(name) else (name or type(node).__name__)
    except Exception:
        return type(node).__name__


def rebuild_tensor(cls, storage, dtype_name, shape, strides, offset, requires_grad, state):
    """A tensor of class `cls` viewing the (shared) `storage` with the sent layout."""
    t = _core.as_strided_from(storage, _core._dtype_by_name(dtype_name), shape, strides,
                              offset)
    if cls is not em.Tensor:
        # like nn.Parameter.__new__: an uninitialised instance that takes t's layout
        obj = em.Tensor.__new__(cls)
        obj.data = t
        t = obj
    if requires_grad:
        t.requires_grad = True
    if state:
        t.__dict__.update(state)
    return t


def _reducer_override(self, obj):
    # Subclasses of Tensor (nn.Parameter, nn.Buffer, users' own) are not in the
    # dispatch table, which matches exact types, and Parameter has a __reduce_ex__ that
    # would copy; the override comes first for every non-builtin object.
    if isinstance(obj, _core.TensorBase):
        return reduce_tensor(obj)
    if _previous_override is not None:
        return _previous_override(self, obj)
    return NotImplemented


_previous_override = None
_installed = False


def init_reductions():
    """Register ember's reducers with ForkingPickler (done on import; idempotent)."""
    global _installed, _previous_override
    if _installed:
        return
    ForkingPickler.register(em.Tensor, reduce_tensor)
    ForkingPickler.register(_core.Storage, reduce_storage)
    prev = getattr(ForkingPickler, "reducer_override", None)
    if prev is not None and prev is not _reducer_override:
        _previous_override = prev
    ForkingPickler.reducer_override = _reducer_override
    _installed = True
