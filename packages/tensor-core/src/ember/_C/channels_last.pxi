# The channels_last helpers of the NHWC kernel wrappers (conv.pyx, pool.pyx): which
# layout a tensor is in, and new NHWC-stored results. (core/elementwise.pxi has the
# same test for the elementwise results; the kernel modules keep core.pxd unchanged.)

cdef bint is_channels_last(TensorBase t):
    """t (4-d) is dense in channels_last order: (n, c, h, w) stored as (n, h, w, c),
    size-1 dims free."""
    cdef int64_t expected = 1
    cdef int d
    for d in (1, 3, 2, 0):
        if t._shape[d] != 1:
            if t._strides[d] != expected:
                return False
            expected *= t._shape[d]
    return True


cdef bint nhwc(TensorBase t):
    """The NHWC kernels take t: channels_last and not also contiguous."""
    return t._ndim == 4 and not t.contiguous_c() and is_channels_last(t)


cdef TensorBase new_nhwc(int64_t n, int64_t c, int64_t h, int64_t w, int dtype,
                         Device device):
    """A new (n, c, h, w) tensor stored as (n, h, w, c)."""
    cdef int64_t shape[4]
    cdef int64_t strides[4]
    shape[0], shape[1], shape[2], shape[3] = n, h, w, c
    cdef TensorBase base = new_tensor(4, shape, dtype, device)
    shape[0], shape[1], shape[2], shape[3] = n, c, h, w
    strides[0], strides[1], strides[2], strides[3] = h * w * c, 1, w * c, c
    return view_of(base, 4, shape, strides, 0)
