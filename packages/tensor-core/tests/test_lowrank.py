"""svd_lowrank, pca_lowrank, lobpcg (ember/ops/lowrank.py) and nuclear_norm against
NumPy: exact on matrices of the rank they are told, batched, with a mean M, generalised
(B) and preconditioned (iK) eigenproblems; their derivatives gradchecked (lobpcg's
eigenvectors included, exact at convergence); bad input named.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck
from ember_testing import fewer_examples, to_numpy

DTYPES = {em.float32: (np.float32, 2e-4), em.float64: (np.float64, 1e-10)}


def low_rank(rng, batch, m, n, r, np_dtype):
    a = rng.standard_normal((*batch, m, r)) @ rng.standard_normal((*batch, r, n))
    return a.astype(np_dtype)


@settings(max_examples=fewer_examples(3), deadline=None)
@given(m=st.integers(3, 24), n=st.integers(3, 24), r=st.integers(1, 3),
       batch=st.sampled_from([(), (2,)]), dtype=st.sampled_from(list(DTYPES)),
       transposed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_svd_lowrank_recovers_a_low_rank_matrix(m, n, r, batch, dtype, transposed, seed):
    np_dtype, tol = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    a = low_rank(rng, batch, m, n, r, np_dtype)
    A = em.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2) \
        if transposed else em.from_numpy(a)
    em.manual_seed(seed)
    q = min(r + 2, m, n)
    U, S, V = em.svd_lowrank(A, q=q)
    assert tuple(U.shape) == (*batch, m, q) and tuple(S.shape) == (*batch, q)
    assert tuple(V.shape) == (*batch, n, q)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(to_numpy((U * S.unsqueeze(-2)) @ V.mT), a, atol=tol * scale * 10)
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)[..., :r]
    np.testing.assert_allclose(to_numpy(S)[..., :r], ref, rtol=tol * 10, atol=tol * scale)
    for Q in (U, V):                     # orthonormal columns
        np.testing.assert_allclose(to_numpy(Q.mT @ Q), np.broadcast_to(np.eye(q), (*batch, q, q)),
                                   atol=tol * 10)


def test_svd_lowrank_of_a_matrix_minus_its_mean():
    rng = np.random.default_rng(3)
    a = low_rank(rng, (), 30, 12, 3, np.float64)
    mean = rng.standard_normal((1, 12))
    em.manual_seed(1)
    U, S, V = em.svd_lowrank(em.from_numpy(a + mean), q=5, M=em.from_numpy(mean))
    np.testing.assert_allclose(to_numpy((U * S) @ V.mT), a, atol=1e-10)


def test_pca_lowrank_is_the_centred_svd():
    rng = np.random.default_rng(4)
    a = low_rank(rng, (), 50, 8, 3, np.float64) + rng.standard_normal(8) * 5
    em.manual_seed(2)
    U, S, V = em.pca_lowrank(em.from_numpy(a), q=4)
    c = a - a.mean(0)
    np.testing.assert_allclose(to_numpy(S)[:3], np.linalg.svd(c, compute_uv=False)[:3], rtol=1e-10)
    np.testing.assert_allclose(to_numpy((U * S) @ V.mT), c, atol=1e-9)
    U, S, V = em.pca_lowrank(em.from_numpy(a), center=False)        # q = min(6, m, n)
    assert tuple(S.shape) == (6,)
    np.testing.assert_allclose(to_numpy(S)[:4], np.linalg.svd(a, compute_uv=False)[:4], rtol=1e-8)


def test_lowrank_bad_input_is_named():
    A = em.zeros(5, 4)
    with pytest.raises(ValueError, match=r"svd_lowrank: q=9 must be in \[1, min\(m, n\) = 4\]"):
        em.svd_lowrank(A, q=9)
    with pytest.raises(ValueError, match="svd_lowrank: niter=-1"):
        em.svd_lowrank(A, q=2, niter=-1)
    with pytest.raises(ValueError, match="svd_lowrank: M of shape"):
        em.svd_lowrank(A, q=2, M=em.zeros(3, 3))
    with pytest.raises(ValueError, match="pca_lowrank: expected a matrix"):
        em.pca_lowrank(em.zeros(5))
    with pytest.raises(TypeError, match="svd_lowrank: expected a floating point"):
        em.svd_lowrank(em.zeros(4, 4, dtype=em.int64))


def test_svd_lowrank_singular_values_gradcheck():
    rng = np.random.default_rng(5)
    A = em.from_numpy(low_rank(rng, (), 7, 5, 2, np.float64)).requires_grad_()

    def f(A):
        em.manual_seed(0)                # the same sketch for every perturbation
        return em.svd_lowrank(A, q=3)[1][:2]
    assert gradcheck(f, (A,))


def spd(rng, m, shift=3.0):
    a = rng.standard_normal((m, m))
    return a @ a.T + np.diag(np.arange(m) * shift) + np.eye(m)


@settings(max_examples=fewer_examples(3), deadline=None)
@given(m=st.integers(9, 30), k=st.integers(1, 3), largest=st.booleans(),
       dtype=st.sampled_from(list(DTYPES)), seed=st.integers(0, 2 ** 16))
def test_lobpcg_finds_the_extreme_eigenpairs(m, k, largest, dtype, seed):
    np_dtype, tol = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    a = spd(rng, m)
    em.manual_seed(seed)
    E, X = em.lobpcg(em.from_numpy(a.astype(np_dtype)), k=k, largest=largest)
    w = np.linalg.eigvalsh(a)
    ref = w[::-1][:k] if largest else w[:k]
    assert tuple(E.shape) == (k,) and tuple(X.shape) == (m, k)
    scale = np.abs(w).max()
    # the default tol is sqrt(eps) in the relative residual: eigenvalues to ~eps
    np.testing.assert_allclose(to_numpy(E), ref, rtol=0, atol=np.sqrt(tol) * scale)
    x = to_numpy(X).astype(np.float64)
    res = a @ x - x * to_numpy(E)
    assert np.abs(res).max() <= 30 * np.sqrt(np.finfo(np_dtype).eps) * scale


def test_lobpcg_generalised_preconditioned_batched_and_tracked():
    rng = np.random.default_rng(6)
    a = np.stack([spd(rng, 20), spd(rng, 20)])
    b = np.stack([spd(rng, 20, 0.0) / 20 + np.eye(20) for _ in range(2)])
    em.manual_seed(0)
    steps = []
    E, X = em.lobpcg(em.from_numpy(a), k=2, B=em.from_numpy(b), tracker=lambda s: steps.append(
        s.ivars["istep"]))
    for i in range(2):                 # A x = lambda B x through B's Cholesky factor
        L = np.linalg.cholesky(b[i])
        Li = np.linalg.inv(L)
        w = np.linalg.eigvalsh(Li @ a[i] @ Li.T)[::-1][:2]
        np.testing.assert_allclose(to_numpy(E[i]), w, rtol=1e-10)
        x = to_numpy(X[i])
        np.testing.assert_allclose(a[i] @ x, b[i] @ x * to_numpy(E[i]), atol=1e-5)
    assert steps and steps[0] == 0
    # a preconditioner (the inverse of A's diagonal) and an initial X
    X0 = em.from_numpy(rng.standard_normal((20, 3)))
    iK = em.from_numpy(np.diag(1 / np.diag(a[0])))
    E, X = em.lobpcg(em.from_numpy(a[0]), k=2, X=X0, iK=iK, largest=False)
    np.testing.assert_allclose(to_numpy(E), np.linalg.eigvalsh(a[0])[:2], rtol=1e-10)


def test_lobpcg_gradients_are_the_exact_eigenpairs():
    rng = np.random.default_rng(1)
    A = em.from_numpy(spd(rng, 8)).requires_grad_()
    X0 = em.from_numpy(rng.standard_normal((8, 2)))

    def pairs(A, largest):
        E, X = em.lobpcg((A + A.mT) / 2, k=2, X=X0, tol=1e-14, largest=largest)
        return E, X * X[0:1].sign()     # eigenvectors' signs fixed
    for largest in (True, False):
        assert gradcheck(lambda A: pairs(A, largest), (A,))
    # the eigenvalue gradient is x x^T
    E, X = em.lobpcg(A, k=1, X=X0[:, :1], tol=1e-14)
    E.sum().backward()
    x = to_numpy(X)
    np.testing.assert_allclose(to_numpy(A.grad), x @ x.T, atol=1e-8)


def test_lobpcg_bad_input_is_named():
    A = em.eye(8, dtype=em.float64)
    with pytest.raises(ValueError, match=r"lobpcg: LOBPCG is not applicable when the number "
                       r"of A rows \(=8\) is smaller than 3 x the number of requested "
                       r"eigenpairs \(=3\)"):
        em.lobpcg(A, k=3)
    with pytest.raises(ValueError, match="lobpcg: A must be square"):
        em.lobpcg(em.zeros(9, 8))
    with pytest.raises(ValueError, match="lobpcg: need 0 < k <= n"):
        em.lobpcg(A, k=2, n=1)
    with pytest.raises(ValueError, match="lobpcg: method must be"):
        em.lobpcg(A, method="fast")
    with pytest.raises(ValueError, match="lobpcg: B must have A's shape"):
        em.lobpcg(A, B=em.eye(3))
    with pytest.raises(RuntimeError, match="lobpcg: the backward is defined only when B "
                       "is None"):
        em.lobpcg(A.clone().requires_grad_(), B=em.eye(8, dtype=em.float64))


def test_nuclear_norm():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 4))
    assert em.nuclear_norm(em.from_numpy(a)).item() == pytest.approx(np.linalg.norm(a, "nuc"))
    assert tuple(em.nuclear_norm(em.from_numpy(a), True).shape) == (1, 1)
    b = rng.standard_normal((3, 5, 4))
    np.testing.assert_allclose(to_numpy(em.nuclear_norm(em.from_numpy(b), dim=(1, 2))),
                               np.linalg.norm(b, "nuc", axis=(1, 2)))
    np.testing.assert_allclose(to_numpy(em.nuclear_norm(em.from_numpy(b), dim=(2, 0))),
                               np.linalg.norm(b, "nuc", axis=(2, 0)))
    with pytest.raises(ValueError, match="nuclear_norm: expected a 2-D tensor"):
        em.nuclear_norm(em.from_numpy(b))
    A = em.from_numpy(a).requires_grad_()
    assert gradcheck(em.nuclear_norm, (A,))
