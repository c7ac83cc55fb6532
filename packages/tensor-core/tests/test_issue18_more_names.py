"""Issue 18, the remaining torch.* names and Tensor methods: the *_copy functions,
slice_inverse, empty_permuted, frombuffer/from_file, the default device, settings
(matmul precision, threads, flush denormal, anomaly), inference tensors, gradient,
histogramdd, nonzero_static, put, poisson/binomial, vmap and ember.func, the legacy
and introspection methods. Expected values are PyTorch's documented ones (written
here) or NumPy's."""
from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember_testing import assert_close, fewer_examples, shapes, to_numpy

SETTINGS = settings(max_examples=fewer_examples(4), deadline=None)
seeds = st.integers(0, 2 ** 31)
floats = st.sampled_from([em.float32, em.float64])


def T(a, device=None, dtype=None):
    return em.tensor(a, device=device, dtype=dtype)


def _fresh(result, base):
    """result is a new contiguous tensor with its own memory."""
    assert result.is_contiguous()
    if result.numel() and base.numel():
        assert result.untyped_storage().data_ptr() != base.untyped_storage().data_ptr() \
            or base.device.type != "cpu"


# the *_copy functions -------------------------------------------------------------------

@SETTINGS
@given(seed=seeds, d=floats)
def test_copy_functions_match_their_views(seed, d, device):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, size=(3, 4, 2)).astype("float32" if d is em.float32 else "float64")
    x = T(a, device)
    cases = [
        (em.alias_copy(x), a),
        (em.detach_copy(x), a),
        (em.diagonal_copy(x, 1, 0, 1), np.diagonal(a, 1, 0, 1)),
        (em.expand_copy(x[:, :1], (3, 5, 2)), np.broadcast_to(a[:, :1], (3, 5, 2))),
        (em.narrow_copy(x, 1, 1, 2), a[:, 1:3]),
        (x.narrow_copy(2, 1, 1), a[:, :, 1:2]),
        (em.permute_copy(x, (2, 0, 1)), a.transpose(2, 0, 1)),
        (em.select_copy(x, 1, -1), a[:, -1]),
        (em.slice_copy(x, 1, 1, None, 2), a[:, 1::2]),
        (em.slice_copy(x), a),
        (em.squeeze_copy(x[:, :1]), a[:, 0]),
        (em.squeeze_copy(x[:, :1], 1), a[:, 0]),
        (em.t_copy(x[0]), a[0].T),
        (em.transpose_copy(x, 0, 2), a.transpose(2, 1, 0)),
        (em.unfold_copy(x, 1, 2, 1), np.stack([a[:, i:i + 2] for i in range(3)], 1)
         .transpose(0, 1, 3, 2)),
        (em.unsqueeze_copy(x, 1), a[:, None]),
        (em.view_copy(x, (4, 6)), a.reshape(4, 6)),
        (em.view_copy(x, [-1]), a.reshape(-1)),
    ]
    for got, want in cases:
        assert tuple(got.shape) == want.shape
        assert_close(got, np.ascontiguousarray(want), d)
        _fresh(got, x)
    for pieces, want in [(em.split_copy(x, 3, 1), np.split(a, [3], 1)),
                         (em.split_with_sizes_copy(x, [1, 2], 0), np.split(a, [1], 0)),
                         (em.unbind_copy(x, 2), [a[:, :, 0], a[:, :, 1]])]:
        assert len(pieces) == len(want)
        for got, w in zip(pieces, want):
            assert_close(got, w, d)
            _fresh(got, x)


def test_copy_functions_do_not_alias_and_take_out():
    x = em.arange(6.0).reshape(2, 3)
    y = em.transpose_copy(x, 0, 1)
    y[0, 0] = 100.0
    assert x[0, 0].item() == 0.0
    out = em.empty(3, 2)
    assert em.t_copy(x, out=out) is out and out.tolist() == [[0, 3], [1, 4], [2, 5]]
    grown = em.empty(0)
    em.view_copy(x, (6,), out=grown)
    assert grown.tolist() == [0, 1, 2, 3, 4, 5]
    outs = [em.empty(2, 1), em.empty(2, 2)]
    assert em.split_with_sizes_copy(x, [1, 2], 1, out=outs) is None
    assert outs[1].tolist() == [[1, 2], [4, 5]]
    assert em.view_copy(em.zeros(2, dtype=em.int32), em.float32).dtype == em.float32
    with pytest.raises(ValueError, match="slice_copy: step must be positive"):
        em.slice_copy(x, 0, 0, 2, 0)
    with pytest.raises(TypeError, match="transpose_copy"):
        em.transpose_copy([1, 2], 0, 1)
    with pytest.raises(ValueError, match="split_copy: out has 1 tensors"):
        em.split_copy(x, 1, 0, out=[em.empty(1, 3)])


def test_copy_functions_gradcheck():
    x = em.randn(3, 4, dtype=em.float64, requires_grad=True)
    for f in (lambda t: em.view_copy(t, (2, 6)), lambda t: em.slice_copy(t, 1, 1, 4, 2),
              lambda t: em.transpose_copy(t, 0, 1), lambda t: em.expand_copy(t[:1], (2, 4)),
              lambda t: em.unbind_copy(t, 1)[2], lambda t: em.select_copy(t, 0, 1)):
        assert em.autograd.gradcheck(f, (x,))


