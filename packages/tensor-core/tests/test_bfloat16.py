"""bfloat16: the dtype, its conversions (bit-exact against a reference written here,
over all 65536 bit patterns and random float32s), promotion, every op-table row
computed in float32 and rounded once, reductions, matmul, the hand-written families,
random numbers, printing, NumPy / DLPack / pickle interop and save/load, on every
device of the `device` fixture."""
from __future__ import annotations

import io
import math
import pickle
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.ops import table
from ember_testing import fewer_examples, np_dtype, random_values, to_numpy

BF = em.bfloat16
F32 = np.float32


# the reference conversions ---------------------------------------------------------------

def bf16_value(bits):
    """float32 values of bfloat16 bit patterns (uint16): the top half of a float32."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(F32)


def round_bf16_bits(x):
    """The bfloat16 bits nearest to float32 x, found by comparing x with its two
    bfloat16 neighbours in exact (float64) arithmetic: ties go to the even neighbour,
    past the largest finite value (by half an ulp or more) to inf; NaN stays NaN (the
    bits returned for it only need to be a NaN's), inf and signed zeros stay."""
    x = np.asarray(x, F32)
    u = x.view(np.uint32)
    sign = (u >> 16) & 0x8000
    mag = u & 0x7FFFFFFF
    lo = (mag >> 16).astype(np.int64)                  # truncated: |lo| <= |x|
    hi = lo + 1
    ax = np.abs(x.astype(np.float64))
    lo_v = bf16_value(lo.astype(np.uint16)).astype(np.float64)
    hi_v = np.where(hi >= 0x7F80, 2.0 ** 128,         # inf counts as the next value
                    bf16_value(np.minimum(hi, 0x7F7F).astype(np.uint16)).astype(np.float64))
    d_lo, d_hi = ax - lo_v, hi_v - ax
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1))
    r = np.where(up, hi, lo)
    r = np.where(mag >= 0x7F800000, mag >> 16, r)       # inf, NaN (fixed below)
    r = (r | sign).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def round_bf16(x):
    """float32 x rounded to bfloat16, as float32 values."""
    return bf16_value(round_bf16_bits(x))


def bits_of(t):
    """The uint16 bit patterns of a bfloat16 tensor (any device)."""
    return to_numpy(t.view(em.int16)).view(np.uint16)


def as_bf16(values, device="cpu"):
    """A bfloat16 tensor holding float32 `values` (already bfloat16 values), built from
    their bits, so no conversion under test is involved."""
    bits = (np.asarray(values, F32).view(np.uint32) >> 16).astype(np.uint16)
    return em.from_numpy(bits.view(np.int16).copy()).view(BF).to(device)


def same_bits(got_bits, want_bits, msg=""):
    """Bit patterns equal, any NaN matching any NaN."""
    gv, wv = bf16_value(got_bits), bf16_value(want_bits)
    nan = np.isnan(wv)
    assert np.array_equal(np.isnan(gv), nan), f"{msg}: NaN positions differ"
    bad = np.nonzero((got_bits != want_bits) & ~nan)[0]
    assert bad.size == 0, (f"{msg}: {bad.size} values differ, e.g. at {bad[:5].tolist()}: "
                           f"got {gv[bad[:5]]} want {wv[bad[:5]]}")


ALL_BITS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def random_float32(rng, n):
    """float32s of every kind: random bit patterns (all exponents), exact ties between
    two bfloat16s, subnormals, values around the overflow threshold, specials."""
    raw = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32).view(F32)
    ties = ((rng.integers(0, 2 ** 16, size=n, dtype=np.uint64).astype(np.uint32) << 16)
            | 0x8000).view(F32)
    sub = (rng.integers(0, 2 ** 23, size=n, dtype=np.uint64).astype(np.uint32)).view(F32)
    near_max = (np.uint32(0x7F7F0000) + rng.integers(0, 2 ** 16, size=n,
                                                     dtype=np.uint64).astype(np.uint32)).view(F32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0,
                        3.3895313892515355e38, 3.4028234663852886e38, 1e-45, -1e-45,
                        1.00390625, 1.01171875, 9.183549615799121e-41], F32)
    return np.concatenate([raw, ties, -ties, sub, near_max, -near_max, special])


# the dtype ---------------------------------------------------------------------------------

def test_dtype_attributes():
    assert repr(BF) == "ember.bfloat16" and BF.itemsize == 2 and BF.bits == 16
    assert BF.is_floating_point and not BF.is_complex and BF.is_signed
    assert em.as_tensor([1.5], dtype=BF).dtype is BF
    assert em.zeros(3, dtype="bfloat16").dtype is BF
    assert pickle.loads(pickle.dumps(BF)) is BF
    assert BF.to_complex() is em.complex64 and BF.to_real() is BF
    assert em.BFloat16Tensor is not None and isinstance(em.zeros(2, dtype=BF),
                                                        em.BFloat16Tensor)


def test_finfo():
    """PyTorch's torch.finfo(torch.bfloat16)."""
    f = em.finfo(BF)
    assert (f.bits, f.eps, f.max, f.min) == (16, 0.0078125, 3.3895313892515355e38,
                                             -3.3895313892515355e38)
    assert f.smallest_normal == f.tiny == 2.0 ** -126
    assert f.smallest_subnormal == 2.0 ** -133
    assert (f.resolution, f.precision, f.dtype) == (0.01, 2, BF)
    assert repr(f) == ("finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, "
                       "eps=0.0078125, smallest_normal=1.17549e-38, tiny=1.17549e-38, "
                       "dtype=bfloat16)")


