"""The exception classes ember raises across devices (PyTorch's torch.OutOfMemoryError
and torch.AcceleratorError): one class each, shared by every backend, so
`except ember.OutOfMemoryError` catches CUDA's and OpenCL's alike and
`ember.cuda.OutOfMemoryError is ember.OutOfMemoryError`, as in PyTorch."""
from __future__ import annotations


class OutOfMemoryError(RuntimeError, MemoryError):
    """A device allocation failed, even after emptying the allocator's cache; the
    message says how much was asked for, is in use and is cached. A RuntimeError as
    PyTorch's torch.OutOfMemoryError, and a MemoryError as the CPU's, so one except
    clause catches both."""


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime (torch.AcceleratorError);
    ember.cuda.CudaError is one."""