def test_slice_inverse_is_the_base_geometry_over_self_storage():
    # PyTorch: slice_inverse(self, src, ...) = self.as_strided(src's size, stride, offset)
    b = em.arange(12.0).reshape(3, 4)
    s = b[:, 1:3]
    r = em.slice_inverse(s, b, 1, 1, 3, 1)
    assert tuple(r.shape) == (3, 4) and r.stride() == (4, 1)
    assert r.data_ptr() == b.data_ptr() and r.tolist() == b.tolist()
    x = em.arange(10.0)
    assert em.slice_inverse(x[2:8:2], em.zeros(10), 0, 2, 8, 2).tolist() == list(range(10))
    y = em.zeros(4)
    assert y.slice_inverse(em.ones(3), 0, 1, 4, 1).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="slice_inverse"):
        em.slice_inverse(x, [1.0])


# creation -------------------------------------------------------------------------------

def test_empty_permuted_lays_dims_out_in_the_given_order():
    t = em.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1))
    assert tuple(t.shape) == (2, 3, 5, 7) and t.stride() == (105, 1, 21, 3)   # PyTorch's
    assert em.empty_permuted((2, 3), (1, 0), dtype=em.int64).stride() == (1, 2)
    assert em.empty_permuted((4,), (0,), requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="empty_permuted: physical_layout"):
        em.empty_permuted((2, 3), (0, 0))


def test_frombuffer_shares_memory_as_pytorch():
    b = bytearray(b"\x00\x00\x80?\x00\x00\x00@")
    t = em.frombuffer(b, dtype=em.float32)
    assert t.tolist() == [1.0, 2.0]
    t[0] = 5.0
    assert b == bytearray(b"\x00\x00\xa0@\x00\x00\x00@")     # written through
    assert em.frombuffer(b, dtype=em.uint8, count=3, offset=2).tolist() == [160, 64, 0]
    with pytest.raises(ValueError, match=r"buffer length \(7 bytes\) after offset \(1 bytes\)"):
        em.frombuffer(b, dtype=em.float32, offset=1)
    with pytest.raises(ValueError, match=r"both buffer length \(0\) and count \(-1\)"):
        em.frombuffer(bytearray(), dtype=em.float32)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        em.frombuffer(b, dtype=em.float32, count=3)
    with pytest.raises(TypeError, match="frombuffer: expected an object that implements"):
        em.frombuffer([1, 2], dtype=em.uint8)
    import ember.ops.creation as creation
    creation._readonly_warned[0] = False
    with pytest.warns(UserWarning, match="not writable"):
        r = em.frombuffer(b"abcd", dtype=em.uint8)
    assert r.tolist() == [97, 98, 99, 100]
    import array
    a = array.array("d", [1.5, 2.5])
    assert em.frombuffer(a, dtype=em.float64, requires_grad=True).requires_grad


def test_from_file_shared_and_private(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(8)))
    t = em.from_file(str(path), False, 8, dtype=em.uint8)
    assert t.tolist() == list(range(8))
    t[0] = 100
    assert path.read_bytes() == bytes(range(8))              # private: the file is unchanged
    s = em.from_file(path, True, 8, dtype=em.uint8)
    s[0] = 100
    del s
    assert path.read_bytes()[0] == 100                       # shared: written to the file
    with pytest.raises(RuntimeError, match=r"size <8> is smaller than the required mapping "
                                           r"size <16>"):
        em.from_file(str(path), False, 16, dtype=em.uint8)
    grown = tmp_path / "new.bin"
    z = em.from_file(str(grown), True, 4, dtype=em.float32)
    assert z.tolist() == [0.0] * 4 and os.path.getsize(grown) == 16
    assert em.from_file(str(path), size=0).numel() == 0
    with pytest.raises(RuntimeError, match="unable to open file .* in read-only mode"):
        em.from_file(str(tmp_path / "missing.bin"), False, 4)


# the default device ---------------------------------------------------------------------

def test_default_device_is_cpu_and_set_default_device_cpu_keeps_it():
    assert em.get_default_device() == em.device("cpu")
    em.set_default_device("cpu")
    assert em.zeros(2).device.type == "cpu"
    em.set_default_device(None)
    with pytest.raises(ValueError, match="unknown device type"):
        em.set_default_device("tpu")


needs_opencl = pytest.mark.skipif(not em.opencl.is_available(), reason="no OpenCL device")


@needs_opencl
def test_set_default_device_moves_factories_and_explicit_device_wins():
    try:
        em.set_default_device("opencl")
        assert em.get_default_device() == em.device("opencl:0")
        for t in (em.zeros(2), em.ones(2, 3), em.empty(1), em.full((2,), 3.0), em.arange(3),
                  em.linspace(0, 1, 3), em.eye(2), em.tensor([1.0]), em.rand(2), em.randn(2),
                  em.randint(0, 3, (2,)), em.randperm(3), em.empty_permuted((2, 3), (1, 0))):
            assert t.device.type == "opencl"
        assert em.zeros(2, device="cpu").device.type == "cpu"
        assert em.ones(2).cpu().tolist() == [1.0, 1.0]
    finally:
        em.set_default_device(None)
    assert em.zeros(2).device.type == "cpu"


@needs_opencl
def test_with_device_context_nests_and_restores():
    with em.device("opencl") as d:
        assert d == em.device("opencl")
        assert em.zeros(1).device.type == "opencl"
        with em.device("cpu"):
            assert em.zeros(1).device.type == "cpu"
        assert em.get_default_device().type == "opencl"
    assert em.zeros(1).device.type == "cpu"


# settings -------------------------------------------------------------------------------

