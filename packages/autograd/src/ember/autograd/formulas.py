"""THE derivative table: one row per differentiable op of tensor-core.

A row is a backward function registered under the op's recorded name:

    @formula("mul", inputs=(0, 1), uses={0: (1,), 1: (0,)})
    def _(n, g):
        a, b = n.inputs
        return g * b if n.needs[0] else None, g * a if n.needs[1] else None

`n` is the graph node: n.inputs (the op's inputs, saved when `inputs` lists their
positions), n.output (saved when output=True), n.attrs (what the op recorded: dims,
indices, ...), n.needs[i] (whether input i needs a gradient), n.metas[i] (input i's
(shape, dtype)). `g` is the gradient w.r.t. the output. The row returns one
gradient per input (None where not needed). Gradients of broadcast inputs are
reduced to the input's shape by the engine, so a row returns the broadcast shape.

Rows are written with ember ops, so they run on every device and, under
create_graph=True, are themselves recorded (higher-order gradients).

Complex tensors follow PyTorch's convention: `g` is the conjugate Wirtinger gradient
(dL/dRe + i dL/dIm of a real loss L), so a holomorphic f(z) has the row
grad_in = g * conj(f'(z)) (`_cj` below: conj of complex tensors, the identity on real
ones, so a row is one text for both), and a non-holomorphic one uses both Wirtinger
derivatives (abs, sgn, angle). A complex gradient flowing into a real input keeps its
real part (the engine's `_cast_grad`). Ops that are
not differentiable are listed in NOT_DIFFERENTIABLE: their results never require grad.
"""
from __future__ import annotations

import math

import ember as em
from ember._C import core as _core
from ember.autograd.graph import Formula
from ember.ops import linalg as LA, pool as P
from ember.ops.attention import sdpa_backward, sdpa_composite
from ember.ops.conv import conv2d_backward, conv_transpose2d_backward
from ember.ops.dropout import dropout_backward
from ember.ops.embedding import embedding_backward
from ember.ops.fft import fft_c2c_backward, fft_c2r_backward, fft_r2c_backward
from ember.ops.loss import cross_entropy_backward, cross_entropy_target_backward, nll_loss_backward
from ember.ops.norm import batch_norm_backward, layer_norm_backward
from ember.ops.rnn import (
    lstm_cell_composite,
    lstm_cell_pointwise_backward,
    lstm_sequence_backward,
    lstm_sequence_composite,
)
from ember.ops.softmax import softmax_backward

FORMULAS: dict = {}


def formula(*names, inputs=(), output=False, uses=None):
    def register(fn):
        for name in names:
            FORMULAS[name] = Formula(fn, inputs, output, uses)
        return fn
    return register


def _shape(n, i=0):
    return n.metas[i][0]


def _zeros_for(n, i, g):
    return em.zeros(_shape(n, i), dtype=n.metas[i][1], device=g.device)


def _where(cond, x, y):
    return em.where(cond, x, y)


def _is_complex(x):
    if isinstance(x, _core.TensorBase):
        return x.is_complex()
    return isinstance(x, complex)


_TensorBase = _core.TensorBase


def _cj(x):
    """conj(x) of a complex tensor or Python complex; x itself otherwise."""
    if isinstance(x, _TensorBase):
        return em.conj(x) if x.is_complex() else x
    return x.conjugate() if isinstance(x, complex) else x


def _re(x):
    """The real part of a complex tensor or number; x itself otherwise."""
    if isinstance(x, _core.TensorBase):
        return em.real(x) if x.is_complex() else x
    return x.real if isinstance(x, complex) else x


def _to_dtype(g, dtype):
    """g cast to dtype; a complex g to a real dtype keeps its real part (no warning)."""
    if g.is_complex() and dtype.kind != "complex":
        g = em.real(g)
    return g.to(dtype)


# ------------------------------------------------------------------------------------
# the op table's elementwise rows
# ------------------------------------------------------------------------------------

@formula("add")
def _(n, g):
    return g, g


@formula("sub")
def _(n, g):
    return g, (-g if n.needs[1] else None)


@formula("mul", inputs=(0, 1), uses={0: (1,), 1: (0,)})
def _(n, g):
    a, b = n.inputs
    return (g * _cj(b) if n.needs[0] else None), (g * _cj(a) if n.needs[1] else None)


@formula("div", inputs=(0, 1), uses={0: (1,), 1: (0, 1)})
def _(n, g):
    a, b = n.inputs
    ga = g / _cj(b) if n.needs[0] else None
    gb = -g * _cj(a / (b * b)) if n.needs[1] else None
    return ga, gb


@formula("remainder", inputs=(0, 1))
def _(n, g):
    a, b = n.inputs
    return g, (-g * em.floor_divide(a, b) if n.needs[1] else None)


@formula("fmod", inputs=(0, 1))
def _(n, g):
    a, b = n.inputs
    return g, (-g * em.trunc(a / b) if n.needs[1] else None)


@formula("floor_divide", "floor", "ceil", "trunc", "round", "sign")
def _(n, g):
    # piecewise constant: zero almost everywhere (PyTorch's convention too)
    return tuple(em.zeros_like(g) if need else None for need in n.needs)


@formula("sgn", inputs=(0,), output=True)
def _(n, g):
    z = n.inputs[0]
    if not z.is_complex():          # sign: piecewise constant
        return em.zeros_like(g),
    # s = z / |z|: ds/dz = 1 / (2|z|), ds/dconj(z) = -s^2 / (2|z|), so
    # grad = (g - conj(g) s^2) / (2|z|), 0 at z == 0 (PyTorch's sgn_backward)
    s = n.output
    r = em.abs(z)
    return _where(r == 0, 0.0, (g - em.conj(g) * s * s) / (2 * _where(r == 0, 1.0, r))),


@formula("angle", inputs=(0,))
def _(n, g):
    z = n.inputs[0]
    if not z.is_complex():          # 0 or pi: piecewise constant
        return em.zeros_like(z),
    # atan2(y, x): d/dx = -y/|z|^2, d/dy = x/|z|^2, so grad = g * i z / |z|^2
    r2 = em.real(z * em.conj(z))
    return _where(r2 == 0, 0.0, g * (z * 1j) / _where(r2 == 0, 1.0, r2)),


@formula("pow", inputs=(0, 1), output=True)
def _(n, g):
    # a Python-scalar base or exponent as a 0-d tensor on the gradient's device
    a, b = (x if isinstance(x, _core.TensorBase) else em.full((), x, dtype=g.dtype,
                                                             device=g.device)
            for x in n.inputs)
    ga = gb = None
    if n.needs[0]:
        # b * a**(b-1), with 0 where b == 0 (0 * inf at a == 0 would give NaN)
        ga = _where(b == 0, 0.0, g * _cj(b * em.pow(a, b - 1)))
    if n.needs[1]:
        # y * log(a), with 0 where a == 0 and b >= 0 (the limit; Re(b) for complex b)
        gb = _where((a == 0) & (_re(b) >= 0), 0.0, g * _cj(n.output * em.log(a)))
    return ga, gb


