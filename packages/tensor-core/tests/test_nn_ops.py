"""softmax / log_softmax (fused row kernels), embedding and dropout, and their
backward functions, against NumPy references over shapes, dims, dtypes and layouts.
(layer_norm and batch_norm: test_norms.py; cross_entropy and nll_loss:
test_losses.py.)"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.ops.dropout import dropout_backward
from ember.ops.embedding import embedding_backward
from ember.ops.softmax import softmax_backward
from ember_testing import realize


def np_softmax(x, dim):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


shapes = st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple)
TOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


@given(shape=shapes, seed=st.integers(0, 2**31 - 1), data=st.data(),
       dtype=st.sampled_from(["float16", "float32", "float64"]),
       transposed=st.booleans(), log=st.booleans())
def test_matches_numpy(shape, seed, data, dtype, transposed, log):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    t = em.from_numpy(x)
    if transposed and x.ndim >= 2:
        x, t = x.T, t.T
    got = (em.log_softmax if log else em.softmax)(t, dim)
    want = np_softmax(x, dim)
    want = np.log(want) if log else want
    assert got.dtype.name == dtype and tuple(got.shape) == x.shape
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10)


def test_stable_for_large_values_and_special_rows():
    x = em.tensor([[1000.0, 1000.0], [-1e30, 0.0], [float("-inf"), 0.0]])
    np.testing.assert_allclose(em.softmax(x, 1).numpy(), [[0.5, 0.5], [0, 1], [0, 1]])
    np.testing.assert_allclose(em.log_softmax(x, 1).numpy()[0], np.log([0.5, 0.5]), rtol=1e-6)
    assert np.isnan(em.softmax(em.tensor([[float("nan"), 1.0]]), 1).numpy()).all()


def test_ints_compute_in_default_float_and_dtype_argument():
    assert em.softmax(em.tensor([1, 2, 3]), 0).dtype is em.float32
    assert em.softmax(em.tensor([1.0, 2.0]), 0, dtype=em.float64).dtype is em.float64
    assert em.tensor([1.0, 2.0]).softmax(-1).shape == (2,)


def test_zero_d_and_empty():
    assert em.softmax(em.tensor(3.0), 0).item() == 1.0
    assert em.softmax(em.zeros(0, 4), 1).shape == (0, 4)
    assert em.log_softmax(em.zeros(3, 0), 1).shape == (3, 0)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_backward_kernel_matches_finite_differences(log, dim):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    f = (lambda v: np.log(np_softmax(v, dim))) if log else (lambda v: np_softmax(v, dim))
    y = (em.log_softmax if log else em.softmax)(em.from_numpy(x), dim)
    dx = softmax_backward(em.from_numpy(g), y, dim, log).numpy()
    eps, num = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = ((f(xp) - f(xm)) * g).sum() / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad", [lambda: em.softmax(em.ones(2, 3), 2),
                                 lambda: em.softmax(em.ones(2, 3)),
                                 lambda: em.softmax([1.0, 2.0], 0),
                                 lambda: em.softmax(em.ones(2), 0, dtype=em.int32)])
def test_bad_input_names_the_op(bad):
    with pytest.raises((IndexError, TypeError, ValueError)) as e:
        bad()
    assert "softmax" in str(e.value)


# embedding ------------------------------------------------------------------------

@given(ishape=st.lists(st.sampled_from([1, 2, 3, 7]), max_size=3).map(tuple),
       num=st.sampled_from([1, 5, 65]), dim=st.sampled_from([1, 3, 7]),
       dtype=st.sampled_from(["float16", "float32", "float64"]),
       itype=st.sampled_from(["int32", "int64"]), layout=st.sampled_from(["contiguous",
                                                                          "transposed"]),
       seed=st.integers(0, 2**31 - 1))
def test_embedding_matches_numpy(ishape, num, dim, dtype, itype, layout, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((num, dim)).astype(dtype)
    idx = rng.integers(0, num, size=ishape).astype(itype)
    ew, w = realize(w, layout)
    ei, idx = realize(idx, layout)
    got = em.embedding(ei, ew)
    assert got.dtype.name == dtype and tuple(got.shape) == ishape + (dim,)
    np.testing.assert_array_equal(got.numpy(), w[idx])


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("freq", [False, True])
def test_embedding_backward(padding_idx, freq):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 3))
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    g = rng.standard_normal((2, 3, 3))
    seen = []
    prev = em._core.set_recorder(lambda op, inputs, out, attrs: seen.append((op, inputs,
                                                                             attrs)))
    try:
        ew = em.from_numpy(w).requires_grad_()
        em.embedding(em.from_numpy(idx), ew, padding_idx, scale_grad_by_freq=freq)
    finally:
        em._core.set_recorder(prev)
    (op, inputs, a), = seen
    assert op == "embedding" and inputs == (ew,)
    pad = None if padding_idx is None else padding_idx % 5
    assert a["padding_idx"] == pad and a["num_weights"] == 5 and a["scale_grad_by_freq"] is freq
    got = embedding_backward(em.from_numpy(g), a["indices"], 5, pad, freq).numpy()
    want = np.zeros_like(w)
    counts = np.bincount(idx.reshape(-1), minlength=5)
    for i, row in zip(idx.reshape(-1), g.reshape(-1, 3)):
        want[i] += row / (counts[i] if freq else 1)
    if pad is not None:
        want[pad] = 0
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the gradient of sum(g * embedding(idx, w)) is linear in w: check it numerically too
    eps, num = 1e-6, np.zeros_like(w)
    for k in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[k] += eps
        wm[k] -= eps
        num[k] = ((em.embedding(em.from_numpy(idx), em.from_numpy(wp)).numpy()
                   - em.embedding(em.from_numpy(idx), em.from_numpy(wm)).numpy()) * g).sum() \
            / (2 * eps)
    if not freq and pad is None:
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_embedding_backward_takes_only_the_forwards_int64_indices():
    # it trusts the forward's checked indices (no second bounds check), so it refuses
    # anything else by dtype rather than scatter out of bounds
    with pytest.raises(TypeError, match="embedding_backward: indices must be the forward's int64"):
        embedding_backward(em.ones(2, 3), em.tensor([0, 1], dtype=em.int32), 4)


def test_embedding_max_norm_renormalises_looked_up_rows_in_place():
    w = em.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = em.embedding(em.tensor([0, 1, 0]), w, max_norm=1.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    np.testing.assert_allclose(norms, [1.0, 0.5, 10.0], rtol=1e-5)   # row 2 not looked up
    np.testing.assert_allclose(out.numpy(), w.numpy()[[0, 1, 0]])


@pytest.mark.parametrize("bad,err,match", [
    (lambda: em.embedding(em.tensor([0, 5]), em.ones(5, 2)), IndexError,
     "embedding: index 5 is out of bounds for dim 0 of the weight with size 5"),
    (lambda: em.embedding(em.tensor([-1]), em.ones(5, 2)), IndexError,
     "embedding: index -1 is out of bounds"),
    (lambda: em.embedding(em.tensor([0.0]), em.ones(5, 2)), TypeError,
     "embedding: indices must be an integer tensor, got .*float32"),
    (lambda: em.embedding(em.tensor([0]), em.ones(5)), ValueError,
     r"weight must be 2-d \(num_embeddings, embedding_dim\), got shape \(5,\)"),
    (lambda: em.embedding(em.tensor([0]), em.ones(5, 2), padding_idx=5), ValueError,
     "padding_idx=5 must be within the 5 embeddings"),
    (lambda: em.embedding(em.ones(5, 2), em.tensor([0])), TypeError,
     "embedding: weight must be a floating point tensor"),
])
def test_embedding_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        bad()


# dropout --------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dropout_fraction_and_scaling(p, dtype):
    n = 20000
    x = em.from_numpy(np.random.default_rng(0).uniform(1, 2, n).astype(dtype))
    y = em.dropout(x, p)
    assert y.dtype.name == dtype and y.shape == x.shape
    yn, xn = y.numpy(), x.numpy()
    dropped = (yn == 0).sum()
    # a binomial(n, p) count: within 5 standard deviations
    assert abs(dropped - n * p) < 5 * np.sqrt(n * p * (1 - p))
    kept = yn != 0
    want = (xn[kept].astype(np.float32 if dtype == "float16" else dtype) *
            np.array(1 / (1 - p), np.float32 if dtype == "float16" else dtype)).astype(dtype)
    np.testing.assert_array_equal(yn[kept], want)


def test_dropout_mask_is_the_documented_philox_draw():
    """dropped exactly where ember.rand from the same stream position is below p, also
    from an offset that is not a multiple of the 4-word Philox block."""
    for n, skip in [(1, 0), (7, 3), (4100, 1), (70000, 2)]:
        em.manual_seed(123)
        em.rand(skip)
        x = em.ones(n)
        y = em.dropout(x, 0.3)
        em.manual_seed(123)
        em.rand(skip)
        u = em.rand(n)
        np.testing.assert_array_equal(y.numpy() == 0, u.numpy() < np.float32(0.3))
        assert em.default_generator.get_offset() == skip + n


def test_dropout_determinism_generator_and_layout():
    x = em.randn(33, 17)
    em.manual_seed(5)
    a = em.dropout(x, 0.4)
    b = em.dropout(x, 0.4)
    em.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), em.dropout(x, 0.4).numpy())
    assert not np.array_equal(a.numpy() == 0, b.numpy() == 0)
    g = em.Generator().manual_seed(9)
    c = em.dropout(x, 0.4, generator=g)
    np.testing.assert_array_equal(
        c.numpy(), em.dropout(x, 0.4, generator=em.Generator().manual_seed(9)).numpy())
    # a transposed input: the mask is drawn in row-major order of its shape
    xt = x.T
    g1, g2 = em.Generator().manual_seed(1), em.Generator().manual_seed(1)
    np.testing.assert_array_equal(em.dropout(xt, 0.5, generator=g1).numpy(),
                                  em.dropout(xt.contiguous(), 0.5, generator=g2).numpy())


def test_dropout_records_mask_and_backward():
    seen = []
    prev = em._core.set_recorder(lambda op, inputs, out, attrs: seen.append((op, inputs,
                                                                             attrs)))
    try:
        x = em.randn(6, 9, dtype=em.float64).requires_grad_()
        y = em.dropout(x, 0.25)
    finally:
        em._core.set_recorder(prev)
    (op, inputs, a), = seen
    assert op == "dropout" and inputs == (x,) and a["p"] == 0.25
    mask = a["mask"]
    assert mask.dtype is em.bool and tuple(mask.shape) == (6, 9)
    np.testing.assert_array_equal(mask.numpy(), y.numpy() != 0)
    g = np.random.default_rng(1).standard_normal((6, 9))
    dx = dropout_backward(em.from_numpy(g), mask, 0.25)
    np.testing.assert_allclose(dx.numpy(), g * mask.numpy() / 0.75, rtol=1e-15)
    dx32 = dropout_backward(em.from_numpy(g.astype(np.float32)), mask, 0.25)
    assert dx32.dtype is em.float32


def test_dropout_identity_zero_and_in_place():
    x = em.randn(4, 5)
    assert em.dropout(x, 0.0) is x
    assert em.dropout(x, 0.7, train=False) is x
    assert (em.dropout(x, 1.0).numpy() == 0).all()
    em.manual_seed(3)
    want = em.dropout(x, 0.5).numpy()
    em.manual_seed(3)
    y = x.clone()
    v = y._version
    assert em.dropout_(y, 0.5) is y and y._version > v
    np.testing.assert_array_equal(y.numpy(), want)


@pytest.mark.parametrize("bad,err,match", [
    (lambda: em.dropout(em.ones(3), 1.5), ValueError,
     "dropout: dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: em.dropout(em.ones(3), -0.1), ValueError, "between 0 and 1"),
    (lambda: em.dropout(em.ones(3, dtype=em.int64), 0.5), TypeError,
     "dropout: input must be a floating point tensor"),
    (lambda: em.dropout(em.ones(3), "a"), TypeError, "dropout: p must be a number"),
    (lambda: em.dropout(em.ones(3), 0.5, generator=3), TypeError,
     "dropout: generator must be an ember.Generator"),
    (lambda: em.dropout_(em.ones(3).requires_grad_(), 0.5), RuntimeError,
     "dropout_: a leaf tensor that requires grad is being used in an in-place operation"),
])
def test_dropout_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        bad()
