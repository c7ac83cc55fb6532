"""The schedulers added for issue 18 (MultiplicativeLR, ConstantLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR, SequentialLR, ChainedScheduler) and
optim.swa_utils, against the formulas PyTorch documents; state_dict round trips."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember as em
from ember import nn, optim
from ember.optim import lr_scheduler as sched, swa_utils

BASE = [0.1, 0.4]


def _opt(cls=optim.SGD, **kwargs):
    a, b = em.zeros(2, requires_grad=True), em.zeros(3, requires_grad=True)
    return cls([{"params": [a]}, {"params": [b], "lr": BASE[1]}], lr=BASE[0], **kwargs)


def _lrs(opt, s, epochs):
    out = [[g["lr"] for g in opt.param_groups]]
    for _ in range(epochs):
        opt.step()
        s.step()
        assert s.get_last_lr() == [g["lr"] for g in opt.param_groups]
        out.append(list(s.get_last_lr()))
    return out


def _check(seq, formula):
    for epoch, lrs in enumerate(seq):
        for base, lr in zip(BASE, lrs):
            assert math.isclose(lr, formula(base, epoch), rel_tol=1e-12, abs_tol=1e-15), \
                f"epoch {epoch}: {lr} != {formula(base, epoch)}"


def _cawr(b, e, T_0, T_mult, eta_min):
    # the closed form: find the period epoch e falls in
    T_i, start = T_0, 0
    while e >= start + T_i:
        start += T_i
        T_i *= T_mult
    return eta_min + (b - eta_min) * (1 + math.cos(math.pi * (e - start) / T_i)) / 2


def _tri(b, e, max_scale, up, down, scale):
    total = up + down
    cycle = math.floor(1 + e / total)
    x = 1 + e / total - cycle
    f = x / (up / total) if x <= up / total else (x - 1) / (up / total - 1)
    return b + (max_scale * b - b) * f * scale(cycle, e)


CASES = [
    ("MultiplicativeLR", lambda o: sched.MultiplicativeLR(o, lambda e: 0.9),
     lambda b, e: b * 0.9 ** e),
    ("ConstantLR", lambda o: sched.ConstantLR(o, factor=0.5, total_iters=3),
     lambda b, e: b * (0.5 if e < 3 else 1.0)),
    ("PolynomialLR", lambda o: sched.PolynomialLR(o, total_iters=4, power=2.0),
     lambda b, e: b * (1 - min(e, 4) / 4) ** 2),
    ("CosineAnnealingWarmRestarts",
     lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
     lambda b, e: _cawr(b, e, 3, 2, 0.01)),
    ("CosineAnnealingWarmRestarts-1",
     lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=4),
     lambda b, e: _cawr(b, e, 4, 1, 0.0)),
    # max_lr = 3 base_lr per group; triangular: a constant amplitude
    ("CyclicLR", lambda o: sched.CyclicLR(o, base_lr=BASE, max_lr=[0.3, 1.2], step_size_up=2,
                                          step_size_down=3),
     lambda b, e: _tri(b, e, 3, 2, 3, lambda c, i: 1.0)),
    ("CyclicLR-triangular2",
     lambda o: sched.CyclicLR(o, base_lr=BASE, max_lr=[0.3, 1.2], step_size_up=2,
                              mode="triangular2"),
     lambda b, e: _tri(b, e, 3, 2, 2, lambda c, i: 1 / 2 ** (c - 1))),
    ("CyclicLR-exp_range",
     lambda o: sched.CyclicLR(o, base_lr=BASE, max_lr=[0.3, 1.2], step_size_up=3,
                              mode="exp_range", gamma=0.9),
     lambda b, e: _tri(b, e, 3, 3, 3, lambda c, i: 0.9 ** i)),
]


@pytest.mark.parametrize("name,make,formula", CASES, ids=[c[0] for c in CASES])
def test_formula(name, make, formula):
    opt = _opt(momentum=0.9)
    _check(_lrs(opt, make(opt), 14), formula)


@pytest.mark.parametrize("name,make,formula", CASES, ids=[c[0] for c in CASES])
def test_state_dict_round_trip(name, make, formula):
    opt = _opt(momentum=0.9)
    s = make(opt)
    _lrs(opt, s, 5)
    state = pickle.loads(pickle.dumps(s.state_dict()))
    opt2 = _opt(momentum=0.9)
    s2 = make(opt2)
    s2.load_state_dict(state)
    for g2, g in zip(opt2.param_groups, opt.param_groups):
        g2["lr"] = g["lr"]
    assert _lrs(opt2, s2, 6)[1:] == _lrs(opt, s, 6)[1:]


def test_hand_worked_values():
    opt = _opt()
    s = sched.PolynomialLR(opt, total_iters=2, power=1.0)
    assert _lrs(opt, s, 3) == [[0.1, 0.4], [0.05, 0.2], [0.0, 0.0], [0.0, 0.0]]
    opt = _opt()
    s = sched.ConstantLR(opt, factor=0.25, total_iters=2)
    seq = _lrs(opt, s, 3)
    assert seq[0] == [0.025, 0.1] and seq[1] == [0.025, 0.1] and seq[2] == [0.1, 0.4]
    # CyclicLR, triangular, step_size_up=2: base, half way, max, half way, base
    opt = _opt(momentum=0.9)
    s = sched.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2)
    assert [round(x[0], 12) for x in _lrs(opt, s, 4)] == [0.0, 0.5, 1.0, 0.5, 0.0]


def test_cawr_fractional_epochs():
    opt = _opt()
    s = sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    for epoch, expect in [(0.5, _cawr(0.1, 0.5, 2, 2, 0)), (2.5, _cawr(0.1, 2.5, 2, 2, 0)),
                          (7.0, _cawr(0.1, 7.0, 2, 2, 0)), (1.0, _cawr(0.1, 1.0, 2, 2, 0))]:
        s.step(epoch)
        assert math.isclose(opt.param_groups[0]["lr"], expect, rel_tol=1e-12)
    assert s.last_epoch == 1
    with pytest.raises(ValueError, match="non-negative epoch"):
        s.step(-1)


def test_cyclic_momentum_and_beta1():
    opt = _opt(momentum=0.9)
    s = sched.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2, base_momentum=0.8,
                       max_momentum=0.9)
    moms = [opt.param_groups[0]["momentum"]]
    for _ in range(4):
        s.step()
        moms.append(opt.param_groups[0]["momentum"])
    np.testing.assert_allclose(moms, [0.9, 0.85, 0.8, 0.85, 0.9])
    opt = _opt(optim.Adam)
    sched.CyclicLR(opt, base_lr=0.0, max_lr=1.0, step_size_up=2).step()
    assert math.isclose(opt.param_groups[0]["betas"][0], 0.85)
    with pytest.raises(ValueError, match="momentum or beta1"):
        sched.CyclicLR(_opt(optim.Adagrad), 0.1, 1.0)
    with pytest.raises(ValueError, match="mode is invalid"):
        sched.CyclicLR(_opt(momentum=0.9), 0.1, 1.0, mode="square")
    custom = sched.CyclicLR(_opt(momentum=0.9), 0.0, 1.0, step_size_up=1,
                            scale_fn=lambda x: 0.5, scale_mode="iterations")
    custom.step()
    assert custom.get_last_lr()[0] == 0.5


def test_sequential_lr():
    # ConstantLR (0.1x) for 2 epochs, then ExponentialLR(0.5) restarting at epoch 0
    opt = _opt()
    s1 = sched.ConstantLR(opt, factor=0.1, total_iters=2)
    s2 = sched.ExponentialLR(opt, gamma=0.5)
    s = sched.SequentialLR(opt, [s1, s2], milestones=[2])
    seq = _lrs(opt, s, 5)
    expect = [0.1 * 0.1, 0.1 * 0.1, 0.1, 0.05, 0.025, 0.0125]
    for got, e in zip(seq, expect):
        assert math.isclose(got[0], e, rel_tol=1e-12)
    state = s.state_dict()
    assert len(state["_schedulers"]) == 2 and "optimizer" not in state
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        sched.SequentialLR(opt, [s1, s2], milestones=[2, 3])
    with pytest.raises(ValueError, match="at least one scheduler"):
        sched.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match="same optimizer"):
        sched.SequentialLR(opt, [s1, sched.StepLR(_opt(), 2)], milestones=[2])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        sched.SequentialLR(opt, [s1, sched.ReduceLROnPlateau(opt)], milestones=[2])


def test_chained_scheduler():
    # ConstantLR(0.1, 2 iters) times ExponentialLR(0.9): PyTorch's documented example
    opt = _opt()
    s = sched.ChainedScheduler([sched.ConstantLR(opt, factor=0.1, total_iters=2),
                                sched.ExponentialLR(opt, gamma=0.9)])
    seq = _lrs(opt, s, 4)
    expect = [0.01, 0.009, 0.081, 0.0729, 0.06561]
    for got, e in zip(seq, expect):
        assert math.isclose(got[0], e, rel_tol=1e-12)
    state = pickle.loads(pickle.dumps(s.state_dict()))
    s.load_state_dict(state)
    with pytest.raises(ValueError, match="same optimizer"):
        sched.ChainedScheduler([sched.StepLR(opt, 2), sched.StepLR(_opt(), 2)])


def test_bad_arguments():
    with pytest.raises(ValueError, match="between 0 and 1"):
        sched.ConstantLR(_opt(), factor=2)
    with pytest.raises(ValueError, match="total_iters"):
        sched.PolynomialLR(_opt(), total_iters=0)
    with pytest.raises(ValueError, match="T_0"):
        sched.CosineAnnealingWarmRestarts(_opt(), T_0=0)
    with pytest.raises(TypeError, match="lr_lambda"):
        sched.MultiplicativeLR(_opt(), 0.9)


# swa_utils ------------------------------------------------------------------------------

def test_averaged_model_running_mean_and_ema():
    model = nn.Linear(3, 2)
    swa = swa_utils.AveragedModel(model)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    ema1 = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.5))
    snapshots = []
    for k in range(4):
        with em.no_grad():
            model.weight.fill_(float(k + 1))
        snapshots.append(model.weight.detach().numpy().copy())
        for m in (swa, ema, ema1):
            m.update_parameters(model)
    np.testing.assert_allclose(swa.module.weight.detach().numpy(), np.mean(snapshots, 0))
    e = snapshots[0]
    for snap in snapshots[1:]:
        e = 0.5 * e + 0.5 * snap
    np.testing.assert_allclose(ema.module.weight.detach().numpy(), e)
    np.testing.assert_allclose(ema1.module.weight.detach().numpy(), e)
    assert swa.n_averaged.item() == 4
    assert "n_averaged" in swa.state_dict()
    x = em.randn(5, 3)
    np.testing.assert_allclose(swa(x).detach().numpy(), swa.module(x).detach().numpy())
    with pytest.raises(ValueError, match="only one of"):
        swa_utils.AveragedModel(model, avg_fn=lambda *a: a[0], multi_avg_fn=lambda *a: None)


def test_averaged_model_buffers():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    swa = swa_utils.AveragedModel(model)
    swa_b = swa_utils.AveragedModel(model, use_buffers=True)
    for k in range(2):
        with em.no_grad():
            model[1].running_mean.fill_(float(k + 1))
        swa.update_parameters(model)
        swa_b.update_parameters(model)
    assert swa.module[1].running_mean.tolist() == [2.0, 2.0]      # copied
    assert swa_b.module[1].running_mean.tolist() == [1.5, 1.5]    # averaged


def test_update_bn():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3))
    rng = np.random.default_rng(0)
    batches = [em.tensor(rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(3)]
    model.eval()
    swa_utils.update_bn([(b, 0) for b in batches], model)
    with em.no_grad():
        feats = np.concatenate([model[0](b).numpy() for b in batches])
    # a cumulative average of the per-batch means (equal batches: the overall mean)
    np.testing.assert_allclose(model[1].running_mean.numpy(), feats.mean(0), rtol=1e-5,
                               atol=1e-6)
    assert model[1].momentum == 0.3 and not model.training
    swa_utils.update_bn(batches, nn.Linear(3, 3))     # no BatchNorm: nothing to do


def test_swalr():
    # PyTorch's recursion: from lr 0.1 to swa_lr 0.05, linear over 2 epochs: 0.075, 0.05
    opt = _opt()
    s = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
    seq = [opt.param_groups[0]["lr"]]
    for _ in range(3):
        s.step()
        seq.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(seq, [0.1, 0.075, 0.05, 0.05])
    opt = _opt()
    s = swa_utils.SWALR(opt, swa_lr=[0.0, 0.2], anneal_epochs=4)
    for _ in range(4):
        s.step()
    np.testing.assert_allclose([g["lr"] for g in opt.param_groups], [0.0, 0.2], atol=1e-15)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(_opt(), 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(_opt(), 0.1, anneal_epochs=-1)
