"""Issue 18: TransformerDecoderLayer, TransformerDecoder and Transformer against a NumPy
reference built from the layers' own weights (attention, feed-forward, LayerNorm by
hand), with masks, key padding masks, is_causal, norm_first, batch_first and unbatched
input; gradients by gradcheck."""
import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F


def t64(*shape, seed=0):
    return em.from_numpy(np.random.default_rng(seed).uniform(-1, 1, size=shape))


def w(p):
    return None if p is None else p.detach().numpy()


def np_ln(x, norm):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + norm.eps)
    return y * w(norm.weight) + (w(norm.bias) if norm.bias is not None else 0)


def np_mha(mha, q, k, v, mask=None, kpm=None):
    """(L, N, E) sequence-first multi-head attention with an additive float mask (L, S)
    and a bool key padding mask (N, S)."""
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    wq, wk, wv = np.split(w(mha.in_proj_weight), 3)
    bq, bk, bv = np.split(w(mha.in_proj_bias), 3)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    L, N, _ = Q.shape
    S = K.shape[0]
    Q = Q.reshape(L, N, h, d).transpose(1, 2, 0, 3)
    K = K.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    V = V.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    s = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        s = s + mask
    if kpm is not None:
        s = np.where(kpm[:, None, None, :], -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    a = s / s.sum(-1, keepdims=True)
    out = (a @ V).transpose(2, 0, 1, 3).reshape(L, N, e)
    return out @ w(mha.out_proj.weight).T + w(mha.out_proj.bias)


def np_ff(layer, x, act=lambda z: np.maximum(z, 0)):
    hdn = act(x @ w(layer.linear1.weight).T + w(layer.linear1.bias))
    return hdn @ w(layer.linear2.weight).T + w(layer.linear2.bias)


def np_encoder_layer(layer, x, mask=None, kpm=None):
    if layer.norm_first:
        y = np_ln(x, layer.norm1)
        x = x + np_mha(layer.self_attn, y, y, y, mask, kpm)
        return x + np_ff(layer, np_ln(x, layer.norm2))
    x = np_ln(x + np_mha(layer.self_attn, x, x, x, mask, kpm), layer.norm1)
    return np_ln(x + np_ff(layer, x), layer.norm2)


def np_decoder_layer(layer, x, mem, tgt_mask=None, mem_mask=None, tgt_kpm=None,
                     mem_kpm=None):
    if layer.norm_first:
        y = np_ln(x, layer.norm1)
        x = x + np_mha(layer.self_attn, y, y, y, tgt_mask, tgt_kpm)
        x = x + np_mha(layer.multihead_attn, np_ln(x, layer.norm2), mem, mem, mem_mask,
                       mem_kpm)
        return x + np_ff(layer, np_ln(x, layer.norm3))
    x = np_ln(x + np_mha(layer.self_attn, x, x, x, tgt_mask, tgt_kpm), layer.norm1)
    x = np_ln(x + np_mha(layer.multihead_attn, x, mem, mem, mem_mask, mem_kpm), layer.norm2)
    return np_ln(x + np_ff(layer, x), layer.norm3)


def causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(3)
    assert m.dtype == em.float32 and tuple(m.shape) == (3, 3)
    np.testing.assert_array_equal(m.numpy(), causal(3).astype(np.float32))
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=em.float64).dtype == \
        em.float64


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_reference_with_masks(norm_first):
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).double()
    assert len(layer.state_dict()) == 18  # 2 attentions x 4, linear1/2 x 2, norm1-3 x 2
    tgt, mem = t64(4, 3, 8), t64(5, 3, 8, seed=1)
    tgt_kpm = np.zeros((3, 4), bool)
    tgt_kpm[1, 3] = True
    mem_kpm = np.zeros((3, 5), bool)
    mem_kpm[2, 3:] = True
    mem_mask = np.zeros((4, 5))
    mem_mask[0, 0] = -np.inf
    got = layer(tgt, mem, tgt_mask=em.from_numpy(causal(4)),
                memory_mask=em.from_numpy(mem_mask),
                tgt_key_padding_mask=em.from_numpy(tgt_kpm),
                memory_key_padding_mask=em.from_numpy(mem_kpm))
    want = np_decoder_layer(layer, tgt.numpy(), mem.numpy(), causal(4), mem_mask, tgt_kpm,
                            mem_kpm)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-10)
    # is_causal without a mask is the causal mask; a bool mask True = masked
    np.testing.assert_allclose(layer(tgt, mem, tgt_is_causal=True).detach().numpy(),
                               np_decoder_layer(layer, tgt.numpy(), mem.numpy(), causal(4)),
                               rtol=1e-10, atol=1e-10)
    bool_mask = em.ones(4, 4, dtype=em.bool).triu(1)
    np.testing.assert_allclose(layer(tgt, mem, tgt_mask=bool_mask).detach().numpy(),
                               np_decoder_layer(layer, tgt.numpy(), mem.numpy(), causal(4)),
                               rtol=1e-10, atol=1e-10)


