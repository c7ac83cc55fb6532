"""nn.utils for issue 18: parametrize, parametrizations (weight_norm, spectral_norm,
orthogonal), the legacy weight_norm / spectral_norm hooks, clip_grad with foreach and
error_if_nonfinite, conv/linear + BatchNorm fusion, and the nn.init additions, against
the formulas PyTorch documents."""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.nn import init
from ember.nn.utils import _linalg, parametrizations as PZ, parametrize as P


def _np(t):
    return t.detach().numpy()


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return 2 * x


def test_register_parametrization_basics():
    em.manual_seed(0)
    m = nn.Linear(3, 3).double()
    w0 = _np(m.weight).copy()
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert P.type_before_parametrizations(m) is nn.Linear
    # right_inverse ran at registration: original = triu(w0)
    np.testing.assert_array_equal(_np(m.parametrizations.weight.original), np.triu(w0))
    w = _np(m.weight)
    np.testing.assert_array_equal(w, w.T)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    # the gradient reaches the original through the parametrization
    m(em.ones(2, 3, dtype=em.float64)).sum().backward()
    g = _np(m.parametrizations.weight.original.grad)
    np.testing.assert_allclose(g, np.triu(np.full((3, 3), 2.0)) + np.triu(np.full((3, 3), 2.0), 1))
    # assignment goes through right_inverse
    a = np.arange(9.0).reshape(3, 3)
    m.weight = em.tensor(a)
    np.testing.assert_array_equal(_np(m.parametrizations.weight.original), np.triu(a))
    # chaining
    P.register_parametrization(m, "weight", Scale())
    np.testing.assert_array_equal(_np(m.weight), 2 * (np.triu(a) + np.triu(a, 1).T))
    # cached: one computation per block
    with P.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(_np(m.weight), 2 * (np.triu(a) + np.triu(a, 1).T))
    assert sorted(m.state_dict()) == ["bias", "weight"]


def test_remove_keeps_original_and_errors():
    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Scale())
    orig = _np(m.parametrizations.weight.original).copy()
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(_np(m.weight), orig)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(m, "nope", Scale())

    class Bad(nn.Module):
        def forward(self, x):
            return x[0]
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Bad())
    P.register_parametrization(m, "weight", Bad(), unsafe=True)
    assert m.weight.shape == (2,)


def test_parametrized_module_copies_and_trains():
    m = nn.Linear(3, 2)
    P.register_parametrization(m, "weight", Scale())
    m2 = copy.deepcopy(m)
    np.testing.assert_array_equal(_np(m2.weight), _np(m.weight))
    from ember import optim
    opt = optim.SGD(m.parameters(), lr=0.1)
    before = _np(m.parametrizations.weight.original).copy()
    m(em.ones(1, 3)).sum().backward()
    opt.step()
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), before - 0.1 * 2,
                               rtol=1e-6)


def test_weight_norm_parametrization():
    em.manual_seed(0)
    m = PZ.weight_norm(nn.Linear(4, 3).double())
    g = _np(m.parametrizations.weight.original0)
    v = _np(m.parametrizations.weight.original1)
    assert g.shape == (3, 1) and v.shape == (3, 4)
    np.testing.assert_allclose(g[:, 0], np.linalg.norm(v, axis=1))
    np.testing.assert_allclose(_np(m.weight), v * g / np.linalg.norm(v, axis=1, keepdims=True))
    with em.no_grad():
        m.parametrizations.weight.original0.fill_(2.0)
    np.testing.assert_allclose(np.linalg.norm(_np(m.weight), axis=1), [2, 2, 2])
    c = PZ.weight_norm(nn.Conv2d(2, 3, 3), dim=None)
    assert c.parametrizations.weight.original0.shape == ()
    conv = PZ.weight_norm(nn.Conv2d(2, 3, 3).double(), dim=1)
    assert conv.parametrizations.weight.original0.shape == (1, 2, 1, 1)
    assert sorted(k for k in m.state_dict() if "original" in k) == [
        "parametrizations.weight.original0", "parametrizations.weight.original1"]


