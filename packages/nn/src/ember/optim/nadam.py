"""NAdam: Adam with Nesterov momentum (Dozat, 2016), with PyTorch's momentum decay."""
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
    _scalar_dtype,
    _step_tensor,
    _steps_to_tensors,
)

__all__ = ["NAdam"]


def _nadam(group, params, grads, states):
    """One NAdam step of the listed parameters (multi-tensor)."""
    lr, (beta1, beta2), eps = _lr(group["lr"]), group["betas"], group["eps"]
    weight_decay, psi = group["weight_decay"], group["momentum_decay"]
    steps = [_bump_step(s) for s in states]
    decoupled = group["decoupled_weight_decay"] and weight_decay != 0
    if decoupled:
        em._foreach_mul_(params, 1 - lr * weight_decay)
    grads = _directions(params, grads, 0 if decoupled else weight_decay, group["maximize"])
    exp_avgs = [s["exp_avg"] for s in states]
    exp_avg_sqs = [s["exp_avg_sq"] for s in states]
    mus = [beta1 * (1.0 - 0.5 * 0.96 ** (t * psi)) for t in steps]
    mu_nexts = [beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi)) for t in steps]
    products = []
    for s, mu in zip(states, mus):
        # mu_product is a 0-d tensor of the scalar dtype (float32), as in PyTorch
        products.append(s["mu_product"].mul_(mu).item())
    em._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    em._foreach_mul_(exp_avg_sqs, beta2)
    em._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    denom = em._foreach_div(exp_avg_sqs, [1 - beta2 ** t for t in steps])
    em._foreach_sqrt_(denom)
    em._foreach_add_(denom, eps)
    em._foreach_addcdiv_(params, grads, denom,
                         [-lr * (1.0 - mu) / (1.0 - mp) for mu, mp in zip(mus, products)])
    em._foreach_addcdiv_(params, exp_avgs, denom,
                         [-lr * mn / (1.0 - mp * mn) for mn, mp in zip(mu_nexts, products)])


class NAdam(Optimizer):
    """NAdam, as PyTorch documents it (psi = momentum_decay):

        g = -grad if maximize else grad
        g += weight_decay * p        (or p *= 1 - lr * weight_decay when decoupled)
        mu_t = beta1 * (1 - 0.5 * 0.96^(t psi));  mu_{t+1} likewise
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        prod_t = mu_1 ... mu_t   (state 'mu_product', kept in float32 like 'step')
        p -= lr * [(1 - mu_t) / (1 - prod_t) * g + mu_{t+1} / (1 - prod_t mu_{t+1}) * m]
               / (sqrt(v / (1 - beta2^t)) + eps)

    foreach=True updates the whole group with the multi-tensor functions; capturable is
    accepted and does nothing outside CUDA graphs, which ember does not have.
    """

    @checked(lr=real_or_tensor, betas=_betas, eps=_hyper, weight_decay=_hyper,
             momentum_decay=_hyper)
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_ranges(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay,
                      momentum_decay=momentum_decay)
        _not_differentiable("NAdam", differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)
        _steps_to_tensors(self.state)
        for s in self.state.values():
            if "mu_product" in s and not isinstance(s["mu_product"], em.Tensor):
                s["mu_product"] = em.tensor(float(s["mu_product"]), dtype=_scalar_dtype())

    def _init_state(self, state, p, group):
        state["step"] = _step_tensor()
        state["mu_product"] = _step_tensor(1.0)
        state["exp_avg"] = em.zeros_like(p)
        state["exp_avg_sq"] = em.zeros_like(p)

    _update = staticmethod(_per_tensor(_nadam))
    _update_foreach = staticmethod(_nadam)
