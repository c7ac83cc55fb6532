"""Creating tensors: from Python data, filled, ranges, and the *_like family.
(Random creation is in ops/random.py, NumPy/DLPack in _interop.py.)"""
from __future__ import annotations

import builtins as _builtins
import functools
import itertools
import math
import numbers
import struct

from ember import _layout_formats as _fmt
from ember._args import int_arg, shape_arg, sizes_arg, tensor_arg
from ember._C import core as _core
from ember._dtypes import as_dtype, bool as bool_, float64, int64

__all__ = ["tensor", "as_tensor", "asarray", "zeros", "ones", "full", "empty", "arange",
           "linspace", "logspace", "eye", "zeros_like", "ones_like", "full_like",
           "empty_like", "scalar_tensor", "empty_strided"]

_STRUCT = {"bool": "?", "uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
           "float16": "e", "float32": "f", "float64": "d", "complex64": "f",
           "complex128": "d",     # complex: the (re, im) pairs, interleaved
           "uint16": "H", "uint32": "I", "uint64": "Q"}


# zeros(2, 3), zeros((2, 3)), zeros([2, 3]) and zeros(ember.Size) all mean (2, 3)
_shape_arg = shape_arg


def _dtype_arg(dtype):
    return None if dtype is None else as_dtype(dtype)


def empty(*size, dtype=None, device=None, requires_grad=False,
          memory_format=None, **_):
    shape = _shape_arg(size, "empty")
    if memory_format is None or memory_format is _fmt.contiguous_format:
        t = _core.empty(shape, _dtype_arg(dtype), device)
    else:
        fmt = _fmt.as_format(memory_format, "empty")
        if fmt is _fmt.preserve_format:
            raise RuntimeError("empty: preserve memory format is unsupported here; pass "
                               "ember.contiguous_format or ember.channels_last")
        t = _fmt.empty_in_format(shape, fmt, lambda s: _core.empty(s, _dtype_arg(dtype),
                                                                    device))
    return t.requires_grad_() if requires_grad else t


