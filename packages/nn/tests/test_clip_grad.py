"""ember.nn.utils: clip_grad_norm_ / clip_grad_value_ against NumPy norms, and
parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(4, 3), (7,), (), (2, 0)]


def _params(seed=0, scale=1.0, dtype=em.float64):
    rng = np.random.default_rng(seed)
    ps, grads = [], []
    for s in SHAPES:
        p = em.tensor(rng.standard_normal(s), dtype=dtype).requires_grad_()
        g = rng.standard_normal(s) * scale
        p.grad = em.tensor(g, dtype=dtype)
        ps.append(p)
        grads.append(g)
    return ps, grads


def _np_total(grads, norm_type):
    flat = np.concatenate([g.ravel() for g in grads])
    if norm_type == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm(norm_type, max_norm):
    ps, grads = _params()
    nt = float(norm_type)
    total = clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    expected = _np_total(grads, nt)
    assert isinstance(total, em.Tensor) and total.ndim == 0
    assert total.item() == pytest.approx(expected, rel=1e-12)
    coef = min(1.0, max_norm / (expected + 1e-6))
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)
    if coef < 1:
        assert _np_total([p.grad.numpy() for p in ps], nt) == pytest.approx(max_norm, rel=1e-5)


def test_clip_grad_norm_float32_single_tensor_and_generators():
    p = em.tensor([3.0, 4.0], requires_grad=True)
    p.grad = em.tensor([3.0, 4.0])
    total = clip_grad_norm_(p, 1.0)
    assert total.dtype == em.float32 and total.item() == pytest.approx(5.0)
    assert p.grad.tolist() == pytest.approx([0.6, 0.8], rel=1e-5)
    model = nn.Linear(3, 2)
    for q in model.parameters():
        q.grad = em.ones(*q.shape)
    assert clip_grad_norm_(model.parameters(), 100.0).item() == pytest.approx(math.sqrt(8))
    assert all(q.grad.tolist() == em.ones(*q.shape).tolist() for q in model.parameters())


def test_clip_grad_norm_skips_missing_grads_and_handles_none():
    a, b = em.ones(2, requires_grad=True), em.ones(2, requires_grad=True)
    a.grad = em.tensor([6.0, 8.0])
    assert clip_grad_norm_([a, b], 5.0).item() == pytest.approx(10.0)
    assert b.grad is None and a.grad.tolist() == pytest.approx([3.0, 4.0], rel=1e-5)
    assert clip_grad_norm_([b], 1.0).item() == 0.0


def test_nonfinite_norms():
    p = em.ones(3, requires_grad=True)
    p.grad = em.tensor([1.0, float("nan"), 2.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(p, 1.0)
    assert math.isnan(total.item()) and all(math.isnan(v) for v in p.grad.tolist())
    p.grad = em.tensor([1.0, float("inf"), 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(p, 1.0, norm_type="inf", error_if_nonfinite=True)


def test_get_total_norm_and_clip_with_norm():
    ps, grads = _params(1)
    total = get_total_norm([p.grad for p in ps], 2.0)
    assert total.item() == pytest.approx(_np_total(grads, 2.0), rel=1e-12)
    clip_grads_with_norm_(ps, 1.0, total)
    assert _np_total([p.grad.numpy() for p in ps], 2.0) == pytest.approx(1.0, rel=1e-5)
    assert get_total_norm([]).item() == 0.0


@pytest.mark.parametrize("clip_value", [0.3, 2])
def test_clip_grad_value(clip_value):
    ps, grads = _params(2, scale=2.0)
    clip_grad_value_(ps, clip_value)
    for p, g in zip(ps, grads):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -clip_value, clip_value))


def test_clipping_is_not_recorded():
    p = em.ones(2, requires_grad=True)
    (p * em.tensor([30.0, 40.0])).sum().backward(create_graph=True)
    clip_grad_norm_(p, 5.0)
    clip_grad_value_(p, 3.5)
    assert p.grad.tolist() == pytest.approx([3.0, 3.5], rel=1e-5)


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    params = list(model.parameters())
    vec = parameters_to_vector(params)
    expected = np.concatenate([p.detach().numpy().ravel() for p in params])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    assert vec.ndim == 1 and vec.numel() == 3 * 4 + 4 + 4 * 2 + 2
    new = em.arange(vec.numel(), dtype=em.float32)
    vector_to_parameters(new, params)
    assert [tuple(p.shape) for p in params] == [(4, 3), (4,), (2, 4), (2,)]
    np.testing.assert_array_equal(parameters_to_vector(params).detach().numpy(), new.numpy())
    assert params[1].tolist() == [12.0, 13.0, 14.0, 15.0]
    assert params[0].requires_grad and params[0] is next(iter(model.parameters()))
    new[12] = -1.0                      # the parameters are views of the vector
    assert params[1].tolist()[0] == -1.0
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        vector_to_parameters([1.0], params)
    with pytest.raises(ValueError, match="expected a 1-d vector of 26 elements"):
        vector_to_parameters(em.zeros(25), params)
    with pytest.raises(ValueError, match="got no parameters"):
        parameters_to_vector([])


def _opencl():
    try:
        em.zeros(1, device="opencl").cpu()
        return True
    except Exception:       # noqa: BLE001 (no OpenCL device here)
        return False


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("scale", [0.01, 100.0])
def test_clip_on_a_device_never_reads_the_norm_back(scale, foreach):
    """PyTorch's device clipping: the gradients are scaled by min(1, max_norm / (norm +
    1e-6)) on the device, so the step has no host transfer (once the kernels' slot
    tables are on the device: a training loop's first step uploads them); the same
    values as the CPU."""
    ps, _ = _params(3, scale, em.float32)
    dev = [p.detach().to("opencl").requires_grad_() for p in ps]
    warm = [p.detach().to("opencl").requires_grad_() for p in ps]
    for p, d, w in zip(ps, dev, warm):
        d.grad = p.grad.to("opencl")
        w.grad = p.grad.to("opencl")
    want = clip_grad_norm_(ps, 1.0, foreach=foreach)
    backend = em._C.core.backend_for(em.device("opencl"))
    clip_grad_norm_(warm, 1.0, foreach=foreach)
    backend.reset_counters()
    got = clip_grad_norm_(dev, 1.0, foreach=foreach)
    assert backend.counters()["host_transfers"] == 0
    assert got.device.type == "opencl"
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for p, d in zip(ps, dev):
        np.testing.assert_allclose(d.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(not _opencl(), reason="no OpenCL device")
@pytest.mark.parametrize("dtype", [em.float32, em.float16, em.bfloat16])
def test_device_total_norm_is_one_launch_for_the_gradients(dtype):
    """On a device the 2-norm's per-gradient sums of squares are one multi-tensor launch
    (backends/gpu/optim.py sumsq_, views at an offset), then the total and the scaling;
    the CPU's values (the CPU takes float32 copies of the low-precision gradients)."""
    rng = np.random.default_rng(5)
    flat = rng.standard_normal(40).astype(np.float32) * 3
    big = em.tensor(flat, device="opencl").to(dtype)
    grads = [big[1:13].reshape(3, 4), big[20:21], big[25:40]]
    ps = [em.zeros(tuple(g.shape), dtype=dtype, device="opencl").requires_grad_()
          for g in grads]
    for p, g in zip(ps, grads):
        p.grad = g
    ref = [g.cpu().float() for g in grads]
    want = np.sqrt(sum(float((r.numpy().astype(np.float64) ** 2).sum()) for r in ref))
    backend = em._C.core.backend_for(em.device("opencl"))
    backend.reset_counters()
    got = get_total_norm(grads)
    # the sums of squares, their sum, sqrt (and the cast back from float32)
    assert backend.counters()["launches"] == 1 + 2 + (dtype is not em.float32)
    assert got.dtype is dtype and got.device.type == "opencl"
    tol = 1e-5 if dtype is em.float32 else 1e-2
    np.testing.assert_allclose(got.float().item(), want, rtol=tol)
    clip_grad_norm_(ps, 1.0)
    coef = 1.0 / (got.float().item() + 1e-6)
    for g, r in zip(grads, ref):
        np.testing.assert_allclose(g.float().cpu().numpy(), r.numpy() * coef, rtol=tol,
                                   atol=tol * 1e-2)
    # a non-contiguous gradient: the composed norms, the same total
    t = em.tensor(flat[:12], device="opencl").to(dtype).reshape(3, 4).t()
    np.testing.assert_allclose(get_total_norm([t]).float().item(),
                               float(np.linalg.norm(t.cpu().float().numpy())), rtol=tol)
