"""out= of every ember.linalg entry (and the main namespace's linalg forms): the result
is written into the caller's tensors (resized when their shape differs, a tuple for the
functions returning several) and returned; a wrong dtype or a non-tensor is an error
naming the op. (These entries once accepted out= and ignored it.)"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember as em
from ember.ops import linalg as _ops_linalg

LA = em.linalg
RNG = np.random.default_rng(31)
_A = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
_S = _A @ _A.T
_B = RNG.standard_normal((4, 2))
_W = RNG.standard_normal((5, 3))


def A():
    return em.from_numpy(_A.copy())


def S():
    return em.from_numpy(_S.copy())


def B():
    return em.from_numpy(_B.copy())


def _lu():
    return LA.lu_factor(A())


def _qr_reflectors():
    return em.geqrf(em.from_numpy(_W.copy()))


CASES = {
    "linalg.inv": (LA.inv, lambda: (A(),)),
    "linalg.inv_ex": (LA.inv_ex, lambda: (A(),)),
    "linalg.det": (LA.det, lambda: (A(),)),
    "linalg.slogdet": (LA.slogdet, lambda: (A(),)),
    "linalg.cholesky": (LA.cholesky, lambda: (S(),)),
    "linalg.cholesky_ex": (LA.cholesky_ex, lambda: (S(),)),
    "linalg.lu_factor": (LA.lu_factor, lambda: (A(),)),
    "linalg.lu_factor_ex": (LA.lu_factor_ex, lambda: (A(),)),
    "linalg.lu": (LA.lu, lambda: (A(),)),
    "linalg.lu_solve": (LA.lu_solve, lambda: (*_lu(), B())),
    "linalg.solve": (LA.solve, lambda: (A(), B())),
    "linalg.solve_ex": (LA.solve_ex, lambda: (A(), B())),
    "linalg.solve_triangular": (lambda *a, **k: LA.solve_triangular(*a, upper=True, **k),
                                lambda: (A().triu(), B())),
    "linalg.qr": (LA.qr, lambda: (em.from_numpy(_W.copy()),)),
    "linalg.eigh": (LA.eigh, lambda: (S(),)),
    "linalg.eigvalsh": (LA.eigvalsh, lambda: (S(),)),
    "linalg.svd": (LA.svd, lambda: (em.from_numpy(_W.copy()),)),
    "linalg.svdvals": (LA.svdvals, lambda: (em.from_numpy(_W.copy()),)),
    "linalg.pinv": (LA.pinv, lambda: (em.from_numpy(_W.copy()),)),
    "linalg.matrix_rank": (LA.matrix_rank, lambda: (em.from_numpy(_W.copy()),)),
    "linalg.cond": (LA.cond, lambda: (A(),)),
    "linalg.matrix_power": (LA.matrix_power, lambda: (A(), 3)),
    "linalg.tensorinv": (LA.tensorinv, lambda: (A().reshape(2, 2, 4), 2)),
    "linalg.tensorsolve": (LA.tensorsolve, lambda: (A(), B()[:, 0].contiguous())),
    "linalg.eig": (LA.eig, lambda: (A(),)),
    "linalg.eigvals": (LA.eigvals, lambda: (A(),)),
    "linalg.householder_product": (LA.householder_product, _qr_reflectors),
    "geqrf": (em.geqrf, lambda: (em.from_numpy(_W.copy()),)),
    "lu_unpack": (em.lu_unpack, _lu),
    "cholesky_solve": (em.cholesky_solve, lambda: (B(), LA.cholesky(S()))),
    "cholesky_inverse": (em.cholesky_inverse, lambda: (LA.cholesky(S()),)),
    "triangular_solve": (em.triangular_solve, lambda: (B(), A().triu())),
    "ormqr": (em.ormqr, lambda: (*_qr_reflectors(), em.from_numpy(_W.copy()))),
    "svd (legacy)": (em.svd, lambda: (em.from_numpy(_W.copy()),)),
    "qr (legacy)": (em.qr, lambda: (em.from_numpy(_W.copy()),)),
    "cholesky (legacy)": (em.cholesky, lambda: (S(),)),
    "lu_solve (legacy)": (em.lu_solve, lambda: (B(), *_lu())),
}


def _as_tuple(r):
    return tuple(r) if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_receives_the_result(name):
    fn, args = CASES[name]
    expected = _as_tuple(fn(*args()))
    outs = tuple(em.empty(0, dtype=r.dtype) for r in expected)   # resized into shape
    got = fn(*args(), out=outs if len(outs) > 1 else outs[0])
    got = _as_tuple(got)
    assert len(got) == len(expected)
    for g, o, e in zip(got, outs, expected):
        assert g is o
        assert tuple(o.shape) == tuple(e.shape)
        np.testing.assert_allclose(o.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


def test_out_keeps_the_namedtuple_and_checks_dtype_and_type():
    Q, R = em.empty(0, dtype=em.float64), em.empty(0, dtype=em.float64)
    r = LA.qr(em.from_numpy(_W.copy()), out=(Q, R))
    assert r.Q is Q and r.R is R
    with pytest.raises(TypeError, match="linalg.inv: out has dtype ember.float32, the result "
                       "has dtype ember.float64"):
        LA.inv(A(), out=em.empty(4, 4, dtype=em.float32))
    with pytest.raises(TypeError, match=r"linalg.qr: out must be a tuple of 2 tensors"):
        LA.qr(A(), out=em.empty(0, dtype=em.float64))
    with pytest.raises(TypeError, match="linalg.det: out must be a tensor"):
        LA.det(A(), out=[1.0])


def test_every_entry_with_out_is_covered():
    public = {n for n in dir(LA) if "out" in getattr(
        inspect.signature(getattr(LA, n)) if callable(getattr(LA, n)) and not isinstance(
            getattr(LA, n), type) else None, "parameters", {})}
    covered = {n.split(".")[-1].split(" ")[0] for n in CASES}
    # the ones with out handled in their own family (matmul & co, norms written with
    # the reductions) are tested there
    own = {n for n in public if getattr(getattr(LA, n), "__module__", "") !=
           _ops_linalg.__name__}
    assert public - own <= covered, sorted(public - own - covered)
