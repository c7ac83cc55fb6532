"""ember.distributed: data-parallel training across processes and machines on MPI
(mpi4py), the counterpart of torch.distributed (part of the ember-mp package; install
its MPI with `pip install 'ember-mp[distributed]'`).

    import ember.distributed as dist
    dist.init_process_group("mpi", timeout=datetime.timedelta(minutes=5))
    dist.all_reduce(t, op=dist.ReduceOp.SUM)          # t is summed over the ranks in place
    model = ember.nn.parallel.DistributedDataParallel(model)

Start the processes with `mpiexec -n N python train.py` or
`python -m ember.distributed.run --nproc-per-node N train.py` (torchrun's arguments);
across machines, MPI's hostfile places them. Every rank runs the same script and sees
torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
(under plain mpiexec from the moment ember.distributed is imported).

* Backends: "mpi", "gloo" and "nccl" all run on MPI. gloo: the same semantics for CPU
  tensors; nccl: CUDA tensors, staged through host memory (refused without CUDA).
  init_method "env://" (the default), "tcp://..." and "file://..." are accepted: MPI
  has done the rendezvous when mpiexec started the processes.

* Collectives: all_reduce (ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR),
  broadcast, reduce, all_gather, all_gather_into_tensor, reduce_scatter,
  reduce_scatter_tensor, gather, scatter, barrier, all_to_all, all_to_all_single;
  point to point: send, recv, isend, irecv; all_gather_object. `async_op=True` returns
  a Work handle (wait(), is_completed()).
* new_buckets: DistributedDataParallel's gradient buckets (flat tensors all-reduced
  again and again; in MPI shared memory when the group runs on one machine).
* Contiguous CPU tensors go to MPI without a copy (the buffer protocol); others
  (non-contiguous views, other devices) are staged through a contiguous host copy.
* Before each collective the ranks compare their calls (op, shapes, dtypes, roots),
  and a mismatch raises the same ValueError on every rank instead of corrupting data
  or hanging (`set_metadata_check(False)` or `init_process_group(metadata_check=False)`
  saves that one small message per call).
* Nothing waits forever: past the group's timeout a collective raises
  DistTimeoutError on the ranks that are waiting (a peer died, hung or never called
  it), and the process groups are unusable from then on.
"""
# One module per concern (_mpi: MPI itself and the errors; _groups: process groups;
# _work: waiting and Work; _staging, _check: what every collective does first;
# _collectives; _p2p: point to point; _buckets: new_buckets, DDP's gradient buckets).
from ember.distributed._buckets import new_buckets
from ember.distributed._collectives import (
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ember.distributed._groups import (
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    new_group,
    set_metadata_check,
)
from ember.distributed._mpi import (
    DistBackendError,
    DistError,
    DistTimeoutError,
    is_available,
    is_mpi_available,
)
from ember.distributed._p2p import irecv, isend, recv, send
from ember.distributed._rank_env import set_rank_env
from ember.distributed._work import Work
from ember.multiprocessing._version import __version__  # noqa: F401

set_rank_env()     # RANK, LOCAL_RANK, ... from the MPI launcher's variables (no MPI init)

__all__ = ["ReduceOp", "GroupMember", "ProcessGroup", "Work", "DistError", "DistBackendError",
           "DistTimeoutError", "is_available", "is_mpi_available", "is_initialized",
           "init_process_group", "destroy_process_group", "new_group", "get_rank",
           "get_world_size", "get_backend", "get_process_group_ranks",
           "set_metadata_check", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather",
           "scatter", "barrier", "send", "recv", "isend", "irecv", "all_to_all",
           "all_to_all_single", "all_gather_object", "new_buckets",
           "get_default_backend_for_device"]


def get_default_backend_for_device(device):
    """The process-group backend for tensors on `device` (a str or ember.device):
    "mpi" for every device ember has (cpu, cuda, opencl). PyTorch answers "gloo" for
    the CPU and "nccl" for CUDA; MPI is ember.distributed's only engine, so
    init_process_group(get_default_backend_for_device(device)) runs on MPI everywhere
    (tensors on a GPU are staged through host memory)."""
    import ember as em
    try:
        em.device(device)
    except (TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"get_default_backend_for_device: {device!r} is not a device "
                         f"({e})") from None
    return "mpi"          # d is a cpu, cuda or opencl device: ember.device checked it
