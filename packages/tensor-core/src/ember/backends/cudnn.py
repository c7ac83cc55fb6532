"""ember.backends.cudnn: torch.backends.cudnn's settings, for the convolutions ember
runs itself. ember does not use cuDNN: its CUDA (and OpenCL) convolutions are im2col
plus one batched GEMM (ember/backends/gpu/conv.py). What each setting does here:

* ``allow_tf32`` -- honoured: governs the float32 GEMM of ember's CUDA convolutions
  (forward and both backward passes), as PyTorch's governs cuDNN's. True lets them
  round operands to TF32 on the tensor cores (kernels/cuda/gemm_tf32_float32), False
  keeps them in full float32. ember's default is False (PyTorch's is True): a CUDA
  convolution gives float32 results unless asked; set it to True for PyTorch's
  speed/precision trade. Matrix products follow ember.backends.cuda.matmul.allow_tf32
  instead, as in PyTorch. CPU and OpenCL convolutions are always full precision.
* ``deterministic`` -- nothing to choose: every ember kernel is deterministic already
  (see ember.use_deterministic_algorithms), so this flag, which in PyTorch selects
  deterministic cuDNN algorithms, is a no-op outside cuDNN. It is stored and read back.
* ``benchmark`` / ``benchmark_limit`` -- no-ops outside cuDNN: PyTorch benchmarks
  cuDNN's algorithms per shape; ember has one algorithm per convolution.
* ``enabled`` -- a no-op outside cuDNN: in PyTorch False makes convolutions skip
  cuDNN; ember's never use it.

``is_available()`` is False and ``version()`` is None (ember links no cuDNN), as
PyTorch reports where cuDNN is missing.
"""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark",
           "benchmark_limit", "deterministic", "allow_tf32"]

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = False


def is_available() -> bool:
    """Whether cuDNN can be used: never (ember does not link cuDNN)."""
    return False


def version():
    """cuDNN's version: None, there is no cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take `tensor`: never, as in PyTorch without cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the settings inside a ``with`` block, restoring them after it."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: g[n] for n in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
             deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
