"""dtypes: the fifteen element types (DType), their promotion table and the default
float dtype. complex64 / complex128 are stored interleaved (re, im), as C99 and NumPy;
bfloat16 (number 11, after the others so no number moved) as the top half of a float32;
uint16 / uint32 / uint64 (12-14) after it for the same reason."""

cdef enum:
    BOOL = 0
    UINT8 = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    COMPLEX64 = 9
    COMPLEX128 = 10
    BFLOAT16 = 11
    UINT16 = 12
    UINT32 = 13
    UINT64 = 14
    NDTYPES = 15

cdef enum:
    KIND_BOOL = 0
    KIND_INT = 1
    KIND_FLOAT = 2
    KIND_COMPLEX = 3

cdef int KIND[NDTYPES]
cdef int ITEMSIZE[NDTYPES]
cdef int PROMOTE[NDTYPES][NDTYPES]
cdef int REAL_OF[NDTYPES]        # a complex dtype's parts (complex64 -> float32); else itself
cdef int DEFAULT_FLOAT = FLOAT32


cdef inline int complex_of(int dtype) noexcept:
    """The complex dtype over real dtype `dtype` (float16 -> complex64, as ember has no
    complex32); of a bool or integer dtype, the complex of the default float."""
    if KIND[dtype] == KIND_COMPLEX:
        return dtype
    if dtype == FLOAT64 or (KIND[dtype] != KIND_FLOAT and DEFAULT_FLOAT == FLOAT64):
        return COMPLEX128
    return COMPLEX64

cdef class DType:
    """An element type: ember.float32, ember.int64, ... (singletons; compare with ==)."""

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    @property
    def is_floating_point(self):
        return self.kind == "float"

    @property
    def is_complex(self):
        return self.kind == "complex"

    def to_real(self):
        """The dtype of a complex dtype's parts (complex64 -> float32); a real dtype
        itself (PyTorch's dtype.to_real)."""
        return DTYPE_LIST[REAL_OF[self.num]]

    def to_complex(self):
        """The complex dtype over this float dtype (float64 -> complex128; float16 ->
        complex64: ember has no complex32)."""
        if KIND[self.num] not in (KIND_FLOAT, KIND_COMPLEX):
            raise TypeError(f"to_complex: expected a floating point dtype, got {self!r}")
        return DTYPE_LIST[complex_of(self.num)]

    @property
    def bits(self):
        return self.itemsize * 8


cdef list DTYPE_LIST = []
_DTYPE_NAMES = {}

cdef DType dtype_object(int num):
    return <DType>DTYPE_LIST[num]


def _dtype_by_name(str name):
    return _DTYPE_NAMES[name]


cdef _make_dtypes():
    from ember.ops.render import DTYPES
    kinds = {"bool": KIND_BOOL, "int": KIND_INT, "float": KIND_FLOAT, "complex": KIND_COMPLEX}
    cdef DType d
    for i, info in enumerate(DTYPES):
        d = DType.__new__(DType)
        d.num = i
        d.name = info.name
        d.itemsize = info.itemsize
        d.kind = info.kind
        d.is_signed = info.signed
        DTYPE_LIST.append(d)
        _DTYPE_NAMES[info.name] = d
        KIND[i] = kinds[info.kind]
        ITEMSIZE[i] = info.itemsize
    for i, info in enumerate(DTYPES):
        REAL_OF[i] = _DTYPE_NAMES[info.real].num if info.real else i
    # Array API promotion; mixed int/float takes the float (PyTorch's choice where
    # the standard leaves it open); bool joins any other dtype as that dtype.
    order_int = {UINT8: (8, False), INT8: (8, True), INT16: (16, True), INT32: (32, True),
                 INT64: (64, True), UINT16: (16, False), UINT32: (32, False),
                 UINT64: (64, False)}
    cdef int a, b
    for a in range(NDTYPES):
        for b in range(NDTYPES):
            if a == b:
                r = a
            elif a == BOOL or b == BOOL:
                r = b if a == BOOL else a
            elif KIND[a] == KIND_COMPLEX or KIND[b] == KIND_COMPLEX:
                # the complex dtype whose parts hold both (complex64 + float64 =
                # complex128); an integer joins a complex dtype as that dtype
                pa = ITEMSIZE[REAL_OF[a]] if KIND[a] >= KIND_FLOAT else 0
                pb = ITEMSIZE[REAL_OF[b]] if KIND[b] >= KIND_FLOAT else 0
                r = COMPLEX128 if max(pa, pb) == 8 else COMPLEX64
            elif KIND[a] == KIND_FLOAT and KIND[b] == KIND_FLOAT:
                # float16 and bfloat16 hold each other's values in neither: float32
                # (PyTorch's table)
                r = FLOAT32 if ITEMSIZE[a] == ITEMSIZE[b] else (
                    a if ITEMSIZE[a] > ITEMSIZE[b] else b)
            elif KIND[a] == KIND_FLOAT or KIND[b] == KIND_FLOAT:
                r = a if KIND[a] == KIND_FLOAT else b
            else:
                (ba, sa), (bb, sb) = order_int[a], order_int[b]
                if sa == sb:
                    r = a if ba >= bb else b
                else:
                    # the standard's lattice: a signed type twice the unsigned one's
                    # width; uint64 with a signed type is left open by the standard
                    # (PyTorch refuses it): float64, as NumPy
                    bits = max(ba if sa else 2 * ba, bb if sb else 2 * bb)
                    r = FLOAT64 if bits > 64 else {8: INT8, 16: INT16, 32: INT32,
                                                   64: INT64}[bits]
            PROMOTE[a][b] = r

_make_dtypes()


def promote_types(DType a not None, DType b not None):
    """The dtype both a and b are converted to in a binary op (Array API rules)."""
    return DTYPE_LIST[PROMOTE[a.num][b.num]]


def get_default_dtype():
    return DTYPE_LIST[DEFAULT_FLOAT]


def set_default_dtype(DType d not None):
    """Set the dtype of Python floats and of int -> float promotion (float32 by default)."""
    global DEFAULT_FLOAT
    if KIND[d.num] != KIND_FLOAT:
        raise TypeError(f"set_default_dtype: expected a floating point dtype, got {d!r}")
    DEFAULT_FLOAT = d.num


cdef int as_dtype_num(object d, str op) except -1:
    if isinstance(d, DType):
        return (<DType>d).num
    resolved = _resolve_dtype(d)
    if resolved is None:
        raise TypeError(f"{op}: {d!r} is not an ember dtype")
    return (<DType>resolved).num


def _resolve_dtype(d):
    """ember dtype for an ember dtype, a name ('float32'), a Python type or a NumPy dtype."""
    if isinstance(d, DType):
        return d
    if d is bool:
        return DTYPE_LIST[BOOL]
    if d is int:
        return DTYPE_LIST[INT64]
    if d is float:
        return DTYPE_LIST[DEFAULT_FLOAT]
    if d is complex:
        return DTYPE_LIST[complex_of(DEFAULT_FLOAT)]
    name = getattr(d, "name", None) if not isinstance(d, str) else d
    if name is None:
        name = getattr(getattr(d, "dtype", None), "name", None)  # numpy scalar types
    if isinstance(name, str):
        name = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                "int": "int32", "short": "int16", "bool_": "bool", "cfloat": "complex64",
                "cdouble": "complex128", "complex": "complex64"}.get(name, name)
        return _DTYPE_NAMES.get(name)
    return None
