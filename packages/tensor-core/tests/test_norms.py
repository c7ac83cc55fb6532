"""layer_norm and batch_norm (kernels/cpu/norm.c) and their backward functions against
NumPy references written here, over shapes with odd sizes, dtypes and layouts; the
backward against finite differences of the forward in float64."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.ops.norm import batch_norm_backward, layer_norm_backward
from ember_testing import realize

SIDES = st.sampled_from([1, 2, 3, 7, 65])
SMALL = st.sampled_from([1, 2, 3, 5])
TOL = {"float16": 5e-3, "float32": 1e-4, "float64": 1e-10}
dtypes = st.sampled_from(["float16", "float32", "float64"])
layouts = st.sampled_from(["contiguous", "transposed", "strided"])


def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, 1 / np.sqrt(var + eps)


def np_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    """(y, new running mean, new running var) as PyTorch defines them."""
    x = x.astype(np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        mean = x.mean(axis=axes)
        var = x.var(axis=axes)
        n = x.size // x.shape[1]
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps)
    if w is not None:
        y = y * w.reshape(bshape)
    if b is not None:
        y = y + b.reshape(bshape)
    return y, rm, rv


def numeric_grad(f, x, g, eps=1e-6):
    """d sum(g * f(x)) / dx by central differences (x float64)."""
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = ((f(xp) - f(xm)) * g).sum() / (2 * eps)
    return num


def recorded(fn, *args, **kwargs):
    """fn's output and the (op, inputs, attrs) it handed the autograd recorder."""
    seen = []
    prev = em._core.set_recorder(lambda op, inputs, out, attrs: seen.append((op, inputs,
                                                                             attrs)))
    try:
        out = fn(*args, **kwargs)
    finally:
        em._core.set_recorder(prev)
    return out, seen


def close(got, want, dtype, scale=10):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


# layer_norm -------------------------------------------------------------------------

@given(lead=st.lists(SMALL, min_size=0, max_size=2), norm=st.lists(SIDES, min_size=1,
                                                                    max_size=2),
       dtype=dtypes, layout=layouts, affine=st.sampled_from(["none", "weight", "both"]),
       seed=st.integers(0, 2**31 - 1))
