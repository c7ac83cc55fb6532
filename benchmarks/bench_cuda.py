"""The CUDA backend on a GPU: ember beside PyTorch (when torch with CUDA is importable)
and beside the device's own copy bandwidth, measured in the same run.

    python benchmarks/bench_cuda.py                  # every case, ~1 min on an H200
    python benchmarks/bench_cuda.py --filter copy,matmul --json out.json

Cases and the targets of issue 8:
  copy_2^28   device-to-device copy of 2^28 float32 (1 GiB): the bandwidth roofline,
              counted as bytes read + written per second
  add_2^28    z = x + y, 2^28 float32: >= 80% of the copy bandwidth (3 x 1 GiB moved)
  sum_2^28    x.sum(), 2^28 float32: >= 80% of the copy bandwidth (1 GiB read)
  matmul_4096 float32 4096^3, TF32 off: >= 0.5x PyTorch (cuBLAS); without torch the
              absolute TFLOP/s is reported
  matmul_4096_f16  float16 (tensor cores), beside PyTorch: no target, for the record
  mlp_step    forward + backward + SGD step of a 3-layer MLP (batch 512): <= 1.5x PyTorch
  cnn_step    the same for a small CNN (batch 256, 3x32x32): <= 1.5x PyTorch

Timing: CUDA events around a loop of `reps` calls after a warm-up call (it also warms
the caching allocators); ember and PyTorch take turns, 5 such samples each
(benchmarks/harness.py's interleaved rounds), medians. Without a CUDA device the
script says why and exits with status 1. Every case checks its
result against NumPy (or PyTorch) before it is timed; a wrong result is reported
instead of a time. One failing case (a missing kernel, say) does not stop the others.
"""
from __future__ import annotations

import sys
import time
import traceback

import numpy as np

import ember as em
import harness

try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except Exception:          # no torch, or one without CUDA: the columns are left out
    torch, HAVE_TORCH = None, False

N = 1 << 28


def cuda_times(fns, reps, samples=5):
    """name -> median seconds per call, for fns: name -> (cuda, fn), `cuda` being em.cuda
    or torch.cuda (the same Event API): CUDA events on the library's current stream
    around `reps` calls, interleaved rounds of samples after one warm-up call each."""
    def sampler(cuda, fn):
        def sample():
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / reps
        return sample
    for cuda, fn in fns.values():
        fn()
        cuda.synchronize()
    got = harness.interleave({k: sampler(*v) for k, v in fns.items()}, samples)
    return {k: harness.stats(s)["median"] for k, s in got.items()}


def check(ok, what):
    if not ok:
        raise AssertionError(f"wrong result: {what}")


# ---------------------------------------------------------------------------- cases

def _uniform(seed):
    """2^28 float32 in [0, 1) made on the host (not every device kernel is needed)."""
    return em.from_numpy(np.random.default_rng(seed).random(N, dtype=np.float32)).cuda()


def _pair(ember_fn, torch_fn, reps):
    """(ember seconds, torch seconds or None) per call, timed in the same rounds."""
    fns = {"ember": (em.cuda, ember_fn)}
    if torch_fn is not None:
        fns["torch"] = (torch.cuda, torch_fn)
    t = cuda_times(fns, reps)
    return t["ember"], t.get("torch")


def case_bandwidth(rows, state):
    x = _uniform(0)
    y = em.empty(N, device="cuda")
    y.copy_(x)
    check(np.array_equal(y[-1000:].cpu().numpy(), x[-1000:].cpu().numpy()), "copy")
    if HAVE_TORCH:
        tx = torch.rand(N, device="cuda")
        ty = torch.empty_like(tx)
    t, tt = _pair(lambda: y.copy_(x), (lambda: ty.copy_(tx)) if HAVE_TORCH else None, 10)
    bw = 2 * 4 * N / t
    state["copy_bw"] = bw
    row = {"case": "copy_2^28", "ember_ms": t * 1e3, "ember": f"{bw / 1e12:.2f} TB/s"}
    if tt:
        row.update(torch_ms=tt * 1e3, torch=f"{2 * 4 * N / tt / 1e12:.2f} TB/s")
    rows.append(row)

    z = x + x
    y2 = _uniform(1)
    z = x + y2
    sl = slice(N - 4096, N)
    check(np.allclose(z[sl].cpu().numpy(), x[sl].cpu().numpy() + y2[sl].cpu().numpy()), "add")
    del z
    if HAVE_TORCH:
        ty2 = torch.rand(N, device="cuda")
    t, tt = _pair(lambda: x + y2, (lambda: tx + ty2) if HAVE_TORCH else None, 10)
    frac = 3 * 4 * N / t / bw
    row = {"case": "add_2^28", "ember_ms": t * 1e3, "ember": f"{frac:.0%} of copy",
           "target": ">= 80% of copy", "ok": frac >= 0.8}
    if tt:
        row.update(torch_ms=tt * 1e3, torch=f"{3 * 4 * N / tt / bw:.0%} of copy")
    rows.append(row)

    s = float(x.sum().item())
    ref = float(np.sum(x.cpu().numpy(), dtype=np.float64))
    check(abs(s - ref) <= 1e-4 * abs(ref), f"sum {s} vs {ref}")
    t, tt = _pair(lambda: x.sum(), (lambda: tx.sum()) if HAVE_TORCH else None, 10)
    frac = 4 * N / t / bw
    row = {"case": "sum_2^28", "ember_ms": t * 1e3, "ember": f"{frac:.0%} of copy",
           "target": ">= 80% of copy", "ok": frac >= 0.8}
    if tt:
        row.update(torch_ms=tt * 1e3, torch=f"{4 * N / tt / bw:.0%} of copy")
    rows.append(row)


