"""Every elementwise row of the op table (ember/ops/table.py) against NumPy.

The tests enumerate ``table.ELEMENTWISE``: a new row is tested without new test
code. A row's oracle is the NumPy function its ``numpy`` field names; the few rows
without one (``numpy=None``) have an entry in ``REFERENCE`` below, and
``test_every_row_has_an_oracle`` fails for a row that has neither. Inputs are drawn
from the row's ``domain`` over random shapes (0-d, empty, broadcasting), layouts
(contiguous, transposed, step-sliced, expanded with zero strides, offset) and every
dtype the row supports; the result's dtype is checked against ember's promotion
rules as written out in conftest (``expected_promote`` / ``expected_weak``).
"""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ember as em
from ember.ops import table
from ember_testing import (
    ALL_DTYPES,
    DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    TOLERANCES,
    arrays,
    assert_close,
    broadcastable_shapes,
    elements,
    fewer_examples,
    layouts,
    np_dtype,
    realize,
    row_compute_dtype,
    row_input_dtypes,
    row_out_dtype,
    row_supports,
    to_numpy,
)

# ----------------------------------------------------------------------------- oracles

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

def _sc(name, *args):
    """scipy.special's `name` in float64."""
    import scipy.special
    with np.errstate(all="ignore"):
        return getattr(scipy.special, name)(*(np.asarray(a, np.float64) for a in args))


def _gelu_tanh(x):
    """GELU's tanh form x (1 + tanh(u)) / 2 and its derivative (PyTorch's
    gelu(approximate="tanh") and gelu_backward) in float64, 1 + tanh(u) as 2 sigmoid(2u)
    (exact where tanh rounds to -1), past |x| > 10 their limits (x and 1 above, 0 x and
    0 below)."""
    x = x.astype(np.float64)
    k = math.sqrt(2 / math.pi)
    with np.errstate(all="ignore"):
        xc = np.clip(x, -10, 10)                # NaN stays NaN
        s = 1 / (1 + np.exp(-2 * k * (xc + 0.044715 * xc ** 3)))
        y = np.where(x > 10, x, np.where(x < -10, 0 * x, x * s))
        d = s + 2 * xc * s * (1 - s) * k * (1 + 3 * 0.044715 * xc * xc)
        return y, np.where(x > 10, 1.0, np.where(x < -10, 0.0, d))


def _ev(name, n, x):
    """scipy.special's eval_<poly>(n, x) with an integer n (eval_hermite needs one)."""
    import scipy.special
    with np.errstate(all="ignore"):
        return getattr(scipy.special, name)(np.asarray(n, np.int64), np.asarray(x, np.float64))


_KINDS = {"chebyshev_polynomial_t": "T", "chebyshev_polynomial_u": "U",
          "chebyshev_polynomial_v": "V", "chebyshev_polynomial_w": "W",
          "shifted_chebyshev_polynomial_t": "T", "shifted_chebyshev_polynomial_u": "U",
          "shifted_chebyshev_polynomial_v": "V", "shifted_chebyshev_polynomial_w": "W",
          "hermite_polynomial_h": "H", "hermite_polynomial_he": "He",
          "laguerre_polynomial_l": "L", "legendre_polynomial_p": "P"}


_KINDS_OF_ROWS = {"special_" + name for name in _KINDS}


def _mp_recurrence(kind, n, x):
    """p_n(x) by its three-term recurrence in mpmath (whose exponents do not overflow)."""
    import mpmath as mp
    x = mp.mpf(x)
    p, q = mp.mpf(1), {"T": x, "U": 2 * x, "V": 2 * x - 1, "W": 2 * x + 1, "H": 2 * x,
                       "He": x, "L": 1 - x, "P": x}[kind]
    for k in range(1, n):
        p, q = q, {"H": 2 * x * q - 2 * k * p, "He": x * q - k * p,
                   "L": ((2 * k + 1 - x) * q - k * p) / (k + 1),
                   "P": ((2 * k + 1) * x * q - k * p) / (k + 1)}.get(kind, 2 * x * q - p)
    return float(q)


def _polynomial(fn, kind, shifted=False):
    """torch.special's p_n(x) from SciPy's fn(n, x): n truncated to an integer, 0 for n < 0,
    1 for n = 0 (whatever x), NaN for a NaN n; where SciPy's recurrence overflows into NaN
    (inf - inf), mpmath's, which gives the overflow's signed infinity."""
    def ref(x, n):
        with np.errstate(all="ignore"):
            k = np.trunc(np.asarray(n, np.float64))
            x = np.asarray(x, np.float64)
            safe = np.where(np.isfinite(k) & (k > 0), k, 1).astype(np.int64)
            v = np.array(fn(safe, x), np.float64)
            redo = np.broadcast_to(np.isnan(v) & np.isfinite(x) & (k > 0) & (k <= 1000),
                                   v.shape)
            if redo.any():
                xb, kb = np.broadcast_to(x, v.shape), np.broadcast_to(safe, v.shape)
                v[redo] = [_mp_recurrence(kind, int(m), 2 * t - 1 if shifted else t)
                           for t, m in zip(xb[redo], kb[redo])]
            return np.where(np.isnan(k), np.nan, np.where(k < 0, 0.0, np.where(k == 0, 1.0, v)))
    return ref


def _airy_ai(x):
    """SciPy's Ai, but mpmath's beyond |x| = 2^20, where SciPy gives NaN (ember has the
    values there, as PyTorch); the limit 0 at +inf, and NaN at -inf (as bessel_j0)."""
    import mpmath as mp
    x = np.asarray(x, np.float64)
    r = np.atleast_1d(np.asarray(_sc("airy", x)[0], np.float64))
    xs = np.atleast_1d(x)
    far = np.isfinite(xs) & (np.abs(xs) > 2.0 ** 20)
    with mp.workdps(60):
        r[far] = [float(mp.airyai(v)) for v in xs[far]]
    r = np.where(xs == np.inf, 0.0, np.where(xs == -np.inf, np.nan, r))
    return r.reshape(x.shape)


