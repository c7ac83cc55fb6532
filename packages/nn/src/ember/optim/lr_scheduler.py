"""Learning-rate schedulers with PyTorch's semantics: each step() sets the lr of every
param group of the optimizer; get_last_lr() returns what was set.

    sched = StepLR(opt, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)          # opt.step() inside
        sched.step()

Schedulers update the lr recursively from the group's current lr (as PyTorch does, so
that several schedulers can be chained); step(epoch) uses the closed form where one
exists.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from ember.nn._checks import checked, function, index, ints, positive, real, size
from ember.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau"]

_EPOCH_DEPRECATION = ("The epoch parameter in `scheduler.step()` was not necessary and is "
                      "being deprecated where possible. Please use `scheduler.step()` to step "
                      "the scheduler.")


def _check_optimizer(optimizer, op):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{op}: {type(optimizer).__name__} is not an Optimizer")


def _format_param(name, optimizer, param, op, check=real()):
    """One value per param group: a list/tuple of that length, or one value for all,
    each passing check."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{op}: {name} must have the same length as "
                             f"optimizer.param_groups. {name} has {len(param)} values, "
                             f"param_groups has {len(optimizer.param_groups)}.")
        return [check(op, f"{name}[{i}]", p) for i, p in enumerate(param)]
    return [check(op, name, param)] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: subclasses implement get_lr() (the lrs for self.last_epoch, usually
    from the groups' current lrs) and optionally _get_closed_form_lr()."""

    @checked(last_epoch=index)
    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer, type(self).__name__)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """The step every scheduler takes when made (SequentialLR takes it again)."""
        self._step_count = 0
        self.step()

    def state_dict(self):
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The lrs the last step() set, one per param group."""
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__}.get_lr is not implemented")

    def step(self, epoch=None):
        """Advance one epoch (or jump to `epoch`, deprecated) and set the groups' lrs."""
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler   # the name before PyTorch 2.0


class _LambdaScheduler(LRScheduler):
    """A scheduler driven by lr_lambda: one function, or one per param group. Its
    state_dict keeps each lambda that is a callable object as its __dict__ and the
    others (plain functions and lambdas, which do not pickle) as None, as PyTorch's."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        op = type(self).__name__
        _check_optimizer(optimizer, op)
        self.optimizer, groups = optimizer, len(optimizer.param_groups)
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [function(op, "lr_lambda", lr_lambda)] * groups
        else:
            if len(lr_lambda) != groups:
                raise ValueError(f"{op}: Expected {groups} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = [function(op, f"lr_lambda[{i}]", fn)
                               for i, fn in enumerate(lr_lambda)]
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """lr = base_lr * lr_lambda(epoch); lr_lambda is one function or one per group."""

    def get_lr(self):
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                    self.base_lrs)]


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    @checked(step_size=positive, gamma=real())
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (number of milestones <= epoch)."""

    @checked(milestones=ints(), gamma=real())
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)   # a saved Counter may load as a dict

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * factor, the factor going linearly from start_factor to end_factor
    over total_iters epochs, then staying at end_factor."""

    @checked(start_factor=real(), end_factor=real(), total_iters=size)
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 "
                             f"and less or equal to 1, got {start_factor}.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, "
                             f"got {end_factor}.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        delta = self.end_factor - self.start_factor
        factor = 1.0 + delta / (self.total_iters * self.start_factor +
                                (self.last_epoch - 1) * delta)
        return [group["lr"] * factor for group in groups]

    def _get_closed_form_lr(self):
        t = min(self.total_iters, self.last_epoch)
        return [base_lr * (self.start_factor +
                           (self.end_factor - self.start_factor) * t / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    @checked(gamma=real())
    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed
    recursively (PyTorch's formula, which equals the closed form when nothing else
    changes the lr; past T_max it climbs back, a cosine of period 2 T_max)."""

    # T_max: a period, so > 0 (PyTorch divides by it); a float is fine
    @checked(T_max=real(0, lo_open=True), eta_min=real())
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if not math.isfinite(math.pi / T_max):
            raise ValueError(f"CosineAnnealingLR: T_max={T_max} is too small (pi / T_max "
                             f"overflows)")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) *
                    (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max))
                    / 2 for base_lr, group in zip(self.base_lrs, groups)]
        ratio = ((1 + math.cos(math.pi * self.last_epoch / self.T_max)) /
                 (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) *
                (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin): the lr rises from max_lr / div_factor to
    max_lr over the first pct_start of total_steps, then anneals to
    initial_lr / final_div_factor ('cos' or 'linear'); three_phase goes back to the
    initial lr before the final annealing. With cycle_momentum, the momentum (or Adam's
    beta1) moves inversely between max_momentum and base_momentum. Step it after every
    batch."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        op = "OneCycleLR"
        _check_optimizer(optimizer, op)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"{op}: Expected positive integer total_steps, but got "
                                 f"{total_steps!r:.60}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"{op}: Expected positive integer epochs, but got "
                                 f"{epochs!r:.60}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"{op}: Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch!r:.60}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"{op}: Expected float between 0 and 1 pct_start, but got "
                             f"{pct_start!r:.60}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        up_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                {"end_step": up_end, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum",
                 "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": up_end, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        max_lrs = _format_param("max_lr", optimizer, max_lr, op)
        div_factor = real()(op, "div_factor", div_factor)
        final_div_factor = real()(op, "final_div_factor", final_div_factor)
        if last_epoch == -1:
            for group, m in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = _format_param("max_momentum", optimizer, max_momentum, op)
            base_ms = _format_param("base_momentum", optimizer, base_momentum, op)
            if last_epoch == -1:
                for group, m_max, m_base in zip(optimizer.param_groups, max_ms, base_ms):
                    if self.use_beta1:
                        group["betas"] = (m_max, *group["betas"][1:])
                    else:
                        group["momentum"] = m_max
                    group["max_momentum"] = m_max
                    group["base_momentum"] = m_base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == last:
                    pct = (step - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct)
                    break
                start_step = end_step
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by `factor` when a metric (passed to step) has not improved for
    `patience` epochs; then wait `cooldown` epochs before counting again. Improvement
    is relative (`threshold_mode='rel'`: better than best * (1 -/+ threshold)) or
    absolute (best -/+ threshold); lrs never go below min_lr, and changes smaller than
    eps are skipped."""

    @checked(factor=real(), patience=size, threshold=real(), cooldown=size, eps=real())
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError(f"Factor should be < 1.0, got {factor}.")
        _check_optimizer(optimizer, "ReduceLROnPlateau")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = [real()("ReduceLROnPlateau", f"min_lr[{i}]", m)
                            for i, m in enumerate(min_lr)]
        else:
            self.default_min_lr = real()("ReduceLROnPlateau", "min_lr", min_lr)
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better()
        self._reset()

    def _init_is_better(self):
        if self.mode not in ("min", "max"):
            raise ValueError(f"mode {self.mode} is unknown!")
        if self.threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {self.threshold_mode} is unknown!")
        self.mode_worse = math.inf if self.mode == "min" else -math.inf

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel"
                        else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel"
                    else best + self.threshold)

    def step(self, metrics, epoch=None):
        """Record this epoch's metric and reduce the lrs when it has plateaued."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the optimizer "
                                   f"({len(groups)}) differs from when ReduceLROnPlateau was "
                                   f"initialized ({len(self.min_lrs)}), usually due to a new "
                                   f"param group being added to the optimizer. Please modify "
                                   f"the `min_lrs` field to match the length of the optimizer "
                                   f"param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._init_is_better()


