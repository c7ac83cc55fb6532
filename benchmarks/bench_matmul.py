"""Square float32 matmul: ember beside NumPy (OpenBLAS) and PyTorch (when installed);
then bfloat16 beside float32 (ember's and PyTorch's, the same rounds).

    python benchmarks/bench_matmul.py                      # 128, 1024, 2048 at 1 and 2 threads
    python benchmarks/bench_matmul.py --sizes 1024 --bf16-sizes 1024 --threads 1
    python benchmarks/bench_matmul.py --sizes 256,512 --threads 1
    python benchmarks/bench_matmul.py --clock cpu          # 1-thread rows timed in thread CPU time
    python benchmarks/bench_matmul.py --budget 2 --json out.json
    python benchmarks/bench_matmul.py --quick --sizes 128 --threads 1

How it measures (benchmarks/harness.py, the method of benchmarks/run.py):
- One subprocess per thread setting, with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
  MKL_NUM_THREADS and EMBER_NUM_THREADS set to it (pools read them once);
  torch.set_num_threads and ember.set_num_threads too. OPENBLAS_CORETYPE and
  OPENBLAS_L2_SIZE are removed in that subprocess only: they slow the OpenBLAS in
  current NumPy wheels.
- Each library multiplies its own copy of the same random float32 matrices;
  results are checked against NumPy first (a wrong result is reported, not timed).
- Interleaved rounds: each round times every library once (a sample repeats the
  product until it lasts >= 50 ms; 10 ms with --quick), starting with a different
  library each round; the table shows medians over the rounds, GFLOP/s = 2 n^3 / time.
- Settling at 2+ threads: OpenBLAS's and OpenMP's worker threads keep spinning
  for ~0.1-0.2 s after a call returns (ember's go to sleep at once), so a sample
  taken right after another library's would share the CPUs with its spinning
  threads. With more than one thread each sample therefore starts --settle
  seconds (default 0.3) after the previous one, as in a program that uses one
  library; at most --max-rounds-mt rounds (default 15) keep the run short.
- Targets: ember/NumPy >= 0.8 at 1 thread for 1024 and 2048, >= 1.0 at 2 threads,
  >= 0.7 for 128.
- bfloat16 (--bf16-sizes, default 1024; "" skips it): ember and PyTorch each multiply
  the same matrices in float32 and in bfloat16, four contenders in one set of
  interleaved rounds. Columns: bf16/f32 = ember's bfloat16 time / its float32 time
  (target <= 1.15: on a CPU with AVX512-BF16 ember multiplies bfloat16 pairs with
  vdpbf16ps, about half its float32 time; elsewhere it widens to float32, about the
  same time), and
  em/pt bf16 = PyTorch's bfloat16 time / ember's (> 1: ember faster; target >= 1).

Nothing here asserts; FAIL marks a target not met in this run. On a shared machine
absolute numbers move with the load; the ratios, measured in the same rounds,
hold up better. `spread` is the worst (q3 - q1) / median over the libraries.
"""
from __future__ import annotations

import json
import sys

import harness


def target(n, threads):
    if n <= 256:
        return 0.7
    return 0.8 if threads == 1 else 1.0


# ------------------------------------------------------------------ worker side

def worker(args):
    import numpy as np
    threads = args.threads[0]
    mods, _info = harness.libs(threads)
    clock = "cpu" if args.clock == "cpu" and threads == 1 else "wall"
    rng = np.random.default_rng(0)
    results = []
    for n in args.sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        # each library multiplies its own copy; ember's and torch's from their allocators
        ops = {lib: (m.matmul, m.from_numpy(a.copy()), m.from_numpy(b.copy()))
               for lib, m in mods.items() if lib != "numpy"}
        ops["numpy"] = (np.matmul, a, b)
        wrong = {}
        for lib, (mm, x, y) in ops.items():
            err = float(np.abs(np.asarray(mm(x, y)) - ref).max() / np.abs(ref).max())
            if not err < 1e-4:
                wrong[lib] = err
        mt = threads > 1
        st = harness.measure(
            {lib: ("mm(x, y)", {"mm": mm, "x": x, "y": y}) for lib, (mm, x, y) in ops.items()
             if lib not in wrong},
            args.quick, clock=clock, min_sample=0.01 if args.quick else 0.05,
            budget=args.budget, settle=args.settle if mt else 0.0,
            rounds=(3 if args.quick else args.min_rounds,
                    args.max_rounds_mt if mt else args.max_rounds))
        row = {"n": n, "threads": threads, "clock": clock, "wrong": wrong,
               "rounds": min(s["reps"] for s in st.values())}
        for lib, s in st.items():
            row[lib] = {"median_s": s["median"], "gflops": 2 * n ** 3 / s["median"] / 1e9,
                        "spread": s["spread"]}
        results.append(row)
    for n in args.bf16_sizes:
        results.append(bf16_row(args, mods, rng, n, threads, clock))
    json.dump(results, sys.stdout)


