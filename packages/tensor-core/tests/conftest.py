"""Shared fixtures and Hypothesis strategies for ember's tensor-core tests.

The suite runs with pytest's ``--import-mode=importlib``, so test modules cannot
``import conftest`` (the workspace's root conftest.py would answer). This module
registers itself as ``ember_testing`` instead:

    from ember_testing import DTYPES, shapes, tensors, to_numpy, assert_close

What is here:
- ``device``: the device under test: cpu, opencl and cuda in turn (each skipped with
  the reason where it is not usable), or ``EMBER_TEST_DEVICE`` alone.
- dtype tables (ember <-> NumPy), the expected-promotion rules written out
  independently of ember (``expected_promote``, ``expected_weak``).
- strategies: ``shapes`` (0-d and empty included), ``broadcastable_shapes``,
  ``elements(dtype, domain)`` (values an op-table row's ``domain`` allows),
  ``layouts`` and ``realize`` (the same values as a contiguous, transposed,
  step-sliced, expanded (zero strides) or offset tensor), and ``tensors`` which
  draws all of that at once.
- ``to_numpy`` and ``assert_close`` (dtype-aware tolerances, NaN-equal).
"""
from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember as em

# ----------------------------------------------------------------------------- device

# Every device type, the CPU always; EMBER_TEST_DEVICE=<device> runs only that one.
DEVICE_NAMES = [os.environ["EMBER_TEST_DEVICE"]] if os.environ.get("EMBER_TEST_DEVICE") \
    else ["cpu", "opencl", "cuda"]
_REASONS = {}


def _usable(name):
    try:
        d = em.device(name)
        em.zeros(2, device=d).cpu()
        return d
    except (RuntimeError, ValueError, NotImplementedError, ImportError) as e:
        _REASONS[name] = str(e)
        return None


@pytest.fixture(scope="session", params=DEVICE_NAMES)
def device(request):
    """The device the op tests run on: each of cpu, opencl (where a device exists) and
    cuda (where a GPU exists) in turn, or EMBER_TEST_DEVICE alone."""
    d = _usable(request.param)
    if d is None:
        pytest.skip(f"device {request.param!r} is not available here: "
                    f"{_REASONS.get(request.param)}")
    return d


def other_devices(current):
    """Devices besides `current` that work here (for the device-mixing tests)."""
    found = []
    for name in ("cpu", "cuda", "opencl"):
        d = _usable(name)
        if d is not None and d != current:
            found.append(d)
    return found


# ----------------------------------------------------------------------------- dtypes

DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
               "float64", "uint16", "uint32", "uint64")
DTYPES = tuple(getattr(em, n) for n in DTYPE_NAMES)     # the real dtypes
INT_DTYPES = tuple(d for d in DTYPES if d.kind == "int")
FLOAT_DTYPES = tuple(d for d in DTYPES if d.kind == "float")
COMPLEX_DTYPES = (em.complex64, em.complex128)
ALL_DTYPES = DTYPES + COMPLEX_DTYPES
KIND_ORDER = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def np_dtype(d):
    return np.dtype(d.name)


def em_dtype(npd):
    return getattr(em, np.dtype(npd).name)


def kind_of(d):
    return d.kind


def expected_promote(a, b):
    """The Array API's promotion table, written out here independently of ember,
    plus ember's documented choices where the standard leaves a pair open:
    bool with X gives X, and mixed int/float gives the float dtype."""
    if a is b:
        return a
    if a.kind == "bool":
        return b
    if b.kind == "bool":
        return a
    if a.kind == "complex" or b.kind == "complex":
        # the complex dtype whose parts hold both; integers join as that complex
        part = max(x.itemsize // (2 if x.kind == "complex" else 1)
                   for x in (a, b) if x.kind in ("float", "complex"))
        return em.complex128 if part == 8 else em.complex64
    if a.kind == "float" and b.kind == "float":
        return a if a.itemsize >= b.itemsize else b
    if a.kind == "float" or b.kind == "float":
        return a if a.kind == "float" else b
    # two integers: the standard's table (unsigned + signed -> signed of twice the width)
    sa, sb = a.is_signed, b.is_signed
    if sa == sb:
        return a if a.itemsize >= b.itemsize else b
    bits = max(a.itemsize * 8 if sa else a.itemsize * 16, b.itemsize * 8 if sb else b.itemsize * 16)
    # uint64 with a signed type: left open by the standard; ember follows NumPy (float64)
    return em.float64 if bits > 64 else {8: em.int8, 16: em.int16, 32: em.int32, 64: em.int64}[bits]


def scalar_kind(s):
    if isinstance(s, bool):
        return "bool"
    if isinstance(s, int):
        return "int"
    if isinstance(s, complex):
        return "complex"
    return "float"