def _sinc(x):
    with np.errstate(all="ignore"):
        k = np.rint(x)
        s = np.sin(np.pi * (x - k)) * np.where(np.fmod(k, 2) == 0, 1.0, -1.0)
        return np.where(x == 0, 1.0, np.where(np.isinf(x), np.nan, s / (np.pi * x)))


# Rows whose `numpy` is None: the reference, given the operands already converted to
# the compute dtype.
REFERENCE = {
    "rsqrt": lambda a: 1 / np.sqrt(a),
    # 1 / a: for complex 0 PyTorch's inf+nanj (NumPy's reciprocal loop says nan+nanj)
    "reciprocal": lambda a: np.divide(np.ones((), a.dtype), a),
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "relu": lambda a: np.where(np.isnan(a) | (a > 0), a, np.zeros_like(a)),
    "_relu_grad": lambda g, y: np.where(y <= 0, np.zeros_like(g), g),
    "erf": lambda a: _erf(a.astype(np.float64)),
    "erfc": lambda a: _erfc(a.astype(np.float64)),
    "gelu": lambda a: a * 0.5 * _erfc(a.astype(np.float64) * -math.sqrt(0.5)),
    "_gelu_tanh": lambda a: _gelu_tanh(a)[0],
    "_gelu_grad": lambda g, a: g * (0.5 * _erfc(a.astype(np.float64) * -math.sqrt(0.5)) +
                                        a * np.exp(-0.5 * a.astype(np.float64) ** 2) /
                                        math.sqrt(2 * math.pi)),
    "_gelu_tanh_grad": lambda g, a: g.astype(np.float64) * _gelu_tanh(a)[1],
    # PyTorch's and NumPy's clamp: max(min_, ...) then min(max_, ...), so min > max
    # gives max, and NaN anywhere propagates
    "clamp": lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi),
    "lerp": lambda a, b, w: a + w * (b - a),
    # torch.sgn: sign for real numbers, z / |z| (0 at 0) for complex ones
    "sgn": lambda a: np.sign(a) if a.dtype.kind != "c" else
    np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))),
    # torch.angle: of a real number 0 or pi (-0.0 gives 0, where NumPy says pi), NaN
    # stays NaN; of a complex number atan2(im, re)
    "angle": lambda a: np.angle(a) if a.dtype.kind == "c" else
    np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0)).astype(a.dtype),
    # the special functions: SciPy's, computed in float64 (test_special checks the
    # accuracy against mpmath), with PyTorch's values where the two differ
    "lgamma": lambda a: np.where(a == -np.inf, np.inf, _sc("gammaln", a)),
    "digamma": lambda a: _sc("psi", a),
    "erfinv": lambda a: _sc("erfinv", a),
    "i0": lambda a: _sc("i0", a),
    "special_i0e": lambda a: _sc("i0e", a),
    "special_i1": lambda a: _sc("i1", a),
    "special_i1e": lambda a: _sc("i1e", a),
    "special_erfcx": lambda a: _sc("erfcx", a),
    "special_ndtr": lambda a: _sc("ndtr", a),
    "special_ndtri": lambda a: _sc("ndtri", a),
    "special_log_ndtr": lambda a: _sc("log_ndtr", a),
    "special_entr": lambda a: _sc("entr", a),
    "special_bessel_j0": lambda a: _sc("j0", a),
    "special_bessel_j1": lambda a: _sc("j1", a),
    "special_bessel_y0": lambda a: _sc("y0", a),
    "special_bessel_y1": lambda a: _sc("y1", a),
    "special_modified_bessel_k0": lambda a: _sc("k0", a),
    "special_modified_bessel_k1": lambda a: _sc("k1", a),
    "special_scaled_modified_bessel_k0": lambda a: _sc("k0e", a),
    "special_scaled_modified_bessel_k1": lambda a: _sc("k1e", a),
    "special_spherical_bessel_j0": lambda a: _sc("spherical_jn", 0, a),
    # sin(pi x) / (pi x) with pi x reduced exactly (NumPy's np.sinc rounds pi x first)
    "sinc": lambda a: _sinc(a.astype(np.float64)),
    "logit": lambda a: _sc("logit", a),
    "special_polygamma": lambda n, x: np.where((n >= 0) & (n == np.floor(n)),
                                       _sc("polygamma", np.where(n >= 0, n, 0), x), np.nan),
    "igamma": lambda a, x: _sc("gammainc", a, x),
    "igammac": lambda a, x: _sc("gammaincc", a, x),
    "special_zeta": lambda x, q: _sc("zeta", x, q),
    "special_xlog1py": lambda x, y: _sc("xlog1py", x, y),
    "special_airy_ai": lambda a: _airy_ai(a),
    **{f"special_{name}": _polynomial(fn, _KINDS[name], name.startswith("shifted"))
       for name, fn in {
        "chebyshev_polynomial_t": lambda n, x: _ev("eval_chebyt", n, x),
        "chebyshev_polynomial_u": lambda n, x: _ev("eval_chebyu", n, x),
        "chebyshev_polynomial_v": lambda n, x: (_ev("eval_chebyu", n, x) -
                                                _ev("eval_chebyu", n - 1, x)),
        "chebyshev_polynomial_w": lambda n, x: (_ev("eval_chebyu", n, x) +
                                                _ev("eval_chebyu", n - 1, x)),
        "shifted_chebyshev_polynomial_t": lambda n, x: _ev("eval_chebyt", n, 2 * x - 1),
        "shifted_chebyshev_polynomial_u": lambda n, x: _ev("eval_chebyu", n, 2 * x - 1),
        "shifted_chebyshev_polynomial_v": lambda n, x: (_ev("eval_chebyu", n, 2 * x - 1) -
                                                        _ev("eval_chebyu", n - 1, 2 * x - 1)),
        "shifted_chebyshev_polynomial_w": lambda n, x: (_ev("eval_chebyu", n, 2 * x - 1) +
                                                        _ev("eval_chebyu", n - 1, 2 * x - 1)),
        "hermite_polynomial_h": lambda n, x: _ev("eval_hermite", n, x),
        "hermite_polynomial_he": lambda n, x: _ev("eval_hermitenorm", n, x),
        "laguerre_polynomial_l": lambda n, x: _ev("eval_laguerre", n, x),
        "legendre_polynomial_p": lambda n, x: _ev("eval_legendre", n, x),
    }.items()},
}

