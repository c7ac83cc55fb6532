"""The CUDA backend's host side, testable without a GPU: the build imports without a
driver, the messages on use, device strings, the caching allocator's logic (over host
malloc with an out-of-memory limit: kernels/cuda/allocator.c is the same code the GPU
runs), the kernel table and the launcher's argument conversion. The device-parametrised
op tests run on cuda where a GPU exists (EMBER_TEST_DEVICE=cuda, tools/gpu-check)."""
import pickle
import struct

import pytest
from hypothesis import given, settings, strategies as st

import ember as em

MiB = 1 << 20


def _runtime():
    if not em.cuda.is_built():
        pytest.skip("ember was built without CUDA (no nvcc at build time, or USE_CUDA=0)")
    from ember._C import cuda
    return cuda


no_gpu = pytest.mark.skipif(em.cuda.is_available(), reason="a CUDA device is present")


# --------------------------------------------------------------------- without a device

@no_gpu
def test_is_available_false_without_a_device():
    assert em.cuda.is_available() is False
    assert em.cuda.device_count() == 0


@no_gpu
def test_factory_on_cuda_says_why():
    reason = "no CUDA device is available" if em.cuda.is_built() else "built without"
    with pytest.raises(RuntimeError, match=reason):
        em.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match=reason):
        em.arange(3).to("cuda:0")
    with pytest.raises(RuntimeError, match=reason):
        em.ones(3).cuda()


@no_gpu
@pytest.mark.parametrize("call", [em.cuda.current_device, em.cuda.get_device_name,
                                  em.cuda.memory_allocated, em.cuda.memory_stats,
                                  lambda: em.cuda.set_device(0), em.cuda.mem_get_info])
def test_device_functions_say_why(call):
    reason = "no CUDA device is available" if em.cuda.is_built() else "built without CUDA"
    with pytest.raises(RuntimeError, match=reason):
        call()


@no_gpu
def test_no_driver_reason_names_the_cause():
    rt = _runtime()
    assert rt.device_count() == 0
    assert rt.unavailable_reason()      # the runtime's own error (driver missing, ...)
    assert em.cuda.empty_cache() is None  # nothing to free: not an error
    assert em.cuda.synchronize is not None


@no_gpu
def test_pin_memory_without_a_device():
    reason = "no CUDA device is available" if em.cuda.is_built() else "built without"
    x = em.arange(4.0)
    assert x.is_pinned() is False
    with pytest.raises(RuntimeError, match=reason):
        x.pin_memory()


# ------------------------------------------------------------------------ device strings

@pytest.mark.parametrize("text, index", [("cuda", -1), ("cuda:0", 0), ("cuda:3", 3)])
def test_cuda_device_strings(text, index):
    d = em.device(text)
    assert d.type == "cuda" and d.index == index
    assert str(d) == text
    assert d == text and d == em.device(text)
    assert pickle.loads(pickle.dumps(d)) == d
    assert hash(d) == hash(em.device(text))


def test_cuda_device_with_index_argument():
    assert em.device("cuda", 1) == "cuda:1"
    assert repr(em.device("cuda", 1)) == "device(type='cuda', index=1)"
    assert em.device("cuda:1") != em.device("cuda:0") and em.device("cuda") != "cpu"


@pytest.mark.parametrize("text, message", [
    ("cuda:x", "invalid device string"), ("cuda:-1", "invalid device string"),
    ("cuda:", "invalid device string"), ("gpu", "unknown device type 'gpu'"),
    ("CUDA", "unknown device type 'CUDA'")])
def test_bad_cuda_device_strings(text, message):
    with pytest.raises(ValueError, match=message):
        em.device(text)


def test_cuda_device_index_twice():
    with pytest.raises(ValueError, match="index given twice"):
        em.device("cuda:0", 1)


def test_cuda_index_of_non_cuda_device():
    _runtime()
    with pytest.raises(ValueError, match="expected a cuda device, got cpu"):
        em.cuda.memory_allocated("cpu")


# ----------------------------------------------------------------------------- allocator

def _host(limit=0):
    return _runtime().CachingAllocator.for_host_test(limit)


@pytest.mark.parametrize("n, rounded", [(0, 512), (1, 512), (512, 512), (513, 1024),
                                        (MiB, MiB), (MiB + 1, MiB + 512)])
def test_round_size(n, rounded):
    assert _runtime().round_size(n) == rounded


