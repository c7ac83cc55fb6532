"""GPUBackend's matmul family: NumPy's matmul over the tiled GEMM of
kernels/gpu/programs/matmul.h (CUDABackend adds its own fast paths)."""
from __future__ import annotations

import math

import ember
from ember.backends.gpu.layout import contiguous_strides, pack_layout


def matmul_batch_shape(a, b):
    """The broadcast of matmul's batch dims (all but the last two of each operand)."""
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    try:
        return tuple(ember.broadcast_shapes(ba, bb))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {ba} and {bb} cannot be broadcast") from None


class MatmulKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def matmul(self, a, b):
        """NumPy's matmul (1-d operands, broadcast batch dims) over the program
        matmul.h, every dtype (as the CPU's GEMM)."""
        self._check_dtype(a.dtype, a.device, "matmul")
        nda, ndb = a.ndim, b.ndim
        sa, sb = a.stride(), b.stride()
        if nda == 1:
            m, k, rsa, csa = 1, a.shape[0], 0, sa[0]
        else:
            m, k, rsa, csa = a.shape[-2], a.shape[-1], sa[-2], sa[-1]
        if ndb == 1:
            n, rsb, csb = 1, sb[0], 0
        else:
            n, rsb, csb = b.shape[-1], sb[-2], sb[-1]
        bshape = matmul_batch_shape(a, b)
        bnd = len(bshape)
        ba = (1,) * (bnd - max(nda - 2, 0)) + tuple(a.shape[:-2])
        bb = (1,) * (bnd - max(ndb - 2, 0)) + tuple(b.shape[:-2])
        oshape = bshape + ((m,) if nda > 1 else ()) + ((n,) if ndb > 1 else ())
        out = self.empty(oshape, a.dtype, a.device)
        if out.numel() == 0:
            return out
        if k == 0:
            self.fill(out, 0)
            return out

        def pad(strides, nd):
            return (0,) * (bnd - nd) + tuple(strides)

        bsa = [0 if s == 1 else st for s, st in zip(ba, pad(sa[:-2], max(nda - 2, 0)))]
        bsb = [0 if s == 1 else st for s, st in zip(bb, pad(sb[:-2], max(ndb - 2, 0)))]
        bsc = list(contiguous_strides(tuple(bshape) + (m, n)))[:bnd]
        layout = pack_layout(tuple(bshape), [(bsc, 0), (bsa, a.storage_offset()),
                                             (bsb, b.storage_offset())], op="matmul")
        nbatch = math.prod(bshape)
        tiles = (-(-n // 64) * 16, -(-m // 64) * 16, min(nbatch, 65535))
        self.launch(a.device, f"gemm_{a.dtype.name}", tiles, (16, 16, 1),
                    [m, n, k, nbatch, self.handle(out), n, 1, self.handle(a), rsa, csa,
                     self.handle(b), rsb, csb, layout])
        return out
