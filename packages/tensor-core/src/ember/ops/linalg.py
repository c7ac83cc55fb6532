"""Matrix factorizations and what is built on them: the decompositions, solvers and
matrix functions of torch.linalg (exported by ember.linalg) and their main-namespace
and Tensor forms (em.det, em.inverse, em.cholesky_solve, em.svd, ...), with their
derivatives (the *_backward functions, rows of ember/autograd/formulas.py).

The kernels are the `linalg` family (backends/base.py; ember._C.linalg over
kernels/cpu/linalg.c on the CPU): LU, triangular solve, Cholesky, Householder QR and
its Q, the symmetric and nonsymmetric eigensolvers and the SVD, each over a batch of
matrices. Everything else is composed from them and ember's ops (so autograd
differentiates it for free): det/slogdet/inv/solve from LU, lstsq from QR or the SVD,
pinv/matrix_rank/cond from the SVD (eigh when hermitian), matrix_exp by scaling and
squaring with a Pade approximant, matrix_power by repeated squaring.

Ops with several differentiable outputs (qr, eigh, svd) record ONE output that packs
them (flattened and concatenated along the last dim); the results the user gets are
views of it, so one backward row sees every output's gradient.

On OpenCL and CUDA (backends/gpu/linalg.py over kernels/gpu/programs/linalg.h), float32
and float64, everything runs on the device: LU (so solve, inv, det, slogdet, lu,
lu_factor, lu_solve, matrix_exp, ...), Cholesky, the triangular solves (cholesky_solve,
cholesky_inverse, ...) and Householder QR (qr, geqrf, householder_product, ormqr) for
any size: small matrices (LU, Cholesky: at most 32 x 32) one work-group each in local
memory, larger ones blocked with the panels factored on the device and the trailing
updates on the device GEMM (QR above 64 columns: compact WY block reflectors).
eigh/eigvalsh and the SVD (svd, svdvals, pinv, matrix_rank, cond, lstsq): up to 32 x 32,
by Jacobi in local memory. No host transfer is made: the `_ex` forms return info on
the device, the raising forms read it once (one host transfer of batch int32s per
call). eig/eigvals, eigh and the SVD above 32 x 32 and complex dtypes have no device
kernels: they raise "<op>: no kernel for <device> (<dtype>)" (with the size, for the
sized ones); nothing is copied to the host.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings
from collections import namedtuple

from ember._args import int_arg, tensor_arg
from ember._C import core as _core
from ember._registry import tensor_method
from ember.backends import run as _run

# The main namespace's forms (em.det, ...). em.svd, em.qr, em.cholesky, em.lu and
# em.lu_solve are PyTorch's legacy ones (torch.svd returns V, torch.lu_solve takes b
# first, ...): ember/__init__.py imports svd_legacy & co under those names.
__all__ = ["det", "logdet", "slogdet", "inverse", "cholesky_solve", "cholesky_inverse",
           "triangular_solve", "lu_unpack", "pinverse", "matrix_power", "matrix_exp", "geqrf",
           "orgqr", "ormqr"]
LEGACY = {"svd": "svd_legacy", "qr": "qr_legacy", "cholesky": "cholesky_legacy",
          "lu": "lu_legacy", "lu_solve": "lu_solve_legacy"}

_float32 = _core._dtype_by_name("float32")
_float64 = _core._dtype_by_name("float64")
_complex64 = _core._dtype_by_name("complex64")
_complex128 = _core._dtype_by_name("complex128")
_FLOATING = (_float32, _float64, _complex64, _complex128)
_int32 = _core._dtype_by_name("int32")
_int64 = _core._dtype_by_name("int64")


class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle: singular, not positive-definite, or an
    iteration that did not converge (torch.linalg.LinAlgError). The message names the
    op, the reason and the batch entry."""


