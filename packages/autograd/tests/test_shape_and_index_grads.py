"""gradcheck (and gradgradcheck) of the ops that are not op-table rows: views,
indexing, gather/scatter, joins, scans, the matmul family, softmax."""
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import attention as _attention, rnn as _rnn


def leaf(*shape, seed=0, lo=-2.0, hi=2.0):
    rng = np.random.default_rng(seed)
    return em.from_numpy(rng.uniform(lo, hi, size=shape)).requires_grad_()


def check(fn, *inputs, twice=True):
    assert gradcheck(fn, inputs)
    if twice:
        assert gradgradcheck(fn, inputs)


CASES = {
    "view": (lambda x: x.view(6, 2), (3, 4)),
    "reshape_noncontiguous": (lambda x: x.T.reshape(-1), (3, 4)),
    "permute": (lambda x: x.permute(2, 0, 1) * 2, (2, 3, 2)),
    "transpose": (lambda x: x.transpose(0, 1), (2, 3)),
    "expand": (lambda x: x.expand(3, 2, 4), (2, 1)),
    "broadcast_to": (lambda x: em.broadcast_to(x, (2, 3, 4)), (3, 1)),
    "narrow": (lambda x: x.narrow(1, 1, 2), (3, 4)),
    "slice_step": (lambda x: x[::2, 1:], (5, 3)),
    "int_index_and_newaxis": (lambda x: x[1, None, ::-1] if False else x[1, None], (3, 4)),
    "diagonal": (lambda x: x.diagonal(1), (3, 4)),
    "diagonal_dims": (lambda x: x.diagonal(0, 0, 2), (3, 2, 3)),
    "unfold": (lambda x: x.unfold(1, 2, 1), (2, 5)),
    "unfold_step": (lambda x: x.unfold(0, 2, 3), (7,)),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 2)), (4,)),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(1).squeeze(), (3, 1, 2)),
    "flatten": (lambda x: x.flatten(), (2, 3)),
    "index_tensor": (lambda x: x[em.tensor([0, 2, 0])], (3, 2)),
    "index_two_tensors": (lambda x: x[em.tensor([0, 1, 1]), em.tensor([2, 0, 2])], (2, 3)),
    "index_mask": (lambda x: x[em.tensor([True, False, True])], (3, 2)),
    "index_separated": (lambda x: x[em.tensor([0, 1]), :, em.tensor([1, 0])], (2, 3, 2)),
    "gather": (lambda x: x.gather(1, em.tensor([[0, 0], [1, 0]])), (2, 3)),
    "index_select": (lambda x: x.index_select(0, em.tensor([2, 0, 2])), (3, 2)),
    "take_along_dim": (lambda x: em.take_along_dim(x, em.tensor([[1], [0]]), 1), (2, 3)),
    "cat": (lambda x: em.cat([x, x * 2, x[:1]], 0), (2, 3)),
    "stack": (lambda x: em.stack([x, x.exp()], 1), (2, 3)),
    "split": (lambda x: em.split(x, 2, 1)[1] * 3, (2, 5)),
    "chunk": (lambda x: x.chunk(2)[0], (4, 2)),
    "unbind": (lambda x: x.unbind(1)[1], (2, 3)),
    "flip": (lambda x: x.flip(0, 1), (2, 3)),
    "roll": (lambda x: em.roll(x, 1, 0), (3, 2)),
    "cumsum": (lambda x: x.cumsum(1), (2, 4)),
    "cumprod": (lambda x: x.cumprod(0), (4, 2)),
    "sort_values": (lambda x: x.sort(1)[0], (2, 4)),
    "topk_values": (lambda x: x.topk(2)[0], (2, 4)),
    "max_dim": (lambda x: x.max(1)[0], (3, 4)),
    "clone": (lambda x: x.clone() * 2, (3,)),
    "where_mask": (lambda x: em.where(x > 0, x, x * x), (3, 3)),
    "softmax": (lambda x: em.softmax(x, 1), (3, 4)),
    "softmax_dim0": (lambda x: em.softmax(x, 0), (3, 4)),
    "log_softmax": (lambda x: em.log_softmax(x, -1), (3, 4)),
    "tril": (lambda x: em.tril(x), (3, 3)),
    "outer": (lambda x: em.outer(x, x), (3,)),
    "matmul": (lambda x: x @ x.T, (2, 3)),
    "linear": (lambda x: em.nn.functional.linear(x, x[:, :2].T * 2, x[0, :2]), (3, 3)),
    "norm2": (lambda x: em.linalg.vector_norm(x, dim=1), (3, 4)),
}


