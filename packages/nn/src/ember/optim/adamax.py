"""Adamax: Adam with the infinity norm (Kingma and Ba, section 7)."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.optim.optimizer import (
    Optimizer,
    _betas,
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

__all__ = ["Adamax"]


def _adamax(group, params, grads, states):
    """One Adamax step of the listed parameters (multi-tensor)."""
    lr, (beta1, beta2), eps = _lr(group["lr"]), group["betas"], group["eps"]
    steps = [_bump_step(s) for s in states]
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    exp_avgs = [s["exp_avg"] for s in states]
    exp_infs = [s["exp_inf"] for s in states]
    em._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    em._foreach_mul_(exp_infs, beta2)
    abs_eps = em._foreach_abs(grads)
    em._foreach_add_(abs_eps, eps)
    em._foreach_maximum_(exp_infs, abs_eps)
    em._foreach_addcdiv_(params, exp_avgs, exp_infs,
                         [-lr / (1 - beta1 ** t) for t in steps])


class Adamax(Optimizer):
    """Adamax, as PyTorch documents it:

        g = -grad if maximize else grad;  g += weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p -= lr / (1 - beta1^t) * m / u

    foreach=True updates the whole group with the multi-tensor functions; capturable is
    accepted and does nothing outside CUDA graphs, which ember does not have.
    """

    @checked(lr=real_or_tensor, betas=_betas, eps=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_ranges(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _not_differentiable("Adamax", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["exp_avg"] = em.zeros_like(p)
        state["exp_inf"] = em.zeros_like(p)

    _update = staticmethod(_per_tensor(_adamax))
    _update_foreach = staticmethod(_adamax)
