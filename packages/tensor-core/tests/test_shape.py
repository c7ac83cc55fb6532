"""Shape functions: joining, splitting, flipping, rolling, repeating, triangles,
meshgrid and the cumulative ops, with NumPy as the oracle over random shapes,
layouts (contiguous, transposed, strided, expanded, offset) and all dtypes.

Splits must be views (a write shows in the base); joins and the rest are new
tensors. Bad arguments raise IndexError (dims) or ValueError / TypeError with the
op's name in the message.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember._C import core as _core
from ember_testing import DTYPES, arrays, assert_close, layouts, np_dtype, realize, shapes


def _realize(vals, layout):
    t, expected = realize(vals, layout)
    if tuple(t.shape) != vals.shape:      # realize() makes 0-d "contiguous" values 1-d
        t = t.reshape(vals.shape)
    return t, expected


@st.composite
def tensor_and_values(draw, dtypes=DTYPES, min_dims=0, max_dims=3, shape=None, dtype=None):
    d = draw(st.sampled_from(dtypes)) if dtype is None else dtype
    sh = draw(shapes(min_dims=min_dims, max_dims=max_dims)) if shape is None else shape
    return _realize(draw(arrays(d, sh, small=True)), draw(layouts))


def axis(ndim):
    n = max(ndim, 1)
    return st.integers(-n, n - 1)


# --------------------------------------------------------------------- joining

@st.composite
def joinable(draw, min_dims=1):
    """2-4 tensors of random dtypes whose shapes differ only along one dim."""
    base = list(draw(shapes(min_dims=min_dims, max_dims=3)))
    d = draw(axis(len(base)))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        shape = list(base)
        if shape:
            shape[d] = draw(st.integers(0, 3))
        parts.append(draw(tensor_and_values(shape=tuple(shape))))
    return parts, d


@given(joinable())
def test_cat_promotes_and_matches_numpy(case):
    parts, d = case
    ts = [t for t, _ in parts]
    expected_dtype = em.result_type(*ts)
    arrays_ = [a.astype(np_dtype(expected_dtype)) for _, a in parts]
    expected = np.concatenate(arrays_, d)
    assert_close(em.cat(ts, d), expected, expected_dtype)
    assert_close(em.concat(ts, axis=d), expected, expected_dtype)
    assert_close(em.concatenate(tuple(ts), d), expected, expected_dtype)
    assert_close(em.concat(ts, axis=None), np.concatenate([a.reshape(-1) for a in arrays_]),
                 expected_dtype)


@given(tensor_and_values(min_dims=0), st.integers(1, 3), st.data())
def test_stack_family_matches_numpy(tv, n, data):
    t, a = tv
    ts, arrs = [t] * n, [a] * n
    d = data.draw(axis(a.ndim + 1))
    assert_close(em.stack(ts, d), np.stack(arrs, d), t.dtype)
    assert_close(em.stack(ts, axis=d), np.stack(arrs, axis=d), t.dtype)
    assert_close(em.hstack(ts), np.hstack(arrs), t.dtype)
    assert_close(em.vstack(ts), np.vstack(arrs), t.dtype)
    assert_close(em.row_stack(ts), np.vstack(arrs), t.dtype)
    assert_close(em.dstack(ts), np.dstack(arrs), t.dtype)
    if a.ndim <= 2:
        assert_close(em.column_stack(ts), np.column_stack(arrs), t.dtype)


def test_cat_edge_cases_and_errors():
    x = em.ones(2, 3, dtype=em.int32)
    legacy = em.zeros(0)                           # PyTorch skips 1-d empty tensors
    assert em.cat([x, legacy], 0).shape == (2, 3)
    assert em.cat([x, legacy], 0).dtype is em.float32
    assert em.cat([legacy, legacy]).shape == (0,)
    out = em.empty(4, 3, dtype=em.int32)
    assert em.cat([x, x], out=out) is out and out.tolist() == [[1] * 3] * 4
    with pytest.raises(ValueError, match=r"cat: tensors must have the same shape except in dim 0, "
                                         r"but item 0 has shape \(2, 3\) and item 1 has shape "
                                         r"\(2, 4\)"):
        em.cat([x, em.ones(2, 4)])
    with pytest.raises(ValueError, match="cat: tensors must have the same shape"):
        em.cat([x, em.ones(2, 3, 1)])
    with pytest.raises(ValueError, match="cat: zero-dimensional"):
        em.cat([em.tensor(1.0), em.tensor(2.0)])
    with pytest.raises(ValueError, match="cat: expected a non-empty sequence"):
        em.cat([])
    with pytest.raises(TypeError, match="cat: expected a sequence of tensors, got a single"):
        em.cat(x)
    with pytest.raises(TypeError, match="cat: .* item 1 is a list"):
        em.cat([x, [1, 2, 3]])
    with pytest.raises(ValueError, match="stack: expects tensors of equal shape"):
        em.stack([x, em.ones(3, 2)])


@given(shapes(min_dims=1, max_dims=3), st.data())
def test_bad_dims_raise_index_error_naming_op(shape, data):
    n = len(shape)
    bad = data.draw(st.one_of(st.integers(n, n + 10), st.integers(-n - 10, -n - 1)))
    x = em.zeros(shape)
    for op, call in [("cat", lambda: em.cat([x, x], bad)),
                     ("split", lambda: x.split(1, bad)),
                     ("chunk", lambda: x.chunk(2, bad)),
                     ("unbind", lambda: x.unbind(bad)),
                     ("flip", lambda: x.flip(bad)),
                     ("roll", lambda: x.roll(1, bad)),
                     ("cumsum", lambda: x.cumsum(bad)),
                     ("cumprod", lambda: x.cumprod(bad)),
                     ("diff", lambda: x.diff(dim=bad)),
                     ("tensor_split", lambda: x.tensor_split(2, bad)),
                     ("repeat_interleave", lambda: x.repeat_interleave(2, bad))]:
        with pytest.raises(IndexError, match=rf"{op}: dim {bad} is out of range"):
            call()
    with pytest.raises(IndexError, match=rf"stack: dim {bad + (1 if bad > 0 else -1)} is out"):
        em.stack([x, x], bad + (1 if bad > 0 else -1))


# --------------------------------------------------------------------- splitting

@given(tensor_and_values(min_dims=1), st.data())
def test_split_chunk_tensor_split_unbind_are_views_matching_numpy(tv, data):
    t, a = tv
    d = data.draw(axis(a.ndim))
    n = a.shape[d]
    size = data.draw(st.integers(1, 4))
    parts = t.split(size, d)
    expected = np.split(a, list(range(size, n, size)), d) if n else [a]
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert_close(p, e, t.dtype)
        assert p._shares_storage(t)
    sizes = data.draw(st.lists(st.integers(0, n), max_size=3).filter(lambda s: sum(s) <= n))
    sizes = sizes + [n - sum(sizes)]
    for p, e in zip(em.split(t, sizes, d), np.split(a, np.cumsum(sizes)[:-1], d)):
        assert_close(p, e, t.dtype)
    k = data.draw(st.integers(1, 5))
    for p, e in zip(t.tensor_split(k, d), np.array_split(a, k, d)):
        assert_close(p, e, t.dtype)
    points = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=3))
    for p, e in zip(em.tensor_split(t, points, d), np.array_split(a, points, d)):
        assert_close(p, e, t.dtype)
    chunks = t.chunk(k, d)
    step = -(-n // k) if n else 0
    assert [c.shape[d] for c in chunks] == (
        [min(step, n - i) for i in range(0, n, step)] if n else [0] * k)
    for u, e in zip(t.unbind(d), np.moveaxis(a, d, 0)):
        assert_close(u, e, t.dtype)
        assert u._shares_storage(t)
    assert len(em.unstack(t, axis=d)) == n


def test_split_writes_through_and_errors():
    x = em.zeros(4, 2)
    a, b = x.split(2)
    b[0, 0] = 5.0
    assert x[2, 0].item() == 5.0
    for s in x.unbind(1):
        s.fill_(1.0)
    assert x.tolist() == [[1.0, 1.0]] * 4
    with pytest.raises(ValueError, match=r"split: sizes \(1, 1\) must .* add up to 4"):
        x.split([1, 1])
    with pytest.raises(ValueError, match="split: split_size must be positive"):
        x.split(0)
    with pytest.raises(ValueError, match="chunk: chunks must be positive"):
        x.chunk(0)
    with pytest.raises(ValueError, match="hsplit: dim 1 of size 2 does not split evenly"):
        em.hsplit(x, 3)
    assert [p.shape for p in em.vsplit(x, 2)] == [(2, 2), (2, 2)]
    assert [p.shape for p in em.dsplit(em.zeros(1, 1, 4), [1])] == [(1, 1, 1), (1, 1, 3)]
    with pytest.raises(ValueError, match="split: cannot split a 0-d tensor"):
        em.tensor(1.0).split(1)


# --------------------------------------------------------------------- reordering

@st.composite
def dims_subset(draw, ndim):
    ds = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
    return tuple(d - ndim if draw(st.booleans()) else d for d in ds)


@given(tensor_and_values(), st.data())
def test_flip_and_friends_match_numpy(tv, data):
    t, a = tv
    ds = data.draw(dims_subset(a.ndim))
    r = t.flip(ds)
    assert_close(r, np.flip(a, ds) if ds else a, t.dtype)
    assert not r._shares_storage(t)                # flip copies (x[::-1] is the view)
    assert_close(em.flip(t), np.flip(a), t.dtype)
    if a.ndim >= 2:
        assert_close(t.fliplr(), np.fliplr(a), t.dtype)
        k = data.draw(st.integers(-5, 5))
        two = tuple(data.draw(st.lists(st.integers(0, a.ndim - 1), min_size=2, max_size=2,
                                       unique=True)))
        assert_close(t.rot90(k, two), np.rot90(a, k, two), t.dtype)
    if a.ndim >= 1:
        assert_close(t.flipud(), np.flipud(a), t.dtype)


@given(tensor_and_values(), st.data())
def test_roll_matches_numpy(tv, data):
    t, a = tv
    shift = data.draw(st.integers(-7, 7))
    assert_close(t.roll(shift), np.roll(a, shift), t.dtype)
    if a.ndim:
        ds = data.draw(dims_subset(a.ndim))
        shifts = [data.draw(st.integers(-7, 7)) for _ in ds]
        assert_close(t.roll(shifts, ds), np.roll(a, shifts, ds) if ds else a, t.dtype)
        d = data.draw(axis(a.ndim))
        assert_close(em.roll(t, shift=shift, axis=d), np.roll(a, shift, d), t.dtype)
    with pytest.raises(ValueError, match="roll: shifts .* and dims .* must have the same length"):
        t.roll((1, 2), (0,))


# --------------------------------------------------------------------- repeating

@given(tensor_and_values(), st.data())
def test_repeat_tile_repeat_interleave_match_numpy(tv, data):
    t, a = tv
    reps = data.draw(st.lists(st.integers(0, 3), min_size=a.ndim, max_size=a.ndim + 2))
    if reps:
        assert_close(t.repeat(*reps), np.tile(a, reps), t.dtype)
        assert_close(t.repeat(reps), np.tile(a, reps), t.dtype)
    treps = data.draw(st.lists(st.integers(0, 3), max_size=a.ndim + 1))
    assert_close(t.tile(treps), np.tile(a, treps), t.dtype)
    r = data.draw(st.integers(0, 3))
    assert_close(t.repeat_interleave(r), np.repeat(a, r), t.dtype)
    assert_close(em.repeat(t, r), np.repeat(a, r), t.dtype)
    if a.ndim:
        d = data.draw(axis(a.ndim))
        per = data.draw(st.lists(st.integers(0, 3), min_size=a.shape[d], max_size=a.shape[d]))
        assert_close(t.repeat_interleave(em.tensor(per, dtype=em.int64), d),
                     np.repeat(a, per, d), t.dtype)
        assert_close(em.repeat(t, r, axis=d), np.repeat(a, r, d), t.dtype)


def test_repeat_errors_and_one_argument_form():
    assert em.repeat_interleave(em.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    x = em.zeros(2, 3)
    with pytest.raises(ValueError, match="repeat: 1 repeats given for a tensor of 2 dims"):
        x.repeat(2)
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        x.repeat(1, -1)
    with pytest.raises(ValueError, match="repeat_interleave: repeats has shape"):
        x.repeat_interleave(em.tensor([1, 2]), 1)
    with pytest.raises(ValueError, match="repeat_interleave: repeats must be non-negative"):
        x.repeat_interleave(em.tensor([1, -1, 0]), 1)


# --------------------------------------------------------------------- triangles, grids

@given(tensor_and_values(min_dims=2, max_dims=4), st.integers(-4, 4))
def test_tril_triu_match_numpy(tv, k):
    t, a = tv
    assert_close(t.tril(k), np.tril(a, k), t.dtype)
    assert_close(em.triu(t, k), np.triu(a, k), t.dtype)
    y = t.clone()
    assert y.tril_(k) is y
    assert_close(y, np.tril(a, k), t.dtype)


def test_tri_indices_and_errors():
    for r, c, k in [(3, 4, 0), (4, 3, 1), (3, 3, -1), (0, 2, 0)]:
        assert_close(em.tril_indices(r, c, k), np.stack(np.tril_indices(r, k, c)).astype(np.int64))
        assert_close(em.triu_indices(r, c, k), np.stack(np.triu_indices(r, k, c)).astype(np.int64))
    with pytest.raises(ValueError, match="tril: needs a tensor of at least 2 dims"):
        em.tril(em.zeros(3))


@given(st.lists(tensor_and_values(min_dims=0, max_dims=1), min_size=1, max_size=3),
       st.sampled_from(["ij", "xy"]))
def test_meshgrid_matches_numpy(tvs, indexing):
    ts = [t for t, _ in tvs]
    expected = np.meshgrid(*[a for _, a in tvs], indexing=indexing)
    for r, e, t in zip(em.meshgrid(*ts, indexing=indexing), expected, ts):
        assert_close(r, e, t.dtype)
    for r, e, t in zip(em.meshgrid(ts, indexing=indexing), expected, ts):
        assert_close(r, e, t.dtype)
    with pytest.raises(ValueError, match="meshgrid: indexing must be"):
        em.meshgrid(*ts, indexing="yx")


# --------------------------------------------------------------------- cumulative

def _np_scan(fn, a, d, dtype=None):
    if dtype is None:
        dtype = np.int64 if a.dtype.kind in "biu" else a.dtype
    with np.errstate(all="ignore"):
        return fn(a.astype(np.float64) if a.dtype.kind == "f" else a.astype(dtype), axis=d) \
            .astype(dtype)


@given(tensor_and_values(min_dims=1), st.data())
def test_cumsum_cumprod_match_numpy(tv, data):
    t, a = tv
    d = data.draw(axis(a.ndim))
    r = t.cumsum(d)
    expected_dtype = em.int64 if t.dtype.kind in ("bool", "int") else t.dtype
    tol = {"rtol": 1e-2, "atol": 1e-2} if t.dtype is em.float16 else {}
    assert_close(r, _np_scan(np.cumsum, a, d), expected_dtype, **tol)
    small = np.clip(a, -2, 2) if a.dtype.kind in "iuf" else a
    ts = em.tensor(small)
    assert_close(ts.cumprod(d), _np_scan(np.cumprod, small, d), expected_dtype, **tol)
    assert_close(em.cumsum(t, dim=d, dtype=em.float64), np.cumsum(a.astype(np.float64), d),
                 em.float64, **tol)
    assert_close(t.cumsum(), _np_scan(np.cumsum, a.reshape(-1), 0), expected_dtype, **tol)
    if t.dtype is not em.bool:
        y = t.clone()
        y.cumsum_(d)
        assert_close(y, _np_scan(np.cumsum, a, d).astype(a.dtype), t.dtype, **tol)


def test_cumulative_sum_array_api():
    x = em.tensor([1, 2, 3], dtype=em.int8)
    assert em.cumulative_sum(x).dtype is em.int64
    assert em.cumulative_sum(x, include_initial=True).tolist() == [0, 1, 3, 6]
    assert em.cumulative_prod(x, dtype=em.int8).tolist() == [1, 2, 6]
    with pytest.raises(ValueError, match="axis is required"):
        em.cumulative_sum(em.zeros(2, 2))


@given(tensor_and_values(min_dims=1, dtypes=DTYPES), st.data())
def test_diff_matches_numpy(tv, data):
    t, a = tv
    d = data.draw(axis(a.ndim))
    n = data.draw(st.integers(0, 3))
    with np.errstate(all="ignore"):
        expected = np.diff(a, n, d)
    assert_close(t.diff(n, d), expected, t.dtype)
    if a.dtype.kind != "b":
        shape = list(a.shape)
        shape[d] = 1
        pre = np.ones(shape, a.dtype)
        with np.errstate(all="ignore"):
            expected = np.diff(a, 1, d, prepend=pre, append=a)
        assert_close(t.diff(1, d, prepend=em.tensor(pre), append=t), expected, t.dtype)


def test_diff_errors():
    with pytest.raises(ValueError, match="diff: needs a tensor of at least 1 dim"):
        em.tensor(1.0).diff()
    with pytest.raises(ValueError, match="diff: order n must be non-negative"):
        em.zeros(3).diff(-1)


# --------------------------------------------------------------------- autograd records

def test_cat_flip_cumsum_record_their_attrs():
    seen = []

    def recorder(op, inputs, output, attrs):
        seen.append((op, inputs, attrs))
        output._set_autograd(("node", op), True)

    prev = _core.set_recorder(recorder)
    try:
        x = em.ones(2, 3, requires_grad=True)
        y = em.zeros(4, 3)
        em.cat([x, y])
        assert seen[-1][0] == "cat" and seen[-1][2] == {"dim": 0, "sizes": (2, 4)}
        x.flip(-1)
        assert seen[-1][0] == "flip" and seen[-1][2] == {"dims": (1,)}
        x.cumsum(1)
        assert seen[-1][0] == "cumsum" and seen[-1][2]["dim"] == 1
        parts = x.split(1)
        assert [op for op, _, _ in seen[-2:]] == ["narrow", "narrow"] and len(parts) == 2
    finally:
        _core.set_recorder(prev)


# issue 16 item 12: flip (and permute) take PyTorch's `dims` keyword -------------------------

@given(tensor_and_values(), st.data())
def test_issue16_item12_flip_dims_keyword_matches_numpy(tv, data):
    t, a = tv
    ds = data.draw(dims_subset(a.ndim))
    expected = np.flip(a, ds) if ds else a
    assert_close(em.flip(t, dims=ds), expected, t.dtype)
    assert_close(t.flip(dims=ds), expected, t.dtype)
    assert_close(t.flip(dims=list(ds)), expected, t.dtype)
    if ds:
        assert_close(t.flip(*ds), expected, t.dtype)
        assert_close(em.flip(t, axis=ds), expected, t.dtype)
    if a.ndim:
        perm = tuple(data.draw(st.permutations(range(a.ndim))))
        assert_close(em.permute(t, dims=perm), np.transpose(a, perm), t.dtype)
        assert_close(t.permute(dims=perm), np.transpose(a, perm), t.dtype)


def test_issue16_item12_flip_dims_given_twice_or_bad(device):
    x = em.arange(6.0, device=device).reshape(2, 3)
    assert em.flip(x, dims=(0,)).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert x.flip(dims=1).tolist() == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    with pytest.raises(TypeError, match="flip: give the dims once"):
        em.flip(x, 0, dims=(1,))
    with pytest.raises(TypeError, match="flip: give the dims once"):
        x.flip(dims=0, axis=1)
    with pytest.raises(TypeError, match="permute: give the dims once"):
        x.permute(1, 0, dims=(1, 0))
    with pytest.raises(IndexError, match="flip"):
        em.flip(x, dims=(2,))
    with pytest.raises(ValueError, match="flip: dim appears more than once"):
        em.flip(x, dims=(0, -2))
