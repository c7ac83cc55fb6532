"""SparseAdam: PyTorch's lazy Adam for embedding-like parameters, over ember's dense
gradients."""
from __future__ import annotations

import math

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.optim.optimizer import (
    Optimizer,
    _betas,
    _bump_step,
    _check_flags,
    _hyper,
    _lr,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["SparseAdam"]


def _rows_present(g):
    """The mask, broadcastable to g, of the slices of dim 0 whose gradient has a
    nonzero entry (every element of a 0-d or 1-d gradient by itself)."""
    nz = g != 0
    if g.ndim <= 1:
        return nz
    return nz.reshape(g.shape[0], -1).any(1).reshape((g.shape[0],) + (1,) * (g.ndim - 1))


def _sparse_adam(group, params, grads, states):
    lr, (beta1, beta2), eps = _lr(group["lr"]), group["betas"], group["eps"]
    for p, g, s in zip(params, grads, states):
        t = _bump_step(s)
        if group["maximize"]:
            g = -g
        mask = _rows_present(g)
        m, v = s["exp_avg"], s["exp_avg_sq"]
        # on the present rows: m += (1 - beta1) (g - m), v += (1 - beta2) (g^2 - v); the
        # other rows of m and v are left as they are (PyTorch's sparse_mask updates)
        m_new = m + (g - m) * (1 - beta1)
        v_new = v + (g * g - v) * (1 - beta2)
        m.copy_(em.where(mask, m_new, m))
        v.copy_(em.where(mask, v_new, v))
        step_size = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        update = m_new / (v_new.sqrt() + eps) * step_size
        p.sub_(em.where(mask, update, 0.0).to(p.dtype))


class SparseAdam(Optimizer):
    """PyTorch's SparseAdam (the "lazy" Adam), over ember's dense gradients:

        on the rows R where the gradient is present:
            m[R] = beta1 * m[R] + (1 - beta1) * g[R]
            v[R] = beta2 * v[R] + (1 - beta2) * g[R]^2
            p[R] -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m[R] / (sqrt(v[R]) + eps)
        the other rows of p, m and v are not touched; t counts the parameter's steps.

    How ember differs: PyTorch takes R from the sparse gradient's indices (the rows an
    nn.Embedding(sparse=True) looked up) and rejects dense gradients; ember has no
    sparse gradients, so R is the set of dim-0 slices (rows of an embedding matrix;
    elements of a 1-d parameter) whose dense gradient has a nonzero entry. The two
    agree except for a row that was looked up but got an exactly zero gradient, which
    PyTorch updates (its moments decay and p moves by the decayed m) and ember leaves
    alone. maximize=True ascends, as PyTorch.
    """

    @checked(lr=real_or_tensor, betas=_betas, eps=_hyper)
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_flags("SparseAdam", {"maximize": maximize})
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["exp_avg"] = em.zeros_like(p)
        state["exp_avg_sq"] = em.zeros_like(p)

    _update = staticmethod(_sparse_adam)
