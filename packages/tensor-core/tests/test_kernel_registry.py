"""The registry of hand-written kernels: every backend, the CPU included, provides each
kernel under its name with the CPU kernel's signature, and every hand-written op
reaches its kernel the same way, so a missing kernel is reported the same way on
every device."""
import importlib
import inspect

import pytest

import ember as em
from ember._C import core
from ember.backends import cpu, kernel
from ember.backends.base import HAND_WRITTEN_KERNELS, Backend, missing_kernels


def test_the_cpu_is_a_backend_with_every_kernel():
    backend = core.backend_for(em.device("cpu"))
    assert isinstance(backend, cpu.CPUBackend) and backend is cpu.get_backend()
    assert missing_kernels(backend) == []


def test_each_kernel_lives_in_its_familys_cpu_module():
    for name, family in HAND_WRITTEN_KERNELS.items():
        fn = getattr(cpu.CPUBackend, name)
        if name in cpu.CPUBackend.__dict__ and not isinstance(
                cpu.CPUBackend.__dict__[name], staticmethod):
            continue     # written in backends/cpu.py (random, matmul, iota): checked below
        mod = importlib.import_module(f"ember._C.{family}")
        assert fn is getattr(mod, name), f"{name}: not ember._C.{family}.{name}"


def test_the_cpu_random_kernel_has_the_device_backends_signature():
    from ember.backends.gpu import GPUBackend
    assert list(inspect.signature(cpu.CPUBackend.random).parameters) == \
        list(inspect.signature(GPUBackend.random).parameters)
    out = em.empty(4)
    cpu.get_backend().random("uniform", out, 7, 0, 0.0, 1.0)
    g = em.Generator().manual_seed(7)
    assert out.tolist() == em.rand(4, generator=g).tolist()


def test_missing_kernels_lists_what_a_backend_lacks():
    class Partial(Backend):
        def matmul(self, a, b):
            return a @ b

    missing = missing_kernels(Partial())
    assert "matmul" not in missing and "conv2d_forward" in missing
    assert len(missing) == len(HAND_WRITTEN_KERNELS) - 1


class _NoKernels(Backend):
    """A device with memory but no hand-written kernels: every op that needs one must
    say so in the same words."""
    def allocate(self, nbytes, device):
        return None


@pytest.fixture
def bare_device():
    try:
        previous = core.backend_for(em.device("cuda"))
    except RuntimeError:
        previous = None
    core.register_backend("cuda", _NoKernels())
    yield em.device("cuda:0")
    core.register_backend("cuda", previous)


@pytest.mark.parametrize("op, call", [
    ("conv2d", lambda d: em.conv2d(em.empty(1, 1, 3, 3, device=d), em.empty(1, 1, 2, 2, device=d))),
    ("max_pool2d", lambda d: em.max_pool2d(em.empty(1, 1, 4, 4, device=d), 2)),
    ("softmax", lambda d: em.softmax(em.empty(2, 3, device=d), -1)),
    ("dropout", lambda d: em.dropout(em.empty(2, 3, device=d), 0.5)),
    ("rand", lambda d: em.rand(3, device=d)),
    ("layer_norm", lambda d: em.layer_norm(em.empty(2, 3, device=d), (3,))),
    ("matmul", lambda d: em.empty(2, 2, device=d) @ em.empty(2, 2, device=d)),
])
def test_a_missing_kernel_raises_one_error_on_every_op(bare_device, op, call):
    with pytest.raises(NotImplementedError, match=rf"^{op}: no kernel for cuda:0 \(float32\)$"):
        call(bare_device)


def test_kernel_refuses_tensors_on_two_devices(bare_device):
    with pytest.raises(RuntimeError, match="gather: expected all tensors on one device, got "
                                           "cpu and cuda:0"):
        kernel("gather", "gather", em.empty(2), em.empty(2, device=bare_device))


def test_backward_functions_live_with_their_family_not_in_the_namespace():
    assert [n for n in dir(em) if n.endswith("_backward")] == []
    from ember.ops import conv, dropout, loss, norm, pool, softmax
    for module, name in [(conv, "conv2d_backward"), (pool, "max_pool2d_backward"),
                         (softmax, "softmax_backward"), (norm, "layer_norm_backward"),
                         (loss, "cross_entropy_backward"), (dropout, "dropout_backward")]:
        assert callable(getattr(module, name))
