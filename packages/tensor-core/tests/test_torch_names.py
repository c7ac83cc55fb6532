"""PyTorch's first-reached names: ember.accelerator, ember.backends.cudnn,
use_deterministic_algorithms, ember.jit, the legacy typed constructors
(em.FloatTensor, ...) and em.Tensor(...). Expected values are PyTorch's documented
behaviour."""
from __future__ import annotations

import typing

import numpy as np
import pytest

import ember as em

# ------------------------------------------------------------------ accelerator


def _expected_kind():
    if em.cuda.is_available():
        return "cuda"
    if em.opencl.is_available():
        return "opencl"
    return None


def test_accelerator_picks_cuda_then_opencl_then_none():
    kind = _expected_kind()
    assert em.accelerator.is_available() is (kind is not None)
    acc = em.accelerator.current_accelerator()
    if kind is None:
        assert acc is None and em.accelerator.device_count() == 0
        with pytest.raises(RuntimeError, match="no accelerator"):
            em.accelerator.current_device_index()
        with pytest.raises(RuntimeError, match="no accelerator"):
            em.accelerator.synchronize()
        return
    # PyTorch: the device type, without an index
    assert isinstance(acc, em.device) and acc.type == kind and str(acc) == kind
    assert em.accelerator.current_accelerator(check_available=True) == acc
    n = em.cuda.device_count() if kind == "cuda" else em.opencl.device_count()
    assert em.accelerator.device_count() == n >= 1


needs_accelerator = pytest.mark.skipif(not em.accelerator.is_available(),
                                       reason="no CUDA or OpenCL device here")


@needs_accelerator
def test_accelerator_device_works_where_a_device_is_accepted():
    acc = em.accelerator.current_accelerator()
    x = em.arange(6, dtype=em.float32).reshape(2, 3)
    y = x.to(acc)
    assert y.device.type == acc.type
    z = em.ones(2, 3, device=acc) + y
    assert z.cpu().tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert em.zeros(2, device=str(acc)).device == z.device
    em.accelerator.synchronize()
    em.accelerator.synchronize(0)
    em.accelerator.synchronize(acc)


@needs_accelerator
def test_accelerator_device_index():
    acc = em.accelerator.current_accelerator()
    first = em.accelerator.current_device_index()
    assert first == 0 or acc.type == "cuda"
    em.accelerator.set_device_index(-1)            # a negative index: no change
    assert em.accelerator.current_device_index() == first
    em.accelerator.set_device_index(f"{acc.type}:{first}")
    em.accelerator.set_device_index(em.device(acc.type, first))
    assert em.accelerator.current_device_index() == first
    with em.accelerator.device_index(first):
        assert em.accelerator.current_device_index() == first
        assert em.zeros(1, device=acc).device.index == first
    with em.accelerator.device_index(None):       # None: no switching
        assert em.accelerator.current_device_index() == first
    n = em.accelerator.device_count()
    with pytest.raises(RuntimeError, match=f"device index {n} is out of range"):
        em.accelerator.set_device_index(n)
    other = "cpu"
    with pytest.raises(ValueError, match="does not match the current accelerator"):
        em.accelerator.set_device_index(other)
    with pytest.raises(TypeError, match="set_device_index"):
        em.accelerator.set_device_index(1.5)
    assert em.accelerator.current_device_index() == first


@pytest.mark.skipif(not em.opencl.is_available() or em.cuda.is_available(),
                    reason="needs OpenCL as the accelerator")
def test_opencl_current_index_is_what_a_bare_device_means():
    b = em.opencl.get_backend()
    assert b.default_index(em.device("opencl")) == b.current_index == 0
    assert em.zeros(2, device="opencl").device == em.device("opencl:0")
    # with a second device, set_device_index(1) would send bare "opencl" there; with
    # one device the index is checked against device_count
    with pytest.raises(RuntimeError, match="out of range"):
        em.accelerator.set_device_index(em.opencl.device_count())


