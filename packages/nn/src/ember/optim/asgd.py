"""ASGD: averaged stochastic gradient descent (Polyak and Juditsky, 1992)."""
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
    _scalar_dtype,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["ASGD"]


def _asgd(group, params, grads, states):
    """One ASGD step of the listed parameters (multi-tensor)."""
    lr, lambd, alpha, t0 = _lr(group["lr"]), group["lambd"], group["alpha"], group["t0"]
    steps = [_bump_step(s) for s in states]
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    etas = [s["eta"].item() for s in states]
    mus = [s["mu"].item() for s in states]
    em._foreach_mul_(params, [1 - lambd * eta for eta in etas])
    em._foreach_add_(params, em._foreach_mul(grads, [-eta for eta in etas]))
    for p, s, mu in zip(params, states, mus):
        ax = s["ax"]
        if mu != 1:
            ax.add_(p.sub(ax).mul_(mu))
        else:
            ax.copy_(p)
    for s, t in zip(states, steps):
        # eta and mu are 0-d tensors of the scalar dtype, as in PyTorch
        s["eta"].fill_(lr / ((1 + lambd * lr * t) ** alpha))
        s["mu"].fill_(1 / max(1, t - t0))


class ASGD(Optimizer):
    """Averaged SGD, as PyTorch computes it:

        g = -grad if maximize else grad;  g += weight_decay * p
        p *= 1 - lambd * eta;  p -= eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)     (the average, state['ax'])
        eta = lr / (1 + lambd * lr * t)^alpha;  mu = 1 / max(1, t - t0)

    eta starts at lr and mu at 1 (0-d tensors of the scalar dtype, like 'step').
    foreach=True updates the whole group with the multi-tensor functions; capturable is
    accepted and does nothing outside CUDA graphs, which ember does not have.
    """

    @checked(lr=real_or_tensor, lambd=_hyper, alpha=_hyper, t0=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_ranges(lr=lr, weight_decay=weight_decay)
        _not_differentiable("ASGD", differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)
        for s in self.state.values():
            for key in ("eta", "mu"):
                if key in s and not isinstance(s[key], em.Tensor):
                    s[key] = em.tensor(float(s[key]), dtype=_scalar_dtype())

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["eta"] = _step_tensor(_lr(group["lr"]))
        state["mu"] = _step_tensor(1.0)
        state["ax"] = em.zeros_like(p)

    _update = staticmethod(_per_tensor(_asgd))
    _update_foreach = staticmethod(_asgd)