def test_float32_matmul_precision_is_allow_tf32():
    from ember.backends.cuda import matmul
    assert em.get_float32_matmul_precision() == "highest"
    try:
        em.set_float32_matmul_precision("high")
        assert matmul.allow_tf32 is True and em.get_float32_matmul_precision() == "high"
        em.set_float32_matmul_precision("medium")
        assert matmul.allow_tf32 and em.get_float32_matmul_precision() == "medium"
        em.set_float32_matmul_precision("highest")
        assert matmul.allow_tf32 is False
        matmul.allow_tf32 = True                 # PyTorch: reads back as "high"
        assert em.get_float32_matmul_precision() == "high"
    finally:
        em.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision: expected one of"):
        em.set_float32_matmul_precision("low")


def test_interop_threads_default_and_set_once():
    assert em.get_num_interop_threads() == em.get_num_threads()
    with pytest.raises(ValueError, match="set_num_interop_threads: expected a positive"):
        em.set_num_interop_threads(0)
    code = ("import ember as em; em.set_num_interop_threads(3); "
            "assert em.get_num_interop_threads() == 3\n"
            "try:\n em.set_num_interop_threads(2)\nexcept RuntimeError as e: print(e)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "can only be set once" in r.stdout
    em.init_num_threads()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="MXCSR is x86's")
def test_set_flush_denormal_flushes_on_the_caller_and_the_pool():
    tiny = em.tensor([1e-40], dtype=em.float32)          # a float32 denormal
    assert (tiny * 1.0).item() != 0.0
    big = em.full((1 << 20,), 1e-40, dtype=em.float32)   # large: runs on the pool
    try:
        assert em.set_flush_denormal(True) is True
        assert (tiny * 1.0).item() == 0.0
        assert (big * 1.0).amax().item() == 0.0
        assert em.tensor([1e-310], dtype=em.float64).mul(1.0).item() == 0.0
    finally:
        assert em.set_flush_denormal(False) is True
    assert (tiny * 1.0).item() != 0.0
    assert (big * 1.0).amin().item() != 0.0


def test_anomaly_switches_are_ember_autograds():
    from ember.autograd import anomaly_mode
    assert em.is_anomaly_enabled() is False
    try:
        em.set_anomaly_enabled(True, check_nan=False)
        assert em.is_anomaly_enabled() and anomaly_mode.is_anomaly_enabled()
        assert em.is_anomaly_check_nan_enabled() is False
    finally:
        em.set_anomaly_enabled(False)
    assert not anomaly_mode.is_anomaly_enabled() and em.is_anomaly_check_nan_enabled()


def test_inference_tensors():
    normal = em.ones(3)
    with em.inference_mode():
        inf = em.ones(3)
        view_of_normal = normal[1:]
    assert em.is_inference(inf) and inf.is_inference() and inf[1:].is_inference()
    assert not normal.is_inference() and not view_of_normal.is_inference()
    with em.inference_mode(False):
        assert not em.ones(1).is_inference()
    with pytest.raises(TypeError, match="is_inference"):
        em.is_inference([1])


def test_get_device_module_and_cpu_module():
    assert em.get_device_module("cpu") is em.cpu
    assert em.get_device_module(em.device("cpu")) is em.cpu
    assert em.get_device_module("cuda") is em.cuda
    assert em.get_device_module("opencl:0") is em.opencl
    assert em.cpu.is_available() and em.cpu.device_count() == 1
    assert em.cpu.current_device() == "cpu"
    em.cpu.synchronize()
    with pytest.raises(RuntimeError, match="get_device_module"):
        em.get_device_module("tpu")
    with pytest.raises(ValueError, match="ember.cpu.synchronize"):
        em.cpu.synchronize("cuda")


def test_to_dlpack_round_trips_sharing_memory():
    x = em.arange(4.0)
    y = em.from_dlpack(em.to_dlpack(x))
    y[0] = 9.0
    assert x[0].item() == 9.0


