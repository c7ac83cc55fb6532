"""What every rank of `python -m ember.distributed.run` runs: torchrun's variables (RANK,
LOCAL_RANK, ...) from the MPI launcher's, then the script or module as `python` would.

    python -m ember.distributed._rank_main script.py args...
    python -m ember.distributed._rank_main -m package.module args...
"""
import os
import runpy
import sys

from ember.distributed._rank_env import set_rank_env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        raise SystemExit("usage: python -m ember.distributed._rank_main "
                         "[-m module | script] [args...]")
    set_rank_env()
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit("ember.distributed._rank_main: -m needs a module name")
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))    # as `python script.py`
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
