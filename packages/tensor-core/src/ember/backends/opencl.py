"""The OpenCL backend: GPUBackend's primitives over pyopencl.

Devices are every device of every OpenCL platform, in platform order
(EMBER_OPENCL_PLATFORM=<index or part of the platform name> keeps one platform).
Each device gets a context, an in-order queue and a memory pool; programs are built
lazily, one per program of ember.ops.gpu_programs (a few per dtype), once per device,
and their binaries are kept on disk (EMBER_CACHE_DIR, default ~/.cache/ember/opencl)
keyed by device, driver and source hash, so a second process starts fast.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.tools

from ember.backends.gpu import GPUBackend, OutOfMemoryError
from ember.ops.gpu_programs import inlined_source, program_of, signature

_NP = {"q": np.int64, "i": np.int32, "I": np.uint32, "f": np.float32, "d": np.float64,
       "B": np.uint8, "b": np.int8, "h": np.int16, "H": np.uint16, "Q": np.uint64,
       "F": np.complex64, "D": np.complex128}


def _platforms():
    plats = cl.get_platforms()
    want = os.environ.get("EMBER_OPENCL_PLATFORM")
    if want:
        if want.isdigit():
            plats = plats[int(want):int(want) + 1]
        else:
            plats = [p for p in plats if want.lower() in p.name.lower()]
    return plats


# devices left out because their compiler cannot build a program: (name, reason)
UNUSABLE = []

_PROBE = "__kernel void ember_probe(__global int *x) { x[get_global_id(0)] = 1; }"


def _builds_programs(device):
    """Whether `device`'s compiler builds a trivial kernel: a driver can list a device
    it cannot compile for (PoCL 3's LLVM 14 on CPUs it cannot name: "unknown target CPU
    'generic'"), and then every op would fail; such a device is left out, as PyTorch's
    cuda.is_available() is False under a driver too old for its runtime."""
    try:
        cl.Program(cl.Context([device]), _PROBE).build()
        return True
    except (cl.Error, RuntimeError) as e:
        log = " ".join(str(e).split())
        UNUSABLE.append((device.name.strip(), log[:300]))
        return False


def enumerate_devices():
    """Every OpenCL device ember can use, in order (opencl:0, opencl:1, ...)."""
    try:
        plats = _platforms()
    except cl.Error:
        return []
    out = []
    for p in plats:
        try:
            out += [d for d in p.get_devices() if _builds_programs(d)]
        except cl.Error:
            continue
    # GPUs and accelerators before CPUs (PoCL), so opencl:0 is the GPU where there is one
    return sorted(out, key=lambda d: bool(d.type & cl.device_type.CPU))


class _Buffer:
    """A pooled device buffer; returns to the pool when collected."""
    __slots__ = ("__weakref__", "buf", "device", "nbytes")

    def __init__(self, buf, nbytes, device):
        self.buf, self.nbytes, self.device = buf, nbytes, device


class _DeviceState:
    def __init__(self, cl_device):
        self.device = cl_device
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context)
        self.pool = pyopencl.tools.MemoryPool(pyopencl.tools.ImmediateAllocator(self.queue))
        self.programs = {}
        self.kernels = {}
        exts = cl_device.extensions.split()
        self.fp64 = "cl_khr_fp64" in exts
        self.fp16 = "cl_khr_fp16" in exts
        self.max_alloc = cl_device.max_mem_alloc_size
        self.max_group = cl_device.max_work_group_size
        # Where the driver caches compiled programs itself (PoCL), asking for a binary
        # would compile every kernel of the program up front (a minute for ew_float32
        # on 2 cores) where a run needs a few: leave caching to the driver there
        # (PoCL's kernel cache is keyed by device, driver and source too).
        # EMBER_OPENCL_BINARY_CACHE=1|0 overrides.
        from pyopencl.characterize import has_src_build_cache
        force = os.environ.get("EMBER_OPENCL_BINARY_CACHE")
        self.binary_cache = force == "1" if force in ("0", "1") else \
            not has_src_build_cache(cl_device)


def cache_dir():
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ember")
    return Path(base) / "opencl"


class OpenCLBackend(GPUBackend):
    name = "opencl"

    def __init__(self):
        super().__init__()
        self.devices = enumerate_devices()
        self._states = {}
        self.builds = 0          # programs compiled from source (not from the disk cache)
        self.current_index = 0   # what a bare "opencl" means (ember.accelerator sets it)

    def default_index(self, device):
        return self.current_index

    # devices -----------------------------------------------------------------------
    def state(self, device):
        idx = device.index if device.index >= 0 else self.current_index
        st = self._states.get(idx)
        if st is None:
            if idx >= len(self.devices):
                left_out = "".join(f"; {name} is left out, it cannot build programs: {why}"
                                   for name, why in UNUSABLE)
                raise RuntimeError(f"device {device}: there are {len(self.devices)} OpenCL "
                                   f"device(s) here{left_out}")
            st = self._states[idx] = _DeviceState(self.devices[idx])
        return st

    def has_fp64(self, device):
        return self.state(device).fp64

    def has_fp16(self, device):
        return True   # float16 is a storage type, computed in float32 (vload_half)

    # memory ------------------------------------------------------------------------
    def allocate(self, nbytes, device):
        st = self.state(device)
        size = max(int(nbytes), 1)
        if size > st.max_alloc:
            self._oom(st, device, nbytes, f"the device's largest single allocation is "
                                          f"{st.max_alloc} bytes")
        try:
            buf = st.pool.allocate(size)
        except (cl.MemoryError, cl.RuntimeError, cl.LogicError) as e:
            self._oom(st, device, nbytes, str(e))
        return _Buffer(buf, nbytes, device)

    @staticmethod
    def _oom(st, device, nbytes, why):
        raise OutOfMemoryError(
            f"{device}: out of memory allocating {nbytes} bytes ({st.pool.active_bytes} "
            f"bytes allocated, {st.pool.managed_bytes - st.pool.active_bytes} cached, "
            f"{st.device.global_mem_size} on the device; {why})")

    def memory_allocated(self, device):
        return self.state(device).pool.active_bytes

    def memory_reserved(self, device):
        return self.state(device).pool.managed_bytes

    def empty_cache(self, device):
        self.state(device).pool.free_held()

    def write(self, buf, offset, host):
        st = self.state(buf.device)
        cl.enqueue_copy(st.queue, buf.buf, host, dst_offset=offset, is_blocking=True)

    def read(self, buf, offset, host):
        st = self.state(buf.device)
        cl.enqueue_copy(st.queue, host, buf.buf, src_offset=offset, is_blocking=True)

    def copy_buffer(self, dst, dst_offset, src, src_offset, nbytes):
        st = self.state(dst.device)
        cl.enqueue_copy(st.queue, dst.buf, src.buf, byte_count=nbytes, src_offset=src_offset,
                        dst_offset=dst_offset)

    def synchronize(self, device=None):
        for st in self._states.values():
            st.queue.finish()

    # programs and launches -------------------------------------------------------------
    def program(self, st, name):
        prg = st.programs.get(name)
        if prg is None:
            prg = st.programs[name] = self._build(st, name)
        return prg

    def _build(self, st, name):
        text = inlined_source(name)
        options = ["-cl-std=CL1.2"]
        d = st.device
        key = hashlib.sha256("\0".join([d.platform.name, d.name, d.driver_version, d.version,
                                        " ".join(options), text]).encode()).hexdigest()
        path = cache_dir() / f"{name}-{key[:24]}.bin"
        if not st.binary_cache:
            return self._compile(st, name, text, options)
        if path.exists():
            try:
                return cl.Program(st.context, [d], [path.read_bytes()]).build(options=options)
            except (cl.Error, OSError):
                pass   # stale or corrupt: rebuild from source below
        prg = self._compile(st, name, text, options)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(prg.get_info(cl.program_info.BINARIES)[0])
            os.replace(tmp, path)
        except OSError:
            pass   # a read-only cache only costs the next run a compile
        return prg

    def _compile(self, st, name, text, options):
        try:
            prg = cl.Program(st.context, text).build(options=options, devices=[st.device])
        except cl.RuntimeError as e:
            raise RuntimeError(f"opencl: building program {name!r} failed on "
                               f"{st.device.name}: {e}") from None
        self.builds += 1
        return prg

    def compiled(self, st, name):
        """The compiled device kernel `name` of this device state and its signature."""
        k = st.kernels.get(name)
        if k is None:
            try:
                prog = program_of(name)
                sig = signature(name)
            except KeyError:
                raise NotImplementedError(f"{name}: no opencl kernel of that name") from None
            try:
                k = getattr(self.program(st, prog), name)
            except AttributeError:
                if "float64" in name and not st.fp64:
                    raise TypeError(f"{name}: float64 is not supported on {st.device.name} "
                                    f"(no cl_khr_fp64)") from None
                raise NotImplementedError(f"{name}: no opencl kernel of that name") from None
            k.set_scalar_arg_dtypes([None if c in "PL" else _NP[c] for c in sig])
            k = st.kernels[name] = (k, sig)
        return k

    def launch(self, device, kernel, global_size, local_size, args):
        st = self.state(device)
        k, sig = self.compiled(st, kernel)
        if len(args) != len(sig):
            raise TypeError(f"{kernel}: expected {len(sig)} arguments, got {len(args)}")
        conv = [a.buf if c == "P" else a for c, a in zip(sig, args)]
        self.launches += 1
        k(st.queue, tuple(global_size), None if local_size is None else tuple(local_size), *conv)
        if os.environ.get("EMBER_SYNC") == "1":
            st.queue.finish()

