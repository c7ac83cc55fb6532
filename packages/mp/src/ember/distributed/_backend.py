"""The process groups, the collectives and their work handles, on MPI through mpi4py.

How a collective runs: validate the arguments, stage the tensors that MPI can't read in
place (non-contiguous ones, other devices, float16 under a reduction), exchange a small
description of every rank's call (the metadata check), start the non-blocking MPI call
on the tensors' own memory and poll it against the group's deadline. Polling instead of
blocking is what lets a survivor raise when a peer died or never joins: MPICH's blocking
calls would wait forever, and MPI_Abort would kill the survivors instead of telling them.
"""
import array
import atexit
import datetime
import enum
import json
import os
import math
import sys
import time
import warnings

import ember as em

__all__ = ["ReduceOp", "GroupMember", "ProcessGroup", "Work", "DistError", "DistBackendError",
           "DistTimeoutError", "is_available", "is_mpi_available", "is_initialized",
           "init_process_group", "destroy_process_group", "new_group", "get_rank",
           "get_world_size", "get_backend", "get_process_group_ranks",
           "set_metadata_check", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather",
           "scatter", "barrier", "send", "recv", "isend", "irecv", "all_to_all",
           "all_to_all_single"]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_INSTALL = "pip install 'ember-mp[distributed]' (mpi4py and an MPI such as the mpich wheel)"


class DistError(RuntimeError):
    """Base of ember.distributed's errors."""


class DistBackendError(DistError):
    """MPI reported a failure."""


class DistTimeoutError(DistError):
    """A collective or a point-to-point transfer did not finish within the group's timeout."""


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"ReduceOp.{self.name}"


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD = None                       # the default group, as `group=None`
    NON_GROUP_MEMBER = _NonMember()    # what new_group returns to ranks outside it


# MPI ------------------------------------------------------------------------------------

_MPI = None
_OWN_FINALIZE = False    # whether we (not mpi4py) call MPI_Finalize at exit


def _mpi():
    """mpi4py's MPI module, imported (which initializes MPI) on first use only."""
    global _MPI, _OWN_FINALIZE
    if _MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise ModuleNotFoundError(f"ember.distributed needs mpi4py: {_INSTALL}",
                                      name="mpi4py") from None
        if "mpi4py.MPI" not in sys.modules:
            # Finalize ourselves, and skip it after a failure: MPICH's MPI_Finalize
            # waits for peers that are dead or stuck, so a survivor would hang at exit.
            mpi4py.rc.finalize = False
            _OWN_FINALIZE = True
        try:
            from mpi4py import MPI
        except (ImportError, RuntimeError) as e:
            raise ModuleNotFoundError(f"ember.distributed: mpi4py can't load an MPI library "
                                      f"({e}); {_INSTALL}", name="mpi4py.MPI") from None
        _MPI = MPI
        if _OWN_FINALIZE:
            atexit.register(_finalize)
    return _MPI


def _finalize():
    if _STATE.failure is None and _MPI.Is_initialized() and not _MPI.Is_finalized():
        _free_windows()
        _MPI.Finalize()


def is_available():
    """True when mpi4py can be imported (ember.distributed's only backend is MPI)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


is_mpi_available = is_available


class _State:
    world = None          # the default ProcessGroup
    failure = None        # why the process groups are unusable (a timeout, an MPI error)
    check = True          # the metadata check


_STATE = _State()


def _mpi_types():
    MPI = _mpi()
    return {em.bool: MPI.C_BOOL, em.uint8: MPI.UINT8_T, em.int8: MPI.INT8_T,
            em.int16: MPI.INT16_T, em.int32: MPI.INT32_T, em.int64: MPI.INT64_T,
            # float16 moves as 2-byte words; reductions on it run in float32 (_stage)
            em.float16: MPI.UINT16_T, em.float32: MPI.FLOAT, em.float64: MPI.DOUBLE}


# process groups -------------------------------------------------------------------------

class ProcessGroup:
    """A set of ranks with their own MPI communicators: `comm` for the data and `meta`
    (a duplicate) for the metadata check, so the two message streams never match each
    other's messages."""

    def __init__(self, comm, ranks, timeout):
        self.comm = comm
        self.meta = comm.Dup()
        self.ranks = list(ranks)          # global ranks, in group-rank order
        self.timeout = timeout
        self._types = _mpi_types()
        self._freed = False
        self._node = None     # its communicator on one machine, False when it spans more

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def _free(self):
        if not self._freed and _STATE.failure is None:
            self.meta.Free()
            if self._node:      # shared windows built on it live on until exit
                self._node.Free()
            if self.comm != _MPI.COMM_WORLD:
                self.comm.Free()
        self._freed = True

    def __repr__(self):
        return f"ProcessGroup(backend='mpi', ranks={self.ranks})"


_GROUPS = []     # every live ProcessGroup, freed by destroy_process_group()


