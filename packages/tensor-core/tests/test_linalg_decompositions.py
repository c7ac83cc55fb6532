"""ember.linalg's factorizations, solvers and matrix functions (ember/ops/linalg.py over
kernels/cpu/linalg.c) against NumPy (numpy.linalg is the oracle) and reconstruction
identities, over random, ill-conditioned, rank-deficient, batched, transposed
(non-contiguous) and empty inputs; LAPACK-level backward errors (||A - QR|| / ||A||
within a small multiple of n * eps); LinAlgError and info; the derivatives,
gradchecked (and gradgradchecked where PyTorch supports it).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck, gradgradcheck
from ember_testing import fewer_examples, to_numpy

LA = em.linalg
RNG = np.random.default_rng(20)
FLOATS = (em.float32, em.float64)
EPS = {em.float32: 2.0 ** -23, em.float64: 2.0 ** -52}


def npd(dtype):
    return np.float32 if dtype is em.float32 else np.float64


def T(a, layout="contiguous", dtype=None):
    """An ember tensor holding a (last two dims transposed in memory when layout is
    'transposed': a non-contiguous operand)."""
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(npd(dtype))
    if layout == "transposed" and a.ndim >= 2:
        return em.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    return em.from_numpy(np.ascontiguousarray(a))


def N(t):
    return to_numpy(t).astype(np.float64)


def mx(x):
    """max |x| (0 for an empty array)."""
    x = np.asarray(x)
    return float(np.abs(x).max()) if x.size else 0.0


def rel(x, ref):
    """||x - ref|| / ||ref|| (max norms over the whole batch)."""
    d = np.abs(np.asarray(x, np.float64) - ref).max() if np.size(ref) else 0.0
    return d / max(np.abs(ref).max(), 1e-300) if np.size(ref) else 0.0


def well(shape, rng=RNG, dtype=np.float64):
    """Random matrices made well-conditioned (diagonally dominant-ish)."""
    a = rng.standard_normal(shape)
    n = shape[-1]
    if shape[-2] == n:
        a = a + 2 * np.sqrt(n) * np.eye(n)
    return a.astype(dtype)


def spd(shape, rng=RNG, dtype=np.float64):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


batches = st.sampled_from([(), (3,), (2, 2)])
sizes = st.integers(1, 9)
dtypes = st.sampled_from(FLOATS)
lays = st.sampled_from(["contiguous", "transposed"])
CFG = settings(max_examples=fewer_examples(4), deadline=None)


# ----------------------------------------------------------------- LU, solve, inv --

@CFG
@given(batches, sizes, sizes, dtypes, lays)
def test_lu_reconstructs_with_a_backward_error_of_a_few_ulp(batch, m, n, dtype, lay):
    a = RNG.standard_normal(batch + (m, n))
    A = T(a, lay, dtype)
    P, L, U = LA.lu(A)
    k = min(m, n)
    assert tuple(P.shape) == batch + (m, m) and tuple(L.shape) == batch + (m, k) and \
        tuple(U.shape) == batch + (k, n)
    recon = N(P) @ N(L) @ N(U)
    assert rel(recon, a.astype(npd(dtype))) <= 8 * max(m, n) * EPS[dtype]
    assert np.allclose(np.triu(N(L), 1), 0) and np.allclose(np.tril(N(U), -1), 0)
    assert np.all(np.abs(N(L)) <= 1 + 1e-6)          # partial pivoting: |L| <= 1
    LU, piv = LA.lu_factor(A) if not _singular(a) else LA.lu_factor_ex(A)[:2]
    assert piv.dtype is em.int32 and int(piv.min()) >= 1 and int(piv.max()) <= m
    P2, L2, U2 = em.lu_unpack(LU, piv)
    assert np.allclose(N(P2), N(P)) and np.allclose(N(L2), N(L)) and np.allclose(N(U2), N(U))


def _singular(a):
    return a.shape[-1] != a.shape[-2] or np.any(np.abs(np.linalg.det(a)) < 1e-12)


@CFG
@given(batches, sizes, st.integers(1, 4), dtypes, lays, st.booleans())
def test_solve_matches_numpy(batch, n, k, dtype, lay, left):
    a = well(batch + (n, n))
    b = RNG.standard_normal(batch + ((n, k) if left else (k, n)))
    X = LA.solve(T(a, lay, dtype), T(b, lay, dtype), left=left)
    ref = np.linalg.solve(a, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    tol = 1e-4 if dtype is em.float32 else 1e-11
    assert X.dtype is dtype and rel(N(X), ref) < tol


def test_solve_vector_and_broadcast_rules_are_torchs():
    a = well((2, 3, 3))
    b = RNG.standard_normal((2, 3))          # A.shape[:-1]: a batch of vectors
    X = LA.solve(T(a), T(b))
    assert tuple(X.shape) == (2, 3)
    np.testing.assert_allclose(N(X), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    v = RNG.standard_normal(3)               # 1-d: one vector for every matrix
    np.testing.assert_allclose(N(LA.solve(T(a), T(v))), np.linalg.solve(a, v[None, :, None])
                               [..., 0], rtol=1e-12)
    B = RNG.standard_normal((4, 1, 3, 2))    # batch dims broadcast: (4, 1) with (2,)
    X = LA.solve(T(a), T(B))
    assert tuple(X.shape) == (4, 2, 3, 2)
    np.testing.assert_allclose(N(X), np.linalg.solve(a, B), rtol=1e-11)
    with pytest.raises(ValueError, match=r"linalg.solve: incompatible shapes of A and B for "
                                         r"the equation AX = B \(3x3 and 4x1\)"):
        LA.solve(T(a[0]), T(np.ones((4, 1))))
    with pytest.raises(TypeError, match="linalg.solve: expected A and B to have the same "
                                        "dtype, but found A of type float64 and B of type "
                                        "float32"):
        LA.solve(T(a), T(b, dtype=em.float32))
    with pytest.raises(ValueError, match="batches of square matrices, but they are 2 by 3"):
        LA.solve(em.ones(2, 3, dtype=em.float64), em.ones(2, dtype=em.float64))


def test_ill_conditioned_solve_has_a_small_backward_error():
    n = 10
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1)   # cond ~ 1e13
    b = RNG.standard_normal((n, 2))
    X = N(LA.solve(T(hilbert), T(b)))
    # ||A x - b|| / (||A|| ||x||): backward stable, whatever the forward error
    assert np.abs(hilbert @ X - b).max() / (np.abs(hilbert).max() * np.abs(X).max()) < \
        50 * n * EPS[em.float64]


@CFG
@given(batches, st.integers(0, 9), dtypes, lays)
def test_inv_det_slogdet_match_numpy(batch, n, dtype, lay):
    a = well(batch + (n, n))
    A = T(a, lay, dtype)
    tol = 1e-4 if dtype is em.float32 else 1e-11
    assert rel(N(LA.inv(A)), np.linalg.inv(a)) < tol
    assert rel(N(A.inverse()), np.linalg.inv(a)) < tol
    np.testing.assert_allclose(N(LA.det(A)), np.linalg.det(a), rtol=tol * 10)
    np.testing.assert_allclose(N(em.det(A)), np.linalg.det(a), rtol=tol * 10)
    sign, logabs = LA.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(N(sign), rs)
    np.testing.assert_allclose(N(logabs), rl, rtol=tol, atol=tol)
    Ai, info = LA.inv_ex(A)
    assert info.dtype is em.int32 and tuple(info.shape) == batch and not N(info).any()


def test_singular_matrices_raise_linalg_error_naming_op_batch_and_reason():
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0]), np.eye(3)])
    A = T(a)
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError, match=r"^linalg.solve: the solver failed because the "
                                             r"input matrix is singular .*, batch 1$"):
        LA.solve(A, em.ones(3, 3, 1, dtype=em.float64))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: the diagonal element 2 is zero, "
                                             r"the inversion could not be completed because "
                                             r"the input matrix is singular, batch 1$"):
        LA.inv(A)
    with pytest.raises(LA.LinAlgError, match=r"linalg.lu_factor: U\[1, 1\] is zero"):
        LA.lu_factor(A[1])
    X, info = LA.solve_ex(A, em.ones(3, 3, 1, dtype=em.float64))
    assert N(info).tolist() == [0, 2, 0]
    Ai, info = LA.inv_ex(A)
    assert N(info).tolist() == [0, 2, 0]
    with pytest.raises(LA.LinAlgError, match="batch 1"):
        LA.inv_ex(A, check_errors=True)
    LU, piv, info = LA.lu_factor_ex(A)
    assert N(info).tolist() == [0, 2, 0]
    assert N(LA.det(A)).tolist() == [1.0, 0.0, 1.0]
    sign, logabs = LA.slogdet(A)
    assert N(sign).tolist() == [1.0, 0.0, 1.0] and N(logabs)[1] == -np.inf
    assert em.logdet(-em.eye(2, dtype=em.float64)).item() == 0.0    # det 1
    assert math.isnan(em.logdet(T(np.diag([-1.0, 1.0]))).item())
    with pytest.raises(LA.LinAlgError, match=r"\(1, 0\)"):   # a 2-d batch index
        LA.inv(T(np.stack([np.stack([np.eye(2), np.eye(2)]),
                           np.stack([np.zeros((2, 2)), np.eye(2)])])))


def test_bad_dtypes_and_shapes_name_the_op():
    with pytest.raises(TypeError, match="linalg.inv: expected a floating point tensor"):
        LA.inv(em.eye(2, dtype=em.int64))
    with pytest.raises(TypeError, match="linalg.inv: low precision dtypes"):
        LA.inv(em.eye(2, dtype=em.float16))
    with pytest.raises(ValueError, match=r"linalg.det: A must have at least 2 dimensions, got "
                                         r"shape \(3,\)"):
        LA.det(em.ones(3))
    with pytest.raises(ValueError, match="linalg.qr: mode must be"):
        LA.qr(em.ones(2, 2), "full")
    with pytest.raises(ValueError, match="linalg.eigh: UPLO must be 'L' or 'U'"):
        LA.eigh(em.eye(2), UPLO="X")
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented"):
        LA.lu_factor(em.eye(2), pivot=False)
    with pytest.raises(ValueError, match="linalg.lstsq: driver must be"):
        LA.lstsq(em.eye(2), em.eye(2), driver="gesv")


def test_lu_solve_left_right_adjoint():
    a = well((2, 4, 4))
    b = RNG.standard_normal((2, 4, 3))
    LU, piv = LA.lu_factor(T(a))
    np.testing.assert_allclose(N(LA.lu_solve(LU, piv, T(b))), np.linalg.solve(a, b), rtol=1e-11)
    at = np.swapaxes(a, -1, -2)
    np.testing.assert_allclose(N(LA.lu_solve(LU, piv, T(b), adjoint=True)),
                               np.linalg.solve(at, b), rtol=1e-11)
    c = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(N(LA.lu_solve(LU, piv, T(c), left=False)),
                               np.swapaxes(np.linalg.solve(at, np.swapaxes(c, -1, -2)), -1, -2),
                               rtol=1e-11)
    np.testing.assert_allclose(N(em.lu_solve(T(b), LU, piv)), np.linalg.solve(a, b), rtol=1e-11)
    LU1, piv1 = LA.lu_factor(T(a[0]))          # one factorization, a batch of B
    np.testing.assert_allclose(N(LA.lu_solve(LU1, piv1, T(b))), np.linalg.solve(a[0], b),
                               rtol=1e-11)
    LU2, piv2 = em.lu(T(a))
    assert np.array_equal(N(LU2), N(LU)) and np.array_equal(N(piv2), N(piv))


# ------------------------------------------------------------------ Cholesky --

@CFG
@given(batches, st.integers(0, 9), dtypes, lays, st.booleans())
def test_cholesky_matches_numpy_and_reads_one_triangle(batch, n, dtype, lay, upper):
    s = spd(batch + (n, n))
    junk = np.triu(RNG.standard_normal(batch + (n, n)), 1)
    given_ = np.tril(s) + junk if not upper else np.triu(s) + np.swapaxes(junk, -1, -2)
    Lm = LA.cholesky(T(given_, lay, dtype), upper=upper)
    ref = np.linalg.cholesky(s)
    if upper:
        ref = np.swapaxes(ref, -1, -2)
    tol = 1e-4 if dtype is em.float32 else 1e-12
    assert rel(N(Lm), ref) < tol
    L, info = LA.cholesky_ex(T(s, lay, dtype))
    assert not N(info).any()


def test_cholesky_not_positive_definite_message():
    a = np.stack([np.eye(4)] * 3)
    a[2, 2, 2] = -1.0
    with pytest.raises(LA.LinAlgError) as e:
        LA.cholesky(T(a))
    assert str(e.value) == ("linalg.cholesky: the factorization could not be completed "
                            "because the input is not positive-definite (the leading minor of "
                            "order 3 is not positive-definite), batch 2")
    L, info = LA.cholesky_ex(T(a))
    assert N(info).tolist() == [0, 0, 3]
    with pytest.raises(LA.LinAlgError, match="order 1"):
        LA.cholesky(T(np.full((2, 2), np.nan)))


def test_cholesky_solve_inverse_and_blocked_sizes():
    for n in (5, 70, 130):      # one block, two, three (CHOL_NB = 64)
        s = spd((n, n))
        b = RNG.standard_normal((n, 2))
        L = LA.cholesky(T(s))
        assert rel(N(L) @ N(L).T, s) < 4 * n * EPS[em.float64]
        np.testing.assert_allclose(N(em.cholesky_solve(T(b), L)), np.linalg.solve(s, b),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(N(em.cholesky_solve(T(b), L.mT, upper=True)),
                                   np.linalg.solve(s, b), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(N(em.cholesky_inverse(L)), np.linalg.inv(s), rtol=1e-9,
                                   atol=1e-12)
    s = spd((3, 3))
    np.testing.assert_allclose(N(em.cholesky(T(s), True)), np.linalg.cholesky(s).T, rtol=1e-12)
    np.testing.assert_allclose(N(T(s).cholesky()), np.linalg.cholesky(s), rtol=1e-12)


# ------------------------------------------------------------ triangular solves --

@CFG
@given(batches, sizes, st.integers(1, 3), dtypes, lays, st.booleans(), st.booleans(),
       st.booleans())
def test_solve_triangular_matches_numpy(batch, n, k, dtype, lay, upper, left, unit):
    a = RNG.standard_normal(batch + (n, n)) + 3 * np.eye(n)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri[..., range(n), range(n)] = 1.0
    b = RNG.standard_normal(batch + ((n, k) if left else (k, n)))
    X = LA.solve_triangular(T(a, lay, dtype), T(b, lay, dtype), upper=upper, left=left,
                            unitriangular=unit)
    ref = np.linalg.solve(tri, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    assert rel(N(X), ref) < (1e-4 if dtype is em.float32 else 1e-11)


def test_triangular_solve_legacy_and_blocked_sizes():
    # A random triangular matrix is often ill-conditioned (its condition number grows
    # exponentially with n), so the solution is checked by its backward error, the
    # quantity a triangular solve bounds, not against another solver's answer.
    rng = np.random.default_rng(305)
    for n in (3, 100, 150):     # TRSM_NB = 64: the GEMM updates
        a = np.triu(rng.standard_normal((n, n))) + 3 * np.eye(n)
        b = rng.standard_normal((n, 5))
        X, coeff = em.triangular_solve(T(b), T(a))
        assert np.array_equal(N(coeff), a)
        X_t, _ = em.triangular_solve(T(b), T(a), transpose=True)
        for m, x in ((a, N(X)), (a.T, N(X_t))):
            backward = np.abs(m @ x - b).max() / (np.abs(m).sum(1).max() * np.abs(x).max())
            assert backward <= 4 * n * np.finfo(np.float64).eps, (n, backward)


# ------------------------------------------- the blocked paths of large matrices --
# Sizes around the kernels' block edges (linalg.c: LU_LEAF 16 and packed panels from
# LU_PACK_MIN 64 rows, TRSM_NB 64 rows and TRSM_KC 256 columns, CHOL_LEAF 32 and
# CHOL_NB 256, the recursions' halves rounded to 8), ill-conditioned, batched and
# transposed; backward errors as LAPACK bounds them.
big = st.sampled_from([63, 64, 65, 72, 129, 200])
BIG_CFG = settings(max_examples=fewer_examples(8), deadline=None)


def graded(shape, rng, ill):
    """well(shape), or (ill) with its columns scaled over 8 orders of magnitude: a
    condition number ~1e8 that partial pivoting must handle."""
    a = well(shape, rng)
    if ill:
        a = a * np.logspace(0, -8, shape[-1])
    return a


@BIG_CFG
@given(big, st.sampled_from([1, 3, 70, 300]), st.sampled_from([(), (2,)]), dtypes, lays,
       st.booleans(), st.integers(0, 2 ** 16))
def test_blocked_lu_solve_inv_backward_errors(n, k, batch, dtype, lay, ill, seed):
    rng = np.random.default_rng(seed)
    a = graded(batch + (n, n), rng, ill)
    a[..., [0, n - 1], :] = a[..., [n - 1, 0], :]          # a pivot far from the diagonal
    A = T(a, lay, dtype)
    a = a.astype(npd(dtype)).astype(np.float64)
    eps = EPS[dtype]
    P, L, U = LA.lu(A)
    assert rel(N(P) @ N(L) @ N(U), a) <= 8 * n * eps
    assert np.all(np.abs(N(L)) <= 1 + 1e-6)
    b = rng.standard_normal(batch + (n, k))
    X = N(LA.solve(A, T(b, lay, dtype)))
    b = b.astype(npd(dtype)).astype(np.float64)
    assert mx(a @ X - b) <= 8 * n * eps * mx(a) * mx(X)
    Xi = N(LA.inv(A))
    assert mx(a @ Xi - np.eye(n)) <= 8 * n * eps * mx(a) * mx(Xi)


@BIG_CFG
@given(st.sampled_from([31, 32, 33, 65, 100, 257, 300]), st.sampled_from([(), (2,)]), dtypes,
       lays, st.booleans())
def test_blocked_cholesky_backward_error(n, batch, dtype, lay, upper):
    s = spd(batch + (n, n))
    s = s * np.logspace(0, -4, n)[:, None] * np.logspace(0, -4, n)   # ill-conditioned
    S = T(s, lay, dtype)
    s = s.astype(npd(dtype)).astype(np.float64)
    F = N(LA.cholesky(S, upper=upper))
    L = np.swapaxes(F, -1, -2) if upper else F
    assert mx(np.triu(L, 1)) == 0
    assert mx(L @ np.swapaxes(L, -1, -2) - s) <= 4 * n * EPS[dtype] * mx(s)


def test_blocked_cholesky_reports_the_failing_minor():
    for n, bad in ((100, 70), (300, 33), (300, 290)):    # in the second half, the first,
        s = spd((n, n))                                  # the last leaf
        s[bad - 1, bad - 1] = -1.0
        info = LA.cholesky_ex(T(s)).info
        assert int(info) == bad
        with pytest.raises(LA.LinAlgError, match=f"order {bad}"):
            LA.cholesky(T(s))


@BIG_CFG
@given(st.sampled_from([64, 65, 129, 200]), st.sampled_from([1, 5, 300]), dtypes, lays,
       st.booleans(), st.booleans(), st.booleans())
def test_blocked_solve_triangular(n, k, dtype, lay, upper, left, unit):
    a = RNG.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri[range(n), range(n)] = 1.0
    b = RNG.standard_normal((n, k) if left else (k, n))
    X = N(LA.solve_triangular(T(a, lay, dtype), T(b, lay, dtype), upper=upper, left=left,
                              unitriangular=unit))
    tri = tri.astype(npd(dtype)).astype(np.float64)
    b = b.astype(npd(dtype)).astype(np.float64)
    r = tri @ X - b if left else X @ tri - b
    assert mx(r) <= 8 * n * EPS[dtype] * mx(tri) * mx(X)


def test_ormqr_of_the_identity_and_of_nearly_the_identity():
    # Q I's first p columns skips the columns left of each block (orgqr); a C that is
    # not exactly I must not
    a = RNG.standard_normal((100, 70))
    geq, tau = em.geqrf(T(a))
    Qf = N(LA.qr(T(a), "complete").Q)
    for p in (1, 70, 100):
        c = np.eye(100, p)
        np.testing.assert_allclose(N(em.ormqr(geq, tau, T(c))), Qf[:, :p], atol=1e-13)
        c[99, 0] = 1e-3
        np.testing.assert_allclose(N(em.ormqr(geq, tau, T(c))), Qf @ c, atol=1e-13)


# ------------------------------------------------------------------------ QR --

@CFG
@given(batches, sizes, sizes, dtypes, lays)
def test_qr_backward_error_orthogonality_and_modes(batch, m, n, dtype, lay):
    a = RNG.standard_normal(batch + (m, n))
    A = T(a, lay, dtype)
    k = min(m, n)
    eps = EPS[dtype]
    for mode, qshape, rshape in (("reduced", (m, k), (k, n)), ("complete", (m, m), (m, n))):
        Q, R = LA.qr(A, mode)
        assert tuple(Q.shape) == batch + qshape and tuple(R.shape) == batch + rshape
        q, r = N(Q), N(R)
        assert rel(q @ r, a.astype(npd(dtype))) <= 10 * max(m, n) * eps
        assert mx(np.swapaxes(q, -1, -2) @ q - np.eye(q.shape[-1])) <= 10 * m * eps
        assert np.allclose(np.tril(r, -1), 0)
        assert np.allclose(np.abs(np.diagonal(r, 0, -2, -1)),
                           np.abs(np.diagonal(np.linalg.qr(a, mode=mode)[1], 0, -2, -1)),
                           rtol=1e-3, atol=1e-5)
    Q, R = LA.qr(A, "r")
    assert Q.numel() == 0 and tuple(R.shape) == batch + (k, n)


def test_blocked_qr_and_householder_product():
    for m, n in ((100, 70), (70, 100), (200, 200)):     # QR_NB = 32: compact WY updates
        a = RNG.standard_normal((m, n))
        Q, R = LA.qr(T(a))
        assert rel(N(Q) @ N(R), a) <= 10 * max(m, n) * EPS[em.float64]
        k = min(m, n)
        assert np.abs(N(Q).T @ N(Q) - np.eye(k)).max() <= 10 * m * EPS[em.float64]
    a = RNG.standard_normal((2, 6, 4))
    geq, tau = em.geqrf(T(a))
    Q, R = LA.qr(T(a))
    np.testing.assert_allclose(N(LA.householder_product(geq, tau)), N(Q), atol=1e-13)
    np.testing.assert_allclose(N(em.orgqr(geq, tau)), N(Q), atol=1e-13)
    # ormqr: Q C, Q^T C, C Q, C Q^T with the full Q
    Qf = N(LA.qr(T(a), "complete").Q)
    c = RNG.standard_normal((2, 6, 3))
    d = RNG.standard_normal((2, 3, 6))
    np.testing.assert_allclose(N(em.ormqr(geq, tau, T(c))), Qf @ c, atol=1e-12)
    np.testing.assert_allclose(N(em.ormqr(geq, tau, T(c), transpose=True)),
                               np.swapaxes(Qf, -1, -2) @ c, atol=1e-12)
    np.testing.assert_allclose(N(em.ormqr(geq, tau, T(d), left=False)), d @ Qf, atol=1e-12)
    np.testing.assert_allclose(N(em.ormqr(geq, tau, T(d), left=False, transpose=True)),
                               d @ np.swapaxes(Qf, -1, -2), atol=1e-12)
    Q, R = em.qr(T(a), some=False)
    assert tuple(Q.shape) == (2, 6, 6)


# ------------------------------------------------------------------------ eigh --

@CFG
@given(batches, st.integers(0, 9), dtypes, lays, st.sampled_from(["L", "U"]))
def test_eigh_matches_numpy(batch, n, dtype, lay, uplo):
    s = RNG.standard_normal(batch + (n, n))
    s = s + np.swapaxes(s, -1, -2)
    junk = np.triu(RNG.standard_normal(batch + (n, n)), 1)
    given_ = np.tril(s) + junk if uplo == "L" else np.triu(s) + np.swapaxes(junk, -1, -2)
    w, V = LA.eigh(T(given_, lay, dtype), UPLO=uplo)
    eps = EPS[dtype]
    scale = max(mx(s), 1.0) if s.size else 1.0
    np.testing.assert_allclose(N(w), np.linalg.eigvalsh(s), atol=20 * max(n, 1) * eps * scale)
    v = N(V)
    assert mx(s @ v - v * N(w)[..., None, :]) <= 20 * max(n, 1) * eps * scale
    assert mx(np.swapaxes(v, -1, -2) @ v - np.eye(n)) <= 20 * max(n, 1) * eps
    np.testing.assert_allclose(N(LA.eigvalsh(T(given_, lay, dtype), UPLO=uplo)), N(w), atol=1e-6)


def test_eigh_degenerate_and_larger():
    w, V = LA.eigh(em.eye(5, dtype=em.float64) * 2)
    assert N(w).tolist() == [2.0] * 5
    n = 120
    s = RNG.standard_normal((n, n))
    s = s + s.T
    w, V = LA.eigh(T(s))
    v = N(V)
    assert np.abs(s @ v - v * N(w)).max() <= 10 * n * EPS[em.float64] * np.abs(s).max()
    with pytest.raises(LA.LinAlgError, match="linalg.eigh: the input matrix contains "
                                             "non-finite values"):
        LA.eigh(T(np.full((3, 3), np.nan)))


def _spectra(n, rng):
    """Symmetric n x n test matrices whose spectra stress divide and conquer: random,
    clustered (repeated eigenvalues, some perturbed by 1e-12), rank one, graded (1e-12 ..
    1), tridiagonal with tiny couplings (splits), and the Wilkinson-like W+."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = rng.standard_normal((n, n))
    yield "random", s + s.T
    lam = np.repeat(np.arange(n // 4 + 1.0), 4)[:n] + 1e-12 * rng.standard_normal(n)
    lam[::3] = 2.0
    yield "clustered", (q * lam) @ q.T
    v = rng.standard_normal(n)
    yield "rank one", np.outer(v, v)
    yield "graded", (q * np.logspace(-12, 0, n)) @ q.T
    off = rng.standard_normal(n - 1)
    off[::7] = 1e-300
    yield "split", np.diag(rng.standard_normal(n)) + np.diag(off, 1) + np.diag(off, -1)
    yield "wilkinson", np.diag(np.abs(np.arange(n) - n // 2) * 1.0) + np.diag(
        np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)


@pytest.mark.parametrize("n", [48, 67, 130])
def test_eigh_divide_and_conquer(n):
    """From 48 rows eigh is blocked tridiagonalisation + divide and conquer + blocked
    back-transformation (LAPACK's syevd): eigenvalues against NumPy, residual and
    orthogonality at LAPACK's level on spectra that exercise deflation."""
    rng = np.random.default_rng(n)
    for name, s in _spectra(n, rng):
        scale = np.linalg.norm(s, 2)
        for dtype in FLOATS:
            eps = EPS[dtype]
            w, V = LA.eigh(T(s, dtype=dtype))
            w, v = N(w), N(V)
            sd = s.astype(npd(dtype)).astype(np.float64)
            ref = np.linalg.eigvalsh(sd)
            assert mx(w - ref) <= 4 * n * eps * scale, (name, dtype)
            assert mx(sd @ v - v * w) <= 4 * n * eps * scale, (name, dtype)
            assert mx(v.T @ v - np.eye(n)) <= 4 * n * eps, (name, dtype)
            assert mx(N(LA.eigvalsh(T(s, dtype=dtype))) - ref) <= 4 * n * eps * scale
    b = rng.standard_normal((2, 3, n, n))
    b = b + np.swapaxes(b, -1, -2)
    w, V = LA.eigh(T(b, "transposed"))
    v = N(V)
    assert mx(b @ v - v * N(w)[..., None, :]) <= 4 * n * EPS[em.float64] * mx(b) * n ** 0.5


# ------------------------------------------------------------------------- SVD --

@CFG
@given(batches, st.integers(0, 8), st.integers(0, 8), dtypes, lays, st.booleans())
def test_svd_matches_numpy(batch, m, n, dtype, lay, deficient):
    a = RNG.standard_normal(batch + (m, n))
    if deficient and min(m, n) > 1:
        a = a[..., :, :1] @ a[..., :1, :] + a[..., :, 1:2] @ a[..., 1:2, :]   # rank 2
    A = T(a, lay, dtype)
    eps = EPS[dtype]
    k = min(m, n)
    scale = max(mx(a), 1.0) if a.size else 1.0
    for full in (False, True):
        U, S, Vh = LA.svd(A, full_matrices=full)
        mu, nv = (m, n) if full else (k, k)
        assert tuple(U.shape) == batch + (m, mu) and tuple(S.shape) == batch + (k,) and \
            tuple(Vh.shape) == batch + (nv, n)
        u, s, vh = N(U), N(S), N(Vh)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False) if k else s,
                                   atol=20 * max(m, n, 1) * eps * scale)
        assert np.all(np.diff(s, axis=-1) <= 0)
        recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        assert mx(recon - a) <= 20 * max(m, n, 1) * eps * scale
        assert mx(np.swapaxes(u, -1, -2) @ u - np.eye(u.shape[-1])) <= 20 * max(m, 1) * eps
        assert mx(vh @ np.swapaxes(vh, -1, -2) - np.eye(vh.shape[-2])) <= \
            20 * max(n, 1) * eps
    np.testing.assert_allclose(N(LA.svdvals(A)), N(S), atol=1e-6)


def _spectrum(kind, m, n, rng):
    """An m x n matrix whose singular values are of the named kind."""
    k = min(m, n)
    U = np.linalg.qr(rng.standard_normal((m, k)))[0]
    V = np.linalg.qr(rng.standard_normal((n, k)))[0]
    if kind == "random":
        return rng.standard_normal((m, n))
    if kind == "rank_deficient":
        r = k // 3
        return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))
    if kind == "zero_columns":
        a = rng.standard_normal((m, n))
        a[:, ::3] = 0
        return a
    s = {"ill_conditioned": np.logspace(0, -13, k), "graded": np.logspace(0, -250, k),
         "repeated": np.ones(k), "clustered": 1 + 1e-11 * rng.standard_normal(k),
         "two_clusters": np.where(np.arange(k) % 2, 1.0, 1e-9)}[kind]
    return (U * s) @ V.T


