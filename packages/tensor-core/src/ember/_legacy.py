"""PyTorch's legacy typed constructors: em.FloatTensor, em.LongTensor, ...

Each is a class whose instances are ordinary ember.Tensor objects of one dtype on the
CPU, with PyTorch's rules:

* ``FloatTensor()`` is an empty 1-d tensor (0 elements);
* ``FloatTensor(2, 3)`` / ``FloatTensor(em.Size([2, 3]))``: a tensor of those sizes.
  PyTorch leaves it uninitialised; ember fills it with zeros (a defined value costs
  little and printing one never shows garbage);
* ``FloatTensor(data)`` (nested sequences, a NumPy array, ...) copies the data into
  that dtype;
* ``FloatTensor(tensor)`` returns a tensor sharing ``tensor``'s memory when it has
  that dtype, and raises TypeError otherwise (as PyTorch does; use ``tensor.float()``);
* ``device=`` other than the CPU raises, as PyTorch's legacy constructors do;
* ``isinstance(t, em.FloatTensor)`` is true exactly for float32 CPU tensors, and
  ``em.FloatTensor.dtype`` is ``em.float32``.
"""
from __future__ import annotations

import numbers

from ember._C import core as _core
from ember._tensor import Size

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]

class _LegacyTensorType(type):
    """The metaclass: instances of em.FloatTensor are the float32 CPU tensors."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, _core.TensorBase) and obj.dtype == cls.dtype
                and obj.device.type == "cpu")

    def __call__(cls, *args, device=None):
        return _construct(cls, args, device)

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _construct(cls, args, device):
    from ember.ops import creation
    name, dtype = cls.__name__, cls.dtype
    if device is not None and _core.as_device(device).type != "cpu":
        raise RuntimeError(f"{name}: legacy constructor expects device type: cpu but device "
                           f"type: {_core.as_device(device).type} was passed (use "
                           f"ember.tensor(data, dtype=ember.{dtype.name}, device=...))")
    if not args:
        return creation.zeros(0, dtype=dtype)
    if len(args) == 1 and isinstance(args[0], _core.TensorBase):
        t = args[0]
        if t.dtype != dtype or t.device.type != "cpu":
            raise TypeError(f"{name}: expected a CPU tensor of dtype ember.{dtype.name} (got "
                            f"{t.dtype!r} on {t.device}); convert with "
                            f"tensor.to(ember.{dtype.name})")
        return t.detach() if t.requires_grad else t
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return creation.zeros(*args, dtype=dtype)
    if len(args) == 1 and isinstance(args[0], Size):
        return creation.zeros(*args[0], dtype=dtype)
    if len(args) == 1 and not isinstance(args[0], (numbers.Number, str, bytes)):
        return creation.tensor(args[0], dtype=dtype)
    raise TypeError(f"{name}: expected sizes (ints), a sequence of data or a tensor, got "
                    f"({', '.join(type(a).__name__ for a in args)})")


def _make(name, dtype_name):
    doc = (f"Legacy constructor of {dtype_name} CPU tensors (torch.{name}); see "
           f"ember._legacy for the rules. Prefer ember.tensor(data, dtype=ember."
           f"{dtype_name}) and ember.zeros(sizes, dtype=ember.{dtype_name}).")
    dt = _core._dtype_by_name(dtype_name)
    return _LegacyTensorType(name, (), {"dtype": dt, "_legacy_dtype": dt, "__doc__": doc,
                                        "__module__": "ember"})


FloatTensor = _make("FloatTensor", "float32")
DoubleTensor = _make("DoubleTensor", "float64")
HalfTensor = _make("HalfTensor", "float16")
LongTensor = _make("LongTensor", "int64")
IntTensor = _make("IntTensor", "int32")
ShortTensor = _make("ShortTensor", "int16")
CharTensor = _make("CharTensor", "int8")
ByteTensor = _make("ByteTensor", "uint8")
BoolTensor = _make("BoolTensor", "bool")