def test_set_default_tensor_type():
    try:
        em.set_default_tensor_type(em.DoubleTensor)
        assert em.get_default_dtype() == em.float64 and em.zeros(1).dtype == em.float64
        em.set_default_tensor_type("torch.FloatTensor")
        assert em.get_default_dtype() == em.float32
    finally:
        em.set_default_dtype(em.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        em.set_default_tensor_type(em.IntTensor)


def test_exception_classes_are_shared():
    assert issubclass(em.OutOfMemoryError, RuntimeError)
    assert issubclass(em.OutOfMemoryError, MemoryError)
    assert em.cuda.OutOfMemoryError is em.OutOfMemoryError
    from ember.backends.gpu import OutOfMemoryError
    assert OutOfMemoryError is em.OutOfMemoryError
    assert issubclass(em.cuda.CudaError, em.AcceleratorError)


# gradient, histogramdd, norms, nonzero_static, put ------------------------------------

def test_gradient_pytorch_examples():
    # torch.gradient's documented examples
    (g,) = em.gradient(em.tensor([4.0, 1.0, 1.0, 16.0]), spacing=(em.tensor([-2.0, -1.0, 1.0,
                                                                              4.0]),))
    assert_close(g, np.array([-3.0, -2.0, 2.0, 5.0], dtype=np.float32), em.float32)
    t = em.tensor([[1, 2, 4, 8], [10, 20, 40, 80]])
    g0, g1 = em.gradient(t)
    assert g0.tolist() == [[9.0, 18.0, 36.0, 72.0]] * 2
    assert g1.tolist() == [[1.0, 1.5, 3.0, 4.0], [10.0, 15.0, 30.0, 40.0]]
    g0, g1 = em.gradient(t, spacing=2.0)
    assert g1.tolist() == [[0.5, 0.75, 1.5, 2.0], [5.0, 7.5, 15.0, 20.0]]
    (g1,) = em.gradient(t, dim=1)
    assert g1.tolist() == [[1.0, 1.5, 3.0, 4.0], [10.0, 15.0, 30.0, 40.0]]
    assert em.gradient(em.tensor([1, 4, 9, 16]))[0].tolist() == [3.0, 4.0, 6.0, 7.0]
    assert em.gradient(em.tensor([1.0, 4, 9, 16]), spacing=2.0, edge_order=2)[0].tolist() == \
        [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="at least edge_order\\+1"):
        em.gradient(em.tensor([1.0, 2.0]), edge_order=2)
    with pytest.raises(ValueError, match="edge_order must be 1 or 2"):
        em.gradient(em.tensor([1.0, 2.0]), edge_order=3)
    with pytest.raises(ValueError, match="spacing .* list of length 2"):
        em.gradient(t, spacing=[1.0])


@SETTINGS
@given(seed=seeds, edge=st.sampled_from([1, 2]), uniform=st.booleans(), d=floats)
def test_gradient_matches_numpy(seed, edge, uniform, d, device):
    rng = np.random.default_rng(seed)
    npd = "float32" if d is em.float32 else "float64"
    a = rng.uniform(-3, 3, size=(4, 5)).astype(npd)
    if uniform:
        h = [0.5, 2.0]
        got = em.gradient(T(a, device), spacing=h, edge_order=edge)
        want = np.gradient(a, *h, edge_order=edge)
    else:
        xs = [np.cumsum(rng.uniform(0.5, 2, size=n)).astype(npd) for n in a.shape]
        got = em.gradient(T(a, device), spacing=[T(x, device) for x in xs], edge_order=edge)
        want = np.gradient(a, *xs, edge_order=edge)
    for g, w in zip(got, want):
        assert_close(g, w, d, rtol=1e-3 if d is em.float32 else 1e-9,
                     atol=1e-3 if d is em.float32 else 1e-9)


def test_gradient_gradcheck():
    x = em.randn(4, 3, dtype=em.float64, requires_grad=True)
    c = em.tensor([0.0, 1.0, 3.0, 3.5], dtype=em.float64)
    assert em.autograd.gradcheck(lambda t: em.gradient(t, spacing=[c], dim=0,
                                                       edge_order=2)[0], (x,))


@SETTINGS
@given(seed=seeds, density=st.booleans(), weighted=st.booleans())
def test_histogramdd_matches_numpy(seed, density, weighted, device):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-1, 1, size=(40, 2))
    w = rng.uniform(0, 2, size=40) if weighted else None
    hist, edges = em.histogramdd(T(pts, device), [3, 4], density=density,
                                 weight=None if w is None else T(w, device))
    want, wedges = np.histogramdd(pts, [3, 4], density=density, weights=w)
    assert_close(hist, want, em.float64)
    for e, we in zip(edges, wedges):
        assert_close(e, we, em.float64)


def test_histogramdd_pytorch_example_and_errors():
    # torch.histogramdd's documented example
    hist, edges = em.histogramdd(em.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]),
                                 bins=[3, 3], weight=em.tensor([1.0, 2.0, 4.0, 8.0]))
    assert hist.tolist() == [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 8.0]]
    assert_close(edges[0], np.array([0.0, 2 / 3, 4 / 3, 2.0], dtype=np.float32), em.float32)
    hist, _ = em.histogramdd(em.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]), bins=[2, 2],
                             range=[0.0, 1.0, 0.0, 1.0], density=True)
    assert hist.tolist() == [[2.0, 0.0], [0.0, 2.0]]
    hist, edges = em.histogramdd(em.tensor([[0.5], [1.5]]), bins=[em.tensor([0.0, 1.0, 2.0])])
    assert hist.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="histogramdd: expected 2 bins"):
        em.histogramdd(em.zeros(3, 2), [2])
    with pytest.raises(TypeError, match="histogramdd: needs a floating point"):
        em.histogramdd(em.zeros(3, 2, dtype=em.int64), 2)


def test_frobenius_norm_and_norm_except_dim():
    x = em.arange(6.0).reshape(2, 3)
    assert_close(em.frobenius_norm(em.ones(2, 3), [0, 1]), np.float32(math.sqrt(6)),
                 em.float32)
    assert_close(em.frobenius_norm(em.ones(2, 3), [1], True),
                 np.full((2, 1), math.sqrt(3), np.float32), em.float32)
    # PyTorch's values
    assert_close(em.norm_except_dim(x, 2, 0), np.array([[2.2361], [7.0711]], np.float32),
                 em.float32, atol=1e-4, rtol=1e-4)
    assert_close(em.norm_except_dim(x, 2, 1), np.array([[3.0, 4.1231, 5.3852]], np.float32),
                 em.float32, atol=1e-4, rtol=1e-4)
    assert_close(em.norm_except_dim(x, 2, -1), np.float32(7.4162), em.float32, atol=1e-4,
                 rtol=1e-4)
    assert em.norm_except_dim(em.tensor([3.0, -4.0]), 2, 0).tolist() == [3.0, 4.0]
    xd = em.randn(3, 4, dtype=em.float64, requires_grad=True)
    assert em.autograd.gradcheck(lambda t: em.norm_except_dim(t, 2, 1), (xd,))


