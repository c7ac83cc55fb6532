"""dtypes, promotion (the Array API standard's rules), finfo and iinfo."""
from __future__ import annotations

import builtins
import struct

from ember._args import dtype_arg
from ember._C import core as _core

bool = _core._dtype_by_name("bool")  # noqa: A001 - the Array API name
uint8 = _core._dtype_by_name("uint8")
int8 = _core._dtype_by_name("int8")
int16 = _core._dtype_by_name("int16")
int32 = _core._dtype_by_name("int32")
int64 = _core._dtype_by_name("int64")
float16 = _core._dtype_by_name("float16")
float32 = _core._dtype_by_name("float32")
float64 = _core._dtype_by_name("float64")
complex64 = _core._dtype_by_name("complex64")
complex128 = _core._dtype_by_name("complex128")
bfloat16 = _core._dtype_by_name("bfloat16")
uint16 = _core._dtype_by_name("uint16")
uint32 = _core._dtype_by_name("uint32")
uint64 = _core._dtype_by_name("uint64")
# PyTorch's other spellings
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, float32, float64, complex64,
              complex128, bfloat16, uint16, uint32, uint64)

get_default_dtype = _core.get_default_dtype
set_default_dtype = _core.set_default_dtype


def promote_types(type1, type2):
    """The dtype both dtypes promote to (the Array API's rules)."""
    return _core.promote_types(dtype_arg(type1, "type1", "promote_types"),
                               dtype_arg(type2, "type2", "promote_types"))


def as_dtype(d):
    """An ember dtype from an ember dtype, a name, a Python type or a NumPy dtype."""
    r = _core._resolve_dtype(d)
    if r is None and isinstance(d, type) and d.__module__ == "numpy":
        import numpy  # a NumPy scalar type (numpy.float32): numpy is already imported
        r = _core._resolve_dtype(numpy.dtype(d))
    if r is None:
        raise TypeError(f"{d!r} is not a dtype ember supports "
                        f"({', '.join(x.name for x in ALL_DTYPES)})")
    return r


def result_type(*arrays_and_dtypes):
    """The dtype an op over these tensors / dtypes / Python scalars computes in."""
    args = [a if isinstance(a, (_core.TensorBase, _core.DType, builtins.bool, builtins.int,
                                builtins.float, builtins.complex)) else as_dtype(a)
            for a in arrays_and_dtypes]
    return _core.weak_result_type(*args)


_KIND_ORDER = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def can_cast(from_, to, casting="same_kind"):
    """Whether from_ (a dtype or tensor) converts to `to` under the Array API rules:
    never to a lower kind (bool < int < float < complex: complex -> float, float ->
    int, int -> bool are refused)."""
    src = from_.dtype if isinstance(from_, _core.TensorBase) else as_dtype(from_)
    dst = as_dtype(to)
    if casting == "unsafe":
        return True
    if casting == "safe":
        return promote_types(src, dst) is dst
    return _KIND_ORDER[src.kind] <= _KIND_ORDER[dst.kind]


class finfo:
    """Machine limits of a floating point dtype (like numpy.finfo / torch.finfo); of a
    complex dtype, those of its real part (finfo(complex64) is finfo(float32)'s
    numbers), as NumPy and PyTorch."""

    _TABLE = {
        "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 2.0 ** -24, 1e-3, 3),
        "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 2.0 ** -133, 0.01, 2),
        "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 2.0 ** -149, 1e-6, 6),
        "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 2.0 ** -1074, 1e-15, 15),
    }

    def __init__(self, dtype=None):
        d = get_default_dtype() if dtype is None else as_dtype(
            dtype.dtype if isinstance(dtype, _core.TensorBase) else dtype)
        if d.kind == "complex":
            d = d.to_real()
        if d.kind != "float":
            raise TypeError(f"finfo: {d!r} is not a floating point dtype; use iinfo")
        self.dtype = d
        (self.bits, self.eps, self.max, self.smallest_normal, self.smallest_subnormal,
         self.resolution, self.precision) = self._TABLE[d.name]
        self.min = -self.max
        self.tiny = self.smallest_normal

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype.name})")


class iinfo:
    """Limits of an integer dtype (like numpy.iinfo / torch.iinfo)."""

    def __init__(self, dtype):
        d = as_dtype(dtype.dtype if isinstance(dtype, _core.TensorBase) else dtype)
        if d.kind != "int":
            raise TypeError(f"iinfo: {d!r} is not an integer dtype")
        self.dtype = d
        self.bits = d.itemsize * 8
        if d.is_signed:
            self.min, self.max = -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1
        else:
            self.min, self.max = 0, 2 ** self.bits - 1

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"


def bfloat16_round(x):
    """x (a Python float) rounded to the nearest bfloat16 as ember stores it: through
    float32, then to nearest even on the top 16 bits (NaN stays NaN)."""
    try:
        (u,) = struct.unpack("<I", struct.pack("<f", x))
    except OverflowError:
        return builtins.float("inf") if x > 0 else builtins.float("-inf")
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return x
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", u & 0xFFFFFFFF))[0]


def low_float_below(x, dtype):
    """The largest value of float16 or bfloat16 `dtype` strictly below x (where
    rounding a float32 draw from [low, x) must stay below x)."""
    if dtype.name == "float16":
        return float16_below(x)
    h = bfloat16_round(x)
    if h < x:
        return h
    if h == builtins.float("inf"):
        return 3.3895313892515355e38
    (u,) = struct.unpack("<I", struct.pack("<f", h))
    u = u - 0x10000 if h > 0 else (0x80010000 if h == 0 else u + 0x10000)
    return struct.unpack("<f", struct.pack("<I", u))[0]


def float16_below(x):
    """The largest float16 value strictly below x (where rounding a float32 draw from
    [low, x) to float16 must stay below x)."""
    try:
        h = struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return 65504.0
    if h < x:
        return h
    bits = struct.unpack("<H", struct.pack("<e", h))[0]
    bits = bits - 1 if h > 0 else (0x8001 if h == 0 else bits + 1)
    return struct.unpack("<e", struct.pack("<H", bits))[0]