def _sigma(w):
    return np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False)[0]


def test_spectral_norm_parametrization():
    em.manual_seed(0)
    m = PZ.spectral_norm(nn.Linear(5, 4).double(), n_power_iterations=30)
    orig = _np(m.parametrizations.weight.original)
    for _ in range(3):
        w = _np(m.weight)          # training: power iterations at each access
    np.testing.assert_allclose(w, orig / _sigma(orig), rtol=1e-8)
    np.testing.assert_allclose(_sigma(w), 1.0, rtol=1e-8)
    assert set(m.parametrizations.weight[0]._buffers) == {"_u", "_v"}
    m.eval()
    u = _np(m.parametrizations.weight[0]._u).copy()
    _ = m.weight
    np.testing.assert_array_equal(_np(m.parametrizations.weight[0]._u), u)   # eval: fixed
    ct = PZ.spectral_norm(nn.ConvTranspose2d(2, 3, 3))
    assert ct.parametrizations.weight[0].dim == 1
    with pytest.raises(ValueError, match="n_power_iterations"):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("shape,omap", [((4, 4), None), ((4, 4), "cayley"),
                                        ((5, 3), None), ((3, 5), "householder"),
                                        ((5, 3), "matrix_exp"), ((3, 5), "cayley")])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal(shape, omap, triv):
    if not triv and omap in (None, "matrix_exp", "cayley") and (
            omap is not None or shape[0] == shape[1]):
        pytest.skip("PyTorch cannot assign to matrix_exp / cayley without trivialization")
    em.manual_seed(0)
    lin = nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(lin, orthogonal_map=omap, use_trivialization=triv)
    q = _np(lin.weight)
    k = min(shape)
    gram = q @ q.T if shape[0] < shape[1] else q.T @ q
    np.testing.assert_allclose(gram, np.eye(k), atol=1e-10)
    # gradients flow to the original and a step keeps it orthogonal
    from ember import optim
    opt = optim.SGD(lin.parameters(), lr=0.1)
    lin(em.ones(2, shape[1], dtype=em.float64)).pow(2).sum().backward()
    opt.step()
    q = _np(lin.weight)
    gram = q @ q.T if shape[0] < shape[1] else q.T @ q
    np.testing.assert_allclose(gram, np.eye(k), atol=1e-10)


def test_orthogonal_assignment_and_errors():
    lin = PZ.orthogonal(nn.Linear(3, 3).double())
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))
    lin.weight = em.tensor(q)
    np.testing.assert_allclose(_np(lin.weight), q, atol=1e-12)     # an orthogonal value
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        PZ.orthogonal(nn.BatchNorm1d(3))
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        PZ.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")


