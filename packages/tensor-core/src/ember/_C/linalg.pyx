# kernels: linalg.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU kernels of ember.linalg's factorizations (kernels/cpu/linalg.c), for
ember.ops.linalg; other backends provide functions of the same names and arguments.

Every operand is a contiguous float32/float64/complex64/complex128 CPU tensor (the
nonsymmetric eigensolver: real only; the eigenvalues of eigh and the singular values of
a complex matrix are of its real dtype) holding a batch of row-major
matrices (..., rows, cols); the caller (ember.ops.linalg) has checked the user's
shapes and dtypes, brought the operands to this layout and allocated the outputs.
Factorizations work in place; `info` is a contiguous int32 tensor of one element per
matrix (LAPACK's meaning, 0 = success)."""
from libc.stdint cimport int32_t, int64_t
from ember._C.core cimport TensorBase, check_bounds

cdef extern from "linalg.h" nogil:
    int EM_LINALG_ENOMEM
    int em_lu_factor(int dtype, int64_t batch, int64_t m, int64_t n, void *a, int32_t *piv,
                     int32_t *info)
    int em_lu_solve(int dtype, int64_t batch, int64_t n, int64_t k, const void *lu,
                    const int32_t *piv, void *b, int adjoint)
    int em_trsm(int dtype, int64_t batch, int64_t n, int64_t k, const void *a, void *b,
                int upper, int trans, int unit)
    int em_cholesky(int dtype, int64_t batch, int64_t n, void *a, int32_t *info)
    int em_geqrf(int dtype, int64_t batch, int64_t m, int64_t n, void *a, void *tau)
    int em_ormqr(int dtype, int64_t batch, int64_t m, int64_t nv, int64_t k, const void *v,
                 const void *tau, int64_t p, void *c, int trans)
    int em_syev(int dtype, int64_t batch, int64_t n, void *a, void *w, int vectors,
                int32_t *info)
    int em_svd(int dtype, int64_t batch, int64_t m, int64_t n, const void *a, void *s,
               void *u, void *vh, int vectors, int32_t *info)
    int em_geev(int dtype, int64_t batch, int64_t n, const void *a, void *wr, void *wi,
                void *v, int vectors, int32_t *info)

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the thread pool and the GEMM live in ember._C.core (cpu_api.h)

DEF FLOAT32 = 7
DEF FLOAT64 = 8
DEF COMPLEX64 = 9
DEF COMPLEX128 = 10
DEF INT32 = 4

include "kernel_checks.pxi"


cdef int64_t _batch(TensorBase t, int tail):
    cdef int64_t b = 1
    for d in range(t._ndim - tail):
        b *= t._shape[d]
    return b


cdef int64_t _dim(TensorBase t, int back):
    return t._shape[t._ndim - back]


cdef int _mat(TensorBase t, str op) except -1:
    """t: a dense float32/float64/complex64/complex128 CPU batch of matrices; returns
    the dtype number."""
    cpu_only(t, op)
    cdef bint ok = t._dtype in (FLOAT32, FLOAT64, COMPLEX64, COMPLEX128)
    if t._ndim < 2 or not dense(t) or not ok:
        raise ValueError(f"{op}: internal error: kernel needs a contiguous floating point "
                         f"batch of matrices, got {tuple(t.shape)} {t.dtype!r}")
    return t._dtype


cdef int _real(int dt):
    """The real dtype number of dtype dt (its own for the real ones)."""
    return FLOAT32 if dt == COMPLEX64 else FLOAT64 if dt == COMPLEX128 else dt


cdef int _like(TensorBase t, TensorBase ref, int64_t per_entry, int dtype, str op,
               str what) except -1:
    """t: dense, of `dtype`, holding per_entry elements for each of ref's matrices."""
    cpu_only(t, op)
    if not dense(t) or t._dtype != dtype or t.numel_c() != _batch(ref, 2) * per_entry:
        raise ValueError(f"{op}: internal error: bad {what} {tuple(t.shape)} {t.dtype!r} "
                         f"for {tuple(ref.shape)}")
    return 0


cdef int _rc(int rc, str op) except -1:
    if rc == EM_LINALG_ENOMEM:
        raise MemoryError(f"{op}: out of memory for the workspace")
    if rc:
        raise RuntimeError(f"{op}: internal error {rc}")
    return 0


def linalg_lu_factor(TensorBase a, TensorBase piv, TensorBase info):
    """a (..., m, n) <- L and U of A = P L U (in place); piv (..., min(m, n)) int32
    1-based row interchanges; info (...) int32."""
    cdef int dt = _mat(a, "lu_factor")
    cdef int64_t m = _dim(a, 2), n = _dim(a, 1), b = _batch(a, 2)
    _like(piv, a, min(m, n), INT32, "lu_factor", "pivots")
    _like(info, a, 1, INT32, "lu_factor", "info")
    cdef void *ap = a.ptr()
    cdef int32_t *pp = <int32_t *>piv.ptr()
    cdef int32_t *ip = <int32_t *>info.ptr()
    cdef int rc
    with nogil:
        rc = em_lu_factor(dt, b, m, n, ap, pp, ip)
    _rc(rc, "lu_factor")
    return a


def linalg_lu_solve(TensorBase lu, TensorBase piv, TensorBase b, bint adjoint):
    """b (..., n, k) <- A^{-1} b (A^{-H} b when adjoint) from lu (..., n, n) and piv."""
    cdef int dt = _mat(lu, "lu_solve")
    _mat(b, "lu_solve")
    cdef int64_t n = _dim(lu, 1), k = _dim(b, 1), nb = _batch(lu, 2)
    if _dim(lu, 2) != n or _dim(b, 2) != n or b._dtype != dt or _batch(b, 2) != nb:
        raise ValueError(f"lu_solve: internal error: {tuple(lu.shape)} and {tuple(b.shape)}")
    _like(piv, lu, n, INT32, "lu_solve", "pivots")
    cdef const void *lp = lu.ptr()
    cdef const int32_t *pp = <int32_t *>piv.ptr()
    cdef void *bp = b.ptr()
    cdef int rc
    with nogil:
        rc = em_lu_solve(dt, nb, n, k, lp, pp, bp, adjoint)
    _rc(rc, "lu_solve")
    return b


def linalg_trsm(TensorBase a, TensorBase b, bint upper, bint trans, bint unit):
    """b (..., n, k) <- op(A)^{-1} b for the triangle of a (..., n, n) that upper
    names (the other is not read), op(A) = A^T when trans; unit: ones on the diagonal."""
    cdef int dt = _mat(a, "solve_triangular")
    _mat(b, "solve_triangular")
    cdef int64_t n = _dim(a, 1), k = _dim(b, 1), nb = _batch(a, 2)
    if _dim(a, 2) != n or _dim(b, 2) != n or b._dtype != dt or _batch(b, 2) != nb:
        raise ValueError(f"solve_triangular: internal error: {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    cdef const void *ap = a.ptr()
    cdef void *bp = b.ptr()
    cdef int rc
    with nogil:
        rc = em_trsm(dt, nb, n, k, ap, bp, upper, trans, unit)
    _rc(rc, "solve_triangular")
    return b


def linalg_cholesky(TensorBase a, TensorBase info):
    """a (..., n, n) <- L with A = L L^T from a's lower triangle, zeros above (in
    place); info (...) int32: the order of the first leading minor that is not
    positive-definite."""
    cdef int dt = _mat(a, "cholesky")
    cdef int64_t n = _dim(a, 1), b = _batch(a, 2)
    if _dim(a, 2) != n:
        raise ValueError(f"cholesky: internal error: {tuple(a.shape)}")
    _like(info, a, 1, INT32, "cholesky", "info")
    cdef void *ap = a.ptr()
    cdef int32_t *ip = <int32_t *>info.ptr()
    cdef int rc
    with nogil:
        rc = em_cholesky(dt, b, n, ap, ip)
    _rc(rc, "cholesky")
    return a


def linalg_geqrf(TensorBase a, TensorBase tau):
    """a (..., m, n) <- R and the Householder vectors below it (in place); tau
    (..., min(m, n))."""
    cdef int dt = _mat(a, "geqrf")
    cdef int64_t m = _dim(a, 2), n = _dim(a, 1), b = _batch(a, 2)
    _like(tau, a, min(m, n), dt, "geqrf", "tau")
    cdef void *ap = a.ptr()
    cdef void *tp = tau.ptr()
    cdef int rc
    with nogil:
        rc = em_geqrf(dt, b, m, n, ap, tp)
    _rc(rc, "geqrf")
    return a


def linalg_ormqr(TensorBase v, TensorBase tau, TensorBase c, bint trans):
    """c (..., m, p) <- Q c (Q^H c when trans), Q = H_0 ... H_{k-1} from the reflectors
    in the first k = tau.shape[-1] columns of v (..., m, nv)."""
    cdef int dt = _mat(v, "ormqr")
    _mat(c, "ormqr")
    cdef int64_t m = _dim(v, 2), nv = _dim(v, 1), p = _dim(c, 1), nb = _batch(v, 2)
    cdef int64_t k = tau.shape[-1] if tau._ndim else 0
    if _dim(c, 2) != m or c._dtype != dt or _batch(c, 2) != nb or k > min(m, nv):
        raise ValueError(f"ormqr: internal error: {tuple(v.shape)} and {tuple(c.shape)}")
    _like(tau, v, k, dt, "ormqr", "tau")
    cdef const void *vp = v.ptr()
    cdef const void *tp = tau.ptr()
    cdef void *cp = c.ptr()
    cdef int rc
    with nogil:
        rc = em_ormqr(dt, nb, m, nv, k, vp, tp, p, cp, trans)
    _rc(rc, "ormqr")
    return c


def linalg_syev(TensorBase a, TensorBase w, TensorBase info, bint vectors):
    """Symmetric a (..., n, n) <- its eigenvectors as columns (when vectors; in place);
    w (..., n) the eigenvalues ascending; info (...) int32 (1: no convergence)."""
    cdef int dt = _mat(a, "eigh")
    cdef int64_t n = _dim(a, 1), b = _batch(a, 2)
    if _dim(a, 2) != n:
        raise ValueError(f"eigh: internal error: {tuple(a.shape)}")
    _like(w, a, n, _real(dt), "eigh", "eigenvalues")
    _like(info, a, 1, INT32, "eigh", "info")
    cdef void *ap = a.ptr()
    cdef void *wp = w.ptr()
    cdef int32_t *ip = <int32_t *>info.ptr()
    cdef int rc
    with nogil:
        rc = em_syev(dt, b, n, ap, wp, vectors, ip)
    _rc(rc, "eigh")
    return w


def linalg_svd(TensorBase a, TensorBase s, TensorBase u, TensorBase vh, TensorBase info,
               bint vectors):
    """A (..., m, n) = U diag(S) Vh with k = min(m, n): s (..., k) descending, and when
    vectors u (..., m, k) and vh (..., k, n) (else None); a is not written; info (...)
    int32 (1: no convergence)."""
    cdef int dt = _mat(a, "svd")
    cdef int64_t m = _dim(a, 2), n = _dim(a, 1), b = _batch(a, 2), k = min(m, n)
    _like(s, a, k, _real(dt), "svd", "singular values")
    _like(info, a, 1, INT32, "svd", "info")
    cdef void *up = NULL
    cdef void *vp = NULL
    if vectors:
        _like(u, a, m * k, dt, "svd", "U")
        _like(vh, a, k * n, dt, "svd", "Vh")
        up = u.ptr()
        vp = vh.ptr()
    cdef const void *ap = a.ptr()
    cdef void *sp = s.ptr()
    cdef int32_t *ip = <int32_t *>info.ptr()
    cdef int rc
    with nogil:
        rc = em_svd(dt, b, m, n, ap, sp, up, vp, vectors, ip)
    _rc(rc, "svd")
    return s


def linalg_geev(TensorBase a, TensorBase wr, TensorBase wi, TensorBase v, TensorBase info,
                bint vectors):
    """Eigenvalues wr + i wi (..., n) of a (..., n, n) (not written), a complex pair
    adjacent with the positive imaginary part first; when vectors, v (..., n, n) the
    right eigenvectors in LAPACK's real form (a pair's vector in columns j (real) and
    j + 1 (imaginary)), unit 2-norm; info (...) int32 (1: no convergence). A complex a:
    wr (complex) the eigenvalues (wi is not written), v the complex eigenvectors (unit
    2-norm, the largest component real)."""
    cdef int dt = _mat(a, "eig")
    cdef int64_t n = _dim(a, 1), b = _batch(a, 2)
    if _dim(a, 2) != n:
        raise ValueError(f"eig: internal error: {tuple(a.shape)}")
    _like(wr, a, n, dt, "eig", "eigenvalues")
    _like(wi, a, n, dt, "eig", "eigenvalues")   # complex a: wr holds them, wi is ignored
    _like(info, a, 1, INT32, "eig", "info")
    cdef void *vp = NULL
    if vectors:
        _like(v, a, n * n, dt, "eig", "eigenvectors")
        vp = v.ptr()
    cdef const void *ap = a.ptr()
    cdef void *rp = wr.ptr()
    cdef void *ip_ = wi.ptr()
    cdef int32_t *ip = <int32_t *>info.ptr()
    cdef int rc
    with nogil:
        rc = em_geev(dt, b, n, ap, rp, ip_, vp, vectors, ip)
    _rc(rc, "eig")
    return wr
