"""MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
TransformerDecoderLayer, TransformerDecoder and Transformer (PyTorch's parameters, mask
conventions and defaults), composed from Linear, LayerNorm, Dropout and attention."""
from __future__ import annotations

import copy
import math

import ember as em
from ember.nn import functional as F, init
from ember.nn._checks import checked, index, instance, optional, positive, real, size
from ember.nn.modules.container import ModuleList
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import LayerNorm
from ember.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _additive_mask(mask, dtype, what):
    """A float mask to add to the scores: bool True (and -inf) means "do not attend"."""
    if mask is None:
        return None
    if mask.dtype is em.bool:
        return em.where(mask, float("-inf"), 0.0).to(dtype)
    if mask.dtype.kind != "float":
        raise TypeError(f"MultiheadAttention: {what} must be bool or float, got {mask.dtype}")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """softmax(Q K^T / sqrt(head_dim) + mask) V over num_heads heads, with the input
    projections packed in in_proj_weight (3 * embed_dim, embed_dim) as in PyTorch."""

    @checked(embed_dim=positive, num_heads=positive, dropout=real(0, 1),
             kdim=optional(index), vdim=optional(index))
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim={embed_dim} must be divisible by "
                             f"num_heads={num_heads}")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        if (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: kdim/vdim different from embed_dim "
                                      "are not supported")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = dropout, batch_first
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.in_proj_weight = Parameter(em.empty(3 * embed_dim, embed_dim, device=device,
                                                 dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(em.empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if query.ndim != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected query of shape (L, N, "
                             f"{self.embed_dim}), got {tuple(query.shape)}")
        if key.shape != value.shape:
            raise ValueError(f"MultiheadAttention: key shape {tuple(key.shape)} does not match "
                             f"value shape {tuple(value.shape)}")
        tgt, batch, e = query.shape
        src = key.shape[0]
        h, d = self.num_heads, self.head_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        wq, wk, wv = w.chunk(3)
        bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk)
        v = F.linear(value, wv, bv)
        # (L, N, E) -> (N, H, L, D)
        q = q.reshape(tgt, batch, h, d).permute(1, 2, 0, 3)
        k = k.reshape(src, batch, h, d).permute(1, 2, 0, 3)
        v = v.reshape(src, batch, h, d).permute(1, 2, 0, 3)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
        mask = _additive_mask(attn_mask, scores.dtype, "attn_mask")
        if is_causal and mask is None:
            mask = _additive_mask(em.ones(tgt, src, dtype=em.bool).triu(1), scores.dtype,
                                  "attn_mask")
        if mask is not None:
            if mask.ndim == 3:                        # (N * H, L, S)
                mask = mask.reshape(batch, h, tgt, src)
            scores = scores + mask
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (batch, src):
                raise ValueError(f"MultiheadAttention: expected key_padding_mask of shape "
                                 f"{(batch, src)}, got {tuple(key_padding_mask.shape)}")
            pad = _additive_mask(key_padding_mask, scores.dtype, "key_padding_mask")
            scores = scores + pad.reshape(batch, 1, 1, src)
        attn = em.softmax(scores, -1)
        if self.dropout and self.training:
            attn = F.dropout(attn, self.dropout, True)
        out = (attn @ v).permute(2, 0, 1, 3).reshape(tgt, batch, e)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = attn.mean(1) if average_attn_weights else attn
        return out, (weights.squeeze(0) if unbatched else weights)


def _activation(op, activation):
    """'relu', 'gelu' or a callable (PyTorch's choices), as a callable."""
    if not (callable(activation) or isinstance(activation, str)):
        raise TypeError(f"{op}: activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__} {activation!r:.60}")
    if isinstance(activation, str):
        if activation not in ("relu", "gelu"):   # PyTorch's message
            raise ValueError(f"{op}: activation should be relu/gelu, not {activation}")
        activation = F.relu if activation == "relu" else F.gelu
    return activation


def _detect_is_causal(mask, is_causal, n):
    """PyTorch's _detect_is_causal_mask: is_causal if given, else whether mask is the
    square subsequent mask of that size."""
    if is_causal is not None:
        return bool(is_causal)
    if mask is None or tuple(mask.shape) != (n, n):
        return False
    causal = Transformer.generate_square_subsequent_mask(n, device=mask.device,
                                                         dtype=mask.dtype)
    if mask.dtype is em.bool:
        causal = em.ones(n, n, dtype=em.bool, device=mask.device).triu(1)
    return bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual and a
    LayerNorm (after, or before with norm_first=True)."""

    @checked(d_model=positive, nhead=positive, dim_feedforward=size, dropout=real(0, 1),
             layer_norm_eps=real())
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        activation = _activation(type(self).__name__, activation)
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer, then an optional norm."""

    @checked(num_layers=size, norm=optional(instance(Module, "a Module")))
    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        # before copying it num_layers times (ModuleList would only say so at the end)
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got "
                            f"{type(encoder_layer).__name__}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        is_causal = _detect_is_causal(mask, is_causal, src.shape[1 if self._batch_first()
                                                                 and src.ndim == 3 else 0])
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x

    def _batch_first(self):
        attn = getattr(self.layers[0], "self_attn", None) if len(self.layers) else None
        return bool(getattr(attn, "batch_first", False))