def _matmul(rows, dtype, name, tf32, target):
    n = 4096
    em.backends.cuda.matmul.allow_tf32 = tf32
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    b_np = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    a, b = em.from_numpy(a_np).cuda(), em.from_numpy(b_np).cuda()
    c = (a @ b).cpu().numpy().astype(np.float64)
    ref = a_np[:64].astype(np.float64) @ b_np.astype(np.float64)
    tol = 2e-2 if dtype == np.float16 else 1e-3
    err = np.max(np.abs(c[:64] - ref)) / np.max(np.abs(ref))
    check(err < tol, f"{name}: relative error {err:.2e}")
    if HAVE_TORCH:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
    t, tt = _pair(lambda: a @ b, (lambda: ta @ tb) if HAVE_TORCH else None, 5)
    flops = 2 * n ** 3 / t
    row = {"case": name, "ember_ms": t * 1e3, "ember": f"{flops / 1e12:.1f} TFLOP/s"}
    if tt:
        row.update(torch_ms=tt * 1e3, torch=f"{2 * n ** 3 / tt / 1e12:.1f} TFLOP/s")
        if target:
            row.update(target=f">= {target}x torch", ok=tt / t >= target)
    rows.append(row)
    em.backends.cuda.matmul.allow_tf32 = False


def case_matmul(rows, state):
    _matmul(rows, np.float32, "matmul_4096", False, 0.5)


def case_matmul_f16(rows, state):
    _matmul(rows, np.float16, "matmul_4096_f16", False, None)


def _train_step_pair(rows, name, make_ember, make_torch, x_shape, classes, reps):
    """Time one SGD step (forward, cross-entropy, backward, update) in each library on
    the same weights and data; the first steps' losses must agree."""
    import ember.nn as enn
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(x_shape, dtype=np.float32)
    y_np = rng.integers(0, classes, x_shape[0])
    model = make_ember(enn).cuda()
    opt = em.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = em.from_numpy(x_np).cuda(), em.from_numpy(y_np).cuda()
    lossf = enn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss

    row = {"case": name, "target": "<= 1.5x torch"}
    if HAVE_TORCH:
        tmodel = make_torch(torch.nn).cuda()
        with torch.no_grad():
            for tp, (_, p) in zip(tmodel.parameters(), model.named_parameters()):
                tp.copy_(torch.from_numpy(p.detach().cpu().numpy()))
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
        tx, ty = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
        tlossf = torch.nn.CrossEntropyLoss()

        def tstep():
            topt.zero_grad()
            loss = tlossf(tmodel(tx), ty)
            loss.backward()
            topt.step()
            return loss

        l_em, l_t = float(step().item()), float(tstep().item())
        check(abs(l_em - l_t) <= 1e-3 * max(1.0, abs(l_t)), f"{name}: loss {l_em} vs torch {l_t}")
    t, tt = _pair(step, tstep if HAVE_TORCH else None, reps)
    row.update(ember_ms=t * 1e3, ember=f"{t * 1e3:.2f} ms")
    if tt:
        row.update(torch_ms=tt * 1e3, torch=f"{tt * 1e3:.2f} ms", ok=t <= 1.5 * tt)
    rows.append(row)


def case_mlp(rows, state):
    def make(nn):
        return nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                             nn.Linear(2048, 10))
    _train_step_pair(rows, "mlp_step", make, make, (512, 1024), 10, 20)


def case_cnn(rows, state):
    def make(nn):
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    _train_step_pair(rows, "cnn_step", make, make, (256, 3, 32, 32), 10, 10)


CASES = {"copy": case_bandwidth, "matmul": case_matmul, "matmul_f16": case_matmul_f16,
         "mlp": case_mlp, "cnn": case_cnn}


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--filter", default="", help="comma-separated case names (copy covers "
                    "copy, add and sum)")
    args = ap.parse_args()
    if not em.cuda.is_available():
        sys.exit("bench_cuda: no CUDA device: " + (
            em._C.cuda.unavailable_reason() if em.cuda.is_built() else "ember built without CUDA"))
    harness.pin_threads(args.threads)
    print(f"device: {em.cuda.get_device_name()}; torch: "
          f"{torch.__version__ if HAVE_TORCH else 'not available with CUDA'}")
    wanted = [w for w in args.filter.split(",") if w]
    rows, state = [], {}
    for name, fn in CASES.items():
        if wanted and name not in wanted:
            continue
        t0 = time.perf_counter()
        try:
            fn(rows, state)
        except Exception as e:   # report and go on: one missing kernel must not hide the rest
            rows.append({"case": name, "error": f"{type(e).__name__}: {e}".splitlines()[0][:160]})
            traceback.print_exc(limit=3)
        print(f"  ({name}: {time.perf_counter() - t0:.1f} s)", flush=True)
    print(harness.table(["case", "ember", "torch", "target", "result"], [
        [r["case"], "ERROR " + r["error"], "", "", ""] if "error" in r else
        [r["case"], r.get("ember", ""), r.get("torch", "-"), r.get("target", ""),
         "" if "ok" not in r else ("PASS" if r["ok"] else "FAIL")] for r in rows],
        left={"case", "target", "result"}))
    harness.save(args, rows=rows)


if __name__ == "__main__":
    main()
