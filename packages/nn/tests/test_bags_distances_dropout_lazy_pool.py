"""Issue 18: EmbeddingBag, CosineSimilarity, PairwiseDistance, AlphaDropout,
FeatureAlphaDropout, Dropout1d/2d/3d (PyTorch's rank rules), the Lazy* modules, LPPool1d/2d
and MaxUnpool1d/2d against NumPy references; gradients by gradcheck; cpu and opencl."""
import warnings

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


def arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape)


def t64(*shape, seed=0, grad=False):
    return em.from_numpy(arr(*shape, seed=seed)).requires_grad_(grad)


# ---------------------------------------------------------------------- EmbeddingBag

def np_bags(w, idx, offsets, mode, psw=None, pad=None, end=None):
    end = len(idx) if end is None else end
    bounds = list(offsets) + [end]
    out = []
    for b in range(len(offsets)):
        rows = [(i, idx[i]) for i in range(bounds[b], bounds[b + 1]) if idx[i] != pad]
        if not rows:
            out.append(np.zeros(w.shape[1]))
            continue
        vecs = np.stack([w[j] * (psw[i] if psw is not None else 1) for i, j in rows])
        out.append({"sum": vecs.sum(0), "mean": vecs.mean(0), "max": vecs.max(0)}[mode])
    return np.stack(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_padding_and_2d(mode):
    bag = nn.EmbeddingBag(10, 3, mode=mode).double()
    w = bag.weight.detach().numpy()
    idx = [1, 2, 4, 5, 4, 3, 2, 9]
    got = bag(em.tensor(idx), em.tensor([0, 4, 4]))       # the middle bag is empty
    np.testing.assert_allclose(got.detach().numpy(), np_bags(w, idx, [0, 4, 4], mode))
    got2 = bag(em.tensor([[1, 2, 4], [5, 4, 3]]))
    np.testing.assert_allclose(got2.detach().numpy(),
                               np_bags(w, [1, 2, 4, 5, 4, 3], [0, 3], mode))
    # include_last_offset: the last offset ends the last bag
    last = nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=True).double()
    last.weight = bag.weight
    np.testing.assert_allclose(last(em.tensor(idx), em.tensor([0, 3, 6])).detach().numpy(),
                               np_bags(w, idx, [0, 3], mode, end=6))
    padded = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2).double()
    assert padded.weight[2].tolist() == [0.0, 0.0, 0.0]
    wp = padded.weight.detach().numpy()
    np.testing.assert_allclose(padded(em.tensor(idx), em.tensor([0, 2])).detach().numpy(),
                               np_bags(wp, idx, [0, 2], mode, pad=2))
    assert gradcheck(lambda w_: F.embedding_bag(em.tensor(idx), w_, em.tensor([0, 3]),
                                                mode=mode, padding_idx=4),
                     (t64(10, 3, grad=True),))


