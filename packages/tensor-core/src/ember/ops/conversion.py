"""Conversions between layouts, dtypes and devices: contiguous, clone, to (and cpu,
cuda, the dtype methods float/double/half/bfloat16/..., astype, type_as), pin_memory. Each
records itself for autograd ("clone", "to" with the dtypes, "to_device" with the
devices)."""
from __future__ import annotations

from ember import _layout_formats as _fmt
from ember._args import tensor_arg, tensor_input
from ember._C import core as _core
from ember._registry import tensor_method

__all__ = ["clone", "contiguous"]

_record = _core.record


def _other(other, op):
    return tensor_arg(other, op, "other")


@tensor_method
def contiguous(input, memory_format=None):
    """input itself when its elements are already in row-major order (memory_format
    ember.channels_last: NHWC order), else a copy in that order."""
    if memory_format is None or memory_format is _fmt.contiguous_format:
        if input.is_contiguous():
            return input
        return clone(input, memory_format=_fmt.contiguous_format)
    _fmt.as_format(memory_format, "contiguous", allow_preserve=False)
    return _fmt.to_format(input, memory_format, "contiguous")


@tensor_method
def clone(input, *, memory_format=None):
    """A copy with its own storage: row-major, or in memory_format (the default
    preserve_format keeps a channels_last input's layout)."""
    if memory_format is not _fmt.contiguous_format:
        fmt = _fmt.like_format(input, memory_format or _fmt.preserve_format, "clone")
        if fmt is not _fmt.contiguous_format:
            _fmt._check_rank(fmt, input.ndim, "clone")
            n = input.ndim
            last = (0,) + tuple(range(2, n)) + (1,)
            return clone(input.permute(*last), memory_format=_fmt.contiguous_format) \
                .permute(0, n - 1, *range(1, n - 1))
    return _record("clone", (input,), _core.contiguous_copy(input), None)


@tensor_method
def to(input, *args, dtype=None, device=None, copy=False, non_blocking=False,
       memory_format=None, **_):
    """Convert dtype and/or device: to(dtype), to(device), to(device, dtype), to(other);
    memory_format (ember.channels_last, ...): the result laid out so."""
    if memory_format is not None and memory_format is not _fmt.preserve_format:
        out = to(input, *args, dtype=dtype, device=device, copy=copy)
        return _fmt.to_format(out, memory_format, "to")
    for a in args:
        if isinstance(a, _core.DType):
            dtype = a
        elif isinstance(a, _core.TensorBase):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _core.Device)):
            device = a
        elif a is not None:
            from ember._dtypes import as_dtype
            dtype = as_dtype(a)
    out = input
    if device is not None:
        dev = _core.resolve_device(_core.as_device(device))
        if dev != input.device:
            out = _to_device(out, dev)
    if dtype is not None:
        from ember._dtypes import as_dtype
        dtype = as_dtype(dtype)
        if dtype is not out.dtype:
            out = _record("to", (out,), _core.astype(out, dtype, True, True),
                          {"dtype": dtype, "from_dtype": out.dtype})
    if copy and out is input:
        out = clone(input)
    return out


def _to_device(x, dev):
    src = x.device
    if dev.type == "cpu":
        backend = _core.backend_for(src)
        out = backend.to_cpu(x)
    else:
        backend = _core.backend_for(dev)
        host = x if src.type == "cpu" else _to_device(x, _core.as_device("cpu"))
        out = backend.from_cpu(host, dev)
    return _record("to_device", (x,), out, {"device": dev, "from_device": src})


@tensor_method
def cpu(input):
    return to(input, "cpu")


@tensor_method
def cuda(input, device=None):
    if isinstance(device, int) and not -2**63 <= device < 2**63:
        raise OverflowError(f"cuda: device index {device} does not fit in int64")
    return to(input, "cuda" if device is None else
              f"cuda:{device}" if isinstance(device, int) else device)


@tensor_method
def pin_memory(input, device=None):
    """A copy of this CPU tensor in page-locked (pinned) host memory, from which copies
    to a GPU run asynchronously (`.to("cuda", non_blocking=True)`, DataLoader's
    pin_memory=True). A tensor already pinned is returned as it is."""
    if input.device.type != "cpu":
        raise RuntimeError(f"pin_memory: only CPU tensors can be pinned, this one is on "
                           f"{input.device}")
    if is_pinned(input):
        return input
    from ember import cuda
    block = cuda._runtime().pinned_malloc(max(input.nbytes, 1))
    storage = _core.storage_from_pointer(block.ptr, input.nbytes, block, "cpu")
    out = _core.as_strided_from(storage, input.dtype, (input.numel(),), (1,), 0) \
        .view(tuple(input.shape))
    _core.copy_(out, input)
    return _record("clone", (input,), out, None)   # a copy: the gradient passes through


@tensor_method
def is_pinned(input, device=None):
    """Whether this tensor's memory is page-locked host memory from pin_memory()."""
    from ember import cuda
    return cuda._is_pinned_owner(input.untyped_storage().owner)


def _dtype_method(name):
    def fn(self):
        from ember import _dtypes
        return to(self, getattr(_dtypes, name))
    fn.__name__ = name
    return fn


for _n in ("float", "double", "half", "bfloat16", "int", "long", "short", "bool"):
    tensor_method(_dtype_method(_n), names=(_n,))
tensor_method(_dtype_method("uint8"), names=("byte",))
tensor_method(_dtype_method("int8"), names=("char",))


@tensor_method
def astype(input, dtype, /, *, copy=True):
    from ember._dtypes import as_dtype
    d = as_dtype(dtype)
    if d is input.dtype and not copy:
        return input
    return to(input, d) if d is not input.dtype else clone(input)


@tensor_method
def type_as(input, other):
    return to(input, _other(other, "type_as").dtype)


for _name in __all__:
    globals()[_name] = tensor_input(globals()[_name])
