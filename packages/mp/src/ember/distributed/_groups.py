"""Process groups: the default one (init_process_group) and new_group's, their MPI
communicators and timeouts, and the queries on them (get_rank, get_world_size, ...)."""
import datetime

from ember.distributed._mpi import _STATE, DistError, _mpi, _mpi_types

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD = None                       # the default group, as `group=None`
    NON_GROUP_MEMBER = _NonMember()    # what new_group returns to ranks outside it


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
            if self.comm != _mpi().COMM_WORLD:
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
    if comm == _mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_mpi().ERRORS_RETURN)
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
