"""The ONNX translation of each op ember records: SYMBOLICS[op name] =
fn(tracer, inputs, output, attrs) -> the name of the value holding the output. Inputs
are what the op recorded (tensors, Python numbers, None); attrs are its recorded attrs.
rnn_module exports RNN/LSTM/GRU modules whole."""
from __future__ import annotations

import math

import ember as em
from ember.onnx import UnsupportedOperatorError

SYMBOLICS = {}

_INT64_MAX = 2 ** 63 - 1
_INT64_MIN = -2 ** 63


def symbolic(*names):
    def register(fn):
        for n in names:
            SYMBOLICS[n] = fn
        return fn
    return register


def _refuse(op, why):
    raise UnsupportedOperatorError(f"ember.onnx.export: op '{op}' cannot be exported: {why}")


def _compute_dtype(inputs, out):
    """The dtype the elementwise op computes in: the output's, except for predicates
    (bool out), which compare in the promoted dtype of their operands."""
    if out.dtype is not em.bool:
        return out.dtype
    ops = [x for x in inputs if x is not None]
    return em.result_type(*ops) if ops else out.dtype


def _operands(tr, inputs, dtype):
    return [tr.operand(x, dtype) for x in inputs]


# elementwise: the op table's rows -----------------------------------------------------

_SIMPLE = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "pow": "Pow", "maximum": "Max",
    "minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
    "ge": "GreaterOrEqual", "neg": "Neg", "abs": "Abs", "sign": "Sign",
    "reciprocal": "Reciprocal", "sqrt": "Sqrt", "exp": "Exp", "log": "Log", "sin": "Sin",
    "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh",
    "atanh": "Atanh", "relu": "Relu", "sigmoid": "Sigmoid", "erf": "Erf", "floor": "Floor",
    "ceil": "Ceil", "round": "Round", "isnan": "IsNaN", "isinf": "IsInf",
    "positive": "Identity",
}


# on bool operands: what the op computes there (ONNX's arithmetic has no bool kernels)
_ON_BOOL = {"Add": "Or", "Mul": "And", "Max": "Or", "Min": "And", "Abs": "Identity",
            "Sign": "Identity"}
_ORDERED = ("Less", "LessOrEqual", "Greater", "GreaterOrEqual")


def _simple(op_type):
    def fn(tr, inputs, out, attrs):
        dtype = _compute_dtype(inputs, out)
        if not dtype.is_floating_point:
            if op_type in ("Floor", "Ceil", "Round"):
                return tr.operand(inputs[0], dtype)        # integers: already whole
            if op_type in ("IsNaN", "IsInf"):              # never, for integers
                x = tr.operand(inputs[0], dtype)
                return tr.node("Not", [tr.node("Equal", [x, x])])
            if op_type == "Relu":
                return tr.node("Max", [tr.operand(inputs[0], dtype), tr.value(0, dtype)])
        if dtype is em.bool:
            if op_type in _ON_BOOL:
                return tr.node(_ON_BOOL[op_type], _operands(tr, inputs, dtype))
            if op_type in _ORDERED:
                return tr.node(op_type, _operands(tr, inputs, em.int32))
        return tr.node(op_type, _operands(tr, inputs, dtype))
    return fn


for _name, _type in _SIMPLE.items():
    SYMBOLICS[_name] = _simple(_type)


def _scalar(tr, value, dtype):
    return tr.value(value, dtype)


@symbolic("div")
def _div(tr, inputs, out, attrs):
    return tr.node("Div", _operands(tr, inputs, out.dtype))


@symbolic("ne")
def _ne(tr, inputs, out, attrs):
    return tr.node("Not", [tr.node("Equal", _operands(tr, inputs, _compute_dtype(inputs, out)))])


@symbolic("floor_divide")
def _floor_divide(tr, inputs, out, attrs):
    a, b = _operands(tr, inputs, out.dtype)
    if out.dtype.is_floating_point:
        return tr.node("Floor", [tr.node("Div", [a, b])])
    # integers: (a - a mod b) / b is exact, with Python's (floored) mod
    return tr.node("Div", [tr.node("Sub", [a, tr.node("Mod", [a, b], fmod=0)]), b])


@symbolic("remainder")
def _remainder(tr, inputs, out, attrs):
    a, b = _operands(tr, inputs, out.dtype)
    if not out.dtype.is_floating_point:
        return tr.node("Mod", [a, b], fmod=0)
    # a - floor(a / b) * b: the sign of b, as Python and PyTorch
    return tr.node("Sub", [a, tr.node("Mul", [tr.node("Floor", [tr.node("Div", [a, b])]), b])])


