"""Gradient clipping: by the total norm of all gradients, or elementwise by value."""
from __future__ import annotations

import math

import ember as em
from ember.nn._checks import checked, norm_order, real, real_or_tensor, tensors as _tensors

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]

# parameters: a Tensor or an iterable of them, as a list
_params = _tensors()


def _grads(parameters):
    return [p.grad for p in parameters if p.grad is not None]


def _device_2norm(tensors):
    """The 2-norm of all of `tensors` from their device backend's fused sums of squares
    (a launch per 16 tensors, accumulated in float32 or float64; backends/gpu/optim.py),
    in their dtype; None on the CPU or where the backend does not take them."""
    dev = tensors[0].device
    fused = None if dev.type == "cpu" else getattr(em._C.core.backend_for(dev), "sumsq_",
                                                   None)
    sq = None if fused is None else fused(tensors)
    return None if sq is None else sq.sum().sqrt().to(tensors[0].dtype)


@checked(tensors=_tensors(none_ok=True), norm_type=norm_order)
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (None ones left out): the norm of all their
    elements taken as one vector (a 0-d tensor; 0 for no tensors). foreach=True takes
    the per-tensor norms with em._foreach_norm (one C loop); None and False, one call
    per tensor (the same values)."""
    # empty tensors add nothing to any norm (and have no inf-norm of their own)
    tensors = [t for t in tensors if t.numel()]
    norm_type = float(norm_type)
    if not tensors:
        return em.tensor(0.0)
    with em.no_grad():
        total = _device_2norm(tensors) if norm_type == 2.0 else None
        if total is None:
            norms = em._foreach_norm(tensors, norm_type) if foreach else \
                [em.linalg.vector_norm(t, norm_type) for t in tensors]
            total = em.linalg.vector_norm(em.stack(norms), norm_type) if len(norms) > 1 \
                else norms[0]
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped. To disable "
                           f"this error and scale the gradients by the non-finite norm anyway, "
                           f"set `error_if_nonfinite=False`")
    return total


@checked(parameters=_params, max_norm=real(), total_norm=real_or_tensor)
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of `parameters` in place by max_norm / (total_norm + 1e-6)
    when that is below 1 (a NaN total norm makes them NaN, as in PyTorch); foreach=True
    scales them with one em._foreach_mul_. A device total_norm is not read back: the
    gradients are multiplied by the coefficient clamped to 1 on the device."""
    grads = _grads(parameters)
    if not grads:
        return
    if isinstance(total_norm, em.Tensor) and total_norm.device.type != "cpu":
        # on a device, as PyTorch: scale by the clamped coefficient where it lies, so the
        # step never waits for the norm to reach the host
        with em.no_grad():
            coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
            fused = getattr(em._C.core.backend_for(coef.device), "mul_multi_", None)
            if fused is not None:   # a launch per 16 gradients of a dtype
                grads = [grads[i] for i in fused(grads, coef.reshape(1))]
            if foreach and grads:
                em._foreach_mul_(grads, coef)
            else:
                for g in grads:
                    g.mul_(coef)
        return
    coef = float(max_norm) / (float(total_norm) + 1e-6)
    if coef < 1.0 or math.isnan(coef):
        with em.no_grad():
            if foreach:
                em._foreach_mul_(grads, coef)
            else:
                for g in grads:
                    g.mul_(coef)


@checked(parameters=_params, max_norm=real(), norm_type=norm_order)
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradients of `parameters` (a tensor or an iterable of tensors) in place
    so that their total norm (all gradients taken as one vector; norm_type may be inf)
    is at most max_norm. Returns the total norm before clipping, a 0-d tensor.
    error_if_nonfinite: raise when that norm is inf or NaN (else the gradients become
    NaN); foreach=True: the multi-tensor functions (the same values)."""
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


@checked(parameters=_params, clip_value=real())
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of `parameters` to [-clip_value, clip_value] in place
    (foreach=True: with em._foreach_clamp_min_ / _foreach_clamp_max_)."""
    clip_value = float(clip_value)
    with em.no_grad():
        grads = _grads(parameters)
        if foreach:
            em._foreach_clamp_min_(grads, -clip_value)
            em._foreach_clamp_max_(grads, clip_value)
            return
        for g in grads:
            g.clamp_(-clip_value, clip_value)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated spelling of clip_grad_norm_ (FutureWarning, as in PyTorch)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
