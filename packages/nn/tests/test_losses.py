"""Losses (functional and modules) against NumPy references: every reduction and option,
gradients by gradcheck in float64, and bad input. cross_entropy/nll_loss run on
tensor-core's fused kernels; a composite (log_softmax + gather) here is their reference."""
import warnings

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

REDUCTIONS = ("none", "mean", "sum")


def rand(*shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def T(a, grad=False):
    t = em.from_numpy(np.array(a, order="C"))
    return t.requires_grad_() if grad else t


def reduce_np(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def close(got, want, **kw):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-12, **kw)


# regression losses ----------------------------------------------------------------------

def np_smooth_l1(d, beta):
    d = np.abs(d)
    return d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def np_huber(d, delta):
    d = np.abs(d)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_forward(reduction):
    a, b = rand(3, 4), rand(3, 4, seed=1)
    d = a - b
    close(F.mse_loss(T(a), T(b), reduction=reduction), reduce_np(d * d, reduction))
    close(F.l1_loss(T(a), T(b), reduction=reduction), reduce_np(np.abs(d), reduction))
    for beta in (0.0, 0.5, 1.0, 3.0):
        close(F.smooth_l1_loss(T(a), T(b), reduction=reduction, beta=beta),
              reduce_np(np_smooth_l1(d, beta), reduction))
    for delta in (0.5, 1.0, 3.0):
        close(F.huber_loss(T(a), T(b), reduction=reduction, delta=delta),
              reduce_np(np_huber(d, delta), reduction))
    # modules
    close(nn.MSELoss(reduction=reduction)(T(a), T(b)), reduce_np(d * d, reduction))
    close(nn.L1Loss(reduction=reduction)(T(a), T(b)), reduce_np(np.abs(d), reduction))
    close(nn.SmoothL1Loss(reduction=reduction, beta=0.5)(T(a), T(b)),
          reduce_np(np_smooth_l1(d, 0.5), reduction))
    close(nn.HuberLoss(reduction=reduction, delta=0.5)(T(a), T(b)),
          reduce_np(np_huber(d, 0.5), reduction))


def test_regression_losses_weight_and_broadcast():
    a, b, w = rand(3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2, lo=0.1, hi=2)
    d = a - b
    # mse/l1: a weighted mean divides by the weights' sum; huber by the element count
    close(F.mse_loss(T(a), T(b), weight=T(w)), (w * d * d).sum() / w.sum())
    close(F.l1_loss(T(a), T(b), weight=T(w), reduction="sum"), (w * np.abs(d)).sum())
    close(F.l1_loss(T(a), T(b), weight=T(w), reduction="none"), w * np.abs(d))
    close(F.huber_loss(T(a), T(b), weight=T(w), delta=0.7), (w * np_huber(d, 0.7)).mean())
    row = rand(4, seed=3)
    with pytest.warns(UserWarning, match=r"target shape \(4,\).*input shape \(3, 4\)"):
        got = F.mse_loss(T(a), T(row), reduction="none")
    close(got, (a - row) ** 2)


def test_legacy_size_average_and_reduce():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    for kw, red in [({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                    ({"size_average": True, "reduce": True}, "mean")]:
        with pytest.warns(UserWarning, match=f"reduction='{red}'"):
            got = F.mse_loss(T(a), T(b), **kw)
        close(got, reduce_np((a - b) ** 2, red))
        with pytest.warns(UserWarning, match=f"reduction='{red}'"):
            assert nn.L1Loss(**kw).reduction == red


def test_regression_losses_gradients():
    a, b, w = T(rand(3, 4), True), T(rand(3, 4, seed=1), True), T(rand(3, 4, seed=2), True)
    for red in REDUCTIONS:
        assert gradcheck(lambda x, y: F.mse_loss(x, y, reduction=red), (a, b))
        assert gradcheck(lambda x, y, z: F.l1_loss(x, y, reduction=red, weight=z), (a, b, w))
        assert gradcheck(lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=0.6), (a, b))
        assert gradcheck(lambda x, y, z: F.huber_loss(x, y, red, 0.6, z), (a, b, w))


# binary cross entropy -------------------------------------------------------------------

def np_bce(p, t, w=None):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log(1 - p), -100))
    return loss if w is None else loss * w


