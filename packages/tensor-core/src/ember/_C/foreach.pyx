# cython: language_level=3, boundscheck=False, wraparound=False
"""Multi-tensor ("foreach") loops for ember.ops.foreach: each function takes lists of
tensors and runs one op-table elementwise row per entry, looping in C and calling the
core's elementwise entry (`ew`, cimported from ember._C.core) directly, with no Python
dispatch per tensor. `ew` checks, promotes, broadcasts, records autograd and hands
non-CPU tensors to their device backend, so these run on every device.

An operand `other` may be one scalar or one tensor (used with every entry), or a
list/tuple with one scalar or tensor per entry.
"""
from libc.stdint cimport int64_t
from ember._C.core cimport TensorBase, ew
from ember._C.core import OP_INDEX

cdef int ADD = OP_INDEX["add"]
cdef int SUB = OP_INDEX["sub"]
cdef int MUL = OP_INDEX["mul"]
cdef int DIV = OP_INDEX["div"]
cdef int LERP = OP_INDEX["lerp"]


cdef list _as_list(object xs, str op, str name):
    if isinstance(xs, list):
        return <list>xs
    if isinstance(xs, tuple):
        return list(xs)
    raise TypeError(f"{op}: {name} must be a list or tuple of tensors, got "
                    f"{type(xs).__name__}")


cdef int _check(list self, object other, str op, str name) except -1:
    cdef Py_ssize_t i, n = len(self)
    for i in range(n):
        if not isinstance(self[i], TensorBase):
            raise TypeError(f"{op}: expected a list of tensors, but entry {i} is "
                            f"{type(self[i]).__name__}")
    if isinstance(other, (list, tuple)) and len(other) != n:
        raise ValueError(f"{op}: {name} has {len(other)} entries but the tensor list "
                         f"has {n}; they must have the same length")
    return 0


cdef inline object _at(object other, Py_ssize_t i):
    # one entry of a per-tensor list, or the one value shared by all
    if isinstance(other, list) or isinstance(other, tuple):
        return other[i]
    return other


cdef inline object _ok(object r, str op, object a, object b):
    if r is NotImplemented:
        raise TypeError(f"{op}: unsupported operands {type(a).__name__} and "
                        f"{type(b).__name__}")
    return r


cdef _reraise(object e, str name, Py_ssize_t i):
    """An error from entry i's op, named after the foreach call."""
    msg = str(e)
    if msg.startswith(name + ":"):
        raise e
    raise type(e)(f"{name}: entry {i}: {msg}") from e


def index_of(str name):
    """The op table index of elementwise row `name`."""
    return OP_INDEX[name]