def _seconds(timeout, op):
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        s = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        s = float(timeout)
    else:
        raise TypeError(f"{op}: timeout must be a datetime.timedelta or seconds, "
                        f"got {timeout!r}")
    if not s > 0:
        raise ValueError(f"{op}: timeout must be positive, got {timeout!r}")
    return s


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", *, metadata_check=True):
    """Join the job's processes (as started by `mpiexec -n N` or
    `python -m ember.distributed.run`) into the default process group.

    backend: only "mpi" (None means "mpi"). The ranks and world size are MPI's; when
    `world_size`/`rank` are given they must agree with it. `timeout`: how long any
    collective or transfer may wait for its peers before raising DistTimeoutError
    (a timedelta or seconds, default 30 minutes). `metadata_check`: before each
    collective the ranks compare shapes and dtypes and all raise the same ValueError
    on a mismatch (one small extra message; switch off with False or
    set_metadata_check(False))."""
    op = "init_process_group"
    if backend is None:
        backend = "mpi"
    if not isinstance(backend, str) or backend.lower() != "mpi":
        raise ValueError(f"{op}: backend {backend!r} is not available; ember.distributed "
                         f"runs on MPI: backend='mpi'")
    if init_method not in (None, "env://") or store is not None:
        raise ValueError(f"{op}: init_method and store are not used by the MPI backend "
                         f"(mpiexec starts and connects the processes), got "
                         f"init_method={init_method!r}, store={store!r}")
    if _STATE.world is not None:
        raise RuntimeError(f"{op}: trying to initialize the default process group twice")
    seconds = _seconds(timeout, op)
    MPI = _mpi()
    world = MPI.COMM_WORLD
    if world_size not in (-1, None) and world_size != world.Get_size():
        raise ValueError(f"{op}: world_size={world_size} but MPI started "
                         f"{world.Get_size()} processes (mpiexec -n {world.Get_size()})")
    if rank not in (-1, None) and rank != world.Get_rank():
        raise ValueError(f"{op}: rank={rank} but MPI gave this process rank "
                         f"{world.Get_rank()}")
    # errors come back as exceptions instead of aborting the whole job
    world.Set_errhandler(MPI.ERRORS_RETURN)
    _STATE.failure = None
    _STATE.check = bool(metadata_check)
    _STATE.world = ProcessGroup(world, range(world.Get_size()), seconds)
    _GROUPS.append(_STATE.world)


def is_initialized():
    return _STATE.world is not None


def destroy_process_group(group=None):
    """Free `group`'s communicators, or every group's when None (then
    init_process_group may be called again; MPI itself stays up until exit)."""
    if group is None:
        for g in _GROUPS:
            g._free()
        _GROUPS.clear()
        _STATE.world = None
    elif isinstance(group, ProcessGroup):
        group._free()
        if group in _GROUPS:
            _GROUPS.remove(group)


def set_metadata_check(enabled):
    """Switch the cross-rank shape/dtype check of every collective on or off (it costs
    one small allgather per collective)."""
    _STATE.check = bool(enabled)


def _world(op, communicates=True):
    if _STATE.world is None:
        raise RuntimeError(f"{op}: the default process group is not initialized; call "
                           f"ember.distributed.init_process_group() first")
    if communicates and _STATE.failure is not None:
        raise DistError(f"{op}: the process groups are unusable after an earlier failure "
                        f"({_STATE.failure}); restart the job")
    return _STATE.world


def _group(group, op, communicates=True):
    world = _world(op, communicates)
    if group is None:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup from new_group() or None, "
                        f"got {type(group).__name__}")
    if group._freed:
        raise RuntimeError(f"{op}: the group {group} was destroyed")
    return group


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, *,
              use_local_synchronization=False):
    """A process group of the given global ranks (all ranks when None). Every rank of
    the default group must call it, members or not (like PyTorch); ranks outside get
    GroupMember.NON_GROUP_MEMBER, and collectives on it do nothing there."""
    op = "new_group"
    world = _world(op)
    n = world.size()
    if ranks is None:
        ranks = list(range(n))
    ranks = sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < n for r in ranks):
        raise ValueError(f"{op}: ranks {ranks} must be distinct and in [0, {n - 1}]")
    if backend not in (None, "mpi"):
        raise ValueError(f"{op}: backend {backend!r} is not available; use 'mpi'")
    seconds = world.timeout if timeout is None else _seconds(timeout, op)
    comm = world.comm.Create(world.comm.Get_group().Incl(ranks))
    if comm == _MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_MPI.ERRORS_RETURN)
    g = ProcessGroup(comm, ranks, seconds)
    _GROUPS.append(g)
    return g


def get_rank(group=None):
    """This process's rank in `group` (-1 when it is not a member)."""
    g = _group(group, "get_rank", False)
    return -1 if g is None else g.rank()


def get_world_size(group=None):
    g = _group(group, "get_world_size", False)
    return -1 if g is None else g.size()


def get_backend(group=None):
    _group(group, "get_backend", False)
    return "mpi"


def get_process_group_ranks(group):
    g = _group(group, "get_process_group_ranks", False)
    return [] if g is None else list(g.ranks)


# waiting --------------------------------------------------------------------------------

def _fail(reason):
    _STATE.failure = reason