def test_embedding_bag_per_sample_weights_and_errors():
    bag = nn.EmbeddingBag(6, 2, mode="sum").double()
    w = bag.weight.detach().numpy()
    idx, psw = [0, 1, 5, 5], arr(4)
    got = bag(em.tensor(idx), em.tensor([0, 1]), em.from_numpy(psw))
    np.testing.assert_allclose(got.detach().numpy(), np_bags(w, idx, [0, 1], "sum", psw))
    assert gradcheck(lambda w_, p: F.embedding_bag(em.tensor(idx), w_, em.tensor([0, 1]),
                                                   mode="sum", per_sample_weights=p),
                     (t64(6, 2, grad=True), em.from_numpy(psw).requires_grad_()))
    assert repr(nn.EmbeddingBag(5, 2)) == "EmbeddingBag(5, 2, mode=mean)"
    assert repr(nn.EmbeddingBag(5, 2, max_norm=1.0, padding_idx=0)) == \
        "EmbeddingBag(5, 2, max_norm=1.0, mode=mean, padding_idx=0)"
    with pytest.raises(ValueError, match="per_sample_weights is only supported for mode='sum'"):
        nn.EmbeddingBag(6, 2)(em.tensor(idx), em.tensor([0]), em.ones(4))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        bag(em.tensor([[0, 1]]), em.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        bag(em.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"offsets\[0\] has to be 0"):
        bag(em.tensor([0, 1]), em.tensor([1]))
    with pytest.raises(ValueError, match="EmbeddingBag: mode has to be one of"):
        nn.EmbeddingBag(6, 2, mode="min")
    pre = nn.EmbeddingBag.from_pretrained(em.ones(3, 2), mode="sum")
    assert not pre.weight.requires_grad
    assert pre(em.tensor([[0, 1, 2]])).tolist() == [[3.0, 3.0]]


# ------------------------------------------------------------------------ distances

def test_cosine_similarity_and_pairwise_distance():
    a, b = t64(4, 5), t64(4, 5, seed=1)
    an, bn = a.numpy(), b.numpy()
    want = (an * bn).sum(1) / (np.linalg.norm(an, axis=1) * np.linalg.norm(bn, axis=1))
    np.testing.assert_allclose(nn.CosineSimilarity()(a, b).numpy(), want)
    # broadcasting, another dim, eps clamps each norm
    c = t64(1, 5, seed=2)
    cn = c.numpy()
    want = (an * cn).sum(1) / (np.linalg.norm(an, axis=1) * np.linalg.norm(cn))
    np.testing.assert_allclose(F.cosine_similarity(a, c).numpy(), want)
    np.testing.assert_allclose(F.cosine_similarity(a, b, dim=0).numpy(),
                               (an * bn).sum(0) / (np.linalg.norm(an, axis=0) *
                                                   np.linalg.norm(bn, axis=0)))
    z = em.zeros(2, 3, dtype=em.float64)
    assert F.cosine_similarity(z, z).tolist() == [0.0, 0.0]
    assert gradcheck(lambda x, y: F.cosine_similarity(x, y), (t64(3, 4, grad=True),
                                                              t64(3, 4, seed=1, grad=True)))
    for p in (1.0, 2.0, 3.0):
        m = nn.PairwiseDistance(p)
        want = (np.abs(an - bn + 1e-6) ** p).sum(-1) ** (1 / p)
        np.testing.assert_allclose(m(a, b).numpy(), want)
    assert tuple(nn.PairwiseDistance(keepdim=True)(a, b).shape) == (4, 1)
    assert tuple(F.pairwise_distance(a[0], b[0]).shape) == ()
    np.testing.assert_allclose(F.pairwise_distance(a, b, float("inf")).numpy(),
                               np.abs(an - bn + 1e-6).max(-1))
    assert gradcheck(lambda x, y: F.pairwise_distance(x, y), (t64(3, 4, grad=True),
                                                              t64(3, 4, seed=1, grad=True)))
    assert repr(nn.CosineSimilarity(0, 1e-6)) == "CosineSimilarity(dim=0, eps=1e-06)"


# -------------------------------------------------------------------------- dropout

def test_alpha_dropout_keeps_mean_and_variance():
    em.manual_seed(0)
    x = em.randn(200000, dtype=em.float64)
    m = nn.AlphaDropout(0.2)
    y = m(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    # dropped entries all take one value: a * alpha' + b
    ap = -1.7580993408473766
    a = ((1 - 0.2) * (1 + 0.2 * ap * ap)) ** -0.5
    dropped = np.isclose(y, a * ap - a * ap * 0.2)
    assert 0.18 < dropped.mean() < 0.22
    m.eval()
    assert m(x) is x
    fm = nn.FeatureAlphaDropout(0.5)
    z = fm(em.randn(8, 16, 5, dtype=em.float64)).numpy()
    const = np.isclose(z, a_for(0.5) * ap - a_for(0.5) * ap * 0.5)
    assert all(row.all() or not row.any() for row in const.reshape(128, 5))
    assert gradcheck(lambda t: F.alpha_dropout(t, 0.0, True), (t64(3, grad=True),))


def a_for(p):
    ap = -1.7580993408473766
    return ((1 - p) * (1 + p * ap * ap)) ** -0.5


def test_dropout3d_and_dropout2d_ranks():
    y = nn.Dropout3d(0.5)(em.ones(4, 6, 2, 2, 2)).numpy().reshape(24, 8)
    assert all(len(set(r)) == 1 for r in y)
    assert len({len(set(r)) for r in y}) == 1 and {r[0] for r in y} <= {0.0, 2.0}
    # unbatched (C, D, H, W)
    y = nn.Dropout3d(0.5)(em.ones(6, 2, 2, 2)).numpy().reshape(6, 8)
    assert all(len(set(r)) == 1 for r in y)
    # Dropout2d on 2-D input: PyTorch warns and drops per element
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = nn.Dropout2d(0.5)(em.ones(50, 40)).numpy()
    assert any("Received a 2-D input to dropout2d" in str(x.message) for x in w)
    assert 0.35 < (y == 0).mean() < 0.65
    assert len({tuple(r) for r in y}) > 40        # rows differ: not one draw per row
    # 3-D input to dropout2d: taken as (N, C, L), with PyTorch's warning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = nn.Dropout2d(0.5)(em.ones(4, 6, 5)).numpy().reshape(24, 5)
    assert any("assuming that channel-wise 1D dropout" in str(x.message) for x in w)
    assert all(len(set(r)) == 1 for r in y)
    assert nn.Dropout3d(0.5).eval()(em.ones(2, 2, 2, 2)).tolist() == em.ones(2, 2, 2, 2).tolist()


# ----------------------------------------------------------------------------- lazy

def test_lazy_linear_becomes_linear_and_keeps_parameter_objects():
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params()
    w = m.weight
    opt = em.optim.SGD(m.parameters(), lr=0.1)
    x = em.randn(2, 5)
    y = m(x)
    assert type(m) is nn.Linear and m.in_features == 5 and tuple(y.shape) == (2, 3)
    assert m.weight is w and tuple(w.shape) == (3, 5)
    assert float(w.abs().max()) <= 1 / np.sqrt(5) + 1e-7
    y.sum().backward()
    before = w.detach().clone()
    opt.step()
    assert not np.allclose(before.numpy(), w.detach().numpy())
    np.testing.assert_allclose(m(x).detach().numpy(),
                               x.numpy() @ w.detach().numpy().T + m.bias.detach().numpy(),
                               rtol=1e-5)


def test_lazy_conv_and_norms():
    c = nn.LazyConv2d(4, 3, padding=1)
    assert c(em.randn(2, 3, 5, 5)).shape == (2, 4, 5, 5)
    assert type(c) is nn.Conv2d and c.in_channels == 3 and tuple(c.weight.shape) == (4, 3, 3, 3)
    c1 = nn.LazyConv1d(4, 2, groups=2)
    assert c1(em.randn(6, 7)).shape == (4, 6)       # unbatched: channels at dim 0
    assert type(c1) is nn.Conv1d and tuple(c1.weight.shape) == (4, 3, 2)
    t = nn.LazyConvTranspose2d(5, 2, stride=2)
    assert t(em.randn(1, 3, 4, 4)).shape == (1, 5, 8, 8)
    assert type(t) is nn.ConvTranspose2d and tuple(t.weight.shape) == (3, 5, 2, 2)
    t1 = nn.LazyConvTranspose1d(2, 3)
    assert t1(em.randn(1, 4, 5)).shape == (1, 2, 7) and type(t1) is nn.ConvTranspose1d
    for cls, real, shape in ((nn.LazyBatchNorm1d, nn.BatchNorm1d, (4, 3)),
                             (nn.LazyBatchNorm2d, nn.BatchNorm2d, (4, 3, 2, 2)),
                             (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 2, 2))):
        b = cls()
        out = b(t64(*shape))
        assert type(b) is real and b.num_features == 3 and tuple(out.shape) == shape
        assert tuple(b.running_mean.shape) == (3,) and b.weight.tolist() == [1.0] * 3
    i = nn.LazyInstanceNorm2d(affine=True)
    assert i(t64(3, 4, 4)).shape == (3, 4, 4)       # unbatched (C, H, W)
    assert type(i) is nn.InstanceNorm2d and i.num_features == 3
    for n in (1, 3):
        m = getattr(nn, f"LazyInstanceNorm{n}d")()
        m(t64(2, 5, *(3,) * n))
        assert type(m) is getattr(nn, f"InstanceNorm{n}d") and m.num_features == 5
    with pytest.raises(ValueError, match="LazyConv2d: expected 3D"):
        nn.LazyConv2d(4, 3)(em.randn(3, 5))
    with pytest.raises(ValueError, match="LazyInstanceNorm2d: expected 3D or 4D input"):
        nn.LazyInstanceNorm2d()(em.randn(3))
    with pytest.raises(ValueError, match="LazyBatchNorm1d: cannot infer num_features"):
        nn.LazyBatchNorm1d()(em.randn(3))


# ------------------------------------------------------------------------- pooling

def test_lp_pool():
    x = em.from_numpy(np.abs(arr(2, 3, 7))).requires_grad_()
    m = nn.LPPool1d(2, 3, stride=2)
    assert repr(m) == "LPPool1d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)"
    xn = x.detach().numpy()
    want = np.stack([np.sqrt((xn[..., i:i + 3] ** 2).sum(-1)) for i in range(0, 5, 2)], -1)
    np.testing.assert_allclose(m(x).detach().numpy(), want)
    y = em.from_numpy(np.abs(arr(1, 2, 4, 5))).requires_grad_()
    yn = y.detach().numpy()
    m2 = nn.LPPool2d(3, (2, 2))
    want = np.zeros((1, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[..., i, j] = ((yn[..., 2 * i:2 * i + 2, 2 * j:2 * j + 2] ** 3).sum((-1, -2))) \
                ** (1 / 3)
    np.testing.assert_allclose(m2(y).detach().numpy(), want)
    assert gradcheck(lambda a: F.lp_pool1d(a, 2, 3, 2), (x,))
    assert gradcheck(lambda a: F.lp_pool2d(a, 3, 2), (y,))


def test_max_unpool():
    x = t64(2, 3, 4, 6)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    m = nn.MaxUnpool2d(2)
    assert repr(m) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    un = m(out, idx)
    xn = x.numpy()
    block = xn.reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 2, 3, 4)
    want = np.zeros_like(xn)
    keep = xn == np.repeat(np.repeat(block.max(-1), 2, -2), 2, -1)
    want[keep] = xn[keep]
    np.testing.assert_array_equal(un.numpy(), want)
    # output_size may be one more than the default, within a stride
    out5, idx5 = F.max_pool2d(t64(1, 1, 5, 5), 2, return_indices=True)
    assert tuple(m(out5, idx5, output_size=(5, 5)).shape) == (1, 1, 5, 5)
    assert tuple(m(out5, idx5, output_size=(1, 1, 5, 5)).shape) == (1, 1, 5, 5)
    with pytest.raises(ValueError, match="max_unpool2d: invalid output_size"):
        m(out5, idx5, output_size=(7, 7))
    o1, i1 = F.max_pool1d(t64(2, 8).abs() + 1, 2, return_indices=True)   # unbatched (C, L)
    u1 = nn.MaxUnpool1d(2)(o1, i1)
    assert tuple(u1.shape) == (2, 8)
    np.testing.assert_array_equal(F.max_pool1d(u1, 2).numpy(), o1.numpy())
    assert gradcheck(lambda a: F.max_unpool2d(a, idx, 2), (out.detach().requires_grad_(),))


def test_max_unpool3d_puts_each_max_back():
    x = t64(2, 3, 4, 4, 6)
    out, idx = F.max_pool3d(x, 2, return_indices=True)
    m = nn.MaxUnpool3d(2)
    assert repr(m) == ("MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), "
                       "padding=(0, 0, 0))")
    un = m(out, idx)
    xn = x.numpy()
    blocks = xn.reshape(2, 3, 2, 2, 2, 2, 3, 2).max(axis=(3, 5, 7))
    keep = xn == np.repeat(np.repeat(np.repeat(blocks, 2, -3), 2, -2), 2, -1)
    want = np.where(keep, xn, 0.0)
    np.testing.assert_array_equal(un.numpy(), want)
    np.testing.assert_array_equal(F.max_pool3d(un, 2).numpy(), out.numpy())
    with pytest.raises(ValueError, match="max_unpool3d: invalid output_size"):
        m(out, idx, output_size=(9, 9, 9))
    assert gradcheck(lambda a: F.max_unpool3d(a, idx, 2), (out.detach().requires_grad_(),))


@pytest.mark.parametrize("device", DEVICES)
def test_on_device(device):
    w = em.randn(10, 3)
    idx, off = em.tensor([1, 2, 4, 5, 4, 3]), em.tensor([0, 2])
    for mode in ("sum", "mean", "max"):
        want = F.embedding_bag(idx, w, off, mode=mode).numpy()
        got = F.embedding_bag(idx.to(device), w.to(device), off.to(device), mode=mode)
        assert got.device.type == device
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    a, b = em.randn(4, 5), em.randn(4, 5)
    for fn in (F.cosine_similarity, F.pairwise_distance):
        np.testing.assert_allclose(fn(a.to(device), b.to(device)).cpu().numpy(),
                                   fn(a, b).numpy(), rtol=1e-5)
    x = em.rand(1, 2, 4, 4)
    np.testing.assert_allclose(F.lp_pool2d(x.to(device), 2, 2).cpu().numpy(),
                               F.lp_pool2d(x, 2, 2).numpy(), rtol=1e-5)
    out, ind = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(F.max_unpool2d(out.to(device), ind.to(device), 2).cpu()
                                  .numpy(), F.max_unpool2d(out, ind, 2).numpy())
    y = nn.AlphaDropout(0.5)(em.randn(100, device=device))
    assert y.device.type == device
    lazy = nn.LazyLinear(2).to(device)
    assert lazy(em.randn(3, 4, device=device)).device.type == device
    assert lazy.weight.device.type == device


def test_lazy_modules_load_a_state_dict_before_the_first_call():
    src = nn.Sequential(nn.Linear(5, 3), nn.Conv1d(3, 4, 2), nn.BatchNorm1d(4),
                        nn.ConvTranspose1d(4, 2, 3))
    lazy = nn.Sequential(nn.LazyLinear(3), nn.LazyConv1d(4, 2), nn.LazyBatchNorm1d(),
                         nn.LazyConvTranspose1d(2, 3))
    lazy.load_state_dict(src.state_dict())
    assert [type(m) for m in lazy] == [nn.Linear, nn.Conv1d, nn.BatchNorm1d,
                                       nn.ConvTranspose1d]
    assert lazy[0].in_features == 5 and lazy[1].in_channels == 3 and \
        lazy[2].num_features == 4 and lazy[3].in_channels == 4
    for (k, a), b in zip(src.state_dict().items(), lazy.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    x = em.randn(2, 3, 5)
    src.eval()
    lazy.eval()
    np.testing.assert_allclose(lazy[1:](x).detach().numpy(), src[1:](x).detach().numpy())