@pytest.mark.parametrize("a, b, want", [
    # PyTorch's promotion table (torch.promote_types)
    ("bfloat16", "float16", "float32"), ("float16", "bfloat16", "float32"),
    ("bfloat16", "float32", "float32"), ("bfloat16", "float64", "float64"),
    ("bfloat16", "int64", "bfloat16"), ("uint8", "bfloat16", "bfloat16"),
    ("bfloat16", "bool", "bfloat16"), ("bfloat16", "bfloat16", "bfloat16"),
    ("bfloat16", "complex64", "complex64"), ("complex128", "bfloat16", "complex128"),
])
def test_promotion_table(a, b, want):
    assert em.promote_types(getattr(em, a), getattr(em, b)) is getattr(em, want)


def test_promotion_in_ops(device):
    x = em.ones(3, dtype=BF, device=device)
    assert (x + em.ones(3, dtype=em.float16, device=device)).dtype is em.float32
    assert (x + em.ones(3, dtype=em.int64, device=device)).dtype is BF
    assert (x + 1.5).dtype is BF and (x * 2).dtype is BF and (x + True).dtype is BF
    assert (1.5 - x).dtype is BF and (x > 0.5).dtype is em.bool
    assert (x * 1j).dtype is em.complex64
    assert em.exp(em.ones(2, dtype=em.int32, device=device)).dtype is em.float32
    assert em.result_type(x, 2.0) is BF
    assert to_numpy((x + 1.5).float()).tolist() == [2.5, 2.5, 2.5]


def test_tensor_and_module_methods(device):
    x = em.tensor([1.0, 2.0, 1 / 3], device=device)
    b = x.bfloat16()
    assert b.dtype is BF and b.device == x.device
    assert to_numpy(b.float()).tolist() == [1.0, 2.0, float(round_bf16(F32(1 / 3)))]
    assert b.half().dtype is em.float16 and b.to(em.float64).dtype is em.float64
    assert em.tensor([0.1], dtype=BF).item() == float(round_bf16(F32(0.1)))
    assert em.tensor([1e39], dtype=BF).item() == math.inf   # overflow is inf, as PyTorch


# casts: bit-exact ------------------------------------------------------------------------

def test_widening_all_bit_patterns(device):
    """Every bfloat16 pattern widens to the float32 with those top bits (NaN to NaN)."""
    t = em.from_numpy(ALL_BITS.view(np.int16).copy()).view(BF).to(device)
    want = bf16_value(ALL_BITS)
    got = to_numpy(t.float())
    assert np.array_equal(got.view(np.uint32)[~np.isnan(want)],
                          want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    got64 = to_numpy(t.double())
    assert np.array_equal(got64[~np.isnan(want)], want[~np.isnan(want)].astype(np.float64))
    # and back: every bfloat16 value is exact in float32 and float64
    same_bits(bits_of(t.float().bfloat16()), ALL_BITS, "float32 -> bfloat16")
    same_bits(bits_of(t.double().bfloat16()), ALL_BITS, "float64 -> bfloat16")
    # the item() of every pattern
    for b in (0x0000, 0x8000, 0x0001, 0x7F7F, 0xFF80, 0x3F80, 0x7FC1):
        v = t[int(b)].item()
        w = float(bf16_value(np.uint16(b)))
        assert (math.isnan(v) and math.isnan(w)) or (v == w and math.copysign(1, v) ==
                                                     math.copysign(1, w)), hex(b)


def test_reference_conversion_is_what_it_claims():
    """The test's reference itself, on hand-checked cases."""
    cases = {1.0: 0x3F80, 1.00390625: 0x3F80, 1.01171875: 0x3F82,      # ties to even
             1.0039064: 0x3F81, -2.0: 0xC000, 3.4028234663852886e38: 0x7F80,
             3.3895313892515355e38: 0x7F7F, 1e-45: 0x0000, 9.183549615799121e-41: 0x0001,
             -0.0: 0x8000, math.inf: 0x7F80}
    for x, b in cases.items():
        assert int(round_bf16_bits(np.array([x], F32))[0]) == b, x
    assert np.isnan(round_bf16(np.array([np.nan], F32))[0])


def test_narrowing_random_float32(device):
    """float32 -> bfloat16 rounds to nearest even (ties, subnormals, overflow to inf,
    NaN kept) on random bit patterns of every kind."""
    x = random_float32(np.random.default_rng(7), 20000)
    t = em.from_numpy(x).to(device)
    same_bits(bits_of(t.bfloat16()), round_bf16_bits(x), "float32 -> bfloat16")
    same_bits(bits_of(t.to(BF)), round_bf16_bits(x), "to(bfloat16)")
    out = em.empty(x.shape, dtype=BF, device=device)
    out.copy_(t)
    same_bits(bits_of(out), round_bf16_bits(x), "copy_")


def test_narrowing_from_other_dtypes(device):
    ints = np.array([0, 1, -1, 255, 256, 257, 32767, -32768, 123456789, -(2 ** 31)], np.int64)
    for d in (em.int64, em.int32, em.int16, em.int8, em.uint8):
        v = ints.astype(np_dtype(d))
        t = em.from_numpy(v).to(device).bfloat16()
        same_bits(bits_of(t), round_bf16_bits(v.astype(np.float64).astype(F32)), d.name)
    b = em.from_numpy(np.array([True, False])).to(device).bfloat16()
    assert to_numpy(b.float()).tolist() == [1.0, 0.0]
    h = np.array([65504.0, 1e-7, 0.333, -2.5, np.inf], np.float16)
    same_bits(bits_of(em.from_numpy(h).to(device).bfloat16()),
              round_bf16_bits(h.astype(F32)), "float16")


def test_casts_out_of_bfloat16(device):
    """bfloat16 -> every dtype goes through its float32 value (integers truncate, bool
    is != 0, float16 rounds once)."""
    vals = np.array([0.0, -0.0, 1.5, -2.5, 255.0, 300.0, -7.75, 65536.0, 1e-3], F32)
    t = as_bf16(round_bf16(vals), device)
    w = round_bf16(vals)
    assert to_numpy(t.to(em.int32)).tolist() == w.astype(np.int32).tolist()
    assert to_numpy(t.to(em.int64)).tolist() == w.astype(np.int64).tolist()
    assert to_numpy(t.to(em.bool)).tolist() == (w != 0).tolist()
    assert np.array_equal(to_numpy(t.half()), w.astype(np.float16))
    z = to_numpy(t.to(em.complex64))
    assert np.array_equal(z.real, w) and not z.imag.any()


def test_fill_and_scalars(device):
    t = em.full((4,), 0.1, dtype=BF, device=device)
    assert set(bits_of(t).tolist()) == {int(round_bf16_bits(np.array([0.1], F32))[0])}
    t.fill_(-1e39)
    assert to_numpy(t.float()).tolist() == [-math.inf] * 4
    assert em.zeros(2, dtype=BF, device=device).tolist() == [0.0, 0.0]
    assert em.ones(2, dtype=BF, device=device).sum().item() == 2.0
    assert em.arange(0, 4, dtype=BF, device=device).tolist() == [0.0, 1.0, 2.0, 3.0]


# every op-table row -------------------------------------------------------------------------

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-39, -3e38, 3e38, 0.5, -1.0], F32)


