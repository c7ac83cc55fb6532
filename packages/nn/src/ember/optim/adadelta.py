"""Adadelta (Zeiler, 2012)."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.optim.optimizer import (
    Optimizer,
    _bump_step,
    _check_ranges,
    _directions,
    _hyper,
    _lr,
    _not_differentiable,
    _per_tensor,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["Adadelta"]


def _adadelta(group, params, grads, states):
    """One Adadelta step of the listed parameters (multi-tensor)."""
    lr, rho, eps = _lr(group["lr"]), group["rho"], group["eps"]
    for s in states:
        _bump_step(s)
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    square_avgs = [s["square_avg"] for s in states]
    acc_deltas = [s["acc_delta"] for s in states]
    em._foreach_mul_(square_avgs, rho)
    em._foreach_addcmul_(square_avgs, grads, grads, 1 - rho)
    std = em._foreach_add(square_avgs, eps)
    em._foreach_sqrt_(std)
    deltas = em._foreach_add(acc_deltas, eps)
    em._foreach_sqrt_(deltas)
    em._foreach_div_(deltas, std)
    em._foreach_mul_(deltas, grads)
    em._foreach_mul_(acc_deltas, rho)
    em._foreach_addcmul_(acc_deltas, deltas, deltas, 1 - rho)
    em._foreach_add_(params, deltas, alpha=-lr)


class Adadelta(Optimizer):
    """Adadelta, as PyTorch documents it:

        g = -grad if maximize else grad;  g += weight_decay * p
        v = rho * v + (1 - rho) * g^2
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta^2
        p -= lr * delta

    foreach=True (or fused=True, which shares it) updates the whole group with the
    multi-tensor functions; capturable is accepted and does nothing outside CUDA graphs,
    which ember does not have.
    """

    @checked(lr=real_or_tensor, rho=_hyper, eps=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_ranges(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_ranges(eps=eps, weight_decay=weight_decay)
        _not_differentiable("Adadelta", differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["square_avg"] = em.zeros_like(p)
        state["acc_delta"] = em.zeros_like(p)

    _update = staticmethod(_per_tensor(_adadelta))
    _update_foreach = staticmethod(_adadelta)