def test_nonzero_static_and_put(device):
    x = T([0, 1, 0, 2], device)
    assert em.nonzero_static(x, size=4).cpu().tolist() == [[1], [3], [-1], [-1]]
    assert em.nonzero_static(T([[0, 1], [3, 0]], device), size=1, fill_value=9) \
        .cpu().tolist() == [[0, 1]]
    assert x.nonzero_static(size=0).shape == (0, 1)
    with pytest.raises(ValueError, match="nonzero_static: size must be non-negative"):
        em.nonzero_static(x, size=-1)
    z = em.zeros(2, 2, device=device)
    r = em.put(z, T([0, 3], device), T([1.0, 2.0], device))
    assert r.cpu().tolist() == [[1.0, 0.0], [0.0, 2.0]] and z.sum().item() == 0
    r = z.put(T([1, 1], device), T([1.0, 2.0], device), accumulate=True)
    assert r.cpu().tolist() == [[0.0, 3.0], [0.0, 0.0]]


# poisson and binomial -------------------------------------------------------------------

def _pmf_check(samples, pmf, n):
    """Every value's frequency within 5 sigma of its probability (plus a small slack)."""
    values, counts = np.unique(samples, return_counts=True)
    for v, c in zip(values, counts):
        p = pmf(int(v))
        sigma = math.sqrt(n * p * (1 - p)) + 3
        assert abs(c - n * p) <= 5 * sigma, (v, c, n * p)
    covered = sum(pmf(int(v)) for v in values)
    assert covered > 0.99


@pytest.mark.parametrize("lam", [0.3, 4.0, 35.0, 900.0])
def test_poisson_follows_the_poisson_pmf(lam, device):
    em.manual_seed(1)
    n = 20000
    s = to_numpy(em.poisson(em.full((n,), lam, dtype=em.float64, device=device)))
    assert np.all(s == np.floor(s)) and s.min() >= 0

    def pmf(k):
        return math.exp(k * math.log(lam) - lam - math.lgamma(k + 1))
    _pmf_check(s, pmf, n)


@pytest.mark.parametrize("count,prob", [(5, 0.3), (40, 0.2), (100, 0.7), (2000, 0.5),
                                        (7, 1.0), (0, 0.4), (9, 0.0)])
def test_binomial_follows_the_binomial_pmf(count, prob, device):
    em.manual_seed(2)
    n = 20000
    s = to_numpy(em.binomial(em.full((n,), float(count), device=device),
                             em.full((n,), prob, device=device)))
    assert s.min() >= 0 and s.max() <= count

    def pmf(k):
        if prob in (0.0, 1.0):
            return float(k == count * prob)
        return math.exp(math.lgamma(count + 1) - math.lgamma(k + 1) - math.lgamma(count - k + 1)
                        + k * math.log(prob) + (count - k) * math.log(1 - prob))
    _pmf_check(s, pmf, n)


def test_poisson_binomial_seeded_shape_dtype_and_errors():
    rates = em.tensor([[0.5, 20.0], [0.0, 3.0]])
    em.manual_seed(5)
    a = em.poisson(rates)
    em.manual_seed(5)
    b = em.poisson(rates)
    assert a.tolist() == b.tolist() and a.dtype == em.float32 and a.shape == (2, 2)
    assert a[1, 0].item() == 0.0
    g = em.Generator().manual_seed(3)
    assert em.binomial(em.tensor([10.0]), em.tensor([0.5]), generator=g).shape == (1,)
    with pytest.raises(ValueError, match="poisson: rates must be finite and non-negative"):
        em.poisson(em.tensor([-1.0]))
    with pytest.raises(TypeError, match="poisson: rates must be a floating point"):
        em.poisson(em.tensor([1]))
    with pytest.raises(ValueError, match="binomial: prob must be in"):
        em.binomial(em.tensor([3.0]), em.tensor([1.5]))
    with pytest.raises(ValueError, match="binomial: count must hold"):
        em.binomial(em.tensor([2.5]), em.tensor([0.5]))
    with pytest.raises(ValueError, match="binomial: count and prob must have one shape"):
        em.binomial(em.tensor([2.0, 3.0]), em.tensor([0.5]))


# vmap and ember.func ----------------------------------------------------------------------

def test_vmap_in_dims_out_dims_and_structures():
    x, y = em.randn(3, 2), em.randn(2, 3)
    r = em.vmap(lambda a, b: a * b, in_dims=(0, 1))(x, y)
    assert_close(r, to_numpy(x) * to_numpy(y).T, em.float32)
    r = em.vmap(lambda a, b: a + b, in_dims=(0, None))(x, em.ones(2))
    assert_close(r, to_numpy(x) + 1, em.float32)
    r = em.vmap(lambda a: a.sum(), out_dims=0)(x)
    assert_close(r, to_numpy(x).sum(1), em.float32)
    r = em.vmap(lambda a: a * 2, out_dims=1)(x)
    assert tuple(r.shape) == (2, 3)
    out = em.vmap(lambda d: {"s": d["a"] + d["b"], "p": (d["a"] * d["b"],)})(
        {"a": x, "b": x})
    assert_close(out["s"], 2 * to_numpy(x), em.float32)
    assert_close(out["p"][0], to_numpy(x) ** 2, em.float32)
    batched_dot = em.vmap(em.dot)                               # PyTorch's doc example
    assert tuple(batched_dot(em.randn(2, 5), em.randn(2, 5)).shape) == (2,)
    mm = em.vmap(em.vmap(lambda a, b: a * b))                   # nested
    assert tuple(mm(em.ones(2, 3), em.ones(2, 3)).shape) == (2, 3)
    assert tuple(em.func.vmap(lambda a: a, chunk_size=2)(x).shape) == (3, 2)


