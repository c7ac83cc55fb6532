"""tests/compat/distributions_policy.py: torch.distributions as RL/VAE code uses it."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_distributions_program_runs_as_written_for_pytorch(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "distributions_policy.py")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("reinforce p(best arm) ") and \
        float(lines[0].split()[-1]) > 0.9, proc.stdout
    assert lines[1].startswith("vae kl ") and lines[1].endswith("z (32, 2) log_prob (32,)")
