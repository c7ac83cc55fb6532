"""Issue 18: CTCLoss (against a brute-force sum over every alignment for tiny sizes),
PoissonNLLLoss, GaussianNLLLoss, MarginRankingLoss, HingeEmbeddingLoss,
CosineEmbeddingLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, MultiMarginLoss,
MultiLabelMarginLoss, MultiLabelSoftMarginLoss and SoftMarginLoss against NumPy
references of PyTorch's documented formulas; gradients by gradcheck in float64."""
import itertools
import math

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


def arr(*shape, seed=0, lo=-2, hi=2):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def t64(*shape, seed=0, grad=False, lo=-2, hi=2):
    return em.from_numpy(arr(*shape, seed=seed, lo=lo, hi=hi)).requires_grad_(grad)


def reduce(loss, reduction):
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def log_softmax_np(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# ----------------------------------------------------------------------------- CTC

def collapse(path, blank):
    out, prev = [], None
    for s in path:
        if s != prev and s != blank:
            out.append(s)
        prev = s
    return out


def brute_ctc(lp, target, blank):
    """-log sum over all length-T label paths that collapse to target of prod p."""
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        if collapse(path, blank) == list(target):
            total += math.exp(sum(lp[t, s] for t, s in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_matches_brute_force(blank):
    T, N, C = 5, 4, 3
    lp = log_softmax_np(arr(T, N, C), 2)
    labels = [c for c in range(C) if c != blank]
    targets = [[labels[0], labels[1]], [labels[1], labels[1]], [labels[0]], []]
    in_len = [5, 4, 5, 3]
    tg_len = [len(t) for t in targets]
    want = np.array([brute_ctc(lp[:in_len[n], n], targets[n], blank) for n in range(N)])
    padded = em.tensor([t + [blank] * (2 - len(t)) for t in targets])
    got = F.ctc_loss(em.from_numpy(lp), padded, in_len, tg_len, blank=blank,
                     reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    # 1-D concatenated targets and tensor lengths give the same
    flat = em.tensor([s for t in targets for s in t])
    got1 = F.ctc_loss(em.from_numpy(lp), flat, em.tensor(in_len), em.tensor(tg_len),
                      blank=blank, reduction="none")
    np.testing.assert_allclose(got1.numpy(), want, rtol=1e-10)
    m = nn.CTCLoss(blank=blank)
    np.testing.assert_allclose(float(m(em.from_numpy(lp), padded, in_len, tg_len)),
                               (want / np.maximum(tg_len, 1)).mean(), rtol=1e-10)
    np.testing.assert_allclose(float(nn.CTCLoss(blank, "sum")(em.from_numpy(lp), padded,
                                                               in_len, tg_len)),
                               want.sum(), rtol=1e-10)


def test_ctc_gradcheck_unbatched_and_infinity():
    T, N, C = 4, 2, 3
    targets = em.tensor([[1, 2], [1, 1]])
    # the gradient of the loss w.r.t. raw scores through log_softmax
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), targets, [4, 4], [2, 2]),
                     (t64(T, N, C, grad=True),))
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), targets, [4, 3], [2, 1],
                                          reduction="none"),
                     (t64(T, N, C, seed=1, grad=True),))
    lp = log_softmax_np(arr(T, C), 1)
    got = F.ctc_loss(em.from_numpy(lp), em.tensor([1, 2]), [4], [2], reduction="none")
    assert got.ndim == 0
    np.testing.assert_allclose(float(got), brute_ctc(lp, [1, 2], 0), rtol=1e-10)
    # [1, 1] needs a blank between the 1s: 3 steps; 2 are too few -> inf
    x = t64(2, 1, C, grad=True)
    loss = F.ctc_loss(x.log_softmax(2), em.tensor([[1, 1]]), [2], [2], reduction="sum")
    assert float(loss) == math.inf
    x2 = t64(2, 1, C, grad=True)
    loss = F.ctc_loss(x2.log_softmax(2), em.tensor([[1, 1]]), [2], [2], reduction="sum",
                      zero_infinity=True)
    assert float(loss) == 0.0
    loss.backward()
    assert x2.grad.tolist() == [[[0.0] * C]] * 2
    with pytest.raises(ValueError, match="ctc_loss: input_lengths must be at most"):
        F.ctc_loss(x.log_softmax(2), em.tensor([[1]]), [3], [1])
    with pytest.raises(ValueError, match="ctc_loss: 1-D targets must have"):
        F.ctc_loss(x.log_softmax(2), em.tensor([1, 2, 1]), [2], [1])


