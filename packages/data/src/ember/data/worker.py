"""The DataLoader's worker processes: the loop each worker runs, what it knows about
itself (:func:`get_worker_info`), how it seeds its random number generators, and a
helper that shards iterable datasets across workers (and distributed ranks).

Protocol. Each worker has its own index queue and all share one result queue (plain
``multiprocessing`` queues of the loader's context). The main process sends
``(task_idx, index)`` messages; the worker answers ``(task_idx, batch)`` where the
batch is the collated data, an :class:`ExceptionWrapper` (the dataset raised), or an
``_IterableDatasetStopIteration`` (its stream ended). ``None`` tells a worker to exit;
``_ResumeIteration(base_seed)`` starts a new epoch of a persistent worker (it answers
with the same object). Batches are pickled by ``multiprocessing.reduction
.ForkingPickler``: once ``ember.multiprocessing`` is imported (the DataLoader and every
worker try to import it) a tensor crosses as a shared-memory handle, not as bytes.
"""
from __future__ import annotations

import ctypes
import faulthandler
import multiprocessing.queues
import os
import queue
import random
import signal
import sys
import traceback

import ember as em

__all__ = ["WorkerInfo", "get_worker_info", "shard_for_worker"]

# How often (seconds) a waiting worker checks that its parent is still alive and that
# the loader hasn't asked its workers to stop (the done event: the None message may
# never come when the loader is collected by the garbage collector, whose weakref
# callbacks can close the index queue's feeder thread before the loader's __del__).
WORKER_POLL_INTERVAL = 0.1


class WorkerInfo:
    """What a DataLoader worker knows about itself (``get_worker_info()`` in a worker):

    - ``id``: this worker's number, 0 .. num_workers - 1
    - ``num_workers``: how many workers the loader has
    - ``seed``: the seed this worker gave ember, ``random`` and NumPy this epoch
      (base_seed + id)
    - ``dataset``: this worker's copy of the dataset
    """

    __slots__ = ("id", "num_workers", "seed", "dataset", "_frozen")

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key, value):
        if getattr(self, "_frozen", False):
            raise RuntimeError(f"WorkerInfo: cannot set attribute {key!r}; the worker's "
                               f"information is read-only")
        object.__setattr__(self, key, value)

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, "
                f"seed={self.seed}, dataset={type(self.dataset).__name__})")


_worker_info = None


def get_worker_info():
    """In a DataLoader worker process, its :class:`WorkerInfo`; None in the main
    process. Use it in an IterableDataset's ``__iter__`` (or a ``worker_init_fn``) to
    give each worker its own share of the data."""
    return _worker_info


def _world():
    from ember.data.sampler import _distributed_world
    return _distributed_world() or (1, 0)


def shard_for_worker(iterable, *, block=1, num_replicas=None, rank=None):
    """The items of ``iterable`` that belong to this DataLoader worker (and this
    distributed rank): items are dealt in blocks of ``block`` to
    ``num_replicas * num_workers`` shards in turn, and this process keeps shard
    ``rank * num_workers + worker_id``.

    In the main process (``num_workers=0``) it keeps every block of this rank's share.
    ``num_replicas`` and ``rank`` default to ember.distributed's world when it is
    initialized, else to 1 and 0. With ``block`` equal to the DataLoader's batch size,
    the loader yields the same batches, in the same order, for any ``num_workers``::

        class Stream(IterableDataset):
            def __iter__(self):
                return shard_for_worker(read_records(self.path), block=32)

        DataLoader(Stream(), batch_size=32, num_workers=4)
    """
    if not isinstance(block, int) or isinstance(block, bool) or block <= 0:
        raise ValueError(f"shard_for_worker: block should be a positive integer, got "
                         f"{block!r}")
    if num_replicas is None or rank is None:
        world = _world()
        num_replicas = world[0] if num_replicas is None else num_replicas
        rank = world[1] if rank is None else rank
    if not 0 <= rank < num_replicas:
        raise ValueError(f"shard_for_worker: rank {rank} is not in [0, {num_replicas})")
    info = get_worker_info()
    nw, wid = (1, 0) if info is None else (info.num_workers, info.id)
    return _shard(iterable, block, num_replicas * nw, rank * nw + wid)


