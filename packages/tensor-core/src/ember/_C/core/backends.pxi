"""The backend registry: the backend object that serves each device type."""

# The backend of each device type (see ember/backends/base.py for the interface), made
# on first use by the module named below, whose get_backend() returns it, or None where
# this build or machine has none (so `import ember` pays for no driver or pyopencl).
# register_backend adds or replaces one (tests; backends outside ember).
cdef dict BACKENDS = {}
cdef dict BACKEND_MODULES = {"cpu": "ember.backends.cpu", "cuda": "ember.cuda",
                             "opencl": "ember.opencl"}


def register_backend(str device_type, backend):
    BACKENDS[device_type] = backend


cpdef object backend_for(Device device):
    b = BACKENDS.get(device.type)
    if b is None and device.type in BACKEND_MODULES:
        import importlib
        b = importlib.import_module(BACKEND_MODULES[device.type]).get_backend()
        BACKENDS[device.type] = b
    if b is None:
        fix = ("rebuild with USE_CUDA=1 where nvcc and a GPU are present"
               if device.type == "cuda" else "install pyopencl and an OpenCL driver")
        raise RuntimeError(f"device {device}: ember was built without a {device.type} "
                           f"backend ({fix})")
    return b