def _refill(x):
    y = x * 1.0
    # the old values of the filled rows get no gradient
    y[0].uniform_()
    y[1].normal_()
    y[2].bernoulli_(0.5)
    y[3].random_(0, 3)
    y[4].exponential_()
    y[5].log_normal_()
    y[6].cauchy_()
    y[7].geometric_(0.5)
    return y * x


def _copy_fill(x, row):
    y = x * 1.0
    y[0].fill_(2.0)               # no gradient to what was overwritten
    y[1:].copy_(row)              # the source's gradient summed over the broadcast
    return y * x


# ops whose gradcheck needs a special setup: (function, input shapes, checked by)
def _fft_chain(x):
    from ember.ops import fft as F
    return F.fft_c2r(F.fft_c2c(F.fft_r2c(x, n=7), n=5, norm="ortho"), n=6)


def _complex_parts(x, y):
    """Real -> complex -> real through every complex view row (more in
    test_complex_autograd.py, on complex leaves)."""
    z = em.view_as_complex(x) * em.complex(y, y * 0.5)
    return em.view_as_real(z).sum(-1) + z.real * z.imag


EXTRA_CASES = {
    "random_fills": (_refill, [(8, 2)]),
    "complex_parts": (_complex_parts, [(3, 2), (3,)]),
    # the fft family (r2c, c2c, c2r over [..., 2] tensors; more in tensor-core's test_fft.py)
    "fft": (_fft_chain, [(2, 6)]),
    "erfinv": (lambda x: em.erfinv(x * 0.4), [(3, 4)]),
    "copy_fill": (_copy_fill, [(3, 4), (4,)]),
    # float32 rounding defeats finite differences: see
    # test_dtype_conversion_gradient_has_the_input_dtype
    "to": (lambda x: x.to(em.float32), [(3,)]),
}
# ember.linalg's formula rows (tensor-core's test_linalg_decompositions.py gradchecks
# them over more shapes and options); well-conditioned inputs, gauge-invariant outputs
_I3 = em.eye(3, dtype=em.float64)
LINALG_CASES = {
    "linalg_solve": (lambda a, b: em.linalg.solve(a + 4 * _I3, b), [(3, 3), (3, 2)]),
    "linalg_inv": (lambda a: em.linalg.inv(a + 4 * _I3), [(3, 3)]),
    "linalg_det": (lambda a: em.linalg.det(a + 4 * _I3), [(3, 3)]),
    "linalg_slogdet": (lambda a: em.linalg.slogdet(a + 4 * _I3).logabsdet, [(3, 3)]),
    "linalg_cholesky": (lambda a: em.linalg.cholesky(a @ a.mT + _I3), [(3, 3)]),
    "linalg_solve_triangular": (lambda a, b: em.linalg.solve_triangular(
        a + 4 * _I3, b, upper=True), [(3, 3), (3, 2)]),
    "linalg_lu_factor": (lambda a: em.linalg.lu_factor(a + 4 * _I3).LU, [(3, 3)]),
    "linalg_qr": (lambda a: em.linalg.qr(a).R, [(4, 3)]),
    "linalg_eigh": (lambda a: (lambda w, V: w.sum() + (V * V).sum(-1))(
        *em.linalg.eigh(a + a.mT)), [(3, 3)]),
    "linalg_svd": (lambda a: (lambda U, S, Vh: (U * S.unsqueeze(-2)) @ Vh)(
        *em.linalg.svd(a, full_matrices=False)), [(4, 3)]),
    # complex results of a real matrix; |V| does not depend on the vectors' phases
    "linalg_eig": (lambda a: (lambda w, V: em.view_as_real(w).sum(-1) + V.abs().sum(-2))(
        *em.linalg.eig(a)), [(3, 3)]),
}
EXTRA_CASES.update(LINALG_CASES)
# the fused CPU attention (ember.ops.attention; nn.functional.scaled_dot_product_attention)
EXTRA_CASES["scaled_dot_product_attention"] = (
    lambda q, k, v: _attention.sdpa_fused(q, k, v, None, True, 0.5), [(2, 5, 3), (2, 6, 3),
                                                                       (2, 6, 2)])