@pytest.mark.parametrize("kind", ["random", "ill_conditioned", "graded", "rank_deficient",
                                  "zero_columns", "repeated", "clustered", "two_clusters"])
@pytest.mark.parametrize("m,n", [(33, 33), (40, 33), (33, 40), (130, 130), (200, 70),
                                 (70, 200)])
def test_svd_divide_and_conquer(kind, m, n):
    """From 32 columns the vectors come from the blocked bidiagonalisation and the
    bidiagonal divide and conquer (more than 64: blocked panels; more than 24: merges):
    LAPACK's backward error and orthogonality on every kind of spectrum."""
    rng = np.random.default_rng(m * 1000 + n)
    a = _spectrum(kind, m, n, rng)
    k = min(m, n)
    for dtype in FLOATS:
        eps = EPS[dtype]
        ad = a.astype(npd(dtype)).astype(np.float64)
        norm = max(np.linalg.norm(ad, 2), 1e-300)
        U, S, Vh = LA.svd(T(ad, dtype=dtype), full_matrices=False)
        u, s, vh = N(U), N(S), N(Vh)
        assert np.linalg.norm((u * s) @ vh - ad, 2) <= 10 * k * eps * norm, (kind, dtype)
        assert mx(u.T @ u - np.eye(k)) <= 10 * k * eps, (kind, dtype)
        assert mx(vh @ vh.T - np.eye(k)) <= 10 * k * eps, (kind, dtype)
        assert np.all(np.diff(s) <= 0) and np.all(s >= 0)
        ref = np.linalg.svd(ad, compute_uv=False)
        assert mx(s - ref) <= 10 * k * eps * norm, (kind, dtype)
        assert mx(N(LA.svdvals(T(ad, dtype=dtype))) - ref) <= 10 * k * eps * norm


