"""ember.linalg: the linear-algebra namespace of PyTorch (torch.linalg) and the
Array API's linalg extension: products (matmul, vecdot, tensordot, outer,
multi_dot), norms written with the reductions (the spectral and nuclear norms with
svdvals), views (matrix_transpose, diagonal), and the decompositions, solvers and
matrix functions of ember/ops/linalg.py (solve, inv, det, cholesky, qr, eigh, svd,
lstsq, pinv, matrix_exp, ...) over the `linalg` kernel family.

eig and eigvals give complex results (Hessenberg + Francis QR; a complex matrix by the
complex single-shift QR).
"""
from __future__ import annotations

import math
import numbers

from ember._args import tensors_arg as _tensors_arg
from ember._C import core as _core
from ember.ops.linalg import (  # noqa: F401
    LinAlgError,
    cholesky,
    cholesky_ex,
    cond,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    householder_product,
    inv,
    inv_ex,
    lstsq,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matrix_exp,
    matrix_power,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    solve_ex,
    solve_triangular,
    svd,
    svdvals,
    tensorinv,
    tensorsolve,
    vander,
)
from ember.ops.matmul import _tensor, matmul, outer, tensordot, vecdot  # noqa: F401
from ember.ops.reduction import amax as _amax, amin as _amin, norm as _norm_reduce, sum as _sum
from ember.ops.views import diagonal as _diagonal, matrix_transpose

__all__ = ["matmul", "vecdot", "tensordot", "outer", "multi_dot", "matrix_transpose", "cross",
           "diagonal", "norm", "vector_norm", "matrix_norm", "trace", "LinAlgError",
           "cholesky", "cholesky_ex", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh",
           "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve", "matrix_exp", "matrix_power", "matrix_rank", "pinv", "qr", "slogdet",
           "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
           "tensorsolve", "vander"]


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in A (the last two dims by default), as a view."""
    return _diagonal(A, offset, dim1, dim2)


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim (default the last; broadcasting), as
    torch.linalg.cross (ember.cross's default dim is PyTorch's first dim of size 3)."""
    from ember.ops.matmul import cross as _cross
    return _cross(input, other, dim, out=out)


def trace(A):
    """Sum of the main diagonal of the last two dims."""
    A = _tensor(A, "trace")
    if A.ndim < 2:
        raise ValueError(f"linalg.trace: expected at least 2 dims, got shape {tuple(A.shape)}")
    d = _diagonal(A, 0, -2, -1)
    return _sum(d, -1, dtype=d.dtype if d.dtype.kind == "float" else None)


def multi_dot(tensors):
    """A chain of matrix products, in the cheapest order (dynamic programming over
    the split points). The first operand may be 1-d (a row), the last 1-d (a column)."""
    ts = _tensors_arg(tensors, "linalg.multi_dot", nonempty=False)
    if len(ts) < 2:
        raise ValueError(f"linalg.multi_dot: expected at least 2 tensors, got {len(ts)}")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(1)
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise ValueError(f"linalg.multi_dot: tensor {i} has shape {tuple(t.shape)}; only the "
                             f"first and last may be 1-d, the others must be 2-d")
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise ValueError(f"linalg.multi_dot: tensors {i} and {i + 1} have shapes "
                             f"{tuple(ts[i].shape)} and {tuple(ts[i + 1].shape)} that cannot "
                             f"be multiplied")
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    n = len(ts)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, s
            cost[i][j] = best

    def product(i, j):
        if i == j:
            return ts[i]
        s = split[i][j]
        return matmul(product(i, s), product(s + 1, j))

    r = product(0, n - 1)
    if first_1d:
        r = r.squeeze(0)
    if last_1d:
        r = r.squeeze(-1)
    return r


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of the vectors along dim (all elements flattened when None):
    ord = 2, 1, inf, -inf, 0 (count of nonzeros) or any other real p."""
    x = _tensor(x, "vector_norm")
    if not isinstance(ord, numbers.Real):
        raise ValueError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if x.dtype.kind == "complex":
        # the norm of a complex vector is that of its moduli (a real result)
        x = _core.elementwise("abs", x.to(dtype) if dtype is not None else x)
        dtype = None
    return _norm_reduce(x, ord, dim, keepdim, dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Norm of the matrices over the two dims `dim`: 'fro', 1, -1, inf, -inf, and from
    the singular values 'nuc' (their sum), 2 (the largest) and -2 (the smallest)."""
    A = _tensor(A, "matrix_norm")
    if A.ndim < 2:
        raise ValueError(f"linalg.matrix_norm: expected at least 2 dims, got shape "
                         f"{tuple(A.shape)}")
    if dtype is not None:
        A = A.to(dtype)
    if A.dtype.kind not in ("float", "complex"):
        raise TypeError(f"linalg.matrix_norm: expected a floating-point or complex tensor, "
                        f"got {A.dtype!r}")
    try:
        r, c = dim
    except (TypeError, ValueError):
        raise ValueError(f"linalg.matrix_norm: dim must be a pair of dims, got {dim!r}") from None
    r, c = _core.normalize_dim(r, A.ndim, "matrix_norm"), _core.normalize_dim(c, A.ndim,
                                                                              "matrix_norm")
    if r == c:
        raise ValueError(f"linalg.matrix_norm: dims {dim} name the same dim")
    if ord == "fro":
        if A.dtype.kind == "complex":
            A = _core.elementwise("abs", A)
        return _norm_reduce(A, "fro", (r, c), keepdim)
    if ord in (2, -2, 1, -1, math.inf, -math.inf) and A.shape[r] * A.shape[c] == 0 and \
            (ord in (2, -2) or A.shape[c if ord in (1, -1) else r] == 0):
        # the largest / smallest of no singular values, column or row sums (as PyTorch,
        # which refuses these too; "fro" and "nuc" of an empty matrix are 0)
        raise ValueError(f"linalg.matrix_norm: ord={ord!r} of empty matrices (shape "
                         f"{tuple(A.shape)}) is undefined")
    if ord == "nuc" or ord in (2, -2):
        lo, hi = min(r, c), max(r, c)
        M = A.movedim((r, c), (-2, -1)) if (r, c) != (A.ndim - 2, A.ndim - 1) else A
        s = svdvals(M)
        out = _sum(s, -1) if ord == "nuc" else (_amax if ord == 2 else _amin)(s, -1)
        if keepdim:
            out = out.unsqueeze(lo).unsqueeze(hi)
        return out
    if ord not in (1, -1, math.inf, -math.inf):
        raise ValueError(f"linalg.matrix_norm: unsupported ord {ord!r}")
    a = _core.elementwise("abs", A)
    # ord 1: max over columns of the column sums; inf: max over rows of the row sums
    over, then = (r, c) if ord in (1, -1) else (c, r)
    s = _sum(a, over, keepdim=True)
    red = _amax if ord > 0 else _amin
    out = red(s, then, keepdim=True)
    if not keepdim:
        out = out.squeeze(max(r, c)).squeeze(min(r, c))
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: with dim None and ord None the 2-norm of all elements; a
    1-d input or an int dim gives a vector norm; a 2-d input (or a pair of dims)
    with ord given gives a matrix norm."""
    A = _tensor(A, "norm")
    if dim is not None:
        if not isinstance(dim, (numbers.Integral, tuple, list)):
            raise TypeError(f"linalg.norm: dim must be an int or a tuple of ints, got "
                            f"{type(dim).__name__}")
        if isinstance(dim, numbers.Integral) or len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise ValueError(f"linalg.norm: ord={ord!r} needs a 1-d or 2-d input or an explicit dim, "
                     f"got shape {tuple(A.shape)}")