# recorded so that its backward can say why it has none (PyTorch's error)
EXTRA_CASES["linalg_qr_r"] = (lambda a: em.linalg.qr(a, "r").R, [(4, 3)])
# a round trip through a second device, where one exists (opencl, else cuda)
_OTHER = next((d for d in ("opencl", "cuda") if getattr(em, d).is_available()), None)
if _OTHER is not None:
    EXTRA_CASES["to_device"] = (lambda x: (x.to(_OTHER) * x.to(_OTHER)).cpu(), [(2, 3)])


@pytest.mark.parametrize("name", ["random_fills", "copy_fill", "complex_parts"] +
                         (["to_device"] if _OTHER is not None else []))
def test_gradcheck_extra(name):
    fn, shapes = EXTRA_CASES[name]
    inputs = [leaf(*s, seed=i) for i, s in enumerate(shapes)]
    em.manual_seed(0)
    # the same random numbers on every call, so finite differences see a fixed function
    check(lambda *a: (em.manual_seed(0), fn(*a))[1], *inputs, twice=False)


@pytest.mark.parametrize("name", sorted(LINALG_CASES))
def test_gradcheck_linalg(name):
    fn, shapes = LINALG_CASES[name]
    check(fn, *[leaf(*s, seed=i) for i, s in enumerate(shapes)],
          twice=name not in ("linalg_lu_factor", "linalg_eigh"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, shape = CASES[name]
    check(fn, leaf(*shape, seed=zlib.crc32(name.encode()) % 1000))


def test_cumprod_with_zeros():
    # exact first derivatives with zeros (the gradient formula itself is piecewise
    # there, so its second derivative at an exact zero is not checked)
    x = em.tensor([[1.5, 0.0, 2.0, 0.0, 3.0], [0.5, 2.0, 0.0, 1.0, 2.0]], dtype=em.float64,
                  requires_grad=True)
    check(lambda a: a.cumprod(1), x, twice=False)


def test_dtype_conversion_gradient_has_the_input_dtype():
    x = leaf(3)
    y = x.to(em.float32)
    (y * y).sum().backward()
    assert x.grad.dtype is em.float64
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


def _setitem_chain(a, b):
    y = a * 1.0
    y[1, 1:3] = b
    y[em.tensor([0, 2]), 0] = b * 2
    return y


_IDX = em.tensor([0, 3, 0])
_SCATTER_INDEX = em.tensor([[0, 1], [3, 0], [2, 2]])

# (name, function, input shapes, also gradgradcheck)
MULTI_CASES = [
    ("setitem", _setitem_chain, [(3, 4), (2,)], True),
    ("index_put_accumulate", lambda a, b: a.index_put((_IDX,), b, accumulate=True),
     [(4, 2), (3, 2)], True),
    ("index_add", lambda a, b: a.index_add(0, _IDX, b, alpha=2.0), [(4, 2), (3, 2)], True),
    ("index_copy", lambda a, b: a.index_copy(0, em.tensor([1, 3, 0]), b), [(4, 2), (3, 2)],
     True),
    ("index_fill", lambda a: a.index_fill(0, _IDX, 0.5), [(4, 2)], True),
    ("scatter", lambda a, b: a.scatter(0, _SCATTER_INDEX, b), [(4, 2), (3, 2)], True),
    ("scatter_add", lambda a, b: a.scatter_add(0, _SCATTER_INDEX, b), [(4, 2), (3, 2)], True),
    # the fused ops of tensor-core's _nn_ops (gradgradcheck goes through their
    # composite forms)
    ("layer_norm", lambda x, w, b: em.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)], True),
    ("layer_norm_2d", lambda x: em.layer_norm(x, (2, 3)), [(2, 2, 3)], True),
    ("batch_norm_train", lambda x, w, b: em.batch_norm(x, None, None, w, b, True),
     [(4, 3, 2), (3,), (3,)], True),
    ("batch_norm_eval", lambda x, w, b: em.batch_norm(
        x, em.zeros(3, dtype=em.float64), em.ones(3, dtype=em.float64) * 2, w, b, False),
     [(4, 3), (3,), (3,)], True),
    ("cross_entropy", lambda x: em.cross_entropy(x, em.tensor([0, 2, 1])), [(3, 4)], True),
    ("cross_entropy_options", lambda x: em.cross_entropy(
        x, em.tensor([[0, 2], [1, 1]]), weight=em.tensor([1.0, 2.0, 0.5], dtype=em.float64),
        ignore_index=2, label_smoothing=0.1, reduction="sum"), [(2, 3, 2)], True),
    ("cross_entropy_probabilities", lambda x, t: em.cross_entropy(x, t, label_smoothing=0.2),
     [(3, 4), (3, 4)], True),
    ("nll_loss", lambda x: em.nll_loss(x, em.tensor([1, 0, 3]), reduction="none"), [(3, 4)],
     True),
    ("embedding", lambda w: em.embedding(em.tensor([[0, 2], [5, 0]]), w), [(6, 3)], True),
    ("dropout", lambda x: (em.manual_seed(0), em.dropout(x, 0.3))[1], [(4, 5)], True),
    ("conv2d", lambda x, w, b: em.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
     [(2, 2, 5, 6), (3, 2, 2, 2), (3,)], True),
    ("conv2d_groups_same", lambda x, w: em.conv2d(x, w, padding="same", groups=2),
     [(1, 4, 4, 3), (2, 2, 2, 3)], True),
    ("conv1d", lambda x, w: em.conv1d(x, w, stride=2), [(2, 2, 7), (3, 2, 3)], True),
    ("max_pool2d", lambda x: em.max_pool2d(x, 2, 1, padding=1), [(1, 2, 3, 4)], True),
    ("max_pool2d_dilated", lambda x: em.max_pool2d(x, 2, 2, dilation=2, ceil_mode=True),
     [(2, 5, 5)], True),
    ("max_pool1d", lambda x: em.max_pool1d(x, 3, 2, padding=1), [(2, 2, 7)], True),
    ("avg_pool2d", lambda x: em.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False,
                                           ceil_mode=True), [(1, 2, 5, 6)], True),
    ("avg_pool1d", lambda x: em.avg_pool1d(x, 2), [(2, 3, 5)], True),
    ("adaptive_avg_pool2d", lambda x: em.adaptive_avg_pool2d(x, (2, 3)), [(1, 2, 5, 4)], True),
    ("adaptive_avg_pool1d", lambda x: em.adaptive_avg_pool1d(x, 3), [(2, 7)], True),
    ("adaptive_max_pool2d", lambda x: em.adaptive_max_pool2d(x, 2), [(1, 1, 5, 3)], True),
    ("adaptive_max_pool1d", lambda x: em.adaptive_max_pool1d(x, 2), [(1, 2, 5)], True),
    ("conv_transpose2d", lambda x, w, b: em.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1), [(1, 2, 3, 3), (2, 3, 3, 2), (3,)],
     True),
    ("conv_transpose2d_groups", lambda x, w: em.conv_transpose2d(x, w, groups=2, dilation=2),
     [(1, 4, 2, 3), (4, 1, 2, 2)], True),
    # the fused LSTM ops (tensor-core's test_lstm_cell.py checks them against the cell
    # written out of ember ops over more shapes, dtypes and devices)
    ("lstm_cell_pointwise", lambda g, c: _rnn.lstm_cell_pointwise(g, c), [(2, 8), (2, 2)],
     True),
    ("lstm_sequence", lambda p, h, c, w: _rnn.lstm_sequence(p, h, c, w),
     [(3, 2, 8), (2, 2), (2, 2), (8, 2)], True),
] + [
    (f"scatter_reduce_{r}_{inc}",
     (lambda r, inc: lambda a, b: a.scatter_reduce(0, _SCATTER_INDEX, b, r,
                                                   include_self=inc))(r, inc),
     [(4, 2), (3, 2)], False)
    for r in ("sum", "mean", "amax", "amin", "prod") for inc in (True, False)
]