def np_bce_logits(x, t, w=None, pw=None):
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    loss = -((1 if pw is None else pw) * t * log_sig + (1 - t) * log_one_minus)
    return loss if w is None else loss * w


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_forward(reduction):
    p = rand(3, 4, lo=0.02, hi=0.98)
    p[0, :2] = [0.0, 1.0]                     # exact 0 and 1: logs clamp at -100
    t = rand(3, 4, seed=1, lo=0, hi=1)
    t[0, :2] = [1.0, 0.0]
    w = rand(4, seed=2, lo=0.1, hi=2)          # broadcast along rows
    close(F.binary_cross_entropy(T(p), T(t), reduction=reduction),
          reduce_np(np_bce(p, t), reduction))
    close(F.binary_cross_entropy(T(p), T(t), T(w), reduction=reduction),
          reduce_np(np_bce(p, t, w), reduction))
    close(nn.BCELoss(T(w), reduction=reduction)(T(p), T(t)),
          reduce_np(np_bce(p, t, w), reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_forward(reduction):
    x = rand(3, 4, lo=-30, hi=30)             # large logits: the stable form stays finite
    t = rand(3, 4, seed=1, lo=0, hi=1)
    w, pw = rand(3, 1, seed=2, lo=0.1, hi=2), rand(4, seed=3, lo=0.5, hi=3)
    fn = F.binary_cross_entropy_with_logits
    close(fn(T(x), T(t), reduction=reduction), reduce_np(np_bce_logits(x, t), reduction))
    close(fn(T(x), T(t), T(w), reduction=reduction, pos_weight=T(pw)),
          reduce_np(np_bce_logits(x, t, w, pw), reduction))
    module = nn.BCEWithLogitsLoss(T(w), reduction=reduction, pos_weight=T(pw))
    close(module(T(x), T(t)), reduce_np(np_bce_logits(x, t, w, pw), reduction))
    assert sorted(module.state_dict()) == ["pos_weight", "weight"]


def test_bce_gradients():
    p = T(rand(3, 4, lo=0.1, hi=0.9), True)
    t = T(rand(3, 4, seed=1, lo=0, hi=1), True)
    w = T(rand(3, 4, seed=2, lo=0.1, hi=2), True)
    x = T(rand(3, 4, seed=4, lo=-4, hi=4), True)
    pw = T(rand(4, seed=3, lo=0.5, hi=3), True)
    for red in REDUCTIONS:
        assert gradcheck(lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=red),
                         (p, t, w))
        assert gradcheck(lambda a, b, c, d: F.binary_cross_entropy_with_logits(
            a, b, c, reduction=red, pos_weight=d), (x, t, w, pw))


def test_bce_saturated_input_has_finite_gradient():
    p = em.tensor([0.0, 1.0, 0.0, 1.0], dtype=em.float64).requires_grad_()
    t = em.tensor([0.0, 1.0, 1.0, 0.0], dtype=em.float64)
    loss = F.binary_cross_entropy(p, t, reduction="sum")
    assert loss.item() == 200.0
    loss.backward()
    assert np.isfinite(p.grad.numpy()).all()


# KL divergence --------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_forward(reduction, log_target):
    x = np.log(rand(3, 5, lo=0.05, hi=1))
    t = rand(3, 5, seed=1, lo=0, hi=1)
    t[0, 0] = 0.0                               # 0 * log 0 counts 0
    tt = np.log(t + 0.1) if log_target else t
    if log_target:
        loss = np.exp(tt) * (tt - x)
    else:
        loss = np.where(t > 0, t * np.log(np.where(t > 0, t, 1)), 0) - t * x
    want = loss.sum() / 3 if reduction == "batchmean" else reduce_np(loss, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # 'mean' warns that it is not the KL divergence
        close(F.kl_div(T(x), T(tt), reduction=reduction, log_target=log_target), want)
        close(nn.KLDivLoss(reduction=reduction, log_target=log_target)(T(x), T(tt)), want)


def test_kl_div_mean_warns_and_gradients():
    x, t = T(rand(2, 3), True), T(rand(2, 3, seed=1, lo=0.1, hi=1), True)
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(x, t)
    for log_target in (False, True):
        for red in ("none", "sum", "batchmean"):
            assert gradcheck(lambda a, b: F.kl_div(a, b, reduction=red, log_target=log_target),
                             (x, t))


# cross entropy and NLL ------------------------------------------------------------------

def composite_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """nll_loss from gather: -w[t] logp[t], 0 at ignore_index, 'mean' over sum of w[t]."""
    if logp.ndim == 1:
        logp, target = logp.unsqueeze(0), target.unsqueeze(0)
    valid = target != ignore_index
    t = em.where(valid, target, 0)
    picked = logp.gather(1, t.unsqueeze(1)).squeeze(1)
    w = valid.to(logp.dtype) if weight is None else weight[t] * valid
    loss = -w * picked
    if reduction == "none":
        return loss.reshape(target.shape) if loss.ndim else loss
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def composite_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean",
                            label_smoothing=0.0):
    """cross_entropy from log_softmax + gather with PyTorch's label-smoothing formula."""
    cd = 0 if x.ndim == 1 else 1
    C = x.shape[cd]
    logp = em.log_softmax(x, cd)
    wshape = (C,) + (1,) * (x.ndim - cd - 1)
    w = 1.0 if weight is None else weight.reshape(wshape)
    if target.dtype.kind == "float":            # class probabilities
        t = target * (1 - label_smoothing) + label_smoothing / C
        loss = -(logp * t * w).sum(cd)
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / (x.numel() // C)
    nll = composite_nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    valid = target != ignore_index
    smooth = -(logp * w).sum(cd) * valid
    if reduction == "none":
        out = smooth
    elif reduction == "sum":
        out = smooth.sum()
    else:
        t = em.where(valid, target, 0)
        denom = valid.sum() if weight is None else (weight[t] * valid).sum()
        out = smooth.sum() / denom
    return (1 - label_smoothing) * nll + out * (label_smoothing / C)


def np_cross_entropy(x, t, w=None, ignore_index=-100, reduction="mean", ls=0.0):
    """The NumPy reference: classes along axis 1 (axis 0 for a (C,) input)."""
    cd = 0 if x.ndim == 1 else 1
    C = x.shape[cd]
    logp = x - np.log(np.exp(x - x.max(cd, keepdims=True)).sum(cd, keepdims=True)) \
        - x.max(cd, keepdims=True)
    logp = np.moveaxis(logp, cd, -1)            # (..., C)
    w = np.ones(C) if w is None else w
    if t.dtype.kind == "f":
        tt = np.moveaxis(t, cd, -1) * (1 - ls) + ls / C
        loss = -(logp * tt * w).sum(-1)
        return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / loss.size}[reduction]
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    wt = w[tc] * valid
    nll = -wt * np.take_along_axis(logp, tc[..., None], -1)[..., 0]
    smooth = -(logp * w).sum(-1) * valid
    loss = (1 - ls) * nll + ls / C * smooth
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / wt.sum()}[reduction]


