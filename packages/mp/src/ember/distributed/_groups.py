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

    backend = "mpi"       # the name given to init_process_group/new_group; MPI runs them all

    def __repr__(self):
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


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
                       store=None, group_name="", pg_options=None, device_id=None, *,
                       metadata_check=True):
    """Join the job's processes (as started by `mpiexec -n N` or
    `python -m ember.distributed.run`) into the default process group.

    backend: every name runs on ember's MPI backend. "mpi" (or None); "gloo": MPI, with
    gloo's semantics for CPU tensors (and for others, which are staged through host
    memory); "nccl": MPI with CUDA tensors staged through host memory (no NCCL, no
    CUDA-aware MPI), refused when CUDA is not available, as PyTorch refuses it; the
    device-map form "cpu:gloo,cuda:nccl" too. get_backend() answers the name given.
    init_method: None or "env://" (torchrun's variables; MPI's ranks are authoritative
    and RANK/WORLD_SIZE must agree with them), "tcp://host:port" or "file://path" (MPI
    did the rendezvous already when mpiexec started the job: the address is not
    contacted, and `world_size`/`rank` are only checked). The ranks and world size are
    MPI's; when `world_size`/`rank` are given they must agree with it. After it,
    RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set
    in os.environ where they were missing. `timeout`: how long any collective or
    transfer may wait for its peers before raising DistTimeoutError (a timedelta or
    seconds, default 30 minutes). `metadata_check`: before each collective the ranks
    compare shapes and dtypes and all raise the same ValueError on a mismatch (one small
    extra message; switch off with False or set_metadata_check(False)).
    `device_id` (PyTorch: bind the group to this device and connect eagerly) is checked
    to be a device or an index and otherwise unused: MPI connects at init anyway and
    each tensor's own device decides how it is staged. `pg_options` (NCCL/Gloo tuning)
    must be None: the MPI backend has none."""
    op = "init_process_group"
    name = _backend_name(backend, op)
    if pg_options is not None:
        raise ValueError(f"{op}: pg_options are options of PyTorch's NCCL/Gloo process "
                         f"groups; ember's MPI backend takes none, got {pg_options!r}")
    if device_id is not None:
        import ember as em
        if not isinstance(device_id, (em.device, int)) or isinstance(device_id, bool):
            raise TypeError(f"{op}: device_id must be an ember.device or a device index, "
                            f"got {device_id!r}")
    if init_method is not None and (not isinstance(init_method, str) or not
                                    init_method.startswith(("env://", "tcp://", "file://"))):
        raise ValueError(f"{op}: init_method must be 'env://', 'tcp://HOST:PORT' or "
                         f"'file://PATH' (MPI does the rendezvous: mpiexec starts and "
                         f"connects the processes), got {init_method!r}")
    if store is not None:
        raise ValueError(f"{op}: store is not used by the MPI backend (mpiexec starts and "
                         f"connects the processes), got store={store!r}")
    if _STATE.world is not None:
        raise RuntimeError(f"{op}: trying to initialize the default process group twice")
    seconds = _seconds(timeout, op)
    MPI = _mpi()
    world = MPI.COMM_WORLD
    launch = ("start the job with mpiexec -n N or python -m ember.distributed.run "
              "--nproc-per-node N: MPI does the rendezvous")
    if world_size not in (-1, None) and world_size != world.Get_size():
        raise ValueError(f"{op}: world_size={world_size} but MPI started "
                         f"{world.Get_size()} processes (mpiexec -n {world.Get_size()}); "
                         f"{launch}")
    if rank not in (-1, None) and rank != world.Get_rank():
        raise ValueError(f"{op}: rank={rank} but MPI gave this process rank "
                         f"{world.Get_rank()}")
    _env_from_mpi(world, op)
    # errors come back as exceptions instead of aborting the whole job
    world.Set_errhandler(MPI.ERRORS_RETURN)
    _STATE.failure = None
    _STATE.check = bool(metadata_check)
    _STATE.world = ProcessGroup(world, range(world.Get_size()), seconds)
    _STATE.world.backend = name
    _GROUPS.append(_STATE.world)


_BACKENDS = ("mpi", "gloo", "nccl")


def _backend_name(backend, op):
    """The backend's name, lower case, after checking it is one that ember runs on MPI."""
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise ValueError(f"{op}: backend must be a string, got {backend!r}")
    name = backend.lower()
    parts = [p.partition(":")[2] if ":" in p else p for p in name.split(",")]
    bad = [p for p in parts if p not in _BACKENDS]
    if bad or not parts:
        raise ValueError(f"{op}: backend {backend!r} is not available; ember.distributed "
                         f"runs on MPI: backend='mpi', 'gloo' or 'nccl' (all on MPI)")
    if name == "nccl":         # a device map ("cpu:gloo,cuda:nccl") keeps CPU tensors going
        import ember as em
        if not em.cuda.is_available():
            raise RuntimeError(f"{op}: backend {backend!r}: 'nccl' is for CUDA tensors and "
                               f"CUDA is not available here; use 'gloo' (or 'mpi') for CPU "
                               f"tensors")
    return name


def _env_from_mpi(world, op):
    """torchrun's variables from MPI's ranks: set where missing, checked where set."""
    import os
    import socket
    rank, size = world.Get_rank(), world.Get_size()
    for var, want in (("RANK", rank), ("WORLD_SIZE", size)):
        got = os.environ.get(var)
        if got not in (None, "") and got != str(want):
            raise ValueError(f"{op}: the environment says {var}={got} but MPI gave this "
                             f"process {var.lower()} {want}; MPI's ranks decide (unset "
                             f"{var} or start the job under mpiexec with matching sizes)")
    node = world.Split_type(_mpi().COMM_TYPE_SHARED, key=rank)
    try:
        local_rank, local_size = node.Get_rank(), node.Get_size()
    finally:
        node.Free()
    master = world.bcast(socket.gethostname() if local_size < size else "127.0.0.1", root=0)
    for var, val in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", local_rank),
                     ("LOCAL_WORLD_SIZE", local_size), ("MASTER_ADDR", master),
                     ("MASTER_PORT", "29500")):
        os.environ.setdefault(var, str(val))


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
    name = world.backend if backend is None else _backend_name(backend, op)
    seconds = world.timeout if timeout is None else _seconds(timeout, op)
    comm = world.comm.Create(world.comm.Get_group().Incl(ranks))
    if comm == _mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_mpi().ERRORS_RETURN)
    g = ProcessGroup(comm, ranks, seconds)
    g.backend = name
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
    """The backend name the group was made with ('mpi', 'gloo', 'nccl'): MPI runs them all."""
    g = _group(group, "get_backend", False)
    if g is None:
        raise ValueError("get_backend: this rank is not a member of the group")
    return g.backend


def get_process_group_ranks(group):
    g = _group(group, "get_process_group_ranks", False)
    return [] if g is None else list(g.ranks)
