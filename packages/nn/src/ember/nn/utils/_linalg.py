"""The few matrix functions nn.utils.parametrizations.orthogonal needs and
ember.linalg does not have yet, composed from ember ops (so they run on every device and
autograd differentiates them): matrix_exp, householder_product and a linear solve for
matrices whose symmetric part is positive definite (Cayley's I - A/2, A skew). The QR
factorisations used only without gradients (right_inverse) run in NumPy's LAPACK on the
host."""
from __future__ import annotations

import math

import numpy as np

import ember as em


def _eye_like(a, n):
    return em.eye(n, dtype=a.dtype, device=a.device)


def matrix_exp(a):
    """exp(A) of the (batched) square matrices A: scaling and squaring, Taylor degree
    18 on A / 2^s with ||A / 2^s||_1 <= 1/2 (truncation error below 1e-22)."""
    n = a.shape[-1]
    with em.no_grad():
        norm = float(a.detach().abs().sum(-2).amax()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0 else 0
    x = a / (2.0 ** s)
    term = _eye_like(a, n).expand(a.shape)
    result = term
    for k in range(1, 19):
        term = em.matmul(term, x) / k
        result = result + term
    for _ in range(s):
        result = em.matmul(result, result)
    return result


def householder_product(a, tau):
    """The first k columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, v_i the i-th
    column of A below the diagonal with a 1 on it (LAPACK's orgqr; A is n x k, n >= k)."""
    n, k = a.shape[-2], a.shape[-1]
    rows = em.arange(n, device=a.device).reshape(n, 1)
    q = _eye_like(a, n).expand(*a.shape[:-2], n, n)
    vs = []
    for i in range(k):
        below = (rows[:, 0] > i).to(a.dtype)
        e_i = (rows[:, 0] == i).to(a.dtype)
        vs.append(a[..., :, i] * below + e_i)
    # Q = H_1 ... H_k: apply from the right, H_1 first
    for i in range(k):
        v = vs[i].unsqueeze(-1)                                # (..., n, 1)
        qv = em.matmul(q, v)                                   # (..., n, 1)
        q = q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * em.matmul(qv, v.mT)
    return q[..., :, :k]


def solve_spd_part(m, b):
    """X with M X = B, by Gauss-Jordan elimination without pivoting: stable for M with
    a positive definite symmetric part (M = I - A/2, A skew-symmetric)."""
    n = m.shape[-1]
    aug = em.cat([m, b.expand(*m.shape[:-2], *b.shape[-2:])], -1)
    idx = em.arange(n, device=m.device)
    for k in range(n):
        row = aug[..., k, :] / aug[..., k, k:k + 1]            # (..., 2n)
        ek = (idx == k).to(m.dtype).unsqueeze(-1)               # (n, 1)
        col = aug[..., :, k].unsqueeze(-1) * (1 - ek)          # (..., n, 1)
        aug = aug - col * row.unsqueeze(-2)
        aug = aug * (1 - ek) + ek * row.unsqueeze(-2)
    return aug[..., :, n:]


def _host(t):
    return t.detach().cpu().numpy()


def make_orthogonal(a):
    """The Q factor of A = QR with R's diagonal made positive (no gradient)."""
    arr = _host(a)
    flat = arr.reshape(-1, *arr.shape[-2:])
    out = np.empty_like(flat)
    for i, x in enumerate(flat):
        q, r = np.linalg.qr(x)
        d = np.sign(np.diag(r))
        d[d == 0] = 1
        out[i] = q * d
    return em.tensor(out.reshape(arr.shape), dtype=a.dtype, device=a.device)


def geqrf(a):
    """LAPACK's geqrf of each matrix (no gradient): the Householder vectors below the
    diagonal, R on and above it, and tau."""
    arr = _host(a)
    flat = arr.reshape(-1, *arr.shape[-2:])
    outs, taus = [], []
    for x in flat:
        h, tau = np.linalg.qr(x, mode="raw")
        outs.append(h.T)
        taus.append(tau)
    shape = arr.shape
    return (em.tensor(np.stack(outs).reshape(shape), dtype=a.dtype, device=a.device),
            em.tensor(np.stack(taus).reshape(*shape[:-2], -1), dtype=a.dtype,
                      device=a.device))
