# kernels: conv.c cpu_api_client.c
# cython: language_level=3, boundscheck=False, wraparound=False
"""The CPU convolution kernels (kernels/cpu/conv.c) for ember/ops/conv.py.

Three kernels over float32/float64/bfloat16 tensors of one dtype: the forward, its
input gradient (which is also conv_transpose2d) and its weight gradient (bfloat16:
float32 accumulation, each result rounded once, kernels/cpu/conv_bf16.c). Each takes its
activation (x, or gy for the input gradient) contiguous (NCHW), or channels_last
(NHWC storage) with a channels_last weight, and returns its result in that layout:
channels_last runs the NHWC kernels, which read and write that storage directly.
Callers (ember.ops.conv) validate the arguments, lay the operands out and compute the
output size; these wrappers only re-check what would
make the C code read out of bounds. `stride`, `padding` (top, left) and `dilation`
are (h, w) pairs.
"""
from libc.stdint cimport int64_t, uint16_t
from ember._C.core cimport Device, TensorBase, new_tensor, view_of

cdef extern from "conv.h" nogil:
    ctypedef struct em_conv_params:
        int64_t n, c, h, w
        int64_t oc, kh, kw
        int64_t oh, ow
        int64_t sh, sw
        int64_t ph, pw
        int64_t dh, dw
        int64_t groups
    int em_conv2d_forward_f32(const em_conv_params *p, const float *x, const float *w,
                              const float *bias, float *y)
    int em_conv2d_forward_f64(const em_conv_params *p, const double *x, const double *w,
                              const double *bias, double *y)
    int em_conv2d_forward_bf16(const em_conv_params *p, const uint16_t *x, const uint16_t *w,
                               const uint16_t *bias, uint16_t *y)
    int em_conv2d_backward_input_bf16(const em_conv_params *p, const uint16_t *gy,
                                      const uint16_t *w, const uint16_t *bias, uint16_t *gx)
    int em_conv2d_backward_weight_bf16(const em_conv_params *p, const uint16_t *x,
                                       const uint16_t *gy, uint16_t *gw)
    int em_conv2d_forward_nhwc_bf16(const em_conv_params *p, const uint16_t *x,
                                    const uint16_t *w, const uint16_t *bias, uint16_t *y)
    int em_conv2d_backward_input_nhwc_bf16(const em_conv_params *p, const uint16_t *gy,
                                           const uint16_t *w, const uint16_t *bias,
                                           uint16_t *gx)
    int em_conv2d_backward_weight_nhwc_bf16(const em_conv_params *p, const uint16_t *x,
                                            const uint16_t *gy, uint16_t *gw)
    int em_conv2d_backward_input_f32(const em_conv_params *p, const float *gy, const float *w,
                                     const float *bias, float *gx)
    int em_conv2d_backward_input_f64(const em_conv_params *p, const double *gy,
                                     const double *w, const double *bias, double *gx)
    int em_conv2d_backward_weight_f32(const em_conv_params *p, const float *x, const float *gy,
                                      float *gw)
    int em_conv2d_backward_weight_f64(const em_conv_params *p, const double *x,
                                      const double *gy, double *gw)
    int em_conv2d_forward_nhwc_f32(const em_conv_params *p, const float *x, const float *w,
                                   const float *bias, float *y)
    int em_conv2d_forward_nhwc_f64(const em_conv_params *p, const double *x, const double *w,
                                   const double *bias, double *y)
    int em_conv2d_backward_input_nhwc_f32(const em_conv_params *p, const float *gy,
                                          const float *w, const float *bias, float *gx)
    int em_conv2d_backward_input_nhwc_f64(const em_conv_params *p, const double *gy,
                                          const double *w, const double *bias, double *gx)
    int em_conv2d_backward_weight_nhwc_f32(const em_conv_params *p, const float *x,
                                           const float *gy, float *gw)
    int em_conv2d_backward_weight_nhwc_f64(const em_conv_params *p, const double *x,
                                           const double *gy, double *gw)
    void em_conv_set_path(int path)

cdef extern from "cpu_api.h":
    int em_cpu_api_import() except -1

em_cpu_api_import()   # the pool and the GEMM live in ember._C.core (cpu_api.h)

include "channels_last.pxi"

