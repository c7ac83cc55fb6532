"""dtypes: promotion (the Array API standard, checked against NumPy where the standard
defines a pair), Python scalars (weak), casting, finfo/iinfo, the default dtype.

Where the standard leaves a pair open ember documents its choice, and these tests
pin it down:
- mixed integer / floating point: the floating point dtype wins, whatever its size
  (int64 + float16 -> float16, PyTorch's rule; NumPy would give float64);
- bool with any X: X;
- a Python int meeting a bool tensor: int64; a Python float meeting a bool or integer
  tensor: the default float dtype (float32, NumPy's would be float64);
- otherwise a Python scalar takes the tensor's dtype (`x * 2` keeps x's dtype).
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember_testing import (
    DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    arrays,
    expected_promote,
    expected_weak,
    layouts,
    np_dtype,
    realize,
    to_numpy,
)

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
PAIRS = [pytest.param(a, b, id=f"{a.name}-{b.name}") for a in DTYPES for b in DTYPES]


def _array_api_defines(a, b):
    """The standard's promotion table covers bool+bool and pairs of one kind."""
    return a.kind == b.kind


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_matches_numpy_where_the_standard_defines_it(a, b):
    r = em.promote_types(a, b)
    assert r is em.promote_types(b, a), "promotion must be symmetric"
    assert r is expected_promote(a, b)
    assert em.result_type(a, b) is r
    if _array_api_defines(a, b):
        assert r.name == np.result_type(np_dtype(a), np_dtype(b)).name


@pytest.mark.parametrize("a,b", PAIRS)
def test_binary_ops_compute_in_the_promoted_dtype(a, b, device):
    x = em.ones(2, dtype=a, device=device)
    y = em.ones(2, dtype=b, device=device)
    r = expected_promote(a, b)
    assert (x * y).dtype is r
    assert em.result_type(x, y) is r
    assert em.maximum(x, y).dtype is r
    assert (x == y).dtype is em.bool
    if r.kind != "bool":
        assert (x + y).dtype is r
        assert (x - y).dtype is r
    # true division and the float-only functions: ints and bools become the default float
    assert (x / y).dtype is (r if r.kind == "float" else em.get_default_dtype())
    assert em.atan2(x, y).dtype is (r if r.kind == "float" else em.float32)


def test_mixed_kind_choices_are_documented():
    assert em.promote_types(em.int64, em.float16) is em.float16
    assert em.promote_types(em.uint8, em.float32) is em.float32
    assert em.promote_types(em.bool, em.int8) is em.int8
    assert em.promote_types(em.bool, em.float16) is em.float16
    assert em.promote_types(em.uint8, em.int8) is em.int16
    assert em.promote_types(em.uint8, em.int64) is em.int64


SCALARS = [True, 3, -2, 2.5]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_python_scalars_are_weak(dtype, scalar, device):
    x = em.ones(3, dtype=dtype, device=device)
    expected = expected_weak(dtype, scalar)
    assert em.result_type(x, scalar) is expected
    assert em.result_type(scalar, x) is expected
    if dtype.is_signed or not (isinstance(scalar, int) and scalar < 0):
        assert (x * scalar).dtype is expected
        assert (scalar * x).dtype is expected
    # where NumPy 2 (NEP 50: weak scalars too) agrees: a scalar of the same or a lower kind
    if NUMPY2 and (isinstance(scalar, bool) or scalar_kind_le(scalar, dtype)):
        assert expected.name == np.result_type(np_dtype(dtype), scalar).name


def scalar_kind_le(s, d):
    order = {"bool": 0, "int": 1, "float": 2}
    k = "bool" if isinstance(s, bool) else "int" if isinstance(s, int) else "float"
    return order[k] <= order[d.kind]


