"""Adagrad (Duchi, Hazan and Singer)."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.ops.foreach import _div_into, _sqrt_into
from ember.optim.optimizer import (
    Optimizer,
    _bump_step,
    _check_foreach_fused,
    _check_ranges,
    _decayed,
    _directions,
    _hyper,
    _not_differentiable,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["Adagrad"]


def _adagrad(group, params, grads, states):
    """One Adagrad step of group's parameters that have a gradient."""
    lr = group["lr"]
    lr_decay = group["lr_decay"]
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    maximize = group["maximize"]
    decay = weight_decay != 0 or maximize
    for p, g, state in zip(params, grads, states):
        step = _bump_step(state)
        if decay:
            g = _decayed(p, g, weight_decay, maximize)
        clr = lr / (1 + (step - 1) * lr_decay)
        tmp = em.mul(g, g)
        state_sum = state["sum"]
        state_sum.add_(tmp)
        em.sqrt(state_sum, out=tmp).add_(eps)
        p.add_(em.div(g, tmp, out=tmp).mul_(-clr))


def _adagrad_foreach(group, params, grads, states):
    """The multi-tensor form of _adagrad (the same arithmetic, one C loop per op)."""
    lr, lr_decay = float(group["lr"]), group["lr_decay"]
    steps = [_bump_step(s) for s in states]
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    sums = [s["sum"] for s in states]
    tmp = em._foreach_mul(grads, grads)
    em._foreach_add_(sums, tmp)
    _sqrt_into(sums, tmp)
    em._foreach_add_(tmp, group["eps"])
    _div_into(grads, tmp, tmp)
    em._foreach_mul_(tmp, [-(lr / (1 + (t - 1) * lr_decay)) for t in steps])
    em._foreach_add_(params, tmp)


class Adagrad(Optimizer):
    """Adagrad, as PyTorch computes it:

        g = -grad if maximize else grad;  g += weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s += g^2  (s starts at initial_accumulator_value);  p -= clr * g / (sqrt(s) + eps)

    foreach=True or fused=True updates the whole group with the multi-tensor functions
    (em._foreach_*; fused shares foreach's C loop, ember has no separate fused kernel).
    """

    @checked(lr=real_or_tensor, lr_decay=_hyper, weight_decay=_hyper,
             initial_accumulator_value=_hyper, eps=_hyper)
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check_ranges(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                      initial_accumulator_value=initial_accumulator_value, eps=eps)
        _check_foreach_fused("Adagrad", foreach, fused)
        _not_differentiable("Adagrad", differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # the accumulators exist from the start, as in PyTorch (state_dict shows them
        # before the first step); groups added later get theirs at their first step
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(self.state[p], p, group)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["sum"] = em.full_like(p, group["initial_accumulator_value"])

    _update = staticmethod(_adagrad)
    _update_foreach = staticmethod(_adagrad_foreach)
