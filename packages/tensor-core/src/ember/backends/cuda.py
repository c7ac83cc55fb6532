"""The CUDA backend: the shared GPU host logic (ember.backends.gpu) over ember._C.cuda.

Everything but the primitives is GPUBackend's: the kernels are the same portable
sources (kernels/gpu/programs/ and the op table's rendered rows) that OpenCL runs,
compiled by nvcc at build time; this class allocates from the caching allocator,
copies and launches on the device's stream, and adds the CUDA-only fast paths of
kernels/cuda/ (tensor-core and float32 matmul). It is registered for "cuda" when
ember was built with CUDA, also where no driver exists: then the first allocation
says why there is no device.

`em.backends.cuda.matmul.allow_tf32` (default False, as in PyTorch) lets float32
matrix products round their operands to TF32 on the tensor cores;
`em.backends.cudnn.allow_tf32` does the same for the GEMMs of convolutions.
"""
from __future__ import annotations

from ember._grad_mode import no_grad
from ember.backends.gpu import GPUBackend
from ember.backends.gpu.matmul import matmul_batch_shape


class _MatmulFlags:
    """em.backends.cuda.matmul: allow_tf32 (float32 products on TF32 tensor cores)."""

    def __init__(self):
        self.allow_tf32 = False

    def __repr__(self):
        return f"<ember.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulFlags()


_rt = None            # ember._C.cuda, imported by get(): builds without CUDA lack it
TILE = 128            # the block tile of kernels/cuda/gemm_*.cu
MAX_GRID_Z = 65535


class CUDABackend(GPUBackend):
    name = "cuda"

    @staticmethod
    def index(device):
        """The device index of a cuda device ("cuda" alone: the current device)."""
        return _rt.current_device() if device.index < 0 else device.index

    default_index = index      # "cuda" alone is the current device, as in PyTorch

    # primitives ----------------------------------------------------------------------
    def allocate(self, nbytes, device):
        return _rt.malloc(self.index(device), nbytes)

    def write(self, buf, offset, host):
        _rt.write(buf, offset, host)

    def read(self, buf, offset, host):
        _rt.read(buf, offset, host)

    def copy_buffer(self, dst, dst_offset, src, src_offset, nbytes):
        _rt.copy_buffer(dst, dst_offset, src, src_offset, nbytes)

    def launch(self, device, kernel, global_size, local_size, args):
        """OpenCL-style sizes (work-items in total per dim, work-group size) as a CUDA
        grid of blocks."""
        self.launches += 1
        block = tuple(local_size)
        grid = tuple(-(-g // b) for g, b in zip(global_size, block))
        _rt.launch(self.index(device), kernel, grid, block, args)

    def synchronize(self, device=None):
        _rt.synchronize(None if device is None else self.index(device))

    # CUDA-only fast paths --------------------------------------------------------------
    def matmul(self, a, b, allow_tf32=None):
        """float16 and bfloat16 on the tensor cores, float32 on TF32 tensor cores when allow_tf32
        (default: ember.backends.cuda.matmul.allow_tf32) else on
        kernels/cuda/gemm_f32.cu; float64, the integers and bool through the shared
        tiled GEMM."""
        tf32 = matmul.allow_tf32 if allow_tf32 is None else allow_tf32
        kernel = {"float16": "gemm_tc_float16", "bfloat16": "gemm_tc_bfloat16",
                  "float32": "gemm_tf32_float32" if tf32 else "gemm_simt_float32"
                  }.get(a.dtype.name)
        if kernel is None:
            return super().matmul(a, b)
        with no_grad():
            return self._matmul_tiled(kernel, a, b)

    def _conv_matmul(self, a, b):
        """Convolutions' GEMMs use TF32 by ember.backends.cudnn.allow_tf32, as PyTorch's
        cuDNN convolutions do (matrix products by cuda.matmul.allow_tf32)."""
        from ember.backends import cudnn
        return self.matmul(a, b, allow_tf32=bool(cudnn.allow_tf32))

    def _matmul_tiled(self, kernel, a, b):
        """The kernels of kernels/cuda/gemm_*.cu: 128 x 128 tiles of C per block, the
        batch (broadcast, flattened to one stride per operand) along grid z."""
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        (m, k), n = a2.shape[-2:], b2.shape[-1]
        batch = matmul_batch_shape(a, b)
        nb = 1
        for s in batch:
            nb *= s
        out = self.empty(batch + (m, n), a.dtype, a.device)
        if out.numel():
            # one stride per operand over the flattened batch (reshape copies only when
            # the batch dims cannot be walked with one stride)
            A = a2.expand(*batch, m, k).reshape(nb, m, k)
            B = b2.expand(*batch, k, n).reshape(nb, k, n)
            size = a.element_size()

            def addr(t):
                return self.handle(t).ptr + t.storage_offset() * size

            for z0 in range(0, nb, MAX_GRID_Z):
                z = min(MAX_GRID_Z, nb - z0)
                args = [addr(A) + z0 * A.stride(0) * size, addr(B) + z0 * B.stride(0) * size,
                        addr(out) + z0 * m * n * size, m, n, k,
                        A.stride(1), A.stride(2), B.stride(1), B.stride(2), n,
                        A.stride(0), B.stride(0), m * n]
                self.launches += 1
                _rt.launch(self.index(a.device), kernel, (-(-n // TILE), -(-m // TILE), z),
                           (256,), args)
        if a.ndim == 1:
            out = out.squeeze(-2)
        if b.ndim == 1:
            out = out.squeeze(-1)
        return out


_backend = None


def get():
    """The backend, created on first use (ember.cuda registers it for "cuda")."""
    global _backend, _rt
    if _backend is None:
        from ember._C import cuda
        _rt = cuda
        _backend = CUDABackend()
    return _backend