def test_result_type_of_scalars_alone_and_errors():
    assert em.result_type(1, 2) is em.int64
    assert em.result_type(1.0) is em.float32
    assert em.result_type(True, False) is em.bool
    assert em.result_type(em.int8, 1.0) is em.float32
    assert em.result_type("float64", em.int8) is em.float64
    assert em.result_type(np.float16, em.int8) is em.float16
    with pytest.raises(ValueError, match="result_type"):
        em.result_type()
    assert em.result_type("bfloat16") is em.bfloat16     # a dtype since issue 21
    assert em.result_type("uint16", em.int8) is em.int32
    with pytest.raises(TypeError):
        em.result_type("uint128")


_KIND = {"bool": 0, "int": 1, "float": 2}


@pytest.mark.parametrize("a,b", PAIRS)
def test_can_cast(a, b):
    """ember.can_cast is PyTorch's: never to a lower kind (bool < int < float; signed
    and unsigned are one kind). casting="safe" is NumPy's within one kind, and the
    Array API namespace's can_cast is the standard's: promote_types(a, b) is b."""
    assert em.can_cast(a, b) == (_KIND[a.kind] <= _KIND[b.kind])
    if np_dtype(a).kind not in "iu" or np_dtype(b).kind not in "iu":
        assert em.can_cast(a, b) == np.can_cast(np_dtype(a), np_dtype(b), "same_kind")
    assert em.can_cast(em.zeros(1, dtype=a), b) == em.can_cast(a, b)
    assert em.can_cast(a, b, "unsafe")
    if a.kind == b.kind:
        assert em.can_cast(a, b, "safe") == np.can_cast(np_dtype(a), np_dtype(b), "safe")


def test_array_api_can_cast_follows_the_standard():
    """The standard's can_cast, as array-api-strict implements it: a cast across its
    promotion lattices (bool -> int8, int8 -> float32) is refused; within one it is
    allowed when promoting the two gives the target."""
    xp = pytest.importorskip("ember.array_api")
    strict = pytest.importorskip("array_api_strict")
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64",
             "complex64", "complex128", "uint16", "uint32", "uint64"]     # the dtypes both have
    wrong = [f"can_cast({a}, {b}) = {xp.can_cast(getattr(em, a), getattr(em, b))}"
             for a in names for b in names
             if xp.can_cast(getattr(em, a), getattr(em, b))
             != strict.can_cast(getattr(strict, a), getattr(strict, b))]
    assert not wrong, f"ember.array_api: {wrong}"


# issue 16 item 13: isdtype, whose tuple form called the module's own `any` -----------------

_KINDS = {  # the standard's kind names -> the dtypes of each, written out
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "integral": {"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"},
    "real floating": {"float16", "float32", "float64"},
    "complex floating": {"complex64", "complex128"},
    "numeric": {"uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                "uint16", "uint32", "uint64",
                "complex64", "complex128"},
}


@pytest.mark.parametrize("dtype", DTYPES + (em.complex64, em.complex128), ids=lambda d: d.name)
def test_issue16_item13_isdtype_every_kind_and_tuples(dtype):
    import itertools
    xp = pytest.importorskip("ember.array_api")
    for kind, names in _KINDS.items():
        assert xp.isdtype(dtype, kind) is (dtype.name in names), kind
    assert em.isdtype(dtype, "real floating") is (dtype.kind == "float")
    for pair in itertools.combinations(_KINDS, 2):
        assert xp.isdtype(dtype, pair) is any(dtype.name in _KINDS[k] for k in pair), pair
    assert xp.isdtype(dtype, ("real floating", "integral")) is (dtype.kind in ("int", "float"))
    assert xp.isdtype(dtype, ()) is False
    assert xp.isdtype(dtype, dtype) is True
    assert xp.isdtype(dtype, (em.float32, "bool")) is (dtype.name in ("float32", "bool"))
    info = xp.__array_namespace_info__()
    assert set(info.dtypes(kind=("integral", "bool"))) == _KINDS["integral"] | {"bool"}


