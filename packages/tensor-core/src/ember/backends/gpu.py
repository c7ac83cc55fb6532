"""The host half of every GPU backend, written once (OpenCL and CUDA share it).

GPUBackend implements the whole Backend interface (base.py) and the hand-written
kernels of HAND_WRITTEN_KERNELS in terms of a few primitives that a subclass
supplies (see "primitives" below): allocate a buffer, copy bytes host<->device and
device<->device, launch a kernel by name, synchronize. The device code is the
portable dialect of kernels/gpu/ember_device.h, catalogued by ember.ops.gpu_programs:
the op table's rows rendered by ember.ops.render and the hand-written programs
kernels/gpu/programs/<family>.h, the same text for every backend, so kernel names
and parameter lists are identical everywhere. Kernel arguments are typed from the
kernels' own parameter lists (`signature(kernel)`): a backend converts Python
ints/floats, tensors' buffers and em_layout structs to exactly those C types.
"""
from __future__ import annotations

import array
import math
import os
import struct
import threading

from ember._C import core as _core
from ember.backends.base import Backend
from ember.ops import render, table

MAXD = 8                 # EM_MAXD of ember_device.h
GROUP = 256              # work-items per work-group of the 1-d kernels
REDUCE_GROUP = render.GPU_REDUCE_GROUP


class OutOfMemoryError(RuntimeError, MemoryError):
    """A device allocation failed; the message says how much was asked for, is in use
    and is cached. A RuntimeError as PyTorch's torch.OutOfMemoryError, and a
    MemoryError as the CPU's, so one except clause catches both."""


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

