"""ember.optim.lr_scheduler: each scheduler's lr sequence against its closed-form formula,
state_dict round trips, OneCycleLR's momentum cycling, ReduceLROnPlateau, bad input."""
from __future__ import annotations

import io
import math
import warnings
from bisect import bisect_right

import pytest

import ember as em
from ember import optim
from ember.optim import lr_scheduler as sched

BASE = [0.1, 0.4]     # two param groups with their own base lrs


def _opt(cls=optim.SGD, **kwargs):
    a, b = em.zeros(2, requires_grad=True), em.zeros(3, requires_grad=True)
    return cls([{"params": [a]}, {"params": [b], "lr": BASE[1]}], lr=BASE[0], **kwargs)


def _lrs(opt, s, epochs, metrics=None):
    """The groups' lrs before any step, then after each of `epochs` steps."""
    out = [[g["lr"] for g in opt.param_groups]]
    for e in range(epochs):
        opt.step()
        s.step() if metrics is None else s.step(metrics[e])
        assert s.get_last_lr() == [g["lr"] for g in opt.param_groups]
        out.append(list(s.get_last_lr()))
    return out


def _check(seq, formula):
    for epoch, lrs in enumerate(seq):
        for base, lr in zip(BASE, lrs):
            assert math.isclose(lr, formula(base, epoch), rel_tol=1e-12, abs_tol=1e-15), \
                f"epoch {epoch}: {lr} != {formula(base, epoch)}"


@pytest.mark.parametrize("name,make,formula", [
    ("StepLR", lambda o: sched.StepLR(o, step_size=3, gamma=0.5),
     lambda b, e: b * 0.5 ** (e // 3)),
    ("MultiStepLR", lambda o: sched.MultiStepLR(o, milestones=[7, 2, 5, 5], gamma=0.1),
     lambda b, e: b * 0.1 ** bisect_right([2, 5, 5, 7], e)),
    ("ExponentialLR", lambda o: sched.ExponentialLR(o, gamma=0.9), lambda b, e: b * 0.9 ** e),
    ("CosineAnnealingLR", lambda o: sched.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
     lambda b, e: 0.01 + (b - 0.01) * (1 + math.cos(math.pi * e / 6)) / 2),
    ("LambdaLR", lambda o: sched.LambdaLR(o, lambda e: 1 / (1 + e)), lambda b, e: b / (1 + e)),
    ("LinearLR", lambda o: sched.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=4),
     lambda b, e: b * (0.25 + 0.5 * min(e, 4) / 4)),
    ("LinearLR-defaults", lambda o: sched.LinearLR(o),
     lambda b, e: b * (1 / 3 + (2 / 3) * min(e, 5) / 5)),
])
def test_closed_forms(name, make, formula):
    opt = _opt()
    _check(_lrs(opt, make(opt), 20), formula)


def test_cosine_annealing_keeps_its_period_past_t_max():
    # PyTorch's recursive update continues as a cosine of period 2 T_max
    opt = _opt()
    s = sched.CosineAnnealingLR(opt, T_max=5)
    _check(_lrs(opt, s, 25), lambda b, e: b * (1 + math.cos(math.pi * e / 5)) / 2)


def test_lambda_lr_per_group_and_its_state():
    class Warmup:
        def __init__(self, n):
            self.n = n

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.n)

    opt = _opt()
    s = sched.LambdaLR(opt, [Warmup(4), lambda e: 0.5 ** e])
    seq = _lrs(opt, s, 6)
    assert [lr[0] for lr in seq] == pytest.approx([0.1 * min(1, (e + 1) / 4) for e in range(7)])
    assert [lr[1] for lr in seq] == pytest.approx([0.4 * 0.5 ** e for e in range(7)])
    state = s.state_dict()
    assert state["lr_lambdas"] == [{"n": 4}, None] and "optimizer" not in state
    s2 = sched.LambdaLR(_opt(), [Warmup(10), lambda e: 0.5 ** e])
    s2.load_state_dict(state)
    assert s2.lr_lambdas[0].n == 4 and s2.last_epoch == 6
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched.LambdaLR(_opt(), [lambda e: 1.0])