def test_svd_divide_and_conquer_batched_and_transposed():
    a = RNG.standard_normal((2, 3, 50, 45))
    for lay in ("contiguous", "transposed"):
        U, S, Vh = LA.svd(T(a, lay), full_matrices=False)
        u, s, vh = N(U), N(S), N(Vh)
        assert mx((u * s[..., None, :]) @ vh - a) <= 10 * 50 * EPS[em.float64] * mx(a)
        assert mx(np.swapaxes(u, -1, -2) @ u - np.eye(45)) <= 10 * 50 * EPS[em.float64]
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)
    U, S, Vh = LA.svd(T(a[0, 0]))                       # full_matrices completes U
    assert tuple(U.shape) == (50, 50)
    assert mx(N(U).T @ N(U) - np.eye(50)) <= 10 * 50 * EPS[em.float64]
    with pytest.raises(LA.LinAlgError, match="non-finite"):
        LA.svd(T(np.full((40, 40), np.nan)))
    with pytest.raises(LA.LinAlgError, match="non-finite"):
        LA.svdvals(T(np.full((40, 40), np.inf)))


def test_svd_legacy_larger_and_errors():
    a = RNG.standard_normal((5, 3))
    U, S, V = em.svd(T(a))
    np.testing.assert_allclose((N(U) * N(S)) @ N(V).T, a, atol=1e-13)
    assert tuple(U.shape) == (5, 3) and tuple(V.shape) == (3, 3)
    U, S, V = em.svd(T(a), some=False)
    assert tuple(U.shape) == (5, 5)
    U, S, V = em.svd(T(a), compute_uv=False)
    assert tuple(U.shape) == (5, 5) and not N(U).any() and tuple(V.shape) == (3, 3)
    for m, n in ((150, 60), (60, 150)):
        a = RNG.standard_normal((m, n))
        U, S, Vh = LA.svd(T(a), full_matrices=False)
        assert np.abs((N(U) * N(S)) @ N(Vh) - a).max() <= 20 * m * EPS[em.float64] * \
            np.abs(a).max()
    U, S, Vh = LA.svd(em.empty(0, 3, dtype=em.float64))
    assert tuple(U.shape) == (0, 0) and S.numel() == 0 and np.array_equal(N(Vh), np.eye(3))
    with pytest.raises(LA.LinAlgError, match="non-finite"):
        LA.svd(T(np.array([[1.0, np.inf], [0.0, 1.0]])))
    assert LA.svd(T(a), driver="gesvd").S.shape == (60,)


