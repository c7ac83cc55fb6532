"""ember.autocast with ember.nn, and ember.amp.GradScaler with the optimizers: the
nn.functional entries on PyTorch's lists, modules' outputs and gradients' dtypes, a
skipped step on an injected inf, growth after clean steps, the state_dict round trip,
clip_grad_norm_ after unscale_, the misuse errors PyTorch raises, and a small GPT
trained under autocast + GradScaler (examples/amp_gpt.py runs it at full length)."""
from __future__ import annotations

import importlib.util
import math
import os
import pathlib
import pickle

import numpy as np
import pytest

import ember as em
import ember.nn.functional as F
from ember import nn, optim

BF16 = getattr(em, "bfloat16", None)
needs_bf16 = pytest.mark.skipif(BF16 is None, reason="em.bfloat16 has not landed in this "
                                                     "build (issue 21's bf16 part)")
OPENCL = None
try:
    em.zeros(1, device="opencl").cpu()
    OPENCL = "opencl"
except Exception:       # noqa: BLE001 (no OpenCL device here)
    pass
DEVICES = ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    OPENCL is None, reason="no OpenCL device"))]

F16, F32 = "float16", "float32"
T = lambda n: em.zeros(n, dtype=em.int64)   # noqa: E731
# (name, call on (x float32, h float16), CPU dtype, cuda/opencl dtype), PyTorch 2.x's
CASES = [
    ("linear", lambda x, h: F.linear(x, em.ones(3, 8, device=x.device)), F16, F16),
    ("prelu", lambda x, h: F.prelu(x, em.ones(1, device=x.device)), F16, F16),
    ("conv1d", lambda x, h: F.conv1d(x[None], em.ones(2, 4, 3, device=x.device)), F16, F16),
    ("sdpa", lambda x, h: F.scaled_dot_product_attention(x[None], x[None], x[None]), F16, F16),
    ("mse_loss", lambda x, h: F.mse_loss(h, h), F32, F32),
    ("l1_loss", lambda x, h: F.l1_loss(h, h), F32, F32),
    ("cross_entropy", lambda x, h: F.cross_entropy(h, T(4).to(h.device)), F32, F32),
    ("nll_loss", lambda x, h: F.nll_loss(h, T(4).to(h.device)), F32, F32),
    ("bce_with_logits", lambda x, h: F.binary_cross_entropy_with_logits(h, h.sigmoid()),
     F32, F32),
    ("kl_div", lambda x, h: F.kl_div(h, h, reduction="batchmean"), F32, F32),
    ("smooth_l1", lambda x, h: F.smooth_l1_loss(h, h), F32, F32),
    ("softmax", lambda x, h: F.softmax(h, -1), F16, F32),
    ("log_softmax", lambda x, h: F.log_softmax(h, -1), F16, F32),
    ("layer_norm", lambda x, h: F.layer_norm(h, (8,)), F16, F32),
    ("group_norm", lambda x, h: F.group_norm(h, 2), F16, F32),
    ("normalize", lambda x, h: F.normalize(h), F16, F32),
    ("softplus", lambda x, h: F.softplus(h), F16, F32),
    ("gelu", lambda x, h: F.gelu(h), F16, F16),
    ("relu", lambda x, h: F.relu(h), F16, F16),
    ("embedding", lambda x, h: F.embedding(T(3).to(x.device), x), F32, F32),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name,call,cpu,gpu", CASES, ids=[c[0] for c in CASES])
def test_functional_classes(dev, name, call, cpu, gpu):
    x = em.randn(4, 8, device=dev)
    h = em.randn(4, 8, device=dev).half()
    outside = call(x, h).dtype
    with em.autocast(dev, dtype=em.float16):
        inside = call(x, h)
    assert inside.dtype is getattr(em, cpu if dev == "cpu" else gpu)
    assert call(x, h).dtype is outside
    ref = call(x.float(), h.float())
    np.testing.assert_allclose(inside.float().cpu().numpy(), ref.float().cpu().numpy(),
                               rtol=2e-2, atol=2e-2)


def test_bce_banned_on_gpu_autocast_allowed_on_cpu():
    p = em.rand(4).half()
    with em.autocast("cpu", dtype=em.float16):
        assert F.binary_cross_entropy(p, p).dtype is em.float32
    if OPENCL is not None:
        with em.autocast("opencl", dtype=em.float16):
            with pytest.raises(RuntimeError, match="unsafe to autocast"):
                F.binary_cross_entropy(p.to("opencl"), p.to("opencl"))


@pytest.mark.parametrize("dev", DEVICES)
def test_module_outputs_and_grads(dev):
    em.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3)).to(dev)
    x = em.randn(5, 6, device=dev)
    with em.autocast(dev, dtype=em.float16):
        out = model(x)
        assert out.dtype is em.float16
        loss = F.cross_entropy(out, em.zeros(5, dtype=em.int64, device=dev))
        assert loss.dtype is em.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype is em.float32
    # the same gradients as the float32 run, to float16's precision
    ref = [p.grad.cpu().numpy() for p in model.parameters()]
    model.zero_grad()
    F.cross_entropy(model(x), em.zeros(5, dtype=em.int64, device=dev)).backward()
    for r, p in zip(ref, model.parameters()):
        np.testing.assert_allclose(r, p.grad.cpu().numpy(), rtol=5e-2, atol=5e-3)


