# kernels: cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The CPU matrix multiply (kernels/cpu/gemm.c) and the thread pool
(kernels/cpu/threads.c), for ember.ops.matmul.

`matmul` here is the whole of ember.matmul's fast path: NumPy's rules for 1-d and
batched operands, broadcasting of the batch dims, dtype promotion, one output
allocation and one call into C (the GIL released for large products). The
operands are passed with their own strides: a transposed or sliced view is read
in place by the packing, never copied first.
"""
from libc.stdint cimport int64_t
from ember._C.core cimport TensorBase, new_tensor

from ember._C import core as _core

cdef extern from "gemm.h" nogil:
    int EM_GEMM_ENOMEM
    int EM_GEMM_EDTYPE
    int em_gemm(int dtype, int64_t m, int64_t n, int64_t k, double alpha,
                const void *a, int64_t rsa, int64_t csa,
                const void *b, int64_t rsb, int64_t csb, double beta,
                void *c, int64_t rsc, int64_t csc)
    int em_gemm_batched(int dtype, int bdims, const int64_t *bshape, const int64_t *bsa,
                        const int64_t *bsb, const int64_t *bsc,
                        int64_t m, int64_t n, int64_t k, double alpha,
                        const void *a, int64_t rsa, int64_t csa,
                        const void *b, int64_t rsb, int64_t csb, double beta,
                        void *c, int64_t rsc, int64_t csc)
    int em_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const void *a, int64_t rsa,
                         int64_t csa, const void *b, int64_t rsb, int64_t csb, float beta,
                         float *c, int64_t rsc, int64_t csc)
    void em_gemm_set_kernel(int which)
    const char *em_gemm_kernel_name()

cdef extern from "threads.h" nogil:
    int EM_MAX_THREADS
    int em_get_num_threads()
    void em_set_num_threads(int n)

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the pool and the GEMM live in ember._C.core (cpu_api.h)

DEF MAXD = 16
DEF NOGIL_MNK = 1 << 15     # release the GIL above this many multiply-adds
DEF FLOAT32 = 7
DEF UINT16 = 12
SIGNED_OF = {12: _core._dtype_by_name("int16"), 13: _core._dtype_by_name("int32"),
             14: _core._dtype_by_name("int64")}

_record = _core.record


# threads ---------------------------------------------------------------------------

def set_num_threads(int n):
    """Threads ember's CPU kernels may use (the caller's thread included)."""
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    em_set_num_threads(n)


def get_num_threads():
    return em_get_num_threads()


def _set_kernel(str name):
    """Force the GEMM micro-kernel: "auto", "generic" (portable C), "avx2", "avx512"
    (float32 kernels; bfloat16 widened to float32 in the packing) or "avx512bf16"
    (bfloat16 products with AVX512-BF16's vdpbf16ps, float32 ones as "avx512"); a
    kernel the CPU lacks falls back to the next one down."""
    which = {"auto": 0, "generic": 1, "avx2": 2, "avx512": 3, "avx512bf16": 4}.get(name)
    if which is None:
        raise ValueError(f"_set_kernel: expected 'auto', 'generic', 'avx2', 'avx512' or "
                         f"'avx512bf16', got {name!r}")
    em_gemm_set_kernel(which)


def kernel_name():
    """The GEMM micro-kernel in use: "avx512bf16" (bfloat16 with vdpbf16ps, float32
    with AVX-512F), "avx512f", "avx2-fma" or "generic"."""
    return em_gemm_kernel_name().decode()


# matmul ----------------------------------------------------------------------------

cdef str dims_str(TensorBase t):
    return "(" + "x".join([str(t._shape[i]) for i in range(t._ndim)]) + ")"


cdef int check_rc(int rc, str op) except -1:
    if rc == EM_GEMM_ENOMEM:
        raise MemoryError(f"{op}: out of memory for the packing buffers")
    if rc != 0:
        raise RuntimeError(f"{op}: internal error {rc}")
    return 0


cdef object as_operand(object x, str op):
    if isinstance(x, TensorBase):
        return x
    if isinstance(x, (bool, int, float)):
        raise ValueError(f"{op}: both arguments must be at least 1-d, got a scalar {x!r}")
    try:
        import ember
        return ember.as_tensor(x)
    except Exception:
        raise TypeError(f"{op}: expected tensors, got {type(x).__name__}") from None


def promote(a, b, str op):
    """(a, b) cast to their common dtype (Array API promotion)."""
    cdef TensorBase x = a, y = b
    if x._storage.device.type_id != y._storage.device.type_id or \
            x._storage.device != y._storage.device:
        raise RuntimeError(f"{op}: expected all tensors on one device, got "
                           f"{x._storage.device} and {y._storage.device}")
    if x._dtype != y._dtype:
        d = _core.promote_types(x.dtype, y.dtype)
        if x.dtype is not d:
            a = a.to(d)
        if y.dtype is not d:
            b = b.to(d)
    return a, b


cpdef object matmul(object a, object b, str op="matmul"):
    """NumPy's matmul: 1-d operands are promoted to a row (left) or a column
    (right) and that dim removed again; dims before the last two are batch dims
    and broadcast. Records "matmul" for autograd."""
    a = as_operand(a, op)
    b = as_operand(b, op)
    cdef TensorBase x = a, y = b
    if x._ndim == 0 or y._ndim == 0:
        raise ValueError(f"{op}: both arguments must be at least 1-d, got shapes "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    if x._dtype != y._dtype or x._storage.device is not y._storage.device:
        a, b = promote(a, b, op)
        x = a
        y = b
    cdef int64_t k = x._shape[x._ndim - 1]
    cdef int64_t k2 = y._shape[0] if y._ndim == 1 else y._shape[y._ndim - 2]
    if k != k2:
        raise ValueError(f"{op}: {dims_str(x)} @ {dims_str(y)}: inner dimensions {k} and "
                         f"{k2} differ")
    if x._dtype >= UINT16:
        # uint16/32/64 (12-14): products and sums modulo 2^n are the same bits in two's
        # complement, so the signed kernel of that width computes them exactly
        s = SIGNED_OF[x._dtype]
        out = matmul(a.view(s), b.view(s), op).view(x.dtype)
    elif x._storage.device.type_id == 0:
        out = cpu_matmul(x, y, op)     # the CPU backend's kernel, without a Python call
    else:
        dev = x._storage.device
        out = _core.backend_for(dev).kernel("matmul", op, dev, x.dtype)(a, b)
    if x._requires_grad or y._requires_grad:
        _record("matmul", (a, b), out, None)
    return out


cpdef TensorBase cpu_matmul(TensorBase x, TensorBase y, str op="matmul"):
    """The CPU kernel of matmul (the CPU backend's "matmul"): x @ y for CPU tensors of
    one dtype whose inner dims agree (checked by the caller), without recording."""
    cdef int nda = x._ndim, ndb = y._ndim
    cdef int64_t m, n, k, rsa, csa, rsb, csb
    if nda == 1:
        m, k, csa = 1, x._shape[0], x._strides[0]
        rsa = 0
    else:
        m, k = x._shape[nda - 2], x._shape[nda - 1]
        rsa, csa = x._strides[nda - 2], x._strides[nda - 1]
    if ndb == 1:
        n, rsb = 1, y._strides[0]
        csb = 0
    else:
        n = y._shape[ndb - 1]
        rsb, csb = y._strides[ndb - 2], y._strides[ndb - 1]

    # batch dims: broadcast a[:-2] against b[:-2]
    cdef int bnda = nda - 2 if nda > 2 else 0
    cdef int bndb = ndb - 2 if ndb > 2 else 0
    cdef int bnd = bnda if bnda > bndb else bndb
    cdef int64_t bshape[MAXD]
    cdef int64_t bsa[MAXD]
    cdef int64_t bsb[MAXD]
    cdef int64_t bsc[MAXD]
    cdef int64_t oshape[MAXD]
    cdef int d, da, db, ond = 0
    cdef int64_t sa, sb
    for d in range(bnd):
        da = d - (bnd - bnda)
        db = d - (bnd - bndb)
        sa = x._shape[da] if da >= 0 else 1
        sb = y._shape[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise ValueError(f"{op}: {dims_str(x)} @ {dims_str(y)}: batch dimensions "
                             f"{tuple(x.shape)[:bnda]} and {tuple(y.shape)[:bndb]} cannot "
                             f"be broadcast")
        bshape[d] = sa if sb == 1 else sb
        bsa[d] = x._strides[da] if da >= 0 and sa != 1 else 0
        bsb[d] = y._strides[db] if db >= 0 and sb != 1 else 0
        oshape[ond] = bshape[d]
        ond += 1
    if nda > 1:
        oshape[ond] = m
        ond += 1
    if ndb > 1:
        oshape[ond] = n
        ond += 1
    cdef TensorBase out = new_tensor(ond, oshape, x._dtype, x._storage.device)
    cdef int64_t step = m * n
    for d in range(bnd - 1, -1, -1):
        bsc[d] = step
        step *= bshape[d]
    cdef int64_t total = step // (m * n) if m * n else 0
    if nda == 1:
        rsa = k * csa
    if ndb == 1:
        csb = 1
    cdef int rc
    cdef int dt = x._dtype
    cdef void *pa = x.ptr()
    cdef void *pb = y.ptr()
    cdef void *pc = out.ptr()
    if m * n * k * total >= NOGIL_MNK:
        with nogil:
            rc = em_gemm_batched(dt, bnd, bshape, bsa, bsb, bsc, m, n, k, 1.0, pa, rsa, csa,
                                 pb, rsb, csb, 0.0, pc, n, 1)
    else:
        rc = em_gemm_batched(dt, bnd, bshape, bsa, bsb, bsc, m, n, k, 1.0, pa, rsa, csa,
                             pb, rsb, csb, 0.0, pc, n, 1)
    check_rc(rc, op)
    return out


def gemm_(TensorBase c, TensorBase a, TensorBase b, double alpha, double beta):
    """c = alpha * a @ b + beta * c in place, for 2-d CPU tensors of one dtype whose
    shapes agree (checked by the caller, re-checked here), or bfloat16 a and b into a
    float32 c (alpha 1: the float32 sums of conv's bfloat16 gradients, never rounded to
    bfloat16). No autograd."""
    if a._ndim != 2 or b._ndim != 2 or c._ndim != 2:
        raise ValueError("gemm_: expected 2-d tensors")
    cdef bint wide = a._dtype == b._dtype == 11 and c._dtype == 7   # bfloat16 -> float32
    if not wide and (a._dtype != c._dtype or b._dtype != c._dtype):
        raise TypeError(f"gemm_: operands must share one dtype, or be bfloat16 into float32; "
                        f"got {a.dtype.name} @ {b.dtype.name} into {c.dtype.name}")
    if wide and alpha != 1.0:
        raise ValueError(f"gemm_: bfloat16 into float32 takes alpha 1, got {alpha}")
    if c._storage.device.type_id != 0 or a._storage.device.type_id != 0 or \
            b._storage.device.type_id != 0:
        raise NotImplementedError(f"gemm_: no kernel for {c.device} ({c.dtype.name})")
    cdef int64_t m = c._shape[0], n = c._shape[1], k = a._shape[1]
    if a._shape[0] != m or b._shape[0] != k or b._shape[1] != n:
        raise ValueError(f"gemm_: {dims_str(a)} @ {dims_str(b)} does not give {dims_str(c)}")
    cdef int rc
    cdef int dt = c._dtype
    cdef void *pa = a.ptr()
    cdef void *pb = b.ptr()
    cdef void *pc = c.ptr()
    with nogil:
        if wide:
            rc = em_gemm_bf16_f32(m, n, k, pa, a._strides[0], a._strides[1], pb,
                                  b._strides[0], b._strides[1], <float>beta, <float *>pc,
                                  c._strides[0], c._strides[1])
        else:
            rc = em_gemm(dt, m, n, k, alpha, pa, a._strides[0], a._strides[1], pb,
                         b._strides[0], b._strides[1], beta, pc, c._strides[0], c._strides[1])
    check_rc(rc, "gemm_")
    c._bump_version()
    return c
