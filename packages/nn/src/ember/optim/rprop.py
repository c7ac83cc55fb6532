"""Rprop: resilient backpropagation (Riedmiller and Braun, 1993)."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.optim.optimizer import (
    Optimizer,
    _bump_step,
    _check_ranges,
    _directions,
    _lr,
    _not_differentiable,
    _per_tensor,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["Rprop"]


def _rprop(group, params, grads, states):
    """One Rprop step of the listed parameters (multi-tensor, with em.where per
    tensor for the sign cases)."""
    etaminus, etaplus = group["etas"]
    step_size_min, step_size_max = group["step_sizes"]
    for s in states:
        _bump_step(s)
    grads = _directions(params, grads, 0, group["maximize"])
    prevs = [s["prev"] for s in states]
    step_sizes = [s["step_size"] for s in states]
    signs = em._foreach_mul(grads, prevs)
    em._foreach_sign_(signs)
    factors, kept = [], []
    for g, sign in zip(grads, signs):
        # the factors in g's dtype (Python scalars alone would make a default-dtype one)
        factors.append(em.where(sign > 0, em.full_like(g, etaplus),
                                em.where(sign < 0, em.full_like(g, etaminus),
                                         em.ones_like(g))))
        kept.append(em.where(sign < 0, em.zeros_like(g), g))   # a sign change skips a step
    em._foreach_mul_(step_sizes, factors)
    em._foreach_clamp_min_(step_sizes, step_size_min)
    em._foreach_clamp_max_(step_sizes, step_size_max)
    em._foreach_addcmul_(params, em._foreach_sign(kept), step_sizes, -1)
    em._foreach_copy_(prevs, kept)


class Rprop(Optimizer):
    """Rprop, as PyTorch documents it (per element):

        g = -grad if maximize else grad
        g * g_prev > 0:  step = min(step * etaplus, step_size_max)
        g * g_prev < 0:  step = max(step * etaminus, step_size_min);  g = 0
        otherwise:       step unchanged (then clamped to step_sizes)
        p -= sign(g) * step;  g_prev = g

    step starts at lr and g_prev at 0. foreach=True updates the whole group with the
    multi-tensor functions; capturable is accepted and does nothing outside CUDA
    graphs, which ember does not have.
    """

    @checked(lr=real_or_tensor)
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_ranges(lr=lr)
        if not (isinstance(etas, (tuple, list)) and len(etas) == 2):
            raise TypeError(f"Rprop: etas must be a pair (etaminus, etaplus), got {etas!r:.60}")
        if not (isinstance(step_sizes, (tuple, list)) and len(step_sizes) == 2):
            raise TypeError(f"Rprop: step_sizes must be a pair (min, max), got "
                            f"{step_sizes!r:.60}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _not_differentiable("Rprop", differentiable)
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["prev"] = em.zeros_like(p)
        state["step_size"] = em.full_like(p, _lr(group["lr"]))

    _update = staticmethod(_per_tensor(_rprop))
    _update_foreach = staticmethod(_rprop)
