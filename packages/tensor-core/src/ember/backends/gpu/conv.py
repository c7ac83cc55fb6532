"""GPUBackend's convolutions: im2col / col2im of kernels/gpu/programs/conv.h around
one batched matmul per pass."""
from __future__ import annotations

from ember.backends.gpu.layout import contiguous_strides


class ConvKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def _conv_matmul(self, a, b):
        """The GEMM of a convolution pass (CUDA's picks TF32 by cudnn.allow_tf32)."""
        return self.matmul(a, b)

    def _unfold(self, x, khw, ohw, stride, padding, dilation):
        """im2col of dense x: (N, C * KH * KW, OH * OW)."""
        N, C, H, W = x.shape
        cols = self.empty((N, C * khw[0] * khw[1], ohw[0] * ohw[1]), x.dtype, x.device)
        n = cols.numel()
        self.run(x.device, f"im2col_{x.dtype.name}", n,
                 [n, C, H, W, khw[0], khw[1], ohw[0], ohw[1], stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], self.handle(x), self.handle(cols)])
        return cols

    def conv2d_forward(self, x, w, bias, out_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d", ("float32", "float64"))
        x, w = self.dense(x), self.dense(w)
        N, C = x.shape[:2]
        OC, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, out_hw[0] * out_hw[1]
        cols = self._unfold(x, (KH, KW), out_hw, stride, padding, dilation)
        # y[n, g] (OCg, P) = w[g] (OCg, K) @ cols[n, g] (K, P), one batched GEMM
        a = self.view(w, (1, G, OCg, K), (0, OCg * K, K, 1))
        b = self.view(cols, (N, G, K, P), (G * K * P, K * P, P, 1))
        y = self._conv_matmul(a, b)
        y = self.view(y, (N, OC, out_hw[0], out_hw[1]), contiguous_strides((N, OC) + tuple(out_hw)))
        if bias is not None:
            self.elementwise("add", [y, self.view(self.dense(bias), (OC, 1, 1), (1, 0, 0))],
                             y.dtype, y.dtype, y)
        return y

    def conv2d_backward_input(self, gy, w, bias, in_hw, stride, padding, dilation, groups):
        self._float_kernel(gy, "conv2d_backward_input", ("float32", "float64"))
        gy, w = self.dense(gy), self.dense(w)
        N, OC, OH, OW = gy.shape
        _, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, OH * OW
        C = Cg * G
        # cols[n, g] (K, P) = w[g]^T (K, OCg) @ gy[n, g] (OCg, P)
        a = self.view(w, (1, G, K, OCg), (0, OCg * K, 1, K))
        b = self.view(gy, (N, G, OCg, P), (OC * P, OCg * P, P, 1))
        cols = self._conv_matmul(a, b)
        gx = self.empty((N, C) + tuple(in_hw), gy.dtype, gy.device)
        n = gx.numel()
        bb = self.dense(bias) if bias is not None else gy
        self.run(gy.device, f"col2im_{gy.dtype.name}", n,
                 [n, C, in_hw[0], in_hw[1], KH, KW, OH, OW, stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], self.handle(cols), self.handle(gx),
                  self.handle(bb), int(bias is not None)])
        return gx

    def conv2d_backward_weight(self, x, gy, kernel_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d_backward_weight", ("float32", "float64"))
        x, gy = self.dense(x), self.dense(gy)
        N, C = x.shape[:2]
        OC, OH, OW = gy.shape[1:]
        KH, KW = kernel_hw
        G, Cg = groups, C // groups
        OCg, K, P = OC // G, Cg * KH * KW, OH * OW
        cols = self._unfold(x, (KH, KW), (OH, OW), stride, padding, dilation)
        # per image gw[n, g] (OCg, K) = gy[n, g] (OCg, P) @ cols[n, g]^T (P, K), summed over n
        a = self.view(gy, (N, G, OCg, P), (OC * P, OCg * P, P, 1))
        b = self.view(cols, (N, G, P, K), (G * K * P, K * P, 1, P))
        per = self._conv_matmul(a, b)
        gw = self.empty((1, G, OCg, K), x.dtype, x.device)
        self.reduce("sum", per, (0,), gw)
        return self.view(gw, (OC, Cg, KH, KW), contiguous_strides((OC, Cg, KH, KW)))