def matmul_batch_shape(a, b):
    """The broadcast of matmul's batch dims (all but the last two of each operand)."""
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    n = max(len(ba), len(bb))
    out = []
    for x, y in zip((1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"matmul: batch dimensions {ba} and {bb} cannot be broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


class GPUBackend(Backend):
    """Backend over the primitives below; subclasses: OpenCLBackend, CUDABackend."""

    name = "gpu"

    def __init__(self):
        self.launches = 0          # kernel launches since the last reset_counters()
        self.host_transfers = 0    # host<->device copies since the last reset_counters()
        self._pending = []         # deferred device-side checks (check_targets)
        self._checked = []         # the last targets checked (check once per tensor version)
        self.check_reads = 0       # reads of deferred check flags (8 bytes at a sync point)
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
        device; check_reads: 8-byte reads of deferred device-side checks (at most one
        per synchronizing read that follows a checked op)."""
        return {"launches": self.launches, "host_transfers": self.host_transfers,
                "check_reads": self.check_reads}

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
        if self._pending:
            self.raise_pending()
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
        kernel = f"reduce_{op_name}_{x.dtype.name}"
        # Few outputs of many elements: split each into parts (a work-group each) whose
        # results a second pass combines. Parts are stored in the output dtype, as the
        # CPU's split reductions do; not for float16 sums, whose parts would round.
        parts = 1
        if m < 256 and k >= 1 << 15 and not (x.dtype.name == "float16" and op_name in
                                              ("sum", "prod")):
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

    # hand-written kernels -------------------------------------------------------------
    def _float_kernel(self, x, op, dtypes=("float16", "float32", "float64")):
        if x.dtype.name not in dtypes:
            raise NotImplementedError(f"{op}: no {self.name} kernel for {x.dtype.name}")
        self._check_dtype(x.dtype, x.device, op)

    def matmul(self, a, b):
        """NumPy's matmul (1-d operands, broadcast batch dims) over the program
        matmul.h, every dtype (as the CPU's GEMM)."""
        self._check_dtype(a.dtype, a.device, "matmul")
        nda, ndb = a.ndim, b.ndim
        sa, sb = a.stride(), b.stride()
        if nda == 1:
            m, k, rsa, csa = 1, a.shape[0], 0, sa[0]
        else:
            m, k, rsa, csa = a.shape[-2], a.shape[-1], sa[-2], sa[-1]
        if ndb == 1:
            n, rsb, csb = 1, sb[0], 0
        else:
            n, rsb, csb = b.shape[-1], sb[-2], sb[-1]
        bshape = matmul_batch_shape(a, b)
        bnd = len(bshape)
        ba = (1,) * (bnd - max(nda - 2, 0)) + tuple(a.shape[:-2])
        bb = (1,) * (bnd - max(ndb - 2, 0)) + tuple(b.shape[:-2])
        oshape = bshape + ((m,) if nda > 1 else ()) + ((n,) if ndb > 1 else ())
        out = self.empty(oshape, a.dtype, a.device)
        if out.numel() == 0:
            return out
        if k == 0:
            self.fill(out, 0)
            return out
        pad = lambda strides, nd: (0,) * (bnd - nd) + tuple(strides)
        bsa = [0 if s == 1 else st for s, st in zip(ba, pad(sa[:-2], max(nda - 2, 0)))]
        bsb = [0 if s == 1 else st for s, st in zip(bb, pad(sb[:-2], max(ndb - 2, 0)))]
        bsc = list(contiguous_strides(tuple(bshape) + (m, n)))[:bnd]
        layout = pack_layout(tuple(bshape), [(bsc, 0), (bsa, a.storage_offset()),
                                             (bsb, b.storage_offset())], op="matmul")
        nbatch = math.prod(bshape)
        tiles = (-(-n // 64) * 16, -(-m // 64) * 16, min(nbatch, 65535))
        self.launch(a.device, f"gemm_{a.dtype.name}", tiles, (16, 16, 1),
                    [m, n, k, nbatch, self.handle(out), n, 1, self.handle(a), rsa, csa,
                     self.handle(b), rsb, csb, layout])
        return out

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

    # softmax --------------------------------------------------------------------------
    def softmax_rows(self, x, log_softmax):
        self._float_kernel(x, "softmax", ("float32", "float64"))
        x = self.dense(x)
        y = self.empty(x.shape, x.dtype, x.device)
        n = x.shape[-1] if x.ndim else 1
        rows = x.numel() // n if n else 0
        self.rows_launch(x.device, f"softmax_rows_{x.dtype.name}", rows,
                         [rows, n, self.handle(y), self.handle(x), int(log_softmax)])
        return y

    def softmax_backward_rows(self, grad, out, log_softmax):
        self._float_kernel(out, "softmax_backward", ("float32", "float64"))
        grad, out = self.dense(grad), self.dense(out)
        dx = self.empty(out.shape, out.dtype, out.device)
        n = out.shape[-1] if out.ndim else 1
        rows = out.numel() // n if n else 0
        self.rows_launch(out.device, f"softmax_backward_rows_{out.dtype.name}", rows,
                         [rows, n, self.handle(dx), self.handle(grad), self.handle(out),
                          int(log_softmax)])
        return dx

    # losses ---------------------------------------------------------------------------
    def check_targets(self, target, C, ignore_index):
        """Checked on the device without waiting: a bad target is reported (IndexError)
        at the next synchronizing read (item(), cpu(), ...; at once under EMBER_SYNC=1),
        as CUDA's device-side asserts do. Always returns -1."""
        n = target.numel()
        if n == 0:
            return -1
        target = self.dense(target)
        key = (target.untyped_storage(), target._version, tuple(target.shape), C, ignore_index)
        if any(k[0] is key[0] and k[1:] == key[1:] for k in self._checked):
            return -1   # the backward re-checks the forward's targets: once is enough
        self._checked = (self._checked + [key])[-4:]
        flag = self.empty((1,), _core._dtype_by_name("int64"), target.device)
        self.fill(flag, n)
        self.run(target.device, "check_targets", n,
                 [n, self.handle(target), C, ignore_index, self.handle(flag)])
        self._pending.append((flag, target, C, ignore_index))
        if os.environ.get("EMBER_SYNC") == "1":
            self.raise_pending()
        return -1

    def raise_pending(self):
        """Read the deferred checks (one small read each) and raise the first failure."""
        pending, self._pending = self._pending, []
        for flag, target, C, ignore in pending:
            self.check_reads += 1
            buf = _core.empty((1,), flag.dtype)
            self.read(self.handle(flag), 0, _host_bytes(buf))
            bad = _core.item(buf)
            if bad < target.numel():
                v = _core.item(self.to_cpu(target.reshape(-1)[bad]))
                raise IndexError(f"cross_entropy/nll_loss: target {v} is out of bounds for {C} "
                                 f"classes (expected values in [0, {C - 1}] or "
                                 f"ignore_index={ignore}); found by an earlier launch")

    def _weights(self, w, like):
        """(buffer, has_w) of optional class weights (`like`'s buffer stands in)."""
        return (self.handle(like), 0) if w is None else (self.handle(self.dense(w)), 1)

    def cross_entropy(self, x, target, weight, ignore_index, label_smoothing):
        self._float_kernel(x, "cross_entropy", ("float32", "float64"))
        x, target = self.dense(x), self.dense(target)
        C = x.shape[-1]
        rows = x.numel() // C if C else 0
        wbuf, has_w = self._weights(weight, x)
        wtotal = float(C) if weight is None else self._wtotal(weight)
        loss = self.empty(x.shape[:-1], x.dtype, x.device)
        wrow = self.empty(x.shape[:-1], x.dtype, x.device)
        self.rows_launch(x.device, f"cross_entropy_{x.dtype.name}", rows,
                         [rows, C, self.handle(x), self.handle(target), wbuf, has_w,
                          self.handle(loss), self.handle(wrow), ignore_index,
                          float(label_smoothing), wtotal])
        return loss, wrow

    def _wtotal(self, weight):
        # the sum of the class weights is a kernel argument: one small read per call
        # with class weights (weights are few and rarely change)
        return float(_core.item(self.to_cpu(_core.reduce("sum", weight, None, False))))

    @staticmethod
    def _gstride(grad, n):
        """0 when one grad value serves all n positions, else 1."""
        return 0 if grad.numel() == 1 and n != 1 else 1

    def cross_entropy_backward(self, x, target, weight, grad, scale, ignore_index,
                               label_smoothing):
        self._float_kernel(x, "cross_entropy_backward", ("float32", "float64"))
        x, target, grad = self.dense(x), self.dense(target), self.dense(grad)
        C = x.shape[-1]
        rows = x.numel() // C if C else 0
        wbuf, has_w = self._weights(weight, x)
        wtotal = float(C) if weight is None else self._wtotal(weight)
        dx = self.empty(x.shape, x.dtype, x.device)
        self.rows_launch(x.device, f"cross_entropy_backward_{x.dtype.name}", rows,
                         [rows, C, self.handle(x), self.handle(target), wbuf, has_w,
                          self.handle(grad), self._gstride(grad, rows), float(scale),
                          self.handle(dx), ignore_index, float(label_smoothing), wtotal])
        return dx

    @staticmethod
    def _nll_dims(x):
        if x.ndim == 1:
            return 1, x.shape[0], 1
        return x.shape[0], x.shape[1], math.prod(x.shape[2:])

    def nll_loss(self, x, target, weight, ignore_index):
        self._float_kernel(x, "nll_loss", ("float32", "float64"))
        x, target = self.dense(x), self.dense(target)
        N, C, S = self._nll_dims(x)
        wbuf, has_w = self._weights(weight, x)
        loss = self.empty(target.shape, x.dtype, x.device)
        wrow = self.empty(target.shape, x.dtype, x.device)
        self.run(x.device, f"nll_loss_{x.dtype.name}", N * S,
                 [N, C, S, self.handle(x), self.handle(target), wbuf, has_w, self.handle(loss),
                  self.handle(wrow), ignore_index])
        return loss, wrow

    def nll_loss_backward(self, x, target, weight, grad, scale, ignore_index):
        self._float_kernel(x, "nll_loss_backward", ("float32", "float64"))
        target, grad = self.dense(target), self.dense(grad)
        N, C, S = self._nll_dims(x)
        wbuf, has_w = self._weights(weight, x)
        dx = self.empty(x.shape, x.dtype, x.device)
        self.fill(dx, 0)
        self.run(x.device, f"nll_loss_backward_{x.dtype.name}", N * S,
                 [N, C, S, self.handle(target), wbuf, has_w, self.handle(grad),
                  self._gstride(grad, N * S), float(scale), self.handle(dx), ignore_index])
        return dx

    # dropout ----------------------------------------------------------------------------
    def dropout(self, x, p, seed, offset):
        self._float_kernel(x, "dropout", ("float32", "float64"))
        x = self.dense(x)
        y = self.empty(x.shape, x.dtype, x.device)
        mask = self.empty(x.shape, _core._dtype_by_name("bool"), x.device)
        n = x.numel()
        pf = struct.unpack("f", struct.pack("f", p))[0]     # p rounded to float32
        thr = math.ceil(pf * 16777216.0)
        scale = 1 / (1 - p) if p < 1 else 0.0
        self.run(x.device, f"dropout_{x.dtype.name}", n,
                 [n, self.handle(x), self.handle(y), self.handle(mask), thr, scale,
                  seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, offset])
        return y, mask

    def dropout_backward(self, grad, mask, scale):
        self._float_kernel(grad, "dropout_backward", ("float32", "float64"))
        grad, mask = self.dense(grad), self.dense(mask)
        dx = self.empty(grad.shape, grad.dtype, grad.device)
        n = grad.numel()
        self.run(grad.device, f"dropout_backward_{grad.dtype.name}", n,
                 [n, self.handle(grad), self.handle(mask), float(scale), self.handle(dx)])
        return dx

    # norms: composed from the op table's kernels on the device ------------------------
    def ew(self, op, *operands):
        """Row `op` over tensors of this device / Python scalars, into a new tensor of
        the broadcast shape (operands share one float dtype)."""
        ts = [a for a in operands if isinstance(a, _core.TensorBase)]
        shape = _broadcast_shape([tuple(t.shape) for t in ts])
        out = self.empty(shape, ts[0].dtype, ts[0].device)
        return self.elementwise(op, list(operands), ts[0].dtype, ts[0].dtype, out)

    def sum_to(self, x, dims, shape):
        """x summed over dims into a new tensor of (keepdim) `shape`."""
        out = self.empty(shape, x.dtype, x.device)
        return self.reduce("sum", x, tuple(dims), out)

    def layer_norm(self, x, weight, bias, k, eps):
        self._float_kernel(x, "layer_norm", ("float32", "float64"))
        x = self.dense(x)
        lead = tuple(x.shape[:x.ndim - k])
        rows, n = math.prod(lead), math.prod(x.shape[x.ndim - k:])
        xr = self.view(x, (rows, n), (n, 1))
        mean = self.ew("div", self.sum_to(xr, (1,), (rows, 1)), n)
        d = self.ew("sub", xr, mean)
        var = self.ew("div", self.sum_to(self.ew("mul", d, d), (1,), (rows, 1)), n)
        rstd = self.ew("rsqrt", self.ew("add", var, eps))
        y = self.ew("mul", d, rstd)
        if weight is not None:
            y = self.ew("mul", y, self.view(self.dense(weight), (1, n), (0, 1)))
        if bias is not None:
            y = self.ew("add", y, self.view(self.dense(bias), (1, n), (0, 1)))
        stats = lead + (1,) * k
        return (self.view(y, x.shape, contiguous_strides(tuple(x.shape))),
                self.view(mean, stats, contiguous_strides(stats)),
                self.view(rstd, stats, contiguous_strides(stats)))

    def layer_norm_backward(self, grad, x, mean, rstd, weight, k, output_mask):
        self._float_kernel(x, "layer_norm_backward", ("float32", "float64"))
        grad, x, mean, rstd = (self.dense(t) for t in (grad, x, mean, rstd))
        tail = tuple(x.shape[x.ndim - k:])
        n = math.prod(tail)
        rows = x.numel() // n if n else 0
        g = self.view(grad, (rows, n), (n, 1))
        m, r = self.view(mean, (rows, 1), (1, 1)), self.view(rstd, (rows, 1), (1, 1))
        xhat = self.ew("mul", self.ew("sub", self.view(x, (rows, n), (n, 1)), m), r)
        dx = dw = db = None
        if output_mask[0]:
            wg = g if weight is None else self.ew("mul", g, self.view(self.dense(weight),
                                                                     (1, n), (0, 1)))
            mwg = self.ew("div", self.sum_to(wg, (1,), (rows, 1)), n)
            mwgx = self.ew("div", self.sum_to(self.ew("mul", wg, xhat), (1,), (rows, 1)), n)
            dx = self.ew("mul", r, self.ew("sub", self.ew("sub", wg, mwg),
                                           self.ew("mul", xhat, mwgx)))
            dx = self.view(dx, x.shape, contiguous_strides(tuple(x.shape)))
        if output_mask[1]:
            dw = self.view(self.sum_to(self.ew("mul", g, xhat), (0,), (1, n)), tail,
                           contiguous_strides(tail))
        if output_mask[2]:
            db = self.view(self.sum_to(g, (0,), (1, n)), tail, contiguous_strides(tail))
        return dx, dw, db

    def _ncs(self, x):
        N, C = x.shape[:2]
        S = math.prod(x.shape[2:])
        return self.view(self.dense(x), (N, C, S), (C * S, S, 1)), N, C, S

    def _per_channel(self, v, C):
        return self.view(self.dense(v), (1, C, 1), (0, 1, 0))

    def batch_norm_stats(self, x):
        self._float_kernel(x, "batch_norm_stats", ("float32", "float64"))
        x3, N, C, S = self._ncs(x)
        mean = self.ew("div", self.sum_to(x3, (0, 2), (1, C, 1)), N * S)
        d = self.ew("sub", x3, mean)
        var = self.ew("div", self.sum_to(self.ew("mul", d, d), (0, 2), (1, C, 1)), N * S)
        return self.view(mean, (C,), (1,)), self.view(var, (C,), (1,))

    def batch_norm_backward_reduce(self, grad, x, mean):
        self._float_kernel(x, "batch_norm_backward_reduce", ("float32", "float64"))
        g3, N, C, S = self._ncs(grad)
        x3 = self._ncs(x)[0]
        sg = self.sum_to(g3, (0, 2), (1, C, 1))
        sgx = self.sum_to(self.ew("mul", g3, self.ew("sub", x3, self._per_channel(mean, C))),
                          (0, 2), (1, C, 1))
        if N * S == 0:
            self.fill(sg, 0)
            self.fill(sgx, 0)
        return self.view(sg, (C,), (1,)), self.view(sgx, (C,), (1,))

    def batch_norm_elemt(self, u, v, a, b, d):
        self._float_kernel(u, "batch_norm_elemt", ("float32", "float64"))
        u3, N, C, S = self._ncs(u)
        out = self.ew("add", self.ew("mul", u3, self._per_channel(a, C)), self._per_channel(d, C))
        if v is not None:
            out = self.ew("add", out, self.ew("mul", self._ncs(v)[0], self._per_channel(b, C)))
        return self.view(out, u.shape, contiguous_strides(tuple(u.shape)))

    # convolution --------------------------------------------------------------------
    @staticmethod
    def view(t, shape, strides, offset=0):
        """A view of t's storage (no autograd recording: kernels run outside the tape)."""
        return _core.as_strided_from(t.untyped_storage(), t.dtype, tuple(shape), tuple(strides),
                                     t.storage_offset() + offset)

    def _unfold(self, x, khw, ohw, stride, padding, dilation):
        """im2col of dense x: (N, C * KH * KW, OH * OW)."""
        N, C, H, W = x.shape
        cols = self.empty((N, C * khw[0] * khw[1], ohw[0] * ohw[1]), x.dtype, x.device)
        n = cols.numel()
        self.run(x.device, f"im2col_{x.dtype.name}", n,
                 [n, C, H, W, khw[0], khw[1], ohw[0], ohw[1], stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], self.handle(x), self.handle(cols)])
        return cols

    def conv2d_forward(self, x, w, bias, out_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d", ("float32", "float64"))
        x, w = self.dense(x), self.dense(w)
        N, C = x.shape[:2]
        OC, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, out_hw[0] * out_hw[1]
        cols = self._unfold(x, (KH, KW), out_hw, stride, padding, dilation)
        # y[n, g] (OCg, P) = w[g] (OCg, K) @ cols[n, g] (K, P), one batched GEMM
        a = self.view(w, (1, G, OCg, K), (0, OCg * K, K, 1))
        b = self.view(cols, (N, G, K, P), (G * K * P, K * P, P, 1))
        y = self.matmul(a, b)
        y = self.view(y, (N, OC, out_hw[0], out_hw[1]), contiguous_strides((N, OC) + tuple(out_hw)))
        if bias is not None:
            self.elementwise("add", [y, self.view(self.dense(bias), (OC, 1, 1), (1, 0, 0))],
                             y.dtype, y.dtype, y)
        return y

    def conv2d_backward_input(self, gy, w, bias, in_hw, stride, padding, dilation, groups):
        self._float_kernel(gy, "conv2d_backward_input", ("float32", "float64"))
        gy, w = self.dense(gy), self.dense(w)
        N, OC, OH, OW = gy.shape
        _, Cg, KH, KW = w.shape
        G, OCg, K, P = groups, OC // groups, Cg * KH * KW, OH * OW
        C = Cg * G
        # cols[n, g] (K, P) = w[g]^T (K, OCg) @ gy[n, g] (OCg, P)
        a = self.view(w, (1, G, K, OCg), (0, OCg * K, 1, K))
        b = self.view(gy, (N, G, OCg, P), (OC * P, OCg * P, P, 1))
        cols = self.matmul(a, b)
        gx = self.empty((N, C) + tuple(in_hw), gy.dtype, gy.device)
        n = gx.numel()
        bb = self.dense(bias) if bias is not None else gy
        self.run(gy.device, f"col2im_{gy.dtype.name}", n,
                 [n, C, in_hw[0], in_hw[1], KH, KW, OH, OW, stride[0], stride[1], padding[0],
                  padding[1], dilation[0], dilation[1], self.handle(cols), self.handle(gx),
                  self.handle(bb), int(bias is not None)])
        return gx

    def conv2d_backward_weight(self, x, gy, kernel_hw, stride, padding, dilation, groups):
        self._float_kernel(x, "conv2d_backward_weight", ("float32", "float64"))
        x, gy = self.dense(x), self.dense(gy)
        N, C = x.shape[:2]
        OC, OH, OW = gy.shape[1:]
        KH, KW = kernel_hw
        G, Cg = groups, C // groups
        OCg, K, P = OC // G, Cg * KH * KW, OH * OW
        cols = self._unfold(x, (KH, KW), (OH, OW), stride, padding, dilation)
        # per image gw[n, g] (OCg, K) = gy[n, g] (OCg, P) @ cols[n, g]^T (P, K), summed over n
        a = self.view(gy, (N, G, OCg, P), (OC * P, OCg * P, P, 1))
        b = self.view(cols, (N, G, P, K), (G * K * P, K * P, 1, P))
        per = self.matmul(a, b)
        gw = self.empty((1, G, OCg, K), x.dtype, x.device)
        self.reduce("sum", per, (0,), gw)
        return self.view(gw, (OC, Cg, KH, KW), contiguous_strides((OC, Cg, KH, KW)))

    # pooling --------------------------------------------------------------------------
    @staticmethod
    def _pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    def _planes_out(self, x, ohw, dtype=None):
        N, C = x.shape[:2]
        return self.empty((N, C) + tuple(ohw), dtype or x.dtype, x.device)

    def max_pool2d(self, x, kernel, stride, padding, dilation, out_size, with_indices):
        self._float_kernel(x, "max_pool2d", ("float32", "float64"))
        x = self.dense(x)
        k, st, p, d, o = map(self._pair, (kernel, stride, padding, dilation, out_size))
        y = self._planes_out(x, o)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64")) if with_indices else None
        n = y.numel()
        self.run(x.device, f"max_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  d[0], d[1], self.handle(x), self.handle(y), self.handle(ix if ix is not None else y),
                  int(with_indices)])
        return y, ix

    def avg_pool2d(self, x, kernel, stride, padding, out_size, count_include_pad, divisor):
        self._float_kernel(x, "avg_pool2d", ("float32", "float64"))
        x = self.dense(x)
        k, st, p, o = map(self._pair, (kernel, stride, padding, out_size))
        y = self._planes_out(x, o)
        n = y.numel()
        self.run(x.device, f"avg_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], k[0], k[1], st[0], st[1], p[0], p[1],
                  self.handle(x), self.handle(y), int(count_include_pad), int(divisor)])
        return y

    def avg_pool2d_backward(self, grad, input_shape, kernel, stride, padding,
                            count_include_pad, divisor):
        self._float_kernel(grad, "avg_pool2d_backward", ("float32", "float64"))
        grad = self.dense(grad)
        k, st, p = map(self._pair, (kernel, stride, padding))
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], k[0], k[1], st[0], st[1], p[0],
                  p[1], self.handle(grad), self.handle(dx), int(count_include_pad),
                  int(divisor)], group=64)
        return dx

    def _adaptive(self, x, out_size, is_max):
        self._float_kernel(x, "adaptive_pool2d", ("float32", "float64"))
        x = self.dense(x)
        o = self._pair(out_size)
        y = self._planes_out(x, o)
        ix = self._planes_out(x, o, _core._dtype_by_name("int64")) if is_max else None
        n = y.numel()
        self.run(x.device, f"adaptive_pool2d_{x.dtype.name}", n,
                 [n, x.shape[2], x.shape[3], o[0], o[1], self.handle(x), self.handle(y),
                  self.handle(ix if is_max else y), int(is_max)])
        return (y, ix) if is_max else y

    def adaptive_avg_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, False)

    def adaptive_max_pool2d(self, x, out_size):
        return self._adaptive(x, out_size, True)

    def adaptive_avg_pool2d_backward(self, grad, input_shape):
        self._float_kernel(grad, "adaptive_avg_pool2d_backward", ("float32", "float64"))
        grad = self.dense(grad)
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"adaptive_avg_pool2d_backward_{grad.dtype.name}", planes,
                 [planes, H, W, grad.shape[2], grad.shape[3], self.handle(grad),
                  self.handle(dx)], group=64)
        return dx

    def max_pool2d_backward(self, grad, indices, input_shape):
        self._float_kernel(grad, "max_pool2d_backward", ("float32", "float64"))
        grad, indices = self.dense(grad), self.dense(indices)
        H, W = tuple(input_shape)[2:]
        dx = self._planes_out(grad, (H, W))
        planes = grad.shape[0] * grad.shape[1]
        self.run(grad.device, f"max_pool_backward_{grad.dtype.name}", planes,
                 [planes, H * W, grad.shape[2] * grad.shape[3], self.handle(grad),
                  self.handle(indices), self.handle(dx)], group=64)
        return dx

    # indexing, sorting, scans (ember._C.index's entry points) ---------------------------
    def _read_flag(self, flag):
        """The value of a one-element int64 check flag (a synchronizing 8-byte read)."""
        self.check_reads += 1
        buf = _core.empty((1,), flag.dtype)
        self.read(self.handle(flag), flag.storage_offset() * 8, _host_bytes(buf))
        return _core.item(buf)

    def normalize(self, idx, size, allow_negative):
        """Wrap negative indices in place, return the first bad position or -1 (read
        at once: an index error is raised at the line that indexes)."""
        n = idx.numel()
        if n == 0:
            return -1
        flag = self.empty((1,), idx.dtype, idx.device)
        self.fill(flag, n)
        self.run(idx.device, "index_normalize", n,
                 [n, self.handle(idx), size, int(allow_negative), self.handle(flag)])
        bad = self._read_flag(flag)
        return -1 if bad >= n else bad

    def _index_layout(self, out_shape, first, second, indices, op):
        """em_layout over out_shape for two strided operands and up to two index
        tensors; (layout, index buffers, steps)."""
        if len(indices) > 2:
            raise NotImplementedError(f"{op}: the {self.name} kernels take at most 2 index "
                                      f"tensors at once, got {len(indices)}")
        ops = [first, second]
        bufs, steps = [], []
        for t, strides, step, _size in indices:
            ops.append((tuple(strides), t.storage_offset()))
            bufs.append(self.handle(t))
            steps.append(step)
        while len(bufs) < 2:
            bufs.append(self.handle(indices[0][0]) if indices else None)
            steps.append(0)
        return pack_layout(tuple(out_shape), ops, op=op), bufs, steps

    def gather(self, out, src, src_strides, indices):
        n = out.numel()
        if n == 0:
            return out
        layout, bufs, steps = self._index_layout(
            out.shape, (out.stride(), out.storage_offset()),
            (tuple(src_strides), src.storage_offset()), indices, "index")
        bufs = [b if b is not None else self.handle(out) for b in bufs]
        self.run(out.device, f"gather_{out.dtype.name}", n,
                 [n, self.handle(out), self.handle(src)] + bufs + steps + [len(indices), layout])
        return out

    _SCATTER_OPS = {None: 0, "assign": 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2,
                    "amax": 3, "amin": 4}

    def scatter(self, dst, dst_strides, src, src_strides, shape, indices, reduce=None):
        n = math.prod(shape)
        if n == 0:
            return dst
        layout, bufs, steps = self._index_layout(
            shape, (tuple(dst_strides), dst.storage_offset()),
            (tuple(src_strides), src.storage_offset()), indices, "index_put")
        bufs = [b if b is not None else self.handle(dst) for b in bufs]
        self.launch(dst.device, f"scatter_{dst.dtype.name}", (1,), (1,),
                    [n, self.handle(dst), self.handle(src)] + bufs + steps +
                    [len(indices), self._SCATTER_OPS[reduce], layout])
        return dst

    def _count_true(self, mask):
        total = self.empty((1,), _core._dtype_by_name("int64"), mask.device)
        self.reduce("sum", mask, tuple(range(mask.ndim)), total.reshape((1,) * mask.ndim)
                    if mask.ndim else total.reshape(()))
        return self._read_flag(total)

    def nonzero(self, mask):
        mask = self.dense(mask)
        count = self._count_true(mask)
        out = self.empty((count, mask.ndim), _core._dtype_by_name("int64"), mask.device)
        if count and mask.ndim:
            layout = array.array("q", [mask.ndim, 0, 0, 0] + list(mask.shape) +
                                 [0] * (_LAYOUT_WORDS - 4 - mask.ndim)).tobytes()
            if mask.ndim > MAXD:
                raise NotImplementedError(f"nonzero: at most {MAXD} dims on {self.name}")
            self.launch(mask.device, "nonzero_bool", (1,), (1,),
                        [mask.numel(), self.handle(mask), self.handle(out), layout])
        return out

    def compress(self, src, stride, mask):
        mask = self.dense(mask)
        count = self._count_true(mask)
        out = self.empty((count,), src.dtype, src.device)
        if count:
            self.launch(src.device, f"compress_{src.dtype.name}", (1,), (1,),
                        [mask.numel(), self.handle(src), src.storage_offset(), stride,
                         self.handle(mask), self.handle(out)])
        return out

    def sort_rows(self, vals, idx, n, descending):
        total = vals.numel()
        if total == 0:
            return vals
        if not (vals.is_contiguous() and vals.storage_offset() == 0 and idx.is_contiguous()
                and idx.storage_offset() == 0):
            raise ValueError("sort: internal error: bad layout")
        rows = total // n
        tv = self.empty(vals.shape, vals.dtype, vals.device)
        ti = self.empty(idx.shape, idx.dtype, idx.device)
        self.run(vals.device, f"sort_rows_{vals.dtype.name}", rows,
                 [rows, n, self.handle(vals), self.handle(idx), self.handle(tv), self.handle(ti),
                  int(descending)], group=64)
        return vals

    def searchsorted(self, seq, shared, vals, out, right):
        n, m = seq.shape[-1], vals.shape[-1]
        if vals.numel() == 0:
            return out
        seq, vals = self.dense(seq), self.dense(vals)
        rows = vals.numel() // m
        self.run(vals.device, f"searchsorted_{vals.dtype.name}", rows * m,
                 [rows, m, n, self.handle(seq), 0 if shared else n, self.handle(vals),
                  self.handle(out), int(right)])
        return out

    def scan(self, op, x, outer, n, inner):
        if not (x.is_contiguous() and x.storage_offset() == 0):
            raise ValueError(f"{op}: internal error: bad layout")
        self.run(x.device, f"scan_{x.dtype.name}", outer * inner,
                 [outer, n, inner, self.handle(x), 0 if op == "cumsum" else 1], group=64)
        return x

    def iota(self, n, device):
        """0, 1, ..., n - 1 as int64 on the device (arange, linspace)."""
        out = self.empty((n,), _core._dtype_by_name("int64"), device)
        self.run(device, "iota_int64", n, [n, self.handle(out)])
        return out

    # random numbers ------------------------------------------------------------------
    def random(self, kind, out, *args):
        """Philox draws into `out`, the CPU's numbers (ember._random's entry point):
        random(kind, out, seed, offset, *params) for uniform (low, high), normal (mean,
        std), integers (low, span), exponential (lambd), randperm ()."""
        if kind == "multinomial":
            raise NotImplementedError(f"multinomial: no {self.name} kernel yet (draw on the "
                                      f"CPU and move the result)")
        seed, offset, *params = args
        n = out.numel()
        if n == 0:
            return out
        dt = out.dtype.name
        self._check_dtype(out.dtype, out.device, kind)
        f16_via_f32 = dt == "float16" and kind in ("uniform", "exponential")
        target = out if out.is_contiguous() and out.storage_offset() == 0 and not f16_via_f32 \
            else self.empty(out.shape, _core._dtype_by_name("float32") if f16_via_f32
                            else out.dtype, out.device)
        tdt = target.dtype.name
        keys = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, offset]
        h = self.handle(target)
        if kind == "uniform":
            lo, hi = params
            self.run(out.device, f"random_uniform_{tdt}", n,
                     [n, h] + keys + [float(lo), float(hi - lo), float(lo), float(hi - lo)])
            if f16_via_f32 and hi > lo:
                from ember._random import _below_f16
                self.elementwise("minimum", [target, max(_below_f16(hi), lo)], target.dtype,
                                 target.dtype, target)
        elif kind == "normal":
            self.run(out.device, f"random_normal_{tdt}", n, [n, h] + keys + [float(p) for p in params])
        elif kind == "integers":
            low, span = params
            self.run(out.device, f"random_integers_{tdt}", n, [n, h] + keys + [int(low), int(span)])
        elif kind == "exponential":
            self.run(out.device, f"random_exponential_{tdt}", n, [n, h] + keys + [float(params[0])])
        elif kind == "randperm":
            self.launch(out.device, "randperm_int64", (1,), (1,), [n, h] + keys)
        else:
            raise NotImplementedError(f"random: no {self.name} kernel for {kind!r}")
        if target is not out:
            self.cast_into(out, target)
        return out

    @staticmethod
    def _ensure_contiguous_out(out, op):
        if not out.is_contiguous():
            raise RuntimeError(f"{op}: internal error: reduction output must be contiguous")


def _broadcast_shape(shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, v in enumerate(s):
            j = nd - len(s) + i
            if v != 1:
                out[j] = v
    return tuple(out)


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


__all__ = [
    "GPUBackend",
    "OutOfMemoryError",
    "pack_layout",
]
