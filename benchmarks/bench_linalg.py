"""Dense linear algebra: ember.linalg beside NumPy (OpenBLAS's LAPACK) and PyTorch (when
installed), at 1 thread by default.

    python benchmarks/bench_linalg.py                         # n = 64, 512; float64, float32
    python benchmarks/bench_linalg.py --sizes 64,512,2048 --ops solve,qr
    python benchmarks/bench_linalg.py --quick --json out.json
    python benchmarks/bench_linalg.py --device opencl --ops solve,inv,cholesky --sizes 64
    python benchmarks/bench_linalg.py --clock cpu             # thread CPU time (1 thread only)
    python benchmarks/bench_linalg.py --dtypes complex128,complex64

What it times (benchmarks/harness.py: interleaved rounds, medians):
- solve (A x = b, one right-hand side), inv,
  cholesky, qr (reduced, Q and R), eigh (values and vectors), svd (reduced, U S Vh) of
  random n x n matrices (symmetric / Hermitian positive-definite for cholesky and eigh;
  complex dtypes: real and imaginary parts random);
- the same on a batch of 4096 8 x 8 matrices;
- with --device opencl (or cuda), also ember on that device (column ember@<device>:
  inputs already there, each call followed by a synchronize; ops without device kernels
  show "-"). On PoCL (OpenCL on the CPU) that is all CPU cores, not 1 thread.
Every result is checked against NumPy's first (a wrong result is reported, not timed).

Targets (issue 20): ember's time at most 1.5x NumPy's at n = 512 and 2048 for solve,
inv, cholesky and qr; at most 2.5x for eigh and svd; below NumPy's and PyTorch's on the
batch of small matrices. `np/em` > 1 means ember is faster; the target column is the
least np/em that meets the target. Nothing asserts: FAIL marks a target not met in this run.
"""
from __future__ import annotations

import sys

import harness

OPS = ("solve", "inv", "cholesky", "qr", "eigh", "svd")
TARGET = {"solve": 1 / 1.5, "inv": 1 / 1.5, "cholesky": 1 / 1.5, "qr": 1 / 1.5,
          "eigh": 1 / 2.5, "svd": 1 / 2.5}


def calls(lib, m):
    """op -> f(A, B) for library module m."""
    if lib == "numpy":
        la = m.linalg
        return {"solve": lambda a, b: la.solve(a, b), "inv": lambda a, b: la.inv(a),
                "cholesky": lambda a, b: la.cholesky(a), "qr": lambda a, b: la.qr(a),
                "eigh": lambda a, b: la.eigh(a), "svd": lambda a, b: la.svd(a, False)}
    la = m.linalg
    return {"solve": lambda a, b: la.solve(a, b), "inv": lambda a, b: la.inv(a),
            "cholesky": lambda a, b: la.cholesky(a), "qr": lambda a, b: la.qr(a),
            "eigh": lambda a, b: la.eigh(a), "svd": lambda a, b: la.svd(a, full_matrices=False)}


def check(op, out, a, b, np):
    """The backward error of a result (any library), as a float."""
    def arr(x):
        if hasattr(x, "numpy"):
            x = (x.cpu() if hasattr(x, "cpu") else x).numpy()
        x = np.asarray(x)
        return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    A, B = arr(a), arr(b)
    scale = np.abs(A).max()
    if op == "solve":
        return np.abs(A @ arr(out) - B).max() / (scale * np.abs(arr(out)).max())
    if op == "inv":
        n = A.shape[-1]
        return np.abs(A @ arr(out) - np.eye(n)).max() / (scale * np.abs(arr(out)).max())
    if op == "cholesky":
        L = arr(out)
        return np.abs(L @ np.conj(np.swapaxes(L, -1, -2)) - A).max() / scale
    if op == "qr":
        return np.abs(arr(out[0]) @ arr(out[1]) - A).max() / scale
    if op == "eigh":
        w, V = arr(out[0]), arr(out[1])
        return np.abs(A @ V - V * w[..., None, :]).max() / scale
    U, S, Vh = (arr(x) for x in out)
    return np.abs((U * S[..., None, :]) @ Vh - A).max() / scale