@pytest.mark.parametrize("case", MULTI_CASES, ids=lambda c: c[0])
def test_gradcheck_multi_input(case):
    name, fn, shapes, twice = case
    inputs = [leaf(*shape, seed=i) for i, shape in enumerate(shapes)]
    check(fn, *inputs, twice=twice)


def test_every_formula_has_a_gradcheck_case():
    """Each row of the derivative table is exercised by a gradcheck here or in
    test_formulas.py (which covers the op table's rows)."""
    from ember._C import core
    from ember.autograd import FORMULAS
    from ember.ops.table import ELEMENTWISE, REDUCTIONS
    seen = set()
    recorder = core.get_recorder()

    def spy(op, inputs, output, attrs):
        seen.add(op)
        return recorder(op, inputs, output, attrs)

    core.set_recorder(spy)
    try:
        for fn, shape in CASES.values():
            fn(leaf(*shape))
        for _, fn, shapes, _ in MULTI_CASES:
            fn(*[leaf(*s, seed=i) for i, s in enumerate(shapes)])
        for fn, shapes in EXTRA_CASES.values():
            fn(*[leaf(*s, seed=i) for i, s in enumerate(shapes)])
    finally:
        core.set_recorder(recorder)
    covered = seen | {r.name for r in ELEMENTWISE + REDUCTIONS}
    if not (em.cuda.is_available() or em.opencl.is_available()):
        covered.add("to_device")      # needs a second device
    untested = sorted(op for op, row in FORMULAS.items() if row is not None and
                      op not in covered)
    assert untested == []


