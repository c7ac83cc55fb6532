"""The optimizers' fused one-pass steps (ember._C.foreach.adam_ / sgd_, taken by
contiguous CPU float32/float64 parameters) against the composed ember ops they replace
(_adam_composed, _sgd_composed and their foreach forms), over several steps and every
option; on OpenCL (where the composed ops run on the device) against the CPU's fused
step; and the fallback for what the fused loop does not take."""
from __future__ import annotations

import numpy as np
import pytest

import ember as em
from ember import optim
from ember.optim import adam as _adam, sgd as _sgd

SHAPES = [(7, 5), (33,), (), (2, 3, 4)]
STEPS = 4


def _opencl():
    try:
        em.zeros(1, device="opencl").cpu()
        return True
    except (RuntimeError, ValueError, NotImplementedError, ImportError):
        return False


def _grads(seed, dtype):
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    gs = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return p0, gs


def _run(cls, kwargs, dtype, device="cpu", composed=None, foreach=None):
    """The parameters after each step; composed: swap the optimizer's update for the
    composed ops (the reference)."""
    p0, gs = _grads(0, dtype)
    ps = [em.from_numpy(p).to(device).requires_grad_() for p in p0]
    opt = cls(ps, foreach=foreach, **kwargs)
    if composed is not None:
        opt._update = opt._update_foreach = composed
    out = []
    for step in gs:
        for p, g in zip(ps, step):
            p.grad = em.from_numpy(g).to(device)
        opt.step()
        out.append([p.detach().cpu().numpy().copy() for p in ps])
    return out, opt, ps


def _adam_ref(group, params, grads, states):
    steps = [_adam._bump_step(s) for s in states]
    for p, g, s, t in zip(params, grads, states, steps):
        _adam._adam_composed(group, p, g, s, t)


def _adam_foreach_ref(group, params, grads, states):
    steps = [_adam._bump_step(s) for s in states]
    _adam._adam_foreach_composed(group, params, grads, states, steps)


def _sgd_ref(group, params, grads, states):
    for p, g, s in zip(params, grads, states):
        _sgd._sgd_composed(group, p, g, s)


def _close(got, want, dtype, what):
    # the same ops in the same order; only fused multiply-adds may round differently
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for k, (a, b) in enumerate(zip(got, want)):
        for i, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol,
                                       err_msg=f"{what}: step {k + 1}, param {i}")


ADAM_CASES = [
    (optim.Adam, {}),
    (optim.Adam, {"weight_decay": 0.1}),
    (optim.Adam, {"weight_decay": 0.1, "maximize": True, "amsgrad": True}),
    (optim.AdamW, {"weight_decay": 0.1, "betas": (0.9, 0.99)}),
    (optim.AdamW, {"amsgrad": True, "maximize": True, "eps": 1e-3}),
    (optim.AdamW, {"weight_decay": 0.0}),
]
SGD_CASES = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3, "weight_decay": 5e-4},
    {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    {"momentum": 0.5, "maximize": True},
    {"weight_decay": 0.1, "maximize": True},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kwargs", ADAM_CASES)
def test_adam_fused_matches_composed(cls, kwargs, dtype):
    for foreach, ref in ((None, _adam_ref), (True, _adam_foreach_ref)):
        got, opt, _ = _run(cls, kwargs, dtype, foreach=foreach)
        want, _, _ = _run(cls, kwargs, dtype, composed=ref)
        _close(got, want, dtype, f"{cls.__name__} {kwargs} foreach={foreach}")
        assert all(float(s["step"]) == STEPS for s in opt.state.values())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_fused_matches_composed(kwargs, dtype):
    for foreach in (None, True):
        got, opt, ps = _run(optim.SGD, dict(lr=0.1, **kwargs), dtype, foreach=foreach)
        want, ref, rps = _run(optim.SGD, dict(lr=0.1, **kwargs), dtype, composed=_sgd_ref)
        _close(got, want, dtype, f"SGD {kwargs} foreach={foreach}")
        if kwargs.get("momentum"):
            for p, rp in zip(ps, rps):
                np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(),
                                           ref.state[rp]["momentum_buffer"].numpy(),
                                           rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
@pytest.mark.parametrize("case", ADAM_CASES[2:4] + [(optim.SGD, c) for c in SGD_CASES[2:4]])
def test_opencl_composed_step_matches_cpu_fused(case):
    cls, kwargs = case
    kwargs = dict(kwargs, lr=0.1) if cls is optim.SGD else kwargs
    got, _, _ = _run(cls, kwargs, np.float32, device="opencl")
    want, _, _ = _run(cls, kwargs, np.float32)
    _close(got, want, np.float32, f"opencl {cls.__name__} {kwargs}")


def test_what_the_fused_loop_does_not_take_runs_composed():
    """A transposed (non-contiguous) parameter and a float16 one take the composed ops;
    the others the fused loop; every one is updated as the composed ops would."""
    rng = np.random.default_rng(1)
    for cls, kwargs in ((optim.AdamW, {"weight_decay": 0.1}),
                        (optim.SGD, {"lr": 0.1, "momentum": 0.9})):
        res = []
        for ref in (None, _adam_ref if cls is optim.AdamW else _sgd_ref):
            rng = np.random.default_rng(1)
            ps = [em.from_numpy(rng.standard_normal((4, 3)).astype(np.float32)).t()
                  .requires_grad_(),
                  em.from_numpy(rng.standard_normal(5).astype(np.float16)).requires_grad_(),
                  em.from_numpy(rng.standard_normal(6).astype(np.float32)).requires_grad_()]
            assert not ps[0].is_contiguous()
            opt = cls(ps, **kwargs)
            if ref is not None:
                opt._update = ref
            for _ in range(3):
                for p in ps:
                    p.grad = em.from_numpy(rng.standard_normal(tuple(p.shape))
                                           .astype(p.detach().numpy().dtype))
                opt.step()
            res.append([p.detach().float().numpy() for p in ps])
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