CE_CASES = [  # (input shape, target shape)
    ((5,), ()),
    ((4, 5), (4,)),
    ((3, 4, 2, 3), (3, 2, 3)),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,tshape", CE_CASES)
def test_cross_entropy_class_indices(shape, tshape, reduction):
    C = shape[0] if len(shape) == 1 else shape[1]
    x = rand(*shape)
    t = np.random.default_rng(1).integers(0, C, size=tshape)
    if t.ndim:
        t.reshape(-1)[::3] = 7                  # some ignored positions
    w = rand(C, seed=2, lo=0.2, hi=2)
    for weight in (None, w):
        for ls in (0.0, 0.25):
            for ignore in ((-100, 7) if t.ndim else (-100,)):
                tt = t if ignore == 7 else np.where(t == 7, 0, t)
                want = np_cross_entropy(x, tt, weight, ignore, reduction, ls)
                args = (T(x), T(tt), None if weight is None else T(weight))
                kw = dict(ignore_index=ignore, reduction=reduction, label_smoothing=ls)
                close(F.cross_entropy(*args, **kw), want)
                close(composite_cross_entropy(*args, **kw), want)
                close(nn.CrossEntropyLoss(args[2], **kw)(T(x), T(tt)), want)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x = rand(3, 4, 2)
    p = rand(3, 4, 2, seed=1, lo=0, hi=1)
    p /= p.sum(1, keepdims=True)
    w = rand(4, seed=2, lo=0.2, hi=2)
    for weight in (None, w):
        for ls in (0.0, 0.3):
            args = (T(x), T(p), None if weight is None else T(weight))
            want = np_cross_entropy(x, p, weight, reduction=reduction, ls=ls)
            close(F.cross_entropy(*args, reduction=reduction, label_smoothing=ls), want)
            close(composite_cross_entropy(*args, reduction=reduction, label_smoothing=ls),
                  want)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    x = rand(4, 5, 3)
    t = np.random.default_rng(1).integers(0, 5, size=(4, 3))
    t[0, 0] = -100
    w = rand(5, seed=2, lo=0.2, hi=2)
    logp = em.log_softmax(T(x), 1)
    for weight in (None, T(w)):
        want = composite_nll(logp.movedim(1, -1).reshape(-1, 5), T(t).reshape(-1), weight,
                             reduction=reduction)
        if reduction == "none":
            want = want.reshape(4, 3)
        close(F.nll_loss(logp, T(t), weight, reduction=reduction), want.numpy())
        close(nn.NLLLoss(weight, reduction=reduction)(logp, T(t)), want.numpy())
    np_want = np_cross_entropy(x, t, w, reduction=reduction)
    close(F.nll_loss(logp, T(t), T(w), reduction=reduction), np_want)


def test_cross_entropy_all_ignored_mean_is_nan():
    got = F.cross_entropy(T(rand(2, 3)), em.tensor([-100, -100]))
    assert np.isnan(got.item())


def test_cross_entropy_and_nll_gradients_match_the_composite():
    x = T(rand(4, 5), True)
    t = em.tensor([1, -100, 4, 0])
    w = T(rand(5, seed=2, lo=0.2, hi=2))
    p = rand(4, 5, seed=3, lo=0, hi=1)
    p = T(p / p.sum(1, keepdims=True), True)
    for red in REDUCTIONS:
        for ls in (0.0, 0.2):
            for target in (t, p):
                kw = dict(weight=w, reduction=red, label_smoothing=ls)
                assert gradcheck(lambda a: F.cross_entropy(a, target, **kw), (x,))
                if red == "none":
                    continue
                got = em.autograd.grad(F.cross_entropy(x, target, **kw), x)[0]
                want = em.autograd.grad(composite_cross_entropy(x, target, **kw), x)[0]
                close(got, want.numpy())
        assert gradcheck(lambda a: F.nll_loss(a, t, w, reduction=red), (x,))
    assert gradcheck(lambda b: F.cross_entropy(x, b, w), (p,))   # probability targets


# modules --------------------------------------------------------------------------------

def test_module_weight_buffers_and_repr():
    w = em.ones(3)
    ce = nn.CrossEntropyLoss(weight=w, ignore_index=2, label_smoothing=0.1)
    assert ce.weight is w and list(ce.state_dict()) == ["weight"]
    assert ce.ignore_index == 2 and ce.label_smoothing == 0.1
    assert list(nn.NLLLoss().state_dict()) == []
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction='sum')"
    ce.double()
    assert ce.weight.dtype == em.float64


