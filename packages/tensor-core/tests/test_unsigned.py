"""uint16, uint32 and uint64 (issue 20): the dtypes, their promotion, Python scalars,
casts bit for bit against NumPy's, interop (NumPy, DLPack, the buffer protocol,
safetensors), the hand-written kernels (sort, scan, index, matmul) and the Array API's
uint64 accumulation. The op-table rows run over them in test_elementwise.py /
test_reductions.py / test_opencl.py (conftest's DTYPES holds them)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import DTYPES, np_dtype

UNSIGNED = (em.uint8, em.uint16, em.uint32, em.uint64)
NEW = (em.uint16, em.uint32, em.uint64)


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_dtype_objects(d):
    bits = int(d.name[4:])
    assert d.itemsize * 8 == bits == d.bits
    assert d.kind == "int" and not d.is_signed and not d.is_floating_point
    assert repr(d) == f"ember.{d.name}"
    from ember._dtypes import as_dtype
    assert as_dtype(d.name) is d and as_dtype(np.dtype(d.name)) is d
    assert as_dtype(getattr(np, d.name)) is d
    info = em.iinfo(d)
    assert (info.min, info.max, info.bits) == (0, 2 ** bits - 1, bits)
    assert em.iinfo(em.zeros(1, dtype=d)).max == info.max
    import ember.array_api as xp
    assert getattr(xp, d.name) is d and xp.isdtype(d, "unsigned integer")
    assert d.name in {k for k, v in xp.__array_namespace_info__().dtypes().items()}
    t = em.tensor([1, 2 ** bits - 1], dtype=d)
    assert f"dtype=ember.{d.name}" in repr(t) and str(2 ** bits - 1) in repr(t)


# the standard's table for the unsigned types (and ember's choice for uint64 + signed)
_TABLE = {
    ("uint8", "uint16"): "uint16", ("uint16", "uint32"): "uint32",
    ("uint32", "uint64"): "uint64", ("uint8", "uint64"): "uint64",
    ("uint8", "int8"): "int16", ("uint16", "int8"): "int32", ("uint16", "int16"): "int32",
    ("uint16", "int32"): "int32", ("uint32", "int8"): "int64", ("uint32", "int32"): "int64",
    ("uint32", "int64"): "int64", ("uint16", "int64"): "int64",
    ("uint64", "int8"): "float64", ("uint64", "int64"): "float64",   # NumPy's choice
    ("uint64", "float32"): "float32", ("uint16", "float16"): "float16",
    ("uint32", "bool"): "uint32", ("uint64", "complex64"): "complex64",
}


@pytest.mark.parametrize("pair", list(_TABLE), ids="-".join)
def test_promotion_table(pair):
    a, b = (getattr(em, n) for n in pair)
    want = getattr(em, _TABLE[pair])
    assert em.promote_types(a, b) is want and em.promote_types(b, a) is want
    x, y = em.ones(2, dtype=a), em.ones(2, dtype=b)
    assert (x + y).dtype is want
    if a.kind == b.kind == "int" and want.kind == "int":
        # where the standard defines the pair, NumPy agrees
        assert np.promote_types(a.name, b.name).name == want.name


@pytest.mark.parametrize("d", UNSIGNED, ids=lambda d: d.name)
def test_python_scalars_take_the_dtype_and_must_fit(d):
    top = 2 ** (d.itemsize * 8) - 1
    x = em.tensor([0, 1, top], dtype=d)
    assert (x + 1).dtype is d and (2 * x).dtype is d
    np.testing.assert_array_equal((x + 1).numpy(), x.numpy() + np_dtype(d).type(1))
    assert (x - 1).numpy()[0] == top      # wraps, as NumPy's arrays
    with pytest.raises(OverflowError, match=f"-1 is out of bounds for ember.{d.name}"):
        x + (-1)
    with pytest.raises(OverflowError, match=str(top + 1)):
        x * (top + 1)
    with pytest.raises(OverflowError, match="full"):
        em.full((2,), top + 1, dtype=d)
    assert em.full((2,), top, dtype=d).tolist() == [top, top]
    assert x[2].item() == top and isinstance(x[2].item(), int)


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_creation(d):
    np.testing.assert_array_equal(em.arange(5, dtype=d).numpy(), np.arange(5, dtype=d.name))
    np.testing.assert_array_equal(em.arange(1, 11, 3, dtype=d).numpy(),
                                  np.arange(1, 11, 3, dtype=d.name))
    for fn in ("zeros", "ones", "empty"):
        t = getattr(em, fn)((2, 3), dtype=d)
        assert t.dtype is d and t.shape == (2, 3)
    assert em.zeros(3, dtype=d).sum().item() == 0
    assert em.eye(3, dtype=d).numpy().dtype == np.dtype(d.name)
    r = em.randint(0, 2 ** 16, (1000,), dtype=d)
    assert r.dtype is d and 0 <= int(r.min()) and int(r.max()) < 2 ** 16


def _ints(d):
    info = np.iinfo(d.name)
    return st.integers(int(info.min), int(info.max))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_integer_casts_are_numpys(data):
    """Every integer dtype to every unsigned one and back: wraparound, bit for bit."""
    ints = [d for d in DTYPES if d.kind == "int"]
    src, dst = data.draw(st.sampled_from(ints)), data.draw(st.sampled_from(ints))
    if src not in NEW and dst not in NEW:
        dst = data.draw(st.sampled_from(NEW))
    a = np.array(data.draw(st.lists(_ints(src), max_size=12)), dtype=src.name)
    r = em.from_numpy(a).to(dst)
    assert r.dtype is dst
    np.testing.assert_array_equal(r.numpy(), a.astype(dst.name))
    np.testing.assert_array_equal(em.from_numpy(a).to(em.bool).numpy(), a.astype(bool))
    np.testing.assert_array_equal(em.from_numpy(a).to(em.float64).numpy(),
                                  a.astype(np.float64))
    np.testing.assert_array_equal(em.from_numpy(a).to(em.float32).numpy(),
                                  a.astype(np.float32))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_to_unsigned_casts_are_numpys(data):
    """float -> uint16/32/64 as NumPy's casts (on x86): truncation, negative values
    through int64 (so -1.5 becomes the dtype's maximum), uint64 from above 2^63."""
    src = data.draw(st.sampled_from([em.float16, em.float32, em.float64]))
    dst = data.draw(st.sampled_from(NEW))
    hi = {em.float16: 6e4, em.float32: 2.0 ** 63, em.float64: 1.8e19}[src]
    hi = hi if dst is em.uint64 else min(hi, 2.0 ** (dst.itemsize * 8 - 1))
    lo = -6e4 if src is em.float16 else -2.0 ** 31
    vals = st.floats(lo, hi, width=src.itemsize * 8, allow_nan=False)
    a = np.array(data.draw(st.lists(vals, max_size=12)), dtype=src.name)
    with np.errstate(invalid="ignore"):
        want = a.astype(dst.name)
    np.testing.assert_array_equal(em.from_numpy(a).to(dst).numpy(), want)
    # and back: uint -> float rounds as NumPy's
    with np.errstate(over="ignore"):     # uint64 -> float16 overflows to inf, as NumPy's
        back = want.astype(src.name)
    np.testing.assert_array_equal(em.from_numpy(want).to(src).numpy(), back)


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_numpy_dlpack_buffer_interop_share_memory(d):
    a = np.arange(6, dtype=d.name).reshape(2, 3)
    t = em.from_numpy(a)
    assert t.dtype is d
    a[0, 0] = 7
    assert t[0, 0].item() == 7                           # zero copy in
    n = t.numpy()
    assert n.dtype == np.dtype(d.name) and np.shares_memory(n, a)
    assert em.from_dlpack(a).dtype is d
    b = np.from_dlpack(t)
    assert b.dtype == np.dtype(d.name)
    b[1, 2] = 2 ** (d.itemsize * 8) - 1
    assert t[1, 2].item() == 2 ** (d.itemsize * 8) - 1   # zero copy out
    m = memoryview(t)
    assert m.format == {2: "H", 4: "I", 8: "Q"}[d.itemsize] and m.itemsize == d.itemsize
    assert em.asarray(np.asarray(m)).dtype is d


def test_safetensors_round_trip(tmp_path):
    tensors = {d.name: em.tensor([0, 5, 2 ** (d.itemsize * 8) - 1], dtype=d) for d in NEW}
    path = tmp_path / "u.safetensors"
    em.save(tensors, path)
    raw = path.read_bytes()
    header = raw[8:8 + int.from_bytes(raw[:8], "little")].decode("latin1")
    assert '"U16"' in header and '"U32"' in header and '"U64"' in header
    back = em.load(path)
    for k, t in tensors.items():
        assert back[k].dtype is t.dtype and back[k].tolist() == t.tolist()


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_sort_unique_scan_reductions(data):
    d = data.draw(st.sampled_from(NEW))
    a = np.array(data.draw(st.lists(_ints(d), min_size=1, max_size=20)), dtype=d.name)
    x = em.from_numpy(a)
    np.testing.assert_array_equal(em.sort(x).values.numpy(), np.sort(a, kind="stable"))
    np.testing.assert_array_equal(em.sort(x, descending=True).values.numpy(),
                                  np.sort(a)[::-1])
    np.testing.assert_array_equal(em.argsort(x, stable=True).numpy(),
                                  np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(em.unique(x).numpy(), np.unique(a))
    assert em.argmax(x).item() == int(np.argmax(a)) and em.argmin(x).item() == int(np.argmin(a))
    assert em.max(x).item() == int(a.max()) and em.min(x).item() == int(a.min())
    # the main namespace: PyTorch's int64 sums; wraparound modulo 2^64 in both
    assert em.sum(x).dtype is em.int64
    assert int(em.sum(x)) % 2 ** 64 == int(a.astype(np.uint64).sum(dtype=np.uint64))
    c = em.cumsum(x, 0)
    assert c.dtype is em.int64
    np.testing.assert_array_equal(c.numpy().astype(np.uint64),
                                  np.cumsum(a, dtype=np.uint64))
    np.testing.assert_array_equal(em.cumsum(x, 0, dtype=d).numpy(), np.cumsum(a, dtype=d.name))
    np.testing.assert_array_equal(em.cumprod(x, 0, dtype=d).numpy(),
                                  np.cumprod(a, dtype=d.name))
    s = em.searchsorted(em.from_numpy(np.sort(a)), x)
    np.testing.assert_array_equal(s.numpy(), np.searchsorted(np.sort(a), a))


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_indexing_and_scatter(d):
    a = np.arange(10, dtype=d.name) * np_dtype(d).type(3)
    x = em.from_numpy(a.copy())
    i = np.array([0, 3, 3, 9])
    np.testing.assert_array_equal(x[em.from_numpy(i)].numpy(), a[i])
    np.testing.assert_array_equal(x[x > 10].numpy(), a[a > 10])
    y = em.zeros(10, dtype=d).index_add(0, em.from_numpy(i), em.ones(4, dtype=d))
    want = np.zeros(10, d.name)
    np.add.at(want, i, 1)
    np.testing.assert_array_equal(y.numpy(), want)
    big = em.full((4,), 2 ** (d.itemsize * 8) - 1, dtype=d)
    z = em.ones(10, dtype=d).scatter_reduce(0, em.from_numpy(i), big, "prod")
    w = np.ones(10, d.name)
    np.multiply.at(w, i, np.full(4, 2 ** (d.itemsize * 8) - 1, d.name))
    np.testing.assert_array_equal(z.numpy(), w)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_matmul_wraps_as_numpy(data):
    d = data.draw(st.sampled_from(NEW))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    vals = st.lists(_ints(d), min_size=m * k + k * n, max_size=m * k + k * n)
    v = np.array(data.draw(vals), dtype=d.name)
    a, b = v[:m * k].reshape(m, k), v[m * k:].reshape(k, n)
    r = em.from_numpy(a) @ em.from_numpy(b).T.contiguous().T
    assert r.dtype is d
    np.testing.assert_array_equal(r.numpy(), a @ b)


@pytest.mark.parametrize("d", UNSIGNED, ids=lambda d: d.name)
def test_array_api_accumulates_unsigned_in_uint64(d):
    """The standard: sum / prod / cumulative_sum / cumulative_prod / trace of an unsigned
    x default to uint64 (ember's main namespace, as PyTorch, gives int64)."""
    import ember.array_api as xp
    top = 2 ** (d.itemsize * 8) - 1
    a = np.array([[top, 2], [3, top]], dtype=d.name)
    x = xp.asarray(a)
    for fn, ref in (("sum", np.sum), ("prod", np.prod)):
        r = getattr(xp, fn)(x)
        assert r.dtype is em.uint64, fn
        assert int(r) == int(ref(a, dtype=np.uint64)), fn
        assert getattr(xp, fn)(x, dtype=d).dtype is d
        assert getattr(em, fn)(em.from_numpy(a)).dtype is em.int64
    r = xp.cumulative_sum(x, axis=1)
    assert r.dtype is em.uint64
    np.testing.assert_array_equal(r.numpy(), np.cumsum(a, axis=1, dtype=np.uint64))
    r = xp.cumulative_prod(x, axis=0, include_initial=True)
    assert r.dtype is em.uint64
    np.testing.assert_array_equal(r.numpy()[1:], np.cumprod(a, axis=0, dtype=np.uint64))
    t = xp.linalg.trace(x)
    assert t.dtype is em.uint64 and int(t) == int(np.trace(a, dtype=np.uint64))
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int8)).dtype is em.int64


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor",
                                  "bitwise_left_shift", "bitwise_right_shift"])
