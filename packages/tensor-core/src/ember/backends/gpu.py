"""The host half of every GPU backend, written once (OpenCL and CUDA share it).

GPUBackend implements the whole Backend interface (base.py) and the hand-written
kernels of HAND_WRITTEN_KERNELS in terms of a few primitives that a subclass
supplies (see "primitives" below): allocate a buffer, copy bytes host<->device and
device<->device, launch a kernel by name, synchronize. The device code is the
portable dialect of kernels/gpu/ (ember_device.h): the op table's rows rendered by
ember.ops.render and the hand-written files kernels/gpu/<file>.h, the same text for
every backend, so kernel names and parameter lists are identical everywhere.

Kernel arguments are typed from the kernels' own parameter lists, parsed once from
the sources (`signature(kernel)`): a backend converts Python ints/floats, tensors'
buffers and em_layout structs to exactly those C types.
"""
from __future__ import annotations

import array
import functools
import re
import struct
import threading
from pathlib import Path

from ember._C import core as _core
from ember.backends.base import Backend
from ember.ops import render, table

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
GPU_DIR = KERNELS / "gpu"
MAXD = 8                 # EM_MAXD of ember_device.h
GROUP = 256              # work-items per work-group of the 1-d kernels
REDUCE_GROUP = render.GPU_REDUCE_GROUP


class OutOfMemoryError(RuntimeError):
    """A device allocation failed; the message says how much was asked for, is in use
    and is cached (PyTorch's torch.OutOfMemoryError is a RuntimeError too)."""


# sources ------------------------------------------------------------------------------

_DTYPES_LINE = re.compile(r"^//\s*dtypes:\s*(.*)$", re.M)
_KERNEL = re.compile(r"EM_KERNEL\s+void\s+(EM_NAME\s*\(\s*\w+\s*\)|\w+)\s*\(([^)]*)\)")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.M)


@functools.lru_cache(maxsize=None)
def hand_written_files() -> dict:
    """kernels/gpu/<file>.h -> the dtypes it is compiled for (None: dtype-free), from
    its `// dtypes: float32 float64` (or `// dtypes: none`) line."""
    files = {}
    for path in sorted(GPU_DIR.glob("*.h")):
        if path.name == "ember_device.h":
            continue
        m = _DTYPES_LINE.search(path.read_text())
        names = m.group(1).split() if m else ["none"]
        files[path.stem] = [None] if names == ["none"] else names
    return files


def program_names() -> list:
    """Every GPU program (compile unit): the generated ones, then the hand-written."""
    names = render.gpu_generated_programs()
    for stem, dtypes in hand_written_files().items():
        names += [stem if d is None else f"{stem}_{d}" for d in dtypes]
    return names


@functools.lru_cache(maxsize=None)
def program_source(name: str) -> str:
    """The portable source of program `name`, with its #include lines (nvcc compiles
    it as is with -I kernels/gpu; run-time compilers take `inlined_source`)."""
    if render.gpu_program_of(_first_kernel_guess(name)) == name:
        return render.render_gpu_program(name)
    for stem, dtypes in hand_written_files().items():
        for d in dtypes:
            if name == (stem if d is None else f"{stem}_{d}"):
                dt = None if d is None else render.BY_NAME[d]
                return render.gpu_prelude(dt) + f'#include "{stem}.h"\n'
    raise KeyError(f"no GPU program {name!r}")


def _first_kernel_guess(program: str) -> str:
    """A kernel name that the generated program `program` would hold (for lookup)."""
    kind, _, d = program.partition("_")
    return {"ew": f"ew_x_{d}", "reduce": f"reduce_x_{d}", "cast": f"cast_{d}_bool"}.get(kind, "")


@functools.lru_cache(maxsize=None)
def inlined_source(name: str) -> str:
    """program_source with every #include replaced by the file (once each)."""
    seen = set()

    def expand(text, base):
        def one(m):
            path = (base / m.group(1)).resolve()
            if path in seen:
                return ""
            seen.add(path)
            return expand(path.read_text(), path.parent)
        return _INCLUDE.sub(one, text)
    return expand(program_source(name), GPU_DIR)


