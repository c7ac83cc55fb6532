"""Device backends, one per device type, the CPU included (cpu.py, cuda.py,
opencl.py; the interface is base.py). ember._C.core's registry maps a device to its
backend; `kernel` below is how every hand-written op reaches its kernel."""
from __future__ import annotations

from ember._C.core import TensorBase, backend_for


def kernel(name, op, *tensors):
    """Hand-written kernel `name` (backends.base.HAND_WRITTEN_KERNELS) of the backend
    of the tensors' device, for a call of `op`. Every tensor must be on one device (a
    kernel reads each buffer on its own device: a CPU index reaching an OpenCL kernel
    was a SIGSEGV); None and non-tensors among `tensors` are skipped."""
    first = tensors[0]
    device = first.device
    for t in tensors[1:]:
        if isinstance(t, TensorBase) and t.device != device:
            raise RuntimeError(f"{op}: expected all tensors on one device, got {device} "
                               f"and {t.device}")
    return backend_for(device).kernel(name, op, device, first.dtype)


def run(name, op, *args):
    """kernel(name, op, ...)(*args), on the device of the tensors among args (and in
    its lists and tuples, such as the index kernels' (index, strides, ...) entries)."""
    return kernel(name, op, *_tensors_in(args))(*args)


def _tensors_in(args, found=None):
    if found is None:
        found = []
    for a in args:
        t = type(a)
        if t is int or a is None:      # the index kernels' strides and sizes: most items
            continue
        if isinstance(a, TensorBase):
            found.append(a)
        elif t is list or t is tuple or isinstance(a, (list, tuple)):
            _tensors_in(a, found)
    return found



def __getattr__(name):
    """ember.backends.cpu (torch.backends.cpu: get_cpu_capability), .cuda, .opencl:
    imported on first use, so `import ember` loads no backend it does not need."""
    if name in ("cpu", "cuda", "opencl", "cudnn"):
        import importlib
        return importlib.import_module(f"ember.backends.{name}")
    raise AttributeError(f"module 'ember.backends' has no attribute {name!r}")
