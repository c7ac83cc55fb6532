"""ember.autocast and ember.amp.GradScaler (tensor-core's ops): which dtype each listed
op returns inside and outside a region (PyTorch's CPU and CUDA lists; OpenCL uses the
CUDA list), gradients' dtypes, the weight cache, nesting, the state functions, the
fused unscale kernel and the scale update."""
import math
import threading

import numpy as np
import pytest

import ember as em
from ember.amp import _policy

BF16 = getattr(em, "bfloat16", None)
needs_bf16 = pytest.mark.skipif(BF16 is None, reason="em.bfloat16 has not landed in this "
                                                     "build (issue 21's bf16 part)")
LOW = [em.float16, pytest.param(BF16, marks=needs_bf16, id="bfloat16")]


def gpu_like(device):
    return device.type != "cpu"


def region(device, dtype=em.float16, **kw):
    return em.autocast(device.type, dtype=dtype, **kw)


def _ops(device):
    x = em.randn(4, 8, device=device)
    w = em.randn(8, 8, device=device)
    h = em.randn(4, 8, device=device).half()
    b3 = em.randn(2, 4, 8, device=device)
    v = em.randn(8, device=device)
    img = em.randn(1, 3, 6, 6, device=device)
    cw = em.randn(2, 3, 3, 3, device=device)
    return x, w, h, b3, v, img, cw


# (name, call, dtype on the CPU, dtype on cuda/opencl) inside a float16 region; the
# expected dtypes are PyTorch 2.x's (CPU and CUDA autocast lists)
F16, F32 = "float16", "float32"
CASES = [
    ("matmul", lambda x, w, h, b3, v, img, cw: x @ w, F16, F16),
    ("mm", lambda x, w, h, b3, v, img, cw: em.mm(x, w), F16, F16),
    ("bmm", lambda x, w, h, b3, v, img, cw: em.bmm(b3, w.expand(2, 8, 8)), F16, F16),
    ("baddbmm", lambda x, w, h, b3, v, img, cw: em.baddbmm(b3, b3, w.expand(2, 8, 8)), F16, F16),
    ("addmm", lambda x, w, h, b3, v, img, cw: em.addmm(x, x, w), F16, F16),
    ("addbmm", lambda x, w, h, b3, v, img, cw: em.addbmm(x, b3, w.expand(2, 8, 8)), F16, F16),
    ("conv2d", lambda x, w, h, b3, v, img, cw: em.conv2d(img, cw), F16, F16),
    ("mv", lambda x, w, h, b3, v, img, cw: em.mv(x, v), F32, F16),
    ("sum", lambda x, w, h, b3, v, img, cw: h.sum(), F16, F32),
    ("prod", lambda x, w, h, b3, v, img, cw: h.prod(), F32, F32),
    ("cumsum", lambda x, w, h, b3, v, img, cw: h.cumsum(0), F16, F32),
    ("softmax", lambda x, w, h, b3, v, img, cw: em.softmax(h, -1), F16, F32),
    ("log_softmax", lambda x, w, h, b3, v, img, cw: em.log_softmax(h, -1), F16, F32),
    ("layer_norm", lambda x, w, h, b3, v, img, cw: em.layer_norm(h, (8,)), F16, F32),
    ("exp", lambda x, w, h, b3, v, img, cw: h.exp(), F16, F32),
    ("log", lambda x, w, h, b3, v, img, cw: h.abs().log(), F16, F32),
    ("pow", lambda x, w, h, b3, v, img, cw: h ** 2, F16, F32),
    ("rsqrt", lambda x, w, h, b3, v, img, cw: h.abs().rsqrt(), F16, F32),
    ("tanh", lambda x, w, h, b3, v, img, cw: h.tanh(), F16, F16),       # on no list
    ("mean", lambda x, w, h, b3, v, img, cw: h.mean(), F16, F16),       # on no list
    ("cdist", lambda x, w, h, b3, v, img, cw: em.cdist(h, h), F32, F32),
    ("cross_entropy", lambda x, w, h, b3, v, img, cw:
        em.cross_entropy(h, em.zeros(4, dtype=em.int64, device=h.device)), F32, F32),
    ("cat", lambda x, w, h, b3, v, img, cw: em.cat([h, x]), F32, F32),
    ("stack", lambda x, w, h, b3, v, img, cw: em.stack([h, h]), F16, F16),
    ("addcmul", lambda x, w, h, b3, v, img, cw: em.addcmul(x, h, h), F32, F32),
    ("add", lambda x, w, h, b3, v, img, cw: h + x, F32, F32),
    ("atan2", lambda x, w, h, b3, v, img, cw: em.atan2(h, x), F32, F32),
]


