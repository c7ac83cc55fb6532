"""Layers over tensor-core's fused kernels (conv, norms, dropout, embedding) and the
attention/transformer layers, against NumPy references; gradients by gradcheck."""
import math

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F


def arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape)


def t64(*shape, seed=0):
    return em.from_numpy(arr(*shape, seed=seed))


def np_conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                y[:, oc, i, j] = (patch * w[oc]).sum((1, 2, 3))
    return y + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def test_conv2d_layer_matches_numpy_and_init_bounds():
    m = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    fan_in = 2 * 3 * 2
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(fan_in) + 1e-7
    m.double()
    x = t64(2, 4, 7, 6)
    want = np_conv2d(x.numpy(), m.weight.detach().numpy(), m.bias.detach().numpy(), (2, 1),
                     (1, 0), (1, 2), 2)
    np.testing.assert_allclose(m(x).detach().numpy(), want, rtol=1e-10, atol=1e-12)
    assert repr(m) == ("Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), "
                       "dilation=(1, 2), groups=2)")


def test_conv_layers_gradcheck_and_shapes():
    c1 = nn.Conv1d(2, 3, 3, padding=1).double()
    assert gradcheck(lambda x: c1(x), (t64(2, 2, 5).requires_grad_(),))
    ct = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1).double()
    y = ct(t64(1, 2, 4, 4))
    assert tuple(y.shape) == (1, 3, 8, 8)
    assert gradcheck(lambda x: ct(x), (t64(1, 2, 2, 2).requires_grad_(),))
    assert tuple(nn.ConvTranspose1d(2, 4, 3, stride=2)(em.randn(1, 2, 5)).shape) == (1, 4, 11)
    with pytest.raises(ValueError, match="groups=3 must be positive and divide"):
        nn.Conv2d(4, 6, 3, groups=3)


def np_norm(x, axes, eps=1e-5):
    mu = x.mean(axes, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_batchnorm_training_eval_and_running_stats():
    bn = nn.BatchNorm2d(3).double()
    with em.no_grad():
        bn.weight.copy_(em.tensor([1.0, 2.0, 0.5], dtype=em.float64))
        bn.bias.copy_(em.tensor([0.0, -1.0, 1.0], dtype=em.float64))
    x = t64(4, 3, 2, 5)
    y = bn(x)
    xn = x.numpy()
    want = np_norm(xn, (0, 2, 3)) * np.array([1, 2, 0.5]).reshape(1, 3, 1, 1) + \
        np.array([0, -1, 1]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * xn.mean((0, 2, 3)))
    np.testing.assert_allclose(bn.running_var.numpy(),
                               0.9 + 0.1 * xn.var((0, 2, 3), ddof=1))
    assert int(bn.num_batches_tracked) == 1
    bn.eval()
    y = bn(x)
    rm, rv = bn.running_mean.numpy().reshape(1, 3, 1, 1), bn.running_var.numpy().reshape(1, 3,
                                                                                       1, 1)
    want = (xn - rm) / np.sqrt(rv + 1e-5) * np.array([1, 2, 0.5]).reshape(1, 3, 1, 1) + \
        np.array([0, -1, 1]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-10)
    assert int(bn.num_batches_tracked) == 1
    cumulative = nn.BatchNorm1d(3, momentum=None).double()
    a, b = t64(5, 3), t64(5, 3, seed=1)
    cumulative(a)
    cumulative(b)
    np.testing.assert_allclose(cumulative.running_mean.numpy(),
                               (a.numpy().mean(0) + b.numpy().mean(0)) / 2)
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3\) got input with 4 channels"):
        nn.BatchNorm2d(3)(em.randn(2, 4, 2, 2))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(em.randn(2, 3))


def test_batchnorm_gradcheck():
    bn = nn.BatchNorm1d(3).double()
    assert gradcheck(lambda x: bn(x), (t64(4, 3, 2).requires_grad_(),))


def test_layernorm_and_groupnorm():
    ln = nn.LayerNorm((2, 3)).double()
    x = t64(4, 2, 3)
    np.testing.assert_allclose(ln(x).detach().numpy(), np_norm(x.numpy(), (1, 2)), rtol=1e-9)
    assert gradcheck(lambda a: ln(a), (x.requires_grad_(),))
    gn = nn.GroupNorm(2, 4).double()
    x = t64(3, 4, 5)
    want = np_norm(x.numpy().reshape(3, 2, 10), (2,)).reshape(3, 4, 5)
    np.testing.assert_allclose(gn(x).detach().numpy(), want, rtol=1e-9)
    assert gradcheck(lambda a: gn(a), (x.requires_grad_(),))
    with pytest.raises(ValueError, match="num_channels=5 must be divisible by num_groups=2"):
        nn.GroupNorm(2, 5)


def test_dropout_layers():
    d = nn.Dropout(0.5)
    x = em.ones(1000)
    y = d(x)
    kept = float((y != 0).float().mean())
    assert 0.4 < kept < 0.6 and set(np.unique(y.numpy())) <= {0.0, 2.0}
    d.eval()
    assert d(x) is x
    d2 = nn.Dropout2d(0.5)
    y = d2(em.ones(4, 8, 3, 3))
    per_channel = y.numpy().reshape(32, 9)
    assert all(len(set(row)) == 1 for row in per_channel)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_embedding():
    e = nn.Embedding(10, 3, padding_idx=2)
    assert e.weight[2].tolist() == [0.0, 0.0, 0.0]
    idx = em.tensor([[1, 2], [2, 9]])
    out = e(idx)
    assert tuple(out.shape) == (2, 2, 3)
    np.testing.assert_array_equal(out.detach().numpy(), e.weight.detach().numpy()[idx.numpy()])
    out.sum().backward()
    g = e.weight.grad.numpy()
    assert g[2].tolist() == [0, 0, 0] and g[1].tolist() == [1, 1, 1] and g[0].sum() == 0
    pre = nn.Embedding.from_pretrained(em.eye(4))
    assert not pre.weight.requires_grad and pre(em.tensor([3])).tolist() == [[0, 0, 0, 1]]


