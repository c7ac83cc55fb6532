"""Square float32 matmul: ember beside NumPy (OpenBLAS) and PyTorch (when installed).

    python benchmarks/bench_matmul.py                      # 128, 1024, 2048 at 1 and 2 threads
    python benchmarks/bench_matmul.py --sizes 256,512 --threads 1
    python benchmarks/bench_matmul.py --clock cpu          # 1-thread rows timed in thread CPU time
    python benchmarks/bench_matmul.py --budget 2 --json out.json

How it measures (the method of benchmarks/run.py):
- One subprocess per thread setting, with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
  MKL_NUM_THREADS and EMBER_NUM_THREADS set to it (pools read them once);
  torch.set_num_threads and ember.set_num_threads too. OPENBLAS_CORETYPE and
  OPENBLAS_L2_SIZE are removed in that subprocess only: they slow the OpenBLAS in
  current NumPy wheels.
- Each library multiplies its own copy of the same random float32 matrices;
  results are checked against NumPy first (a wrong result is reported, not timed).
- Interleaved rounds: each round times every library once (a sample repeats the
  product until it lasts >= 50 ms), starting with a different library each
  round; the table shows medians over the rounds, GFLOP/s = 2 n^3 / time.
- Settling at 2+ threads: OpenBLAS's and OpenMP's worker threads keep spinning
  for ~0.1-0.2 s after a call returns (ember's go to sleep at once), so a sample
  taken right after another library's would share the CPUs with its spinning
  threads. With more than one thread each sample therefore starts --settle
  seconds (default 0.3) after the previous one, as in a program that uses one
  library; at most --max-rounds-mt rounds (default 15) keep the run short.
- Targets: ember/NumPy >= 0.8 at 1 thread for 1024 and 2048, >= 1.0 at 2 threads,
  >= 0.7 for 128.

Nothing here asserts; FAIL marks a target not met in this run. On a shared machine
absolute numbers move with the load; the ratios, measured in the same rounds,
hold up better. `spread` is the worst (q3 - q1) / median over the libraries.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "packages", "tensor-core", "src")


def target(n, threads):
    if n <= 256:
        return 0.7
    return 0.8 if threads == 1 else 1.0


# ------------------------------------------------------------------ worker side

def worker(args):
    import gc

    import numpy as np
    import ember as em
    em.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    clock = time.thread_time if (args.clock == "cpu" and args.threads == 1) else time.perf_counter
    rng = np.random.default_rng(0)
    results = []
    for n in args.sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        libs = {"numpy": (lambda: np.matmul(a, b), lambda r: r)}
        ea, eb = em.from_numpy(a.copy()), em.from_numpy(b.copy())
        libs["ember"] = (lambda: em.matmul(ea, eb), lambda r: np.asarray(r))
        if torch is not None:
            ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
            libs["torch"] = (lambda: torch.matmul(ta, tb), lambda r: r.numpy())
        wrong = {}
        for name, (fn, to_np) in libs.items():
            got = to_np(fn()).astype(np.float64)
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            if not err < 1e-4:
                wrong[name] = err
        # repetitions per sample: >= 50 ms each, measured on numpy
        fn = libs["numpy"][0]
        t0 = time.perf_counter()
        fn()
        one = max(time.perf_counter() - t0, 1e-6)
        reps = max(1, int(0.05 / one))
        names = [k for k in libs if k not in wrong]
        samples = {k: [] for k in names}
        spent, rounds = 0.0, 0
        settle = args.settle if args.threads > 1 else 0.0
        max_rounds = args.max_rounds if args.threads == 1 else args.max_rounds_mt
        gc.disable()
        try:
            while rounds < args.min_rounds or (spent < args.budget and rounds < max_rounds):
                order = names[rounds % len(names):] + names[:rounds % len(names)]
                for k in order:
                    f = libs[k][0]
                    if settle:
                        time.sleep(settle)
                    w0 = time.perf_counter()
                    t0 = clock()
                    for _ in range(reps):
                        f()
                    samples[k].append((clock() - t0) / reps)
                    spent += time.perf_counter() - w0
                rounds += 1
        finally:
            gc.enable()
        row = {"n": n, "threads": args.threads, "rounds": rounds, "reps": reps,
               "clock": "cpu" if clock is time.thread_time else "wall", "wrong": wrong}
        for k, s in samples.items():
            med = statistics.median(s)
            q = statistics.quantiles(s, n=4) if len(s) >= 2 else [med, med, med]
            row[k] = {"median_s": med, "gflops": 2 * n ** 3 / med / 1e9,
                      "spread": (q[2] - q[0]) / med}
        results.append(row)
    json.dump(results, sys.stdout)


# ------------------------------------------------------------------ driver side

def run_setting(threads, args):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "EMBER_NUM_THREADS"):
        env[k] = str(threads)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, os.path.abspath(__file__), "--_worker", "--threads", str(threads),
           "--sizes", ",".join(map(str, args.sizes)), "--budget", str(args.budget),
           "--clock", args.clock, "--min-rounds", str(args.min_rounds),
           "--max-rounds", str(args.max_rounds), "--max-rounds-mt", str(args.max_rounds_mt),
           "--settle", str(args.settle)]
    for attempt in range(3):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode == 0:
            return json.loads(proc.stdout)
        if "import ember" not in proc.stderr and "ImportError" not in proc.stderr:
            break
        time.sleep(10)             # a rebuild in progress: retry
    sys.exit(f"bench_matmul: the {threads}-thread worker failed:\n{proc.stderr[-3000:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="128,1024,2048")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--budget", type=float, default=4.0,
                   help="seconds of timed samples per size")
    p.add_argument("--min-rounds", type=int, default=5)
    p.add_argument("--max-rounds", type=int, default=41)
    p.add_argument("--max-rounds-mt", type=int, default=15,
                   help="round limit when more than one thread")
    p.add_argument("--settle", type=float, default=0.3,
                   help="pause before each sample at 2+ threads (other pools' spinning)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    p.add_argument("--json")
    p.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.sizes = [int(s) for s in str(args.sizes).split(",")]
    if args._worker:
        args.threads = int(args.threads)
        return worker(args)
    load0 = os.getloadavg()[0]
    rows = []
    for t in [int(s) for s in args.threads.split(",")]:
        rows += run_setting(t, args)
    load1 = os.getloadavg()[0]
    has_torch = any("torch" in r or "torch" in r["wrong"] for r in rows)
    head = f"{'n':>5} {'thr':>3} {'ember':>8} {'numpy':>8}"
    head += f" {'torch':>8}" if has_torch else ""
    head += f" {'em/np':>6}" + (f" {'em/pt':>6}" if has_torch else "")
    head += f" {'target':>7} {'score':>6} {'':>5} {'spread':>6} {'rounds':>6}"
    print("square float32 matmul, GFLOP/s (median of interleaved rounds; higher is better)")
    print(head)
    for r in rows:
        def g(k):
            return f"{r[k]['gflops']:8.1f}" if k in r else f"{'WRONG' if k in r['wrong'] else '-':>8}"
        line = f"{r['n']:>5} {r['threads']:>3} {g('ember')} {g('numpy')}"
        if has_torch:
            line += f" {g('torch')}"
        ratio = r["ember"]["gflops"] / r["numpy"]["gflops"] if "ember" in r and "numpy" in r else 0
        line += f" {ratio:6.2f}"
        if has_torch:
            rt = (r["ember"]["gflops"] / r["torch"]["gflops"]) if "ember" in r and "torch" in r \
                else float("nan")
            line += f" {rt:6.2f}"
        tg = target(r["n"], r["threads"])
        score = ratio / tg
        spread = max(r[k]["spread"] for k in ("ember", "numpy", "torch") if k in r)
        verdict = "PASS" if score >= 1 and "ember" not in r["wrong"] else "FAIL"
        line += f" {'>=' + format(tg, '.1f'):>7} {score:6.2f} {verdict:>5} {spread:6.0%}" \
                f" {r['rounds']:>6}"
        if r["clock"] == "cpu":
            line += "  (cpu clock)"
        if r["wrong"]:
            line += f"  wrong: {r['wrong']}"
        print(line)
    print(f"load average {load0:.2f} -> {load1:.2f}; command: {' '.join(sys.argv)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
