"""Interop: NumPy (zero copy both ways on the CPU), DLPack, the buffer protocol and
pickling. NumPy is optional: it is imported only by the functions that need it.

* ``ember.from_numpy(a)`` / ``t.numpy()`` / ``numpy.asarray(t)`` share memory.
* ``memoryview(t)`` works for CPU tensors (TensorBase implements the buffer protocol).
* bfloat16: NumPy has no such dtype, so ``t.numpy()`` of a bfloat16 tensor gives an
  array of ``ml_dtypes.bfloat16`` (sharing memory) when the ml_dtypes package is
  installed, and raises a TypeError naming it otherwise (``t.float().numpy()`` or
  ``t.view(ember.int16).numpy()``, the bits, always work); ``from_numpy`` takes
  ml_dtypes.bfloat16 arrays. The buffer protocol (memoryview) shows a bfloat16
  tensor's bits as uint16 ("H"), and ``numpy.asarray(t)``, which reads the buffer
  before anything else, sees those bits: call ``t.numpy()``.
* ``ember.from_dlpack(x)`` takes any DLPack producer (NumPy, PyTorch, CuPy, JAX, ember)
  without copying; ``t.__dlpack__()`` lets them take ember tensors. The producer's
  deleter runs once, when the last tensor viewing the memory is freed.
* ``pickle`` copies the bytes: a tensor whose elements fill their memory span (any
  permutation of a contiguous layout) keeps its strides; other views are saved as
  compact contiguous copies. dtype, shape, device and requires_grad round-trip.
"""
from __future__ import annotations

from ember._C import core as _core, dlpack as _dl
from ember._registry import tensor_method

__all__ = ["from_numpy", "from_dlpack"]

_NP_TO_EMBER = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16",
                "int32": "int32", "int64": "int64", "float16": "float16",
                "float32": "float32", "float64": "float64", "complex64": "complex64",
                "complex128": "complex128", "bfloat16": "bfloat16",
                "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}


def _ml_bfloat16(op):
    """ml_dtypes.bfloat16, NumPy's bfloat16 dtype, or a TypeError naming the remedy."""
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(f"{op}: NumPy has no bfloat16 dtype; install ml_dtypes (pip install "
                        f"ml_dtypes) for bfloat16 arrays, or convert first: t.float().numpy() "
                        f"(the values) or t.view(ember.int16).numpy() (the bits)") from None
    return ml_dtypes.bfloat16


def _wrap_memory(ptr, dtype, shape, strides, owner, device, op):
    """A tensor viewing memory at `ptr` (element strides; None = row-major) that
    `owner` keeps alive. The storage spans exactly the elements the view touches."""
    if strides is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= n
        strides = strides[::-1]
    if len(shape) > 16:
        raise ValueError(f"{op}: {len(shape)} dimensions; ember supports at most 16")
    empty = any(n == 0 for n in shape)
    # the storage starts at the lowest address the view touches
    low = 0 if empty else sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = 0 if empty else sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    nelem = 0 if empty else high - low + 1
    storage = _core.storage_from_pointer(ptr + low * dtype.itemsize, nelem * dtype.itemsize,
                                         owner, device)
    return _core.as_strided_from(storage, dtype, tuple(shape), tuple(strides), -low)


# NumPy ---------------------------------------------------------------------------------

