"""GPUBackend's cumulative sums and products (kernels/gpu/programs/scan.h)."""
from __future__ import annotations


class ScanKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def scan(self, op, x, outer, n, inner):
        if not (x.is_contiguous() and x.storage_offset() == 0):
            raise ValueError(f"{op}: internal error: bad layout")
        self.run(x.device, f"scan_{x.dtype.name}", outer * inner,
                 [outer, n, inner, self.handle(x), 0 if op == "cumsum" else 1], group=64)
        return x
