"""The registry of hand-written kernels names real CPU kernels, so the CUDA and
OpenCL backends know exactly what to provide."""
import importlib

from ember.backends.base import HAND_WRITTEN_KERNELS, Backend, missing_kernels


def test_every_registered_kernel_has_a_cpu_implementation():
    for name, module in HAND_WRITTEN_KERNELS.items():
        mod = importlib.import_module(module)
        fn = getattr(mod, name, None) if name != "random" else getattr(mod, "_run", None)
        assert callable(fn), f"{name}: no CPU implementation in {module}"


def test_missing_kernels_lists_what_a_backend_lacks():
    class Partial(Backend):
        def matmul(self, a, b):
            return a @ b

    missing = missing_kernels(Partial())
    assert "matmul" not in missing and "conv2d_forward" in missing
    assert len(missing) == len(HAND_WRITTEN_KERNELS) - 1