def test_conv_module_under_autocast():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    x = em.randn(2, 3, 5, 5)
    with em.autocast("cpu", dtype=em.float16):
        y = conv(x)
    assert y.dtype is em.float16
    y.float().sum().backward()
    assert conv.weight.grad.dtype is em.float32 and conv.bias.grad.dtype is em.float32


# -- GradScaler -------------------------------------------------------------------------

def _model(seed=0):
    em.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))


def _loss(model, dev="cpu"):
    x = em.linspace(-1, 1, 12, device=dev).reshape(3, 4)
    with em.autocast(dev, dtype=em.float16):
        return (model(x).float() ** 2).mean()


OPTIMIZERS = [(optim.SGD, {"lr": 0.1, "momentum": 0.9}), (optim.Adam, {"lr": 1e-2}),
              (optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1})]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[c.__name__ for c, _ in OPTIMIZERS])
def test_scaler_steps_like_unscaled_training(dev, cls, kw):
    # scaled + unscaled gradients are the plain ones: the parameters follow the
    # float32-gradient run of the same autocast model
    a, b = _model().to(dev), _model().to(dev)
    oa, ob = cls(a.parameters(), **kw), cls(b.parameters(), **kw)
    scaler = em.amp.GradScaler(dev, init_scale=2.0 ** 10, growth_interval=3)
    for _ in range(4):
        scaler.scale(_loss(a, dev)).backward()
        scaler.step(oa)
        scaler.update()
        oa.zero_grad()
        _loss(b, dev).backward()
        ob.step()
        ob.zero_grad()
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert pa.dtype is em.float32
        np.testing.assert_allclose(pa.detach().cpu().numpy(), pb.detach().cpu().numpy(),
                                   rtol=1e-4, atol=1e-5)
    assert scaler.get_scale() == 2.0 ** 11      # grew once after 3 clean steps
    assert scaler._get_growth_tracker() == 1


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("bad", [math.inf, math.nan])
@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[c.__name__ for c, _ in OPTIMIZERS])
def test_injected_inf_skips_the_step(dev, bad, cls, kw):
    model = _model().to(dev)
    opt = cls(model.parameters(), **kw)
    scaler = em.amp.GradScaler(dev, init_scale=256.0, growth_interval=2)
    scaler.scale(_loss(model, dev)).backward()
    g = model[2].bias.grad
    g.copy_(em.tensor([bad, 1.0], device=dev))
    before = [p.detach().clone() for p in model.parameters()]
    assert scaler.step(opt) is None
    scaler.update()
    for p, q in zip(model.parameters(), before):
        assert em.equal(p.detach().cpu(), q.cpu())
    assert scaler.get_scale() == 128.0 and scaler._get_growth_tracker() == 0
    assert opt.state == {} or all(not s for s in opt.state.values()) or cls is optim.SGD
    # two clean steps grow it back
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(_loss(model, dev)).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 256.0
    assert not all(em.equal(p.detach().cpu(), q.cpu())
                   for p, q in zip(model.parameters(), before))


def test_unscale_then_clip_grad_norm():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = em.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(_loss(model)).backward()
    scaler.unscale_(opt)
    grads = [p.grad.clone() for p in model.parameters()]
    ref = _model()
    _loss(ref).backward()
    for g, p in zip(grads, ref.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)
    total = nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
    want = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in ref.parameters()))
    assert float(total) == pytest.approx(want, rel=1e-4)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)              # uses the recorded check; does not unscale again
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()))
    assert norm == pytest.approx(1e-3, rel=1e-3)


def test_scale_nested_and_misuse():
    scaler = em.amp.GradScaler("cpu", init_scale=4.0)
    a, b = em.ones(2), em.full((3,), 2.0)
    out = scaler.scale([a, (b, [a])])
    assert out[0].tolist() == [4.0, 4.0] and isinstance(out[1], tuple)
    assert out[1][0].tolist() == [8.0] * 3 and out[1][1][0].tolist() == [4.0, 4.0]
    with pytest.raises(ValueError, match="iterable of Tensors"):
        scaler.scale(3.0)
    opt = optim.SGD(_model().parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    fresh = em.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match="_scale is None"):
        fresh.step(opt)
    half = nn.Linear(2, 2).half()
    o16 = optim.SGD(half.parameters(), lr=0.1)
    scaler.scale(half(em.ones(1, 2).half()).float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(o16)
    with pytest.raises(ValueError, match="growth_factor"):
        em.amp.GradScaler("cpu", growth_factor=0.5)


def test_update_new_scale_and_state_dict():
    scaler = em.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25,
                               growth_interval=5)
    model = _model()
    opt = optim.Adam(model.parameters())
    for _ in range(2):
        scaler.scale(_loss(model)).backward()
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                  "growth_interval": 5, "_growth_tracker": 2}
    other = em.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    assert pickle.loads(pickle.dumps(scaler)).state_dict() == sd
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    scaler.update(new_scale=em.tensor(32.0))
    assert scaler.get_scale() == 32.0
    with pytest.raises(ValueError, match="new_scale"):
        scaler.update(new_scale=em.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="state dict is empty"):
        other.load_state_dict({})