def expected_weak(dtype, scalar):
    """A tensor of `dtype` meets a Python scalar: the scalar is weak, so the tensor's
    dtype wins unless the scalar is of a higher kind (then int64 / the default float)."""
    k = scalar_kind(scalar)
    if KIND_ORDER[k] <= KIND_ORDER[dtype.kind]:
        return dtype
    if k == "complex":   # float32 * 1j is complex64, float64 * 1j complex128, int * 1j
        return em.complex128 if dtype is em.float64 or (   # the default complex
            dtype.kind != "float" and em.get_default_dtype() is em.float64) else em.complex64
    return em.int64 if k == "int" else em.get_default_dtype()


def row_compute_dtype(row, dtypes, scalars=()):
    """The dtype a table row computes in for tensor operands of `dtypes` and Python
    scalars `scalars`, by the rules above (not by asking ember)."""
    d = None
    for x in dtypes:
        d = x if d is None else expected_promote(d, x)
    for s in scalars:
        d = expected_weak(d, s) if d is not None else {
            "bool": em.bool, "int": em.int64, "float": em.get_default_dtype(),
            "complex": em.complex64}[scalar_kind(s)]
    if row.promote == "float" and d.kind in ("bool", "int"):
        d = em.get_default_dtype()
    return d


def row_supports(row, compute):
    return compute.kind in row.body


def row_out_dtype(row, compute):
    if row.out == "bool":
        return em.bool
    if row.out == "real" and compute.kind == "complex":
        return em.float32 if compute is em.complex64 else em.float64
    return compute


def row_input_dtypes(row):
    """Every dtype a row accepts as input on its own: the kinds it has a body for, and
    for promote="float" rows also bool and ints (computed in the default float)."""
    if row.promote == "float":
        return DTYPES + (COMPLEX_DTYPES if "complex" in row.body else ())
    return tuple(d for d in ALL_DTYPES if d.kind in row.body)


# ----------------------------------------------------------------------------- shapes

@functools.cache
def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Small shapes, 0-d and empty (a zero side) included."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


@functools.cache
def broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4):
    """`num_shapes` shapes that broadcast together (0-d and empty included); returns
    hypothesis' BroadcastableShapes (input_shapes, result_shape)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=0,
                                             max_dims=max_dims, min_side=0, max_side=max_side)


def dims_for(ndim, allow_none=True):
    """A reduction's dim argument for a tensor of `ndim` dims: None, an int (negative
    too), or a tuple of distinct dims (negative too)."""
    n = max(ndim, 1)
    one = st.integers(-n, n - 1)
    options = [one]
    if allow_none:
        options.append(st.none())
    if ndim >= 1:
        options.append(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)
                       .flatmap(lambda ds: st.tuples(*[st.sampled_from([d, d - ndim])
                                                       for d in ds])))
    return st.one_of(*options)


def normalize_dims(dim, ndim):
    """numpy's axis for an ember dim argument."""
    if dim is None:
        return None
    if ndim == 0:
        return None
    if isinstance(dim, tuple):
        return tuple(d % ndim for d in dim)
    return dim % ndim


# ----------------------------------------------------------------------------- values

def _int_range(d):
    info = np.iinfo(np_dtype(d))
    return int(info.min), int(info.max)


@functools.cache
def elements(d, domain="all", small=False):
    """A strategy of Python values valid for dtype d under an op-table `domain`:
    "all", "positive", "unit", "ge1", "nonzero", "shift" (0 <= b < bits)."""
    if d.kind == "bool":
        return st.just(True) if domain in ("positive", "ge1", "nonzero") else st.booleans()
    if d.kind == "int":
        lo, hi = _int_range(d)
        rng = {"all": (-10, 10), "positive": (1, 5), "unit": (-1, 1), "ge1": (1, 10),
               "nonzero": (-10, 10), "shift": (0, d.itemsize * 8 - 1)}[domain]
        s = st.integers(max(lo, rng[0]), min(hi, rng[1]))
        if domain in ("all", "nonzero") and not small:
            s = st.one_of(s, s, st.integers(lo, hi), st.sampled_from([lo, hi, lo + 1, hi - 1]))
        if domain == "nonzero":
            s = s.filter(lambda v: v != 0)
        return s
    width = d.itemsize * 8
    rng = {"all": (-10.0, 10.0), "positive": (1 / 64, 4.0), "unit": (-0.9375, 0.9375),
           "ge1": (1.0, 10.0), "nonzero": (-10.0, 10.0), "shift": (0.0, 8.0)}[domain]
    s = st.floats(rng[0], rng[1], width=width, allow_subnormal=False)
    if domain == "nonzero":
        s = s.filter(lambda v: abs(v) >= 1e-2)
    return s