def row_inputs(row, k, n, rng):
    dom = row.domain if not (row.domain in ("nonzero", "shift") and k == 0) else "all"
    v = random_values(rng, em.float32, (n,), dom)
    if dom == "all":
        v = np.concatenate([v, SPECIALS, SPECIALS[::-1]])[:n + len(SPECIALS)]
    return round_bf16(v.astype(F32))


FLOAT_ROWS = [r for r in table.ELEMENTWISE if "float" in r.body]


@pytest.mark.parametrize("row", FLOAT_ROWS, ids=lambda r: r.name)
def test_op_table_row(row, device):
    """Each row with a float body, on bfloat16 operands, is the float32 row on the same
    values rounded once to bfloat16 (bit for bit; predicates exactly)."""
    rng = np.random.default_rng(zlib.crc32(row.name.encode()))  # hash() varies per process
    n = 40
    vals = [row_inputs(row, k, n, rng) for k in range(row.arity)]
    m = min(len(v) for v in vals)
    vals = [v[:m] for v in vals]
    if row.name == "where":
        cond = em.from_numpy(rng.random(m) < 0.5).to(device)
        f32 = [cond] + [em.from_numpy(v).to(device) for v in vals[1:]]
        bf = [cond] + [as_bf16(v, device) for v in vals[1:]]
    else:
        f32 = [em.from_numpy(v).to(device) for v in vals]
        bf = [as_bf16(v, device) for v in vals]
    fn = getattr(em, row.name, None) or getattr(em.special, row.name)
    want = fn(*f32)
    got = fn(*bf)
    if row.out == "bool":
        assert got.dtype is em.bool
        assert np.array_equal(to_numpy(got), to_numpy(want)), row.name
        return
    assert got.dtype is BF, (row.name, got.dtype)
    same_bits(bits_of(got), round_bf16_bits(to_numpy(want)), row.name)


def test_rows_round_once(device):
    """One rounding per row: 256 + 1 is 256 in bfloat16 (the tie goes to even), but
    (256 + 1) - 256 inside one row (addcmul-like composites aside) is never formed;
    the product of two bfloat16 is the float32 product rounded."""
    a = as_bf16(round_bf16(np.array([1.0078125, 3.3, 255.0, 1e-20], F32)), device)
    b = as_bf16(round_bf16(np.array([1.0078125, 7.7, 255.0, 1e-20], F32)), device)
    want = round_bf16(to_numpy(a.float() * b.float()))
    same_bits(bits_of(a * b), round_bf16_bits(want), "mul")
    x = as_bf16(np.array([256.0], F32), device)
    assert (x + 1).item() == 256.0 and (x + 3).item() == 260.0


# reductions ---------------------------------------------------------------------------------

def test_reductions(device):
    """Reductions accumulate wide: a sum of 4096 ones is 4096 (bfloat16 steps would
    stop at 256); each result is the float64 / float32 answer rounded once."""
    rng = np.random.default_rng(3)
    v = round_bf16(rng.uniform(-4, 4, size=(6, 50)).astype(F32))
    t, f = as_bf16(v, device), em.from_numpy(v).to(device)
    assert em.ones(4096, dtype=BF, device=device).sum().item() == 4096.0
    # along an outer dim too (and float16 likewise: its partials stopped at 2048)
    for d in (BF, em.float16):
        assert em.ones((4096, 3), dtype=d, device=device).sum(0).tolist() == [4096.0] * 3
    for name, dims in (("sum", None), ("sum", 1), ("sum", 0), ("mean", 1), ("prod", 0),
                       ("amax", 1), ("amin", 0), ("max", None), ("min", None)):
        args = () if dims is None else (dims,)
        r = getattr(t, name)(*args)
        assert r.dtype is BF, name
        w = getattr(f.double(), name)(*args)
        same_bits(bits_of(r).reshape(-1), round_bf16_bits(to_numpy(w).astype(F32)).reshape(-1),
                  f"{name} {dims}")
    assert to_numpy(t.argmax(1)).tolist() == to_numpy(f.argmax(1)).tolist()
    assert to_numpy(t.argmin(0)).tolist() == to_numpy(f.argmin(0)).tolist()
    assert t.any().item() and not em.zeros(3, dtype=BF, device=device).any().item()
    var = t.var(1)
    assert var.dtype is BF
    np.testing.assert_allclose(to_numpy(var.float()), to_numpy(f.var(1)), rtol=1e-2)
    np.testing.assert_allclose(to_numpy(t.std().float()), to_numpy(f.std()), rtol=1e-2)
    np.testing.assert_allclose(to_numpy(t.norm().float()), to_numpy(f.norm()), rtol=1e-2)


