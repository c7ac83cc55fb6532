"""Creation against NumPy: tensor / as_tensor / asarray / from_numpy (zero copy),
zeros / ones / full / empty, arange / linspace / eye, and the *_like family."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import DTYPES, arrays, assert_close, fewer_examples, np_dtype, shapes, to_numpy


@given(data=st.data())
def test_tensor_from_nested_lists(data, device):
    d = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(shapes(max_dims=3))
    vals = data.draw(arrays(d, shape, "all", True))
    nested = vals.tolist()
    vals = np.array(nested, np_dtype(d))   # a (0, 3) array's tolist() is [], shape (0,)
    t = em.tensor(nested, dtype=d, device=device)
    assert_close(t, vals, d)
    # without a dtype: bool, int64 or the default float, from the Python values
    inferred = em.tensor(nested, device=device)
    if vals.size:
        kind = {"b": em.bool, "i": em.int64, "u": em.int64, "f": em.float32}[vals.dtype.kind]
        assert inferred.dtype is kind
    # tuples instead of lists
    assert_close(em.tensor(_tuples(nested), dtype=d, device=device), vals, d)


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_from_numpy_is_zero_copy_for_any_layout(data):
    d = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    a = data.draw(arrays(d, shape, "all", True))
    # non-contiguous NumPy views: reversed, stepped, transposed
    key = tuple(slice(None, None, data.draw(st.sampled_from([1, 2, -1, -2]))) for _ in shape)
    v = a[key]
    if data.draw(st.booleans()):
        v = v.T
    t = em.from_numpy(v)
    assert t.dtype.name == v.dtype.name and tuple(t.shape) == v.shape
    assert np.array_equal(to_numpy(t), v)
    assert t.stride() == tuple(s // v.itemsize for s in v.strides)
    # writes are seen both ways
    t.fill_(1)
    assert (v == 1).all()
    v[...] = 0
    assert not to_numpy(t).any()
    assert np.shares_memory(v, a)


def test_from_numpy_shares_and_keeps_the_array_alive():
    a = np.arange(6, dtype=np.float32)
    t = em.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    del a
    import gc
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    a = np.zeros((2, 3))
    t = em.from_numpy(a)
    t.add_(1)
    assert a.sum() == 6.0
    n = t.numpy()
    assert np.shares_memory(n, a)


@pytest.mark.parametrize("fn", ["tensor", "as_tensor", "asarray"])
def test_tensor_as_tensor_asarray_copy_semantics(fn):
    a = np.arange(4, dtype=np.float64)
    t = getattr(em, fn)(a)
    assert t.dtype is em.float64
    a[0] = 100
    shares = t.tolist()[0] == 100
    assert shares == (fn != "tensor"), f"{fn} {'shared' if shares else 'copied'} the array"
    # from another tensor
    x = em.ones(3)
    y = getattr(em, fn)(x)
    assert (y is x or y.untyped_storage() is x.untyped_storage()) == (fn != "tensor")
    z = getattr(em, fn)(x, dtype=em.float64)
    assert z.dtype is em.float64 and z.untyped_storage() is not x.untyped_storage()


def test_asarray_copy_flags():
    x = em.ones(3)
    assert em.asarray(x, copy=True).untyped_storage() is not x.untyped_storage()
    assert em.asarray(x, copy=False) is x
    with pytest.raises(ValueError, match="asarray.*copy"):
        em.asarray(x, dtype=em.float64, copy=False)
    assert em.asarray([1, 2]).tolist() == [1, 2]
    assert em.asarray(3.5).shape == ()


def test_tensor_from_tensor_is_a_detached_copy():
    x = em.ones(3)
    y = em.tensor(x)
    assert y.untyped_storage() is not x.untyped_storage()
    y.add_(1)
    assert x.tolist() == [1.0] * 3
    assert em.tensor(em.ones(2), requires_grad=True).requires_grad


@given(shape=shapes(max_dims=3), dtype=st.sampled_from(DTYPES))
@settings(max_examples=fewer_examples(2))
def test_zeros_ones_full_empty(shape, dtype, device):
    for fn, npfn in (("zeros", np.zeros), ("ones", np.ones)):
        assert_close(getattr(em, fn)(shape, dtype=dtype, device=device),
                     npfn(shape, np_dtype(dtype)), dtype)
        assert_close(getattr(em, fn)(*shape, dtype=dtype, device=device),
                     npfn(shape, np_dtype(dtype)), dtype)
    value = {"bool": True, "int": 7, "float": -2.5}[dtype.kind]
    assert_close(em.full(shape, value, dtype=dtype, device=device),
                 np.full(shape, value, np_dtype(dtype)), dtype)
    e = em.empty(shape, dtype=dtype, device=device)
    assert tuple(e.shape) == shape and e.dtype is dtype and e.is_contiguous()
    assert em.empty(*shape, dtype=dtype).shape == shape
    assert em.zeros(em.Size(shape)).shape == shape
    assert em.zeros(list(shape)).dtype is em.float32


@given(dtype=st.sampled_from(DTYPES), n=st.integers(0, 3000), step=st.sampled_from([1, 3]),
       value=st.sampled_from([0, 1, -0.0, -2.5, 7]))
@settings(max_examples=fewer_examples(4))
def test_fill_contiguous_and_strided(dtype, n, step, value):
    # contiguous tensors take a block-copy path (4 KiB pattern blocks, memset for
    # zero bytes), strided ones the element loop: both must write every element
    if dtype.kind != "float":
        value = int(value)
    t = em.full((n * step,), 9, dtype=dtype)
    t[::step].fill_(value)
    want = np.full(n * step, 9, np_dtype(dtype))
    want[::step] = value
    np.testing.assert_array_equal(to_numpy(t), want)
    if dtype.kind == "float" and n:
        assert np.signbit(to_numpy(t)[0]) == np.signbit(np.float64(value))


def test_freed_mid_sized_blocks_are_reused():
    # blocks from 128 KiB are kept and handed out again, warm (glibc maps or trims
    # them, and each step of a training loop would fault its pages in afresh)
    em._C.core.empty_cache()
    a = em.empty(300_000, dtype=em.uint8)
    page = a.data_ptr() & ~4095
    del a
    assert em._C.core.cached_bytes() >= 300_000
    b = em.empty(290_000, dtype=em.uint8)
    assert b.data_ptr() & ~4095 == page
    del b
    em._C.core.empty_cache()
    assert em._C.core.cached_bytes() == 0


def test_a_steps_worth_of_large_blocks_is_reused():
    # a training step frees more than 64 large blocks at once (a 6-layer GPT's
    # activations): all of them are kept, and the next step's requests of the same
    # sizes take every one back
    em._C.core.empty_cache()
    sizes = [200_000 + 1000 * (i % 3) for i in range(100)] + [1_500_000]
    blocks = [em.empty(n, dtype=em.uint8) for n in sizes]
    del blocks
    assert em._C.core.cached_bytes() >= sum(sizes)
    again = [em.empty(n, dtype=em.uint8) for n in sizes]
    assert em._C.core.cached_bytes() == 0
    del again
    em._C.core.empty_cache()


@given(src_dtype=st.sampled_from(DTYPES), dtype=st.one_of(st.none(), st.sampled_from(DTYPES)),
       shape=shapes(max_dims=3))
@settings(max_examples=fewer_examples(2))
def test_like_family(src_dtype, dtype, shape, device):
    x = em.ones(shape, dtype=src_dtype, device=device).T
    out = dtype or src_dtype
    for fn, npv in (("zeros_like", 0), ("ones_like", 1)):
        r = getattr(em, fn)(x, dtype=dtype)
        assert_close(r, np.full(x.shape, npv, np_dtype(out)), out)
        assert r.untyped_storage() is not x.untyped_storage()
    v = {"bool": True, "int": 3, "float": 1.5}[out.kind]
    assert_close(em.full_like(x, v, dtype=dtype), np.full(x.shape, v, np_dtype(out)), out)
    e = em.empty_like(x, dtype=dtype)
    assert e.shape == x.shape and e.dtype is out and e.device == x.device


ARANGE_ARGS = [(5,), (0,), (-3,), (2, 9), (9, 2), (9, 2, -2), (0, 10, 3), (0.5, 3.2, 0.7),
               (-1.0, 1.0, 0.25), (1, 2, 0.1), (10, 0, -1.5), (0, 1, 1 / 3), (3, 3)]


@pytest.mark.parametrize("args", ARANGE_ARGS, ids=str)
def test_arange_matches_numpy(args, device):
    expected = np.arange(*args)
    t = em.arange(*args, device=device)
    out = em.int64 if all(isinstance(a, int) for a in args) else em.float32
    assert t.dtype is out
    assert tuple(t.shape) == expected.shape, f"arange{args}: {t.shape} vs {expected.shape}"
    assert_close(t, expected.astype(np_dtype(out)), out, rtol=1e-6, atol=1e-6)
    for d in (em.float64, em.int32, em.int16):
        r = em.arange(*args, dtype=d, device=device)
        assert r.dtype is d and r.shape == expected.shape
        if d is em.float64:
            np.testing.assert_allclose(to_numpy(r), expected, rtol=1e-12, atol=1e-12)


@given(start=st.integers(-50, 50), end=st.integers(-50, 50), step=st.integers(-7, 7).filter(bool))
def test_arange_integer_property(start, end, step):
    assert em.arange(start, end, step).tolist() == np.arange(start, end, step).tolist()


@given(start=st.floats(-100, 100), end=st.floats(-100, 100), steps=st.integers(0, 50))
@settings(max_examples=fewer_examples(2))
def test_linspace_matches_numpy(start, end, steps, device):
    expected = np.linspace(start, end, steps)
    t = em.linspace(start, end, steps, device=device)
    assert t.dtype is em.float32 and tuple(t.shape) == expected.shape
    np.testing.assert_allclose(to_numpy(t), expected, rtol=1e-5, atol=1e-4)
    t64 = em.linspace(start, end, steps, dtype=em.float64, device=device)
    np.testing.assert_allclose(to_numpy(t64), expected, rtol=1e-12, atol=1e-12)
    if steps:
        assert t64.tolist()[0] == float(np.float64(start))
    if steps > 1:
        assert t64.tolist()[-1] == float(np.float64(end))


@pytest.mark.parametrize("n,m", [(0, None), (1, None), (3, None), (2, 5), (5, 2), (0, 3), (4, 0)])
@pytest.mark.parametrize("dtype", [None, em.int64, em.bool, em.float16])
def test_eye_matches_numpy(n, m, dtype, device):
    out = dtype or em.float32
    assert_close(em.eye(n, m, dtype=dtype, device=device), np.eye(n, m, dtype=np_dtype(out)), out)


def test_logspace_and_scalar_tensor():
    np.testing.assert_allclose(to_numpy(em.logspace(0, 2, 3)), np.logspace(0, 2, 3), rtol=1e-6)
    s = em.scalar_tensor(3)
    assert s.shape == () and s.dtype is em.float32 and s.item() == 3.0


def test_empty_strided():
    t = em.empty_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2)
    t.fill_(1)
    assert t.tolist() == [[1.0] * 3] * 2


def test_creation_from_scalars_and_special_values():
    assert em.tensor(2.5).shape == () and em.tensor(2.5).item() == 2.5
    assert em.tensor([]).shape == (0,) and em.tensor([]).dtype is em.float32
    assert em.tensor([[], []]).shape == (2, 0)
    t = em.tensor([math.inf, -math.inf, math.nan])
    assert t.tolist()[:2] == [math.inf, -math.inf] and math.isnan(t.tolist()[2])
    assert em.tensor([2 ** 63 - 1, -2 ** 63]).tolist() == [2 ** 63 - 1, -2 ** 63]
    assert em.tensor([1.5, 2.5], dtype=em.int32).tolist() == [1, 2]
    assert em.tensor(np.int16(7)).tolist() == 7
    assert em.tensor([np.float32(1.5), 2]).dtype is em.float32
    assert em.tensor([em.tensor(1.0), em.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert em.tensor(np.array(5)).shape == ()


@pytest.mark.parametrize("value", [np.array(1.5), np.float64(1.5), np.int32(3),
                                   np.array(3, dtype=np.int16), np.bool_(True),
                                   np.float32(0.25), np.array(7, dtype=np.uint8)])
def test_numpy_scalars_and_0d_arrays_keep_their_dtype(value):
    # em.tensor(np.float64(x)) is float64 and np.int32 stays int32, as in PyTorch
    for fn in (em.tensor, em.as_tensor, em.asarray):
        t = fn(value)
        assert t.shape == () and t.dtype.name == np.asarray(value).dtype.name
        assert t.item() == value.item()
    assert em.tensor(value, dtype=em.float32).dtype is em.float32


@pytest.mark.parametrize("data,want", [
    ([np.float64(1)], "float64"), ([np.int32(1)], "int32"), ([[np.float64(1)], [2]], "float64"),
    ([np.int32(1), 2.5], "float32"), ([1, np.float16(2)], "float16"),
    ([np.int64(3), np.float32(1)], "float32"), ([np.int32(1), np.float64(2)], "float64"),
    ([np.uint8(200), 1], "int64"), ([1, 2.5], "float32"), ([True, 1], "int64"),
    ([np.float32(1), True], "float32"),
])
def test_lists_of_numpy_scalars_keep_their_dtype(data, want):
    # PyTorch's rule: the promotion of every element's dtype, a NumPy scalar's own and
    # int64 / the default float / bool for Python scalars
    assert em.tensor(data).dtype.name == want
    assert em.tensor([em.tensor(1, dtype=em.int16), em.tensor(2, dtype=em.int16)]).dtype \
        is em.int16
    assert em.tensor([em.tensor(1, dtype=em.int16), 3]).dtype is em.int64


def test_tensor_from_lists_checks_ranges_and_raggedness():
    # rectangular lists of Python numbers take a fast path (walked level by level):
    # it must check the same things as the element-by-element one
    with pytest.raises(OverflowError, match=r"tensor: value 9223372036854775808 is out of "
                                            r"range for ember.int64"):
        em.tensor([1, 2 ** 63])
    with pytest.raises(OverflowError, match="tensor: value 256 is out of range for ember.uint8"):
        em.tensor([[1], [256]], dtype=em.uint8)
    with pytest.raises(ValueError, match="tensor: ragged nested sequence"):
        em.tensor([[[1, 2]], [[3]]])
    with pytest.raises(ValueError, match="tensor: cannot convert nan to ember.int32"):
        em.tensor([1.0, float("nan")], dtype=em.int32)
    with pytest.raises(TypeError, match="tensor: unsupported element"):
        em.tensor([1, __import__("decimal").Decimal(2)])   # a Number, not a complex one
    assert em.tensor([1, 2j]).dtype is em.complex64            # issue 19
    assert em.tensor([(1, 2), [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert em.tensor([em.tensor([1.5, 2.0]), [3, 4]]).tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert em.tensor([[np.int8(1), 2], [3, 4]]).dtype is em.int64
