# kernels: fft.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU kernels of the FFT family (kernels/cpu/fft.c), for ember.ops.fft; other
backends provide functions of the same names and arguments.

A complex line is a float tensor whose last dim is (re, im) with stride 1. The
transform runs along `dim` (of the complex shape, i.e. not counting the (re, im)
dim); every other dim is a batch dim, read and written in place through its strides
(any layout: nothing is copied but one line at a time into a scratch buffer)."""
from libc.stdint cimport int64_t
from ember._C.core cimport TensorBase, check_bounds

cdef extern from "fft.h" nogil:
    int EM_FFT_MAXDIM
    int em_fft_c2c(int dtype, const void *inp, void *out, int64_t n, int64_t n_in,
                   int64_t s_in, int64_t s_out, int bdims, const int64_t *bshape,
                   const int64_t *bs_in, const int64_t *bs_out, int forward, double scale)
    int em_fft_r2c(int dtype, const void *inp, void *out, int64_t n, int64_t n_in,
                   int64_t s_in, int64_t n_out, int64_t s_out, int bdims,
                   const int64_t *bshape, const int64_t *bs_in, const int64_t *bs_out,
                   double scale)
    int em_fft_c2r(int dtype, const void *inp, void *out, int64_t n, int64_t n_in,
                   int64_t s_in, int64_t s_out, int bdims, const int64_t *bshape,
                   const int64_t *bs_in, const int64_t *bs_out, double scale)
    int em_fft_cache_size()
    int em_fft_cache_capacity()
    void em_fft_cache_set_capacity(int capacity)
    void em_fft_cache_clear()
    const char *em_fft_kernel_name()
    void em_fft_force_generic(int on)

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the thread pool lives in ember._C.core (cpu_api.h)

DEF FLOAT32 = 7
DEF FLOAT64 = 8

include "kernel_checks.pxi"


cdef int _layout(TensorBase x, TensorBase out, int dim, bint cx, bint cout, str op,
                 int64_t *bshape, int64_t *bs_in, int64_t *bs_out) except -1:
    """Checks the operands and fills the batch dims; returns their number."""
    cpu_only(x, op)
    cpu_only(out, op)
    if x._dtype not in (FLOAT32, FLOAT64) or out._dtype != x._dtype:
        raise ValueError(f"{op}: internal error: needs float32/float64 operands of one "
                         f"dtype, got {x.dtype!r} and {out.dtype!r}")
    cdef int nx = x._ndim - cx, no = out._ndim - cout
    if nx != no or dim < 0 or dim >= nx:
        raise ValueError(f"{op}: internal error: bad dims")
    if cx and (x._shape[nx] != 2 or x._strides[nx] != 1):
        raise ValueError(f"{op}: internal error: the input's last dim must be (re, im)")
    if cout and (out._shape[no] != 2 or out._strides[no] != 1):
        raise ValueError(f"{op}: internal error: the output's last dim must be (re, im)")
    check_span(x, x._ndim, x._shape, x._strides, op)
    check_span(out, out._ndim, out._shape, out._strides, op)
    cdef int nb = 0
    for d in range(nx):
        if d == dim:
            continue
        if x._shape[d] != out._shape[d]:
            raise ValueError(f"{op}: internal error: batch shapes differ")
        bshape[nb] = x._shape[d]
        bs_in[nb] = x._strides[d]
        bs_out[nb] = out._strides[d]
        nb += 1
    return nb


def fft_c2c(TensorBase x not None, TensorBase out not None, int dim, bint forward,
            double scale):
    """out = scale * DFT(x) along dim (the sign of the exponent: -1 forward, +1
    backward). x and out are complex ([..., 2]) float32/float64 tensors of any
    strides, of one shape but along dim: x's lines are zero-padded or trimmed to
    n = out.shape[dim]."""
    cdef int64_t bshape[16]
    cdef int64_t bs_in[16]
    cdef int64_t bs_out[16]
    cdef int nb = _layout(x, out, dim, True, True, "fft_c2c", bshape, bs_in, bs_out)
    cdef int64_t n = out._shape[dim], n_in = x._shape[dim]
    if n == 0 or out.numel_c() == 0:
        return out
    cdef int rc, dt = x._dtype == FLOAT64
    cdef int64_t si = x._strides[dim], so = out._strides[dim]
    cdef char *xp = x.ptr()
    cdef char *op = out.ptr()
    with nogil:
        rc = em_fft_c2c(dt, xp, op, n, n_in, si, so, nb, bshape, bs_in, bs_out, forward,
                        scale)
    if rc:
        raise MemoryError(f"fft: out of memory (length {n})")
    return out


def fft_r2c(TensorBase x not None, TensorBase out not None, int dim, int64_t n,
            double scale):
    """out = scale * the forward DFT of the real lines of x along dim, zero-padded or
    trimmed to n; out (complex, [..., 2]) holds entries 0 .. out.shape[dim] - 1, which is
    n // 2 + 1 (onesided) or n (the Hermitian rest filled in)."""
    cdef int64_t bshape[16]
    cdef int64_t bs_in[16]
    cdef int64_t bs_out[16]
    cdef int nb = _layout(x, out, dim, False, True, "fft_r2c", bshape, bs_in, bs_out)
    cdef int64_t n_out = out._shape[dim], n_in = x._shape[dim]
    if n < 1 or n_out > n or n_out < n // 2 + 1 and n_out != 0:
        raise ValueError("fft_r2c: internal error: bad lengths")
    if out.numel_c() == 0:
        return out
    cdef int rc, dt = x._dtype == FLOAT64
    cdef int64_t si = x._strides[dim], so = out._strides[dim]
    cdef char *xp = x.ptr()
    cdef char *op = out.ptr()
    with nogil:
        rc = em_fft_r2c(dt, xp, op, n, n_in, si, n_out, so, nb, bshape, bs_in, bs_out, scale)
    if rc:
        raise MemoryError(f"rfft: out of memory (length {n})")
    return out