BY_NAME = {row.name: row for row in table.ELEMENTWISE}
ROWS = [pytest.param(row, id=row.name) for row in table.ELEMENTWISE]
BINARY = [pytest.param(row, id=row.name) for row in table.ELEMENTWISE
          if row.arity == 2]
INPLACE = [pytest.param(row, id=row.name) for row in table.ELEMENTWISE if row.inplace]

# Python operators that map onto a row (x op y, and x op= y for the in-place form).
OPERATORS = {
    "add": (operator.add, operator.iadd), "sub": (operator.sub, operator.isub),
    "mul": (operator.mul, operator.imul), "div": (operator.truediv, operator.itruediv),
    "floor_divide": (operator.floordiv, operator.ifloordiv),
    "remainder": (operator.mod, operator.imod), "pow": (operator.pow, operator.ipow),
    "bitwise_and": (operator.and_, operator.iand), "bitwise_or": (operator.or_, operator.ior),
    "bitwise_xor": (operator.xor, operator.ixor),
    "bitwise_left_shift": (operator.lshift, operator.ilshift),
    "bitwise_right_shift": (operator.rshift, operator.irshift),
    "eq": (operator.eq, None), "ne": (operator.ne, None), "lt": (operator.lt, None),
    "le": (operator.le, None), "gt": (operator.gt, None), "ge": (operator.ge, None),
}
UNARY_OPERATORS = {"neg": operator.neg, "abs": abs, "bitwise_not": operator.invert,
                   "positive": operator.pos}


def oracle(row, operands, compute):
    """NumPy's answer for `row` on numpy operands (arrays or 0-d arrays), computed in
    the compute dtype (float16 in float32, as ember does) and returned in the row's
    output dtype."""
    out = row_out_dtype(row, compute)
    # float16 computes in float32 (as ember); complex64 is checked against NumPy's
    # complex128 (NumPy's own complex64 loops are no more exact than ember's)
    work = {"float16": np.float32, "complex64": np.complex128}.get(compute.name,
                                                                    np_dtype(compute))
    fn = REFERENCE[row.name] if row.numpy is None else getattr(np, row.numpy)
    with np.errstate(all="ignore"):
        args = []
        for k, a in enumerate(operands):
            a = np.asarray(a)
            if row.name == "where" and k == 0:
                args.append(a.astype(bool))
            else:
                args.append(a.astype(np_dtype(compute)).astype(work))
        try:
            r = fn(*args)
        except TypeError:
            # NumPy has no bool loop for a few rows (sign, positive): compute in int8
            if compute.kind != "bool":
                raise
            r = fn(*[x.astype(np.int8) for x in args])
        r = np.asarray(r)
        if compute.kind in ("bool", "int") and r.dtype.kind == "f" and out.kind != "bool":
            # NumPy answers in float where ember stays integral (e.g. round of bools)
            r = np.rint(r)
        return r.astype(np_dtype(out))


def call(row, name, args, method=False):
    if method:
        return getattr(args[0], name)(*args[1:])
    return getattr(em, name)(*args)


def operand_domain(row, k):
    """The domain of operand k: "nonzero" and "shift" constrain the divisor / the
    shift count only; the other domains hold for every operand."""
    if row.domain in ("nonzero", "shift") and row.arity >= 2:
        return row.domain if k == 1 else "all"
    return row.domain


@st.composite
def row_operands(draw, row, device, inplace=False):
    """(ember operands, numpy operands, compute dtype, result shape) for a row."""
    bs = draw(broadcastable_shapes(row.arity))
    in_shapes = list(bs.input_shapes)
    if inplace:          # operand 0 has the result's shape
        in_shapes[0] = bs.result_shape
    choices = ALL_DTYPES if row.name == "where" else row_input_dtypes(row)
    if draw(st.booleans()):
        one = draw(st.sampled_from(choices))
        dts = [one] * row.arity
    else:
        dts = [draw(st.sampled_from(choices)) for _ in range(row.arity)]
    if row.name == "where":
        dts[0] = em.bool
    ems, nps = [], []
    for k in range(row.arity):
        vals = draw(arrays(dts[k], in_shapes[k], operand_domain(row, k)))
        t, v = realize(vals, draw(layouts), device)
        ems.append(t)
        nps.append(v)
    compute = row_compute_dtype(row, dts[1:] if row.name == "where" else dts)
    # uint64 with a signed integer promotes to float64, which an integer-only row refuses
    # (as NumPy): test_unsigned.py::test_uint64_with_signed_in_integer_rows checks that
    assume(row_supports(row, compute))
    return ems, nps, compute, tuple(bs.result_shape)


# ----------------------------------------------------------------------------- the table

def test_every_row_has_an_oracle():
    missing = [row.name for row in table.ELEMENTWISE
               if not ((row.numpy and hasattr(np, row.numpy)) or row.name in REFERENCE)]
    assert not missing, (f"op-table rows without a NumPy oracle or an entry in "
                         f"test_elementwise.REFERENCE: {missing}")
    stale = [n for n in REFERENCE if n not in BY_NAME or BY_NAME[n].numpy is not None]
    assert not stale, f"REFERENCE entries for rows that are gone or have a numpy oracle: {stale}"


def test_every_reduction_row_has_an_oracle():
    missing = [r.name for r in table.REDUCTIONS if not (r.numpy and hasattr(np, r.numpy))]
    assert not missing, f"reduction rows without a NumPy oracle: {missing}"


