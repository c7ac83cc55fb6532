"""ember.linalg's LU, Cholesky, triangular solves, QR, eigh and SVD on
every device (the CPU, and OpenCL / CUDA through backends/gpu/linalg.py over
kernels/gpu/programs/linalg.h) against NumPy: batches of small matrices (factored in
local memory) and larger ones (LU and Cholesky blocked: panels on the device, trailing
updates by the device GEMM), float32 and float64, ill-conditioned, rank-deficient and
singular inputs, info and LinAlgError as on the CPU, the derivatives gradchecked on the
device; what has no device kernel says so.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember._C import core
from ember.autograd import gradcheck
from ember_testing import fewer_examples, to_numpy

LA = em.linalg
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}
DTYPES = (em.float32, em.float64)
# across the local-memory limit (32) and the block (32) of the device kernels
SIZES = st.one_of(st.integers(0, 9), st.sampled_from([31, 32, 33, 47, 70]))
BATCHES = st.sampled_from([(), (1,), (3,), (2, 3)])
CFG = settings(max_examples=fewer_examples(3), deadline=None)


def on(device, a, dtype):
    return em.from_numpy(np.ascontiguousarray(a, dtype=np.dtype(dtype.name))).to(device)


def N(t):
    return to_numpy(t.cpu()).astype(np.float64)


def usable(device, dtype):
    if device.type != "cpu" and dtype is em.float64 and \
            not core.backend_for(device).has_fp64(device):
        pytest.skip(f"no float64 on {device}")


def rng(seed):
    return np.random.default_rng(seed)


def well(r, shape):
    a = r.standard_normal(shape)
    n = shape[-1]
    return a + 2 * np.sqrt(max(n, 1)) * np.eye(n)


def spd(r, shape):
    a = r.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def backward_error(a, x, b):
    """||A X - B|| / (||A|| ||X|| + ||B||) (max norms, the whole batch)."""
    if x.size == 0:
        return 0.0
    r = np.abs(a @ x - b).max()
    return r / (np.abs(a).max() * np.abs(x).max() * a.shape[-1] + np.abs(b).max() + 1e-300)


# --------------------------------------------------------------------- LU family --

@CFG
@given(BATCHES, SIZES, SIZES, st.sampled_from(DTYPES), st.integers(0, 2 ** 32 - 1))
def test_lu_factor_reconstructs(device, batch, m, n, dtype, seed):
    usable(device, dtype)
    a = rng(seed).standard_normal(batch + (m, n))
    A = on(device, a, dtype)
    LU, piv, info = LA.lu_factor_ex(A)
    assert LU.device == A.device and piv.device == A.device and info.device == A.device
    P, L, U = em.lu_unpack(LU, piv)
    k = min(m, n)
    assert tuple(piv.shape) == batch + (k,) and piv.dtype is em.int32
    recon = N(P) @ N(L) @ N(U)
    scale = max(np.abs(a).max(), 1.0) if a.size else 1.0
    assert np.abs(recon - a.astype(dtype.name)).max(initial=0) <= \
        16 * max(m, n, 1) * EPS[dtype.name] * scale
    assert np.all(np.abs(N(L)) <= 1 + 1e-6)             # partial pivoting
    assert not N(info).any()


@CFG
@given(BATCHES, SIZES, st.integers(1, 3), st.sampled_from(DTYPES), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_solve_inv_det_slogdet_match_numpy(device, batch, n, k, dtype, left, seed):
    usable(device, dtype)
    r = rng(seed)
    a = well(r, batch + (n, n))
    b = r.standard_normal(batch + ((n, k) if left else (k, n)))
    A, B = on(device, a, dtype), on(device, b, dtype)
    tol = 2e-4 if dtype is em.float32 else 1e-11
    X = LA.solve(A, B, left=left)
    ref = np.linalg.solve(a, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    assert X.device == A.device and np.abs(N(X) - ref).max(initial=0) <= \
        tol * max(np.abs(ref).max(initial=0), 1)
    Ai = LA.inv(A)
    assert np.abs(N(Ai) - np.linalg.inv(a)).max(initial=0) <= tol
    if n <= 33:      # det of the bigger ones overflows float32
        np.testing.assert_allclose(N(LA.det(A)), np.linalg.det(a), rtol=tol * 10 * max(n, 1))
    sign, logabs = LA.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(N(sign), rs)
    np.testing.assert_allclose(N(logabs), rl, rtol=tol * max(n, 1), atol=tol * max(n, 1))
    X2, info = LA.solve_ex(A, B, left=left)
    assert info.device == A.device and not N(info).any()


def test_layouts_broadcasting_and_empty_on_the_device(device):
    """Transposed, step-sliced and expanded operands, broadcast batches, vectors and
    empty batches reach the kernels as the CPU's do."""
    r = rng(8)
    a, b = well(r, (3, 5, 5)), r.standard_normal((5, 2))
    At = on(device, np.swapaxes(a, -1, -2), em.float32).transpose(-1, -2)   # a, strided
    X = LA.solve(At, on(device, b, em.float32))                 # B broadcast over the batch
    np.testing.assert_allclose(N(X), np.linalg.solve(a, b), atol=1e-5)
    v = r.standard_normal((3, 5))
    np.testing.assert_allclose(N(LA.solve(At, on(device, v, em.float32))),
                               np.linalg.solve(a, v[..., None])[..., 0], atol=1e-5)
    big = on(device, well(r, (10, 10)), em.float32)[::2, ::2]   # step-sliced
    np.testing.assert_allclose(N(LA.inv(big)), np.linalg.inv(N(big)), atol=1e-5)
    one = on(device, a[:1], em.float32).expand(4, 5, 5)           # zero batch stride
    np.testing.assert_allclose(N(LA.det(one)), [np.linalg.det(a[0])] * 4, rtol=1e-5)
    e = em.empty(0, 4, 4, device=device)
    assert tuple(LA.inv(e).shape) == (0, 4, 4) and LA.cholesky_ex(e).info.numel() == 0
    assert tuple(LA.qr(e).Q.shape) == (0, 4, 4) and LA.svdvals(e).numel() == 0
    z = em.empty(2, 0, 0, device=device)
    assert N(LA.det(z)).tolist() == [1.0, 1.0] and tuple(LA.eigh(z)[1].shape) == (2, 0, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("n", [8, 30, 100])
def test_ill_conditioned_solve_has_a_small_backward_error(device, dtype, n):
    usable(device, dtype)
    r = rng(n)
    u, _ = np.linalg.qr(r.standard_normal((4, n, n)))
    v, _ = np.linalg.qr(r.standard_normal((4, n, n)))
    a = (u * np.logspace(0, -6 if dtype is em.float32 else -12, n)) @ v    # cond 1e6 / 1e12
    a = a.astype(dtype.name).astype(np.float64)
    b = r.standard_normal((4, n, 2))
    X = N(LA.solve(on(device, a, dtype), on(device, b, dtype)))
    assert backward_error(a, X, b.astype(dtype.name)) <= 8 * EPS[dtype.name]


def test_lu_solve_left_right_adjoint_and_lu(device):
    r = rng(5)
    for n in (4, 40):
        a, b = well(r, (2, n, n)), r.standard_normal((2, n, 3))
        A, B = on(device, a, em.float32), on(device, b, em.float32)
        LU, piv = LA.lu_factor(A)
        tol = 1e-4
        np.testing.assert_allclose(N(LA.lu_solve(LU, piv, B)), np.linalg.solve(a, b),
                                   atol=tol)
        at = np.swapaxes(a, -1, -2)
        np.testing.assert_allclose(N(LA.lu_solve(LU, piv, B, adjoint=True)),
                                   np.linalg.solve(at, b), atol=tol)
        c = r.standard_normal((2, 3, n))
        np.testing.assert_allclose(
            N(LA.lu_solve(LU, piv, on(device, c, em.float32), left=False)),
            np.swapaxes(np.linalg.solve(at, np.swapaxes(c, -1, -2)), -1, -2), atol=tol)
        P, L, U = LA.lu(A)
        np.testing.assert_allclose(N(P) @ N(L) @ N(U), a, atol=1e-4 * n)
        # the device's pivots are the CPU's (the same pivot search)
        cpu_piv = LA.lu_factor(on("cpu", a, em.float32)).pivots
        assert N(piv).tolist() == N(cpu_piv).tolist()


def test_singular_inputs_give_the_cpus_info_and_messages(device):
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0]), np.eye(3)])
    for dtype in DTYPES:
        if dtype is em.float64 and device.type != "cpu" and \
                not core.backend_for(device).has_fp64(device):
            continue
        A = on(device, a, dtype)
        with pytest.raises(LA.LinAlgError, match=r"^linalg.solve: the solver failed because "
                                                 r"the input matrix is singular .*, batch 1$"):
            LA.solve(A, on(device, np.ones((3, 3, 1)), dtype))
        with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: the diagonal element 2 is "
                                                 r"zero, .*, batch 1$"):
            LA.inv(A)
        with pytest.raises(LA.LinAlgError, match=r"linalg.lu_factor: U\[1, 1\] is zero"):
            LA.lu_factor(A[1])
        assert N(LA.solve_ex(A, on(device, np.ones((3, 3, 1)), dtype)).info).tolist() == \
            [0, 2, 0]
        assert N(LA.inv_ex(A).info).tolist() == [0, 2, 0]
        assert N(LA.lu_factor_ex(A).info).tolist() == [0, 2, 0]
        assert N(LA.det(A)).tolist() == [1.0, 0.0, 1.0]
        sign, logabs = LA.slogdet(A)
        assert N(sign).tolist() == [1.0, 0.0, 1.0] and N(logabs)[1] == -np.inf
    # a big singular matrix (the blocked path): the first zero pivot of its panels
    big = rng(1).standard_normal((2, 70, 70))
    big[1, :, 40] = big[1, :, 3] * 2.0     # column 40 dependent on column 3
    big[1, :, 41] = 0.0
    info = N(LA.lu_factor_ex(on(device, big, em.float32)).info)
    cpu = N(LA.lu_factor_ex(on("cpu", big, em.float32)).info)
    assert info[0] == 0 and info[1] > 0 and info.tolist() == cpu.tolist()
    with pytest.raises(LA.LinAlgError, match=r"batch \(1, 0\)"):   # a 2-d batch index
        LA.inv(on(device, np.stack([np.stack([np.eye(2), np.eye(2)]),
                                    np.stack([np.zeros((2, 2)), np.eye(2)])]), em.float32))


