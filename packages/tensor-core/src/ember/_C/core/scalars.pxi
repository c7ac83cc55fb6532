"""Python scalars as operands: their kind (weak in promotion), and one scalar written to
or read from one element of a dtype."""

cdef union ScalarSlot:
    double f64
    int64_t i64
    char bytes[16]      # a complex128


cdef int scalar_kind(object x):
    """Kind of a Python scalar operand (weak in promotion), or -1 if not one."""
    if isinstance(x, bool):
        return KIND_BOOL
    if isinstance(x, int):
        return KIND_INT
    if isinstance(x, float):
        return KIND_FLOAT
    if isinstance(x, complex):
        return KIND_COMPLEX
    return -1


cdef int write_scalar(char *dst, object value, int dtype, str op) except -1:
    """Store a Python scalar as one element of `dtype`; integers must fit."""
    cdef int k = KIND[dtype]
    cdef double f
    cdef int64_t i
    if isinstance(value, complex) and k != KIND_COMPLEX:
        raise TypeError(f"{op}: cannot store the complex number {value!r} in a "
                        f"{DTYPE_LIST[dtype]!r} operand")
    if k == KIND_COMPLEX:
        z = complex(value)
        if dtype == COMPLEX64:
            (<float *>dst)[0] = <float>z.real
            (<float *>dst)[1] = <float>z.imag
        else:
            (<double *>dst)[0] = z.real
            (<double *>dst)[1] = z.imag
        return 0
    if k == KIND_FLOAT:
        f = value
        if dtype == FLOAT32:
            (<float *>dst)[0] = <float>f
        elif dtype == FLOAT64:
            (<double *>dst)[0] = f
        elif dtype == BFLOAT16:
            em_store_bf16(dst, f)
        else:
            em_store_f16(dst, f)
        return 0
    if k == KIND_BOOL:
        (<uint8_t *>dst)[0] = 1 if value else 0
        return 0
    if isinstance(value, float):
        raise TypeError(f"{op}: cannot store the float {value!r} in a {DTYPE_LIST[dtype]!r} "
                        f"operand")
    lo, hi = INT_RANGES[dtype]
    if not (lo <= value <= hi):
        raise OverflowError(f"{op}: Python integer {value} is out of bounds for "
                            f"{DTYPE_LIST[dtype]!r}")
    if dtype == UINT64:
        (<uint64_t *>dst)[0] = <uint64_t>value
        return 0
    i = value
    if dtype == UINT32:
        (<uint32_t *>dst)[0] = <uint32_t>i
    elif dtype == UINT16:
        (<uint16_t *>dst)[0] = <uint16_t>i
    elif dtype == INT64:
        (<int64_t *>dst)[0] = i
    elif dtype == INT32:
        (<int32_t *>dst)[0] = <int32_t>i
    elif dtype == INT16:
        (<int16_t *>dst)[0] = <int16_t>i
    elif dtype == INT8:
        (<int8_t *>dst)[0] = <int8_t>i
    else:
        (<uint8_t *>dst)[0] = <uint8_t>i
    return 0


INT_RANGES = {UINT8: (0, 255), INT8: (-128, 127), INT16: (-32768, 32767),
              INT32: (-2**31, 2**31 - 1), INT64: (-2**63, 2**63 - 1), UINT16: (0, 2**16 - 1),
              UINT32: (0, 2**32 - 1), UINT64: (0, 2**64 - 1)}


cdef object read_scalar(const char *src, int dtype):
    if dtype == FLOAT32:
        return (<const float *>src)[0]
    if dtype == FLOAT64:
        return (<const double *>src)[0]
    if dtype == FLOAT16:
        return em_load_f16(src)
    if dtype == BFLOAT16:
        return em_load_bf16(src)
    if dtype == COMPLEX64:
        return complex((<const float *>src)[0], (<const float *>src)[1])
    if dtype == COMPLEX128:
        return complex((<const double *>src)[0], (<const double *>src)[1])
    if dtype == BOOL:
        return (<const uint8_t *>src)[0] != 0
    if dtype == INT64:
        return (<const int64_t *>src)[0]
    if dtype == INT32:
        return (<const int32_t *>src)[0]
    if dtype == INT16:
        return (<const int16_t *>src)[0]
    if dtype == INT8:
        return (<const int8_t *>src)[0]
    if dtype == UINT16:
        return (<const uint16_t *>src)[0]
    if dtype == UINT32:
        return (<const uint32_t *>src)[0]
    if dtype == UINT64:
        return (<const uint64_t *>src)[0]
    return (<const uint8_t *>src)[0]