def bf16_row(args, mods, rng, n, threads, clock):
    """ember and torch, float32 and bfloat16, on the same n x n matrices."""
    import numpy as np
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ops, wrong = {}, {}
    for lib, m in mods.items():
        if lib == "numpy":
            continue
        for dt in ("float32", "bfloat16"):
            x = m.from_numpy(a.copy()).to(getattr(m, dt))
            y = m.from_numpy(b.copy()).to(getattr(m, dt))
            got = np.asarray(m.matmul(x, y).float().numpy(), np.float64)
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            if not err < (3e-2 if dt == "bfloat16" else 1e-4):
                wrong[f"{lib} {dt}"] = err
            ops[f"{lib} {dt}"] = (m.matmul, x, y)
    mt = threads > 1
    st = harness.measure(
        {k: ("mm(x, y)", {"mm": mm, "x": x, "y": y}) for k, (mm, x, y) in ops.items()
         if k not in wrong},
        args.quick, clock=clock, min_sample=0.01 if args.quick else 0.05,
        budget=args.budget, settle=args.settle if mt else 0.0,
        rounds=(3 if args.quick else args.min_rounds,
                args.max_rounds_mt if mt else args.max_rounds))
    row = {"kind": "bf16", "n": n, "threads": threads, "clock": clock, "wrong": wrong,
           "rounds": min(s["reps"] for s in st.values())}
    for k, s in st.items():
        row[k] = {"median_s": s["median"], "gflops": 2 * n ** 3 / s["median"] / 1e9,
                  "spread": s["spread"]}
    return row


# ------------------------------------------------------------------ driver side

def main():
    p = harness.parser(__doc__, threads="1,2", multi=True)
    p.add_argument("--sizes", default="128,1024,2048")
    p.add_argument("--bf16-sizes", default="1024",
                   help="sizes of the bfloat16 vs float32 table ('' for none)")
    p.add_argument("--budget", type=float, default=4.0,
                   help="seconds of timed samples per size")
    p.add_argument("--min-rounds", type=int, default=5)
    p.add_argument("--max-rounds", type=int, default=41)
    p.add_argument("--max-rounds-mt", type=int, default=15,
                   help="round limit when more than one thread")
    p.add_argument("--settle", type=float, default=0.3,
                   help="pause before each sample at 2+ threads (other pools' spinning)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = p.parse_args()
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    args.bf16_sizes = [int(s) for s in str(args.bf16_sizes).split(",") if s.strip()]
    if args.quick:
        args.budget = min(args.budget, 0.5)
    if args._worker:
        return worker(args)
    load0 = harness.load()
    rows = [r for t_rows in harness.run_settings(args).values() for r in t_rows]
    load1 = harness.load()
    bf_rows = [r for r in rows if r.get("kind") == "bf16"]
    rows = [r for r in rows if r.get("kind") != "bf16"]
    has_torch = any("torch" in r or "torch" in r["wrong"] for r in rows)
    libs = ["ember", "numpy"] + (["torch"] if has_torch else [])
    head = ["n", "thr"] + libs + ["em/np"] + (["em/pt"] if has_torch else []) + \
        ["target", "score", "result", "spread", "rounds", "notes"]

    def g(r, k):
        return f"{r[k]['gflops']:.1f}" if k in r else ("WRONG" if k in r["wrong"] else "-")

    def gratio(r, k):      # GFLOP/s ratio = k's time / ember's (> 1: ember faster)
        return r["ember"]["gflops"] / r[k]["gflops"] if "ember" in r and k in r \
            else float("nan")
    out = []
    for r in rows:
        ratio = gratio(r, "numpy")
        tg = target(r["n"], r["threads"])
        score = ratio / tg
        notes = ("cpu clock " if r["clock"] == "cpu" else "") + \
            (f"wrong: {r['wrong']}" if r["wrong"] else "")
        out.append([r["n"], r["threads"]] + [g(r, k) for k in libs] + [harness.fmt_ratio(ratio)] +
                   ([harness.fmt_ratio(gratio(r, "torch"))] if has_torch else []) +
                   [f">={tg:.1f}", harness.fmt_ratio(score),
                    "PASS" if score >= 1 and "ember" not in r["wrong"] else "FAIL",
                    f"{max(r[k]['spread'] for k in libs if k in r):.0%}", r["rounds"], notes])
    print("square float32 matmul, GFLOP/s (median of interleaved rounds; higher is better)")
    print(harness.table(head, out, left={"target", "result", "notes"}))
    if bf_rows:
        print()
        print(bf16_table(bf_rows))
    print(f"load average {load0} -> {load1}; command: {' '.join(sys.argv)}")
    harness.save(args, rows=rows, bf16=bf_rows)


def bf16_table(rows):
    keys = ["ember float32", "ember bfloat16", "torch float32", "torch bfloat16"]
    has_torch = any(k.startswith("torch") for r in rows for k in list(r) + list(r["wrong"]))
    keys = keys if has_torch else keys[:2]
    head = ["n", "thr"] + keys + ["bf16/f32", "target"] + \
        (["em/pt bf16", "em/pt f32"] if has_torch else []) + ["result", "spread", "notes"]
    out = []
    for r in rows:
        def t(k, r=r):
            return r[k]["median_s"] if k in r else float("nan")
        own = t("ember bfloat16") / t("ember float32")
        line = [r["n"], r["threads"]] + [
            f"{r[k]['gflops']:.1f}" if k in r else ("WRONG" if k in r["wrong"] else "-")
            for k in keys] + [harness.fmt_ratio(own), "<=1.15"]
        vs = []
        if has_torch:
            vs = [t("torch bfloat16") / t("ember bfloat16"),
                  t("torch float32") / t("ember float32")]
            line += [harness.fmt_ratio(v) for v in vs]
        ok = own <= 1.15 and (not vs or vs[0] >= 1.0) and not any(
            k.startswith("ember") for k in r["wrong"])
        line += ["PASS" if ok else "FAIL",
                 f"{max(r[k]['spread'] for k in keys if k in r):.0%}",
                 f"wrong: {r['wrong']}" if r["wrong"] else ""]
        out.append(line)
    return ("bfloat16 vs float32 matmul, GFLOP/s (one set of interleaved rounds)\n" +
            harness.table(head, out, left={"target", "result", "notes"}))


if __name__ == "__main__":
    main()
