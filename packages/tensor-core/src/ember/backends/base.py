"""The one interface every backend implements (cpu.py, cuda.py, opencl.py).

ember._C.core's op-table dispatch picks the backend from the inputs' device and calls
elementwise/reduce/copy/fill (the CPU's run in C inside the core, the fast path); every
hand-written op reaches its kernel through `ember.backends.kernel(...)`, i.e.
`backend_for(device).kernel(name, ...)`. A missing kernel raises
NotImplementedError("<op>: no kernel for <device> (<dtype>)"); nothing falls back to
the host silently (DESIGN.md, "Devices and backends").

Arguments are ember tensors (their storage's `handle` is the backend's buffer object,
their layout is shape/strides/offset in elements) or Python scalars.
"""
from __future__ import annotations


class Backend:
    name = "abstract"

    # memory -------------------------------------------------------------------
    def allocate(self, nbytes, device):
        """A buffer object for nbytes on device; frees itself when collected. May
        expose `.ptr` (an integer device address) for backends that have one."""
        raise NotImplementedError

    def default_index(self, device):
        """The index a bare device type ("opencl") means; storages always record one."""
        return 0

    def from_cpu(self, tensor, device):
        """A new tensor on device holding a copy of the CPU tensor."""
        raise NotImplementedError

    def to_cpu(self, tensor):
        """A new CPU tensor holding a copy of the device tensor (synchronizes)."""
        raise NotImplementedError

    def copy(self, dst, src):
        """dst[...] = src with broadcasting and dtype conversion (either may be on
        the CPU for host<->device copies)."""
        raise NotImplementedError

    def fill(self, tensor, value):
        raise NotImplementedError

    def item(self, tensor):
        return self.to_cpu(tensor).item()

    # the op table ---------------------------------------------------------------
    def elementwise(self, op_name, operands, compute_dtype, out_dtype, out):
        """Run op-table row `op_name` into `out`. The core has already checked devices,
        broadcast the shapes, allocated `out` (the broadcast shape, out_dtype, this
        device) and converted the tensor operands to compute_dtype (the condition of
        `where` to bool); Python scalars come as they are, to be passed by value.
        Autograd recording and version bumps stay in the core."""
        raise NotImplementedError

    def reduce(self, op_name, tensor, dims, out):
        """Reduction row `op_name` of `tensor` over `dims` (a tuple of normalized dims)
        into `out`: contiguous, the keepdim shape, the row's output dtype."""
        raise NotImplementedError

    # The hand-written kernels: see HAND_WRITTEN_KERNELS below. A backend implements
    # each as a method of that name with the CPU function's signature.
    def kernel(self, name, op, device, dtype):
        """Hand-written kernel `name` for a call of `op` on `device` with `dtype`; the
        one place a missing kernel is reported, the same way on every device."""
        fn = getattr(self, name, None)
        dtypes = self.kernel_dtypes.get(name)
        if fn is None or (dtypes is not None and dtype.name not in dtypes):
            raise NotImplementedError(f"{op}: no kernel for {device} ({dtype.name})")
        return fn

    # kernel name -> the dtype names it has, for kernels written for some dtypes only
    # (the GPU's linalg: float32 and float64); a kernel not listed takes what its
    # family's ops allow
    kernel_dtypes = {}


# The kernels that are not one expression of the op table, so each backend writes its
# own (DESIGN.md, "One op, one place"): kernel name -> its family. A family's files are
# named alike: ember/ops/<family>.py (the Python entry and its backward),
# ember/_C/<family>.pyx (the CPU kernels, whose signatures and docstrings every backend's
# method of the same name follows), kernels/cpu/<family>.c, kernels/gpu/programs/<family>.h
# and ember/backends/gpu/<family>.py. Tensors are contiguous unless the CPU docstring says
# otherwise, and the Python layer has already checked shapes, dtypes and devices.
HAND_WRITTEN_KERNELS = {
    # out = a @ b with NumPy's batching and broadcasting
    "matmul": "matmul",
    # convolution (NCHW): forward, the input gradient (which is conv_transpose2d's
    # forward), the weight gradient
    "conv2d_forward": "conv",
    "conv2d_backward_input": "conv",
    "conv2d_backward_weight": "conv",
    # pooling (NCHW planes; 1-d pools run these with H = 1; max pools' indices are
    # flat h * W + w per plane, -1 for a window wholly in the padding)
    "max_pool2d": "pool",
    "max_pool2d_backward": "pool",
    "avg_pool2d": "pool",
    "avg_pool2d_backward": "pool",
    "adaptive_avg_pool2d": "pool",
    "adaptive_avg_pool2d_backward": "pool",
    "adaptive_max_pool2d": "pool",
    # fused numerics over rows / channels
    "softmax_rows": "softmax",
    "softmax_backward_rows": "softmax",
    "layer_norm": "norm",
    "layer_norm_backward": "norm",
    "batch_norm_stats": "norm",
    "batch_norm_backward_reduce": "norm",
    "batch_norm_elemt": "norm",
    "check_targets": "loss",
    "cross_entropy": "loss",
    "cross_entropy_backward": "loss",
    "nll_loss": "loss",
    "nll_loss_backward": "loss",
    "dropout": "dropout",
    "dropout_backward": "dropout",
    "lstm_cell": "rnn",
    "lstm_cell_backward": "rnn",
    # indexing (normalize(index, size, allow_negative, error): a contiguous int64 copy
    # of the index, negatives wrapped, every value checked against the dim's size; it
    # and check_targets raise
    # error(position) for a bad value, at once on the CPU and at the next synchronizing
    # read on a device), sorting, scans
    "normalize": "index",
    "gather": "index",
    "scatter": "index",
    "nonzero": "index",
    "compress": "index",
    "sort_rows": "sort",
    "searchsorted": "sort",
    "scan": "scan",
    # fft_c2c(x, out, dim, forward, scale), fft_r2c(x, out, dim, n, scale),
    # fft_c2r(x, out, dim, scale): complex signals are float [..., 2] tensors
    "fft_c2c": "fft",
    "fft_r2c": "fft",
    "fft_c2r": "fft",
    # int64 0 .. n-1 (arange's integer ranges; the CPU's is in ember._C.core)
    "iota": "creation",
    # Philox random numbers, one entry point: random(kind, out, seed, offset, *params)
    # for kind in uniform/normal/integers/randperm/exponential, and
    # random("multinomial", weights, out, seed, offset, replacement)
    "random": "random",
    # dense linear algebra (batches of row-major matrices, in place; info: int32 per
    # matrix): LU with partial pivoting and the solve with it, triangular solves,
    # Cholesky, Householder QR and applying its Q, the symmetric and nonsymmetric
    # eigensolvers, the SVD
    "linalg_lu_factor": "linalg",
    "linalg_lu_solve": "linalg",
    "linalg_trsm": "linalg",
    "linalg_cholesky": "linalg",
    "linalg_geqrf": "linalg",
    "linalg_ormqr": "linalg",
    "linalg_syev": "linalg",
    "linalg_svd": "linalg",
    "linalg_geev": "linalg",
}


def missing_kernels(backend):
    """The hand-written kernels a backend does not provide yet."""
    return [name for name in HAND_WRITTEN_KERNELS if not callable(getattr(backend, name, None))]

