"""The timing harness every benchmark shares.

A benchmark times contenders (ember, NumPy, PyTorch when it is installed, or variants
of one library) on the same work and prints one table:

- threads: `pin_threads(n)` re-runs the script with every pool's thread variable set
  to n (OpenBLAS, OpenMP and MKL read them once, at import); scripts that compare
  settings run one worker subprocess per setting with `run_settings`.
- `measure`: interleaved rounds (each round times every contender once, starting with
  a different one each round, so drift on a shared machine hits all of them alike),
  medians, spread = (q3 - q1) / median.
- `ratio`: other_time / ember_time (> 1: ember is faster).
- `table` prints markdown; `save` writes `--json PATH`.

ember comes from the installed environment (`tools/dev bench` builds and installs it);
nothing here touches sys.path, and torch is never required.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "EMBER_NUM_THREADS")
# OpenBLAS knobs some machines set for old OpenBLAS builds: they slow the OpenBLAS that
# current NumPy wheels bundle, so benchmark processes run without them
UNSET_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def _int_list(text):
    return [int(t) for t in str(text).split(",") if t.strip()]


def parser(doc, threads="1", multi=False):
    """The options every benchmark takes: --threads, --quick, --json. With multi,
    --threads is a list (one worker subprocess per setting, see run_settings)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    conv = _int_list if multi else int
    ap.add_argument("--threads", type=conv, default=conv(threads),
                    help=f"thread count{'s, comma-separated' if multi else ''} "
                         f"(default {threads})")
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--json", metavar="PATH", help="also write the results to this file")
    if multi:
        ap.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    return ap


# ---------------------------------------------------------------------- threads

def thread_env(threads, base=None):
    """The environment of a process whose pools all use `threads` threads."""
    env = dict(os.environ if base is None else base)
    for v in UNSET_VARS:
        env.pop(v, None)
    env.update({v: str(threads) for v in THREAD_VARS})
    return env


def pin_threads(threads):
    """Run this script with `threads` threads in every pool: unless the environment
    already says so, re-execute it (same process id) with thread_env(threads)."""
    env = thread_env(threads)
    if all(os.environ.get(k) == env.get(k) for k in THREAD_VARS + UNSET_VARS):
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.orig_argv[1:], env)


def run_settings(args):
    """Driver of a script that compares thread settings: run the script once per
    setting in a fresh process (thread_env), with `--_worker --threads N` appended, and
    return setting -> the JSON that worker printed on stdout."""
    script = os.path.abspath(sys.argv[0])
    out = {}
    for t in args.threads:
        cmd = [sys.executable, script, *sys.argv[1:], "--_worker", "--threads", str(t)]
        p = subprocess.run(cmd, env=thread_env(t), stdout=subprocess.PIPE, text=True)
        if p.returncode:
            sys.exit(f"{os.path.basename(script)}: the {t}-thread worker failed "
                     f"(exit {p.returncode})")
        out[t] = json.loads(p.stdout)
    return out


def libs(threads=None, torch=True):
    """(name -> module, info) for ember, NumPy and, when installed (and wanted), torch,
    each set to `threads` threads."""
    import numpy

    import ember
    mods = {"ember": ember, "numpy": numpy}
    info = {"ember": ember.__version__, "numpy": numpy.__version__, "torch": None,
            "threads": threads}
    if threads:
        ember.set_num_threads(threads)
    if torch:
        try:
            import torch as pt
        except ImportError:
            pass
        else:
            if threads:
                pt.set_num_threads(threads)
            mods["torch"], info["torch"] = pt, pt.__version__
    return mods, info


def describe(info):
    """One header line: versions, the machine, the thread setting."""
    cpu = platform.processor() or "?"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    thr = f" | {info['threads']} thread(s)" if info.get("threads") else ""
    return (f"# ember {info['ember']} | numpy {info['numpy']} | torch "
            f"{info['torch'] or 'absent'} | Python {platform.python_version()} | {cpu}, "
            f"{os.cpu_count()} logical CPUs{thr}")


