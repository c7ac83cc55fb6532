"""Copies and casts (copy_into, cast_copy, copy_, fill_), the checks of in-place writes,
elements out to Python (item, tolist) and raw bytes in (_fill_from_bytes)."""

cdef TensorBase cast_copy(TensorBase src, int dtype):
    """A new contiguous tensor holding src converted to dtype."""
    cdef TensorBase o = new_tensor(src._ndim, src._shape, dtype, src._storage.device)
    copy_into(o, src)
    return o


cdef TensorBase cast_like(TensorBase src, int dtype):
    """cast_copy keeping a channels_last(_3d) src's layout (preserve_format), for the
    operands an elementwise op promotes and for .to(dtype): a row-major copy of an NHWC
    tensor is a transpose, and so would be every op mixing it with NHWC operands."""
    cdef TensorBase o
    if (src._ndim == 4 or src._ndim == 5) and not src.contiguous_c() and is_channels_last(src):
        o = new_channels_last(src._ndim, src._shape, dtype, src._storage.device)
        copy_into(o, src)
        return o
    return cast_copy(src, dtype)


cpdef TensorBase copy_into(TensorBase dst, TensorBase src):
    """dst[...] = src, broadcasting src and converting dtype; returns dst."""
    if dst is None or src is None:
        raise TypeError(f"copy_: expected tensors, got {'None' if src is None else src!r} "
                        f"as the source" if src is None else "copy_: the destination is None")
    cdef int nd = dst._ndim, d, j
    if src._ndim > nd:
        raise ValueError(f"copy_: cannot copy a tensor of shape {tuple(src.shape)} into one "
                         f"of shape {tuple(dst.shape)}")
    for d in range(src._ndim):
        j = nd - src._ndim + d
        if src._shape[d] != dst._shape[j] and src._shape[d] != 1:
            raise ValueError(f"copy_: shape {tuple(src.shape)} cannot be broadcast to "
                             f"{tuple(dst.shape)}")
    if KIND[src._dtype] == KIND_COMPLEX and KIND[dst._dtype] not in (KIND_COMPLEX, KIND_BOOL):
        warn_complex_to_real()
    if dst._storage.device.type_id != 0 or src._storage.device.type_id != 0:
        return _device_copy(dst, src)
    if src._storage is dst._storage and not same_layout(src, dst):
        src = cast_copy(src, src._dtype)
    cdef char *ptrs[2]
    cdef int64_t strides[2 * MAXD]
    ptrs[0] = dst.ptr()
    ptrs[1] = src.ptr()
    for d in range(nd):
        strides[d] = dst._strides[d] * dst._itemsize
        j = d - (nd - src._ndim)
        strides[nd + d] = 0 if (j < 0 or src._shape[j] == 1) else src._strides[j] * src._itemsize
    cdef em_loop_fn loop = em_cast_loop(src._dtype, dst._dtype)
    cdef int sizes[2]
    sizes[0] = dst._itemsize
    sizes[1] = src._itemsize
    if dst.numel_c() >= NBIG:
        with nogil:
            em_iterate_sized(loop, 2, ptrs, nd, dst._shape, strides, sizes)
    else:
        em_iterate_sized(loop, 2, ptrs, nd, dst._shape, strides, sizes)
    return dst


cdef warn_complex_to_real():
    """PyTorch's warning where a complex value is converted to a real dtype (the
    imaginary part is dropped: .to(float32), .float(), copy_ into a real tensor)."""
    import warnings
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                  stacklevel=2)


cdef TensorBase _device_copy(TensorBase dst, TensorBase src):
    cdef Device dd = dst._storage.device, sd = src._storage.device
    if dd.type_id != 0:
        backend_for(dd).copy(dst, src)
    else:
        backend_for(sd).copy(dst, src)
    return dst


cdef int check_write(TensorBase x, str op, bint overlap=True) except -1:
    """The checks of a tensor that an op writes into in place (in-place methods, out=,
    copy_, the indexing writes), on every device; all of them call this.
    A leaf that requires grad can't be written while grad mode is on (PyTorch's rule).
    And no two of its elements may share a memory location: the op would update it
    once per alias (sigmoid applied three times). As PyTorch's has_internal_overlap,
    this refuses the case that is certain and cheap to decide, a zero stride on a dim
    of size > 1 (expand, as_strided); other self-overlapping strides, such as
    as_strided((3, 2), (1, 1)), are not looked for (PyTorch: "too hard"). Writes that
    aliases can't harm pass overlap=False: fill_ stores one value (PyTorch allows it)."""
    cdef int d
    if not em_grad_off and x._requires_grad and x._grad_fn is None:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad is being used in an "
                           f"in-place operation; wrap it in ember.no_grad() or use .detach()")
    if overlap and x.numel_c():
        for d in range(x._ndim):
            if x._strides[d] == 0 and x._shape[d] > 1:
                raise RuntimeError(
                    f"{op}: unsupported operation: more than one element of the written-to "
                    f"tensor (shape {shape_str(x._ndim, x._shape)}, strides "
                    f"{shape_str(x._ndim, x._strides)}) refers to a single memory location. "
                    f"Please clone() the tensor before performing the operation.")
    return 0


def check_inplace(TensorBase x not None, str op, bint overlap=True):
    """check_write for the ops written in Python."""
    check_write(x, op, overlap)