def test_layer_norm_matches_numpy(lead, norm, dtype, layout, affine, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + tuple(norm)
    # a large common offset: E[x^2] - E[x]^2 would lose every digit in float32
    x = (rng.standard_normal(shape) * 3 + (0 if dtype == "float16" else 1e4)).astype(dtype)
    t, x = realize(x, layout)
    w = rng.standard_normal(norm).astype(dtype) if affine != "none" else None
    b = rng.standard_normal(norm).astype(dtype) if affine == "both" else None
    y = em.layer_norm(t, norm, None if w is None else em.from_numpy(w),
                      None if b is None else em.from_numpy(b))
    want, _, _ = np_layer_norm(x, len(norm), w, b)
    assert y.dtype.name == dtype and tuple(y.shape) == shape
    close(y.numpy(), want, dtype, 30 if dtype == "float16" else 10)


def test_layer_norm_records_statistics():
    x = em.randn(2, 3, 4, dtype=em.float64).requires_grad_()
    w = em.randn(3, 4, dtype=em.float64)
    _, [(op, inputs, attrs)] = recorded(em.layer_norm, x, (3, 4), w, eps=1e-3)
    assert op == "layer_norm" and inputs[0] is x and inputs[1] is w and inputs[2] is None
    assert attrs["normalized_shape"] == (3, 4) and attrs["eps"] == 1e-3
    _, mean, rstd = np_layer_norm(x.detach().numpy(), 2, eps=1e-3)
    assert tuple(attrs["mean"].shape) == (2, 1, 1)
    np.testing.assert_allclose(attrs["mean"].numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(attrs["rstd"].numpy(), rstd, rtol=1e-12)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("shape,k", [((3, 5), 1), ((2, 3, 4), 2), ((1, 7), 1), ((6, 3), 1)])
def test_layer_norm_backward_matches_finite_differences(shape, k, affine):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    ns = shape[len(shape) - k:]
    w = rng.standard_normal(ns) if affine != "none" else None
    b = rng.standard_normal(ns) if affine == "both" else None
    g = rng.standard_normal(shape)
    E = lambda a: None if a is None else em.from_numpy(a)  # noqa: E731

    def f(xv=x, wv=w, bv=b):
        return em.layer_norm(E(xv), ns, E(wv), E(bv)).numpy()

    a = recorded(em.layer_norm, E(x).requires_grad_(), ns, E(w), E(b))[1][0][2]
    dx, dw, db = layer_norm_backward(E(g), E(x), ns, a["mean"], a["rstd"], E(w), E(b))
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)
    if w is not None:
        np.testing.assert_allclose(dw.numpy(), numeric_grad(lambda v: f(wv=v), w, g),
                                   rtol=1e-6, atol=1e-8)
    else:
        assert dw is None
    if b is not None:
        np.testing.assert_allclose(db.numpy(), numeric_grad(lambda v: f(bv=v), b, g),
                                   rtol=1e-6, atol=1e-8)
    else:
        assert db is None
    # output_mask skips what is not asked for
    assert layer_norm_backward(E(g), E(x), ns, a["mean"], a["rstd"], E(w), E(b),
                               (False, False, True))[:2] == (None, None)


@given(rows=SMALL, n=SIDES, dtype=st.sampled_from(["float16", "float32"]),
       seed=st.integers(0, 2**31 - 1))
def test_layer_norm_backward_low_precision(rows, n, dtype, seed):
    """float16/float32 backward against the float64 backward."""
    rng = np.random.default_rng(seed)
    x, g, w = rng.standard_normal((rows, n)), rng.standard_normal((rows, n)), \
        rng.standard_normal(n)
    res = []
    for d in (dtype, "float64"):
        xs, ws = em.from_numpy(x.astype(d)), em.from_numpy(w.astype(d))
        a = recorded(em.layer_norm, xs.requires_grad_(), n, ws)[1][0][2]
        out = layer_norm_backward(em.from_numpy(g.astype(d)), xs.detach(), (n,), a["mean"],
                                  a["rstd"], ws, None)
        assert out[0].dtype.name == d and out[2] is None
        res.append(out)
    for a, b in zip(res[0][:2], res[1][:2]):
        want = b.numpy()
        tol = TOL[dtype] * (30 if dtype == "float16" else 10) * max(1.0, np.abs(want).max())
        np.testing.assert_allclose(a.numpy().astype(np.float64), want, rtol=tol, atol=tol)


@given(lead=st.lists(SMALL, min_size=0, max_size=2), norm=st.lists(SIDES, min_size=1,
                                                                    max_size=2),
       dtype=st.sampled_from(["float16", "float32"]), layout=layouts,
       affine=st.sampled_from(["none", "weight", "both"]), seed=st.integers(0, 2**31 - 1))
def test_layer_norm_on_every_device_matches_numpy(device, lead, norm, dtype, layout, affine,
                                                  seed):
    """The forward (y, mean, rstd) and the three gradients on each device (OpenCL/CUDA:
    programs/norm.h, one launch forward and two backward) against NumPy in float64."""
    rng = np.random.default_rng(seed)
    shape, k = tuple(lead) + tuple(norm), len(norm)
    x = (rng.standard_normal(shape) * 3 + (0 if dtype == "float16" else 1e3)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    t, x = realize(x, layout)
    w = rng.standard_normal(norm).astype(dtype) if affine != "none" else None
    b = rng.standard_normal(norm).astype(dtype) if affine == "both" else None
    D = lambda a: None if a is None else em.from_numpy(a).to(device)   # noqa: E731
    xd = t.to(device).requires_grad_()          # (so layer_norm records its statistics)
    backend = em._C.core.backend_for(xd.device)
    launches = backend.counters()["launches"] if device.type != "cpu" else None
    y, seen = recorded(em.layer_norm, xd, norm, D(w), D(b))
    if launches is not None and dtype == "float32" and xd.is_contiguous():
        assert backend.counters()["launches"] - launches == 1
    want, mean, rstd = np_layer_norm(x, k, w, b)
    a = seen[0][2]
    close(y.detach().cpu().float().numpy(), want, dtype, 30 if dtype == "float16" else 10)
    close(a["mean"].cpu().float().numpy(), mean, "float32")
    np.testing.assert_allclose(a["rstd"].cpu().float().numpy(), rstd, rtol=TOL[dtype] * 10)
    dx, dw, db = layer_norm_backward(D(g), xd.detach(), norm, a["mean"], a["rstd"], D(w), D(b))
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    xhat = (x64 - mean) * rstd
    wg = g64 if w is None else g64 * w
    want_dx = rstd * (wg - wg.mean(axis=axes, keepdims=True)
                      - xhat * (wg * xhat).mean(axis=axes, keepdims=True))
    lead_axes = tuple(range(x.ndim - k))
    scale = max(1.0, np.abs(g64).sum(axis=lead_axes).max())
    tol = TOL[dtype] * (30 if dtype == "float16" else 10)
    # dx's terms are rstd * |wg| in size (and cancel for n = 2)
    np.testing.assert_allclose(dx.cpu().float().numpy(), want_dx, rtol=tol,
                               atol=tol * max(1.0, (rstd * np.abs(wg)).max()))
    if w is not None:
        np.testing.assert_allclose(dw.cpu().float().numpy(), (g64 * xhat).sum(axis=lead_axes),
                                   rtol=tol, atol=tol * scale)
    if b is not None:
        np.testing.assert_allclose(db.cpu().float().numpy(), g64.sum(axis=lead_axes),
                                   rtol=tol, atol=tol * scale)


def test_layer_norm_large_rows_threaded_and_deterministic():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((64, 4097)) + 100).astype(np.float32)
    w = rng.standard_normal(4097).astype(np.float32)
    want, _, _ = np_layer_norm(x, 1, w)
    nt = em.get_num_threads()
    try:
        em.set_num_threads(1)
        one = em.layer_norm(em.from_numpy(x), 4097, em.from_numpy(w)).numpy()
        em.set_num_threads(max(nt, 2))
        many = em.layer_norm(em.from_numpy(x), 4097, em.from_numpy(w)).numpy()
    finally:
        em.set_num_threads(nt)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(many, want, rtol=1e-4, atol=1e-4)


def test_layer_norm_backward_chunked_sums_match_numpy_and_thread_count():
    """Enough rows for several row chunks and columns for several blocks in the
    weight/bias gradient reduction."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((700, 1100)).astype(np.float32)
    g = rng.standard_normal((700, 1100)).astype(np.float32)
    w = rng.standard_normal(1100).astype(np.float32)
    _, mean, rstd = np_layer_norm(x, 1)
    xhat = (x - mean) * rstd
    a = recorded(em.layer_norm, em.from_numpy(x).requires_grad_(), 1100,
                 em.from_numpy(w))[1][0][2]
    nt = em.get_num_threads()
    out = []
    try:
        for t in (1, max(nt, 2)):
            em.set_num_threads(t)
            out.append([v.numpy() for v in layer_norm_backward(
                em.from_numpy(g), em.from_numpy(x), 1100, a["mean"], a["rstd"],
                em.from_numpy(w), em.from_numpy(w))])
    finally:
        em.set_num_threads(nt)
    for one, many in zip(*out):
        np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(out[0][1], (g * xhat).sum(0), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out[0][2], g.astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("bad,err,match", [
    (lambda: em.layer_norm(em.ones(2, 3), (4,)), ValueError, r"normalized_shape \(4,\) does "
                                                             r"not match.*\(2, 3\)"),
    (lambda: em.layer_norm(em.ones(3), (2, 3)), ValueError, "does not match"),
    (lambda: em.layer_norm(em.ones(2, 3), (3,), em.ones(4)), ValueError,
     r"weight must have shape \(3,\), got \(4,\)"),
    (lambda: em.layer_norm(em.ones(2, 3, dtype=em.int64), 3), TypeError,
     "layer_norm: input must be a floating point tensor"),
    (lambda: em.layer_norm([1.0, 2.0], 2), TypeError, "layer_norm: input must be a Tensor"),
    (lambda: em.layer_norm(em.ones(2, 3), "x"), TypeError, "normalized_shape must be"),
])
def test_layer_norm_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        bad()


# batch_norm -------------------------------------------------------------------------

@given(n=SMALL, c=st.sampled_from([1, 3, 7, 65]), spatial=st.lists(SMALL, max_size=2),
       dtype=dtypes, layout=layouts, training=st.booleans(), affine=st.booleans(),
       running=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_batch_norm_matches_numpy(n, c, spatial, dtype, layout, training, affine, running,
                                  seed):
    shape = (n, c) + tuple(spatial)
    if training and n * int(np.prod(spatial)) <= 1:
        n, shape = 2, (2, c) + tuple(spatial)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + (0 if dtype == "float16" else 1e3)).astype(dtype)
    t, x = realize(x, layout)
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    rm = rng.standard_normal(c).astype(dtype) if running or not training else None
    rv = rng.uniform(0.5, 2, c).astype(dtype) if running or not training else None
    erm = None if rm is None else em.from_numpy(rm.copy())
    erv = None if rv is None else em.from_numpy(rv.copy())
    y = em.batch_norm(t, erm, erv, None if w is None else em.from_numpy(w),
                      None if b is None else em.from_numpy(b), training, 0.3, 1e-4)
    want, wm, wv = np_batch_norm(x, None if rm is None else rm.astype(np.float64),
                                 None if rv is None else rv.astype(np.float64), w, b, training,
                                 0.3, 1e-4)
    assert y.dtype.name == dtype and tuple(y.shape) == shape
    close(y.numpy(), want, dtype, 30)
    if rm is not None:
        close(erm.numpy(), wm, dtype, 10)
        close(erv.numpy(), wv, dtype, 10)


def _bn_saved(x, w, b, rm, rv, training):
    return recorded(em.batch_norm, x.requires_grad_(), rm, rv, w, b, training)[1][0][2]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 2, 2, 3)])
def test_batch_norm_backward_matches_finite_differences(shape, affine, training):
    rng = np.random.default_rng(3)
    c = shape[1]
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    w = rng.standard_normal(c) if affine else None
    b = rng.standard_normal(c) if affine else None
    rm, rv = rng.standard_normal(c), rng.uniform(0.5, 2, c)
    E = lambda a: None if a is None else em.from_numpy(np.array(a))  # noqa: E731

    def f(xv=x, wv=w, bv=b):    # running stats copied: training updates them
        return em.batch_norm(E(xv), E(rm), E(rv), E(wv), E(bv), training).numpy()

    a = _bn_saved(E(x), E(w), E(b), E(rm), E(rv), training)
    assert a["training"] is training
    dx, dw, db = batch_norm_backward(E(g), E(x), E(w), a["mean"], a["invstd"], training, 1e-5)
    np.testing.assert_allclose(dx.numpy(), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)
    if affine:
        np.testing.assert_allclose(dw.numpy(), numeric_grad(lambda v: f(wv=v), w, g),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(db.numpy(), numeric_grad(lambda v: f(bv=v), b, g),
                                   rtol=1e-6, atol=1e-8)
    else:
        assert dw is None
        np.testing.assert_allclose(db.numpy(), g.sum(axis=(0,) + tuple(range(2, g.ndim))))
    assert batch_norm_backward(E(g), E(x), E(w), a["mean"], a["invstd"], training, 1e-5,
                               (True, False, False))[1:] == (None, None)


@given(n=st.sampled_from([2, 7]), c=st.sampled_from([1, 3, 65]), s=st.sampled_from([1, 9]),
       training=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_batch_norm_backward_float32(n, c, s, training, seed):
    rng = np.random.default_rng(seed)
    x, g = rng.standard_normal((n, c, s)), rng.standard_normal((n, c, s))
    w, rm, rv = rng.standard_normal(c), rng.standard_normal(c), rng.uniform(0.5, 2, c)
    res = []
    for d in ("float32", "float64"):
        E = lambda a: em.from_numpy(np.array(a, d))  # noqa: E731
        a = _bn_saved(E(x), E(w), None, E(rm), E(rv), training)
        res.append(batch_norm_backward(E(g), E(x), E(w), a["mean"], a["invstd"], training))
    for a, b in zip(res[0], res[1]):
        close(a.numpy(), b.numpy(), "float32", 30)


def test_batch_norm_large_channels_threaded():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((128, 96, 64)) + 50).astype(np.float32)
    rm, rv = np.zeros(96, np.float32), np.ones(96, np.float32)
    y = em.batch_norm(em.from_numpy(x), em.from_numpy(rm), em.from_numpy(rv), training=True)
    want, _, _ = np_batch_norm(x, rm.astype(np.float64), rv.astype(np.float64), None, None,
                               True, 0.1, 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad,err,match", [
    (lambda: em.batch_norm(em.ones(1, 3), None, None, training=True), ValueError,
     r"Expected more than 1 value per channel when training, got input size \(1, 3\)"),
    (lambda: em.batch_norm(em.ones(1, 3, 1, 1), em.zeros(3), em.ones(3), training=True),
     ValueError, "Expected more than 1 value per channel"),
    (lambda: em.batch_norm(em.ones(2, 3), None, None), ValueError,
     "running_mean and running_var are required when training=False"),
    (lambda: em.batch_norm(em.ones(2, 3), em.zeros(4), em.ones(3)), ValueError,
     r"batch_norm: running_mean must have shape \(3,\), got \(4,\)"),
    (lambda: em.batch_norm(em.ones(3), em.zeros(3), em.ones(3)), ValueError,
     r"expected an input of shape \(N, C, ...\), got \(3,\)"),
    (lambda: em.batch_norm(em.ones(2, 3), em.zeros(3), em.ones(3), em.ones(2)), ValueError,
     r"weight must have shape \(3,\)"),
    (lambda: em.batch_norm(em.ones(2, 3, dtype=em.int32), em.zeros(3), em.ones(3)),
     TypeError, "batch_norm: input must be a floating point tensor"),
])
def test_batch_norm_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        bad()


def test_batch_norm_training_without_running_stats_and_eval_saves_copies():
    x = em.randn(4, 3)
    y = em.batch_norm(x, None, None, training=True)
    np.testing.assert_allclose(y.numpy().mean(0), 0, atol=1e-6)
    rm, rv = em.zeros(3), em.ones(3)
    a = _bn_saved(x.detach(), None, None, rm, rv, False)
    rm.fill_(5.0)           # later in-place updates do not change what was saved
    np.testing.assert_array_equal(a["mean"].numpy(), 0)


def test_layer_norm_device_gradients_match_the_gradchecked_cpu(device):
    """Gradients through autograd on each device (OpenCL/CUDA: programs/norm.h under the
    derivative table's formula) equal the CPU's in float64, which
    test_layer_norm_backward_matches_finite_differences checks against finite
    differences (ember's gradcheck builds its probes on the CPU)."""
    backend = em._C.core.backend_for(device)
    if device.type != "cpu" and not backend.has_fp64(device):
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4), (3, 4), (3, 4), (2, 3, 4))]
    grads = []
    for dev in ("cpu", device):
        x, w, b = (em.from_numpy(a).to(dev).requires_grad_() for a in arrays[:3])
        (em.layer_norm(x, (3, 4), w, b) * em.from_numpy(arrays[3]).to(dev)).sum().backward()
        grads.append([t.grad.cpu().numpy() for t in (x, w, b)])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