# ------------------------------------------------- lstsq, pinv, rank, cond, norms --

@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_per_driver(driver):
    a = RNG.standard_normal((2, 6, 3))
    b = RNG.standard_normal((2, 6, 2))
    X, res, rank, sv = LA.lstsq(T(a), T(b), driver=driver)
    ref = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)])
    np.testing.assert_allclose(N(X), ref, rtol=1e-10, atol=1e-12)
    # PyTorch's results per driver (tall, full rank)
    if driver == "gelsy":
        assert res.numel() == 0
    else:
        np.testing.assert_allclose(N(res), ((a @ ref - b) ** 2).sum(-2), rtol=1e-9)
    if driver == "gels":
        assert rank.numel() == 0
    else:
        assert rank.dtype is em.int64 and N(rank).tolist() == [3, 3]
    if driver in ("gelsd", "gelss"):
        np.testing.assert_allclose(N(sv), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    else:
        assert sv.numel() == 0
    # wide: minimum-norm solution, no residuals
    aw = RNG.standard_normal((3, 5))
    bw = RNG.standard_normal((3, 2))
    X, res, rank, sv = LA.lstsq(T(aw), T(bw), driver=driver)
    np.testing.assert_allclose(N(X), np.linalg.lstsq(aw, bw, rcond=None)[0], rtol=1e-10)
    assert res.numel() == 0
    # vector right-hand side
    X = LA.lstsq(T(a[0]), T(b[0, :, 0]), driver=driver).solution
    assert tuple(X.shape) == (3,)


def test_lstsq_rank_deficient_is_minimum_norm():
    a = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 4))   # rank 2
    b = RNG.standard_normal((6, 1))
    X, res, rank, sv = LA.lstsq(T(a), T(b), driver="gelsd")
    np.testing.assert_allclose(N(X), np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-8, atol=1e-10)
    assert int(rank) == 2 and res.numel() == 0


