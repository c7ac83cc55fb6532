"""Linear, Bilinear, Flatten/Unflatten, activations and init against NumPy."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F


def f64(*shape, seed=0):
    return em.from_numpy(np.random.default_rng(seed).uniform(-2, 2, size=shape))


def test_linear_forward_gradients_and_init():
    lin = nn.Linear(5, 3)
    bound = 1 / math.sqrt(5)
    w = lin.weight.detach().numpy()
    assert w.shape == (3, 5) and np.all(np.abs(w) <= bound) and np.std(w) > bound / 4
    x = f64(4, 5)
    lin.double()
    np.testing.assert_allclose(lin(x).detach().numpy(),
                               x.numpy() @ lin.weight.detach().numpy().T +
                               lin.bias.detach().numpy())
    assert gradcheck(lambda a, w_, b_: F.linear(a, w_, b_),
                     (x.requires_grad_(), f64(3, 5, seed=1).requires_grad_(),
                      f64(3, seed=2).requires_grad_()))
    assert tuple(nn.Linear(5, 3)(em.randn(2, 7, 5)).shape) == (2, 7, 3)



@given(lead=st.lists(st.integers(1, 3), min_size=1, max_size=3), fin=st.integers(1, 5),
       fout=st.integers(1, 5), bias=st.booleans(), transposed=st.booleans(),
       dtype=st.sampled_from([em.float32, em.float64]), needs=st.integers(1, 7))
@settings(max_examples=30, deadline=None)
def test_linear_as_one_op_matches_the_composed_ops(lead, fin, fout, bias, transposed, dtype,
                                                   needs):
    """F.linear's one recorded op against input @ weight.T + bias: values and every
    gradient, for 2-d to 4-d inputs (a transposed, non-contiguous one too), with and
    without a bias, whichever operands require grad."""
    rng = np.random.default_rng(len(lead) * 7 + fin)
    x0 = rng.standard_normal(tuple(lead) + (fin,))
    w0, b0 = rng.standard_normal((fout, fin)), rng.standard_normal(fout)
    g0 = rng.standard_normal(tuple(lead) + (fout,))

    def run(fused):
        x = em.from_numpy(x0).to(dtype)
        if transposed:        # the same values through a transposed layout
            x = x.transpose(0, -1).contiguous().transpose(0, -1)
        x.requires_grad_(bool(needs & 1))
        w = em.from_numpy(w0).to(dtype).requires_grad_(bool(needs & 2))
        b = em.from_numpy(b0).to(dtype).requires_grad_(bool(needs & 4)) if bias else None
        out = F.linear(x, w, b) if fused else (x @ w.T + b if bias else x @ w.T)
        out.backward(em.from_numpy(g0).to(dtype))
        return [out.detach()] + [t.grad for t in (x, w, b) if t is not None]
    tol = 1e-5 if dtype is em.float32 else 1e-12
    for got, want in zip(run(True), run(False)):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)


def test_linear_as_one_op_gradcheck_and_gradgradcheck():
    x = em.randn(2, 3, 4, dtype=em.float64, requires_grad=True)
    w = em.randn(5, 4, dtype=em.float64, requires_grad=True)
    b = em.randn(5, dtype=em.float64, requires_grad=True)
    assert F.linear(x, w, b).grad_fn.name() == "LinearBackward0"
    assert gradcheck(F.linear, (x, w, b))
    assert em.autograd.gradgradcheck(F.linear, (x, w, b))
    assert em.autograd.gradgradcheck(lambda a, c: F.linear(a, c), (x, w))

def test_bilinear():
    m = nn.Bilinear(2, 3, 4).double()
    a, b = f64(5, 2), f64(5, 3, seed=1)
    want = np.einsum("ni,kij,nj->nk", a.numpy(), m.weight.detach().numpy(), b.numpy()) + \
        m.bias.detach().numpy()
    np.testing.assert_allclose(m(a, b).detach().numpy(), want)
    assert gradcheck(lambda x, y, w: F.bilinear(x, y, w),
                     (f64(2, 2).requires_grad_(), f64(2, 3, seed=1).requires_grad_(),
                      f64(4, 2, 3, seed=2).requires_grad_()))


def test_flatten_unflatten():
    x = em.randn(2, 3, 4, 5)
    assert tuple(nn.Flatten()(x).shape) == (2, 60)
    assert tuple(nn.Flatten(0, 2)(x).shape) == (24, 5)
    assert tuple(nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape) == (2, 3, 20)


def _gelu_exact(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


ACTIVATIONS = {
    "ReLU": (nn.ReLU(), lambda x: np.maximum(x, 0)),
    "LeakyReLU": (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "ELU": (nn.ELU(1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "GELU": (nn.GELU(), _gelu_exact),
    "GELU_tanh": (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(
        math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    "SiLU": (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    "Mish": (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "Softplus": (nn.Softplus(beta=2.0), lambda x: np.log1p(np.exp(2 * x)) / 2),
    "Tanh": (nn.Tanh(), np.tanh),
    "Sigmoid": (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    "Hardtanh": (nn.Hardtanh(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7)),
    "Softmax": (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    "LogSoftmax": (nn.LogSoftmax(dim=1),
                   lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_forward_and_gradcheck(name):
    module, ref = ACTIVATIONS[name]
    x = f64(3, 4, seed=7)
    np.testing.assert_allclose(module(x).numpy(), ref(x.numpy()), rtol=1e-10, atol=1e-12)
    assert gradcheck(module, (x.requires_grad_(),))


def test_softplus_is_stable_and_linear_above_threshold():
    x = em.tensor([-100.0, 0.0, 30.0, 1000.0], dtype=em.float64)
    y = F.softplus(x).numpy()
    assert np.isfinite(y).all() and y[3] == 1000.0
    np.testing.assert_allclose(y[:3], [np.log1p(np.exp(-100.0)), np.log(2.0), 30.0])


def test_init_functions():
    em.manual_seed(0)
    w = em.empty(200, 300)
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / 500)
    assert float(w.abs().max()) <= a and abs(float(w.std()) - a / math.sqrt(3)) < 0.01
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(float(w.std()) - math.sqrt(2 / 300)) < 0.005
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert float(w.abs().max()) <= 0.5
    q = nn.init.orthogonal_(em.empty(4, 6)).to(em.float64).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    q = nn.init.orthogonal_(em.empty(6, 4)).to(em.float64).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(em.empty(3))
    nn.init.constant_(w, 0.5)
    assert float(w.min()) == 0.5
