"""GPUBackend's sorting and searching over rows (kernels/gpu/programs/sort.h)."""
from __future__ import annotations


class SortKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def sort_rows(self, vals, idx, n, descending):
        total = vals.numel()
        if total == 0:
            return vals
        if not (vals.is_contiguous() and vals.storage_offset() == 0 and idx.is_contiguous()
                and idx.storage_offset() == 0):
            raise ValueError("sort: internal error: bad layout")
        rows = total // n
        tv = self.empty(vals.shape, vals.dtype, vals.device)
        ti = self.empty(idx.shape, idx.dtype, idx.device)
        self.run(vals.device, f"sort_rows_{vals.dtype.name}", rows,
                 [rows, n, self.handle(vals), self.handle(idx), self.handle(tv), self.handle(ti),
                  int(descending)], group=64)
        return vals

    def searchsorted(self, seq, shared, vals, out, right):
        n, m = seq.shape[-1], vals.shape[-1]
        if vals.numel() == 0:
            return out
        seq, vals = self.dense(seq), self.dense(vals)
        rows = vals.numel() // m
        self.run(vals.device, f"searchsorted_{vals.dtype.name}", rows * m,
                 [rows, m, n, self.handle(seq), 0 if shared else n, self.handle(vals),
                  self.handle(out), int(right)])
        return out