@pytest.mark.parametrize("n, segment", [(1, 2 * MiB), (MiB, 2 * MiB), (MiB + 1, 20 * MiB),
                                        (10 * MiB - 512, 20 * MiB), (10 * MiB, 10 * MiB),
                                        (11 * MiB, 12 * MiB), (100 * MiB + 1, 102 * MiB)])
def test_segment_size(n, segment):
    assert _runtime().segment_size(n) == segment


def test_small_blocks_split_one_segment_in_address_order():
    a = _host()
    b1, b2, b3 = a.malloc(1000), a.malloc(3000), a.malloc(1)
    assert (b1.size, b2.size, b3.size) == (1024, 3072, 512)
    assert b2.ptr == b1.ptr + 1024 and b3.ptr == b2.ptr + 3072
    s = a.stats()
    assert s["segment.all.current"] == 1 and s["reserved_bytes.all.current"] == 2 * MiB
    assert s["allocated_bytes.all.current"] == 1024 + 3072 + 512
    assert s["requested_bytes.all.current"] == 1000 + 3000 + 1
    assert s["active.all.current"] == 3 and s["num_cache_hits"] == 2
    assert s["inactive_split_bytes.all.current"] == 2 * MiB - (1024 + 3072 + 512)
    assert a.raw_calls == 1


def test_freed_block_is_reused_without_the_raw_allocator():
    a = _host()
    b = a.malloc(5000)
    ptr = b.ptr
    del b
    calls = a.raw_calls
    c = a.malloc(4800)          # rounds to the same 5120 bytes: best fit is the old block
    assert c.ptr == ptr and a.raw_calls == calls
    s = a.stats()
    assert s["allocation.all.allocated"] == 2 and s["allocation.all.freed"] == 1


def test_free_neighbours_merge():
    a = _host()
    x, y, z = a.malloc(1024), a.malloc(2048), a.malloc(1024)
    base = x.ptr
    del y
    del x                        # merges with the free y on its right
    w = a.malloc(3072)           # fits only in the merged block
    assert w.ptr == base and a.stats()["segment.all.current"] == 1
    del w, z
    s = a.stats()                # everything free: one block, the whole segment
    assert s["allocated_bytes.all.current"] == 0 and s["inactive_split_bytes.all.current"] == 0
    assert a.empty_cache() == 2 * MiB
    assert a.raw_in_use == 0


def test_small_and_large_pools_are_separate():
    a = _host()
    small = a.malloc(1000)
    large = a.malloc(2 * MiB)    # never carved from the small pool's 2 MiB segment
    assert a.stats()["segment.all.current"] == 2
    assert not (small.ptr <= large.ptr < small.ptr + 2 * MiB)


