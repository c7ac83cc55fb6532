"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
from __future__ import annotations

import ember as em
from ember._C import foreach as _fe
from ember.nn._checks import checked, real_or_tensor
from ember.optim.optimizer import (
    Optimizer,
    _check_flags,
    _check_foreach_fused,
    _decayed,
    _device_steps,
    _directions,
    _hyper,
    _not_differentiable,
    _skipped,
)

__all__ = ["SGD"]


def _sgd(group, params, grads, states, found_inf=None):
    """One SGD step of group's parameters that have a gradient: the dense
    float32/float64 ones in one fused pass (ember._C.foreach.sgd_ on the CPU, a
    multi-tensor device kernel elsewhere: the arithmetic of _sgd_composed), the others
    with _sgd_composed; found_inf: GradScaler's flag (nonzero: no step)."""
    for i in _sgd_fused(group, params, grads, states, found_inf):
        _sgd_composed(group, params[i], grads[i], states[i])


def _sgd_fused(group, params, grads, states, found_inf=None):
    """The fused steps over what they take (making the first step's momentum buffers):
    the device kernels (found_inf read there), then, unless found_inf says skip, the
    CPU loop. Returns the indices of the rest."""
    momentum = group["momentum"]
    bufs, fresh = [None] * len(params), [False] * len(params)
    if momentum != 0:       # (a first step, which makes buffers, has no found_inf: step)
        for i, (p, state) in enumerate(zip(params, states)):
            buf = state.get("momentum_buffer")
            if buf is None and p.is_contiguous():
                buf = state["momentum_buffer"] = em.empty_like(p)
                fresh[i] = True
            bufs[i] = buf
    lr = float(group["lr"])
    args = (params, grads, bufs, fresh, lr, momentum, group["dampening"],
            group["weight_decay"], bool(group["nesterov"]), bool(group["maximize"]))
    rest = _device_steps("sgd_", found_inf, 4, *args)
    if rest and not _skipped(found_inf):
        pick = lambda xs: [xs[i] for i in rest]   # noqa: E731
        rest = [rest[j] for j in _fe.sgd_(*(pick(xs) for xs in args[:4]), *args[4:])]
    else:
        rest = []
    for i in rest:
        if fresh[i]:         # made above but not filled: the composed step makes its own
            del states[i]["momentum_buffer"]
    return rest


def _sgd_composed(group, p, g, state):
    """One parameter's SGD step with ember ops."""
    lr = float(group["lr"])     # a Tensor lr too (add_'s alpha is a number)
    momentum = group["momentum"]
    dampening = group["dampening"]
    weight_decay = group["weight_decay"]
    maximize = group["maximize"]
    if weight_decay != 0 or maximize:
        g = _decayed(p, g, weight_decay, maximize)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = g.clone()
        else:
            buf.mul_(momentum).add_(g, alpha=1 - dampening)
        g = buf.mul(momentum).add_(g) if group["nesterov"] else buf
    p.add_(g, alpha=-lr)


def _sgd_foreach(group, params, grads, states, found_inf=None):
    """The multi-tensor form of _sgd: the fused steps, then the multi-tensor functions
    (one C loop per op) over the rest."""
    rest = _sgd_fused(group, params, grads, states, found_inf)
    if rest:
        _sgd_foreach_composed(group, [params[i] for i in rest], [grads[i] for i in rest],
                              [states[i] for i in rest])


def _sgd_foreach_composed(group, params, grads, states):
    """_sgd_composed's arithmetic over lists, with the em._foreach_* functions."""
    lr = float(group["lr"])
    momentum = group["momentum"]
    grads = _directions(params, grads, group["weight_decay"], group["maximize"])
    if momentum != 0:
        bufs, old, old_grads = [], [], []
        for g, state in zip(grads, states):
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.clone()
            else:
                old.append(buf)
                old_grads.append(g)
            bufs.append(buf)
        if old:
            em._foreach_mul_(old, momentum)
            em._foreach_add_(old, old_grads, alpha=1 - group["dampening"])
        grads = em._foreach_add(grads, bufs, alpha=momentum) if group["nesterov"] else bufs
    em._foreach_add_(params, grads, alpha=-lr)


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's formulation):

        g = -grad if maximize else grad;  g += weight_decay * p
        buf = g (first step) or momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf      (when momentum != 0)
        p -= lr * g

    Contiguous float32/float64 parameters take one fused pass each (every array read
    and written once; on a device one launch per 16 parameters of a dtype); others
    (layouts, dtypes) the composed ops,
    with foreach=True or fused=True the multi-tensor functions (em._foreach_*).
    """

    @checked(lr=real_or_tensor, momentum=_hyper, dampening=_hyper, weight_decay=_hyper)
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_flags("SGD", dict(nesterov=nesterov, maximize=maximize, foreach=foreach,
                                 differentiable=differentiable, fused=fused))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_foreach_fused("SGD", foreach, fused)
        _not_differentiable("SGD", differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _has_state(self, group):
        # plain SGD keeps none (its state_dict's 'state' stays empty, as in PyTorch)
        return group["momentum"] != 0

    _update = staticmethod(_sgd)
    _update_foreach = staticmethod(_sgd_foreach)
    _step_supports_amp_scaling = True     # GradScaler hands step its inf flag (adam.py)
