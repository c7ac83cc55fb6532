"""Randomised and iterative eigen/singular solvers for large matrices of low rank:
svd_lowrank, pca_lowrank (Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1)
and lobpcg (Knyazev 2001, with the Rayleigh-Ritz basis orthonormalised robustly).

All three are composed of ember ops (randn, qr, svd, eigh, matmul, solve), so they run
wherever those do and autograd differentiates them. lobpcg iterates without recording
and differentiates only its converged answer (see _differentiable_eigenpairs), as
PyTorch's does.
"""
from __future__ import annotations

import math
import numbers

from ember._args import int_arg, tensor_arg
from ember._grad_mode import is_grad_enabled, no_grad

__all__ = ["svd_lowrank", "pca_lowrank", "lobpcg"]


def _linalg():
    import ember.linalg as linalg
    return linalg


def _matrix(A, op):
    A = tensor_arg(A, op)
    if A.ndim < 2:
        raise ValueError(f"{op}: expected a matrix or a batch of matrices, got shape "
                         f"{tuple(A.shape)}")
    if A.dtype.kind not in ("float", "complex"):
        raise TypeError(f"{op}: expected a floating point or complex input, got {A.dtype!r}")
    return A


def _approximate_basis(A, q, niter, M):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M, by
    niter power (subspace) iterations from a Gaussian start; A - M is never formed."""
    import ember as em
    linalg = _linalg()
    n = A.shape[-1]
    R = em.randn(n, q, dtype=A.dtype, device=A.device)

    def times(X, Y):
        return X @ Y if M is None else X @ Y - M @ Y

    Q = linalg.qr(times(A, R)).Q
    for _ in range(niter):
        Q = linalg.qr(times(A.mH, Q) if M is None else A.mH @ Q - M.mH @ Q).Q
        Q = linalg.qr(times(A, Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~= U diag(S) V^H (M defaults to zero), from a rank-q sketch:
    q a slightly overestimated rank of A, niter the number of subspace iterations
    (torch.svd_lowrank). Randomised: seed ember's generator for repeatable results.
    U is (*, m, q), S (*, q), V (*, n, q)."""
    op = "svd_lowrank"
    A = _matrix(A, op)
    m, n = A.shape[-2], A.shape[-1]
    q = 6 if q is None else int_arg(q, "q", op)
    niter = int_arg(niter, "niter", op)
    if not 0 < q <= min(m, n):
        raise ValueError(f"{op}: q={q} must be in [1, min(m, n) = {min(m, n)}] for an "
                         f"input of shape {tuple(A.shape)}")
    if niter < 0:
        raise ValueError(f"{op}: niter={niter} must be non-negative")
    if M is not None:
        M = tensor_arg(M, op, "M")
        try:
            M = M.broadcast_to(A.shape)
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"{op}: M of shape {tuple(M.shape)} does not broadcast to A's "
                             f"shape {tuple(A.shape)}") from e
    linalg = _linalg()
    if m < n or n > q:
        # sketch A^H so that the small factor is (m, q) (or V stays n x q)
        Q = _approximate_basis(A.mH, q, niter, None if M is None else M.mH)
        B = A @ Q if M is None else A @ Q - M @ Q           # (m, q) = (A - M) Q
        U, S, Vh = linalg.svd(B, full_matrices=False)
        V = Q @ Vh.mH
    else:
        Q = _approximate_basis(A, q, niter, M)
        B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M  # (q, n) = Q^H (A - M)
        U, S, Vh = linalg.svd(B, full_matrices=False)
        U, V = Q @ U, Vh.mH
    return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V): the principal components of the rows of A (torch.pca_lowrank): the
    low-rank SVD of A with its column means subtracted when center is true. q defaults
    to min(6, m, n); the columns of V are the principal directions, S**2 / (m - 1) the
    explained variances."""
    op = "pca_lowrank"
    A = _matrix(A, op)
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else int_arg(q, "q", op)
    if not 0 <= q <= min(m, n):
        raise ValueError(f"{op}: q={q} must be in [0, min(m, n) = {min(m, n)}] for an "
                         f"input of shape {tuple(A.shape)}")
    niter = int_arg(niter, "niter", op)
    if niter < 0:
        raise ValueError(f"{op}: niter={niter} must be non-negative")
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return svd_lowrank(A, q, niter=niter)


# ---------------------------------------------------------------------------------------
# lobpcg

def _orthonormal_basis(S, B, rcond):
    """A B-orthonormal basis of S's column space, dropping directions whose share of the
    Gram matrix is below rcond (so a nearly dependent [X, W, P] loses a column instead
    of failing as a Cholesky would)."""
    linalg = _linalg()
    BS = S if B is None else B @ S
    w, V = linalg.eigh(S.mH @ BS)
    keep = w > rcond * w.abs().max()
    V, w = V[:, keep], w[keep]
    return S @ (V / w.sqrt())


def _unit_columns(V):
    norms = V.norm(dim=0)
    return V / norms.where(norms > 0, norms.new_ones(()))


def _rayleigh_ritz(A, S, n, largest):
    """The n extreme Ritz pairs of A on the (B-orthonormal) basis S."""
    linalg = _linalg()
    T = S.mH @ (A @ S)
    theta, C = linalg.eigh((T + T.mH) * 0.5)
    idx = list(range(theta.shape[0] - 1, theta.shape[0] - 1 - n, -1)) if largest \
        else list(range(n))
    return theta[idx], S @ C[:, idx]


def _lobpcg_one(A, k, B, X, n, iK, niter, tol, largest, tracker):
    import ember as em
    m = A.shape[-1]
    eps = em.finfo(A.dtype).eps
    rcond = 10 * m * eps
    if X is None:
        X = em.randn(m, n, dtype=A.dtype, device=A.device)
    A_norm = float(_linalg().matrix_norm(A).real)
    B_norm = 1.0 if B is None else float(_linalg().matrix_norm(B).real)
    X = _orthonormal_basis(X, B, rcond)
    if X.shape[-1] < n:
        raise ValueError(f"lobpcg: the initial X (shape ({m}, {n})) has rank "
                         f"{X.shape[-1]} < n = {n}")
    E, X = _rayleigh_ritz(A, X, n, largest)
    P = None
    it = 0
    while True:
        BX = X if B is None else B @ X
        R = A @ X - BX * E
        # relative residual of each wanted pair (PyTorch's criterion)
        rerr = R[:, :k].norm(dim=0) / ((A_norm + E[:k].abs() * B_norm) * X[:, :k].norm(dim=0))
        converged = int((rerr < tol).sum())
        if tracker is not None:
            tracker(_TrackerState(it, E, X, R, rerr, converged))
        if converged >= k or (niter >= 0 and it >= niter):
            break
        W = R if iK is None else iK @ R
        # W and P shrink with the residual: taken B-orthogonal to X and to unit columns
        # before the basis is formed, so that the Gram matrix's rcond cut keeps them
        S = em.cat([X] + [_unit_columns(V - X @ (BX.mH @ V))
                          for V in ([W] if P is None else [W, P])], dim=1)
        S = _orthonormal_basis(_orthonormal_basis(S, B, rcond), B, rcond)
        E_new, X_new = _rayleigh_ritz(A, S, min(n, S.shape[-1]), largest)
        if X_new.shape[-1] < n:      # the basis collapsed: nothing more to gain
            break
        # the new search direction: the part of the step that is B-orthogonal to X
        P = X_new - X @ (BX.mH @ X_new)
        E, X = E_new, X_new
        it += 1
    return E[:k], X[:, :k]


class _TrackerState:
    """What lobpcg's tracker callable receives each iteration (ember's own object:
    PyTorch passes its internal worker; ivars/fvars/tvars hold the same facts)."""

    def __init__(self, iteration, E, X, R, rerr, converged):
        self.ivars = {"istep": iteration, "converged_count": converged}
        self.tvars = {"E": E, "X": X, "R": R, "rerr": rerr}
        self.fvars = {}
        self.bvars = {}


def _differentiable_eigenpairs(A, X):
    """(E, U) for the converged eigenvectors X of A, recorded so that the gradient is
    that of the exact eigenpairs: the Rayleigh-Ritz step on span(X) carries the part
    within the subspace (eigh's backward), and a zero-valued correction
    -(A - lambda I)^+ (A U - U diag(E)), its resolvent applied on the complement of
    span(X) and held constant, carries the part outside it (first-order perturbation
    theory: dU = -(A - lambda)^+ P dA U)."""
    import ember as em
    linalg = _linalg()
    X = X.detach()
    T = X.mH @ A @ X
    E, Z = linalg.eigh((T + T.mH) * 0.5)
    U = X @ Z
    m = A.shape[-1]
    with no_grad():
        P = em.eye(m, dtype=A.dtype, device=A.device) - X @ X.mH
        Ad = A.detach()
        shifted = [P @ (Ad - float(e.real) * em.eye(m, dtype=A.dtype, device=A.device)) @ P
                   + X @ X.mH for e in E.detach()]
    R = A @ U - U * E
    cols = [linalg.solve(Mi, (P @ R[:, i:i + 1])) for i, Mi in enumerate(shifted)]
    return E, U - em.cat(cols, dim=1)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The k largest (or smallest) eigenpairs of the symmetric (Hermitian) positive
    definite generalised problem A x = lambda B x, by LOBPCG (torch.lobpcg). A is
    (*, m, m); B (default the identity) (*, m, m); X an initial guess (*, m, n);
    iK a preconditioner (*, m, m); niter the maximum number of iterations (default
    1000, -1 for no limit); tol the relative residual at which a pair counts as
    converged (default sqrt(eps) of the dtype); largest (default True). Needs
    m >= 3 n. Returns E (*, k), in descending order when largest, and X (*, m, k).

    ember's iteration is the robust one (method "ortho" and "basic" both name it: the
    basis [X, R, P] is orthonormalised by an eigendecomposition of its Gram matrix that
    drops dependent directions); ortho_*params are accepted and unused. The tracker,
    if given, is called each iteration with an object whose ivars/tvars hold the step,
    the converged count, E, X, the residuals and their relative errors. Gradients flow
    to A (when B is None), exact at convergence."""
    op = "lobpcg"
    A = _matrix(A, op)
    m = A.shape[-1]
    if A.shape[-2] != m:
        raise ValueError(f"{op}: A must be square, got shape {tuple(A.shape)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"{op}: method must be 'ortho' or 'basic', got {method!r}")
    for name, t in (("B", B), ("iK", iK)):
        if t is not None and tuple(tensor_arg(t, op, name).shape) != tuple(A.shape):
            raise ValueError(f"{op}: {name} must have A's shape {tuple(A.shape)}, got "
                             f"{tuple(t.shape)}")
    if X is not None:
        X = tensor_arg(X, op, "X")
        if X.ndim != A.ndim or X.shape[-2] != m or tuple(X.shape[:-2]) != tuple(A.shape[:-2]):
            raise ValueError(f"{op}: X must be (*, {m}, n) with A's batch, got shape "
                             f"{tuple(X.shape)} for A of shape {tuple(A.shape)}")
    k = (1 if X is None else X.shape[-1]) if k is None else int_arg(k, "k", op)
    n = (k if X is None else X.shape[-1]) if n is None else int_arg(n, "n", op)
    if X is not None and X.shape[-1] != n:
        raise ValueError(f"{op}: n={n} but X has {X.shape[-1]} columns")
    if not 0 < k <= n:
        raise ValueError(f"{op}: need 0 < k <= n, got k={k}, n={n}")
    if m < 3 * n:
        raise ValueError(f"{op}: LOBPCG is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    niter = 1000 if niter is None else int_arg(niter, "niter", op)
    import ember as em
    if tol is not None and (not isinstance(tol, numbers.Real) or isinstance(tol, bool)):
        raise TypeError(f"{op}: tol must be a real number, got {type(tol).__name__}")
    if tracker is not None and not callable(tracker):
        raise TypeError(f"{op}: tracker must be callable, got {type(tracker).__name__}")
    tol = math.sqrt(em.finfo(A.dtype).eps) if tol is None else float(tol)
    largest = True if largest is None else bool(largest)
    differentiable = is_grad_enabled() and A.requires_grad
    if B is not None and is_grad_enabled() and (A.requires_grad or B.requires_grad):
        raise RuntimeError("lobpcg: the backward is defined only when B is None (as in "
                           "PyTorch); call it under ember.no_grad() or drop B")
    batch = tuple(A.shape[:-2])
    flat = 1
    for s in batch:
        flat *= s
    A2 = A.reshape(flat, m, m)

    def item(t, i):
        return None if t is None else t.reshape(flat, *t.shape[-2:])[i]

    Es, Xs = [], []
    for i in range(flat):
        with no_grad():
            E, V = _lobpcg_one(A2[i].detach(), k, item(B, i), item(X, i), n, item(iK, i),
                               niter, tol, largest, tracker)
        if differentiable:
            E, V = _differentiable_eigenpairs(A2[i], V)
            order = list(range(k - 1, -1, -1)) if largest else list(range(k))
            E, V = E[order], V[:, order]
        Es.append(E)
        Xs.append(V)
    E, V = em.stack(Es), em.stack(Xs)
    return E.reshape(*batch, k), V.reshape(*batch, m, k)