def test_vmap_errors_and_randomness():
    x = em.randn(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        em.vmap(lambda a, b: a + b)(x, em.randn(4, 2))
    with pytest.raises(ValueError, match="in_dims"):
        em.vmap(lambda a, b: a, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="must return tensors"):
        em.vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="chunk_size"):
        em.vmap(lambda a: a, chunk_size=0)
    with pytest.raises(ValueError, match="randomness must be one of"):
        em.vmap(lambda a: a, randomness="x")
    with pytest.raises(RuntimeError, match="randomness='error'"):
        em.vmap(lambda a: a + em.rand(2))(x)
    r = em.vmap(lambda a: em.rand(4), randomness="same")(x)
    assert r[0].tolist() == r[1].tolist() == r[2].tolist()
    r = em.vmap(lambda a: em.rand(4), randomness="different")(x)
    assert r[0].tolist() != r[1].tolist()
    em.rand(1)                                                 # the guard is lifted


def test_func_grad_vjp_jacobians():
    f = em.func
    x = em.tensor([1.0, 2.0], dtype=em.float64)
    g = f.grad(lambda t: (t ** 3).sum())(x)
    assert g.tolist() == [3.0, 12.0] and not g.requires_grad
    assert f.grad(f.grad(lambda t: (t ** 3).sum()))(em.tensor(2.0)).item() == 12.0
    g, aux = f.grad(lambda t: ((t * t).sum(), "aux"), has_aux=True)(x)
    assert g.tolist() == [2.0, 4.0] and aux == "aux"
    ga, gb = f.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, em.tensor([5.0, 7.0],
                                                                               dtype=em.float64))
    assert ga.tolist() == [5.0, 7.0] and gb.tolist() == [1.0, 2.0]
    g, v = f.grad_and_value(lambda t: (t * t).sum())(x)
    assert v.item() == 5.0
    out, vjp_fn = f.vjp(lambda t: t.sin(), x)
    (gx,) = vjp_fn(em.ones(2, dtype=em.float64))
    assert_close(gx, np.cos([1.0, 2.0]), em.float64)
    j = f.jacrev(lambda t: t.sin() * t[0])(x)
    want = np.diag(np.cos([1.0, 2.0])) * 1.0
    want[:, 0] += np.sin([1.0, 2.0])
    assert_close(j, want, em.float64)
    assert_close(f.jacfwd(lambda t: t.sin() * t[0])(x), want, em.float64)
    h = f.hessian(lambda t: (t ** 3).sum())(x)
    assert_close(h, np.diag([6.0, 12.0]), em.float64)
    per_sample = em.vmap(f.grad(lambda t: (t ** 2).sum()))(em.ones(3, 2, dtype=em.float64))
    assert per_sample.tolist() == [[2.0, 2.0]] * 3
    with pytest.raises(ValueError, match="single element"):
        f.grad(lambda t: t * 2)(x)
    with pytest.raises(ValueError, match="argnums"):
        f.grad(lambda t: t.sum(), argnums=3)(x)
    with pytest.raises(ValueError, match="cotangent"):
        vjp_fn(em.ones(3, dtype=em.float64))


# legacy and introspection Tensor methods ------------------------------------------------

def test_apply_map_map2():
    t = em.arange(4.0)
    assert t.apply_(lambda v: v * 2) is t and t.tolist() == [0.0, 2.0, 4.0, 6.0]
    t.map_(em.ones(4), lambda a, b: a + b)
    assert t.tolist() == [1.0, 3.0, 5.0, 7.0]
    t.map2_(em.ones(4), em.ones(4) * 2, lambda a, b, c: a + b * c)
    assert t.tolist() == [3.0, 5.0, 7.0, 9.0]
    t.map_(em.tensor(1.0), lambda a, b: a - b)                  # broadcast
    assert t.tolist() == [2.0, 4.0, 6.0, 8.0]
    i = em.tensor([1, 2])
    assert i.apply_(lambda v: v * 10).tolist() == [10, 20]
    if em.opencl.is_available():
        with pytest.raises(TypeError, match="apply_: only CPU tensors"):
            em.ones(2, device="opencl").apply_(lambda v: v)


