"""tests/compat/vision_resampling.py: interpolate/Upsample, grid_sample/affine_grid and the
3-d layers as vision code uses them, run as written for PyTorch."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_vision_resampling_program_runs_as_written_for_pytorch(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "vision_resampling.py")],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    m = re.fullmatch(r"stn out \(4, 1, 12, 12\) loss ([\d.]+) -> ([\d.]+)", lines[0])
    assert m and float(m.group(2)) < float(m.group(1)), proc.stdout
    m = re.fullmatch(r"volume recon \(2, 1, 8, 8, 8\) logits \(2, 3\) loss ([\d.]+) -> "
                     r"([\d.]+)", lines[1])
    assert m and float(m.group(2)) < float(m.group(1)), proc.stdout