def load_example(path):
    """A module (a .py file) or package (a folder) of examples/, imported from its file:
    examples/ never goes on sys.path, so nothing there can shadow an installed package."""
    p = EXAMPLES / path
    pkg = p.is_dir()
    spec = importlib.util.spec_from_file_location(
        p.stem, p / "__init__.py" if pkg else p,
        submodule_search_locations=[str(p)] if pkg else None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------- timing

def interleave(samplers, reps, *, warmup=0, settle=0.0, min_reps=None, deadline=None):
    """name -> list of seconds. A sampler takes one sample and returns its seconds (per
    call). Each round runs every sampler once, starting with a different one each round;
    the first `warmup` rounds are not kept. With a deadline (a perf_counter time),
    rounds stop there once min_reps are kept. `settle` seconds pass before each sample
    (other libraries' pools keep spinning ~0.1-0.2 s after a call)."""
    order = list(samplers)
    samples = {name: [] for name in order}
    for r in range(warmup + reps):
        kept = r - warmup
        if deadline and kept >= min_reps and time.perf_counter() > deadline:
            break
        k = r % len(order)
        for name in order[k:] + order[:k]:
            if settle:
                time.sleep(settle)
            s = samplers[name]()
            if kept >= 0:
                samples[name].append(s)
    return samples


def stats(samples):
    s = sorted(samples)
    med = statistics.median(s)
    q1, q3 = s[len(s) // 4], s[(3 * len(s)) // 4]
    return {"median": med, "min": s[0], "spread": (q3 - q1) / med if med else 0.0,
            "reps": len(s)}


def measure(contenders, quick=False, *, clock="wall", reps=0, number=0, min_sample=0.0,
            budget=0.0, rounds=None, settle=0.0, first=None):
    """Time the contenders interleaved; returns name -> stats (+ "number").

    contenders: name -> a callable or (statement, namespace); a statement is compiled
    into timeit's loop, so no extra Python call is charged to anyone (garbage
    collection is off while timing). Each sample repeats the call `number` times or,
    by default, as often as it takes to last min_sample seconds (25 ms; 10 ms quick),
    calibrated once. Rounds: `reps`, or as many as fit in `budget` seconds (3.5; 0.5
    quick), within rounds = (lo, hi) ((7, 41); (3, 15) quick), stopping past twice the
    budget once lo are done. first: name -> seconds one call already took (it saves
    calibrating slow statements); without it the calibration is the warm-up call."""
    min_sample = min_sample or (0.01 if quick else 0.025)
    budget = budget or (0.5 if quick else 3.5)
    lo, hi = rounds or ((3, 15) if quick else (7, 41))
    samplers, numbers, est = {}, {}, {}
    for name, c in contenders.items():
        stmt, ns = c if isinstance(c, tuple) else (c, None)
        t = timeit.Timer(stmt, globals=ns, timer=CLOCKS[clock])
        dt = (first or {}).get(name, 0.0)
        if dt < 4 * min_sample:
            dt = t.timeit(1)
        n = 1
        while not number and dt < min_sample and n < 10 ** 7:
            n = max(n * 2, int(n * min_sample / max(dt, 1e-9) * 1.1))
            dt = t.timeit(n)
        n, dt = (number, dt * number) if number else (n, dt)
        samplers[name] = lambda t=t, n=n: t.timeit(n) / n
        numbers[name], est[name] = n, dt
    round_s = sum(est.values()) + settle * len(samplers)
    fixed = bool(reps)
    reps = reps or max(lo, min(hi, int(budget / max(round_s, 1e-9))))
    samples = interleave(samplers, reps, settle=settle, min_reps=lo,
                         deadline=None if fixed else time.perf_counter() + 2 * budget)
    return {name: {**stats(s), "number": numbers[name]} for name, s in samples.items()}


def ratio(st, name, base="ember"):
    """st[name]'s time over base's (> 1: base is faster); nan when either is absent."""
    if name not in st or base not in st:
        return float("nan")
    return st[name]["median"] / st[base]["median"]


def checked_cases(targets, contenders_of, args, mods, tol, vs="numpy"):
    """The table of cases each checked then timed: contenders_of(case) gives lib ->
    (callable, result -> NumPy array) and the reference; a library whose result is off
    the reference by more than tol(case) (relative to its largest magnitude) is reported
    WRONG, not timed. Returns (the markdown table, per-case stats) with np/em, pt/em and
    each target's verdict on the ratio against `vs` ("numpy" or "torch"); the clock is
    args.clock where the benchmark has that option."""
    import numpy as np
    libs = ["ember", "numpy"] + (["torch"] if "torch" in mods else [])
    rows, results = [], {}
    for case, target in targets.items():
        fns, ref = contenders_of(case)
        wrong = {}
        for lib, (fn, conv) in fns.items():
            err = float(np.abs(conv(fn()) - ref).max() / np.abs(ref).max())
            if not err < tol(case):
                wrong[lib] = err
        st = measure({lib: fn for lib, (fn, _) in fns.items() if lib not in wrong},
                     args.quick, clock=getattr(args, "clock", "wall"), min_sample=0.05,
                     reps=3 if args.quick else args.rounds)
        results[case] = {"stats": st, "wrong": wrong}
        r_np, r_pt = ratio(st, "numpy"), ratio(st, "torch")
        rows.append([case] + [fmt_time(st[lib]["median"]) if lib in st else
                              ("WRONG" if lib in wrong else "-") for lib in libs] +
                    [fmt_ratio(r_np)] + ([fmt_ratio(r_pt)] if "torch" in mods else []) +
                    [f">= {target:.1f}", verdict(r_np if vs == "numpy" else r_pt, target),
                     f"{max(s['spread'] for s in st.values()):.0%}"])
    head = ["case"] + libs + ["np/em"] + (["pt/em"] if "torch" in mods else []) + \
        ["target", "result", "spread"]
    return table(head, rows, left={"case", "result"}), results


# ---------------------------------------------------------------------- output

def fmt_time(s):
    if s is None or s != s:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_ratio(r):
    return "-" if r != r else f"{r:.2f}"


def verdict(r, target):
    """ok / FAIL for a ratio that must be >= target; - when it could not be measured."""
    return "-" if r != r else "ok" if r >= target else "FAIL"


def table(head, rows, left=None):
    """A markdown table; columns named in `left` (default: the first) are left-aligned,
    the others right-aligned."""
    left = {head[0]} if left is None else set(left)
    rows = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) if h in left else c.rjust(w)
                                 for h, c, w in zip(head, cells, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) if h in left else "-" * (w + 1) + ":"
                         for h, w in zip(head, widths)) + "|"
    return "\n".join([line(head), sep] + [line(r) for r in rows])


def load():
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


def save(args, **results):
    """--json PATH: the command line and the results."""
    if args.json:
        Path(args.json).write_text(json.dumps({"command": sys.argv, **results}, indent=1))