@pytest.mark.skipif(not em.opencl.is_available() or em.cuda.is_available(),
                    reason="needs OpenCL as the accelerator")
def test_set_device_index_moves_where_bare_opencl_tensors_go():
    """A second OpenCL device (here: the same device listed twice, so opencl:1 is a
    second context on it): set_device_index(1) sends bare "opencl" tensors there."""
    b = em.opencl.get_backend()
    saved = list(b.devices)
    b.devices = saved + saved[:1]
    try:
        assert em.accelerator.device_count() == len(saved) + 1
        em.accelerator.set_device_index(len(saved))
        assert em.accelerator.current_device_index() == len(saved)
        acc = em.accelerator.current_accelerator()
        x = em.ones(3, device="opencl")
        y = em.arange(3.0).to(acc)
        assert x.device == y.device == em.device(f"opencl:{len(saved)}")
        assert (x + y).cpu().tolist() == [1.0, 2.0, 3.0]
        with em.accelerator.device_index(0):
            assert em.zeros(1, device=acc).device == em.device("opencl:0")
        assert em.accelerator.current_device_index() == len(saved)
        del x, y
    finally:
        em.accelerator.set_device_index(0)
        b.devices = saved
        b._states.pop(len(saved), None)
    assert em.zeros(1, device="opencl").device == em.device("opencl:0")


# ------------------------------------------------------------- backends.cudnn


