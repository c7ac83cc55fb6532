"""tests/compat/distributed_torchrun.py, started with torchrun's command line."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py", reason="ember.distributed needs mpi4py")

HERE = os.path.dirname(os.path.abspath(__file__))


def test_torchrun_command_line_runs_a_pytorch_style_script(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
              "MASTER_PORT"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                           "--nnodes", "1", "--nproc_per_node", "2",
                           os.path.join(HERE, "distributed_torchrun.py")],
                          capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the ranks share one stdout, and mpiexec may forward a rank's line and its newline
    # apart: take the reports, not the lines
    report = r"rank \d+/\d+ local \d+ backend \w+ sum \d+ grads-equal (?:True|False)"
    lines = sorted(re.findall(report, proc.stdout))
    assert lines == [f"rank {r}/2 local {r} backend gloo sum 1 grads-equal True"
                     for r in (0, 1)], proc.stdout + proc.stderr
