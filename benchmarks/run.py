#!/usr/bin/env python
"""ember beside NumPy and PyTorch: one table of times, ratios and targets.

    python benchmarks/run.py [--quick] [--threads 1,2] [--filter NAME[,NAME...]]
                             [--reps N] [--json FILE]

Every thread setting runs in its own subprocess (the BLAS/OpenMP thread pools
read their environment once, at import), and each subprocess times the three
libraries interleaved, round by round, so that drift on a shared machine hits
them alike. Times are medians over rounds; ratios are other_time / ember_time
(> 1: ember is faster). See benchmarks/README.md.
"""
from __future__ import annotations

import gc
import json
import sys
import time

import harness

SHORT = {"ember": "em", "numpy": "np", "torch": "pt"}


# --------------------------------------------------------------------------
# Cases. Each `setup_*` gets the loaded libraries and returns, per library, a
# statement and its namespace; the statement is what gets timed (compiled into
# timeit's loop, so no extra Python call per op is charged to anyone).
# --------------------------------------------------------------------------

def _rand(rng, shape, lo=0.0, hi=1.0):
    import numpy as np
    x = rng.random(shape, dtype=np.float32)
    if lo != 0.0 or hi != 1.0:
        x *= np.float32(hi - lo)
        x += np.float32(lo)
    return x


def _convert(mods, lib, arr):
    """`arr` for `lib`: numpy uses the freshly made array itself, the others get a
    copy from their own allocator."""
    if lib == "numpy":
        return arr
    if lib == "torch":
        return mods["torch"].from_numpy(arr).clone()
    em = mods["ember"]
    return em.from_numpy(arr).clone()


def _to_numpy(x):
    import numpy as np
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def _same_stmt(stmt, names):
    """Case whose statement is the same text in every library."""
    def setup(mods, rng, quick):
        arrays = {n: fn(rng) for n, fn in names.items()}
        return {lib: (stmt, {n: _convert(mods, lib, a) for n, a in arrays.items()})
                for lib in mods}
    return setup


N_FLAT = 10 ** 7
N_SQ = 4096


def setup_add_1e7(mods, rng, quick):
    # a + b with a fresh output every call (no out=): the allocator is part of it.
    return _same_stmt("a + b", {"a": lambda r: _rand(r, N_FLAT),
                                "b": lambda r: _rand(r, N_FLAT)})(mods, rng, quick)


def setup_sum_1e7(mods, rng, quick):
    return _same_stmt("a.sum()", {"a": lambda r: _rand(r, N_FLAT)})(mods, rng, quick)


def setup_cast_1e7(mods, rng, quick):
    """float32 -> float64 into a fresh array (a cast and a copy in one)."""
    arr = _rand(rng, N_FLAT)
    fns = {"numpy": lambda a: a.astype(mods["numpy"].float64),
           "torch": lambda a: a.to(mods["torch"].float64),
           "ember": lambda a: a.to(mods["ember"].float64)}
    return {lib: ("f(a)", {"f": fns[lib], "a": _convert(mods, lib, arr)}) for lib in mods}


def _sum_dim(dim):
    def setup(mods, rng, quick):
        x = _rand(rng, (N_SQ, N_SQ))
        out = {}
        for lib in mods:
            kw = "axis" if lib == "numpy" else "dim"
            out[lib] = (f"x.sum({kw}={dim})", {"x": _convert(mods, lib, x)})
        return out
    return setup


def setup_transpose_add_4096(mods, rng, quick):
    # a.T is a view (strided read of one operand); b is contiguous.
    return _same_stmt("a.T + b", {"a": lambda r: _rand(r, (N_SQ, N_SQ)),
                                  "b": lambda r: _rand(r, (N_SQ, N_SQ))})(mods, rng, quick)


def setup_softmax_4096x1024(mods, rng, quick):
    """softmax over the last dim; NumPy has none, so it runs the usual three lines."""
    arr = _rand(rng, (4096, 1024))
    np = mods["numpy"]

    def np_softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    fns = {"numpy": lambda a: np_softmax(a),
           "torch": lambda a: mods["torch"].softmax(a, -1),
           "ember": lambda a: mods["ember"].softmax(a, -1)}
    return {lib: ("f(a)", {"f": fns[lib], "a": _convert(mods, lib, arr)}) for lib in mods}


