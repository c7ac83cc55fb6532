"""The hostile-argument fuzzer (fuzz_api.py) in bounded form: every public function and
Tensor method, called with hostile arguments in a child process, on every device.
Each call must return or raise a clean error (no crash, hang, unexpected exception type
or internal message).

Longer runs: HYPOTHESIS_PROFILE=long (50,000 calls per seed) or EMBER_FUZZ_CALLS=<n>;
or standalone, ``python fuzz_api.py --device cpu --calls 200000 --seed 0``.
"""
from __future__ import annotations

import importlib.util
import io
import os
import pathlib
import signal
import subprocess
import sys

import pytest

_spec = importlib.util.spec_from_file_location(
    "fuzz_api", pathlib.Path(__file__).with_name("fuzz_api.py"))
fuzz_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_api)

# calls per seed: the CPU makes a few thousand a second, PoCL a few hundred
CALLS = {"cpu": 4000, "opencl": 800, "cuda": 2000}


def _calls(device):
    if os.environ.get("EMBER_FUZZ_CALLS"):
        return int(os.environ["EMBER_FUZZ_CALLS"])
    if os.environ.get("HYPOTHESIS_PROFILE") == "long":
        return 50_000
    return CALLS.get(device.type, 1000)


_RUNS = {}


def _fuzz(device, seed):
    """The figures and report of one bounded run (shared by the tests below)."""
    key = (str(device), seed)
    if key not in _RUNS:
        figures, findings = fuzz_api.run(str(device), seed, _calls(device))
        text = io.StringIO()
        fuzz_api.report(figures, findings, out=text, limit=20)
        _RUNS[key] = figures, text.getvalue()
    return _RUNS[key]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fuzz_never_crashes_or_hangs(seed, device):
    figures, text = _fuzz(device, seed)
    assert figures["calls"] > 0, text
    for kind in ("crashes", "hangs", "child errors"):
        assert figures[kind] == 0, f"{kind} on {device}, seed {seed}:\n{text}"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fuzz_raises_only_clean_errors(seed, device):
    figures, text = _fuzz(device, seed)
    assert figures["unexpected"] == 0, f"unexpected exceptions on {device}, seed {seed}:\n{text}"


def test_fuzz_enumerates_the_whole_api():
    """The targets come from dir(), not a list: every public name is there unless the
    deny-list leaves it out on purpose."""
    import ember as em
    import ember.nn.functional as F
    table = fuzz_api.targets(em)
    for name in ("ember.add", "ember.as_strided", "Tensor.add_", "Tensor.T", "F.conv2d",
                 "linalg.vector_norm", "array_api.isdtype", "nn.Conv2d", "optim.Adam",
                 "init.kaiming_uniform_", "lr_scheduler.StepLR"):
        assert name in table, name
    assert all(f"F.{n}" in table for n in dir(F) if not n.startswith("_") and
               callable(getattr(F, n)) and getattr(getattr(F, n), "__module__", "") ==
               "ember.nn.functional")
    assert not set(table) & fuzz_api.DENY
    assert len(table) > 800


@pytest.mark.parametrize("work, wall_factor, died_of", [
    # a spin: past its CPU budget (the wall watchdog far off, for a busy machine)
    ("while True: pass", 60, -signal.SIGXCPU),
    ("threading.Event().wait()", 3, 1),                  # a block: faulthandler exits
])
def test_the_watchdogs_catch_a_spin_and_a_block(work, wall_factor, died_of):
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys, faulthandler, signal, threading; sys.path.insert(0, {here!r})\n"
            "import fuzz_api\n"
            "faulthandler.register(signal.SIGXCPU, chain=True)\n"
            f"fuzz_api.WALL_FACTOR = {wall_factor}\n"
            f"fuzz_api.arm_watchdogs(1)\n{work}\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == died_of, proc.stderr[-500:]
    assert "Current thread" in proc.stderr or "Timeout (" in proc.stderr
