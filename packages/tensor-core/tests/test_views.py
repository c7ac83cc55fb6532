"""Views never copy: a random chain of view ops (narrow, transpose, permute, expand,
view/reshape, squeeze/unsqueeze, diagonal, unfold, T/mT, movedim, flatten) is checked
against the same chain on NumPy, and a write through the final view must land in
the base exactly at the elements the view reads. The base holds element ids
(1..n), so the view's values say which base elements it aliases."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import fewer_examples, shapes, to_numpy

sliding_window_view = np.lib.stride_tricks.sliding_window_view


def _np_narrow(a, d, start, length):
    if start < 0:
        start += a.shape[d]
    idx = [slice(None)] * a.ndim
    idx[d] = slice(start, start + length)
    return a[tuple(idx)]


def _np_squeeze(a, dim):
    if dim is None:
        return np.squeeze(a)
    if a.ndim == 0:
        return a
    return np.squeeze(a, dim) if a.shape[dim] == 1 else a


def _np_unfold(a, d, size, step):
    w = sliding_window_view(a, size, axis=d)
    idx = [slice(None)] * w.ndim
    idx[d] = slice(None, None, step)
    return w[tuple(idx)]


def _factor_shape(draw, shape):
    """A new shape with the same number of elements: merge two neighbouring dims,
    split one into two factors, flatten, or add size-1 dims; maybe with one -1."""
    shape = list(shape)
    n = int(np.prod(shape)) if shape else 1
    kind = draw(st.sampled_from(["merge", "split", "flat", "ones", "same"]))
    if kind == "merge" and len(shape) >= 2:
        i = draw(st.integers(0, len(shape) - 2))
        new = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
    elif kind == "split" and shape:
        i = draw(st.integers(0, len(shape) - 1))
        s = shape[i]
        divisors = [f for f in range(1, s + 1) if s % f == 0] if s else [0, 1]
        f = draw(st.sampled_from(divisors))
        new = shape[:i] + ([f, s // f] if s else [f, 0]) + shape[i + 1:]
    elif kind == "flat":
        new = [n]
    elif kind == "ones":
        i = draw(st.integers(0, len(shape)))
        new = shape[:i] + [1] + shape[i:]
    else:
        new = shape
    if new and n and draw(st.booleans()):
        new = list(new)
        new[draw(st.integers(0, len(new) - 1))] = -1
    return tuple(new)


@st.composite
def view_step(draw, shape):
    """(description, ember function, numpy function) of one view op valid for shape."""
    nd = len(shape)
    options = ["unsqueeze", "reshape", "view", "squeeze"]
    if nd >= 1:
        options += ["transpose", "permute", "narrow", "unfold", "movedim", "flatten", "T"]
    if nd >= 2:
        options += ["diagonal", "mT"]
    if any(s == 1 for s in shape) or nd < 3:
        options += ["expand"]
    op = draw(st.sampled_from(options))
    if op == "transpose":
        a, b = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
        return f"transpose({a}, {b})", lambda t: t.transpose(a, b), lambda x: np.swapaxes(x, a, b)
    if op == "permute":
        p = draw(st.permutations(range(nd)))
        return f"permute({p})", lambda t: t.permute(*p), lambda x: np.transpose(x, p)
    if op == "narrow":
        d = draw(st.integers(-nd, nd - 1))
        size = shape[d]
        start = draw(st.integers(-size, size - 1)) if size else 0
        s0 = start + size if start < 0 else start
        length = draw(st.integers(0, size - s0))
        return (f"narrow({d}, {start}, {length})", lambda t: t.narrow(d, start, length),
                lambda x: _np_narrow(x, d % nd, start, length))
    if op == "unsqueeze":
        d = draw(st.integers(-nd - 1, nd))
        return f"unsqueeze({d})", lambda t: t.unsqueeze(d), lambda x: np.expand_dims(x, d)
    if op == "squeeze":
        d = draw(st.one_of(st.none(), st.integers(-max(nd, 1), max(nd, 1) - 1)))
        return (f"squeeze({d})", (lambda t: t.squeeze()) if d is None else (lambda t: t.squeeze(d)),
                lambda x: _np_squeeze(x, None if d is None else (d % nd if nd else 0)))
    if op == "diagonal":
        a = draw(st.integers(-nd, nd - 1))
        b = draw(st.integers(-nd, nd - 1).filter(lambda v: v % nd != a % nd))
        off = draw(st.integers(-3, 3))
        return (f"diagonal({off}, {a}, {b})", lambda t: t.diagonal(off, a, b),
                lambda x: np.diagonal(x, off, a, b))
    if op == "unfold":
        d = draw(st.integers(-nd, nd - 1))
        size = draw(st.integers(0, shape[d]))
        step = draw(st.integers(1, 3))
        return (f"unfold({d}, {size}, {step})", lambda t: t.unfold(d, size, step),
                lambda x: _np_unfold(x, d % nd, size, step))
    if op == "movedim":
        a, b = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
        return f"movedim({a}, {b})", lambda t: t.movedim(a, b), lambda x: np.moveaxis(x, a, b)
    if op == "flatten":
        a = draw(st.integers(0, nd - 1))
        b = draw(st.integers(a, nd - 1))
        new = tuple(shape[:a]) + (int(np.prod(shape[a:b + 1])),) + tuple(shape[b + 1:])
        return f"flatten({a}, {b})", lambda t: t.flatten(a, b), lambda x: x.reshape(new)
    if op == "T":
        return "T", lambda t: t.T, lambda x: x.T
    if op == "mT":
        return "mT", lambda t: t.mT, lambda x: np.swapaxes(x, -2, -1)
    if op == "expand":
        lead = draw(st.integers(0, 1)) if nd < 3 else 0
        target = [draw(st.integers(0, 3))] * lead + [
            draw(st.integers(0, 3)) if s == 1 else draw(st.sampled_from([s, -1])) for s in shape]
        np_target = tuple(target[:lead]) + tuple(s if t == -1 else t
                                                 for s, t in zip(shape, target[lead:]))
        return (f"expand({target})", lambda t: t.expand(*target),
                lambda x: np.broadcast_to(x, np_target))
    new = _factor_shape(draw, shape)
    if op == "view":
        return f"view({new})", lambda t: t.view(*new), lambda x: x.reshape(new)
    return f"reshape({new})", lambda t: t.reshape(new), lambda x: x.reshape(new)


def _shares(a, b):
    return a.untyped_storage() is b.untyped_storage()


@given(data=st.data())
@settings(max_examples=fewer_examples(1))
def test_view_chains_alias_the_base(data, device):
    shape = data.draw(shapes(min_dims=0, max_dims=4, max_side=4))
    n = int(np.prod(shape)) if shape else 1
    np_base = np.arange(1, n + 1, dtype=np.int64).reshape(shape)
    base = em.from_numpy(np_base.copy()).to(device)
    t, x = base, np_base
    steps = []
    shared = True          # ember's chain still views the base
    overlapping = False    # some base element appears twice in the view
    for _ in range(data.draw(st.integers(1, 4))):
        desc, f_em, f_np = data.draw(view_step(tuple(x.shape)))
        steps.append(desc)
        x2 = f_np(x)
        if desc.startswith("view("):
            try:
                t2 = f_em(t)
            except RuntimeError as e:
                # view refuses exactly when NumPy's reshape must copy
                assert "view" in str(e)
                assert x.size == 0 or not np.shares_memory(x2, x), \
                    f"{steps}: view raised although NumPy's reshape is a view"
                t2 = t.reshape(x2.shape)
        else:
            t2 = f_em(t)
        if desc.startswith(("view(", "reshape(")) and x.size and shared:
            np_view = np.shares_memory(x2, x)
            assert _shares(t2, t) == np_view, \
                f"{steps}: ember {'viewed' if _shares(t2, t) else 'copied'}, NumPy " \
                f"{'viewed' if np_view else 'copied'}"
        shared = shared and _shares(t2, t)
        if desc.startswith(("expand", "unfold")):
            overlapping = True
        t, x = t2, x2
        assert tuple(t.shape) == x.shape, f"{steps}: shape {tuple(t.shape)} vs {x.shape}"
    assert np.array_equal(to_numpy(t), x), f"{steps}: values differ"
    if not shared or x.size == 0:
        return
    ids = x.reshape(-1)
    assert t.untyped_storage() is base.untyped_storage()
    version = base._version
    # 1. fill: exactly the aliased elements change
    t.fill_(0)
    assert base._version > version, f"{steps}: fill_ through the view did not bump the version"
    after = to_numpy(base).reshape(-1)
    hit = np.zeros(n, bool)
    hit[ids - 1] = True
    assert np.array_equal(after == 0, hit), f"{steps}: fill_ through the view hit other elements"
    # 2. copy_: each view position writes its own base element
    if not overlapping and len(set(ids.tolist())) == ids.size:
        src = -np.arange(1, ids.size + 1, dtype=np.int64)
        t.copy_(em.from_numpy(src.reshape(x.shape).copy()).to(device))
        after = to_numpy(base).reshape(-1)
        assert np.array_equal(after[ids - 1], src), f"{steps}: copy_ through the view misplaced"


# ----------------------------------------------------------------------------- specifics

def test_view_on_non_contiguous_raises_and_reshape_copies(device):
    x = em.arange(12, device=device).reshape(3, 4)
    t = x.T
    with pytest.raises(RuntimeError, match=r"view.*\(12,\).*reshape"):
        t.view(12)
    r = t.reshape(12)
    assert not _shares(r, x)
    assert r.tolist() == np.arange(12).reshape(3, 4).T.reshape(12).tolist()
    # reshape views whenever the strides allow it
    assert _shares(t.reshape(4, 3), x)
    assert _shares(x.reshape(2, 6), x) and _shares(x.view(2, 2, 3), x)
    assert _shares(x.narrow(1, 0, 2).reshape(3, 2, 1), x)
    assert _shares(t.unsqueeze(1).reshape(4, 3), x)


def test_contiguous_returns_self_only_when_contiguous(device):
    x = em.arange(6, device=device).reshape(2, 3)
    assert x.contiguous() is x
    assert x.is_contiguous()
    t = x.T
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c is not t and c.is_contiguous() and not _shares(c, x)
    assert c.tolist() == t.tolist()
    # size-1 dims and empty tensors are contiguous whatever their strides
    assert x.narrow(0, 0, 1).is_contiguous()
    assert em.zeros(3, 1, device=device).expand(3, 1).is_contiguous()
    assert x.clone().is_contiguous() and not _shares(x.clone(), x)


def test_version_counter_bumps_on_in_place_ops(device):
    x = em.zeros(2, 3, device=device)
    v = x.narrow(1, 1, 2)      # a view shares the counter (it is the storage's)
    seen = [x._version]

    def bumped():
        seen.append(x._version)
        return seen[-1] > seen[-2] and v._version == x._version

    x.add_(1)
    assert bumped()
    x += 1
    assert bumped()
    v.mul_(2)
    assert bumped()
    x.fill_(3)
    assert bumped()
    x.zero_()
    assert bumped()
    x.copy_(em.ones(3, device=device))
    assert bumped()
    em.add(x, 1, out=x)
    assert bumped()
    x.clamp_(0, 1)
    assert bumped()
    _ = x + 1, x.sum(), x.T, x.reshape(6)       # reads and views: no bump
    assert x._version == seen[-1]


def test_in_place_ops_reading_an_overlapping_view(device):
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    x = em.from_numpy(a.copy()).to(device)
    x.add_(x.T)
    assert np.array_equal(to_numpy(x), a + a.T)
    y = em.from_numpy(a.copy()).to(device)
    y.copy_(y.T)
    assert np.array_equal(to_numpy(y), a.T)
    z = em.from_numpy(a.reshape(-1).copy()).to(device)
    em.add(z.narrow(0, 0, 8), 100, out=z.narrow(0, 1, 8))   # shifted self-overlap
    expected = a.reshape(-1).copy()
    expected[1:] = a.reshape(-1)[:8] + 100
    assert np.array_equal(to_numpy(z), expected)


def test_expand_has_zero_strides_and_reads_the_base(device):
    x = em.tensor([[1.0], [2.0]], device=device)
    e = x.expand(2, 3)
    assert e.stride() == (1, 0) and _shares(e, x)
    assert e.tolist() == [[1.0] * 3, [2.0] * 3]
    assert x.expand(4, -1, 3).stride() == (0, 1, 0)
    x.mul_(10)
    assert e.tolist() == [[10.0] * 3, [20.0] * 3]
    assert x.expand_as(em.zeros(2, 2, device=device)).shape == (2, 2)
    assert em.broadcast_to(x, (3, 2, 2)).shape == (3, 2, 2)
    a, b = em.broadcast_tensors(x, em.zeros(4, device=device))
    assert a.shape == b.shape == (2, 4) and b.stride() == (0, 1)
    assert em.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    assert (e + 1).tolist() == [[11.0] * 3, [21.0] * 3]


def test_transposes_and_detach_share_storage(device):
    x = em.arange(24, device=device).reshape(2, 3, 4)
    assert x.T.shape == (4, 3, 2) and _shares(x.T, x)
    assert x.mT.shape == (2, 4, 3) and x.mT.stride() == (12, 1, 4)
    assert em.matrix_transpose(x).shape == (2, 4, 3)
    assert x.permute(2, 0, 1).stride() == (1, 12, 4)
    assert em.permute_dims(x, (1, 0, 2)).shape == (3, 2, 4)
    assert x.swapaxes(0, 2).shape == (4, 3, 2)
    m = x.narrow(0, 0, 1).squeeze(0)
    assert m.t().shape == (4, 3) and m.t().stride() == (1, 4)
    d = x.detach()
    assert _shares(d, x) and d.shape == x.shape
    x.add_(1)
    assert d.tolist() == x.tolist()


def test_diagonal_unfold_movedim_values(device):
    a = np.arange(60).reshape(3, 4, 5)
    x = em.from_numpy(a.copy()).to(device)
    for off in (-2, 0, 1, 7):
        for d1, d2 in ((0, 1), (2, 0), (-1, -2)):
            assert np.array_equal(to_numpy(x.diagonal(off, d1, d2)), np.diagonal(a, off, d1, d2))
    assert np.array_equal(to_numpy(x.unfold(2, 2, 2)), _np_unfold(a, 2, 2, 2))
    assert np.array_equal(to_numpy(x.movedim((0, 1), (2, 0))), np.moveaxis(a, (0, 1), (2, 0)))
    assert np.array_equal(to_numpy(x.unflatten(2, (5, 1))), a.reshape(3, 4, 5, 1))
    assert np.array_equal(to_numpy(em.atleast_3d(em.tensor(1.0))), np.atleast_3d(1.0))


def test_basic_slicing_is_a_view(device):
    """t[1:3] etc. (once Tensor.__getitem__ exists; another engineer writes it)."""
    if not hasattr(em.Tensor, "__getitem__"):
        pytest.skip("Tensor.__getitem__ is not implemented yet")
    a = np.arange(24).reshape(4, 6)
    x = em.from_numpy(a.copy()).to(device)
    for key in (slice(1, 3), (slice(None), slice(None, None, 2)), (Ellipsis, 0), 2,
                (slice(None, None, 3), slice(1, None)), (None, 1)):
        v = x[key]
        assert np.array_equal(to_numpy(v), a[key]), key
        assert _shares(v, x), key
    x[1:3].fill_(-1)
    assert (to_numpy(x)[1:3] == -1).all() and (to_numpy(x)[0] == a[0]).all()


# ------------------------------------------------------- the C entries and the general ones

def _outcome(f):
    """(shape, strides, offset, recorded attrs) of a call's view (or of each view of a
    split), or the exception's type and message."""
    seen = []
    prev = em._C.core.set_recorder(lambda op, inputs, out, attrs: seen.append((op, attrs)))
    try:
        r = f()
    except Exception as e:       # the two paths must raise alike
        return type(e), str(e)
    finally:
        em._C.core.set_recorder(prev)
    views = r if isinstance(r, tuple) else (r,)
    return [(tuple(v.shape), v.stride(), v.storage_offset()) for v in views], seen