def binary(int op, object self, object other, bint inplace, str name):
    """self[i] op other[i] for every i (op: an op-table index of arity 2); in place
    into self[i] when inplace."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, other, name, "other")
    cdef Py_ssize_t i, n = len(xs)
    cdef object x, o, r
    cdef list res = None if inplace else [None] * n
    try:
        for i in range(n):
            x = xs[i]
            o = _at(other, i)
            r = _ok(ew(op, x, o, None, 2, x if inplace else None), name, x, o)
            if not inplace:
                res[i] = r
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def add(object self, object other, object alpha, bint subtract, bint inplace, str name):
    """self[i] + alpha * other[i] (or minus it), PyTorch's add/sub with alpha."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, other, name, "other")
    cdef Py_ssize_t i, n = len(xs)
    cdef int op = SUB if subtract else ADD
    cdef bint scaled = not (alpha is None or (type(alpha) is int and alpha == 1))
    cdef object x, o, r
    cdef list res = None if inplace else [None] * n
    try:
        for i in range(n):
            x = xs[i]
            o = _at(other, i)
            if scaled:
                o = _ok(ew(MUL, o, alpha, None, 2, None), name, o, alpha)
            r = _ok(ew(op, x, o, None, 2, x if inplace else None), name, x, o)
            if not inplace:
                res[i] = r
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def unary(int op, object self, bint inplace, str name):
    """op(self[i]) for every i (op: an op-table index of arity 1)."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, None, name, "")
    cdef Py_ssize_t i, n = len(xs)
    cdef object x, r
    cdef list res = None if inplace else [None] * n
    try:
        for i in range(n):
            x = xs[i]
            r = ew(op, x, None, None, 1, x if inplace else None)
            if not inplace:
                res[i] = r
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def ternary(int op, object self, object b, object c, bint inplace, str name):
    """op(self[i], b[i], c[i]) (an op-table row of arity 3: lerp, clamp, where)."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, b, name, "second operand")
    _check(xs, c, name, "third operand")
    cdef Py_ssize_t i, n = len(xs)
    cdef object x, r
    cdef list res = None if inplace else [None] * n
    try:
        for i in range(n):
            x = xs[i]
            r = ew(op, x, _at(b, i), _at(c, i), 3, x if inplace else None)
            if not inplace:
                res[i] = r
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def addc(object self, object t1, object t2, object value, bint divide, bint inplace,
         str name):
    """self[i] + value[i] * t1[i] * t2[i] (addcmul) or * t1[i] / t2[i] (addcdiv). The
    product is formed first and then scaled, as PyTorch's CPU kernels do."""
    cdef list xs = _as_list(self, name, "self")
    cdef list a = _as_list(t1, name, "tensor1")
    cdef list b = _as_list(t2, name, "tensor2")
    _check(xs, a, name, "tensor1")
    _check(xs, b, name, "tensor2")
    _check(xs, value, name, "scalars")
    cdef Py_ssize_t i, n = len(xs)
    cdef object x, tmp, v, r
    cdef list res = None if inplace else [None] * n
    cdef int op = DIV if divide else MUL
    try:
        for i in range(n):
            x = xs[i]
            tmp = ew(op, a[i], b[i], None, 2, None)
            v = _at(value, i)
            if not (type(v) is int and v == 1):
                ew(MUL, tmp, v, None, 2, tmp)     # tmp is this loop's own
            r = ew(ADD, x, tmp, None, 2, x if inplace else None)
            if not inplace:
                res[i] = r
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def call_each(object self, str method, tuple args, str name):
    """self[i].method(*args) for every i (zero_, copy_, fill_, ...); the results."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, None, name, "")
    cdef Py_ssize_t i, n = len(xs)
    cdef list res = [None] * n
    try:
        for i in range(n):
            res[i] = getattr(xs[i], method)(*args)
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def call_fn(object fn, object self, tuple args, str name):
    """fn(self[i], *args) for every i (the reductions: norm, max)."""
    cdef list xs = _as_list(self, name, "self")
    _check(xs, None, name, "")
    cdef Py_ssize_t i, n = len(xs)
    cdef list res = [None] * n
    try:
        for i in range(n):
            res[i] = fn(xs[i], *args)
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    return res


def call_pairs(object self, str method, object others, str name):
    """self[i].method(others[i]) for every i (copy_)."""
    cdef list xs = _as_list(self, name, "self")
    cdef list ys = _as_list(others, name, "src")
    _check(xs, ys, name, "src")
    cdef Py_ssize_t i = 0, n = len(xs)
    try:
        for i in range(n):
            getattr(xs[i], method)(ys[i])
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)


def into(int op, object self, object other, object out, str name):
    """op(self[i]) (other None) or op(self[i], other[i]) written into out[i], an
    existing tensor of the result's shape (out may be self or other: no new tensors)."""
    cdef list xs = _as_list(self, name, "self")
    cdef list outs = _as_list(out, name, "out")
    _check(xs, other, name, "other")
    _check(xs, outs, name, "out")
    cdef Py_ssize_t i = 0, n = len(xs)
    try:
        for i in range(n):
            if other is None:
                ew(op, xs[i], None, None, 1, outs[i])
            else:
                ew(op, xs[i], _at(other, i), None, 2, outs[i])
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)


# -- GradScaler's fused check: unscale in place and flag non-finite values ---------------

cdef extern from *:
    """
    #include <stdint.h>
    /* g[i] *= inv over n contiguous elements; nonzero when one of them was inf or NaN
       (x - x is NaN exactly then). One pass, no branch in the loop. */
    static int em_unscale_f32(float *g, int64_t n, float inv) {
        int bad = 0;
        for (int64_t i = 0; i < n; i++) { float v = g[i]; bad |= (v - v) != 0.0f; g[i] = v * inv; }
        return bad;
    }
    static int em_unscale_f64(double *g, int64_t n, double inv) {
        int bad = 0;
        for (int64_t i = 0; i < n; i++) { double v = g[i]; bad |= (v - v) != 0.0; g[i] = v * inv; }
        return bad;
    }
    static int em_unscale_f16(_Float16 *g, int64_t n, float inv) {
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float v = (float)g[i]; bad |= (v - v) != 0.0f; g[i] = (_Float16)(v * inv);
        }
        return bad;
    }
    """
    int em_unscale_f32(float *g, int64_t n, float inv) nogil
    int em_unscale_f64(double *g, int64_t n, double inv) nogil
    int em_unscale_f16(void *g, int64_t n, float inv) nogil