_RANGES = {  # domain -> (int range, float range) before clipping to the dtype
    "all": ((-10, 10), (-10.0, 10.0)),
    "positive": ((1, 5), (1 / 64, 4.0)),
    "unit": ((-1, 1), (-0.9375, 0.9375)),
    "ge1": ((1, 10), (1.0, 10.0)),
    "nonzero": ((-10, 10), (-10.0, 10.0)),
    "shift": ((0, 63), (0.0, 8.0)),
}


def random_values(rng, d, shape, domain="all", small=False):
    """NumPy values of dtype d and `shape` in `domain`, from a NumPy Generator: mostly
    numbers of magnitude up to 10, many below 1, exact integers and halves (ties for
    round / floor / remainder), zeros, and for integers also the dtype's full range
    and extremes (unless `small`)."""
    npd = np_dtype(d)
    if d.kind == "complex":
        # re + i im, each drawn as a real of the part's dtype: complex functions are
        # defined on the whole plane, so only a divisor's domain ("nonzero") holds
        part = em.float32 if d is em.complex64 else em.float64
        dom = "nonzero" if domain == "nonzero" else "all"
        re = random_values(rng, part, shape, dom, small)
        im = random_values(rng, part, shape, "all", small)
        return np.asarray(re + 1j * im.astype(np.float64), npd)
    if d.kind == "bool":
        if domain in ("positive", "ge1", "nonzero"):
            return np.ones(shape, bool)
        return rng.random(shape) < 0.5
    pick = rng.random(shape)
    if d.kind == "int":
        lo, hi = _int_range(d)
        a, b = _RANGES[domain][0]
        if domain == "shift":
            b = d.itemsize * 8 - 1
        v = rng.integers(max(lo, a), min(hi, b), size=shape, endpoint=True)
        if domain in ("all", "nonzero") and not small:
            full = rng.integers(lo, hi, size=shape, endpoint=True, dtype=npd)
            extremes = rng.choice(np.array([lo, hi, lo + 1, hi - 1], npd), size=shape)
            v = np.where(pick < 0.15, full, np.where(pick < 0.22, extremes, v.astype(npd)))
        v = np.asarray(v).astype(npd)
        if domain == "nonzero":
            v = np.where(v == 0, npd.type(1), v)
        return np.asarray(v, npd)
    a, b = _RANGES[domain][1]
    v = rng.uniform(a, b, size=shape)
    v = np.where(pick < 0.25, rng.uniform(max(a, -1.0), min(b, 1.0), size=shape), v)
    v = np.where((pick >= 0.25) & (pick < 0.45), np.clip(np.round(v * 2) / 2, a, b), v)
    if domain == "all":
        v = np.where(pick > 0.96, 0.0, v)
    v = np.asarray(v).astype(npd)
    if domain == "nonzero":
        v = np.where(np.abs(v) < 1e-2, npd.type(1), v)
    return np.asarray(v, npd)


@functools.cache
def arrays(d, shape, domain="all", small=False):
    """A strategy of NumPy arrays (dtype d, `shape`) in `domain`. The values come from
    a drawn seed (far cheaper than drawing each element); shapes, dtypes and layouts
    are drawn (and shrunk) by Hypothesis itself."""
    shape = tuple(shape)
    return st.integers(0, 2 ** 32 - 1).map(
        lambda seed: random_values(np.random.default_rng(seed), d, shape, domain, small))


# ----------------------------------------------------------------------------- layouts

LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "offset")
layouts = st.sampled_from(LAYOUTS)


def realize(values, layout, device=None):
    """(tensor, expected): an ember tensor on `device` laid out as `layout` whose
    elements are `expected` (= `values`, except that "expanded" repeats one slice of
    `values` along a dim with stride 0, the way expand/broadcast_to does).

    contiguous  a fresh tensor
    transposed  all dims reversed in memory (the .T of a contiguous tensor)
    strided     every other element of a larger tensor, along every dim, at an offset
    expanded    a size-1 dim (or a new leading dim) expanded with stride 0
    offset      contiguous, but starting part-way into its storage
    """
    values = np.asarray(values)
    shape = values.shape
    nd = values.ndim

    def put(a):
        return em.from_numpy(np.array(a, order="C", copy=True)).to(device)

    if layout == "transposed" and nd >= 2:
        t = put(values.T).T
    elif layout == "strided" and nd >= 1:
        big = np.zeros(tuple(2 * s + 1 for s in shape), values.dtype)
        big[tuple(slice(1, 2 * s + 1, 2) for s in shape)] = values
        b = put(big)
        strides = [2 * s for s in b.stride()]
        t = b.as_strided(shape, strides, sum(b.stride()))
        assert not t.is_contiguous() or values.size <= 1
    elif layout == "expanded":
        if nd and any(s > 1 for s in shape):
            d = next(i for i, s in enumerate(shape) if s > 1)
            part = np.take(values, [0], axis=d)
            values = np.broadcast_to(part, shape)
            t = put(part).expand(*shape)
        else:
            # a new leading dim of size 1, expanded to 1: zero stride, same values
            t = put(values.reshape((1,) + shape)).expand(1, *shape).squeeze(0) if nd else \
                put(values.reshape(1)).expand(1).reshape(())
    elif layout == "offset":
        flat = values.reshape(-1)
        pad = np.zeros(3, values.dtype)
        t = put(np.concatenate([pad, flat, pad])).narrow(0, 3, flat.size).view(*shape) \
            if nd else put(np.concatenate([pad, flat, pad])).narrow(0, 3, 1).view(())
    else:
        t = put(values)
    return t, np.array(values, copy=True)