_SPIN = 5e-3        # waiting longer than this, yield the core between polls
_DOZE = 1.0         # waiting longer than this, sleep between polls
_BUSY_CALL = 10e-6  # a test that takes longer than this moved data: progress
_MAX_PAUSE = 1e-3


def _poll(requests, deadline, what, group, block, statuses=None):
    """Test `requests` until all are done (or once when not `block`); True when done.
    MPICH moves data only inside MPI calls, so the loop polls without pause, as MPI's
    own blocking calls do: sleeping between polls would stall a transfer in progress
    (each poll moves a little). After 5 ms without a slow (data-moving) test it yields
    the core between polls, so that a late peer on the same machine gets to run; after
    1 s (a peer busy evaluating or checkpointing) it sleeps, 20 us doubling to 1 ms."""
    MPI = _MPI
    clock = time.perf_counter
    pause = 0.0
    active = clock()
    until = active + (deadline - time.monotonic())     # the deadline on this clock
    try:
        while True:
            t0 = clock()
            if MPI.Request.Testall(requests, statuses):
                return True
            if not block:
                return False
            t1 = clock()
            if t1 > until:
                break
            if t1 - t0 > _BUSY_CALL:
                active, pause = t1, 0.0
            elif t1 - active > _DOZE:
                pause = min(max(2 * pause, 20e-6), _MAX_PAUSE)
                time.sleep(pause)
            elif t1 - active > _SPIN:
                os.sched_yield()
    except MPI.Exception as e:
        _fail(f"{what}: MPI error: {e.Get_error_string()}")
        raise DistBackendError(f"{what} failed in MPI: {e.Get_error_string()} "
                               f"(group ranks {group.ranks})") from None
    _fail(f"{what} timed out")
    raise DistTimeoutError(
        f"{what}: timed out after {group.timeout:g} s waiting for the other ranks of the "
        f"group {group.ranks} (one may have died, hung, or not called {what.split()[0]}); "
        f"the process groups are now unusable")


class Work:
    """The handle of an operation started with async_op=True (and of isend/irecv).
    wait() blocks until it is done (raising DistTimeoutError past the group's timeout)
    and returns True; is_completed() asks without blocking."""

    def __init__(self, what, group, requests, finish=None, outputs=()):
        self._what = what
        self._group = group
        self._requests = requests
        self._finish = finish       # copies staged results back, divides for AVG, ...
        self._outputs = outputs
        self._deadline = time.monotonic() + group.timeout
        self._done = False
        self._value = None
        self._statuses = None

    def _complete(self):
        self._done = True
        self._requests = None
        if self._finish is not None:
            self._value = self._finish()
            self._finish = None

    def is_completed(self):
        while not self._done and _poll(self._requests, self._deadline, self._what,
                                       self._group, False, self._statuses):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        deadline = self._deadline
        if timeout is not None:
            deadline = min(deadline, time.monotonic() + _seconds(timeout, "Work.wait"))
        while not self._done:     # _complete may start a next step (irecv)
            _poll(self._requests, deadline, self._what, self._group, True, self._statuses)
            self._complete()
        return True

    def is_success(self):
        return self._done

    def result(self):
        """The output tensors."""
        self.wait()
        return list(self._outputs)

    def _source(self):
        return self._value

    def __repr__(self):
        return f"Work({self._what}, completed={self._done})"


class _Done(Work):
    """A finished no-op (a rank outside the group, an empty transfer)."""

    def __init__(self):
        self._done, self._outputs, self._value = True, (), None


def _run(what, group, requests, finish, async_op, outputs=()):
    w = Work(what, group, requests, finish, outputs)
    if async_op:
        return w
    w.wait()
    return None


# staging --------------------------------------------------------------------------------

def _tensor(t, name, op):
    if not isinstance(t, em.Tensor):
        raise TypeError(f"{op}: {name} must be an ember Tensor, got {type(t).__name__}")
    return t


def _desc(t):
    return f"{tuple(t.shape)} {t.dtype.name}"


class _Staged:
    """A contiguous CPU tensor MPI reads or writes for `t`: `t` itself when possible
    (zero copy), else a copy that `back()` writes into `t` afterwards."""
    __slots__ = ("t", "buf", "copied")

    def __init__(self, t, reduce=False, fill=True):
        self.t = t
        dt = em.float32 if reduce and t.dtype == em.float16 else t.dtype
        if t.device.type == "cpu" and t.is_contiguous() and dt == t.dtype:
            self.buf, self.copied = t.detach(), False
            return
        with em.no_grad():
            if fill:
                self.buf = t.detach().to(device="cpu", dtype=dt).contiguous()
                if self.buf.data_ptr() == t.data_ptr():
                    self.buf = self.buf.clone()
            else:
                self.buf = em.empty(tuple(t.shape), dtype=dt)
        self.copied = True

    def back(self):
        if self.copied:
            with em.no_grad():
                self.t.detach().copy_(self.buf.to(device=self.t.device))


def _spec(buf, group):
    """mpi4py's [buffer, datatype] for a contiguous CPU tensor (zero copy)."""
    return [buf, group._types[buf.dtype]]