def setup_conv2d_32x3x32x32(mods, rng, quick):
    """conv2d, batch 32, 3 -> 32 channels, 32x32, 3x3 kernel, padding 1, with bias.
    NumPy has none: im2col (a sliding-window view, copied) and one matmul."""
    x, w, b = _rand(rng, (32, 3, 32, 32), -1, 1), _rand(rng, (32, 3, 3, 3), -1, 1), \
        _rand(rng, (32,), -1, 1)
    np = mods["numpy"]

    def np_conv2d(x, w, b):
        n, c, h, wd = x.shape
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * 9)
        y = (cols @ w.reshape(w.shape[0], -1).T + b).reshape(n, h, wd, -1)
        return np.ascontiguousarray(y.transpose(0, 3, 1, 2))

    if "torch" in mods:
        # A fresh 4 MB output comes from mmap (page faults on every call) until glibc
        # has seen a large block freed; any real program gets there at once.
        mods["torch"].empty(2 << 20)    # 8 MB, allocated and freed at once
    fns = {"numpy": np_conv2d,
           "torch": lambda x, w, b: mods["torch"].nn.functional.conv2d(x, w, b, padding=1),
           "ember": lambda x, w, b: mods["ember"].conv2d(x, w, b, padding=1)}
    return {lib: ("f(x, w, b)", {"f": fns[lib], "x": _convert(mods, lib, x),
                                 "w": _convert(mods, lib, w), "b": _convert(mods, lib, b)})
            for lib in mods}


def setup_tensor_from_list_1e6(mods, rng, quick):
    """A tensor from a Python list of 10^6 floats (float32). The interpreter walks the
    list in every library; NumPy's walk in C is the bound."""
    data = _rand(rng, 10 ** 6).tolist()
    make = {"numpy": lambda d: mods["numpy"].asarray(d, dtype=mods["numpy"].float32),
            "torch": lambda d: mods["torch"].tensor(d),
            "ember": lambda d: mods["ember"].tensor(d)}
    return {lib: ("make(data)", {"make": make[lib], "data": data}) for lib in mods}


def setup_overhead_add_1(mods, rng, quick):
    return _same_stmt("a + b", {"a": lambda r: _rand(r, (1,)),
                                "b": lambda r: _rand(r, (1,))})(mods, rng, quick)


# 10 elementwise ops: add, mul, sub, div, exp, tanh, neg, abs, maximum, sqrt.
# Inputs in [0.5, 1.5) keep every intermediate finite and sqrt's input >= 0.5.
CHAIN_STMT = "sqrt(maximum(abs(-tanh(exp(((a + b) * c - a) / b))), c))"
CHAIN_OPS = 10


def setup_chain10_16x16(mods, rng, quick):
    arrays = {n: _rand(rng, (16, 16), 0.5, 1.5) for n in "abc"}
    out = {}
    for lib, m in mods.items():
        ns = {n: _convert(mods, lib, a) for n, a in arrays.items()}
        ns.update(exp=m.exp, tanh=m.tanh, abs=m.abs, maximum=m.maximum, sqrt=m.sqrt)
        out[lib] = (CHAIN_STMT, ns)
    return out


