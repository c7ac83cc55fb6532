"""THE op table: every elementwise and reduction op of ember, one row each.

A row's body is one C expression over the operands ``a``, ``b``, ``c``. C, CUDA C
and OpenCL C share that syntax, so ``ember.ops.render`` turns the same row into the
CPU loops (at build time), the CUDA kernels and the OpenCL kernels. ``{T}`` in a
body is replaced by the compute dtype's name (``int32``), which is how a body calls
a per-dtype helper from ``kernels/common/ember_scalar.h``.

Bodies are keyed by dtype kind: ``"bool"``, ``"int"`` (signed and unsigned
integers), ``"float"`` (float16 is computed in float32) and ``"complex"``
(complex64, complex128: the operands are ``em_complex64`` / ``em_complex128``
structs ``{re, im}``, so a complex body calls the helpers of
``kernels/common/ember_complex.h``, ``em_c<op>_{T}(a, b)``). A row runs on exactly
the kinds it has a body for; ``promote`` says what happens to the other inputs, and
a complex operand of a row without a complex body is refused (never made real).

Adding an op = one row here (+ one row in ember/autograd/formulas.py when it is
differentiable). The tests enumerate this table, so a new row is tested without new
test code; ``numpy`` names the oracle the tests compare against.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Elementwise:
    name: str
    arity: int
    body: dict            # kind -> C expression
    out: str = "same"     # "same": result has the compute dtype; "bool": a predicate;
    #                       "real": the compute dtype's real part (abs of complex64: float32)
    # How input dtypes become the compute dtype:
    #   "common": the promoted dtype of the inputs (Array API rules)
    #   "float":  like "common", then bool/int become the default float (torch.exp(int))
    promote: str = "common"
    numpy: str | None = None   # oracle for the tests: a numpy function name
    domain: str = "all"        # inputs the tests draw: "all", "positive", "unit", "ge1", "nonzero"
    method: bool = True        # also a Tensor method
    inplace: bool = True       # has a Tensor.name_ in-place form
    aliases: tuple = ()
    differentiable: bool = True
    # the CPU's float32 loops contract a * b + c into FMA where the CPU has it (results
    # then differ between CPUs in the last ulps, within the row's stated bound)
    fma: bool = False

    @property
    def kinds(self):
        return tuple(self.body)


@dataclass(frozen=True)
class Reduction:
    """acc = combine(acc, x) over the reduced elements, starting from identity (x read
    as x != 0 when out is "bool"); render.reduction_types gives acc's and out's types."""
    name: str
    identity: dict        # kind -> C expression of the start value (per compute dtype)
    combine: str          # C expression of (acc, x) -> acc; x is already mapped
    out: str = "same"     # "same", "bool", "int64_if_int" (sum/prod promote ints to int64)
    kinds: tuple = ("bool", "int", "float")
    complex_combine: str | None = None   # combine over complex structs (sum, prod)
    numpy: str | None = None
    differentiable: bool = True


F = "float"
I = "int"  # noqa: E741 (F, I, B, C: the dtype kinds, as short as the rows need)
B = "bool"
C = "complex"
PI = "3.14159265358979323846"

ELEMENTWISE = [
    # arithmetic ------------------------------------------------------------------
    Elementwise("add", 2, {B: "a | b", I: "a + b", F: "a + b", C: "em_cadd_{T}(a, b)"},
                numpy="add"),
    Elementwise("sub", 2, {I: "a - b", F: "a - b", C: "em_csub_{T}(a, b)"},
                numpy="subtract", aliases=("subtract",)),
    Elementwise("mul", 2, {B: "a & b", I: "a * b", F: "a * b", C: "em_cmul_{T}(a, b)"},
                numpy="multiply",
                aliases=("multiply",)),
    Elementwise("div", 2, {F: "a / b", C: "em_cdiv_{T}(a, b)"},
                promote="float", numpy="true_divide",
                aliases=("divide", "true_divide")),
    Elementwise("floor_divide", 2, {I: "em_floordiv_{T}(a, b)", F: "em_floordiv_f_{T}(a, b)"},
                numpy="floor_divide", domain="nonzero"),
    Elementwise("remainder", 2, {I: "em_mod_{T}(a, b)", F: "em_fmod_py_{T}(a, b)"},
                numpy="remainder", domain="nonzero"),
    Elementwise("fmod", 2, {I: "em_fmod_int_{T}(a, b)", F: "fmod(a, b)"}, numpy="fmod",
                domain="nonzero"),
    Elementwise("pow", 2, {I: "em_ipow_{T}(a, b)", F: "pow(a, b)", C: "em_cpow_{T}(a, b)"},
                numpy="power",
                domain="positive", aliases=("power",)),
    Elementwise("atan2", 2, {F: "atan2(a, b)"}, promote="float", numpy="arctan2",
                aliases=("arctan2",)),
    Elementwise("hypot", 2, {F: "hypot(a, b)"}, promote="float", numpy="hypot"),
    Elementwise("copysign", 2, {F: "copysign(a, b)"}, promote="float", numpy="copysign"),
    # A tie of +0 and -0 orders -0 first (IEEE 754-2019 minimum/maximum(Number)): C's
    # fmin/fmax and NumPy's and PyTorch's SIMD paths leave the zero's sign to the
    # implementation (it differed between ember's own float32 and bfloat16 rows).
    Elementwise("maximum", 2, {B: "a | b", I: "a > b ? a : b",
                               F: "(a > b || a != a || (a == b && signbit(b))) ? a : b"},
                numpy="maximum"),
    Elementwise("minimum", 2, {B: "a & b", I: "a < b ? a : b",
                               F: "(a < b || a != a || (a == b && signbit(a))) ? a : b"},
                numpy="minimum"),
    Elementwise("fmax", 2, {F: "(a > b || b != b || (a == b && signbit(b))) ? a : b"},
                numpy="fmax"),
    Elementwise("fmin", 2, {F: "(a < b || b != b || (a == b && signbit(a))) ? a : b"},
                numpy="fmin"),
    # comparisons -----------------------------------------------------------------
    # (the Array API's elementwise `equal` is ember.array_api.equal: ember.equal is
    # PyTorch's one-bool comparison, in ops/elementwise.py)
    Elementwise("eq", 2, {B: "a == b", I: "a == b", F: "a == b", C: "em_ceq_{T}(a, b)"},
                out="bool", numpy="equal",
                differentiable=False),
    Elementwise("ne", 2, {B: "a != b", I: "a != b", F: "a != b", C: "em_cne_{T}(a, b)"},
                out="bool", numpy="not_equal",
                aliases=("not_equal",), differentiable=False),
    Elementwise("lt", 2, {B: "a < b", I: "a < b", F: "a < b"}, out="bool", numpy="less",
                aliases=("less",), differentiable=False),
    Elementwise("le", 2, {B: "a <= b", I: "a <= b", F: "a <= b"}, out="bool",
                numpy="less_equal", aliases=("less_equal",), differentiable=False),
    Elementwise("gt", 2, {B: "a > b", I: "a > b", F: "a > b"}, out="bool", numpy="greater",
                aliases=("greater",), differentiable=False),
    Elementwise("ge", 2, {B: "a >= b", I: "a >= b", F: "a >= b"}, out="bool",
                numpy="greater_equal", aliases=("greater_equal",), differentiable=False),
    # logical and bitwise ---------------------------------------------------------
    Elementwise("logical_and", 2, {B: "a && b", I: "a && b", F: "a && b",
                                     C: "em_cnz_{T}(a) && em_cnz_{T}(b)"}, out="bool",
                numpy="logical_and", differentiable=False),
    Elementwise("logical_or", 2, {B: "a || b", I: "a || b", F: "a || b",
                                    C: "em_cnz_{T}(a) || em_cnz_{T}(b)"}, out="bool",
                numpy="logical_or", differentiable=False),
    Elementwise("logical_xor", 2, {B: "(!a) != (!b)", I: "(!a) != (!b)", F: "(!a) != (!b)",
                                     C: "em_cnz_{T}(a) != em_cnz_{T}(b)"},
                out="bool", numpy="logical_xor", differentiable=False),
    Elementwise("bitwise_and", 2, {B: "a & b", I: "a & b"}, numpy="bitwise_and",
                differentiable=False),
    Elementwise("bitwise_or", 2, {B: "a | b", I: "a | b"}, numpy="bitwise_or",
                differentiable=False),
    Elementwise("bitwise_xor", 2, {B: "a ^ b", I: "a ^ b"}, numpy="bitwise_xor",
                differentiable=False),
    Elementwise("bitwise_left_shift", 2, {I: "em_shl_{T}(a, b)"}, numpy="left_shift",
                differentiable=False, domain="shift"),
    Elementwise("bitwise_right_shift", 2, {I: "em_shr_{T}(a, b)"}, numpy="right_shift",
                differentiable=False, domain="shift"),
    # unary -----------------------------------------------------------------------
    Elementwise("neg", 1, {I: "-a", F: "-a", C: "em_cneg_{T}(a)"},
                numpy="negative", aliases=("negative",)),
    Elementwise("positive", 1, {B: "a", I: "a", F: "a", C: "a"}, numpy="positive", inplace=False),
    Elementwise("abs", 1, {B: "a", I: "a < 0 ? -a : a", F: "fabs(a)", C: "em_cabs_{T}(a)"},
                out="real", numpy="absolute",
                aliases=("absolute",)),
    Elementwise("sign", 1, {B: "a", I: "(a > 0) - (a < 0)",
                            F: "a != a ? a : ({CT})((a > 0) - (a < 0))"}, numpy="sign"),
    # sgn: sign for real dtypes, z / |z| (0 at 0) for complex (torch.sgn)
    Elementwise("sgn", 1, {B: "a", I: "(a > 0) - (a < 0)",
                           F: "a != a ? a : ({CT})((a > 0) - (a < 0))", C: "em_csgn_{T}(a)"},
                numpy=None),
    # angle: atan2(im, re); of a real number 0 or pi (NaN stays NaN), as torch.angle
    Elementwise("angle", 1, {F: f"a != a ? a : (a < 0 ? ({{CT}}){PI} : ({{CT}})0)",
                             C: "em_cangle_{T}(a)"}, out="real", promote="float", numpy=None,
                inplace=False),
    # the complex conjugate, computed (ember has no lazy conjugate bit); real: a copy
    Elementwise("conj_physical", 1, {B: "a", I: "a", F: "a", C: "em_cconj_{T}(a)"},
                numpy="conjugate"),
    Elementwise("reciprocal", 1, {F: "1 / a", C: "em_crecip_{T}(a)"}, promote="float", numpy=None,
                domain="nonzero"),
    Elementwise("square", 1, {I: "a * a", F: "a * a", C: "em_csquare_{T}(a)"}, numpy="square"),
    Elementwise("sqrt", 1, {F: "sqrt(a)", C: "em_csqrt_{T}(a)"},
                promote="float", numpy="sqrt", domain="positive"),
    Elementwise("rsqrt", 1, {F: "1 / sqrt(a)", C: "em_crsqrt_{T}(a)"},
                promote="float", numpy=None, domain="positive"),
    Elementwise("exp", 1, {F: "em_exp_{T}(a)", C: "em_cexp_{T}(a)"}, promote="float", numpy="exp"),
    Elementwise("exp2", 1, {F: "exp2(a)", C: "em_cexp2_{T}(a)"}, promote="float", numpy="exp2"),
    Elementwise("expm1", 1, {F: "expm1(a)", C: "em_cexpm1_{T}(a)"}, promote="float", numpy="expm1"),
    Elementwise("log", 1, {F: "em_log_{T}(a)", C: "em_clog_{T}(a)"},
                promote="float", numpy="log", domain="positive"),
    Elementwise("log2", 1, {F: "log2(a)", C: "em_clog2_{T}(a)"},
                promote="float", numpy="log2", domain="positive"),
    Elementwise("log10", 1, {F: "log10(a)", C: "em_clog10_{T}(a)"},
                promote="float", numpy="log10", domain="positive"),
    Elementwise("log1p", 1, {F: "log1p(a)", C: "em_clog1p_{T}(a)"},
                promote="float", numpy="log1p", domain="positive"),
    Elementwise("sin", 1, {F: "sin(a)", C: "em_csin_{T}(a)"}, promote="float", numpy="sin"),
    Elementwise("cos", 1, {F: "cos(a)", C: "em_ccos_{T}(a)"}, promote="float", numpy="cos"),
    Elementwise("tan", 1, {F: "tan(a)", C: "em_ctan_{T}(a)"},
                promote="float", numpy="tan", domain="unit"),
    Elementwise("asin", 1, {F: "asin(a)", C: "em_casin_{T}(a)"},
                promote="float", numpy="arcsin", domain="unit",
                aliases=("arcsin",)),
    Elementwise("acos", 1, {F: "acos(a)", C: "em_cacos_{T}(a)"},
                promote="float", numpy="arccos", domain="unit",
                aliases=("arccos",)),
    Elementwise("atan", 1, {F: "atan(a)", C: "em_catan_{T}(a)"},
                promote="float", numpy="arctan", aliases=("arctan",)),
    Elementwise("sinh", 1, {F: "sinh(a)", C: "em_csinh_{T}(a)"},
                promote="float", numpy="sinh", domain="unit"),
    Elementwise("cosh", 1, {F: "cosh(a)", C: "em_ccosh_{T}(a)"},
                promote="float", numpy="cosh", domain="unit"),
    Elementwise("tanh", 1, {F: "em_tanh_{T}(a)", C: "em_ctanh_{T}(a)"},
                promote="float", numpy="tanh"),
    Elementwise("asinh", 1, {F: "asinh(a)", C: "em_casinh_{T}(a)"},
                promote="float", numpy="arcsinh",
                aliases=("arcsinh",)),
    Elementwise("acosh", 1, {F: "acosh(a)", C: "em_cacosh_{T}(a)"},
                promote="float", numpy="arccosh", domain="ge1",
                aliases=("arccosh",)),
    Elementwise("atanh", 1, {F: "atanh(a)", C: "em_catanh_{T}(a)"},
                promote="float", numpy="arctanh", domain="unit",
                aliases=("arctanh",)),
    Elementwise("relu", 1, {I: "a > 0 ? a : 0", F: "(a > 0 || a != a) ? a : 0"}, numpy=None),
    # relu's derivative (grad a, relu's output b) in one pass, PyTorch's
    # threshold_backward: 0 where b <= 0, so a NaN output passes its gradient on
    Elementwise("_relu_grad", 2, {I: "b <= 0 ? 0 : a", F: "b <= 0 ? 0 : a"}, numpy=None,
                method=False, inplace=False, differentiable=False),
    Elementwise("sigmoid", 1, {F: "1 / (1 + em_exp_{T}(-a))", C: "em_csigmoid_{T}(a)"},
                promote="float", numpy=None),
    Elementwise("erf", 1, {F: "em_erf_{T}(a)"}, promote="float", numpy=None),
    Elementwise("erfc", 1, {F: "em_erfc_{T}(a)"}, promote="float", numpy=None),
    # GELU, x * Phi(x): one pass (nn.functional.gelu; PyTorch has it in one kernel too)
    Elementwise("gelu", 1, {F: "em_gelu_{T}(a)"}, promote="float", numpy=None, method=False,
                inplace=False, fma=True),
    # its tanh approximation and the two derivatives (gelu's formula: grad a, input b),
    # each one pass (nn.functional.gelu(approximate="tanh"), the gelu formula)
    Elementwise("_gelu_tanh", 1, {F: "em_gelu_tanh_{T}(a)"}, promote="float", numpy=None,
                method=False, inplace=False),
    Elementwise("_gelu_grad", 2, {F: "em_gelu_backward_{T}(a, b)"}, promote="float",
                numpy=None, method=False, inplace=False, differentiable=False, fma=True),
    Elementwise("_gelu_tanh_grad", 2, {F: "em_gelu_tanh_backward_{T}(a, b)"},
                promote="float", numpy=None, method=False, inplace=False,
                differentiable=False),
    Elementwise("floor", 1, {B: "a", I: "a", F: "floor(a)"}, numpy="floor"),
    Elementwise("ceil", 1, {B: "a", I: "a", F: "ceil(a)"}, numpy="ceil"),
    Elementwise("trunc", 1, {B: "a", I: "a", F: "trunc(a)"}, numpy="trunc", aliases=("fix",)),
    Elementwise("round", 1, {B: "a", I: "a", F: "rint(a)"}, numpy="round"),
    Elementwise("isnan", 1, {B: "0", I: "0", F: "a != a", C: "em_cisnan_{T}(a)"},
                out="bool", numpy="isnan",
                inplace=False, differentiable=False),
    Elementwise("isinf", 1, {B: "0", I: "0", F: "isinf(a)", C: "em_cisinf_{T}(a)"},
                out="bool", numpy="isinf",
                inplace=False, differentiable=False),
    Elementwise("isfinite", 1, {B: "1", I: "1", F: "isfinite(a)", C: "em_cisfinite_{T}(a)"},
                out="bool",
                numpy="isfinite", inplace=False, differentiable=False),
    Elementwise("signbit", 1, {B: "0", I: "a < 0", F: "em_signbit_{T}(a)"}, out="bool",
                numpy="signbit", inplace=False, differentiable=False),
    Elementwise("logical_not", 1, {B: "!a", I: "!a", F: "!a", C: "!em_cnz_{T}(a)"}, out="bool",
                numpy="logical_not", differentiable=False),
    Elementwise("bitwise_not", 1, {B: "!a", I: "~a"}, numpy="invert", differentiable=False,
                aliases=("bitwise_invert",)),
    # ternary ---------------------------------------------------------------------
    # clamp(x, lo, hi) = min(max(x, lo), hi): lo > hi gives hi; NaN propagates.
    Elementwise("clamp", 3, {I: "(a < b ? b : a) > c ? c : (a < b ? b : a)",
                             F: "em_clamp_{T}(a, b, c)"}, numpy=None,
                aliases=("clip",)),
    Elementwise("lerp", 3, {F: "a + c * (b - a)", C: "em_clerp_{T}(a, b, c)"}, numpy=None),
    # where(cond, a, b): the condition is operand a, always bool; b and c are promoted.
    Elementwise("where", 3, {B: "a ? b : c", I: "a ? b : c", F: "a ? b : c", C: "a ? b : c"},
                numpy="where",
                method=False, inplace=False),
]


# special functions (ember.special and the main namespace's lgamma, digamma, ...): C in
# kernels/common/ember_special.h; the accuracy each reaches is in ops/special.py.
# Rows that only ember.special names are called special_<name>, as ATen calls them.
_SPECIAL_UNARY = [
    # (row name, helper, domain the table tests draw, method / in-place form)
    ("lgamma", "lgamma", "positive", True),
    ("digamma", "digamma", "positive", True),
    ("erfinv", "erfinv", "unit", True),
    ("i0", "i0", "all", True),
    ("special_i0e", "i0e", "all", False),
    ("special_i1", "i1", "all", False),
    ("special_i1e", "i1e", "all", False),
    ("special_erfcx", "erfcx", "all", False),
    ("special_ndtr", "ndtr", "all", False),
    ("special_ndtri", "ndtri", "unit", False),
    ("special_log_ndtr", "log_ndtr", "all", False),
    ("special_entr", "entr", "positive", False),
    ("special_bessel_j0", "j0", "all", False),
    ("special_bessel_j1", "j1", "all", False),
    ("special_bessel_y0", "y0", "positive", False),
    ("special_bessel_y1", "y1", "positive", False),
    ("special_modified_bessel_k0", "k0", "positive", False),
    ("special_modified_bessel_k1", "k1", "positive", False),
    ("special_scaled_modified_bessel_k0", "k0e", "positive", False),
    ("special_scaled_modified_bessel_k1", "k1e", "positive", False),
    ("special_spherical_bessel_j0", "sph_j0", "all", False),
    ("sinc", "sinc", "all", True),
    ("logit", "logit", "unit", True),   # logit(x, eps) clamps first: ops/elementwise.py
]
# (name in ember.special, helper in ember_special.h)
POLYNOMIALS = [
    ("chebyshev_polynomial_t", "cheb_t"), ("chebyshev_polynomial_u", "cheb_u"),
    ("chebyshev_polynomial_v", "cheb_v"), ("chebyshev_polynomial_w", "cheb_w"),
    ("shifted_chebyshev_polynomial_t", "scheb_t"), ("shifted_chebyshev_polynomial_u", "scheb_u"),
    ("shifted_chebyshev_polynomial_v", "scheb_v"), ("shifted_chebyshev_polynomial_w", "scheb_w"),
    ("hermite_polynomial_h", "hermite_h"), ("hermite_polynomial_he", "hermite_he"),
    ("laguerre_polynomial_l", "laguerre_l"), ("legendre_polynomial_p", "legendre_p"),
]
ELEMENTWISE += [
    Elementwise(name, 1, {F: f"em_{helper}_{{T}}(a)"}, promote="float", domain=domain,
                method=method, inplace=method)
    for name, helper, domain, method in _SPECIAL_UNARY
] + [
    # polygamma(n, x): n is operand a (PyTorch's order), an integer (NaN otherwise);
    # em.polygamma and Tensor.polygamma(_) are in ops/special.py
    Elementwise("special_polygamma", 2, {F: "em_polygamma_{T}(b, a)"}, promote="float",
                domain="positive", method=False, inplace=False),
    Elementwise("igamma", 2, {F: "em_igamma_{T}(a, b)"}, promote="float", domain="positive"),
    Elementwise("igammac", 2, {F: "em_igammac_{T}(a, b)"}, promote="float", domain="positive"),
    Elementwise("special_zeta", 2, {F: "em_zeta_{T}(a, b)"}, promote="float",
                domain="positive", method=False, inplace=False),
    Elementwise("special_xlog1py", 2, {F: "em_xlog1py_{T}(a, b)"}, promote="float",
                domain="positive", method=False, inplace=False),
    # not differentiable, as in PyTorch
    Elementwise("special_airy_ai", 1, {F: "em_airy_ai_{T}(a)"}, promote="float",
                method=False, inplace=False, differentiable=False),
] + [
    # the orthogonal polynomials p_n(x) (x operand a, n operand b, truncated to an
    # integer; entries with PyTorch's argument names in ops/special.py); not
    # differentiable, as in PyTorch
    Elementwise(f"special_{name}", 2, {F: f"em_{helper}_{{T}}(a, b)"}, promote="float",
                domain="unit", method=False, inplace=False, differentiable=False)
    for name, helper in POLYNOMIALS
]

REDUCTIONS = [
    Reduction("sum", {B: "0", I: "0", F: "0", C: "em_cmake_{T}(0, 0)"}, "acc + x",
              out="int64_if_int", numpy="sum", kinds=(B, I, F, C),
              complex_combine="em_cadd_{T}(acc, x)"),
    Reduction("prod", {B: "1", I: "1", F: "1", C: "em_cmake_{T}(1, 0)"}, "acc * x",
              out="int64_if_int", numpy="prod", kinds=(B, I, F, C),
              complex_combine="em_cmul_{T}(acc, x)"),
    Reduction("amax", {B: "0", I: "EM_MIN_{T}", F: "-INFINITY"},
              "(x > acc || x != x) ? x : acc", numpy="max"),
    Reduction("amin", {B: "1", I: "EM_MAX_{T}", F: "INFINITY"},
              "(x < acc || x != x) ? x : acc", numpy="min"),
    Reduction("all", {B: "1", I: "1", F: "1", C: "1"}, "acc && (x != 0)", out="bool",
              numpy="all", differentiable=False, kinds=(B, I, F, C)),
    Reduction("any", {B: "0", I: "0", F: "0", C: "0"}, "acc || (x != 0)", out="bool",
              numpy="any", differentiable=False, kinds=(B, I, F, C)),
]

ELEMENTWISE_BY_NAME = {row.name: row for row in ELEMENTWISE}
REDUCTION_BY_NAME = {row.name: row for row in REDUCTIONS}
