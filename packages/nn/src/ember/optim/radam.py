"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2019)."""
from __future__ import annotations

import math

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

__all__ = ["RAdam"]


def _radam(group, params, grads, states):
    """One RAdam step of the listed parameters (multi-tensor, PyTorch's foreach form:
    the rectified and unrectified steps as one addcmul)."""
    lr, (beta1, beta2), eps = _lr(group["lr"]), group["betas"], group["eps"]
    weight_decay = group["weight_decay"]
    steps = [_bump_step(s) for s in states]
    decoupled = group["decoupled_weight_decay"] and weight_decay != 0
    if decoupled:
        em._foreach_mul_(params, 1 - lr * weight_decay)
    grads = _directions(params, grads, 0 if decoupled else weight_decay, group["maximize"])
    exp_avgs = [s["exp_avg"] for s in states]
    exp_avg_sqs = [s["exp_avg_sq"] for s in states]
    em._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    em._foreach_mul_(exp_avg_sqs, beta2)
    em._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    rho_inf = 2 / (1 - beta2) - 1
    rect, unrect, rect_scale = [], [], []
    for t in steps:
        bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        rho_t = rho_inf - 2 * t * beta2 ** t / bc2
        r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                      ((rho_inf - 4) * (rho_inf - 2) * rho_t)) if rho_t > 5 else 0.0
        rect.append(r)
        unrect.append(0.0 if r > 0 else -lr / bc1)
        rect_scale.append(-math.sqrt(bc2) * lr * r / bc1)
    # buffer = -lr r sqrt(bc2) / bc1 / (sqrt(v) + eps) where rectified, else -lr / bc1
    buffer = em._foreach_sqrt(exp_avg_sqs)
    em._foreach_add_(buffer, eps)
    em._foreach_div_(buffer, rect_scale)     # r = 0: -inf or inf, whose reciprocal is 0
    em._foreach_reciprocal_(buffer)
    em._foreach_add_(buffer, unrect)
    em._foreach_addcmul_(params, buffer, exp_avgs)


class RAdam(Optimizer):
    """RAdam, as PyTorch documents it:

        g = -grad if maximize else grad
        g += weight_decay * p        (or p *= 1 - lr * weight_decay when decoupled)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        m_hat = m / (1 - beta1^t)
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p -= lr * m_hat * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
        otherwise:  p -= lr * m_hat

    foreach=True updates the whole group with the multi-tensor functions; capturable is
    accepted and does nothing outside CUDA graphs, which ember does not have.
    """

    @checked(lr=real_or_tensor, betas=_betas, eps=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_ranges(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _not_differentiable("RAdam", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["exp_avg"] = em.zeros_like(p)
        state["exp_avg_sq"] = em.zeros_like(p)

    _update = staticmethod(_per_tensor(_radam))
    _update_foreach = staticmethod(_radam)
