"""GPUBackend's pooling over dense NCHW planes or channels_last (NHWC) storage, which
the kernels of kernels/gpu/programs/pool.h read and write as it is (cl = 1)."""
from __future__ import annotations

from ember import _layout_formats as _fmt
from ember._C import core as _core


class PoolKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    @staticmethod
    def _pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    def _layout(self, x):
        """(x as the kernels take it, cl): channels_last storage from element 0 as it is,
        else dense NCHW."""
        if _fmt._channels_last_input(x):
            return (x if x.storage_offset() == 0 else x.clone()), 1
        return self.dense(x), 0

    def _planes_out(self, x, ohw, dtype=None, cl=0):
        """A new (N, C, *ohw) tensor, stored NHWC when cl."""
        N, C = x.shape[:2]
        if not cl:
            return self.empty((N, C) + tuple(ohw), dtype or x.dtype, x.device)
        oh, ow = ohw
        buf = self.empty((N, oh, ow, C), dtype or x.dtype, x.device)
        return self.view(buf, (N, C, oh, ow), (oh * ow * C, 1, ow * C, C))

    def max_pool2d(self, x, kernel, stride, padding, dilation, out_size, with_indices):
        self._float_kernel(x, "max_pool2d", ("float32", "float64"))
        x, cl = self._layout(x)
        k, st, p, d, o = map(self._pair, (kernel, stride, padding, dilation, out_size))
        y = self._planes_out(x, o, cl=cl)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64"), cl) if with_indices else None
        n = y.numel()
        self.run(x.device, f"max_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  d[0], d[1], self.handle(x), self.handle(y),
                  self.handle(ix if ix is not None else y),
                  int(with_indices), x.shape[1], cl])
        return y, ix

    def avg_pool2d(self, x, kernel, stride, padding, out_size, count_include_pad, divisor):
        self._float_kernel(x, "avg_pool2d", ("float32", "float64"))
        x, cl = self._layout(x)
        k, st, p, o = map(self._pair, (kernel, stride, padding, out_size))
        y = self._planes_out(x, o, cl=cl)
        n = y.numel()
        self.run(x.device, f"avg_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  self.handle(x), self.handle(y), int(count_include_pad), int(divisor),
                  x.shape[1], cl])
        return y

    def avg_pool2d_backward(self, grad, input_shape, kernel, stride, padding,
                            count_include_pad, divisor):
        self._float_kernel(grad, "avg_pool2d_backward", ("float32", "float64"))
        grad, cl = self._layout(grad)
        k, st, p = map(self._pair, (kernel, stride, padding))
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W), cl=cl)
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], k[0], k[1], st[0], st[1], p[0],
                  p[1], self.handle(grad), self.handle(dx), int(count_include_pad),
                  int(divisor), grad.shape[1], cl], group=64)
        return dx

    def _adaptive(self, x, out_size, is_max):
        self._float_kernel(x, "adaptive_pool2d", ("float32", "float64"))
        x, cl = self._layout(x)
        o = self._pair(out_size)
        y = self._planes_out(x, o, cl=cl)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64"), cl) if is_max else None
        n = y.numel()
        self.run(x.device, f"adaptive_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], self.handle(x), self.handle(y),
                  self.handle(ix if is_max else y), int(is_max), x.shape[1], cl])
        return (y, ix) if is_max else y

    def adaptive_avg_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, False)

    def adaptive_max_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, True)

    def adaptive_avg_pool2d_backward(self, grad, input_shape):
        self._float_kernel(grad, "adaptive_avg_pool2d_backward", ("float32", "float64"))
        grad, cl = self._layout(grad)
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W), cl=cl)
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"adaptive_avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], self.handle(grad),
                  self.handle(dx), grad.shape[1], cl], group=64)
        return dx

    def max_pool2d_backward(self, grad, indices, input_shape):
        self._float_kernel(grad, "max_pool2d_backward", ("float32", "float64"))
        grad, cl = self._layout(grad)
        indices, icl = self._layout(indices)
        if icl != cl:
            raise ValueError(f"max_pool2d_backward: indices {tuple(indices.shape)} and grad "
                             f"{tuple(grad.shape)} differ in layout")
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W), cl=cl)
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"max_pool_backward_{grad.dtype.name}", planes,
                 [planes, H * W, grad.shape[2] * grad.shape[3], self.handle(grad),
                  self.handle(indices), self.handle(dx), grad.shape[1], cl], group=64)
        return dx