class TransformerDecoderLayer(Module):
    """Self-attention over tgt, attention from tgt to memory, then a feed-forward block,
    each with dropout, a residual and a LayerNorm (after, or before with norm_first)."""

    _forward_tensors = ("tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask",
                        "memory_key_padding_mask")

    @checked(d_model=positive, nhead=positive, dim_feedforward=size, dropout=real(0, 1),
             layer_norm_eps=real())
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        activation = _activation(type(self).__name__, activation)
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer, then an optional norm."""

    _forward_tensors = TransformerDecoderLayer._forward_tensors

    @checked(num_layers=size, norm=optional(instance(Module, "a Module")))
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        if not isinstance(decoder_layer, Module):
            raise TypeError(f"TransformerDecoder: decoder_layer must be a Module, got "
                            f"{type(decoder_layer).__name__}")
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        attn = getattr(self.layers[0], "self_attn", None) if len(self.layers) else None
        seq_dim = 1 if getattr(attn, "batch_first", False) and tgt.ndim == 3 else 0
        tgt_is_causal = _detect_is_causal(tgt_mask, tgt_is_causal, tgt.shape[seq_dim])
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """An encoder (num_encoder_layers TransformerEncoderLayers and a LayerNorm) and a
    decoder (num_decoder_layers TransformerDecoderLayers and a LayerNorm), the matrices
    xavier_uniform_ initialised, as in PyTorch (Vaswani et al. 2017)."""

    _forward_tensors = ("src", "tgt", "src_mask", "tgt_mask", "memory_mask",
                        "src_key_padding_mask", "tgt_key_padding_mask",
                        "memory_key_padding_mask")

    @checked(d_model=positive, nhead=positive, num_encoder_layers=size,
             num_decoder_layers=size, dim_feedforward=size, dropout=real(0, 1),
             custom_encoder=optional(instance(Module, "a Module")),
             custom_decoder=optional(instance(Module, "a Module")), layer_norm_eps=real())
    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = dict(dim_feedforward=dim_feedforward, dropout=dropout,
                        activation=activation, layer_norm_eps=layer_norm_eps,
                        batch_first=batch_first, norm_first=norm_first, bias=bias, **kw)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **layer_kw)
            self.encoder = TransformerEncoder(
                layer, num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                     **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **layer_kw)
            self.decoder = TransformerDecoder(
                layer, num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                     **kw))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batched = src.ndim == 3
        if src.ndim != tgt.ndim or src.ndim not in (2, 3):
            raise ValueError(f"Transformer: src and tgt must both be 2-D (unbatched) or 3-D, "
                             f"got shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
        b = 0 if self.batch_first else 1
        if batched and src.shape[b] != tgt.shape[b]:    # PyTorch's messages
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal "
                               f"(shapes {tuple(src.shape)} and {tuple(tgt.shape)})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal "
                               f"to d_model={self.d_model} (shapes {tuple(src.shape)} and "
                               f"{tuple(tgt.shape)})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float (sz, sz) mask: -inf above the diagonal (future positions), 0 elsewhere."""
        sz = size("generate_square_subsequent_mask", "sz", sz)
        mask = em.ones(sz, sz, dtype=em.bool, device=device).triu(1)
        return em.where(mask, float("-inf"), 0.0).to(dtype or em.float32)