def test_new_resize_resize_as():
    x = em.ones(2)
    assert x.new(3).shape == (3,) and x.new(3).dtype == em.float32
    assert x.new([1, 2]).tolist() == [1.0, 2.0]
    assert em.ones(2, dtype=em.int64).new(2, 2).dtype == em.int64
    assert x.new(em.Size([2, 3])).shape == (2, 3) and x.new().shape == (0,)
    assert x.new(x) is x
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert em.arange(6.0).resize(2, 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert em.arange(6.0).resize_as(em.empty(3, 2)).tolist() == [[0, 1], [2, 3], [4, 5]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert em.arange(2.0).resize(4)[:2].tolist() == [0.0, 1.0]


def test_set_and_is_set_to():
    y = em.zeros(4)
    z = em.empty(0)
    assert z.set_(y) is z
    assert z.is_set_to(y) and y.is_set_to(z) and not y[1:].is_set_to(y)
    assert y.is_set_to(y.view(4)) and not y.is_set_to(y.view(2, 2))
    z[0] = 5.0
    assert y[0].item() == 5.0
    z2 = em.empty(0).set_(y.untyped_storage(), 1, (2,), (1,))
    assert z2.tolist() == [0.0, 0.0] and z2.storage_offset() == 1
    z3 = em.ones(3).set_()
    assert z3.shape == (0,)
    with pytest.raises(ValueError, match="set_: size .* need"):
        em.empty(0).set_(y.untyped_storage(), 2, (3,))
    with pytest.raises(TypeError, match="set_: expected a source of dtype"):
        em.empty(0).set_(em.zeros(2, dtype=em.int64))


def test_introspection_methods():
    x = em.empty(2, 3, 4).permute(2, 0, 1)
    assert x.dim_order() == (1, 2, 0) and em.empty(2, 3).dim_order() == (0, 1)
    with pytest.raises(RuntimeError, match="ambiguous"):
        em.empty(2, 2).as_strided((2, 2), (1, 1)).dim_order(ambiguity_check=True)
    assert x.const_data_ptr() == x.data_ptr()
    assert x.is_meta is False
    assert x.to_dense() is x and x.to_dense(em.float64).dtype == em.float64
    a = em.ones(3, requires_grad=True)
    assert a.output_nr == 0 and (a * 2).output_nr == 0
    x.record_stream(None)

    class Sub(em.Tensor):
        pass
    base = em.ones(2, requires_grad=True)
    s = base.as_subclass(Sub)
    assert isinstance(s, Sub) and s.data_ptr() == base.data_ptr()
    (s * 3).sum().backward()
    assert base.grad.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="as_subclass"):
        base.as_subclass(int)


def test_module_load():
    p = em.zeros(2)
    o = em.tensor([1.0, 2.0])
    r = p.module_load(o)
    assert r is not p and r is not o and p.tolist() == [1.0, 2.0]
    r = p.module_load(em.tensor([3.0, 4.0]), assign=True)
    assert r.tolist() == [3.0, 4.0] and p.tolist() == [1.0, 2.0]


# activations in tensor-core ---------------------------------------------------------------

@SETTINGS
@given(shape=shapes(min_dims=1, max_dims=3), seed=seeds, d=floats)
def test_hardshrink_prelu_match_numpy(shape, seed, d, device):
    rng = np.random.default_rng(seed)
    npd = "float32" if d is em.float32 else "float64"
    a = rng.uniform(-2, 2, size=shape).astype(npd)
    x = T(a, device)
    assert_close(em.hardshrink(x, 0.7), np.where(np.abs(a) > 0.7, a, 0), d)
    assert_close(x.hardshrink(), np.where(np.abs(a) > 0.5, a, 0), d)
    w = np.array(0.25, dtype=npd)
    assert_close(em.prelu(x, T(w, device)), np.where(a >= 0, a, w * a), d)
    if len(shape) >= 2:
        wc = rng.uniform(0, 1, size=shape[1]).astype(npd)
        wb = wc.reshape((-1,) + (1,) * (len(shape) - 2))
        assert_close(x.prelu(T(wc, device)), np.where(a >= 0, a, wb * a), d)


def test_hardshrink_prelu_gradcheck_and_errors():
    x = em.tensor([[-1.3, 0.2, 0.9], [0.6, -0.4, 2.0]], dtype=em.float64, requires_grad=True)
    w = em.tensor([0.1, 0.2, 0.3], dtype=em.float64, requires_grad=True)
    assert em.autograd.gradcheck(lambda t: em.hardshrink(t, 0.5), (x,))
    assert em.autograd.gradcheck(lambda t, v: em.prelu(t, v), (x, w))
    with pytest.raises(ValueError, match="prelu: mismatch of parameter numbers"):
        em.prelu(em.ones(2, 4), em.ones(3))
    with pytest.raises(TypeError, match="hardshrink"):
        em.hardshrink(em.ones(2), "a")


def test_convolution_dispatches_like_aten():
    x = em.ones(1, 1, 4)
    w = em.ones(1, 1, 2)
    # PyTorch: convolution(..., transposed=True) of ones is [1, 2, 2, 2, 1]
    assert em.convolution(x, w, None, [1], [0], [1], True, [0], 1).tolist() == \
        [[[1.0, 2.0, 2.0, 2.0, 1.0]]]
    assert em.convolution(x, w, None, [1], [0], [1], False, [0], 1).tolist() == \
        [[[2.0, 2.0, 2.0]]]
    x2, w2 = em.randn(1, 2, 5, 5), em.randn(3, 2, 3, 3)
    assert_close(em.convolution(x2, w2, None, 1, 1, 1, False, 0, 1),
                 to_numpy(em.conv2d(x2, w2, None, 1, 1)), em.float32)
    with pytest.raises(ValueError, match="convolution: expected a weight of 3, 4 or 5"):
        em.convolution(x, em.ones(2, 2), None, 1, 0, 1, False, 0, 1)
    with pytest.raises(ValueError, match="output_padding"):
        em.convolution(x, w, None, [1], [0], [1], False, [1], 1)


def test_embedding_renorm_():
    w = em.tensor([[3.0, 4.0], [1.0, 0.0], [6.0, 8.0]])
    assert em.embedding_renorm_(w, em.tensor([0, 2, 2]), 1.0, 2.0) is w
    # PyTorch: rows 0 and 2 scaled to norm 1 (by max_norm / (norm + 1e-7)), row 1 kept
    assert_close(w, np.array([[0.6, 0.8], [1.0, 0.0], [0.6, 0.8]], np.float32), em.float32,
                 atol=1e-6, rtol=1e-6)
    with pytest.raises(TypeError, match="embedding_renorm_: indices must be an integer"):
        em.embedding_renorm_(w, em.tensor([0.0]), 1.0, 2.0)


def test_grad_dtype():
    x = em.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_dtype == em.float32
    x.grad_dtype = em.float64
    assert x.grad_dtype == em.float64
    (x * 2).sum().backward()
    assert x.grad.dtype == em.float64 and x.grad.tolist() == [2.0, 2.0]
    x.grad = None
    x.grad_dtype = None
    assert x.grad_dtype is None
    (x * 3).sum().backward()
    assert x.grad.dtype == em.float32
    y = x * 2
    with pytest.raises(RuntimeError, match="grad_dtype can only be accessed on leaf"):
        _ = y.grad_dtype
    with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf"):
        y.grad_dtype = em.float16
    z = em.tensor([1.0])
    z.grad_dtype = em.float16
    assert z.grad_dtype == em.float16
    with pytest.raises(TypeError, match="grad_dtype: expected an ember dtype"):
        z.grad_dtype = "nope"


def test_cond_and_while_loop_pytorch_examples():
    assert em.cond(em.tensor(True), lambda x: x + 1, lambda x: x - 1, (em.ones(2),)).tolist() \
        == [2.0, 2.0]
    assert em.cond(False, lambda x: x + 1, lambda x: x - 1, [em.ones(2)]).tolist() == [0.0, 0.0]
    i, x = em.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                         (em.tensor(0), em.ones(2)))
    assert i.item() == 3 and x.tolist() == [8.0, 8.0]
    n, y = em.func.while_loop(lambda n, x: 2 * n < x.shape[0], lambda n, x: (n + 1, x + n),
                              (0, em.zeros(3, 4)))
    assert n == 2 and y[0, 0].item() == 1.0
    with pytest.raises(ValueError, match="cond: the predicate must be a single-element"):
        em.cond(em.ones(2), lambda: 1, lambda: 2)
    with pytest.raises(ValueError, match="while_loop: body_fn must return tensors of the"):
        em.while_loop(lambda x: x.numel() < 4, lambda x: (em.cat([x, x]),), (em.ones(1),))
    with pytest.raises(TypeError, match="while_loop: carried_inputs must be a tuple"):
        em.while_loop(lambda x: False, lambda x: x, em.ones(1))