@st.composite
def matmul_shapes(draw):
    k = draw(st.integers(1, 3))
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "bmm", "broadcast"]))
    if kind == "vv":
        return (k,), (k,)
    if kind == "mv":
        return batch + (m, k), (k,)
    if kind == "vm":
        return (k,), batch + (k, n)
    if kind == "mm":
        return (m, k), (k, n)
    if kind == "bmm":
        return batch + (m, k), batch + (k, n)
    return batch + (m, k), (k, n)


@given(shapes=matmul_shapes(), seed=st.integers(0, 1000), transposed=st.booleans())
@settings(max_examples=25, deadline=None)
def test_matmul_family(shapes, seed, transposed):
    sa, sb = shapes
    a = leaf(*sa, seed=seed)
    b = leaf(*sb, seed=seed + 1)
    if transposed and len(sb) >= 2:
        b = leaf(*(sb[:-2] + (sb[-1], sb[-2])), seed=seed + 1).detach().transpose(-1, -2)
        b.requires_grad_()
    check(lambda x, y: x @ y, a, b)


def test_matmul_aliases():
    a, b = leaf(2, 3), leaf(3, 2, seed=1)
    v = leaf(3, seed=2)
    check(lambda x, y: em.mm(x, y), a, b)
    check(lambda x, y: em.mv(x, y), a, v)
    w = leaf(3, seed=3)
    check(lambda x, y: em.dot(x, y), v, w)
    check(lambda x, y: em.einsum("ij,jk->ik", x, y), a, b)
    check(lambda x: em.einsum("ii->", x @ x.T), a)
    check(lambda x, y: em.tensordot(x, y, 1), a, b)
    check(lambda x, y: em.linalg.vecdot(x, y), a, leaf(2, 3, seed=4))
