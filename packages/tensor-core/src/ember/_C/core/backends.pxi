"""The backend registry: the backend object that serves each device type."""

# A backend for each non-CPU device type, registered by the backend's module (see
# ember/backends/base.py for the interface). The CPU is served by the core's own loops directly.
cdef dict BACKENDS = {}


def register_backend(str device_type, backend):
    BACKENDS[device_type] = backend


# Modules that register a backend when first needed (so `import ember` doesn't pay
# for importing pyopencl).
cdef dict LAZY_BACKENDS = {"opencl": "ember.opencl"}


cpdef object backend_for(Device device):
    b = BACKENDS.get(device.type)
    if b is None and device.type in LAZY_BACKENDS:
        import importlib
        importlib.import_module(LAZY_BACKENDS[device.type])._get()
        b = BACKENDS.get(device.type)
    if b is None:
        raise RuntimeError(
            f"device {device}: ember was built without a {device.type} backend "
            f"({'rebuild with USE_CUDA=1 where nvcc and a GPU are present' if device.type == 'cuda' else 'install pyopencl and an OpenCL driver'})")
    return b