def test_pinv_matrix_rank_cond_against_numpy():
    a = RNG.standard_normal((3, 5, 4))
    a[1] = a[1, :, :2] @ RNG.standard_normal((2, 4))               # rank 2
    np.testing.assert_allclose(N(LA.pinv(T(a))), np.linalg.pinv(a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(N(em.pinverse(T(a))), np.linalg.pinv(a, rcond=1e-15),
                               rtol=1e-6, atol=1e-9)
    assert N(LA.matrix_rank(T(a))).tolist() == [4, 2, 4]
    assert LA.matrix_rank(T(a)).dtype is em.int64
    assert N(LA.matrix_rank(T(a), atol=1e6)).tolist() == [0, 0, 0]
    s = spd((4, 4))
    s[0] = s[:, 0] = 0
    assert int(LA.matrix_rank(T(s), hermitian=True)) == 3
    np.testing.assert_allclose(N(LA.pinv(T(s), hermitian=True)), np.linalg.pinv(s), rtol=1e-9,
                               atol=1e-12)
    sq = well((2, 4, 4))
    for p in (None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1):
        np.testing.assert_allclose(N(LA.cond(T(sq), p)), np.linalg.cond(sq, p), rtol=1e-9)
    assert N(LA.cond(T(np.zeros((2, 2))), "fro")).item() == np.inf
    for ord_ in (2, -2, "nuc"):
        np.testing.assert_allclose(N(LA.matrix_norm(T(a), ord_)),
                                   np.linalg.norm(a, ord_, (-2, -1)), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(N(LA.norm(T(a[0]), ord_)), np.linalg.norm(a[0], ord_),
                                   rtol=1e-12)
    np.testing.assert_allclose(N(LA.matrix_norm(T(a), 2, dim=(0, 2), keepdim=True)),
                               np.linalg.norm(np.moveaxis(a, 1, 0), 2, (-2, -1))[None, :, None],
                               rtol=1e-12)


# ------------------------------------------------------------ matrix functions --

def test_matrix_power():
    a = well((2, 3, 3)) / 4
    for n in (0, 1, 2, 3, 7, -1, -3):
        np.testing.assert_allclose(N(LA.matrix_power(T(a), n)), np.linalg.matrix_power(a, n),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(T(a).matrix_power(2)), a @ a, rtol=1e-12)
    with pytest.raises(ValueError, match="linalg.matrix_power: A must be batches of square"):
        LA.matrix_power(em.ones(2, 3), 2)


def test_matrix_exp_against_references():
    # symmetric: V exp(w) V^T; norms from tiny to large (squaring steps vary per matrix)
    s = RNG.standard_normal((4, 5, 5))
    s = s + np.swapaxes(s, -1, -2)
    s *= np.array([1e-3, 0.5, 4.0, 30.0])[:, None, None]
    w, v = np.linalg.eigh(s)
    ref = (v * np.exp(w)[..., None, :]) @ np.swapaxes(v, -1, -2)
    got = N(LA.matrix_exp(T(s)))
    np.testing.assert_allclose(got, ref, rtol=1e-11 * 1e3, atol=1e-12 * np.abs(ref).max())
    t = 2.5                                   # a rotation generator
    np.testing.assert_allclose(N(em.matrix_exp(T(np.array([[0.0, -t], [t, 0.0]])))),
                               [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], atol=1e-14)
    nil = np.triu(RNG.standard_normal((4, 4)), 1)      # nilpotent: the series ends
    ref = np.eye(4) + nil + nil @ nil / 2 + nil @ nil @ nil / 6
    np.testing.assert_allclose(N(LA.matrix_exp(T(nil))), ref, atol=1e-13)
    np.testing.assert_allclose(N(LA.matrix_exp(T(s[1], dtype=em.float32))), (v[1] * np.exp(
        w[1])) @ v[1].T, rtol=1e-4, atol=1e-5 * np.exp(w[1]).max())


def test_tensorinv_tensorsolve_vander():
    a = well((6, 6)).reshape(6, 2, 3)
    np.testing.assert_allclose(N(LA.tensorinv(T(a), ind=1)), np.linalg.tensorinv(a, ind=1),
                               rtol=1e-11)
    b4 = well((6, 6)).reshape(2, 3, 6)
    np.testing.assert_allclose(N(LA.tensorinv(T(b4), ind=2)), np.linalg.tensorinv(b4, ind=2),
                               rtol=1e-11)
    A = well((6, 6)).reshape(2, 3, 6)
    B = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(N(LA.tensorsolve(T(A), T(B))), np.linalg.tensorsolve(A, B),
                               rtol=1e-11)
    A2 = well((6, 6)).reshape(6, 2, 3)
    B2 = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(N(LA.tensorsolve(T(A2), T(B2), dims=(0,))),
                               np.linalg.tensorsolve(A2, B2, axes=(0,)), rtol=1e-10)
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    np.testing.assert_allclose(N(LA.vander(T(x))), np.stack([np.vander(r, increasing=True)
                                                             for r in x]))
    assert tuple(LA.vander(T(x), N=5).shape) == (2, 3, 5)
    with pytest.raises(ValueError, match="linalg.tensorinv"):
        LA.tensorinv(T(np.ones((2, 3))), ind=1)


# ------------------------------------------------------------- nonsymmetric eigen --

@pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
def test_eig_kernel_eigenpairs_against_numpy(n):
    """The kernel's real-form results (ember.linalg.eig raises until complex dtypes)."""
    from ember.ops.linalg import _geev
    a = RNG.standard_normal((2, n, n))
    wr, wi, V = _geev(T(a), True, "linalg.eig")
    for b in range(2):
        w = N(wr)[b] + 1j * N(wi)[b]
        np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a[b])),
                                   atol=1e-10 * n)
        v = N(V)[b].astype(complex)
        j = 0
        while j < n:
            if N(wi)[b, j] != 0:
                re, im = N(V)[b][:, j], N(V)[b][:, j + 1]
                v[:, j], v[:, j + 1] = re + 1j * im, re - 1j * im
                j += 2
            else:
                j += 1
        assert np.abs(a[b] @ v - v * w).max() <= 1e-12 * n * np.abs(a[b]).max()
        np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, rtol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(em.float64, 1e-12), (em.float32, 1e-5)])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_eig_returns_complex_eigenpairs(n, dtype, tol):
    a = RNG.standard_normal((3, n, n))
    w, v = LA.eig(T(a).to(dtype))
    cdt = em.complex128 if dtype is em.float64 else em.complex64
    assert w.dtype is cdt and v.dtype is cdt
    assert tuple(w.shape) == (3, n) and tuple(v.shape) == (3, n, n)
    for b in range(3):
        np.testing.assert_allclose(np.sort_complex(to_numpy(w)[b]),
                                   np.sort_complex(np.linalg.eigvals(a[b])), atol=tol * 10 * n)
        vb, wb = to_numpy(v)[b], to_numpy(w)[b]
        assert np.abs(a[b] @ vb - vb * wb).max() <= tol * 10 * n * np.abs(a).max()
    assert LA.eigvals(T(a).to(dtype)).dtype is cdt
    np.testing.assert_allclose(np.sort_complex(to_numpy(LA.eigvals(T(a)))[0]),
                               np.sort_complex(np.linalg.eigvals(a[0])), atol=1e-10 * n)