class MultiplicativeLR(_LambdaScheduler):
    """lr = lr * lr_lambda(epoch) at each epoch > 0 (lr_lambda: one function or one per
    group)."""

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [group["lr"] * fn(self.last_epoch)
                    for fn, group in zip(self.lr_lambdas, groups)]
        return [group["lr"] for group in groups]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor until epoch total_iters, then base_lr."""

    @checked(factor=real(), total_iters=size)
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError(f"Constant multiplicative factor expected to be between 0 and 1, "
                             f"got {factor}.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) *
                           (1 - self.factor)) for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power, computed
    recursively as PyTorch does."""

    @checked(total_iters=positive, power=real())
    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        decay = ((1.0 - self.last_epoch / self.total_iters) /
                 (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov and Hutter): lr = eta_min + (base_lr - eta_min) *
    (1 + cos(pi * T_cur / T_i)) / 2, where T_cur counts epochs since the last restart
    and T_i, the current period, starts at T_0 and is multiplied by T_mult at each
    restart. step(epoch) takes fractional epochs (e.g. epoch + i / iters per batch)."""

    @checked(T_0=positive, T_mult=positive, eta_min=real())
    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) *
                (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or go to `epoch` (a float allowed: no deprecation here)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            epoch = real()("CosineAnnealingWarmRestarts", "epoch", epoch)
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._step_count += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


def _triangular_scale(x):
    return 1.0


def _triangular2_scale(x):
    return 1 / (2.0 ** (x - 1))


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (Smith, 2017): the lr goes from base_lr up to
    max_lr over step_size_up iterations and back over step_size_down (default the
    same), scaled per cycle ('triangular': 1, 'triangular2': halved each cycle) or per
    iteration ('exp_range': gamma ** iteration), or by scale_fn with scale_mode. With
    cycle_momentum the momentum (or Adam's beta1) moves inversely between max_momentum
    and base_momentum. Step it after every batch."""

    @checked(step_size_up=real(0, lo_open=True), gamma=real())
    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        op = "CyclicLR"
        _check_optimizer(optimizer, op)
        base_lrs = _format_param("base_lr", optimizer, base_lr, op)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr, op)
        step_size_up = float(step_size_up)
        step_size_down = float(real(0, lo_open=True)(op, "step_size_down", step_size_down)) \
            if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{op}: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r:.60}")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_ref = None
        self._scale_fn_custom = None if scale_fn is None else \
            function(op, "scale_fn", scale_fn)
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum, op)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum, op)
            if last_epoch == -1:
                for m, b, group in zip(self.max_momentums, self.base_momentums,
                                       optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m, *group["betas"][1:])
                    else:
                        group["momentum"] = m
                    group["max_momentum"] = m
                    group["base_momentum"] = b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = _triangular_scale, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = _triangular2_scale, "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = self._exp_range_scale
            self.scale_mode = "iterations"

    def _exp_range_scale(self, x):
        return self.gamma ** x

    def scale_fn(self, x):
        """The scale of the amplitude at cycle (or iteration) x."""
        fn = self._scale_fn_custom if self._scale_fn_custom is not None else self._scale_fn_ref
        return fn(x)

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            momentums = [max_m - (max_m - base_m) * scale_factor * scale
                         for base_m, max_m in zip(self.base_momentums, self.max_momentums)]
            for group, momentum in zip(self.optimizer.param_groups, momentums):
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self):
        """Everything but the optimizer and the scale functions (a custom scale_fn that
        is a callable object is saved as its __dict__, as in PyTorch)."""
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("optimizer", "_scale_fn_ref", "_scale_fn_custom")}
        fn = self._scale_fn_custom
        state["_scale_fn_custom"] = None if fn is None or \
            isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom", None)
        state_dict.pop("_scale_fn_ref", None)
        self.__dict__.update(state_dict)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _check_schedulers(op, schedulers, optimizer):
    if isinstance(schedulers, (str, bytes)) or not hasattr(schedulers, "__iter__"):
        raise TypeError(f"{op}: schedulers must be a list of schedulers, got "
                        f"{type(schedulers).__name__} {schedulers!r:.60}")
    schedulers = list(schedulers)
    if len(schedulers) < 1:
        raise ValueError(f"{op} expects at least one scheduler, but got no scheduler.")
    if optimizer is None:
        optimizer = getattr(schedulers[0], "optimizer", None)
    for idx, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{op}: schedulers[{idx}] should have `optimizer` as its attribute "
                            f"(a scheduler), got {type(s).__name__}")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{op} does not support `ReduceLROnPlateau` scheduler as it "
                             f"requires additional kwargs to be specified when calling "
                             f"`step`, but got one at index {idx} in the given schedulers "
                             f"sequence.")
        if s.optimizer is not optimizer:
            raise ValueError(f"{op} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(s).__name__} at index {idx} has "
                             f"{type(s.optimizer).__name__}, which is different from "
                             f"{type(optimizer).__name__}.")
    return schedulers, optimizer