def np_mha(q, k, v, m, mask=None):
    e, h = m.embed_dim, m.num_heads
    d = e // h
    w = m.in_proj_weight.detach().numpy()
    b = m.in_proj_bias.detach().numpy()
    Q, K, V = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], v @ w[2 * e:].T + b[2 * e:]
    L, N, _ = q.shape
    S = k.shape[0]
    out = np.zeros((L, N, e))
    weights = np.zeros((N, L, S))
    for n in range(N):
        for hh in range(h):
            sl = slice(hh * d, (hh + 1) * d)
            s = Q[:, n, sl] @ K[:, n, sl].T / math.sqrt(d)
            if mask is not None:
                s = s + mask
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            out[:, n, sl] = p @ V[:, n, sl]
            weights[n] += p / h
    out = out @ m.out_proj.weight.detach().numpy().T + m.out_proj.bias.detach().numpy()
    return out, weights


def test_multihead_attention_matches_numpy_with_masks():
    m = nn.MultiheadAttention(8, 2).double()
    q, k, v = arr(3, 2, 8), arr(4, 2, 8, seed=1), arr(4, 2, 8, seed=2)
    out, w = m(em.from_numpy(q), em.from_numpy(k), em.from_numpy(v))
    want_out, want_w = np_mha(q, k, v, m)
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-9, atol=1e-12)
    bool_mask = np.array([[False, True, False, False]] * 3)
    out, _ = m(em.from_numpy(q), em.from_numpy(k), em.from_numpy(v),
               attn_mask=em.from_numpy(bool_mask))
    want_out, _ = np_mha(q, k, v, m, np.where(bool_mask, -np.inf, 0.0))
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-9, atol=1e-12)
    bf = nn.MultiheadAttention(8, 2, batch_first=True).double()
    bf.load_state_dict(m.state_dict())
    o2, _ = bf(*(em.from_numpy(a.transpose(1, 0, 2).copy()) for a in (q, k, v)))
    np.testing.assert_allclose(o2.detach().numpy().transpose(1, 0, 2),
                               np_mha(q, k, v, m)[0], rtol=1e-9, atol=1e-12)
    kpm = em.tensor([[False, False, True, True], [False, False, False, False]])
    o3, w3 = m(em.from_numpy(q), em.from_numpy(k), em.from_numpy(v), key_padding_mask=kpm)
    assert float(w3[0, :, 2:].abs().sum()) == 0.0
    assert gradcheck(lambda a: m(a, a, a)[0], (t64(2, 1, 8).requires_grad_(),))


def test_transformer_encoder_fits_a_toy_task():
    """Each output position predicts whether its token appears elsewhere in the sequence:
    it needs attention across positions."""
    em.manual_seed(0)
    rng = np.random.default_rng(0)
    vocab, d = 6, 32
    emb = nn.Embedding(vocab, d)
    layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2)
    head = nn.Linear(d, 2)
    params = list(emb.parameters()) + list(enc.parameters()) + list(head.parameters())
    assert len(enc.layers) == 2 and enc.layers[0] is not layer

    def batch(n=64):
        toks = rng.integers(0, vocab, size=(n, 5))
        dup = np.array([[int((row == tok).sum() > 1) for tok in row] for row in toks])
        return em.from_numpy(toks), em.from_numpy(dup)

    m, v, step_lr = {}, {}, 3e-3
    for step in range(1, 301):
        x, y = batch()
        loss = em.cross_entropy(head(enc(emb(x))).reshape(-1, 2), y.reshape(-1))
        for p in params:
            p.grad = None
        loss.backward()
        with em.no_grad():        # Adam, written out (ember.optim is tested on its own)
            for i, p in enumerate(params):
                g = p.grad
                m[i] = m.get(i, em.zeros_like(p)) * 0.9 + g * 0.1
                v[i] = v.get(i, em.zeros_like(p)) * 0.999 + g * g * 0.001
                p -= step_lr * (m[i] / (1 - 0.9 ** step)) / (
                    em.sqrt(v[i] / (1 - 0.999 ** step)) + 1e-8)
    x, y = batch(256)
    enc.eval()
    pred = head(enc(emb(x))).argmax(-1)
    assert float((pred == y).float().mean()) > 0.9


def test_pooling_layers_match_the_functional_forms():
    x = em.randn(2, 3, 7, 6)
    assert bool((nn.MaxPool2d(2)(x) == F.max_pool2d(x, 2)).all())
    y, idx = nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    assert tuple(y.shape) == (2, 3, 4, 3) and idx.dtype is em.int64
    assert bool((nn.AvgPool2d(3, 2, 1, count_include_pad=False)(x) ==
                 F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)).all())
    assert tuple(nn.AdaptiveAvgPool2d((1, 1))(x).shape) == (2, 3, 1, 1)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(x).numpy().ravel(),
                               x.numpy().mean((2, 3)).ravel(), rtol=1e-5)
    assert tuple(nn.AdaptiveMaxPool2d(2)(x).shape) == (2, 3, 2, 2)
    s = em.randn(2, 3, 9)
    assert tuple(nn.MaxPool1d(2)(s).shape) == (2, 3, 4)
    assert tuple(nn.AvgPool1d(3, 2)(s).shape) == (2, 3, 4)
    assert repr(nn.MaxPool2d(2)) == ("MaxPool2d(kernel_size=2, stride=2, padding=0, "
                                     "dilation=1, ceil_mode=False)")