# ------------------------------------------------------------------ batches, empty --

def test_many_small_matrices_batched():
    a = well((500, 4, 4))
    b = RNG.standard_normal((500, 4, 2))
    np.testing.assert_allclose(N(LA.solve(T(a), T(b))), np.linalg.solve(a, b), rtol=1e-10)
    s = spd((500, 4, 4))
    np.testing.assert_allclose(N(LA.cholesky(T(s))), np.linalg.cholesky(s), rtol=1e-12)
    np.testing.assert_allclose(N(LA.eigvalsh(T(s))), np.linalg.eigvalsh(s), rtol=1e-12)
    np.testing.assert_allclose(N(LA.svdvals(T(a))), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-11)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 32, 33])
def test_small_matrix_paths_batched(n, dtype):
    # the small-matrix kernels (linalg.c: orders <= SMALL_UNROLL compiled per order,
    # <= SMALL_N without workspace): one right-hand side, pivoting needed (a zero
    # diagonal), qr's square Q
    rng = np.random.default_rng(n)
    a = well((64, n, n), rng)
    if n > 1:
        a[:, range(n), range(n)] = 0.0
    a[1] = a[1][::-1]                             # a reversed row order
    b = rng.standard_normal((64, n))
    A = T(a, dtype=dtype)
    a = a.astype(npd(dtype)).astype(np.float64)
    eps = EPS[dtype]
    X = N(LA.solve(A, T(b, dtype=dtype)))
    b = b.astype(npd(dtype)).astype(np.float64)
    r = np.einsum("bij,bj->bi", a, X) - b
    assert mx(r) <= 8 * n * eps * mx(a) * mx(X)
    Q, R = LA.qr(A)
    q, rr = N(Q), N(R)
    assert rel(q @ rr, a) <= 10 * n * eps
    assert mx(np.swapaxes(q, -1, -2) @ q - np.eye(n)) <= 10 * n * eps
    assert mx(np.tril(rr, -1)) == 0
    s = a.copy()
    s[5, :, 0] = 0.0                               # singular: entry 5 of the batch
    with pytest.raises(LA.LinAlgError, match="batch 5"):
        LA.solve(T(s, dtype=dtype), T(b, dtype=dtype))


