# kernels: attention.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CPU fused scaled-dot-product attention (kernels/cpu/attention.c), forward and
backward, for ember.ops.attention. q (..., L, E), k (..., S, E), v (..., S, Ev) and the
optional additive float mask (..., L, S) share their batch dims (the caller expands
them) and are read in place with their own strides."""
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from ember._C.core cimport TensorBase, check_bounds, new_tensor

include "kernel_checks.pxi"

cdef extern from "attention.h" nogil:
    ctypedef struct em_sdpa_args:
        int64_t N, L, S, E, Ev
        const void *q
        const void *k
        const void *v
        const void *mask
        const int64_t *qoff
        const int64_t *koff
        const int64_t *voff
        const int64_t *moff
        int64_t qrs, qcs, krs, kcs, vrs, vcs, mrs, mcs
        int causal
        double scale
        void *out
        void *lse
        const void *dout
        void *dq
        void *dk
        void *dv
        int err
    int em_sdpa_forward(int dtype, em_sdpa_args *a)
    int em_sdpa_backward(int dtype, em_sdpa_args *a)

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()

DEF FLOAT32 = 7
DEF FLOAT64 = 8


cdef int _operand(TensorBase t, TensorBase q, str name, str op) except -1:
    cpu_only(t, op)
    if t._dtype != q._dtype:
        raise TypeError(f"{op}: {name} is {t.dtype!r}, query {q.dtype!r}")
    cdef int d
    if t._ndim != q._ndim:
        raise ValueError(f"{op}: {name} {tuple(t.shape)} must have the dims of the query "
                         f"{tuple(q.shape)}")
    for d in range(q._ndim - 2):
        if t._shape[d] != q._shape[d]:
            raise ValueError(f"{op}: {name} {tuple(t.shape)} must have the batch dims of "
                             f"the query {tuple(q.shape)}")
    check_span(t, t._ndim, t._shape, t._strides, op)
    return 0


cdef int64_t *_offsets(TensorBase t, int64_t nb) except NULL:
    """The element offset of each batch matrix of t (batch dims: all but the last 2),
    relative to t's first element, in row-major batch order."""
    cdef int64_t *off = <int64_t *>malloc(sizeof(int64_t) * (nb if nb else 1))
    if off == NULL:
        raise MemoryError("scaled_dot_product_attention: out of memory")
    cdef int bd = t._ndim - 2
    cdef int64_t idx[16]
    cdef int64_t b, o
    cdef int d
    for d in range(bd):
        idx[d] = 0
    for b in range(nb):
        o = 0
        for d in range(bd):
            o += idx[d] * t._strides[d]
        off[b] = o
        d = bd - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < t._shape[d]:
                break
            idx[d] = 0
            d -= 1
    return off


cdef void _fill(em_sdpa_args *a, TensorBase q, TensorBase k, TensorBase v, TensorBase mask,
                bint causal, double scale):
    cdef int n = q._ndim
    a.L, a.E = q._shape[n - 2], q._shape[n - 1]
    a.S, a.Ev = k._shape[n - 2], v._shape[n - 1]
    a.q, a.k, a.v = q.ptr(), k.ptr(), v.ptr()
    a.qrs, a.qcs = q._strides[n - 2], q._strides[n - 1]
    a.krs, a.kcs = k._strides[n - 2], k._strides[n - 1]
    a.vrs, a.vcs = v._strides[n - 2], v._strides[n - 1]
    a.mask = NULL if mask is None else mask.ptr()
    a.mrs = 0 if mask is None else mask._strides[n - 2]
    a.mcs = 0 if mask is None else mask._strides[n - 1]
    a.causal = causal
    a.scale = scale
    a.qoff = a.koff = a.voff = a.moff = NULL


cdef int _offsets_all(em_sdpa_args *a, TensorBase q, TensorBase k, TensorBase v,
                      TensorBase mask) except -1:
    a.qoff = _offsets(q, a.N)
    a.koff = _offsets(k, a.N)
    a.voff = _offsets(v, a.N)
    a.moff = _offsets(mask, a.N) if mask is not None else NULL
    return 0


cdef void _free_all(em_sdpa_args *a):
    free(<void *>a.qoff)
    free(<void *>a.koff)
    free(<void *>a.voff)
    free(<void *>a.moff)


