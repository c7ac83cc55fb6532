"""GPUBackend's dropout (kernels/gpu/programs/dropout.h)."""
from __future__ import annotations

import math
import struct

from ember._C import core as _core


class DropoutKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def dropout(self, x, p, seed, offset):
        self._float_kernel(x, "dropout", ("float32", "float64"))
        x = self.dense(x)
        y = self.empty(x.shape, x.dtype, x.device)
        mask = self.empty(x.shape, _core._dtype_by_name("bool"), x.device)
        n = x.numel()
        pf = struct.unpack("f", struct.pack("f", p))[0]     # p rounded to float32
        thr = math.ceil(pf * 16777216.0)
        scale = 1 / (1 - p) if p < 1 else 0.0
        self.run(x.device, f"dropout_{x.dtype.name}", n,
                 [n, self.handle(x), self.handle(y), self.handle(mask), thr, scale,
                  seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, offset])
        return y, mask

    def dropout_backward(self, grad, mask, scale):
        self._float_kernel(grad, "dropout_backward", ("float32", "float64"))
        grad, mask = self.dense(grad), self.dense(mask)
        dx = self.empty(grad.shape, grad.dtype, grad.device)
        n = grad.numel()
        self.run(grad.device, f"dropout_backward_{grad.dtype.name}", n,
                 [n, self.handle(grad), self.handle(mask), float(scale), self.handle(dx)])
        return dx