@symbolic("fmod")
def _fmod(tr, inputs, out, attrs):
    return tr.node("Mod", _operands(tr, inputs, out.dtype), fmod=1)


@symbolic("hypot")
def _hypot(tr, inputs, out, attrs):
    a, b = _operands(tr, inputs, out.dtype)
    return tr.node("Sqrt", [tr.node("Add", [tr.node("Mul", [a, a]), tr.node("Mul", [b, b])])])


@symbolic("fmax", "fmin")
def _fmax(tr, inputs, out, attrs):
    # the other operand where one is NaN
    a, b = _operands(tr, inputs, out.dtype)
    m = tr.node("Max" if tr.current_op == "fmax" else "Min", [a, b])
    m = tr.node("Where", [tr.node("IsNaN", [a]), b, m])
    return tr.node("Where", [tr.node("IsNaN", [b]), a, m])


@symbolic("logical_and", "logical_or", "logical_xor")
def _logical(tr, inputs, out, attrs):
    names = [tr.operand(x, em.bool) if not isinstance(x, em.Tensor) else
             _as_bool(tr, x) for x in inputs]
    return tr.node({"logical_and": "And", "logical_or": "Or",
                    "logical_xor": "Xor"}[tr.current_op], names)


def _as_bool(tr, x):
    if x.dtype is em.bool:
        return tr.value(x)
    return tr.node("Not", [tr.node("Equal", [tr.value(x), tr.value(0, x.dtype)])])


@symbolic("logical_not")
def _logical_not(tr, inputs, out, attrs):
    return tr.node("Not", [_as_bool(tr, inputs[0])])


