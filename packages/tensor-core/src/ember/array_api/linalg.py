"""The Array API standard's linalg extension (2024.12) over ember.linalg.

Each function is a thin call of ember.linalg (PyTorch's torch.linalg) with the
standard's signature: positional-only arrays, `axis`/`keepdims`/`rtol`, named-tuple
results (`EighResult`, `QRResult`, `SlogdetResult`, `SVDResult`), and the standard's
rule for `solve` (x2 is a vector only when it is 1-d).
"""
from __future__ import annotations

from collections import namedtuple as _nt

import ember as _em
import ember.linalg as _la

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "eig", "eigvals"]

EighResult = _nt("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = _nt("EigResult", ["eigenvalues", "eigenvectors"])
QRResult = _nt("QRResult", ["Q", "R"])
SlogdetResult = _nt("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _nt("SVDResult", ["U", "S", "Vh"])


def cholesky(x, /, *, upper=False):
    return _la.cholesky(x, upper=upper)


def cross(x1, x2, /, *, axis=-1):
    return _la.cross(x1, x2, dim=axis)


def det(x, /):
    return _la.det(x)


def diagonal(x, /, *, offset=0):
    return _la.diagonal(x, offset=offset)


def eigh(x, /):
    return EighResult(*_la.eigh(x))


def eigvalsh(x, /):
    return _la.eigvalsh(x)


def eig(x, /):
    return EigResult(*_la.eig(x))


def eigvals(x, /):
    return _la.eigvals(x)


def inv(x, /):
    return _la.inv(x)


def matmul(x1, x2, /):
    return _la.matmul(x1, x2)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    return _la.matrix_norm(x, ord, (-2, -1), keepdims)


def matrix_power(x, n, /):
    return _la.matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    return _la.matrix_rank(x, rtol=rtol)


def matrix_transpose(x, /):
    return _la.matrix_transpose(x)


def outer(x1, x2, /):
    return _la.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    return _la.pinv(x, rtol=rtol)


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*_la.qr(x, mode=mode))


def slogdet(x, /):
    return SlogdetResult(*_la.slogdet(x))


def solve(x1, x2, /):
    """x1 @ out = x2. The standard treats x2 as a vector only when it is 1-d; PyTorch
    also when x2.ndim == x1.ndim - 1, so that stack of matrices gets a leading batch dim
    (the same broadcast) before ember.linalg.solve sees it."""
    if x2.ndim == 1:
        return _la.solve(x1, _em.unsqueeze(x2, -1)).squeeze(-1)
    if x2.ndim == x1.ndim - 1:
        return _la.solve(x1, _em.unsqueeze(x2, 0))
    return _la.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    return SVDResult(*_la.svd(x, full_matrices=full_matrices))


def svdvals(x, /):
    return _la.svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    return _la.tensordot(x1, x2, axes)


def trace(x, /, *, offset=0, dtype=None):
    """The sums of the offset-th diagonals of the last two dims, with sum's dtype rule
    (signed integers sum to the default integer dtype, unsigned ones to uint64) unless
    dtype is given."""
    if x.ndim < 2:
        raise ValueError(f"trace: x must have at least 2 dims, got shape {tuple(x.shape)}")
    d = _la.diagonal(x, offset=offset)
    if dtype is None and d.dtype.kind in ("float", "complex"):
        dtype = d.dtype
    elif dtype is None and d.dtype.kind == "int" and not d.dtype.is_signed:
        dtype = _em.uint64
    return _em.sum(d, -1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1):
    return _la.vecdot(x1, x2, dim=axis)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    return _la.vector_norm(x, ord, axis, keepdims)


from ember._args import check_tensor_args as _check_tensor_args  # noqa: E402

_check_tensor_args(globals(), {"x", "x1", "x2"})
