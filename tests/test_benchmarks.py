"""benchmarks/ runs against the installed packages (issue 17, point 6): every script
imports from a fresh clone without touching sys.path, and the shared harness times,
summarises and writes JSON."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name != "harness.py")

IMPORT_ALL = """
import importlib.util, sys
sys.path.insert(0, sys.argv[1])          # as when a script runs: its folder first
before = list(sys.path)
for path in sys.argv[2:]:
    spec = importlib.util.spec_from_file_location("bench_" + path.rsplit("/", 1)[-1][:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert callable(mod.main), path
    assert sys.path == before, (path, "changed sys.path")
import ember
assert "site-packages" in ember.__file__, ember.__file__
"""


def test_issue17_point6_every_benchmark_imports_from_the_installed_packages():
    assert {p.name for p in SCRIPTS} >= {"run.py", "bench_matmul.py", "bench_cuda.py"}
    p = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(BENCH), *map(str, SCRIPTS)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.delitem(sys.modules, "harness", raising=False)
    import harness
    return harness


def test_issue17_point6_harness_interleaves_and_summarises(harness):
    calls = []
    samplers = {k: (lambda k=k: calls.append(k) or 1.0) for k in "abc"}
    got = harness.interleave(samplers, 3, warmup=1)
    # every round runs each once, starting with a different one; round 0 is not kept
    assert calls == list("abc" "bca" "cab" "abc")
    assert got == {k: [1.0] * 3 for k in "abc"}
    st = harness.stats([3.0, 1.0, 2.0, 4.0])
    assert (st["median"], st["min"], st["reps"]) == (2.5, 1.0, 4)
    assert st["spread"] == pytest.approx((4.0 - 2.0) / 2.5)
    out = harness.measure({"ember": ("x + 1", {"x": 1}), "numpy": lambda: None},
                          quick=True, reps=3, min_sample=1e-4)
    assert {k: v["reps"] for k, v in out.items()} == {"ember": 3, "numpy": 3}
    assert harness.ratio(out, "numpy") > 0 and harness.ratio(out, "torch") != \
        harness.ratio(out, "torch")          # absent: nan
    assert harness.fmt_ratio(float("nan")) == "-" and harness.verdict(float("nan"), 1) == "-"
    assert harness.table(["case", "t"], [["a", "1.0"]]).splitlines() == \
        ["| case |   t |", "|------|----:|", "| a    | 1.0 |"]
    env = harness.thread_env(3, {"OPENBLAS_CORETYPE": "Haswell", "PATH": "/bin"})
    assert env == {"PATH": "/bin", **{v: "3" for v in harness.THREAD_VARS}}


def test_issue17_point6_run_py_quick_end_to_end(tmp_path):
    out = tmp_path / "run.json"
    p = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--threads", "1",
                        "--filter", "overhead", "--reps", "3", "--json", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "| overhead_add_1 |" in p.stdout
    res = json.loads(out.read_text())["runs"]["1"]["results"]["overhead_add_1"]
    assert res["stats"]["ember"]["reps"] == 3 and not res["bad"]
