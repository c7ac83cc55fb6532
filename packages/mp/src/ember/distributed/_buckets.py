"""Buckets: flat tensors all-reduced again and again with one layout (DistributedData-
Parallel's gradients). In MPI shared memory when the group's ranks all run on one
machine (an all-reduce in place, without MPI's messages), else through MPI_Iallreduce."""
import os
import sys
import warnings

import ember as em
from ember.distributed._check import _begin, _check
from ember.distributed._collectives import ReduceOp, _reduce_call
from ember.distributed._groups import _group
from ember.distributed._mpi import _WINDOWS, _mpi
from ember.distributed._work import Work


def _user_stacklevel():
    """The stacklevel, for its caller's warnings.warn, of the first frame outside ember
    (the user's DistributedDataParallel(...) line, however deep ember called)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember."):
        frame, level = frame.f_back, level + 1
    return level


def new_buckets(specs, group=None):
    """One bucket per (numel, dtype) of `specs`, zero-filled: `.tensor` (a flat CPU
    tensor) and `.all_reduce(average=False)`, which starts summing (averaging) the
    buckets of all ranks into every rank's bucket and returns a Work. Collective over
    the group, whose ranks must ask for the same buckets: that is checked once here, not
    at each all_reduce. None on a rank outside the group."""
    what = "new_buckets"
    g, _ = _begin(what, group)
    if g is None:
        return None
    specs = [(int(n), dtype) for n, dtype in specs]
    err = next((f"specs[{i}] = ({n}, {dtype!r}) is not (a size >= 0, an ember dtype)"
                for i, (n, dtype) in enumerate(specs)
                if n < 0 or not isinstance(dtype, em.dtype)), None)
    _check(g, what, [what, [f"{n} {dtype}" for n, dtype in specs]], err)
    shared = _shared_buckets(specs, g)
    return shared if shared is not None else [_MessageBucket(g, n, dtype) for n, dtype in specs]


class _MessageBucket:
    """A bucket all-reduced by MPI_Iallreduce (ranks on several machines), without the
    metadata check (new_buckets checked the layout)."""

    def __init__(self, group, numel, dtype):
        self.group = group
        self.tensor = em.zeros(numel, dtype=dtype)

    def all_reduce(self, average=False):
        op = ReduceOp.AVG if average else ReduceOp.SUM
        return _reduce_call(self.tensor, op, self.group, True, check=False)


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
        MPI = _mpi()
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
    on this machine and /dev/shm has room for all of them, else None (then new_buckets
    all-reduces through MPI messages). Collective over the group."""
    g = _group(group, "new_buckets")
    if g is None or g.size() == 1 or not specs:
        return None
    if g._node is None:
        node = g.comm.Split_type(_mpi().COMM_TYPE_SHARED)
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
    free = g.comm.allreduce(1 << 62 if free is None else free, op=_mpi().MIN)
    if need > free:
        warnings.warn(f"new_buckets (DistributedDataParallel's gradients): they need "
                      f"{need:,} bytes of shared memory and /dev/shm has {free:,} free: "
                      f"averaging through MPI messages instead, which is slower (give "
                      f"/dev/shm more room, e.g. docker run --shm-size)", RuntimeWarning,
                      stacklevel=_user_stacklevel())
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