class _Invalid(ValueError):
    """A bad argument found on one rank; the metadata check reports it on all ranks."""


def _mpi_op(op, dtype, what):
    MPI = _MPI
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be an ember.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        raise _Invalid(f"ReduceOp.AVG needs a floating-point tensor, got {dtype.name}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise _Invalid(f"ReduceOp.{op.name} needs an integer or bool tensor, got "
                       f"{dtype.name}")
    if dtype == em.bool:
        return {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _root(rank, group, name):
    """A global rank -> its rank in `group`."""
    try:
        return group.ranks.index(int(rank))
    except ValueError:
        raise _Invalid(f"{name}={rank} is not a rank of the group {group.ranks}") from None


def _chain(*fns):
    def run():
        for f in fns:
            f()
    return run


# the metadata check ---------------------------------------------------------------------

def _exchange(group, mine, what):
    """Every rank's JSON-able `mine`, in group-rank order (two small allgathers on the
    group's metadata communicator, polled against the deadline like the data)."""
    MPI = _MPI
    data = json.dumps(mine).encode()
    n = group.size()
    deadline = time.monotonic() + group.timeout
    lengths = array.array("q", [0] * n)
    _poll([group.meta.Iallgather([array.array("q", [len(data)]), MPI.INT64_T],
                                 [lengths, MPI.INT64_T])], deadline, what, group, True)
    displs = _displs(lengths)
    out = bytearray(sum(lengths))
    _poll([group.meta.Iallgatherv([data, MPI.BYTE], [out, (list(lengths), displs), MPI.BYTE])],
          deadline, what, group, True)
    return [json.loads(bytes(out[d:d + k])) for d, k in zip(displs, lengths)]


def _check(group, what, local_error, key, check, extra=None):
    """Raise the same ValueError on every rank when any rank's call is bad (its own
    `local_error`) or its `key` (op name, shapes, dtypes, roots...) differs. `extra`
    (per-rank data) is returned for op-specific checks such as all_to_all's sizes."""
    if not check:
        if local_error:
            raise ValueError(f"{what}: {local_error}")
        return None
    everyone = _exchange(group, [local_error, key, extra], what)
    errors = [(r, e) for r, (e, _, _) in enumerate(everyone) if e]
    if errors:
        raise ValueError(f"{what}: " + "; ".join(f"rank {group.ranks[r]}: {e}"
                                                  for r, e in errors))
    keys = [k for _, k, _ in everyone]
    if any(k != keys[0] for k in keys):
        lines = ", ".join(f"rank {group.ranks[r]} called {_fmt(k)}" for r, k in enumerate(keys))
        raise ValueError(f"{what}: the ranks' calls do not match: {lines}")
    return [x for _, _, x in everyone]


def _fmt(key):
    name, *args = key
    return f"{name}({', '.join(str(a) for a in args)})"


def _key(t):
    return f"{list(t.shape)} {t.dtype.name}"


# collectives ----------------------------------------------------------------------------

def _same_tensors(ts, like, name, op):
    """None when every tensor of the list `ts` has `like`'s shape and dtype, else why not."""
    for i, t in enumerate(ts):
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            return f"{name}[{i}] is {_desc(t)} but the tensor is {_desc(like)}"
    return None


def _list(ts, name, op):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(ts).__name__}")
    return [_tensor(t, f"{name}[{i}]", op) for i, t in enumerate(ts)]


def _mixed_devices(tensors):
    """Why the tensors can't go together (None when they can), reported to every rank."""
    devs = {str(t.device) for t in tensors}
    return f"the tensors are on different devices: {sorted(devs)}" if len(devs) > 1 else None


def _divide(staged, n):
    def run():
        with em.no_grad():
            staged.buf.div_(n)
    return run