def test_issue16_item13_isdtype_rejects_unknown_kinds():
    xp = pytest.importorskip("ember.array_api")
    with pytest.raises(ValueError, match="isdtype: unknown kind 'integer'"):
        xp.isdtype(em.int32, "integer")
    with pytest.raises(ValueError, match="isdtype: unknown kind 'floating'"):
        xp.isdtype(em.float32, ("bool", "floating"))
    with pytest.raises(TypeError, match="isdtype: kind must be a dtype, a kind name"):
        xp.isdtype(em.float32, ["real floating"])
    with pytest.raises(TypeError, match="isdtype: dtype must be an ember dtype"):
        xp.isdtype("float32", "real floating")


def test_issue16_item13_array_api_has_no_builtin_shadowed_inside_a_function():
    """The module defines sum, any, all, max, min, ...: no function of it may call
    those names meaning Python's builtins (the isdtype bug)."""
    import ast
    import builtins
    import inspect
    xp = pytest.importorskip("ember.array_api")
    tree = ast.parse(inspect.getsource(xp))
    shadowing = {n for n in vars(xp) if not n.startswith("_") and hasattr(builtins, n)}
    assert {"any", "all", "sum", "max", "min"} <= shadowing
    calls = [(fn.name, node.func.id) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
             for node in ast.walk(fn) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id in shadowing]
    assert not calls, f"ember.array_api calls its own {calls}, shadowing Python's builtins"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dtype_objects(dtype):
    npd = np_dtype(dtype)
    assert dtype.itemsize == npd.itemsize
    assert dtype.bits == 8 * npd.itemsize
    assert dtype.is_floating_point == (npd.kind == "f")
    assert dtype.is_complex is False
    assert repr(dtype) == f"ember.{dtype.name}"
    assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert isinstance(dtype, em.dtype)
    assert em.zeros(2, dtype=dtype.name).dtype is dtype
    assert em.zeros(2, dtype=npd).dtype is dtype
    assert em.zeros(2, dtype=npd.type).dtype is dtype
    if dtype.kind == "int":
        assert dtype.is_signed == (npd.kind == "i")


def test_dtype_aliases_and_python_types():
    assert em.half is em.float16 and em.float is em.float32 and em.double is em.float64
    assert em.short is em.int16 and em.int is em.int32 and em.long is em.int64
    assert em.zeros(1, dtype=float).dtype is em.float32
    assert em.zeros(1, dtype=int).dtype is em.int64
    assert em.zeros(1, dtype=bool).dtype is em.bool
    assert em.zeros(1, dtype="double").dtype is em.float64


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_finfo_matches_numpy(dtype):
    f, n = em.finfo(dtype), np.finfo(np_dtype(dtype))
    assert f.bits == n.bits
    assert f.eps == float(n.eps)
    assert f.max == float(n.max) and f.min == float(n.min)
    assert f.tiny == float(n.tiny) == f.smallest_normal
    assert f.resolution == pytest.approx(float(n.resolution), rel=1e-3)
    assert f.dtype is dtype
    assert em.finfo(em.zeros(1, dtype=dtype)).dtype is dtype


def test_finfo_default_and_errors():
    assert em.finfo().dtype is em.get_default_dtype()
    with pytest.raises(TypeError, match="finfo"):
        em.finfo(em.int32)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_iinfo_matches_numpy(dtype):
    i, n = em.iinfo(dtype), np.iinfo(np_dtype(dtype))
    assert (i.min, i.max, i.bits) == (int(n.min), int(n.max), n.bits)
    with pytest.raises(TypeError, match="iinfo"):
        em.iinfo(em.float32)


def test_set_default_dtype_changes_float_creation_and_promotion():
    assert em.get_default_dtype() is em.float32
    try:
        em.set_default_dtype(em.float64)
        assert em.tensor([1.5]).dtype is em.float64
        assert em.zeros(2).dtype is em.float64
        assert em.sqrt(em.tensor([4])).dtype is em.float64
        assert (em.tensor([1]) * 0.5).dtype is em.float64
        assert em.arange(0.0, 1.0, 0.5).dtype is em.float64
        assert em.result_type(1.0) is em.float64
    finally:
        em.set_default_dtype(em.float32)
    assert em.tensor([1.5]).dtype is em.float32
    with pytest.raises(TypeError, match="set_default_dtype"):
        em.set_default_dtype(em.int32)


