"""The host half of every GPU backend, written once (OpenCL and CUDA share it).

GPUBackend implements the whole Backend interface (base.py) and the hand-written
kernels of HAND_WRITTEN_KERNELS in terms of a few primitives that a subclass
supplies (see "primitives" below): allocate a buffer, copy bytes host<->device and
device<->device, launch a kernel by name, synchronize. Memory, copies, the op
table's elementwise and reduction rows and the helpers every kernel uses are here;
each family of hand-written kernels is a mixin in a module of its name (matmul.py,
conv.py, pool.py, softmax.py, norm.py, loss.py, dropout.py, index.py, sort.py,
scan.py, random.py, fft.py, linalg.py, rnn.py; optim.py: the fused optimizer and
GradScaler steps), and layout.py packs the em_layout structs they pass.

The device code is the portable dialect of kernels/gpu/ember_device.h, catalogued
by ember.ops.gpu_programs: the op table's rows rendered by ember.ops.render and the
hand-written programs kernels/gpu/programs/<family>.h, the same text for every
backend, so kernel names and parameter lists are identical everywhere. Kernel
arguments are typed from the kernels' own parameter lists (`signature(kernel)`): a
backend converts Python ints/floats, tensors' buffers and em_layout structs to
exactly those C types.
"""
from __future__ import annotations

import os
import struct

from ember._C import core as _core
from ember._errors import OutOfMemoryError  # noqa: F401  (backends raise it)
from ember.backends.base import Backend
from ember.backends.gpu.conv import ConvKernels
from ember.backends.gpu.dropout import DropoutKernels
from ember.backends.gpu.fft import FFTKernels
from ember.backends.gpu.index import IndexKernels
from ember.backends.gpu.layout import (
    GROUP,
    broadcast_strides,
    contiguous_strides,
    groups_for,
    pack_layout,
)
from ember.backends.gpu.linalg import LinalgKernels
from ember.backends.gpu.loss import LossKernels
from ember.backends.gpu.matmul import MatmulKernels
from ember.backends.gpu.norm import NormKernels
from ember.backends.gpu.optim import OptimKernels
from ember.backends.gpu.pool import PoolKernels
from ember.backends.gpu.random import RandomKernels
from ember.backends.gpu.rnn import RNNKernels
from ember.backends.gpu.scan import ScanKernels
from ember.backends.gpu.softmax import SoftmaxKernels
from ember.backends.gpu.sort import SortKernels
from ember.ops import render, table

REDUCE_GROUP = render.GPU_REDUCE_GROUP   # work-items per row of the row-wise kernels
CHECK_SLOTS = 256        # deferred checks a device holds between two synchronizing reads
_NO_ERROR = (1 << 63) - 1    # an untouched check slot (the kernels atomic_min a position)
_RIDE_BYTES = 1 << 16        # reads up to this size carry the check slots along


class _DeviceChecks:
    """A device's error flag: CHECK_SLOTS int64 slots on the device (one per deferred
    check since the last synchronizing read, _NO_ERROR until a kernel records the first
    bad position there) and the checks' error builders (position -> exception), in
    order."""
    __slots__ = ("flag", "errors")

    def __init__(self, flag):
        self.flag, self.errors = flag, []


