"""ember._foreach_*: the multi-tensor functions (ember/_C/foreach.pyx) against NumPy, on
every device; scalar, tensor, scalar-list and tensor-list operands; in-place forms;
non-contiguous entries; bad input; autograd through them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


def _lists(device, dtype=np.float64, seed=0, positive=False, n=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        arrs = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        if positive:
            arrs = [np.abs(a) + 0.5 for a in arrs]
        out.append(arrs)
    return out


def _em(arrs, device):
    return [em.tensor(a, device=device) for a in arrs]


def _np(ts):
    return [t.cpu().numpy() for t in ts]


def _close(actual, expected, rtol=1e-12):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-12)


BINARY = [("_foreach_mul", np.multiply), ("_foreach_div", np.divide),
          ("_foreach_maximum", np.maximum), ("_foreach_minimum", np.minimum),
          ("_foreach_clamp_min", np.maximum), ("_foreach_clamp_max", np.minimum)]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_every_operand_kind(device, name, ref):
    a, b, _ = _lists(device, positive=True)
    fn, fn_ = getattr(em, name), getattr(em, name + "_")
    operands = {"list": (_em(b, device), b), "scalar": (1.5, [1.5] * len(a)),
                "scalars": ([0.5, 2.0, 3.0, 1.25], [0.5, 2.0, 3.0, 1.25]),
                "tensor": (em.tensor(2.0, dtype=em.float64, device=device),
                           [2.0] * len(a))}
    for other, ref_other in operands.values():
        xs = _em(a, device)
        res = fn(xs, other)
        _close(_np(res), [ref(x, o) for x, o in zip(a, ref_other)])
        _close(_np(xs), a)              # the out-of-place form leaves self alone
        assert fn_(xs, other) is None
        _close(_np(xs), [ref(x, o) for x, o in zip(a, ref_other)])


def test_add_sub_with_alpha(device):
    a, b, _ = _lists(device)
    xs = _em(a, device)
    _close(_np(em._foreach_add(xs, _em(b, device), alpha=0.5)),
           [x + 0.5 * y for x, y in zip(a, b)])
    _close(_np(em._foreach_sub(xs, _em(b, device), alpha=2)),
           [x - 2 * y for x, y in zip(a, b)])
    _close(_np(em._foreach_add(xs, 3.0)), [x + 3 for x in a])
    em._foreach_sub_(xs, [1.0, 2.0, 3.0, 4.0])
    _close(_np(xs), [x - s for x, s in zip(a, [1.0, 2.0, 3.0, 4.0])])
    em._foreach_add_(xs, _em(b, device), alpha=-1.5)
    _close(_np(xs), [x - s - 1.5 * y for x, s, y in zip(a, [1.0, 2.0, 3.0, 4.0], b)])


UNARY = [("sqrt", np.sqrt), ("neg", np.negative), ("abs", np.abs), ("exp", np.exp),
         ("reciprocal", np.reciprocal), ("sign", np.sign), ("log", np.log)]


@pytest.mark.parametrize("name,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary(device, name, ref):
    a, _, _ = _lists(device, positive=name in ("sqrt", "log"))
    xs = _em(a, device)
    _close(_np(getattr(em, "_foreach_" + name)(xs)), [ref(x) for x in a])
    getattr(em, "_foreach_" + name + "_")(xs)
    _close(_np(xs), [ref(x) for x in a])


def test_addcmul_addcdiv(device):
    a, b, c = _lists(device, positive=True)
    xs, ys, zs = _em(a, device), _em(b, device), _em(c, device)
    _close(_np(em._foreach_addcmul(xs, ys, zs)), [x + y * z for x, y, z in zip(a, b, c)])
    _close(_np(em._foreach_addcmul(xs, ys, zs, 0.5)),
           [x + 0.5 * y * z for x, y, z in zip(a, b, c)])
    vals = [1.0, -2.0, 0.25, 3.0]
    _close(_np(em._foreach_addcdiv(xs, ys, zs, vals)),
           [x + v * y / z for x, y, z, v in zip(a, b, c, vals)])
    # scalars as a 1-D tensor, as PyTorch allows
    _close(_np(em._foreach_addcdiv(xs, ys, zs, em.tensor(vals))),
           [x + v * y / z for x, y, z, v in zip(a, b, c, vals)])
    em._foreach_addcmul_(xs, ys, zs, -1)
    _close(_np(xs), [x - y * z for x, y, z in zip(a, b, c)])


def test_lerp(device):
    a, b, c = _lists(device)
    xs, ys = _em(a, device), _em(b, device)
    _close(_np(em._foreach_lerp(xs, ys, 0.3)), [x + 0.3 * (y - x) for x, y in zip(a, b)])
    ws = _em([np.abs(w) / 4 for w in c], device)
    _close(_np(em._foreach_lerp(xs, ys, ws)),
           [x + w * (y - x) for x, y, w in zip(a, b, [np.abs(w) / 4 for w in c])])
    em._foreach_lerp_(xs, ys, [0.1, 0.2, 0.3, 0.4])
    _close(_np(xs), [x + w * (y - x) for x, y, w in zip(a, b, [0.1, 0.2, 0.3, 0.4])])


def test_pow_norm_max_zero_copy(device):
    a, b, _ = _lists(device, positive=True)
    xs = _em(a, device)
    _close(_np(em._foreach_pow(xs, 2.0)), [x ** 2 for x in a])
    norms = em._foreach_norm(xs)
    assert all(n.shape == () for n in norms)
    _close(_np(norms), [np.linalg.norm(x.ravel()) for x in a])
    _close(_np(em._foreach_norm(xs, 1)), [np.abs(x).sum() for x in a])
    _close(_np(em._foreach_norm(xs, float("inf"))), [np.abs(x).max() for x in a])
    _close(_np(em._foreach_max(xs)), [x.max() for x in a])
    em._foreach_copy_(xs, _em(b, device))
    _close(_np(xs), b)
    em._foreach_zero_(xs)
    _close(_np(xs), [np.zeros_like(x) for x in a])


def test_non_contiguous_and_broadcast_entries(device):
    base = em.arange(24.0, dtype=em.float64, device=device).reshape(4, 6)
    views = [base[:, ::2], base.t()[1:3]]
    before = [v.cpu().numpy().copy() for v in views[:1]]
    em._foreach_mul_(views[:1], 2.0)
    _close(_np(views[:1]), [2 * b for b in before])
    # a tensor operand broadcasts against each entry
    row = em.tensor([1.0, 2.0, 3.0], dtype=em.float64, device=device)
    res = em._foreach_add([em.zeros(2, 3, dtype=em.float64, device=device)], row)
    _close(_np(res), [np.array([[1.0, 2, 3], [1, 2, 3]])])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=0, max_size=5),
       st.sampled_from([np.float32, np.float64]), st.floats(-2, 2))
def test_matches_per_tensor_ops(shapes, dtype, alpha):
    rng = np.random.default_rng(len(shapes))
    a = [rng.standard_normal(s).astype(dtype) for s in shapes]
    b = [rng.standard_normal(s).astype(dtype) for s in shapes]
    xs, ys = [em.tensor(x) for x in a], [em.tensor(y) for y in b]
    expected = [em.add(x, y, alpha=alpha) for x, y in zip(xs, ys)]
    got = em._foreach_add(xs, ys, alpha=alpha)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    got = em._foreach_lerp(xs, ys, 0.25)
    for g, x, y in zip(got, xs, ys):
        np.testing.assert_array_equal(g.numpy(), em.lerp(x, y, 0.25).numpy())


def test_dtype_promotion_and_empty_list():
    xs = [em.tensor([1, 2, 3]), em.tensor([4.0], dtype=em.float64)]
    res = em._foreach_mul(xs, 0.5)
    assert res[0].dtype == em.float32 and res[1].dtype == em.float64
    assert em._foreach_add([], 1.0) == []
    assert em._foreach_add_([], []) is None


def test_bad_input():
    xs = [em.ones(2), em.ones(3)]
    with pytest.raises(ValueError, match="_foreach_add: other has 1 entries but the tensor "
                                         "list has 2"):
        em._foreach_add(xs, [em.ones(2)])
    with pytest.raises(TypeError, match="_foreach_mul: expected a list of tensors, but "
                                        "entry 1 is int"):
        em._foreach_mul([em.ones(2), 3], 2.0)
    with pytest.raises(TypeError, match="_foreach_sqrt: self must be a list or tuple"):
        em._foreach_sqrt(em.ones(2))
    with pytest.raises(ValueError, match="shape"):
        em._foreach_add_(xs, [em.ones(4), em.ones(3)])
    with pytest.raises(TypeError, match="alpha must be a real number"):
        em._foreach_add(xs, xs, alpha="a")
    with pytest.raises(ValueError, match="_foreach_addcmul_: tensor2 has 1 entries"):
        em._foreach_addcmul_(xs, xs, xs[:1])
    with pytest.raises(ValueError, match="_foreach_copy_: src has 1 entries"):
        em._foreach_copy_(xs, xs[:1])
    with pytest.raises(TypeError, match="_foreach_mul_"):
        em._foreach_mul_(xs, "a")


def test_autograd_through_foreach():
    pytest.importorskip("ember.autograd")
    from ember.autograd import gradcheck
    rng = np.random.default_rng(0)
    a = [em.tensor(rng.standard_normal(3), dtype=em.float64, requires_grad=True)
         for _ in range(2)]
    b = [em.tensor(rng.random(3) + 0.5, dtype=em.float64, requires_grad=True)
         for _ in range(2)]

    def f(x0, x1, y0, y1):
        out = em._foreach_addcdiv([x0, x1], [y0, y1], [x0, x1], 0.5)
        out = em._foreach_mul(out, [y0, y1])
        out = em._foreach_lerp(out, [x1, x0], 0.3)
        return em._foreach_sqrt(em._foreach_add(em._foreach_mul(out, out), 1.0))[0].sum() + \
            out[1].sum()
    assert gradcheck(f, (*a, *b))


def test_private_into_helpers(device):
    from ember.ops.foreach import _div_into, _sqrt_into
    a, b, _ = _lists(device, positive=True)
    xs, ys = _em(a, device), _em(b, device)
    outs = [em.empty_like(x) for x in xs]
    _sqrt_into(xs, outs)
    _close(_np(outs), [np.sqrt(x) for x in a])
    _div_into(xs, ys, ys)             # into one of the operands
    _close(_np(ys), [x / y for x, y in zip(a, b)])
    with pytest.raises(ValueError, match="_foreach_sqrt: out has 1 entries"):
        _sqrt_into(xs, outs[:1])
