"""The one interface every non-CPU backend implements (CUDA, OpenCL).

Dispatch in ember._C.core picks the backend from the inputs' device and calls these
methods; the CPU path implements the same operations in C directly. A backend that
lacks a kernel raises NotImplementedError("<op>: no <backend> kernel for <dtype>");
it never falls back to the host silently (DESIGN.md, "Devices and backends").

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


# The kernels that are not one expression of the op table, so each backend writes its
# own (DESIGN.md, "One op, one place"). name -> the module holding the CPU version,
# whose signature and docstring every backend's method of that name follows: tensors
# are contiguous unless the CPU docstring says otherwise, and the Python layer
# (ember._conv, ember._nn_ops, ...) has already checked shapes, dtypes and devices.
HAND_WRITTEN_KERNELS = {
    # matmul family: out = a @ b with NumPy's batching and broadcasting
    "matmul": "ember._C.linalg",
    # convolution (NCHW): forward, the input gradient (which is conv_transpose2d's
    # forward), the weight gradient
    "conv2d_forward": "ember._C.conv",
    "conv2d_backward_input": "ember._C.conv",
    "conv2d_backward_weight": "ember._C.conv",
    # pooling (NCHW planes; 1-d pools run these with H = 1; max pools' indices are
    # flat h * W + w per plane, -1 for a window wholly in the padding)
    "max_pool2d": "ember._C.pool",
    "max_pool2d_backward": "ember._C.pool",
    "avg_pool2d": "ember._C.pool",
    "avg_pool2d_backward": "ember._C.pool",
    "adaptive_avg_pool2d": "ember._C.pool",
    "adaptive_avg_pool2d_backward": "ember._C.pool",
    "adaptive_max_pool2d": "ember._C.pool",
    # fused numerics over rows / channels
    "softmax_rows": "ember._C.nn_kernels",
    "softmax_backward_rows": "ember._C.nn_kernels",
    "layer_norm": "ember._C.nn_kernels",
    "layer_norm_backward": "ember._C.nn_kernels",
    "batch_norm_stats": "ember._C.nn_kernels",
    "batch_norm_backward_reduce": "ember._C.nn_kernels",
    "batch_norm_elemt": "ember._C.nn_kernels",
    "check_targets": "ember._C.nn_kernels",
    "cross_entropy": "ember._C.nn_kernels",
    "cross_entropy_backward": "ember._C.nn_kernels",
    "nll_loss": "ember._C.nn_kernels",
    "nll_loss_backward": "ember._C.nn_kernels",
    "dropout": "ember._C.nn_kernels",
    "dropout_backward": "ember._C.nn_kernels",
    # indexing, sorting, scans
    "gather": "ember._C.index",
    "scatter": "ember._C.index",
    "nonzero": "ember._C.index",
    "compress": "ember._C.index",
    "sort_rows": "ember._C.index",
    "searchsorted": "ember._C.index",
    "scan": "ember._C.index",
    # Philox random numbers (one entry point: random(kind, out, seed, offset, *params),
    # kind in uniform/normal/integers/randperm/exponential/multinomial)
    "random": "ember._random",
}


def missing_kernels(backend):
    """The hand-written kernels a backend does not provide yet."""
    return [name for name in HAND_WRITTEN_KERNELS if not callable(getattr(backend, name, None))]