def copy_(TensorBase dst not None, src):
    """In-place copy with broadcasting and dtype conversion; bumps dst's version."""
    if not isinstance(src, TensorBase):   # PyTorch: src must be a Tensor
        raise TypeError(f"copy_: src must be a Tensor, got {type(src).__name__}")
    cdef TensorBase source = src
    check_write(dst, "copy_")
    copy_into(dst, source)
    dst._storage.version += 1
    if not em_grad_off and RECORDER is not None and (dst._requires_grad or source._requires_grad):
        RECORDER("copy_", (dst, source), dst, {"inplace": True})
    return dst


def astype(TensorBase x not None, dtype, bint copy=True, bint preserve=False):
    """x converted to dtype (a new contiguous tensor, or with preserve one in a
    channels_last x's layout; x itself if the dtype matches and copy is False)."""
    cdef int d = as_dtype_num(dtype, "to")
    if d == x._dtype and not copy:
        return x
    return cast_like(x, d) if preserve else cast_copy(x, d)


def contiguous_copy(TensorBase x not None):
    return cast_copy(x, x._dtype)


def fill_(TensorBase x not None, value):
    """Write one value into every element of x; bumps its version."""
    cdef ScalarSlot slot
    cdef char *ptrs[2]
    cdef int64_t strides[2 * MAXD]
    if isinstance(value, TensorBase):
        if (<TensorBase>value).numel_c() != 1:
            raise ValueError(f"fill_: expected a scalar or a one-element tensor, got a tensor "
                             f"of shape {tuple(value.shape)}")
        value = value.item()
    if scalar_kind(value) < 0:
        raise TypeError(f"fill_: expected a number, got {value!r}")
    check_write(x, "fill_", overlap=False)
    if isinstance(value, complex) and KIND[x._dtype] != KIND_COMPLEX:
        # PyTorch: "value cannot be converted to type float without overflow"
        raise RuntimeError(f"fill_: the complex value {value!r} cannot be converted to "
                           f"{DTYPE_LIST[x._dtype]!r}")
    if KIND[x._dtype] == KIND_INT and isinstance(value, float):
        if not isfinite(value):   # PyTorch: "cannot be converted ... without overflow"
            raise OverflowError(f"fill_: value {value} cannot be converted to "
                                f"{DTYPE_LIST[x._dtype]!r} without overflow")
        value = int(value)
    if x._storage.device.type_id != 0:
        backend_for(x._storage.device).fill(x, value)
        x._storage.version += 1
        if not em_grad_off and RECORDER is not None and x._requires_grad:
            RECORDER("fill_", (x,), x, {"inplace": True})
        return x
    write_scalar(slot.bytes, value, x._dtype, "fill_")
    cdef int64_t n = x.numel_c()
    cdef char *data = x.ptr()
    if x.contiguous_c():
        with nogil:
            em_fill(data, n, slot.bytes, x._itemsize)
        x._storage.version += 1
        if not em_grad_off and RECORDER is not None and x._requires_grad:
            RECORDER("fill_", (x,), x, {"inplace": True})
        return x
    ptrs[0] = x.ptr()
    ptrs[1] = slot.bytes
    for d in range(x._ndim):
        strides[d] = x._strides[d] * x._itemsize
        strides[x._ndim + d] = 0
    cdef em_loop_fn loop = em_cast_loop(x._dtype, x._dtype)
    if x.numel_c() >= NBIG:
        with nogil:
            em_iterate(loop, 2, ptrs, x._ndim, x._shape, strides)
    else:
        em_iterate(loop, 2, ptrs, x._ndim, x._shape, strides)
    x._storage.version += 1
    if not em_grad_off and RECORDER is not None and x._requires_grad:
        RECORDER("fill_", (x,), x, {"inplace": True})
    return x


def item(TensorBase x not None):
    """The one element of x as a Python number."""
    if x.numel_c() != 1:
        raise ValueError(f"item: a tensor with {x.numel_c()} elements cannot be converted "
                         f"to a Python scalar (shape {tuple(x.shape)})")
    if x._storage.device.type_id != 0:
        return backend_for(x._storage.device).item(x)
    return read_scalar(x.ptr(), x._dtype)


def tolist(TensorBase x not None):
    """Nested Python lists of the elements (a scalar for a 0-d tensor)."""
    if x._storage.device.type_id != 0:
        x = backend_for(x._storage.device).to_cpu(x)
    if x._ndim == 0:
        return read_scalar(x.ptr(), x._dtype)
    return _tolist(x.ptr(), x, 0)


cdef list _tolist(char *p, TensorBase x, int d):
    cdef int64_t i, n = x._shape[d], step = x._strides[d] * x._itemsize
    if d == x._ndim - 1:
        return [read_scalar(p + i * step, x._dtype) for i in range(n)]
    return [_tolist(p + i * step, x, d + 1) for i in range(n)]


def _fill_from_bytes(TensorBase t not None, const unsigned char[::1] data):
    """Copy raw bytes into a new contiguous CPU tensor (creation from Python data)."""
    cdef Py_ssize_t n = t.numel_c() * t._itemsize
    if not t.contiguous_c() or t._storage.device.type_id != 0 or data.shape[0] != n:
        raise ValueError(f"_fill_from_bytes: {data.shape[0]} bytes for a tensor of {n} bytes")
    if n:
        memcpy(t.ptr(), &data[0], n)
    return t
