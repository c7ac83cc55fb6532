"""ember.optim: each optimizer against its update equations written out with NumPy, over
several steps and option combinations; param groups, state_dict round trips, bad input."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

import ember as em
from ember import nn, optim

SHAPES = [(3, 4), (5,), ()]
STEPS = 5


def _t(a):
    # explicit dtype: em.tensor(0-d ndarray) gives the default float dtype
    return em.tensor(a, dtype=em.float64)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


def _run(cls, kwargs, params0, grads, group_lrs=None):
    """Run cls over float64 copies of params0 with the given gradients; returns the
    parameters after each step (NumPy) and the optimizer."""
    ps = [_t(p).requires_grad_() for p in params0]
    if group_lrs is None:
        opt = cls(ps, **kwargs)
    else:   # group i holds parameter i with its own lr
        opt = cls([{"params": [p], "lr": lr} for p, lr in zip(ps, group_lrs)], **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(ps, step_grads):
            p.grad = _t(g)
        opt.step()
        history.append([p.detach().numpy().copy() for p in ps])
    return history, opt, ps


# NumPy references: one parameter, all steps, written from the algorithms' equations.

def ref_sgd(p, grads, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    p, buf, out = p.copy(), None, []
    for g in grads:
        d = -g if maximize else g.copy()
        d = d + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
        out.append(p)
    return out


def ref_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    p, m, v, vmax, out = p.copy(), 0.0, 0.0, 0.0, []
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vhat = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vhat) + eps)
        out.append(p)
    return out


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False, maximize=False):
    p, v, a, buf, out = p.copy(), 0.0, 0.0, 0.0, []
    for g in grads:
        g = (-g if maximize else g) + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            a = alpha * a + (1 - alpha) * g
            denom = np.sqrt(v - a * a) + eps
        else:
            denom = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / denom
            p = p - lr * buf
        else:
            p = p - lr * g / denom
        out.append(p)
    return out


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                eps=1e-10, maximize=False):
    p, s, out = p.copy(), initial_accumulator_value, []
    for t, g in enumerate(grads, 1):
        g = (-g if maximize else g) + weight_decay * p
        s = s + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
        out.append(p)
    return out


CASES = [
    (optim.SGD, ref_sgd, dict(lr=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, weight_decay=0.05)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, maximize=True, weight_decay=0.2)),
    (optim.SGD, ref_sgd, dict(lr=0.1, maximize=True)),
    (optim.Adam, ref_adam, dict(lr=0.1)),
    (optim.Adam, ref_adam, dict(lr=0.1, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1)),
    (optim.Adam, ref_adam, dict(lr=0.1, amsgrad=True)),
    (optim.Adam, ref_adam, dict(lr=0.1, amsgrad=True, maximize=True, weight_decay=0.1)),
    (optim.AdamW, lambda p, g, **k: ref_adam(p, g, decoupled=True, **k),
     dict(lr=0.1, weight_decay=0.01)),
    (optim.AdamW, lambda p, g, **k: ref_adam(p, g, decoupled=True, **k),
     dict(lr=0.1, weight_decay=0.3, amsgrad=True, maximize=True, betas=(0.5, 0.7))),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, centered=True)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, centered=True, momentum=0.9, maximize=True,
                                      eps=1e-2)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.2, weight_decay=0.1,
                                      initial_accumulator_value=0.5, maximize=True)),
]


def _case_id(case):
    cls, _, kw = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_equations(case):
    cls, ref, kwargs = case
    params0, grads = _data()
    history, _, _ = _run(cls, kwargs, params0, grads)
    for i, p0 in enumerate(params0):
        expected = ref(p0, [g[i] for g in grads], **kwargs)
        for step in range(STEPS):
            np.testing.assert_allclose(history[step][i], expected[step], rtol=1e-12, atol=1e-14,
                                       err_msg=f"param {i}, step {step + 1}")


@pytest.mark.parametrize("case", CASES[::3], ids=[_case_id(c) for c in CASES[::3]])
def test_param_groups_with_their_own_lrs(case):
    cls, ref, kwargs = case
    params0, grads = _data(1)
    lrs = [0.05, 0.2, 0.01]
    history, opt, _ = _run(cls, kwargs, params0, grads, group_lrs=lrs)
    assert [g["lr"] for g in opt.param_groups] == lrs
    for i, (p0, lr) in enumerate(zip(params0, lrs)):
        expected = ref(p0, [g[i] for g in grads], **{**kwargs, "lr": lr})
        np.testing.assert_allclose(history[-1][i], expected[-1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop,
                                 optim.Adagrad])
def test_float32_updates_in_place(cls):
    p = nn.Parameter(em.randn(4, 3))
    ident, ptr = id(p), p.data_ptr()
    opt = cls([p], lr=0.1)
    for _ in range(3):
        p.grad = em.randn(4, 3)
        before = p.detach().clone()
        opt.step()
        assert p.dtype == em.float32 and p.is_leaf and p.requires_grad
        assert not bool((p.detach() == before).all())
    assert id(opt.param_groups[0]["params"][0]) == ident and p.data_ptr() == ptr
    for v in opt.state[p].values():
        assert v.dtype == (em.float32 if v.ndim else v.dtype)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.RMSprop, optim.Adagrad])
def test_training_lowers_the_loss(cls):
    em.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    x = em.randn(32, 3)
    y = (x * em.tensor([1.0, -2.0, 0.5])).sum(1, keepdim=True)
    kwargs = {"lr": 0.05, "momentum": 0.9} if cls is optim.SGD else {"lr": 0.02}
    opt = cls(model.parameters(), **kwargs)

    def closure():
        opt.zero_grad()
        d = model(x) - y
        loss = (d * d).mean()
        loss.backward()
        return loss

    first = closure().item()
    for _ in range(60):
        loss = opt.step(closure)
    assert loss.item() < 0.5 * first


def test_parameters_without_grad_are_skipped():
    a, b = em.ones(2, requires_grad=True), em.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = em.ones(2)
    opt.step()
    assert b not in opt.state and a in opt.state
    assert b.tolist() == [1.0, 1.0] and a.tolist() != [1.0, 1.0]



def test_issue17_item7_shared_step_keeps_each_optimizers_state_format():
    # one step loop serves every optimizer: state appears only where the algorithm keeps
    # some (not for plain SGD, as in PyTorch), with each optimizer's keys in its order
    a, b = em.ones(2, requires_grad=True), em.ones(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "momentum": 0.9}], lr=0.1)
    a.grad, b.grad = em.ones(2), em.ones(2)
    opt.step()
    assert list(opt.state_dict()["state"]) == [1]
    assert list(opt.state[b]) == ["momentum_buffer"]
    keys = {optim.Adam: ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"],
            optim.RMSprop: ["step", "square_avg", "momentum_buffer", "grad_avg"],
            optim.Adagrad: ["step", "sum"]}
    options = {optim.Adam: dict(amsgrad=True), optim.RMSprop: dict(momentum=0.5, centered=True),
               optim.Adagrad: {}}
    for cls, names in keys.items():
        p = em.ones(2, requires_grad=True)
        opt = cls([p], lr=0.1, **options[cls])
        p.grad = em.ones(2)
        opt.step()
        assert list(opt.state_dict()["state"][0]) == names, cls.__name__
        assert opt.state[p]["step"].item() == 1.0

def test_closure_runs_with_grad_enabled_and_its_loss_is_returned():
    p = em.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    seen = []

    def closure():
        seen.append(em.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with em.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 3.0
    assert p.tolist() == [0.0, 0.0, 0.0]      # p - 0.5 * 2p
    assert optim.SGD([p]).step() is None


def test_zero_grad():
    p = em.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = em.ones(3)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()     # no gradient: nothing to do


def test_add_param_group_fills_defaults():
    a, b = em.ones(2, requires_grad=True), em.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    g = opt.param_groups[1]
    assert g["params"] == [b] and g["lr"] == 0.01 and g["momentum"] == 0.9
    assert g["nesterov"] is False and g["weight_decay"] == 0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])


def test_required_default():
    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

    p = em.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Custom([p])
    assert Custom([{"params": [p], "lr": 0.1}]).param_groups[0]["lr"] == 0.1
    with pytest.raises(NotImplementedError, match="Custom.step"):
        Custom([p], lr=1.0).step()


def test_repr():
    p = em.ones(1, requires_grad=True)
    text = repr(optim.SGD([p], lr=0.1, momentum=0.9))
    assert text.startswith("SGD (\nParameter Group 0\n") and text.endswith("\n)")
    assert "    lr: 0.1\n" in text and "    momentum: 0.9\n" in text and "params" not in text


# state dicts ---------------------------------------------------------------------------------

STATEFUL = [
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (optim.Adam, dict(lr=0.1, amsgrad=True)),
    (optim.AdamW, dict(lr=0.1, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1)),
]


def test_state_dict_format():
    a, b, c = (em.ones(2, requires_grad=True) for _ in range(3))
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    for p in (a, c):
        p.grad = em.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 2]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert sd["state"][0]["step"].item() == 1.0 and sd["state"][0]["step"].ndim == 0
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert opt.param_groups[0]["params"] == [a, b]    # the optimizer's own groups untouched


@pytest.mark.parametrize("cls,kwargs", STATEFUL, ids=[c.__name__ for c, _ in STATEFUL])
@pytest.mark.parametrize("via_file", [False, True])
def test_state_dict_round_trip_continues_identically(cls, kwargs, via_file):
    params0, grads = _data(2)
    grads = grads + _data(3)[1]
    ps1 = [_t(p).requires_grad_() for p in params0]
    opt1 = cls([{"params": ps1[:2]}, {"params": ps1[2:], "lr": 0.03}], **kwargs)
    for step_grads in grads[:STEPS]:
        for p, g in zip(ps1, step_grads):
            p.grad = _t(g)
        opt1.step()
    sd = opt1.state_dict()
    if via_file:
        buf = io.BytesIO()
        em.save(sd, buf)
        buf.seek(0)
        sd = em.load(buf)
    ps2 = [p.detach().clone().requires_grad_() for p in ps1]
    opt2 = cls([{"params": ps2[:2]}, {"params": ps2[2:], "lr": 0.9}], **kwargs)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.03 and opt2.param_groups[1]["params"] == ps2[2:]
    for step_grads in grads[STEPS:]:
        for ps in (ps1, ps2):
            for p, g in zip(ps, step_grads):
                p.grad = _t(g)
        opt1.step()
        opt2.step()
    for p1, p2 in zip(ps1, ps2):
        assert p1.tolist() == p2.tolist()


def test_load_state_dict_copies_and_casts():
    a = em.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = em.ones(3)
    opt.step()
    sd = opt.state_dict()
    b = em.ones(3, dtype=em.float64, requires_grad=True)
    opt2 = optim.SGD([b], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    buf = opt2.state[b]["momentum_buffer"]
    assert buf.dtype == em.float64 and buf.tolist() == [1.0, 1.0, 1.0]
    b.grad = em.ones(3, dtype=em.float64)
    opt2.step()
    assert opt.state[a]["momentum_buffer"].tolist() == [1.0, 1.0, 1.0]   # not shared


def test_load_state_dict_accepts_numeric_step_and_missing_options():
    p = em.ones(2, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    old = {"state": {0: {"step": 4, "exp_avg": em.zeros(2), "exp_avg_sq": em.zeros(2)}},
           "param_groups": [{"lr": 0.2, "betas": (0.9, 0.999), "eps": 1e-8,
                             "weight_decay": 0, "amsgrad": False, "params": [0]}]}
    opt.load_state_dict(old)
    step = opt.state[p]["step"]
    assert isinstance(step, em.Tensor) and step.item() == 4.0
    assert opt.param_groups[0]["maximize"] is False and opt.param_groups[0]["lr"] == 0.2
    p.grad = em.ones(2)
    opt.step()
    assert opt.state[p]["step"].item() == 5.0


def test_load_state_dict_mismatches():
    a, b = em.ones(2, requires_grad=True), em.ones(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="expected a dict with 'state' and 'param_groups'"):
        optim.SGD([a], lr=0.1).load_state_dict({"state": {}})


def test_adagrad_state_exists_before_the_first_step():
    p = em.ones(2, requires_grad=True)
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    assert opt.state[p]["sum"].tolist() == [0.25, 0.25] and opt.state[p]["step"].item() == 0
    q = em.ones(1, requires_grad=True)
    opt.add_param_group({"params": [q]})
    q.grad = em.ones(1)
    opt.step()
    assert opt.state[q]["sum"].tolist() == [1.25]


# bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,kwargs,match", [
    (optim.SGD, dict(lr=-1), "Invalid learning rate: -1"),
    (optim.SGD, dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    (optim.SGD, dict(weight_decay=-1e-4), "Invalid weight_decay value: -0.0001"),
    (optim.SGD, dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (optim.SGD, dict(nesterov=True, momentum=0.9, dampening=0.1), "Nesterov momentum requires"),
    (optim.Adam, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.Adam, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.AdamW, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.RMSprop, dict(alpha=-0.9), "Invalid alpha value: -0.9"),
    (optim.RMSprop, dict(momentum=-1), "Invalid momentum value: -1"),
    (optim.RMSprop, dict(eps=-1), "Invalid epsilon value: -1"),
    (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
])
def test_invalid_options(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls([em.ones(1, requires_grad=True)], **kwargs)


def test_invalid_params():
    p = em.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(p)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2])
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is "
                                        "int"):
        optim.SGD([p, 3])
    with pytest.raises(TypeError, match="ordering of tensors in sets will change"):
        optim.SGD([{"params": {p}}])
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p])
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.Adam([p], differentiable=True)


def test_default_hyperparameters_match_pytorch():
    p = [em.ones(1, requires_grad=True)]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    d = optim.Adam(p).defaults
    assert (d["lr"], d["betas"], d["eps"], d["weight_decay"]) == (1e-3, (0.9, 0.999), 1e-8, 0)
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    d = optim.RMSprop(p).defaults
    assert (d["lr"], d["alpha"], d["eps"]) == (1e-2, 0.99, 1e-8)
    d = optim.Adagrad(p).defaults
    assert (d["lr"], d["eps"], d["initial_accumulator_value"]) == (1e-2, 1e-10, 0)
    assert math.isclose(optim.Adam(p).defaults["betas"][1], 0.999)