@st.composite
def tensors(draw, dtype=None, shape=None, domain="all", device=None, layout=None,
            dtypes=DTYPES, small=False):
    """(tensor, expected numpy values) of a drawn dtype, shape and layout."""
    d = draw(st.sampled_from(dtypes)) if dtype is None else dtype
    sh = draw(shapes()) if shape is None else shape
    lay = draw(layouts) if layout is None else layout
    vals = draw(arrays(d, sh, domain, small))
    return realize(vals, lay, device)


# ----------------------------------------------------------------------------- checks

def to_numpy(t):
    """A NumPy copy of an ember tensor's values (any device, any layout)."""
    if t.device.type != "cpu":
        t = t.cpu()
    return np.array(np.asarray(t), copy=True)


TOLERANCES = {  # dtype name -> (rtol, atol)
    "float16": (4e-3, 4e-3),
    "float32": (2e-5, 2e-6),
    "float64": (1e-12, 1e-13),
    "complex64": (2e-5, 2e-6),      # norm-wise, of the complex difference
    "complex128": (1e-12, 1e-13),
}


def assert_close(actual, expected, dtype=None, *, rtol=None, atol=None, msg=""):
    """ember tensor `actual` equals numpy `expected`: same shape, same dtype (`dtype`,
    default expected's), values exact for bool/int and within the dtype's tolerance
    for floats (NaN equals NaN, inf equals inf)."""
    d = dtype if dtype is not None else em_dtype(np.asarray(expected).dtype)
    assert isinstance(actual, em.Tensor), f"{msg}: expected a Tensor, got {type(actual)}"
    assert actual.dtype == d, f"{msg}: dtype {actual.dtype!r}, expected {d!r}"
    assert tuple(actual.shape) == np.shape(expected), \
        f"{msg}: shape {tuple(actual.shape)}, expected {np.shape(expected)}"
    a = to_numpy(actual)
    with np.errstate(all="ignore"):   # float64 -> float16 overflow is inf, on purpose
        e = np.asarray(expected).astype(np_dtype(d))
    if d.kind == "complex":   # norm-wise: |a - e| <= atol + rtol |e| (inf, NaN by part)
        r, at = TOLERANCES[d.name]
        for part in (np.real, np.imag):
            pa, pe = part(a).astype(np.float64), part(e).astype(np.float64)
            np.testing.assert_array_equal(np.isnan(pa), np.isnan(pe), err_msg=f"{msg} (NaN)")
            inf = np.isinf(pe)
            np.testing.assert_array_equal(pa[inf], pe[inf], err_msg=f"{msg} (inf)")
        fin = np.isfinite(e)
        np.testing.assert_array_less(
            np.abs(a[fin].astype(np.complex128) - e[fin].astype(np.complex128)),
            (at if atol is None else atol) + (r if rtol is None else rtol)
            * np.abs(e[fin].astype(np.complex128)) + 1e-300, err_msg=msg)
        return
    if d.kind != "float":
        if not np.array_equal(a, e):
            bad = np.argwhere(a != e)[:5].tolist()
            raise AssertionError(f"{msg}: values differ at {bad}:\n actual {a}\n expected {e}")
        return
    r, at = TOLERANCES[d.name]
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                               rtol=r if rtol is None else rtol,
                               atol=at if atol is None else atol, equal_nan=True, err_msg=msg)


def fewer_examples(divisor):
    """max_examples of the active profile, divided (for the heavier tests)."""
    from hypothesis import settings
    return max(5, settings().max_examples // divisor)


# Test modules import this module's helpers as `ember_testing` (see the docstring).
sys.modules.setdefault("ember_testing", sys.modules[__name__])