def test_linalg_helpers():
    t = 0.7
    a = em.tensor([[0.0, -t], [t, 0.0]], dtype=em.float64)
    np.testing.assert_allclose(_np(_linalg.matrix_exp(a)),
                               [[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]],
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(_np(_linalg.matrix_exp(em.tensor([[30.0, 0], [0, -2.0]],
                                                                dtype=em.float64))),
                               np.diag([math.exp(30), math.exp(-2)]), rtol=1e-12)
    rng = np.random.default_rng(0)
    s = rng.standard_normal((4, 4))
    s = s - s.T
    m, b = np.eye(4) - s / 2, np.eye(4) + s / 2
    np.testing.assert_allclose(_np(_linalg.solve_spd_part(em.tensor(m), em.tensor(b))),
                               np.linalg.solve(m, b), rtol=1e-12, atol=1e-14)
    x = rng.standard_normal((5, 3))
    h, tau = _linalg.geqrf(em.tensor(x))
    q = _np(_linalg.householder_product(h, tau))
    qr, r = np.linalg.qr(x)
    np.testing.assert_allclose(q @ np.triu(_np(h))[:3], x, atol=1e-12)
    np.testing.assert_allclose(np.abs(q), np.abs(qr), atol=1e-12)


def test_legacy_weight_norm():
    with pytest.warns(FutureWarning, match="deprecated"):
        m = nn.utils.weight_norm(nn.Linear(4, 3).double())
    assert set(n for n, _ in m.named_parameters()) == {"bias", "weight_g", "weight_v"}
    g, v = _np(m.weight_g).copy(), _np(m.weight_v).copy()
    with em.no_grad():
        m.weight_g.mul_(3)
    m(em.ones(1, 4, dtype=em.float64))          # the pre-hook recomputes weight
    np.testing.assert_allclose(_np(m.weight), 3 * g * v / np.linalg.norm(v, axis=1,
                                                                         keepdims=True))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert set(n for n, _ in m.named_parameters()) == {"bias", "weight"}
    with pytest.raises(ValueError, match="not found"):
        nn.utils.remove_weight_norm(m)


def test_legacy_spectral_norm():
    em.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(5, 4).double(), n_power_iterations=40)
    assert set(n for n, _ in m.named_parameters()) == {"bias", "weight_orig"}
    assert {"weight_u", "weight_v"} <= set(n for n, _ in m.named_buffers())
    m(em.ones(1, 5, dtype=em.float64))
    np.testing.assert_allclose(_sigma(_np(m.weight)), 1.0, rtol=1e-8)
    nn.utils.remove_spectral_norm(m)
    assert set(n for n, _ in m.named_parameters()) == {"bias", "weight"}


def test_clip_grad_foreach_and_nonfinite():
    ps = [em.tensor(np.full(s, 1.0), requires_grad=True) for s in ((3,), (2, 2))]
    for p, g in zip(ps, ([3.0, 0, 0], [[0, 4.0], [0, 0]])):
        p.grad = em.tensor(g, dtype=em.float64)
    total = nn.utils.clip_grad_norm_(ps, 1.0, foreach=True)
    assert math.isclose(total.item(), 5.0)
    np.testing.assert_allclose(_np(ps[0].grad), [3 / (5 + 1e-6), 0, 0])
    t = nn.utils.get_total_norm([p.grad for p in ps], 1.0, foreach=True)
    assert math.isclose(t.item(), 7 / (5 + 1e-6))
    ps[0].grad = em.tensor([5.0, -7.0, 0.5], dtype=em.float64)
    nn.utils.clip_grad_value_(ps, 1.0, foreach=True)
    assert ps[0].grad.tolist() == [1.0, -1.0, 0.5]
    ps[0].grad = em.tensor([math.inf, 0, 0], dtype=em.float64)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True, foreach=True)
    with pytest.warns(FutureWarning):
        nn.utils.clip_grad_norm(ps, 1.0)


def test_parameters_to_vector_round_trip():
    m = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    nn.utils.vector_to_parameters(vec * 0 + 1, m.parameters())
    assert m.weight.tolist() == [[1.0] * 3] * 2


def _bn_eval(n):
    bn = nn.BatchNorm2d(n).double()
    rng = np.random.default_rng(0)
    with em.no_grad():
        bn.running_mean.copy_(em.tensor(rng.standard_normal(n)))
        bn.running_var.copy_(em.tensor(rng.random(n) + 0.5))
        bn.weight.copy_(em.tensor(rng.standard_normal(n)))
        bn.bias.copy_(em.tensor(rng.standard_normal(n)))
    return bn.eval()