# --------------------------------------------------------------- regression losses

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_poisson_nll(reduction):
    x, y = t64(3, 4), t64(3, 4, seed=1, lo=0, hi=4)
    xn, yn = x.numpy(), y.numpy()
    got = nn.PoissonNLLLoss(reduction=reduction)(x, y)
    np.testing.assert_allclose(got.numpy(), reduce(np.exp(xn) - yn * xn, reduction))
    xp = t64(3, 4, lo=0.1, hi=3)
    want = xp.numpy() - yn * np.log(xp.numpy() + 1e-8)
    stirling = np.where(yn > 1, yn * np.log(yn) - yn + 0.5 * np.log(2 * np.pi * yn), 0)
    got = F.poisson_nll_loss(xp, y, log_input=False, full=True, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), reduce(want + stirling, reduction))
    assert gradcheck(lambda a: F.poisson_nll_loss(a, y, full=True), (t64(3, 4, grad=True),))


def test_gaussian_nll():
    x, y = t64(4, 3), t64(4, 3, seed=1)
    var = t64(4, 3, seed=2, lo=0.1, hi=2)
    xn, yn, vn = x.numpy(), y.numpy(), var.numpy()
    m = nn.GaussianNLLLoss()
    want = 0.5 * (np.log(vn) + (xn - yn) ** 2 / vn)
    np.testing.assert_allclose(m(x, y, var).numpy(), want.mean())
    full = nn.GaussianNLLLoss(full=True, reduction="sum")
    np.testing.assert_allclose(full(x, y, var).numpy(), (want + 0.5 * np.log(2 * np.pi)).sum())
    # one variance per sample: var (N,) or (N, 1); a float
    v1 = t64(4, seed=3, lo=0.1, hi=2)
    want1 = 0.5 * (np.log(v1.numpy()[:, None]) + (xn - yn) ** 2 / v1.numpy()[:, None])
    np.testing.assert_allclose(m(x, y, v1).numpy(), want1.mean())
    np.testing.assert_allclose(m(x, y, v1.reshape(4, 1)).numpy(), want1.mean())
    np.testing.assert_allclose(m(x, y, 0.5).numpy(),
                               (0.5 * (np.log(0.5) + (xn - yn) ** 2 / 0.5)).mean())
    # var below eps is clamped for the value
    small = em.full((4, 3), 1e-9, dtype=em.float64)
    np.testing.assert_allclose(F.gaussian_nll_loss(x, y, small, reduction="none").numpy(),
                               0.5 * (np.log(1e-6) + (xn - yn) ** 2 / 1e-6))
    assert gradcheck(lambda a, v: F.gaussian_nll_loss(a, y, v),
                     (t64(4, 3, grad=True), t64(4, 3, seed=2, lo=0.5, hi=2, grad=True)))
    with pytest.raises(ValueError, match="var has negative entry"):
        m(x, y, -var)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        m(x, y, t64(3, seed=3))


# ------------------------------------------------------------------ margin losses

def test_margin_ranking_hinge_soft_margin():
    a, b = t64(6), t64(6, seed=1)
    y = em.tensor([1.0, -1.0, 1.0, -1.0, 1.0, 1.0], dtype=em.float64)
    an, bn, yn = a.numpy(), b.numpy(), y.numpy()
    np.testing.assert_allclose(nn.MarginRankingLoss(0.5)(a, b, y).numpy(),
                               np.maximum(0, -yn * (an - bn) + 0.5).mean())
    assert gradcheck(lambda p, q: F.margin_ranking_loss(p, q, y, 0.5),
                     (t64(6, grad=True), t64(6, seed=1, grad=True)))
    np.testing.assert_allclose(nn.HingeEmbeddingLoss(1.5, reduction="none")(a, y).numpy(),
                               np.where(yn == 1, an, np.maximum(0, 1.5 - an)))
    assert gradcheck(lambda p: F.hinge_embedding_loss(p, y, 1.5), (t64(6, grad=True),))
    np.testing.assert_allclose(nn.SoftMarginLoss()(a, y).numpy(),
                               np.log1p(np.exp(-yn * an)).mean())
    assert gradcheck(lambda p: F.soft_margin_loss(p, y), (t64(6, grad=True),))