# kernel signatures ------------------------------------------------------------------

# C type of a parameter -> struct code of the value the host passes ("P": a buffer,
# "L": an em_layout by value)
_CTYPES = {"em_int64": "q", "long": "q", "int": "i", "em_int32": "i", "em_uint32": "I",
           "uint": "I", "float": "f", "em_float32": "f", "double": "d", "em_float64": "d",
           "em_bool": "B", "em_uint8": "B", "uchar": "B", "em_int8": "b", "em_int16": "h",
           "em_layout": "L"}


def _param_code(param: str, dt) -> str:
    if "*" in param:
        return "P"
    words = param.replace("const", " ").split()
    ctype = " ".join(words[:-1])
    if dt is not None:
        ctype = {"EM_CT": dt.compute, "EM_T": dt.storage}.get(ctype, ctype)
    if ctype not in _CTYPES:
        raise TypeError(f"GPU kernels: unsupported parameter type {ctype!r} in {param!r}")
    return _CTYPES[ctype]


@functools.lru_cache(maxsize=None)
def program_kernels(name: str) -> dict:
    """kernel name -> parameter codes, for every kernel of program `name`."""
    text = _COMMENTS.sub(" ", inlined_source(name))
    dname = re.search(r"#define EM_DT (\w+)", text)
    dt = render.BY_NAME[dname.group(1)] if dname else None
    out = {}
    for m in _KERNEL.finditer(text):
        kname = m.group(1)
        if kname.startswith("EM_NAME"):
            kname = re.sub(r"EM_NAME\s*\(\s*(\w+)\s*\)", lambda g: f"{g.group(1)}_{dt.name}", kname)
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        out[kname] = tuple(_param_code(p, dt) for p in params)
    return out


@functools.lru_cache(maxsize=None)
def _hand_written_index() -> dict:
    index = {}
    for stem, dtypes in hand_written_files().items():
        for d in dtypes:
            prog = stem if d is None else f"{stem}_{d}"
            for k in program_kernels(prog):
                index[k] = prog
    return index


def program_of(kernel: str) -> str:
    prog = render.gpu_program_of(kernel)
    if prog is None:
        prog = _hand_written_index().get(kernel)
    if prog is None:
        raise KeyError(kernel)
    return prog


def signature(kernel: str) -> tuple:
    """The parameter codes of `kernel` (see _CTYPES)."""
    prog = program_of(kernel)
    sig = program_kernels(prog).get(kernel)
    if sig is None:
        raise KeyError(kernel)
    return sig


def all_kernels() -> dict:
    """Every kernel name -> (program, parameter codes): what a CUDA build compiles."""
    return {k: (p, sig) for p in program_names() for k, sig in program_kernels(p).items()}


# layouts ------------------------------------------------------------------------------

_LAYOUT_WORDS = 4 + MAXD + 4 * MAXD + 4


def contiguous_strides(shape):
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


def _merge(shape, strides_list, lo, hi):
    """Drop size-1 dims and merge neighbours that every operand steps through as one
    (within dims [lo, hi)). Returns (shape, strides_list)."""
    keep = [d for d in range(lo, hi) if shape[d] != 1]
    sh = [shape[d] for d in keep]
    st = [[s[d] for d in keep] for s in strides_list]
    d = len(sh) - 2
    while d >= 0:
        if all(s[d] == s[d + 1] * sh[d + 1] for s in st):
            sh[d] *= sh[d + 1]
            del sh[d + 1]
            for s in st:
                s[d] = s[d + 1]
                del s[d + 1]
        d -= 1
    return sh, st