def test_large_segment_is_split_and_rest_reused():
    a = _host()
    b1 = a.malloc(3 * MiB // 2)              # a 20 MiB segment
    b2 = a.malloc(3 * MiB)                   # from its rest
    assert a.stats()["segment.all.current"] == 1 and b2.ptr == b1.ptr + 3 * MiB // 2
    b3 = a.malloc(17 * MiB)                  # 15.5 MiB left: a new segment
    assert a.stats()["segment.all.current"] == 2 and b3.size == 18 * MiB


def test_large_block_rest_under_1mib_is_not_split():
    a = _host()
    b1 = a.malloc(19 * MiB + 512)            # 20 MiB segment, < 1 MiB left: no split
    assert b1.size == 20 * MiB
    assert a.stats()["allocated_bytes.all.current"] == 20 * MiB


def test_peaks_and_reset():
    a = _host()
    b = a.malloc(4 * MiB)
    c = a.malloc(4 * MiB)
    del b, c
    s = a.stats()
    assert s["allocated_bytes.all.current"] == 0 and s["allocated_bytes.all.peak"] == 8 * MiB
    assert s["reserved_bytes.all.peak"] == 20 * MiB and s["active.all.peak"] == 2
    a.reset_peak_stats()
    s = a.stats()
    assert s["allocated_bytes.all.peak"] == 0 and s["reserved_bytes.all.peak"] == 20 * MiB
    assert s["active.all.peak"] == 0


def test_empty_cache_keeps_segments_in_use():
    a = _host()
    keep = a.malloc(1000)                     # small pool segment, in use
    tmp = a.malloc(12 * MiB)                  # large segment, freed below
    del tmp
    assert a.stats()["reserved_bytes.all.current"] == 14 * MiB
    assert a.empty_cache() == 12 * MiB
    s = a.stats()
    assert s["reserved_bytes.all.current"] == 2 * MiB and s["segment.all.freed"] == 1
    assert a.raw_in_use == 2 * MiB and keep.size == 1024


def test_out_of_memory_frees_the_cache_and_retries_once():
    a = _host(limit=24 * MiB)
    b = a.malloc(1000)               # a 2 MiB small-pool segment
    del b                            # ... cached, and no use for a large request
    c = a.malloc(23 * MiB)           # 2 + 24 > 24: the cache is freed, the retry fits
    s = a.stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert s["reserved_bytes.all.current"] == 24 * MiB and c.size == 24 * MiB


def test_out_of_memory_message_names_the_sizes():
    Error = _runtime().OutOfMemoryError
    a = _host(limit=24 * MiB)
    keep = a.malloc(12 * MiB)
    with pytest.raises(Error, match=r"host \(test\): out of memory: tried to allocate "
                                    r"16\.00 MiB \(16777216 bytes\); ember has 12\.00 MiB "
                                    r"allocated and 12\.00 MiB reserved .* 12\.00 MiB of "
                                    r"24\.00 MiB is free"):
        a.malloc(16 * MiB)
    s = a.stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    assert issubclass(Error, RuntimeError) and keep.size == 12 * MiB
    assert em.cuda.OutOfMemoryError is Error


_sizes = st.one_of(st.integers(0, 5000), st.integers(MiB - 1000, MiB + 1000),
                   st.integers(MiB, 12 * MiB))


@settings(deadline=None)
@given(st.lists(st.tuples(st.booleans(), _sizes, st.integers(0, 1000)), max_size=60),
       st.sampled_from([0, 40 * MiB]))
def test_allocator_invariants(ops, limit):
    """Any interleaving of requests and frees: live blocks never overlap, each holds
    its request, the counters equal what is live, the raw pair has out exactly what is
    reserved, and nothing is left once all is freed and the cache emptied."""
    rt = _runtime()
    a = _host(limit)
    live = []
    for is_alloc, n, pick in ops:
        if is_alloc or not live:
            try:
                live.append((a.malloc(n), n))
            except rt.OutOfMemoryError:
                assert limit and a.stats()["num_ooms"] >= 1
        else:
            live.pop(pick % len(live))
        spans = sorted((b.ptr, b.ptr + b.size) for b, _ in live)
        assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:]))
        assert all(b.size >= max(n, 1) and b.size % 512 == 0 for b, n in live)
        s = a.stats()
        assert s["allocated_bytes.all.current"] == sum(b.size for b, _ in live)
        assert s["requested_bytes.all.current"] == sum(n for _, n in live)
        assert s["active.all.current"] == len(live)
        assert s["reserved_bytes.all.current"] == a.raw_in_use
        assert s["allocated_bytes.all.peak"] >= s["allocated_bytes.all.current"]
        assert not limit or a.raw_in_use <= limit
    live.clear()
    a.empty_cache()
    s = a.stats()
    assert s["reserved_bytes.all.current"] == 0 and a.raw_in_use == 0
    assert s["segment.all.allocated"] == s["segment.all.freed"]


# --------------------------------------------------------------- kernel table and launcher

def test_kernel_table_lists_the_cuda_gemms():
    rt = _runtime()
    ks = rt.kernels()
    for name in ("gemm_tc_float16", "gemm_tf32_float32", "gemm_simt_float32"):
        assert ks[name].params == b"pppiiillllllll"
        assert ks[name].sizes == (8, 8, 8, 4, 4, 4) + (8,) * 8


def test_pack_args_converts_to_the_parameter_types():
    rt = _runtime()

    class Buf:
        ptr = 0x1000

    packed = rt.pack_args("gemm_tc_float16", [Buf(), 0x2000, None, 7, -1, 3] + list(range(8)))
    assert packed[0] == struct.pack("<Q", 0x1000) and packed[1] == struct.pack("<Q", 0x2000)
    assert packed[2] == bytes(8)
    assert packed[3:6] == [struct.pack("<i", 7), struct.pack("<i", -1), struct.pack("<i", 3)]
    assert packed[13] == struct.pack("<q", 7)


