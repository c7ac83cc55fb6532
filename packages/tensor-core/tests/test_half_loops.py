"""The CPU's float16 loops come in two copies, AVX2+F16C (chunked conversions, chosen at
run time where the CPU has them) and portable: both give the same bits, over contiguous,
broadcast and strided operands and lengths that end mid-chunk; and float16 stays exact
against a float32 reference rounded once; so does bfloat16 (its loops are chunked the
same way, around the same float32 bodies)."""
import numpy as np
import pytest

import ember as em
from ember._C import core


def _bits(t):
    return t.contiguous().view(em.int16).numpy().copy()


OPS = {
    "add": lambda a, b: a + b,
    "mul_scalar": lambda a, b: a * 1.5,
    "broadcast": lambda a, b: a[:1] - b,
    "strided": lambda a, b: a[::3] * b[::3],
    "div": lambda a, b: a / b,
    "exp": lambda a, b: a.exp(),
    "where": lambda a, b: em.where(a > b, a, b),
    "compare": lambda a, b: (a < b).to(em.float16),
    "sum": lambda a, b: a.sum().reshape(1),
    "amax": lambda a, b: a.amax().reshape(1),
    "to_float32": lambda a, b: a.to(em.float32).to(em.float16),
    "from_float32": lambda a, b: (a.to(em.float32) * 3).to(em.float16),
}


@pytest.fixture
def portable():
    core._set_f16c_loops(False)
    yield
    core._set_f16c_loops(True)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 1000, 4099])
def test_f16c_and_portable_agree(name, n):
    rng = np.random.default_rng(n)
    vals = rng.standard_normal(2 * n).astype(np.float16)
    vals[::17] = np.float16(np.inf) if n > 17 else vals[::17]
    a = em.from_numpy(vals[:n].copy())
    b = em.from_numpy(vals[n:].copy())
    fast = OPS[name](a, b)
    core._set_f16c_loops(False)
    try:
        slow = OPS[name](a, b)
    finally:
        core._set_f16c_loops(True)
    np.testing.assert_array_equal(_bits(fast), _bits(slow))


def test_rounded_once(portable):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(777).astype(np.float16)
    y = rng.standard_normal(777).astype(np.float16)
    want = (x.astype(np.float32) * y.astype(np.float32)).astype(np.float16)
    for on in (False, True):
        core._set_f16c_loops(on)
        got = (em.from_numpy(x) * em.from_numpy(y)).numpy()
        np.testing.assert_array_equal(got.view(np.int16), want.view(np.int16))


ROWS = {
    "gelu": lambda a, b: em.gelu(a),
    "gelu_grad": lambda a, b: em._gelu_grad(b, a),
    "exp": lambda a, b: a.exp(),
    "mul_scalar": lambda a, b: a * 1.5,
    "where": lambda a, b: em.where(a > b, a, b),
    "isnan": lambda a, b: em.isnan(a / b),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 255, 257, 1000])
def test_rows_are_the_float32_row_rounded_once(dtype, n):
    """The chunked loops (256 elements converted, the body compiled per instruction
    set, converted back) across chunk boundaries: bit for bit the float32 row on the
    same values, rounded once."""
    rng = np.random.default_rng(n)
    dt = getattr(em, dtype)
    a = em.from_numpy((rng.standard_normal(n) * 4).astype(np.float32)).to(dt)
    b = em.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dt)
    b[::5] = 0.0
    for name, f in ROWS.items():
        got, want = f(a, b), f(a.float(), b.float())
        if want.dtype is em.bool:
            np.testing.assert_array_equal(got.numpy(), want.numpy(), name)
        else:
            assert got.dtype is dt, name
            np.testing.assert_array_equal(_bits(got), _bits(want.to(dt)), name)