DEF FLOAT32 = 7
DEF FLOAT64 = 8
DEF BFLOAT16 = 11
DEF NOGIL_WORK = 1 << 15    # release the GIL above this many multiply-adds


cdef int check(TensorBase t, int ndim, int dtype, str op, str what) except -1:
    if t._ndim != ndim or not t.contiguous_c() or t._storage.device.type != "cpu" or \
            t._dtype != dtype or t._dtype not in (FLOAT32, FLOAT64, BFLOAT16):
        raise ValueError(f"{op}: internal kernel needs {what} as a contiguous {ndim}-d "
                         f"float32/float64/bfloat16 CPU tensor of the input's dtype, got "
                         f"{tuple(t.shape)} {t.dtype!r}")
    return 0


cdef bint use_nhwc(TensorBase act, TensorBase other):
    """Whether a kernel runs NHWC: its activation is channels_last, or is stored both
    ways (a size-1 dim) beside a channels_last-only `other` operand."""
    return nhwc(act) or (act._ndim == 4 and other._ndim == 4 and is_channels_last(act) and
                         nhwc(other))


cdef int check_cl(TensorBase t, int dtype, str op, str what) except -1:
    if t._ndim != 4 or not is_channels_last(t) or t._storage.device.type != "cpu" or \
            t._dtype != dtype or t._dtype not in (FLOAT32, FLOAT64, BFLOAT16):
        raise ValueError(f"{op}: internal kernel needs {what} as a channels_last 4-d "
                         f"float32/float64/bfloat16 CPU tensor of the input's dtype, got "
                         f"{tuple(t.shape)} {t.dtype!r} strides {t.stride()}")
    return 0


cdef int check_rc(int rc, str op) except -1:
    if rc != 0:
        raise MemoryError(f"{op}: out of memory for the convolution's buffers")
    return 0


cdef int set_params(em_conv_params *p, TensorBase x, TensorBase w, int64_t oc, tuple out_hw,
                    tuple stride, tuple padding, tuple dilation, int64_t groups,
                    str op) except -1:
    p.n, p.c, p.h, p.w = x._shape[0], x._shape[1], x._shape[2], x._shape[3]
    p.oc, p.kh, p.kw = oc, w._shape[2], w._shape[3]
    p.oh, p.ow = out_hw
    p.sh, p.sw = stride
    p.ph, p.pw = padding
    p.dh, p.dw = dilation
    p.groups = groups
    if groups < 1 or p.c % groups or oc % groups or p.oh < 0 or p.ow < 0 or p.sh < 1 or \
            p.sw < 1 or p.dh < 1 or p.dw < 1 or p.ph < 0 or p.pw < 0:
        raise ValueError(f"{op}: internal kernel got inconsistent arguments")
    return 0


