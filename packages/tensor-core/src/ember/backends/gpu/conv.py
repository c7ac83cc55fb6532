"""GPUBackend's convolutions: im2col / col2im of kernels/gpu/programs/conv.h around
one batched matmul per pass; over channels_last (NHWC) activations, im2row / row2im,
which read and write that storage as it is, with the weight taken as OHWI (a
channels_last weight's storage)."""
from __future__ import annotations

from ember import _layout_formats as _fmt
from ember.backends.gpu.layout import contiguous_strides


def _cl_dense(t):
    """t stored channels_last from element 0 of its buffer (a copy when it is not)."""
    t = _fmt.to_format(t, _fmt.channels_last, "conv2d")
    return t if t.storage_offset() == 0 else t.clone()


def _nhwc(act, other):
    """Whether a pass runs NHWC (as ember._C.conv's use_nhwc)."""
    return _fmt._channels_last_input(act) or (
        act.is_contiguous(memory_format=_fmt.channels_last) and
        _fmt._channels_last_input(other))


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

    def _rows(self, x, khw, ohw, stride, padding, dilation, groups):
        """im2row of channels_last x: (N, OH * OW, G * K), a pixel's taps per row."""
        N, C, H, W = x.shape
        K = C // groups * khw[0] * khw[1]
        rows = self.empty((N, ohw[0] * ohw[1], groups * K), x.dtype, x.device)
        n = rows.numel()
        self.run(x.device, f"im2row_nhwc_{x.dtype.name}", n,
                 [n, C, H, W, khw[0], khw[1], ohw[0], ohw[1], stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], groups, self.handle(x),
                  self.handle(rows)])
        return rows

    def _cl_view(self, t, n, c, h, w):
        """(n, h, w, c) dense t viewed as (n, c, h, w)."""
        return self.view(t, (n, c, h, w), (h * w * c, 1, w * c, c))

    def _forward_nhwc(self, x, w, bias, out_hw, stride, padding, dilation, groups):
        x, w = _cl_dense(x), _cl_dense(w)
        N = x.shape[0]
        OC, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, out_hw[0] * out_hw[1]
        rows = self._rows(x, (KH, KW), out_hw, stride, padding, dilation, groups)
        # y[n, :, g] (P, OCg) = rows[n, :, g] (P, K) @ w[g]^T (K, OCg)
        a = self.view(rows, (N, G, P, K), (P * G * K, K, G * K, 1))
        b = self.view(w, (1, G, K, OCg), (0, OCg * K, 1, K))
        y = self._conv_matmul(a, b)                     # (N, G, P, OCg)
        if G > 1:   # to (N, P, G, OCg): the NHWC order of the channels
            y = self.contiguous(self.view(y, (N, P, G, OCg), (G * P * OCg, OCg, P * OCg, 1)))
        y = self._cl_view(y, N, OC, out_hw[0], out_hw[1])
        if bias is not None:
            self.elementwise("add", [y, self.view(self.dense(bias), (OC, 1, 1), (1, 0, 0))],
                             y.dtype, y.dtype, y)
        return y

    def conv2d_forward(self, x, w, bias, out_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d", ("float32", "float64"))
        if _nhwc(x, w):
            return self._forward_nhwc(x, w, bias, out_hw, stride, padding, dilation, groups)
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

    def _backward_input_nhwc(self, gy, w, bias, in_hw, stride, padding, dilation, groups):
        gy, w = _cl_dense(gy), _cl_dense(w)
        N, OC, OH, OW = gy.shape
        _, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, OH * OW
        C = Cg * G
        # cols[n, g] (P, K) = gy[n, :, g] (P, OCg) @ w[g] (OCg, K)
        a = self.view(gy, (N, G, P, OCg), (P * OC, OCg, OC, 1))
        b = self.view(w, (1, G, OCg, K), (0, OCg * K, K, 1))
        cols = self._conv_matmul(a, b)
        gx = self.empty((N,) + tuple(in_hw) + (C,), gy.dtype, gy.device)
        n = gx.numel()
        bb = self.dense(bias) if bias is not None else gy
        self.run(gy.device, f"row2im_nhwc_{gy.dtype.name}", n,
                 [n, C, in_hw[0], in_hw[1], KH, KW, OH, OW, stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], G, self.handle(cols), self.handle(gx),
                  self.handle(bb), int(bias is not None)])
        return self._cl_view(gx, N, C, in_hw[0], in_hw[1])

    def conv2d_backward_input(self, gy, w, bias, in_hw, stride, padding, dilation, groups):
        self._float_kernel(gy, "conv2d_backward_input", ("float32", "float64"))
        if _nhwc(gy, w):
            return self._backward_input_nhwc(gy, w, bias, in_hw, stride, padding, dilation,
                                             groups)
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

    def _backward_weight_nhwc(self, x, gy, kernel_hw, stride, padding, dilation, groups):
        x, gy = _cl_dense(x), _cl_dense(gy)
        N, C = x.shape[:2]
        OC, OH, OW = gy.shape[1:]
        KH, KW = kernel_hw
        G, Cg = groups, C // groups
        OCg, K, P = OC // G, Cg * KH * KW, OH * OW
        rows = self._rows(x, (KH, KW), (OH, OW), stride, padding, dilation, groups)
        # per image gw[n, g] (OCg, K) = gy[n, :, g]^T (OCg, P) @ rows[n, :, g] (P, K)
        a = self.view(gy, (N, G, OCg, P), (P * OC, OCg, 1, OC))
        b = self.view(rows, (N, G, P, K), (P * G * K, K, G * K, 1))
        per = self._conv_matmul(a, b)
        gw = self.empty((1, G, OCg, K), x.dtype, x.device)
        self.reduce("sum", per, (0,), gw)
        return self.view(gw, (OC, Cg, KH, KW), (K, 1, KW * Cg, Cg))   # OHWI storage

    def conv2d_backward_weight(self, x, gy, kernel_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d_backward_weight", ("float32", "float64"))
        if _nhwc(x, gy) or _nhwc(gy, x):
            return self._backward_weight_nhwc(x, gy, kernel_hw, stride, padding, dilation,
                                              groups)
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