def _schedulers_state(self):
    state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in self._schedulers]
    return state


def _load_schedulers_state(self, state_dict):
    state_dict = dict(state_dict)
    saved = state_dict.pop("_schedulers")
    self.__dict__.update(state_dict)
    for s, st in zip(self._schedulers, saved):
        s.load_state_dict(st)


class SequentialLR(LRScheduler):
    """Run schedulers one after another: schedulers[i] from epoch milestones[i - 1]
    (where it restarts at its epoch 0) until milestones[i]."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        op = "SequentialLR"
        _check_optimizer(optimizer, op)
        if isinstance(schedulers, (str, bytes)) or not hasattr(schedulers, "__iter__"):
            raise TypeError(f"{op}: schedulers must be a list of schedulers, got "
                            f"{type(schedulers).__name__} {schedulers!r:.60}")
        milestones = ints()(op, "milestones", milestones)
        last_epoch = index(op, "last_epoch", last_epoch)
        schedulers, _ = _check_schedulers(op, schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to "
                             f"be one more than the number of milestone points, but got number "
                             f"of schedulers {len(schedulers)} and the number of milestones to "
                             f"be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # back to the initial lrs, the other schedulers' construction steps undone; the
        # first one's taken again
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        """Step the scheduler of the current stage (restarting one at its milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            with warnings.catch_warnings():     # the restart is not the user's step(epoch)
                warnings.simplefilter("ignore", UserWarning)
                scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        """Everything but the optimizer, with each scheduler's state_dict."""
        return _schedulers_state(self)

    def load_state_dict(self, state_dict):
        _load_schedulers_state(self, state_dict)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together at each step (their effects multiply, for the
    schedulers that update the lr recursively)."""

    def __init__(self, schedulers, optimizer=None):
        if optimizer is not None:
            _check_optimizer(optimizer, "ChainedScheduler")
        schedulers, optimizer = _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in schedulers[-1].optimizer.param_groups]

    def step(self):
        """Step every scheduler, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self._schedulers[-1].optimizer.param_groups]

    def state_dict(self):
        """Everything but the optimizer, with each scheduler's state_dict."""
        return _schedulers_state(self)

    def load_state_dict(self, state_dict):
        _load_schedulers_state(self, state_dict)
