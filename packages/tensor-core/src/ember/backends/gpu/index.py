"""GPUBackend's indexing: index checks, gather, scatter, nonzero, compress and iota
(kernels/gpu/programs/index.h)."""
from __future__ import annotations

import array
import math

from ember._C import core as _core
from ember.backends.gpu.layout import LAYOUT_WORDS, MAXD, pack_layout


class IndexKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def normalize(self, index, size, allow_negative, error):
        """A contiguous int64 copy of index, negatives wrapped, checked against size on
        the device without waiting: a bad index becomes 0 (the kernels that follow stay
        in bounds) and error(its position) is raised at the next synchronizing read
        (deferred_check). One launch from a dense int64 index (copy and check at once)."""
        int64 = _core._dtype_by_name("int64")
        if index.dtype is int64 and index.is_contiguous() and index.storage_offset() == 0:
            src, out = index, self.empty(tuple(index.shape), int64, index.device)
        else:
            src = out = _core.astype(index, int64)
        n = out.numel()
        if n == 0:
            return out
        if size == 0:
            raise error(0)    # no index is valid and none could stand in for a bad one
        self.deferred_check(out.device, "index_normalize", n,
                            [n, self.handle(src), self.handle(out), size, int(allow_negative)],
                            error)
        return out

    def _index_layout(self, out_shape, first, second, indices, op):
        """em_layout over out_shape for two strided operands and up to two index
        tensors; (layout, index buffers, steps)."""
        if len(indices) > 2:
            raise NotImplementedError(f"{op}: the {self.name} kernels take at most 2 index "
                                      f"tensors at once, got {len(indices)}")
        ops = [first, second]
        bufs, steps = [], []
        for t, strides, step, _size in indices:
            ops.append((tuple(strides), t.storage_offset()))
            bufs.append(self.handle(t))
            steps.append(step)
        while len(bufs) < 2:
            bufs.append(self.handle(indices[0][0]) if indices else None)
            steps.append(0)
        return pack_layout(tuple(out_shape), ops, op=op), bufs, steps

    def gather(self, out, src, src_strides, indices):
        n = out.numel()
        if n == 0:
            return out
        layout, bufs, steps = self._index_layout(
            out.shape, (out.stride(), out.storage_offset()),
            (tuple(src_strides), src.storage_offset()), indices, "index")
        bufs = [b if b is not None else self.handle(out) for b in bufs]
        self.run(out.device, f"gather_{out.dtype.name}", n,
                 [n, self.handle(out), self.handle(src)] + bufs + steps + [len(indices), layout])
        return out

    _SCATTER_OPS = {None: 0, "assign": 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2,
                    "amax": 3, "amin": 4}

    _SCATTER_OPS = {None: 0, "assign": 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2,
                    "amax": 3, "amin": 4}

    def scatter(self, dst, dst_strides, src, src_strides, shape, indices, reduce=None):
        n = math.prod(shape)
        if n == 0:
            return dst
        layout, bufs, steps = self._index_layout(
            shape, (tuple(dst_strides), dst.storage_offset()),
            (tuple(src_strides), src.storage_offset()), indices, "index_put")
        bufs = [b if b is not None else self.handle(dst) for b in bufs]
        self.launch(dst.device, f"scatter_{dst.dtype.name}", (1,), (1,),
                    [n, self.handle(dst), self.handle(src)] + bufs + steps +
                    [len(indices), self._SCATTER_OPS[reduce], layout])
        return dst

    def _count_true(self, mask):
        total = self.empty((1,), _core._dtype_by_name("int64"), mask.device)
        self.reduce("sum", mask, tuple(range(mask.ndim)), total.reshape((1,) * mask.ndim)
                    if mask.ndim else total.reshape(()))
        return _core.item(self.to_cpu(total))

    def nonzero(self, mask):
        mask = self.dense(mask)
        count = self._count_true(mask)
        out = self.empty((count, mask.ndim), _core._dtype_by_name("int64"), mask.device)
        if count and mask.ndim:
            layout = array.array("q", [mask.ndim, 0, 0, 0] + list(mask.shape) +
                                 [0] * (LAYOUT_WORDS - 4 - mask.ndim)).tobytes()
            if mask.ndim > MAXD:
                raise NotImplementedError(f"nonzero: at most {MAXD} dims on {self.name}")
            self.launch(mask.device, "nonzero_bool", (1,), (1,),
                        [mask.numel(), self.handle(mask), self.handle(out), layout])
        return out

    def compress(self, src, stride, mask):
        mask = self.dense(mask)
        count = self._count_true(mask)
        out = self.empty((count,), src.dtype, src.device)
        if count:
            self.launch(src.device, f"compress_{src.dtype.name}", (1,), (1,),
                        [mask.numel(), self.handle(src), src.storage_offset(), stride,
                         self.handle(mask), self.handle(out)])
        return out

    def iota(self, n, device):
        """0, 1, ..., n - 1 as int64 on the device (arange, linspace)."""
        out = self.empty((n,), _core._dtype_by_name("int64"), device)
        self.run(device, "iota_int64", n, [n, self.handle(out)])
        return out
