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

``em.cuda.FloatTensor`` and the other ``em.cuda`` types are the same for CUDA tensors
(on the current CUDA device unless ``device=`` names another).
"""
from __future__ import annotations

import numbers

from ember._C import core as _core
from ember._tensor import Size

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]

class _LegacyTensorType(type):
    """The metaclass: instances of em.FloatTensor are the float32 CPU tensors (of
    em.cuda.FloatTensor the float32 CUDA tensors)."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, _core.TensorBase) and obj.dtype == cls.dtype
                and obj.device.type == cls.device_type)

    def __call__(cls, *args, device=None):
        return _construct(cls, args, device)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _construct(cls, args, device):
    from ember.ops import creation
    name, dtype, kind = f"{cls.__module__}.{cls.__name__}", cls.dtype, cls.device_type
    if device is None:
        device = kind
    elif _core.as_device(device).type != kind:
        raise RuntimeError(f"{name}: legacy constructor expects device type: {kind} but "
                           f"device type: {_core.as_device(device).type} was passed (use "
                           f"ember.tensor(data, dtype=ember.{dtype.name}, device=...))")
    if not args:
        return creation.zeros(0, dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], _core.TensorBase):
        t = args[0]
        if t.dtype != dtype or t.device.type != kind:
            raise TypeError(f"{name}: expected a {kind.upper()} tensor of dtype"
                            f" ember.{dtype.name} (got {t.dtype!r} on "
                            f"{t.device}); convert with tensor.to(ember.{dtype.name})")
        return t.detach() if t.requires_grad else t
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return creation.zeros(*args, dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        return creation.zeros(*args[0], dtype=dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], (numbers.Number, str, bytes)):
        return creation.tensor(args[0], dtype=dtype, device=device)
    raise TypeError(f"{name}: expected sizes (ints), a sequence of data or a tensor, got "
                    f"({', '.join(type(a).__name__ for a in args)})")


def make(name, dtype_name, device_type="cpu"):
    """The legacy type `name` of `dtype_name` tensors on `device_type` (cpu or cuda)."""
    module = "ember" if device_type == "cpu" else f"ember.{device_type}"
    doc = (f"Legacy constructor of {dtype_name} {device_type} tensors (torch."
           f"{'' if device_type == 'cpu' else device_type + '.'}{name}); see ember._legacy "
           f"for the rules. Prefer ember.tensor(data, dtype=ember.{dtype_name}) and "
           f"ember.zeros(sizes, dtype=ember.{dtype_name}).")
    dt = _core._dtype_by_name(dtype_name)
    return _LegacyTensorType(name, (), {"dtype": dt, "_legacy_dtype": dt, "__doc__": doc,
                                        "device_type": device_type, "__module__": module})


FloatTensor = make("FloatTensor", "float32")
DoubleTensor = make("DoubleTensor", "float64")
HalfTensor = make("HalfTensor", "float16")
BFloat16Tensor = make("BFloat16Tensor", "bfloat16")
LongTensor = make("LongTensor", "int64")
IntTensor = make("IntTensor", "int32")
ShortTensor = make("ShortTensor", "int16")
CharTensor = make("CharTensor", "int8")
ByteTensor = make("ByteTensor", "uint8")
BoolTensor = make("BoolTensor", "bool")