def _reduce_call(tensor, op, group, async_op, check, dst=None, what="all_reduce"):
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        mop = _mpi_op(op, tensor.dtype, what)
        root = None if dst is None else _root(dst, g, "dst")
    except _Invalid as e:
        err = str(e)
    key = [what, _key(tensor), op.name] + ([] if dst is None else [f"dst={dst}"])
    _check(g, what, err, key, check)
    s = _Staged(tensor, reduce=True)
    MPI = _MPI
    if root is None:
        req = g.comm.Iallreduce(MPI.IN_PLACE, _spec(s.buf, g), mop)
    elif g.rank() == root:
        req = g.comm.Ireduce(MPI.IN_PLACE, _spec(s.buf, g), mop, root)
    else:
        # MPI writes nothing on non-roots; PyTorch leaves their tensor as it was
        req = g.comm.Ireduce(_spec(s.buf, g), None, mop, root)
        return _run(what, g, [req], None, async_op, (tensor,))
    steps = [s.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(s, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (tensor,))


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group, in place on every rank."""
    return _reduce_call(tensor, op, group, async_op, _STATE.check)


def _all_reduce_unchecked(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce without the metadata check, for callers that verified the layout
    once (DistributedDataParallel's buckets)."""
    return _reduce_call(tensor, op, group, async_op, False)


# buckets in shared memory, for DistributedDataParallel on one machine ------------------

_WINDOWS = []    # every shared window, freed at exit (tensors may view them until then)


class _SharedBuckets:
    """A bucket of `numel` elements on every rank of a group whose ranks all run on this
    machine, in one MPI shared-memory window (MPI_Win_allocate_shared): every rank maps
    every rank's bucket, so an all-reduce is a barrier (every bucket is written), one
    pass over memory (rank i sums chunk i of all the buckets and writes the sum into
    all of them) and a barrier (every chunk is written), where MPI's message protocol
    copies through its own segments in many handshakes: DDP's 1 MB of MLP gradients
    took 0.3 ms this way against 1.3-1.6 ms with MPI_Iallreduce inside a training step
    on this machine (benchmarks/bench_distributed.py measures the whole step). The
    barriers are polled MPI_Ibarriers on a communicator of the bucket's own (buckets
    in flight at once never match each other's), so a dead or stuck peer raises
    DistTimeoutError like any collective."""

    def __init__(self, group, numel, dtype):
        MPI = _MPI
        self.group = group
        self.comm = group._node.Dup()
        self.win = MPI.Win.Allocate_shared(numel * dtype.itemsize, dtype.itemsize,
                                           comm=self.comm)
        # a passive epoch for the whole life of the window: Sync() then orders this
        # rank's loads and stores against the barriers (MPI's unified memory model)
        self.win.Lock_all(MPI.MODE_NOCHECK)
        _WINDOWS.append(self)
        self.buffers = [self._view(r, numel, dtype) for r in range(self.comm.Get_size())]
        n, me = len(self.buffers), self.comm.Get_rank()
        # chunk bounds on 64-byte lines: ranks never write the same cache line
        line = max(1, 64 // dtype.itemsize)
        bounds = [min(numel, -(-(i * numel // n) // line) * line) for i in range(n)]
        self.chunk = slice(bounds[me], bounds[me + 1] if me + 1 < n else numel)
        self.tensor = self.buffers[me]
        # float16 sums in float32, as the MPI path does (_Staged)
        self.acc_dtype = em.float32 if dtype == em.float16 else dtype

    def _view(self, rank, numel, dtype):
        from ember._C import core
        mem, _ = self.win.Shared_query(rank)
        storage = core.storage_from_pointer(mem.address, numel * dtype.itemsize, self)
        return core.as_strided_from(storage, dtype, (numel,), (1,), 0)

    def all_reduce(self, average=False):
        """Start summing (averaging) the buckets of all ranks into every rank's bucket
        (a Work handle)."""
        return _SharedAllReduce(self, average)

    def reduce_my_chunk(self, average):
        c = self.chunk
        if c.start == c.stop:
            return
        mine = self.tensor[c]
        others = [b[c] for b in self.buffers if b is not self.tensor]
        with em.no_grad():
            acc = mine if self.acc_dtype == mine.dtype else mine.to(self.acc_dtype)
            for part in others:
                acc.add_(part)
            if average:
                acc.div_(len(self.buffers))
            if acc is not mine:
                mine.copy_(acc)
            for part in others:
                part.copy_(mine)

    def _free(self):
        self.win.Unlock_all()
        self.win.Free()
        self.comm.Free()


class _SharedAllReduce(Work):
    def __init__(self, buckets, average):
        self._b, self._average, self._summed = buckets, average, False
        buckets.win.Sync()
        super().__init__("all_reduce (DistributedDataParallel bucket)", buckets.group,
                         [buckets.comm.Ibarrier()])

    def _complete(self):
        b = self._b
        b.win.Sync()
        if self._summed:
            self._done, self._requests = True, None
            return
        b.reduce_my_chunk(self._average)
        self._summed = True
        b.win.Sync()
        self._requests = [b.comm.Ibarrier()]


def _shared_buckets(specs, group=None):
    """A _SharedBuckets for each (numel, dtype) in `specs` when every rank of `group` runs
    on this machine and /dev/shm has room for all of them, else None (then DDP averages
    through MPI messages). Collective over the group."""
    g = _group(group, "DistributedDataParallel")
    if g is None or g.size() == 1 or not specs:
        return None
    if g._node is None:
        node = g.comm.Split_type(_MPI.COMM_TYPE_SHARED)
        # the same answer on every rank: either all share one machine or none sees all
        g._node = node if node.Get_size() == g.size() else False
        if g._node is False:
            node.Free()
    if g._node is False:
        return None
    # MPI maps the windows sparsely: a full /dev/shm would show up as SIGBUS on first
    # touch, not as an error, so check first (every rank zeroes its bucket right away,
    # which makes the next check see this one)
    need = sum(n * dtype.itemsize for n, dtype in specs) * g.size()
    free = _shm_free()
    free = g.comm.allreduce(1 << 62 if free is None else free, op=_MPI.MIN)
    if need > free:
        warnings.warn(f"DistributedDataParallel: its buckets need {need:,} bytes of shared "
                      f"memory and /dev/shm has {free:,} free: averaging "
                      f"through MPI messages instead, which is slower (give /dev/shm "
                      f"more room, e.g. docker run --shm-size)", RuntimeWarning,
                      stacklevel=4)
        return None
    buckets = [_SharedBuckets(g, n, dtype) for n, dtype in specs]
    for b in buckets:
        b.tensor.zero_()
    return buckets


def _shm_free():
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _free_windows():
    if _STATE.failure is None:
        for w in _WINDOWS:
            w._free()
    _WINDOWS.clear()


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group into rank `dst`'s tensor (the others keep theirs)."""
    return _reduce_call(tensor, op, group, async_op, _STATE.check, dst=dst, what="reduce")


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s tensor into every rank's `tensor`."""
    what = "broadcast"
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        root = _root(src, g, "src")
    except _Invalid as e:
        err = str(e)
    _check(g, what, err, [what, _key(tensor), f"src={src}"], _STATE.check)
    s = _Staged(tensor, fill=(g.rank() == root))
    req = g.comm.Ibcast(_spec(s.buf, g), root)
    return _run(what, g, [req], s.back, async_op, (tensor,))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's `input_tensor` along dim 0 into `output_tensor` (shape
    (world * n, ...) or (world, n...) with input's numel per rank)."""
    what = "all_gather_into_tensor"
    out, inp = _tensor(output_tensor, "output_tensor", what), _tensor(input_tensor,
                                                                         "input_tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = _mixed_devices([out, inp])
    if err is None and (out.dtype != inp.dtype or out.numel() != inp.numel() * g.size()):
        err = (f"output_tensor {_desc(out)} must hold {g.size()} (the group's size) times "
               f"the input {_desc(inp)}")
    _check(g, what, err, [what, _key(inp)], _STATE.check)
    si, so = _Staged(inp), _Staged(out, fill=False)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(so.buf, g))
    return _run(what, g, [req], so.back, async_op, (out,))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's `tensor`, on every rank."""
    what = "all_gather"
    _tensor(tensor, "tensor", what)
    ts = _list(tensor_list, "tensor_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    if len(ts) != g.size():
        err = f"tensor_list has {len(ts)} tensors, expected {g.size()} (the group's size)"
    else:
        err = _same_tensors(ts, tensor, "tensor_list", what)
    _check(g, what, err, [what, _key(tensor)], _STATE.check)
    si = _Staged(tensor)
    # one contiguous receive buffer; scattered into the list afterwards
    buf = em.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(buf, g))
    return _run(what, g, [req], _unstack(buf, ts), async_op, tuple(ts))


def _unstack(buf, ts):
    def run():
        with em.no_grad():
            for i, t in enumerate(ts):
                t.detach().copy_(buf[i].to(device=t.device))
    return run


def _stack(ts, dtype):
    """The tensors of `ts` (same shape) in one contiguous CPU buffer."""
    with em.no_grad():
        return em.stack([t.detach().to(device="cpu", dtype=dtype) for t in ts])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (world * n elements) across ranks; rank i gets the i-th block of n
    in `output`."""
    what = "reduce_scatter_tensor"
    _tensor(output, "output", what), _tensor(input, "input", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = _mixed_devices([output, input])
    try:
        mop = _mpi_op(op, output.dtype, what)
    except _Invalid as e:
        err = str(e)
    if err is None and (output.dtype != input.dtype or
                        input.numel() != output.numel() * g.size()):
        err = (f"input {_desc(input)} must hold {g.size()} (the group's size) times the "
               f"output {_desc(output)}")
    _check(g, what, err, [what, _key(output), op.name], _STATE.check)
    si, so = _Staged(input, reduce=True), _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(si.buf, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce input_list[i] across ranks into rank i's `output`."""
    what = "reduce_scatter"
    _tensor(output, "output", what)
    ts = _list(input_list, "input_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        mop = _mpi_op(op, output.dtype, what)
    except _Invalid as e:
        err = str(e)
    if err is not None:
        pass
    elif len(ts) != g.size():
        err = f"input_list has {len(ts)} tensors, expected {g.size()} (the group's size)"
    else:
        err = _same_tensors(ts, output, "input_list", what)
    _check(g, what, err, [what, _key(output), op.name], _STATE.check)
    work_dtype = em.float32 if output.dtype == em.float16 else output.dtype
    send = _stack(ts, work_dtype)
    so = _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(send, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def _rooted(tensor, tensors, root_rank, root_name, group, list_name, what):
    """The start of gather and scatter: (group, root, tensors) after the metadata
    check, or None on a rank outside the group. The root passes one tensor like
    `tensor` per rank of the group, the other ranks pass None."""
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return None
    err, root, ts = _rooted_list(tensor, tensors, root_rank, root_name, g, list_name, what)
    _check(g, what, err, [what, _key(tensor), f"{root_name}={root_rank}"], _STATE.check)
    return g, root, ts


def _rooted_list(tensor, tensors, root_rank, root_name, g, list_name, what):
    """(error or None, root, tensors) of gather's and scatter's arguments."""
    try:
        root = _root(root_rank, g, root_name)
    except _Invalid as e:
        return str(e), -1, []
    if g.rank() != root:
        return ((f"{list_name} must be None or empty on ranks other than "
                 f"{root_name}={root_rank}") if tensors else None), root, []
    if tensors is None:
        side = "destination" if root_name == "dst" else "source"
        return f"{list_name} is required on the {side} rank {root_rank}", root, []
    ts = _list(tensors, list_name, what)
    if len(ts) != g.size():
        return (f"{list_name} has {len(ts)} tensors, expected {g.size()} (the group's size)",
                root, ts)
    return _same_tensors(ts, tensor, list_name, what), root, ts


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """gather_list[i] = rank i's `tensor`, on rank `dst` only (the others pass None)."""
    what = "gather"
    start = _rooted(tensor, gather_list, dst, "dst", group, "gather_list", what)
    if start is None:
        return _Done() if async_op else None
    g, root, ts = start
    si = _Staged(tensor)
    if g.rank() == root:
        buf = em.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
        req = g.comm.Igather(_spec(si.buf, g), _spec(buf, g), root)
        return _run(what, g, [req], _unstack(buf, ts), async_op, tuple(ts))
    req = g.comm.Igather(_spec(si.buf, g), None, root)
    return _run(what, g, [req], None, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank i's `tensor` = scatter_list[i] of rank `src` (the others pass None)."""
    what = "scatter"
    start = _rooted(tensor, scatter_list, src, "src", group, "scatter_list", what)
    if start is None:
        return _Done() if async_op else None
    g, root, ts = start
    so = _Staged(tensor, fill=False)
    send = _spec(_stack(ts, tensor.dtype), g) if g.rank() == root else None
    req = g.comm.Iscatter(send, _spec(so.buf, g), root)
    return _run(what, g, [req], so.back, async_op, (tensor,))


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    what = "barrier"
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    # the check's exchange also catches a rank that called another collective here
    _check(g, what, None, [what], _STATE.check)
    return _run(what, g, [g.comm.Ibarrier()], None, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank j's output_tensor_list[i] = rank i's input_tensor_list[j]; the tensors may
    have different sizes per pair (all of one dtype)."""
    what = "all_to_all"
    outs = _list(output_tensor_list, "output_tensor_list", what)
    ins = _list(input_tensor_list, "input_tensor_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    n = g.size()
    err = None
    if len(outs) != n or len(ins) != n:
        err = (f"output_tensor_list and input_tensor_list need {n} tensors each (the "
               f"group's size), got {len(outs)} and {len(ins)}")
    elif len({t.dtype for t in outs + ins}) > 1:
        err = f"the tensors must have one dtype, got {sorted({t.dtype.name for t in outs + ins})}"
    dtype = (outs + ins)[0].dtype if outs + ins else em.float32
    sizes = [[list(t.shape) for t in ins], [list(t.shape) for t in outs]] \
        if err is None else None
    extra = _check(g, what, err, [what, dtype.name], _STATE.check, sizes)
    if extra is not None:
        _pairs(g, extra, what, lambda i, j, sent, want: (
            f"rank {g.ranks[i]} sends {sent} to rank {g.ranks[j]}, whose "
            f"output_tensor_list[{i}] is {want}"))
    scount = [t.numel() for t in ins]
    rcount = [t.numel() for t in outs]
    with em.no_grad():
        send = em.cat([t.detach().reshape(-1).to(device="cpu") for t in ins]) \
            if sum(scount) else em.empty((0,), dtype=dtype)
    recv = em.empty((sum(rcount),), dtype=dtype)
    req = g.comm.Ialltoallv([send, (scount, _displs(scount)), g._types[dtype]],
                            [recv, (rcount, _displs(rcount)), g._types[dtype]])

    def finish():
        with em.no_grad():
            off = 0
            for t, c in zip(outs, rcount):
                t.detach().copy_(recv[off:off + c].reshape(tuple(t.shape)).to(device=t.device))
                off += c
    return _run(what, g, [req], finish, async_op, tuple(outs))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """all_to_all on dim-0 blocks of one tensor each: `input` is cut into
    input_split_sizes rows (equal blocks when None) sent to ranks 0..n-1; `output`
    receives the blocks of every rank in rank order. Zero copy for contiguous CPU tensors."""
    what = "all_to_all_single"
    _tensor(output, "output", what), _tensor(input, "input", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    n = g.size()

    def splits(t, given, name):
        rows = t.shape[0] if t.ndim else 1
        if given is None:
            if rows % n:
                return None, f"{name}'s {rows} rows don't split into {n} equal blocks"
            return [rows // n] * n, None
        given = [int(x) for x in given]
        if len(given) != n or sum(given) != rows or min(given) < 0:
            return None, (f"{name}_split_sizes {given} must be {n} non-negative sizes "
                          f"adding up to its {rows} rows")
        return given, None
    ins, err = splits(input, input_split_sizes, "input")
    outs, err2 = splits(output, output_split_sizes, "output")
    err = err or err2
    if err is None and (input.dtype != output.dtype or tuple(input.shape[1:]) !=
                        tuple(output.shape[1:])):
        err = f"input {_desc(input)} and output {_desc(output)} differ past dim 0"
    extra = _check(g, what, err, [what, input.dtype.name, str(list(input.shape[1:]))],
                   _STATE.check, [ins, outs])
    if extra is not None:
        _pairs(g, extra, what, lambda i, j, sent, want: (
            f"rank {g.ranks[i]} sends {sent} rows to rank {g.ranks[j]}, which expects {want}"))
    row = math.prod(input.shape[1:]) if input.ndim else 1
    si, so = _Staged(input), _Staged(output, fill=False)
    sc, rc = [k * row for k in ins], [k * row for k in outs]
    t = g._types[input.dtype]
    req = g.comm.Ialltoallv([si.buf, (sc, _displs(sc)), t], [so.buf, (rc, _displs(rc)), t])
    return _run(what, g, [req], so.back, async_op, (output,))


def _pairs(g, extra, what, message):
    """all_to_all's check, run alike on every rank: what rank i sends to rank j
    (extra[i][0][j]) must be what j expects from i (extra[j][1][i])."""
    for i in range(g.size()):
        for j in range(g.size()):
            if extra[i][0][j] != extra[j][1][i]:
                raise ValueError(f"{what}: " + message(i, j, extra[i][0][j], extra[j][1][i]))


def _displs(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


# point to point -------------------------------------------------------------------------
# A header (shape, dtype) travels ahead of the data on the metadata communicator when the
# check is on, so a receive into a tensor of another shape or dtype raises on the receiver
# instead of truncating or misreading the bytes.

def _p2p_peer(peer, g, name, what):
    if peer is None:
        return _MPI.ANY_SOURCE
    try:
        r = _root(peer, g, name)
    except _Invalid as e:
        raise ValueError(f"{what}: {e}") from None
    if r == g.rank():
        raise ValueError(f"{what}: {name}={peer} is this rank itself")
    return r


def isend(tensor, dst, group=None, tag=0):
    """Start sending `tensor` to rank `dst`; returns a Work."""
    what = "isend"
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done()
    peer = _p2p_peer(dst, g, "dst", what)
    reqs = []
    if _STATE.check:
        header = json.dumps([list(tensor.shape), tensor.dtype.name]).encode()
        reqs.append(g.meta.Isend([header, _MPI.BYTE], peer, tag))
    s = _Staged(tensor)
    reqs.append(g.comm.Isend(_spec(s.buf, g), peer, tag))
    return Work(f"{what} to rank {dst}", g, reqs, None, (tensor,))


def send(tensor, dst, group=None, tag=0):
    """Send `tensor` to rank `dst` (returns when the data left this buffer)."""
    isend(tensor, dst, group, tag).wait()


class _RecvWork(Work):
    """irecv's handle: with the check on it first receives the header (and learns the
    sender when src is None), then posts the data receive from that sender."""

    def __init__(self, g, tensor, src, tag, what):
        self._t, self._tag, self._group = tensor, tag, g
        self._s = _Staged(tensor, fill=False)
        self._header = _STATE.check
        if self._header:
            self._hbuf = bytearray(4096)
            req = g.meta.Irecv([self._hbuf, _MPI.BYTE], src, tag)
        else:
            req = self._data_request(src)
        super().__init__(what, g, [req], None, (tensor,))
        self._statuses = [_MPI.Status()]

    def _data_request(self, src):
        return self._group.comm.Irecv(_spec(self._s.buf, self._group), src, self._tag)

    def _complete(self):
        st = self._statuses[0]
        peer = st.Get_source()
        if not self._header:
            self._done, self._requests = True, None
            self._s.back()
            self._value = self._group.ranks[peer]
            return
        self._header = False
        shape, dtype = json.loads(bytes(self._hbuf[:st.Get_count(_MPI.BYTE)]))
        if shape != list(self._t.shape) or dtype != self._t.dtype.name:
            self._done, self._requests = True, None
            # take the data message anyway so that the channel stays in step
            drain = self._group.comm.Irecv([bytearray(math.prod(shape) * _itemsize(dtype)),
                                            _MPI.BYTE], peer, self._tag)
            _poll([drain], self._deadline, self._what, self._group, True)
            raise ValueError(f"recv: rank {self._group.ranks[peer]} sent {tuple(shape)} "
                             f"{dtype} but the receiving tensor is {_desc(self._t)}")
        self._requests = [self._data_request(peer)]


def _itemsize(name):
    return getattr(em, name).itemsize


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns a
    Work (its wait() then tells nothing; recv() returns the sender)."""
    what = "irecv"
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done()
    peer = _p2p_peer(src, g, "src", what)
    return _RecvWork(g, tensor, peer, tag, f"{what} from rank {'any' if src is None else src}")


def recv(tensor, src=None, group=None, tag=0):
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's
    rank."""
    w = irecv(tensor, src, group, tag)
    if isinstance(w, _Done):
        return -1
    w.wait()
    return w._source()