@pytest.mark.parametrize("row", ROWS)
def test_row_is_exposed(row):
    """Each row is a function (and its aliases), a Tensor method and, where the row
    says so, an in-place method."""
    for name in (row.name,) + row.aliases:
        assert callable(getattr(em, name)), name
        if row.method:
            assert callable(getattr(em.Tensor, name)), f"Tensor.{name}"
        if row.inplace:
            assert callable(getattr(em.Tensor, name + "_")), f"Tensor.{name}_"
    if not row.inplace:
        assert not hasattr(em.Tensor, row.name + "_"), f"Tensor.{row.name}_ exists"


def test_table_row_domains_and_kinds_are_known():
    for row in table.ELEMENTWISE:
        assert row.domain in ("all", "positive", "unit", "ge1", "nonzero", "shift"), row
        assert set(row.body) <= {"bool", "int", "float", "complex"}, row
        assert row.promote in ("common", "float"), row
        assert row.out in ("same", "bool", "real"), row


# ----------------------------------------------------------------------------- properties

@pytest.mark.parametrize("row", ROWS)
@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_row_matches_numpy(row, data, device):
    """Random shapes (0-d, empty, broadcasting), layouts and dtypes; the function,
    an alias or the method form."""
    ems, nps, compute, shape = data.draw(row_operands(row, device))
    names = (row.name,) + row.aliases
    name = data.draw(st.sampled_from(names))
    method = row.method and data.draw(st.booleans())
    got = call(row, name, ems, method)
    expected = oracle(row, nps, compute)
    assert expected.shape == shape
    assert_close(got, expected, row_out_dtype(row, compute),
                 msg=f"{name}({', '.join(f'{t.dtype.name}{tuple(t.shape)}' for t in ems)})")


@pytest.mark.parametrize("row", BINARY)
@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_python_scalar_operand(row, data, device):
    """x op 2, 2 op x, x / 2.5: Python scalars are weak (they take the tensor's dtype
    unless of a higher kind), on either side, as functions and as operators."""
    dt = data.draw(st.sampled_from(row_input_dtypes(row)))
    side = data.draw(st.sampled_from([0, 1]))           # where the scalar goes
    kind = data.draw(st.sampled_from(["bool", "int", "float", "complex"]))
    t_domain, s_domain = operand_domain(row, 1 - side), operand_domain(row, side)
    vals = data.draw(arrays(dt, data.draw(broadcastable_shapes(1)).input_shapes[0], t_domain))
    t, v = realize(vals, data.draw(layouts), device)
    if kind == "bool":
        s = data.draw(elements(em.bool, s_domain))
    elif kind == "int":
        s = int(data.draw(elements(dt if dt.kind == "int" else em.int64, s_domain, small=True)))
    elif kind == "float":
        s = float(data.draw(elements(em.float64, s_domain)))
    else:
        s = complex(data.draw(elements(em.float64, s_domain)),
                    data.draw(elements(em.float64, "all")))
    args = [t, s] if side == 1 else [s, t]
    compute = row_compute_dtype(row, [dt], [s])
    use_op = row.name in OPERATORS and data.draw(st.booleans())

    def run():
        return OPERATORS[row.name][0](*args) if use_op else getattr(em, row.name)(*args)

    if not row_supports(row, compute):
        # 2j < x is answered by x > 2j: the error names the mirrored comparison
        mirrored = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
        name = mirrored.get(row.name, row.name) if use_op and side == 0 else row.name
        with pytest.raises(TypeError, match=name):
            run()
        return
    expected = oracle(row, [v, np.array(s)] if side == 1 else [np.array(s), v], compute)
    out = row_out_dtype(row, compute)
    msg = f"{row.name} with {'x, ' if side else ''}{s!r}{'' if side else ', x'} " \
          f"(x {dt.name}{tuple(t.shape)})"
    assert_close(run(), expected, out, msg=msg)
    # in place with the scalar on the right: x.op_(2), x op= 2 (into x's dtype)
    if side == 1 and row.inplace and _KIND[out.kind] <= _KIND[dt.kind]:
        for form in ("method", "operator"):
            x = t.clone()
            if form == "method":
                r = getattr(x, row.name + "_")(s)
            elif row.name in OPERATORS and OPERATORS[row.name][1] is not None:
                r = OPERATORS[row.name][1](x, s)
            else:
                continue
            assert r is x
            with np.errstate(all="ignore"):
                assert_close(x, expected.astype(np_dtype(dt)), dt, msg=f"{msg} in place ({form})",
                             **_tolerance_of(out, dt))


_KIND = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def _tolerance_of(computed, stored):
    """A result computed in `computed` and stored in `stored` is only as exact as the
    narrower float of the two."""
    if computed.kind == stored.kind and computed.kind in ("float", "complex") and \
            computed.itemsize < stored.itemsize:
        return dict(zip(("rtol", "atol"), TOLERANCES[computed.name]))
    return {}


@pytest.mark.parametrize("row", INPLACE)
@given(data=st.data())
@settings(max_examples=fewer_examples(4))
def test_inplace_and_out(row, data, device):
    """x.op_(y), x op= y and op(x, y, out=o): the result goes into x / o (any layout)
    converted to its dtype and the call returns that tensor; a result of a higher
    kind than the destination (float into int) is a TypeError. (The version counter:
    test_inplace_and_out_bump_the_version.)"""
    ems, nps, compute, shape = data.draw(row_operands(row, device, inplace=True))
    out_dt = row_out_dtype(row, compute)
    form = data.draw(st.sampled_from(["method", "operator", "out"]))
    if form == "operator" and (row.name not in OPERATORS or OPERATORS[row.name][1] is None):
        form = "method"
    if form == "out":
        dest_dt = data.draw(st.sampled_from(ALL_DTYPES))
        dest, _ = realize(np.zeros(shape, np_dtype(dest_dt)), data.draw(layouts), device)
        if any(s == 0 for s in dest.stride()) and dest.numel() > 1:
            dest = dest.contiguous().clone()   # an expanded tensor is not a valid output
    else:
        if any(s == 0 for s in ems[0].stride()) and ems[0].numel() > 1:
            ems[0] = ems[0].clone()   # writing into an expanded tensor: see test_views
        dest = ems[0]
        dest_dt = dest.dtype
    expected = oracle(row, nps, compute)

    def run():
        if form == "method":
            return getattr(dest, row.name + "_")(*ems[1:])
        if form == "operator":
            return OPERATORS[row.name][1](dest, *ems[1:])
        return getattr(em, row.name)(*ems, out=dest)

    if _KIND[out_dt.kind] > _KIND[dest_dt.kind]:
        with pytest.raises(TypeError, match=row.name):
            run()
        return
    r = run()
    assert r is dest, f"{row.name} ({form}) returned a new tensor"
    with np.errstate(all="ignore"):
        assert_close(dest, expected.astype(np_dtype(dest_dt)), dest_dt,
                     msg=f"{row.name} ({form}) into {dest_dt.name}",
                     **_tolerance_of(out_dt, dest_dt))