def test_empty_inputs():
    e = em.empty(0, 0, dtype=em.float64)
    assert tuple(LA.inv(e).shape) == (0, 0) and LA.det(e).item() == 1.0
    assert tuple(LA.solve(em.empty(3, 0, 0, dtype=em.float64),
                          em.empty(3, 0, 2, dtype=em.float64)).shape) == (3, 0, 2)
    w, V = LA.eigh(e)
    assert w.numel() == 0 and tuple(V.shape) == (0, 0)
    assert tuple(LA.cholesky(em.empty(2, 0, 0)).shape) == (2, 0, 0)
    Q, R = LA.qr(em.empty(0, 3, dtype=em.float64))
    assert tuple(Q.shape) == (0, 0) and tuple(R.shape) == (0, 3)
    assert LA.svdvals(em.empty(4, 0)).numel() == 0
    assert tuple(LA.pinv(em.empty(4, 0)).shape) == (0, 4)
    assert tuple(LA.inv(em.empty(0, 3, 3)).shape) == (0, 3, 3)


def test_on_a_device_the_results_stay_on_it(device):
    """LU, Cholesky, triangular solves, QR, eigh, SVD and eig have device kernels in
    every float and complex dtype (test_linalg_device.py): results stay on the device."""
    if device.type == "cpu":
        pytest.skip("the CPU has the kernels")
    A = em.eye(3, device=device)
    assert LA.solve(A, em.ones(3, device=device)).device == A.device
    Z = A.to(em.complex64)
    w, v = LA.eig(Z)
    assert w.device == v.device == Z.device and w.dtype == em.complex64
    np.testing.assert_allclose(w.cpu().numpy(), np.ones(3), atol=1e-6)


# ------------------------------------------------------------------- derivatives --

def _x(a):
    return em.from_numpy(np.array(a, dtype=np.float64)).requires_grad_()