def test_disabled_scaler_is_a_pass_through():
    scaler = em.amp.GradScaler("cpu", enabled=False)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    x = em.ones(2)
    assert scaler.scale(x) is x
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    _loss(model).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    import ember.cuda.amp
    if not em.cuda.is_available():
        with pytest.warns(UserWarning, match="not available"):
            s = ember.cuda.amp.GradScaler()
        assert not s.is_enabled()


def test_custom_fwd_bwd():
    seen = {}

    class MyMM(em.autograd.Function):
        @staticmethod
        @em.amp.custom_fwd(device_type="cpu", cast_inputs=em.float32)
        def forward(ctx, a, b):
            seen["fwd"] = (a.dtype, em.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @em.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen["bwd"] = em.is_autocast_enabled("cpu")
            return g @ b.t(), a.t() @ g

    a = em.randn(2, 3, requires_grad=True)
    b = em.randn(3, 2, requires_grad=True)
    with em.autocast("cpu", dtype=em.float16):
        y = MyMM.apply(a.half(), b)
    assert seen["fwd"] == (em.float32, False) and y.dtype is em.float32
    y.sum().backward()
    assert seen["bwd"] is False
    assert a.grad.dtype is em.float32


# -- a small GPT --------------------------------------------------------------------------

def _amp_gpt():
    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / "amp_gpt.py"
    if not path.exists():
        pytest.skip("examples/amp_gpt.py is not in this checkout")
    spec = importlib.util.spec_from_file_location("amp_gpt", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("dtype", [em.float16, pytest.param(BF16, marks=needs_bf16,
                                                            id="bfloat16")])
def test_small_gpt_trains_under_autocast(dtype):
    # the short form of examples/amp_gpt.py (200 steps there): a 2-layer GPT, d=128
    # init_scale 2**10: PyTorch's default 2**16 overflows this model's first float16
    # backward passes, and the steps GradScaler skips for it put the run two AdamW steps
    # behind (the example reports both)
    mod = _amp_gpt()
    ref, _ = mod.train(None, steps=30, tail=5)
    loss, skipped = mod.train(dtype, steps=30, tail=5, init_scale=2.0 ** 10)
    assert skipped == 0
    assert abs(loss - ref) / ref < 0.02, (loss, ref)


_REFS = {}


def _float32_loss(mod, steps, tail, device):
    """The float32 run's loss, once per (steps, tail, device) for the tests below."""
    key = (steps, tail, device)
    if key not in _REFS:
        _REFS[key] = mod.train(None, steps=steps, tail=tail, device=device)[0]
    return _REFS[key]


# (dtype, GradScaler's init_scale): bfloat16 without a scaler, float16 with one
OPENCL_RUNS = [pytest.param(BF16, None, marks=needs_bf16, id="bfloat16"),
               pytest.param(em.float16, 2.0 ** 10, id="float16-GradScaler")]
LONG = pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "long",
                          reason="the 200-step runs: HYPOTHESIS_PROFILE=long")


@pytest.mark.skipif(OPENCL is None, reason="no OpenCL device")
@pytest.mark.parametrize("dtype,init_scale", OPENCL_RUNS)
def test_small_gpt_trains_under_autocast_opencl(dtype, init_scale):
    # examples/amp_gpt.py --device opencl runs the 200 steps (test_..._200_steps below);
    # here the short form, float32 and the autocast run both on the OpenCL device
    mod = _amp_gpt()
    ref = _float32_loss(mod, 30, 5, OPENCL)
    kw = {} if init_scale is None else {"init_scale": init_scale}
    loss, skipped = mod.train(dtype, steps=30, tail=5, device=OPENCL, **kw)
    assert skipped == 0
    assert abs(loss - ref) / ref < 0.02, (loss, ref)


@pytest.mark.slow
@LONG
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,init_scale", OPENCL_RUNS)
def test_small_gpt_trains_under_autocast_200_steps(device, dtype, init_scale):
    # issue 21's run in full: 200 steps, the mean loss of the last 20 within 2% of float32's
    mod = _amp_gpt()
    ref = _float32_loss(mod, 200, 20, device)
    kw = {} if init_scale is None else {"init_scale": init_scale}
    loss, skipped = mod.train(dtype, steps=200, tail=20, device=device, **kw)
    assert skipped == 0
    assert abs(loss - ref) / ref < 0.02, (loss, ref)