def _inplace_operands(row, dtype, device):
    args = []
    for k in range(row.arity):
        v = [0.25, 0.5, 0.75] if operand_domain(row, k) == "unit" else [1, 2, 3]
        args.append(em.tensor(v, dtype=dtype, device=device))
    return args


@pytest.mark.parametrize("cast", [False, True], ids=["same-dtype", "converting"])
def test_inplace_and_out_bump_the_version(cast, device):
    """Every write bumps the destination's version counter (autograd's check that a
    saved tensor was not modified), also when the result is converted on the way in
    (float32 into float64, int8 into int64, bool into the destination's dtype)."""
    missed = []
    for row in table.ELEMENTWISE:
        if not row.inplace:
            continue
        src = em.float32 if ("float" in row.body or row.promote == "float") else em.int8
        dst = (em.float64 if src is em.float32 else em.int64) if cast else src
        args = _inplace_operands(row, src, device)
        out_dt = em.bool if row.out == "bool" and not cast else dst
        for form in ("method", "operator", "out"):
            if form == "operator" and (row.name not in OPERATORS or OPERATORS[row.name][1] is None):
                continue
            if form == "out":
                dest = em.zeros(3, dtype=out_dt, device=device)
                before = dest._version
                getattr(em, row.name)(*args, out=dest)
            else:
                dest = em.tensor(to_numpy(args[0]).tolist(), dtype=dst, device=device)
                before = dest._version
                if form == "method":
                    getattr(dest, row.name + "_")(*args[1:])
                else:
                    OPERATORS[row.name][1](dest, *args[1:])
            if dest._version <= before:
                missed.append(f"{row.name} ({form}, {src.name} into {dest.dtype.name})")
    assert not missed, f"writes that did not bump the version counter: {missed}"


# ----------------------------------------------------------------------------- edge values

_FLOAT_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 0.1, 3.0, 7.0, -7.0, 1e-3, 100.0,
                  math.inf, -math.inf, math.nan]


def special_values(d):
    if d.kind == "bool":
        return [False, True]
    if d.kind == "int":
        info = np.iinfo(np_dtype(d))
        vals = [0, 1, -1, 2, -2, 3, 7, -7, int(info.min), int(info.max), int(info.min) + 1,
                int(info.max) - 1]
        return sorted({v for v in vals if info.min <= v <= info.max})
    if d.kind == "complex":   # a grid of finite parts with signed zeros (the branch cuts)
        parts = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0]
        return [complex(r, i) for r in parts for i in parts]
    return _FLOAT_SPECIAL + [float(np.finfo(np_dtype(d)).max)]


def _edge_cases():
    for row in table.ELEMENTWISE:
        # the orthogonal polynomials' degree edge values (n up to 1e308) have no reference
        # that finishes (SciPy's recurrences run n steps): test_special checks huge n
        if row.name == "where" or row.name in _KINDS_OF_ROWS:
            continue
        for d in row_input_dtypes(row):
            yield pytest.param(row, d, id=f"{row.name}-{d.name}")


@pytest.mark.parametrize("row,dtype", list(_edge_cases()))
def test_row_edge_values(row, dtype, device):
    """Every pair (triple) of edge values: signed zeros, +-inf, NaN, integer extremes,
    division by zero, MIN // -1. Integer division by zero gives 0 (NumPy's value),
    never a crash."""
    vals = special_values(dtype)
    if row.arity == 3 and dtype.kind == "float":
        vals = [-1.0, 0.0, 0.5, 2.0, math.inf, -math.inf, math.nan]
    elif row.arity == 3 and dtype.kind == "complex":
        vals = [0j, complex(-0.0, 0.0), 1 - 1j, -0.5 + 2j, 1j, -3 + 0j]
    elif row.arity == 3 and dtype.kind == "int":
        vals = [v for v in vals if abs(v) <= 7]
    combos = list(itertools.product(vals, repeat=row.arity))
    if row.name == "pow" and dtype.kind in ("bool", "int"):
        combos = [c for c in combos if c[1] >= 0]   # NumPy refuses negative int powers
    cols = [np.array([c[k] for c in combos], np_dtype(dtype)) for k in range(row.arity)]
    ems = [em.from_numpy(c.copy()).to(device) for c in cols]
    compute = row_compute_dtype(row, [dtype] * row.arity)
    got = getattr(em, row.name)(*ems)
    expected = oracle(row, cols, compute)
    out = row_out_dtype(row, compute)
    try:
        assert_close(got, expected, out, msg=f"{row.name} on {dtype.name} edge values")
    except AssertionError:
        a, e = to_numpy(got), expected
        def same_real(x, y):
            x, y = float(x), float(y)
            return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-2,
                                                                     abs_tol=1e-3)

        def same(x, y):
            if out.kind == "complex":
                return same_real(x.real, y.real) and same_real(x.imag, y.imag)
            return same_real(x, y) if out.kind == "float" else x == y

        bad = [i for i in range(len(combos)) if not same(a[i], e[i])]
        raise AssertionError(
            f"{row.name} on {dtype.name}: "
            + "; ".join(f"{row.name}{combos[i]} = {a[i]!r}, NumPy {e[i]!r}" for i in bad[:8])
            + f" ({len(bad)} of {len(combos)} differ)") from None


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_floor", "div_trunc",
                                "//", "%"])
