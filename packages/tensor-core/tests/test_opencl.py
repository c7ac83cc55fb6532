"""ember.opencl: devices, memory, program caches, errors, and the kernel table the GPU
backends share (names and parameter lists parsed from the programs ember.ops.gpu_programs
lists). Skipped where no OpenCL device exists (CI installs PoCL, an OpenCL on the CPU)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember as em
from ember.backends import gpu
from ember.ops import gpu_programs

pytestmark = pytest.mark.skipif(not em.opencl.is_available(),
                                reason="no OpenCL device (pip install pyopencl "
                                       "pocl-binary-distribution)")


def test_devices_and_names():
    n = em.opencl.device_count()
    assert n >= 1
    assert isinstance(em.opencl.get_device_name(), str) and em.opencl.get_device_name(0)
    assert em.opencl.get_device_name("opencl:0") == em.opencl.get_device_name(0)
    with pytest.raises(RuntimeError, match=f"device opencl:{n} does not exist"):
        em.opencl.get_device_name(n)
    with pytest.raises(RuntimeError, match=f"there are {n} OpenCL device"):
        em.zeros(2, device=f"opencl:{n}")
    with pytest.raises(ValueError, match="expected an opencl device"):
        em.opencl.get_device_name("cpu")


def test_round_trip_factories_and_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = em.from_numpy(a).to("opencl")
    assert t.device == em.device("opencl:0") and t.device.type == "opencl"
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    np.testing.assert_array_equal(t.transpose(0, 2).cpu().numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.numpy(force=True), a)
    with pytest.raises(TypeError, match="tensor is on opencl:0; call .cpu"):
        t.numpy()
    for make in (lambda d: em.zeros((2, 3), device=d), lambda d: em.ones(4, device=d),
                 lambda d: em.full((2,), 7, dtype=em.int16, device=d),
                 lambda d: em.arange(5, device=d), lambda d: em.eye(3, device=d),
                 lambda d: em.linspace(0, 1, 5, device=d)):
        got = make("opencl")
        assert got.device.type == "opencl"
        np.testing.assert_array_equal(got.cpu().numpy(), make("cpu").numpy())


def test_mixing_devices_names_both():
    a, b = em.ones(3), em.ones(3, device="opencl")
    with pytest.raises(RuntimeError, match="add: expected all tensors on one device, got "
                                           "cpu and opencl"):
        a + b
    with pytest.raises(RuntimeError, match="matmul: expected all tensors on one device"):
        em.ones((2, 2)) @ em.ones((2, 2), device="opencl")


def test_a_bare_device_type_means_device_0():
    # "opencl" and "opencl:0" are one place: tensors record the index, as in PyTorch
    a, b = em.ones(3, device="opencl"), em.ones(3, device="opencl:0")
    assert a.device == b.device == em.device("opencl:0") and str(a.device) == "opencl:0"
    np.testing.assert_array_equal((a + b).cpu().numpy(), [2, 2, 2])
    assert (a.to("opencl") is a) and a.to("opencl:0") is a


def test_memory_stats_and_empty_cache():
    em.opencl.empty_cache()
    base = em.opencl.memory_allocated()
    t = em.empty(1 << 20, device="opencl")
    assert em.opencl.memory_allocated() >= base + (4 << 20)
    assert em.opencl.memory_reserved() >= em.opencl.memory_allocated()
    del t
    assert em.opencl.memory_allocated() == base
    held = em.opencl.memory_reserved()
    em.opencl.empty_cache()
    assert em.opencl.memory_reserved() < held


def test_out_of_memory_says_how_much():
    huge = 1 << 50
    with pytest.raises(gpu.OutOfMemoryError, match=rf"out of memory allocating {huge * 4} "
                                                   r"bytes \(\d+ bytes allocated, \d+ cached"):
        em.empty(huge, device="opencl")
    assert issubclass(gpu.OutOfMemoryError, RuntimeError)


def test_float64_needs_the_extension(monkeypatch):
    b = em.opencl.get_backend()
    st = b.state(em.device("opencl"))
    x = em.ones(3, dtype=em.float64, device="opencl")   # storage is only bytes
    monkeypatch.setattr(st, "fp64", False)
    with pytest.raises(TypeError, match="add: float64 is not supported on opencl.*cl_khr_fp64"):
        x + 1
    with pytest.raises(TypeError, match="sum: float64 is not supported on opencl"):
        x.sum()


def test_float16_is_stored_and_computed_in_float32():
    a = np.array([0.1, 1.5, -3.25, 1000], np.float16)
    t = em.from_numpy(a).to("opencl")
    np.testing.assert_array_equal((t * 2).cpu().numpy(), a * np.float16(2))
    assert (t.sum().item(), t.dtype) == (pytest.approx(float(a.astype(np.float64).sum()),
                                                       rel=1e-3), em.float16)


def test_counters_count_launches_and_transfers():
    em.opencl.reset_counters()
    x = em.ones((4, 4), device="opencl")
    y = (x * 2 + 1).sum()
    assert em.opencl.counters()["host_transfers"] == 0
    assert y.item() == 48
    c = em.opencl.counters()
    assert c["host_transfers"] == 1 and c["launches"] == 4   # fill, mul, add, sum


def test_sync_mode_raises_at_the_line(monkeypatch):
    monkeypatch.setenv("EMBER_SYNC", "1")
    x = em.zeros((2, 3), device="opencl")
    with pytest.raises(IndexError, match="target 7 is out of bounds for 3 classes"):
        em.nn.functional.cross_entropy(x, em.tensor([0, 7], device="opencl"))


def test_platform_filter_and_binary_cache(tmp_path):
    """EMBER_OPENCL_PLATFORM keeps matching platforms only; program binaries land in
    EMBER_CACHE_DIR keyed by device, driver and source, and a second process builds
    nothing from source."""
    code = ("import ember as em, ember.opencl as o\n"
            "print(o.device_count())\n"
            "if o.device_count():\n"
            "    b = o.get_backend()\n"
            "    b.program(b.state(em.device('opencl')), 'loss')   # a small program\n"
            "    print(b.builds)\n")
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path), EMBER_OPENCL_BINARY_CACHE="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", code], env=dict(env, **extra),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()
    assert run(EMBER_OPENCL_PLATFORM="no such platform") == ["0"]
    first = run()
    assert int(first[1]) >= 1
    binaries = sorted(p.name for p in (tmp_path / "opencl").iterdir())
    assert binaries and all(p.endswith(".bin") for p in binaries)
    assert run() == [first[0], "0"]          # everything from the disk cache
    (tmp_path / "opencl" / binaries[0]).write_bytes(b"garbage")
    assert int(run()[1]) >= 1                # a corrupt binary is rebuilt, not fatal


def test_kernel_table_for_the_cuda_build():
    """Every program parses, every kernel has a typed parameter list, the op table's
    rows all have kernels, and every hand-written kernel entry point of the Backend
    interface is implemented by GPUBackend."""
    from ember.backends.base import HAND_WRITTEN_KERNELS, missing_kernels
    from ember.ops import render, table
    kernels = gpu_programs.all_kernels()
    for row in table.ELEMENTWISE:
        for dt in render.compute_dtypes(row):
            assert f"ew_{row.name}_{dt.name}" in kernels
    for row in table.REDUCTIONS:
        for dt in render.DTYPES:
            assert (f"reduce_{row.name}_{dt.name}" in kernels) == (dt.kind in row.kinds)
    for name in ("gemm_float32", "cast_int8_float16", "fill_bool", "softmax_rows_float64",
                 "im2col_float32", "max_pool2d_float32", "random_normal_float16",
                 "sort_rows_int64", "check_targets", "index_normalize"):
        assert name in kernels
    assert all(set(sig) <= set("qiIfdBbhHQPLFD") for _, sig in kernels.values())
    assert gpu_programs.signature("gemm_float32") == ("q", "q", "q", "q", "P", "q", "q", "P",
                                                     "q", "q", "P", "q", "q", "L")
    assert missing_kernels(em.opencl.get_backend()) == []
    assert set(HAND_WRITTEN_KERNELS) <= {n for n in dir(gpu.GPUBackend) if not n.startswith("_")}