def test_gradcheck_solve_inv_det_slogdet():
    a, b = _x(well((2, 3, 3))), _x(RNG.standard_normal((2, 3, 2)))
    assert gradcheck(lambda A, B: LA.solve(A, B), (a, b))
    assert gradcheck(lambda A, B: LA.solve(A, B.mT, left=False), (a, b))
    assert gradcheck(lambda A: LA.solve(A, em.ones(3, dtype=em.float64)), (a,))
    assert gradcheck(LA.inv, (a,))
    assert gradcheck(LA.det, (a,))
    assert gradcheck(lambda A: LA.slogdet(A).logabsdet, (a,))
    assert gradcheck(em.logdet, (_x(spd((3, 3))),))
    sing = _x(np.diag([1.0, 2.0, 0.0]) + np.triu(np.ones((3, 3)), 1))
    assert gradcheck(LA.det, (sing,))                  # the cofactor path
    assert gradgradcheck(lambda A, B: LA.solve(A, B), (a, b))
    assert gradgradcheck(LA.inv, (a,))
    assert gradgradcheck(LA.det, (a,))


def test_gradcheck_cholesky_triangular_lu():
    s = _x(spd((2, 3, 3)))
    sym = lambda f: (lambda A: f((A + A.mT) / 2))      # noqa: E731  (a symmetric input)
    assert gradcheck(sym(LA.cholesky), (s,))
    assert gradcheck(sym(lambda A: LA.cholesky(A, upper=True)), (s,))
    assert gradgradcheck(sym(LA.cholesky), (s,))
    a, b = _x(well((2, 3, 3))), _x(RNG.standard_normal((2, 3, 2)))
    for upper in (False, True):
        for unit in (False, True):
            assert gradcheck(lambda A, B: LA.solve_triangular(A, B, upper=upper,
                                                             unitriangular=unit), (a, b))
            assert gradcheck(lambda A, B: LA.solve_triangular(A, B.mT, upper=upper, left=False,
                                                             unitriangular=unit), (a, b))
    assert gradgradcheck(lambda A, B: LA.solve_triangular(A, B, upper=True), (a, b))
    assert gradcheck(lambda A: LA.lu_factor(A).LU, (a,))
    assert gradcheck(lambda A, B: LA.lu_solve(*LA.lu_factor(A), B), (a, b))
    assert gradcheck(lambda A, B: LA.lu_solve(*LA.lu_factor(A), B, adjoint=True), (a, b))
    assert gradcheck(lambda A: LA.lu(A).U, (a,))


def test_gradcheck_non_square_lu_and_householder():
    """lu_factor / lu of wide and tall matrices (PyTorch's linalg_lu_backward), and
    householder_product / ormqr in A, tau and C (composed of ember ops under grad)."""
    for shape in ((3, 5), (5, 3), (2, 4, 2), (3, 3)):
        a = _x(RNG.standard_normal(shape))
        assert gradcheck(lambda A: LA.lu_factor(A).LU, (a,))
        assert gradcheck(lambda A: LA.lu(A).L, (a,))
        assert gradcheck(lambda A: LA.lu(A).U, (a,))
        assert gradgradcheck(lambda A: LA.lu_factor(A).LU, (a,))
    g = RNG.standard_normal((2, 5, 3))
    h, tau = em.geqrf(em.from_numpy(g))
    h, tau = _x(N(h)), _x(N(tau))
    assert gradcheck(LA.householder_product, (h, tau))
    assert gradgradcheck(LA.householder_product, (h, tau))
    np.testing.assert_allclose(N(LA.householder_product(h, tau)),
                               N(LA.qr(em.from_numpy(g)).Q), atol=1e-12)
    c = _x(RNG.standard_normal((2, 5, 2)))
    for transpose in (False, True):
        assert gradcheck(lambda H, t, C: em.ormqr(H, t, C, transpose=transpose), (h, tau, c))
        ct = _x(RNG.standard_normal((2, 2, 5)))
        assert gradcheck(lambda H, t, C: em.ormqr(H, t, C, left=False, transpose=transpose),
                         (h, tau, ct))
        with em.no_grad():
            ref = N(em.ormqr(h, tau, c, transpose=transpose))
        np.testing.assert_allclose(N(em.ormqr(h, tau, c, transpose=transpose)), ref,
                                   atol=1e-12)


def test_gradcheck_qr_eigh_svd():
    for shape in ((4, 3), (3, 3), (3, 5)):
        a = _x(RNG.standard_normal((2,) + shape))
        assert gradcheck(lambda A: LA.qr(A).Q, (a,))
        assert gradcheck(lambda A: LA.qr(A).R, (a,))
        assert gradgradcheck(lambda A: LA.qr(A).Q.sum(-1), (a,))
        # svd: gauge-invariant functions of U and Vh (U diag(S) Vh and |U|) and S
        assert gradcheck(lambda A: LA.svdvals(A), (a,))
        assert gradcheck(lambda A: (lambda U, S, Vh: (U * S.unsqueeze(-2)) @ Vh)(
            *LA.svd(A, full_matrices=False)), (a,))
        assert gradcheck(lambda A: (lambda U, S, Vh: U[..., :1] * Vh[..., :1, :].sum())(
            *LA.svd(A, full_matrices=False)), (a,))
    a = _x(RNG.standard_normal((2, 3, 3)))
    assert gradgradcheck(lambda A: LA.svdvals(A), (a,))
    s = _x(RNG.standard_normal((2, 4, 4)))
    sym = lambda A: A + A.mT                            # noqa: E731
    assert gradcheck(lambda A: LA.eigvalsh(sym(A)), (s,))
    # eigenvectors up to sign: V diag(w) V^T and V * V are invariant
    assert gradcheck(lambda A: (lambda w, V: V * V)(*LA.eigh(sym(A))), (s,))
    assert gradgradcheck(lambda A: LA.eigvalsh(sym(A)), (s,))
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows"):
        LA.qr(_x(RNG.standard_normal((4, 3))), "complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        LA.qr(_x(RNG.standard_normal((4, 3))), "r").R.sum().backward()
    # full_matrices=True: the completing columns are constants (PyTorch's rule)
    a = _x(RNG.standard_normal((4, 3)))
    assert gradcheck(lambda A: (lambda U, S, Vh: U[..., :, :3].abs().sum(-1) + S.sum())(
        *LA.svd(A)), (a,))


def test_eigh_warns_on_a_repeated_spectrum():
    a = em.eye(3, dtype=em.float64).requires_grad_()
    w, V = LA.eigh(a)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        V.sum().backward()
    assert any("repeated eigenvalues" in str(c.message) for c in caught)


def test_gradcheck_lstsq_pinv_matrix_exp_power():
    a = _x(RNG.standard_normal((5, 3)))
    b = _x(RNG.standard_normal((5, 2)))
    for driver in ("gels", "gelsd"):
        assert gradcheck(lambda A, B: LA.lstsq(A, B, driver=driver).solution, (a, b))
    assert gradcheck(LA.pinv, (a,))
    assert gradcheck(lambda A: LA.pinv(A + A.mT, hermitian=True),
                     (_x(RNG.standard_normal((3, 3))),))
    m = _x(RNG.standard_normal((2, 3, 3)))
    assert gradcheck(LA.matrix_exp, (m,))
    assert gradgradcheck(LA.matrix_exp, (_x(RNG.standard_normal((3, 3)) / 3),))
    assert gradcheck(lambda A: LA.matrix_power(A, -2), (_x(well((3, 3))),))