@pytest.mark.parametrize("name,call,cpu,dev", CASES, ids=[c[0] for c in CASES])
def test_op_classes(device, name, call, cpu, dev):
    args = _ops(device)
    outside = call(*args).dtype
    with region(device):
        inside = call(*args)
    assert inside.dtype is getattr(em, dev if gpu_like(device) else cpu), name
    assert inside.device.type == device.type
    assert call(*args).dtype is outside      # the region left nothing behind
    # the values are the float32 op's, to the low dtype's precision
    ref = call(*(a.float() for a in args)).cpu().numpy()
    np.testing.assert_allclose(inside.float().cpu().numpy(), ref, rtol=2e-2, atol=2e-2 * (
        1 + np.abs(ref).max()))


def test_other_device_type_untouched(device):
    x, w = em.randn(3, 4, device=device), em.randn(4, 4, device=device)
    other = "cuda" if device.type == "cpu" else "cpu"
    with em.autocast(other, dtype=em.float16):
        assert (x @ w).dtype is em.float32
    with em.autocast(device.type, dtype=em.float16):
        assert (x @ w).dtype is em.float16


def test_float64_and_int_untouched(device):
    d = em.randn(3, 3, dtype=em.float64, device=device)
    i = em.ones(3, 3, dtype=em.int64, device=device)
    with region(device):
        assert (d @ d).dtype is em.float64
        assert (i @ i).dtype is em.int64
        assert em.prod(i).dtype is em.int64


@pytest.mark.parametrize("low", LOW)
def test_gradients_arrive_in_param_dtype(device, low):
    w = em.randn(8, 5, device=device, requires_grad=True)
    b = em.randn(5, device=device, requires_grad=True)
    x = em.randn(4, 8, device=device)
    with em.autocast(device.type, dtype=low):
        y = em.addmm(b, x, w)
        assert y.dtype is low
        loss = em.prod(y.float().sum(1) * 0 + 1) * y.float().sum()
    loss.backward()
    assert w.grad.dtype is em.float32 and b.grad.dtype is em.float32
    # the gradient is the float32 one to the low dtype's precision
    ref = x.t() @ em.ones(4, 5, device=device)
    np.testing.assert_allclose(w.grad.cpu().numpy(), ref.cpu().numpy(), rtol=1e-2, atol=1e-2)


def test_weight_cache(device):
    w = em.randn(8, 8, device=device, requires_grad=True)
    x = em.randn(2, 8, device=device)
    with region(device):
        a = em.mm(x, w)
        b = em.mm(x, w)
        from ember.amp import autocast_mode as m
        assert len(m._state.cache) == 1
        (cw,) = [c for _, c in m._state.cache.values()]
        assert cw.dtype is em.float16
        with region(device):               # nested: same cache
            em.mm(x, w)
            assert len(m._state.cache) == 1
        assert len(m._state.cache) == 1    # inner exit keeps it (nesting > 0)
        (a.float().sum() + b.float().sum()).backward()
    assert len(m._state.cache) == 0        # outermost exit empties it
    np.testing.assert_allclose(w.grad.cpu().numpy(),
                               2 * (x.t() @ em.ones(2, 8, device=device)).cpu().numpy(),
                               rtol=1e-2, atol=1e-2)
    # a tensor that is not a leaf requiring grad is never cached
    with region(device):
        em.mm(x, w.detach())
        em.mm(x, w * 1)
        assert len(m._state.cache) == 0
    with region(device, cache_enabled=False):
        em.mm(x, w)
        assert len(m._state.cache) == 0
        assert not em.is_autocast_cache_enabled()
    assert em.is_autocast_cache_enabled()


def test_nesting_and_disabled_inside(device):
    x = em.randn(3, 3, device=device)
    dt = device.type
    assert not em.is_autocast_enabled(dt)
    with region(device):
        assert em.is_autocast_enabled(dt)
        with em.autocast(dt, enabled=False):
            assert not em.is_autocast_enabled(dt)
            assert (x @ x).dtype is em.float32
            with region(device):
                assert (x @ x).dtype is em.float16
            assert (x @ x).dtype is em.float32
        assert (x @ x).dtype is em.float16
        assert em.get_autocast_dtype(dt) is em.float16
    assert not em.is_autocast_enabled(dt)
    assert (x @ x).dtype is em.float32


