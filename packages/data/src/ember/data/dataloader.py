"""DataLoader: batches of a dataset, collated into tensors, loaded in the main process
or in worker processes.

With ``num_workers > 0`` the loader starts that many processes (fork by default on
Linux; spawn and forkserver through ``multiprocessing_context``), gives each its own
index queue and collects batches from one result queue, keeping ``prefetch_factor``
batches in flight per worker and yielding them in sampler order. Tensors come back
through ``multiprocessing``'s ForkingPickler: with ``ember.multiprocessing`` installed
(it registers tensor reducers there) they travel through shared memory; without it
they are pickled by value, which still works.

Nothing hangs: while it waits, the main process checks every
``STATUS_CHECK_INTERVAL`` seconds that its workers are alive, and reports a dead one
(``DataLoader worker 2 (pid N) exited unexpectedly: killed by signal 9``); an
exception in a worker is raised again in the main process with the worker's id and
traceback; ``timeout`` bounds each wait. Workers stop when the iterator (or, with
``persistent_workers``, the loader) is deleted or garbage-collected, at interpreter
exit, and when the main process dies (``PR_SET_PDEATHSIG`` on Linux, and each worker
polls its parent).
"""
from __future__ import annotations

import atexit
import collections.abc
import gc
import hashlib
import itertools
import multiprocessing
import numbers
import os
import pickle
import queue
import signal
import sys
import threading
import time
import warnings
import weakref

import ember as em
from ember.data import worker as _worker
from ember.data._fetch import create_fetcher
from ember.data.collate import default_collate, default_convert
from ember.data.dataset import IterableDataset
from ember.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]

# How often (seconds) the main process checks its workers while it waits for a batch.
STATUS_CHECK_INTERVAL = 0.1
# How long shutdown waits for workers to exit by themselves before terminating them.
SHUTDOWN_JOIN_TIMEOUT = 1.0


def _draw_seed(generator):
    """A 63-bit seed drawn from generator (ember's default generator when None)."""
    return em.empty((), dtype=em.int64).random_(generator=generator).item()


class _InfiniteConstantSampler(Sampler):
    """An IterableDataset's 'indices': the batch size (or None), forever."""

    def __init__(self, value):
        self.value = value

    def __iter__(self):
        return itertools.repeat(self.value)


def _resolve_context(ctx):
    if ctx is None:
        if multiprocessing.get_start_method(allow_none=True) is None and \
                sys.platform.startswith("linux"):
            return multiprocessing.get_context("fork")
        return multiprocessing.get_context()
    if isinstance(ctx, str):
        if ctx not in multiprocessing.get_all_start_methods():
            raise ValueError(f"DataLoader: multiprocessing_context {ctx!r} is not a start "
                             f"method here; expected one of "
                             f"{multiprocessing.get_all_start_methods()}")
        return multiprocessing.get_context(ctx)
    for attr in ("Process", "Queue", "Event", "get_start_method"):
        if not hasattr(ctx, attr):
            raise TypeError(f"DataLoader: multiprocessing_context should be a start method "
                            f"name or a multiprocessing context, got {ctx!r}")
    return ctx


