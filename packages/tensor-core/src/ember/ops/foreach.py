"""The multi-tensor ("foreach") functions, PyTorch's `torch._foreach_*`: each applies one
op to every tensor of a list, looping in C (ember/_C/foreach.pyx) over the core's
elementwise entry, one call per tensor with no Python dispatch in between. Optimizers'
foreach=True paths are written with them.

    em._foreach_mul_(exp_avgs, beta1)
    em._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    norms = em._foreach_norm(grads)

Operands: `other` (and `scalars`, `weight`) is one number or tensor used with every
entry, or a list/tuple with one per entry (addcmul/addcdiv's scalars may also be a 1-D
tensor, as in PyTorch). The `_` forms work in place and return None, as PyTorch's do; the
others return new lists. They run on every device and autograd records them as the
per-tensor ops they are. The reductions (_foreach_norm, _foreach_max) call
ember.linalg.vector_norm / ember.amax per tensor from the same C loop.
"""
from __future__ import annotations

import numbers

from ember._C import foreach as _fe
from ember._C.core import TensorBase, backend_for
from ember._dtypes import float32

_ADD, _MUL, _DIV = _fe.index_of("add"), _fe.index_of("mul"), _fe.index_of("div")
_MAX, _MIN, _POW = _fe.index_of("maximum"), _fe.index_of("minimum"), _fe.index_of("pow")
_LERP = _fe.index_of("lerp")

__all__ = ["_foreach_add", "_foreach_add_", "_foreach_sub", "_foreach_sub_",
           "_foreach_mul", "_foreach_mul_", "_foreach_div", "_foreach_div_",
           "_foreach_addcmul", "_foreach_addcmul_", "_foreach_addcdiv", "_foreach_addcdiv_",
           "_foreach_lerp", "_foreach_lerp_", "_foreach_maximum", "_foreach_maximum_",
           "_foreach_minimum", "_foreach_minimum_", "_foreach_clamp_min",
           "_foreach_clamp_min_", "_foreach_clamp_max", "_foreach_clamp_max_",
           "_foreach_pow", "_foreach_pow_", "_foreach_norm", "_foreach_max",
           "_foreach_zero_", "_foreach_copy_", "_amp_foreach_non_finite_check_and_unscale_",
           "_amp_update_scale_"]


def _alpha(op, alpha):
    if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool):
        raise TypeError(f"{op}: alpha must be a real number, got {type(alpha).__name__}")
    return alpha


def _scalars(op, scalars):
    from ember import Tensor
    if isinstance(scalars, Tensor):
        if scalars.ndim != 1:
            raise ValueError(f"{op}: scalars must be a 1-D tensor, got {scalars.ndim} dims")
        return scalars.tolist()
    return scalars


def _foreach_add(self, other, *, alpha=1):
    """[self[i] + alpha * other[i]]."""
    return _fe.add(self, other, _alpha("_foreach_add", alpha), False, False, "_foreach_add")


def _foreach_add_(self, other, *, alpha=1):
    """self[i] += alpha * other[i], in place."""
    _fe.add(self, other, _alpha("_foreach_add_", alpha), False, True, "_foreach_add_")


def _foreach_sub(self, other, *, alpha=1):
    """[self[i] - alpha * other[i]]."""
    return _fe.add(self, other, _alpha("_foreach_sub", alpha), True, False, "_foreach_sub")


def _foreach_sub_(self, other, *, alpha=1):
    """self[i] -= alpha * other[i], in place."""
    _fe.add(self, other, _alpha("_foreach_sub_", alpha), True, True, "_foreach_sub_")


def _binary(name, op):
    def fn(self, other):
        return _fe.binary(op, self, other, False, name)

    def fn_(self, other):
        _fe.binary(op, self, other, True, name + "_")
    fn.__name__ = fn.__qualname__ = name
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn.__doc__ = f"[{name[9:]}(self[i], other[i])]: other a scalar, tensor or list of them."
    fn_.__doc__ = f"self[i] = {name[9:]}(self[i], other[i]), in place."
    return fn, fn_


