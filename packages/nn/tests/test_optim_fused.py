"""The optimizers' fused one-pass steps (ember._C.foreach.adam_ / sgd_, taken by
contiguous CPU float32/float64 parameters) against the composed ember ops they replace
(_adam_composed, _sgd_composed and their foreach forms), over several steps and every
option; on OpenCL (the device's fused kernels, one launch per parameter) against the
CPU's fused step; and the fallback for what the fused loop does not take."""
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


def _has_fp64():
    return _opencl() and em._C.core.backend_for(em.device("opencl")).has_fp64(
        em.device("opencl"))


def _state_arrays(opt, ps):
    """Each parameter's optimizer state as float64 NumPy arrays (exact for every
    floating dtype)."""
    return [{k: v.detach().cpu().double().numpy() for k, v in sorted(opt.state[p].items())}
            for p in ps]


def _close_states(got, want, tol, what):
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.keys() == b.keys(), what
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=tol, atol=tol,
                                       err_msg=f"{what}: param {i} {k}")


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=pytest.mark.skipif(
    not _has_fp64(), reason="no float64 on the OpenCL device"))])
@pytest.mark.parametrize("case", ADAM_CASES + [(optim.SGD, c) for c in SGD_CASES])
def test_opencl_fused_step_matches_cpu_fused(case, dtype):
    # the device's multi-tensor kernels (backends/gpu/optim.py): after the first step
    # (which also makes the state), one launch for the 4 parameters, Adam one more
    # advancing their step counts (kept on the device), and no host transfer; the CPU
    # fused loop's parameters and state
    cls, kwargs = case
    kwargs = dict(kwargs, lr=0.1) if cls is optim.SGD else kwargs
    backend = em._C.core.backend_for(em.device("opencl"))
    counts = []
    step = cls.step

    def counted(self, *a, **k):
        backend.reset_counters()
        out = step(self, *a, **k)
        c = backend.counters()
        counts.append((c["launches"], c["host_transfers"], c["check_reads"]))
        return out
    cls.step = counted
    try:
        got, opt, ps = _run(cls, kwargs, dtype, device="opencl")
    finally:
        cls.step = step
    assert counts[1:] == [(1 if cls is optim.SGD else 2, 0, 0)] * (STEPS - 1)
    want, ref, rps = _run(cls, kwargs, dtype)
    what = f"opencl {cls.__name__} {kwargs}"
    _close(got, want, dtype, what)
    _close_states(_state_arrays(opt, ps), _state_arrays(ref, rps),
                  1e-5 if dtype == np.float32 else 1e-12, what)
    if cls is not optim.SGD:
        assert all(s["step"].device.type == "opencl" for s in opt.state.values())


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
def test_opencl_fused_kernels_take_views_at_an_offset():
    """The device kernels read and write each array (step counts included) from its own
    storage offset (views into one buffer); a non-contiguous entry is left for the
    composed ops; more than 16 tensors take a second launch."""
    from ember._C import foreach as _fe
    dev = em.device("opencl")
    backend = em._C.core.backend_for(dev)
    rng = np.random.default_rng(3)
    n = 7
    host = [rng.standard_normal(n + 5).astype(np.float32) for _ in range(4)]
    host[3] = np.abs(host[3])                                    # v >= 0
    views = lambda ts: [t[2:2 + n] for t in ts]                  # noqa: E731
    cpu = views([em.from_numpy(h.copy()) for h in host])
    on_dev = [em.from_numpy(h.copy()).to(dev) for h in host]
    d = views(on_dev)
    args = (0.01, 0.9, 0.95, 1e-8, 0.1, True, False)
    bc = ([1 - 0.9 ** 2], [(1 - 0.95 ** 2) ** 0.5])
    assert _fe.adam_([cpu[0]], [cpu[1]], [cpu[2]], [cpu[3]], [None], *bc, *args) == []
    odd = em.zeros(3, 3, device=dev).t()
    counts = em.tensor([5.0, 1.0, 1.0], device=dev)              # step 1 done, at offset 1
    steps = [counts[1:2].reshape(()), counts[2:3].reshape(())]
    assert backend.adam_([d[0], odd], [d[1], odd], [d[2], odd], [d[3], odd], [None, None],
                         steps, *args) == [1]
    assert counts.cpu().tolist() == [5.0, 2.0, 1.0]
    for c, t, h in zip(cpu, on_dev, host):
        got = t.cpu().numpy()
        np.testing.assert_allclose(got[2:2 + n], c.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[:2], h[:2])            # outside the view: kept
        np.testing.assert_array_equal(got[2 + n:], h[2 + n:])
    buf_c, buf_d = cpu[2], d[2]          # the momentum buffers: the exp_avgs above
    assert _fe.sgd_([cpu[0]], [cpu[1]], [buf_c], [False], 0.1, 0.9, 0.1, 0.01, True,
                    False) == []
    assert backend.sgd_([d[0]], [d[1]], [buf_d], [False], 0.1, 0.9, 0.1, 0.01, True,
                        False) == []
    np.testing.assert_allclose(d[0].cpu().numpy(), cpu[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(buf_d.cpu().numpy(), buf_c.numpy(), rtol=1e-5, atol=1e-6)
    # 20 parameters: two launches, the second's slots from the 17th on
    ps = [em.zeros(k + 1, device=dev) for k in range(20)]
    gs = [em.full((k + 1,), float(k), device=dev) for k in range(20)]
    backend.reset_counters()
    assert backend.sgd_(ps, gs, [None] * 20, [False] * 20, 0.5, 0, 0, 0, False, False) == []
    assert backend.counters()["launches"] == 2
    for k, p in enumerate(ps):
        assert p.cpu().tolist() == [-0.5 * k] * (k + 1)


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
def test_opencl_multi_tensor_work_groups_cover_every_element():
    """optim.h's work-groups: a tensor of more than CHUNK elements in pieces, smaller
    ones together up to CHUNK; every element of every slot updated once (SGD exactly,
    Adam as the CPU's fused loop, the clipping scale exactly)."""
    from ember._C import foreach as _fe
    from ember.backends.gpu.optim import CHUNK, _chunk_rows
    dev = em.device("opencl")
    backend = em._C.core.backend_for(dev)
    h = CHUNK // 2
    sizes = [CHUNK + 1, 1, h, h - 1, CHUNK, 0, 2 * CHUNK + 3, 5, 3]
    assert _chunk_rows(sizes) == [(0, 1, 0, CHUNK), (0, 1, CHUNK, CHUNK + 1), (1, 4, 0, h - 1),
                                  (4, 6, 0, 0), (6, 7, 0, CHUNK), (6, 7, CHUNK, 2 * CHUNK),
                                  (6, 7, 2 * CHUNK, 2 * CHUNK + 3), (7, 9, 0, 3)]
    rng = np.random.default_rng(5)
    host = [[rng.standard_normal(n).astype(np.float32) for n in sizes] for _ in range(4)]
    ps = [em.zeros(n, device=dev) for n in sizes]
    gs = [em.from_numpy(g).to(dev) for g in host[1]]
    assert backend.sgd_(ps, gs, [None] * 9, [False] * 9, 0.5, 0, 0, 0, False, False) == []
    for p, g in zip(ps, host[1]):
        np.testing.assert_array_equal(p.cpu().numpy(), -0.5 * g)
    assert backend.mul_multi_(gs, em.full((1,), 2.0, device=dev)) == []
    for g, h in zip(gs, host[1]):
        np.testing.assert_array_equal(g.cpu().numpy(), 2 * h)
    host[3] = [np.abs(v) for v in host[3]]
    cpu = [[em.from_numpy(a.copy()) for a in arrays] for arrays in host]
    on = [[t.to(dev) for t in ts] for ts in cpu]
    args = (0.01, 0.9, 0.95, 1e-8, 0.1, True, False)
    assert _fe.adam_(*cpu, [None] * 9, [1 - 0.9] * 9, [(1 - 0.95) ** 0.5] * 9, *args) == []
    steps = [em.zeros((), device=dev) for _ in sizes]
    assert backend.adam_(*on, [None] * 9, steps, *args) == []
    for ts, ds in zip(cpu, on):
        for c, d in zip(ts, ds):
            np.testing.assert_allclose(d.cpu().numpy(), c.numpy(), rtol=1e-5, atol=1e-6)
    assert [s.item() for s in steps] == [1.0] * 9


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


SCALED_CASES = [(optim.Adam, {}), (optim.AdamW, {"weight_decay": 0.1}),
                (optim.SGD, {"lr": 0.1}),
                (optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01})]


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
@pytest.mark.parametrize("dtype", [em.float32, em.bfloat16])
@pytest.mark.parametrize("cls,kwargs", SCALED_CASES)
def test_grad_scaler_skips_the_step_on_the_device(cls, kwargs, dtype):
    """GradScaler hands its inf flag to the optimizer (PyTorch's found_inf protocol):
    float32 parameters' kernels read it on the device, so a step and update with an
    injected inf make no host read and change no parameter or state, and the scale
    backs off; bfloat16 parameters (the composed ops) read the flag once. The clean
    steps match the CPU's optimizer given the unscaled gradients."""
    dev = em.device("opencl")
    backend = em._C.core.backend_for(dev)
    rng = np.random.default_rng(7)
    p0 = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(2)]
    ps = [em.tensor(p, device=dev).to(dtype).requires_grad_() for p in p0]
    ref = [em.tensor(p).to(dtype).requires_grad_() for p in p0]
    opt, ref_opt = cls(ps, **kwargs), cls(ref, **kwargs)
    scaler = em.amp.GradScaler("opencl", init_scale=4.0)
    scaler.scale(em.ones((), device=dev))                  # makes the scale

    def scaled_step(gs, bad=False):
        scale = scaler.get_scale()
        for k, (p, g) in enumerate(zip(ps, gs)):
            g = g * scale
            if bad and k == 1:
                g.flat[0] = np.inf
            p.grad = em.tensor(g, device=dev).to(dtype)
        backend.reset_counters()
        scaler.step(opt)
        scaler.update()
        return backend.counters()

    def ref_step(gs):
        for p, g in zip(ref, gs):
            p.grad = em.tensor(g).to(dtype)
        ref_opt.step()

    scaled_step(grads[0])
    ref_step(grads[0])
    before = ([p.detach().cpu().float().numpy() for p in ps], _state_arrays(opt, ps))
    c = scaled_step(grads[1], bad=True)
    reads = 0 if dtype is em.float32 else 1       # the composed ops' one read of the flag
    assert (c["host_transfers"], c["check_reads"]) == (reads, 0)
    assert scaler.get_scale() == 2.0
    for a, b in zip([p.detach().cpu().float().numpy() for p in ps], before[0]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_state_arrays(opt, ps), before[1]):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    scaled_step(grads[1])
    ref_step(grads[1])
    assert scaler.get_scale() == 2.0
    tol = 1e-5 if dtype is em.float32 else 1e-2
    for a, b in zip(ps, ref):
        np.testing.assert_allclose(a.detach().cpu().float().numpy(),
                                   b.detach().float().numpy(), rtol=tol, atol=tol)
    _close_states(_state_arrays(opt, ps), _state_arrays(ref_opt, ref), tol,
                  f"{cls.__name__} {kwargs} {dtype}")