def test_native_dropout_layer_norm_batch_norm():
    em.manual_seed(0)
    out, mask = em.native_dropout(em.ones(1000), 0.5, True)
    assert mask.dtype == em.bool and (out == mask.float() * 2).all().item()
    assert 400 < mask.sum().item() < 600
    out, mask = em.native_dropout(em.ones(3), 0.5, False)
    assert out.tolist() == [1.0, 1.0, 1.0] and mask.tolist() == [True, True, True]
    assert em.native_dropout(em.ones(20), 0.5, None)[1].sum().item() < 20   # None trains
    x = em.arange(12.0).reshape(2, 2, 3)
    out, mean, rstd = em.native_layer_norm(x, [3], None, None, 1e-5)
    # PyTorch's values
    assert mean.shape == (2, 2, 1) and mean.reshape(-1).tolist() == [1.0, 4.0, 7.0, 10.0]
    assert_close(rstd.reshape(-1), np.full(4, 1.2247356, np.float32), em.float32, rtol=1e-5,
                 atol=1e-5)
    assert_close(out, to_numpy(em.layer_norm(x, [3])), em.float32)
    out, m, r = em.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert m.tolist() == [4.0, 7.0]
    assert_close(r, np.full(2, 0.32163358, np.float32), em.float32, rtol=1e-5, atol=1e-5)
    rm, rv = em.zeros(2), em.ones(2)
    out, m, r = em.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    assert m.shape == (0,) and r.shape == (0,)
    xg = em.randn(2, 4, dtype=em.float64, requires_grad=True)
    assert em.autograd.gradcheck(lambda t: em.native_layer_norm(t, [4], None, None, 1e-5)[2],
                                 (xg,))
    with pytest.raises(TypeError, match="native_batch_norm: training must be a bool"):
        em.native_batch_norm(x, None, None, None, None, 1, 0.1, 1e-5)


def test_is_maia():
    assert em.ones(1).is_maia is False


def test_tensor_core_alone_names_the_package_for_nn_functions():
    code = """
import sys
class Block:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "ember.nn" or name.startswith("ember.nn."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block)
import ember as em
assert em.hardshrink(em.tensor([0.2, 1.0])).tolist() == [0.0, 1.0]
assert em.vmap(lambda t: t * 2)(em.ones(2, 2)).tolist() == [[2.0, 2.0]] * 2
assert not hasattr(em, "celu")
try:
    em.kl_div
except AttributeError as e:
    print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ember.kl_div needs the ember-nn package: pip install ember-nn" in r.stdout


def test_frobenius_norm_out_must_be_a_tensor():
    # fuzz finding: out=object() reached object.copy_
    with pytest.raises(TypeError, match="frobenius_norm: out must be a Tensor"):
        em.frobenius_norm(em.ones(2, 2), out=object())


def test_complex_copies_and_module_level_inplace_spellings():
    z = np.array([1 + 2j, 3 - 1j, -0.5j], dtype=np.complex128)
    t = em.from_numpy(z.copy())
    r = em.view_as_real_copy(t)
    np.testing.assert_array_equal(r.numpy(), np.stack([z.real, z.imag], -1))
    r[0, 0] = 9                                    # its own storage, not a view
    assert t[0].item() == 1 + 2j
    back = em.view_as_complex_copy(r)
    np.testing.assert_array_equal(back.numpy(), [9 + 2j, 3 - 1j, -0.5j])
    out = em.empty(0, dtype=em.complex128)
    assert em.view_as_complex_copy(r, out=out) is out and tuple(out.shape) == (3,)
    assert em.conj_physical_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.conj(z))
    x = em.tensor([0.0, 0.5, 2.0], dtype=em.float64)
    assert em.i0_(x) is x
    np.testing.assert_allclose(x.numpy(), np.i0([0.0, 0.5, 2.0]), rtol=1e-14)
    with pytest.raises(TypeError, match="view_as_real_copy"):
        em.view_as_real_copy([1, 2])
