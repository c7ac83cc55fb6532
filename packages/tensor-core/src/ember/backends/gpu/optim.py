"""GPUBackend's fused optimizer, GradScaler and clipping steps
(kernels/gpu/programs/optim.h): one launch per tensor where the composed ember ops take
3 to ~10. adam_ and sgd_ have the CPU's signatures (ember._C.foreach) and, like them,
return the indices of the entries they do not take (for the composed ops). Optional for
a backend: ember.optim, GradScaler and clip_grad_norm_ ask with getattr and compose
without them."""
from __future__ import annotations

from ember._dtypes import float32

_OPT_DTYPES = ("float32", "float64")          # what the CPU's fused loops take
_UNSCALE_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _dense_like(p, others):
    """p dense (any offset) on its device in a fused dtype, the `others` (None skipped)
    dense of its dtype, size and device."""
    if p.dtype.name not in _OPT_DTYPES or not p.is_contiguous():
        return False
    for o in others:
        if o is not None and (o.device != p.device or o.dtype is not p.dtype
                              or o.numel() != p.numel() or not o.is_contiguous()):
            return False
    return True


class OptimKernels:
    """Mixed into GPUBackend."""

    def sumsq_(self, tensors):
        """A 1-d tensor (float32; float64 for float64 tensors) of each tensor's sum of
        squares, one launch per tensor; None when it does not take them all (dense
        tensors of one float dtype on this device)."""
        if not tensors:
            return None
        dt = tensors[0].dtype
        dev = tensors[0].device
        if dt.name not in _UNSCALE_DTYPES or any(
                t.dtype is not dt or t.device != dev or not t.is_contiguous()
                for t in tensors):
            return None
        self._check_dtype(dt, dev, "clip_grad_norm_")
        out = self.empty((len(tensors),), dt if dt.name == "float64" else float32, dev)
        for i, t in enumerate(tensors):
            self.rows_launch(dev, f"sumsq_into_{dt.name}", 1,
                             [t.numel(), self.handle(t), t.storage_offset(),
                              self.handle(out), i])
        return out

    def adam_(self, params, grads, exp_avgs, exp_avg_sqs, max_sqs, bc1, bc2_sqrt, lr,
              beta1, beta2, eps, weight_decay, decoupled, maximize):
        shrink = 1 - lr * weight_decay if decoupled else 1.0
        l2 = 0.0 if decoupled else weight_decay
        rest = []
        for i, p in enumerate(params):
            g, m, v, vm = grads[i], exp_avgs[i], exp_avg_sqs[i], max_sqs[i]
            if not _dense_like(p, (g, m, v, vm)):
                rest.append(i)
                continue
            self._check_dtype(p.dtype, p.device, "adam")
            n = p.numel()
            x = v if vm is None else vm
            h = self.handle
            self.run(p.device, f"adam_step_{p.dtype.name}", n,
                     [n, h(p), p.storage_offset(), h(g), g.storage_offset(), h(m),
                      m.storage_offset(), h(v), v.storage_offset(), h(x), x.storage_offset(),
                      int(vm is not None), shrink, l2, int(bool(maximize)), 1 - beta1,
                      1 - beta2, eps * bc2_sqrt[i], -lr * bc2_sqrt[i] / bc1[i]])
            for t in (p, m, v, vm):
                if t is not None:
                    t._bump_version()
        return rest

    def sgd_(self, params, grads, bufs, fresh, lr, momentum, dampening, weight_decay,
             nesterov, maximize):
        rest = []
        for i, p in enumerate(params):
            g, b = grads[i], bufs[i]
            if not _dense_like(p, (g, b)):
                rest.append(i)
                continue
            self._check_dtype(p.dtype, p.device, "sgd")
            n = p.numel()
            x = p if b is None else b
            h = self.handle
            self.run(p.device, f"sgd_step_{p.dtype.name}", n,
                     [n, h(p), p.storage_offset(), h(g), g.storage_offset(), h(x),
                      x.storage_offset(), int(b is not None), weight_decay,
                      int(bool(maximize)), momentum, 1 - dampening, int(bool(fresh[i])),
                      int(bool(nesterov)), -lr])
            for t in (p, b):
                if t is not None:
                    t._bump_version()
        return rest

    def amp_unscale_(self, g, found_inf, inv_scale):
        """g *= inv_scale in place, found_inf = 1 where g holds an inf or NaN (one
        launch, no host read); False (nothing done) for a g it does not take."""
        if g.dtype.name not in _UNSCALE_DTYPES or not g.is_contiguous():
            return False
        self._check_dtype(g.dtype, g.device, "_amp_foreach_non_finite_check_and_unscale_")
        n = g.numel()
        h = self.handle
        self.run(g.device, f"amp_unscale_{g.dtype.name}", n,
                 [n, h(g), g.storage_offset(), h(found_inf), found_inf.storage_offset(),
                  h(inv_scale), inv_scale.storage_offset()])
        g._bump_version()
        found_inf._bump_version()
        return True
