"""Issue 18: the torch.<name> forms of nn functions (ember.celu, ember.kl_div, ...,
found in ember.nn._torch_functions), F.pdist, SparseAdam, padding_mode for Conv1d/2d/3d
and LazyConv3d/LazyConvTranspose3d. Expected values are PyTorch 2.13's, written here."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember as em
import ember.nn as nn
import ember.nn.functional as F
from ember import _components
from ember.nn import _torch_functions

X = [[-2.0, -0.5, 0.0, 0.7], [1.5, -1.0, 3.0, -0.2]]


def close(t, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(t.tolist() if isinstance(t, em.Tensor) else t),
                               np.asarray(want), rtol=tol, atol=tol)


def test_the_name_lists_agree_and_every_name_resolves():
    assert set(_torch_functions.__all__) == set(_components.NN_FUNCTIONS)
    for name in _components.NN_FUNCTIONS:
        assert getattr(em, name) is getattr(_torch_functions, name)
        assert name in dir(em)
    with pytest.raises(AttributeError, match="has no attribute 'not_a_name'"):
        em.__getattr__("not_a_name")


def test_activations_pytorch_values():
    x = em.tensor(X)
    close(em.celu(x, 0.5), [[-0.49084219, -0.31606027, 0.0, 0.7],
                            [1.5, -0.43233237, 3.0, -0.16483998]])
    close(em.selu(x), [[-1.52016652, -0.69175816, 0.0, 0.73549068],
                       [1.57605147, -1.11133075, 3.15210295, -0.31868935]])
    close(em.threshold(x, 0.6, -9.0), [[-9.0, -9.0, -9.0, 0.7], [1.5, -9.0, 3.0, -9.0]])
    close(em.rrelu(x), [[-0.45833334, -0.11458334, 0.0, 0.7],
                        [1.5, -0.22916667, 3.0, -0.04583333]])
    y = x.clone()
    assert em.celu_(y) is y and y[0, 0].item() == pytest.approx(math.expm1(-2.0), 1e-6)
    y = x.clone()
    em.threshold_(y, 0.0, 1.0)
    assert y.tolist()[0] == [1.0, 1.0, 1.0, pytest.approx(0.7)]
    y = x.clone()
    em.selu_(y)
    close(y, em.selu(x))
    y = x.clone()
    em.rrelu_(y, 0.1, 0.3, True)
    assert ((y < 0) == (x < 0)).all().item()
    with pytest.raises(TypeError, match="rrelu: generator"):
        em.rrelu(x, generator=em.Generator())


def test_dropouts_take_train_positionally():
    x = em.randn(4, 3, 5)
    assert em.alpha_dropout(x, 0.5, False) is x
    assert em.feature_dropout(x, 0.5, False) is x
    em.manual_seed(0)
    d = em.feature_dropout(em.ones(8, 6, 5), 0.5, True)
    per_channel = d.reshape(48, 5)
    for row in per_channel.tolist():
        assert row in ([0.0] * 5, [2.0] * 5)                  # whole channels, scaled 1/(1-p)
    y = em.ones(8, 6, 5)
    assert em.feature_dropout_(y, 0.5, True) is y
    em.manual_seed(1)
    s = em.selu(em.randn(20000))
    a = em.alpha_dropout(s, 0.2, True)
    assert abs(a.mean().item()) < 0.05 and abs(a.var().item() - 1) < 0.08   # self-normalising
    fa = em.feature_alpha_dropout(em.randn(4, 5, 6), 0.3, True)
    assert tuple(fa.shape) == (4, 5, 6)
    z = em.randn(4, 5)
    assert em.alpha_dropout_(z, 0.3, True) is z
    assert em.feature_alpha_dropout_(z, 0.0, True) is z
    with pytest.raises(TypeError, match="alpha_dropout: train must be a bool"):
        em.alpha_dropout(x, 0.5, "yes")
    with pytest.raises(ValueError, match="feature_dropout: expected an input of at least 2"):
        em.feature_dropout(em.ones(3), 0.5, True)
    with pytest.raises(ValueError, match="feature_dropout: dropout probability"):
        em.feature_dropout(x, 1.5, True)


def test_losses_take_reduction_as_the_int_enum():
    a = em.tensor([0.3, -1.2, 2.0])
    t = em.tensor([1.0, 0.0, 1.0])
    w = em.tensor([1.0, 2.0, 0.5])
    pw = em.tensor([3.0, 1.0, 2.0])
    assert em.binary_cross_entropy_with_logits(a, t, w, pw, 2).item() == \
        pytest.approx(2.3165586, 1e-5)
    close(em.binary_cross_entropy_with_logits(a, t, None, None, 0),
          [0.5543552, 0.26328242, 0.12692802])
    i1 = em.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
    i2 = em.tensor([[2.0, 1.0], [1.0, 1.0], [-1.0, 0.5]])
    y = em.tensor([1.0, -1.0, -1.0])
    assert em.cosine_embedding_loss(i1, i2, y, 0.1, 1).item() == pytest.approx(0.26903558, 1e-5)
    assert em.margin_ranking_loss(a, em.tensor([0.5, 0.5, 0.5]), y, 0.2, 2).item() == \
        pytest.approx(2.1, 1e-5)
    assert em.hinge_embedding_loss(a, y, 1.0, 1).item() == pytest.approx(0.83333331, 1e-5)
    assert em.poisson_nll_loss(a, em.tensor([1.0, 2.0, 0.0]), True, True, 1e-8, 1).item() == \
        pytest.approx(3.93063855, 1e-5)
    close(em.poisson_nll_loss(a.abs(), em.tensor([1.0, 2.0, 0.0]), False, False, 1e-8, 0),
          [1.50397277, 0.83535683, 2.0])
    assert em.triplet_margin_loss(i1, i2, i1 * 0.5, 1.0, 2, 1e-6, True, 1).item() == \
        pytest.approx(2.1623466, 1e-5)
    lp = em.log_softmax(em.tensor([[0.1, 0.5, 0.2], [0.3, 0.3, 0.9]]), 1)
    assert em.kl_div(lp, em.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]), 1).item() == \
        pytest.approx(0.04036985, 1e-5)
    assert em.kl_div(lp, lp, 2, log_target=True).item() == pytest.approx(0.0, abs=1e-7)
    lprobs = em.log_softmax(em.linspace(-1, 1, 40).reshape(5, 2, 4), 2)
    targets = em.tensor([[1, 2], [3, 3]])
    assert em.ctc_loss(lprobs, targets, [5, 4], [2, 2], 0, 1, False).item() == \
        pytest.approx(1.84931993, 1e-5)
    close(em.ctc_loss(lprobs, targets, em.tensor([5, 4]), em.tensor([2, 2]), 0, 0, False),
          [3.51937389, 3.87790585])
    with pytest.raises(ValueError, match="kl_div: reduction must be 0 \\(none\\)"):
        em.kl_div(lp, lp, 3)


def test_norms_layers_and_distances():
    g = em.arange(24.0).reshape(2, 4, 3)
    out = em.group_norm(g, 2, em.tensor([1.0, 2.0, 3.0, 4.0]), em.tensor([0.0, 0.0, 1.0, 1.0]),
                        1e-5)
    close(out[0], [[-1.46384764, -0.87830859, -0.29276955], [0.58553898, 1.75661707, 2.92769527],
                   [-3.39154243, -1.63492537, 0.1216917], [2.17107844, 4.51323462, 6.85539055]],
          1e-4)
    close(em.instance_norm(g, None, None, None, None, True, 0.1, 1e-5, False)[0, 0],
          [-1.22473562, 0.0, 1.22473562], 1e-4)
    close(em.rms_norm(g, [3], em.tensor([1.0, 2.0, 3.0]), 1e-6)[1, 1],
          [0.93628174, 1.997401, 3.18335795], 1e-4)
    pts = em.tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
    close(em.pdist(pts), [5.0, 1.41421354, 3.60555124])
    close(em.pdist(pts, 1), [7.0, 2.0, 5.0])
    close(em.pdist(pts, math.inf), [4.0, 1.0, 3.0])
    close(em.pdist(pts, 0.5), [13.92820358, 4.0, 9.89897919], 1e-4)
    assert em.pdist(pts, 0).tolist() == [2.0, 2.0, 2.0]
    assert F.pdist(em.ones(1, 3)).shape == (0,)
    close(em.constant_pad_nd(em.ones(2, 2), [1, 0, 0, 1], 7.0),
          [[7.0, 1.0, 1.0], [7.0, 1.0, 1.0], [7.0, 7.0, 7.0]])
    i1 = em.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
    i2 = em.tensor([[2.0, 1.0], [1.0, 1.0], [-1.0, 0.5]])
    close(em.pairwise_distance(i1, i2), [1.41421354, 0.99999899, 4.2720027])
    close(em.cosine_similarity(i1, i2), [0.79999995, 0.70710677, -0.98994946])
    assert em.pixel_shuffle(em.arange(8.0).reshape(1, 4, 1, 2), 2).tolist() == \
        [[[[0.0, 2.0, 1.0, 3.0], [4.0, 6.0, 5.0, 7.0]]]]
    assert em.pixel_unshuffle(em.pixel_shuffle(em.arange(8.0).reshape(1, 4, 1, 2), 2),
                              2).tolist() == em.arange(8.0).reshape(1, 4, 1, 2).tolist()
    b = em.bilinear(em.ones(2, 3), em.ones(2, 4), em.ones(5, 3, 4), em.zeros(5))
    assert b.tolist() == [[12.0] * 5] * 2
    with pytest.raises(ValueError, match="pdist: expected a 2-d"):
        em.pdist(em.ones(3))


def test_pdist_gradcheck_including_a_zero_distance():
    x = em.tensor([[0.0, 1.0, 2.0], [0.5, -1.0, 2.0], [0.0, 1.0, 2.0], [3.0, 1.0, 0.0]],
                  dtype=em.float64, requires_grad=True)
    for p in (1.5, 2.0, 3.0):
        assert em.autograd.gradcheck(lambda t: em.pdist(t, p)[[0, 2, 3, 4, 5]], (x,))
    em.pdist(x).sum().backward()
    assert all(math.isfinite(v) for row in x.grad.tolist() for v in row)


def test_embedding_bag_aten_outputs():
    w = em.arange(12.0).reshape(4, 3)
    idx, off = em.tensor([0, 2, 1, 3, 3]), em.tensor([0, 2, 2])
    out, o2b, size, maxi = em.embedding_bag(w, idx, off, False, 0)
    assert out.tolist() == [[6.0, 8.0, 10.0], [0.0, 0.0, 0.0], [21.0, 24.0, 27.0]]
    assert o2b.tolist() == [0, 0, 2, 2, 2] and size.tolist() == [0, 0, 0]
    out, o2b, size, maxi = em.embedding_bag(w, idx, off, False, 1)
    assert out.tolist() == [[3.0, 4.0, 5.0], [0.0, 0.0, 0.0], [7.0, 8.0, 9.0]]
    assert size.tolist() == [2, 0, 3] and maxi.tolist() == [2, 0, 3]
    out, o2b, size, maxi = em.embedding_bag(w, idx, off, False, 2, False, None, False, 3)
    assert out.tolist() == [[6.0, 7.0, 8.0], [0.0, 0.0, 0.0], [3.0, 4.0, 5.0]]   # PyTorch's
    assert size.tolist() == [2, 0, 1] and maxi.tolist() == [[2, 2, 2], [0, 0, 0], [1, 1, 1]]
    out = em.embedding_bag(w, idx, em.tensor([0, 2, 2, 5]), False, 0, False, None, True)[0]
    assert out.tolist() == [[6.0, 8.0, 10.0], [0.0, 0.0, 0.0], [21.0, 24.0, 27.0]]
    with pytest.raises(ValueError, match="embedding_bag: mode must be 0"):
        em.embedding_bag(w, idx, off, False, 3)


# SparseAdam -----------------------------------------------------------------------------

def _sparse_adam_run(**kw):
    emb = nn.Embedding(5, 2)
    with em.no_grad():
        emb.weight.copy_(em.arange(10.0).reshape(5, 2) / 10)
    opt = em.optim.SparseAdam(emb.parameters(), lr=0.1, **kw)
    for idx in ([0, 2], [2, 3], [0, 0, 4]):
        opt.zero_grad()
        (emb(em.tensor(idx)) * em.tensor([1.0, -2.0])).sum().backward()
        opt.step()
    return emb.weight, opt


def test_sparse_adam_matches_pytorch_on_looked_up_rows():
    # PyTorch 2.13, nn.Embedding(sparse=True) + optim.SparseAdam(lr=0.1), the same steps
    w, opt = _sparse_adam_run()
    close(w, [[-0.1828572, 0.28285724], [0.2, 0.3], [0.20000008, 0.69999993],
              [0.52558637, 0.77441365], [0.73611867, 0.96388131]], 1e-5)
    assert opt.state[w]["step"].item() == 3.0
    w, _ = _sparse_adam_run(maximize=True)
    close(w, [[0.1828572, -0.08285722], [0.2, 0.3], [0.5999999, 0.30000004],
              [0.67441368, 0.62558633], [0.86388135, 0.83611864]], 1e-5)


def test_sparse_adam_leaves_rows_without_gradient_alone_and_checks_args():
    p = nn.Parameter(em.ones(3, 2))
    opt = em.optim.SparseAdam([p], lr=0.5)
    p.grad = em.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    opt.step()
    p.grad = em.tensor([[0.0, 0.0], [0.0, 0.0], [2.0, 2.0]])
    opt.step()
    # row 0 moved once (its moments untouched at step 2), row 1 never, row 2 at step 2
    m = opt.state[p]["exp_avg"]
    assert m[0].tolist() == [pytest.approx(0.1), 0.0] and m[1].tolist() == [0.0, 0.0]
    assert p[1].tolist() == [1.0, 1.0] and p[0, 1].item() == 1.0
    assert p[0, 0].item() == pytest.approx(0.5) and p[2, 0].item() < 1.0
    with pytest.raises(ValueError, match="Invalid learning rate"):
        em.optim.SparseAdam([p], lr=0.0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        em.optim.SparseAdam([p], betas=(0.9, 1.0))
    sd = opt.state_dict()
    opt2 = em.optim.SparseAdam([p], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.state[p]["step"].item() == 2.0


# padding_mode and the 3-d lazy convolutions ------------------------------------------------

@pytest.mark.parametrize("mode,want", [
    ("reflect", [[120.0, 138.0, 174.0, 180.0], [240.0, 258.0, 294.0, 300.0],
                 [384.0, 402.0, 438.0, 444.0], [360.0, 378.0, 414.0, 420.0]]),
    ("replicate", [[99.0, 126.0, 162.0, 183.0], [231.0, 258.0, 294.0, 315.0],
                   [375.0, 402.0, 438.0, 459.0], [435.0, 462.0, 498.0, 519.0]]),
    ("circular", [[162.0, 162.0, 198.0, 174.0], [258.0, 258.0, 294.0, 270.0],
                  [402.0, 402.0, 438.0, 414.0], [210.0, 210.0, 246.0, 222.0]])])
def test_conv2d_padding_modes_pytorch_values(mode, want):
    c = nn.Conv2d(1, 1, 3, padding=1, padding_mode=mode, bias=False)
    with em.no_grad():
        c.weight.copy_(em.arange(9.0).reshape(1, 1, 3, 3))
    assert c(em.arange(16.0).reshape(1, 1, 4, 4)).tolist() == [[want]]
    assert f"padding_mode={mode}" in repr(c)


def test_conv1d_3d_padding_modes_and_errors():
    c = nn.Conv1d(1, 1, 2, padding=1, padding_mode="circular", bias=False)
    with em.no_grad():
        c.weight.copy_(em.tensor([[[1.0, 10.0]]]))
    assert c(em.tensor([[[1.0, 2.0, 3.0]]])).tolist() == [[[13.0, 21.0, 32.0, 13.0]]]
    assert repr(c) == ("Conv1d(1, 1, kernel_size=(2,), stride=(1,), padding=(1,), bias=False, "
                       "padding_mode=circular)")
    c3 = nn.Conv3d(2, 1, 3, padding=1, padding_mode="replicate")
    x = em.randn(1, 2, 3, 4, 4)
    ref = F.conv3d(F.pad(x, [1, 1, 1, 1, 1, 1], mode="replicate"), c3.weight, c3.bias)
    np.testing.assert_allclose(c3(x).tolist(), ref.tolist(), rtol=1e-5, atol=1e-5)
    same = nn.Conv2d(1, 1, 3, padding="same", padding_mode="circular", dilation=2)
    assert tuple(same(em.ones(1, 1, 4, 4)).shape) == (1, 1, 4, 4)
    xg = em.randn(1, 1, 5, dtype=em.float64, requires_grad=True)
    cg = nn.Conv1d(1, 1, 3, padding=1, padding_mode="reflect").double()
    assert em.autograd.gradcheck(lambda t: cg(t), (xg,))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                         'ConvTranspose2d'):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="foo")


def test_lazy_conv3d_and_transpose3d():
    c = nn.LazyConv3d(4, 3, padding=1, padding_mode="circular")
    y = c(em.randn(2, 3, 4, 4, 4))
    assert type(c) is nn.Conv3d and c.in_channels == 3 and tuple(c.weight.shape) == \
        (4, 3, 3, 3, 3) and tuple(y.shape) == (2, 4, 4, 4, 4)
    t = nn.LazyConvTranspose3d(2, 2, stride=2)
    z = t(em.randn(1, 5, 2, 2, 2))
    assert type(t) is nn.ConvTranspose3d and tuple(t.weight.shape) == (5, 2, 2, 2, 2)
    assert tuple(z.shape) == (1, 2, 4, 4, 4)
    from ember.nn.modules.conv import LazyConv3d
    assert LazyConv3d is nn.LazyConv3d


def test_functional_inplace_and_with_indices_spellings():
    x = em.tensor(X)
    for name, args in (("relu_", ()), ("elu_", (0.5,)), ("celu_", (0.5,)), ("selu_", ()),
                       ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
                       ("threshold_", (0.1, 9.0)), ("rrelu_", ())):
        y = x.clone()
        assert getattr(F, name)(y, *args) is y
        close(y, getattr(F, name[:-1])(x, *args))
    p = em.arange(16.0).reshape(1, 1, 4, 4)
    out, idx = F.max_pool2d_with_indices(p, 2)
    assert out.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]] and idx.tolist() == \
        [[[[5, 7], [13, 15]]]]
    assert F.max_pool1d_with_indices(p[0], 2)[1].shape == (1, 4, 2)
    assert F.adaptive_max_pool2d_with_indices(p, 1)[0].item() == 15.0
    assert F.max_pool3d_with_indices(p.unsqueeze(2).expand(1, 1, 2, 4, 4), 2)[0].shape == \
        (1, 1, 1, 2, 2)
    assert F.native_channel_shuffle(p.expand(1, 4, 4, 4), 2).shape == (1, 4, 4, 4)


def test_gumbel_softmax():
    em.manual_seed(0)
    logits = em.tensor([[1.0, 2.0, 0.5]] * 4000)
    y = F.gumbel_softmax(logits, tau=0.5)
    close(y.sum(-1), [1.0] * 4000)
    h = F.gumbel_softmax(logits, hard=True)
    assert set(h.sum(-1).tolist()) == {1.0} and set(h.reshape(-1).tolist()) <= {0.0, 1.0}
    # the argmax is distributed as softmax(logits) (the Gumbel-max trick)
    freq = h.mean(0).tolist()
    want = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    np.testing.assert_allclose(freq, want, atol=0.03)
    lg = em.tensor([[0.2, -0.3, 1.0]], dtype=em.float64, requires_grad=True)
    F.gumbel_softmax(lg, hard=True).mul(em.tensor([[1.0, 2.0, 3.0]],
                                                    dtype=em.float64)).sum().backward()
    assert lg.grad is not None and abs(sum(lg.grad.reshape(-1).tolist())) < 1e-9
    with pytest.raises(ValueError, match="gumbel_softmax: tau must be positive"):
        F.gumbel_softmax(logits, tau=0.0)


def test_native_group_norm_pytorch_values():
    x = em.arange(12.0).reshape(2, 2, 3)
    out, mean, rstd = em.native_group_norm(x, None, None, 2, 2, 3, 1, 1e-5)
    assert mean.shape == (2, 1) and mean.tolist() == [[2.5], [8.5]]
    close(rstd, [[0.58553904], [0.58553904]])
    close(out, F.group_norm(x, 1))
    with pytest.raises(ValueError, match="native_group_norm: input of shape"):
        em.native_group_norm(x, None, None, 3, 2, 3, 1, 1e-5)


def test_affine_grid_generator_and_distributions_attribute():
    g = em.affine_grid_generator(em.eye(2, 3).unsqueeze(0), [1, 1, 2, 2], False)
    assert g.tolist() == [[[[-0.5, -0.5], [0.5, -0.5]], [[-0.5, 0.5], [0.5, 0.5]]]]
    import ember.distributions
    assert em.distributions is ember.distributions


def test_volatile_and_reinforce_as_pytorch():
    x = em.ones(2)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        x.volatile = True
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        x.reinforce(1.0)