def test_decoder_layer_batch_first_unbatched_and_activation():
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, batch_first=True,
                                       activation="gelu").double()
    assert layer.activation is F.gelu
    tgt, mem = t64(2, 3, 4), t64(2, 5, 4, seed=1)
    got = layer(tgt, mem).detach().numpy()
    seq = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, activation="gelu").double()
    seq.load_state_dict(layer.state_dict())
    want = seq(tgt.transpose(0, 1), mem.transpose(0, 1)).transpose(0, 1).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # unbatched (T, E) with (S, E) memory: the batch of one, squeezed
    np.testing.assert_allclose(layer(tgt[0], mem[0]).detach().numpy(), got[0],
                               rtol=1e-12, atol=1e-12)
    custom = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, activation=em.tanh).double()
    custom.load_state_dict(seq.state_dict())
    x, m = tgt.transpose(0, 1), mem.transpose(0, 1)
    np.testing.assert_allclose(custom(x, m).detach().numpy(),
                               np_decoder_layer_act(custom, x.numpy(), m.numpy(), np.tanh),
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="TransformerDecoderLayer: activation should be "
                                         "relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(4, 2, activation="tanh")


def np_decoder_layer_act(layer, x, mem, act):
    x = np_ln(x + np_mha(layer.self_attn, x, x, x), layer.norm1)
    x = np_ln(x + np_mha(layer.multihead_attn, x, mem, mem), layer.norm2)
    return np_ln(x + np_ff(layer, x, act), layer.norm3)


def test_transformer_matches_reference_and_detects_causal_mask():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=16, dropout=0.0).double()
    # matrices xavier-uniform: |w| <= sqrt(6 / (fan_in + fan_out))
    lin = model.encoder.layers[0].linear1.weight
    assert float(lin.abs().max()) <= np.sqrt(6 / 24) + 1e-12
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 2
    assert isinstance(model.encoder.norm, nn.LayerNorm)
    src, tgt = t64(5, 2, 8), t64(4, 2, 8, seed=1)
    src_kpm = np.zeros((2, 5), bool)
    src_kpm[0, 4] = True
    tgt_mask = model.generate_square_subsequent_mask(4).double()
    got = model(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=em.from_numpy(src_kpm),
                memory_key_padding_mask=em.from_numpy(src_kpm))
    mem = src.numpy()
    for layer in model.encoder.layers:
        mem = np_encoder_layer(layer, mem, kpm=src_kpm)
    mem = np_ln(mem, model.encoder.norm)
    x = tgt.numpy()
    for layer in model.decoder.layers:
        x = np_decoder_layer(layer, x, mem, causal(4), None, None, src_kpm)
    want = np_ln(x, model.decoder.norm)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-9)
    # the decoder's tgt_is_causal=None detects the square subsequent mask
    from ember.nn.modules.transformer import _detect_is_causal
    assert _detect_is_causal(tgt_mask, None, 4) is True
    assert _detect_is_causal(em.zeros(4, 4), None, 4) is False
    assert _detect_is_causal(None, True, 4) is True


def test_transformer_batch_first_unbatched_norm_first_and_errors():
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True,
                           norm_first=True).double()
    src, tgt = t64(2, 5, 4), t64(2, 3, 4, seed=1)
    out = model(src, tgt, tgt_is_causal=True,
                tgt_mask=model.generate_square_subsequent_mask(3).double())
    assert tuple(out.shape) == (2, 3, 4)
    np.testing.assert_allclose(model(src[1], tgt[1], tgt_is_causal=True,
                                     tgt_mask=model.generate_square_subsequent_mask(3)
                                     .double()).detach().numpy(),
                               out[1].detach().numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(t64(2, 5, 4), t64(3, 3, 4))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal to "
                                           "d_model=4"):
        model(t64(2, 5, 4), t64(2, 3, 6))
    custom = nn.Transformer(4, 2, custom_encoder=nn.Identity(),
                            custom_decoder=nn.TransformerDecoder(
                                nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0), 1))
    assert isinstance(custom.encoder, nn.Identity)
    assert "decoder" in repr(custom) and "TransformerDecoderLayer" in repr(custom)


def test_transformer_decoder_gradcheck():
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0), 2,
                                norm=nn.LayerNorm(4)).double()
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=em.float64)
    assert gradcheck(lambda a, b: dec(a, b, tgt_mask=mask),
                     (t64(3, 1, 4).requires_grad_(), t64(2, 1, 4, seed=1).requires_grad_()))
    model = nn.Transformer(4, 2, 1, 1, 6, dropout=0.0).double()
    assert gradcheck(lambda a, b: model(a, b), (t64(2, 1, 4).requires_grad_(),
                                                t64(2, 1, 4, seed=2).requires_grad_()))


def test_transformer_dropout_trains_and_evaluates():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    src, tgt = em.randn(3, 2, 8), em.randn(2, 2, 8)
    model.eval()
    a, b = model(src, tgt), model(src, tgt)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    model.train()
    loss = model(src, tgt).sum()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_transformer_on_opencl():
    if not em.opencl.is_available():
        pytest.skip("no OpenCL device")
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
    src, tgt = em.randn(3, 2, 4), em.randn(2, 2, 4)
    mask = model.generate_square_subsequent_mask(2)
    want = model(src, tgt, tgt_mask=mask).detach().numpy()
    model.to("opencl")
    got = model(src.to("opencl"), tgt.to("opencl"), tgt_mask=mask.to("opencl"))
    assert got.device.type == "opencl"
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-4, atol=1e-5)