@symbolic("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
def _bitwise(tr, inputs, out, attrs):
    op = tr.current_op
    xs = _operands(tr, inputs, out.dtype)
    if out.dtype is em.bool:
        return tr.node({"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor",
                        "bitwise_not": "Not"}[op], xs)
    if tr.opset < 18:
        _refuse(op, "integer bitwise ops need opset_version >= 18")
    return tr.node({"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr",
                    "bitwise_xor": "BitwiseXor", "bitwise_not": "BitwiseNot"}[op], xs)


@symbolic("atan2")
def _atan2(tr, inputs, out, attrs):
    y, x = _operands(tr, inputs, out.dtype)
    zero = tr.value(0.0, out.dtype)
    base = tr.node("Atan", [tr.node("Div", [y, x])])     # x = 0: atan(+-inf) = +-pi/2
    turn = tr.node("Where", [tr.node("GreaterOrEqual", [y, zero]), tr.value(math.pi, out.dtype),
                             tr.value(-math.pi, out.dtype)])
    r = tr.node("Where", [tr.node("Less", [x, zero]), tr.node("Add", [base, turn]), base])
    both0 = tr.node("And", [tr.node("Equal", [x, zero]), tr.node("Equal", [y, zero])])
    return tr.node("Where", [both0, zero, r])


def _signbit_of(tr, name, dtype):
    zero = tr.value(0, dtype)
    if dtype is em.bool:
        return tr.node("Not", [tr.node("Equal", [name, name])])
    neg = tr.node("Less", [name, zero])
    if not dtype.is_floating_point:
        return neg
    # -0.0: 1 / -0.0 = -inf
    return tr.node("Or", [neg, tr.node("Less", [tr.node("Reciprocal", [name]), zero])])


@symbolic("signbit")
def _signbit(tr, inputs, out, attrs):
    x = inputs[0]
    return _signbit_of(tr, tr.value(x), x.dtype)


@symbolic("copysign")
def _copysign(tr, inputs, out, attrs):
    a, b = _operands(tr, inputs, out.dtype)
    mag = tr.node("Abs", [a])
    return tr.node("Where", [_signbit_of(tr, b, out.dtype), tr.node("Neg", [mag]), mag])


@symbolic("square")
def _square(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Mul", [a, a])


@symbolic("rsqrt")
def _rsqrt(tr, inputs, out, attrs):
    return tr.node("Reciprocal", [tr.node("Sqrt", _operands(tr, inputs, out.dtype))])


@symbolic("exp2")
def _exp2(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Pow", [_scalar(tr, 2.0, out.dtype), a])


@symbolic("expm1")
def _expm1(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Sub", [tr.node("Exp", [a]), _scalar(tr, 1.0, out.dtype)])


@symbolic("log2", "log10")
def _log_base(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    base = 2.0 if tr.current_op == "log2" else 10.0
    return tr.node("Div", [tr.node("Log", [a]), _scalar(tr, math.log(base), out.dtype)])


@symbolic("log1p")
def _log1p(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Log", [tr.node("Add", [a, _scalar(tr, 1.0, out.dtype)])])


@symbolic("erfc")
def _erfc(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Sub", [_scalar(tr, 1.0, out.dtype), tr.node("Erf", [a])])


@symbolic("gelu")
def _gelu(tr, inputs, out, attrs):
    # x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), the exact form (ONNX Gelu is opset 20)
    (a,) = _operands(tr, inputs, out.dtype)
    if tr.opset >= 20:
        return tr.node("Gelu", [a])
    e = tr.node("Erf", [tr.node("Mul", [a, _scalar(tr, 1 / math.sqrt(2.0), out.dtype)])])
    half = tr.node("Mul", [a, _scalar(tr, 0.5, out.dtype)])
    return tr.node("Mul", [half, tr.node("Add", [e, _scalar(tr, 1.0, out.dtype)])])


@symbolic("_gelu_tanh")
def _gelu_tanh(tr, inputs, out, attrs):
    # gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    (a,) = _operands(tr, inputs, out.dtype)
    cube = tr.node("Mul", [tr.node("Mul", [a, a]), a])
    inner = tr.node("Add", [a, tr.node("Mul", [cube, _scalar(tr, 0.044715, out.dtype)])])
    t = tr.node("Tanh", [tr.node("Mul", [inner, _scalar(tr, math.sqrt(2 / math.pi),
                                                           out.dtype)])])
    half = tr.node("Mul", [a, _scalar(tr, 0.5, out.dtype)])
    return tr.node("Mul", [half, tr.node("Add", [t, _scalar(tr, 1.0, out.dtype)])])


@symbolic("trunc")
def _trunc(tr, inputs, out, attrs):
    (a,) = _operands(tr, inputs, out.dtype)
    if not out.dtype.is_floating_point:
        return a
    neg = tr.node("Less", [a, _scalar(tr, 0.0, out.dtype)])
    return tr.node("Where", [neg, tr.node("Ceil", [a]), tr.node("Floor", [a])])


@symbolic("isfinite")
def _isfinite(tr, inputs, out, attrs):
    x = inputs[0]
    if not x.dtype.is_floating_point:
        return tr.node("Equal", [tr.value(x), tr.value(x)])     # integers: always finite
    a = tr.value(x)
    return tr.node("Not", [tr.node("Or", [tr.node("IsNaN", [a]), tr.node("IsInf", [a])])])


@symbolic("sgn")
def _sgn(tr, inputs, out, attrs):
    # real inputs only (complex ones are refused before): sgn is sign
    return SYMBOLICS["sign"](tr, inputs, out, attrs)


@symbolic("conj_physical")
def _conj_physical(tr, inputs, out, attrs):
    return tr.node("Identity", _operands(tr, inputs, out.dtype))


@symbolic("angle")
def _angle(tr, inputs, out, attrs):
    # of a real number: pi where x < 0, else 0; NaN stays NaN
    (a,) = _operands(tr, inputs, out.dtype)
    zero, pi = _scalar(tr, 0.0, out.dtype), _scalar(tr, math.pi, out.dtype)
    r = tr.node("Where", [tr.node("Less", [a, zero]), pi, zero])
    return tr.node("Where", [tr.node("IsNaN", [a]), a, r])


@symbolic("sinc")
def _sinc(tr, inputs, out, attrs):
    # sin(pi x) / (pi x), 1 at 0
    (a,) = _operands(tr, inputs, out.dtype)
    px = tr.node("Mul", [a, _scalar(tr, math.pi, out.dtype)])
    zero = tr.node("Equal", [a, _scalar(tr, 0.0, out.dtype)])
    safe = tr.node("Where", [zero, _scalar(tr, 1.0, out.dtype), px])
    return tr.node("Where", [zero, _scalar(tr, 1.0, out.dtype),
                             tr.node("Div", [tr.node("Sin", [safe]), safe])])


@symbolic("logit")
def _logit(tr, inputs, out, attrs):
    # log(p / (1 - p)) (the eps clamp, when given, is recorded as its own clamp)
    (a,) = _operands(tr, inputs, out.dtype)
    return tr.node("Log", [tr.node("Div", [a, tr.node("Sub", [_scalar(tr, 1.0, out.dtype), a])])])


@symbolic("special_xlog1py")
def _xlog1py(tr, inputs, out, attrs):
    # x * log1p(y), 0 where x == 0 (unless y is NaN)
    x, y = _operands(tr, inputs, out.dtype)
    prod = tr.node("Mul", [x, tr.node("Log", [tr.node("Add", [y, _scalar(tr, 1.0, out.dtype)])])])
    keep = tr.node("Or", [tr.node("Not", [tr.node("Equal", [x, _scalar(tr, 0.0, out.dtype)])]),
                          tr.node("IsNaN", [y])])
    return tr.node("Where", [keep, prod, _scalar(tr, 0.0, out.dtype)])


@symbolic("special_entr")
def _entr(tr, inputs, out, attrs):
    # -x log x for x > 0, 0 at 0, -inf below; NaN stays NaN
    (a,) = _operands(tr, inputs, out.dtype)
    zero = _scalar(tr, 0.0, out.dtype)
    pos = tr.node("Greater", [a, zero])
    safe = tr.node("Where", [pos, a, _scalar(tr, 1.0, out.dtype)])
    v = tr.node("Neg", [tr.node("Mul", [safe, tr.node("Log", [safe])])])
    r = tr.node("Where", [pos, v, tr.node("Where", [tr.node("Equal", [a, zero]), zero,
                                                    _scalar(tr, -math.inf, out.dtype)])])
    return tr.node("Where", [tr.node("IsNaN", [a]), a, r])


@symbolic("clamp")
def _clamp(tr, inputs, out, attrs):
    a, lo, hi = _operands(tr, inputs, out.dtype)
    return tr.node("Min", [tr.node("Max", [a, lo]), hi])


@symbolic("lerp")
def _lerp(tr, inputs, out, attrs):
    a, b, w = _operands(tr, inputs, out.dtype)
    return tr.node("Add", [a, tr.node("Mul", [w, tr.node("Sub", [b, a])])])


@symbolic("where")
def _where(tr, inputs, out, attrs):
    cond, a, b = inputs
    c = _as_bool(tr, cond) if isinstance(cond, em.Tensor) else tr.value(bool(cond), em.bool)
    if out.dtype is em.bool:        # no bool Where kernel in onnxruntime: pick in int32
        r = tr.node("Where", [c, tr.operand(a, em.int32), tr.operand(b, em.int32)])
        return tr.cast(r, em.int32, em.bool)
    return tr.node("Where", [c, tr.operand(a, out.dtype), tr.operand(b, out.dtype)])


# reductions ----------------------------------------------------------------------------

def _axes(tr, op_type, data, dims, keepdim, **extra):
    """Reduce<op_type> over dims: the axes as an input (opset 18, and ReduceSum from 13)
    or an attribute."""
    if tr.opset >= 18 or op_type == "ReduceSum":
        return tr.node(op_type, [data, tr.ints(dims)], keepdims=int(keepdim), **extra)
    return tr.node(op_type, [data], axes=list(dims), keepdims=int(keepdim), **extra)


def _reduce(op_type):
    def fn(tr, inputs, out, attrs):
        x = inputs[0]
        dims = tuple(attrs.get("dim") or ())
        keep = bool(attrs.get("keepdim"))
        if x.ndim == 0:
            return tr.cast(tr.value(x), x.dtype, out.dtype)
        data = tr.cast(tr.value(x), x.dtype, out.dtype)
        return _axes(tr, op_type, data, dims, keep)
    return fn


SYMBOLICS["sum"] = _reduce("ReduceSum")
SYMBOLICS["prod"] = _reduce("ReduceProd")
SYMBOLICS["amax"] = _reduce("ReduceMax")
SYMBOLICS["amin"] = _reduce("ReduceMin")
SYMBOLICS["norm2"] = _reduce("ReduceL2")


@symbolic("all", "any")
def _all_any(tr, inputs, out, attrs):
    x = inputs[0]
    dims = tuple(attrs.get("dim") or ())
    keep = bool(attrs.get("keepdim"))
    b = tr.cast(_as_bool(tr, x), em.bool, em.int32)
    if x.ndim == 0:
        r = b
    else:
        r = _axes(tr, "ReduceMin" if tr.current_op == "all" else "ReduceMax", b, dims, keep)
    return tr.cast(r, em.int32, em.bool)


@symbolic("cumsum")
def _cumsum(tr, inputs, out, attrs):
    x = inputs[0]
    data = tr.cast(tr.value(x), x.dtype, out.dtype)
    return tr.node("CumSum", [data, tr.ints([attrs["dim"]])])


# views and shapes ----------------------------------------------------------------------

def _reshape_dims(in_shape, out_shape):
    """The Reshape target: 0 (copy the input's dim) where a dim keeps its place and size,
    -1 for the first other dim, so a dynamic batch or sequence dim survives."""
    dims = [0 if i < len(in_shape) and s == in_shape[i] and s != 0 else s
            for i, s in enumerate(out_shape)]
    for i, s in enumerate(dims):
        if s != 0 and out_shape[i] != 0:
            dims[i] = -1
            break
    return dims


@symbolic("view")
def _view(tr, inputs, out, attrs):
    x = inputs[0]
    target = tr.ints(_reshape_dims(tuple(x.shape), tuple(out.shape)))
    tr.reshapes.append((target, tuple(x.shape), tuple(out.shape)))
    return tr.node("Reshape", [tr.value(x), target])


@symbolic("permute")
def _permute(tr, inputs, out, attrs):
    return tr.node("Transpose", [tr.value(inputs[0])], perm=list(attrs["dims"]))


@symbolic("expand")
def _expand(tr, inputs, out, attrs):
    x = inputs[0]
    shape = list(out.shape)
    nx = x.ndim
    lead = len(shape) - nx
    # 1 keeps the input's dim (Expand broadcasts): a dynamic dim stays dynamic
    target = [1 if i >= lead and x.shape[i - lead] == s else s for i, s in enumerate(shape)]
    return tr.node("Expand", [tr.value(x), tr.ints(target)])


@symbolic("narrow")
def _narrow(tr, inputs, out, attrs):
    s, n = attrs["start"], attrs["length"]
    return tr.node("Slice", [tr.value(inputs[0]), tr.ints([s]), tr.ints([s + n]),
                             tr.ints([attrs["dim"]])])


@symbolic("unfold")
def _unfold(tr, inputs, out, attrs):
    # x.unfold(dim, size, step): the windows gathered along dim, their elements last
    import numpy as np
    x = inputs[0]
    d, size, step = attrs["dim"], attrs["size"], attrs["step"]
    if x.ndim == 0:
        return tr.node("Unsqueeze", [tr.value(x), tr.ints([0])])
    n = out.shape[d]
    idx = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).astype(np.int64)
    g = tr.node("Gather", [tr.value(x), tr.const(idx, "windows")], axis=d)
    perm = [i for i in range(x.ndim + 1) if i != d + 1] + [d + 1]
    return tr.node("Transpose", [g], perm=perm)


@symbolic("index_view")
def _index_view(tr, inputs, out, attrs):
    x = inputs[0]
    name = tr.value(x)
    axis = 0
    for k in attrs["key"]:
        if k is None:
            name = tr.node("Unsqueeze", [name, tr.ints([axis])])
            axis += 1
        elif isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if k.start in (None, 0) and k.stop is None and step == 1:
                axis += 1
                continue
            if step > 0:
                start = 0 if k.start is None else k.start
                stop = _INT64_MAX if k.stop is None else k.stop
            else:
                start = _INT64_MAX if k.start is None else k.start
                stop = _INT64_MIN if k.stop is None else k.stop
            name = tr.node("Slice", [name, tr.ints([start]), tr.ints([stop]),
                                     tr.ints([axis]), tr.ints([step])])
            axis += 1
        else:                       # an int: the dim goes away
            idx = tr.value(int(k), em.int64)
            name = tr.node("Gather", [name, idx], axis=axis)
    return name


def _index_tensor(tr, t):
    return tr.cast(tr.value(t), t.dtype, em.int64)


@symbolic("index")
def _index(tr, inputs, out, attrs):
    x = inputs[0]
    idx = [(d, t) for d, t in enumerate(attrs["indices"]) if t is not None]
    if len(idx) != 1:
        _refuse("index", f"advanced indexing with {len(idx)} index tensors (ember exports "
                         f"one integer index tensor, x[..., idx, ...])")
    d, t = idx[0]
    key = attrs.get("key")
    given = [k for k in (key if isinstance(key, tuple) else (key,))
             if isinstance(k, em.Tensor)]
    if len(given) == 1:
        t = given[0]             # the index as the model passed it (traced)
    if t.dtype is em.bool:
        _refuse("index", "indexing with a boolean mask (its result's size depends on "
                         "the data)")
    return tr.node("Gather", [tr.value(x), _index_tensor(tr, t)], axis=d)


@symbolic("index_select")
def _index_select(tr, inputs, out, attrs):
    t = attrs.get("index_arg", attrs["index"])
    i = _index_tensor(tr, t)
    if t.ndim == 0:
        i = tr.node("Unsqueeze", [i, tr.ints([0])])
    x = inputs[0]
    if x.ndim == 0:
        return tr.node("Identity", [tr.value(x)])
    return tr.node("Gather", [tr.value(x), i], axis=attrs["dim"])


@symbolic("gather")
def _gather(tr, inputs, out, attrs):
    x = inputs[0]
    t = attrs.get("index_arg", attrs["index"])
    if x.ndim == 0 or t.ndim == 0:
        t = attrs["index"]
        if x.ndim == 0:
            return tr.node("Identity", [tr.value(x)])
    return tr.node("GatherElements", [tr.value(x), _index_tensor(tr, t)], axis=attrs["dim"])


@symbolic("cat")
def _cat(tr, inputs, out, attrs):
    return tr.node("Concat", [tr.operand(x, out.dtype) for x in inputs], axis=attrs["dim"])


@symbolic("flip")
def _flip(tr, inputs, out, attrs):
    dims = list(attrs["dims"])
    n = len(dims)
    return tr.node("Slice", [tr.value(inputs[0]), tr.ints([-1] * n), tr.ints([_INT64_MIN] * n),
                             tr.ints(dims), tr.ints([-1] * n)])


@symbolic("clone", "to_device")
def _identity(tr, inputs, out, attrs):
    return tr.node("Identity", [tr.value(inputs[0])])


@symbolic("copy_")
def _copy(tr, inputs, out, attrs):
    # dst.copy_(src) over the whole of dst (a write through a view was refused)
    dst, src = inputs
    v = tr.operand(src, dst.dtype)
    if tuple(src.shape) != tuple(dst.shape) if isinstance(src, em.Tensor) else dst.ndim:
        v = tr.node("Expand", [v, tr.ints(list(dst.shape))])
    return v


@symbolic("fill_")
def _fill(tr, inputs, out, attrs):
    # the filled tensor holds one value (recorded after the fill): a constant
    from ember.onnx._export import _to_numpy
    return tr.const(_to_numpy(out), "filled")


@symbolic("to")
def _to(tr, inputs, out, attrs):
    x = inputs[0]
    return tr.node("Cast", [tr.value(x)], to=_dtype(out.dtype))


def _dtype(dtype):
    from ember.onnx._export import _onnx_dtype
    return _onnx_dtype(dtype)


# linear algebra, convolution, pooling ------------------------------------------------

@symbolic("matmul")
def _matmul(tr, inputs, out, attrs):
    return tr.node("MatMul", _operands(tr, inputs, out.dtype))


@symbolic("conv2d")
def _conv2d(tr, inputs, out, attrs):
    x, w, b = inputs
    ph, pw = attrs["padding"]
    names = [tr.value(x), tr.value(w)] + ([tr.value(b)] if b is not None else [])
    return tr.node("Conv", names, strides=list(attrs["stride"]), pads=[ph, pw, ph, pw],
                   dilations=list(attrs["dilation"]), group=int(attrs["groups"]),
                   kernel_shape=list(w.shape[2:]))


@symbolic("conv_transpose2d")
def _conv_transpose2d(tr, inputs, out, attrs):
    x, w, b = inputs
    ph, pw = attrs["padding"]
    names = [tr.value(x), tr.value(w)] + ([tr.value(b)] if b is not None else [])
    return tr.node("ConvTranspose", names, strides=list(attrs["stride"]),
                   pads=[ph, pw, ph, pw], dilations=list(attrs["dilation"]),
                   group=int(attrs["groups"]), output_padding=list(attrs["output_padding"]),
                   kernel_shape=list(w.shape[2:]))


def _pool_input(tr, x, sd):
    """(value, batched): pooling nodes want (N, C, *spatial)."""
    name = tr.value(x)
    if x.ndim == sd + 1:
        return tr.node("Unsqueeze", [name, tr.ints([0])]), False
    return name, True


def _pool_output(tr, name, batched):
    return name if batched else tr.node("Squeeze", [name, tr.ints([0])])


@symbolic("max_pool2d", "max_pool1d")
def _max_pool(tr, inputs, out, attrs):
    op = tr.current_op
    if "kernel_size" not in attrs:
        _refuse(op, "its recorded attrs lack the window geometry")
    sd = 2 if op.endswith("2d") else 1
    name, batched = _pool_input(tr, inputs[0], sd)
    k = list(attrs["kernel_size"])[-sd:]
    s = list(attrs["stride"])[-sd:]
    p = list(attrs["padding"])[-sd:]
    d = list(attrs["dilation"])[-sd:]
    y = tr.node("MaxPool", [name], kernel_shape=k, strides=s, pads=p + p, dilations=d,
                ceil_mode=int(bool(attrs["ceil_mode"])))
    return _pool_output(tr, y, batched)


@symbolic("avg_pool2d", "avg_pool1d")
def _avg_pool(tr, inputs, out, attrs):
    op = tr.current_op
    if attrs.get("divisor_override") is not None:
        _refuse(op, "divisor_override has no ONNX AveragePool equivalent")
    if attrs.get("ceil_mode"):
        _refuse(op, "ceil_mode=True: ONNX AveragePool counts the windows that overhang the "
                    "input differently from PyTorch")
    sd = 2 if op.endswith("2d") else 1
    name, batched = _pool_input(tr, inputs[0], sd)
    k = list(attrs["kernel_size"])[-sd:]
    s = list(attrs["stride"])[-sd:]
    p = list(attrs["padding"])[-sd:]
    y = tr.node("AveragePool", [name], kernel_shape=k, strides=s, pads=p + p,
                count_include_pad=int(bool(attrs["count_include_pad"])))
    return _pool_output(tr, y, batched)


@symbolic("adaptive_avg_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool2d",
          "adaptive_max_pool1d")
def _adaptive(tr, inputs, out, attrs):
    op = tr.current_op
    sd = 2 if op.endswith("2d") else 1
    x = inputs[0]
    isz = list(x.shape[-sd:])
    osz = list(out.shape[-sd:])
    avg = "avg" in op
    name, batched = _pool_input(tr, x, sd)
    if all(o == 1 for o in osz):
        y = tr.node("GlobalAveragePool" if avg else "GlobalMaxPool", [name])
    elif all(o and i % o == 0 for i, o in zip(isz, osz)):
        k = [i // o for i, o in zip(isz, osz)]
        y = tr.node("AveragePool" if avg else "MaxPool", [name], kernel_shape=k, strides=k)
    else:
        _refuse(op, f"output size {tuple(osz)} does not divide the input size {tuple(isz)} "
                    f"(ONNX has no adaptive pooling)")
    return _pool_output(tr, y, batched)


# normalization, softmax, embedding -----------------------------------------------------

@symbolic("layer_norm")
def _layer_norm(tr, inputs, out, attrs):
    import numpy as np
    x, w, b = inputs
    shape = tuple(attrs["normalized_shape"])
    np_dt = np.dtype(x.dtype.name)
    scale = tr.value(w) if w is not None else tr.const(np.ones(shape, np_dt), "ones")
    bias = tr.value(b) if b is not None else tr.const(np.zeros(shape, np_dt), "zeros")
    return tr.node("LayerNormalization", [tr.value(x), scale, bias], axis=-len(shape),
                   epsilon=float(attrs["eps"]))


@symbolic("batch_norm")
def _batch_norm(tr, inputs, out, attrs):
    import numpy as np
    if attrs.get("training"):
        _refuse("batch_norm", "in training mode it normalises with the batch's statistics; "
                              "export in eval mode (training=TrainingMode.EVAL)")
    x, w, b = inputs
    rm, rv = attrs.get("running_mean"), attrs.get("running_var")
    if rm is None or rv is None:
        _refuse("batch_norm", "its recorded attrs lack the running statistics")
    C = x.shape[1]
    np_dt = np.dtype(x.dtype.name)
    scale = tr.value(w) if w is not None else tr.const(np.ones((C,), np_dt), "ones")
    bias = tr.value(b) if b is not None else tr.const(np.zeros((C,), np_dt), "zeros")
    return tr.node("BatchNormalization", [tr.value(x), scale, bias,
                                          tr.operand(rm, x.dtype), tr.operand(rv, x.dtype)],
                   epsilon=float(attrs["eps"]))


@symbolic("softmax", "log_softmax")
def _softmax(tr, inputs, out, attrs):
    x = inputs[0]
    if x.ndim == 0:
        return tr.node("Identity", [tr.value(x)]) if tr.current_op == "softmax" else \
            tr.node("Sub", [tr.value(x), tr.value(x)])
    return tr.node("Softmax" if tr.current_op == "softmax" else "LogSoftmax",
                   [tr.cast(tr.value(x), x.dtype, out.dtype)], axis=int(attrs["dim"]))


@symbolic("embedding")
def _embedding(tr, inputs, out, attrs):
    w = inputs[0]
    t = attrs.get("input", attrs["indices"])      # the indices as given (traced)
    return tr.node("Gather", [tr.value(w), _index_tensor(tr, t)], axis=0)


@symbolic("dropout", "feature_dropout", "alpha_dropout")
def _dropout(tr, inputs, out, attrs):
    _refuse(tr.current_op, "it draws a random mask (dropout in training mode); export in "
                           "eval mode (training=TrainingMode.EVAL)")


# RNN, LSTM, GRU: whole modules -----------------------------------------------------------

# PyTorch's gate blocks -> ONNX's: LSTM (i, f, g, o) -> (i, o, f, c); GRU (r, z, n) -> (z, r, h)
_GATE_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN_TANH": (0,), "RNN_RELU": (0,)}


def rnn_module(tr, m, qual, forward, input, hx):
    """Run the module's own forward without recording its steps, and export the call as
    one ONNX RNN/LSTM/GRU node per layer."""
    import numpy as np

    from ember.nn.utils.rnn import PackedSequence
    from ember.onnx._export import TRACED
    op = type(m).__name__
    if isinstance(input, PackedSequence):
        _refuse(op, "a PackedSequence input (export padded tensors)")
    if m.proj_size:
        _refuse(op, "proj_size > 0 (ONNX LSTM has no projection)")
    tr.suppress += 1
    try:
        result = forward(input, hx)
    finally:
        tr.suppress -= 1
    if not isinstance(input, em.Tensor):
        return result
    output, state = result
    lstm = m.mode == "LSTM"
    if lstm:
        h0, c0 = (None, None) if hx is None else hx
    else:
        h0, c0 = hx, None
    unbatched = input.ndim == 2
    x = tr.value(input)
    if unbatched:
        x = tr.node("Unsqueeze", [x, tr.ints([1])])
    elif m.batch_first:
        x = tr.node("Transpose", [x], perm=[1, 0, 2])

    def state_of(h):
        if h is None:
            return None
        v = tr.value(h)
        return tr.node("Unsqueeze", [v, tr.ints([1])]) if unbatched else v
    h0v, c0v = state_of(h0), state_of(c0)
    dirs = 2 if m.bidirectional else 1
    H = m.hidden_size
    order = _GATE_ORDER[m.mode]
    onnx_op = "LSTM" if lstm else ("GRU" if m.mode == "GRU" else "RNN")
    prefix = f"{qual}." if qual else ""
    hs, cs = [], []
    for layer in range(m.num_layers):
        Ws, Rs, Bs = [], [], []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, _ = m._weights(layer, d)

            def blocks(t):
                a = t.detach().cpu().numpy()
                return np.concatenate([a[g * H:(g + 1) * H] for g in order], 0)
            Ws.append(blocks(w_ih))
            Rs.append(blocks(w_hh))
            if b_ih is not None:
                Bs.append(np.concatenate([blocks(b_ih), blocks(b_hh)]))
            else:
                Bs.append(np.zeros((2 * len(order) * H,), Ws[-1].dtype))
        sfx = f"_l{layer}"
        ins = [x, tr.const(np.stack(Ws), f"{prefix}W{sfx}"),
               tr.const(np.stack(Rs), f"{prefix}R{sfx}"),
               tr.const(np.stack(Bs), f"{prefix}B{sfx}"), ""]

        def layer_state(v, layer=layer):
            if v is None:
                return ""
            return tr.node("Slice", [v, tr.ints([layer * dirs]), tr.ints([(layer + 1) * dirs]),
                                     tr.ints([0])])
        ins.append(layer_state(h0v))
        kw = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
        if lstm:
            ins.append(layer_state(c0v))
        elif m.mode == "GRU":
            kw["linear_before_reset"] = 1
        else:
            act = "Relu" if m.mode == "RNN_RELU" else "Tanh"
            kw["activations"] = [act] * dirs
        while ins and ins[-1] == "":
            ins.pop()
        outs = tr.node(onnx_op, ins, n_out=3 if lstm else 2, base=onnx_op, **kw)
        y, yh = outs[0], outs[1]
        hs.append(yh)
        if lstm:
            cs.append(outs[2])
        # Y (seq, dirs, batch, H) -> (seq, batch, dirs * H)
        y = tr.node("Transpose", [y], perm=[0, 2, 1, 3])
        x = tr.node("Reshape", [y, tr.ints([0, 0, -1])])
    h_n = hs[0] if len(hs) == 1 else tr.node("Concat", hs, axis=0)
    c_n = (cs[0] if len(cs) == 1 else tr.node("Concat", cs, axis=0)) if lstm else None
    if unbatched:
        x = tr.node("Squeeze", [x, tr.ints([1])])
        h_n = tr.node("Squeeze", [h_n, tr.ints([1])])
        if lstm:
            c_n = tr.node("Squeeze", [c_n, tr.ints([1])])
    elif m.batch_first:
        x = tr.node("Transpose", [x], perm=[1, 0, 2])
    dyn = tr.is_dyn(input) or any(tr.is_dyn(h) for h in (h0, c0))
    out_tensors = [(output, x), (state[0] if lstm else state, h_n)]
    if lstm:
        out_tensors.append((state[1], c_n))
    for t, name in out_tensors:
        tr.bind(t, name, dyn)
        t._set_autograd(TRACED, True)
    return result