_foreach_mul, _foreach_mul_ = _binary("_foreach_mul", _MUL)
_foreach_div, _foreach_div_ = _binary("_foreach_div", _DIV)
_foreach_maximum, _foreach_maximum_ = _binary("_foreach_maximum", _MAX)
_foreach_minimum, _foreach_minimum_ = _binary("_foreach_minimum", _MIN)
_foreach_clamp_min, _foreach_clamp_min_ = _binary("_foreach_clamp_min", _MAX)
_foreach_clamp_max, _foreach_clamp_max_ = _binary("_foreach_clamp_max", _MIN)
_foreach_pow, _foreach_pow_ = _binary("_foreach_pow", _POW)


def _unary(name):
    op = _fe.index_of(name)

    def fn(self):
        return _fe.unary(op, self, False, "_foreach_" + name)

    def fn_(self):
        _fe.unary(op, self, True, "_foreach_" + name + "_")
    fn.__name__ = fn.__qualname__ = "_foreach_" + name
    fn_.__name__ = fn_.__qualname__ = "_foreach_" + name + "_"
    fn.__doc__ = f"[{name}(self[i])]."
    fn_.__doc__ = f"self[i] = {name}(self[i]), in place."
    return fn, fn_


for _name in ("sqrt", "neg", "abs", "exp", "log", "reciprocal", "sign", "sigmoid", "tanh",
              "floor", "ceil", "round", "trunc", "frac", "rsqrt", "expm1", "log1p", "sin",
              "cos", "erf"):
    try:
        _fe.index_of(_name)
    except KeyError:
        continue
    _f, _f_ = _unary(_name)
    globals()[_f.__name__], globals()[_f_.__name__] = _f, _f_
    __all__ += [_f.__name__, _f_.__name__]
del _name, _f, _f_


def _foreach_addcmul(self, tensor1, tensor2, value=1):
    """[self[i] + value * tensor1[i] * tensor2[i]]; value a number or one per entry."""
    return _fe.addc(self, tensor1, tensor2, _scalars("_foreach_addcmul", value), False,
                    False, "_foreach_addcmul")


def _foreach_addcmul_(self, tensor1, tensor2, value=1):
    """self[i] += value * tensor1[i] * tensor2[i], in place."""
    _fe.addc(self, tensor1, tensor2, _scalars("_foreach_addcmul_", value), False, True,
             "_foreach_addcmul_")


def _foreach_addcdiv(self, tensor1, tensor2, value=1):
    """[self[i] + value * tensor1[i] / tensor2[i]]."""
    return _fe.addc(self, tensor1, tensor2, _scalars("_foreach_addcdiv", value), True,
                    False, "_foreach_addcdiv")


def _foreach_addcdiv_(self, tensor1, tensor2, value=1):
    """self[i] += value * tensor1[i] / tensor2[i], in place."""
    _fe.addc(self, tensor1, tensor2, _scalars("_foreach_addcdiv_", value), True, True,
             "_foreach_addcdiv_")


def _foreach_lerp(self, tensors1, weight):
    """[self[i] + weight[i] * (tensors1[i] - self[i])]; weight a number, a list of them or
    a list of tensors."""
    return _fe.ternary(_LERP, self, tensors1, weight, False, "_foreach_lerp")


def _foreach_lerp_(self, tensors1, weight):
    """self[i] += weight[i] * (tensors1[i] - self[i]), in place."""
    _fe.ternary(_LERP, self, tensors1, weight, True, "_foreach_lerp_")


def _foreach_norm(self, ord=2, dtype=None):
    """[vector_norm(self[i], ord)] as 0-d tensors (ord: any of vector_norm's)."""
    from ember.linalg import vector_norm
    return _fe.call_fn(vector_norm, self, (ord, None, False), "_foreach_norm") \
        if dtype is None else [vector_norm(t, ord, dtype=dtype) for t in _list(self)]


def _foreach_max(self):
    """[self[i].max()] as 0-d tensors."""
    from ember import amax
    return _fe.call_fn(amax, self, (), "_foreach_max")