def test_integer_division_by_zero_gives_zero(op, dtype, device):
    x = em.tensor([0, 1, 5, 7], dtype=dtype, device=device)
    zero = em.zeros(4, dtype=dtype, device=device)
    for other in (zero, 0):
        if op == "//":
            r = x // other
        elif op == "%":
            r = x % other
        elif op.startswith("div_"):
            r = em.div(x, other, rounding_mode=op[4:])
        else:
            r = getattr(em, op)(x, other)
        assert r.dtype == dtype, (op, r.dtype)
        assert r.tolist() == [0, 0, 0, 0], (op, other, r.tolist())


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@given(data=st.data())
def test_div_rounding_modes(mode, data, device):
    """div(a, b, rounding_mode=...) keeps the inputs' dtype and rounds the exact
    quotient once (float16 through float32, integers exactly, full range)."""
    dt = data.draw(st.sampled_from(DTYPES[1:]))
    a = data.draw(arrays(dt, (6,)))
    b = data.draw(arrays(dt, (6,), "nonzero"))
    r = em.div(em.from_numpy(a.copy()).to(device), em.from_numpy(b.copy()).to(device),
               rounding_mode=mode)
    with np.errstate(all="ignore"):
        if dt.kind == "float":
            work = np.float32 if dt.name == "float16" else np_dtype(dt)
            q = a.astype(work) / b.astype(work)
            expected = (np.floor(q) if mode == "floor" else np.trunc(q)).astype(np_dtype(dt))
        else:
            expected = np.floor_divide(a, b)
            if mode == "trunc":
                expected = expected + ((np.fmod(a, b) != 0) & ((a < 0) != (b < 0)))
    assert_close(r, expected.astype(np_dtype(dt)), dt, msg=f"div {mode} {dt.name} {a} / {b}")


def test_where_with_scalars_and_non_bool_condition(device):
    x = em.tensor([[1.0, -2.0], [3.0, -4.0]], device=device)
    assert em.where(x > 0, x, 0.0).tolist() == [[1.0, 0.0], [3.0, 0.0]]
    assert em.where(x > 0, 1, 2).dtype == em.int64
    assert em.where(x > 0, 1.5, x).dtype == em.float32
    assert em.where(em.tensor([1, 0], device=device), 5, 6).tolist() == [5, 6]
    assert x.where(x < 0, em.zeros(2, device=device)).tolist() == [[0.0, -2.0], [0.0, -4.0]]


@pytest.mark.parametrize("name", sorted(UNARY_OPERATORS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_unary_operators(name, dtype, device):
    row = BY_NAME[name]
    vals = np.array(special_values(dtype), np_dtype(dtype))
    t = em.from_numpy(vals.copy()).to(device)
    compute = row_compute_dtype(row, [dtype])
    if name == "positive":
        assert UNARY_OPERATORS[name](t) is t or UNARY_OPERATORS[name](t).tolist() == t.tolist()
        return
    if not row_supports(row, compute):
        with pytest.raises(TypeError, match=name):
            UNARY_OPERATORS[name](t)
        return
    assert_close(UNARY_OPERATORS[name](t), oracle(row, [vals], compute),
                 row_out_dtype(row, compute))


def test_erf_erfc_float32_are_within_a_few_ulp(device):
    """The CPU's vectorisable float32 erf/erfc (kernels/common/ember_scalar.h) against
    the C library's in float64, on a dense grid, both tails and tiny values: erf within
    3 ulp, erfc within 8 (OpenCL allows its own erf 16)."""
    x = np.concatenate([np.linspace(-11, 11, 400001, dtype=np.float32),
                        np.float32([1e-30, -1e-30, 1e-8, 0.5, -0.5, 0.875, -0.875, 10.05])])
    bound = {"erf": 3, "erfc": 8} if em.device(device).type == "cpu" else {"erf": 16,
                                                                            "erfc": 16}
    for name, ref in (("erf", _erf), ("erfc", _erfc)):
        want = ref(x.astype(np.float64))
        got = to_numpy(getattr(em, name)(em.from_numpy(x).to(device))).astype(np.float64)
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        err = np.abs(got - want) / ulp
        worst = int(np.argmax(err))
        assert err[worst] <= bound[name], \
            f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.1f} ulp"


def test_gelu_float32_and_its_derivative_are_within_a_few_ulp(device):
    """Every device's float32 GELU and its derivative row (one formula: one exp and a
    division, no erf, kernels/common/ember_scalar.h) against float64 on a dense grid
    over both tails, where x Phi(x) keeps its relative precision down to the
    subnormals: gelu within 8 ulp, the derivative within 8 ulp of max(|d|, 1/4) (it
    crosses 0 at x = -0.75); NaN at NaN and -inf (the derivative at +-inf too, as
    PyTorch), gelu(inf) = inf."""
    x = np.concatenate([np.linspace(-15, 15, 300001, dtype=np.float32),
                        np.float32([1e-30, -1e-30, 1e-8, -0.7518, 14.5, -14.5, -13.9])])
    x64 = x.astype(np.float64)
    cdf = 0.5 * _erfc(x64 * -math.sqrt(0.5))
    for name, want, floor in (("gelu", x64 * cdf, 0.0),
                              ("_gelu_grad", cdf + x64 * np.exp(-0.5 * x64 * x64)
                               / math.sqrt(2 * math.pi), 0.25)):
        t = em.from_numpy(x).to(device)
        got = (em.gelu(t) if name == "gelu" else em._gelu_grad(em.ones_like(t), t))
        got = to_numpy(got).astype(np.float64)
        ulp = np.spacing(np.maximum(np.abs(want), floor).astype(np.float32)).astype(np.float64)
        err = np.abs(got - want) / ulp
        worst = int(np.argmax(err))
        assert err[worst] <= 8, \
            f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.1f} ulp"
    special = em.tensor([math.inf, -math.inf, math.nan, 20.0, -20.0, 0.0], device=device)
    got = to_numpy(em.gelu(special))
    assert got[0] == math.inf and np.isnan(got[1:3]).all() and got[3] == 20.0
    assert got[4] == 0.0 and got[5] == 0.0
    d = to_numpy(em._gelu_grad(em.ones_like(special), special))
    assert np.isnan(d[:3]).all() and d[3] == 1.0 and d[4] == 0.0 and d[5] == 0.5


