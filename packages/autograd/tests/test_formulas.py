"""Every differentiable op of tensor-core has a row in the derivative table, and every
row is gradchecked (and gradgradchecked) in float64 against finite differences,
over random shapes with broadcasting and non-contiguous inputs."""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ember as em
from ember.autograd import FORMULAS, NOT_DIFFERENTIABLE, gradcheck, gradgradcheck
from ember.ops.table import ELEMENTWISE, REDUCTIONS

FLOAT_ROWS = [r for r in ELEMENTWISE if "float" in r.kinds and r.differentiable]

# value ranges per op-table domain, kept away from the kinks and poles where finite
# differences are meaningless
DOMAIN = {"all": (-2.0, 2.0), "positive": (0.5, 2.0), "unit": (-0.8, 0.8),
          "ge1": (1.2, 3.0), "nonzero": (0.5, 2.0)}


def test_every_differentiable_op_has_a_formula():
    missing = [r.name for r in ELEMENTWISE + REDUCTIONS if r.differentiable and
               FORMULAS.get(r.name) is None]
    assert missing == []
    for r in ELEMENTWISE + REDUCTIONS:
        if not r.differentiable:
            assert r.name in NOT_DIFFERENTIABLE and FORMULAS[r.name] is None


def test_every_recorded_op_has_a_row_or_is_marked():
    """Every op name tensor-core's Python modules hand to the recorder (record("op",
    ...)) has a formula or is marked not differentiable. The compiled modules record
    the op table's rows and matmul."""
    import pathlib
    import re
    root = pathlib.Path(em.__file__).parent
    pattern = re.compile(r"""record\(\s*(?:"(\w+)"|"(\w+)" if \w+ else "(\w+)")""")
    names = {"matmul"}
    for path in root.rglob("*.py"):
        for m in pattern.finditer(path.read_text()):
            names.update(n for n in m.groups() if n)
    assert len(names) > 20
    assert sorted(op for op in names if op not in FORMULAS) == []


def _values(rng, shape, domain):
    lo, hi = DOMAIN.get(domain, DOMAIN["all"])
    x = rng.uniform(lo, hi, size=shape)
    if domain == "nonzero":
        x *= rng.choice([-1.0, 1.0], size=shape)
    return x


# rows with an argument that is not differentiated (as in PyTorch: polygamma's integer n,
# zeta's x, igamma's a) or a domain the op-table domains lack ((0, 1))
_SPECIAL_ARGS = {
    "special_polygamma": lambda rng, sa, sb, t: (int(rng.integers(0, 3)),
                                         _leaf(rng.uniform(0.5, 3.0, size=sa), t)),
    "special_zeta": lambda rng, sa, sb, t: (float(rng.uniform(2.0, 4.0)),
                                            _leaf(rng.uniform(0.5, 2.0, size=sa), t)),
    "igamma": lambda rng, sa, sb, t: (em.from_numpy(rng.uniform(0.5, 3.0, size=sb)),
                                      _leaf(rng.uniform(0.5, 3.0, size=sa), t)),
    "igammac": lambda rng, sa, sb, t: (em.from_numpy(rng.uniform(0.5, 3.0, size=sb)),
                                       _leaf(rng.uniform(0.5, 3.0, size=sa), t)),
    "special_ndtri": lambda rng, sa, sb, t: (_leaf(rng.uniform(0.1, 0.9, size=sa), t),),
    "logit": lambda rng, sa, sb, t: (_leaf(rng.uniform(0.1, 0.9, size=sa), t),),
}


def _leaf(x, transposed):
    t = em.from_numpy(np.ascontiguousarray(x.T) if transposed else x.copy())
    if transposed:
        t = t.T          # a non-contiguous view with the values of x
    return t.detach().requires_grad_()


small_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@st.composite
def broadcast_pair(draw):
    a = draw(small_shapes)
    b = list(a)
    for i in range(len(b)):
        if draw(st.booleans()):
            b[i] = 1
    if b and draw(st.booleans()):
        b = b[1:]            # fewer dims: broadcast over the leading ones
    return a, tuple(b)


@pytest.mark.parametrize("row", FLOAT_ROWS, ids=lambda r: r.name)
@given(shapes=broadcast_pair(), seed=st.integers(0, 2**32 - 1), transposed=st.booleans(),
       swap=st.booleans())