# results, named as PyTorch names them
SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
LUFactorResult = namedtuple("lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("lu", ["P", "L", "U"])
QRResult = namedtuple("qr", ["Q", "R"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("svd", ["U", "S", "Vh"])
LegacySVDResult = namedtuple("svd", ["U", "S", "V"])
LstsqResult = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
SolveExResult = namedtuple("solve_ex", ["result", "info"])
InvExResult = namedtuple("inv_ex", ["inverse", "info"])
CholeskyExResult = namedtuple("cholesky_ex", ["L", "info"])
TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
GeqrfResult = namedtuple("geqrf", ["a", "tau"])


def _em():
    import ember
    return ember


# ---------------------------------------------------------------- argument checks --

def _matrix(A, op, what="A", square=False):
    """A checked: a float32/float64/complex64/complex128 tensor of at least 2 dims
    (square ones when asked)."""
    tensor_arg(A, op, what)
    if A.dtype.kind not in ("float", "complex"):
        raise TypeError(f"{op}: expected a floating point tensor ({what}: float32, float64, "
                        f"complex64 or complex128), got {A.dtype!r}")
    if A.dtype not in _FLOATING:
        raise TypeError(f"{op}: low precision dtypes are not supported, got {A.dtype!r} "
                        f"({what}); use float32, float64, complex64 or complex128")
    if A.ndim < 2:
        raise ValueError(f"{op}: {what} must have at least 2 dimensions, got shape "
                         f"{tuple(A.shape)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{op}: {what} must be batches of square matrices, but they are "
                         f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _same_dtype(A, B, op):
    if A.dtype is not B.dtype:
        raise TypeError(f"{op}: expected A and B to have the same dtype, but found A of "
                        f"type {A.dtype.name} and B of type {B.dtype.name}")
    if A.device != B.device:
        raise RuntimeError(f"{op}: expected all tensors on one device, got {A.device} "
                           f"and {B.device}")


def _copy(A, shape=None):
    """A fresh contiguous copy (the kernels work in place), expanded to shape."""
    x = A.detach()
    if shape is not None and tuple(x.shape) != tuple(shape):
        x = x.expand(*shape)
    return _core.contiguous_copy(x)


def _batch_str(shape, flat):
    """The batch entry `flat` of batch shape `shape`, as a user reads it."""
    if len(shape) == 1:
        return str(flat)
    idx = []
    for s in reversed(shape):
        idx.append(flat % s)
        flat //= s
    return str(tuple(reversed(idx)))


def _raise_info(info, batch_shape, op, reason):
    """LinAlgError for the first batch entry whose info is nonzero; reason(code) says
    why. (info: the int32 tensor of the kernel, one element per matrix.)"""
    if info.numel() > 1 and not bool(info.any()):   # the common case, without a list
        return
    codes = info.reshape(-1).tolist()
    for i, c in enumerate(codes):
        if c != 0:
            where = f", batch {_batch_str(batch_shape, i)}" if batch_shape else ""
            raise LinAlgError(f"{op}: {reason(c)}{where}")


def _info_tensor(batch_shape, device):
    return _core.empty(tuple(batch_shape), _int32, device)


def _eye(n, m, like, batch=()):
    em = _em()
    e = em.eye(n, m, dtype=like.dtype, device=like.device)
    if batch:
        e = _core.contiguous_copy(e.expand(*batch, n, m))
    return e


def _tril(x, k=0):
    return _em().tril(x, k)


def _triu(x, k=0):
    return _em().triu(x, k)


def _mT(x):
    return x.transpose(-2, -1)


def _cplx(x):
    return x.dtype.kind == "complex"


def _conj(x):
    return x.conj_physical() if _cplx(x) else x


def _mH(x):
    """The conjugate transpose (the transpose of a real tensor): also the derivatives'
    transposes, as PyTorch's formulas for complex inputs."""
    return x.mH if _cplx(x) else x.transpose(-2, -1)


def _real_dtype(dtype):
    return _float32 if dtype is _complex64 else _float64 if dtype is _complex128 else dtype


def _eps(dtype):
    return 2.0 ** -52 if dtype in (_float64, _complex128) else 2.0 ** -23


def _singular(c):
    return (f"the solver failed because the input matrix is singular (the diagonal element "
            f"{c} of its LU factor U is zero)")


def _no_convergence(c):
    if c < 0:
        return "the input matrix contains non-finite values"
    return ("the algorithm failed to converge because the input matrix is ill-conditioned "
            "or has too many repeated eigenvalues or singular values")


# --------------------------------------------------------------------------- LU --

def _lu_kernel(A, op):
    """(LU, pivots, info) of a copy of A (..., m, n)."""
    LU = _copy(A)
    m, n = A.shape[-2:]
    batch = tuple(A.shape[:-2])
    piv = _core.empty(batch + (min(m, n),), _int32, A.device)
    info = _info_tensor(batch, A.device)
    _run("linalg_lu_factor", op, LU, piv, info)
    return LU, piv, info


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): the LU factorization with partial pivoting, A = P L U, of
    each matrix of A (..., m, n): L (unit lower, below the diagonal of LU) and U (on and
    above it); pivots (int32, 1-based) the row interchanges, LAPACK's; info (int32)
    i > 0 when U[i-1, i-1] is exactly zero. check_errors raises LinAlgError then."""
    op = "linalg.lu_factor_ex"
    _matrix(A, op)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    LU, piv, info = _lu_kernel(A, op)
    if check_errors:
        _raise_info(info, tuple(A.shape[:-2]), op,
                    lambda c: f"U[{c - 1}, {c - 1}] is zero: the matrix is singular")
    if _core.any_requires_grad((A,)):
        _core.record("linalg_lu_factor", (A,), LU, {"pivots": piv})
    return LUFactorExResult(LU, piv, info)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of lu_factor_ex; a singular matrix raises LinAlgError (lu_solve
    with it would divide by zero; lu_factor_ex returns it with info instead)."""
    op = "linalg.lu_factor"
    _matrix(A, op)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    _raise_info(info, tuple(A.shape[:-2]), op,
                lambda c: f"U[{c - 1}, {c - 1}] is zero and using it on lu_solve would result "
                          f"in a division by zero (use linalg.lu_factor_ex to get the "
                          f"factorization anyway)")
    return LUFactorResult(LU, piv)


def _perm_from_pivots(piv, m):
    """The row order perm (..., m) int64 with P^T A = A[perm] for LAPACK pivots."""
    em = _em()
    batch = tuple(piv.shape[:-1])
    perm = _core.contiguous_copy(em.arange(m, device=piv.device).expand(*batch, m))
    p = piv.to(_int64) - 1
    for i in range(piv.shape[-1]):
        pi = p.narrow(-1, i, 1)
        a = perm.narrow(-1, i, 1).clone()
        b = perm.gather(-1, pi)
        perm.narrow(-1, i, 1).copy_(b)
        perm.scatter_(-1, pi, a)
    return perm


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's (LU, pivots): A = P @ L @ U, L (m, k) unit lower, U
    (k, n) upper, P (m, m) a permutation; what is not unpacked is an empty tensor."""
    op = "lu_unpack"
    em = _em()
    _matrix(LU_data, op, "LU_data")
    tensor_arg(LU_pivots, op, "LU_pivots")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,) or \
            LU_pivots.dtype.kind != "int":
        raise ValueError(f"{op}: LU_pivots must be integers of shape "
                         f"{tuple(LU_data.shape[:-2]) + (k,)} for LU_data "
                         f"{tuple(LU_data.shape)}, got {tuple(LU_pivots.shape)} "
                         f"{LU_pivots.dtype!r}")
    empty = em.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        L = _tril(LU_data.narrow(-1, 0, k), -1) + _eye(m, k, LU_data)
        U = _triu(LU_data.narrow(-2, 0, k))
    if unpack_pivots:
        perm = _perm_from_pivots(LU_pivots, m)
        batch = tuple(LU_data.shape[:-2])
        P = em.zeros(*batch, m, m, dtype=LU_data.dtype, device=LU_data.device)
        P.scatter_(-2, perm.unsqueeze(-2), 1.0)
    return LUResult(P, L, U)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P @ L @ U (torch.linalg.lu): lu_factor, then lu_unpack."""
    op = "linalg.lu"
    _matrix(A, op)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    LU, piv, _ = lu_factor_ex(A)
    return lu_unpack(LU, piv)


@tensor_method(names=("lu",))
def lu_legacy(A, pivot=True, get_infos=False):
    """torch.lu (deprecated in PyTorch): (LU, pivots), or (LU, pivots, infos) when
    get_infos (else a singular matrix raises LinAlgError)."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (LU, piv, info) if get_infos else (LU, piv)


def _equation_batch(A, B, n, left, op):
    """The broadcast batch shape of AX = B (XA = B when not left), B's rows (columns)
    checked against A's n."""
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise ValueError(f"{op}: incompatible shapes of A and B for the equation {eq} "
                         f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    try:
        batch = tuple(_em().broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    except (RuntimeError, ValueError):
        raise ValueError(f"{op}: the batch dimensions of A {tuple(A.shape)} and B "
                         f"{tuple(B.shape)} do not broadcast") from None
    return batch


def _rhs(A, B, op, left=True):
    """B as matrices (..., n, k) broadcast with A's batch (torch's rule: B is a batch of
    vectors when it is 1-d or has A's shape without the last dim); (A_batch, B,
    vector_case, batch shape)."""
    tensor_arg(B, op, "B")
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        if not left:
            raise ValueError(f"{op}: incompatible shapes of A and B for the equation XA = B "
                             f"({A.shape[-2]}x{A.shape[-1]} and {tuple(B.shape)})")
        B = B.unsqueeze(-1)
    if B.ndim < 2:
        raise ValueError(f"{op}: B must have at least 1 dimension, got shape {tuple(B.shape)}")
    batch = _equation_batch(A, B, n, left, op)
    return B, vector, batch


def _solve_kernel(A, B, batch, op, adjoint=False):
    """(X, info): X = A^{-1} B (A^{-T} B) by LU, for A (..., n, n), B (..., n, k)."""
    n, k = B.shape[-2], B.shape[-1]
    LU, piv, info = _lu_kernel(A.expand(*batch, n, n) if batch != tuple(A.shape[:-2]) else A,
                               op)
    X = _copy(B, batch + (n, k))
    _run("linalg_lu_solve", op, LU, piv, X, adjoint)
    return X, info


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info): the solution of A X = B (X A = B when not left) for square A
    (..., n, n), B (..., n, k) or a batch of vectors (..., n), batch dims broadcast;
    info (int32) i > 0 where A is singular (X is then not finite)."""
    op = "linalg.solve_ex"
    X, info = _solve(A, B, left, op)
    if check_errors:
        _raise_info(info, tuple(info.shape), op, _singular)
    return SolveExResult(X, info)


def _solve(A, B, left, op):
    _matrix(A, op, square=True)
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    if not left:
        if B.ndim < 2:
            raise ValueError(f"{op}: incompatible shapes of A and B for the equation XA = B "
                             f"({A.shape[-2]}x{A.shape[-1]} and {tuple(B.shape)})")
        X, info = _solve(_mT(A), _mT(B), True, op)
        return _mT(X), info
    B2, vector, batch = _rhs(A, B, op)
    X, info = _solve_kernel(A, B2, batch, op)
    if _core.any_requires_grad((A, B2)):
        _core.record("linalg_solve", (A, B2), X, None)
    if vector:
        X = X.squeeze(-1)
    return X, info


def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (X A = B when left=False) by LU with partial pivoting;
    B is (..., n, k) or a batch of vectors (..., n) (torch's rule), batch dims broadcast.
    A singular A raises LinAlgError."""
    op = "linalg.solve"
    X, info = _solve(A, B, left, op)
    _raise_info(info, tuple(info.shape), op, _singular)
    return X


def solve_backward(A, X, g, needs):
    """(gA, gB) of X = A^{-1} B: gB = A^{-H} g, gA = -gB X^H."""
    gB = solve(_mH(A), g)
    gA = -(gB @ _mH(X)) if needs[0] else None
    return gA, (gB if needs[1] else None)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (X A = B when not left; A^T instead of A when adjoint) from
    lu_factor's (LU, pivots). Composed of solve_triangular on LU's triangles and the
    row permutation, so it is differentiable in LU and B."""
    op = "linalg.lu_solve"
    _matrix(LU, op, "LU", square=True)
    _matrix(B, op, "B")
    _same_dtype(LU, B, op)
    tensor_arg(pivots, op, "pivots")
    n = LU.shape[-1]
    if tuple(pivots.shape) != tuple(LU.shape[:-2]) + (n,):
        raise ValueError(f"{op}: pivots must have shape {tuple(LU.shape[:-2]) + (n,)}, got "
                         f"{tuple(pivots.shape)}")
    if not left:
        # X A = B  <=>  A^H X^H = B^H
        return _mH(lu_solve(LU, pivots, _mH(B), left=True, adjoint=not adjoint))
    if B.shape[-2] != n:
        raise ValueError(f"{op}: incompatible shapes of LU {tuple(LU.shape)} and B "
                         f"{tuple(B.shape)}")
    grad = _core.any_requires_grad((LU, B))
    if not grad:
        try:
            batch = tuple(_em().broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
        except (RuntimeError, ValueError):
            raise ValueError(f"{op}: the batch dimensions of LU {tuple(LU.shape)} and B "
                             f"{tuple(B.shape)} do not broadcast") from None
        X = _copy(B, batch + tuple(B.shape[-2:]))
        piv = _copy(pivots, batch + (n,))
        lu = _copy(LU, batch + (n, n))
        _run("linalg_lu_solve", op, lu, piv, X, bool(adjoint))
        return X
    em = _em()
    perm = _perm_from_pivots(pivots, n)          # P^T B = B[perm]
    Lm, U = _tril(LU, -1) + _eye(n, n, LU), _triu(LU)
    if not adjoint:
        Y = solve_triangular(Lm, _permute_rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    # A^H X = B: A^H = U^H L^H P^T, so X = P L^{-H} U^{-H} B
    Y = solve_triangular(_mH(U), B, upper=False)
    Z = solve_triangular(_mH(Lm), Y, upper=True, unitriangular=True)
    inv = em.argsort(perm, dim=-1)
    return _permute_rows(Z, inv)


@tensor_method(names=("lu_solve",))
def lu_solve_legacy(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve(b, LU_data, LU_pivots): linalg.lu_solve(LU_data, LU_pivots, b)."""
    return lu_solve(LU_data, LU_pivots, b)


def _permute_rows(B, perm):
    """B[..., perm, :] with perm (..., n) broadcast against B's batch."""
    em = _em()
    batch = tuple(em.broadcast_shapes(tuple(perm.shape[:-1]), tuple(B.shape[:-2])))
    idx = perm.expand(*batch, perm.shape[-1]).unsqueeze(-1).expand(*batch, perm.shape[-1],
                                                                   B.shape[-1])
    return em.gather(B.expand(*batch, *B.shape[-2:]), -2, idx)


def _lu_square_grad(L, U, gL, gU):
    """L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}: the gradient of the square LU
    A = L U (no pivoting) for the gradients gL (its strictly lower part counts) and gU."""
    phi = _tril(_mH(L) @ gL, -1) + _triu(gU @ _mH(U))
    X = solve_triangular(_mH(L), phi, upper=True, unitriangular=True)
    return solve_triangular(_mH(U), X, upper=False, left=False)


def lu_factor_backward(A, LU, pivots, g):
    """gA of (LU, pivots) = lu_factor(A), A = P L U (m x n), g the gradient of LU (gL
    its strictly lower part, gU the upper). Square: gA = P L^{-H} (tril(L^H gL, -1) +
    triu(gU U^H)) U^{-H}. Wide (m < n, U = [U1 U2]): U2 = L^{-1} P^T A2 adds
    -L^{-H} gU2 U2^H to gL, and gA2 = P L^{-H} gU2. Tall (m > n, L = [L1; L2]): L2 =
    (P^T A)_2 U^{-1} adds -L2^H gL2 U^{-H} to gU, and g(P^T A)_2 = gL2 U^{-H}
    (PyTorch's linalg_lu_backward)."""
    em = _em()
    m, n = A.shape[-2:]
    P, _, _ = lu_unpack(LU.detach(), pivots, unpack_data=False)
    if m == n:
        L = _tril(LU, -1) + _eye(n, n, LU)
        return P @ _lu_square_grad(L, _triu(LU), _tril(g, -1), _triu(g))
    if m < n:
        L = _tril(LU.narrow(-1, 0, m), -1) + _eye(m, m, LU)
        U1, U2 = _triu(LU.narrow(-1, 0, m)), LU.narrow(-1, m, n - m)
        g1, gU2 = g.narrow(-1, 0, m), g.narrow(-1, m, n - m)
        X2 = solve_triangular(_mH(L), gU2, upper=True, unitriangular=True)
        gL = _tril(g1, -1) - _tril(X2 @ _mH(U2), -1)
        X1 = _lu_square_grad(L, U1, gL, _triu(g1))
        return P @ em.cat([X1, X2], -1)
    L1 = _tril(LU.narrow(-2, 0, n), -1) + _eye(n, n, LU)
    U, L2 = _triu(LU.narrow(-2, 0, n)), LU.narrow(-2, n, m - n)
    g1, gL2 = g.narrow(-2, 0, n), g.narrow(-2, n, m - n)
    Y = solve_triangular(_mH(U), gL2, upper=False, left=False)      # gL2 U^{-H}
    gU = _triu(g1) - _triu(_mH(L2) @ Y)
    X1 = _lu_square_grad(L1, U, _tril(g1, -1), gU)
    return P @ em.cat([X1, Y], -2)


# ---------------------------------------------------------------- inverse, det --

def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info) of square matrices A (..., n, n) by LU; info i > 0 where A is
    singular (the inverse is then not finite)."""
    op = "linalg.inv_ex"
    Ainv, info = _inv(A, op)
    if check_errors:
        _raise_info(info, tuple(A.shape[:-2]), op, _singular_inv)
    return InvExResult(Ainv, info)


def _singular_inv(c):
    return (f"the diagonal element {c} is zero, the inversion could not be completed "
            f"because the input matrix is singular")


def _inv(A, op):
    _matrix(A, op, square=True)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    X, info = _solve_kernel(A, _eye(n, n, A, batch), batch, op)
    if _core.any_requires_grad((A,)):
        _core.record("linalg_inv", (A,), X, None)
    return X, info


@tensor_method(names=("inverse",))
def inv(A, *, out=None):
    """The inverse of square matrices A (..., n, n), by LU with partial pivoting; a
    singular matrix raises LinAlgError."""
    op = "linalg.inv"
    Ainv, info = _inv(A, op)
    _raise_info(info, tuple(A.shape[:-2]), op, _singular_inv)
    return Ainv


inverse = inv


def inv_backward(Ainv, g):
    """gA of Ainv = A^{-1}: -A^{-H} g A^{-H}."""
    t = _mH(Ainv)
    return -(t @ g @ t)


def _det_parts(A, op):
    """(diag(U), permutation sign, info) of A's LU factorization."""
    em = _em()
    LU, piv, info = _lu_kernel(A, op)
    n = A.shape[-1]
    d = em.diagonal(LU, 0, -2, -1)
    swaps = (piv != em.arange(1, n + 1, dtype=_int32, device=A.device)).sum(-1)
    sign = 1.0 - 2.0 * (swaps % 2).to(A.dtype)
    return d, sign, info


@tensor_method
def det(A, *, out=None):
    """The determinant of square matrices A (..., n, n): the product of U's diagonal of
    the LU factorization, times the sign of its permutation (0 for a singular matrix)."""
    op = "linalg.det"
    _matrix(A, op, square=True)
    d, sign, _ = _det_parts(A, op)
    out = _core.contiguous_copy(d.prod(-1) * sign)
    if _core.any_requires_grad((A,)):
        _core.record("linalg_det", (A,), out, None)
    return out


def det_backward(A, D, g):
    """gA of D = det(A): g conj(D) A^{-H} where A is invertible; for a singular A, g times the
    cofactor matrix, from the SVD A = U S Vh: det(U) det(Vh) U diag(prod_{j != i} s_j)
    Vh (exact for any A)."""
    em = _em()
    gD = (g * _conj(D)).unsqueeze(-1).unsqueeze(-1)
    if bool((D != 0).all()):
        return gD * _mH(inv(A))
    U, S, Vh = svd(A, full_matrices=False)
    n = S.shape[-1]
    prods = []
    for i in range(n):
        mask = em.ones(n, dtype=A.dtype, device=A.device)
        mask[i] = 0.0
        prods.append((S * mask + (1 - mask)).prod(-1, keepdim=True))
    cof_s = em.cat(prods, -1)
    sign = det(U.detach()) * det(Vh.detach())
    cof = (U * cof_s.unsqueeze(-2)) @ Vh * sign.unsqueeze(-1).unsqueeze(-1)
    return g.unsqueeze(-1).unsqueeze(-1) * _conj(cof)


@tensor_method
def slogdet(A, *, out=None):
    """(sign, logabsdet) of square matrices A: det(A) = sign * exp(logabsdet), from
    the LU factorization (sign 0 and logabsdet -inf for a singular matrix)."""
    op = "linalg.slogdet"
    _matrix(A, op, square=True)
    em = _em()
    d, psign, _ = _det_parts(A, op)
    if _cplx(A):
        # sign: the product of the phases d / |d| (0 for a singular matrix), logabsdet real
        sign = _core.contiguous_copy(psign * em.sgn(d).prod(-1))
    else:
        sign = _core.contiguous_copy(psign * em.sign(d).prod(-1))
    logabs = _core.contiguous_copy(em.log(em.abs(d)).sum(-1))
    if _core.any_requires_grad((A,)):
        _core.record("linalg_slogdet", (A,), logabs, None)
    return SlogdetResult(sign, logabs)


def slogdet_backward(A, g):
    """gA of logabsdet(A): g A^{-H}."""
    return g.unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))


@tensor_method
def logdet(input):
    """log(det(input)) of square matrices: NaN for a negative determinant, -inf for a
    singular matrix (torch.logdet); differentiable through slogdet."""
    em = _em()
    sign, logabs = slogdet(input)
    return logabs + em.log(sign)


# -------------------------------------------------------------------- Cholesky --

def _not_pd(c):
    return (f"the factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {c} is not positive-definite)")


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor of symmetric positive-definite matrices A, A = L
    L^T with L lower (upper=True: U with A = U^T U); only that triangle of A is read.
    info i > 0 when the leading minor of order i is not positive-definite."""
    op = "linalg.cholesky_ex"
    L, info = _cholesky(A, upper, op)
    if check_errors:
        _raise_info(info, tuple(A.shape[:-2]), op, _not_pd)
    return CholeskyExResult(L, info)


def _cholesky(A, upper, op):
    _matrix(A, op, square=True)
    src = _mH(A) if upper else A      # A's upper triangle is A^H's lower one
    L = _copy(src)
    info = _info_tensor(tuple(A.shape[:-2]), A.device)
    _run("linalg_cholesky", op, L, info)
    if _core.any_requires_grad((A,)):
        _core.record("linalg_cholesky", (src,), L, None)
    return (_mH(L) if upper else L), info


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (lower, A = L L^T; upper=True: U, A = U^T U) of symmetric
    positive-definite matrices A (..., n, n), blocked; a matrix that is not
    positive-definite raises LinAlgError naming the leading minor."""
    op = "linalg.cholesky"
    L, info = _cholesky(A, upper, op)
    _raise_info(info, tuple(A.shape[:-2]), op, _not_pd)
    return L


@tensor_method(names=("cholesky",))
def cholesky_legacy(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in PyTorch): linalg.cholesky with upper positional."""
    return cholesky(input, upper=upper)


def cholesky_backward(L, g):
    """gA of L = cholesky(A) (A's lower triangle read, the gradient symmetric):
    L^{-H} Phi(L^H g) L^{-1} with Phi the lower triangle, diagonal halved, mirrored."""
    gA = _tril(_mH(L) @ g)
    gA = 0.5 * (gA + _mH(_tril(gA, -1)))
    gA = solve_triangular(_mH(L), gA, upper=True)
    return solve_triangular(L, gA, upper=False, left=False)


@tensor_method
def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = input where input2 is A's Cholesky factor (lower; upper=True:
    upper): two triangular solves (torch.cholesky_solve)."""
    op = "cholesky_solve"
    _matrix(input, op, "input")
    _matrix(input2, op, "input2", square=True)
    _same_dtype(input2, input, op)
    if upper:
        Y = solve_triangular(_mH(input2), input, upper=False)
        return solve_triangular(input2, Y, upper=True)
    Y = solve_triangular(input2, input, upper=False)
    return solve_triangular(_mH(input2), Y, upper=True)


@tensor_method
def cholesky_inverse(input, upper=False, *, out=None):
    """A^{-1} from A's Cholesky factor (torch.cholesky_inverse)."""
    op = "cholesky_inverse"
    _matrix(input, op, square=True)
    n = input.shape[-1]
    return cholesky_solve(_eye(n, n, input, tuple(input.shape[:-2])), input, upper)


# ----------------------------------------------------------- triangular solves --

def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B when not left) for triangular A (..., n, n): only the
    triangle `upper` names is read, its diagonal taken as ones when unitriangular;
    batch dims broadcast. Blocked forward/back substitution over ember's GEMM."""
    op = "linalg.solve_triangular"
    _matrix(A, op, square=True)
    _matrix(B, op, "B")
    _same_dtype(A, B, op)
    n = A.shape[-1]
    batch = _equation_batch(A, B, n, left, op)
    a = _copy(A, batch + (n, n))
    if left:
        X = _copy(B, batch + tuple(B.shape[-2:]))
        _run("linalg_trsm", op, a, X, bool(upper), False, bool(unitriangular))
    else:
        # X A = B  <=>  A^T X^T = B^T
        Xt = _copy(_mT(B), batch + (n, B.shape[-2]))
        _run("linalg_trsm", op, a, Xt, bool(upper), True, bool(unitriangular))
        X = _mT(Xt)
    if _core.any_requires_grad((A, B)):
        X = _core.contiguous_copy(X) if not left else X
        _core.record("linalg_solve_triangular", (A, B), X,
                {"upper": bool(upper), "left": bool(left), "unitriangular": bool(unitriangular)})
    return X


def solve_triangular_backward(A, X, g, attrs, needs):
    """(gA, gB) of X = solve_triangular(A, B): gB = A^{-H} g (on the same side), gA =
    -gB X^H (left) or -X^H gB (right), kept to A's triangle (strictly, when unit)."""
    upper, left, unit = attrs["upper"], attrs["left"], attrs["unitriangular"]
    gB = solve_triangular(_mH(A), g, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if needs[0]:
        gA = -(gB @ _mH(X)) if left else -(_mH(X) @ gB)
        k = 1 if unit else 0
        gA = _triu(gA, k) if upper else _tril(gA, -k)
    return gA, (gB if needs[1] else None)


@tensor_method
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(solution, cloned_coefficient) of A X = b (A^T X = b when transpose): PyTorch's
    legacy order of arguments and results (torch.triangular_solve)."""
    op = "triangular_solve"
    _matrix(A, op, "A", square=True)
    _matrix(b, op, "b")
    coeff = A.clone()
    if transpose:
        X = solve_triangular(_mT(A), b, upper=not upper, unitriangular=unitriangular)
    else:
        X = solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return TriangularSolveResult(X, coeff)


# -------------------------------------------------------------------------- QR --

def _geqrf(A, op):
    a = _copy(A)
    m, n = A.shape[-2:]
    tau = _core.empty(tuple(A.shape[:-2]) + (min(m, n),), A.dtype, A.device)
    _run("linalg_geqrf", op, a, tau)
    return a, tau


def _apply_q(v, tau, C, trans, op):
    """Q C (Q^H C when trans) for the reflectors (v, tau) of geqrf; C (..., m, p)."""
    if _core.any_requires_grad((v, tau, C)):
        return _apply_q_composed(v, tau, C, trans)
    C = _copy(C)
    _run("linalg_ormqr", op, v, tau, C, bool(trans))
    return C


def _apply_q_composed(v, tau, C, trans):
    """_apply_q as ember ops (differentiable in v, tau and C): Q C = H_0 (H_1 (...
    (H_{k-1} C))) with H_i = I - tau_i v_i v_i^H, Q^H C with conj(tau_i) in the other
    order."""
    m, nv = v.shape[-2:]
    k = tau.shape[-1]
    V = _tril(v, -1) + _eye(m, nv, v)
    order = range(k) if trans else reversed(range(k))
    for i in order:
        vi = V.narrow(-1, i, 1)
        t = tau.narrow(-1, i, 1).unsqueeze(-1)
        if trans and _cplx(t):
            t = t.conj()
        C = C - (t * vi) @ (_mH(vi) @ C)
    return C


@tensor_method
def geqrf(input, *, out=None):
    """(a, tau): LAPACK's geqrf, the Householder QR of input (..., m, n) in compact
    form: R on and above a's diagonal, the reflectors' vectors below it, tau their
    scalars (blocked, compact WY)."""
    op = "geqrf"
    _matrix(input, op)
    return GeqrfResult(*_geqrf(input, op))


def householder_product(A, tau, *, out=None):
    """The first n columns of the product H_1 ... H_k of the Householder reflectors
    H_i = I - tau_i v_i v_i^H stored in A (..., m, n) (v_i below the diagonal of column
    i, 1 on it) and tau (..., k), k <= n <= m (LAPACK's orgqr). Differentiable in A and
    tau: when either requires grad the product is composed of ember ops."""
    op = "linalg.householder_product"
    _matrix(A, op)
    tensor_arg(tau, op, "tau")
    m, n = A.shape[-2:]
    if n > m:
        raise ValueError(f"{op}: A must have at least as many rows as columns, got "
                         f"{tuple(A.shape)}")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]) or \
            tau.shape[-1] > n:
        raise ValueError(f"{op}: tau must have shape {tuple(A.shape[:-2])} + (k,) with k <= "
                         f"{n}, got {tuple(tau.shape)}")
    _same_dtype(A, tau, op)
    eye = _eye(m, n, A, tuple(A.shape[:-2]))
    if _core.any_requires_grad((A, tau)):
        return _apply_q_composed(A, tau, eye, False)
    return _apply_q(_copy(A), _copy(tau), eye, False, op)


@tensor_method
def orgqr(input, tau):
    """householder_product (torch.orgqr)."""
    return householder_product(input, tau)


@tensor_method
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """input3 multiplied by Q (Q^H when transpose) from the left (or the right), Q the
    product of geqrf's reflectors (input, input2) (LAPACK's ormqr); differentiable in
    all three (composed of ember ops when one requires grad)."""
    op = "ormqr"
    _matrix(input, op, "input")
    _matrix(input3, op, "input3")
    tensor_arg(input2, op, "input2")
    _same_dtype(input, input3, op)
    _same_dtype(input, input2, op)
    m = input.shape[-2]
    rows = input3.shape[-2] if left else input3.shape[-1]
    if rows != m or input2.shape[-1] > min(m, input.shape[-1]):
        raise ValueError(f"{op}: the reflectors {tuple(input.shape)} (tau "
                         f"{tuple(input2.shape)}) cannot be applied to {tuple(input3.shape)} "
                         f"from the {'left' if left else 'right'}")
    grad = _core.any_requires_grad((input, input2, input3))
    v, t = (input, input2) if grad else (_copy(input), _copy(input2))
    if left:
        return _apply_q(v, t, input3, transpose, op)
    # C Q = (Q^H C^H)^H
    return _mH(_apply_q(v, t, _mH(input3), not transpose, op))


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R (torch.linalg.qr): mode 'reduced' (Q (m, k), R (k, n), k =
    min(m, n)), 'complete' (Q (m, m), R (m, n)) or 'r' (R only; Q empty). Blocked
    Householder QR (compact WY); R's diagonal may be negative (LAPACK's convention)."""
    op = "linalg.qr"
    _matrix(A, op)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"{op}: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    em = _em()
    m, n = A.shape[-2:]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    a, tau = _geqrf(A, op)
    if mode == "r":
        R = _core.contiguous_copy(_triu(a.narrow(-2, 0, k)))
        if _core.any_requires_grad((A,)):
            _core.record("linalg_qr_r", (A,), R, None)
        return QRResult(em.empty(0, dtype=A.dtype, device=A.device), R)
    qcols = m if mode == "complete" else k
    Q = _apply_q(a, tau, _eye(m, qcols, A, batch), False, op)
    R = _triu(a) if mode == "complete" else _triu(a.narrow(-2, 0, k))
    R = R.contiguous()        # triu's result is a fresh tensor: no second copy
    if _core.any_requires_grad((A,)):
        Q, R = _pack_record("linalg_qr", (A,), (Q, R), {"mode": mode})
    return QRResult(Q, R)


def _pack_record(name, inputs, outs, attrs):
    """Record outs as ONE op (flattened matrices concatenated along the last dim) and
    return them as views of the packed result (module docstring)."""
    em = _em()
    batch = tuple(outs[0].shape[:-2])
    flat = [o.reshape(*batch, -1) for o in outs]
    packed = em.cat(flat, -1)
    a = dict(attrs or {})
    a["shapes"] = [tuple(o.shape) for o in outs]
    _core.record(name, inputs, packed, a)
    views, off = [], 0
    for o, f in zip(outs, flat):
        size = f.shape[-1]
        views.append(packed.narrow(-1, off, size).reshape(tuple(o.shape)))
        off += size
    return tuple(views)


def unpack_grad(g, shapes):
    """The gradients of a packed record's outputs (None where all zero is fine)."""
    batch = tuple(g.shape[:-1])
    out, off = [], 0
    for s in shapes:
        size = 1
        for d in s[len(batch):]:
            size *= d
        out.append(g.narrow(-1, off, size).reshape(s))
        off += size
    return out


def qr_backward(A, Q, R, gQ, gR, mode):
    """gA of (Q, R) = qr(A): for m >= n (reduced), gA = (gQ + Q copyltu(M)) R^{-H} with
    M = R gR^H - gQ^H Q and copyltu(M) = tril(M, -1) + tril(M, -1)^H + Re(diag(M))
    (R's diagonal is real: no phase is free); for m < n, A = [X Y], R = [U V]: gX from
    X = Q U with gQ + Y gV^H, and gY = Q gV."""
    em = _em()
    m, n = A.shape[-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("linalg.qr: the QR decomposition is not differentiable when "
                           "mode='complete' and nrows > ncols")
    if m >= n:
        M = R @ _mH(gR) - _mH(gQ) @ Q
        low = _tril(M, -1)
        if _cplx(M):
            copyltu = low + _mH(low) + em.diag_embed(em.real(em.diagonal(M, 0, -2, -1))
                                                     ).to(M.dtype)
        else:
            copyltu = _tril(M) + _mT(low)
        return _solve_right_rt(R, gQ + Q @ copyltu)
    U, gU = R.narrow(-1, 0, m), gR.narrow(-1, 0, m)
    Y, gV = A.narrow(-1, m, n - m), gR.narrow(-1, m, n - m)
    gX = qr_backward(A.narrow(-1, 0, m), Q, U, gQ + Y @ _mH(gV), gU, "reduced")
    return em.cat([gX, Q @ gV], -1)


def _solve_right_rt(R, B):
    """B R^{-H} (R upper square): X R^H = B."""
    return solve_triangular(_mH(R), B, upper=False, left=False)


@tensor_method(names=("qr",))
def qr_legacy(input, some=True, *, out=None):
    """torch.qr (deprecated in PyTorch): some=True is mode 'reduced', else 'complete'."""
    return qr(input, "reduced" if some else "complete")


# ---------------------------------------------------------- symmetric eigen --

def _symmetrize(A, UPLO):
    """The symmetric (Hermitian) matrix of A's triangle UPLO (a complex diagonal's
    imaginary part is ignored, as LAPACK does)."""
    if _cplx(A):
        em = _em()
        off = _tril(A, -1) if UPLO == "L" else _triu(A, 1)
        d = em.real(em.diagonal(A, 0, -2, -1)).to(A.dtype)
        return off + _mH(off) + em.diag_embed(d)
    if UPLO == "L":
        return _tril(A) + _mT(_tril(A, -1))
    return _triu(A) + _mT(_triu(A, 1))


def _syev(A, UPLO, vectors, op):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    _matrix(A, op, square=True)
    S = _core.contiguous_copy(_symmetrize(A.detach(), UPLO))
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    w = _core.empty(batch + (n,), _real_dtype(A.dtype), A.device)
    info = _info_tensor(batch, A.device)
    _run("linalg_syev", op, S, w, info, bool(vectors))
    _raise_info(info, batch, op, _no_convergence)
    return w, S


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues, eigenvectors) of symmetric matrices A (..., n, n), reading the
    triangle UPLO names: eigenvalues ascending, eigenvectors the orthonormal columns
    (each determined up to sign). Householder tridiagonalisation + implicit QL with
    Wilkinson shifts, in double precision."""
    op = "linalg.eigh"
    w, V = _syev(A, UPLO, True, op)
    if _core.any_requires_grad((A,)):
        packed = _pack_eigh("linalg_eigh", A, UPLO, w, V)
        return EighResult(*packed)
    return EighResult(w, V)


def eigh_packed(w, V):
    """[w; V] as one tensor of V's dtype (a complex V's real eigenvalues widened)."""
    return _em().cat([w.unsqueeze(-2).to(V.dtype), V], -2)


def _pack_eigh(name, A, UPLO, w, V, check=True):
    em = _em()
    packed = eigh_packed(w, V)
    n = A.shape[-1]
    _core.record(name, (_symmetrize(A, UPLO),), packed, {"phase_check": check})
    w = packed.narrow(-2, 0, 1).squeeze(-2)
    return (em.real(w) if _cplx(w) else w), packed.narrow(-2, 1, n)


def eigh_unchecked(S):
    """eigh(S) recorded without the phase check (_check_phase): the formulas' recomputed
    forward for higher-order derivatives, whose paths each carry part of a gradient."""
    w, V = _syev(S, "L", True, "linalg.eigh")
    return _pack_eigh("linalg_eigh", S, "L", w, V, False)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of symmetric matrices A, ascending (eigh without vectors)."""
    op = "linalg.eigvalsh"
    if _core.any_requires_grad((A,)):
        return eigh(A, UPLO).eigenvalues
    return _syev(A, UPLO, False, op)[0]


def eigh_backward(packed, g, check=True):
    """gA of (L, V) = eigh(A) (packed as [L; V]): V (diag(gL) + skew(V^H gV) / E) V^H
    with E_ij = L_j - L_i (infinite where eigenvalues repeat: a warning, as PyTorch's
    documentation says the gradient then is not defined). Complex eigenvectors are
    defined up to a phase each: a loss that depends on the phases (Im diag(V^H gV) not
    zero) has no derivative and is refused, as PyTorch's linalg_eig_backward
    (check=False skips that: see _check_phase)."""
    em = _em()
    n = packed.shape[-1]
    L, V = packed.narrow(-2, 0, 1).squeeze(-2), packed.narrow(-2, 1, n)
    gL, gV = g.narrow(-2, 0, 1).squeeze(-2), g.narrow(-2, 1, n)
    VtgV = _mH(V) @ gV
    if _cplx(V):
        L, gL = em.real(L), em.real(gL)
        if check:
            im = em.imag(em.diagonal(VtgV, 0, -2, -1))
            _check_phase(im, em.zeros_like(im), "linalg.eigh", "eigenvectors")
    inner = 0.5 * (VtgV - _mH(VtgV))
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    eye = em.eye(n, dtype=L.dtype, device=L.device)
    if bool(((E == 0) & (eye == 0)).any()) and bool((gV != 0).any()):
        warnings.warn("linalg.eigh: the eigenvectors' gradient is not finite for repeated "
                      "eigenvalues", UserWarning, stacklevel=3)
    inner = inner / (E + eye)
    inner = inner * (1 - eye) + em.diag_embed(gL).to(inner.dtype)
    return V @ inner @ _mH(V)


def _check_phase(a, b, op, what):
    """PyTorch's check that a loss of complex singular/eigen vectors does not depend on
    their phases: a == b (imaginary parts) within its lax allclose(rtol=atol=1e-2).
    It runs on a node's first backward only: in higher-order derivatives the formulas
    recompute the forward, and each path into a node then carries only part of the
    gauge-invariant total (the formulas project that part, so the sum is right)."""
    if bool(((a - b).abs() > 1e-2 + 1e-2 * b.abs()).any()):
        raise RuntimeError(f"{op}: the {what} in the complex case are specified up to "
                           f"multiplication by e^{{i phi}}; the specified loss function "
                           f"depends on this phase term, making it ill-defined")


# ------------------------------------------------------------------------ SVD --

def _svd_kernel(A, vectors, op):
    m, n = A.shape[-2:]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    a = _copy(A)
    s = _core.empty(batch + (k,), _real_dtype(A.dtype), A.device)
    info = _info_tensor(batch, A.device)
    U = _core.empty(batch + (m, k), A.dtype, A.device) if vectors else None
    Vh = _core.empty(batch + (k, n), A.dtype, A.device) if vectors else None
    if k:
        _run("linalg_svd", op, a, s, U, Vh, info, bool(vectors))
        _raise_info(info, batch, op, _no_convergence)
    return U, s, Vh


def _complete(Q, op):
    """Q (..., m, k) with orthonormal columns, completed to an orthogonal (..., m, m)."""
    em = _em()
    m, k = Q.shape[-2:]
    if k == m:
        return Q
    full = qr(Q.detach(), "complete").Q if k else _eye(m, m, Q, tuple(Q.shape[:-2]))
    return em.cat([Q, full.narrow(-1, k, m - k)], -1)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh (torch.linalg.svd): S descending; U (m, m) and
    Vh (n, n) with full_matrices, else (m, k) and (k, n). Golub-Kahan
    bidiagonalisation, then implicit-shift QR (below 32 columns) or divide and conquer
    (LAPACK's gesdd), in double precision. `driver` (a cuSOLVER name in PyTorch) is
    accepted and has no effect: ember has one SVD."""
    op = "linalg.svd"
    _matrix(A, op)
    if driver not in (None, "gesvd", "gesvdj", "gesvda"):
        raise ValueError(f"{op}: driver must be None, 'gesvd', 'gesvdj' or 'gesvda', got "
                         f"{driver!r}")
    m, n = A.shape[-2:]
    U, S, Vh = _svd_kernel(A, True, op)
    grad = _core.any_requires_grad((A,))
    if grad:
        # with full_matrices, the columns that complete U (rows of Vh) are not unique:
        # they are constants to autograd, as in PyTorch
        U, S, Vh = _pack_svd(A, U, S, Vh)
    if full_matrices:
        if m > n:
            U = _complete(U, op)
        elif m < n:
            Vh = _mT(_complete(_mT(Vh), op))
    return SVDResult(U, S, Vh)


def _pack_svd(A, U, S, Vh, check=True):
    em = _em()
    batch = tuple(A.shape[:-2])
    m, n = A.shape[-2:]
    k = S.shape[-1]
    packed = svd_packed(U, S, Vh)
    _core.record("linalg_svd", (A,), packed, {"m": m, "n": n, "k": k, "phase_check": check})
    U = packed.narrow(-1, 0, m * k).reshape(*batch, m, k)
    S = packed.narrow(-1, m * k, k)
    Vh = packed.narrow(-1, m * k + k, k * n).reshape(*batch, k, n)
    return U, (em.real(S) if _cplx(S) else S), Vh


def svd_unchecked(A):
    """svd(A, full_matrices=False) recorded without the phase check (eigh_unchecked)."""
    return _pack_svd(A, *_svd_kernel(A, True, "linalg.svd"), False)


def svd_packed(U, S, Vh):
    """[U, S, Vh] flattened along the last dim, in U's dtype (a complex U's real S
    widened)."""
    batch = tuple(U.shape[:-2])
    return _em().cat([U.reshape(*batch, -1), S.to(U.dtype), Vh.reshape(*batch, -1)], -1)


def svd_backward(packed, g, attrs):
    """gA of (U, S, Vh) = svd(A, full_matrices=False): PyTorch's formula, with E_jk =
    S_k^2 - S_j^2: U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS) + i Im(diag(U^H
    gU)) / S] Vh, plus the parts outside U's (m > n) or V's (m < n) span. The gauge (a
    common sign, or phase, of U's and V's columns) does not change it; a complex loss
    that depends on the phases (Im diag(U^H gU + V^H gV) not zero) is refused, as
    PyTorch's; repeated singular values make it infinite (warned)."""
    em = _em()
    m, n, k = attrs["m"], attrs["n"], attrs["k"]
    batch = tuple(packed.shape[:-1])

    def parts(t):
        return (t.narrow(-1, 0, m * k).reshape(*batch, m, k), t.narrow(-1, m * k, k),
                t.narrow(-1, m * k + k, k * n).reshape(*batch, k, n))

    U, S, Vh = parts(packed)
    gU, gS, gVh = parts(g)
    cplx = _cplx(U)
    if cplx:
        S, gS = em.real(S), em.real(gS)
    V, gV = _mH(Vh), _mH(gVh)
    eye = em.eye(k, dtype=S.dtype, device=S.device)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    if bool(((E == 0) & (eye == 0)).any()) and bool(((gU != 0).any()) or bool((gV != 0).any())):
        warnings.warn("linalg.svd: the gradient through U and Vh is not finite for repeated "
                      "singular values", UserWarning, stacklevel=3)
    E = E + eye
    UtgU = _mH(U) @ gU
    VtgV = _mH(V) @ gV
    skU = UtgU - _mH(UtgU)
    skV = VtgV - _mH(VtgV)
    inner = (skU * S.unsqueeze(-2) + S.unsqueeze(-1) * skV) / E
    inner = inner * (1 - eye) + em.diag_embed(gS).to(inner.dtype)
    if cplx:
        imU = em.imag(em.diagonal(UtgU, 0, -2, -1))
        if attrs.get("phase_check", True):
            _check_phase(imU, -em.imag(em.diagonal(VtgV, 0, -2, -1)), "linalg.svd",
                         "singular vectors")
        inner = inner + em.diag_embed(em.complex(em.zeros_like(imU), imU / S))
    if m > n:
        gUS = gU / S.unsqueeze(-2)
        return (U @ inner + gUS - U @ (_mH(U) @ gUS)) @ Vh
    if m < n:
        SgVh = gVh / S.unsqueeze(-1)
        return U @ (inner @ Vh + SgVh - (SgVh @ V) @ Vh)
    return U @ inner @ Vh