def test_chained_schedulers_multiply():
    # each scheduler updates the current lr, so two of them compose
    opt = _opt()
    s1 = sched.ExponentialLR(opt, gamma=0.9)
    s2 = sched.StepLR(opt, step_size=2, gamma=0.5)
    for epoch in range(1, 7):
        opt.step()
        s1.step()
        s2.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.9 ** epoch * 0.5 ** (epoch // 2))


@pytest.mark.parametrize("make", [
    lambda o: sched.StepLR(o, step_size=3, gamma=0.5),
    lambda o: sched.MultiStepLR(o, milestones=[2, 6], gamma=0.1),
    lambda o: sched.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    lambda o: sched.LinearLR(o, start_factor=0.5, total_iters=6),
    lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=30),
    lambda o: sched.ReduceLROnPlateau(o, patience=1, cooldown=1),
])
@pytest.mark.parametrize("via_file", [False, True])
def test_state_dict_round_trip_continues_identically(make, via_file):
    metric = [1.0, 0.9, 0.95, 0.95, 0.96, 0.8, 0.8, 0.81, 0.82, 0.83, 0.85, 0.9]
    opt1 = _opt()
    s1 = make(opt1)
    plateau = isinstance(s1, sched.ReduceLROnPlateau)
    _lrs(opt1, s1, 5, metric if plateau else None)
    state, opt_state = s1.state_dict(), opt1.state_dict()
    if via_file:
        buf = io.BytesIO()
        em.save({"sched": state, "opt": opt_state}, buf)
        buf.seek(0)
        loaded = em.load(buf)
        state, opt_state = loaded["sched"], loaded["opt"]
    opt2 = _opt()
    s2 = make(opt2)
    opt2.load_state_dict(opt_state)
    s2.load_state_dict(state)
    rest = metric[5:] if plateau else None
    assert _lrs(opt1, s1, 7, rest) == _lrs(opt2, s2, 7, rest)


def test_step_with_epoch_uses_the_closed_form_and_warns():
    opt = _opt()
    s = sched.StepLR(opt, step_size=2, gamma=0.1)
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(5)
    assert s.get_last_lr() == pytest.approx([0.1 * 0.01, 0.4 * 0.01])
    assert s.last_epoch == 5


def test_resuming_needs_initial_lr():
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        sched.StepLR(_opt(), step_size=2, last_epoch=3)
    opt = _opt()
    for g in opt.param_groups:
        g["initial_lr"] = g["lr"]
    s = sched.ExponentialLR(opt, gamma=0.5, last_epoch=3)
    assert s.last_epoch == 4 and s.base_lrs == BASE


def test_requires_an_optimizer():
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sched.StepLR([], step_size=1)


# OneCycleLR -------------------------------------------------------------------------------

def _anneal(kind, start, end, pct):
    if kind == "cos":
        return end + (start - end) / 2 * (1 + math.cos(math.pi * pct))
    return start + (end - start) * pct


def _one_cycle(step, total, max_lr, kind, pct_start=0.3, div=25.0, final_div=1e4,
               three_phase=False, lo=0.85, hi=0.95):
    """(lr, momentum) at `step`, from the phase boundaries of the 1cycle policy."""
    initial = max_lr / div
    final = initial / final_div
    up = pct_start * total - 1
    if three_phase:
        phases = [(up, initial, max_lr, hi, lo), (2 * up, max_lr, initial, lo, hi),
                  (total - 1, initial, final, hi, hi)]
    else:
        phases = [(up, initial, max_lr, hi, lo), (total - 1, max_lr, final, lo, hi)]
    start = 0.0
    for i, (end, lr0, lr1, m0, m1) in enumerate(phases):
        if step <= end or i == len(phases) - 1:
            pct = (step - start) / (end - start)
            return _anneal(kind, lr0, lr1, pct), _anneal(kind, m0, m1, pct)
        start = end


