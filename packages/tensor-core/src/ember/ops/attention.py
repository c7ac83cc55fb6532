"""Fused scaled-dot-product attention: softmax(q k^T scale + mask) v in one kernel that
never holds more than a block of the (L x S) score matrix (kernels/cpu/attention.c, a
flash-attention-style forward and backward; ember._C.attention), for
nn.functional.scaled_dot_product_attention. The fused kernel runs for CPU tensors of
float32/float64; other devices and dtypes use `sdpa_composite`, the same function
composed of ember ops (matmul, softmax, where), which is also what a create_graph=True
backward differentiates. Records "scaled_dot_product_attention" with attrs mask (the
additive float mask, expanded to the scores' shape, or None), is_causal, scale and lse
(the rows' log-sum-exp, which the backward uses instead of the probabilities)."""
from __future__ import annotations

import importlib
import math

from ember._C import core as _core

__all__ = []

_kernels = None


def _attention():
    global _kernels
    if _kernels is None:
        _kernels = importlib.import_module("ember._C.attention")
    return _kernels


def additive_mask(mask, like):
    """A bool mask (True: attend) as 0 / -inf in like's dtype; a float mask in like's
    dtype."""
    import ember as em
    if mask.dtype == em.bool:
        return em.where(mask, em.zeros((), dtype=like.dtype, device=like.device),
                        em.full((), -math.inf, dtype=like.dtype, device=like.device))
    return mask if mask.dtype == like.dtype else mask.to(like.dtype)


_CAUSAL = {}               # (L, S, device) -> the causal bool mask, made once
_CAUSAL_CACHED = 1 << 20   # masks of at most this many elements are kept


def _causal_mask(L, S, device):
    """ones(L, S, bool).tril() on device, kept for the next call of the same size (on a
    device, making it is 6 launches)."""
    import ember as em
    key = (L, S, str(device))
    m = _CAUSAL.get(key)
    if m is None:
        m = em.ones(L, S, dtype=em.bool, device=device).tril()
        if L * S <= _CAUSAL_CACHED:
            if len(_CAUSAL) >= 16:
                _CAUSAL.clear()
            _CAUSAL[key] = m
    return m


def sdpa_composite(query, key, value, mask, is_causal, scale, dropout_p=0.0):
    """The attention of ember ops: the fallback on devices (and with dropout) and the
    create_graph path. mask: None or an additive float mask broadcasting with the
    scores."""
    import ember as em
    L, S = query.shape[-2], key.shape[-2]
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        scores = em.where(_causal_mask(L, S, query.device), scores, -math.inf)
    if mask is not None:
        scores = scores + mask
    if mask is None:
        # the causal mask alone leaves every row a key (row i has key 0)
        attn = em.softmax(scores, -1)
    else:
        # softmax of an all -inf row is NaN, and NaN gradients would reach every key
        dead = (scores == -math.inf).all(-1, keepdim=True)
        attn = em.where(dead, 0.0, em.softmax(em.where(dead, 0.0, scores), -1))
    if dropout_p > 0:
        attn = em.dropout(attn, dropout_p, True)
    return attn @ value


_float32 = _core._dtype_by_name("float32")
_float64 = _core._dtype_by_name("float64")


def fused_applies(query, key, value, mask):
    """Whether sdpa_fused takes these operands: CPU, float32/float64 alike, the same
    batch dims, a mask that needs no gradient."""
    dt = query.dtype
    if (dt is not _float32 and dt is not _float64) or not query.is_cpu:
        return False
    if key.dtype is not dt or value.dtype is not dt or not key.is_cpu or not value.is_cpu:
        return False
    n = query.ndim
    if key.ndim != n or value.ndim != n:
        return False
    batch = query.shape[:-2]
    if key.shape[:-2] != batch or value.shape[:-2] != batch:
        return False
    if mask is not None and (mask.requires_grad or not mask.is_cpu or mask.ndim > n):
        return False
    return True


def sdpa_fused(query, key, value, mask, is_causal, scale):
    """The fused kernel's forward (see fused_applies); mask as additive_mask gives it,
    broadcasting with the scores (..., L, S)."""
    if mask is not None:
        mask = mask.expand(tuple(query.shape[:-1]) + (key.shape[-2],))
    is_causal, scale = bool(is_causal), float(scale)
    with _core._no_record():
        out, lse = (_kernels or _attention()).sdpa_forward(query, key, value, mask,
                                                          is_causal, scale)
    return _core.record("scaled_dot_product_attention", (query, key, value), out,
                        {"mask": mask, "is_causal": is_causal, "scale": scale, "lse": lse})


def sdpa_backward(grad, query, key, value, mask, out, lse, is_causal, scale):
    """(grad_query, grad_key, grad_value) of sdpa_fused from its output and lse."""
    with _core._no_record():
        return _attention().sdpa_backward(grad.contiguous(), query, key, value, mask, out,
                                          lse, is_causal, scale)