# bad input ------------------------------------------------------------------------------

def test_shape_mismatches_name_both_shapes():
    a = T(rand(3, 4))
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.kl_div):
        with pytest.raises(ValueError, match=rf"{fn.__name__}.*\(3, 5\).*\(3, 4\)"):
            fn(a, T(rand(3, 5)), reduction="sum")
    for fn in (F.binary_cross_entropy, F.binary_cross_entropy_with_logits):
        with pytest.raises(ValueError, match=rf"{fn.__name__}.*\(4, 3\).*\(3, 4\)"):
            fn(T(rand(3, 4, lo=0, hi=1)), T(rand(4, 3, lo=0, hi=1)))
    with pytest.raises(ValueError, match=r"mse_loss: weight shape \(4,\).*\(3, 4\)"):
        F.mse_loss(a, a, weight=T(rand(4)))
    with pytest.raises(ValueError, match=r"cross_entropy.*target shape \(3,\).*\(4, 5\)"):
        F.cross_entropy(T(rand(4, 5)), em.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match=r"nll_loss.*target shape \(4, 2\).*\(4, 5\)"):
        F.nll_loss(T(rand(4, 5)), em.zeros(4, 2, dtype=em.int64))


def test_class_index_out_of_range():
    x = T(rand(3, 4))
    with pytest.raises(IndexError, match="cross_entropy: target 4 is out of bounds for 4 "
                                         "classes"):
        F.cross_entropy(x, em.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="nll_loss: target -1 is out of bounds for 4 classes"):
        nn.NLLLoss()(x, em.tensor([0, -1, 1]))


def test_invalid_reduction_and_options():
    a = T(rand(2, 3, lo=0.1, hi=0.9))
    t = em.tensor([0, 1])
    calls = [lambda r: F.mse_loss(a, a, reduction=r), lambda r: F.l1_loss(a, a, reduction=r),
             lambda r: F.smooth_l1_loss(a, a, reduction=r),
             lambda r: F.huber_loss(a, a, reduction=r),
             lambda r: F.binary_cross_entropy(a, a, reduction=r),
             lambda r: F.binary_cross_entropy_with_logits(a, a, reduction=r),
             lambda r: F.kl_div(a, a, reduction=r),
             lambda r: F.cross_entropy(a, t, reduction=r), lambda r: F.nll_loss(a, t, reduction=r)]
    for call in calls:
        with pytest.raises(ValueError, match="reduction must be .*'sum'.*got 'avg'"):
            call("avg")
    with pytest.raises(ValueError, match="reduction must be .*got 'batchmean'"):
        F.mse_loss(a, a, reduction="batchmean")
    with pytest.raises(ValueError, match="MSELoss: reduction must be .*got 'elementwise'"):
        nn.MSELoss(reduction="elementwise")
    with pytest.raises(ValueError, match="smooth_l1_loss: beta must be non-negative, got -1"):
        F.smooth_l1_loss(a, a, beta=-1)
    with pytest.raises(ValueError, match="huber_loss: delta must be positive, got 0"):
        F.huber_loss(a, a, delta=0)
    with pytest.raises(ValueError, match=r"between 0 and 1, got values in \[-0.5, 1.5\]"):
        F.binary_cross_entropy(em.tensor([-0.5, 0.2, 1.5]), em.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0, got 1.5"):
        F.cross_entropy(a, t, label_smoothing=1.5)
