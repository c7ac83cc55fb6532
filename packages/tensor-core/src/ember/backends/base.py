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
        """Run op-table row `op_name` over tensors / Python scalars (broadcast,
        computed in compute_dtype, producing out_dtype) into `out` or a new tensor."""
        raise NotImplementedError

    def reduce(self, op_name, tensor, dims, keepdim, out_dtype):
        raise NotImplementedError

    # hand-written kernels (same signatures as kernels/cpu) arrive with their issues:
    # matmul, conv, pooling, softmax, gather/scatter, sort, random.