def pack_layout(shape, operands, split=None, op="op"):
    """The em_layout bytes for iterating `shape` over operands [(strides or None for a
    scalar, offset)], operand 0 first. split: reduce the dims from `split` on (dims
    before it are kept): merging stays within each group."""
    tensor_ops = [k for k, (s, _) in enumerate(operands) if s is not None]
    strides_list = [list(operands[k][0]) for k in tensor_ops]
    if split is None:
        sh, st = _merge(shape, strides_list, 0, len(shape))
        nsplit = len(sh)
    else:
        sh1, st1 = _merge(shape, strides_list, 0, split)
        sh2, st2 = _merge(shape, strides_list, split, len(shape))
        sh, st = sh1 + sh2, [a + b for a, b in zip(st1, st2)]
        nsplit = len(sh1)
    if len(sh) > MAXD:
        raise NotImplementedError(f"{op}: the GPU kernels iterate at most {MAXD} dims after "
                                  f"merging, got shape {tuple(shape)}")
    contig = split is None and len(sh) <= 1 and all((not s) or s[0] == 1 for s in st)
    words = [len(sh), int(contig), sum(1 << k for k, (s, _) in enumerate(operands) if s is None),
             nsplit]
    words += sh + [0] * (MAXD - len(sh))
    full = {k: s for k, s in zip(tensor_ops, st)}
    for k in range(4):
        s = full.get(k, [])
        words += s + [0] * (MAXD - len(s))
    words += [operands[k][1] if k < len(operands) else 0 for k in range(4)]
    return array.array("q", words).tobytes()


def _bcast_strides(t, nd):
    """t's strides aligned to nd dims (broadcast dims: stride 0)."""
    lead = nd - t.ndim
    return tuple([0] * lead + [0 if sz == 1 else st for sz, st in zip(t.shape, t.stride())])


def groups_for(n, group=GROUP, limit=4096):
    return max(1, min(limit, -(-n // group)))


# the backend --------------------------------------------------------------------------

class GPUBackend(Backend):
    """Backend over the primitives below; subclasses: OpenCLBackend, CUDABackend."""

    name = "gpu"

    def __init__(self):
        self.launches = 0          # kernel launches since the last reset_counters()
        self.host_transfers = 0    # host<->device copies since the last reset_counters()
        self._lock = threading.Lock()

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
        """Run `kernel` (a name from all_kernels()) over global_size work-items
        (tuples, OpenCL style: total work-items per dim) with the given work-group
        size; args match signature(kernel): buffers, Python numbers, layout bytes."""
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

    def counters(self):
        return {"launches": self.launches, "host_transfers": self.host_transfers}

    # helpers ---------------------------------------------------------------------------
    def _check_dtype(self, dtype, device, op):
        if dtype.name == "float64" and not self.has_fp64(device):
            raise TypeError(f"{op}: float64 is not supported on {device} (the device lacks "
                            f"cl_khr_fp64); use float32")

    def run(self, device, kernel, n, args, group=GROUP):
        """A 1-d grid-stride launch over n items."""
        if n <= 0:
            return
        g = groups_for(n, group)
        self.launch(device, kernel, (g * group,), (group,), args)

    @staticmethod
    def handle(t):
        return t.untyped_storage().handle

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
        if src.nbytes:
            self.host_transfers += 1
            self.read(self.handle(src), src.storage_offset() * src.itemsize, _host_bytes(out))
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
                                                (_bcast_strides(src, nd), src.storage_offset())],
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
                ops.append((_bcast_strides(a, nd), a.storage_offset()))
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
        g = max(1, min(m, 4096))
        self.launch(x.device, f"reduce_{op_name}_{x.dtype.name}", (g * REDUCE_GROUP,),
                    (REDUCE_GROUP,), [m, k, self.handle(out), self.handle(x), layout])
        return out

    @staticmethod
    def _ensure_contiguous_out(out, op):
        if not out.is_contiguous():
            raise RuntimeError(f"{op}: internal error: reduction output must be contiguous")


def _host_bytes(t):
    """A writable byte view of a contiguous CPU tensor's elements."""
    return memoryview(t).cast("B")


_FORMATS = {"bool": "B", "uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
            "float16": "f", "float32": "f", "float64": "d"}


def _scalar_for(value, dt, op):
    """A Python scalar as the value of a parameter of dt's compute type, range-checked
    like the CPU's scalars."""
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


__all__ = ["GPUBackend", "OutOfMemoryError", "all_kernels", "program_names", "program_source",
           "signature", "pack_layout"]