def test_decorator_and_spellings(device):
    x = em.randn(3, 3, device=device)

    @em.autocast(device.type, dtype=em.float16)
    def f(a):
        return a @ a
    assert f(x).dtype is em.float16
    assert (x @ x).dtype is em.float32
    with em.amp.autocast(device.type, dtype=em.float16):
        assert (x @ x).dtype is em.float16
    import ember.cpu.amp
    import ember.cuda.amp
    if device.type == "cpu":
        with ember.cpu.amp.autocast(dtype=em.float16):
            assert (x @ x).dtype is em.float16
    with ember.cuda.amp.autocast():       # CUDA's default dtype is float16
        assert em.is_autocast_enabled() and em.get_autocast_dtype("cuda") is em.float16


def test_state_functions():
    assert em.is_autocast_enabled("cpu") is False
    em.set_autocast_enabled("cpu", True)
    try:
        assert em.is_autocast_enabled("cpu") and em.is_autocast_cpu_enabled()
        em.set_autocast_dtype("cpu", em.float16)
        assert em.get_autocast_dtype("cpu") is em.float16
        x = em.randn(2, 2)
        assert (x @ x).dtype is em.float16
    finally:
        em.set_autocast_enabled("cpu", False)
        from ember.amp import autocast_mode as m
        m._state.dtype["cpu"] = None
    assert (em.randn(2, 2) @ em.randn(2, 2)).dtype is em.float32
    em.set_autocast_cache_enabled(False)
    assert not em.is_autocast_cache_enabled()
    em.set_autocast_cache_enabled(True)
    em.clear_autocast_cache()
    assert em.get_autocast_dtype("cuda") is em.float16
    assert em.amp.is_autocast_available("cpu") and not em.amp.is_autocast_available("tpu")
    with pytest.raises(RuntimeError, match="device_type must be one of"):
        em.autocast("tpu")
    with pytest.raises(TypeError, match="enabled must be a bool"):
        em.autocast("cpu", dtype=em.float16, enabled="yes")
    with pytest.warns(UserWarning, match="not supported"):
        a = em.autocast("cpu", dtype=em.int32)
    with a:
        assert not em.is_autocast_enabled("cpu")


@pytest.mark.skipif(BF16 is not None, reason="bfloat16 exists: the CPU default works")
def test_cpu_default_needs_bf16():
    with pytest.raises(RuntimeError, match="bfloat16.*dtype=ember.float16"):
        em.autocast("cpu")
    with em.autocast("cpu", enabled=False):     # a disabled region needs no dtype
        pass


@needs_bf16
def test_cpu_default_is_bf16():
    x = em.randn(3, 3)
    with em.autocast("cpu"):
        assert (x @ x).dtype is BF16
        assert em.get_autocast_dtype("cpu") is BF16


def test_per_thread():
    x = em.randn(3, 3)
    seen = []
    with em.autocast("cpu", dtype=em.float16):
        t = threading.Thread(target=lambda: seen.append((x @ x).dtype))
        t.start()
        t.join()
        assert (x @ x).dtype is em.float16
    assert seen == [em.float32]


def test_entries_are_functions_outside():
    # the wrapped entries keep their names, docs and Tensor-method binding
    assert em.matmul.__name__ == "matmul" and em.matmul.__doc__
    x = em.randn(2, 3)
    assert em.Tensor.sum(x).shape == ()
    assert x.sum(0).shape == (3,)
    assert isinstance(em.matmul, em._core.AutocastOp)


def test_policy_table_names_exist():
    import ember.fft
    import ember.linalg
    for table, ns in ((_policy.EMBER, em), (_policy.LINALG, ember.linalg),
                      (_policy.FFT, ember.fft)):
        missing = [n for n in table if not hasattr(ns, n)]
        assert missing == [], missing
    assert [n for n in _policy.ELEMENTWISE if n not in em._core.OP_INDEX] == []


