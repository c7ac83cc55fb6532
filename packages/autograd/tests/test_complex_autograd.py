"""Autograd for complex tensors (issue 19), PyTorch's convention: the gradient of a real
loss L w.r.t. a complex z is the conjugate Wirtinger derivative, dL/dRe z + i dL/dIm z
(so z.abs().sum().backward() gives z / |z|, and a holomorphic f gets grad * conj(f'));
a real input of an op with a complex result receives the real part of the complex
gradient.

Every row of the derivative table that has a complex forward is gradchecked (and most
gradgradchecked) on complex128 leaves: the op table's complex rows enumerated as
test_formulas.py does, the reductions, the views, shape and index ops, the matmul
family, the complex part views and constructors, and ember.fft. gradcheck compares
over real coordinates (the real and imaginary part of each input element perturbed on
its own, each output's real and imaginary part checked), as PyTorch's does. The
expected values of the documented examples were computed with PyTorch 2.13 and are
written here (torch is not a test dependency).
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
import ember.fft as ef
from ember.autograd import GradcheckError, gradcheck, gradgradcheck
from ember.ops.table import ELEMENTWISE

C128 = em.complex128
COMPLEX_ROWS = [r for r in ELEMENTWISE if "complex" in r.kinds and r.differentiable]

# (real part range, imaginary part range) per op-table domain, away from the poles
# and branch cuts where finite differences are meaningless (log, sqrt, pow: the
# negative real axis; asin/acos/atanh: |Re| > 1 on the real axis; acosh: Re < 1;
# asinh/atan: |Im| > 1 on the imaginary axis; tanh/tan: their poles)
CDOMAIN = {"all": ((-1.5, 1.5), (-1.0, 1.0)), "positive": ((0.5, 2.0), (-1.0, 1.0)),
           "unit": ((-0.6, 0.6), (-0.6, 0.6)), "ge1": ((1.2, 3.0), (-1.0, 1.0)),
           "nonzero": ((0.5, 2.0), (-1.0, 1.0))}
ROW_DOMAIN = {"div": "nonzero", "asinh": "unit", "atan": "unit"}


def _cvalues(rng, shape, domain="all"):
    (rlo, rhi), (ilo, ihi) = CDOMAIN[domain]
    re = rng.uniform(rlo, rhi, size=shape)
    if domain == "nonzero":
        re = re * rng.choice([-1.0, 1.0], size=shape)
    return re + 1j * rng.uniform(ilo, ihi, size=shape)


def cleaf(shape, seed=0, domain="all", transposed=False):
    """A complex128 leaf that requires grad (a non-contiguous view when transposed)."""
    z = np.asarray(_cvalues(np.random.default_rng(seed), shape, domain))
    t = em.from_numpy(np.ascontiguousarray(z.T) if transposed else z.copy())
    if transposed:
        t = t.T
    return t.detach().requires_grad_()


def rleaf(shape, seed=0, lo=-1.5, hi=1.5):
    return em.from_numpy(np.asarray(np.random.default_rng(seed).uniform(lo, hi, size=shape))) \
        .requires_grad_()


def check(fn, *inputs, twice=True):
    assert gradcheck(fn, inputs)
    if twice:
        assert gradgradcheck(fn, inputs)


small_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@st.composite
def broadcast_pair(draw):
    a = draw(small_shapes)
    b = [1 if draw(st.booleans()) else n for n in a]
    if b and draw(st.booleans()):
        b = b[1:]
    return a, tuple(b)


# ----------------------------------------------------------- the op table's rows

def _row_args(row, rng, sa, sb, transposed):
    domain = ROW_DOMAIN.get(row.name, row.domain)
    seeds = rng.integers(0, 2**31, size=3)
    if row.name == "where":
        cond = em.from_numpy(rng.random(sa) < 0.5)
        return cond, cleaf(sb, seeds[0]), cleaf(sa, seeds[1], transposed=transposed)
    if row.arity == 1:
        return cleaf(sa, seeds[0], domain, transposed),
    if row.arity == 2:
        return cleaf(sa, seeds[0], domain, transposed), cleaf(sb, seeds[1], domain)
    return tuple(cleaf(s, sd, domain, t) for s, sd, t in
                 ((sa, seeds[0], transposed), (sb, seeds[1], False), (sa, seeds[2], False)))


def test_the_complex_rows_are_the_expected_ones():
    names = {r.name for r in COMPLEX_ROWS}
    assert {"add", "mul", "div", "pow", "abs", "sgn", "angle", "conj_physical", "exp", "log",
            "sqrt", "sin", "tanh", "acosh", "reciprocal", "square", "lerp", "where"} <= names


@pytest.mark.parametrize("row", COMPLEX_ROWS, ids=lambda r: r.name)
@given(shapes=broadcast_pair(), seed=st.integers(0, 2**32 - 1), transposed=st.booleans())
@settings(max_examples=3, deadline=None)
def test_complex_row_gradcheck(row, shapes, seed, transposed):
    rng = np.random.default_rng(seed)
    args = _row_args(row, rng, *shapes, transposed)
    fn = getattr(em, row.name)
    assert gradcheck(fn, args)


@pytest.mark.parametrize("row", COMPLEX_ROWS, ids=lambda r: r.name)
def test_complex_row_gradgradcheck(row):
    rng = np.random.default_rng(7)
    args = _row_args(row, rng, (2,), (2,), False)
    assert gradgradcheck(getattr(em, row.name), args)


BINARY = [r for r in COMPLEX_ROWS if r.arity == 2]


@pytest.mark.parametrize("row", BINARY, ids=lambda r: r.name)
@pytest.mark.parametrize("real_first", [True, False])
def test_a_real_operand_of_a_complex_op_gets_a_real_gradient(row, real_first):
    domain = ROW_DOMAIN.get(row.name, row.domain)
    lo, hi = (0.5, 2.0) if domain in ("positive", "nonzero") else (-1.5, 1.5)
    r, z = rleaf((2, 3), 1, lo, hi), cleaf((3,), 2, domain)
    args = (r, z) if real_first else (z, r)
    fn = getattr(em, row.name)
    check(fn, *args)
    fn(*args).abs().sum().backward()
    assert r.grad.dtype is em.float64 and z.grad.dtype is C128
    assert tuple(r.grad.shape) == (2, 3) and tuple(z.grad.shape) == (3,)


def test_python_complex_scalars():
    z = cleaf((2, 2), 3)
    check(lambda t: (1 + 2j) * t - t / (0.5 - 1j) + (2j) ** t + t ** (1.5 + 0.5j), z)
    r = rleaf((3,), 4, 0.5, 1.5)
    check(lambda t: (t * (1 - 1j)).exp() + t ** (0.5j), r)


# -------------------------------------------------------------------- reductions

reduce_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "norm", "norm1", "var", "std",
                                "nansum"])
@given(shape=reduce_shapes, data=st.data(), seed=st.integers(0, 2**32 - 1),
       keepdim=st.booleans())
@settings(max_examples=3, deadline=None)
def test_complex_reduction_gradcheck(op, shape, data, seed, keepdim):
    z = cleaf(shape, seed % 2**31, "nonzero" if op.startswith("norm") else "all")
    dims = data.draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                                    max_size=len(shape), unique=True)))
    if op in ("var", "std") and int(np.prod([shape[d] for d in (dims or range(len(shape)))])) < 2:
        dims = None
        if z.numel() < 2:
            return
    kw = {} if dims is None else {"dim": tuple(dims), "keepdim": keepdim}

    def f(a):
        if op == "norm":
            return em.linalg.vector_norm(a, **kw)
        if op == "norm1":
            return em.linalg.vector_norm(a, 1, **kw)
        return getattr(em, op)(a, **kw)
    assert gradcheck(f, (z,))


def test_complex_prod_with_zeros_and_the_scans():
    z = em.tensor([[2 + 1j, 0, 3j], [0, 0, 4 - 1j], [1j, 2, 3 + 1j]], dtype=C128,
                  requires_grad=True)
    check(lambda a: a.prod(1), z)
    check(lambda a: a.prod(), z, twice=False)
    check(lambda a: a.cumprod(1), cleaf((2, 4), 5))
    # (at two zeros in one column the second derivative is lost, for real tensors too:
    # the row returns a constant 0 after the first zero)
    check(lambda a: a.cumprod(0), z, twice=False)
    check(lambda a: a.cumsum(1), cleaf((2, 3), 6))
    # the values, against NumPy (the scan kernel has no complex body: ops/scan.py)
    x = _cvalues(np.random.default_rng(1), (3, 5))
    np.testing.assert_allclose(em.from_numpy(x).cumprod(1).numpy(), np.cumprod(x, 1),
                               rtol=1e-12)
    np.testing.assert_allclose(em.from_numpy(x).cumsum(0).numpy(), np.cumsum(x, 0),
                               rtol=1e-12)


# ------------------------------------------------- views, shape ops and indexing

_I = em.tensor([[0, 2], [1, 0]])
SHAPE_CASES = {
    "view": (lambda x: x.view(6, 2), [(3, 4)]),
    "reshape_noncontiguous": (lambda x: x.T.reshape(-1), [(3, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1), [(2, 3, 2)]),
    "expand": (lambda x: x.expand(3, 2, 4), [(2, 1)]),
    "narrow": (lambda x: x.narrow(1, 1, 2), [(2, 4)]),
    "basic_index": (lambda x: x[1:, ::2], [(3, 4)]),
    "diagonal": (lambda x: x.diagonal(1), [(3, 4)]),
    "trace": (lambda x: x.trace(), [(3, 3)]),
    "diag_embed": (lambda x: em.diag_embed(x), [(2, 3)]),
    "unfold": (lambda x: x.unfold(1, 2, 1), [(2, 4)]),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 2)), [(2, 3)]),
    "flip": (lambda x: x.flip(0), [(2, 3)]),
    "roll": (lambda x: x.roll(1, 1), [(2, 3)]),
    "tril": (lambda x: x.tril(), [(3, 3)]),
    "clone": (lambda x: x.clone() * 1, [(2,)]),
    "advanced_index": (lambda x: x[em.tensor([1, 0, 1])], [(2, 3)]),
    "bool_mask": (lambda x: x[x.real > 0], [(3, 4)]),
    "gather": (lambda x: x.gather(1, _I), [(2, 3)]),
    "take_along_dim": (lambda x: em.take_along_dim(x, _I, 1), [(2, 3)]),
    "index_select": (lambda x: x.index_select(1, em.tensor([2, 0])), [(2, 3)]),
    "index_fill": (lambda x: x.index_fill(1, em.tensor([1]), 2j), [(2, 3)]),
    "masked_fill": (lambda x: x.masked_fill(em.tensor([[True, False, True]]), 0), [(2, 3)]),
    "repeat": (lambda x: x.repeat(2, 1), [(2, 3)]),
    "split": (lambda x: x.split(1, 0)[1], [(2, 3)]),
    "cat": (lambda x, y: em.cat([x, y], 0), [(2, 3), (1, 3)]),
    "stack": (lambda x, y: em.stack([x, y], 1), [(2, 3), (2, 3)]),
    "setitem": (lambda x, y: _setitem(x, (1,), y), [(2, 3), (3,)]),
    "setitem_advanced": (lambda x, y: _setitem(x, (em.tensor([0, 1]), em.tensor([2, 0])), y),
                         [(2, 3), (2,)]),
    "index_put_accumulate": (lambda x, y: x.index_put((em.tensor([1, 0, 1]),), y,
                                                      accumulate=True), [(2, 3), (3, 3)]),
    "scatter": (lambda x, y: x.scatter(1, _I, y), [(2, 3), (2, 2)]),
    "scatter_add": (lambda x, y: x.scatter_add(1, _I, y), [(2, 3), (2, 2)]),
    "scatter_reduce_sum": (lambda x, y: x.scatter_reduce(1, _I, y, "sum"), [(2, 3), (2, 2)]),
    "index_add": (lambda x, y: x.index_add(0, em.tensor([1, 0, 1]), y, alpha=2),
                  [(2, 3), (3, 3)]),
    "index_copy": (lambda x, y: x.index_copy(0, em.tensor([1]), y), [(2, 3), (1, 3)]),
    "where_real_cond": (lambda x, y: em.where(x.abs() > 1, x, y), [(2, 3), (3,)]),
}


def _setitem(x, key, value):
    x = x.clone()
    x[key] = value
    return x


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_views_shape_and_index_ops_on_complex(name):
    fn, shapes = SHAPE_CASES[name]
    check(fn, *[cleaf(s, i + 10) for i, s in enumerate(shapes)],
          twice=name in ("gather", "setitem_advanced", "diagonal", "index_add", "cat"))


def test_index_ops_move_whole_complex_numbers():
    # the index kernels copy items of up to 8 bytes: a complex one runs on its float
    # view (ops/index.py); the values against NumPy
    x = _cvalues(np.random.default_rng(2), (3, 4))
    z = em.from_numpy(x.copy())
    eq = np.testing.assert_array_equal
    eq(z.gather(1, em.tensor([[0, 3]] * 3)).numpy(), x[:, [0, 3]])
    eq(z.index_select(0, em.tensor([2, 0])).numpy(), x[[2, 0]])
    eq(z[em.tensor([1, 1]), em.tensor([0, 3])].numpy(), x[[1, 1], [0, 3]])
    eq(z[em.from_numpy(x.real > 0)].numpy(), x[x.real > 0])
    eq(z.T[em.from_numpy(x.T.imag > 0)].numpy(), x.T[x.T.imag > 0])
    acc = em.zeros(3, dtype=C128).index_add(0, em.tensor([0, 2, 0, 1]), z[:, 0].repeat(2)[:4])
    want = np.zeros(3, complex)
    np.add.at(want, [0, 2, 0, 1], np.tile(x[:, 0], 2)[:4])
    np.testing.assert_allclose(acc.numpy(), want, rtol=1e-15)
    w = z.clone()
    w[em.tensor([0, 2]), em.tensor([1, 3])] = em.tensor([5j, 1 - 1j], dtype=C128)
    x2 = x.copy()
    x2[[0, 2], [1, 3]] = [5j, 1 - 1j]
    eq(w.numpy(), x2)
    with pytest.raises(RuntimeError, match="not supported for complex"):
        z.scatter_reduce(0, em.tensor([[0, 1, 0, 1]]), z[:1], "prod")


# ---------------------------------------------------------------- matmul family

@st.composite
def matmul_shapes(draw):
    k, m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "bmm", "broadcast"]))
    return {"vv": ((k,), (k,)), "mv": (batch + (m, k), (k,)), "vm": ((k,), batch + (k, n)),
            "mm": ((m, k), (k, n)), "bmm": (batch + (m, k), batch + (k, n)),
            "broadcast": (batch + (m, k), (k, n))}[kind]


@given(shapes=matmul_shapes(), seed=st.integers(0, 1000), real=st.sampled_from([None, 0, 1]))
@settings(max_examples=10, deadline=None)
def test_complex_matmul(shapes, seed, real):
    # grad_a = g @ b^H, grad_b = a^H @ g; one operand real (its gradient: the real part)
    a, b = (rleaf(s, seed + i) if real == i else cleaf(s, seed + i)
            for i, s in enumerate(shapes))
    assert gradcheck(lambda x, y: x @ y, (a, b))


def test_complex_matmul_transposed_operand_and_second_order():
    a = cleaf((2, 3), 1)
    b = cleaf((2, 3), 2).detach().T.requires_grad_()     # the Linear weight.T layout
    check(lambda x, y: x @ y, a, b)


@pytest.mark.parametrize("case", ["mm", "mv", "dot", "vdot", "inner", "outer", "einsum",
                                  "tensordot", "vecdot", "addmm", "kron"])
def test_complex_matmul_aliases(case):
    A, B, v, w = cleaf((2, 3), 1), cleaf((3, 2), 2), cleaf((3,), 3), cleaf((3,), 4)
    fns = {
        "mm": (lambda x, y: em.mm(x, y), (A, B)),
        "mv": (lambda x, y: em.mv(x, y), (A, v)),
        "dot": (lambda x, y: em.dot(x, y), (v, w)),
        "vdot": (lambda x, y: em.vdot(x, y), (v, w)),
        "inner": (lambda x, y: em.inner(x, y), (A, B.T)),
        "outer": (lambda x, y: em.outer(x, y), (v, w)),
        "einsum": (lambda x, y: em.einsum("ij,jk->ik", x, y), (A, B)),
        "tensordot": (lambda x, y: em.tensordot(x, y, 1), (A, B)),
        "vecdot": (lambda x, y: em.linalg.vecdot(x, y), (A, B.T)),
        "addmm": (lambda x, y: em.addmm(x @ y, x, y), (A, B)),
        "kron": (lambda x, y: em.kron(x, y), (A, v)),
    }
    fn, args = fns[case]
    assert gradcheck(fn, args)


# --------------------------------------- the complex boundaries: parts, constructors

def test_the_part_views_and_constructors():
    z = cleaf((2, 3), 1)
    r, t = rleaf((2, 3), 2, 0.5, 2.0), rleaf((3,), 3)
    check(lambda a: a.real, z)
    check(lambda a: a.imag, z)
    check(lambda a: em.view_as_real(a), z)
    check(lambda a: em.view_as_real(a.T), z)
    check(lambda a: em.view_as_complex(a), rleaf((2, 3, 2), 4))
    check(lambda a: em.view_as_complex(em.view_as_real(a) * 2), z)
    check(lambda a, b: em.complex(a, b), r, t)
    check(lambda a, b: em.polar(a, b), r, t)
    check(lambda a: em.conj(a), z)
    check(lambda a: a.conj_physical().resolve_conj(), z)
    check(lambda a: a.real * a.imag + a.angle() + a.abs(), z)
    check(lambda a: a.to(C128) * (1 + 1j), rleaf((3,), 5))       # real -> complex cast
    with warnings.catch_warnings():      # the cast warns that it drops Im, as PyTorch
        warnings.simplefilter("ignore", UserWarning)
        check(lambda a: a.to(em.float64), z, twice=False)        # complex -> real: Re
    check(lambda a: em.view_as_real(em.complex(a, a * 2) * (1 - 2j)).sum(-1),
          rleaf((3,), 6))


def test_real_views_of_a_complex_leaf_get_its_gradient():
    z = em.tensor([1 + 2j, -3 + 0.5j], dtype=C128, requires_grad=True)
    (z.real * 2 + z.imag * 3).sum().backward()
    assert z.grad.tolist() == [2 + 3j, 2 + 3j]
    z.grad = None
    (em.view_as_real(z) * em.tensor([[1.0, -1.0], [0.5, 4.0]], dtype=em.float64)).sum() \
        .backward()
    assert z.grad.tolist() == [1 - 1j, 0.5 + 4j]


# ------------------------------------------------------------------------ ember.fft

FFT_CASES = {
    "fft": (lambda t: ef.fft(t, n=8), "c", (6,)),
    "ifft_ortho": (lambda t: ef.ifft(t, norm="ortho"), "c", (5,)),
    "fft2": (lambda t: ef.fft2(t, norm="forward"), "c", (3, 4)),
    "ifftn": (lambda t: ef.ifftn(t, s=(2, 5)), "c", (3, 4)),
    "rfft": (lambda t: ef.rfft(t), "r", (7,)),
    "rfft2": (lambda t: ef.rfft2(t), "r", (3, 4)),
    "irfft": (lambda t: ef.irfft(t, n=9), "c", (5,)),
    "irfftn": (lambda t: ef.irfftn(t, s=(3, 6)), "c", (3, 4)),
    "hfft": (lambda t: ef.hfft(t), "c", (4,)),
    "ihfft": (lambda t: ef.ihfft(t), "r", (6,)),
    "fft_of_real": (lambda t: ef.fft(t), "r", (5,)),
    "fftshift": (lambda t: ef.fftshift(ef.fft(t)), "c", (4,)),
    "stft": (lambda t: em.stft(t, 8, 2, window=em.hann_window(8, dtype=em.float64),
                               return_complex=True), "r", (16,)),
}


@pytest.mark.parametrize("name", sorted(FFT_CASES))
def test_fft_on_complex_tensors(name):
    fn, kind, shape = FFT_CASES[name]
    x = cleaf(shape, 1) if kind == "c" else rleaf(shape, 1)
    check(fn, x, twice=name in ("fft", "rfft", "irfft"))


def test_fft_of_the_magnitude_spectrum():
    # a real loss of a complex intermediate; real leaf, real gradient
    x = rleaf((8,), 3)
    check(lambda t: ef.rfft(t).abs().sum(), x)
    ef.rfft(x).abs().square().sum().backward()
    # Parseval: sum |X_k|^2 over the half spectrum, d/dx = 2 * (2 x - x_0 e_0 - x_4 e_4)
    # (the 0 and n/2 bins are counted once, the others for their conjugate too) ...
    # here simply: the gradient of sum_k |rfft(x)_k|^2 = x^T M x with M = F_h^H F_h
    xn = x.detach().numpy()
    F = np.fft.rfft(np.eye(8), axis=0)       # (5, 8)
    want = 2 * np.real(F.conj().T @ F) @ xn
    assert x.grad.dtype is em.float64
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10)


# ---------------------------------------------- the documented examples (PyTorch)

def test_abs_gives_z_over_abs_z():
    z = em.tensor([3 + 4j, 1 - 1j, -2j], dtype=C128, requires_grad=True)
    z.abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [0.6 + 0.8j, (1 - 1j) / math.sqrt(2), -1j],
                               rtol=1e-15)
    z = em.zeros(2, dtype=C128, requires_grad=True)
    z.abs().sum().backward()                  # sgn(0) = 0: a subgradient, as PyTorch
    assert z.grad.tolist() == [0j, 0j]


def test_a_holomorphic_function_gets_grad_times_conj_derivative():
    z = em.tensor([1 + 2j, -0.5 + 0.3j], dtype=C128, requires_grad=True)
    g = em.tensor([0.3 - 1j, 2 + 0.5j], dtype=C128)
    (z * z * z).backward(g)
    zn = z.detach().numpy()
    np.testing.assert_allclose(z.grad.numpy(), g.numpy() * np.conj(3 * zn * zn), rtol=1e-14)


# (values from PyTorch 2.13: the same expressions on torch tensors)
PYTORCH_VALUES = {
    "exp_conj_abs": [7.2939155405242175 + 2.431305180174739j,
                     -0.1664306399780306 + 0.31205744995880735j],
    "sgn": [-0.07155417527999328 + 0.03577708763999664j,
            0.5296279835283358 + 0.8827133058805606j],
    "angle": [-0.3999999999999999 + 0.19999999999999996j,
              -0.8823529411764708 - 1.470588235294118j],
    "dot": [2 - 4j, -1 - 0.6j],
    "acosh": [-0.38844349350750934 + 0.16089856322639567j,
              -1.0432948436293228 - 0.1807130116611808j],
}


@pytest.mark.parametrize("case", sorted(PYTORCH_VALUES))
def test_gradients_match_pytorchs(case):
    z = em.tensor([1 + 2j, -0.5 + 0.3j], dtype=C128, requires_grad=True)
    losses = {
        "exp_conj_abs": lambda: (z.exp() * z.conj()).abs().sum(),
        "sgn": lambda: (z.sgn() * em.tensor([0.3 - 1j, 2 + 0.5j], dtype=C128)).real.sum(),
        "angle": lambda: z.angle().sum(),
        "dot": lambda: (z @ z).real,
        "acosh": lambda: z.acosh().imag.sum(),
    }
    losses[case]().backward()
    np.testing.assert_allclose(z.grad.numpy(), PYTORCH_VALUES[case], rtol=1e-13, atol=1e-15)


def test_real_leaves_of_a_complex_computation_get_real_gradients():
    x = em.tensor([0.5, -1.5], dtype=em.float64, requires_grad=True)
    w = em.tensor([1 + 2j, 3 - 1j], dtype=C128)
    ((x * w).exp().abs() ** 2).sum().backward()
    assert x.grad.dtype is em.float64
    np.testing.assert_allclose(x.grad.numpy(), [5.436563656918091, 0.0007404588245200772],
                               rtol=1e-13)
    r = em.tensor([1.0, 2.0], dtype=em.float64, requires_grad=True)
    t = em.tensor([0.3, -0.7], dtype=em.float64, requires_grad=True)
    p = em.polar(r, t)
    (p * p).real.sum().backward()
    assert r.grad.dtype is em.float64 and t.grad.dtype is em.float64
    np.testing.assert_allclose(r.grad.numpy(), [1.6506712298193564, 0.6798685716009645],
                               rtol=1e-13)
    np.testing.assert_allclose(t.grad.numpy(), [-1.1292849467900705, 7.883597839907682],
                               rtol=1e-13)
    # float32 leaves through complex64
    y = em.tensor([1.0, 2.0], requires_grad=True)
    (y * (1 + 1j)).abs().sum().backward()
    assert y.grad.dtype is em.float32
    np.testing.assert_allclose(y.grad.numpy(), [math.sqrt(2)] * 2, rtol=1e-6)


def test_complex_gradient_descent_minimises_a_real_loss():
    # the conjugate Wirtinger gradient is the steepest-descent direction (PyTorch's
    # reason for the convention): |z - c|^2 falls to 0 with plain SGD
    c = em.tensor([2 - 1j, -0.5j], dtype=C128)
    z = em.zeros(2, dtype=C128, requires_grad=True)
    opt = em.optim.SGD([z], lr=0.25) if hasattr(em, "optim") else None
    for _ in range(40):
        loss = (z - c).abs().square().sum()
        if opt is not None:
            opt.zero_grad()
        else:
            z.grad = None
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            with em.no_grad():
                z -= 0.25 * z.grad
    np.testing.assert_allclose(z.detach().numpy(), c.numpy(), atol=1e-9)


# ------------------------------------------------------------- linalg.eig, eigvals

def test_eig_gradient_matches_pytorchs():
    # a real matrix with a complex pair; the loss is real and phase-invariant
    A = em.tensor([[0.0, -2.0, 1.0], [1.0, 0.0, 0.5], [0.3, 1.0, 1.0]], dtype=em.float64,
                  requires_grad=True)
    w, V = em.linalg.eig(A)
    loss = (w * w).real.sum() + w.imag.abs().sum() + \
        (V.abs() ** 2 * em.tensor([1.0, 2.0, 3.0], dtype=em.float64)).sum()
    loss.backward()
    want = [[-0.12578386310609554, 1.418878329923603, 0.7645040456081601],       # PyTorch
            [-2.4867664521815493, -0.07178536961907221, 1.486376446782384],
            [1.378379459808335, 1.0941784310568514, 2.1975692327251686]]
    assert A.grad.dtype is em.float64
    np.testing.assert_allclose(A.grad.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eig_and_eigvals_gradcheck(shape):
    A = rleaf(shape, 5, -2.0, 2.0)
    check(lambda a: em.linalg.eigvals(a), A)
    check(lambda a: em.linalg.eig(a)[1].abs(), A, twice=shape == (3, 3))
    check(lambda a: (lambda w, V: (V * V.conj()).real * w.unsqueeze(-2).real)(
        *em.linalg.eig(a)), A, twice=False)


# ------------------------------------------------------------------------- errors

def test_backward_of_a_complex_output_needs_a_gradient():
    z = cleaf((3,), 1)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real "
                                           "scalar outputs.*complex128 of shape \\(3,\\).*mul"):
        (z * 2).backward()
    with pytest.raises(RuntimeError, match="only for real scalar outputs.*the result of sum"):
        (z * 2).sum().backward()
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        em.autograd.grad((z * 2).sum(), z)
    (z * 2).sum().backward(em.tensor(1 + 0j, dtype=C128))        # given: fine
    assert z.grad.tolist() == [2 + 0j] * 3
    z.grad = None
    (z * 2).backward(em.ones(3, dtype=em.float64))               # a real gradient: Im 0
    assert z.grad.tolist() == [2 + 0j] * 3


def test_a_complex_gradient_for_a_real_output_is_refused():
    x = rleaf((2,), 1)
    with pytest.raises(RuntimeError, match="gradient 0 has dtype complex128 but the tensor "
                                           "has dtype float64"):
        (x * 2).backward(em.ones(2, dtype=C128))


def test_which_dtypes_may_require_grad():
    assert em.zeros(2, dtype=em.complex64).requires_grad_().requires_grad
    assert em.zeros(2, dtype=C128, requires_grad=True).requires_grad
    for dt in (em.int64, em.int32, em.bool):
        with pytest.raises(RuntimeError, match="only tensors of floating point and complex"):
            em.zeros(2, dtype=dt).requires_grad_()


def test_in_place_ops_on_a_part_view_are_refused_when_they_need_a_gradient():
    z = cleaf((3,), 1)
    w = z * 1
    with pytest.raises(RuntimeError, match="float64 view of a complex128 tensor"):
        w.real.mul_(2)
    with pytest.raises(RuntimeError, match="view of a complex128 tensor"):
        w.imag[0] = 1.0
    with em.no_grad():          # without autograd: the views stay writable
        u = z.detach().clone()
        u.real[0] = 5.0
        assert u[0].item().real == 5.0


def test_gradcheck_refuses_single_precision_and_names_the_part():
    with pytest.raises(ValueError, match="use float64 or complex128"):
        gradcheck(em.exp, (em.zeros(2, dtype=em.complex64, requires_grad=True),))

    def wrong_conj(t):      # conj's gradient taken as the identity: wrong in Im
        from ember.autograd.function import Function

        class C(Function):
            @staticmethod
            def forward(ctx, a):
                return a.conj()

            @staticmethod
            def backward(ctx, g):
                return g
        return C.apply(t)
    with pytest.raises(GradcheckError, match="imaginary part"):
        gradcheck(wrong_conj, (cleaf((2,), 1),))


# ------------------------------------------------------------------------ coverage

def test_every_complex_capable_row_is_exercised_here():
    """The derivative rows of the ops that take complex tensors are reached with a
    complex input or output by the cases of this file (the op table's complex rows are
    enumerated above; the fft rows run on the float [..., 2] layer, by FFT_CASES)."""
    from ember._C import core
    seen = set()
    recorder = core.get_recorder()

    def spy(op, inputs, output, attrs):
        if output.is_complex() or any(isinstance(x, core.TensorBase) and x.is_complex()
                                      for x in inputs):
            seen.add(op)
        return recorder(op, inputs, output, attrs)

    core.set_recorder(spy)
    try:
        for fn, shapes in SHAPE_CASES.values():
            fn(*[cleaf(s, i) for i, s in enumerate(shapes)])
        for fn, kind, shape in FFT_CASES.values():
            fn(cleaf(shape) if kind == "c" else rleaf(shape))
        test_the_part_views_and_constructors()
        em.matmul(cleaf((2, 3)), cleaf((3, 2)))
        cleaf((2,)).prod()
        cleaf((2,)).cumprod(0)
        cleaf((2,)).cumsum(0)
        cleaf((2,)).sum()
    finally:
        core.set_recorder(recorder)
    # (a complex matmul is four real ones over the parts, ops/matmul.py: its gradient
    # runs through the real / imag / complex rows; the matmul row's conjugates are for a
    # backend that records a complex "matmul")
    need = {"sum", "prod", "cumsum", "cumprod", "view", "permute", "expand",
            "narrow", "index_view", "diagonal", "unfold", "as_strided", "flip", "clone", "index",
            "gather", "index_select", "index_fill", "cat", "setitem", "scatter", "scatter_add",
            "scatter_reduce", "index_add", "index_copy", "to", "real", "imag", "view_as_real",
            "view_as_complex", "complex", "mul", "abs", "conj_physical", "angle"}
    assert sorted(need - seen) == []
