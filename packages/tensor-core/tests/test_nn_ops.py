"""softmax / log_softmax (fused row kernels) and their backward kernels against
NumPy references, over shapes, dims, dtypes and layouts."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember._nn_ops import softmax_backward


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