def test_the_raising_forms_read_info_once_and_the_ex_forms_never(device):
    if device.type == "cpu":
        pytest.skip("counts host transfers of a device")
    backend = core.backend_for(device)
    a = well(rng(2), (64, 8, 8))
    A, B = on(device, a, em.float32), on(device, a[..., :1], em.float32)
    big = on(device, well(rng(3), (40, 40)), em.float32)
    for fn, reads in ((lambda: LA.solve_ex(A, B), 0), (lambda: LA.solve(A, B), 1),
                      (lambda: LA.inv_ex(A), 0), (lambda: LA.inv(A), 1),
                      (lambda: LA.cholesky_ex(A @ A.mT), 0), (lambda: LA.det(A), 0),
                      (lambda: LA.lu_factor_ex(big), 0), (lambda: LA.cholesky(big @ big.mT), 1)):
        fn()
        backend.reset_counters()
        fn()
        assert backend.counters()["host_transfers"] == reads


# ---------------------------------------------------------- Cholesky, triangular --

@CFG
@given(BATCHES, SIZES, st.sampled_from(DTYPES), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_cholesky_matches_numpy_and_reads_one_triangle(device, batch, n, dtype, upper, seed):
    usable(device, dtype)
    r = rng(seed)
    s = spd(r, batch + (n, n))
    junk = np.triu(r.standard_normal(batch + (n, n)), 1)
    given_ = np.tril(s) + junk if not upper else np.triu(s) + np.swapaxes(junk, -1, -2)
    Lm = LA.cholesky(on(device, given_, dtype), upper=upper)
    ref = np.linalg.cholesky(s)
    if upper:
        ref = np.swapaxes(ref, -1, -2)
    tol = 1e-4 if dtype is em.float32 else 1e-12
    assert Lm.device.type == device.type
    assert np.abs(N(Lm) - ref).max(initial=0) <= tol * max(np.abs(ref).max(initial=0), 1)
    L, info = LA.cholesky_ex(on(device, s, dtype))
    assert not N(info).any()
    b = r.standard_normal(batch + (n, 2))
    X = em.cholesky_solve(on(device, b, dtype), L)
    assert backward_error(s, N(X), b) <= 16 * EPS[dtype.name] * max(n, 1)


def test_cholesky_not_positive_definite_message_and_info(device):
    for n in (4, 70):          # local memory, blocked
        a = np.stack([np.eye(n)] * 3)
        a[2, 2, 2] = -1.0
        a[1, n - 1, n - 1] = np.nan
        A = on(device, a, em.float32)
        with pytest.raises(LA.LinAlgError) as e:
            LA.cholesky(A)
        assert str(e.value) == (f"linalg.cholesky: the factorization could not be completed "
                                f"because the input is not positive-definite (the leading "
                                f"minor of order {n} is not positive-definite), batch 1")
        L, info = LA.cholesky_ex(A)
        assert N(info).tolist() == [0, n, 3]
        np.testing.assert_array_equal(N(L[0]), np.eye(n))


@CFG
@given(BATCHES, SIZES, st.integers(1, 3), st.sampled_from(DTYPES), st.booleans(),
       st.booleans(), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_solve_triangular_matches_numpy(device, batch, n, k, dtype, upper, left, unit, seed):
    usable(device, dtype)
    r = rng(seed)
    # off-diagonal entries of size 1 / sqrt(n): random triangular matrices of O(1)
    # entries are exponentially ill-conditioned in n
    a = r.standard_normal(batch + (n, n)) / np.sqrt(max(n, 1)) + 3 * np.eye(n)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri[..., range(n), range(n)] = 1.0
    b = r.standard_normal(batch + ((n, k) if left else (k, n)))
    X = LA.solve_triangular(on(device, a, dtype), on(device, b, dtype), upper=upper,
                            left=left, unitriangular=unit)
    ref = np.linalg.solve(tri, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    tol = 1e-4 if dtype is em.float32 else 1e-11
    assert np.abs(N(X) - ref).max(initial=0) <= tol * max(np.abs(ref).max(initial=0), 1)


def test_triangular_solve_and_cholesky_inverse(device):
    r = rng(9)
    for n in (5, 70):
        a = np.triu(r.standard_normal((n, n))) / np.sqrt(n) + 3 * np.eye(n)
        b = r.standard_normal((n, 4))
        X, coeff = em.triangular_solve(on(device, b, em.float32), on(device, a, em.float32))
        np.testing.assert_allclose(N(X), np.linalg.solve(a, b), atol=1e-4)
        X, _ = em.triangular_solve(on(device, b, em.float32), on(device, a, em.float32),
                                   transpose=True)
        np.testing.assert_allclose(N(X), np.linalg.solve(a.T, b), atol=1e-4)
        s = spd(r, (n, n))
        L = LA.cholesky(on(device, s, em.float32))
        np.testing.assert_allclose(N(em.cholesky_inverse(L)), np.linalg.inv(s), atol=1e-5)


def test_matrix_exp_and_power_run_on_the_device(device):
    r = rng(3)
    a = r.standard_normal((2, 5, 5)) / 4
    E = LA.matrix_exp(on(device, a, em.float32))
    ref = LA.matrix_exp(on("cpu", a, em.float64))
    assert E.device.type == device.type
    np.testing.assert_allclose(N(E), N(ref), atol=1e-5)
    w = well(r, (5, 5))
    np.testing.assert_allclose(N(LA.matrix_power(on(device, w, em.float32), -2)),
                               np.linalg.matrix_power(w, -2), atol=1e-5)


# ------------------------------------------------------------------------- QR --

@CFG
@given(BATCHES, SIZES, SIZES, st.sampled_from(DTYPES), st.integers(0, 2 ** 32 - 1))
def test_qr_backward_error_orthogonality_and_modes(device, batch, m, n, dtype, seed):
    usable(device, dtype)
    a = rng(seed).standard_normal(batch + (m, n))
    A = on(device, a, dtype)
    eps, k = EPS[dtype.name], min(m, n)
    Q, R = LA.qr(A)
    assert Q.device == A.device and tuple(Q.shape) == batch + (m, k)
    q, r = N(Q), N(R)
    scale = max(np.abs(a).max(initial=0), 1.0)
    assert np.abs(q @ r - a.astype(dtype.name)).max(initial=0) <= 8 * max(m, n, 1) * eps * scale
    assert np.abs(np.swapaxes(q, -1, -2) @ q - np.eye(k)).max(initial=0) <= 8 * max(m, 1) * eps
    assert np.allclose(np.tril(r, -1), 0)
    Qc, Rc = LA.qr(A, "complete")
    assert tuple(Qc.shape) == batch + (m, m)
    qc = N(Qc)
    assert np.abs(np.swapaxes(qc, -1, -2) @ qc - np.eye(m)).max(initial=0) <= 8 * max(m, 1) * eps
    np.testing.assert_allclose(N(LA.qr(A, "r").R), r, atol=8 * max(m, 1) * eps * scale)
    # the CPU's R (the same reflectors, up to rounding)
    np.testing.assert_allclose(r, N(LA.qr(on("cpu", a, dtype)).R),
                               atol=32 * max(m, n, 1) * eps * scale)


def test_geqrf_householder_product_ormqr_and_gels(device):
    r = rng(4)
    for shape in ((3, 6, 4), (1, 70, 40), (2, 100, 80)):     # QR_BLOCKED = 64
        g = r.standard_normal(shape)
        h, tau = em.geqrf(on(device, g, em.float64 if _fp64(device) else em.float32))
        Q = LA.householder_product(h, tau)
        ref = LA.qr(on("cpu", g, Q.dtype)).Q
        np.testing.assert_allclose(N(Q), N(ref), atol=1e-5)
        c = r.standard_normal(shape[:-2] + (shape[-2], 3))
        C = on(device, c, Q.dtype)
        np.testing.assert_allclose(N(em.ormqr(h, tau, C, transpose=True)),
                                   np.swapaxes(N(Q), -1, -2) @ c if shape[-2] == shape[-1]
                                   else N(em.ormqr(h.cpu(), tau.cpu(), C.cpu(),
                                                   transpose=True)), atol=1e-5)
        b = r.standard_normal(shape[:-1] + (2,))
        X = LA.lstsq(on(device, g, Q.dtype), on(device, b, Q.dtype), driver="gels").solution
        np.testing.assert_allclose(N(X), np.linalg.lstsq(g[0], b[0], rcond=None)[0][None]
                                   if shape[0] == 1 else
                                   np.stack([np.linalg.lstsq(gi, bi, rcond=None)[0]
                                             for gi, bi in zip(g, b)]), atol=1e-4)


# ----------------------------------------------------------------------- eigh --

# across the local-memory limit (32) of the Jacobi kernels, and a chunk of pairs (64)
# of the larger ones' rounds past it
JACOBI_SIZES = st.one_of(st.integers(0, 9), st.sampled_from([16, 31, 32, 33, 47]))


@CFG
@given(BATCHES, JACOBI_SIZES, st.sampled_from(DTYPES), st.sampled_from(["L", "U"]),
       st.integers(0, 2 ** 32 - 1))
def test_eigh_matches_numpy(device, batch, n, dtype, uplo, seed):
    """Jacobi on a device (in local memory up to 32 x 32, in a workspace above);
    eigenpairs A v = w v with orthonormal V, eigenvalues as NumPy's."""
    usable(device, dtype)
    r = rng(seed)
    g = r.standard_normal(batch + (n, n))
    a = (g + np.swapaxes(g, -1, -2)).astype(dtype.name).astype(np.float64)
    junk = r.standard_normal(batch + (n, n))
    given_ = np.tril(a) + np.triu(junk, 1) if uplo == "L" else np.triu(a) + np.tril(junk, -1)
    w, V = LA.eigh(on(device, given_, dtype), UPLO=uplo)
    assert w.device.type == device.type and V.device.type == device.type
    eps, scale = EPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    ref = np.linalg.eigvalsh(a)
    assert np.abs(N(w) - ref).max(initial=0) <= 8 * max(n, 1) * eps * scale
    v, wv = N(V), N(w)
    assert np.abs(a @ v - v * wv[..., None, :]).max(initial=0) <= 8 * max(n, 1) * eps * scale
    assert np.abs(np.swapaxes(v, -1, -2) @ v - np.eye(n)).max(initial=0) <= 8 * max(n, 1) * eps
    np.testing.assert_array_equal(N(LA.eigvalsh(on(device, given_, dtype), UPLO=uplo)), wv)


def test_eigh_degenerate_non_finite_and_large(device):
    dt = em.float64 if _fp64(device) else em.float32
    eye = LA.eigh(on(device, np.stack([np.eye(5), np.zeros((5, 5))]), dt))
    np.testing.assert_array_equal(N(eye.eigenvalues), [[1.0] * 5, [0.0] * 5])
    np.testing.assert_allclose(np.abs(N(eye.eigenvectors)), np.stack([np.eye(5)] * 2))
    bad = np.stack([np.eye(3), np.eye(3)])
    bad[1, 0, 0] = np.nan
    with pytest.raises(LA.LinAlgError, match=r"^linalg.eigh: the input matrix contains "
                                             r"non-finite values, batch 1$"):
        LA.eigh(on(device, bad, dt))
    big = np.stack([np.eye(40), np.eye(40)])
    big[0, 39, 39] = np.inf
    with pytest.raises(LA.LinAlgError, match=r"^linalg.eigvalsh: the input matrix contains "
                                             r"non-finite values, batch 0$"):
        LA.eigvalsh(on(device, big, dt))
    np.testing.assert_array_equal(N(LA.eigvalsh(on(device, np.eye(33), dt))), [1.0] * 33)
    # above the local-memory kernel: clusters of repeated eigenvalues (3 x 1, 5 x 2, 3 x
    # -4, 7 x 0, ...) and a spread of magnitudes, as (Q diag(w) Q^T) from a random Q
    r = rng(8)
    for n in (33, 70):
        w = np.concatenate([[1.0] * 3, [2.0] * 5, [-4.0] * 3, [0.0] * 7,
                            np.logspace(-6, 3, n - 18)])
        q, _ = np.linalg.qr(r.standard_normal((2, n, n)))
        a = (q * w) @ np.swapaxes(q, -1, -2)
        a = (a + np.swapaxes(a, -1, -2)) / 2
        W, V = LA.eigh(on(device, a, dt))
        eps, scale = EPS[dt.name], np.abs(a).max()
        a32 = N(on(device, a, dt))
        v, wv = N(V), N(W)
        np.testing.assert_allclose(wv, np.linalg.eigvalsh(a32), atol=8 * n * eps * scale)
        assert np.abs(a32 @ v - v * wv[..., None, :]).max() <= 8 * n * eps * scale
        assert np.abs(np.swapaxes(v, -1, -2) @ v - np.eye(n)).max() <= 8 * n * eps


# ------------------------------------------------------------------------ SVD --

@CFG
@given(BATCHES, JACOBI_SIZES, JACOBI_SIZES, st.sampled_from(DTYPES), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_svd_matches_numpy(device, batch, m, n, dtype, deficient, seed):
    """One-sided Jacobi on a device (in local memory up to 32 x 32, in a workspace
    above), rank-deficient inputs included: S as NumPy's, U and Vh orthonormal, U S Vh = A."""
    usable(device, dtype)
    a = rng(seed).standard_normal(batch + (m, n))
    if deficient and n >= 3:
        a[..., 2] = a[..., 0]
        a[..., 1] = 0.0
    a = a.astype(dtype.name).astype(np.float64)
    A = on(device, a, dtype)
    k = min(m, n)
    eps, scale = EPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    U, S, Vh = LA.svd(A, full_matrices=False)
    assert U.device == A.device and tuple(U.shape) == batch + (m, k)
    u, sv, vh = N(U), N(S), N(Vh)
    tol = 16 * max(m, n, 1) * eps
    assert np.abs(sv - np.linalg.svd(a, compute_uv=False)).max(initial=0) <= tol * scale
    assert np.abs((u * sv[..., None, :]) @ vh - a).max(initial=0) <= tol * scale
    assert np.abs(np.swapaxes(u, -1, -2) @ u - np.eye(k)).max(initial=0) <= tol
    assert np.abs(vh @ np.swapaxes(vh, -1, -2) - np.eye(k)).max(initial=0) <= tol
    np.testing.assert_array_equal(N(LA.svdvals(A)), sv)
    Uf, _, Vhf = LA.svd(A)
    assert tuple(Uf.shape) == batch + (m, m) and tuple(Vhf.shape) == batch + (n, n)
    assert np.abs(np.swapaxes(N(Uf), -1, -2) @ N(Uf) - np.eye(m)).max(initial=0) <= tol


def test_svd_built_ops_and_refusals(device):
    r = rng(6)
    dt = em.float64 if _fp64(device) else em.float32
    tol = 1e-9 if dt is em.float64 else 1e-4
    a = r.standard_normal((3, 7, 4))
    b = r.standard_normal((3, 7, 2))
    A, B = on(device, a, dt), on(device, b, dt)
    np.testing.assert_allclose(N(LA.pinv(A)), np.linalg.pinv(a), atol=tol)
    ref = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(a, b)])
    for driver in ("gelsy", "gelsd", "gelss"):
        np.testing.assert_allclose(N(LA.lstsq(A, B, driver=driver).solution), ref, atol=tol)
    low = on(device, np.ones((4, 5)), dt)
    assert int(LA.matrix_rank(low).cpu().item()) == 1
    np.testing.assert_allclose(N(LA.cond(A)), np.linalg.cond(a), rtol=tol * 10)
    # past the local-memory kernel: tall and wide, rank 1 (three zero singular values
    # whose vectors complete the basis), and ill-conditioned (cond 1e6 / 1e12)
    for shape in ((4, 33), (70, 3), (40, 36)):
        a = np.ones(shape) if shape == (4, 33) else r.standard_normal(shape)
        if shape == (40, 36):
            u, _ = np.linalg.qr(r.standard_normal((40, 36)))
            v, _ = np.linalg.qr(r.standard_normal((36, 36)))
            a = (u * np.logspace(0, -6 if dt is em.float32 else -12, 36)) @ v
        a = N(on(device, a, dt))
        U, S, Vh = LA.svd(on(device, a, dt), full_matrices=False)
        u, sv, vh = N(U), N(S), N(Vh)
        k, eps, scale = min(shape), EPS[dt.name], np.abs(a).max()
        tol = 16 * max(shape) * eps
        assert np.abs(sv - np.linalg.svd(a, compute_uv=False)).max() <= tol * scale
        assert np.abs((u * sv) @ vh - a).max() <= tol * scale
        assert np.abs(u.T @ u - np.eye(k)).max() <= tol
        assert np.abs(vh @ vh.T - np.eye(k)).max() <= tol
        assert np.abs(N(LA.svdvals(on(device, a, dt))) - sv).max() <= tol * scale


# ------------------------------------------------------------------------ eig --

def _same_spectrum(w, ref, tol):
    """Every eigenvalue of w within tol of one of ref's and back (a multiset match up to
    the order, which the Francis iteration does not fix)."""
    if w.size == 0:
        return True
    d = np.abs(w[..., :, None] - ref[..., None, :])
    return d.min(-1).max() <= tol and d.min(-2).max() <= tol


@CFG
@given(BATCHES, JACOBI_SIZES, st.sampled_from(DTYPES), st.integers(0, 2 ** 32 - 1))
def test_eig_matches_numpy(device, batch, n, dtype, seed):
    """Hessenberg reduction and back-transformation on a device, the QR iteration on the
    host: eigenvalues as NumPy's (complex pairs included), A V = V diag(w) with unit
    columns, eigvals the same values."""
    usable(device, dtype)
    a = rng(seed).standard_normal(batch + (n, n)).astype(dtype.name).astype(np.float64)
    A = on(device, a, dtype)
    w, V = LA.eig(A)
    cdt = em.complex64 if dtype is em.float32 else em.complex128
    assert w.device == A.device and V.device == A.device and w.dtype is cdt
    wv, v = to_numpy(w.cpu()).astype(np.complex128), to_numpy(V.cpu()).astype(np.complex128)
    eps, scale = EPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    ref = np.linalg.eigvals(a) if a.size else np.zeros(batch + (n,))
    assert _same_spectrum(wv, ref, (1e3 if dtype is em.float32 else 1e6) * n * eps * scale)
    assert np.abs(a @ v - v * wv[..., None, :]).max(initial=0) <= 32 * max(n, 1) * eps * scale
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=32 * max(n, 1) * eps)
    np.testing.assert_array_equal(to_numpy(LA.eigvals(A).cpu()), to_numpy(w.cpu()))


def test_eig_structured_inputs_and_host_transfers(device):
    dt = em.float64 if _fp64(device) else em.float32
    eps = EPS[dt.name]
    # a rotation block (+-i), a triangular (defective) one, a repeated real eigenvalue,
    # already Hessenberg and diagonal inputs
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    jordan = np.array([[2.0, 1.0], [0.0, 2.0]])
    blocks = np.zeros((5, 5))
    blocks[:2, :2], blocks[2:4, 2:4], blocks[4, 4] = rot, np.eye(2) * 3, -1.0
    for a, ref in ((rot, [1j, -1j]), (jordan, [2, 2]), (blocks, [1j, -1j, 3, 3, -1]),
                   (np.diag([4.0, -2.0, 0.5]), [4, -2, 0.5]),
                   (np.triu(rng(1).standard_normal((40, 40)), -1), None)):
        A = on(device, a, dt)
        w, V = LA.eig(A)
        wv, v = to_numpy(w.cpu()), to_numpy(V.cpu())
        if ref is not None:
            assert _same_spectrum(wv, np.array(ref), 1e-3 if dt is em.float32 else 1e-7)
        tol = 32 * a.shape[-1] * eps * np.abs(a).max()
        if a is not jordan:    # the defective one's two vectors are parallel
            assert np.abs(N(A) @ v - v * wv).max() <= tol
    if device.type == "cpu":
        return
    backend = core.backend_for(A.device)
    a = on(device, rng(2).standard_normal((3, 33, 33)), dt)
    for vectors, expected in ((True, 5), (False, 4)):
        wr, wi = (em.empty(3, 33, dtype=dt, device=a.device) for _ in range(2))
        info = em.empty(3, dtype=em.int32, device=a.device)
        v = em.empty(3, 33, 33, dtype=dt, device=a.device) if vectors else None
        backend.reset_counters()
        backend.linalg_geev(a.clone(), wr, wi, v, info, vectors)
        # H down; wr, wi, info and (with vectors) the eigenvectors of H up
        assert backend.counters()["host_transfers"] == expected


def _fp64(device):
    return device.type == "cpu" or core.backend_for(device).has_fp64(device)


# ------------------------------------------------------------------- derivatives --

def test_gradcheck_solve_inv_det_cholesky(device):
    usable(device, em.float64)
    r = rng(11)

    def x(a):
        return on(device, a, em.float64).requires_grad_()

    a, b = x(well(r, (2, 3, 3))), x(r.standard_normal((2, 3, 2)))
    assert gradcheck(lambda A, B: LA.solve(A, B), (a, b))
    assert gradcheck(LA.inv, (a,))
    assert gradcheck(LA.det, (a,))
    assert gradcheck(lambda A: LA.slogdet(A).logabsdet, (a,))
    s = x(spd(r, (2, 3, 3)))
    assert gradcheck(lambda A: LA.cholesky((A + A.mT) / 2), (s,))
    assert gradcheck(lambda A, B: LA.solve_triangular(A, B, upper=True), (a, b))
    assert gradcheck(lambda A, B: LA.lu_solve(*LA.lu_factor(A), B), (a, b))
    sym = x(r.standard_normal((2, 4, 4)))
    assert gradcheck(lambda A: LA.eigvalsh(A + A.mT), (sym,))
    assert gradcheck(lambda A: (lambda w, V: V * V)(*LA.eigh(A + A.mT)), (sym,))
    g = x(r.standard_normal((2, 4, 3)))
    assert gradcheck(LA.svdvals, (g,))
    assert gradcheck(lambda A: (lambda U, S, Vh: (U * S.unsqueeze(-2)) @ Vh)(
        *LA.svd(A, full_matrices=False)), (g,))
    assert gradcheck(LA.pinv, (g,))
    assert gradcheck(lambda A: LA.qr(A).Q, (g,))
    assert gradcheck(lambda A: LA.qr(A).R, (g,))
    # eig: Hessenberg on the device, the QR iteration on the host; phase-invariant losses
    ns = x(r.standard_normal((2, 3, 3)))
    assert gradcheck(lambda A: em.view_as_real(LA.eigvals(A)), (ns,))
    assert gradcheck(lambda A: LA.eig(A)[1].abs(), (ns,))
    # complex solve and Cholesky (complex128 kernels)
    z = on(device, well(r, (2, 3, 3)) + 1j * r.standard_normal((2, 3, 3)),
           em.complex128).requires_grad_()
    zb = on(device, r.standard_normal((2, 3, 1)) + 1j * r.standard_normal((2, 3, 1)),
            em.complex128).requires_grad_()
    assert gradcheck(lambda A, B: LA.solve(A, B), (z, zb))
    assert gradcheck(lambda A: LA.cholesky(A @ A.mH), (z,))


# ----------------------------------------------------------- every device kernel --

def test_every_kernel_takes_every_linalg_dtype_on_the_device(device):
    """Every linalg kernel has a device form for the four dtypes (no host fallback);
    the low-precision ones are refused as on the CPU."""
    if device.type == "cpu":
        pytest.skip("the CPU has every kernel")
    from ember.backends.gpu import linalg as gl
    backend = core.backend_for(em.eye(1, device=device).device)
    for name in gl.KERNELS:
        assert backend.kernel_dtypes[name] == ("float32", "float64", "complex64", "complex128")
    Z = em.eye(3, device=device).to(em.float16)
    for name, call in (("linalg.eigvals", LA.eigvals), ("linalg.eigh", LA.eigh),
                       ("linalg.qr", LA.qr), ("linalg.svd", LA.svd)):
        with pytest.raises(TypeError, match=rf"^{name}: low precision dtypes are not "
                                            rf"supported, got ember.float16 \(A\)"):
            call(Z)


# -------------------------------------------------------------------- complex --

CDTYPES = (em.complex64, em.complex128)


def crandn(r, shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def C(t):
    return to_numpy(t.cpu()).astype(np.complex128)


@CFG
@given(BATCHES, SIZES, st.integers(1, 3), st.sampled_from(CDTYPES), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_complex_lu_solve_inv_det_cholesky(device, batch, n, k, dtype, adjoint, seed):
    """complex64/128 on a device (programs/linalg.h over complex; above 32 the trailing
    updates are four real GEMMs on the parts): LU's pivots as the CPU's, solve (and
    A^H solves), inv, det/slogdet and Cholesky (A = L L^H) against NumPy."""
    usable(device, em.float64 if dtype is em.complex128 else em.float32)
    r = rng(seed)
    a = crandn(r, batch + (n, n)) + 2 * np.sqrt(max(n, 1)) * np.eye(n)
    b = crandn(r, batch + (n, k))
    a = a.astype(dtype.name).astype(np.complex128)
    b = b.astype(dtype.name).astype(np.complex128)
    A, B = on(device, a, dtype), on(device, b, dtype)
    tol = 1e-4 if dtype is em.complex64 else 1e-11
    LU, piv = LA.lu_factor(A)
    assert LU.device == A.device and LU.dtype is dtype
    np.testing.assert_array_equal(N(piv), N(LA.lu_factor(on("cpu", a, dtype)).pivots))
    ah = np.conj(np.swapaxes(a, -1, -2))
    ref = np.linalg.solve(ah if adjoint else a, b) if n else b
    X = LA.lu_solve(LU, piv, B, adjoint=adjoint)
    assert np.abs(C(X) - ref).max(initial=0) <= tol * max(np.abs(ref).max(initial=0), 1)
    assert np.abs(C(LA.solve(A, B)) - (np.linalg.solve(a, b) if n else b)).max(initial=0) \
        <= tol * max(np.abs(ref).max(initial=0), 1)
    if n:
        np.testing.assert_allclose(C(LA.inv(A)), np.linalg.inv(a), atol=tol, rtol=tol)
    if n <= 33:      # the bigger ones' det overflows complex64
        np.testing.assert_allclose(C(LA.det(A)), np.linalg.det(a), rtol=tol * 10)
    sign, logabs = LA.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    np.testing.assert_allclose(C(sign), rs, atol=tol * 10)
    np.testing.assert_allclose(N(logabs), rl, atol=tol * 10 * max(n, 1))
    s = a @ ah + n * np.eye(n)
    L = LA.cholesky(on(device, s, dtype))
    scale = max(np.abs(s).max(initial=0), 1.0)
    assert np.abs(C(L) - np.linalg.cholesky(s)).max(initial=0) <= tol * np.sqrt(scale)
    for upper, left in ((False, True), (True, False)):
        T = np.triu(a) if upper else np.tril(a)
        rhs = b if left else np.swapaxes(b, -1, -2)
        X = LA.solve_triangular(on(device, T, dtype), on(device, rhs, dtype), upper=upper,
                                left=left)
        got = T @ C(X) if left else C(X) @ T
        bound = tol * max(n, 1) * max(np.abs(T).max(initial=0), 1) * max(np.abs(C(X)).max(
            initial=0), 1)
        assert np.abs(got - rhs).max(initial=0) <= bound


def test_complex_singular_and_not_positive_definite(device):
    dt = em.complex128 if _fp64(device) else em.complex64
    sing = np.ones((2, 40, 40), dtype=np.complex128)
    sing[0] = np.eye(40) * (1 + 1j)
    info = N(LA.lu_factor_ex(on(device, sing, dt)).info)
    np.testing.assert_array_equal(info, N(LA.lu_factor_ex(on("cpu", sing, dt)).info))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.solve: "):
        LA.solve(on(device, sing, dt), on(device, sing[..., :1], dt))
    npd = np.stack([np.eye(40), -np.eye(40)]).astype(np.complex128)
    _, info = LA.cholesky_ex(on(device, npd, dt))
    np.testing.assert_array_equal(N(info), [0, 1])


CEPS = {"complex64": EPS["float32"], "complex128": EPS["float64"]}


def cusable(device, dtype):
    usable(device, em.float64 if dtype is em.complex128 else em.float32)


def _mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


@CFG
@given(BATCHES, SIZES, SIZES, st.sampled_from(CDTYPES), st.integers(0, 2 ** 32 - 1))
def test_complex_qr_matches_numpy(device, batch, m, n, dtype, seed):
    """Complex Householder QR on a device (zgeqr2; blocked past 64 columns): Q R = A,
    Q unitary, R upper with a real diagonal and the CPU's R (the same reflectors)."""
    cusable(device, dtype)
    a = crandn(rng(seed), batch + (m, n)).astype(dtype.name).astype(np.complex128)
    A = on(device, a, dtype)
    eps, k = CEPS[dtype.name], min(m, n)
    Q, R = LA.qr(A)
    assert Q.device == A.device and Q.dtype is dtype and tuple(Q.shape) == batch + (m, k)
    q, r = C(Q), C(R)
    scale = max(np.abs(a).max(initial=0), 1.0)
    assert np.abs(q @ r - a).max(initial=0) <= 8 * max(m, n, 1) * eps * scale
    assert np.abs(_mh(q) @ q - np.eye(k)).max(initial=0) <= 8 * max(m, 1) * eps
    assert np.abs(np.tril(r, -1)).max(initial=0) == 0
    np.testing.assert_allclose(np.diagonal(r, 0, -2, -1).imag, 0, atol=8 * max(m, 1) * eps * scale)
    np.testing.assert_allclose(r, C(LA.qr(on("cpu", a, dtype)).R),
                               atol=32 * max(m, n, 1) * eps * scale)
    qc = C(LA.qr(A, "complete").Q)
    assert np.abs(_mh(qc) @ qc - np.eye(m)).max(initial=0) <= 8 * max(m, 1) * eps


def test_complex_geqrf_householder_product_ormqr(device):
    dt = em.complex128 if _fp64(device) else em.complex64
    tol = 1e-9 if dt is em.complex128 else 1e-4
    r = rng(5)
    for shape in ((3, 6, 4), (1, 70, 66)):      # past QR_BLOCKED: blocked (_larfb)
        g = crandn(r, shape)
        h, tau = em.geqrf(on(device, g, dt))
        hc, tauc = em.geqrf(on("cpu", g, dt))
        np.testing.assert_allclose(C(tau), C(tauc), atol=tol)
        np.testing.assert_allclose(C(h), C(hc), atol=tol * shape[-1])
        Q = C(LA.householder_product(h, tau))
        np.testing.assert_allclose(Q, C(LA.householder_product(hc, tauc)), atol=tol * 10)
        c = crandn(r, shape[:-1] + (3,))
        for transpose in (False, True):
            got = C(em.ormqr(h, tau, on(device, c, dt), transpose=transpose))
            ref = C(em.ormqr(hc, tauc, on("cpu", c, dt), transpose=transpose))
            np.testing.assert_allclose(got, ref, atol=tol * 10)


@CFG
@given(BATCHES, JACOBI_SIZES, st.sampled_from(CDTYPES), st.sampled_from(["L", "U"]),
       st.integers(0, 2 ** 32 - 1))
def test_complex_eigh_matches_numpy(device, batch, n, dtype, uplo, seed):
    """Complex Hermitian Jacobi on a device (a phase, then the real rotation): real
    eigenvalues as NumPy's, A v = w v, V unitary, one triangle read."""
    cusable(device, dtype)
    r = rng(seed)
    g = crandn(r, batch + (n, n))
    a = (g + _mh(g)).astype(dtype.name).astype(np.complex128)
    junk = crandn(r, batch + (n, n))
    given_ = np.tril(a) + np.triu(junk, 1) if uplo == "L" else np.triu(a) + np.tril(junk, -1)
    w, V = LA.eigh(on(device, given_, dtype), UPLO=uplo)
    assert w.device == V.device and V.device.type == device.type and V.dtype is dtype
    assert w.dtype is (em.float32 if dtype is em.complex64 else em.float64)
    eps, scale = CEPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    assert np.abs(N(w) - np.linalg.eigvalsh(a)).max(initial=0) <= 8 * max(n, 1) * eps * scale
    v, wv = C(V), N(w)
    assert np.abs(a @ v - v * wv[..., None, :]).max(initial=0) <= 8 * max(n, 1) * eps * scale
    assert np.abs(_mh(v) @ v - np.eye(n)).max(initial=0) <= 8 * max(n, 1) * eps
    # the CPU's values-only path rounds differently from its vectors' one
    assert np.abs(N(LA.eigvalsh(on(device, given_, dtype), UPLO=uplo)) - wv).max(
        initial=0) <= 8 * max(n, 1) * eps * scale


def test_complex_eigh_degenerate_ill_conditioned_and_non_finite(device):
    dt = em.complex128 if _fp64(device) else em.complex64
    eps = CEPS[dt.name]
    r = rng(9)
    for n in (6, 40):
        w = np.concatenate([[1.0] * 3, [-2.0] * 2, np.logspace(-6, 3, n - 5)])
        q, _ = np.linalg.qr(crandn(r, (2, n, n)))
        a = (q * w) @ _mh(q)
        a = (a + _mh(a)) / 2
        a = C(on(device, a, dt))
        W, V = LA.eigh(on(device, a, dt))
        v, wv, scale = C(V), N(W), np.abs(a).max()
        np.testing.assert_allclose(wv, np.linalg.eigvalsh(a), atol=8 * n * eps * scale)
        assert np.abs(a @ v - v * wv[..., None, :]).max() <= 8 * n * eps * scale
        assert np.abs(_mh(v) @ v - np.eye(n)).max() <= 8 * n * eps
    bad = np.stack([np.eye(3), np.eye(3)]).astype(np.complex128)
    bad[1, 2, 0] = complex(0, np.nan)
    with pytest.raises(LA.LinAlgError, match=r"^linalg.eigh: the input matrix contains "
                                             r"non-finite values, batch 1$"):
        LA.eigh(on(device, bad, dt))


@CFG
@given(BATCHES, JACOBI_SIZES, JACOBI_SIZES, st.sampled_from(CDTYPES), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_complex_svd_matches_numpy(device, batch, m, n, dtype, deficient, seed):
    """Complex one-sided Jacobi on a device, rank-deficient inputs included: S as
    NumPy's (real), U and Vh with orthonormal columns / rows, U S Vh = A."""
    cusable(device, dtype)
    a = crandn(rng(seed), batch + (m, n))
    if deficient and n >= 3:
        a[..., 2] = (1 - 2j) * a[..., 0]
        a[..., 1] = 0.0
    a = a.astype(dtype.name).astype(np.complex128)
    A = on(device, a, dtype)
    k = min(m, n)
    eps, scale = CEPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    U, S, Vh = LA.svd(A, full_matrices=False)
    assert U.device == A.device and U.dtype is dtype and tuple(Vh.shape) == batch + (k, n)
    u, sv, vh = C(U), N(S), C(Vh)
    tol = 16 * max(m, n, 1) * eps
    assert np.abs(sv - np.linalg.svd(a, compute_uv=False)).max(initial=0) <= tol * scale
    assert np.abs((u * sv[..., None, :]) @ vh - a).max(initial=0) <= tol * scale
    assert np.abs(_mh(u) @ u - np.eye(k)).max(initial=0) <= tol
    assert np.abs(vh @ _mh(vh) - np.eye(k)).max(initial=0) <= tol
    assert np.abs(N(LA.svdvals(A)) - sv).max(initial=0) <= tol * scale
    Uf = C(LA.svd(A).U)
    assert np.abs(_mh(Uf) @ Uf - np.eye(m)).max(initial=0) <= tol


def test_complex_svd_ill_conditioned_rank_one_and_built_ops(device):
    dt = em.complex128 if _fp64(device) else em.complex64
    eps = CEPS[dt.name]
    r = rng(12)
    for shape in ((4, 33), (70, 3), (40, 36)):
        if shape == (40, 36):
            u, _ = np.linalg.qr(crandn(r, (40, 36)))
            v, _ = np.linalg.qr(crandn(r, (36, 36)))
            a = (u * np.logspace(0, -6 if dt is em.complex64 else -12, 36)) @ v
        else:
            a = np.outer(crandn(r, shape[0]), crandn(r, shape[1])) if shape == (4, 33) \
                else crandn(r, shape)
        a = C(on(device, a, dt))
        U, S, Vh = LA.svd(on(device, a, dt), full_matrices=False)
        u, sv, vh = C(U), N(S), C(Vh)
        k, scale = min(shape), np.abs(a).max()
        tol = 16 * max(shape) * eps
        assert np.abs(sv - np.linalg.svd(a, compute_uv=False)).max() <= tol * scale
        assert np.abs((u * sv) @ vh - a).max() <= tol * scale
        assert np.abs(_mh(u) @ u - np.eye(k)).max() <= tol
        assert np.abs(vh @ _mh(vh) - np.eye(k)).max() <= tol
    a = crandn(r, (3, 7, 4))
    b = crandn(r, (3, 7, 2))
    t = 1e-9 if dt is em.complex128 else 1e-4
    np.testing.assert_allclose(C(LA.pinv(on(device, a, dt))), np.linalg.pinv(a), atol=t)
    ref = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(a, b)])
    X = LA.lstsq(on(device, a, dt), on(device, b, dt), driver="gelsd").solution
    np.testing.assert_allclose(C(X), ref, atol=t)


@CFG
@given(BATCHES, JACOBI_SIZES, st.sampled_from(CDTYPES), st.integers(0, 2 ** 32 - 1))
def test_complex_eig_matches_numpy(device, batch, n, dtype, seed):
    """Complex Hessenberg reduction and back-transformation on a device, the
    single-shift QR on the host: eigenvalues as NumPy's, A V = V diag(w), unit columns,
    eigvals the same values."""
    cusable(device, dtype)
    a = crandn(rng(seed), batch + (n, n)).astype(dtype.name).astype(np.complex128)
    A = on(device, a, dtype)
    w, V = LA.eig(A)
    assert w.device == A.device and V.device == A.device and w.dtype is dtype
    wv, v = C(w), C(V)
    eps, scale = CEPS[dtype.name], max(np.abs(a).max(initial=0), 1.0)
    ref = np.linalg.eigvals(a) if a.size else np.zeros(batch + (n,))
    assert _same_spectrum(wv, ref, (1e3 if dtype is em.complex64 else 1e6) * n * eps * scale)
    assert np.abs(a @ v - v * wv[..., None, :]).max(initial=0) <= 32 * max(n, 1) * eps * scale
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=32 * max(n, 1) * eps)
    assert _same_spectrum(C(LA.eigvals(A)), wv, (1e3 if dtype is em.complex64 else 1e6) * n * eps
                          * scale)


def test_complex_eig_structured_inputs_and_host_transfers(device):
    dt = em.complex128 if _fp64(device) else em.complex64
    eps = CEPS[dt.name]
    r = rng(3)
    # diagonal, triangular, Hermitian (real spectrum) and already-Hessenberg inputs
    herm = crandn(r, (6, 6))
    herm = herm + _mh(herm)
    tri = np.triu(crandn(r, (5, 5)))
    for a, ref in ((np.diag([1j, -2.0, 3 + 4j]), [1j, -2, 3 + 4j]),
                   (tri, np.diagonal(tri)), (herm, np.linalg.eigvalsh(herm)),
                   (np.triu(crandn(r, (40, 40)), -1), None)):
        A = on(device, a, dt)
        w, V = LA.eig(A)
        wv, v = C(w), C(V)
        if ref is not None:
            assert _same_spectrum(wv, np.asarray(ref), 1e-3 if dt is em.complex64 else 1e-8)
        assert np.abs(C(A) @ v - v * wv).max() <= 32 * a.shape[-1] * eps * np.abs(a).max()
    if device.type == "cpu":
        return
    backend = core.backend_for(A.device)
    a = on(device, crandn(r, (3, 33, 33)), dt)
    for vectors, expected in ((True, 4), (False, 3)):
        w = em.empty(3, 33, dtype=dt, device=a.device)
        info = em.empty(3, dtype=em.int32, device=a.device)
        v = em.empty(3, 33, 33, dtype=dt, device=a.device) if vectors else None
        backend.reset_counters()
        backend.linalg_geev(a.clone(), w, w, v, info, vectors)
        # H down; w, info and (with vectors) the eigenvectors of H up
        assert backend.counters()["host_transfers"] == expected


def test_complex_gradcheck_qr_eigh_svd_eig(device):
    usable(device, em.float64)
    r = rng(13)

    def z(a):
        return on(device, a, em.complex128).requires_grad_()

    g = z(crandn(r, (2, 4, 3)))
    assert gradcheck(lambda A: LA.qr(A).Q, (g,))
    assert gradcheck(lambda A: LA.qr(A).R, (g,))
    assert gradcheck(LA.svdvals, (g,))
    assert gradcheck(lambda A: (lambda U, S, Vh: (U * S.unsqueeze(-2)) @ Vh)(
        *LA.svd(A, full_matrices=False)), (g,))
    h = z(crandn(r, (2, 4, 4)))
    assert gradcheck(lambda A: LA.eigvalsh(A + A.mH), (h,))
    assert gradcheck(lambda A: (lambda w, V: V.abs())(*LA.eigh(A + A.mH)), (h,))
    ns = z(crandn(r, (2, 3, 3)))
    assert gradcheck(LA.eigvals, (ns,))
    assert gradcheck(lambda A: LA.eig(A)[1].abs(), (ns,))
