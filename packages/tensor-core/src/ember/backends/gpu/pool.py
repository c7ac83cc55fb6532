"""GPUBackend's pooling over dense NCHW planes (kernels/gpu/programs/pool.h)."""
from __future__ import annotations

from ember._C import core as _core


class PoolKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    @staticmethod
    def _pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    def _planes_out(self, x, ohw, dtype=None):
        N, C = x.shape[:2]
        return self.empty((N, C) + tuple(ohw), dtype or x.dtype, x.device)

    def max_pool2d(self, x, kernel, stride, padding, dilation, out_size, with_indices):
        self._float_kernel(x, "max_pool2d", ("float32", "float64"))
        x = self.dense(x)
        k, st, p, d, o = map(self._pair, (kernel, stride, padding, dilation, out_size))
        y = self._planes_out(x, o)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64")) if with_indices else None
        n = y.numel()
        self.run(x.device, f"max_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  d[0], d[1], self.handle(x), self.handle(y),
                  self.handle(ix if ix is not None else y),
                  int(with_indices)])
        return y, ix

    def avg_pool2d(self, x, kernel, stride, padding, out_size, count_include_pad, divisor):
        self._float_kernel(x, "avg_pool2d", ("float32", "float64"))
        x = self.dense(x)
        k, st, p, o = map(self._pair, (kernel, stride, padding, out_size))
        y = self._planes_out(x, o)
        n = y.numel()
        self.run(x.device, f"avg_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  self.handle(x), self.handle(y), int(count_include_pad), int(divisor)])
        return y

    def avg_pool2d_backward(self, grad, input_shape, kernel, stride, padding,
                            count_include_pad, divisor):
        self._float_kernel(grad, "avg_pool2d_backward", ("float32", "float64"))
        grad = self.dense(grad)
        k, st, p = map(self._pair, (kernel, stride, padding))
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], k[0], k[1], st[0], st[1], p[0],
                  p[1], self.handle(grad), self.handle(dx), int(count_include_pad),
                  int(divisor)], group=64)
        return dx

    def _adaptive(self, x, out_size, is_max):
        self._float_kernel(x, "adaptive_pool2d", ("float32", "float64"))
        x = self.dense(x)
        o = self._pair(out_size)
        y = self._planes_out(x, o)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64")) if is_max else None
        n = y.numel()
        self.run(x.device, f"adaptive_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], self.handle(x), self.handle(y),
                  self.handle(ix if is_max else y), int(is_max)])
        return (y, ix) if is_max else y

    def adaptive_avg_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, False)

    def adaptive_max_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, True)

    def adaptive_avg_pool2d_backward(self, grad, input_shape):
        self._float_kernel(grad, "adaptive_avg_pool2d_backward", ("float32", "float64"))
        grad = self.dense(grad)
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"adaptive_avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], self.handle(grad),
                  self.handle(dx)], group=64)
        return dx

    def max_pool2d_backward(self, grad, indices, input_shape):
        self._float_kernel(grad, "max_pool2d_backward", ("float32", "float64"))
        grad, indices = self.dense(grad), self.dense(indices)
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"max_pool_backward_{grad.dtype.name}", planes,
                 [planes, H * W, grad.shape[2] * grad.shape[3], self.handle(grad),
                  self.handle(indices), self.handle(dx)], group=64)
        return dx
