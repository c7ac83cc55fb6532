"""GPUBackend's layer norm (programs/norm.h: a launch forward, two backward) and batch
norm (composed from the op table's kernels on the device)."""
from __future__ import annotations

import math

import ember
from ember._C import core as _core
from ember.backends.gpu.layout import contiguous_strides


class NormKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def ew(self, op, *operands):
        """Row `op` over tensors of this device / Python scalars, into a new tensor of
        the broadcast shape (operands share one float dtype)."""
        ts = [a for a in operands if isinstance(a, _core.TensorBase)]
        shape = ember.broadcast_shapes(*[t.shape for t in ts])
        out = self.empty(shape, ts[0].dtype, ts[0].device)
        return self.elementwise(op, list(operands), ts[0].dtype, ts[0].dtype, out)

    def sum_to(self, x, dims, shape):
        """x summed over dims into a new tensor of (keepdim) `shape`."""
        out = self.empty(shape, x.dtype, x.device)
        return self.reduce("sum", x, tuple(dims), out)

    def layer_norm(self, x, weight, bias, k, eps):
        """One launch (programs/norm.h layer_norm_rows): y, mean and rstd."""
        self._float_kernel(x, "layer_norm", ("float32", "float64"))
        x = self.dense(x)
        lead = tuple(x.shape[:x.ndim - k])
        rows, n = math.prod(lead), math.prod(x.shape[x.ndim - k:])
        stats = lead + (1,) * k
        y = self.empty(x.shape, x.dtype, x.device)
        mean, rstd = (self.empty(stats, x.dtype, x.device) for _ in range(2))
        w, b = (None if t is None else self.dense(t) for t in (weight, bias))
        h = self.handle
        self.rows_launch(x.device, f"layer_norm_rows_{x.dtype.name}", rows,
                         [rows, n, h(x), h(y), h(w if w is not None else x),
                          h(b if b is not None else x), int(w is not None), int(b is not None),
                          h(mean), h(rstd), eps])
        return y, mean, rstd

    def layer_norm_backward(self, grad, x, mean, rstd, weight, k, output_mask):
        """The input gradient in one launch, the weight's and bias's in one more
        (programs/norm.h)."""
        self._float_kernel(x, "layer_norm_backward", ("float32", "float64"))
        grad, x, mean, rstd = (self.dense(t) for t in (grad, x, mean, rstd))
        tail = tuple(x.shape[x.ndim - k:])
        n = math.prod(tail)
        rows = x.numel() // n if n else 0
        h, dev, dt = self.handle, x.device, x.dtype.name
        dx = dw = db = None
        if output_mask[0]:
            dx = self.empty(x.shape, x.dtype, dev)
            w = None if weight is None else self.dense(weight)
            self.rows_launch(dev, f"layer_norm_backward_rows_{dt}", rows,
                             [rows, n, h(grad), h(x), h(mean), h(rstd),
                              h(w if w is not None else x), int(w is not None), h(dx)])
        if output_mask[1] or output_mask[2]:
            dw = self.empty(tail, x.dtype, dev) if output_mask[1] else None
            db = self.empty(tail, x.dtype, dev) if output_mask[2] else None
            self.run(dev, f"layer_norm_param_grads_{dt}", n,     # rows 0: zeros
                     [rows, n, h(grad), h(x), h(mean), h(rstd),
                      h(dw if dw is not None else x), h(db if db is not None else x),
                      int(dw is not None), int(db is not None)])
        return dx, dw, db

    def _ncs(self, x):
        N, C = x.shape[:2]
        S = math.prod(x.shape[2:])
        return self.view(self.dense(x), (N, C, S), (C * S, S, 1)), N, C, S

    def _per_channel(self, v, C):
        return self.view(self.dense(v), (1, C, 1), (0, 1, 0))

    def batch_norm_stats(self, x):
        self._float_kernel(x, "batch_norm_stats", ("float32", "float64"))
        x3, N, C, S = self._ncs(x)
        mean = self.ew("div", self.sum_to(x3, (0, 2), (1, C, 1)), N * S)
        d = self.ew("sub", x3, mean)
        var = self.ew("div", self.sum_to(self.ew("mul", d, d), (0, 2), (1, C, 1)), N * S)
        return self.view(mean, (C,), (1,)), self.view(var, (C,), (1,))

    def batch_norm_backward_reduce(self, grad, x, mean):
        self._float_kernel(x, "batch_norm_backward_reduce", ("float32", "float64"))
        g3, N, C, S = self._ncs(grad)
        x3 = self._ncs(x)[0]
        sg = self.sum_to(g3, (0, 2), (1, C, 1))
        sgx = self.sum_to(self.ew("mul", g3, self.ew("sub", x3, self._per_channel(mean, C))),
                          (0, 2), (1, C, 1))
        if N * S == 0:
            self.fill(sg, 0)
            self.fill(sgx, 0)
        return self.view(sg, (C,), (1,)), self.view(sgx, (C,), (1,))

    def batch_norm_elemt(self, u, v, a, b, d):
        self._float_kernel(u, "batch_norm_elemt", ("float32", "float64"))
        u3, N, C, S = self._ncs(u)
        out = self.ew("add", self.ew("mul", u3, self._per_channel(a, C)), self._per_channel(d, C))
        if v is not None:
            out = self.ew("add", out, self.ew("mul", self._ncs(v)[0], self._per_channel(b, C)))
        return self.view(out, u.shape, contiguous_strides(tuple(u.shape)))
