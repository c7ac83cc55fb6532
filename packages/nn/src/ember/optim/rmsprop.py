"""RMSprop (Hinton's unpublished method; the centered form of Graves)."""
from __future__ import annotations

import ember as em
from ember.nn._checks import checked, real_or_tensor
from ember.ops.foreach import _div_into, _sqrt_into
from ember.optim.optimizer import (
    Optimizer,
    _bump_step,
    _check_ranges,
    _decayed,
    _directions,
    _hyper,
    _not_differentiable,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["RMSprop"]


def _rmsprop(group, params, grads, states):
    """One RMSprop step of group's parameters that have a gradient."""
    lr = group["lr"]
    alpha = group["alpha"]
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    momentum = group["momentum"]
    centered = group["centered"]
    maximize = group["maximize"]
    decay = weight_decay != 0 or maximize
    for p, g, state in zip(params, grads, states):
        _bump_step(state)
        if decay:
            g = _decayed(p, g, weight_decay, maximize)
        square_avg = state["square_avg"]
        tmp = em.mul(g, g)
        square_avg.lerp_(tmp, 1 - alpha)
        if centered:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(g, 1 - alpha)
            em.mul(grad_avg, grad_avg, out=tmp)
            em.sub(square_avg, tmp, out=tmp).sqrt_()
        else:
            em.sqrt(square_avg, out=tmp)
        tmp.add_(eps)
        em.div(g, tmp, out=tmp)
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).add_(tmp)
            p.add_(buf, alpha=-lr)
        else:
            p.add_(tmp.mul_(-lr))


def _rmsprop_foreach(group, params, grads, states):
    """The multi-tensor form of _rmsprop (the same arithmetic, one C loop per op)."""
    lr = float(group["lr"])
    alpha = group["alpha"]
    for s in states:
        _bump_step(s)
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    square_avgs = [s["square_avg"] for s in states]
    tmp = em._foreach_mul(grads, grads)
    em._foreach_lerp_(square_avgs, tmp, 1 - alpha)
    if group["centered"]:
        grad_avgs = [s["grad_avg"] for s in states]
        em._foreach_lerp_(grad_avgs, grads, 1 - alpha)
        denom = em._foreach_sub(square_avgs, em._foreach_mul(grad_avgs, grad_avgs))
        em._foreach_sqrt_(denom)
    else:
        denom = tmp
        _sqrt_into(square_avgs, denom)
    em._foreach_add_(denom, group["eps"])
    q = denom
    _div_into(grads, denom, q)
    if group["momentum"] > 0:
        bufs = [s["momentum_buffer"] for s in states]
        em._foreach_mul_(bufs, group["momentum"])
        em._foreach_add_(bufs, q)
        em._foreach_add_(params, bufs, alpha=-lr)
    else:
        em._foreach_mul_(q, -lr)
        em._foreach_add_(params, q)


class RMSprop(Optimizer):
    """RMSprop, as PyTorch computes it:

        g = -grad if maximize else grad;  g += weight_decay * p
        v = alpha * v + (1 - alpha) * g^2
        centered: a = alpha * a + (1 - alpha) * g;  d = sqrt(v - a^2) + eps
        otherwise d = sqrt(v) + eps
        momentum > 0: buf = momentum * buf + g / d;  p -= lr * buf
        otherwise p -= lr * g / d
    """

    @checked(lr=real_or_tensor, alpha=_hyper, eps=_hyper, weight_decay=_hyper,
             momentum=_hyper)
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_ranges(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        _not_differentiable("RMSprop", differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["square_avg"] = em.zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = em.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = em.zeros_like(p)

    _update = staticmethod(_rmsprop)
    _update_foreach = staticmethod(_rmsprop_foreach)