def test_reduction_partials_do_not_round(device):
    """Large sums (one output of many elements, the split paths) stay wide: 2^17 + 1
    terms of 1.0 and one of 2^17 -> 2^18, where bfloat16 partial sums would lose it."""
    x = em.ones(1 << 17, dtype=BF, device=device)
    assert x.sum().item() == float(1 << 17)
    y = em.ones((3, 1 << 16), dtype=BF, device=device).t().contiguous().t()
    assert to_numpy(y.sum(1).float()).tolist() == [65536.0] * 3


# matmul and the hand-written families --------------------------------------------------------

@pytest.mark.parametrize("shape", [((7, 5), (5, 3)), ((1, 64), (64, 9)), ((33, 70), (70, 1)),
                                   ((2, 65, 40), (40, 66)), ((130, 129), (129, 131))])
def test_matmul(shape, device):
    """bfloat16 products accumulate in float32 and round once: the float32 product of
    the same values, rounded (the GEMM's summation order may differ in the last
    float32 bit, so one bfloat16 ulp apart at most)."""
    rng = np.random.default_rng(sum(map(sum, shape)))
    sa, sb = shape
    a = round_bf16(rng.uniform(-1, 1, size=sa).astype(F32))
    b = round_bf16(rng.uniform(-1, 1, size=sb).astype(F32))
    got = as_bf16(a, device) @ as_bf16(b, device)
    assert got.dtype is BF
    want = round_bf16((a.astype(np.float64) @ b.astype(np.float64)).astype(F32))
    g = to_numpy(got.float())
    ulp = np.abs(want) * 2.0 ** -7 + 1e-30
    assert np.all(np.abs(g - want) <= ulp), np.max(np.abs(g - want) / ulp)
    # transposed operands read in place
    got_t = as_bf16(b.swapaxes(-1, -2).copy(), device).transpose(-1, -2)
    assert np.array_equal(to_numpy((as_bf16(a, device) @ got_t).float()), g)


def test_matmul_mixed_and_linear(device):
    a = em.randn(4, 8, device=device)
    w = em.randn(3, 8, device=device)
    r = a.bfloat16() @ w.bfloat16().t()
    assert r.dtype is BF
    np.testing.assert_allclose(to_numpy(r.float()), to_numpy(a.bfloat16().float() @
                                                             w.bfloat16().float().t()),
                               rtol=2e-2, atol=2e-2)
    assert (a.bfloat16() @ w.t()).dtype is em.float32      # promotion


# The CPU GEMM's two bfloat16 paths: "avx512" widens to float32 in the packing (float32
# FMAs, MXCSR's rules), "avx512bf16" packs bfloat16 pairs for vdpbf16ps (a CPU without
# AVX512-BF16 runs the next kernel down, so both names are always testable).
GEMM_KERNELS = ("avx512", "avx512bf16")
TINY = 2.0 ** -126          # float32's smallest normal


def flush_subnormal(x):
    return np.where(np.abs(x) < TINY, np.float32(0), x)


