"""Adam and AdamW (Adam with decoupled weight decay)."""
from __future__ import annotations

import ember as em
from ember._C import foreach as _fe
from ember.nn._checks import checked, real_or_tensor
from ember.ops.foreach import _div_into, _sqrt_into
from ember.optim.optimizer import (
    Optimizer,
    _betas,
    _bump_step,
    _check_foreach_fused,
    _check_ranges,
    _decayed,
    _device_steps,
    _directions,
    _hyper,
    _not_differentiable,
    _on_device_kernel,
    _skipped,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["Adam", "AdamW"]


def _adam(group, params, grads, states, found_inf=None):
    """One Adam step of group's parameters that have a gradient: the dense
    float32/float64 ones in one fused pass (ember._C.foreach.adam_ on the CPU, a
    multi-tensor device kernel elsewhere: the arithmetic of _adam_composed), the others
    with _adam_composed; found_inf: GradScaler's flag (nonzero: no step)."""
    for i, step in _adam_fused(group, params, grads, states, found_inf):
        _adam_composed(group, params[i], grads[i], states[i], step)


def _adam_fused(group, params, grads, states, found_inf=None):
    """The fused steps over what they take: the device kernels (step counts and
    found_inf read on the device), then, unless found_inf says skip, the CPU loop.
    Returns (index, step count) of the rest, their counts advanced."""
    beta1, beta2 = group["betas"]
    weight_decay = group["weight_decay"]
    amsgrad = group["amsgrad"]
    lr = float(group["lr"])
    decoupled = bool(group["decoupled_weight_decay"] and weight_decay != 0)
    maximize = bool(group["maximize"])
    for p, s in zip(params, states):
        t = s["step"]
        if _on_device_kernel(p) and (t.device != p.device or t.dtype is not em.float32):
            s["step"] = t.to(device=p.device, dtype=em.float32)   # a loaded state_dict's
    lists = (params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
             [s["max_exp_avg_sq"] if amsgrad else None for s in states],
             [s["step"] for s in states])
    rest = _device_steps("adam_", found_inf, 6, *lists, lr, beta1, beta2, group["eps"],
                         weight_decay, decoupled, maximize)
    if not rest or _skipped(found_inf):
        return []
    pick = lambda xs: [xs[i] for i in rest]   # noqa: E731
    steps = [_bump_step(states[i]) for i in rest]
    left = _fe.adam_(*(pick(xs) for xs in lists[:5]), [1 - beta1 ** t for t in steps],
                     [(1 - beta2 ** t) ** 0.5 for t in steps], lr, beta1, beta2,
                     group["eps"], weight_decay, decoupled, maximize)
    return [(rest[j], steps[j]) for j in left]


def _adam_composed(group, p, g, state, step):
    """One parameter's Adam step (its step count already advanced) with ember ops."""
    lr = float(group["lr"])
    beta1, beta2 = group["betas"]
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    maximize = group["maximize"]
    decoupled = group["decoupled_weight_decay"] and weight_decay != 0
    l2 = 0 if decoupled else weight_decay
    if decoupled:
        p.mul_(1 - lr * weight_decay)
    if l2 != 0 or maximize:
        g = _decayed(p, g, l2, maximize)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(g, 1 - beta1)
    # v + (1 - beta2) * (g^2 - v): the moving average in one pass over v
    tmp = em.mul(g, g)
    exp_avg_sq.lerp_(tmp, 1 - beta2)
    if group["amsgrad"]:
        v = state["max_exp_avg_sq"]
        em.maximum(v, exp_avg_sq, out=v)
    else:
        v = exp_avg_sq
    bc1 = 1 - beta1 ** step
    bc2_sqrt = (1 - beta2 ** step) ** 0.5
    # lr / bc1 * m / (sqrt(v) / bc2_sqrt + eps)
    #   = lr * bc2_sqrt / bc1 * m / (sqrt(v) + eps * bc2_sqrt): one pass fewer
    em.sqrt(v, out=tmp).add_(eps * bc2_sqrt)
    p.add_(em.div(exp_avg, tmp, out=tmp).mul_(-lr * bc2_sqrt / bc1))


def _adam_foreach(group, params, grads, states, found_inf=None):
    """The multi-tensor form of _adam: the fused steps, then the multi-tensor functions
    (one C loop per op) over the rest."""
    rest = _adam_fused(group, params, grads, states, found_inf)
    if rest:
        pick = lambda xs: [xs[i] for i, _ in rest]   # noqa: E731
        _adam_foreach_composed(group, pick(params), pick(grads), pick(states),
                               [t for _, t in rest])


def _adam_foreach_composed(group, params, grads, states, steps):
    """_adam_composed's arithmetic over lists, with the em._foreach_* functions."""
    lr = float(group["lr"])
    beta1, beta2 = group["betas"]
    eps = group["eps"]
    weight_decay = group["weight_decay"]
    decoupled = group["decoupled_weight_decay"] and weight_decay != 0
    if decoupled:
        em._foreach_mul_(params, 1 - lr * weight_decay)
    grads = _directions(params, grads, 0 if decoupled else weight_decay, group["maximize"])
    exp_avgs = [s["exp_avg"] for s in states]
    exp_avg_sqs = [s["exp_avg_sq"] for s in states]
    em._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    tmp = em._foreach_mul(grads, grads)
    em._foreach_lerp_(exp_avg_sqs, tmp, 1 - beta2)
    if group["amsgrad"]:
        v = [s["max_exp_avg_sq"] for s in states]
        em._foreach_maximum_(v, exp_avg_sqs)
    else:
        v = exp_avg_sqs
    bc1 = [1 - beta1 ** t for t in steps]
    bc2_sqrt = [(1 - beta2 ** t) ** 0.5 for t in steps]
    # the single-tensor path's arithmetic in its buffer (the g^2 one), op by op
    _sqrt_into(v, tmp)
    em._foreach_add_(tmp, [eps * b for b in bc2_sqrt])
    _div_into(exp_avgs, tmp, tmp)
    em._foreach_mul_(tmp, [-lr * b2 / b1 for b1, b2 in zip(bc1, bc2_sqrt)])
    em._foreach_add_(params, tmp)


class Adam(Optimizer):
    """Adam (Kingma and Ba), as PyTorch computes it:

        g = -grad if maximize else grad
        g += weight_decay * p            (or p *= 1 - lr * weight_decay when decoupled)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        v_max = max(v_max, v) with amsgrad (used in place of v below)
        p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    Contiguous float32/float64 parameters take one fused pass each (every array read
    and written once; on a device one launch per 16 parameters of a dtype, and one more
    advancing their step counts, which live beside them there); others (layouts,
    dtypes) the composed ops, with foreach=True or fused=True the multi-tensor functions
    (em._foreach_*);
    capturable is accepted and does nothing outside CUDA graphs, which ember does not
    have.
    """

    @checked(lr=real_or_tensor, betas=_betas, eps=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_ranges(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _check_foreach_fused(type(self).__name__, foreach, fused)
        _not_differentiable(type(self).__name__, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", isinstance(self, AdamW))
        _steps_to_tensors(self.state)

    def _init_state(self, state, p, group):
        # beside a parameter the device kernel takes, as PyTorch's fused Adam: that
        # kernel reads and advances it there (no host sync, GradScaler's skip included)
        state["step"] = em.zeros((), dtype=em.float32, device=p.device) \
            if _on_device_kernel(p) else _step_tensor()
        state["exp_avg"] = em.zeros_like(p)
        state["exp_avg_sq"] = em.zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = em.zeros_like(p)

    _update = staticmethod(_adam)
    _update_foreach = staticmethod(_adam_foreach)
    # GradScaler.step hands its inf flag to step (optimizer.found_inf, as PyTorch's
    # fused optimizers take it) instead of reading it: the device kernels skip there
    _step_supports_amp_scaling = True


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter): each step first scales
    the parameters by 1 - lr * weight_decay, then takes Adam's step without decay."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