def svdvals(A, *, driver=None, out=None):
    """The singular values of A (..., m, n), descending."""
    op = "linalg.svdvals"
    _matrix(A, op)
    if _core.any_requires_grad((A,)):
        return svd(A, full_matrices=False).S
    return _svd_kernel(A, False, op)[1]


@tensor_method(names=("svd",))
def svd_legacy(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with input = U diag(S) V^T (V, not Vh); some=True the
    reduced form; compute_uv=False gives zero-filled U (m, m) and V (n, n)."""
    op = "svd"
    _matrix(input, op)
    em = _em()
    m, n = input.shape[-2:]
    batch = tuple(input.shape[:-2])
    if not compute_uv:
        S = svdvals(input)
        return LegacySVDResult(em.zeros(*batch, m, m, dtype=input.dtype, device=input.device),
                               S, em.zeros(*batch, n, n, dtype=input.dtype,
                                           device=input.device))
    U, S, Vh = svd(input, full_matrices=not some)
    return LegacySVDResult(U, S, _mH(Vh))


# ----------------------------------------------- least squares, pinv, rank, cond --

def _default_rtol(A, atol, rtol):
    if rtol is None:
        return _eps(A.dtype) * max(A.shape[-2:]) if atol is None else 0.0
    return rtol


def _tol_tensor(x, like, op, name):
    """atol/rtol as a float or a tensor broadcast against the batch."""
    if x is None:
        return 0.0
    if isinstance(x, _core.TensorBase):
        return x.to(_real_dtype(like.dtype)).unsqueeze(-1)
    if not isinstance(x, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number or a tensor, got {x!r}")
    return float(x)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse of A (..., m, n), from the SVD (eigh when
    hermitian): singular values at or below max(atol, rtol * sigma_max) count as zero;
    rtol defaults to eps * max(m, n) when neither is given (0 when only atol is)."""
    op = "linalg.pinv"
    _matrix(A, op, square=hermitian)
    em = _em()
    rt = _default_rtol(A, atol, rtol)
    if hermitian:
        w, V = eigh(A)
        aw = em.abs(w)
        cutoff = em.maximum(_as_t(_tol_tensor(atol, A, op, "atol"), aw),
                            _as_t(_tol_tensor(rt, A, op, "rtol"), aw)
                            * aw.amax(-1, keepdim=True))
        keep = aw > cutoff
        winv = em.where(keep, 1.0 / em.where(keep, w, em.ones_like(w)), em.zeros_like(w))
        return (V * winv.unsqueeze(-2).to(V.dtype)) @ _mH(V)
    if A.shape[-1] == 0 or A.shape[-2] == 0:
        return em.zeros(*A.shape[:-2], A.shape[-1], A.shape[-2], dtype=A.dtype,
                        device=A.device)
    U, S, Vh = svd(A, full_matrices=False)
    cutoff = em.maximum(_as_t(_tol_tensor(atol, A, op, "atol"), S),
                        _as_t(_tol_tensor(rt, A, op, "rtol"), S) * S.amax(-1, keepdim=True))
    keep = S > cutoff
    sinv = em.where(keep, 1.0 / em.where(keep, S, em.ones_like(S)), em.zeros_like(S))
    return (_mH(Vh) * sinv.unsqueeze(-2).to(A.dtype)) @ _mH(U)


def _as_t(x, like):
    em = _em()
    if isinstance(x, _core.TensorBase):
        return x
    return em.full((), x, dtype=like.dtype, device=like.device)


@tensor_method
def pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with rtol = rcond."""
    return pinv(input, rtol=rcond)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values (|eigenvalues| when hermitian) above
    max(atol, rtol * sigma_max), int64; tolerances as pinv's."""
    op = "linalg.matrix_rank"
    _matrix(A, op, square=hermitian)
    em = _em()
    rt = _default_rtol(A, atol, rtol)
    with _no_grad():
        if A.shape[-1] == 0 or A.shape[-2] == 0:
            return em.zeros(*A.shape[:-2], dtype=_int64, device=A.device)
        S = em.abs(eigvalsh(A)) if hermitian else svdvals(A)
        cutoff = em.maximum(_as_t(_tol_tensor(atol, A, op, "atol"), S),
                            _as_t(_tol_tensor(rt, A, op, "rtol"), S) * S.amax(-1, keepdim=True))
        return (S > cutoff).sum(-1).to(_int64)


def _no_grad():
    return _em().no_grad()


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B||_F (torch's
    results per driver): 'gels' QR (A of full rank), 'gelsy' (the default), 'gelsd' and
    'gelss' the SVD, with rank the count of singular values above rcond * sigma_max
    (rcond defaults to eps * max(m, n)) and the minimum-norm solution. residuals: the
    squared residual norms of the columns when m > n and every matrix is of full rank
    (not for gelsy), else empty; rank: for gelsy/gelsd/gelss; singular_values: for
    gelsd/gelss. Differentiable (composed of qr, svd and solves)."""
    op = "linalg.lstsq"
    _matrix(A, op)
    tensor_arg(B, op, "B")
    _same_dtype(A, B, op)
    em = _em()
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"{op}: driver must be one of 'gels', 'gelsy', 'gelsd', 'gelss', got "
                         f"{driver!r}")
    m, n = A.shape[-2:]
    vector = B.ndim == A.ndim - 1
    if vector:
        B = B.unsqueeze(-1)
    if B.ndim < 2 or B.shape[-2] != m:
        raise ValueError(f"{op}: incompatible shapes of A {tuple(A.shape)} and B "
                         f"{tuple(B.shape)}: B must have {m} rows")
    batch = tuple(em.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    A_ = A.expand(*batch, m, n)
    B_ = B.expand(*batch, m, B.shape[-1])
    rcond = _eps(A.dtype) * max(m, n) if rcond is None else float(rcond)
    empty = em.empty(0, dtype=A.dtype, device=A.device)
    rank = em.empty(0, dtype=_int64, device=A.device)
    svals = empty
    if driver == "gels":
        if m >= n:
            Q, R = qr(A_)
            X = solve_triangular(R, _mH(Q) @ B_, upper=True)
        else:
            Q, R = qr(_mH(A_))
            X = Q @ solve_triangular(_mH(R), B_, upper=False)
        full = True
    else:
        U, S, Vh = svd(A_, full_matrices=False)
        smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
        keep = S > rcond * smax
        sinv = em.where(keep, 1.0 / em.where(keep, S, em.ones_like(S)), em.zeros_like(S))
        X = _mH(Vh) @ (sinv.unsqueeze(-1).to(A.dtype) * (_mH(U) @ B_))
        r = keep.sum(-1).to(_int64)
        rank = r
        full = bool((r == min(m, n)).all())
        if driver in ("gelsd", "gelss"):
            svals = S.detach() if not _core.any_requires_grad((A,)) else S
    residuals = empty
    if m > n and full and driver != "gelsy":
        res = A_ @ X - B_
        residuals = ((res.abs() ** 2) if _cplx(res) else res * res).sum(-2)
    if vector:
        X = X.squeeze(-1)
        if residuals.numel():
            residuals = residuals.squeeze(-1)
    return LstsqResult(X, residuals, rank, svals)


def cond(A, p=None, *, out=None):
    """The condition number of A in the p-norm: p None or 2: sigma_max / sigma_min, -2:
    sigma_min / sigma_max (any shape); 'fro', 'nuc', inf, -inf, 1, -1:
    ||A||_p ||A^{-1}||_p (square A; inf for a singular matrix)."""
    op = "linalg.cond"
    _matrix(A, op)
    em = _em()
    if p is None or p == 2 or p == -2:
        S = svdvals(A)
        hi, lo = S.narrow(-1, 0, 1).squeeze(-1), S.narrow(-1, S.shape[-1] - 1, 1).squeeze(-1)
        return hi / lo if p != -2 else lo / hi
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise ValueError(f"{op}: p must be None, 2, -2, 'fro', 'nuc', inf, -inf, 1 or -1, got "
                         f"{p!r}")
    _matrix(A, op, square=True)
    from ember.linalg import matrix_norm
    Ainv, info = inv_ex(A)
    c = matrix_norm(A, p) * matrix_norm(em.where(em.isfinite(Ainv), Ainv,
                                                 em.zeros_like(Ainv)), p)
    return em.where(info.to(_int64) != 0, em.full_like(c, math.inf), c)


# ------------------------------------------------------------ matrix functions --

@tensor_method
def matrix_power(A, n, *, out=None):
    """A to the integer power n by repeated squaring (n < 0: of inv(A); n = 0: the
    identity), for square matrices A (..., m, m)."""
    op = "linalg.matrix_power"
    tensor_arg(A, op, "A")
    n = int_arg(n, "n", op)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{op}: A must be batches of square matrices, got shape "
                         f"{tuple(A.shape)}")
    m = A.shape[-1]
    if n == 0:
        em = _em()
        return _core.contiguous_copy(em.eye(m, dtype=A.dtype, device=A.device)
                                     .expand(*A.shape))
    if n < 0:
        A = inv(A)
        n = -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result if result is not A else A.clone()


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


@tensor_method
def matrix_exp(A):
    """exp(A) of square matrices A (..., n, n): scaling and squaring with the [13/13]
    Pade approximant (Higham 2005, "The scaling and squaring method for the matrix
    exponential revisited"): each matrix scaled by 2^-s so that its 1-norm is at most
    theta_13, the approximant solved for, then squared s times. Composed of matmul and
    solve, so it is differentiable."""
    op = "linalg.matrix_exp"
    _matrix(A, op, square=True)
    em = _em()
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.clone()
    with _no_grad():
        norm1 = em.abs(A.detach()).sum(-2).amax(-1)
        ratio = norm1 / _THETA13
        ratio = em.where(em.isfinite(ratio), ratio, em.zeros_like(ratio))
        s = em.ceil(em.log2(em.maximum(ratio, em.full_like(ratio, 1.0)))).to(_int64)
        s = em.clamp(s, 0, 1000)
        smax = int(s.amax().item()) if s.numel() else 0
    scale = em.pow(em.full_like(norm1, 2.0), -s.to(norm1.dtype)).to(A.dtype)
    X = A * scale.unsqueeze(-1).unsqueeze(-1)
    b = _PADE13
    eye = _eye(n, n, A)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2)
             + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    R = solve(V - U, V + U)
    for j in range(smax):
        sq = R @ R
        R = em.where((s > j).unsqueeze(-1).unsqueeze(-1), sq, R)
    return R


# ------------------------------------------------------------- tensor forms --

def tensorinv(A, ind=2, *, out=None):
    """The inverse of A with respect to tensordot over its first `ind` dims:
    tensordot(tensorinv(A), A, ind) is the identity of shape A.shape[ind:]."""
    op = "linalg.tensorinv"
    tensor_arg(A, op, "A")
    ind = int_arg(ind, "ind", op)
    if ind <= 0:
        raise ValueError(f"{op}: expected a strictly positive integer for 'ind', got {ind}")
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise ValueError(f"{op}: expected self to satisfy the requirement "
                         f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                         f"{cols} != {rows} (shape {tuple(A.shape)}, ind {ind})")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) == B: X has shape A.shape[B.ndim:]; dims moves
    those dims of A to the end first."""
    op = "linalg.tensorsolve"
    tensor_arg(A, op, "A")
    tensor_arg(B, op, "B")
    if dims is not None:
        if isinstance(dims, numbers.Integral):
            dims = (dims,)
        if not isinstance(dims, (list, tuple)):
            raise TypeError(f"{op}: dims must be a tuple of ints, got {dims!r:.60}")
        dims = [_core.normalize_dim(int_arg(d, "dims", op), A.ndim, op) for d in dims]
        rest = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*rest, *dims)
    rows = B.numel()
    xshape = tuple(A.shape[B.ndim:])
    cols = math.prod(xshape)
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or rows != cols:
        raise ValueError(f"{op}: expected A's leading dims to be B's shape {tuple(B.shape)} "
                         f"and the product of the rest to equal {rows}, got A "
                         f"{tuple(A.shape)}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(xshape)


def vander(x, *, N=None):
    """The Vandermonde matrix of x (..., n): columns x^0, x^1, ..., x^(N-1) (N defaults
    to n), increasing powers (torch.linalg.vander; ember.vander is NumPy's, decreasing)."""
    op = "linalg.vander"
    tensor_arg(x, op, "x")
    if x.ndim < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d tensor")
    em = _em()
    N = x.shape[-1] if N is None else int_arg(N, "N", op)
    if N < 0:
        raise ValueError(f"{op}: N must be non-negative, got {N}")
    if N == 0:
        return em.empty(*x.shape, 0, dtype=x.dtype, device=x.device)
    ones = em.ones_like(x).unsqueeze(-1)
    if N == 1:
        return ones
    return em.cumprod(em.cat([ones, x.unsqueeze(-1).expand(*x.shape, N - 1)], -1), -1)


# -------------------------------------------------------- nonsymmetric eigen --

def _geev(A, vectors, op):
    """(wr, wi, V): the eigenvalues wr + i wi of real square A and (when vectors) the
    right eigenvectors in LAPACK's real form (a complex pair's vector in columns j
    (real part) and j + 1 (imaginary part), the eigenvalue with wi > 0 first)."""
    _matrix(A, op, square=True)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    a = _copy(A)
    wr = _core.empty(batch + (n,), A.dtype, A.device)
    wi = _core.empty(batch + (n,), A.dtype, A.device)
    V = _core.empty(batch + (n, n), A.dtype, A.device) if vectors else None
    info = _info_tensor(batch, A.device)
    if n:
        _run("linalg_geev", op, a, wr, wi, V, info, bool(vectors))
        _raise_info(info, batch, op, _no_convergence)
    return wr, wi, V


def _geev_complex(A, vectors, op):
    """(w, V) of complex square A: Hessenberg reduction + the complex single-shift QR
    iteration (LAPACK's zlahqr) to the Schur form, eigenvectors by back-substitution,
    each of unit 2-norm with its largest component real (zgeev's); V None unless
    vectors."""
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    a = _copy(A)
    w = _core.empty(batch + (n,), A.dtype, A.device)
    V = _core.empty(batch + (n, n), A.dtype, A.device) if vectors else None
    info = _info_tensor(batch, A.device)
    if n:
        _run("linalg_geev", op, a, w, w, V, info, bool(vectors))
        _raise_info(info, batch, op, _no_convergence)
    return w, V


def _complex_results(op):
    import ember
    if not hasattr(ember, "complex64"):
        raise TypeError(
            f"{op}: the eigenvalues and eigenvectors of a real matrix are complex in "
            f"general, and complex results need complex dtypes, which this build of ember "
            f"does not have yet (use linalg.eigh/eigvalsh for symmetric matrices)")
    return ember


def eig(A, *, out=None):
    """(eigenvalues, eigenvectors) of square A, complex (torch.linalg.eig): Hessenberg
    reduction + Francis double-shift QR (complex A: the complex single-shift QR),
    eigenvectors by back-substitution, normalised to unit 2-norm. Differentiable
    (PyTorch's formula: a loss must not depend on the eigenvectors' phases)."""
    op = "linalg.eig"
    _matrix(A, op, square=True)
    em = _complex_results(op)
    n = A.shape[-1]
    if _cplx(A):
        w, V = _geev_complex(A, True, op)
    else:
        wr, wi, V = _geev(A, True, op)
        w = em.complex(wr, wi)
        # pair columns j, j+1 (wi[j] > 0): v = V[:, j] +- i V[:, j+1]
        prv = em.cat([em.zeros_like(wi.narrow(-1, 0, 1)), wi.narrow(-1, 0, n - 1)], -1) \
            if n > 1 else em.zeros_like(wi)
        Vn = em.cat([V.narrow(-1, 1, n - 1), em.zeros_like(V.narrow(-1, 0, 1))], -1) \
            if n > 1 else em.zeros_like(V)
        Vp = em.cat([em.zeros_like(V.narrow(-1, 0, 1)), V.narrow(-1, 0, n - 1)], -1) \
            if n > 1 else em.zeros_like(V)
        first = (wi > 0).unsqueeze(-2)
        second = ((wi < 0) & (prv > 0)).unsqueeze(-2)
        re = em.where(second, Vp, V)
        im = em.where(first, Vn, em.where(second, -V, em.zeros_like(V)))
        V = em.complex(re, im)
    if _core.any_requires_grad((A,)):
        # recorded packed as [L; V] (the "linalg_eig" row of autograd's formulas.py,
        # PyTorch's linalg_eig_backward); the results are views of it
        with _core._no_record():
            packed = em.cat([w.unsqueeze(-2), V], -2)
        _core.record("linalg_eig", (A,), packed, None)
        return packed.narrow(-2, 0, 1).squeeze(-2), packed.narrow(-2, 1, n)
    return w, V


def eigvals(A, *, out=None):
    """The eigenvalues of square A, complex (torch.linalg.eigvals)."""
    op = "linalg.eigvals"
    _matrix(A, op, square=True)
    em = _complex_results(op)
    if _core.any_requires_grad((A,)):
        return eig(A)[0]
    if _cplx(A):
        return _geev_complex(A, False, op)[0]
    wr, wi, _ = _geev(A, False, op)
    return em.complex(wr, wi)


# out= ---------------------------------------------------------------------------------
# Every entry above takes PyTorch's out= and leaves it to _with_out: the result is
# computed as usual, then written into the caller's tensors (a tuple of them for the
# functions that return several).

def _write_outs(result, out, op):
    """result copied into out, as PyTorch: an out of another shape is resized, one of
    another dtype or device is an error naming op; returns out (with the result's
    namedtuple type where it has one)."""
    many = isinstance(result, tuple)
    results = tuple(result) if many else (result,)
    outs = tuple(out) if many and isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(results) or not all(isinstance(o, _core.TensorBase) for o in outs):
        want = f"a tuple of {len(results)} tensors" if many else "a tensor"
        raise TypeError(f"{op}: out must be {want}, got {out!r:.80}")
    for o, r in zip(outs, results):
        if o.dtype is not r.dtype:
            raise TypeError(f"{op}: out has dtype {o.dtype!r}, the result has dtype "
                            f"{r.dtype!r}")
        if o.device != r.device:
            raise RuntimeError(f"{op}: out is on {o.device}, the result on {r.device}")
    for o, r in zip(outs, results):
        if tuple(o.shape) != tuple(r.shape):
            o.resize_(r.shape)
        o.copy_(r)
    if not many:
        return out
    return type(result)._make(outs) if hasattr(type(result), "_make") else outs


def _with_out(fn):
    op = "linalg." + fn.__name__.removesuffix("_legacy")

    @functools.wraps(fn)
    def entry(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        return result if out is None else _write_outs(result, out, op)
    return entry


def _wrap_out_entries(namespace):
    wrapped = {}
    for name, fn in list(namespace.items()):
        if (callable(fn) and getattr(fn, "__module__", None) == __name__
                and not name.startswith("_") and not isinstance(fn, type)
                and "out" in inspect.signature(fn).parameters):
            wrapped.setdefault(id(fn), _with_out(fn))
            namespace[name] = wrapped[id(fn)]


_wrap_out_entries(globals())