def check_bf16_product(got, a, b, flush, msg=""):
    """got (bfloat16) against the float64 product of a and b (float32 arrays holding
    bfloat16 values, ... x m x k and ... x k x n), inputs flushed like vdpbf16ps when
    `flush`. Bound: one bfloat16 rounding (2^-8 relative), float32 accumulation of k
    exact products (k 2^-24 of sum |a b|, 1% slack) and, per product, a float32
    underflow or flush (2^-126 each)."""
    if flush:
        a, b = flush_subnormal(a), flush_subnormal(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    k = a.shape[-1]
    bound = 2.0 ** -8 * np.abs(ref) + 1.01 * k * 2.0 ** -24 * mag + (k + 1) * TINY
    g = to_numpy(got.float()).astype(np.float64)
    assert g.shape == ref.shape, msg
    err = np.abs(g - ref)
    assert np.all(err <= bound), f"{msg}: worst error / bound {np.max(err / bound)}"


def bf16_values(rng, shape):
    """bfloat16 values of every magnitude: mostly about 1, some tiny (subnormal as
    bfloat16 too), zeros, large, of both signs."""
    x = rng.standard_normal(shape).astype(F32)
    kind = rng.integers(0, 10, size=shape)
    x = np.where(kind == 0, x * F32(2.0 ** -130), x)     # subnormal
    x = np.where(kind == 1, x * F32(2.0 ** 20), x)
    x = np.where(kind == 2, F32(0), x)
    return round_bf16(x)


def operand(vals, kind):
    """A bfloat16 tensor of vals (... x r x c): contiguous, transposed in memory, or a
    strided view (every other column of a wider array)."""
    if kind == "transposed":
        return as_bf16(np.swapaxes(vals, -1, -2).copy()).transpose(-1, -2)
    if kind == "strided":
        wide = np.repeat(vals, 2, axis=-1)
        return as_bf16(wide)[..., ::2]
    return as_bf16(vals)


@pytest.mark.parametrize("kernel", GEMM_KERNELS)
@settings(max_examples=fewer_examples(2), deadline=None)
@given(data=st.data())
def test_matmul_kernels_against_float64(kernel, data):
    """bfloat16 GEMM on each CPU path against a float64 reference of the same bfloat16
    inputs: odd sizes, odd k, k over one block (1024), transposed and strided operands,
    batches (shared and per-batch B)."""
    from ember._C import matmul as _lin
    m = data.draw(st.integers(1, 40), label="m")
    n = data.draw(st.integers(1, 70), label="n")
    k = data.draw(st.one_of(st.integers(1, 67), st.integers(1020, 1100)), label="k")
    batch = data.draw(st.sampled_from([(), (2,), (2, 1, 3)]), label="batch")
    shared_b = data.draw(st.booleans(), label="shared_b")
    la, lb = (data.draw(st.sampled_from(["contiguous", "transposed", "strided"]), label=x)
              for x in "ab")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    a = bf16_values(rng, batch + (m, k))
    b = bf16_values(rng, (k, n) if shared_b else batch + (k, n))
    _lin._set_kernel(kernel)
    try:
        flush = _lin.kernel_name() == "avx512bf16"
        got = operand(a, la) @ operand(b, lb)
    finally:
        _lin._set_kernel("auto")
    assert got.dtype is BF
    check_bf16_product(got, a, b, flush, f"{kernel} {batch} {m}x{k}x{n} {la} {lb}")


def test_matmul_bf16_dot_flushes_subnormals():
    """vdpbf16ps treats subnormal inputs as zero whatever MXCSR says (so does PyTorch's
    oneDNN path); the widening path keeps them."""
    from ember._C import matmul as _lin
    a = np.full((4, 4), 2.0 ** -130, F32)       # a bfloat16 subnormal
    b = np.full((4, 4), 2.0 ** 100, F32)
    want_exact = np.full((4, 4), 4 * 2.0 ** -30)
    for kernel in GEMM_KERNELS:
        _lin._set_kernel(kernel)
        try:
            dot = _lin.kernel_name() == "avx512bf16"
            got = to_numpy((as_bf16(a) @ as_bf16(b)).float())
        finally:
            _lin._set_kernel("auto")
        np.testing.assert_array_equal(got, 0 * want_exact if dot else want_exact, kernel)


def test_matmul_bf16_threads_and_linear_entries():
    """The threaded plan (a product past the threading threshold, 2 threads), and the
    entries that reach the GEMM: x @ W.T, addmm, bmm, conv2d."""
    from ember._C import matmul as _lin
    rng = np.random.default_rng(5)
    old = em.get_num_threads()
    em.set_num_threads(2)
    try:
        for kernel in GEMM_KERNELS:
            _lin._set_kernel(kernel)
            flush = _lin.kernel_name() == "avx512bf16"
            a, b = bf16_values(rng, (300, 257)), bf16_values(rng, (257, 130))
            check_bf16_product(as_bf16(a) @ as_bf16(b), a, b, flush, kernel)
            # into float32 (conv's gradient sums), threaded too
            c = em.zeros(300, 130)
            _lin.gemm_(c, as_bf16(a), as_bf16(b), 1.0, 0.0)
            af, bf = (flush_subnormal(v) if flush else v for v in (a, b))
            want = af.astype(np.float64) @ bf
            mag = np.abs(af).astype(np.float64) @ np.abs(bf)
            assert np.all(np.abs(to_numpy(c) - want) <= 1.01 * 258 * 2.0 ** -24 * mag
                          + 258 * TINY), kernel
    finally:
        _lin._set_kernel("auto")
        em.set_num_threads(old)
    # addmm (fused: beta and alpha in the GEMM, k + 2 float32 roundings) over whole tiles
    # (the micro-kernel's own store) and edge tiles
    c0, a, b = (round_bf16(rng.uniform(-1, 1, s).astype(F32)) for s in [(45, 70), (45, 33),
                                                                        (33, 70)])
    for kernel in GEMM_KERNELS:
        _lin._set_kernel(kernel)
        try:
            got = em.addmm(as_bf16(c0), as_bf16(a), as_bf16(b), beta=0.5, alpha=2.0)
        finally:
            _lin._set_kernel("auto")
        want = 0.5 * c0.astype(np.float64) + 2.0 * (a.astype(np.float64) @ b)
        mag = 0.5 * np.abs(c0) + 2.0 * (np.abs(a).astype(np.float64) @ np.abs(b))
        err = np.abs(to_numpy(got.float()) - want)
        assert np.all(err <= 2.0 ** -8 * np.abs(want) + 1.01 * 35 * 2.0 ** -24 * mag), kernel
    x, w, bias = (round_bf16(rng.uniform(-1, 1, s).astype(F32)) for s in [(6, 9), (5, 9), (5,)])
    near = dict(rtol=2 ** -6, atol=1e-5)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    np.testing.assert_allclose(to_numpy((as_bf16(x) @ as_bf16(w).t()).float()), want - bias,
                               **near)
    np.testing.assert_allclose(to_numpy(em.addmm(as_bf16(bias), as_bf16(x),
                                                 as_bf16(w.T.copy())).float()), want, **near)
    xb, wb = round_bf16(rng.uniform(-1, 1, (3, 4, 9)).astype(F32)), \
        round_bf16(rng.uniform(-1, 1, (3, 9, 5)).astype(F32))
    np.testing.assert_allclose(to_numpy(em.bmm(as_bf16(xb), as_bf16(wb)).float()),
                               xb.astype(np.float64) @ wb, **near)
    img = round_bf16(rng.uniform(-1, 1, (2, 3, 6, 6)).astype(F32))
    ker = round_bf16(rng.uniform(-1, 1, (4, 3, 3, 3)).astype(F32))
    got = to_numpy(em.conv2d(as_bf16(img), as_bf16(ker)).float())
    want = to_numpy(em.conv2d(em.from_numpy(img).double(), em.from_numpy(ker).double()))
    np.testing.assert_allclose(got, want, **near)


@pytest.mark.parametrize("kernel", GEMM_KERNELS)
@settings(max_examples=fewer_examples(2), deadline=None)
@given(data=st.data())
def test_gemm_bf16_into_float32(kernel, data):
    """The bfloat16 GEMM with a float32 C (conv's gradients' sums: C = A @ B + beta C,
    nothing rounded to bfloat16) on each CPU path against float64: odd sizes, k over
    one block, transposed and strided operands, a column-contiguous C."""
    from ember._C import matmul as _lin
    m, n = data.draw(st.integers(1, 40), label="m"), data.draw(st.integers(1, 70), label="n")
    k = data.draw(st.one_of(st.integers(1, 67), st.integers(1020, 1100)), label="k")
    beta = data.draw(st.sampled_from([0.0, 1.0, 0.5]), label="beta")
    la, lb = (data.draw(st.sampled_from(["contiguous", "transposed", "strided"]), label=x)
              for x in "ab")
    c_t = data.draw(st.booleans(), label="c transposed")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    a, b = bf16_values(rng, (m, k)), bf16_values(rng, (k, n))
    c0 = rng.standard_normal((m, n)).astype(F32)
    c = em.from_numpy(c0.T.copy()).t() if c_t else em.from_numpy(c0.copy())
    _lin._set_kernel(kernel)
    try:
        flush = _lin.kernel_name() == "avx512bf16"
        _lin.gemm_(c, operand(a, la), operand(b, lb), 1.0, beta)
    finally:
        _lin._set_kernel("auto")
    if flush:
        a, b = flush_subnormal(a), flush_subnormal(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64 + beta * c0
    mag = np.abs(a64) @ np.abs(b64) + beta * np.abs(c0)
    err = np.abs(to_numpy(c).astype(np.float64) - want)
    assert np.all(err <= 1.01 * (k + 1) * 2.0 ** -24 * mag + (k + 1) * TINY), \
        f"{kernel} {m}x{k}x{n} {la} {lb} beta {beta}: worst {np.max(err)}"
    with pytest.raises(ValueError, match="alpha 1"):
        _lin.gemm_(c, as_bf16(a), as_bf16(b), 2.0, 0.0)
    with pytest.raises(TypeError, match="bfloat16 @ float32 into float32"):
        _lin.gemm_(c, as_bf16(a), em.from_numpy(b), 1.0, 0.0)


@st.composite
def conv_geometry(draw):
    """(groups, c, oc, kernel, stride, padding, dilation) of the bfloat16 conv tests."""
    groups = draw(st.sampled_from([1, 2]))
    c, oc = (groups * draw(st.integers(1, 3)) for _ in range(2))
    return (groups, c, oc, draw(st.sampled_from([(1, 1), (3, 3), (2, 3)])),
            *(draw(st.sampled_from(v)) for v in ([1, 2], [0, 1], [1, 2])))


@pytest.mark.parametrize("kernel", GEMM_KERNELS)
@settings(max_examples=fewer_examples(4), deadline=None)
@given(data=st.data())
def test_conv2d_forward_in_bfloat16(kernel, data):
    """The CPU's bfloat16 conv2d forward (im2col over the bfloat16 values, the bfloat16
    GEMM, the bias in its sum, one rounding) against a float64 reference of the same
    values: the bound of a product of k = taps terms (check_bf16_product's, values
    without subnormals); strides, padding, dilation, groups, 1x1, conv1d. Gradients
    (computed in float32) are the float32 ones rounded to bfloat16."""
    from ember._C import matmul as _lin
    groups, c, oc, k, stride, padding, dilation = data.draw(conv_geometry(), label="conv")
    bias = data.draw(st.booleans(), label="bias")
    hw = data.draw(st.integers(5, 12), label="hw")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x = round_bf16(rng.uniform(-2, 2, (2, c, hw, hw + 1)).astype(F32))
    w = round_bf16(rng.uniform(-1, 1, (oc, c // groups) + k).astype(F32))
    b = round_bf16(rng.uniform(-1, 1, oc).astype(F32)) if bias else None
    args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    _lin._set_kernel(kernel)
    try:
        got = em.conv2d(as_bf16(x), as_bf16(w), None if b is None else as_bf16(b), **args)
    finally:
        _lin._set_kernel("auto")
    assert got.dtype is BF
    taps = c // groups * k[0] * k[1] + bias

    def check(conv, got, xv, wv, bv):
        def ref(*vals):
            return to_numpy(conv(*(None if v is None else em.from_numpy(v).double()
                                   for v in vals), **args))
        want = ref(xv, wv, bv)
        mag = ref(np.abs(xv), np.abs(wv), None if bv is None else np.abs(bv))
        bound = 2.0 ** -8 * np.abs(want) + 1.01 * taps * 2.0 ** -24 * mag
        err = np.abs(to_numpy(got.float()) - want)
        assert np.all(err <= bound), f"{kernel}: worst error / bound {np.max(err / bound)}"
    check(em.conv2d, got, x, w, b)
    x1, w1 = x[:, :, 0].copy(), w[:, :, 0].copy()     # conv1d: the same kernel
    _lin._set_kernel(kernel)
    try:
        got1 = em.conv1d(as_bf16(x1), as_bf16(w1), None if b is None else as_bf16(b), **args)
    finally:
        _lin._set_kernel("auto")
    check(em.conv1d, got1, x1, w1, b)
    # gradients (the bfloat16 kernels, float32 sums rounded once) within one bfloat16
    # rounding of the float32 ones of the same values
    tb = [as_bf16(v).requires_grad_() for v in (x, w, b) if v is not None]
    tf = [em.from_numpy(v).requires_grad_() for v in (x, w, b) if v is not None]
    gy = round_bf16(rng.uniform(-1, 1, tuple(got.shape)).astype(F32))
    em.conv2d(*tb, **args).backward(as_bf16(gy))
    em.conv2d(*tf, **args).backward(em.from_numpy(gy))
    for t16, t32 in zip(tb, tf):
        assert t16.grad.dtype is BF
        g16, g32 = to_numpy(t16.grad.float()), to_numpy(t32.grad)
        assert np.all(np.abs(g16 - g32) <= 2.0 ** -8 * np.abs(g32) + 1e-6)


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("path", ["auto", "gemm"])
@settings(max_examples=fewer_examples(3), deadline=None)
@given(data=st.data())
def test_conv2d_backward_in_bfloat16(layout, path, data):
    """The CPU's bfloat16 convolution kernels, NCHW and channels_last (conv_bf16.c: no
    float32 copy of an activation): conv2d, its three gradients (conv2d_backward) and
    conv_transpose2d, each within one bfloat16 rounding of the float32 result of the
    same values (the tolerance of the gradients above); path 'gemm' keeps a stride-1
    grad_input on GEMM + col2im (else the flipped forward); each result in float32's
    layout (channels_last in, channels_last out)."""
    from ember._C import conv as _conv
    from ember.ops.conv import conv2d_backward
    groups, c, oc, k, stride, padding, dilation = data.draw(conv_geometry(), label="conv")
    n, hw = data.draw(st.integers(1, 5), label="n"), data.draw(st.integers(5, 9), label="hw")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x = round_bf16(rng.uniform(-2, 2, (n, c, hw, hw + 1)).astype(F32))
    w = round_bf16(rng.uniform(-1, 1, (oc, c // groups) + k).astype(F32))
    b, bt = (round_bf16(rng.uniform(-1, 1, m).astype(F32)) for m in (oc, c))
    args = (stride, padding, dilation, groups)
    cl = layout == "channels_last"

    def run(make):
        xt, wt, b1, b2 = (make(v) for v in (x, w, b, bt))
        if cl:
            xt, wt = (t.contiguous(memory_format=em.channels_last) for t in (xt, wt))
        y = em.conv2d(xt, wt, b1, *args)
        gy = make(round_bf16(rng.uniform(-1, 1, tuple(y.shape)).astype(F32)))
        if cl:
            gy = gy.contiguous(memory_format=em.channels_last)
        grads = conv2d_backward(gy, xt, wt, *args, (True, True, True))
        t = em.conv_transpose2d(gy, wt, b2, stride=stride, padding=padding, groups=groups,
                                dilation=dilation)
        return (y,) + tuple(grads) + (t,)

    state = rng.bit_generator.state
    _conv._set_path(path)
    try:
        got = run(as_bf16)
    finally:
        _conv._set_path("auto")
    rng.bit_generator.state = state     # the same grad_output values
    want = run(em.from_numpy)
    for name, g16, g32 in zip(("y", "gx", "gw", "gb", "transpose"), got, want):
        assert g16.dtype is BF and g16.shape == g32.shape, name
        assert g16.stride() == g32.stride(), name      # the layout of float32's
        a, r = to_numpy(g16.float()), to_numpy(g32)
        assert np.all(np.abs(a - r) <= 2.0 ** -8 * np.abs(r) + 1e-6), \
            f"{name}: worst {np.max(np.abs(a - r) / (2.0 ** -8 * np.abs(r) + 1e-6))}"


def test_hand_written_families(device):
    """softmax, log_softmax, layer/batch norm, losses, conv, pool, sort, cumsum, index:
    bfloat16 in, bfloat16 out, the float32 result of the same values within a few
    bfloat16 ulps."""
    rng = np.random.default_rng(11)
    x = round_bf16(rng.normal(size=(2, 3, 6, 6)).astype(F32))
    tb, tf = as_bf16(x, device), em.from_numpy(x).to(device)

    def close(got, want, msg, tol=2e-2):
        assert got.dtype is BF, (msg, got.dtype)
        np.testing.assert_allclose(to_numpy(got.float()), to_numpy(want), rtol=tol, atol=tol,
                                   err_msg=msg)

    close(em.softmax(tb, -1), em.softmax(tf, -1), "softmax")
    close(em.log_softmax(tb, 1), em.log_softmax(tf, 1), "log_softmax")
    close(em.layer_norm(tb, (6,)), em.layer_norm(tf, (6,)), "layer_norm", 5e-2)
    w = round_bf16(rng.normal(size=(4, 3, 3, 3)).astype(F32))
    close(em.conv2d(tb, as_bf16(w, device), padding=1),
          em.conv2d(tf, em.from_numpy(w).to(device), padding=1), "conv2d", 8e-2)
    close(em.max_pool2d(tb, 2), em.max_pool2d(tf, 2), "max_pool2d", 0)
    close(em.avg_pool2d(tb, 2), em.avg_pool2d(tf, 2), "avg_pool2d")
    s, i = tb.reshape(-1).sort()
    s2, i2 = tf.reshape(-1).sort()
    assert np.array_equal(to_numpy(s.float()), to_numpy(s2)) and \
        np.array_equal(to_numpy(i), to_numpy(i2))
    close(tb.cumsum(-1), tf.cumsum(-1), "cumsum", 5e-2)
    idx = em.tensor([2, 0, 5], device=device)
    assert np.array_equal(to_numpy(tb[:, :, idx].float()), to_numpy(tf[:, :, idx]))
    logits = round_bf16(rng.normal(size=(5, 4)).astype(F32))
    target = em.tensor([0, 3, 1, 2, 2], device=device)
    close(em.cross_entropy(as_bf16(logits, device), target),
          em.cross_entropy(em.from_numpy(logits).to(device), target), "cross_entropy")
    z = em.zeros(8, dtype=BF, device=device)
    z.index_add_(0, em.tensor([1, 1, 3], device=device), em.ones(3, dtype=BF, device=device))
    assert to_numpy(z.float()).tolist() == [0, 2, 0, 1, 0, 0, 0, 0]
    assert em.searchsorted(s, s[5:6]).item() <= 5


# random numbers ------------------------------------------------------------------------------

def test_random(device):
    """rand / randn / uniform_ / normal_ on bfloat16: the float32 draws rounded once
    (uniform kept below its upper bound)."""
    em.manual_seed(5)
    r = em.rand(1000, dtype=BF, device=device)
    em.manual_seed(5)
    r32 = em.rand(1000, device=device)
    assert r.dtype is BF
    g, w = to_numpy(r.float()), round_bf16(to_numpy(r32))
    assert g.max() < 1.0 and g.min() >= 0.0
    assert np.array_equal(g[w < 1.0], w[w < 1.0])
    em.manual_seed(6)
    n = em.randn(2000, dtype=BF, device=device)
    em.manual_seed(6)
    n32 = em.randn(2000, device=device)
    assert np.array_equal(to_numpy(n.float()), round_bf16(to_numpy(n32)))
    u = em.empty(500, dtype=BF, device=device).uniform_(2.0, 2.5)
    assert to_numpy(u.float()).min() >= 2.0 and to_numpy(u.float()).max() < 2.5
    m = em.empty(4000, dtype=BF, device=device).normal_(3.0, 0.5)
    assert abs(to_numpy(m.float()).mean() - 3.0) < 0.05


# printing, interop, serialization -----------------------------------------------------------

def test_printing():
    t = em.tensor([1.0, 2.5, 1 / 3], dtype=BF)
    assert repr(t) == "tensor([1.0000, 2.5000, 0.3340], dtype=ember.bfloat16)"
    assert repr(em.tensor(2.0, dtype=BF)) == "tensor(2., dtype=ember.bfloat16)"
    assert repr(em.tensor([float("nan"), float("inf")], dtype=BF)) == \
        "tensor([nan, inf], dtype=ember.bfloat16)"
    assert t.tolist() == [1.0, 2.5, float(round_bf16(F32(1 / 3)))]


def test_numpy_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = em.tensor([1.0, -2.5, 0.1], dtype=BF)
    a = t.numpy()
    assert a.dtype == ml_dtypes.bfloat16
    assert a.astype(F32).tolist() == t.float().tolist()
    a[0] = 4.0           # shares memory
    assert t[0].item() == 4.0
    assert np.asarray(t.view(em.int16)).dtype == np.int16
    assert np.asarray(t).dtype == np.uint16       # the buffer's bits (documented)
    back = em.from_numpy(np.array([0.5, 3.0], dtype=ml_dtypes.bfloat16))
    assert back.dtype is BF and back.tolist() == [0.5, 3.0]
    assert em.as_tensor(np.array([1.5], dtype=ml_dtypes.bfloat16)).dtype is BF
    from ember._dtypes import as_dtype
    assert as_dtype(np.dtype(ml_dtypes.bfloat16)) is BF


def test_numpy_without_ml_dtypes(monkeypatch):
    """Without ml_dtypes, NumPy conversion names the dtype and the remedy."""
    import builtins
    real_import = builtins.__import__

    def no_ml_dtypes(name, *args, **kwargs):
        if name == "ml_dtypes":
            raise ImportError("no ml_dtypes here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ml_dtypes)
    t = em.tensor([1.0], dtype=BF)
    with pytest.raises(TypeError, match="bfloat16.*ml_dtypes.*t.float\\(\\).numpy\\(\\)"):
        t.numpy()
    assert t.float().numpy().tolist() == [1.0]
    assert t.view(em.int16).numpy().tolist() == [0x3F80]


def test_buffer_protocol_shows_bits():
    t = em.tensor([1.0, -2.0], dtype=BF)
    m = memoryview(t)
    assert m.format == "H" and m.itemsize == 2 and m.tolist() == [0x3F80, 0xC000]


def test_dlpack_round_trip(device):
    t = em.tensor([1.0, -0.5, 3.0], dtype=BF).to(device)
    if device.type == "opencl":
        pytest.skip("opencl tensors have no DLPack export")
    r = em.from_dlpack(t)
    assert r.dtype is BF and r.tolist() == [1.0, -0.5, 3.0]
    assert t.__dlpack__() is not None


def test_dlpack_kdlbfloat_code():
    from ember._C import dlpack as dl
    f = dl.open_capsule(em.tensor([1.0], dtype=BF).__dlpack__())
    assert f["dtype"] == "bfloat16"


def test_pickle_round_trip():
    t = em.tensor([[1.0, 2.0], [0.1, -7.0]], dtype=BF)
    r = pickle.loads(pickle.dumps(t))
    assert r.dtype is BF and np.array_equal(bits_of(r), bits_of(t))


def test_save_load_round_trips(tmp_path):
    t = em.tensor([[1.0, 2.5], [0.1, float("nan")]], dtype=BF)
    buf = io.BytesIO()
    em.save({"w": t, "b": t[0]}, buf)
    buf.seek(0)
    r = em.load(buf)
    assert r["w"].dtype is BF and np.array_equal(bits_of(r["w"]), bits_of(t))
    # safetensors: BF16
    from ember.serialization import _CODES
    assert _CODES["bfloat16"] == "BF16"
    path = tmp_path / "m.safetensors"
    em.save({"w": t}, path, format="safetensors")
    raw = path.read_bytes()
    assert b'"BF16"' in raw
    r2 = em.load(path)
    assert r2["w"].dtype is BF and np.array_equal(bits_of(r2["w"]), bits_of(t))


def test_torch_zip_storage_name(tmp_path):
    """The PyTorch zip format writes BFloat16Storage (what torch.load reads)."""
    t = em.tensor([1.0, 3.0], dtype=BF)
    path = tmp_path / "t.pt"
    em.save(t, path, format="torch")
    import zipfile
    with zipfile.ZipFile(path) as z:
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        assert b"BFloat16Storage" in z.read(pkl)
    r = em.load(path)
    assert r.dtype is BF and r.tolist() == [1.0, 3.0]


# capability queries -------------------------------------------------------------------------

def test_capability_queries():
    assert em.backends.cpu.get_cpu_capability() in ("AVX2", "DEFAULT")
    caps = em.cpu.get_capabilities()
    assert "architecture" in caps
    if caps["architecture"] in ("x86_64", "AMD64"):
        assert isinstance(caps["avx2"], bool) and "avx512_bf16" in caps
        assert (em.backends.cpu.get_cpu_capability() == "AVX2") == (caps["avx2"] and
                                                                    caps["fma3"])
    with pytest.raises(TypeError):
        caps["avx2"] = True            # immutable, as PyTorch's
    assert em.cuda.is_bf16_supported() is (em.cuda.is_available() and (
        em.cuda.get_device_capability()[0] >= 8 or em.cuda.is_bf16_supported(True)))
    if not em.cuda.is_available():
        assert em.cuda.is_bf16_supported() is False
        assert em.cuda.is_bf16_supported(including_emulation=False) is False