@formula("atan2", inputs=(0, 1))
def _(n, g):
    a, b = n.inputs
    r = a * a + b * b
    return (g * b / r if n.needs[0] else None), (-g * a / r if n.needs[1] else None)


@formula("hypot", inputs=(0, 1), output=True)
def _(n, g):
    a, b = n.inputs
    y = n.output
    return (g * a / y if n.needs[0] else None), (g * b / y if n.needs[1] else None)


@formula("copysign", inputs=(0,), output=True)
def _(n, g):
    a = n.inputs[0]
    ga = _where(a == 0, 0.0, g * em.sign(a) * em.sign(n.output)) if n.needs[0] else None
    return ga, (em.zeros_like(g) if n.needs[1] else None)


@formula("maximum", "minimum", inputs=(0, 1))
def _(n, g):
    a, b = n.inputs
    first = (a > b) if n.op == "maximum" else (a < b)
    tie = a == b
    half = g * 0.5
    ga = _where(first, g, _where(tie, half, 0.0)) if n.needs[0] else None
    gb = _where(first | tie, _where(tie, half, 0.0), g) if n.needs[1] else None
    return ga, gb


@formula("fmax", "fmin", inputs=(0, 1))
def _(n, g):
    a, b = n.inputs
    pick_a = ((a >= b) if n.op == "fmax" else (a <= b)) | em.isnan(b)
    return (_where(pick_a, g, 0.0) if n.needs[0] else None), \
        (_where(pick_a, 0.0, g) if n.needs[1] else None)


@formula("clamp", inputs=(0, 1, 2))
def _(n, g):
    x, lo, hi = n.inputs
    inside = (x >= lo) & (x <= hi)
    return (_where(inside, g, 0.0) if n.needs[0] else None,
            _where(x < lo, g, 0.0) if n.needs[1] else None,
            _where(x > hi, g, 0.0) if n.needs[2] else None)


@formula("lerp", inputs=(0, 1, 2))
def _(n, g):
    a, b, w = n.inputs
    return (g * _cj(1 - w) if n.needs[0] else None, g * _cj(w) if n.needs[1] else None,
            g * _cj(b - a) if n.needs[2] else None)


@formula("where", inputs=(0,))
def _(n, g):
    cond = n.inputs[0]
    return (None, _where(cond, g, 0.0) if n.needs[1] else None,
            _where(cond, 0.0, g) if n.needs[2] else None)


@formula("neg")
def _(n, g):
    return -g,


@formula("positive")
def _(n, g):
    return g,


@formula("conj_physical")
def _(n, g):
    return em.conj(g),


@formula("abs", inputs=(0,))
def _(n, g):
    x = n.inputs[0]        # complex: d|z|/dRe + i d|z|/dIm = z / |z| = sgn(z)
    return g * (em.sgn(x) if x.is_complex() else em.sign(x)),


@formula("reciprocal", output=True)
def _(n, g):
    y = n.output
    return -g * _cj(y * y),


@formula("square", inputs=(0,))
def _(n, g):
    return 2 * g * _cj(n.inputs[0]),


@formula("sqrt", output=True)
def _(n, g):
    return g / (2 * _cj(n.output)),


@formula("rsqrt", output=True)
def _(n, g):
    y = n.output
    return -0.5 * g * _cj(y * y * y),


@formula("exp", output=True)
def _(n, g):
    return g * _cj(n.output),


@formula("exp2", output=True)
def _(n, g):
    return g * _cj(n.output) * math.log(2.0),


@formula("expm1", output=True)
def _(n, g):
    return g * _cj(n.output + 1),


@formula("log", inputs=(0,))
def _(n, g):
    return g / _cj(n.inputs[0]),


@formula("log2", inputs=(0,))
def _(n, g):
    return g / (_cj(n.inputs[0]) * math.log(2.0)),


@formula("log10", inputs=(0,))
def _(n, g):
    return g / (_cj(n.inputs[0]) * math.log(10.0)),


@formula("log1p", inputs=(0,))
def _(n, g):
    return g / _cj(n.inputs[0] + 1),


@formula("sin", inputs=(0,))
def _(n, g):
    return g * _cj(em.cos(n.inputs[0])),


@formula("cos", inputs=(0,))
def _(n, g):
    return -g * _cj(em.sin(n.inputs[0])),


@formula("tan", output=True)
def _(n, g):
    y = n.output
    return g * _cj(1 + y * y),


