"""Stochastic weight averaging (Izmailov et al., 2018) and exponential moving averages
of a model's weights, as torch.optim.swa_utils: AveragedModel keeps the average,
SWALR anneals the lr to the SWA lr, update_bn recomputes BatchNorm statistics for the
averaged weights.

    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.05)
    for epoch in range(epochs):
        train(model)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
    update_bn(train_loader, swa_model)
"""
from __future__ import annotations

import copy
import itertools
import math

import ember as em
from ember.nn._checks import real
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import _BatchNorm
from ember.optim.lr_scheduler import LRScheduler, _check_optimizer, _format_param

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    """The exponential moving average over lists of tensors, in place:
    ema = decay * ema + (1 - decay) * current (one em._foreach_lerp_)."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    def ema_update(ema_param_list, current_param_list, _num_averaged):
        em._foreach_lerp_(ema_param_list, current_param_list, 1 - decay)
    return ema_update


def get_swa_multi_avg_fn():
    """The running mean over lists of tensors, in place:
    avg += (current - avg) / (n + 1) (one em._foreach_lerp_ for floating tensors)."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged)
        if averaged_param_list[0].is_floating_point():
            em._foreach_lerp_(averaged_param_list, current_param_list, 1 / (n + 1))
        else:
            # integer buffers (num_batches_tracked): the float mean, truncated back into
            # the integer tensor, as PyTorch's per-tensor path does on the CPU
            for a, c in zip(averaged_param_list, current_param_list):
                a.copy_(a + (c - a) / (n + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The exponential moving average of one tensor: decay * ema + (1 - decay) * p."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor: avg + (p - avg) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` (deep-copied, moved to `device` if given) whose parameters are
    the average of the models passed to update_parameters(): the running mean by
    default (SWA), or avg_fn(averaged, current, n_averaged) per tensor, or
    multi_avg_fn(averaged_list, current_list, n_averaged) over lists (e.g.
    get_ema_multi_avg_fn(0.999)). use_buffers=True averages the buffers too; otherwise
    they are copied from the model at each update. forward runs the averaged copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: only one of avg_fn and multi_avg_fn should be "
                             "provided")
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel: model must be a Module, got "
                            f"{type(model).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", em.tensor(0, dtype=em.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold model's current parameters (and buffers with use_buffers) into the
        average; the first call copies them."""
        with em.no_grad():
            self._update(model)

    def _update(self, model):
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.module.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        for p_avg, p_model in zip(mine, theirs):
            p_model_ = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model_)
            if first:
                p_avg.detach().copy_(p_model_)
        if not first:
            n = self.n_averaged
            if self.multi_avg_fn is not None or self.avg_fn is None:
                # grouped by device and dtype, as PyTorch's multi-tensor functions take
                groups = {}
                for a, c in zip(averaged, current):
                    key = (str(a.device), a.dtype)
                    groups.setdefault(key, ([], []))
                    groups[key][0].append(a)
                    groups[key][1].append(c)
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for (device, _), (avgs, curs) in groups.items():
                    fn(avgs, curs, n.to(device))
            else:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, n.to(a.device)))
        if not self.use_buffers:
            # the buffers follow the source model
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm in `model` with one pass
    over `loader` (batches, or (input, ...) tuples whose first item is the input), as
    a cumulative average (momentum None during the pass); restores momentum and the
    training mode afterwards. Does nothing for a model without BatchNorm."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with em.no_grad():
            for input in loader:
                if isinstance(input, (list, tuple)):
                    input = input[0]
                if device is not None:
                    input = input.to(device)
                model(input)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to swa_lr over anneal_epochs epochs ('cos' or 'linear'),
    then hold it there (PyTorch's recursive formula, so it starts from whatever lr the
    group has)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        _check_optimizer(optimizer, "SWALR")
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr, "SWALR", real())
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or isinstance(anneal_epochs, bool) or \
                anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    def anneal_func(self, t):
        return self._cosine_anneal(t) if self.anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, prev_lrs)]