def test_cosine_embedding_loss():
    a, b = t64(5, 4), t64(5, 4, seed=1)
    y = em.tensor([1, -1, 1, -1, -1])
    an, bn, yn = a.numpy(), b.numpy(), y.numpy()
    cos = (an * bn).sum(1) / np.sqrt(((an ** 2).sum(1) + 1e-12) * ((bn ** 2).sum(1) + 1e-12))
    want = np.where(yn == 1, 1 - cos, np.maximum(0, cos - 0.1))
    np.testing.assert_allclose(nn.CosineEmbeddingLoss(0.1, reduction="none")(a, b, y).numpy(),
                               want)
    np.testing.assert_allclose(nn.CosineEmbeddingLoss(0.1)(a, b, y).numpy(), want.mean())
    np.testing.assert_allclose(F.cosine_embedding_loss(a[1], b[1], y[1], 0.1).numpy(), want[1])
    assert gradcheck(lambda p, q: F.cosine_embedding_loss(p, q, y, -0.5),
                     (t64(5, 4, grad=True), t64(5, 4, seed=1, grad=True)))


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_losses(swap):
    a, p, n = t64(5, 3), t64(5, 3, seed=1), t64(5, 3, seed=2)

    def d(x, y, order=2.0):
        return (np.abs(x - y + 1e-6) ** order).sum(-1) ** (1 / order)

    an, pn, nn_ = a.numpy(), p.numpy(), n.numpy()
    d_an = np.minimum(d(an, nn_), d(pn, nn_)) if swap else d(an, nn_)
    want = np.maximum(0, 1.0 + d(an, pn) - d_an)
    m = nn.TripletMarginLoss(swap=swap, reduction="none")
    np.testing.assert_allclose(m(a, p, n).numpy(), want)
    d1 = np.minimum(d(an, nn_, 1), d(pn, nn_, 1)) if swap else d(an, nn_, 1)
    np.testing.assert_allclose(nn.TripletMarginLoss(2.0, p=1, swap=swap)(a, p, n).numpy(),
                               np.maximum(0, 2.0 + d(an, pn, 1) - d1).mean())
    assert gradcheck(lambda x, y, z: F.triplet_margin_loss(x, y, z, swap=swap),
                     (t64(5, 3, grad=True), t64(5, 3, seed=1, grad=True),
                      t64(5, 3, seed=2, grad=True)))
    # with a distance function: the default is pairwise_distance
    wd = nn.TripletMarginWithDistanceLoss(swap=swap, reduction="none")
    np.testing.assert_allclose(wd(a, p, n).numpy(), want)

    def cos_dist(x, y):
        return 1 - F.cosine_similarity(x, y, dim=-1)

    def np_cos(x, y):
        return 1 - (x * y).sum(-1) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1))

    c_an = np.minimum(np_cos(an, nn_), np_cos(pn, nn_)) if swap else np_cos(an, nn_)
    wc = nn.TripletMarginWithDistanceLoss(distance_function=cos_dist, margin=0.5, swap=swap)
    np.testing.assert_allclose(wc(a, p, n).numpy(),
                               np.maximum(0, 0.5 + np_cos(an, pn) - c_an).mean())
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0)


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(p):
    x = t64(4, 5)
    y = em.tensor([0, 3, 4, 1])
    w = t64(5, seed=1, lo=0.5, hi=2)
    xn, yn, wn = x.numpy(), y.numpy(), w.numpy()
    want = np.zeros(4)
    for i in range(4):
        for j in range(5):
            if j != yn[i]:
                want[i] += wn[yn[i]] * max(0, 0.7 - xn[i, yn[i]] + xn[i, j]) ** p / 5
    m = nn.MultiMarginLoss(p=p, margin=0.7, weight=w, reduction="none")
    np.testing.assert_allclose(m(x, y).numpy(), want)
    np.testing.assert_allclose(F.multi_margin_loss(x[2], y[2], p, 0.7, w).numpy(), want[2])
    assert gradcheck(lambda a: F.multi_margin_loss(a, y, p, 0.7, w), (t64(4, 5, grad=True),))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(IndexError, match="multi_margin_loss: target values"):
        F.multi_margin_loss(x, em.tensor([0, 1, 2, 5]))