cdef int64_t _check(TensorBase q, TensorBase k, TensorBase v, TensorBase mask,
                    str op) except -1:
    cpu_only(q, op)
    if q._dtype not in (FLOAT32, FLOAT64):
        raise TypeError(f"{op}: the fused kernel takes float32 or float64, got {q.dtype!r}")
    if q._ndim < 2:
        raise ValueError(f"{op}: query must have at least 2 dims, got {tuple(q.shape)}")
    check_span(q, q._ndim, q._shape, q._strides, op)
    _operand(k, q, "key", op)
    _operand(v, q, "value", op)
    if mask is not None:
        _operand(mask, q, "attn_mask", op)
    cdef int n = q._ndim
    if k._shape[n - 1] != q._shape[n - 1] or v._shape[n - 2] != k._shape[n - 2]:
        raise ValueError(f"{op}: query {tuple(q.shape)}, key {tuple(k.shape)}, value "
                         f"{tuple(v.shape)} do not line up")
    if mask is not None and (mask._shape[n - 2] != q._shape[n - 2] or
                             mask._shape[n - 1] != k._shape[n - 2]):
        raise ValueError(f"{op}: attn_mask {tuple(mask.shape)} must be (..., L, S)")
    cdef int64_t nb = 1
    cdef int d
    for d in range(n - 2):
        nb *= q._shape[d]
    return nb


def sdpa_forward(TensorBase q not None, TensorBase k not None, TensorBase v not None,
                 TensorBase mask, bint causal, double scale):
    """(out (..., L, Ev), lse (..., L)), both contiguous."""
    op = "scaled_dot_product_attention"
    cdef em_sdpa_args a
    a.N = _check(q, k, v, mask, op)
    _fill(&a, q, k, v, mask, causal, scale)
    cdef int n = q._ndim
    cdef int64_t shape[16]
    cdef int d
    for d in range(n - 1):
        shape[d] = q._shape[d]
    shape[n - 1] = a.Ev
    cdef TensorBase out = new_tensor(n, shape, q._dtype, q._storage.device)
    cdef TensorBase lse = new_tensor(n - 1, shape, q._dtype, q._storage.device)
    if a.N == 0 or a.L == 0 or a.Ev == 0:
        return out, lse
    a.out, a.lse = out.ptr(), lse.ptr()
    cdef int rc
    _offsets_all(&a, q, k, v, mask)
    try:
        with nogil:
            rc = em_sdpa_forward(q._dtype, &a)
    finally:
        _free_all(&a)
    if rc:
        raise MemoryError(f"{op}: out of memory")
    return out, lse


def sdpa_backward(TensorBase dout not None, TensorBase q not None, TensorBase k not None,
                  TensorBase v not None, TensorBase mask, TensorBase out not None,
                  TensorBase lse not None, bint causal, double scale):
    """(dq, dk, dv), contiguous, of the shapes of q, k, v; dout, out and lse as
    sdpa_forward gave them (contiguous)."""
    op = "scaled_dot_product_attention_backward"
    cdef em_sdpa_args a
    a.N = _check(q, k, v, mask, op)
    _fill(&a, q, k, v, mask, causal, scale)
    for t, name in ((dout, "grad"), (out, "out"), (lse, "lse")):
        cpu_only(<TensorBase>t, op)
        if (<TensorBase>t)._dtype != q._dtype or not dense(<TensorBase>t):
            raise ValueError(f"{op}: {name} must be contiguous {q.dtype!r}")
    qs = tuple(q.shape)
    if tuple(dout.shape) != tuple(out.shape) or tuple(out.shape) != qs[:len(qs) - 1] + \
            (a.Ev,) or tuple(lse.shape) != qs[:len(qs) - 1]:
        raise ValueError(f"{op}: grad {tuple(dout.shape)}, out {tuple(out.shape)} and lse "
                         f"{tuple(lse.shape)} do not match the query {tuple(q.shape)}")
    cdef TensorBase dq = new_tensor(q._ndim, q._shape, q._dtype, q._storage.device)
    cdef TensorBase dk = new_tensor(k._ndim, k._shape, k._dtype, k._storage.device)
    cdef TensorBase dv = new_tensor(v._ndim, v._shape, v._dtype, v._storage.device)
    if dq.numel_c() == 0 and dk.numel_c() == 0 and dv.numel_c() == 0:
        return dq, dk, dv
    a.out, a.lse, a.dout = out.ptr(), lse.ptr(), dout.ptr()
    a.dq, a.dk, a.dv = dq.ptr(), dk.ptr(), dv.ptr()
    cdef int rc
    _offsets_all(&a, q, k, v, mask)
    try:
        with nogil:
            rc = em_sdpa_backward(q._dtype, &a)
    finally:
        _free_all(&a)
    if rc:
        raise MemoryError(f"{op}: out of memory")
    return dq, dk, dv