def empty_strided(size, stride, *, dtype=None, device=None):
    return _core.empty_strided(size, stride, _dtype_arg(dtype), device)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` filled with fill_value; the dtype follows the value when not
    given (bool, int64, or the default float)."""
    if isinstance(size, numbers.Integral):
        size = (size,)
    if dtype is None:
        if isinstance(fill_value, _core.TensorBase):
            dtype = fill_value.dtype
        else:
            dtype = _core.weak_result_type(fill_value)
    t = _core.empty(_shape_arg((size,), "full"), as_dtype(dtype), device)
    try:
        t.fill_(fill_value)
    except (OverflowError, TypeError) as e:
        raise type(e)(str(e).replace("fill_:", "full:", 1)) from None
    return t.requires_grad_() if requires_grad else t


def zeros(*size, dtype=None, device=None, requires_grad=False, **_):
    t = _core.empty(_shape_arg(size, "zeros"), _dtype_arg(dtype), device).fill_(0)
    return t.requires_grad_() if requires_grad else t


def ones(*size, dtype=None, device=None, requires_grad=False, **_):
    t = _core.empty(_shape_arg(size, "ones"), _dtype_arg(dtype), device).fill_(1)
    return t.requires_grad_() if requires_grad else t


def _like(input, dtype, device, op="empty_like"):
    tensor_arg(input, op)
    return (input.shape, input.dtype if dtype is None else as_dtype(dtype),
            input.device if device is None else device)


def empty_like(input, *, dtype=None, device=None, requires_grad=False,
               memory_format=None, **_):
    """An uninitialised tensor of input's shape (dtype, device); memory_format: the
    default preserve_format keeps a channels_last input's layout."""
    shape, dtype, device = _like(input, dtype, device)
    fmt = _fmt.like_format(input, memory_format or _fmt.preserve_format, "empty_like")
    if fmt is _fmt.contiguous_format:
        t = _core.empty(shape, dtype, device)
    else:
        t = _fmt.empty_in_format(shape, fmt, lambda s: _core.empty(s, dtype, device))
    return t.requires_grad_() if requires_grad else t


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               **_):
    _like(input, dtype, device, "zeros_like")
    return empty_like(input, dtype=dtype, device=device, requires_grad=False,
                      memory_format=memory_format).fill_(0).requires_grad_(requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              **_):
    _like(input, dtype, device, "ones_like")
    return empty_like(input, dtype=dtype, device=device, memory_format=memory_format) \
        .fill_(1).requires_grad_(requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, **_):
    _like(input, dtype, device, "full_like")
    return empty_like(input, dtype=dtype, device=device, memory_format=memory_format) \
        .fill_(fill_value).requires_grad_(requires_grad)


def _rectangular(data):
    """(shape, flat list, element types) of nested lists and tuples of plain Python
    scalars with one length per level, found level by level at C speed; None for
    anything else (ragged, NumPy scalars, tensors: _flatten handles those)."""
    shape, level = [], [data]
    while True:
        if not set(map(type, level)) <= {list, tuple}:
            return None
        lengths = set(map(len, level))
        if len(lengths) != 1 or len(shape) == 16:
            return None
        shape.append(lengths.pop())
        level = list(itertools.chain.from_iterable(level))
        kinds = set(map(type, level))
        if kinds <= _PLAIN_NUMBERS:              # all scalars (or none at all)
            return tuple(shape), level, kinds
        if kinds & _PLAIN_NUMBERS:
            return None


def _flatten(data, op, dtypes):
    """(shape, flat list of Python scalars) of nested sequences; ragged input is an error.
    Each element's dtype is added to `dtypes`: a tensor's or NumPy scalar's own, bool,
    int64 or the default float for Python scalars (PyTorch's inference)."""
    if isinstance(data, _core.TensorBase):
        dtypes.add(data.dtype)
        return tuple(data.shape), _flat_list(data.tolist(), data.ndim)
    if _is_numpy_scalar(data):
        data, dtype = data.item(), _core._resolve_dtype(data.dtype)
        if dtype is not None:
            dtypes.add(dtype)
            return (), [data]
    if isinstance(data, numbers.Number):
        if not isinstance(data, numbers.Complex):
            raise TypeError(f"{op}: unsupported element {data!r} of type "
                            f"{type(data).__name__}")
        dtypes.add(_number_dtype(type(data)))
        return (), [data]
    if isinstance(data, (str, bytes, dict, set)):
        raise TypeError(f"{op}: cannot make a tensor from {type(data).__name__} {data!r}")
    try:
        items = list(data)
    except TypeError:
        raise TypeError(f"{op}: cannot make a tensor from {type(data).__name__}") from None
    if not items:
        return (0,), []
    shapes, flats = zip(*(_flatten(x, op, dtypes) for x in items))
    first = shapes[0]
    for i, s in enumerate(shapes):
        if s != first:
            raise ValueError(f"{op}: ragged nested sequence: item 0 has shape {first} but "
                             f"item {i} has shape {s}")
    flat = [v for f in flats for v in f]
    return (len(items),) + first, flat


def _flat_list(nested, ndim):
    for _ in _builtins.range(max(ndim - 1, 0)):
        nested = [v for sub in nested for v in sub]
    return nested if ndim else [nested]


def _is_numpy_scalar(x):
    return type(x).__module__ == "numpy" and hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0


# the fast path's exact types (subclasses such as numpy.float64 take the slow one)
_PLAIN_NUMBERS = {bool, int, float, complex}


def _number_dtype(kind):
    """bool, int64, the default float or the default complex (the complex of the
    default float: complex64, as PyTorch) for a type of Python number."""
    if issubclass(kind, bool):
        return bool_
    if issubclass(kind, numbers.Integral):
        return int64
    if issubclass(kind, numbers.Real):
        return _core.get_default_dtype()
    return _core.get_default_dtype().to_complex()


def _infer_dtype(dtypes):
    """The promotion of the elements' dtypes: [np.int32(1), 2.5] is float32,
    [np.float64(1)] float64, [1, np.float16(2)] float16, as in PyTorch."""
    if not dtypes:
        return _core.get_default_dtype()   # tensor([]) is float, as in PyTorch
    return functools.reduce(_core.promote_types, dtypes)


def _as_ints(flat, kinds, dtype, op):
    bits = dtype.itemsize * 8
    lo, hi = (0, (1 << bits) - 1) if not dtype.is_signed else (-(1 << (bits - 1)),
                                                               (1 << (bits - 1)) - 1)
    if kinds <= {int, bool}:            # the range check at C speed
        for v in (min(flat), max(flat)) if flat else ():
            if not lo <= v <= hi:
                raise OverflowError(f"{op}: value {v} is out of range for {dtype!r}")
        return flat
    out = []
    for v in flat:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{op}: cannot convert {v} to {dtype!r}")
        iv = int(v)
        if not lo <= iv <= hi:
            raise OverflowError(f"{op}: value {v} is out of range for {dtype!r}")
        out.append(iv)
    return out


def _from_python(data, dtype, op):
    fast = _rectangular(data)
    if fast is not None:
        shape, flat, kinds = fast
        dtypes = {_number_dtype(k) for k in kinds}
    else:
        dtypes = set()
        shape, flat = _flatten(data, op, dtypes)
        kinds = set(map(type, flat))
    if len(shape) > 16:
        raise ValueError(f"{op}: {len(shape)} dimensions; ember supports at most 16")
    dtype = _infer_dtype(dtypes) if dtype is None else dtype
    if dtype.kind == "int":
        flat = _as_ints(flat, kinds, dtype, op)
    elif dtype.kind == "bool":
        flat = [bool(v) for v in flat]
    elif dtype.kind == "complex":
        flat = [p for v in flat for p in (complex(v).real, complex(v).imag)]
    elif complex in kinds or (not kinds <= _PLAIN_NUMBERS and any(
            isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real) for v in flat)):
        raise TypeError(f"{op}: cannot store complex numbers in a {dtype!r} tensor (PyTorch: "
                        f"must be real number, not complex)")
    elif not kinds <= {float, int, bool}:       # struct packs these as they are
        flat = [float(v) for v in flat]
    if dtype.name == "bfloat16":   # struct has no bfloat16: float64, rounded by the cast
        return _from_python(flat, float64, op).reshape(shape).to(dtype)
    t = _core.empty(shape, dtype)
    try:
        raw = struct.pack(f"<{len(flat)}{_STRUCT[dtype.name]}", *flat)
    except (OverflowError, struct.error) as e:
        raise OverflowError(f"{op}: a value does not fit in {dtype!r}: {e}") from None
    return _core._fill_from_bytes(t, raw)


def _convert(data, dtype, device, copy, op):
    dtype = _dtype_arg(dtype)
    if isinstance(data, _core.TensorBase):
        t = data
        if dtype is not None and t.dtype is not dtype:
            t, copy = t.to(dtype), False
        if device is not None and t.device != _core.as_device(device):
            t, copy = t.to(device), False
        return t.clone() if copy else t
    if hasattr(data, "__dlpack__") and not hasattr(data, "__array_interface__"):
        from ember._interop import from_dlpack
        return _convert(from_dlpack(data), dtype, device, copy, op)
    if type(data).__module__ == "numpy" and hasattr(data, "dtype"):
        # NumPy arrays of any rank and NumPy scalars keep their dtype, as in PyTorch
        import numpy

        from ember._interop import from_numpy
        return _convert(from_numpy(numpy.asarray(data)), dtype, device, copy, op)
    t = _from_python(data, dtype, op)
    return t if device is None else t.to(device)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (nested sequences, scalars, NumPy arrays,
    other tensors). dtype is inferred when not given: the promotion of the elements'
    dtypes, bool, int64 or the default float (float32) for Python numbers and their
    own for NumPy scalars and tensors ([np.float64(1)] is float64), as in PyTorch."""
    t = _convert(data, dtype, device, True, "tensor")
    if isinstance(data, _core.TensorBase) and t is not data:
        t = t.detach()
    return t.requires_grad_() if requires_grad else t


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory when it already is one (or a NumPy array) of
    the requested dtype and device."""
    return _convert(data, dtype, device, False, "as_tensor")


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """The Array API's asarray: share memory unless copy=True (copy=False forbids
    copying)."""
    t = _convert(obj, dtype, device, bool(copy), "asarray")
    if copy is False and isinstance(obj, _core.TensorBase) and t.data_ptr() != obj.data_ptr():
        raise ValueError("asarray: copy=False but a copy is needed for the requested "
                         "dtype or device")
    return t


def scalar_tensor(s, *, dtype=None, device=None):
    return full((), s, dtype=dtype or _core.get_default_dtype(), device=device)


def _iota(n, device):
    """0, 1, ..., n - 1 as int64, made on `device` (no upload from the host)."""
    dev = _core.as_device(device)
    return _core.backend_for(dev).kernel("iota", "arange", dev, int64)(n, dev)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values start, start + step, ... below end (like range, for floats too)."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, _core.TensorBase) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    for v in vals:
        if not isinstance(v, numbers.Real) or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(f"arange: start, end and step must be finite numbers, got {v!r}")
    if all(isinstance(v, numbers.Integral) for v in vals):
        n = max(0, -((int(start) - int(end)) // int(step)))   # exact: no float rounding
    else:
        n = max(0, math.ceil((end - start) / step))
    if n >= 2 ** 63:
        raise ValueError(f"arange: [{start}, {end}) in steps of {step} has {n} elements, "
                         f"more than an int64 counts")
    if dtype is None:
        dtype = int64 if all(isinstance(v, numbers.Integral) for v in vals) \
            else _core.get_default_dtype()
    dtype = as_dtype(dtype)
    idx = _iota(n, device)
    if dtype.kind == "int" and all(isinstance(v, numbers.Integral) for v in vals):
        r = idx * step + start if (step, start) != (1, 0) else idx
        r = r.to(dtype)
    else:
        r = (idx.to(float64) * float(step) + float(start)).to(dtype)
    return r.requires_grad_() if requires_grad else r


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end, both included."""
    steps = int_arg(steps, "steps", "linspace")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    dtype = _core.get_default_dtype() if dtype is None else as_dtype(dtype)
    start, end = float(start), float(end)
    i = _iota(steps, device).to(float64)
    if steps == 1:
        r = i * 0.0 + start
    else:
        step = (end - start) / (steps - 1)
        # symmetric, as PyTorch: the first half counts up from start, the second
        # half down from end, so both ends are exact
        half = steps // 2
        r = (i * step + start).where(i < half, end - (steps - 1 - i) * step)
    r = r.to(dtype)
    return r.requires_grad_() if requires_grad else r


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None):
    exps = linspace(start, end, steps, dtype=float64)
    return (float(base) ** exps).to(dtype or _core.get_default_dtype())


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The n x m identity matrix."""
    m = n if m is None else m
    n, m = _shape_arg((n, m), "eye")
    # made where it lives: a host copy on the way would double the memory
    t = _core.empty((n, m), _dtype_arg(dtype), device).fill_(0)
    if n and m:
        t._view((min(n, m),), (m + 1,), 0).fill_(1)
    return t.requires_grad_() if requires_grad else t


# Tensor.new_*: same dtype and device as self unless given --------------------------
from ember._registry import tensor_method  # noqa: E402


def _new_kw(self, dtype, device):
    return {"dtype": self.dtype if dtype is None else dtype,
            "device": self.device if device is None else device}


@tensor_method
def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(*size, requires_grad=requires_grad, **_new_kw(self, dtype, device))


@tensor_method
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(*size, requires_grad=requires_grad, **_new_kw(self, dtype, device))


@tensor_method
def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(*size, requires_grad=requires_grad, **_new_kw(self, dtype, device))


@tensor_method
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, requires_grad=requires_grad, **_new_kw(self, dtype, device))


@tensor_method
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, requires_grad=requires_grad, **_new_kw(self, dtype, device))


@tensor_method
def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of the given size and stride, with self's dtype and
    device unless given (torch.Tensor.new_empty_strided)."""
    r = empty_strided(size, stride, **_new_kw(self, dtype, device))
    return r.requires_grad_() if requires_grad else r


def is_tensor(obj):
    return isinstance(obj, _core.TensorBase)


def numel(input):
    tensor_arg(input, "numel")
    return input.numel()


def is_floating_point(input):
    tensor_arg(input, "is_floating_point")
    return input.is_floating_point()


__all__ += ["is_tensor", "numel", "is_floating_point"]


# predicates PyTorch programs ask of a tensor (issue 18) --------------------------------

@tensor_method
def nelement(self):
    """The number of elements (numel's older name)."""
    return self.numel()


@tensor_method
def get_device(self):
    """The device index: -1 for the CPU (as PyTorch), the ordinal otherwise."""
    d = tensor_arg(self, "get_device").device
    return -1 if d.type == "cpu" else (d.index or 0)


def is_signed(input):
    """Whether input's dtype is signed (floating point and signed integers)."""
    tensor_arg(input, "is_signed")
    return input.dtype.kind == "float" or (input.dtype.kind == "int" and input.dtype.is_signed)


def is_same_size(input, other):
    """Whether input and other have the same shape."""
    tensor_arg(input, "is_same_size")
    tensor_arg(other, "is_same_size", "other")
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    """The truth value of a one-element tensor; a RuntimeError for any other size."""
    tensor_arg(input, "is_nonzero")
    if input.numel() != 1:
        raise RuntimeError(f"is_nonzero: a Tensor with {input.numel()} elements cannot be "
                           f"converted to a Python bool (it needs exactly one)")
    return bool(input.item())


for _f in (is_signed, is_same_size, is_nonzero):
    tensor_method(_f)

__all__ += ["is_signed", "is_same_size", "is_nonzero"]


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """torch.range (deprecated there for arange): start, start + step, ..., up to and
    including end; the default float dtype unless dtype is given."""
    import warnings
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, n, "range") for v, n in ((start, "start"), (end, "end"),
                                                          (step, "step")))
    if step == 0:
        raise ValueError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"range: upper bound and lower bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    warnings.warn("ember.range is deprecated (as torch.range): use ember.arange, which "
                  "excludes end", UserWarning, stacklevel=2)
    n = int(math.floor((end - start) / step + 1e-9)) + 1
    r = arange(n, dtype=float64, device=device) * step + start
    r = r.to(_core.get_default_dtype() if dtype is None else dtype)
    return r.requires_grad_() if requires_grad else r


def _number(v, name, op):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number, got {type(v).__name__} {v!r:.60}")
    if not math.isfinite(v):
        raise ValueError(f"{op}: {name} must be finite, got {v}")
    return v


def detach(input):
    """input.detach() (a tensor sharing input's storage, outside any graph)."""
    return tensor_arg(input, "detach").detach()


def detach_(input):
    return tensor_arg(input, "detach_").detach_()


def fill(input, value):
    """A new tensor of input's shape, dtype and device filled with value."""
    tensor_arg(input, "fill")
    return input.clone().fill_(value)


def fill_(input, value):
    return tensor_arg(input, "fill_").fill_(value)


def zero_(input):
    return tensor_arg(input, "zero_").zero_()


__all__ += ["range", "detach", "detach_", "fill", "fill_", "zero_", "get_device"]


# memory layouts and external memory ---------------------------------------------------

def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose dims lie in memory in the order
    physical_layout (torch.empty_permuted): physical_layout[0] outermost, the last
    innermost, so (0, 2, 3, 1) of an (N, C, H, W) size is channels-last."""
    size = _shape_arg((size,), "empty_permuted")
    if isinstance(physical_layout, numbers.Integral):
        physical_layout = (physical_layout,)
    if not isinstance(physical_layout, (list, tuple)):
        raise TypeError(f"empty_permuted: physical_layout must be a sequence of dims, got "
                        f"{type(physical_layout).__name__}")
    order = sizes_arg(physical_layout, "empty_permuted", "physical_layout")
    if sorted(order) != list(_builtins.range(len(size))):
        raise ValueError(f"empty_permuted: physical_layout {tuple(order)} must be a "
                         f"permutation of the {len(size)} dims of size {tuple(size)}")
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    t = _core.empty(tuple(size[d] for d in order), _dtype_arg(dtype), device)
    t = t.permute(*inverse) if inverse else t
    return t.requires_grad_() if requires_grad else t


class _BufferOwner:
    """Holds a buffer export (PyObject_GetBuffer) open while a tensor views it."""

    obj = None

    def __init__(self, obj, op):
        import ctypes
        self._view = _PyBuffer()
        self._byref = ctypes.byref
        self._release = ctypes.pythonapi.PyBuffer_Release
        try:
            ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(obj), ctypes.byref(self._view),
                                                0)    # PyBUF_SIMPLE
        except (TypeError, BufferError, ValueError):
            raise TypeError(f"{op}: expected an object that implements the buffer protocol, "
                            f"got {type(obj).__name__}") from None
        self.obj = obj

    @property
    def address(self):
        return self._view.buf or 0

    @property
    def nbytes(self):
        return self._view.len

    @property
    def readonly(self):
        return bool(self._view.readonly)

    def __del__(self):
        if self.obj is not None:
            self._release(self._byref(self._view))
            self.obj = None


def _buffer_struct():
    import ctypes

    class Py_buffer(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object),
                    ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                    ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                    ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                    ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                    ("internal", ctypes.c_void_p)]
    ctypes.pythonapi.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.c_void_p,
                                                    ctypes.c_int]
    ctypes.pythonapi.PyBuffer_Release.argtypes = [ctypes.c_void_p]
    return Py_buffer


class _LazyBuffer:
    cls = None

    def __call__(self):
        if _LazyBuffer.cls is None:
            _LazyBuffer.cls = _buffer_struct()
        return _LazyBuffer.cls()


_PyBuffer = _LazyBuffer()
_readonly_warned = [False]


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d CPU tensor sharing the memory of a Python buffer (torch.frombuffer): count
    elements of dtype (-1: all that follow offset) starting `offset` bytes in. Writes
    through the tensor are seen by the buffer; a read-only buffer (bytes) is shared too,
    with PyTorch's warning."""
    import warnings

    from ember._interop import _wrap_memory
    dt = as_dtype(dtype)
    count = int_arg(count, "count", "frombuffer")
    offset = int_arg(offset, "offset", "frombuffer")
    owner = _BufferOwner(buffer, "frombuffer")
    n, item = owner.nbytes, dt.itemsize
    if n <= 0 or count == 0:
        raise ValueError(f"frombuffer: both buffer length ({n}) and count ({count}) must not "
                         f"be 0")
    if not 0 <= offset < n:
        raise ValueError(f"frombuffer: offset ({offset} bytes) must be non-negative and no "
                         f"greater than buffer length ({n} bytes) minus 1")
    if count < 0:
        if (n - offset) % item:
            raise ValueError(f"frombuffer: buffer length ({n - offset} bytes) after offset "
                             f"({offset} bytes) must be a multiple of element size ({item})")
        count = (n - offset) // item
    elif offset + count * item > n:
        raise ValueError(f"frombuffer: requested buffer length ({count} * {item} bytes) after "
                         f"offset ({offset} bytes) must not be greater than actual buffer "
                         f"length ({n} bytes)")
    if owner.readonly and not _readonly_warned[0]:
        _readonly_warned[0] = True
        warnings.warn("frombuffer: the given buffer is not writable, and ember does not "
                      "support non-writable tensors: writes through the tensor change the "
                      "(supposedly read-only) buffer; copy it first to protect its data. "
                      "This warning is shown once.", UserWarning, stacklevel=2)
    t = _wrap_memory(owner.address + offset, dt, (count,), None, owner, None, "frombuffer")
    return t.requires_grad_() if requires_grad else t


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-d tensor of `size` elements memory-mapped from a file (torch.from_file).
    shared=True maps it shared: writes go to the file, which is created or grown to
    size * itemsize bytes; otherwise (False/None) the file is opened read-only and
    mapped copy-on-write, so changes stay in this process, and it must hold
    size * itemsize bytes. device= other than the CPU copies the mapped data there."""
    import ctypes
    import mmap
    import os

    from ember._interop import _wrap_memory
    dt = as_dtype(dtype) if dtype is not None else _core.get_default_dtype()
    size = int_arg(size, "size", "from_file")
    if size < 0:
        raise ValueError(f"from_file: size must be non-negative, got {size}")
    nbytes = size * dt.itemsize
    path = os.fspath(filename)
    flags = os.O_RDWR | os.O_CREAT if shared else os.O_RDONLY
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        mode = "read-write" if shared else "read-only"
        raise RuntimeError(f"from_file: unable to open file <{path}> in {mode} mode: "
                           f"{e.strerror} ({e.errno})") from None
    try:
        have = os.fstat(fd).st_size
        if have < nbytes:
            if not shared:
                raise RuntimeError(f"from_file: file <{path}> size <{have}> is smaller than "
                                   f"the required mapping size <{nbytes}>")
            os.ftruncate(fd, nbytes)
        if nbytes == 0:
            t = _core.empty((0,), dt, None)
        else:
            if shared:
                mm = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED,
                               prot=mmap.PROT_READ | mmap.PROT_WRITE)
            else:
                mm = mmap.mmap(fd, nbytes, flags=mmap.MAP_PRIVATE,
                               prot=mmap.PROT_READ | mmap.PROT_WRITE)
            owner = (ctypes.c_char * nbytes).from_buffer(mm)
            t = _wrap_memory(ctypes.addressof(owner), dt, (size,), None, owner, None,
                             "from_file")
    finally:
        os.close(fd)
    return t if device is None else t.to(device)


__all__ += ["empty_permuted", "frombuffer", "from_file"]
