"""cross_entropy (fused, kernels/cpu/loss.c) and nll_loss against NumPy references
written here with PyTorch's rules (weights, ignore_index, label smoothing, the
weighted mean, probability targets), and their backward functions against finite
differences in float64."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.ops.loss import cross_entropy_backward, cross_entropy_target_backward, nll_loss_backward
from ember_testing import realize

TOL = {"float16": 5e-3, "float32": 1e-5, "float64": 1e-12}
reductions = st.sampled_from(["none", "mean", "sum"])


def log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def to_rows(x):
    """(C,), (N, C) or (N, C, d...) as (positions, C), class dim last."""
    if x.ndim == 1:
        return x[None]
    return np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def np_nll(logp, target, w, ignore, reduction, ls=0.0):
    """PyTorch's class-index loss, one position at a time."""
    rows, t = to_rows(logp), np.asarray(target).reshape(-1)
    C = rows.shape[1]
    w = np.ones(C) if w is None else w.astype(np.float64)
    loss, den = np.zeros(len(t)), 0.0
    for i, ti in enumerate(t):
        if ti == ignore:
            continue
        loss[i] = -(1 - ls) * w[ti] * rows[i, ti] - ls / C * (w * rows[i]).sum()
        den += w[ti]
    if reduction == "none":
        return loss.reshape(np.shape(target))
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / den if den else np.nan


def np_prob_ce(x, target, w, reduction, ls):
    cd = 0 if x.ndim == 1 else 1
    C = x.shape[cd]
    logp = log_softmax(x, cd)
    t = target.astype(np.float64) * (1 - ls) + ls / C
    if w is not None:
        t = t * (w if x.ndim == 1 else w.reshape((C,) + (1,) * (x.ndim - 2)))
    loss = -(logp * t).sum(axis=cd)
    if reduction == "none":
        return loss
    return loss.sum() / (1 if reduction == "sum" else x.size // C)


def numeric_grad(f, x, g, eps=1e-6):
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = ((f(xp) - f(xm)) * g).sum() / (2 * eps)
    return num


@st.composite
def problems(draw, max_c=65):
    """(input shape, targets, C) with batched, unbatched and spatial inputs."""
    C = draw(st.sampled_from([1, 2, 3, 7, 65][:5 if max_c >= 65 else 4]))
    kind = draw(st.sampled_from(["unbatched", "batched", "spatial"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    if kind == "unbatched":
        shape, tshape = (C,), ()
    elif kind == "batched":
        n = draw(st.sampled_from([1, 2, 5, 7]))
        shape, tshape = (n, C), (n,)
    else:
        n, d = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 3]))
        shape, tshape = (n, C, d, 2), (n, d, 2)
    return shape, tshape, C, rng


def _targets(rng, tshape, C, ignore):
    t = rng.integers(0, C, size=tshape)
    if ignore is not None:
        t = np.where(rng.random(tshape) < 0.3, ignore, t)
    return np.asarray(t, np.int64)


@given(p=problems(), dtype=st.sampled_from(["float16", "float32", "float64"]),
       reduction=reductions, weighted=st.booleans(),
       ignore=st.sampled_from([None, -100, 1]), ls=st.sampled_from([0.0, 0.1, 1.0]),
       transposed=st.booleans())
def test_cross_entropy_class_targets(p, dtype, reduction, weighted, ignore, ls, transposed):
    shape, tshape, C, rng = p
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    t = _targets(rng, tshape, C, ignore)
    w = rng.uniform(0.1, 2, C).astype(dtype) if weighted else None
    et, x = realize(x, "transposed" if transposed else "contiguous")
    kw = {} if ignore is None else {"ignore_index": ignore}
    got = em.cross_entropy(et, em.from_numpy(t), None if w is None else em.from_numpy(w),
                           reduction=reduction, label_smoothing=ls, **kw)
    want = np_nll(log_softmax(x, 0 if x.ndim == 1 else 1), t, w,
                  -100 if ignore is None else ignore, reduction, ls)
    assert got.dtype.name == dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10, equal_nan=True)


@given(p=problems(), dtype=st.sampled_from(["float32", "float64"]), reduction=reductions,
       weighted=st.booleans(), ls=st.sampled_from([0.0, 0.25]))
def test_cross_entropy_probability_targets(p, dtype, reduction, weighted, ls):
    shape, _, C, rng = p
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.dirichlet(np.ones(C), size=shape[:1] + shape[2:] if len(shape) > 1 else ())
    t = np.moveaxis(t, -1, 1 if len(shape) > 1 else 0).astype(dtype)
    w = rng.uniform(0.1, 2, C).astype(dtype) if weighted else None
    got = em.cross_entropy(em.from_numpy(x), em.from_numpy(t),
                           None if w is None else em.from_numpy(w), reduction=reduction,
                           label_smoothing=ls)
    want = np_prob_ce(x, t, w, reduction, ls)
    assert got.dtype.name == dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