cdef int _F16 = 6, _F32 = 7, _F64 = 8     # ember's dtype numbers (core/dtypes.pxi)


def non_finite_check_and_unscale(object grads, object found_inf, object inv_scale,
                                 object composed, str name):
    """grads[i] *= inv_scale in place, found_inf set to 1 where any grads[i] holds an inf
    or NaN (PyTorch's _amp_foreach_non_finite_check_and_unscale_). found_inf and
    inv_scale: 1-element float32 tensors on the grads' device. A contiguous CPU grad of
    float16/32/64 is one fused C pass; any other (device, layout, dtype) goes to
    `composed(g, found_inf, inv_scale)`, written with the op table's rows, which keeps
    everything on the device (no host sync per tensor)."""
    cdef list xs = _as_list(grads, name, "grads")
    _check(xs, None, name, "")
    cdef TensorBase g, f = <TensorBase?>found_inf, inv = <TensorBase?>inv_scale
    cdef Py_ssize_t i = 0, n = len(xs)
    cdef int bad = 0
    cdef int64_t m
    cdef double s = 1.0
    cdef char *p
    if f._dtype != _F32 or inv._dtype != _F32 or f.numel_c() != 1 or inv.numel_c() != 1:
        raise TypeError(f"{name}: found_inf and inv_scale must be one-element float32 "
                        f"tensors, got {found_inf.dtype!r} of {found_inf.numel()} and "
                        f"{inv_scale.dtype!r} of {inv_scale.numel()} elements")
    cdef bint host = f._storage.device.type_id == 0 and inv._storage.device.type_id == 0
    if host:
        s = (<float *>inv.ptr())[0]
    try:
        for i in range(n):
            g = <TensorBase>xs[i]
            if g._storage.device != f._storage.device or \
                    g._storage.device != inv._storage.device:
                raise RuntimeError(f"{name}: grads[{i}] is on {g._storage.device} but "
                                   f"found_inf is on {f._storage.device} and inv_scale on "
                                   f"{inv._storage.device}")
            if g._dtype != _F16 and g._dtype != _F32 and g._dtype != _F64 or \
                    not host or not g.contiguous_c():
                composed(g, found_inf, inv_scale)
                continue
            m = g.numel_c()
            p = g.ptr()
            if g._dtype == _F32:
                with nogil:
                    bad |= em_unscale_f32(<float *>p, m, <float>s)
            elif g._dtype == _F64:
                with nogil:
                    bad |= em_unscale_f64(<double *>p, m, s)
            else:
                with nogil:
                    bad |= em_unscale_f16(<void *>p, m, <float>s)
            g._storage.version += 1
    except (TypeError, ValueError, RuntimeError) as e:
        _reraise(e, name, i)
    if bad:
        (<float *>f.ptr())[0] = 1.0
        f._storage.version += 1


# -- the optimizers' fused steps: one pass over each parameter's arrays ------------------
#
# The arithmetic of ember.optim's composed updates, op for op in the same order and the
# same dtype (so the results agree with the composed ops to the rounding of fused
# multiply-adds), with every array read and written once instead of once per op.

cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include "ember_c_types.h"
    /* Adam / AdamW on n contiguous elements (see adam_ below for the scalars). The
       branches are hoisted out of the loops (shrink by 1 and a sign of +1 are exact),
       so that each loop vectorizes (EM_CLONES: AVX-512F/AVX2 where the CPU has them). */
    #define EM_ADAM(SFX, T, SQRT)                                                       \\
    EM_CLONES static void em_adam_##SFX(T *restrict p, const T *restrict g,             \\
                              T *restrict m, T *restrict v, T *restrict vmax,           \\
                              int64_t n, T shrink, T l2, int neg, T w1, T w2, T eps2,   \\
                              T step) {                                                 \\
        const T sg = neg ? (T)-1 : (T)1;                                                \\
        if (!vmax && l2 == 0) {                                                         \\
            for (int64_t i = 0; i < n; i++) {                                           \\
                T pi = p[i] * shrink, gi = g[i] * sg;                                   \\
                T mi = m[i] + w1 * (gi - m[i]);                                         \\
                T vi = v[i] + w2 * (gi * gi - v[i]);                                    \\
                m[i] = mi;                                                              \\
                v[i] = vi;                                                              \\
                p[i] = pi + mi / (SQRT(vi) + eps2) * step;                              \\
            }                                                                           \\
            return;                                                                     \\
        }                                                                               \\
        for (int64_t i = 0; i < n; i++) {                                               \\
            T pi = p[i] * shrink, gi = g[i] * sg;                                       \\
            if (l2 != 0) gi = pi * l2 + gi;                                             \\
            T mi = m[i] + w1 * (gi - m[i]);                                             \\
            T vi = v[i] + w2 * (gi * gi - v[i]);                                        \\
            m[i] = mi;                                                                  \\
            v[i] = vi;                                                                  \\
            if (vmax) {                                                                 \\
                T u = vmax[i];                                                          \\
                vi = (u != u || u > vi) ? u : vi;   /* maximum: NaN propagates */       \\
                vmax[i] = vi;                                                           \\
            }                                                                           \\
            p[i] = pi + mi / (SQRT(vi) + eps2) * step;                                  \\
        }                                                                               \\
    }
    EM_ADAM(f32, float, sqrtf)
    EM_ADAM(f64, double, sqrt)
    /* SGD: d = g (negated to maximize) + l2 * p; buf = d at the first step (fresh),
       else buf * momentum + d * keep; d = buf, or d + momentum * buf with nesterov;
       p += d * -lr. buf NULL: no momentum. */
    #define EM_SGD(SFX, T)                                                              \\
    EM_CLONES static void em_sgd_##SFX(T *restrict p, const T *restrict g,             \\
                             T *restrict buf,                                           \\
                             int64_t n, T l2, int neg, T mom, T keep, int fresh,        \\
                             int nesterov, T nlr) {                                     \\
        for (int64_t i = 0; i < n; i++) {                                               \\
            T pi = p[i], d = neg ? -g[i] : g[i];                                        \\
            if (l2 != 0) d = pi * l2 + d;                                               \\
            if (buf) {                                                                  \\
                T b = fresh ? d : buf[i] * mom + (keep == 1 ? d : d * keep);            \\
                buf[i] = b;                                                             \\
                d = nesterov ? b * mom + d : b;                                         \\
            }                                                                           \\
            p[i] = pi + d * nlr;                                                        \\
        }                                                                               \\
    }
    EM_SGD(f32, float)
    EM_SGD(f64, double)
    """
    void em_adam_f32(float *p, const float *g, float *m, float *v, float *vmax, int64_t n,
                     float shrink, float l2, int neg, float w1, float w2, float eps2,
                     float step) nogil
    void em_adam_f64(double *p, const double *g, double *m, double *v, double *vmax,
                     int64_t n, double shrink, double l2, int neg, double w1, double w2,
                     double eps2, double step) nogil
    void em_sgd_f32(float *p, const float *g, float *buf, int64_t n, float l2, int neg,
                    float mom, float keep, int fresh, int nesterov, float nlr) nogil
    void em_sgd_f64(double *p, const double *g, double *buf, int64_t n, double l2, int neg,
                    double mom, double keep, int fresh, int nesterov, double nlr) nogil


cdef bint _fusable(TensorBase p, object others):
    """p and the tensors of `others` (None entries skipped) are contiguous CPU float32 or
    float64 tensors of one dtype and size: what the fused loops take."""
    cdef TensorBase t
    if p._storage.device.type_id != 0 or (p._dtype != _F32 and p._dtype != _F64) or \
            not p.contiguous_c():
        return False
    cdef int64_t n = p.numel_c()
    for o in others:
        if o is None:
            continue
        if not isinstance(o, TensorBase):
            return False
        t = <TensorBase>o
        if t._storage.device.type_id != 0 or t._dtype != p._dtype or not t.contiguous_c() \
                or t.numel_c() != n:
            return False
    return True


cdef inline void _bump(object t):
    if t is not None:
        (<TensorBase>t)._storage.version += 1


def adam_(list params, list grads, list exp_avgs, list exp_avg_sqs, list max_sqs,
          list bc1, list bc2_sqrt, double lr, double beta1, double beta2, double eps,
          double weight_decay, bint decoupled, bint maximize):
    """Adam's step (ember.optim.adam's arithmetic) in one pass per parameter, in place:
    p *= 1 - lr * wd (decoupled), g += wd * p (not decoupled), m lerps to g by 1 - beta1,
    v to g^2 by 1 - beta2, (vmax = max(vmax, v)), p += m / (sqrt(v) + eps * bc2_sqrt) *
    (-lr * bc2_sqrt / bc1). max_sqs: None entries without amsgrad. Returns the indices
    of the entries it could not take (not contiguous CPU float32/float64 of one dtype),
    for the composed ops."""
    cdef Py_ssize_t i, n = len(params)
    cdef list rest = []
    cdef TensorBase p, g, m, v
    cdef object vm
    cdef double shrink = 1 - lr * weight_decay if decoupled else 1.0
    cdef double l2 = 0.0 if decoupled else weight_decay
    cdef double w1 = 1 - beta1, w2 = 1 - beta2, e2, st
    cdef int64_t k
    cdef int neg = maximize
    cdef char *pp
    cdef char *gp
    cdef char *mp
    cdef char *vp
    cdef char *xp
    for i in range(n):
        vm = max_sqs[i]
        if not isinstance(params[i], TensorBase) or \
                not _fusable(<TensorBase>params[i], (grads[i], exp_avgs[i], exp_avg_sqs[i], vm)):
            rest.append(i)
            continue
        p, g, m, v = params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]
        k = p.numel_c()
        e2 = eps * bc2_sqrt[i]
        st = -lr * bc2_sqrt[i] / bc1[i]
        pp, gp, mp, vp = p.ptr(), g.ptr(), m.ptr(), v.ptr()
        xp = NULL if vm is None else (<TensorBase>vm).ptr()
        if p._dtype == _F32:
            with nogil:
                em_adam_f32(<float *>pp, <float *>gp, <float *>mp, <float *>vp, <float *>xp,
                            k, <float>shrink, <float>l2, neg, <float>w1, <float>w2,
                            <float>e2, <float>st)
        else:
            with nogil:
                em_adam_f64(<double *>pp, <double *>gp, <double *>mp, <double *>vp,
                            <double *>xp, k, shrink, l2, neg, w1, w2, e2, st)
        _bump(p)
        _bump(m)
        _bump(v)
        _bump(vm)
    return rest


def sgd_(list params, list grads, list bufs, list fresh, double lr, double momentum,
         double dampening, double weight_decay, bint nesterov, bint maximize):
    """SGD's step (ember.optim.sgd's arithmetic) in one pass per parameter, in place.
    bufs: the momentum buffers (None entries: no momentum); fresh[i]: bufs[i] is new and
    takes the direction itself (the first step). Returns the indices it could not take."""
    cdef Py_ssize_t i, n = len(params)
    cdef list rest = []
    cdef TensorBase p, g
    cdef object b
    cdef int64_t k
    cdef int neg = maximize, nest = nesterov, fr
    cdef double keep = 1 - dampening
    cdef char *pp
    cdef char *gp
    cdef char *bp
    for i in range(n):
        b = bufs[i]
        if not isinstance(params[i], TensorBase) or \
                not _fusable(<TensorBase>params[i], (grads[i], b)):
            rest.append(i)
            continue
        p, g = params[i], grads[i]
        k = p.numel_c()
        fr = bool(fresh[i])
        pp, gp = p.ptr(), g.ptr()
        bp = NULL if b is None else (<TensorBase>b).ptr()
        if p._dtype == _F32:
            with nogil:
                em_sgd_f32(<float *>pp, <float *>gp, <float *>bp, k, <float>weight_decay,
                           neg, <float>momentum, <float>keep, fr, nest, <float>-lr)
        else:
            with nogil:
                em_sgd_f64(<double *>pp, <double *>gp, <double *>bp, k, weight_decay, neg,
                           momentum, keep, fr, nest, -lr)
        _bump(p)
        _bump(b)
    return rest
