"""ember.multiprocessing: Python's multiprocessing with tensor-aware pickling (the
ember-mp package; the counterpart of torch.multiprocessing).

    import ember.multiprocessing as mp
    q = mp.Queue()
    q.put(t)            # t's storage moves to shared memory; the receiver maps it

Everything of `multiprocessing` is here (Process, Queue, SimpleQueue, Pool, Pipe,
Manager, Event, Lock, get_context, set_start_method, cpu_count, ...; they are the
stdlib's own objects). Importing this module registers reducers with
`multiprocessing.reduction.ForkingPickler`, so a tensor sent through any Queue, Pipe
or Process argument arrives as a view of the same shared memory: no copy, writes
visible to both sides, with the fork, spawn and forkserver start methods. Plus:

* ``share_memory_(t)`` / ``Tensor.share_memory_()``, ``is_shared``,
  ``nn.Module.share_memory()`` (Hogwild training: examples/hogwild.py);
* ``spawn(fn, args, nprocs, join)``: trainer processes with errors re-raised here;
* ``set_sharing_strategy('file_descriptor' | 'file_system')`` and friends.

Non-leaf tensors that require grad are refused (their graph can't cross
processes); leaves keep requires_grad. A tensor's storage keeps the shared memory
alive; segments are unlinked when the last process drops them or dies.
"""
import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F401,F403  (the stdlib API, re-exported)

from ember.multiprocessing import _shared
from ember.multiprocessing._shared import (  # noqa: F401
    FileDescriptorLimitError,
    SharedMemoryError,
    get_all_sharing_strategies,
    get_sharing_strategy,
    set_sharing_strategy,
)
from ember.multiprocessing._version import __version__  # noqa: F401
from ember.multiprocessing.reductions import init_reductions
from ember.multiprocessing.spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = list(_multiprocessing.__all__) + [
    "share_memory_", "is_shared", "spawn", "start_processes", "ProcessContext",
    "ProcessException", "ProcessRaisedException", "ProcessExitedException",
    "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies",
    "SharedMemoryError", "FileDescriptorLimitError"]


def share_memory_(tensor):
    """Move `tensor`'s storage into shared memory in place (every tensor viewing that
    storage follows); returns `tensor`. A no-op when it is shared already, and for
    tensors on other devices than the CPU (their memory can't be shared yet)."""
    storage = tensor.untyped_storage()
    if storage.device.type == "cpu":
        _shared.share_storage(storage)
    return tensor


def is_shared(tensor):
    """True when `tensor`'s storage lives in shared memory."""
    return _shared.storage_is_shared(tensor.untyped_storage())


init_reductions()