@given(p=problems(), reduction=reductions, weighted=st.booleans(),
       ignore=st.sampled_from([None, 0]), dtype=st.sampled_from(["float32", "float64"]))
def test_nll_loss(p, reduction, weighted, ignore, dtype):
    shape, tshape, C, rng = p
    x = log_softmax(rng.standard_normal(shape), 0 if len(shape) == 1 else 1).astype(dtype)
    t = _targets(rng, tshape, C, ignore)
    w = rng.uniform(0.1, 2, C).astype(dtype) if weighted else None
    kw = {} if ignore is None else {"ignore_index": ignore}
    got = em.nll_loss(em.from_numpy(x), em.from_numpy(t),
                      None if w is None else em.from_numpy(w), reduction=reduction, **kw)
    want = np_nll(x, t, w, -100 if ignore is None else ignore, reduction)
    assert got.dtype.name == dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10,
                               equal_nan=True)


def test_all_ignored_mean_is_nan_and_grad_zero():
    x, t = em.randn(3, 4, dtype=em.float64), em.full((3,), -100)
    assert np.isnan(em.cross_entropy(x, t).item())
    assert np.isnan(em.nll_loss(x, t).item())
    assert np.isnan(em.cross_entropy(x, t, label_smoothing=0.1).item())
    g = cross_entropy_backward(em.tensor(1.0, dtype=em.float64), x, t)
    assert (g.numpy() == 0).all()


def test_cross_entropy_stable_for_large_logits():
    x = em.tensor([[1000.0, 0.0, -1000.0], [-1e30, 0.0, 0.0]])
    got = em.cross_entropy(x, em.tensor([0, 1]), reduction="none").numpy()
    np.testing.assert_allclose(got, [0.0, np.log(2)], rtol=1e-6, atol=1e-6)


CASES = [  # (shape, C) for the finite-difference checks
    ((4,), 4), ((3, 4), 4), ((2, 3, 2), 3), ((1, 1), 1)]