def test_fuse_conv_bn_eval():
    conv = nn.Conv2d(2, 3, 3, padding=1).double().eval()
    bn = _bn_eval(3)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    x = em.randn(2, 2, 5, 5, dtype=em.float64)
    np.testing.assert_allclose(_np(fused(x)), _np(bn(conv(x))), rtol=1e-10, atol=1e-12)
    assert isinstance(fused.weight, nn.Parameter) and fused is not conv
    nob = nn.Conv2d(2, 3, 1, bias=False).double().eval()
    np.testing.assert_allclose(_np(nn.utils.fuse_conv_bn_eval(nob, bn)(x)), _np(bn(nob(x))),
                               rtol=1e-10, atol=1e-12)
    ct = nn.ConvTranspose2d(2, 3, 3).double().eval()
    np.testing.assert_allclose(_np(nn.utils.fuse_conv_bn_eval(ct, bn, transpose=True)(x)),
                               _np(bn(ct(x))), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_eval():
    lin = nn.Linear(4, 3).double().eval()
    bn = nn.BatchNorm1d(3).double()
    with em.no_grad():
        bn.running_mean.copy_(em.tensor([0.5, -1.0, 2.0], dtype=em.float64))
        bn.running_var.copy_(em.tensor([2.0, 0.5, 1.0], dtype=em.float64))
    bn.eval()
    x = em.randn(5, 4, dtype=em.float64)
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(_np(fused(x)), _np(bn(lin(x))), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(lin, nn.BatchNorm1d(2).eval())


def test_init_dirac_sparse_and_gains():
    w = init.dirac_(em.empty(4, 2, 3))
    expect = np.zeros((4, 2, 3))
    expect[0, 0, 1] = expect[1, 1, 1] = 1
    np.testing.assert_array_equal(_np(w), expect)
    w = init.dirac_(em.empty(6, 2, 3, 3), groups=2)
    for g in range(2):
        for d in range(2):
            assert w[g * 3 + d, d, 1, 1].item() == 1
    assert w.sum().item() == 4
    w = init.dirac_(em.empty(2, 2, 3, 3, 3))
    assert w[1, 1, 1, 1, 1].item() == 1 and w.sum().item() == 2
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(em.empty(2, 2))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(em.empty(5, 2, 3), groups=2)
    w = init.sparse_(em.empty(10, 6), sparsity=0.25, std=0.5)
    zeros = (_np(w) == 0).sum(0)
    assert (zeros >= 3).all()              # ceil(0.25 * 10) per column
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(em.empty(3), 0.1)
    gains = {"linear": 1, "conv1d": 1, "conv2d": 1, "conv3d": 1, "conv_transpose1d": 1,
             "conv_transpose2d": 1, "conv_transpose3d": 1, "sigmoid": 1, "tanh": 5 / 3,
             "relu": math.sqrt(2), "leaky_relu": math.sqrt(2 / (1 + 0.01 ** 2)),
             "selu": 3 / 4}
    for name, g in gains.items():
        assert math.isclose(init.calculate_gain(name), g)
    assert math.isclose(init.calculate_gain("leaky_relu", 0.2), math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("relu", 0), ("leaky_relu", 0.1), ("tanh", 0),
                                            ("linear", 0), ("selu", 0)])
def test_kaiming_modes(mode, nonlinearity, a):
    em.manual_seed(0)
    w = em.empty(200, 100, 3)
    fan = 100 * 3 if mode == "fan_in" else 200 * 3
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    init.kaiming_normal_(w, a=a, mode=mode, nonlinearity=nonlinearity)
    assert abs(_np(w).std() / std - 1) < 0.03
    init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity)
    assert np.abs(_np(w)).max() <= math.sqrt(3) * std + 1e-7
    assert abs(_np(w).std() / std - 1) < 0.03


def test_init_deprecated_names():
    w = em.empty(3, 4)
    with pytest.warns(FutureWarning, match="nn.init.uniform` is now deprecated"):
        init.uniform(w, 0, 1)
    with pytest.warns(FutureWarning):
        init.kaiming_normal(w)
    with pytest.warns(FutureWarning), pytest.raises(TypeError, match="uniform_"):
        init.uniform(5)