def test_multilabel_margin_loss():
    # PyTorch's documented example: loss 0.85
    x = em.tensor([[0.1, 0.2, 0.4, 0.8]], dtype=em.float64)
    y = em.tensor([[3, 0, -1, 1]])
    np.testing.assert_allclose(float(nn.MultiLabelMarginLoss()(x, y)), 0.85)
    xr = t64(3, 4)
    yr = em.tensor([[1, -1, 2, 0], [0, 2, 3, -1], [2, 1, 0, 3]])
    xn = xr.numpy()
    want = np.zeros(3)
    for n, row in enumerate(yr.tolist()):
        tg = []
        for v in row:
            if v < 0:
                break
            tg.append(v)
        for j in tg:
            for i in range(4):
                if i not in tg:
                    want[n] += max(0, 1 - (xn[n, j] - xn[n, i])) / 4
    np.testing.assert_allclose(F.multilabel_margin_loss(xr, yr, reduction="none").numpy(), want)
    np.testing.assert_allclose(F.multilabel_margin_loss(xr[1], yr[1]).numpy(), want[1])
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, yr), (t64(3, 4, grad=True),))


def test_multilabel_soft_margin_loss():
    x = t64(3, 4)
    y = em.from_numpy((arr(3, 4, seed=1) > 0).astype(np.float64))
    w = t64(4, seed=2, lo=0.5, hi=2)
    xn, yn, wn = x.numpy(), y.numpy(), w.numpy()

    def logsig(z):
        return -np.log1p(np.exp(-z))

    per = -(yn * logsig(xn) + (1 - yn) * logsig(-xn)) * wn
    np.testing.assert_allclose(nn.MultiLabelSoftMarginLoss(w, reduction="none")(x, y).numpy(),
                               per.mean(1))
    np.testing.assert_allclose(nn.MultiLabelSoftMarginLoss()(x, y).numpy(),
                               (-(yn * logsig(xn) + (1 - yn) * logsig(-xn))).mean(1).mean())
    assert gradcheck(lambda a: F.multilabel_soft_margin_loss(a, y, w), (t64(3, 4, grad=True),))


def test_losses_reprs_and_deprecated_reduce():
    assert repr(nn.CTCLoss()) == "CTCLoss()"
    assert repr(nn.SoftMarginLoss(reduction="sum")) == "SoftMarginLoss(reduction='sum')"
    with pytest.warns(UserWarning, match="size_average and reduce are deprecated"):
        m = nn.MarginRankingLoss(size_average=False)
    assert m.reduction == "sum"


@pytest.mark.parametrize("device", DEVICES)
def test_on_device(device):
    lp = em.from_numpy(log_softmax_np(arr(6, 2, 4), 2).astype(np.float32))
    tg = em.tensor([[1, 2, 2], [3, 1, 0]])
    want = F.ctc_loss(lp, tg, [6, 5], [3, 2]).numpy()
    got = F.ctc_loss(lp.to(device), tg.to(device), [6, 5], [3, 2])
    assert got.device.type == device
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5)
    a, b, c = (em.randn(4, 3) for _ in range(3))
    y = em.tensor([1.0, -1.0, 1.0, -1.0])
    k = em.tensor([0, 2, 1, 2])
    for fn, args in ((F.margin_ranking_loss, (a[:, 0], b[:, 0], y)),
                     (F.hinge_embedding_loss, (a[:, 0], y)),
                     (F.cosine_embedding_loss, (a, b, y)),
                     (F.triplet_margin_loss, (a, b, c)),
                     (F.multi_margin_loss, (a, k)),
                     (F.soft_margin_loss, (a[:, 0], y)),
                     (F.poisson_nll_loss, (a, b.abs())),
                     (F.gaussian_nll_loss, (a, b, c.abs() + 0.1)),
                     (F.multilabel_soft_margin_loss, (a, (b > 0).float())),
                     (F.multilabel_margin_loss, (a, em.tensor([[0, -1, 0]] * 4)))):
        want = fn(*args).numpy()
        got = fn(*(t.to(device) for t in args))
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