@pytest.mark.parametrize("kind", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("opt_cls", [optim.SGD, optim.Adam])
def test_one_cycle(kind, three_phase, opt_cls):
    kwargs = {"momentum": 0.9} if opt_cls is optim.SGD else {}
    opt = _opt(opt_cls, **kwargs)
    total = 40
    s = sched.OneCycleLR(opt, max_lr=[1.0, 3.0], total_steps=total, anneal_strategy=kind,
                         three_phase=three_phase)
    for step in range(total):
        for g, max_lr in zip(opt.param_groups, [1.0, 3.0]):
            lr, m = _one_cycle(step, total, max_lr, kind, three_phase=three_phase)
            assert g["lr"] == pytest.approx(lr, rel=1e-12)
            momentum = g["momentum"] if opt_cls is optim.SGD else g["betas"][0]
            assert momentum == pytest.approx(m, rel=1e-12)
            if opt_cls is optim.Adam:
                assert g["betas"][1] == 0.999
        opt.step()
        if step < total - 1:
            s.step()
    s.step()
    with pytest.raises(ValueError, match="Tried to step 41 times. The specified number of "
                                         "total steps is 40"):
        s.step()


def test_one_cycle_epochs_and_bad_input():
    s = sched.OneCycleLR(_opt(), max_lr=0.5, epochs=3, steps_per_epoch=7, cycle_momentum=False)
    assert s.total_steps == 21 and s.get_last_lr()[0] == pytest.approx(0.5 / 25)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        sched.OneCycleLR(_opt(), max_lr=1.0)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        sched.OneCycleLR(_opt(), max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="Expected positive integer epochs, but got -1"):
        sched.OneCycleLR(_opt(), max_lr=1.0, epochs=-1, steps_per_epoch=3)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 1.5"):
        sched.OneCycleLR(_opt(), max_lr=1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got cosine"):
        sched.OneCycleLR(_opt(), max_lr=1.0, total_steps=10, anneal_strategy="cosine")
    with pytest.raises(ValueError, match="max_lr must have the same length as "
                                         "optimizer.param_groups"):
        sched.OneCycleLR(_opt(), max_lr=[1.0], total_steps=10)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sched.OneCycleLR(_opt(optim.Adagrad), max_lr=1.0, total_steps=10)


# ReduceLROnPlateau --------------------------------------------------------------------------

def _plateau_reference(metrics, lr, mode="min", factor=0.1, patience=10, threshold=1e-4,
                       threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):
    """The lr after each metric, from the rule: an epoch is bad unless the metric beats
    the best by the threshold; more than `patience` bad epochs in a row (not counting
    epochs in cooldown) cut the lr."""
    best = math.inf if mode == "min" else -math.inf
    bad = cool = 0
    out = []
    for m in metrics:
        if mode == "min":
            better = m < (best * (1 - threshold) if threshold_mode == "rel" else best - threshold)
        else:
            better = m > (best * (1 + threshold) if threshold_mode == "rel" else best + threshold)
        if better:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            if lr - new > eps:
                lr = new
            cool, bad = cooldown, 0
        out.append(lr)
    return out


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(patience=2, factor=0.5),
    dict(patience=1, cooldown=2, factor=0.5, min_lr=0.02),
    dict(mode="max", patience=1, threshold_mode="abs", threshold=0.05),
    dict(mode="max", patience=0, threshold=0.1),
    dict(patience=0, factor=0.9, eps=0.01),
])
def test_reduce_lr_on_plateau(kwargs):
    metrics = ([1.0, 0.8, 0.7, 0.7, 0.69995, 0.71, 0.72, 0.5, 0.5, 0.5, 0.6] +
               [0.4 + 0.01 * (i % 3) for i in range(25)])
    opt = _opt()
    s = sched.ReduceLROnPlateau(opt, **kwargs)
    seq = _lrs(opt, s, len(metrics), metrics)
    for base, i in zip(BASE, range(2)):
        assert [lr[i] for lr in seq[1:]] == pytest.approx(
            _plateau_reference(metrics, base, **kwargs), rel=1e-12)


def test_reduce_lr_on_plateau_per_group_min_lr_and_bad_input():
    opt = _opt()
    s = sched.ReduceLROnPlateau(opt, patience=0, factor=0.5, min_lr=[0.09, 0.0])
    for m in [1.0, 2.0, 2.0]:
        s.step(m)
    assert s.get_last_lr() == [0.09, pytest.approx(0.1)]
    s.step(em.tensor(3.0))    # a 0-d tensor metric works (float(metrics))
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        sched.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode sideways is unknown!"):
        sched.ReduceLROnPlateau(_opt(), mode="sideways")
    with pytest.raises(ValueError, match="threshold mode percent is unknown!"):
        sched.ReduceLROnPlateau(_opt(), threshold_mode="percent")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 3"):
        sched.ReduceLROnPlateau(_opt(), min_lr=[0, 0, 0])


def test_linear_lr_bad_factors():
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be "
                                         "greater than 0"):
        sched.LinearLR(_opt(), start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor expected to be between "
                                         "0 and 1"):
        sched.LinearLR(_opt(), end_factor=1.5)


def test_no_warnings_in_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = _opt()
        s = sched.CosineAnnealingLR(opt, T_max=3)
        _lrs(opt, s, 4)