# name -> (setup, ops per statement (time is reported per op), bytes moved per
# statement (for GB/s; 0: not shown), target kind, target value, check rtol)
# Target kinds: "vs_numpy": numpy_time/ember_time >= value;
#               "vs_best":  min(numpy, torch)_time/ember_time >= value;
#               "abs_us":   ember time per op <= value microseconds.
F32 = 4
CASES = {
    "add_1e7": (setup_add_1e7, 1, 3 * N_FLAT * F32, "vs_numpy", 1.0, 1e-6),
    "sum_1e7": (setup_sum_1e7, 1, N_FLAT * F32, "vs_best", 1.0, 1e-4),
    "cast_1e7": (setup_cast_1e7, 1, 3 * N_FLAT * F32, "vs_best", 1.0, 0),
    "sum_dim1_4096": (_sum_dim(1), 1, N_SQ * N_SQ * F32, "vs_best", 1.0, 1e-4),
    "sum_dim0_4096": (_sum_dim(0), 1, N_SQ * N_SQ * F32, "vs_best", 1.0, 1e-4),
    "transpose_add_4096": (setup_transpose_add_4096, 1, 3 * N_SQ * N_SQ * F32,
                           "vs_numpy", 2.0, 1e-6),
    "softmax_4096x1024": (setup_softmax_4096x1024, 1, 2 * 4096 * 1024 * F32, "vs_best", 1.0,
                          1e-5),
    "conv2d_32x3x32x32": (setup_conv2d_32x3x32x32, 1, 0, "vs_best", 1.0, 1e-4),
    # 60x faster than ember's first version; 2x faster than torch.tensor here
    "tensor_from_list_1e6": (setup_tensor_from_list_1e6, 1, 0, "vs_numpy", 0.25, 0),
    "overhead_add_1": (setup_overhead_add_1, 1, 0, "abs_us", 1.0, 1e-6),
    "chain10_16x16": (setup_chain10_16x16, CHAIN_OPS, 0, "vs_numpy", 1.0, 1e-5),
}


# --------------------------------------------------------------------------
# Worker: one thread setting, one process (harness.run_settings starts it).
# --------------------------------------------------------------------------

def check(stmts, rtol):
    """Each library's answer beside numpy's (shape, dtype, and the values at up to
    2**16 sampled positions). Returns (the libraries that disagree, seconds each
    library's call took: a first call, so an upper bound for calibrating)."""
    import numpy as np
    ref_stmt, ref_ns = stmts["numpy"]
    ref = np.asarray(eval(ref_stmt, dict(ref_ns)))
    idx = np.random.default_rng(1).integers(0, max(ref.size, 1), min(ref.size, 1 << 16))
    want = ref.reshape(-1)[idx].astype(np.float64)
    bad, took = [], {}
    for lib, (stmt, ns) in stmts.items():
        t0 = time.perf_counter()
        got = eval(stmt, dict(ns))
        took[lib] = time.perf_counter() - t0
        got = _to_numpy(got)
        ok = (got.shape == ref.shape and got.dtype == ref.dtype and
              np.allclose(got.reshape(-1)[idx].astype(np.float64), want, rtol=rtol, atol=rtol))
        if not ok:
            bad.append(f"{lib}(shape {got.shape} dtype {got.dtype})")
    return bad, took


def worker(args):
    import numpy as np
    threads = args.threads[0]
    mods, info = harness.libs(threads)
    # thread CPU time misses the work of helper threads: the cpu clock is for 1 thread
    clock = "cpu" if args.clock == "cpu" and threads == 1 else "wall"
    rng = np.random.default_rng(0)
    results = {}
    for name in selected(args.filter):
        setup, nops, nbytes, *_rest = CASES[name]
        rtol = _rest[-1]
        t0 = time.perf_counter()
        stmts = setup(mods, rng, args.quick)
        t1 = time.perf_counter()
        bad, took = check(stmts, rtol)    # also the warm-up call of every library
        t2 = time.perf_counter()
        stats = harness.measure(stmts, args.quick, reps=args.reps, clock=clock,
                                first=took if clock == "wall" else None)
        t3 = time.perf_counter()
        for st in stats.values():
            st["per_op"] = st["median"] / nops
        results[name] = {"stats": stats, "bad": bad, "clock": clock,
                         "wall": {"setup": t1 - t0, "check": t2 - t1, "measure": t3 - t2}}
        del stmts
        gc.collect()
    json.dump({"info": info, "results": results}, sys.stdout)


# --------------------------------------------------------------------------
# Driver: one subprocess per thread setting, then one table.
# --------------------------------------------------------------------------

def selected(filt):
    if not filt:
        return list(CASES)
    keys = [f.strip() for f in filt.split(",") if f.strip()]
    names = [n for n in CASES if any(k in n for k in keys)]
    if not names:
        sys.exit(f"--filter {filt!r} matches no case; cases: {', '.join(CASES)}")
    return names