cdef int64_t work(em_conv_params *p):
    return p.n * p.oc * p.oh * p.ow * (p.c // p.groups) * p.kh * p.kw


# the kernels by dtype, callable with or without the GIL
cdef int forward(int dt, bint cl, em_conv_params *p, char *x, char *w, char *b,
                 char *y) noexcept nogil:
    if cl:
        if dt == FLOAT32:
            return em_conv2d_forward_nhwc_f32(p, <const float *>x, <const float *>w,
                                              <const float *>b, <float *>y)
        if dt == BFLOAT16:
            return em_conv2d_forward_nhwc_bf16(p, <const uint16_t *>x, <const uint16_t *>w,
                                               <const uint16_t *>b, <uint16_t *>y)
        return em_conv2d_forward_nhwc_f64(p, <const double *>x, <const double *>w,
                                          <const double *>b, <double *>y)
    if dt == FLOAT32:
        return em_conv2d_forward_f32(p, <const float *>x, <const float *>w, <const float *>b,
                                     <float *>y)
    if dt == BFLOAT16:
        return em_conv2d_forward_bf16(p, <const uint16_t *>x, <const uint16_t *>w,
                                      <const uint16_t *>b, <uint16_t *>y)
    return em_conv2d_forward_f64(p, <const double *>x, <const double *>w, <const double *>b,
                                 <double *>y)


cdef int backward_input(int dt, bint cl, em_conv_params *p, char *gy, char *w, char *b,
                        char *gx) noexcept nogil:
    if cl:
        if dt == FLOAT32:
            return em_conv2d_backward_input_nhwc_f32(p, <const float *>gy, <const float *>w,
                                                     <const float *>b, <float *>gx)
        if dt == BFLOAT16:
            return em_conv2d_backward_input_nhwc_bf16(p, <const uint16_t *>gy,
                                                      <const uint16_t *>w, <const uint16_t *>b,
                                                      <uint16_t *>gx)
        return em_conv2d_backward_input_nhwc_f64(p, <const double *>gy, <const double *>w,
                                                 <const double *>b, <double *>gx)
    if dt == FLOAT32:
        return em_conv2d_backward_input_f32(p, <const float *>gy, <const float *>w,
                                            <const float *>b, <float *>gx)
    if dt == BFLOAT16:
        return em_conv2d_backward_input_bf16(p, <const uint16_t *>gy, <const uint16_t *>w,
                                             <const uint16_t *>b, <uint16_t *>gx)
    return em_conv2d_backward_input_f64(p, <const double *>gy, <const double *>w,
                                        <const double *>b, <double *>gx)


cdef int backward_weight(int dt, bint cl, em_conv_params *p, char *x, char *gy,
                         char *gw) noexcept nogil:
    if cl:
        if dt == FLOAT32:
            return em_conv2d_backward_weight_nhwc_f32(p, <const float *>x, <const float *>gy,
                                                      <float *>gw)
        if dt == BFLOAT16:
            return em_conv2d_backward_weight_nhwc_bf16(p, <const uint16_t *>x,
                                                       <const uint16_t *>gy, <uint16_t *>gw)
        return em_conv2d_backward_weight_nhwc_f64(p, <const double *>x, <const double *>gy,
                                                  <double *>gw)
    if dt == FLOAT32:
        return em_conv2d_backward_weight_f32(p, <const float *>x, <const float *>gy,
                                             <float *>gw)
    if dt == BFLOAT16:
        return em_conv2d_backward_weight_bf16(p, <const uint16_t *>x, <const uint16_t *>gy,
                                              <uint16_t *>gw)
    return em_conv2d_backward_weight_f64(p, <const double *>x, <const double *>gy,
                                         <double *>gw)


def conv2d_forward(TensorBase x not None, TensorBase w not None, bias, tuple out_hw,
                   tuple stride, tuple padding, tuple dilation, int groups):
    """y (n, oc, oh, ow) = conv2d(x, w) + bias; (oh, ow) = out_hw."""
    cdef int dt = x._dtype
    cdef bint cl = use_nhwc(x, w)
    if cl:
        check_cl(x, dt, "conv2d", "the input")
        check_cl(w, dt, "conv2d", "the weight")
    else:
        check(x, 4, dt, "conv2d", "the input")
        check(w, 4, dt, "conv2d", "the weight")
    cdef TensorBase b = None
    if bias is not None:
        b = bias
        check(b, 1, dt, "conv2d", "the bias")
    cdef em_conv_params p
    set_params(&p, x, w, w._shape[0], out_hw, stride, padding, dilation, groups, "conv2d")
    if w._shape[1] * groups != p.c or (b is not None and b._shape[0] != p.oc):
        raise ValueError("conv2d: internal kernel got inconsistent shapes")
    cdef int64_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = p.n, p.oc, p.oh, p.ow
    cdef TensorBase y = new_nhwc(p.n, p.oc, p.oh, p.ow, dt, x._storage.device) if cl else \
        new_tensor(4, shape, dt, x._storage.device)
    cdef char *xp = x.ptr()
    cdef char *wp = w.ptr()
    cdef char *bp = b.ptr() if b is not None else NULL
    cdef char *yp = y.ptr()
    cdef int rc
    if work(&p) >= NOGIL_WORK:
        with nogil:
            rc = forward(dt, cl, &p, xp, wp, bp, yp)
    else:
        rc = forward(dt, cl, &p, xp, wp, bp, yp)
    check_rc(rc, "conv2d")
    return y


def conv2d_backward_input(TensorBase gy not None, TensorBase w not None, bias, tuple in_hw,
                          tuple stride, tuple padding, tuple dilation, int groups):
    """gx (n, c, h, w) = the input gradient of conv2d given gy (n, oc, oh, ow), plus
    bias[c] if given (that is conv_transpose2d(gy, w, bias)); (h, w) = in_hw."""
    cdef int dt = gy._dtype
    cdef bint cl = use_nhwc(gy, w)
    if cl:
        check_cl(gy, dt, "conv2d_backward_input", "grad_output")
        check_cl(w, dt, "conv2d_backward_input", "the weight")
    else:
        check(gy, 4, dt, "conv2d_backward_input", "grad_output")
        check(w, 4, dt, "conv2d_backward_input", "the weight")
    cdef TensorBase b = None
    cdef int64_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = gy._shape[0], w._shape[1] * groups, in_hw[0], in_hw[1]
    if bias is not None:
        b = bias
        check(b, 1, dt, "conv2d_backward_input", "the bias")
        if b._shape[0] != shape[1]:
            raise ValueError("conv2d_backward_input: internal kernel got inconsistent shapes")
    cdef Device dev = gy._storage.device
    cdef TensorBase gx = new_nhwc(shape[0], shape[1], shape[2], shape[3], dt, dev) if cl \
        else new_tensor(4, shape, dt, dev)
    cdef em_conv_params p
    set_params(&p, gx, w, w._shape[0], (gy._shape[2], gy._shape[3]), stride, padding, dilation,
               groups, "conv2d_backward_input")
    if gy._shape[1] != p.oc:
        raise ValueError("conv2d_backward_input: internal kernel got inconsistent shapes")
    cdef char *gp = gy.ptr()
    cdef char *wp = w.ptr()
    cdef char *bp = b.ptr() if b is not None else NULL
    cdef char *xp = gx.ptr()
    cdef int rc
    if work(&p) >= NOGIL_WORK:
        with nogil:
            rc = backward_input(dt, cl, &p, gp, wp, bp, xp)
    else:
        rc = backward_input(dt, cl, &p, gp, wp, bp, xp)
    check_rc(rc, "conv2d_backward_input")
    return gx


def conv2d_backward_weight(TensorBase x not None, TensorBase gy not None, tuple kernel_hw,
                           tuple stride, tuple padding, tuple dilation, int groups):
    """gw (oc, c / groups, kh, kw) = the weight gradient of conv2d, given its input x
    (n, c, h, w) and gy (n, oc, oh, ow); (kh, kw) = kernel_hw."""
    cdef int dt = x._dtype
    cdef bint cl = use_nhwc(x, gy) or use_nhwc(gy, x)
    if cl:
        check_cl(x, dt, "conv2d_backward_weight", "the input")
        check_cl(gy, dt, "conv2d_backward_weight", "grad_output")
    else:
        check(x, 4, dt, "conv2d_backward_weight", "the input")
        check(gy, 4, dt, "conv2d_backward_weight", "grad_output")
    if groups < 1 or x._shape[1] % groups or gy._shape[0] != x._shape[0]:
        raise ValueError("conv2d_backward_weight: internal kernel got inconsistent shapes")
    cdef int64_t shape[4]
    shape[0], shape[1], shape[2], shape[3] = gy._shape[1], x._shape[1] // groups, kernel_hw[0], \
        kernel_hw[1]
    cdef Device dev = x._storage.device
    cdef TensorBase gw = new_nhwc(shape[0], shape[1], shape[2], shape[3], dt, dev) if cl \
        else new_tensor(4, shape, dt, dev)
    cdef em_conv_params p
    set_params(&p, x, gw, gy._shape[1], (gy._shape[2], gy._shape[3]), stride, padding, dilation,
               groups, "conv2d_backward_weight")
    cdef char *xp = x.ptr()
    cdef char *gp = gy.ptr()
    cdef char *wp = gw.ptr()
    cdef int rc
    if work(&p) >= NOGIL_WORK:
        with nogil:
            rc = backward_weight(dt, cl, &p, xp, gp, wp)
    else:
        rc = backward_weight(dt, cl, &p, xp, gp, wp)
    check_rc(rc, "conv2d_backward_weight")
    return gw


def _set_path(str name):
    """Force the forward's algorithm: "auto", "gemm" (im2col + GEMM), "direct" or
    "blocked" (the direct kernel over blocks of images, for small outputs)."""
    which = {"auto": 0, "gemm": 1, "direct": 2, "blocked": 3}.get(name)
    if which is None:
        raise ValueError(f"_set_path: expected 'auto', 'gemm', 'direct' or 'blocked', "
                         f"got {name!r}")
    em_conv_set_path(which)
