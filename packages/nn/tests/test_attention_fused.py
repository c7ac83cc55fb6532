"""The fused scaled-dot-product attention kernel (ember.ops.attention, CPU) against the
same attention composed of ember ops (sdpa_composite: matmul, softmax, where), forward
and gradients, over block-edge sizes, causal and masked variants, strided operands and
dtypes; gradcheck in float64; the composed path on every device against NumPy."""
import math

import numpy as np
import pytest

import ember as em
from ember.autograd import gradcheck
from ember.nn import functional as F
from ember.ops import attention as A


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape)


def np_sdpa(q, k, v, bias=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if bias is not None:
        s = s + bias
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)                       # every key masked: the row is zeros
    e = np.exp(s - np.where(dead, 0, m))
    a = np.where(dead, 0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    return a @ v


def leaves(arrays, dtype, device="cpu"):
    return [em.from_numpy(a).to(dtype).to(device).requires_grad_() for a in arrays]


def run(fn, ts, grad):
    out = fn(*ts)
    gs = em.autograd.grad(out, ts, grad)
    return out.detach(), gs


def composite(mask, causal, scale):
    return lambda q, k, v: A.sdpa_composite(q, k, v, mask, causal, scale)


CASES = [  # (batch, L, S, E, Ev)
    ((2,), 1, 1, 4, 3),
    ((2, 3), 5, 7, 8, 5),
    ((1,), 64, 64, 16, 16),      # exactly one block
    ((2,), 70, 70, 8, 6),        # a partial second block
    ((1, 2), 130, 65, 8, 8),     # L > S, three query blocks, two key blocks
    ((1,), 3, 130, 4, 4),        # L < S
]


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("variant", ["plain", "causal", "bool_mask", "float_mask", "scale"])
def test_fused_matches_composite(case, variant, dtype):
    batch, L, S, E, Ev = case
    q, k, v = rand(*batch, L, E), rand(*batch, S, E, seed=1), rand(*batch, S, Ev, seed=2)
    g = rand(*batch, L, Ev, seed=3)
    kw, mask, causal, scale = {}, None, False, 1 / math.sqrt(E)
    if variant == "causal":
        kw["is_causal"] = causal = True
    elif variant == "bool_mask":
        keep = rand(L, S, seed=4) > -1.0
        keep[L // 2] = False                     # a query that sees no key
        kw["attn_mask"] = em.from_numpy(keep)
        mask = A.additive_mask(kw["attn_mask"], em.zeros((), dtype=dtype))
    elif variant == "float_mask":
        fm = rand(*batch[:1], *([1] * (len(batch) - 1)), L, S, seed=5)
        kw["attn_mask"] = em.from_numpy(fm).to(dtype)
        mask = kw["attn_mask"]
    else:
        if variant == "scale":
            kw["scale"] = scale = 0.3
    ts = leaves((q, k, v), dtype)
    gt = em.from_numpy(g).to(dtype)
    out = F.scaled_dot_product_attention(*ts, **kw)
    assert out.grad_fn.name() == "ScaledDotProductAttentionBackward0"   # the fused kernel
    got, got_g = run(lambda *a: F.scaled_dot_product_attention(*a, **kw), ts, gt)
    want, want_g = run(composite(mask, causal, scale), ts, gt)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == em.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)
    bias = None if mask is None else mask.double().numpy()
    if causal:
        bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    np.testing.assert_allclose(got.double().numpy(), np_sdpa(q, k, v, bias, scale), **tol)


def test_fused_reads_strided_operands_in_place():
    """A GPT's q, k, v: split views of one projection, transposed to (B, H, T, hd)."""
    B, T, H, hd = 2, 70, 3, 4
    x = em.from_numpy(rand(B, T, 3 * H * hd)).requires_grad_()
    g = em.from_numpy(rand(B, H, T, hd, seed=1))

    def heads(fn):
        q, k, v = x.split(H * hd, dim=2)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        assert not q.is_contiguous()
        out = fn(q, k, v)
        return out.detach(), em.autograd.grad(out, [x], g)[0]
    got = heads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    want = heads(composite(None, True, 0.5))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_fused_gradcheck():
    q, k, v = leaves((rand(1, 66, 3), rand(1, 67, 3, seed=1), rand(1, 67, 2, seed=2)),
                     em.float64)
    fm = em.from_numpy(rand(66, 67, seed=3))
    for kw in ({"is_causal": True}, {"attn_mask": fm}, {}):
        assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **kw),
                         (q, k, v))


def test_fused_rows_with_every_key_masked_give_zeros():
    q, k, v = leaves((rand(2, 4, 3), rand(2, 5, 3, seed=1), rand(2, 5, 2, seed=2)),
                     em.float64)
    keep = np.ones((4, 5), bool)
    keep[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=em.from_numpy(keep))
    assert out.grad_fn.name() == "ScaledDotProductAttentionBackward0"
    np.testing.assert_array_equal(out.detach().numpy()[:, 1], 0.0)
    out.sum().backward()
    assert np.isfinite(q.grad.numpy()).all() and np.isfinite(k.grad.numpy()).all()
    np.testing.assert_array_equal(q.grad.numpy()[:, 1], 0.0)


def test_fused_double_backward_uses_the_composite():
    q, k, v = leaves((rand(2, 5, 3), rand(2, 6, 3, seed=1), rand(2, 6, 2, seed=2)),
                     em.float64)

    def second(fn):
        out = fn(q, k, v)
        gq, = em.autograd.grad((out * out).sum(), [q], create_graph=True)
        return em.autograd.grad(gq.sum(), [k, v])
    got = second(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True))
    want = second(composite(None, True, 1 / math.sqrt(3)))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_fused_kernel_bad_input():
    from ember._C import attention as kern
    q = em.zeros(2, 4, 3)
    with pytest.raises(ValueError, match="scaled_dot_product_attention: key"):
        kern.sdpa_forward(q, em.zeros(3, 4, 3), em.zeros(2, 4, 3), None, False, 1.0)
    with pytest.raises(TypeError, match="scaled_dot_product_attention: key is"):
        kern.sdpa_forward(q, em.zeros(2, 4, 3, dtype=em.float64), em.zeros(2, 4, 3), None,
                          False, 1.0)
    with pytest.raises(TypeError, match="float32 or float64"):
        kern.sdpa_forward(q.half(), q.half(), q.half(), None, False, 1.0)


_DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_on_every_device(device, causal):
    """Off the CPU the composed ops run (no fused device kernel): the same values and
    gradients as the CPU's fused kernel."""
    q, k, v = rand(2, 3, 9, 4), rand(2, 3, 9, 4, seed=1), rand(2, 3, 9, 5, seed=2)
    g = rand(2, 3, 9, 5, seed=3)
    res = []
    for dev in ("cpu", device):
        ts = leaves((q, k, v), em.float32, dev)
        out, gs = run(lambda *a: F.scaled_dot_product_attention(*a, is_causal=causal), ts,
                      em.from_numpy(g).float().to(dev))
        res.append([out.cpu().numpy()] + [t.cpu().numpy() for t in gs])
    bias = np.where(np.tril(np.ones((9, 9), bool)), 0.0, -np.inf) if causal else None
    np.testing.assert_allclose(res[1][0], np_sdpa(q, k, v, bias), rtol=1e-4, atol=1e-5)
    for a, b in zip(res[0], res[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
