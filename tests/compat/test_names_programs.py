"""Run the names_*.py programs of this folder (PyTorch habits of issue 18's "names
PyTorch programs reach for first"), each in its own interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(p.name for p in HERE.glob("names_*.py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_runs(program):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, str(HERE / program)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=HERE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "ok", r.stdout
