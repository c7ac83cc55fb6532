"""The optimizers added for issue 18 (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop,
LBFGS) against their update equations as PyTorch documents them, written out with NumPy;
the foreach=True / fused=True multi-tensor paths of every optimizer against the
single-tensor ones; a few steps worked by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember as em
from ember import optim
from ember.optim.lbfgs import _cubic_interpolate, _strong_wolfe

SHAPES = [(3, 4), (5,), ()]
STEPS = 6
f32 = np.float32


def _t(a):
    return em.tensor(a, dtype=em.float64)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    # a few exact zeros and repeated signs, for Rprop's three cases
    grads[2][0][0, :2] = 0.0
    return params, grads


def _run(cls, kwargs, params0, grads):
    ps = [_t(p).requires_grad_() for p in params0]
    opt = cls(ps, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(ps, step_grads):
            p.grad = _t(g)
        opt.step()
        history.append([p.detach().numpy().copy() for p in ps])
    return history, opt


def _direction(p, g, weight_decay, maximize):
    d = -g if maximize else g.copy()
    return d + weight_decay * p


def ref_adadelta(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False,
                 **_):
    p, v, u, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    for g in grads:
        g = _direction(p, g, weight_decay, maximize)
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append(p)
    return out


def ref_adamax(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
               maximize=False, **_):
    b1, b2 = betas
    p, m, u, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, 1):
        g = _direction(p, g, weight_decay, maximize)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
        out.append(p)
    return out


def ref_nadam(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False, **_):
    b1, b2 = betas
    p, m, v, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    prod = f32(1.0)        # state['mu_product'] is a float32 0-d tensor in PyTorch
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod = f32(prod * f32(mu))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu) / (1 - float(prod)) * g / denom \
            - lr * mu_next / (1 - float(prod) * mu_next) * m / denom
        out.append(p)
    return out


def ref_radam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              decoupled_weight_decay=False, maximize=False, **_):
    b1, b2 = betas
    p, m, v, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                          ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * r * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        else:
            p = p - lr * m_hat
        out.append(p)
    return out


def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0,
             maximize=False, **_):
    p, ax, out = p.copy(), np.zeros_like(p), []
    eta, mu = float(f32(lr)), 1.0       # 0-d float32 tensors in PyTorch
    for t, g in enumerate(grads, 1):
        g = _direction(p, g, weight_decay, maximize)
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = p.copy() if mu == 1 else ax + mu * (p - ax)
        eta = float(f32(lr / (1 + lambd * lr * t) ** alpha))
        mu = float(f32(1 / max(1, t - t0)))
        out.append(p)
    return out


def ref_rprop(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False,
              **_):
    etaminus, etaplus = etas
    lo, hi = step_sizes
    p, prev, step, out = p.copy(), np.zeros_like(p), np.full_like(p, lr), []
    for g in grads:
        g = -g if maximize else g.copy()
        s = np.sign(g * prev)
        step = np.clip(step * np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0)), lo, hi)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * step
        prev = g
        out.append(p)
    return out


CASES = [
    (optim.Adadelta, ref_adadelta, dict()),
    (optim.Adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, eps=1e-3, weight_decay=0.1,
                                        maximize=True)),
    (optim.Adamax, ref_adamax, dict(lr=0.1)),
    (optim.Adamax, ref_adamax, dict(lr=0.1, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1,
                                    maximize=True)),
    (optim.NAdam, ref_nadam, dict(lr=0.1)),
    (optim.NAdam, ref_nadam, dict(lr=0.1, betas=(0.8, 0.95), momentum_decay=0.1,
                                  weight_decay=0.1)),
    (optim.NAdam, ref_nadam, dict(lr=0.1, weight_decay=0.2, decoupled_weight_decay=True,
                                  maximize=True)),
    (optim.RAdam, ref_radam, dict(lr=0.1)),
    # beta2 small enough that rho_t passes 5 within the steps: both branches run
    (optim.RAdam, ref_radam, dict(lr=0.1, betas=(0.9, 0.9), weight_decay=0.1)),
    (optim.RAdam, ref_radam, dict(lr=0.1, betas=(0.5, 0.9), weight_decay=0.2,
                                  decoupled_weight_decay=True, maximize=True)),
    (optim.ASGD, ref_asgd, dict(lr=0.1)),
    (optim.ASGD, ref_asgd, dict(lr=0.1, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1,
                                maximize=True)),
    (optim.Rprop, ref_rprop, dict()),
    (optim.Rprop, ref_rprop, dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.05, 0.2),
                                  maximize=True)),
]


def _case_id(case):
    cls, _, kw = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_equations(case, foreach):
    cls, ref, kwargs = case
    params0, grads = _data()
    history, _ = _run(cls, dict(kwargs, foreach=foreach), params0, grads)
    for i, p0 in enumerate(params0):
        expected = ref(p0, [g[i] for g in grads], **kwargs)
        for step in range(STEPS):
            np.testing.assert_allclose(history[step][i], expected[step], rtol=1e-10,
                                       atol=1e-12, err_msg=f"param {i}, step {step + 1}")


def test_radam_both_branches_ran():
    # with beta2 = 0.9, rho_t (1, 1.95, 2.86, 3.77, 4.6, 5.41) passes 5 at step 6: the
    # cases above run the unrectified and the rectified update
    rho_inf = 2 / (1 - 0.9) - 1
    rhos = [rho_inf - 2 * t * 0.9 ** t / (1 - 0.9 ** t) for t in range(1, STEPS + 1)]
    assert max(rhos[:-1]) <= 5 < rhos[-1]


def test_hand_worked_first_steps():
    # Adamax, step 1: m = 0.1 g, u = |g| + eps, p -= lr / 0.1 * m / u = lr * sign(g)
    p = em.tensor([1.0, -2.0], dtype=em.float64, requires_grad=True)
    opt = optim.Adamax([p], lr=0.5, eps=0.0)
    p.grad = em.tensor([3.0, -4.0], dtype=em.float64)
    opt.step()
    assert p.tolist() == [0.5, -1.5]
    # Adadelta, step 1 (rho 0.9, eps 1e-6, lr 1): v = 0.1 g^2,
    # delta = sqrt(1e-6) / sqrt(0.1 g^2 + 1e-6) * g
    p = em.tensor([0.0], dtype=em.float64, requires_grad=True)
    opt = optim.Adadelta([p])
    p.grad = em.tensor([2.0], dtype=em.float64)
    opt.step()
    assert math.isclose(p.item(), -1e-3 / math.sqrt(0.4 + 1e-6) * 2, rel_tol=1e-12)
    # Rprop: the first step moves each element by lr against the gradient's sign; a sign
    # change halves the step and skips the move; a repeated sign grows it by 1.2
    p = em.tensor([0.0, 0.0, 0.0], dtype=em.float64, requires_grad=True)
    opt = optim.Rprop([p], lr=0.1)
    for g in ([1.0, -1.0, 0.0], [-1.0, -1.0, 1.0]):
        p.grad = em.tensor(g, dtype=em.float64)
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [-0.1, 0.1 + 0.12, -0.1], rtol=1e-12)
    np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), [0.05, 0.12, 0.1])
    # ASGD: eta starts at lr; step 1: p = p (1 - lambd lr) - lr g, ax = p
    p = em.tensor([1.0], dtype=em.float64, requires_grad=True)
    opt = optim.ASGD([p], lr=0.5, lambd=0.1)
    p.grad = em.tensor([1.0], dtype=em.float64)
    opt.step()
    assert p.item() == 1.0 * (1 - 0.05) - 0.5
    assert opt.state[p]["ax"].item() == p.item()
    assert math.isclose(opt.state[p]["eta"].item(), 0.5 / (1 + 0.05) ** 0.75, rel_tol=1e-6)


def test_defaults_match_pytorch():
    p = [em.ones(1, requires_grad=True)]
    d = optim.Adadelta(p).defaults
    assert (d["lr"], d["rho"], d["eps"], d["weight_decay"]) == (1.0, 0.9, 1e-6, 0)
    d = optim.Adamax(p).defaults
    assert (d["lr"], d["betas"], d["eps"]) == (2e-3, (0.9, 0.999), 1e-8)
    d = optim.NAdam(p).defaults
    assert (d["lr"], d["momentum_decay"], d["decoupled_weight_decay"]) == (2e-3, 4e-3, False)
    d = optim.RAdam(p).defaults
    assert (d["lr"], d["betas"], d["decoupled_weight_decay"]) == (1e-3, (0.9, 0.999), False)
    d = optim.ASGD(p).defaults
    assert (d["lr"], d["lambd"], d["alpha"], d["t0"]) == (1e-2, 1e-4, 0.75, 1e6)
    d = optim.Rprop(p).defaults
    assert (d["lr"], d["etas"], d["step_sizes"]) == (1e-2, (0.5, 1.2), (1e-6, 50))
    d = optim.LBFGS(p).defaults
    assert (d["lr"], d["max_iter"], d["max_eval"], d["tolerance_grad"],
            d["tolerance_change"], d["history_size"], d["line_search_fn"]) == \
        (1, 20, 25, 1e-7, 1e-9, 100, None)


def test_state_formats():
    p = em.ones(2, requires_grad=True)
    expect = {optim.Adadelta: {"step", "square_avg", "acc_delta"},
              optim.Adamax: {"step", "exp_avg", "exp_inf"},
              optim.NAdam: {"step", "mu_product", "exp_avg", "exp_avg_sq"},
              optim.RAdam: {"step", "exp_avg", "exp_avg_sq"},
              optim.ASGD: {"step", "eta", "mu", "ax"},
              optim.Rprop: {"step", "prev", "step_size"}}
    for cls, keys in expect.items():
        opt = cls([p])
        p.grad = em.ones(2)
        opt.step()
        sd = opt.state_dict()
        assert set(sd["state"][0]) == keys, cls
        again = cls([p])
        again.load_state_dict(sd)
        p.grad = em.ones(2)
        again.step()
        assert again.state[p]["step"].item() == 2


@pytest.mark.parametrize("cls,kwargs", [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (optim.Adam, dict(lr=0.1, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.1, amsgrad=True, maximize=True)),
    (optim.AdamW, dict(lr=0.1, amsgrad=True)),
    (optim.RMSprop, dict(lr=0.01, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.9, maximize=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1)),
])
@pytest.mark.parametrize("flag", ["foreach", "fused"])
def test_multi_tensor_paths_match_single_tensor(cls, kwargs, flag):
    if flag == "fused" and cls is optim.RMSprop:
        pytest.skip("RMSprop has no fused option in PyTorch")
    params0, grads = _data(3)
    single, _ = _run(cls, kwargs, params0, grads)
    multi, _ = _run(cls, dict(kwargs, **{flag: True}), params0, grads)
    for a, b in zip(single, multi):
        for x, y in zip(a, b):
            np.testing.assert_allclose(y, x, rtol=1e-13, atol=1e-15)


def test_foreach_and_fused_together_raise():
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        optim.Adam([em.ones(1, requires_grad=True)], foreach=True, fused=True)


def test_bad_options():
    p = [em.ones(1, requires_grad=True)]
    with pytest.raises(ValueError, match="rho"):
        optim.Adadelta(p, rho=1.5)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        optim.NAdam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="momentum_decay"):
        optim.NAdam(p, momentum_decay=-1)
    with pytest.raises(ValueError, match="eta values"):
        optim.Rprop(p, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS(p, line_search_fn="armijo")
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [em.ones(1, requires_grad=True)]},
                     {"params": [em.ones(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="closure"):
        optim.LBFGS(p).step(None)
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.RAdam(p, differentiable=True)


# L-BFGS -------------------------------------------------------------------------------

def _quadratic(n=4, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    a = m @ m.T + n * np.eye(n)
    b = rng.standard_normal(n)
    return a, b


def ref_lbfgs(x, a, b, lr, max_iter, history_size):
    """L-BFGS without line search on f(x) = x.Ax/2 - b.x, as PyTorch's docs and source
    describe it (two-loop recursion; first step min(1, 1/|g|_1) lr)."""
    def grad(x):
        return a @ x - b
    g = grad(x)
    dirs, stps, ro = [], [], []
    d = t = prev_g = None
    h = 1.0
    xs = []
    for k in range(max_iter):
        if k == 0:
            d = -g
        else:
            y, s = g - prev_g, d * t
            ys = y @ s
            if ys > 1e-10:
                if len(dirs) == history_size:
                    dirs.pop(0), stps.pop(0), ro.pop(0)
                dirs.append(y), stps.append(s), ro.append(1 / ys)
                h = ys / (y @ y)
            q, al = -g, [0.0] * len(dirs)
            for i in reversed(range(len(dirs))):
                al[i] = stps[i] @ q * ro[i]
                q = q - al[i] * dirs[i]
            r = q * h
            for i in range(len(dirs)):
                r = r + stps[i] * (al[i] - dirs[i] @ r * ro[i])
            d = r
        prev_g = g
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 0 else lr
        x = x + t * d
        g = grad(x)
        xs.append(x)
    return xs


def _lbfgs_problem(x0, a, b, **kwargs):
    x = _t(x0).requires_grad_()
    A, B = _t(a), _t(b)
    opt = optim.LBFGS([x], **kwargs)
    calls = []

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (A @ x)) - B @ x
        loss.backward()
        calls.append(loss.item())
        return loss
    return x, opt, closure, calls


@pytest.mark.parametrize("history_size", [2, 100])
def test_lbfgs_matches_two_loop_recursion(history_size):
    a, b = _quadratic()
    x0 = np.ones(4)
    expected = ref_lbfgs(x0, a, b, lr=0.5, max_iter=6, history_size=history_size)
    # one iteration per step(), so each step's result can be compared
    x, opt, closure, _ = _lbfgs_problem(x0, a, b, lr=0.5, max_iter=1,
                                        history_size=history_size,
                                        tolerance_grad=0, tolerance_change=0)
    for k in range(6):
        opt.step(closure)
        np.testing.assert_allclose(x.detach().numpy(), expected[k], rtol=1e-10,
                                   err_msg=f"iteration {k + 1}")


def test_lbfgs_first_step_by_hand():
    # f = (x - 3)^2 at x = 0: g = -6, t = min(1, 1/6) * lr = lr / 6, x = t * 6 = lr
    x = _t([0.0]).requires_grad_()
    opt = optim.LBFGS([x], lr=0.25, max_iter=1)

    def closure():
        opt.zero_grad()
        loss = ((x - 3) ** 2).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert loss.item() == 9.0
    assert math.isclose(x.item(), 0.25, rel_tol=1e-15)


def test_lbfgs_solves_a_quadratic_and_counts_evaluations():
    a, b = _quadratic(6, 1)
    x, opt, closure, calls = _lbfgs_problem(np.zeros(6), a, b, max_iter=50,
                                           tolerance_grad=1e-12, tolerance_change=1e-15)
    opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(a, b), rtol=1e-6)
    state = opt.state[x]
    assert state["func_evals"] == len(calls) and state["n_iter"] >= 2
    assert len(calls) <= opt.param_groups[0]["max_eval"]


def test_lbfgs_strong_wolfe_rosenbrock():
    x = _t([-1.5, 2.0]).requires_grad_()
    opt = optim.LBFGS([x], lr=1, max_iter=200, line_search_fn="strong_wolfe",
                      tolerance_grad=1e-12, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss
    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-6)


def test_lbfgs_state_dict_round_trip():
    a, b = _quadratic()
    x, opt, closure, _ = _lbfgs_problem(np.ones(4), a, b, max_iter=2)
    opt.step(closure)
    sd = opt.state_dict()
    assert {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
            "prev_flat_grad", "prev_loss"} <= set(sd["state"][0])
    y, opt2, closure2, _ = _lbfgs_problem(x.detach().numpy(), a, b, max_iter=2)
    opt2.load_state_dict(sd)
    opt.step(closure)
    opt2.step(closure2)
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy(), rtol=1e-12)


def test_strong_wolfe_conditions_hold():
    # phi(t) = f(x + t d) for f(x) = x^4 - 3x^2 + x at x = 2, d = -f'(2)
    def f(x):
        return x ** 4 - 3 * x ** 2 + x

    def df(x):
        return 4 * x ** 3 - 6 * x + 1
    x0 = 2.0
    d = _t([-df(x0)])

    def obj(x, t, d_):
        xn = x0 + t * d_.item()
        return f(xn), _t([df(xn)])
    g0 = _t([df(x0)])
    gtd = (g0 @ d).item()
    for t0 in (1.0, 1e-3, 0.5):
        f_new, g_new, t, evals = _strong_wolfe(obj, None, t0, d, f(x0), g0, gtd)
        assert f_new <= f(x0) + 1e-4 * t * gtd
        assert abs((g_new @ d).item()) <= -0.9 * gtd
        assert f_new == f(x0 + t * d.item()) and evals >= 1


def test_cubic_interpolate():
    # the cubic through a quadratic's values and slopes is that quadratic: its minimum
    def f(x):
        return (x - 0.3) ** 2

    def df(x):
        return 2 * (x - 0.3)
    assert math.isclose(_cubic_interpolate(0.0, f(0), df(0), 1.0, f(1), df(1)), 0.3)
    assert math.isclose(_cubic_interpolate(1.0, f(1), df(1), 0.0, f(0), df(0)), 0.3)
    # clamped to the bounds
    assert _cubic_interpolate(0.0, f(0), df(0), 1.0, f(1), df(1), bounds=(0.5, 2)) == 0.5