def evaluate(name, st):
    """(target text, achieved/needed score, PASS/FAIL)."""
    _setup, _nops, _nbytes, kind, value, _rtol = CASES[name]
    em = st["ember"]["per_op"]
    if kind == "abs_us":
        score = value * 1e-6 / em
        text = f"em <= {value:g} us/op"
    elif kind == "vs_numpy":
        score = st["numpy"]["per_op"] / em / value
        text = f"np/em >= {value:g}"
    else:
        others = [st[lib]["per_op"] for lib in ("numpy", "torch") if lib in st]
        score = min(others) / em / value
        text = f"best(np,pt)/em >= {value:g}" if "torch" in st else f"np/em >= {value:g} (no torch)"
    return text, score, "PASS" if score >= 1.0 else "FAIL"


def table(runs):
    has_torch = any("torch" in r["results"][c]["stats"] for r in runs.values()
                    for c in r["results"])
    head = ["case", "thr", "ember", "numpy"] + (["torch"] if has_torch else []) + \
        ["np/em"] + (["pt/em"] if has_torch else []) + \
        ["target", "score", "result", "spread", "notes"]
    rows = []
    for thr, r in runs.items():
        for name, res in r["results"].items():
            st = res["stats"]
            _s, nops, nbytes, *_ = CASES[name]
            em = st["ember"]["per_op"]
            row = [name, str(thr), harness.fmt_time(em), harness.fmt_time(st["numpy"]["per_op"])]
            if has_torch:
                row.append(harness.fmt_time(st["torch"]["per_op"]) if "torch" in st else "-")
            row.append(f"{harness.ratio(st, 'numpy'):.2f}")
            if has_torch:
                row.append(f"{harness.ratio(st, 'torch'):.2f}" if "torch" in st else "-")
            text, score, verdict = evaluate(name, st)
            spread = max(s["spread"] for s in st.values())
            notes = []
            if nops > 1:
                notes.append(f"per op ({nops} ops/chain)")
            if nbytes:
                notes.append("GB/s " + " ".join(
                    f"{SHORT[lib]} {nbytes / st[lib]['median'] / 1e9:.1f}" for lib in st))
            if res["bad"]:
                notes.append("WRONG RESULT: " + ", ".join(res["bad"]))
                verdict = "FAIL*"
            row += [text, f"{score:.2f}", verdict, f"{spread * 100:.0f}%", "; ".join(notes)]
            rows.append(row)
    return harness.table(head, rows, left={"case", "target", "result", "notes"})


def main():
    ap = harness.parser(__doc__, threads="1,2", multi=True)
    ap.add_argument("--filter", default="", help="run the cases whose name contains any of these")
    ap.add_argument("--reps", type=int, default=0, help="rounds per case (default: by time budget)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: elapsed time (default); cpu: the timing thread's CPU time, "
                         "steadier on a busy machine, used for 1-thread settings only")
    args = ap.parse_args()
    if args._worker:
        return worker(args)
    selected(args.filter)      # fail early on a bad filter
    t0 = time.perf_counter()
    load0 = harness.load()
    runs = harness.run_settings(args)
    info = next(iter(runs.values()))["info"]
    print(harness.describe({**info, "threads": None}))
    print("# float32; times are medians of interleaved rounds (per op for chains);"
          " np/em, pt/em = other time / ember time (> 1: ember faster);"
          " score = achieved / target (>= 1: PASS); spread = worst IQR/median")
    clock = ("thread CPU time at 1 thread, wall time otherwise" if args.clock == "cpu"
             else "wall time")
    print(f"# threads: {','.join(map(str, runs))} (ember.set_num_threads and every pool's"
          f" variables); {'quick' if args.quick else 'full'} run; clock: {clock}")
    print(table(runs))
    print(f"# total {time.perf_counter() - t0:.0f} s; 1-min load average {load0} before,"
          f" {harness.load()} after (above ~0.5 the machine was busy: trust the ratios,"
          f" not the absolute times)")
    harness.save(args, runs=runs)


if __name__ == "__main__":
    main()