class DataLoader:
    """Iterate over a dataset in batches, as PyTorch's ``torch.utils.data.DataLoader``::

        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                            num_workers=2, persistent_workers=True)
        for xb, yb in loader: ...

    - ``batch_size`` (default 1; None yields single samples, passed through
      ``default_convert``), ``shuffle``, ``sampler``, ``batch_sampler``, ``drop_last``:
      which indices make each batch (the same rules and exclusions as PyTorch).
    - ``collate_fn``: a list of samples -> a batch (``default_collate``).
    - ``num_workers``: worker processes (0: load in this process).
      ``prefetch_factor`` (default 2) batches in flight per worker;
      ``persistent_workers`` keeps the workers from one epoch to the next;
      ``worker_init_fn(worker_id)`` runs in each worker after seeding;
      ``multiprocessing_context``: "fork" (the Linux default), "spawn", "forkserver"
      or a context object; ``timeout`` (seconds, 0 = none) for each batch.
    - ``generator``: the ember.Generator for the random sampler and for the workers'
      base seed (ember's default generator when None). Each epoch draws a base seed;
      worker ``i`` seeds ember, ``random`` and NumPy with ``base_seed + i``, so workers
      differ from each other and from epoch to epoch, and a seeded generator repeats
      the whole run.
    - ``pin_memory``: each batch's tensors are copied to page-locked host memory
      (``Tensor.pin_memory()``, through mappings, namedtuples, sequences and objects
      with a ``pin_memory()`` method), so ``.to("cuda", non_blocking=True)`` is an
      asynchronous copy. Without a CUDA device the loader warns once and yields
      batches unpinned. ``pin_memory_device`` is accepted for PyTorch compatibility.
    - ``in_order`` (default True): batches in sampler order; False yields them as they
      arrive.

    An IterableDataset is iterated in full by every worker: shard it with
    ``get_worker_info()`` or :func:`ember.data.shard_for_worker` (the loader warns
    when all workers' first batches are identical). Under fork, the loader calls
    ``gc.freeze()`` while starting workers; keep big read-only Python data in a
    :class:`ember.data.SharedList` so that workers don't copy it (see the README).
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if not isinstance(num_workers, numbers.Integral) or isinstance(num_workers, bool) \
                or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be a non-negative "
                             f"integer, got {num_workers!r}; use num_workers=0 to disable "
                             f"multiprocessing")
        if not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got "
                             f"{timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                             "multiprocessing; let num_workers > 0 to enable "
                             "multiprocessing, otherwise set prefetch_factor to None")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, numbers.Integral)
                                            or prefetch_factor < 0):
            raise ValueError(f"DataLoader: prefetch_factor option should be a non-negative "
                             f"integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn should be callable, got "
                            f"{worker_init_fn!r}")

        self.dataset = dataset
        self.num_workers = int(num_workers)
        self.prefetch_factor = prefetch_factor
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = bool(persistent_workers)
        self.in_order = bool(in_order)
        self.generator = generator
        self.multiprocessing_context = multiprocessing_context
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("DataLoader: batch_size=None option disables auto-batching "
                                 "and is mutually exclusive with drop_last")
        elif not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) \
                or batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size should be a positive integer or None, "
                             f"got {batch_size!r}")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler(None)
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, int(batch_size), bool(drop_last))

        self.batch_size = None if batch_size is None else int(batch_size)
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._warned_duplicates = False
        self._initialized = True

    # torch forbids changing these once built: the samplers were made from them
    def __setattr__(self, name, value):
        if self._initialized and name in ("batch_size", "batch_sampler", "sampler",
                                          "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"DataLoader: {name} attribute should not be set after "
                             f"DataLoader is initialized")
        object.__setattr__(self, name, value)

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None and self.num_workers == 0:
            raise ValueError(f"DataLoader: multiprocessing_context can only be used with "
                             f"multi-process loading (num_workers > 0), but got "
                             f"num_workers={self.num_workers}")
        if ctx is not None:
            _resolve_context(ctx)        # validate now
        object.__setattr__(self, "_multiprocessing_context", ctx)

    @property
    def _auto_collation(self):
        return self.batch_size is not None or self.batch_sampler is not None

    @property
    def _index_sampler(self):
        if self._iterable:
            return _InfiniteConstantSampler(self.batch_size)
        if self._auto_collation:
            return self.batch_sampler
        return self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        _check_worker_count(self.num_workers)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._iterable:
            try:
                n = len(self.dataset)
            except TypeError:
                raise TypeError("DataLoader over an IterableDataset without __len__ has no "
                                "len()") from None
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __del__(self):
        it = self.__dict__.get("_iterator")
        if it is not None:
            try:
                it._shutdown_workers()
            except Exception:
                pass


def _check_worker_count(num_workers):
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    if cpus and num_workers > cpus:
        warnings.warn(f"DataLoader: this process may use {cpus} CPUs, and the DataLoader "
                      f"will start {num_workers} worker processes; too many workers slow "
                      f"loading down (or freeze the machine). Consider num_workers <= {cpus}.",
                      stacklevel=4)


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable_kind = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._in_order = loader.in_order
        self._generator = loader.generator
        self._shutdown = False
        self._base_seed = _draw_seed(loader.generator)
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._pin = loader.pin_memory and _can_pin()

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __iter__(self):
        return self

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return pin_memory(data) if self._pin else data

    def __len__(self):
        return len(self._index_sampler)


def _can_pin():
    if em.cuda.is_available():
        return True
    warnings.warn("DataLoader: pin_memory=True but no CUDA device is available, so the "
                  "batches are not pinned", stacklevel=4)
    return False


def pin_memory(data):
    """data with every tensor copied to pinned host memory (through mappings,
    namedtuples, tuples, lists and objects with their own pin_memory())."""
    if isinstance(data, em.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        out = {k: pin_memory(v) for k, v in data.items()}
        try:
            return out if type(data) is dict else type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(d) for d in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(d) for d in data)
    if isinstance(data, list):
        return [pin_memory(d) for d in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = create_fetcher(self._iterable_kind, self._dataset,
                                       self._auto_collation, self._collate_fn,
                                       self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


# live multi-process iterators, shut down at interpreter exit before multiprocessing's
# own exit handler (atexit runs handlers last-registered first)
_live_iterators = weakref.WeakSet()


def _shutdown_live_iterators():
    for it in list(_live_iterators):
        try:
            it._shutdown_workers()
        except Exception:
            pass


atexit.register(_shutdown_live_iterators)


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _shm_free():
    try:
        st = os.statvfs("/dev/shm")
        return st.f_bavail * st.f_frsize
    except OSError:
        return None


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._workers = []
        self._index_queues = []
        self._workers_status = []
        if getattr(multiprocessing.process.current_process(), "_inheriting", False):
            raise RuntimeError(
                "DataLoader: worker processes can't be started while this process is "
                "still starting up. With the spawn or forkserver start method, each worker "
                "imports your main module again, so code that iterates a DataLoader with "
                "num_workers > 0 must sit under\n\n    if __name__ == '__main__':\n        "
                "main()\n\n(or use num_workers=0, or multiprocessing_context='fork' on "
                "Linux).")
        try:
            import ember.multiprocessing  # noqa: F401  (tensors through shared memory)
            self._shared_memory = True
        except ImportError:
            self._shared_memory = False
        ctx = _resolve_context(loader.multiprocessing_context)
        self._ctx = ctx
        self._start_method = ctx.get_start_method()
        self._worker_init_fn = loader.worker_init_fn
        self._loader_ref = weakref.ref(loader)
        self._data_queue = _worker._ResultQueue(ctx=ctx)
        self._workers_done_event = ctx.Event()
        self._delivered = [False] * self._num_workers
        pdeathsig = threading.current_thread() is threading.main_thread()
        # workers' gc won't write to the parent's objects' pages; left alone when the
        # program froze objects itself (unfreeze would undo its freeze)
        frozen = self._start_method == "fork" and hasattr(gc, "freeze") and \
            gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        try:
            for i in range(self._num_workers):
                iq = ctx.Queue()
                iq.cancel_join_thread()
                w = ctx.Process(
                    target=_worker._worker_loop,
                    args=(self._iterable_kind, self._dataset, iq, self._data_queue,
                          self._workers_done_event, self._auto_collation, self._collate_fn,
                          self._drop_last, self._base_seed, self._worker_init_fn, i,
                          self._num_workers, os.getpid(), pdeathsig),
                    daemon=True)
                try:
                    with warnings.catch_warnings():
                        # Python 3.12+ warns when a process with threads forks (the
                        # index queues' feeder threads of other loaders, for one); a
                        # worker only runs _worker_loop on its own queues
                        warnings.filterwarnings("ignore", category=DeprecationWarning,
                                                message=r".*use of fork\(\) may lead")
                        w.start()
                except Exception as e:
                    if self._start_method != "fork" and isinstance(
                            e, (pickle.PicklingError, AttributeError, TypeError)):
                        raise RuntimeError(
                            f"DataLoader: could not start worker {i} with the "
                            f"{self._start_method!r} start method: {type(e).__name__}: {e}. "
                            f"Under spawn and forkserver the dataset, collate_fn and "
                            f"worker_init_fn are pickled, so they must be defined at module "
                            f"level (not inside a function, not lambdas).") from e
                    raise
                self._index_queues.append(iq)
                self._workers.append(w)
                self._workers_status.append(True)
        except BaseException:
            self._shutdown_workers()
            raise
        finally:
            if frozen:
                gc.unfreeze()
        _live_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0          # next task to send
        self._rcvd_idx = 0          # next task to yield
        self._task_info = {}        # task -> (worker,) while pending, (worker, data) when here
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        self._first_digests = {}
        if not first_iter:
            # a new epoch for persistent workers: new seeds, fresh iterators; drop what the
            # last epoch left in flight
            self._base_seed = _draw_seed(loader.generator)
            for q in self._index_queues:
                q.put(_worker._ResumeIteration(self._base_seed))
            remaining = self._num_workers
            while remaining > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_queue_idx_cycle)
            if self._workers_status[wid]:
                break
        else:
            return          # no active worker left
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _worker_failure(self, wid):
        w = self._workers[wid]
        code = w.exitcode
        if code is not None and code < 0:
            sig = -code
            how = f"killed by signal {sig} ({_signal_name(sig)})"
            if sig == signal.SIGKILL:
                how += (". Something killed it: the kernel's out-of-memory killer does this "
                        "when memory runs out (see dmesg)")
            elif sig == getattr(signal, "SIGBUS", None):
                free = _shm_free()
                how += (". A bus error in a worker usually means shared memory (/dev/shm) "
                        "is full" + (f": {free / 2**20:.0f} MiB free now" if free is not None
                                     else "") + "; make /dev/shm larger (docker --shm-size)")
            elif sig == signal.SIGSEGV:
                how += ". The worker's Python traceback (faulthandler) is on its stderr"
        else:
            how = f"exit code {code}"
            if code == 1 and self._start_method != "fork" and not self._delivered[wid]:
                how += (f". The worker printed its traceback on stderr. Under the "
                        f"{self._start_method!r} start method a worker imports the main "
                        f"module again: if the script iterates the DataLoader at module "
                        f"level, put that code under `if __name__ == '__main__':`")
        return RuntimeError(f"DataLoader worker {wid} (pid {w.pid}) exited unexpectedly: "
                            f"{how}")

    def _dead_worker_error(self):
        for wid, w in enumerate(self._workers):
            if self._workers_status[wid] and not w.is_alive():
                err = self._worker_failure(wid)
                self._shutdown_workers()
                return err
        return None

    def _try_get_data(self, timeout):
        try:
            return True, self._data_queue.get(timeout=timeout)
        except queue.Empty:
            pass
        except Exception as e:
            # The message came but could not be rebuilt: typically a shared-memory handle
            # whose sender died before this process fetched the memory. Name the dead
            # worker (giving the kernel a moment to report it) rather than the symptom.
            deadline = time.monotonic() + 1.0
            while True:
                err = self._dead_worker_error()
                if err is not None:
                    raise err from e
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            raise RuntimeError(f"DataLoader: a batch from a worker could not be received: "
                               f"{type(e).__name__}: {e}") from e
        err = self._dead_worker_error()
        if err is not None:
            raise err
        return False, None

    def _get_data(self):
        if self._timeout > 0:
            deadline = time.monotonic() + self._timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    pending = sorted({info[0] for info in self._task_info.values()
                                      if len(info) == 1})
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds "
                                       f"waiting for a batch (workers with pending batches: "
                                       f"{pending})")
                ok, data = self._try_get_data(min(STATUS_CHECK_INTERVAL, left))
                if ok:
                    return data
        while True:
            ok, data = self._try_get_data(STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _next_data(self):
        while True:
            # skip tasks of workers whose stream ended
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)

            if self._shutdown or self._tasks_outstanding <= 0:
                raise StopIteration
            idx, data = self._get_data()
            if isinstance(idx, _worker._ResumeIteration):
                continue            # a stray acknowledgement
            self._tasks_outstanding -= 1
            info = self._task_info.get(idx)
            if info is None:
                continue            # a task this epoch no longer waits for
            wid = info[0]
            self._delivered[wid] = True
            if self._iterable_kind and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_unavailable(data.worker_id)
                del self._task_info[idx]
                self._try_put_index()
                continue
            if self._iterable_kind and self._num_workers > 1:
                self._check_duplicates(wid, data)
            if idx == self._rcvd_idx or not self._in_order:
                del self._task_info[idx]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data)
            self._task_info[idx] += (data,)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _check_duplicates(self, wid, data):
        """Warn once when every worker's first batch of an IterableDataset is the same:
        the dataset is almost certainly not sharded across workers."""
        if wid in self._first_digests or isinstance(data, _worker.ExceptionWrapper):
            return
        try:
            digest = hashlib.blake2b(pickle.dumps(data, protocol=4), digest_size=16).digest()
        except Exception:
            digest = object()
        self._first_digests[wid] = digest
        if len(self._first_digests) == self._num_workers:
            loader = self._loader_ref()
            if len(set(self._first_digests.values())) == 1 and \
                    loader is not None and not loader._warned_duplicates:
                loader._warned_duplicates = True
                warnings.warn(
                    f"DataLoader: all {self._num_workers} workers yielded the same first "
                    f"batch. Each worker iterates its own copy of an IterableDataset, so an "
                    f"unsharded stream comes out {self._num_workers} times; shard it in "
                    f"__iter__ with ember.data.get_worker_info() or "
                    f"ember.data.shard_for_worker().", stacklevel=4)

    def _mark_worker_unavailable(self, wid, shutdown=False):
        try:
            self._index_queues[wid].put(None)
        except (ValueError, OSError, AssertionError):
            pass                 # the queue is closed already
        self._workers_status[wid] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            done = getattr(self, "_workers_done_event", None)
            if done is not None:
                done.set()
            for wid in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[wid]:
                    self._mark_worker_unavailable(wid, shutdown=True)
            deadline = time.monotonic() + SHUTDOWN_JOIN_TIMEOUT
            for w in self._workers:
                w.join(max(0.0, deadline - time.monotonic()))
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
            for w in self._workers:
                w.join(1.0)
                if w.is_alive():
                    w.kill()
                    w.join()
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            dq = getattr(self, "_data_queue", None)
            if dq is not None:
                dq.cancel_join_thread()
                dq.close()
        finally:
            _live_iterators.discard(self)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