# -- GradScaler's kernels ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [em.float32, em.float64, em.float16, em.bfloat16])
def test_non_finite_check_and_unscale(device, dtype):
    if device.type != "cpu" and dtype is em.float64:
        pytest.skip("float64 on the device is not needed here")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(5,), (3, 4), (7, 1)]]
    grads = [em.tensor(a, device=device).to(dtype) for a in arrays]
    grads.append(em.tensor(arrays[1], device=device).to(dtype).t())    # non-contiguous
    found = em.zeros(1, device=device)
    inv = em.full((1,), 0.25, device=device)
    em._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    assert found.item() == 0.0
    for g, a in zip(grads, arrays + [arrays[1].T]):
        np.testing.assert_allclose(g.float().cpu().numpy(), a * 0.25, rtol=1e-3, atol=1e-3)
    for bad in (math.inf, -math.inf, math.nan):
        gs = [em.ones(4, device=device, dtype=dtype), em.ones(3, device=device, dtype=dtype)]
        gs[1][1] = bad
        found = em.zeros(1, device=device)
        em._amp_foreach_non_finite_check_and_unscale_(gs, found, inv)
        assert found.item() == 1.0
        assert gs[0].float().cpu().tolist() == [0.25] * 4
    # found_inf already set stays set
    found = em.ones(1, device=device)
    em._amp_foreach_non_finite_check_and_unscale_([em.ones(2, device=device)], found, inv)
    assert found.item() == 1.0


@pytest.mark.parametrize("dtype", [em.float32, em.float16, em.bfloat16])
def test_non_finite_check_on_a_device_is_one_launch_for_the_dense_grads(device, dtype):
    # the device's multi-tensor kernel (backends/gpu/optim.py amp_unscale_): views at an
    # offset, an inf in one, found_inf at an offset, no host read
    if device.type == "cpu":
        pytest.skip("the device kernel")
    backend = em._C.core.backend_for(device)
    a = np.arange(-10, 14, dtype=np.float32) / 3
    big = em.tensor(a, device=device).to(dtype)
    gs = [big[2:9], big[12:24].reshape(3, 4)]
    flags = em.zeros(3, device=device)
    inv = em.full((2,), 0.5, device=device)
    backend.__dict__.pop("_slot_tables", None)
    backend.reset_counters()
    em._amp_foreach_non_finite_check_and_unscale_(gs, flags[1:2], inv[1:])
    c = backend.counters()
    assert (c["launches"], c["host_transfers"]) == (1, 1)     # + the slot table, once
    rounded = em.tensor(a).to(dtype).float().numpy()
    want = np.concatenate([rounded[:2], rounded[2:9] * 0.5, rounded[9:12],
                           rounded[12:] * 0.5])
    np.testing.assert_array_equal(big.float().cpu().numpy(), want)
    assert flags.cpu().tolist() == [0.0, 0.0, 0.0]
    gs[1][1, 2] = math.inf
    backend.reset_counters()
    em._amp_foreach_non_finite_check_and_unscale_(gs, flags[1:2], inv[1:])
    c = backend.counters()
    assert (c["launches"], c["host_transfers"]) == (1, 0)       # the table kept
    assert flags.cpu().tolist() == [0.0, 1.0, 0.0]


def test_non_finite_check_bad_args():
    with pytest.raises(TypeError, match="one-element float32"):
        em._amp_foreach_non_finite_check_and_unscale_([em.ones(2)], em.zeros(2), em.ones(1))
    with pytest.raises(TypeError, match="list or tuple"):
        em._amp_foreach_non_finite_check_and_unscale_(em.ones(2), em.zeros(1), em.ones(1))


def test_update_scale(device):
    scale = em.full((), 8.0, device=device)
    tracker = em.zeros((), dtype=em.int32, device=device)
    no = em.zeros((), device=device)
    yes = em.ones((), device=device)
    em._amp_update_scale_(scale, tracker, no, 2.0, 0.5, 3)
    em._amp_update_scale_(scale, tracker, no, 2.0, 0.5, 3)
    assert (scale.item(), tracker.item()) == (8.0, 2)
    em._amp_update_scale_(scale, tracker, no, 2.0, 0.5, 3)
    assert (scale.item(), tracker.item()) == (16.0, 0)
    em._amp_update_scale_(scale, tracker, no, 2.0, 0.5, 3)
    em._amp_update_scale_(scale, tracker, yes, 2.0, 0.5, 3)
    assert (scale.item(), tracker.item()) == (8.0, 0)
    big = em.full((), 3e38, device=device)     # growing would overflow: stays
    t = em.full((), 2, dtype=em.int32, device=device)
    em._amp_update_scale_(big, t, no, 2.0, 0.5, 3)
    assert big.item() == pytest.approx(3e38) and t.item() == 0


def test_cache_skips_no_grad_casts():
    w = em.randn(4, 4, requires_grad=True)
    x = em.randn(2, 4)
    from ember.amp import autocast_mode as m
    with em.autocast("cpu", dtype=em.float16):
        with em.no_grad():
            em.mm(x, w)
        assert len(m._state.cache) == 0
        em.mm(x, w).float().sum().backward()
    assert w.grad is not None and w.grad.dtype is em.float32