def _foreach_zero_(self):
    """self[i].zero_() for every i."""
    _fe.call_each(self, "zero_", (), "_foreach_zero_")


def _foreach_copy_(self, src, non_blocking=False):
    """self[i].copy_(src[i]) for every i."""
    _fe.call_pairs(self, "copy_", src, "_foreach_copy_")


# ember's own (not PyTorch API, not exported): an op into existing tensors, for the
# optimizers' foreach paths to reuse their buffers as the single-tensor paths' out= do
_SQRT = _fe.index_of("sqrt")


def _sqrt_into(self, out):
    """out[i] = sqrt(self[i])."""
    _fe.into(_SQRT, self, None, out, "_foreach_sqrt")


def _div_into(self, other, out):
    """out[i] = self[i] / other[i] (out may be other)."""
    _fe.into(_DIV, self, other, out, "_foreach_div")


def _list(xs):
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"expected a list or tuple of tensors, got {type(xs).__name__}")
    return list(xs)


# -- mixed precision: GradScaler's two kernels ------------------------------------------

def _unscale_composed(g, found_inf, inv_scale):
    """The any-layout form of the fused check, op-table rows on g's device:
    found_inf = max(found_inf, any(!isfinite(g))); g *= inv."""
    from ember import all as all_, isfinite, logical_not
    bad = logical_not(all_(isfinite(g)))
    name = "_amp_foreach_non_finite_check_and_unscale_"
    _fe.into(_MAX, [found_inf], [bad.reshape(found_inf.shape)], [found_inf], name)
    _fe.into(_MUL, [g], [inv_scale.reshape(())], [g], name)


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    """PyTorch's torch._amp_foreach_non_finite_check_and_unscale_: self[i] *= inv_scale in
    place; found_inf (a one-element float32 tensor) becomes 1.0 when any self[i] holds an
    inf or NaN, else keeps its value. One fused C pass per contiguous CPU tensor; on a
    device one launch per 16 dense gradients of a dtype (the rest: op-table kernels),
    with no host sync."""
    name = "_amp_foreach_non_finite_check_and_unscale_"
    fused = None
    if isinstance(found_inf, TensorBase) and isinstance(inv_scale, TensorBase) and \
            found_inf.device.type != "cpu" and inv_scale.device == found_inf.device and \
            found_inf.numel() == inv_scale.numel() == 1 and \
            found_inf.dtype is inv_scale.dtype is float32:
        # (anything else: the C loop's checks and messages)
        fused = getattr(backend_for(found_inf.device), "amp_unscale_", None)
    if fused is not None:
        # a launch per 16 gradients of a dtype on found_inf's device (backends/gpu/optim.py)
        self = _list(self)
        self = [self[i] for i in fused(self, found_inf, inv_scale)]
    _fe.non_finite_check_and_unscale(self, found_inf, inv_scale, _unscale_composed, name)


def _amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor,
                       scale_backoff_factor, growth_interval):
    """PyTorch's torch._amp_update_scale_: with found_inf nonzero, scale *= backoff and the
    tracker restarts; else the tracker counts one more clean step and at growth_interval
    scale *= growth (when that stays finite) and the tracker restarts. self (the scale,
    float32) and growth_tracker (int32) are one-element tensors, updated in place and
    self returned."""
    dev = self.device
    fused = None if dev.type == "cpu" else getattr(backend_for(dev), "amp_update_scale_",
                                                   None)
    if fused is not None and fused(self, growth_tracker, found_inf, float(scale_growth_factor),
                                   float(scale_backoff_factor), int(growth_interval)):
        return self      # one launch (backends/gpu/optim.py)
    from ember import isfinite, where
    bad = found_inf > 0
    tracker = where(bad, 0, growth_tracker + 1)
    grow = (tracker >= growth_interval) & ~bad
    grown = self * scale_growth_factor
    new = where(bad, self * scale_backoff_factor,
                where(grow & isfinite(grown), grown, self))
    self.copy_(new)
    growth_tracker.copy_(where(grow, 0, tracker))
    return self
