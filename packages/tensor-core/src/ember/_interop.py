"""NumPy interop (zero copy both ways on the CPU). NumPy is optional: it is
imported only by the functions that need it."""
from __future__ import annotations

from ember._C import core as _core
from ember._registry import tensor_method

__all__ = ["from_numpy"]

_NP_TO_EMBER = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16",
                "int32": "int32", "int64": "int64", "float16": "float16",
                "float32": "float32", "float64": "float64"}


def from_numpy(ndarray):
    """A tensor sharing ndarray's memory (writes are seen by both)."""
    iface = getattr(ndarray, "__array_interface__", None)
    if iface is None:
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
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
    ptr = iface["data"][0]
    strides = [s // item for s in ndarray.strides]
    # the storage starts at the lowest address the array touches
    low = sum((n - 1) * s for n, s in zip(ndarray.shape, strides) if s < 0 and n > 0)
    high = sum((n - 1) * s for n, s in zip(ndarray.shape, strides) if s > 0 and n > 0)
    nelem = (high - low + 1) if ndarray.size else 0
    base = ptr + low * item
    storage = _core.storage_from_pointer(base, nelem * item, ndarray)
    return _core.as_strided_from(storage, dtype, tuple(ndarray.shape), tuple(strides), -low)


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
    return np.asarray(self)


def _array(self, dtype=None, copy=None):
    import numpy as np
    if self.device.type != "cpu":
        self = self.cpu()
    a = np.asarray(memoryview(self.detach()))
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a.copy() if copy else a


def _install_dunders(cls):
    cls.__array__ = _array
