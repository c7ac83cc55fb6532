#!/usr/bin/env python
"""FFTs: ember beside NumPy (pocketfft) and PyTorch (pocketfft/MKL, when installed), at 1
thread.

    python benchmarks/bench_fft.py [--threads 1] [--quick] [--rounds N] [--json PATH]
                                   [--clock wall|cpu]

Cases (issue 19; ratios are other_time / ember_time, > 1: ember faster):
- fft_2^20_c64: a complex64 FFT of 2^20 points. Target np/em >= 1.0.
- rfft_2^20_f32: the real-input FFT of 2^20 float32 points. Target >= 1.0.
- fft_prime_99991_c64: 99991 (a prime: Bluestein) complex64 points. Target >= 0.5
  (ember at most 2x NumPy's time).
- fft2_64x256x256_c64: a batched 2-D FFT over the last two dims. Target >= 1.0.

ember runs `ember.fft` on complex tensors when ember has complex dtypes, else the
real layer underneath it (`ember.ops.fft.fft_c2c` / `fft_r2c` on float [..., 2] tensors,
the same kernels). Each library transforms its own copy of the same data; results are
checked against NumPy in float64 first (a wrong result is reported, not timed).
Interleaved rounds (benchmarks/harness.py), medians. Nothing asserts; FAIL marks a
missed target.

A second table: real transforms of odd and prime lengths against complex ones (issue 19:
a real transform costs about half a complex one): for each n, rfft of float32 over fft
of complex64, ember's and NumPy's (rf/f), timed in one interleaved run, and NumPy's fft
time over ember's (np/em f; primes: target >= 0.5).
"""
from __future__ import annotations

import numpy as np

import harness

PRIME = 99991


def _data(shape, cplx, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    if not cplx:
        return x
    return (x + 1j * rng.standard_normal(shape).astype(np.float32)).astype(np.complex64)


def contenders(case, mods, rng):
    """lib -> (callable, result as a complex128 NumPy array), and the float64 reference."""
    import ember
    kind, shape = {"fft_2^20_c64": ("fft", (2 ** 20,)), "rfft_2^20_f32": ("rfft", (2 ** 20,)),
                   "fft_prime_99991_c64": ("fft", (PRIME,)),
                   "fft2_64x256x256_c64": ("fft2", (64, 256, 256))}[case]
    x = _data(shape, kind != "rfft", rng)
    npf = {"fft": np.fft.fft, "rfft": np.fft.rfft, "fft2": np.fft.fft2}[kind]
    ref = npf(x.astype(np.complex128 if kind != "rfft" else np.float64))
    out = {"numpy": (lambda: npf(x), lambda r: r)}
    has_complex = hasattr(ember, "complex64")
    if has_complex:
        import ember.fft as ef
        xe = ember.from_numpy(x.copy())
        ef_kind = {"fft": ef.fft, "rfft": ef.rfft, "fft2": ef.fft2}[kind]
        out["ember"] = (lambda: ef_kind(xe), lambda r: r.numpy())
    else:
        from ember.ops import fft as F
        if kind == "rfft":
            xe = ember.from_numpy(x.copy())
            out["ember"] = (lambda: F.fft_r2c(xe), _ri)
        else:
            xe = ember.from_numpy(np.stack([x.real, x.imag], -1).copy())
            f = (lambda: F.fft_c2c(xe)) if kind == "fft" else \
                (lambda: F.fftn_c2c(xe, dim=(-2, -1)))
            out["ember"] = (f, _ri)
    if "torch" in mods:
        pt = mods["torch"]
        xt = pt.from_numpy(x.copy())
        pt_kind = {"fft": pt.fft.fft, "rfft": pt.fft.rfft, "fft2": pt.fft.fft2}[kind]
        out["torch"] = (lambda: pt_kind(xt), lambda r: r.numpy())
    return out, ref, has_complex


def _ri(t):
    a = t.numpy()
    return a[..., 0] + 1j * a[..., 1]


ODD = [3 ** 10, 5 ** 7, 3 * 5 * 7 * 11 * 13, 3 * 33331, PRIME, 65537]


def _odd_case(n, ef, to_ember, rng, args):
    """ember's and NumPy's rfft (float32) and fft (complex64) of length n, checked, then
    timed interleaved: name -> median seconds."""
    x = _data((n,), False, rng)
    z = _data((n,), True, rng)
    xe, ze = to_ember(x.copy()), to_ember(z.copy())
    for name, f, ref in (("rfft", lambda: ef.rfft(xe).numpy(), np.fft.rfft(x)),
                         ("fft", lambda: ef.fft(ze).numpy(), np.fft.fft(z))):
        err = np.abs(f() - ref).max() / np.abs(ref).max()
        assert err < 1e-4, f"ember {name} of {n}: relative error {err:.2g}"
    st = harness.measure({"em_rf": lambda: ef.rfft(xe), "em_f": lambda: ef.fft(ze),
                          "np_rf": lambda: np.fft.rfft(x), "np_f": lambda: np.fft.fft(z)},
                         args.quick, clock=args.clock, min_sample=0.05,
                         reps=3 if args.quick else args.rounds)
    return {k: v["median"] for k, v in st.items()}


def odd_table(args):
    """The rfft / fft ratios of ODD, ember's beside NumPy's."""
    import ember
    import ember.fft as ef
    rng = np.random.default_rng(1)
    rows = {}
    for n in ODD:
        rows[n] = _odd_case(n, ef, ember.from_numpy, rng, args)
    table = harness.table(
        ["n", "ember rfft", "ember fft", "em rf/f", "np rf/f", "np/em f"],
        [[str(n), harness.fmt_time(r["em_rf"]), harness.fmt_time(r["em_f"]),
          harness.fmt_ratio(r["em_rf"] / r["em_f"]), harness.fmt_ratio(r["np_rf"] / r["np_f"]),
          harness.fmt_ratio(r["np_f"] / r["em_f"])] for n, r in rows.items()])
    return table, rows


TARGETS = {"fft_2^20_c64": 1.0, "rfft_2^20_f32": 1.0, "fft_prime_99991_c64": 0.5,
           "fft2_64x256x256_c64": 1.0}


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or the thread's CPU time (1 thread)")
    ap.add_argument("--odd-only", action="store_true",
                    help="only the odd / prime rfft-vs-fft table")
    args = ap.parse_args()
    harness.pin_threads(args.threads)
    mods, info = harness.libs(args.threads)
    print(harness.describe(info))
    if args.odd_only:
        text, odd = odd_table(args)
        print(text)
        harness.save(args, info=info, odd=odd)
        return
    rng = np.random.default_rng(0)
    found = {}

    def contenders_of(case):
        fns, ref, found["complex"] = contenders(case, mods, rng)
        return fns, ref
    text, results = harness.checked_cases(TARGETS, contenders_of, args, mods,
                                          lambda case: 1e-4)
    has_complex = found.get("complex", False)
    print(text)
    odd_text, odd = odd_table(args) if has_complex else ("", {})
    print(odd_text)
    print("ember: " + ("ember.fft on complex tensors" if has_complex else
                       "the real layer ember.ops.fft on [..., 2] tensors (no complex dtypes "
                       "in this build)") + f"; {args.threads} thread(s), medians of "
          "interleaved rounds")
    harness.save(args, info=info, results=results, odd=odd)


if __name__ == "__main__":
    main()