def _shard(iterable, block, nshards, shard):
    if nshards == 1:
        yield from iterable
        return
    for i, item in enumerate(iterable):
        if (i // block) % nshards == shard:
            yield item


# messages -----------------------------------------------------------------------------

class _IterableDatasetStopIteration:
    __slots__ = ("worker_id",)

    def __init__(self, worker_id):
        self.worker_id = worker_id

    def __reduce__(self):
        return (_IterableDatasetStopIteration, (self.worker_id,))


class _ResumeIteration:
    __slots__ = ("seed",)

    def __init__(self, seed):
        self.seed = seed

    def __reduce__(self):
        return (_ResumeIteration, (self.seed,))


class _KeyErrorMessage(str):
    """KeyError's str() is the repr of its argument; this keeps the newlines."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, as text that crosses processes: the type (when
    it can be pickled), where it happened and the worker's formatted traceback."""

    def __init__(self, exc_info=None, where="in DataLoader worker process"):
        if exc_info is None:
            exc_info = sys.exc_info()
        exc_type = exc_info[0]
        try:                     # a type defined in a function can't cross processes
            import pickle
            pickle.loads(pickle.dumps(exc_type))
        except Exception:
            exc_type = None
        self.exc_type = exc_type
        self.exc_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def message(self):
        return (f"Caught {self.exc_name} {self.where}.\nOriginal traceback (in the worker):"
                f"\n{self.exc_msg}")

    def reraise(self):
        """Raise the same exception type in this process, with the worker's traceback
        in the message (RuntimeError when the type can't be rebuilt from a message)."""
        msg = self.message()
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        exc = None
        if self.exc_type is not None and issubclass(self.exc_type, Exception):
            try:
                exc = self.exc_type(msg)
            except Exception:
                exc = None
            if exc is not None and str(exc) != msg and self.exc_type is not KeyError:
                exc = None          # a constructor that doesn't keep its message
        if exc is None:
            exc = RuntimeError(msg)
        raise exc


class _ResultQueue(multiprocessing.queues.Queue):
    """The shared result queue. mp.Queue pickles in a background feeder thread, where a
    batch that can't be pickled would only print a traceback and vanish (the main
    process would wait for it forever). Here the worker answers that task with the
    error instead."""

    def __init__(self, *, ctx):
        super().__init__(ctx=ctx)

    def _on_queue_feeder_error(self, e, obj):
        if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], int):
            try:
                raise RuntimeError(f"the batch could not be sent to the main process: "
                                   f"{type(e).__name__}: {e}") from e
            except RuntimeError:
                wrapper = ExceptionWrapper(
                    where=f"in DataLoader worker process {_worker_info.id if _worker_info else '?'}"
                          f" (pid {os.getpid()})")
            self.put((obj[0], wrapper))
        else:
            super()._on_queue_feeder_error(e, obj)


# worker-side setup ----------------------------------------------------------------------

def _seed_numpy(np, seed):
    np.random.seed([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])


class _SeedNumpyOnImport:
    """A meta-path finder that seeds NumPy's global RandomState right after NumPy is
    first imported in this worker: importing NumPy eagerly would cost every worker a
    tenth of a second or more when the dataset doesn't use it."""

    def __init__(self):
        self.seed = None

    def find_spec(self, name, path=None, target=None):
        if name != "numpy" or self.seed is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, hook = spec.loader, self
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
            if hook.seed is not None:
                _seed_numpy(module, hook.seed)
        loader.exec_module = exec_module
        return spec


_numpy_hook = _SeedNumpyOnImport()


def _seed_all(seed):
    """Seed ember's default generator, ``random`` and NumPy's global RandomState (now if
    NumPy is imported, else as soon as something imports it)."""
    em.manual_seed(seed)
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None and hasattr(np, "random"):
        _seed_numpy(np, seed)
    else:
        _numpy_hook.seed = seed
        if _numpy_hook not in sys.meta_path:
            sys.meta_path.insert(0, _numpy_hook)


def _set_pdeathsig():
    """Linux: die with SIGKILL when the parent (thread) that started this worker
    exits, then make sure the parent didn't die before the request was made."""
    if not sys.platform.startswith("linux"):
        return
    expected_ppid = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        pass
    if os.getppid() != expected_ppid:
        os._exit(1)


class _ParentWatchdog:
    """Is the process that owns the DataLoader still alive? Under fork and spawn it is
    the parent; under forkserver the parent is the fork server, so also check the
    loader's process itself."""

    def __init__(self, loader_pid):
        self.loader_pid = loader_pid
        self.ppid = os.getppid()
        self.alive = True

    def is_alive(self):
        if self.alive:
            if os.getppid() != self.ppid:
                self.alive = False
            elif self.ppid != self.loader_pid:
                try:
                    os.kill(self.loader_pid, 0)
                except ProcessLookupError:
                    self.alive = False
                except PermissionError:
                    pass
        return self.alive


def _compact(data):
    """A tensor that is a small view of a big storage would share (or pickle) more
    than it shows: copy such views; leave everything else as is."""
    if isinstance(data, em.Tensor):
        try:
            nbytes = data.untyped_storage().nbytes
            nbytes = nbytes() if callable(nbytes) else nbytes
            own = data.numel() * data.element_size()
        except Exception:
            return data
        if nbytes > 2 * own + 65536:
            return data.clone()
        return data
    if type(data) in (list, tuple):
        return type(data)(_compact(d) for d in data)
    if type(data) is dict:
        return {k: _compact(v) for k, v in data.items()}
    return data


def _worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 loader_pid, pdeathsig):
    """The main function of a DataLoader worker process."""
    global _worker_info
    try:
        if pdeathsig:
            _set_pdeathsig()
        try:
            import ember.multiprocessing  # noqa: F401  (tensor reducers: shared memory)
        except ImportError:
            pass
        try:
            faulthandler.enable()       # a segfault prints the worker's traceback
        except Exception:
            pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the main process's job
        if hasattr(em, "set_num_threads"):
            em.set_num_threads(1)

        from ember.data._fetch import create_fetcher

        seed = base_seed + worker_id
        _seed_all(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id} (pid {os.getpid()})"
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)

        iteration_end = False
        watchdog = _ParentWatchdog(loader_pid)
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if isinstance(r, _ResumeIteration):
                seed = r.seed + worker_id
                _seed_all(seed)
                _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                          dataset=dataset)
                data_queue.put((r, None))
                iteration_end = False
                if iterable:
                    try:
                        fetcher = create_fetcher(iterable, dataset, auto_collation,
                                                 collate_fn, drop_last)
                    except Exception:
                        init_exception = ExceptionWrapper(where=where)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = _compact(fetcher.fetch(index))
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set() or not _ParentWatchdog(loader_pid).is_alive():
        data_queue.cancel_join_thread()
    data_queue.close()