@pytest.mark.parametrize("shape,C", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("opts", [{}, {"weight": True}, {"ignore_index": 1},
                                  {"label_smoothing": 0.2},
                                  {"weight": True, "ignore_index": 0, "label_smoothing": 0.3}])
def test_cross_entropy_backward_finite_differences(shape, C, reduction, opts):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    t = rng.integers(0, C, size=tshape)
    if "ignore_index" in opts and t.size > 1:   # one position ignored, one not
        t.reshape(-1)[0] = opts["ignore_index"]
        t.reshape(-1)[-1] = (opts["ignore_index"] + 1) % C
    if reduction == "mean" and (t == opts.get("ignore_index", -100)).all():
        pytest.skip("everything ignored: see test_all_ignored_mean_is_nan_and_grad_zero")
    w = rng.uniform(0.5, 2, C) if opts.get("weight") else None
    kw = {k: v for k, v in opts.items() if k != "weight"}
    E = lambda a: None if a is None else em.from_numpy(np.array(a))  # noqa: E731
    f = lambda v: em.cross_entropy(E(v), E(t), E(w), reduction=reduction, **kw).numpy()  # noqa
    g = rng.standard_normal(np.shape(f(x)))
    dx = cross_entropy_backward(E(g), E(x), E(t), E(w), reduction=reduction,
                                ignore_index=kw.get("ignore_index", -100),
                                label_smoothing=kw.get("label_smoothing", 0.0))
    assert dx.shape == x.shape
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape,C", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted,ls", [(False, 0.0), (True, 0.2)])
def test_cross_entropy_probability_backward_finite_differences(shape, C, reduction, weighted,
                                                               ls):
    rng = np.random.default_rng(6)
    x, t = rng.standard_normal(shape), rng.uniform(0, 1, shape)
    w = rng.uniform(0.5, 2, C) if weighted else None
    E = lambda a: None if a is None else em.from_numpy(np.array(a))  # noqa: E731

    def f(xv=x, tv=t):
        return em.cross_entropy(E(xv), E(tv), E(w), reduction=reduction,
                                label_smoothing=ls).numpy()

    g = rng.standard_normal(np.shape(f()))
    dx = cross_entropy_backward(E(g), E(x), E(t), E(w), reduction=reduction,
                                label_smoothing=ls)
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)
    dt = cross_entropy_target_backward(E(g), E(x), E(t), E(w), reduction, ls)
    np.testing.assert_allclose(dt.numpy(), numeric_grad(lambda v: f(tv=v), t, g), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("shape,C", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted,ignore", [(False, -100), (True, 1)])
def test_nll_loss_backward_finite_differences(shape, C, reduction, weighted, ignore):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    t = rng.integers(0, C, size=tshape)
    w = rng.uniform(0.5, 2, C) if weighted else None
    E = lambda a: None if a is None else em.from_numpy(np.array(a))  # noqa: E731
    f = lambda v: em.nll_loss(E(v), E(t), E(w), ignore_index=ignore,  # noqa: E731
                              reduction=reduction).numpy()
    g = rng.standard_normal(np.shape(f(x)))
    dx = nll_loss_backward(E(g), E(x), E(t), E(w), ignore, reduction)
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)


def test_records_attrs_for_backward():
    seen = []
    prev = em._core.set_recorder(lambda op, inputs, out, attrs: seen.append((op, inputs,
                                                                             attrs)))
    try:
        x = em.randn(3, 4).requires_grad_()
        t = em.tensor([0, 3, 1])
        em.cross_entropy(x, t, label_smoothing=0.1, reduction="sum")
        em.nll_loss(x, t, ignore_index=3)
        p = em.softmax(em.randn(3, 4), 1)
        em.cross_entropy(x, p)
    finally:
        em._core.set_recorder(prev)
    (op1, in1, a1), (op2, _, a2), (op3, in3, a3) = seen
    assert op1 == "cross_entropy" and in1 == (x,) and a1["target"] is t
    assert a1["reduction"] == "sum" and a1["label_smoothing"] == 0.1 and a1["weight"] is None
    assert op2 == "nll_loss" and a2["ignore_index"] == 3
    assert op3 == "cross_entropy" and in3[1] is p


def test_large_batch_threaded_matches_single_thread():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((512, 1000)).astype(np.float32)
    t = rng.integers(0, 1000, 512)
    nt = em.get_num_threads()
    out = []
    try:
        for n in (1, max(nt, 2)):
            em.set_num_threads(n)
            out.append((em.cross_entropy(em.from_numpy(x), em.from_numpy(t),
                                         reduction="none").numpy(),
                        cross_entropy_backward(em.ones(512), em.from_numpy(x),
                                               em.from_numpy(t), reduction="none").numpy()))
    finally:
        em.set_num_threads(nt)
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_allclose(out[0][0], np_nll(log_softmax(x, 1), t, None, -100, "none"),
                               rtol=1e-5)


@pytest.mark.parametrize("bad,err,match", [
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, 1, 7])), IndexError,
     r"cross_entropy: target 7 is out of bounds for 5 classes"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, -1, 2])), IndexError,
     r"target -1 is out of bounds for 5 classes"),
    (lambda: em.nll_loss(em.randn(3, 5), em.tensor([0, 1, 5])), IndexError,
     r"nll_loss: target 5 is out of bounds for 5 classes"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, 1])), ValueError,
     r"target shape \(2,\) does not match the input \(3, 5\): expected \(3,\)"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.rand(3, 4)), TypeError,
     r"class-index targets must be an integer tensor, got .*float32"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([True, False, True])), TypeError,
     "must be an integer tensor"),
    (lambda: em.nll_loss(em.randn(3, 5), em.rand(3)), TypeError,
     "nll_loss: class-index targets must be an integer tensor"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.rand(3, 5), ignore_index=1), ValueError,
     "ignore_index=1 is not supported for class probability"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, 1, 2]), em.ones(4)), ValueError,
     r"weight must have shape \(5,\), got \(4,\)"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, 1, 2]), reduction="avg"),
     ValueError, "reduction must be 'none', 'mean' or 'sum', got 'avg'"),
    (lambda: em.cross_entropy(em.randn(3, 5), em.tensor([0, 1, 2]), label_smoothing=1.5),
     ValueError, "label_smoothing must be between 0.0 and 1.0, got 1.5"),
    (lambda: em.cross_entropy(em.tensor([1, 2]), em.tensor(0)), TypeError,
     "cross_entropy: input must be a floating point tensor"),
    (lambda: em.cross_entropy(em.tensor(1.0), em.tensor(0)), ValueError,
     "must have a class dim"),
])
def test_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        bad()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_row_lengths_of_the_vector_loop(dtype):
    """Rows shorter than the kernel's lanes, one lane chunk and a bit (an overlapping
    last chunk), and longer than its float32 summing block (256): loss and gradient
    against NumPy."""
    rng = np.random.default_rng(0)
    for C in (31, 32, 33, 65, 300, 1000):
        x = (rng.standard_normal((3, C)) * 4).astype(dtype)
        t = rng.integers(0, C, 3)
        logp = log_softmax(x.astype(np.float64), 1)
        got = em.cross_entropy(em.from_numpy(x), em.from_numpy(t), reduction="none")
        np.testing.assert_allclose(got.numpy(), -logp[np.arange(3), t], rtol=TOL[dtype] * 10,
                                   atol=TOL[dtype] * 10)
        g = cross_entropy_backward(em.ones(3, dtype=getattr(em, dtype)), em.from_numpy(x),
                                   em.from_numpy(t), reduction="none")
        want = np.exp(logp)
        want[np.arange(3), t] -= 1
        np.testing.assert_allclose(g.numpy(), want, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