def main():
    p = harness.parser(__doc__, threads="1")
    p.add_argument("--sizes", default="64,512", help="matrix orders (2048 is slow here)")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--batch", type=int, default=4096, help="small matrices in the batch")
    p.add_argument("--device", default=None, help="also time ember on this device (opencl)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="cpu: the calling thread's CPU time (a noisy machine's other load "
                        "is not charged); used at --threads 1 only")
    args = p.parse_args()
    clock = "cpu" if args.clock == "cpu" and args.threads == 1 and not args.device else "wall"
    harness.pin_threads(args.threads)
    import numpy as np
    mods, info = harness.libs(args.threads)
    rng = np.random.default_rng(0)
    ops = [o for o in args.ops.split(",") if o]
    cases = [(int(n), 1) for n in args.sizes.split(",") if n] + [(8, args.batch)]
    rows, results = [], []
    libs = [k for k in ("ember", "numpy", "torch") if k in mods]
    on = f"ember@{args.device}" if args.device else None
    if on:
        import ember
        dev = ember.device(args.device)
        sync = getattr(ember, dev.type).synchronize
        libs.insert(1, on)
    for dt in args.dtypes.split(","):
        for n, batch in cases:
            shape = (n, n) if batch == 1 else (batch, n, n)
            cx = dt.startswith("complex")
            g = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cx else 0)
            general = (g + np.sqrt(n) * np.eye(n)).astype(dt)
            sym = (g @ np.conj(np.swapaxes(g, -1, -2)) / n + np.eye(n)).astype(dt)
            b = (rng.standard_normal(shape[:-1] + (1,)) +
                 (1j * rng.standard_normal(shape[:-1] + (1,)) if cx else 0)).astype(dt)
            for op in ops:
                a = sym if op in ("cholesky", "eigh") else general
                contenders, wrong = {}, {}
                for lib in libs:
                    m = mods[lib.split("@")[0]]
                    f = calls(lib.split("@")[0], m)[op]
                    x = a.copy() if lib == "numpy" else m.from_numpy(a.copy())
                    y = b.copy() if lib == "numpy" else m.from_numpy(b.copy())
                    if lib == on:
                        x, y, f0 = x.to(dev), y.to(dev), f

                        def f(x, y, f0=f0):
                            r = f0(x, y)
                            sync()
                            return r
                        try:
                            out = f(x, y)
                        except NotImplementedError:
                            continue
                    else:
                        out = f(x, y)
                    err = check(op, out, a, b, np)
                    if not err < (1e-3 if dt in ("float32", "complex64") else 1e-9):
                        wrong[lib] = err
                        continue
                    contenders[lib] = ("f(x, y)", {"f": f, "x": x, "y": y})
                st = harness.measure(contenders, args.quick, clock=clock,
                                     budget=1.0 if not args.quick else 0.3,
                                     rounds=(3, 9) if not args.quick else (2, 5))
                r_np = harness.ratio(st, "numpy")
                r_pt = harness.ratio(st, "torch")
                small = batch > 1
                tg = 1.0 if small else (TARGET[op] if n >= 512 else None)
                row = [op, dt, f"{batch}x{n}x{n}" if small else n] + \
                    [harness.fmt_time(st[k]["median"]) if k in st else
                     ("WRONG" if k in wrong else "-") for k in libs] + \
                    [harness.fmt_ratio(r_np)] + \
                    ([harness.fmt_ratio(r_pt)] if "torch" in mods else []) + \
                    [f">={tg:.2f}" if tg else "-",
                     # the batch must beat PyTorch too (when it is there)
                     harness.verdict(min(r_np, r_pt) if small and r_pt == r_pt else r_np,
                                     tg) if tg else "-"]
                rows.append(row)
                results.append({"op": op, "dtype": dt, "n": n, "batch": batch,
                                "wrong": wrong,
                                **{k: st[k]["median"] for k in st}})
    head = ["op", "dtype", "n"] + libs + ["np/em"] + (["pt/em"] if "torch" in mods else []) + \
        ["target", "result"]
    print(harness.describe(info))
    print(f"median seconds per call ({'thread CPU time' if clock == 'cpu' else 'wall clock'}, "
          "interleaved rounds); np/em > 1: ember is faster")
    print(harness.table(head, rows, left={"op", "dtype", "target", "result"}))
    print(f"command: {' '.join(sys.argv)}")
    harness.save(args, rows=results)


if __name__ == "__main__":
    main()