def _castable_values(src, dst):
    """Values of src whose conversion to dst NumPy and C both define: in range, and
    no NaN / inf going into integers."""
    if src.kind == "bool":
        return np.array([False, True, True, False])
    lo, hi = -100, 100
    if dst.kind == "int" or src.kind == "int":
        for d in (src, dst):
            if d.kind == "int":
                info = np.iinfo(np_dtype(d))
                lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    if src.kind == "int":
        return np.array([lo, hi, 0, 1, (lo + hi) // 2], np_dtype(src))
    vals = [lo, hi, 0.0, -0.0, 0.5, -0.5, 1.75, -1.75, 99.9]
    vals = [v for v in vals if lo <= v <= hi]
    if dst.kind != "int":
        vals += [np.inf, -np.inf, np.nan, 65504.0 if src.itemsize == 2 else 1e30]
    return np.array(vals, np_dtype(src))


@pytest.mark.parametrize("src,dst", PAIRS)
def test_casts_match_numpy(src, dst, device):
    vals = _castable_values(src, dst)
    t = em.from_numpy(vals.copy()).to(device)
    r = t.to(dst)
    assert r.dtype is dst
    with np.errstate(all="ignore"):
        expected = vals.astype(np_dtype(dst))
    got = to_numpy(r)
    assert np.array_equal(got, expected, equal_nan=dst.kind == "float"), (src, dst, got, expected)
    # the spellings of the same conversion
    assert t.type(dst).dtype is dst
    assert t.astype(dst).dtype is dst


@given(data=st.data())
def test_cast_of_non_contiguous_inputs(data, device):
    src = data.draw(st.sampled_from(DTYPES))
    dst = data.draw(st.sampled_from(DTYPES))
    vals = data.draw(arrays(src, (3, 4), "all", True))
    if src.kind == "float" and dst.kind == "int":
        vals = np.trunc(vals)
        if not dst.is_signed:
            vals = np.abs(vals)
    t, v = realize(vals, data.draw(layouts), device)
    with np.errstate(all="ignore"):
        expected = v.astype(np_dtype(dst))
    assert np.array_equal(to_numpy(t.to(dst)), expected)


def test_dtype_methods(device):
    x = em.tensor([1.7, -2.2, 0.0], device=device)
    for name, d in (("float", em.float32), ("double", em.float64), ("half", em.float16),
                    ("int", em.int32), ("long", em.int64), ("short", em.int16),
                    ("bool", em.bool), ("byte", em.uint8), ("char", em.int8)):
        r = getattr(x.abs(), name)()
        assert r.dtype is d, name
    assert x.long().tolist() == [1, -2, 0]
    assert x.bool().tolist() == [True, True, False]
    assert x.to(em.float32) is x
    assert x.to(em.float32, copy=True) is not x
    assert x.type() == "ember.float32"
    assert x.type_as(em.zeros(1, dtype=em.int16, device=device)).dtype is em.int16


def test_tensor_dtype_inference():
    assert em.tensor([1, 2]).dtype is em.int64
    assert em.tensor([1.0]).dtype is em.float32
    assert em.tensor([True, False]).dtype is em.bool
    assert em.tensor([1, 2.5]).dtype is em.float32
    assert em.tensor([True, 2]).dtype is em.int64
    assert em.tensor(3).dtype is em.int64
    assert em.tensor(np.float64(1.5)).dtype is em.float64   # NumPy scalars too, as in PyTorch
    assert em.tensor(np.array([1.5])).dtype is em.float64   # NumPy arrays keep theirs
    assert em.full((2,), 7).dtype is em.int64
    assert em.full((2,), 7.0).dtype is em.float32
    assert em.full((2,), True).dtype is em.bool
    assert em.arange(3).dtype is em.int64
    assert em.arange(3.0).dtype is em.float32