def from_numpy(ndarray):
    """A tensor sharing ndarray's memory (writes are seen by both)."""
    iface = getattr(ndarray, "__array_interface__", None)
    if iface is None:
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    import numpy as np
    if isinstance(ndarray, np.generic):
        # a NumPy scalar (what arithmetic on 0-d arrays returns) is immutable and its
        # __array_interface__ points into a temporary array, which sharing would read
        # after it is freed: the tensor owns a 0-d copy instead
        ndarray = np.array(ndarray)
        iface = ndarray.__array_interface__
    name = _NP_TO_EMBER.get(ndarray.dtype.name)
    if name is None:
        raise TypeError(f"from_numpy: numpy dtype {ndarray.dtype} is not supported; ember "
                        f"supports {', '.join(_NP_TO_EMBER)}")
    if not ndarray.dtype.isnative:
        raise TypeError(f"from_numpy: non-native byte order {ndarray.dtype.str} is not supported")
    dtype = _core._dtype_by_name(name)
    item = dtype.itemsize
    if any(s % item for s in ndarray.strides):
        raise ValueError(f"from_numpy: strides {ndarray.strides} are not multiples of the "
                         f"element size {item}")
    strides = [s // item for s in ndarray.strides]
    return _wrap_memory(iface["data"][0], dtype, tuple(ndarray.shape), strides, ndarray,
                        None, "from_numpy")


@tensor_method
def numpy(self, *, force=False):
    """The tensor as a NumPy array sharing its memory (CPU tensors)."""
    import numpy as np
    if self.device.type != "cpu":
        if not force:
            raise TypeError(f"numpy: tensor is on {self.device}; call .cpu() first (or "
                            f"numpy(force=True))")
        self = self.cpu()
    if self.requires_grad and not force:
        raise RuntimeError("numpy: can't call numpy() on a tensor that requires grad; use "
                           "tensor.detach().numpy()")
    if self.dtype.name == "bfloat16":   # NumPy would read the buffer's uint16 bits
        return _array(self.detach())
    return np.asarray(self)


def _array(self, dtype=None, copy=None):
    """numpy.asarray(t): shares memory unless a copy is asked for or needed."""
    import numpy as np
    if self.device.type != "cpu":
        if copy is False:
            raise ValueError(f"__array__: tensor is on {self.device}; a copy is needed")
        self = self.cpu()
    if self.dtype.name == "bfloat16":   # the uint16 bits of the buffer, as ml_dtypes'
        a = np.asarray(memoryview(self.detach())).view(_ml_bfloat16("numpy"))
    else:
        a = np.asarray(memoryview(self.detach()))
    if dtype is not None and np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError(f"__array__: converting {self.dtype!r} to {np.dtype(dtype)} "
                             f"needs a copy")
        return a.astype(dtype)
    return a.copy() if copy else a


def _install_dunders(cls):
    cls.__array__ = _array


# DLPack -----------------------------------------------------------------------------------

_DL_DEVICE = {"cpu": 1, "cuda": 2, "opencl": 4}
_KDL_CPU = 1


@tensor_method(names=("__dlpack_device__",))
def _dlpack_device(self):
    """(DLPack device type, index): (1, 0) for the CPU, (2, i) for cuda:i."""
    d = self.device
    return (_DL_DEVICE[d.type], max(d.index, 0))


@tensor_method(names=("__dlpack__",))
def _export_dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Export as a DLPack capsule (the Python Array API's protocol). Zero copy unless
    copy=True or dl_device asks for another device (only the CPU is supported)."""
    if self.requires_grad:
        raise RuntimeError("__dlpack__: can't export a tensor that requires grad; use "
                           "tensor.detach()")
    src, copied = self, False
    here = _dlpack_device(self)
    if dl_device is not None and tuple(dl_device) != here:
        if tuple(dl_device) != (_KDL_CPU, 0):
            raise BufferError(f"__dlpack__: can't export a tensor on {self.device} to DLPack "
                              f"device {tuple(dl_device)}")
        if copy is False:
            raise BufferError(f"__dlpack__: the tensor is on {self.device}; exporting it to the "
                              f"CPU needs a copy but copy=False")
        src, copied = self.cpu(), True
    if stream is not None and src.device.type == "cpu":
        raise ValueError(f"__dlpack__: stream must be None for CPU tensors, got {stream!r}")
    if src.device.type == "opencl":
        raise BufferError("__dlpack__: opencl tensors have no raw device pointer to export; "
                          "call .cpu() first")
    if copy and not copied:
        src, copied = _core.contiguous_copy(src), True
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return _dl.to_capsule(src, versioned, copied)


def _is_capsule(x):
    return type(x).__name__ == "PyCapsule"


def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor viewing the memory of any DLPack producer (an object with __dlpack__,
    or a raw 'dltensor' capsule) without copying. copy=True always copies; copy=False
    raises when a copy is needed (read-only memory, another device)."""
    if isinstance(x, _core.TensorBase):
        t = x.detach()
    else:
        if _is_capsule(x):
            capsule = x
        elif hasattr(x, "__dlpack__"):
            try:
                capsule = x.__dlpack__(max_version=(1, 0))
            except TypeError:        # a producer from before DLPack 1.0
                capsule = x.__dlpack__()
        else:
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack "
                            f"capsule, got {type(x).__name__}")
        f = _dl.open_capsule(capsule)
        dtype = _core._dtype_by_name(f["dtype"])
        t = _wrap_memory(f["data"], dtype, f["shape"], f["strides"], f["owner"], f["device"],
                         "from_dlpack")
        if f["read_only"]:
            # ember has no read-only tensors: never hand out writable aliases of
            # memory the producer marked read-only
            if copy is False:
                raise BufferError("from_dlpack: the producer's memory is read-only and ember "
                                  "tensors are writable; a copy is needed but copy=False")
            return _finish_copy(t, device)
    if device is not None and _core.as_device(device) != t.device:
        if copy is False:
            raise BufferError(f"from_dlpack: the data is on {t.device}; moving it to "
                              f"{device} needs a copy but copy=False")
        return t.to(device)
    return _core.contiguous_copy(t) if copy else t


def _finish_copy(t, device):
    t = _core.contiguous_copy(t)
    return t if device is None else t.to(device)


# pickling -----------------------------------------------------------------------------------

def _dense_span(shape, strides):
    """True when the elements fill their memory span exactly once (a permutation of a
    contiguous layout), so the span's bytes and the strides describe the tensor."""
    dims = sorted((s, n) for n, s in zip(shape, strides) if n != 1)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


@tensor_method(names=("__reduce_ex__",))
def _reduce_ex(self, protocol):
    """Pickle: (rebuild function, (bytes, dtype name, shape, strides, requires_grad,
    device)). Out-of-band buffers with protocol 5."""
    device = str(self.device)
    t = self.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    _, dtype, shape, strides, offset = t._layout()
    if t.numel() and _dense_span(shape, strides):
        flat = t._view((t.numel(),), (1,), offset)     # the span, in memory order
    else:
        t = _core.contiguous_copy(t)
        strides = t.stride()
        flat = t._view((t.numel(),), (1,), 0)
    if protocol >= 5:
        import pickle
        data = pickle.PickleBuffer(flat)
    else:
        data = memoryview(flat).tobytes()
    return (_rebuild_tensor, (data, dtype.name, tuple(shape), tuple(strides),
                              bool(self.requires_grad), device))


def _rebuild_tensor(data, dtype_name, shape, strides, requires_grad, device):
    """Unpickle: a new tensor holding a copy of the pickled bytes."""
    dtype = _core._dtype_by_name(dtype_name)
    raw = memoryview(data).cast("B")
    if len(raw) % dtype.itemsize:
        raise ValueError(f"unpickling a tensor: {len(raw)} bytes is not a whole number of "
                         f"{dtype_name} elements")
    flat = _core.empty((len(raw) // dtype.itemsize,), dtype)
    _core._fill_from_bytes(flat, raw)
    t = _core.as_strided_from(flat._layout()[0], dtype, tuple(shape), tuple(strides), 0)
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t