def test_launch_argument_errors():
    rt = _runtime()
    with pytest.raises(TypeError, match=r"gemm_tc_float16: expected 14 arguments "
                                        r"\(pppiiillllllll\), got 2"):
        rt.pack_args("gemm_tc_float16", [0, 0])
    with pytest.raises(OverflowError):
        rt.pack_args("gemm_tc_float16", [0, 0, 0, 2 ** 31] + [0] * 10)
    with pytest.raises(TypeError, match="argument 0 must be a device buffer or an address"):
        rt.pack_args("gemm_tc_float16", ["x"] + [0] * 13)
    with pytest.raises(NotImplementedError, match="no_such_kernel: no cuda kernel"):
        rt.pack_args("no_such_kernel", [])


def test_ember_sync_switch():
    rt = _runtime()
    old = rt.set_sync(True)
    try:
        assert rt.get_sync() is True
    finally:
        rt.set_sync(old)
    assert rt.get_sync() == old


# gpu_programs' parameter codes (struct module letters, "P" a buffer, "L" an em_layout by
# value) -> the letters kernel_table.h derives from the compiled kernels' own types
# host signature code -> the code ember._C.cuda reads from the compiled parameter: structs
# by value ("B") are the layout and the complex scalars (em_complex64/128)
_GPU_TO_CUDA = {"P": "p", "q": "l", "i": "i", "I": "I", "f": "f", "d": "d", "B": "C",
                "b": "c", "h": "s", "H": "S", "Q": "L", "L": "B", "F": "B", "D": "B"}


def test_every_shared_kernel_is_compiled_with_the_parameters_the_host_passes():
    """The CUDA build compiles every GPU program gpu_programs knows (the op table's rows
    and kernels/gpu/programs/*.h), and nvcc's parameter types agree with the signatures
    the shared host code types its arguments from."""
    rt = _runtime()
    from ember.ops import gpu_programs
    compiled = rt.kernels()
    shared = gpu_programs.all_kernels()
    assert shared, "gpu_programs lists no kernels"
    missing = sorted(set(shared) - set(compiled))
    assert not missing, f"not in the CUDA build: {missing[:20]}"
    wrong = {k: (sig, compiled[k].params) for k, (_, sig) in shared.items()
             if "".join(_GPU_TO_CUDA[c] for c in sig).encode() != compiled[k].params}
    assert not wrong, f"parameter types differ: {dict(list(wrong.items())[:10])}"


def test_cuda_backend_has_every_kernel_the_shared_gpu_backend_has():
    """HAND_WRITTEN_KERNELS on cuda: whatever GPUBackend implements over the shared
    sources (compiled into this build, see above), CUDABackend has too."""
    _runtime()
    from ember.backends import cuda
    from ember.backends.base import missing_kernels
    from ember.backends.gpu import GPUBackend
    assert set(missing_kernels(cuda.get())) <= set(missing_kernels(GPUBackend()))
    assert em._C.core.backend_for(em.device("cuda")) is cuda.get()


def test_layout_struct_argument_is_passed_by_value():
    rt = _runtime()
    from ember.backends.gpu.layout import pack_layout
    layout = pack_layout((3, 4), [((4, 1), 0), ((4, 1), 2)])
    k = rt.kernels()["cast_float32_int32"]
    packed = rt.pack_args("cast_float32_int32", [12, 0x10, 0x20, layout])
    assert packed[3] == layout and k.sizes[3] == len(layout)
    with pytest.raises(TypeError, match=f"struct of {len(layout)} bytes, got 8 bytes"):
        rt.pack_args("cast_float32_int32", [12, 0x10, 0x20, bytes(8)])
    with pytest.raises(OverflowError, match="does not fit"):
        rt.pack_args("ew_add_uint8", [1, 0, 0, 0, 256, 0, layout])


def test_allow_tf32_flag():
    assert em.backends.cuda.matmul.allow_tf32 is False
    em.backends.cuda.matmul.allow_tf32 = True
    try:
        assert em.backends.cuda.matmul.allow_tf32 is True
    finally:
        em.backends.cuda.matmul.allow_tf32 = False


# ----------------------------------------------------------------- on a GPU (gpu-check)

gpu = pytest.mark.skipif(not em.cuda.is_available(), reason="no CUDA device here "
                         "(tools/gpu-check runs these on the GPU machine)")