@given(data=st.data())
@settings(max_examples=fewer_examples(3))
def test_view_entries_agree_with_the_general_ones(data):
    """view, reshape, transpose, permute, narrow and split made in C (the common call)
    give the layouts, recorded attrs and errors of their general Python entries, on
    contiguous, transposed and narrowed inputs and with valid and invalid arguments."""
    from ember.ops import shape as shape_ops, views
    shape = data.draw(shapes(min_dims=0, max_dims=4, max_side=4))
    x = em.zeros(shape, requires_grad=True)
    layout = data.draw(st.sampled_from(["contiguous", "T", "narrow"]))
    if layout == "T":
        x = x.T
    elif layout == "narrow" and x.ndim and x.shape[0] > 1:
        x = x.narrow(0, 1, x.shape[0] - 1)
    nd = x.ndim
    ints = st.integers(-nd - 1, nd + 1)
    op = data.draw(st.sampled_from(["view", "reshape", "transpose", "permute", "narrow",
                                    "split"]))
    if op in ("view", "reshape"):
        new = data.draw(st.one_of(st.just(_factor_shape(data.draw, x.shape)),
                                  st.lists(st.integers(-2, 5), max_size=4).map(tuple)))
        args = data.draw(st.sampled_from([new, (new,), (list(new),)]))
        general = views._view_general if op == "view" else views._reshape_general
    elif op == "transpose":
        args = (data.draw(ints), data.draw(ints))
        general = views._transpose_general
    elif op == "permute":
        args = tuple(data.draw(st.lists(ints, min_size=nd, max_size=nd)))
        if data.draw(st.booleans()):
            args = (args,)
        general = views._permute_general
    elif op == "narrow":
        side = x.shape[0] if nd else 1
        args = (data.draw(ints), data.draw(st.integers(-side - 1, side + 1)),
                data.draw(st.integers(-1, side + 1)))
        general = views._narrow_general
    else:
        args = (data.draw(st.integers(-1, 5)), data.draw(ints))
        general = shape_ops._split_general
    fast = getattr(em.Tensor, op)
    assert _outcome(lambda: fast(x, *args)) == _outcome(lambda: general(x, *args)), \
        f"{op}{args} on shape {tuple(x.shape)} strides {x.stride()}"