def test_add_sub_alpha(device):
    x = em.tensor([1.0, 2.0], device=device)
    y = em.tensor([10.0, 20.0], device=device)
    assert em.add(x, y, alpha=2).tolist() == [21.0, 42.0]
    assert em.sub(x, y, alpha=0.5).tolist() == [-4.0, -8.0]
    assert x.add(y, alpha=-1).tolist() == [-9.0, -18.0]
    x.sub_(y, alpha=0.1)
    assert np.allclose(to_numpy(x), [0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("name", ["fmin", "fmax", "minimum", "maximum"])
def test_signed_zero_ties_order_minus_zero_first(name, device):
    """min/max of +0 and -0: C, NumPy and PyTorch leave the sign to the code path (NumPy's
    and PyTorch's answers change with the array's length); ember orders -0 before +0, as
    IEEE 754-2019's minimum/maximum do, in every float dtype on every device."""
    a = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, 3.0], np.float32)
    b = np.array([-0.0, 0.0, 0.0, -0.0, 2.0, np.nan, -3.0], np.float32)
    low = name in ("fmin", "minimum")
    zeros = np.array([-0.0, -0.0, 0.0, -0.0] if low else [0.0, 0.0, 0.0, -0.0], np.float32)
    want = getattr(np, name)(a[4:], b[4:])
    for dt in (em.float16, em.bfloat16, em.float32, em.float64):
        got = getattr(em, name)(em.tensor(a.tolist(), dtype=dt, device=device),
                                em.tensor(b.tolist(), dtype=dt, device=device))
        got = to_numpy(got.float())
        assert np.array_equal(np.signbit(got[:4]), np.signbit(zeros)), (name, dt, got[:4])
        assert np.array_equal(got[4:], want, equal_nan=True), (name, dt, got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_float16_computes_in_float32(dtype, device):
    """float16 bodies run in float32 and round once: 2048 + 1 - 2048 is 0 in float16
    arithmetic done step by step, but each op here is one row, so check one row:
    the product of two float16s is the float32 product rounded to float16."""
    a = np.array([1.001, 3.3, 65000.0, 0.0001], np_dtype(dtype))
    b = np.array([1.999, 7.7, 2.0, 0.0001], np_dtype(dtype))
    r = em.mul(em.from_numpy(a).to(device), em.from_numpy(b).to(device))
    with np.errstate(all="ignore"):
        expected = (a.astype(np.float64) * b.astype(np.float64)).astype(np_dtype(dtype)) \
            if dtype.name != "float64" else a * b
    assert_close(r, expected, dtype)


# issue 16 item 11: ember.equal is torch.equal (one bool) ---------------------------------

@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_issue16_item11_equal_is_one_bool_like_numpy_array_equal(data, device):
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    shape = data.draw(st.sampled_from([(), (0,), (3,), (2, 3)]))
    a = data.draw(arrays(da, shape, small=True))
    b = a.astype(np_dtype(db)) if data.draw(st.booleans()) else data.draw(arrays(db, shape,
                                                                                  small=True))
    ta, a = realize(a, data.draw(layouts), device)
    tb, b = realize(b, data.draw(layouts), device)
    with np.errstate(all="ignore"):
        expected = bool(np.array_equal(a, b))          # promotes; NaN != NaN
    got = em.equal(ta, tb)
    assert got is expected and ta.equal(tb) is expected, (a, b)


def test_issue16_item11_equal_examples(device):
    nan = math.nan
    w0 = em.tensor([1.0, 2.0], device=device)
    assert em.equal(w0, w0.clone()) is True
    assert not em.equal(w0, w0 + 1)              # `if not em.equal(w0, w1)` of the issue
    assert em.equal(w0, em.tensor([1, 2], device=device)) is True   # dtypes promote
    assert em.equal(w0, w0[:1]) is False                             # other shape
    assert em.equal(w0, w0.reshape(2, 1)) is False
    x = em.tensor([1.0, nan], device=device)
    assert em.equal(x, x) is False                                   # NaN equals nothing
    assert em.equal(em.empty(0, device=device), em.empty(0, device=device)) is True
    assert em.equal(em.tensor(True, device=device), em.tensor(1, device=device)) is True
    with pytest.raises(TypeError, match="equal: other must be a Tensor"):
        em.equal(w0, [1.0, 2.0])
    with pytest.raises(TypeError, match="equal: input must be a Tensor"):
        em.equal(1.0, w0)
    # the elementwise comparison is eq, and the Array API's equal
    import ember.array_api as xp
    assert em.eq(w0, w0).tolist() == [True, True]
    assert xp.equal(w0, em.tensor([1.0, 3.0], device=device)).tolist() == [True, False]
    assert not hasattr(em.Tensor, "equal_")


def test_issue16_item11_equal_across_devices_raises(device):
    from ember_testing import other_devices
    for other in other_devices(device):
        with pytest.raises(RuntimeError, match="equal: expected both tensors on one device"):
            em.equal(em.ones(2, device=device), em.ones(2, device=other))


# issue 16 item 12: integer tensors to negative integer scalar powers ----------------------

@pytest.mark.parametrize("dtype", (em.bool,) + INT_DTYPES, ids=lambda d: d.name)
def test_issue16_item12_int_tensor_to_negative_int_raises(dtype, device):
    t = em.tensor([1, 1], dtype=dtype, device=device)
    msg = "pow: Integers to negative integer powers are not allowed"
    for call in (lambda: t ** -1, lambda: em.pow(t, -1), lambda: t.pow(-3),
                 lambda: em.power(t, -2), lambda: t.pow_(-2), lambda: t.__ipow__(-1),
                 lambda: em.pow(t, -1, out=em.empty(2, dtype=dtype, device=device))):
        with pytest.raises(RuntimeError, match=msg):
            call()
    assert t.tolist() == em.tensor([1, 1], dtype=dtype).tolist()    # nothing written
    if dtype is em.bool:       # (ember's pow has no bool body: a TypeError, as before)
        return
    # what PyTorch computes: non-negative and bool exponents, float exponents (promote)
    assert (t ** 0).tolist() == em.tensor([1, 1], dtype=dtype).tolist()
    assert (t ** False).dtype == dtype
    assert (t ** -1.0).dtype.kind == "float"


@pytest.mark.parametrize("dtype", [d for d in INT_DTYPES if d.is_signed], ids=lambda d: d.name)
def test_issue16_item12_integer_tensor_exponents_compute(dtype, device):
    """Integer tensor exponents (and a Python int base) are no error in PyTorch:
    1 ** -n = 1, (-1) ** -n = +-1, other bases give 0."""
    base = em.tensor([0, 1, -1, -1, 2, -3], dtype=dtype, device=device)
    exp = em.tensor([-1, -5, -1, -2, -1, -2], dtype=dtype, device=device)
    assert (base ** exp).tolist() == [0, 1, -1, 1, 0, 0]
    assert em.pow(base, exp).tolist() == [0, 1, -1, 1, 0, 0]
    assert (2 ** em.tensor([-1, 0, 3], dtype=dtype, device=device)).tolist() == [0, 1, 8]
    assert (base ** em.tensor(-1, device=device)).tolist() == [0, 1, -1, -1, 0, 0]
    assert (em.tensor([2., 4.], device=device) ** -1).tolist() == [0.5, 0.25]


# issue 16 item 16: nothing finite is close to an infinity ---------------------------------

@given(data=st.data(), equal_nan=st.booleans(),
       tol=st.sampled_from([(1e-5, 1e-8), (0.0, 0.0), (0.1, 0.0), (0.0, 1.0), (1.0, 1e3)]))
@settings(max_examples=fewer_examples(2))
def test_issue16_item16_isclose_matches_numpy(data, equal_nan, tol, device):
    d = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(st.sampled_from([(), (0,), (5,), (2, 3)]))
    specials = [0.0, 1.0, 1e30, -1e30, math.inf, -math.inf, math.nan] if d.kind == "float" \
        else None
    a = data.draw(arrays(d, shape, small=True))
    b = data.draw(arrays(d, shape, small=True))
    if specials and a.size:
        rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
        a = np.where(rng.random(shape) < 0.4, rng.choice(specials, shape), a).astype(a.dtype)
        b = np.where(rng.random(shape) < 0.4, rng.choice(specials, shape), b).astype(b.dtype)
        b = np.where(rng.random(shape) < 0.2, a, b).astype(b.dtype)
    rtol, atol = tol
    ta, a = realize(a, data.draw(layouts), device)
    tb, b = realize(b, data.draw(layouts), device)
    # NumPy's rule is PyTorch's: |a - b| <= atol + rtol * |b|, with a finite |a - b|
    # (in the input dtype: a bool is the default float, integers subtract as integers)
    work = np.float32 if d.kind == "bool" else np_dtype(d)
    with np.errstate(all="ignore"):
        aw, bw = a.astype(work), b.astype(work)
        diff = np.abs(aw - bw)
        fin = np.isfinite(diff) if d.kind != "int" else np.ones(shape, bool)
        expected = (a == b) | (fin & (diff <= atol + np.abs(rtol * bw))) if (rtol or atol) \
            else (a == b)
        if equal_nan and d.kind == "float":
            expected |= np.isnan(a) & np.isnan(b)
    got = em.isclose(ta, tb, rtol, atol, equal_nan)
    assert_close(got, expected, em.bool, msg=f"isclose({a}, {b}, {rtol}, {atol})")
    assert em.allclose(ta, tb, rtol, atol, equal_nan) is bool(expected.all())
    assert ta.isclose(tb, rtol, atol, equal_nan).tolist() == got.tolist()


def test_issue16_item16_isclose_examples_and_errors(device):
    inf, nan = math.inf, math.nan
    t = lambda v, dtype=None: em.tensor(v, dtype=dtype, device=device)   # noqa: E731
    assert em.allclose(t([1.0]), t([inf])) is False
    assert em.isclose(t([1e30, inf, -inf, inf, nan, 3.0]),
                      t([inf, inf, inf, -inf, nan, 3.0])).tolist() == \
        [False, True, False, False, False, True]
    assert em.isclose(t([nan, 1.0]), t([nan, nan]), equal_nan=True).tolist() == [True, False]
    assert em.isclose(t([1e30]), t([inf]), rtol=1e10, atol=1e10).tolist() == [False]
    assert em.isclose(t([1, 2, 3]), t([1, 3, 100]), atol=1).tolist() == [True, True, False]
    assert em.isclose(t([True, False]), t([True, True])).tolist() == [True, False]
    assert em.isclose(t([1.0, 2.0]), t([1.0])).tolist() == [True, False]      # broadcasts
    with pytest.raises(RuntimeError, match="isclose: input dtype ember.float32 does not match "
                                           "other dtype ember.float64"):
        em.isclose(t([1.0]), t([1.0], em.float64))
    for rtol, atol in ((-1e-5, 1e-8), (1e-5, -1.0), (nan, 0.0)):
        with pytest.raises(RuntimeError, match="isclose: rtol and atol must be >= 0"):
            em.isclose(t([1.0]), t([1.0]), rtol, atol)
    with pytest.raises(TypeError, match="isclose: other must be a Tensor"):
        em.isclose(t([1.0]), 1.0)
    with pytest.raises(TypeError, match="isclose: input must be a Tensor"):
        em.allclose([1.0], t([1.0]))