def fft_c2r(TensorBase x not None, TensorBase out not None, int dim, double scale):
    """out = scale * the backward DFT along dim of the Hermitian lines whose first
    n // 2 + 1 entries x holds (n = out.shape[dim]; missing entries are zeros, extra
    ones unused; the imaginary parts of entry 0 and, for even n, n // 2 are ignored):
    out is real."""
    cdef int64_t bshape[16]
    cdef int64_t bs_in[16]
    cdef int64_t bs_out[16]
    cdef int nb = _layout(x, out, dim, True, False, "fft_c2r", bshape, bs_in, bs_out)
    cdef int64_t n = out._shape[dim], n_in = x._shape[dim]
    if n == 0 or out.numel_c() == 0:
        return out
    cdef int rc, dt = x._dtype == FLOAT64
    cdef int64_t si = x._strides[dim], so = out._strides[dim]
    cdef char *xp = x.ptr()
    cdef char *op = out.ptr()
    with nogil:
        rc = em_fft_c2r(dt, xp, op, n, n_in, si, so, nb, bshape, bs_in, bs_out, scale)
    if rc:
        raise MemoryError(f"irfft: out of memory (length {n})")
    return out


def plan_cache_size():
    """The number of FFT plans the CPU cache holds now."""
    return em_fft_cache_size()


def plan_cache_capacity():
    return em_fft_cache_capacity()


def set_plan_cache_capacity(int capacity):
    """At most `capacity` plans not in use are kept (0 .. 256)."""
    if capacity < 0:
        raise ValueError(f"fft plan cache: capacity must be >= 0, got {capacity}")
    em_fft_cache_set_capacity(capacity)


def clear_plan_cache():
    em_fft_cache_clear()


def kernel_name():
    """"avx2-fma" or "generic": the butterflies in use."""
    return em_fft_kernel_name().decode()


def force_generic(bint on):
    """Use the generic (non-AVX2) butterflies (for tests)."""
    em_fft_force_generic(on)
