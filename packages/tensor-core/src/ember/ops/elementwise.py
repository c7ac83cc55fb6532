"""The elementwise functions: one per op-table row (ops/table.py), made here, plus
the few that add arguments around a row (alpha, rounding_mode, clamp bounds)."""
from __future__ import annotations

import math
import numbers

from ember._args import int_arg, number_arg, tensor_arg, tensor_input
from ember._C import core as _core
from ember._registry import METHODS, tensor_method
from ember.ops import table

_ew = _core.elementwise
__all__ = []


_call = _core.ew_call   # positional fast path: (op index, a, b, c, arity, out)


def _make(row):
    name = row.name
    op = _core.OP_INDEX[name]
    if row.arity == 1:
        def fn(input, *, out=None):
            return _call(op, input, None, None, 1, out)
    elif row.arity == 2:
        def fn(input, other, *, out=None):
            return _call(op, input, other, None, 2, out)
    else:
        def fn(input, b, c, *, out=None):
            return _call(op, input, b, c, 3, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` (op table row; broadcasts, promotes dtypes)."
    return fn


def _make_inplace(name):
    op, arity = _core.OP_INDEX[name], table.ELEMENTWISE_BY_NAME[name].arity
    if arity == 1:
        def fn(self):
            return _call(op, self, None, None, 1, self)
    elif arity == 2:
        def fn(self, other):
            return _call(op, self, other, None, 2, self)
    else:
        def fn(self, b, c):
            return _call(op, self, b, c, 3, self)
    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"In-place `{name}`: writes into self and returns it."
    return fn


_SPECIAL = {"add", "sub", "div", "clamp", "round", "where", "pow", "lerp", "logit"}

for _row in table.ELEMENTWISE:
    if _row.name in _SPECIAL:
        continue
    _fn = _make(_row)
    for _n in (_row.name,) + _row.aliases:
        globals()[_n] = _fn
        __all__.append(_n)
    if _row.method:
        tensor_method(_fn, names=(_row.name,) + _row.aliases)
    if _row.inplace:
        for _n in (_row.name,) + _row.aliases:
            METHODS[_n + "_"] = _make_inplace(_row.name)


def _scaled(other, alpha, op):
    if alpha is None:
        return other
    if isinstance(alpha, _core.TensorBase) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{op}: alpha must be a real number, got {type(alpha).__name__}")
    if not isinstance(other, (_core.TensorBase, numbers.Number)):
        raise TypeError(f"{op}: other must be a Tensor or a number when alpha is given, got "
                        f"{type(other).__name__}")
    return other if alpha == 1 else other * alpha


@tensor_method
def add(input, other, *, alpha=None, out=None):
    """input + alpha * other."""
    return _ew("add", input, _scaled(other, alpha, "add"), out=out)


@tensor_method(names=("sub", "subtract"))
def sub(input, other, *, alpha=None, out=None):
    """input - alpha * other."""
    return _ew("sub", input, _scaled(other, alpha, "sub"), out=out)


subtract = sub


@tensor_method(names=("div", "divide", "true_divide"))
def div(input, other, *, rounding_mode=None, out=None):
    """input / other; rounding_mode None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return _ew("div", input, other, out=out)
    if rounding_mode == "floor":
        return _ew("floor_divide", input, other, out=out)
    if rounding_mode == "trunc":
        dtype = _core.result_dtype("floor_divide", input, other)
        if dtype.kind == "float":
            if dtype.name in ("float16", "bfloat16"):   # one rounding, as in their bodies
                input, other = (x.float() if isinstance(x, _core.TensorBase) else x
                                for x in (input, other))
            r = trunc(_ew("div", input, other))  # noqa: F821 (made from the op table below)
        else:
            # exact for all integers (a float quotient loses digits, and x / 0 is not
            # 0): the floor quotient, plus one where the division is inexact and the
            # signs differ
            q = _ew("floor_divide", input, other)
            inexact = _ew("ne", _ew("fmod", input, other), 0)
            signs = _ew("ne", input < 0, other < 0)
            r = _ew("add", q, _ew("logical_and", inexact, signs))
        return r.to(dtype) if out is None else out.copy_(r)
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


divide = true_divide = div


@tensor_method(names=("pow", "power"))
def pow(input, exponent, *, out=None):  # noqa: A001
    """input ** exponent; an integer tensor to a negative integer scalar is an error."""
    return _ew("pow", input, exponent, out=out)


power = pow


@tensor_method(names=("clamp", "clip"))
def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    """Limit input to [min, max]; either bound may be None (not both)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if min is None:
        return _ew("minimum", input, max, out=out)
    if max is None:
        return _ew("maximum", input, min, out=out)
    return _ew("clamp", input, min, max, out=out)


clip = clamp


@tensor_method
def clamp_min(input, min):  # noqa: A002
    return _ew("maximum", input, min)


@tensor_method
def clamp_max(input, max):  # noqa: A002
    return _ew("minimum", input, max)


def _clamp_(self, min=None, max=None):  # noqa: A002
    return clamp(self, min, max, out=self)


METHODS["clamp_"] = METHODS["clip_"] = _clamp_
METHODS["clamp_min_"] = lambda self, min: _ew("maximum", self, min, out=self)
METHODS["clamp_max_"] = lambda self, max: _ew("minimum", self, max, out=self)


def _inplace_of(f):
    # a closure, not a default argument: x.add_(1, 2) must not bind 2 as the function
    def inplace(self, other, **kw):
        return f(self, other, out=self, **kw)
    inplace.__name__ = f.__name__ + "_"
    return inplace


for _name in ("add", "sub", "div", "pow"):
    METHODS[_name + "_"] = _inplace_of(globals()[_name])
METHODS["subtract_"] = METHODS["sub_"]
METHODS["divide_"] = METHODS["true_divide_"] = METHODS["div_"]
METHODS["power_"] = METHODS["pow_"]


@tensor_method
def round(input, decimals=0, *, out=None):  # noqa: A001
    """Round half to even (like NumPy and PyTorch), to `decimals` decimal places."""
    if int_arg(decimals, "decimals", "round") == 0:
        return _ew("round", input, out=out)
    scale = 10.0 ** decimals
    return _ew("div", _ew("round", _ew("mul", input, scale)), scale, out=out)


METHODS["round_"] = lambda self, decimals=0: round(self, decimals, out=self)


def where(condition, input=None, other=None, *, out=None):
    """Elements of input where condition holds, else of other; where(condition) alone
    is nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        if not isinstance(condition, _core.TensorBase):
            raise TypeError(f"where: expected a Tensor condition, got "
                            f"{type(condition).__name__}")
        from ember.ops.index import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, _core.TensorBase):
        # a Python / NumPy condition lives where the tensor operands do
        from ember.ops.creation import as_tensor
        dev = next((a.device for a in (input, other) if isinstance(a, _core.TensorBase)), None)
        condition = as_tensor(condition, device=dev)
    if condition.dtype.name != "bool":
        condition = _ew("ne", condition, 0)
    return _ew("where", condition, input, other, out=out)


@tensor_method(names=("where",))
def _where_method(self, condition, other):
    return where(condition, self, other)


@tensor_method
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN with `nan` and +-inf with `posinf`/`neginf` (default: the dtype's
    largest/smallest finite value)."""
    tensor_arg(input, "nan_to_num")
    if out is not None and not isinstance(out, _core.TensorBase):
        raise TypeError(f"nan_to_num: out must be a Tensor, got {type(out).__name__}")
    if input.dtype.kind != "float":
        return input.clone() if out is None else out.copy_(input)
    from ember._dtypes import finfo
    info = finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    r = _ew("where", _ew("isnan", input), nan, input)
    r = _ew("where", _ew("eq", r, float("inf")), posinf, r)
    return _ew("where", _ew("eq", r, float("-inf")), neginf, r, out=out)


METHODS["nan_to_num_"] = lambda self, nan=0.0, posinf=None, neginf=None: \
    nan_to_num(self, nan, posinf, neginf, out=self)


@tensor_method
def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input)."""
    return _ew("lerp", input, end, weight, out=out)


METHODS["lerp_"] = lambda self, end, weight: _ew("lerp", self, end, weight, out=self)


@tensor_method
def float_power(input, exponent):
    from ember._dtypes import float64
    return _ew("pow", input.to(float64) if isinstance(input, _core.TensorBase) else input,
               exponent.to(float64) if isinstance(exponent, _core.TensorBase) else float(exponent))


def _tensor_pair(input, other, op):
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, _core.TensorBase):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if input.device != other.device:
        raise RuntimeError(f"{op}: expected both tensors on one device, got {input.device} "
                           f"and {other.device}")


@tensor_method
def equal(input, other):
    """True when input and other have the same shape and equal elements (one Python
    bool, as torch.equal): dtypes are promoted, NaN equals nothing. The elementwise
    comparison is eq (the Array API's `equal`, in ember.array_api)."""
    _tensor_pair(input, other, "equal")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(_core.reduce("all", _ew("eq", input, other), None))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + |rtol * other|, elementwise, as torch.isclose: equal
    elements (infinities of one sign included) are close, a finite difference is
    needed otherwise (nothing finite is close to an infinity), NaN is close to NaN
    only with equal_nan. Both tensors have one dtype."""
    _tensor_pair(input, other, "isclose")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: input dtype {input.dtype!r} does not match other "
                           f"dtype {other.dtype!r}")
    rtol, atol = number_arg(rtol, "rtol", "isclose"), number_arg(atol, "atol", "isclose")
    if not rtol >= 0 or not atol >= 0:
        raise RuntimeError(f"isclose: rtol and atol must be >= 0, got rtol={rtol!r}, "
                           f"atol={atol!r}")
    close = _ew("eq", input, other)
    if equal_nan and input.dtype.kind == "float":
        close = _ew("logical_or", close, _ew("logical_and", _ew("isnan", input),
                                             _ew("isnan", other)))
    if rtol == 0 and atol == 0:
        return close
    if input.dtype.kind == "bool":      # bool - bool is undefined: the default float
        input, other = input.to(_core.get_default_dtype()), other.to(_core.get_default_dtype())
    actual = abs(_ew("sub", input, other))
    allowed = _ew("add", atol, abs(_ew("mul", rtol, other)))
    finite_close = _ew("logical_and", _ew("isfinite", actual), _ew("le", actual, allowed))
    return _ew("logical_or", close, finite_close)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element pair is isclose (one Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


tensor_method(isclose)
tensor_method(allclose)


@tensor_method
def logaddexp(input, other):
    m = _ew("maximum", input, other)
    m = _ew("where", _ew("isinf", m), 0.0, m)
    return _ew("add", m, _ew("log", _ew("add", _ew("exp", _ew("sub", input, m)),
                                        _ew("exp", _ew("sub", other, m)))))


__all__ += ["add", "sub", "subtract", "div", "divide", "true_divide", "pow", "power", "clamp",
            "clip", "clamp_min", "clamp_max", "round", "where", "nan_to_num", "lerp",
            "float_power", "equal", "isclose", "allclose", "logaddexp"]


# composed elementwise ops (issue 18): written with op-table rows, so they run on every
# device and autograd differentiates them through their parts ----------------------------

def _tensor_or_number(x, name, op):
    if not isinstance(x, (_core.TensorBase, numbers.Real)):
        raise TypeError(f"{op}: {name} must be a Tensor or a real number, got "
                        f"{type(x).__name__} {x!r:.60}")
    return x


def _value_arg(value, op):
    if isinstance(value, _core.TensorBase):
        if value.numel() != 1:
            raise TypeError(f"{op}: value must be a number, got a tensor of shape "
                            f"{tuple(value.shape)}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: value must be a number, got {type(value).__name__} "
                        f"{value!r:.60}")
    return value


def _write(r, out, op):
    if out is None:
        return r
    if not isinstance(out, _core.TensorBase):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    return out.copy_(r)


@tensor_method
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2 (broadcasting, promoting), as torch.addcmul."""
    tensor_arg(input, "addcmul")
    tensor_arg(tensor1, "addcmul", "tensor1")
    tensor_arg(tensor2, "addcmul", "tensor2")
    value = _value_arg(value, "addcmul")
    p = _ew("mul", tensor1, tensor2)
    if not (isinstance(value, numbers.Number) and value == 1):
        p = _ew("mul", p, value)
    return _ew("add", input, p, out=out)


@tensor_method
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2, as torch.addcdiv (integer tensor1 and tensor2
    are refused, as PyTorch: integer division there is ambiguous)."""
    tensor_arg(input, "addcdiv")
    tensor_arg(tensor1, "addcdiv", "tensor1")
    tensor_arg(tensor2, "addcdiv", "tensor2")
    value = _value_arg(value, "addcdiv")
    if tensor1.dtype.kind != "float" and tensor2.dtype.kind != "float":
        raise RuntimeError(f"addcdiv: integer division of tensors is not supported "
                           f"(tensor1 {tensor1.dtype!r}, tensor2 {tensor2.dtype!r}); use "
                           f"floating point tensors")
    p = _ew("div", tensor1, tensor2)
    if not (isinstance(value, numbers.Number) and value == 1):
        p = _ew("mul", p, value)
    return _ew("add", input, p, out=out)


METHODS["addcmul_"] = lambda self, tensor1, tensor2, *, value=1: \
    addcmul(self, tensor1, tensor2, value=value, out=self)
METHODS["addcdiv_"] = lambda self, tensor1, tensor2, *, value=1: \
    addcdiv(self, tensor1, tensor2, value=value, out=self)


def _float_input(input, op):
    tensor_arg(input, op)
    if input.dtype.kind != "float":
        raise TypeError(f"{op}: needs a floating point tensor, got dtype {input.dtype!r}")
    return input


@tensor_method
def frac(input, *, out=None):
    """input - trunc(input): the fractional part, with input's sign (floating point
    only, as PyTorch)."""
    _float_input(input, "frac")
    return _ew("sub", input, _ew("trunc", input), out=out)


METHODS["frac_"] = lambda self: frac(self, out=self)


def _first_tensor(op, *args):
    for a in args:
        if isinstance(a, _core.TensorBase):
            return a
    raise TypeError(f"{op}: expected at least one Tensor argument, got "
                    f"{', '.join(type(a).__name__ for a in args)}")


@tensor_method
def xlogy(input, other, *, out=None):
    """input * log(other), and 0 where input is 0 (unless other is NaN), as torch.xlogy.
    The gradient is finite where input is 0."""
    _tensor_or_number(input, "input", "xlogy")
    _tensor_or_number(other, "other", "xlogy")
    t = _first_tensor("xlogy", input, other)
    if not isinstance(input, _core.TensorBase):
        from ember.ops.creation import as_tensor
        input = as_tensor(input, device=t.device)
    zero = _ew("eq", input, 0)
    if not (isinstance(other, numbers.Real) and not math.isnan(other)):
        zero = _ew("logical_and", zero, _ew("logical_not", _ew("isnan", other)))
    safe = _ew("where", zero, 1, other)
    return _ew("where", zero, 0, _ew("mul", input, _ew("log", safe)), out=out)


METHODS["xlogy_"] = lambda self, other: xlogy(self, other, out=self)


@tensor_method
def logaddexp2(input, other):
    """log2(2**input + 2**other), without overflow."""
    _tensor_or_number(other, "other", "logaddexp2")
    m = _ew("maximum", input, other)
    m = _ew("where", _ew("isinf", m), 0.0, m)
    return _ew("add", m, _ew("log2", _ew("add", _ew("exp2", _ew("sub", input, m)),
                                         _ew("exp2", _ew("sub", other, m)))))


def _int_pair(input, other, op):
    tensor_arg(input, op)
    _tensor_or_number(other, "other", op)
    for name, x in (("input", input), ("other", other)):
        kind = x.dtype.kind if isinstance(x, _core.TensorBase) else \
            ("int" if isinstance(x, numbers.Integral) and not isinstance(x, bool) else "other")
        if kind != "int":
            what = repr(x.dtype) if isinstance(x, _core.TensorBase) else type(x).__name__
            raise TypeError(f"{op}: needs integer tensors, got {name} of {what}")


def _gcd(a, b):
    b = _ew("abs", _ew("add", b, _ew("mul", a, 0)))     # both broadcast, promoted
    a = _ew("abs", _ew("add", a, _ew("mul", b, 0)))
    while bool(_core.reduce("any", _ew("ne", b, 0), None)):
        nz = _ew("ne", b, 0)
        safe = _ew("where", nz, b, 1)
        a, b = _ew("where", nz, b, a), _ew("where", nz, _ew("remainder", a, safe), 0)
    return a


@tensor_method
def gcd(input, other, *, out=None):
    """The greatest common divisor of |input| and |other| (integers; gcd(0, 0) = 0),
    by Euclid's algorithm over whole tensors (O(log max) rounds of op-table ops)."""
    _int_pair(input, other, "gcd")
    with _core._no_record():
        r = _gcd(input, other)
    return _write(r, out, "gcd")


@tensor_method
def lcm(input, other, *, out=None):
    """The least common multiple |input * other| / gcd (integers; 0 when either is 0)."""
    _int_pair(input, other, "lcm")
    with _core._no_record():
        g = _gcd(input, other)
        q = _ew("floor_divide", input, _ew("where", _ew("eq", g, 0), 1, g))
        r = _ew("abs", _ew("mul", q, other))
    return _write(r, out, "lcm")


METHODS["gcd_"] = lambda self, other: gcd(self, other, out=self)
METHODS["lcm_"] = lambda self, other: lcm(self, other, out=self)


@tensor_method
def heaviside(input, values, *, out=None):
    """The Heaviside step: 0 where input < 0, values where input == 0, 1 where input > 0
    (input and values of one dtype, as PyTorch)."""
    tensor_arg(input, "heaviside")
    tensor_arg(values, "heaviside", "values")
    if input.dtype is not values.dtype:
        raise TypeError(f"heaviside: input and values must have one dtype, got "
                        f"{input.dtype!r} and {values.dtype!r}")
    r = _ew("where", _ew("eq", input, 0), values, _ew("gt", input, 0).to(input.dtype))
    return _write(r, out, "heaviside")


METHODS["heaviside_"] = lambda self, values: heaviside(self, values, out=self)


def _to_float(input):
    return input if input.dtype.kind == "float" else input.to(_core.get_default_dtype())


@tensor_method
def deg2rad(input, *, out=None):
    """Degrees to radians (integers give the default float dtype)."""
    tensor_arg(input, "deg2rad")
    return _ew("mul", _to_float(input), math.pi / 180, out=out)


@tensor_method
def rad2deg(input, *, out=None):
    """Radians to degrees (integers give the default float dtype)."""
    tensor_arg(input, "rad2deg")
    return _ew("mul", _to_float(input), 180 / math.pi, out=out)


METHODS["deg2rad_"] = lambda self: deg2rad(_float_input(self, "deg2rad_"), out=self)
METHODS["rad2deg_"] = lambda self: rad2deg(_float_input(self, "rad2deg_"), out=self)


@tensor_method
def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)) (the op-table row; 2 atanh(2p - 1) on [1/4, 3/4], so it is
    accurate around 1/2 too); with eps, p is first clamped to [eps, 1 - eps]."""
    tensor_arg(input, "logit")
    x = input
    if eps is not None:
        eps = number_arg(eps, "eps", "logit")
        x = _ew("clamp", _to_float(x), eps, 1 - eps)
    return _ew("logit", x, out=out)


METHODS["logit_"] = lambda self, eps=None: logit(_float_input(self, "logit_"), eps, out=self)


@tensor_method
def ldexp(input, other, *, out=None):
    """input * 2 ** other (a floating point result)."""
    tensor_arg(input, "ldexp")
    _tensor_or_number(other, "other", "ldexp")
    return _ew("mul", _to_float(input), _ew("exp2", _to_float(other))
               if isinstance(other, _core.TensorBase) else 2.0 ** other, out=out)


METHODS["ldexp_"] = lambda self, other: ldexp(_float_input(self, "ldexp_"), other, out=self)


def _float_power_(self, exponent):
    if self.dtype.name != "float64":
        raise RuntimeError(f"float_power_: the base must be float64 (the result's dtype), "
                           f"got {self.dtype!r}")
    return _core.copy_(self, float_power(self, exponent))


METHODS["float_power_"] = _float_power_


def _name_lambdas(names):
    """Give the in-place lambdas above their method's name, so that a wrong call says
    which method it was (a TypeError from `<lambda>()` names nothing)."""
    for n in names:
        f = METHODS[n]
        if f.__name__ == "<lambda>":
            f.__code__ = f.__code__.replace(co_name=n, co_qualname=n)
            f.__name__ = f.__qualname__ = n


_name_lambdas(["addcmul_", "addcdiv_", "frac_", "xlogy_", "gcd_", "lcm_", "heaviside_",
               "deg2rad_", "rad2deg_", "logit_", "ldexp_"])

__all__ += ["addcmul", "addcdiv", "frac", "xlogy", "logaddexp2", "gcd", "lcm", "heaviside",
            "deg2rad", "rad2deg", "logit", "ldexp"]


@tensor_method
def rsub(input, other, *, alpha=1):
    """other - alpha * input (sub with the operands swapped)."""
    tensor_arg(input, "rsub")
    _tensor_or_number(other, "other", "rsub")
    return _ew("sub", other, _scaled(input, alpha, "rsub"))


# torch.abs_(x), torch.relu_(x), ...: PyTorch's module-level spellings of the in-place
# methods of its elementwise ops
_INPLACE_FUNCTIONS = [
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_",
    "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_",
    "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
    "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_"]
_name_lambdas(["clamp_min_", "clamp_max_", "round_", "nan_to_num_", "lerp_"])
for _n in _INPLACE_FUNCTIONS:
    globals()[_n] = tensor_input(METHODS[_n])
__all__ += ["rsub"] + _INPLACE_FUNCTIONS




@tensor_method
def isposinf(input, *, out=None):
    """Whether each element is +inf."""
    tensor_arg(input, "isposinf")
    r = _ew("eq", input, math.inf) if input.dtype.kind == "float" else _ew("ne", input, input)
    return _write(r, out, "isposinf")


@tensor_method
def isneginf(input, *, out=None):
    """Whether each element is -inf."""
    tensor_arg(input, "isneginf")
    r = _ew("eq", input, -math.inf) if input.dtype.kind == "float" else _ew("ne", input, input)
    return _write(r, out, "isneginf")


@tensor_method
def isreal(input):
    """Whether each element is real: a complex element whose imaginary part is 0 (NaN
    real parts included); every element of a real tensor."""
    tensor_arg(input, "isreal")
    if input.dtype.kind == "complex":
        return _ew("eq", input.imag, 0)
    return _ew("eq", input, input) if input.dtype.kind != "float" else \
        _ew("logical_or", _ew("eq", input, input), _ew("isnan", input))


# the integer dtype of each float's size, and its smallest subnormal
_BITS = {"float16": ("int16", 2.0 ** -24), "bfloat16": ("int16", 2.0 ** -133),
         "float32": ("int32", 2.0 ** -149),
         "float64": ("int64", 2.0 ** -1074)}


@tensor_method
def nextafter(input, other, *, out=None):
    """The next floating point value after input towards other (elementwise, one
    ulp; from 0 the smallest subnormal with other's sign), as torch.nextafter: the bit
    pattern of input stepped by one, through a view of the integer dtype of its size."""
    tensor_arg(input, "nextafter")
    tensor_arg(other, "nextafter", "other")
    if input.dtype.kind != "float" or input.dtype is not other.dtype:
        raise TypeError(f"nextafter: input and other must be floating point tensors of "
                        f"one dtype, got {input.dtype!r} and {other.dtype!r}")
    name, tiny = _BITS[input.dtype.name]
    ibits = _core._dtype_by_name(name)
    from ember._layout import broadcast_shape
    shape = tuple(broadcast_shape((tuple(input.shape), tuple(other.shape)), "nextafter"))
    with _core._no_record():
        a = input.detach().expand(shape).contiguous()
        b = other.detach().expand(shape)
        bits = a.view(ibits)
        up = _ew("eq", _ew("lt", a, b), _ew("gt", a, 0))      # away from zero when true
        stepped = _ew("add", bits, _ew("sub", _ew("mul", up.to(ibits), 2), 1)).view(a.dtype)
        from_zero = _ew("copysign", _ew("add", _ew("mul", a, 0), tiny), b)
        r = _ew("where", _ew("eq", a, 0), from_zero, stepped)
        r = _ew("where", _ew("eq", a, b), b, r)
        r = _ew("where", _ew("logical_or", _ew("isnan", a), _ew("isnan", b)), math.nan, r)
    return _write(r.reshape(shape), out, "nextafter")


METHODS["nextafter_"] = lambda self, other: nextafter(self, other, out=self)
_name_lambdas(["nextafter_"])
__all__ += ["isposinf", "isneginf", "isreal", "nextafter"]


@tensor_method
@tensor_input
def hardshrink(input, lambd=0.5):
    """input where |input| > lambd, else 0 (torch.hardshrink), composed of abs, gt and
    where (so every device, and autograd through where)."""
    lambd = number_arg(lambd, "lambd", "hardshrink")
    return _ew("where", _ew("gt", _ew("abs", input), lambd), input, 0.0)


@tensor_method
@tensor_input
def prelu(input, weight):
    """max(0, x) + weight * min(0, x) (torch.prelu): weight of one value or one per
    channel (dim 1; an input of fewer than 2 dims has one channel). Composed of where
    and mul."""
    weight = tensor_arg(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be 1-D or 0-d, got shape {tuple(weight.shape)}")
    n = weight.numel()
    if n != 1:
        c = input.shape[1] if input.ndim >= 2 else 1
        if n != c:
            raise ValueError(f"prelu: mismatch of parameter numbers and input channel size: "
                             f"weight has {n} values, input shape {tuple(input.shape)}")
        weight = weight.reshape((c,) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return _ew("where", _ew("ge", input, 0), input, _ew("mul", weight, input))


__all__ += ["hardshrink", "prelu"]