def test_uint64_with_signed_in_integer_rows(name):
    """uint64 with a signed integer computes in float64 (NumPy's promotion), which the
    integer-only rows refuse naming the op, as NumPy's ufuncs refuse the pair."""
    x, y = em.ones(3, dtype=em.uint64), em.ones(3, dtype=em.int8)
    with pytest.raises(TypeError, match=name):
        getattr(em, name)(x, y)
    with pytest.raises(TypeError):
        getattr(np, {"bitwise_left_shift": "left_shift",
                     "bitwise_right_shift": "right_shift"}.get(name, name))(
            np.ones(3, np.uint64), np.ones(3, np.int8))
    assert getattr(em, name)(x, y.to(em.uint8)).dtype is em.uint64


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_abs_sign_negative_shifts(d):
    bits = d.itemsize * 8
    a = np.array([0, 1, 5, 2 ** bits - 1, 2 ** (bits - 1)], dtype=d.name)
    x = em.from_numpy(a)
    np.testing.assert_array_equal(em.abs(x).numpy(), a)
    np.testing.assert_array_equal(em.sign(x).numpy(), np.sign(a))
    np.testing.assert_array_equal((-x).numpy(), -a)
    np.testing.assert_array_equal((x >> 1).numpy(), a >> np_dtype(d).type(1))
    np.testing.assert_array_equal((x << 3).numpy(), a << np_dtype(d).type(3))
    np.testing.assert_array_equal((x // 3).numpy(), a // np_dtype(d).type(3))
    np.testing.assert_array_equal((x % 7).numpy(), a % np_dtype(d).type(7))
    np.testing.assert_array_equal(em.clamp(x, 1, 5).numpy(), np.clip(a, 1, 5))
    np.testing.assert_array_equal((x * x).numpy(), a * a)
    np.testing.assert_array_equal((~x).numpy(), ~a)
    assert (x > 2 ** (bits - 2)).tolist() == list(a > 2 ** (bits - 2))


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_on_the_device(d, device):
    """The device programs (ushort/uint/ulong on OpenCL, the same on CUDA) against NumPy:
    wrapping arithmetic, Python scalars, the casts, reductions, sort and cumsum."""
    bits = d.itemsize * 8
    a = np.array([0, 1, 5, 2 ** bits - 1, 2 ** (bits - 1), 7], dtype=d.name)
    x = em.from_numpy(a).to(device)
    one = np_dtype(d).type(1)
    np.testing.assert_array_equal((x * x - 1).cpu().numpy(), a * a - one)
    np.testing.assert_array_equal((x // 3 + x % 3).cpu().numpy(),
                                  a // np_dtype(d).type(3) + a % np_dtype(d).type(3))
    np.testing.assert_array_equal((x >> 1).cpu().numpy(), a >> one)
    assert int(x.max().cpu()) == int(a.max()) and int(x.argmin().cpu()) == int(a.argmin())
    assert int(x.sum().cpu()) % 2 ** 64 == int(a.sum(dtype=np.uint64))
    np.testing.assert_array_equal(em.sort(x).values.cpu().numpy(), np.sort(a))
    np.testing.assert_array_equal(em.cumsum(x, 0, dtype=d).cpu().numpy(),
                                  np.cumsum(a, dtype=d.name))
    f = np.array([-1.5, 0.5, 3.0, 2.0 ** (bits - 1)], np.float64)
    np.testing.assert_array_equal(em.from_numpy(f).to(device).to(d).cpu().numpy(),
                                  f.astype(d.name))
    np.testing.assert_array_equal(x.to(em.float32).cpu().numpy(), a.astype(np.float32))
    with pytest.raises(OverflowError):
        x + (-1)