@formula("asin", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return g * _cj(em.rsqrt(1 - a * a)),


@formula("acos", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return -g * _cj(em.rsqrt(1 - a * a)),


@formula("atan", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return g / _cj(1 + a * a),


@formula("sinh", inputs=(0,))
def _(n, g):
    return g * _cj(em.cosh(n.inputs[0])),


@formula("cosh", inputs=(0,))
def _(n, g):
    return g * _cj(em.sinh(n.inputs[0])),


@formula("tanh", output=True)
def _(n, g):
    y = n.output
    return g * _cj(1 - y * y),


@formula("asinh", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return g * _cj(em.rsqrt(a * a + 1)),


@formula("acosh", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    if a.is_complex():     # 1 / sqrt(z^2 - 1) is on the wrong branch off the real line
        return g * _cj(em.rsqrt(a + 1) * em.rsqrt(a - 1)),
    return g * em.rsqrt(a * a - 1),


@formula("atanh", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return g / _cj(1 - a * a),


@formula("relu", output=True)
def _(n, g):
    if not _core.is_grad_enabled():      # one pass; create_graph: the composed form below
        return em._relu_grad(g, n.output),
    return em.where(n.output <= 0, 0.0, g),


@formula("sigmoid", output=True)
def _(n, g):
    y = n.output
    return g * _cj(y * (1 - y)),


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@formula("erf", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return g * _TWO_OVER_SQRT_PI * em.exp(-a * a),


@formula("gelu", inputs=(0,))
def _(n, g):
    x = n.inputs[0]
    if not _core.is_grad_enabled():      # one pass; create_graph: the composed form below
        return em._gelu_grad(g, x),
    cdf = em.erfc(x * -_SQRT_HALF) * 0.5
    pdf = em.exp(x * x * -0.5) * _INV_SQRT_2PI
    return g * (cdf + x * pdf),


@formula("_gelu_tanh", inputs=(0,))
def _(n, g):
    x = n.inputs[0]
    if not _core.is_grad_enabled():
        return em._gelu_tanh_grad(g, x),
    k = math.sqrt(2.0 / math.pi)
    t = em.tanh(k * (x + 0.044715 * x * x * x))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 0.134145 * x * x)),


@formula("erfinv", output=True)
def _(n, g):   # d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x) ** 2)
    y = n.output
    return (g * (math.sqrt(math.pi) / 2) * em.exp(y * y),)


@formula("erfc", inputs=(0,))
def _(n, g):
    a = n.inputs[0]
    return -g * _TWO_OVER_SQRT_PI * em.exp(-a * a),


# ------------------------------------------------------------------------------------
# the special functions (ember.special; rows of kernels/common/ember_special.h)
# ------------------------------------------------------------------------------------

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _not_implemented(op, what):
    raise RuntimeError(f"the derivative of {op} with respect to {what} is not implemented "
                       f"(as in PyTorch)")


@formula("lgamma", inputs=(0,))
def _(n, g):
    return g * em.digamma(n.inputs[0]),


@formula("digamma", inputs=(0,))
def _(n, g):
    return g * em.polygamma(1, n.inputs[0]),


@formula("special_polygamma", inputs=(0, 1))
def _(n, g):   # polygamma(n, x): n is an integer
    k, x = n.inputs
    if n.needs[0]:
        _not_implemented("polygamma", "n")
    return None, g * em.polygamma(k + 1, x)


@formula("special_zeta", inputs=(0, 1))
def _(n, g):   # d zeta(x, q) / dq = -x zeta(x + 1, q); x: not implemented
    x, q = n.inputs
    if n.needs[0]:
        _not_implemented("zeta", "x (its first argument)")
    return None, g * -x * em.special_zeta(x + 1, q)


def _igamma_dx(n, g, sign):
    # d P(a, x) / dx = x^(a-1) e^-x / Gamma(a) = -d Q(a, x) / dx; a: not implemented
    a, x = n.inputs
    if n.needs[0]:
        _not_implemented(n.op, "a (its first argument)")
    la = em.lgamma(a) if isinstance(a, _core.TensorBase) else math.lgamma(a)
    return None, g * (sign * em.exp((a - 1) * em.log(x) - x - la))


@formula("igamma", inputs=(0, 1))
def _(n, g):
    return _igamma_dx(n, g, 1.0)


@formula("igammac", inputs=(0, 1))
def _(n, g):
    return _igamma_dx(n, g, -1.0)


@formula("i0", inputs=(0,))
def _(n, g):
    return g * em.special_i1(n.inputs[0]),


@formula("special_i1", inputs=(0,), output=True)
def _(n, g):   # I1' = I0 - I1 / x (1/2 at 0)
    x = n.inputs[0]
    return g * _where(x == 0, 0.5, em.i0(x) - n.output / _where(x == 0, 1.0, x)),


@formula("special_i0e", inputs=(0,), output=True)
def _(n, g):   # (e^-|x| I0)' = i1e - sign(x) i0e
    x = n.inputs[0]
    return g * (em.special_i1e(x) - em.sign(x) * n.output),


@formula("special_i1e", inputs=(0,), output=True)
def _(n, g):   # (e^-|x| I1)' = i0e - i1e (sign(x) + 1 / x)
    x = n.inputs[0]
    safe = _where(x == 0, 1.0, x)
    return g * _where(x == 0, 0.5, em.special_i0e(x) - n.output * (em.sign(x) + 1 / safe)),


@formula("special_modified_bessel_k0", inputs=(0,))
def _(n, g):
    return g * -em.special_modified_bessel_k1(n.inputs[0]),


@formula("special_modified_bessel_k1", inputs=(0,), output=True)
def _(n, g):   # K1' = -K0 - K1 / x
    x = n.inputs[0]
    return g * (-em.special_modified_bessel_k0(x) - n.output / x),


@formula("special_scaled_modified_bessel_k0", inputs=(0,), output=True)
def _(n, g):   # (e^x K0)' = k0e - k1e
    return g * (n.output - em.special_scaled_modified_bessel_k1(n.inputs[0])),


@formula("special_scaled_modified_bessel_k1", inputs=(0,), output=True)
def _(n, g):   # (e^x K1)' = k1e (1 - 1 / x) - k0e
    x = n.inputs[0]
    return g * (n.output * (1 - 1 / x) - em.special_scaled_modified_bessel_k0(x)),


@formula("special_bessel_j0", inputs=(0,))
def _(n, g):
    return g * -em.special_bessel_j1(n.inputs[0]),


@formula("special_bessel_j1", inputs=(0,), output=True)
def _(n, g):   # J1' = J0 - J1 / x (1/2 at 0)
    x = n.inputs[0]
    return g * _where(x == 0, 0.5, em.special_bessel_j0(x) - n.output / _where(x == 0, 1.0, x)),


@formula("special_bessel_y0", inputs=(0,))
def _(n, g):
    return g * -em.special_bessel_y1(n.inputs[0]),


@formula("special_bessel_y1", inputs=(0,), output=True)
def _(n, g):   # Y1' = Y0 - Y1 / x
    x = n.inputs[0]
    return g * (em.special_bessel_y0(x) - n.output / x),


@formula("special_spherical_bessel_j0", inputs=(0,), output=True)
def _(n, g):   # (sin x / x)' = (cos x - j0) / x, 0 at 0
    x = n.inputs[0]
    safe = _where(x == 0, 1.0, x)
    return g * _where(x == 0, 0.0, (em.cos(x) - n.output) / safe),


@formula("sinc", inputs=(0,), output=True)
def _(n, g):   # (cos(pi x) - sinc(x)) / x, 0 at 0
    x = n.inputs[0]
    safe = _where(x == 0, 1.0, x)
    return g * _where(x == 0, 0.0, (em.cos(x * math.pi) - n.output) / safe),


@formula("logit", inputs=(0,))
def _(n, g):
    x = n.inputs[0]
    return g / (x * (1 - x)),


@formula("special_erfcx", inputs=(0,), output=True)
def _(n, g):   # 2 x erfcx(x) - 2 / sqrt(pi)
    return g * (2 * n.inputs[0] * n.output - _TWO_OVER_SQRT_PI),


@formula("special_ndtr", inputs=(0,))
def _(n, g):
    x = n.inputs[0]
    return g * em.exp(x * x * -0.5) * _INV_SQRT_2PI,


@formula("special_ndtri", output=True)
def _(n, g):   # 1 / ndtr'(ndtri(p)) = sqrt(2 pi) exp(y^2 / 2)
    y = n.output
    return g * _SQRT_2PI * em.exp(y * y * 0.5),


@formula("special_log_ndtr", inputs=(0,), output=True)
def _(n, g):   # ndtr' / ndtr = exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)
    x = n.inputs[0]
    return g * em.exp(x * x * -0.5 - n.output) * _INV_SQRT_2PI,


@formula("special_entr", inputs=(0,))
def _(n, g):   # -(1 + log x)
    return g * -(1 + em.log(n.inputs[0])),


@formula("special_xlog1py", inputs=(0, 1))
def _(n, g):
    x, y = n.inputs
    gx = g * em.special_xlog1py(x != 0, y) if n.needs[0] else None
    gy = g * x / (1 + y) if n.needs[1] else None
    return gx, gy


# ------------------------------------------------------------------------------------
# reductions (attrs: dim = the reduced dims of the input, keepdim)
# ------------------------------------------------------------------------------------

def _unreduce(g, n):
    """g (the reduced result's shape) with the reduced dims back as size 1."""
    if n.attrs["keepdim"]:
        return g
    shape = list(_shape(n))
    for d in n.attrs["dim"]:
        shape[d] = 1
    return g.reshape(shape)


@formula("sum")
def _(n, g):
    return _unreduce(g, n).expand(_shape(n)),


@formula("amax", "amin", inputs=(0,), output=True)
def _(n, g):
    # shared equally among the elements that attain the extreme (PyTorch's rule)
    x = n.inputs[0]
    hit = (x == _unreduce(n.output, n)).to(g.dtype)
    return _unreduce(g, n) * hit / hit.sum(n.attrs["dim"], keepdim=True),


@formula("norm2", inputs=(0,), output=True)
def _(n, g):
    y = _unreduce(n.output, n)
    return _unreduce(g, n) * n.inputs[0] / em.where(y == 0, 1.0, y),


@formula("prod", inputs=(0,))
def _(n, g):
    # product of the others, by exclusive cumulative products (exact with zeros)
    x = n.inputs[0]
    dims = n.attrs["dim"]
    shape = tuple(_shape(n))
    keep = [d for d in range(len(shape)) if d not in dims]
    perm = keep + list(dims)
    xt = x.permute(perm).reshape([shape[d] for d in keep] + [-1])
    ones = em.ones_like(xt.narrow(-1, 0, 1))
    left = em.cat([ones, xt.narrow(-1, 0, xt.shape[-1] - 1)], -1).cumprod(-1)
    right = em.cat([ones, xt.flip(-1).narrow(-1, 0, xt.shape[-1] - 1)], -1).cumprod(-1).flip(-1)
    others = (left * right).reshape([shape[d] for d in perm])
    inverse = [perm.index(d) for d in range(len(shape))]
    return _unreduce(g, n) * _cj(others.permute(inverse)),


# ------------------------------------------------------------------------------------
# views and copies
# ------------------------------------------------------------------------------------

@formula("view")
def _(n, g):
    return g.reshape(_shape(n)),


@formula("permute")
def _(n, g):
    dims = n.attrs["dims"]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return g.permute(inverse),


@formula("expand", "clone")
def _(n, g):
    return g,      # expand: the engine sums the broadcast dims back


@formula("to")
def _(n, g):
    return _to_dtype(g, n.attrs["from_dtype"]),


@formula("to_device")
def _(n, g):
    return g.to(n.attrs["from_device"]),


# complex numbers (ember/ops/complex.py): the parts as views, and their inverse
@formula("real")
def _(n, g):
    return g,            # the engine casts it to the complex input's dtype: g + 0i


@formula("imag")
def _(n, g):
    return em.complex(em.zeros_like(g), g),      # L depends on Im z: dL/dIm * i


@formula("view_as_real")
def _(n, g):
    return em.view_as_complex(_re(g).contiguous()),


@formula("view_as_complex")
def _(n, g):
    return em.view_as_real(g if g.is_complex() else g.to(n.metas[0][1].to_complex())),


@formula("complex")
def _(n, g):
    if not g.is_complex():
        return (g if n.needs[0] else None), (em.zeros_like(g) if n.needs[1] else None)
    return (em.real(g) if n.needs[0] else None), (em.imag(g) if n.needs[1] else None)


def _scatter_into_zeros(n, g, key):
    z = _zeros_for(n, 0, g)
    z[key] = g
    return z


@formula("narrow")
def _(n, g):
    a = n.attrs
    if not _core.is_grad_enabled():
        # the common case (split/chunk's parts): a copy into the slice's view, without
        # the indexing machinery of z[key] = g
        z = _zeros_for(n, 0, g)
        z.narrow(a["dim"], a["start"], a["length"]).copy_(g)
        return z,
    key = (slice(None),) * a["dim"] + (slice(a["start"], a["start"] + a["length"]),)
    return _scatter_into_zeros(n, g, key),


@formula("index_view")
def _(n, g):
    return _scatter_into_zeros(n, g, n.attrs["key"]),


@formula("diagonal")
def _(n, g):
    a = n.attrs
    shape = _shape(n)
    d1, d2, off = a["dim1"], a["dim2"], a["offset"]
    k = g.shape[-1]
    rows = em.arange(k, device=g.device) + max(-off, 0)
    cols = em.arange(k, device=g.device) + max(off, 0)
    key = [slice(None)] * len(shape)
    key[d1], key[d2] = rows, cols
    # advanced indices in adjacent dims keep their place, otherwise they go first
    lo = min(d1, d2)
    where = lo if abs(d1 - d2) == 1 else 0
    return _scatter_into_zeros(n, g.movedim(-1, where), tuple(key)),


@formula("unfold")
def _(n, g):
    a = n.attrs
    d, size, step = a["dim"], a["size"], a["step"]
    shape = _shape(n)
    if not shape:
        return g.reshape(()),
    windows = g.shape[d]
    # out[..., w, ..., k] = x[..., w * step + k, ...]: add each back at its position
    src = g.movedim(-1, d + 1)
    src = src.reshape(tuple(src.shape[:d]) + (windows * size,) + tuple(src.shape[d + 2:]))
    pos = (em.arange(windows, device=g.device).reshape(-1, 1) * step +
           em.arange(size, device=g.device)).reshape(-1)
    return _zeros_for(n, 0, g).index_add(d, pos, src),


@formula("as_strided", inputs=(0,))
def _(n, g):
    # through storage positions: add the output's elements into a flat image of the
    # storage, then read the input's elements back out of it
    x = n.inputs[0]
    a = n.attrs
    offset = x.storage_offset() if a["storage_offset"] is None else a["storage_offset"]

    def positions(shape, strides, off):
        p = em.full((), off, dtype=em.int64, device=g.device)
        for s, st in zip(shape, strides):
            p = p.unsqueeze(-1) + em.arange(s, device=g.device) * st
        return p.reshape(-1)

    out_pos = positions(a["size"], a["stride"], offset)
    in_pos = positions(x.shape, x.stride(), x.storage_offset())
    extent = 1 + max(int(out_pos.max()) if out_pos.numel() else 0,
                     int(in_pos.max()) if in_pos.numel() else 0)
    flat = em.zeros(extent, dtype=g.dtype, device=g.device).index_add(0, out_pos, g.reshape(-1))
    return flat[in_pos].reshape(x.shape),


# ------------------------------------------------------------------------------------
# indexing, gather/scatter, joins
# ------------------------------------------------------------------------------------

def _index_key(indices):
    return tuple(slice(None) if i is None else i for i in indices)


@formula("index")
def _(n, g):
    z = _zeros_for(n, 0, g)
    return z.index_put(_index_key(n.attrs["indices"]), g, accumulate=True),


@formula("setitem")
def _(n, g):
    key = n.attrs["key"]
    gx = gv = None
    if n.needs[0]:
        if n.attrs["accumulate"]:
            gx = g
        else:
            gx = g.clone()
            gx[key] = 0.0
    if n.needs[1]:
        gv = g[key]
    return gx, gv


@formula("gather")
def _(n, g):
    a = n.attrs
    return _zeros_for(n, 0, g).scatter_add(a["dim"], a["index"], g),


@formula("scatter")
def _(n, g):
    a = n.attrs
    if a.get("reduce") not in (None, "add"):
        raise NotImplementedError(f"the derivative of scatter with reduce={a['reduce']!r} "
                                  f"is not implemented; use scatter_reduce")
    d, index = a["dim"], a["index"]
    gx = (g if a.get("reduce") == "add" else g.scatter(d, index, 0.0)) if n.needs[0] else None
    gs = g.gather(d, index) if len(n.needs) > 1 and n.needs[1] else None
    return (gx,) + ((gs,) if len(n.needs) > 1 else ())


@formula("scatter_add")
def _(n, g):
    a = n.attrs
    return g, (g.gather(a["dim"], a["index"]) if n.needs[1] else None)


@formula("scatter_reduce", inputs=(0, 1), output=True)
def _(n, g):
    a = n.attrs
    d, index, reduce = a["dim"], a["index"], a["reduce"]
    include_self = a.get("include_self", True)
    x, src = n.inputs
    y = n.output
    if reduce == "sum":
        gx = g if include_self else g.scatter(d, index, 0.0)
        return gx, g.gather(d, index)
    if reduce == "mean":
        ones = em.ones_like(src)
        count = em.ones_like(x) if include_self else em.zeros_like(x)
        count = count.scatter_add(d, index, ones).clamp(min=1)
        gx = g / count
        if not include_self:
            gx = gx.scatter(d, index, 0.0)
        return gx, (g / count).gather(d, index)
    if reduce in ("amax", "amin"):
        # shared among the elements (self included) that attain the extreme
        if include_self:
            hit_x = (x == y).to(g.dtype)
        else:          # self counts only where nothing was scattered
            hit_x = (em.ones_like(x).scatter(d, index, 0.0) == 1).to(g.dtype)
        hit_s = (src == y.gather(d, index)).to(g.dtype)
        count = hit_x.scatter_add(d, index, hit_s)
        share = g / count.clamp(min=1)
        return share * hit_x, share.gather(d, index) * hit_s
    if reduce == "prod":
        gx = g * _cj(y / x) if include_self else g.scatter(d, index, 0.0)
        return gx, (g * _cj(y)).gather(d, index) / _cj(src)
    raise NotImplementedError(f"the derivative of scatter_reduce with reduce={reduce!r}")


@formula("index_select")
def _(n, g):
    a = n.attrs
    return _zeros_for(n, 0, g).index_add(a["dim"], a["index"], g),


@formula("index_add")
def _(n, g):
    a = n.attrs
    alpha = a.get("alpha", 1)
    gs = None
    if n.needs[1]:
        gs = g.index_select(a["dim"], a["index"])
        if alpha != 1:
            gs = gs * alpha
    return g, gs


@formula("index_copy")
def _(n, g):
    a = n.attrs
    gx = g.index_fill(a["dim"], a["index"], 0.0) if n.needs[0] else None
    gs = g.index_select(a["dim"], a["index"]) if n.needs[1] else None
    return gx, gs


@formula("index_fill")
def _(n, g):
    a = n.attrs
    gx = g.index_fill(a["dim"], a["index"], 0.0) if n.needs[0] else None
    if len(n.needs) == 1:
        return gx,
    gv = g.index_select(a["dim"], a["index"]).sum() if n.needs[1] else None
    return gx, gv


@formula("cat")
def _(n, g):
    d = n.attrs["dim"]
    grads = []
    start = 0
    for size, need in zip(n.attrs["sizes"], n.needs):
        grads.append(g.narrow(d, start, size) if need else None)
        start += size
    return tuple(grads)


@formula("flip")
def _(n, g):
    return g.flip(n.attrs["dims"]),


def _reverse_cumsum(g, d):
    return g.flip(d).cumsum(d).flip(d)


@formula("cumsum")
def _(n, g):
    return _reverse_cumsum(g, n.attrs["dim"]),


@formula("cumprod", inputs=(0,), output=True)
def _(n, g):
    x, y, d = n.inputs[0], n.output, n.attrs["dim"]
    # before the first zero of a row: the usual sum_j>=i g_j y_j / x_i; at the first
    # zero z: sum_j>=z g_j prod_{k<=j, k!=z} x_k (the cumprod with x_z taken as 1);
    # after it: every product contains x_z, so 0.
    zero = x == 0
    seen = zero.to(em.int64).cumsum(d)
    first = zero & (seen == 1)
    before = seen == 0
    safe_x = _where(before, x, 1.0)
    regular = _reverse_cumsum(g * _cj(y), d) / _cj(safe_x)
    skip_first = _where(first, 1.0, x).cumprod(d)
    at_first = _reverse_cumsum(_where(seen >= 1, g * _cj(skip_first), 0.0), d)
    return _where(before, regular, _where(first, at_first, 0.0)),


@formula("matmul", inputs=(0, 1), uses={0: (1,), 1: (0, 1)})  # b: its layout too
def _(n, g):
    a, b = n.inputs          # a is saved only when b needs a gradient, and b vice versa
    ga = gb = None
    nda = len(n.metas[0][0]) if a is None else a.ndim
    ndb = len(n.metas[1][0]) if b is None else b.ndim
    # complex: grad_a = g @ b^H, grad_b = a^H @ g (conjugate transposes)
    a, b = _cj(a), _cj(b)
    if nda == 1 and ndb == 1:
        return (g * b if n.needs[0] else None), (g * a if n.needs[1] else None)
    if n.needs[0]:
        if nda == 1:
            ga = (g.unsqueeze(-2) @ b.transpose(-1, -2)).squeeze(-2)
        elif ndb == 1:
            ga = g.unsqueeze(-1) * b
        else:
            ga = g @ b.transpose(-1, -2)
    if n.needs[1]:
        if ndb == 1:
            gb = (a.transpose(-1, -2) @ g.unsqueeze(-1)).squeeze(-1)
        elif nda == 1:
            gb = a.unsqueeze(-1) * g.unsqueeze(-2)
        elif b.ndim == 2 and b.stride(0) == 1 and b.stride(1) == b.shape[0]:
            # b is a transposed contiguous matrix (Linear's weight.T): its gradient
            # laid out like its base, so the base's .grad is contiguous
            gb = (g.flatten(0, -2).transpose(0, 1) @ a.flatten(0, -2)).transpose(0, 1)
        else:
            gb = a.transpose(-1, -2) @ g
    return ga, gb


@formula("linear", inputs=(0, 1), uses={0: (1,), 1: (0,)})
def _(n, g):
    """nn.functional.linear, input @ weight.T + bias (real, input at least 2-d): the
    input's gradient g @ weight, the weight's g^T @ input over the leading dims
    flattened (laid out as the weight), the bias's g summed over them."""
    x, w = n.inputs[0], n.inputs[1]
    g2 = g.reshape(-1, g.shape[-1]) if n.needs[1] or n.needs[2] else None
    gx = g @ w if n.needs[0] else None
    gw = g2.transpose(0, 1) @ x.reshape(-1, x.shape[-1]) if n.needs[1] else None
    gb = g2.sum(0) if n.needs[2] else None
    return gx, gw, gb


# ------------------------------------------------------------------------------------
# fused numerics
# ------------------------------------------------------------------------------------

@formula("softmax", output=True)
def _(n, g):
    y, d = n.output, n.attrs["dim"]
    if _core.is_grad_enabled():          # create_graph: stay differentiable
        return y * (g - (g * y).sum(d, keepdim=True)),
    return softmax_backward(g, y, d, log=False),


@formula("log_softmax", output=True)
def _(n, g):
    y, d = n.output, n.attrs["dim"]
    if _core.is_grad_enabled():
        return g - em.exp(y) * g.sum(d, keepdim=True),
    return softmax_backward(g, y, d, log=True),


def _by_composite(n, g, forward):
    """create_graph=True: differentiate a composite form of a fused op (ember ops)
    instead of calling its backward kernel, so that the gradient is itself
    differentiable. The node saved all of its inputs."""
    from ember.autograd import grad
    ins = n.inputs
    wanted = [i for i, need in enumerate(n.needs) if need]
    out = forward(*ins)
    grads = grad(out, [ins[i] for i in wanted], g, create_graph=True, allow_unused=True)
    result = [None] * len(n.needs)
    for i, gi in zip(wanted, grads):
        result[i] = gi
    return tuple(result)


def _normalize(x, dims, eps):
    mu = x.mean(dims, keepdim=True)
    var = ((x - mu) * (x - mu)).mean(dims, keepdim=True)
    return (x - mu) * em.rsqrt(var + eps)


@formula("scaled_dot_product_attention", inputs=(0, 1, 2), output=True)
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        return _by_composite(n, g, lambda q, k, v: sdpa_composite(
            q, k, v, a["mask"], a["is_causal"], a["scale"]))
    q, k, v = n.inputs
    return sdpa_backward(g, q, k, v, a["mask"], n.output, a["lse"], a["is_causal"],
                         a["scale"])


@formula("layer_norm", inputs=(0, 1, 2))
def _(n, g):
    a = n.attrs
    shape = a["normalized_shape"]
    if _core.is_grad_enabled():
        dims = tuple(range(-len(shape), 0))

        def forward(x, w, b):
            y = _normalize(x, dims, a["eps"])
            y = y * w if w is not None else y
            return y + b if b is not None else y
        return _by_composite(n, g, forward)
    x, w, b = n.inputs
    return layer_norm_backward(g, x, shape, a["mean"], a["rstd"], w, b, n.needs)


@formula("batch_norm", inputs=(0, 1, 2))
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        def forward(x, w, b):
            per_channel = (1, -1) + (1,) * (x.ndim - 2)
            if a["training"]:
                y = _normalize(x, (0,) + tuple(range(2, x.ndim)), a["eps"])
            else:        # the running statistics are constants here
                y = (x - a["mean"].reshape(per_channel)) * a["invstd"].reshape(per_channel)
            y = y * w.reshape(per_channel) if w is not None else y
            return y + b.reshape(per_channel) if b is not None else y
        return _by_composite(n, g, forward)
    x, w, _ = n.inputs
    return batch_norm_backward(g, x, w, a["mean"], a["invstd"], a["training"], a["eps"],
                               n.needs)


def _nll_composite(logp, target, weight, ignore_index, reduction, label_smoothing):
    """The class-index loss of PyTorch's cross_entropy/nll_loss, from log-probabilities
    with classes in dim 1 (or dim 0 unbatched)."""
    cd = 0 if logp.ndim == 1 else 1
    C = logp.shape[cd]
    keep = target != ignore_index
    safe = em.where(keep, target, 0)
    picked = logp.gather(cd, safe.unsqueeze(cd)).squeeze(cd)
    per_class = em.ones(C, dtype=logp.dtype, device=logp.device) if weight is None else \
        weight.to(logp.dtype)
    wt = em.where(keep, per_class[safe], 0.0)
    loss = -wt * picked
    if label_smoothing:
        shape = [1] * logp.ndim
        shape[cd] = C
        smooth = -(logp * per_class.reshape(shape)).sum(cd)
        loss = (1 - label_smoothing) * loss + em.where(keep, smooth, 0.0) * (label_smoothing / C)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


@formula("cross_entropy", inputs=(0, 1))
def _(n, g):
    a = n.attrs
    if len(n.needs) == 2:          # class probabilities: the target has a gradient too
        if _core.is_grad_enabled():
            def forward(x, t):
                cd = 0 if x.ndim == 1 else 1
                C = x.shape[cd]
                logp = em.log_softmax(x, cd)
                t = (1 - a["label_smoothing"]) * t + a["label_smoothing"] / C
                if a["weight"] is not None:
                    shape = [1] * x.ndim
                    shape[cd] = C
                    t = t * a["weight"].reshape(shape)
                loss = -(logp * t).sum(cd)
                if a["reduction"] == "none":
                    return loss
                return loss.sum() / (1 if a["reduction"] == "sum" else x.numel() // C)
            return _by_composite(n, g, forward)
        x, t = n.inputs
        gx = cross_entropy_backward(g, x, t, a["weight"], a["ignore_index"], a["reduction"],
                                    a["label_smoothing"]) if n.needs[0] else None
        gt = cross_entropy_target_backward(g, x, t, a["weight"], a["reduction"],
                                           a["label_smoothing"]) if n.needs[1] else None
        return gx, gt
    if _core.is_grad_enabled():
        def forward(x):
            logp = em.log_softmax(x, 0 if x.ndim == 1 else 1)
            return _nll_composite(logp, a["target"], a["weight"], a["ignore_index"],
                                  a["reduction"], a["label_smoothing"])
        return _by_composite(n, g, forward)
    return cross_entropy_backward(g, n.inputs[0], a["target"], a["weight"], a["ignore_index"],
                                  a["reduction"], a["label_smoothing"], a.get("total")),


@formula("nll_loss", inputs=(0,))
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        return _by_composite(n, g, lambda x: _nll_composite(
            x, a["target"], a["weight"], a["ignore_index"], a["reduction"], 0.0))
    return nll_loss_backward(g, n.inputs[0], a["target"], a["weight"], a["ignore_index"],
                             a["reduction"]),


@formula("embedding")
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled() and not a["scale_grad_by_freq"]:
        idx = a["indices"].reshape(-1)
        gw = em.zeros(_shape(n), dtype=g.dtype, device=g.device).index_add(
            0, idx, g.reshape(idx.shape[0], -1))
        if a["padding_idx"] is not None:
            gw = gw.index_fill(0, em.tensor([a["padding_idx"]], device=g.device), 0.0)
        return gw,
    return embedding_backward(g, a["indices"], a["num_weights"], a["padding_idx"],
                              a["scale_grad_by_freq"]),


@formula("lstm_cell_pointwise", inputs=(0, 1), output=True)
def _(n, g):
    if _core.is_grad_enabled():
        return _by_composite(n, g, lstm_cell_composite)
    gates, c = n.inputs
    dg, dc = lstm_cell_pointwise_backward(g, gates, c, n.output)
    return dg if n.needs[0] else None, dc if n.needs[1] else None


@formula("lstm_sequence", inputs=(0, 1, 2, 3), output=True)
def _(n, g):
    if _core.is_grad_enabled():
        return _by_composite(n, g, lstm_sequence_composite)
    proj, h0, c0, w_hh = n.inputs
    return lstm_sequence_backward(g, proj, h0, c0, w_hh, n.output, n.attrs["gates"], n.needs)


@formula("dropout")
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        return g * a["mask"].to(g.dtype) * (0.0 if a["p"] >= 1 else 1.0 / (1.0 - a["p"])),
    return dropout_backward(g, a["mask"], a["p"]),


def _conv2d_composite(x, w, b, stride, padding, dilation, groups):
    """conv2d from ember ops (pad, unfold, einsum): slow, but differentiable twice."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    if padding == "same":
        th, tw = dh * (kh - 1), dw * (kw - 1)
        pt, pl = th // 2, tw // 2
        pb, pr = th - pt, tw - pl
    else:
        (pt, pl), (pb, pr) = padding, padding
    xp = em.zeros((n, c, h + pt + pb, wd + pl + pr), dtype=x.dtype, device=x.device)
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    patches = xp.unfold(2, dh * (kh - 1) + 1, sh).unfold(3, dw * (kw - 1) + 1, sw)
    patches = patches[..., ::dh, ::dw]                      # n, c, oh, ow, kh, kw
    oh, ow = patches.shape[2], patches.shape[3]
    patches = patches.reshape(n, groups, c // groups, oh, ow, kh, kw)
    y = em.einsum("ngcyxhw,gochw->ngoyx", patches, w.reshape(groups, o // groups, cg, kh, kw))
    y = y.reshape(n, o, oh, ow)
    return y + b.reshape(1, o, 1, 1) if b is not None else y


def _conv_transpose2d_composite(x, w, b, stride, padding, output_padding, groups, dilation):
    """conv_transpose2d as the gradient of the composite conv2d w.r.t. its input
    (it is linear, so at any point), with the graph kept: differentiable twice."""
    from ember.autograd import grad
    n, _, h, wd = x.shape
    _, coutg, kh, kw = w.shape
    size = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
            zip((h, wd), stride, padding, dilation, (kh, kw), output_padding)]
    z = em.zeros((n, coutg * groups, *size), dtype=x.dtype, device=x.device).requires_grad_()
    with em.enable_grad():
        (y,) = grad(_conv2d_composite(z, w, None, stride, padding, dilation, groups), z, x,
                    create_graph=True)
    return y + b.reshape(1, -1, 1, 1) if b is not None else y


@formula("conv2d", inputs=(0, 1, 2))
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        return _by_composite(n, g, lambda x, w, b: _conv2d_composite(
            x, w, b, a["stride"], a["padding"], a["dilation"], a["groups"]))
    x, w, _ = n.inputs
    return conv2d_backward(g, x, w, a["stride"], a["padding"], a["dilation"], a["groups"],
                           n.needs)


@formula("conv_transpose2d", inputs=(0, 1, 2))
def _(n, g):
    a = n.attrs
    if _core.is_grad_enabled():
        return _by_composite(n, g, lambda x, w, b: _conv_transpose2d_composite(
            x, w, b, a["stride"], a["padding"], a["output_padding"], a["groups"],
            a["dilation"]))
    x, w, _ = n.inputs
    return conv_transpose2d_backward(g, x, w, a["stride"], a["padding"], a["output_padding"],
                                     a["groups"], a["dilation"], n.needs)


def _transposed(apply_t, apply, g):
    """The backward of a linear op L is L^T g; under create_graph it must itself be
    differentiable, and its derivative w.r.t. g is L: a Function with those two."""
    from ember.autograd.function import Function

    class LinearBackward(Function):
        @staticmethod
        def forward(ctx, grad):
            return apply_t(grad)

        @staticmethod
        def backward(ctx, gg):
            return apply(gg)
    return LinearBackward.apply(g)


def _pool_dims(op):
    return 1 if op.endswith("1d") else 2


def _gather_at(gg, indices, sd):
    """gg's values at a max pool's flat per-plane indices (-1: a window in padding)."""
    flat = gg.flatten(-sd) if sd > 1 else gg
    idx = indices.flatten(-sd) if sd > 1 else indices
    picked = flat.gather(-1, idx.clamp(min=0)) * (idx >= 0).to(gg.dtype)
    return picked.reshape(indices.shape)


@formula("max_pool2d", "adaptive_max_pool2d", "max_pool1d", "adaptive_max_pool1d")
def _(n, g):
    sd, indices, shape = _pool_dims(n.op), n.attrs["indices"], _shape(n)
    backward = P.max_pool1d_backward if sd == 1 else P.max_pool2d_backward
    apply_t = lambda grad: backward(grad, shape, indices)  # noqa: E731
    if _core.is_grad_enabled():
        return _transposed(apply_t, lambda gg: _gather_at(gg, indices, sd), g),
    return apply_t(g),


@formula("avg_pool2d", "avg_pool1d")
def _(n, g):
    a, shape = n.attrs, _shape(n)
    sd = _pool_dims(n.op)
    backward = P.avg_pool1d_backward if sd == 1 else P.avg_pool2d_backward
    forward = em.avg_pool1d if sd == 1 else em.avg_pool2d
    apply_t = lambda grad: backward(grad, shape, **a)  # noqa: E731
    if _core.is_grad_enabled():
        return _transposed(apply_t, lambda gg: forward(gg, **a), g),
    return apply_t(g),


@formula("adaptive_avg_pool2d", "adaptive_avg_pool1d")
def _(n, g):
    shape = _shape(n)
    sd = _pool_dims(n.op)
    backward = P.adaptive_avg_pool1d_backward if sd == 1 else P.adaptive_avg_pool2d_backward
    forward = em.adaptive_avg_pool1d if sd == 1 else em.adaptive_avg_pool2d
    apply_t = lambda grad: backward(grad, shape)  # noqa: E731
    if _core.is_grad_enabled():
        return _transposed(apply_t, lambda gg: forward(gg, tuple(g.shape[-sd:])), g),
    return apply_t(g),


# the FFT family over [..., 2] (re, im) tensors: linear, so each backward is the
# adjoint transform (PyTorch's _fft_c2c/_fft_r2c/_fft_c2r backward), made of the same
# recorded ops (higher-order gradients come for free)
@formula("fft_c2c")
def _(n, g):
    a = n.attrs
    return fft_c2c_backward(g, a["dim"], a["m"], a["forward"], a["scale"]),


@formula("fft_r2c")
def _(n, g):
    a = n.attrs
    return fft_r2c_backward(g, a["dim"], a["n"], a["m"], a["scale"], a["onesided"]),


@formula("fft_c2r")
def _(n, g):
    a = n.attrs
    return fft_c2r_backward(g, a["dim"], a["n"], a["m"], a["scale"]),


@formula("copy_")
def _(n, g):
    return None, g       # the engine sums and casts g to the source's shape and dtype


@formula("fill_")
def _(n, g):
    return None,


# in-place random fills: the old values don't influence the result
@formula("uniform_", "normal_", "bernoulli_", "random_", "exponential_", "log_normal_",
         "cauchy_", "geometric_")
def _(n, g):
    return None,


# ------------------------------------------------------------------------------------
# not differentiable: results never require grad
# ------------------------------------------------------------------------------------

def _not_differentiable():
    from ember.ops.table import ELEMENTWISE, REDUCTIONS
    names = [r.name for r in ELEMENTWISE + REDUCTIONS if not r.differentiable]
    return names + ["argmax", "argmin", "argsort"]


NOT_DIFFERENTIABLE = tuple(_not_differentiable())
for _name in NOT_DIFFERENTIABLE:
    FORMULAS[_name] = None


# ------------------------------------------------------------------------------------
# linear algebra (ember/ops/linalg.py): each row recomputes the op's result from its
# saved input when the backward itself is being recorded (create_graph=True), so the
# second derivative sees the result's dependence on the input
# ------------------------------------------------------------------------------------

def _result(n, recompute):
    return recompute() if em.is_grad_enabled() else n.output


@formula("linalg_solve", inputs=(0, 1), output=True)
def _(n, g):
    A, B = n.inputs
    X = _result(n, lambda: em.linalg.solve(A, B))
    return LA.solve_backward(A, X, g, n.needs)


@formula("linalg_inv", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    return LA.inv_backward(_result(n, lambda: em.linalg.inv(A)), g),


@formula("linalg_det", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    return LA.det_backward(A, _result(n, lambda: em.linalg.det(A)), g),


@formula("linalg_slogdet", inputs=(0,))
def _(n, g):
    A, = n.inputs
    return LA.slogdet_backward(A, g),


@formula("linalg_cholesky", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    return LA.cholesky_backward(_result(n, lambda: em.linalg.cholesky(A)), g),


@formula("linalg_solve_triangular", inputs=(0, 1), output=True)
def _(n, g):
    A, B = n.inputs
    a = n.attrs
    X = _result(n, lambda: em.linalg.solve_triangular(
        A, B, upper=a["upper"], left=a["left"], unitriangular=a["unitriangular"]))
    return LA.solve_triangular_backward(A, X, g, a, n.needs)


@formula("linalg_lu_factor", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    LU = _result(n, lambda: em.linalg.lu_factor_ex(A).LU)
    return LA.lu_factor_backward(A, LU, n.attrs["pivots"], g),


@formula("linalg_qr", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    mode = n.attrs["mode"]
    if em.is_grad_enabled():
        Q, R = em.linalg.qr(A, mode)
    else:
        Q, R = LA.unpack_grad(n.output, n.attrs["shapes"])
    gQ, gR = LA.unpack_grad(g, n.attrs["shapes"])
    return LA.qr_backward(A, Q, R, gQ, gR, mode),


@formula("linalg_qr_r")
def _(n, g):
    raise RuntimeError("linalg.qr: the derivative of linalg.qr depends on Q, which is not "
                       "computed when mode='r'; use linalg.qr(A, mode='reduced') if you are "
                       "going to differentiate through linalg.qr")


@formula("linalg_eigh", inputs=(0,), output=True)
def _(n, g):
    S, = n.inputs
    if em.is_grad_enabled():
        packed = LA.eigh_packed(*LA.eigh_unchecked(S))
    else:
        packed = n.output
    check = n.attrs.get("phase_check", True)
    n.attrs["phase_check"] = False         # the first backward only (LA._check_phase)
    return LA.eigh_backward(packed, g, check),


def _mH(x):
    return _cj(x).transpose(-1, -2)


def _complex_solve(M, Y):
    """M^-1 Y for complex M (..., n, n), Y (..., n, k), by the real solve of the block
    form [[Re M, -Im M], [Im M, Re M]] [Re X; Im X] = [Re Y; Im Y] (ember.linalg is
    real; the recorded ops keep it differentiable)."""
    n = M.shape[-1]
    Mr, Mi, Yr, Yi = em.real(M), em.imag(M), em.real(Y), em.imag(Y)
    big = em.cat([em.cat([Mr, -Mi], -1), em.cat([Mi, Mr], -1)], -2)
    X = em.linalg.solve(big, em.cat([Yr, Yi], -2))
    return em.complex(X.narrow(-2, 0, n), X.narrow(-2, n, n))


def _eig_backward(packed, g):
    """gA of (L, V) = eig(A), packed [L; V] (PyTorch's linalg_eig_backward):
    V^-H (diag(gL) + (V^H gV - V^H V diag(Re(V^H gV))) / conj(E)) V^H with
    E_ij = L_j - L_i off the diagonal; a real A takes its real part (the engine). The
    eigenvectors are defined up to a phase each: the loss must not depend on it
    (e.g. |V|), as PyTorch requires."""
    n = packed.shape[-1]
    L, V = packed.narrow(-2, 0, 1).squeeze(-2), packed.narrow(-2, 1, n)
    if not g.is_complex():
        g = em.complex(g, em.zeros_like(g))
    gL, gV = g.narrow(-2, 0, 1).squeeze(-2), g.narrow(-2, 1, n)
    Vh = _mH(V)
    VhgV = Vh @ gV
    inner = VhgV - Vh @ (V * em.real(em.diagonal(VhgV, 0, -2, -1)).unsqueeze(-2))
    eye = em.eye(n, dtype=L.dtype.to_real(), device=L.device)
    E = em.conj(L.unsqueeze(-2) - L.unsqueeze(-1)) + eye
    inner = inner / E * (1 - eye) + em.diag_embed(gL)
    return _complex_solve(Vh, inner @ Vh)


@formula("linalg_eig", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    if em.is_grad_enabled():
        w, V = em.linalg.eig(A)
        packed = em.cat([w.unsqueeze(-2), V], -2)
    else:
        packed = n.output
    return _eig_backward(packed, g),


@formula("linalg_svd", inputs=(0,), output=True)
def _(n, g):
    A, = n.inputs
    if em.is_grad_enabled():
        packed = LA.svd_packed(*LA.svd_unchecked(A))
    else:
        packed = n.output
    attrs = dict(n.attrs)
    n.attrs["phase_check"] = False         # the first backward only (LA._check_phase)
    return LA.svd_backward(packed, g, attrs),
