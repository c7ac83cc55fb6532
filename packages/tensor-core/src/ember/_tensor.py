"""ember.Tensor: the C core (ember._C.core.TensorBase) plus the Python-level methods
that topic modules register with ember._registry."""
from __future__ import annotations

import numbers
import operator

from ember._C import core as _core


class Size(_core._SizeBase):
    """A tensor's shape: a tuple of ints (like torch.Size). Indexing is the C base's
    (a slice is a Size, an index an int)."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        try:
            items = tuple(sizes)
        except TypeError:
            raise TypeError(f"Size: expected a sequence of ints, got "
                            f"{type(sizes).__name__} {sizes!r:.60}") from None
        try:
            return super().__new__(cls, [s if type(s) is int else operator.index(s)
                                         for s in items])
        except TypeError:
            raise TypeError(f"Size: expected a sequence of ints, got {items!r:.60}") from None

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


class Tensor(_core.TensorBase):
    """A strided n-d array on one device: a view (storage, dtype, shape, strides,
    offset). Create tensors with ember.tensor, ember.zeros, ember.arange, ..."""

    __module__ = "ember"

    def __init__(self, *args, device=None):
        """The legacy constructor, as torch.Tensor: Tensor() is empty, Tensor(2, 3) and
        Tensor(ember.Size([2, 3])) are tensors of those sizes (uninitialised in PyTorch;
        ember fills them with zeros),
        Tensor(data) copies nested sequences (a tuple is data too) into the default
        float dtype, and Tensor(tensor) shares that tensor's memory. Prefer
        ember.tensor and ember.empty."""
        from ember.ops import creation as _creation
        dtype = _core.get_default_dtype()
        if len(args) == 1 and isinstance(args[0], _core.TensorBase):
            if device is not None:
                raise TypeError("Tensor: Tensor(tensor, device=...) is not supported; use "
                                "ember.tensor(...) or tensor.to(device)")
            src = args[0]
        elif not args:
            src = _creation.empty(0, dtype=dtype, device=device)
        elif (len(args) == 1 and isinstance(args[0], Size)) or all(
                isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            src = _creation.empty(*args, dtype=dtype, device=device).fill_(0)
        elif len(args) == 1 and not isinstance(args[0], (numbers.Number, str, bytes)):
            src = _creation.tensor(args[0], dtype=dtype, device=device)
        else:
            raise TypeError(f"Tensor: expected sizes (ints), a sequence of data or a tensor, "
                            f"got {', '.join(type(a).__name__ for a in args)}")
        self.data = src    # take src's storage and layout

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"bool: the truth value of a tensor with {self.numel()} "
                               f"elements is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self.dtype.kind not in ("int", "bool") or self.numel() != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to "
                            f"an index (got dtype {self.dtype!r}, shape {tuple(self.shape)})")
        return operator.index(self.item())

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return super().__format__(spec)

    def __contains__(self, value):
        return bool((self == value).any())

    def __matmul__(self, other):
        from ember import matmul
        return matmul(self, other)

    def __rmatmul__(self, other):
        from ember import matmul
        return matmul(other, self)

    __array_priority__ = 1000   # NumPy defers binary ops to ember (ndarray + tensor -> tensor)

    def __array_namespace__(self, /, *, api_version=None):
        """ember.array_api, the Array API standard's namespace; api_version (None for
        the newest) must be one it serves, else ValueError."""
        from ember import array_api
        if api_version is not None and api_version not in array_api.SUPPORTED_VERSIONS:
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not one "
                             f"ember.array_api serves ({', '.join(array_api.SUPPORTED_VERSIONS)})")
        return array_api

    def to_device(self, device, /, *, stream=None):
        """The Array API's form of .to(device): this tensor on `device` (itself when
        already there). stream must be None (ember's copies are synchronous)."""
        if stream is not None:
            raise ValueError(f"to_device: stream must be None, got {stream!r}")
        return self.to(device)

    item = _core.item
    tolist = _core.tolist
    fill_ = _core.fill_
    copy_ = _core.copy_

    def zero_(self):
        return _core.fill_(self, 0)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Replaced by ember-autograd when it is installed."""
        raise ModuleNotFoundError("Tensor.backward needs the ember-autograd package: "
                                  "pip install ember-autograd", name="ember.autograd")

    def share_memory_(self):
        """Move this tensor's storage into shared memory, in place (every tensor viewing
        the storage follows); returns self. Provided by ember-mp."""
        return _multiprocessing("share_memory_").share_memory_(self)

    def is_shared(self):
        """True when the storage lives in shared memory (ember.multiprocessing)."""
        return _multiprocessing("is_shared").is_shared(self)

    def type(self, dtype=None):
        if dtype is None:
            return f"ember.{self.dtype.name}"
        return self.to(getattr(dtype, "_legacy_dtype", dtype))   # t.type(em.LongTensor)


_core._set_tensor_type(Tensor)


def _multiprocessing(method):
    """ember.multiprocessing, which implements shared memory (the ember-mp package)."""
    try:
        import ember.multiprocessing as mp
    except ModuleNotFoundError as e:
        if e.name not in ("ember.multiprocessing", "ember"):
            raise
        raise ModuleNotFoundError(f"Tensor.{method} needs the ember-mp package: "
                                  f"pip install ember-mp", name="ember.multiprocessing") from None
    return mp