class GPUBackend(MatmulKernels, ConvKernels, PoolKernels, SoftmaxKernels, NormKernels,
                 LossKernels, DropoutKernels, IndexKernels, SortKernels, ScanKernels,
                 RandomKernels, FFTKernels, LinalgKernels, RNNKernels, OptimKernels,
                 Backend):
    """Backend over the primitives below; subclasses: OpenCLBackend, CUDABackend."""

    name = "gpu"

    def __init__(self):
        self.launches = 0          # kernel launches since the last reset_counters()
        self.host_transfers = 0    # host<->device copies since the last reset_counters()
        self._checks = {}          # device -> _DeviceChecks (the deferred index checks)
        self._checked = []         # the last targets checked (check once per tensor version)
        self.check_reads = 0       # reads of the check slots on their own (not riding along)

    # primitives (a subclass supplies these) -------------------------------------------
    def allocate(self, nbytes, device):
        """A buffer object of nbytes on device (frees itself when collected)."""
        raise NotImplementedError

    def write(self, buf, offset, host):
        """Copy the bytes of `host` (a contiguous buffer-protocol object) into buf at
        byte offset `offset`; returns when the host memory may be reused."""
        raise NotImplementedError

    def read(self, buf, offset, host):
        """Copy len(host) bytes from buf at byte `offset` into writable `host`
        (synchronizes)."""
        raise NotImplementedError

    def copy_buffer(self, dst, dst_offset, src, src_offset, nbytes):
        """Device-to-device copy of bytes on one device."""
        raise NotImplementedError

    def launch(self, device, kernel, global_size, local_size, args):
        """Run `kernel` (a name from ember.ops.gpu_programs.all_kernels()) over
        global_size work-items (tuples, OpenCL style: total work-items per dim) with
        the given work-group size; args match gpu_programs.signature(kernel): buffers,
        Python numbers, layout bytes."""
        raise NotImplementedError

    def synchronize(self, device=None):
        raise NotImplementedError

    def has_fp64(self, device):
        return True

    def has_fp16(self, device):
        return True

    # counters --------------------------------------------------------------------------
    def reset_counters(self):
        self.launches = 0
        self.host_transfers = 0
        self.check_reads = 0

    def counters(self):
        """launches: kernels run; host_transfers: copies of tensor data between host and
        device; check_reads: reads of the deferred checks' slots on their own (a small
        read rides along with them instead: see to_cpu)."""
        return {"launches": self.launches, "host_transfers": self.host_transfers,
                "check_reads": self.check_reads}

    # helpers ---------------------------------------------------------------------------
    def _check_dtype(self, dtype, device, op):
        if dtype.name in ("float64", "complex128") and not self.has_fp64(device):
            narrow = "float32" if dtype.name == "float64" else "complex64"
            raise TypeError(f"{op}: {dtype.name} is not supported on {device} (the device "
                            f"lacks cl_khr_fp64); use {narrow}")

    def run(self, device, kernel, n, args, group=GROUP):
        """A 1-d grid-stride launch over n items."""
        if n <= 0:
            return
        g = groups_for(n, group)
        self.launch(device, kernel, (g * group,), (group,), args)

    @staticmethod
    def handle(t):
        return t.untyped_storage().handle

    # deferred checks (the device error flag) ----------------------------------------
    def deferred_check(self, device, kernel, n, args, error):
        """Launch the check `kernel` over n items with args + [flag, slot]: it records
        the first bad position in its slot of the device's error flag (atomic_min) and
        leaves the data safe to use (an index clamped in range). Nothing is read now:
        error(position) (an exception) is raised at the next synchronizing read of this
        device (item(), cpu(), synchronize(); at once under EMBER_SYNC=1), as CUDA's
        device-side asserts are, but as the op's own exception."""
        key = str(device)
        ch = self._checks.get(key)
        if ch is None:
            flag = self.empty((CHECK_SLOTS,), _core._dtype_by_name("int64"), device)
            self.fill(flag, _NO_ERROR)
            ch = self._checks[key] = _DeviceChecks(flag)
        elif len(ch.errors) == CHECK_SLOTS:
            self.check_errors(device)       # every slot taken: read them now (a sync)
        self.run(device, kernel, n, list(args) + [self.handle(ch.flag), len(ch.errors)])
        ch.errors.append(error)
        if os.environ.get("EMBER_SYNC") == "1":
            self.check_errors(device)

    def check_errors(self, device=None):
        """Read the deferred checks' slots of `device` (every device: None) and raise
        the first failure; one read per device that has checks waiting."""
        for key, ch in list(self._checks.items()):
            if ch.errors and (device is None or key == str(device)):
                self.check_reads += 1
                n = len(ch.errors)
                host = _core.empty((n,), ch.flag.dtype)
                self.read(self.handle(ch.flag), 0, _host_bytes(host))
                self._raise_first(ch, memoryview(host).cast("B").cast("q"))

    def _raise_first(self, ch, slots):
        """Forget ch's checks; raise the first failed one's exception (the slots reset
        first, so the next checks start clean)."""
        errors, ch.errors = ch.errors, []
        for error, pos in zip(errors, slots):
            if pos != _NO_ERROR:
                self.fill(ch.flag, _NO_ERROR)
                raise error(pos)

    def _read_checked(self, src, out):
        """src's bytes into the CPU tensor out, raising a deferred check's failure
        first: a small src rides in one read with the slots of its device (copied
        beside it on the device), so a correct step's checks cost no host read."""
        ch = self._checks.get(str(src.device))
        nb = src.nbytes
        if ch is None or not ch.errors or nb > _RIDE_BYTES:
            self.check_errors(src.device)
            if nb:
                self.host_transfers += 1
                self.read(self.handle(src), src.storage_offset() * src.itemsize,
                          _host_bytes(out))
            return
        n, words = len(ch.errors), -(-nb // 8)
        stage = self.empty((words + n,), ch.flag.dtype, src.device)
        if nb:
            self.copy_buffer(self.handle(stage), 0, self.handle(src),
                             src.storage_offset() * src.itemsize, nb)
        self.copy_buffer(self.handle(stage), words * 8, self.handle(ch.flag), 0, n * 8)
        host = _core.empty((words + n,), ch.flag.dtype)
        self.host_transfers += 1
        self.read(self.handle(stage), 0, _host_bytes(host))
        raw = memoryview(host).cast("B")
        self._raise_first(ch, raw[words * 8:].cast("q"))
        if nb:
            _host_bytes(out)[:] = raw[:nb]

    def dense(self, x):
        """x itself when contiguous from element 0 of its buffer (what hand-written
        kernels take), else a dense copy on the device."""
        if x.is_contiguous() and x.storage_offset() == 0:
            return x
        return self.contiguous(x)

    def rows_launch(self, device, kernel, rows, args):
        """One work-group per row (grid-stride over rows)."""
        if rows > 0:
            g = min(rows, 4096)
            self.launch(device, kernel, (g * REDUCE_GROUP,), (REDUCE_GROUP,), args)

    @staticmethod
    def view(t, shape, strides, offset=0):
        """A view of t's storage (no autograd recording: kernels run outside the tape)."""
        return _core.as_strided_from(t.untyped_storage(), t.dtype, tuple(shape), tuple(strides),
                                     t.storage_offset() + offset)

    def _float_kernel(self, x, op, dtypes=("float16", "bfloat16", "float32", "float64")):
        if x.dtype.name not in dtypes:
            raise NotImplementedError(f"{op}: no kernel for {x.device} ({x.dtype.name})")
        self._check_dtype(x.dtype, x.device, op)

    @staticmethod
    def _ensure_contiguous_out(out, op):
        if not out.is_contiguous():
            raise RuntimeError(f"{op}: internal error: reduction output must be contiguous")

    # memory and copies -----------------------------------------------------------------
    def empty(self, shape, dtype, device):
        return _core.empty(tuple(shape), dtype, device)

    def from_cpu(self, tensor, device):
        src = tensor if tensor.is_contiguous() else _core.contiguous_copy(tensor)
        out = self.empty(src.shape, src.dtype, device)
        if src.nbytes:
            self.host_transfers += 1
            self.write(self.handle(out), 0, _host_bytes(src))
        return out

    def to_cpu(self, tensor):
        src = tensor if tensor.is_contiguous() else self.contiguous(tensor)
        out = _core.empty(tuple(src.shape), src.dtype)
        self._read_checked(src, out)
        return out

    def contiguous(self, x):
        out = self.empty(x.shape, x.dtype, x.device)
        self.cast_into(out, x)
        return out

    def cast_into(self, dst, src):
        """dst[...] = src on one device: broadcasting, any layouts, any dtypes."""
        n = dst.numel()
        if n == 0:
            return dst
        dev = dst.device
        self._check_dtype(dst.dtype, dev, "copy_")
        self._check_dtype(src.dtype, dev, "copy_")
        same = dst.dtype is src.dtype and dst.is_contiguous() and src.is_contiguous() \
            and tuple(src.shape) == tuple(dst.shape)
        if same and dst.untyped_storage() is not src.untyped_storage():
            self.copy_buffer(self.handle(dst), dst.storage_offset() * dst.itemsize,
                             self.handle(src), src.storage_offset() * src.itemsize, dst.nbytes)
            return dst
        if dst.untyped_storage() is src.untyped_storage():
            src = self.contiguous(src)   # overlapping views: read a copy
        nd = dst.ndim
        layout = pack_layout(tuple(dst.shape), [(dst.stride(), dst.storage_offset()),
                                                (broadcast_strides(src, nd), src.storage_offset())],
                             op="copy_")
        self.run(dev, f"cast_{src.dtype.name}_{dst.dtype.name}", n,
                 [n, self.handle(dst), self.handle(src), layout])
        return dst

    def copy(self, dst, src):
        dd, sd = dst.device, src.device
        if dd.type != "cpu" and sd.type != "cpu" and dd == sd:
            return self.cast_into(dst, src)
        if dd.type != "cpu":
            # host (or another device) -> this device: move the bytes as they are, then
            # convert and broadcast here
            host = src if sd.type == "cpu" else _core.backend_for(sd).to_cpu(src)
            return self.cast_into(dst, self.from_cpu(host, dd))
        # device -> host: contiguous in its own dtype here, then the CPU converts
        return _core.copy_into(dst, self.to_cpu(src))

    def fill(self, tensor, value):
        n = tensor.numel()
        if n == 0:
            return
        self._check_dtype(tensor.dtype, tensor.device, "fill_")
        if tensor.dtype.kind == "int" and isinstance(value, float):
            value = int(value)
        value = _scalar_for(value, render.BY_NAME[tensor.dtype.name], "fill_")
        layout = pack_layout(tuple(tensor.shape), [(tensor.stride(), tensor.storage_offset())],
                             op="fill_")
        self.run(tensor.device, f"fill_{tensor.dtype.name}", n,
                 [n, self.handle(tensor), value, layout])

    def item(self, tensor):
        return _core.item(self.to_cpu(tensor))

    # the op table ----------------------------------------------------------------------
    def elementwise(self, op_name, operands, compute_dtype, out_dtype, out):
        """Row op_name into `out` (already of the broadcast shape and out_dtype, on this
        device); tensor operands are already in the compute dtype (the condition of
        `where` in bool); Python scalars are passed by value."""
        n = out.numel()
        if n == 0:
            return out
        dev = out.device
        self._check_dtype(compute_dtype, dev, op_name)
        nd = out.ndim
        row = table.ELEMENTWISE_BY_NAME[op_name]
        cdt = render.BY_NAME[compute_dtype.name]
        ops, bufs, scalars = [(out.stride(), out.storage_offset())], [], []
        for k, a in enumerate(operands):
            dt = render.BOOL if (row.name == "where" and k == 0) else cdt
            if isinstance(a, _core.TensorBase):
                ops.append((broadcast_strides(a, nd), a.storage_offset()))
                bufs.append(self.handle(a))
                scalars.append(0)
            else:
                ops.append((None, 0))
                bufs.append(self.handle(out))
                scalars.append(_scalar_for(a, dt, op_name))
        layout = pack_layout(tuple(out.shape), ops, op=op_name)
        self.run(dev, f"ew_{op_name}_{compute_dtype.name}", n,
                 [n, self.handle(out)] + bufs + scalars + [layout])
        return out

    def reduce(self, op_name, tensor, dims, out):
        """Row op_name of `tensor` over the dims `dims` (a tuple) into `out`, which has
        the keepdim shape and the row's output dtype."""
        x = tensor
        self._check_dtype(x.dtype, x.device, op_name)
        kept = [d for d in range(x.ndim) if d not in dims]
        red = [d for d in range(x.ndim) if d in dims]
        m = out.numel()
        if m == 0:
            return out
        k = 1
        for d in red:
            k *= x.shape[d]
        order = kept + red
        shape = tuple(x.shape[d] for d in order)
        xs = x.stride()
        ostr = contiguous_strides(tuple(x.shape[d] for d in kept))
        layout = pack_layout(shape, [(tuple(ostr) + (0,) * len(red), out.storage_offset()),
                                     (tuple(xs[d] for d in order), x.storage_offset())],
                             split=len(kept), op=op_name)
        self._ensure_contiguous_out(out, op_name)
        kernel = f"reduce_{op_name}_{x.dtype.name}"
        # Few outputs of many elements: split each into parts (a work-group each) whose
        # results a second pass combines. Parts are stored in the output dtype, as the
        # CPU's split reductions do; not for float16 / bfloat16 sums, whose parts would
        # round.
        parts = 1
        if m < 256 and k >= 1 << 15 and not (x.dtype.name in ("float16", "bfloat16") and
                                              op_name in ("sum", "prod")):
            parts = min(1024, k // (1 << 13), max(1, 2048 // m))
        if parts > 1:
            partial = self.empty((m, parts), out.dtype, x.device)
            g = min(m * parts, 4096)
            self.launch(x.device, kernel, (g * REDUCE_GROUP,), (REDUCE_GROUP,),
                        [m, k, parts, self.handle(partial), self.handle(x), layout])
            return self.reduce(op_name, partial, (1,), self.view(out, (m, 1), (1, 1)))
        g = max(1, min(m, 4096))
        self.launch(x.device, kernel, (g * REDUCE_GROUP,), (REDUCE_GROUP,),
                    [m, k, 1, self.handle(out), self.handle(x), layout])
        return out


def _host_bytes(t):
    """A writable byte view of a contiguous CPU tensor's elements."""
    return memoryview(t).cast("B")


_FORMATS = {"bool": "B", "uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
            "float16": "f", "bfloat16": "f", "float32": "f", "float64": "d", "uint16": "H",
            "uint32": "I", "uint64": "Q"}


def _scalar_for(value, dt, op):
    """A Python scalar as the value of a parameter of dt's compute type, range-checked
    like the CPU's scalars."""
    if dt.kind == "complex":
        return complex(value)   # the struct's bytes: OpenCL packs it, CUDA's launcher too
    if isinstance(value, complex):
        raise TypeError(f"{op}: cannot store the complex number {value!r} in a {dt.name} "
                        f"operand")
    if dt.kind == "float":
        return float(value)
    if dt.kind == "bool":
        return 1 if value else 0
    if isinstance(value, float):
        raise TypeError(f"{op}: cannot store the float {value!r} in a {dt.name} operand")
    v = int(value)
    try:
        struct.pack(_FORMATS[dt.name], v)
    except struct.error:
        raise OverflowError(f"{op}: Python integer {v} is out of bounds for {dt.name}") from None
    return v


__all__ = ["GPUBackend", "OutOfMemoryError"]
