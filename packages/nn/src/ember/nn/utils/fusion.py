"""Fold an eval-mode BatchNorm into the convolution or linear layer before it
(torch.nn.utils.fusion): one layer computing conv/linear followed by the BatchNorm."""
from __future__ import annotations

import copy

import ember as em
from ember.nn._checks import checked, instance, optional, real, tensor
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

_module = instance(Module, "a Module")
_opt_tensor = optional(tensor)


def _flag(op, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be a bool, got {type(v).__name__} {v!r:.60}")
    return v

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _check_eval(a, bn, op):
    if not hasattr(bn, "running_mean") or not hasattr(bn, "num_features"):
        raise TypeError(f"{op}: bn must be a BatchNorm module, got {type(bn).__name__}")
    if not hasattr(a, "weight") or not isinstance(a.weight, em.Tensor):
        raise TypeError(f"{op}: expected a layer with a weight, got {type(a).__name__}")
    if a.training or bn.training:
        raise ValueError(f"{op}: Fusion only for eval! (call .eval() on both modules)")
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError(f"{op}: the BatchNorm has no running statistics "
                         f"(track_running_stats=False)")


@checked(conv=_module, bn=_module, transpose=_flag)
def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` whose weight and bias include `bn` (both in eval mode);
    transpose=True for transposed convolutions (output channels in dim 1)."""
    _check_eval(conv, bn, "fuse_conv_bn_eval")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias, transpose)
    return fused


@checked(conv_w=tensor, conv_b=_opt_tensor, bn_rm=tensor, bn_rv=tensor, bn_eps=real(),
         bn_w=_opt_tensor, bn_b=_opt_tensor, transpose=_flag)
def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(w', b') = (w * s, (b - mean) * s + beta) with s = gamma / sqrt(var + eps) per
    output channel, as Parameters (missing bias, gamma, beta: 0, 1, 0)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    with em.no_grad():
        if conv_b is None:
            conv_b = em.zeros_like(bn_rm)
        if bn_w is None:
            bn_w = em.ones_like(bn_rm)
        if bn_b is None:
            bn_b = em.zeros_like(bn_rm)
        rsqrt = em.rsqrt(bn_rv + bn_eps)
        shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
        w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
        b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


@checked(linear=_module, bn=_module)
def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` whose weight and bias include `bn` (both in eval mode;
    bn.num_features equal to linear.out_features, or 1)."""
    _check_eval(linear, bn, "fuse_linear_bn_eval")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ValueError("To fuse, linear.out_features == bn.num_features or "
                         "bn.num_features == 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


@checked(linear_w=tensor, linear_b=_opt_tensor, bn_rm=tensor, bn_rv=tensor, bn_eps=real(),
         bn_w=_opt_tensor, bn_b=_opt_tensor)
def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(W', b') = (W * s[:, None], (b - mean) * s + beta), s = gamma / sqrt(var + eps)."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    with em.no_grad():
        if linear_b is None:
            linear_b = em.zeros_like(bn_rm)
        if bn_w is None:
            bn_w = em.ones_like(bn_rm)
        if bn_b is None:
            bn_b = em.zeros_like(bn_rm)
        scale = bn_w * em.rsqrt(bn_rv + bn_eps)
        w = (linear_w * scale.unsqueeze(-1)).to(w_dtype)
        b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
