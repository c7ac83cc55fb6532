"""ember.linalg on complex64/complex128 against NumPy: the factorizations and solvers
(LU, Cholesky, QR and its reflectors, triangular solves), det/slogdet, the Hermitian
eigensolver and the SVD (real eigenvalues and singular values, unitary vectors), lstsq,
pinv, matrix_rank, the norms (real results), cond and matrix_exp, batched and
transposed; eig/eigvals of complex matrices.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import fewer_examples, to_numpy

LA = em.linalg
RNG = np.random.default_rng(2020)
CPLX = (em.complex64, em.complex128)
EPS = {em.complex64: 2.0 ** -23, em.complex128: 2.0 ** -52}
REAL = {em.complex64: em.float32, em.complex128: em.float64}
NPD = {em.complex64: np.complex64, em.complex128: np.complex128}

batches = st.sampled_from([(), (3,), (2, 2)])
sizes = st.integers(1, 7)
dtypes = st.sampled_from(CPLX)
lays = st.sampled_from(["contiguous", "transposed"])
CFG = settings(max_examples=fewer_examples(4), deadline=None)


def crandn(shape, rng=RNG):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def T(a, layout="contiguous", dtype=em.complex128):
    a = np.asarray(a).astype(NPD[dtype])
    if layout == "transposed" and a.ndim >= 2:
        return em.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    return em.from_numpy(np.ascontiguousarray(a))


def N(t):
    return np.asarray(to_numpy(t)).astype(np.complex128)


def mx(x):
    x = np.asarray(x)
    return float(np.abs(x).max()) if x.size else 0.0


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def well(shape, rng=RNG):
    a = crandn(shape, rng)
    n = shape[-1]
    return a + 2 * np.sqrt(n) * np.eye(n) if shape[-2] == n else a


def hpd(shape, rng=RNG):
    a = crandn(shape, rng)
    n = shape[-1]
    return a @ H(a) + n * np.eye(n)


def tol(dtype, n, scale=1.0):
    return 30 * max(n, 1) * EPS[dtype] * scale


@CFG
@given(batches, sizes, sizes, dtypes, lays)
def test_lu_and_qr_reconstruct(batch, m, n, dtype, lay):
    a = crandn(batch + (m, n))
    A = T(a, lay, dtype)
    ad = N(T(a, dtype=dtype))
    P, L, U = LA.lu(A)
    assert P.dtype is dtype and L.dtype is dtype
    assert mx(N(P) @ N(L) @ N(U) - ad) <= tol(dtype, max(m, n), mx(ad))
    assert mx(np.triu(N(L), 1)) == 0 and mx(np.tril(N(U), -1)) == 0
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(A, mode=mode)
        q, r = N(Q), N(R)
        assert mx(q @ r - ad) <= tol(dtype, max(m, n), mx(ad))
        assert mx(H(q) @ q - np.eye(q.shape[-1])) <= tol(dtype, m)
        assert mx(np.tril(r, -1)) == 0
        k = min(m, n)
        diag = np.diagonal(r, 0, -2, -1)[..., :k]
        assert mx(diag.imag) == 0            # LAPACK's reflectors: R's diagonal is real
    a2, tau = em.geqrf(A)
    if m >= n:
        Qh = LA.householder_product(a2, tau)
        assert mx(N(Qh) - N(LA.qr(A).Q)) <= tol(dtype, m)
    c = crandn(batch + (m, 2))
    qc = N(em.ormqr(a2, tau, T(c, dtype=dtype), transpose=True))
    qfull = N(LA.qr(A, mode="complete").Q)
    assert mx(qc - H(qfull) @ N(T(c, dtype=dtype))) <= tol(dtype, m, mx(c))


@CFG
@given(batches, sizes, dtypes, lays)
def test_solve_inv_det_slogdet(batch, n, dtype, lay):
    a = well(batch + (n, n))
    b = crandn(batch + (n, 2))
    A, B = T(a, lay, dtype), T(b, dtype=dtype)
    ad, bd = N(T(a, dtype=dtype)), N(B)
    scale = mx(ad) * n
    X = N(LA.solve(A, B))
    np.testing.assert_allclose(X, np.linalg.solve(ad, bd), atol=tol(dtype, n, 10))
    np.testing.assert_allclose(N(LA.solve(A, B[..., 0])), np.linalg.solve(ad, bd[..., :1])[..., 0],
                               atol=tol(dtype, n, 10))
    Xr = N(LA.solve(A, T(np.swapaxes(b, -1, -2), dtype=dtype), left=False))
    np.testing.assert_allclose(Xr @ ad, np.swapaxes(bd, -1, -2), atol=tol(dtype, n, scale))
    Ai = N(LA.inv(A))
    np.testing.assert_allclose(Ai @ ad, np.broadcast_to(np.eye(n), ad.shape),
                               atol=tol(dtype, n, scale))
    d = N(LA.det(A))
    ref = np.linalg.det(ad)
    np.testing.assert_allclose(d, ref, rtol=tol(dtype, n, 10))
    sign, logabs = LA.slogdet(A)
    assert sign.dtype is dtype and logabs.dtype is REAL[dtype]
    rs, rl = np.linalg.slogdet(ad)
    np.testing.assert_allclose(N(sign), rs, atol=tol(dtype, n, 10))
    np.testing.assert_allclose(N(logabs).real, rl, atol=tol(dtype, n, 10))
    LU, piv = LA.lu_factor(A)
    for adjoint in (False, True):
        X = N(LA.lu_solve(LU, piv, B, adjoint=adjoint))
        op = H(ad) if adjoint else ad
        np.testing.assert_allclose(op @ X, bd, atol=tol(dtype, n, scale * mx(X)))
        Xl = N(LA.lu_solve(LU, piv, T(np.swapaxes(b, -1, -2), dtype=dtype), left=False,
                           adjoint=adjoint))
        np.testing.assert_allclose(Xl @ op, np.swapaxes(bd, -1, -2),
                                   atol=tol(dtype, n, scale * mx(Xl)))


@CFG
@given(batches, sizes, dtypes, lays, st.booleans(), st.booleans(), st.booleans())
def test_cholesky_and_triangular_solves(batch, n, dtype, lay, upper, left, unit):
    a = hpd(batch + (n, n))
    A = T(a, lay, dtype)
    ad = N(T(a, dtype=dtype))
    L = N(LA.cholesky(A, upper=upper))
    recon = H(L) @ L if upper else L @ H(L)
    assert mx(recon - ad) <= tol(dtype, n, mx(ad))
    assert mx(np.diagonal(L, 0, -2, -1).imag) == 0
    np.testing.assert_allclose(L, H(np.linalg.cholesky(ad)) if upper else
                               np.linalg.cholesky(ad), atol=tol(dtype, n, mx(ad) ** 0.5))
    b = crandn(batch + (n, 3) if left else batch + (3, n))
    B = T(b, dtype=dtype)
    tri = np.triu(ad) if upper else np.tril(ad)
    if unit:
        tri = np.where(np.eye(n, dtype=bool), 1.0, tri)
    X = N(LA.solve_triangular(T(tri, lay, dtype), B, upper=upper, left=left,
                              unitriangular=unit))
    got = tri @ X if left else X @ tri
    assert mx(got - N(B)) <= tol(dtype, n, mx(tri) * max(mx(X), 1))
    if left:
        Lc = LA.cholesky(A)
        Xc = N(em.cholesky_solve(B, Lc))
        np.testing.assert_allclose(ad @ Xc, N(B), atol=tol(dtype, n, mx(ad) * mx(Xc)))
    with pytest.raises(LA.LinAlgError, match="linalg.cholesky: .*not positive-definite"):
        LA.cholesky(T(-np.eye(3) * (1 + 1j) + 0j, dtype=dtype) - T(np.eye(3), dtype=dtype))


@pytest.mark.parametrize("dtype", CPLX)
def test_blocked_complex_factorizations_and_solves(dtype):
    # sizes across the complex GEMM's blocks (linalg_impl.h: 128 of depth, 512 columns
    # of B per real GEMM), the recursions' halves and QR_NB = 32, conjugate-transposed
    # operands through the trans solves; backward errors as LAPACK bounds them
    rng = np.random.default_rng(7)
    eps, n = EPS[dtype], 300
    a = well((n, n), rng)
    ad = N(T(a, dtype=dtype))
    P, L, U = LA.lu(T(a, dtype=dtype))
    assert mx(N(P) @ N(L) @ N(U) - ad) <= 8 * n * eps * mx(ad)
    for lay in ("contiguous", "transposed"):
        A = T(a[:130, :130], lay, dtype)
        a1 = N(A)
        b = crandn((130, 600), rng)
        X = N(LA.solve(A, T(b, lay, dtype)))
        assert mx(a1 @ X - N(T(b, dtype=dtype))) <= 8 * 130 * eps * mx(a1) * mx(X)
        Xh = N(LA.solve(A.mH, T(b, dtype=dtype)))
        assert mx(H(a1) @ Xh - N(T(b, dtype=dtype))) <= 8 * 130 * eps * mx(a1) * mx(Xh)
    s = hpd((100, 100), rng)
    sd = N(T(s, dtype=dtype))
    Lc = N(LA.cholesky(T(s, "transposed", dtype)))
    assert mx(np.triu(Lc, 1)) == 0 and mx(Lc @ H(Lc) - sd) <= 4 * 100 * eps * mx(sd)
    for m, k in ((100, 70), (70, 100)):
        q = crandn((m, k), rng)
        Q, R = LA.qr(T(q, dtype=dtype))
        assert mx(N(Q) @ N(R) - N(T(q, dtype=dtype))) <= 10 * m * eps * mx(q)
        assert mx(H(N(Q)) @ N(Q) - np.eye(min(m, k))) <= 10 * m * eps


@CFG
@given(batches, st.integers(0, 7), dtypes, lays, st.sampled_from(["L", "U"]))
def test_eigh_hermitian(batch, n, dtype, lay, uplo):
    s = crandn(batch + (n, n))
    s = s + H(s)
    junk = np.triu(crandn(batch + (n, n)), 1)
    given_ = np.tril(s) + junk if uplo == "L" else np.triu(s) + H(junk)
    given_ = given_ + 1j * np.eye(n) * 0.25     # the diagonal's imaginary part is ignored
    w, V = LA.eigh(T(given_, lay, dtype), UPLO=uplo)
    assert w.dtype is REAL[dtype] and V.dtype is dtype
    sd = N(T(s, dtype=dtype))
    scale = max(mx(sd), 1.0)
    w, v = N(w).real, N(V)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sd) if n else w, atol=tol(dtype, n, scale))
    assert mx(sd @ v - v * w[..., None, :]) <= tol(dtype, n, scale)
    assert mx(H(v) @ v - np.eye(n)) <= tol(dtype, n)
    np.testing.assert_allclose(N(LA.eigvalsh(T(given_, lay, dtype), UPLO=uplo)).real, w,
                               atol=tol(dtype, n, scale))


@pytest.mark.parametrize("n", [30, 64])
def test_eigh_hermitian_larger_and_degenerate(n):
    rng = np.random.default_rng(n)
    q, _ = np.linalg.qr(crandn((n, n), rng))
    for lam in (rng.standard_normal(n), np.repeat(np.arange(n // 4 + 1.0), 4)[:n]):
        a = (q * lam) @ H(q)
        for dtype in CPLX:
            ad = N(T(a, dtype=dtype))
            w, V = LA.eigh(T(a, dtype=dtype))
            w, v = N(w).real, N(V)
            scale = np.abs(lam).max()
            np.testing.assert_allclose(w, np.linalg.eigvalsh(ad), atol=tol(dtype, n, scale))
            assert mx(ad @ v - v * w) <= tol(dtype, n, scale)
            assert mx(H(v) @ v - np.eye(n)) <= tol(dtype, n)


@CFG
@given(batches, st.integers(0, 7), st.integers(0, 7), dtypes, lays, st.booleans())
def test_svd_complex(batch, m, n, dtype, lay, deficient):
    a = crandn(batch + (m, n))
    if deficient and min(m, n) > 1:
        a = a[..., :, :1] @ a[..., :1, :]                 # rank one
    A = T(a, lay, dtype)
    ad = N(T(a, dtype=dtype))
    k = min(m, n)
    scale = max(mx(ad), 1.0)
    for full in (False, True):
        U, S, Vh = LA.svd(A, full_matrices=full)
        assert S.dtype is REAL[dtype] and U.dtype is dtype and Vh.dtype is dtype
        u, s, vh = N(U), N(S).real, N(Vh)
        assert u.shape == batch + ((m, m) if full else (m, k))
        assert vh.shape == batch + ((n, n) if full else (k, n))
        if k:
            np.testing.assert_allclose(s, np.linalg.svd(ad, compute_uv=False),
                                       atol=tol(dtype, max(m, n), scale))
        assert np.all(np.diff(s, axis=-1) <= 0)
        recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        assert mx(recon - ad) <= tol(dtype, max(m, n), scale)
        assert mx(H(u) @ u - np.eye(u.shape[-1])) <= tol(dtype, max(m, 1))
        assert mx(vh @ H(vh) - np.eye(vh.shape[-2])) <= tol(dtype, max(n, 1))
    np.testing.assert_allclose(N(LA.svdvals(A)).real, N(S).real, atol=tol(dtype, max(m, n),
                                                                             scale))
    Ul, Sl, V = em.svd(A)
    assert mx((N(Ul) * N(Sl).real[..., None, :]) @ H(N(V)) - ad) <= tol(dtype, max(m, n), scale)


@pytest.mark.parametrize("dtype", CPLX, ids=lambda d: d.name)
def test_svd_complex_larger(dtype):
    # from 32 columns the real bidiagonal's vectors come from divide and conquer, from
    # 65 the bidiagonalisation is blocked; complex64 computes in complex64
    r = crandn((50, 8))
    eps = EPS[dtype]
    for a in (crandn((70, 40)), crandn((40, 70)), r @ H(r), crandn((100, 100))):
        m, n = a.shape
        k = min(m, n)
        a = N(T(a, dtype=dtype))
        U, S, Vh = LA.svd(T(a, dtype=dtype), full_matrices=False)
        u, s, vh = N(U), N(S).real, N(Vh)
        assert mx((u * s) @ vh - a) <= 20 * m * eps * mx(a)
        assert mx(H(u) @ u - np.eye(k)) <= 20 * m * eps
        assert mx(vh @ H(vh) - np.eye(k)) <= 20 * m * eps
        sv_tol = (1e-12 if dtype is em.complex128 else 20 * m * eps) * mx(a)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=sv_tol)
        np.testing.assert_allclose(N(LA.svdvals(T(a, dtype=dtype))).real, s, atol=sv_tol)


@CFG
@given(st.integers(1, 6), st.integers(1, 6), dtypes)
def test_lstsq_pinv_rank_norms_cond(m, n, dtype):
    a = crandn((m, n))
    b = crandn((m, 2))
    A, B = T(a, dtype=dtype), T(b, dtype=dtype)
    ad, bd = N(A), N(B)
    ref = np.linalg.lstsq(ad, bd, rcond=None)[0]
    t = tol(dtype, max(m, n), 10 * max(mx(ref), 1))
    for driver in ("gelsd", "gelss", "gelsy"):
        np.testing.assert_allclose(N(LA.lstsq(A, B, driver=driver).solution), ref, atol=t)
    if m >= n:
        res = LA.lstsq(A, B, driver="gels")
        np.testing.assert_allclose(N(res.solution), ref, atol=t)
        if m > n:
            assert res.residuals.dtype is REAL[dtype]
            np.testing.assert_allclose(N(res.residuals).real,
                                       (np.abs(ad @ ref - bd) ** 2).sum(0), atol=t * 10)
    np.testing.assert_allclose(N(LA.pinv(A)), np.linalg.pinv(ad), atol=t)
    h = ad @ H(ad)
    np.testing.assert_allclose(N(LA.pinv(T(h, dtype=dtype), hermitian=True)),
                               np.linalg.pinv(h, hermitian=True),
                               atol=tol(dtype, m, 100 * max(mx(np.linalg.pinv(h)), 1)))
    assert int(LA.matrix_rank(A)) == np.linalg.matrix_rank(ad)
    low = ad[:, :1] @ ad[:1, :]
    assert int(LA.matrix_rank(T(low, dtype=dtype))) == 1
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        got = LA.matrix_norm(A, ord=ord_)
        assert got.dtype is REAL[dtype]
        np.testing.assert_allclose(float(got), np.linalg.norm(ad, ord_),
                                   rtol=tol(dtype, max(m, n), 10))
    for ord_ in (2, 1, np.inf, 3.5):
        got = LA.vector_norm(A, ord=ord_)
        assert got.dtype is REAL[dtype]
        np.testing.assert_allclose(float(got), np.linalg.norm(ad.ravel(), ord_),
                                   rtol=tol(dtype, m * n, 10))
    np.testing.assert_allclose(float(LA.cond(A)), np.linalg.cond(ad),
                               rtol=tol(dtype, max(m, n), 100))
    if m == n:
        sq = well((n, n))
        for p in (None, "fro", "nuc", 1, np.inf):
            np.testing.assert_allclose(float(LA.cond(T(sq, dtype=dtype), p)),
                                       np.linalg.cond(N(T(sq, dtype=dtype)), p),
                                       rtol=tol(dtype, n, 100))


@CFG
@given(batches, st.integers(0, 8), dtypes, lays)
def test_eig_of_complex_matrices(batch, n, dtype, lay):
    a = crandn(batch + (n, n))
    A = T(a, lay, dtype)
    ad = N(T(a, dtype=dtype))
    w, V = LA.eig(A)
    assert w.dtype is dtype and V.dtype is dtype
    w, v = N(w), N(V)
    scale = max(mx(ad), 1.0)
    assert mx(ad @ v - v * w[..., None, :]) <= tol(dtype, n, 10 * scale)
    if n:
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=tol(dtype, n))
        big = np.take_along_axis(v, np.abs(v).argmax(-2)[..., None, :], -2)
        assert mx(big.imag) <= tol(dtype, n)             # the largest component is real
        ref = np.linalg.eigvals(ad)
        got = N(LA.eigvals(A))
        np.testing.assert_allclose(np.sort_complex(got.reshape(-1, n)),
                                   np.sort_complex(ref.reshape(-1, n)),
                                   atol=tol(dtype, n, 100 * scale))
    b = crandn((40, 40))
    wb, vb = LA.eig(T(b))
    assert mx(b @ N(vb) - N(vb) * N(wb)) <= 1e-11 * mx(b)
    # a triangular matrix with repeated eigenvalues (defective: its vectors coincide)
    u = np.triu(crandn((4, 4)))
    t = u - np.diag(np.diagonal(u)) + np.diag([1, 1, 2j, 2j])
    wt = N(LA.eigvals(T(t)))
    np.testing.assert_allclose(np.sort_complex(wt), np.sort_complex(np.diagonal(t)), atol=1e-6)


@pytest.mark.parametrize("dtype", CPLX)
def test_matrix_exp_and_power(dtype):
    rng = np.random.default_rng(5)
    h = crandn((2, 5, 5), rng)
    h = (h + H(h)) / 2
    w, v = np.linalg.eigh(h)
    for scale in (1.0, 1j, 6.0):
        a = h * scale
        ref = (v * np.exp(w * scale)[..., None, :]) @ H(v)
        got = N(LA.matrix_exp(T(a, dtype=dtype)))
        np.testing.assert_allclose(got, ref, rtol=0, atol=2000 * EPS[dtype] * mx(ref))
    a = crandn((4, 4), rng) * 0.3
    e = N(LA.matrix_exp(T(a, dtype=dtype)))
    einv = N(LA.matrix_exp(T(-a, dtype=dtype)))
    assert mx(e @ einv - np.eye(4)) <= 1000 * EPS[dtype]
    p = N(LA.matrix_power(T(a, dtype=dtype), -3))
    np.testing.assert_allclose(p, np.linalg.matrix_power(N(T(a, dtype=dtype)), -3),
                               rtol=1e-3 if dtype is em.complex64 else 1e-9)


def test_complex_refusals_and_errors():
    a = T(crandn((3, 3)))
    with pytest.raises(LA.LinAlgError, match="linalg.eig: the input matrix contains "
                                             "non-finite values"):
        LA.eig(T(np.full((3, 3), np.inf + 0j)))
    with pytest.raises(LA.LinAlgError, match="linalg.solve: .*singular"):
        LA.solve(T(np.ones((3, 3)) * (1 + 1j)), a)
    with pytest.raises(LA.LinAlgError, match="linalg.inv: .*singular, batch 1"):
        LA.inv(T(np.stack([np.eye(3), np.zeros((3, 3))]) + 0j))
    with pytest.raises(LA.LinAlgError, match="linalg.eigh: the input matrix contains "
                                             "non-finite values"):
        LA.eigh(T(np.full((3, 3), np.nan + 1j)))
    with pytest.raises(TypeError, match="linalg.solve: expected A and B to have the same dtype"):
        LA.solve(a, T(crandn((3, 1)), dtype=em.complex64))
    d = LA.det(T(np.diag([1j, 2, -1j])))
    assert complex(d) == pytest.approx(2)
    sign, logabs = LA.slogdet(T(np.zeros((2, 2)) + 0j))
    assert complex(sign) == 0 and float(logabs) == -np.inf


# derivatives of complex inputs (PyTorch's convention: the conjugate Wirtinger
# derivative; the formulas' transposes are conjugate transposes) --------------------------

def _cz(rng, *shape):
    return em.from_numpy(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


def test_complex_derivatives_gradcheck():
    from ember.autograd import gradcheck
    rng = np.random.default_rng(40)
    A = _cz(rng, 3, 3).requires_grad_()
    B = _cz(rng, 3, 2).requires_grad_()
    LA = em.linalg
    eye = em.eye(3, dtype=em.complex128)

    def hpd(A):
        return A @ A.mH + 3 * eye
    cases = {
        "inv": (LA.inv, (A,)),
        "solve": (LA.solve, (A, B)),
        "det": (LA.det, (A,)),
        "slogdet": (lambda A: LA.slogdet(A)[1], (A,)),
        "cholesky": (lambda A: LA.cholesky(hpd(A)), (A,)),
        "solve_triangular": (lambda A, B: LA.solve_triangular(A.triu() + 3 * eye, B,
                                                              upper=True), (A, B)),
        "matrix_exp": (LA.matrix_exp, (A,)),
        "lu_factor": (lambda A: LA.lu_factor(A)[0], (A,)),
        "eigvals": (LA.eigvals, (A,)),
    }
    for name, (f, args) in cases.items():
        assert gradcheck(f, args), name


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5)])
def test_complex_qr_derivatives(shape):
    from ember.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(41)
    A = _cz(rng, 2, *shape).requires_grad_()
    LA = em.linalg
    # Q and R are unique (R's diagonal real and positive-or-negative by LAPACK's rule)
    assert gradcheck(lambda A: LA.qr(A).Q, (A,))
    assert gradcheck(lambda A: LA.qr(A).R, (A,))
    assert gradgradcheck(lambda A: LA.qr(A).Q.sum(-1), (A,))
    assert gradgradcheck(lambda A: LA.qr(A).R.sum(-2), (A,))


def test_complex_eigh_derivatives():
    from ember.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(42)
    A = _cz(rng, 2, 4, 4).requires_grad_()
    LA = em.linalg

    def herm(A):
        return A + A.mH
    # functions invariant under V -> V diag(e^{i phi}): the eigenvalues, |V|, V diag(w) V^H
    assert gradcheck(lambda A: LA.eigvalsh(herm(A)), (A,))
    assert gradcheck(lambda A: LA.eigh(herm(A)).eigenvectors.abs(), (A,))
    assert gradcheck(lambda A: (lambda w, V: (V * w.unsqueeze(-2).to(V.dtype)) @ V.mH)(
        *LA.eigh(herm(A))), (A,))
    assert gradgradcheck(lambda A: LA.eigvalsh(herm(A)), (A,))
    assert gradgradcheck(lambda A: LA.eigh(herm(A)).eigenvectors.abs(), (A,))
    # the lower triangle is what eigh reads (UPLO='L'): the gradient is there
    w, V = LA.eigh(A)
    assert w.dtype is em.float64 and V.dtype is em.complex128
    w.sum().backward()
    g = N(A.grad)
    np.testing.assert_allclose(np.triu(g, 1), 0, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5)])
def test_complex_svd_derivatives(shape):
    from ember.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(43)
    A = _cz(rng, 2, *shape).requires_grad_()
    LA = em.linalg

    def usv(A):
        U, S, Vh = LA.svd(A, full_matrices=False)
        return (U * S.unsqueeze(-2).to(U.dtype)) @ Vh
    # gauge-invariant: S, U diag(S) Vh, |U|, |Vh|, and U_k Vh_k (one phase cancels)
    assert gradcheck(LA.svdvals, (A,))
    assert gradcheck(usv, (A,))
    assert gradcheck(lambda A: LA.svd(A, full_matrices=False).U.abs(), (A,))
    assert gradcheck(lambda A: LA.svd(A, full_matrices=False).Vh.abs(), (A,))
    assert gradcheck(lambda A: (lambda U, S, Vh: U[..., :, :1] @ Vh[..., :1, :])(
        *LA.svd(A, full_matrices=False)), (A,))
    assert gradgradcheck(LA.svdvals, (A,))
    assert gradgradcheck(usv, (A,))
    U, S, Vh = LA.svd(A, full_matrices=False)
    assert S.dtype is em.float64 and U.dtype is em.complex128


def test_complex_derivatives_that_depend_on_a_phase_are_refused():
    rng = np.random.default_rng(44)
    A = _cz(rng, 3, 3).requires_grad_()
    LA = em.linalg
    with pytest.raises(RuntimeError, match="linalg.svd: the singular vectors in the complex "
                       "case are specified up to multiplication by"):
        em.imag(LA.svd(A).U).sum().backward()
    with pytest.raises(RuntimeError, match="linalg.eigh: the eigenvectors in the complex "
                       "case are specified up to multiplication by"):
        em.imag(LA.eigh(A + A.mH).eigenvectors).sum().backward()


@settings(max_examples=25, deadline=None)
@given(shapes=st.sampled_from([((4,), (4,)), ((2, 3), (3,)), ((3, 1, 2), (4, 2)), ((0,), (0,))]),
       dtype=st.sampled_from([np.complex64, np.complex128]), seed=st.integers(0, 2**16),
       axis_first=st.booleans())
def test_vecdot_conjugates_x1(shapes, dtype, seed, axis_first):
    """vecdot(x1, x2) = sum(conj(x1) * x2) (torch.linalg.vecdot, the standard, NumPy's
    vecdot); ember multiplied without conjugating."""
    rng = np.random.default_rng(seed)
    s1, s2 = shapes
    a = (rng.standard_normal(s1) + 1j * rng.standard_normal(s1)).astype(dtype)
    b = (rng.standard_normal(s2) + 1j * rng.standard_normal(s2)).astype(dtype)
    axis = -1
    if axis_first and a.ndim == b.ndim == 1:    # the vectors along dim 0 of columns
        a, b, axis = a[:, None], b[:, None], 0
    ref = np.sum(np.conj(a) * b, axis=axis)
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    for fn in (em.linalg.vecdot, em.vecdot):
        r = fn(em.from_numpy(a), em.from_numpy(b), dim=axis) if fn is em.linalg.vecdot else \
            fn(em.from_numpy(a), em.from_numpy(b), axis=axis)
        assert r.dtype is em.from_numpy(a).dtype
        np.testing.assert_allclose(r.numpy(), ref, rtol=tol, atol=tol)
    # real x1 is not conjugated (a no-op), mixed real/complex promotes
    ra = rng.standard_normal(a.shape)
    np.testing.assert_allclose(
        em.linalg.vecdot(em.from_numpy(ra), em.from_numpy(b), dim=axis).numpy(),
        np.sum(ra * b, axis=axis), rtol=tol, atol=tol)


def test_vecdot_complex_gradcheck():
    from ember.autograd import gradcheck
    rng = np.random.default_rng(41)
    a, b = _cz(rng, 2, 3).requires_grad_(), _cz(rng, 3).requires_grad_()
    assert gradcheck(lambda a, b: em.linalg.vecdot(a, b), (a, b))
