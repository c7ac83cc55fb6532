"""ember.opencl: the OpenCL backend's public face (AMD, Intel, any OpenCL device).

The backend itself (kernels/opencl, host side through pyopencl) arrives in a later
release; is_available() says whether it can run here.
"""
from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
