"""torchrun's environment variables from the MPI launcher's: every rank of a job started by
`python -m ember.distributed.run` or plain `mpiexec` sees RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, as PyTorch programs expect.

MPI launchers tell each process its place in their own variables (MPICH/Hydra: PMI_RANK,
PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS; Open MPI: OMPI_COMM_WORLD_*; PMIx:
PMIX_RANK), readable without initializing MPI. `set_rank_env()` copies them into
torchrun's names (the launcher's word wins over RANK, WORLD_SIZE, ... inherited from a
parent process; MASTER_ADDR/MASTER_PORT already set are kept); it runs when
ember.distributed is imported, and the launcher runs every rank's script through
ember.distributed._rank_main, which calls it before the first line of the script.
`init_process_group` later checks them against MPI's own ranks and fills in what is missing.
"""
import os

DEFAULT_MASTER_PORT = "29500"     # torchrun's default

# (rank, world size, local rank, local world size) of each launcher, first found wins
_LAUNCHERS = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),           # MPICH Hydra
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),                                           # Open MPI
    ("PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
)
# (not Slurm's SLURM_PROCID/SLURM_NTASKS: a batch script's one process sees the whole
# allocation's task count there, and would get a WORLD_SIZE MPI does not have)


def launcher_ranks(environ=None):
    """(rank, world_size, local_rank, local_world_size) from the MPI launcher's variables,
    None for what it does not say; all None outside a launcher."""
    env = os.environ if environ is None else environ
    for names in _LAUNCHERS:
        if names[0] in env:
            vals = []
            for n in names:
                try:
                    vals.append(int(env[n]))
                except (KeyError, ValueError):
                    vals.append(None)
            return tuple(vals)
    return (None, None, None, None)


def set_rank_env(environ=None):
    """Set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from the launcher's variables
    (over values inherited from a parent process: the launcher knows this process), and
    MASTER_ADDR/MASTER_PORT where not set yet when every rank is on this machine.
    Returns the names it set."""
    env = os.environ if environ is None else environ
    rank, size, local_rank, local_size = launcher_ranks(env)
    if rank is None:
        return []
    if size is not None and local_size is None and size == 1:
        local_size = 1
    if local_rank is None and local_size == size:
        local_rank = rank
    new = {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": local_rank,
           "LOCAL_WORLD_SIZE": local_size}
    if size is not None and local_size == size:        # one machine: rank 0 is here
        new["MASTER_ADDR"] = "127.0.0.1"
    if "MASTER_ADDR" in env or "MASTER_ADDR" in new:
        new["MASTER_PORT"] = DEFAULT_MASTER_PORT
    done = []
    for k, v in new.items():
        if v is not None and (k not in env or not k.startswith("MASTER_")):
            env[k] = str(v)
            done.append(k)
    return done