@settings(max_examples=8, deadline=None)
def test_elementwise_gradcheck(row, shapes, seed, transposed, swap):
    rng = np.random.default_rng(seed)
    sa, sb = shapes if not swap else shapes[::-1]
    domain = row.domain
    if row.name == "where":
        cond = em.from_numpy(rng.random(sa) < 0.5)
        args = (cond, _leaf(_values(rng, sb, "all"), False), _leaf(_values(rng, sa, "all"),
                                                                   transposed))
    elif row.name == "clamp":
        x = _leaf(_values(rng, sa, "all"), transposed)
        lo = _leaf(rng.uniform(-1.5, -0.5, size=sb), False)
        hi = _leaf(rng.uniform(0.5, 1.5, size=sb), False)
        args = (x, lo, hi)
    elif row.name in _SPECIAL_ARGS:
        args = _SPECIAL_ARGS[row.name](rng, sa, sb, transposed)
    elif row.arity == 1:
        args = (_leaf(_values(rng, sa, domain), transposed),)
    elif row.arity == 2:
        args = (_leaf(_values(rng, sa, domain), transposed), _leaf(_values(rng, sb, domain),
                                                                   False))
    else:
        args = tuple(_leaf(_values(rng, s, domain), t)
                     for s, t in ((sa, transposed), (sb, False), (sa, False)))
    fn = getattr(em, row.name)
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_elementwise_scalar_operands_and_mixed_dtypes():
    x = em.randn(2, 3, dtype=em.float64, requires_grad=True)
    assert gradcheck(lambda a: 3.0 - 2.0 * a / 1.5 + a ** 2, (x,))
    y = em.randn(3, dtype=em.float32, requires_grad=True)
    out = (x * y).sum()            # float32 input promoted to float64
    out.backward()
    assert y.grad.dtype is em.float32 and tuple(y.grad.shape) == (3,)
    np.testing.assert_allclose(y.grad.numpy(), x.detach().numpy().sum(0), rtol=1e-6)


reduce_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "mean", "var", "std",
                                "logsumexp", "norm"])
@given(shape=reduce_shapes, data=st.data(), seed=st.integers(0, 2**32 - 1),
       keepdim=st.booleans())
@settings(max_examples=8, deadline=None)
def test_reduction_gradcheck(op, shape, data, seed, keepdim):
    rng = np.random.default_rng(seed)
    x = _leaf(rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape), False)
    if op in ("prod",):
        x = _leaf(rng.uniform(0.5, 1.5, size=shape), False)
    dims = data.draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                                    max_size=len(shape), unique=True)))
    if op in ("var", "std"):      # n - 1 = 0 elements' worth of freedom is NaN by definition
        assume(int(np.prod([shape[d] for d in (dims or range(len(shape)))])) >= 2)
    fn = getattr(em, op)

    def f(a):
        return fn(a) if dims is None else fn(a, dim=tuple(dims), keepdim=keepdim)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_prod_with_zeros():
    x = em.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=em.float64,
                  requires_grad=True)
    assert gradcheck(lambda a: a.prod(1), (x,))
    assert gradcheck(lambda a: a.prod(), (x,))


def test_two_norm_has_a_zero_gradient_at_zero():
    x = em.zeros(2, 3, dtype=em.float64, requires_grad=True)
    em.linalg.vector_norm(x, dim=1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2


def test_amax_ties_share_the_gradient():
    x = em.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.amax().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


# issue 16 item 14: formulas made CPU constants (a Python-scalar condition of where, a
# ones() without device) that a device's gradient then met: gradcheck the derivative
# table's rows with the op run on each other device

_DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


def _on(device, fn):
    """fn with its tensor arguments moved to device and the result back (the to()s are
    differentiable, so gradcheck sees the device's backward)."""
    return lambda *a: fn(*(x.to(device) for x in a)).cpu()


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("case", ["pow_scalar", "pow_tensor", "rpow", "pow_int", "where_scalar",
                                  "nll_loss", "cross_entropy"])
def test_issue16_item14_formulas_on_every_device(device, case):
    from ember.nn import functional as F
    rng = np.random.default_rng(1)
    x = _leaf(rng.uniform(0.5, 2.0, size=(2, 3)), False)
    y = _leaf(rng.uniform(0.5, 2.0, size=(2, 3)), False)
    target = em.tensor([2, 0])
    fns = {
        "pow_scalar": (lambda a: a ** 2.5, (x,)),
        "pow_tensor": (lambda a, b: a ** b, (x, y)),
        "rpow": (lambda a: 2.0 ** a, (x,)),
        "pow_int": (lambda a: em.pow(a, 3), (x,)),
        "where_scalar": (lambda a, b: em.where(a > 1.0, a, b * 2.0), (x, y)),
        "nll_loss": (lambda a: F.nll_loss(a, target.to(a.device)), (x,)),
        "cross_entropy": (lambda a: F.cross_entropy(a, target.to(a.device),
                                                    label_smoothing=0.1), (x,)),
    }
    fn, args = fns[case]
    assert gradcheck(_on(device, fn), args)
    if case.startswith("pow"):
        # a plain backward on the device gives the device's gradient
        a = args[0].detach().to(device).requires_grad_()
        fn(a, *(b.detach().to(device) for b in args[1:])).sum().backward()
        assert a.grad.device == a.device


@pytest.mark.parametrize("device", _DEVICES)
def test_issue16_item14_embedding_padding_gradient_on_every_device(device):
    from ember.nn import functional as F
    w = em.ones(3, 2, dtype=em.float64, device=device).requires_grad_()
    F.embedding(em.tensor([[0, 1], [2, 1]], device=device), w, padding_idx=1).sum().backward()
    assert w.grad.device == w.device
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [[1, 1], [0, 0], [1, 1]])
