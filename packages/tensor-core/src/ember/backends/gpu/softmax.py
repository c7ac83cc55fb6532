"""GPUBackend's softmax over rows (kernels/gpu/programs/softmax.h)."""
from __future__ import annotations


class SoftmaxKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def softmax_rows(self, x, log_softmax):
        self._float_kernel(x, "softmax", ("float32", "float64"))
        x = self.dense(x)
        y = self.empty(x.shape, x.dtype, x.device)
        n = x.shape[-1] if x.ndim else 1
        rows = x.numel() // n if n else 0
        self.rows_launch(x.device, f"softmax_rows_{x.dtype.name}", rows,
                         [rows, n, self.handle(y), self.handle(x), int(log_softmax)])
        return y

    def softmax_backward_rows(self, grad, out, log_softmax):
        self._float_kernel(out, "softmax_backward", ("float32", "float64"))
        grad, out = self.dense(grad), self.dense(out)
        dx = self.empty(out.shape, out.dtype, out.device)
        n = out.shape[-1] if out.ndim else 1
        rows = out.numel() // n if n else 0
        self.rows_launch(out.device, f"softmax_backward_rows_{out.dtype.name}", rows,
                         [rows, n, self.handle(dx), self.handle(grad), self.handle(out),
                          int(log_softmax)])
        return dx