def test_cudnn_settings():
    cudnn = em.backends.cudnn
    assert cudnn is __import__("ember.backends.cudnn", fromlist=["x"])
    assert cudnn.is_available() is False and cudnn.version() is None
    assert cudnn.is_acceptable(em.ones(1)) is False
    # PyTorch's defaults, except allow_tf32 (ember keeps full float32 unless asked)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    assert cudnn.allow_tf32 is False
    cudnn.benchmark, cudnn.deterministic = True, True
    try:
        assert cudnn.benchmark and cudnn.deterministic
    finally:
        cudnn.benchmark, cudnn.deterministic = False, False
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True, allow_tf32=True):
        assert cudnn.benchmark and cudnn.deterministic and cudnn.allow_tf32
    assert (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (False, False, False)
    assert em.backends.cuda.matmul.allow_tf32 is False


class _RecordingCUDA:
    """CUDABackend's kernel choice without a GPU: _matmul_tiled records the kernel."""

    def __init__(self):
        from ember.backends.cuda import CUDABackend
        self.cls = type("Rec", (CUDABackend,), {
            "__init__": lambda s: None,
            "_matmul_tiled": lambda s, kernel, a, b: kernel})
        self.b = self.cls()


def test_cudnn_allow_tf32_governs_the_cuda_convolution_gemm():
    from ember.backends import cudnn
    b = _RecordingCUDA().b
    a = em.ones(2, 2)
    assert b.matmul(a, a) == "gemm_simt_float32"
    assert b._conv_matmul(a, a) == "gemm_simt_float32"
    with cudnn.flags(allow_tf32=True):
        assert b._conv_matmul(a, a) == "gemm_tf32_float32"
        assert b.matmul(a, a) == "gemm_simt_float32"     # products follow cuda.matmul
    em.backends.cuda.matmul.allow_tf32 = True
    try:
        assert b.matmul(a, a) == "gemm_tf32_float32"
        assert b._conv_matmul(a, a) == "gemm_simt_float32"  # convolutions follow cudnn
    finally:
        em.backends.cuda.matmul.allow_tf32 = False
    assert b._conv_matmul(a.half(), a.half()) == "gemm_tc_float16"


def test_gpu_convolutions_go_through_conv_matmul():
    """Every pass of ember's GPU convolution calls _conv_matmul (where CUDA applies
    cudnn.allow_tf32)."""
    import inspect

    from ember.backends.gpu import conv
    src = inspect.getsource(conv.ConvKernels)
    for name in ("conv2d_forward", "conv2d_backward_input", "conv2d_backward_weight"):
        body = inspect.getsource(getattr(conv.ConvKernels, name))
        assert "self._conv_matmul(" in body and "self.matmul(" not in body, name
    assert "_conv_matmul" in src


# ------------------------------------------------------- deterministic algorithms


def test_use_deterministic_algorithms():
    assert em.are_deterministic_algorithms_enabled() is False
    try:
        em.use_deterministic_algorithms(True)
        assert em.are_deterministic_algorithms_enabled() is True
        assert em.is_deterministic_algorithms_warn_only_enabled() is False
        assert em.get_deterministic_debug_mode() == 2
        em.use_deterministic_algorithms(True, warn_only=True)
        assert em.is_deterministic_algorithms_warn_only_enabled() is True
        assert em.get_deterministic_debug_mode() == 1
        # every ember op is deterministic: accumulating scatter runs and repeats
        x = em.zeros(4)
        idx = em.tensor([0, 1, 0, 3, 0])
        v = em.tensor([0.1, 0.2, 0.3, 0.4, 0.5])
        r1 = x.index_put((idx,), v, accumulate=True).tolist()
        r2 = x.index_put((idx,), v, accumulate=True).tolist()
        assert r1 == r2
        em.set_deterministic_debug_mode("default")
        assert em.are_deterministic_algorithms_enabled() is False
        em.set_deterministic_debug_mode("error")
        assert em.get_deterministic_debug_mode() == 2
        with pytest.raises(TypeError, match="mode must be a bool"):
            em.use_deterministic_algorithms(1)
        with pytest.raises(RuntimeError, match="invalid mode"):
            em.set_deterministic_debug_mode("loud")
        with pytest.raises(RuntimeError, match="invalid mode"):
            em.set_deterministic_debug_mode(3)
    finally:
        em.use_deterministic_algorithms(False)


def test_reductions_are_bitwise_repeatable(device):
    em.manual_seed(3)
    x = em.randn(4097, 33).to(device)
    a = x.sum(0).cpu().numpy()
    b = x.sum(0).cpu().numpy()
    assert np.array_equal(a, b)
    assert np.array_equal(x.sum().cpu().numpy(), x.sum().cpu().numpy())


# ------------------------------------------------------------------------- jit


def test_jit_eager_parts():
    jit = em.jit
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.Final is typing.Final

    def f(x):
        return x + 1

    assert jit.ignore(f) is f and jit.unused(f) is f and jit.export(f) is f
    assert jit.ignore(drop=True)(f) is f and jit.ignore()(f) is f
    assert jit.script_if_tracing(f) is f
    assert jit.annotate(list[int], [1]) == [1]
    assert jit.Attribute(3, int) == 3

    class M:
        @jit.ignore
        def a(self):
            return 1

        @jit.unused
        def b(self):
            return 2

        @jit.export
        def c(self):
            return 3

    m = M()
    assert (m.a(), m.b(), m.c()) == (1, 2, 3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        jit.ignore(bogus=True)


def test_jit_script_and_trace_say_there_is_no_torchscript():
    def f(x):
        return x

    with pytest.raises(NotImplementedError, match="ember has no TorchScript.*script f"):
        em.jit.script(f)
    with pytest.raises(NotImplementedError, match="ember has no TorchScript.*trace f"):
        em.jit.trace(f, (em.ones(1),))
    assert not hasattr(em, "compile")     # no honest eager torch.compile (see the report)


# ------------------------------------------------------------ legacy constructors

LEGACY = {"FloatTensor": em.float32, "DoubleTensor": em.float64, "HalfTensor": em.float16,
          "LongTensor": em.int64, "IntTensor": em.int32, "ShortTensor": em.int16,
          "CharTensor": em.int8, "ByteTensor": em.uint8, "BoolTensor": em.bool}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_constructor_rules(name):
    cls, dtype = getattr(em, name), LEGACY[name]
    assert cls.dtype == dtype
    e = cls()
    assert tuple(e.shape) == (0,) and e.dtype == dtype
    t = cls(2, 3)
    assert tuple(t.shape) == (2, 3) and t.dtype == dtype and t.device == em.device("cpu")
    assert not t.any().item()                       # ember's defined fill: zeros
    assert tuple(cls(em.Size([4])).shape) == (4,)
    assert tuple(cls(3).shape) == (3,)              # an int is a size, as in PyTorch
    d = cls([[1, 0], [2, 1]])
    assert d.dtype == dtype and tuple(d.shape) == (2, 2)
    assert d.tolist() == em.tensor([[1, 0], [2, 1]], dtype=dtype).tolist()
    assert cls((1, 0)).tolist() == em.tensor([1, 0], dtype=dtype).tolist()  # a tuple: data
    assert cls(np.array([1, 2])).dtype == dtype
    same = em.zeros(3, dtype=dtype)
    shared = cls(same)
    assert shared.data_ptr() == same.data_ptr()
    assert isinstance(t, cls) and isinstance(t, em.Tensor) and type(t) is em.Tensor
    for other, odt in LEGACY.items():
        if other != name:
            assert not isinstance(t, getattr(em, other))
            with pytest.raises(TypeError, match=f"ember.{name}: expected a CPU tensor of dtype"):
                cls(em.zeros(1, dtype=odt))
    with pytest.raises(TypeError, match=name):
        cls(2.5)
    with pytest.raises(TypeError, match=name):
        cls("ab")
    assert repr(cls) == f"<class 'ember.{name}'>"
    assert em.ones(2).type(cls).dtype == dtype


def test_legacy_values_convert_like_pytorch():
    assert em.LongTensor([1.7, -2.7]).tolist() == [1, -2]     # truncation toward zero
    assert em.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    assert em.BoolTensor([0, 2]).tolist() == [False, True]
    assert em.ByteTensor([255, 1]).tolist() == [255, 1]


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_cuda_types(name):
    cls, dtype = getattr(em.cuda, name), LEGACY[name]
    assert cls.dtype == dtype and cls is not getattr(em, name)
    assert repr(cls) == f"<class 'ember.cuda.{name}'>"
    assert not isinstance(em.zeros(2, dtype=dtype), cls)
    assert isinstance(em.zeros(2, dtype=dtype), getattr(em, name))
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cuda"):
        cls(2, device="cpu")
    with pytest.raises(TypeError, match=f"ember.cuda.{name}: expected a CUDA tensor"):
        cls(em.zeros(2, dtype=dtype))
    if em.cuda.is_available():
        t = cls([1, 0])
        assert t.device.type == "cuda" and t.dtype == dtype and isinstance(t, cls)
        assert not isinstance(t, getattr(em, name))
        assert tuple(cls(2, 3).shape) == (2, 3) and not cls(2, 3).any().item()
    else:
        with pytest.raises(RuntimeError, match="cuda"):
            cls(2)


@pytest.mark.skipif(not em.accelerator.is_available(), reason="no accelerator device")
def test_legacy_isinstance_is_for_cpu_tensors_only():
    acc = em.accelerator.current_accelerator()
    assert not isinstance(em.ones(2, device=acc), em.FloatTensor)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        em.FloatTensor(2, device=acc)


def test_tensor_legacy_constructor():
    t = em.Tensor([-4.0])
    assert t.dtype == em.float32 and tuple(t.shape) == (1,) and t.tolist() == [-4.0]
    assert repr(t) == "tensor([-4.])"
    z = em.Tensor(2, 3)
    assert tuple(z.shape) == (2, 3) and z.dtype == em.float32 and z.tolist() == [[0.0] * 3] * 2
    assert tuple(em.Tensor(em.Size([2])).shape) == (2,)
    assert tuple(em.Tensor().shape) == (0,)
    assert em.Tensor((1, 2)).tolist() == [1.0, 2.0]
    assert em.Tensor([1, 2]).dtype == em.float32
    assert isinstance(em.Tensor(1), em.FloatTensor)