@gpu
def test_device_queries():
    n = em.cuda.device_count()
    assert n >= 1 and 0 <= em.cuda.current_device() < n
    p = em.cuda.get_device_properties(0)
    assert p["total_memory"] > 0 and p["major"] >= 7 and em.cuda.get_device_name(0) == p["name"]
    assert em.cuda.get_device_capability() == (p["major"], p["minor"])
    free, total = em.cuda.mem_get_info()
    assert 0 < free <= total
    with pytest.raises(RuntimeError, match=f"device index {n} is out of range"):
        em.cuda.set_device(n)


@gpu
def test_round_trip_and_caching_allocator_stats():
    em.cuda.synchronize()
    em.cuda.empty_cache()
    base = em.cuda.memory_allocated()
    em.cuda.reset_peak_memory_stats()
    x = em.arange(1000, dtype=em.float32).cuda()        # 4000 bytes -> one 4096-byte block
    assert x.device.type == "cuda" and x.cpu().tolist() == list(range(1000))
    assert em.cuda.memory_allocated() == base + 4096
    assert em.cuda.memory_reserved() >= em.cuda.memory_allocated()
    ptr = x.data_ptr()
    del x
    assert em.cuda.memory_allocated() == base
    assert em.cuda.max_memory_allocated() == base + 4096
    y = em.empty(1000, dtype=em.float32, device="cuda")  # the cached block again
    assert y.data_ptr() == ptr
    del y
    em.cuda.empty_cache()
    assert em.cuda.memory_stats()["segment.all.freed"] >= 1


@gpu
def test_device_out_of_memory_message():
    free, total = em.cuda.mem_get_info()
    with pytest.raises(em.cuda.OutOfMemoryError,
                       match=r"cuda:\d: out of memory: tried to allocate .* \(\d+ bytes\); "
                             r"ember has .* allocated and .* reserved .* free"):
        em.empty(total, dtype=em.float64, device="cuda")
    assert em.cuda.memory_stats()["num_ooms"] >= 1
    assert em.ones(4, device="cuda").sum().item() == 4     # the device still works


@gpu
def test_pinned_memory_and_async_copies():
    x = em.arange(4096, dtype=em.float32)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.pin_memory() is p
    assert p[7:9].is_pinned()                               # views share the pinned block
    d = p.to("cuda", non_blocking=True)
    assert d.cpu().tolist() == x.tolist()


@gpu
@pytest.mark.parametrize("dtype, allow_tf32, tol", [("float16", False, 2e-2),
                                                    ("float32", True, 5e-3),
                                                    ("float32", False, 1e-5)])
@pytest.mark.parametrize("shapes", [((70, 45), (45, 129)), ((3, 1, 17, 33), (2, 33, 5)),
                                    ((33,), (33, 7)), ((7, 33), (33,))])
def test_cuda_gemm_kernels(dtype, allow_tf32, tol, shapes):
    import numpy as np
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(shapes[0]).astype(dtype)
    b_np = rng.standard_normal(shapes[1]).astype(dtype)
    em.backends.cuda.matmul.allow_tf32 = allow_tf32
    try:
        a, b = em.from_numpy(a_np).cuda(), em.from_numpy(b_np).cuda()
        got = (a @ b).cpu().numpy().astype(np.float64)
        ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
        if a.ndim == 2:                   # transposed operands are read in place
            at = em.from_numpy(np.ascontiguousarray(a_np.T)).cuda().T
            np.testing.assert_allclose((at @ b).cpu().numpy().astype(np.float64), ref,
                                       rtol=tol, atol=tol * np.abs(ref).max())
    finally:
        em.backends.cuda.matmul.allow_tf32 = False


@gpu
def test_ember_sync_raises_at_the_failing_launch(tmp_path):
    """A kernel that faults is reported by the launch itself under EMBER_SYNC=1 (in a
    child process: a device fault poisons the CUDA context for the rest of it)."""
    import subprocess
    import sys
    script = tmp_path / "fault.py"
    script.write_text(
        "import ember as em\n"
        "from ember._C import cuda\n"
        "from ember.backends.gpu.layout import pack_layout\n"
        "x = em.zeros(4, device='cuda')\n"
        "layout = pack_layout((1 << 20,), [((1,), 0)])\n"
        "cuda.launch(0, 'fill_float32', (4096,), (256,), [1 << 20, 16, 1.0, layout])  # line 6\n")
    env = dict(__import__("os").environ, EMBER_SYNC="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode != 0
    assert "line 6" in r.stderr and "CudaError" in r.stderr and "fill_float32" in r.stderr, r.stderr
