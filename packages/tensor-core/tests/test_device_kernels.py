"""The hand-written kernels on every non-CPU device (opencl on PoCL in CI, cuda where a
GPU is present) against the CPU kernels, which their own test modules check against
NumPy references: the same public ops on the same values give the same results (floats
within float32 tolerance; indices, masks, random numbers, sorts exactly), over drawn
shapes, strides and dtypes; gradients through the device kernels are gradchecked."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
import ember.nn.functional as F
from ember_testing import assert_close, fewer_examples, to_numpy

HYP = dict(max_examples=fewer_examples(4), deadline=None)


@pytest.fixture(scope="session")
def dev(device):
    if device.type == "cpu":
        pytest.skip("compares a device with the CPU")
    return device


def same(dev, fn, *arrays, exact=False, rtol=2e-5, atol=2e-6):
    """fn on CPU tensors and on device tensors made from `arrays` agree."""
    cpu_in = [em.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    dev_in = [t.to(dev) for t in cpu_in]
    want, got = fn(*cpu_in), fn(*dev_in)
    wants = want if isinstance(want, (tuple, list)) else (want,)
    gots = got if isinstance(got, (tuple, list)) else (got,)
    for w, g in zip(wants, gots):
        assert g.device.type == em.device(dev).type, f"result on {g.device}, expected {dev}"
        if exact or w.dtype.kind != "float":
            assert_close(g, to_numpy(w), w.dtype, rtol=0, atol=0)
        else:
            assert_close(g, to_numpy(w), w.dtype, rtol=rtol, atol=atol)


floats = st.sampled_from([np.float32, np.float64])
small = st.integers(1, 9)


@settings(**HYP)
@given(m=small, k=st.integers(1, 70), n=small, batch=st.sampled_from([(), (2,), (3, 1)]),
       transpose=st.booleans(), dt=floats, seed=st.integers(0, 2 ** 31))
def test_matmul(dev, m, k, n, batch, transpose, dt, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, k)).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    same(dev, (lambda x, y: x @ y.T.T) if not transpose else
         (lambda x, y: (y.T @ x.transpose(-1, -2)).transpose(-1, -2)), a, b, rtol=1e-4, atol=1e-5)


@settings(**HYP)
@given(n=st.integers(1, 3), groups=st.sampled_from([1, 2]), cg=st.integers(1, 3),
       ocg=st.integers(1, 3), hw=st.tuples(st.integers(3, 9), st.integers(3, 9)),
       k=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 1),
       dilation=st.integers(1, 2), bias=st.booleans(), seed=st.integers(0, 2 ** 31))
def test_conv2d_forward_and_backward(dev, n, groups, cg, ocg, hw, k, stride, padding,
                                     dilation, bias, seed):
    if (k - 1) * dilation + 1 > min(hw) + 2 * padding:
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, cg * groups) + hw).astype(np.float32)
    w = rng.standard_normal((ocg * groups, cg, k, k)).astype(np.float32)
    b = rng.standard_normal(ocg * groups).astype(np.float32)

    def run(x, w, b):
        x, w, b = (t.requires_grad_() for t in (x, w, b))
        y = F.conv2d(x, w, b if bias else None, stride=stride, padding=padding,
                     dilation=dilation, groups=groups)
        (y * y).sum().backward()
        return y.detach(), x.grad, w.grad, b.grad if bias else w.grad
    same(dev, run, x, w, b, rtol=1e-4, atol=1e-4)


@settings(**HYP)
@given(shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9),
                       st.integers(1, 9)),
       k=st.integers(1, 3), stride=st.integers(1, 3), padding=st.integers(0, 1),
       kind=st.sampled_from(["max", "avg", "avg_pad", "adaptive_avg", "adaptive_max"]),
       seed=st.integers(0, 2 ** 31))
def test_pooling_forward_and_backward(dev, shape, k, stride, padding, kind, seed):
    if padding * 2 > k or k > min(shape[2:]) + 2 * padding:
        return
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

    def run(x):
        x = x.requires_grad_()
        if kind == "max":
            y, i = F.max_pool2d(x, k, stride, padding, return_indices=True)
        elif kind == "adaptive_max":
            y, i = F.adaptive_max_pool2d(x, (2, 3), return_indices=True)
        elif kind == "adaptive_avg":
            y, i = F.adaptive_avg_pool2d(x, (2, 3)), None
        else:
            y, i = F.avg_pool2d(x, k, stride, padding, count_include_pad=kind == "avg_pad"), None
        (y * y).sum().backward()
        return (y.detach(), x.grad) + ((i,) if i is not None else ())
    same(dev, run, x)


@settings(**HYP)
@given(rows=st.integers(1, 5), n=st.integers(1, 300), log=st.booleans(), dt=floats,
       seed=st.integers(0, 2 ** 31))
def test_softmax_and_backward(dev, rows, n, log, dt, seed):
    x = (np.random.default_rng(seed).standard_normal((rows, n)) * 4).astype(dt)

    def run(x):
        x = x.requires_grad_()
        y = (F.log_softmax if log else F.softmax)(x, 1)
        (y * y).sum().backward()
        return y.detach(), x.grad
    same(dev, run, x, rtol=1e-4, atol=1e-5)


@settings(**HYP)
@given(rows=st.integers(1, 6), C=st.integers(1, 40), weighted=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.2]), ignore=st.booleans(),
       reduction=st.sampled_from(["mean", "sum", "none"]), seed=st.integers(0, 2 ** 31))
def test_cross_entropy_and_nll(dev, rows, C, weighted, smoothing, ignore, reduction, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, C)).astype(np.float32)
    t = rng.integers(0, C, rows)
    if ignore:
        t[0] = -100
    w = rng.random(C).astype(np.float32) + 0.5

    def run(x, t, w):
        x = x.requires_grad_()
        wt = w if weighted else None
        a = F.cross_entropy(x, t, wt, reduction=reduction, label_smoothing=smoothing)
        b = F.nll_loss(F.log_softmax(x, 1), t, wt, reduction=reduction)
        (a.sum() + b.sum()).backward()
        return a.detach(), b.detach(), x.grad
    same(dev, run, x, t, w, rtol=1e-4, atol=1e-5)


def test_bad_target_is_reported_at_the_next_read(dev):
    x = em.zeros((2, 3), device=dev)
    with pytest.raises(IndexError, match="target 5 is out of bounds for 3 classes"):
        F.cross_entropy(x, em.tensor([0, 5], device=dev)).item()
    assert F.cross_entropy(x, em.tensor([0, 2], device=dev)).item() == pytest.approx(np.log(3))


@settings(**HYP)
@given(shape=st.tuples(st.integers(1, 9), st.integers(1, 9)), p=st.sampled_from([0.1, 0.5]),
       seed=st.integers(0, 2 ** 31), gen_seed=st.integers(0, 2 ** 31))
def test_dropout_draws_the_cpu_mask(dev, shape, p, seed, gen_seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

    def run(x):
        em.manual_seed(gen_seed)
        x = x.requires_grad_()
        y = F.dropout(x, p)
        y.sum().backward()
        return y.detach(), x.grad
    same(dev, run, x, exact=True)


@settings(**HYP)
@given(n=st.integers(0, 40), dt=st.sampled_from(["float16", "float32", "float64"]),
       seed=st.integers(0, 2 ** 40))
def test_random_numbers_equal_the_cpu(dev, n, dt, seed):
    d = getattr(em, dt)
    # uniform numbers, integers and permutations are bit for bit the CPU's; normal and
    # exponential go through log/cos, which a device's math library may round an ulp
    # apart from the CPU's
    for make, ulps in ((lambda dv: em.rand(n, dtype=d, device=dv), 0),
                       (lambda dv: em.empty(n, dtype=d, device=dv).uniform_(-2, 3), 0),
                       (lambda dv: em.randint(-5, 7, (n,), device=dv), 0),
                       (lambda dv: em.randint(-2 ** 40, 2 ** 40, (n,), device=dv), 0),
                       (lambda dv: em.randperm(n, device=dv), 0),
                       (lambda dv: em.randn(n, dtype=d, device=dv), 4),
                       (lambda dv: em.empty(n, dtype=d, device=dv).exponential_(1.5), 4)):
        em.manual_seed(seed)
        want = make("cpu")
        em.manual_seed(seed)
        got = make(dev)
        tol = ulps * float(np.finfo(dt).eps) if want.dtype.kind == "float" else 0
        assert_close(got, to_numpy(want), want.dtype, rtol=tol, atol=tol)


@settings(**HYP)
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 40)), dt=st.sampled_from(
    ["int8", "int64", "float16", "float32", "float64"]), descending=st.booleans(),
    nan=st.booleans(), seed=st.integers(0, 2 ** 31))
def test_sort_topk_searchsorted_cumsum(dev, shape, dt, descending, nan, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 4, shape).astype(dt)     # ties: the sort must be stable
    if nan and dt.startswith("float"):
        x[0, 0] = np.nan
    seq = np.sort(rng.integers(-4, 4, 7)).astype(dt)

    def run(x, seq):
        s = em.sort(x, 1, descending=descending)
        k = min(3, shape[1])
        return (s.values, s.indices, em.sort(x, 0, stable=True).indices,
                em.topk(x, k, 1).indices, em.searchsorted(seq, x),
                em.searchsorted(seq, x, right=True), em.argmax(x, 1),
                em.cumsum(x.to(em.float64 if dt == "float64" else em.float32), 1),
                em.cumsum(x, 0) if dt == "int64" else em.cumprod(x.to(em.float64), 0))
    same(dev, run, x, seq, rtol=1e-5, atol=1e-5)


@settings(**HYP)
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 6)), seed=st.integers(0, 2 ** 31),
       dt=st.sampled_from(["bool", "int16", "float16", "float32", "float64"]))
def test_indexing_gather_scatter(dev, shape, seed, dt):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 5).astype(dt)
    rows = rng.integers(-shape[0], shape[0], 4)
    cols = rng.integers(0, shape[1], 4)
    g = rng.integers(0, shape[1], shape)
    src = (rng.standard_normal(shape) * 5).astype(dt)

    def run(x, rows, cols, g, src):
        y = x.clone()
        y[rows] = src[:min(4, shape[0])][:1]
        z = x.clone()
        z.scatter_(1, g, src)
        out = [x[rows], x[:, cols], x[rows, cols], x[x != 0], em.nonzero(x != 0),
               em.gather(x, 1, g), y, z, x.T[cols]]
        if dt.startswith("float"):
            a = x.clone()
            a.index_add_(0, rows % shape[0], src[:1].expand(4, shape[1]))
            out.append(a)
            out.append(x.clone().scatter_reduce_(1, g, src, "amax"))
        return out
    same(dev, run, x, rows, cols, g, src)


def test_bad_index_raises_at_the_next_sync(dev, monkeypatch):
    # checked on the device: the op's IndexError (its name, the value, the size) comes
    # at the next synchronizing read (cpu, item, synchronize), the first bad check's
    x = em.arange(12.0, device=dev).reshape(3, 4)
    with pytest.raises(IndexError, match="getitem: index 3 is out of bounds for dim 0 "
                                         "with size 3"):
        y = x[em.tensor([0, 3], device=dev)]
        x[:, em.tensor([-5], device=dev)]           # a second bad one: the first is named
        y.cpu()
    with pytest.raises(IndexError, match="embedding: index -1 is out of bounds"):
        F.embedding(em.tensor([1, -1], device=dev), x)
        em.accelerator.synchronize(dev)
    # the flag is clear again: correct ops read back correctly
    np.testing.assert_array_equal(x[em.tensor([2, -1], device=dev)].cpu().numpy(),
                                  np.arange(12.0).reshape(3, 4)[[2, -1]])
    monkeypatch.setenv("EMBER_SYNC", "1")             # at the line, as on the CPU
    with pytest.raises(IndexError, match="index_select: index 7 is out of bounds"):
        x.index_select(1, em.tensor([7], device=dev))


def test_checked_step_reads_once(dev):
    # embedding's and cross entropy's index checks, forward and backward, cost no host
    # read of their own: their flag rides with the loss's read
    w = em.randn(5, 3, device=dev, requires_grad=True)
    i, t = em.tensor([[0, 4], [2, 3]], device=dev), em.tensor([0, 1, 2, 2], device=dev)
    backend = em._C.core.backend_for(em.device(dev))
    backend.reset_counters()
    loss = F.cross_entropy(F.embedding(i, w).reshape(-1, 3), t)
    loss.backward()
    value = loss.item()
    c = backend.counters()
    assert (c["host_transfers"], c["check_reads"]) == (1, 0)
    ref = F.cross_entropy(F.embedding(i.cpu(), w.detach().cpu()).reshape(-1, 3),
                          em.tensor([0, 1, 2, 2]))
    assert value == pytest.approx(ref.item(), rel=1e-6)


def test_gradcheck_on_the_device(dev):
    """Derivatives of ops over hand-written kernels, through the device, in float64."""
    from ember.autograd import gradcheck
    rng = np.random.default_rng(0)

    def t(*shape):
        return em.from_numpy(rng.standard_normal(shape)).to(dev).requires_grad_()
    x, w, b = t(2, 2, 5, 5), t(3, 2, 3, 3), t(3)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2), (x, w, b))
    assert gradcheck(lambda x: F.max_pool2d(x, 2, 1), (t(1, 2, 4, 4),))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1), (t(1, 2, 5, 5),))
    assert gradcheck(lambda a, b: a @ b, (t(2, 3, 4), t(4, 5)))
    assert gradcheck(lambda x: F.log_softmax(x, 1), (t(3, 6),))
    target = em.tensor([1, 0, 4], device=dev)
    assert gradcheck(lambda x: F.cross_entropy(x, target, label_smoothing=0.1), (t(3, 6),))
    assert gradcheck(lambda x: em.cumsum(x, 1), (t(3, 6),))


@settings(max_examples=fewer_examples(8), deadline=None)
@given(rows=st.sampled_from([1, 3]), n=st.integers(1 << 15, 1 << 17),
       dt=st.sampled_from(["bool", "int8", "float32"]), seed=st.integers(0, 2 ** 31))
def test_long_reductions_in_two_passes(dev, rows, n, dt, seed):
    """Few outputs over many elements take the split path (parts, then a second pass);
    checked against NumPy itself."""
    rng = np.random.default_rng(seed)
    a = (rng.integers(-100, 100, (rows, n)) if dt != "float32"
         else rng.standard_normal((rows, n))).astype(dt)
    x = em.from_numpy(a).to(dev)
    assert_close(x.sum(1), a.sum(1, dtype=np.int64 if dt != "float32" else np.float64),
                 em.int64 if dt != "float32" else em.float32, rtol=1e-5, atol=1e-3)
    assert_close(x.amax(1), a.max(1), getattr(em, dt))
    assert_close(x.any(1), a.any(1), em.bool)
    assert_close((x > 0).all(1), (a > 0).all(1), em.bool)
    assert_close((x > 0).sum(), (a > 0).sum(), em.int64)
