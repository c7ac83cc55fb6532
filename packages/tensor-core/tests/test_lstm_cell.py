"""The fused LSTM cell (ember.ops.rnn.lstm_cell_pointwise: one kernel forward, one
backward) against a NumPy reference and the same cell composed of ember ops, forward
and gradients, over batch/hidden sizes (vector tails), strided operands and dtypes;
gradcheck in float64; bad input; nn.LSTM through it against the composed cell."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.autograd import gradcheck
from ember.ops import rnn as R


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_cell(gates, c):
    i, f, g, o = np.split(gates, 4, 1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return np.concatenate([sig(o) * np.tanh(c2), c2], 1)


def np_cell_grad(ghc, gates, c):
    """(dgates, dc) written out by hand (the chain rule of np_cell)."""
    H = c.shape[1]
    i, f, g, o = np.split(gates, 4, 1)
    si, sf, so, tg = sig(i), sig(f), sig(o), np.tanh(g)
    c2 = sf * c + si * tg
    tc = np.tanh(c2)
    dh, dc2 = ghc[:, :H], ghc[:, H:]
    dc2 = dc2 + dh * so * (1 - tc ** 2)
    dgates = np.concatenate([dc2 * tg * si * (1 - si), dc2 * c * sf * (1 - sf),
                             dc2 * si * (1 - tg ** 2), dh * tc * so * (1 - so)], 1)
    return dgates, dc2 * sf


TOL = {em.float64: 1e-12, em.float32: 2e-6, em.float16: 2e-3, em.bfloat16: 2e-2}


def operand(a, dtype, device, strided):
    """a as an ember tensor of dtype on device; strided: a transposed-storage view."""
    t = em.from_numpy(np.ascontiguousarray(a.T) if strided else a).to(dtype).to(device)
    t = t.T if strided else t
    assert t.is_contiguous() != strided or a.shape[0] == 1 or a.shape[1] == 1
    return t


@given(B=st.integers(1, 5), H=st.integers(1, 21), strided=st.booleans(),
       dtype=st.sampled_from([em.float32, em.float64, em.float16, em.bfloat16]),
       seed=st.integers(0, 2**16), scale=st.sampled_from([0.5, 3.0, 30.0]))
def test_fused_matches_numpy_and_composite(device, B, H, strided, dtype, seed, scale):
    if dtype in (em.float16, em.bfloat16) and device.type != "cpu":
        return
    rng = np.random.default_rng(seed)
    gates, c = rng.normal(0, scale, (B, 4 * H)), rng.normal(0, scale, (B, H))
    ghc = rng.normal(0, 1, (B, 2 * H))
    # the reference sees the operands rounded to dtype, as the kernels do
    gates_t, c_t = operand(gates, dtype, device, strided), operand(c, dtype, device, strided)
    gates_r, c_r = gates_t.cpu().double().numpy(), c_t.cpu().double().numpy()
    g_t = operand(ghc, dtype, device, False)
    tol = TOL[dtype]
    ga, ca = gates_t.detach().requires_grad_(), c_t.detach().requires_grad_()
    hc = R.lstm_cell_pointwise(ga, ca)
    assert hc.dtype is dtype and hc.device.type == device.type and tuple(hc.shape) == (B, 2 * H)
    assert hc.grad_fn.name() == "LstmCellPointwiseBackward0"
    np.testing.assert_allclose(hc.detach().cpu().double().numpy(), np_cell(gates_r, c_r),
                               rtol=tol, atol=tol)
    dg, dc = em.autograd.grad(hc, [ga, ca], g_t)
    rdg, rdc = np_cell_grad(g_t.cpu().double().numpy(), gates_r, c_r)
    gtol = tol * max(1.0, scale / 3)
    np.testing.assert_allclose(dg.cpu().double().numpy(), rdg, rtol=gtol, atol=gtol)
    np.testing.assert_allclose(dc.cpu().double().numpy(), rdc, rtol=gtol, atol=gtol)
    # the composed cell: the same numbers (float32 and float64 to rounding)
    if dtype in (em.float32, em.float64):
        gb, cb = gates_t.detach().requires_grad_(), c_t.detach().requires_grad_()
        ref = R.lstm_cell_composite(gb, cb)
        np.testing.assert_allclose(hc.detach().cpu().numpy(), ref.detach().cpu().numpy(),
                                   rtol=tol, atol=tol)
        for x, y in zip((dg, dc), em.autograd.grad(ref, [gb, cb], g_t)):
            np.testing.assert_allclose(x.cpu().numpy(), y.cpu().numpy(), rtol=gtol, atol=gtol)


def test_saturated_and_special_values():
    gates = np.array([[40.0, -40.0, 0.0, 1e4, -np.inf, np.inf, 2.0, -3.0]])
    c = np.array([[1.0, -np.inf]])
    hc = R.lstm_cell_pointwise(em.from_numpy(gates).float(), em.from_numpy(c).float())
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_allclose(hc.numpy(), np_cell(gates, c), rtol=1e-6, atol=1e-6)
    nan = R.lstm_cell_pointwise(em.full((1, 4), float("nan")), em.zeros(1, 1))
    assert np.isnan(nan.numpy()).all()


def test_gradcheck():
    rng = np.random.default_rng(0)
    gates = em.from_numpy(rng.normal(0, 1.5, (3, 12))).requires_grad_()
    c = em.from_numpy(rng.normal(0, 1.5, (3, 3))).requires_grad_()
    assert gradcheck(R.lstm_cell_pointwise, (gates, c))
    # create_graph: the formula differentiates the composed cell (second derivatives)
    assert em.autograd.gradgradcheck(R.lstm_cell_pointwise, (gates, c))


def test_one_input_needs_grad():
    gates = em.randn(2, 8, dtype=em.float64).requires_grad_()
    c = em.randn(2, 2, dtype=em.float64)
    R.lstm_cell_pointwise(gates, c).sum().backward()
    g2 = gates.detach().requires_grad_()
    R.lstm_cell_composite(g2, c).sum().backward()
    np.testing.assert_allclose(gates.grad.numpy(), g2.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert c.grad is None


def test_bad_input():
    f = R.lstm_cell_pointwise
    with pytest.raises(ValueError, match=r"lstm_cell_pointwise: expected gates of shape "
                                         r"\(B, 4H\).*\(2, 7\) and \(2, 2\)"):
        f(em.zeros(2, 7), em.zeros(2, 2))
    with pytest.raises(ValueError, match="lstm_cell_pointwise"):
        f(em.zeros(3, 8), em.zeros(2, 2))
    with pytest.raises(ValueError, match="lstm_cell_pointwise"):
        f(em.zeros(8), em.zeros(2))
    with pytest.raises(TypeError, match="lstm_cell_pointwise: gates are"):
        f(em.zeros(2, 8), em.zeros(2, 2, dtype=em.float64))
    with pytest.raises(TypeError, match="lstm_cell_pointwise: gates must be a floating"):
        f(em.zeros(2, 8, dtype=em.int64), em.zeros(2, 2))
    with pytest.raises(TypeError, match="lstm_cell_pointwise"):
        f([[0.0] * 8], em.zeros(1, 2))


def test_cpu_kernels_check_their_layouts():
    from ember._C import rnn as K
    gates, c = em.zeros(2, 8), em.zeros(2, 2)
    hc = K.lstm_cell(gates, c)
    assert tuple(hc.shape) == (2, 4)
    with pytest.raises(ValueError, match=r"lstm_cell: internal kernel needs a contiguous"):
        K.lstm_cell(em.zeros(8, 2).T, c)
    with pytest.raises(ValueError, match=r"lstm_cell: expected gates \(B, 4H\)"):
        K.lstm_cell(em.zeros(2, 6), c)
    with pytest.raises(ValueError, match=r"lstm_cell_backward: hc must be 8 elements"):
        K.lstm_cell_backward(em.zeros(2, 3), gates, c, em.zeros(2, 3))
    with pytest.raises(ValueError, match=r"lstm_cell_backward: \(2, 4\).*\(2, 4\).*float64"):
        K.lstm_cell_backward(hc, gates, c, hc.double())


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_module_matches_composed_cell(bias):
    """nn.LSTM (fused cell, both biases added once over the sequence) against the cell
    written out of ember ops step by step, outputs and every parameter's gradient."""
    em.manual_seed(0)
    lstm = em.nn.LSTM(5, 4, num_layers=2, bias=bias).double()
    x = em.randn(6, 3, 5, dtype=em.float64)
    h0, c0 = em.randn(2, 3, 4, dtype=em.float64), em.randn(2, 3, 4, dtype=em.float64)
    out, (hn, cn) = lstm(x, (h0, c0))
    (out.sum() + hn.square().sum() + cn.sum()).backward()

    ps = {k: v.detach().clone().requires_grad_() for k, v in lstm.named_parameters()}
    inp, hs, cs = x, [], []
    for layer in range(2):
        h, c = h0[layer], c0[layer]
        seq = []
        for t in range(6):
            gates = inp[t] @ ps[f"weight_ih_l{layer}"].T + h @ ps[f"weight_hh_l{layer}"].T
            if bias:
                gates = gates + ps[f"bias_ih_l{layer}"] + ps[f"bias_hh_l{layer}"]
            hc = R.lstm_cell_composite(gates, c)
            h, c = hc[:, :4], hc[:, 4:]
            seq.append(h)
        inp = em.stack(seq, 0)
        hs.append(h)
        cs.append(c)
    ref_out, ref_h, ref_c = inp, em.stack(hs, 0), em.stack(cs, 0)
    (ref_out.sum() + ref_h.square().sum() + ref_c.sum()).backward()
    for a, b in ((out, ref_out), (hn, ref_h), (cn, ref_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)
    for k, p in lstm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ps[k].grad.numpy(), rtol=1e-11,
                                   atol=1e-11, err_msg=k)


# the whole recurrence: lstm_sequence ---------------------------------------------------

def sequence_inputs(T, B, H, dtype, device, seed, strided=False):
    rng = np.random.default_rng(seed)
    arrays = (rng.normal(0, 1.0, (T, B, 4 * H)), rng.normal(0, 1.0, (B, H)),
              rng.normal(0, 1.0, (B, H)), rng.normal(0, 0.5, (4 * H, H)))
    ts = []
    for a in arrays:
        t = em.from_numpy(a).to(dtype).to(device)
        if strided and a.ndim == 2:          # a transposed view of transposed storage
            t = t.T.contiguous().T
        ts.append(t.requires_grad_())
    return ts


def np_sequence(proj, h0, c0, w_hh):
    H = h0.shape[1]
    h, c, ys = h0, c0, []
    for t in range(proj.shape[0]):
        hc = np_cell(proj[t] + h @ w_hh.T, c)
        ys.append(hc)
        h, c = hc[:, :H], hc[:, H:]
    return np.stack(ys, 0)


@given(T=st.integers(1, 5), B=st.integers(1, 4), H=st.integers(1, 9), strided=st.booleans(),
       dtype=st.sampled_from([em.float32, em.float64]), seed=st.integers(0, 2**16))
def test_sequence_matches_numpy_and_composite(device, T, B, H, strided, dtype, seed):
    ins = sequence_inputs(T, B, H, dtype, device, seed, strided)
    y = R.lstm_sequence(*ins)
    assert y.grad_fn.name() == "LstmSequenceBackward0" and tuple(y.shape) == (T, B, 2 * H)
    tol = 1e-11 if dtype is em.float64 else 2e-5
    ref_np = np_sequence(*(t.detach().cpu().double().numpy() for t in ins))
    np.testing.assert_allclose(y.detach().cpu().double().numpy(), ref_np, rtol=tol, atol=tol)
    g = em.from_numpy(np.random.default_rng(seed + 1).normal(0, 1, (T, B, 2 * H))).to(dtype)
    g = g.to(device)
    grads = em.autograd.grad(y, ins, g)
    ref = R.lstm_sequence_composite(*ins)
    for name, a, b in zip(("proj", "h0", "c0", "w_hh"), grads, em.autograd.grad(ref, ins, g)):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=10 * tol,
                                   atol=10 * tol, err_msg=name)


def test_sequence_gradcheck_and_partial_needs():
    ins = sequence_inputs(3, 2, 2, em.float64, "cpu", 0)
    assert gradcheck(R.lstm_sequence, tuple(ins))
    assert em.autograd.gradgradcheck(R.lstm_sequence, tuple(ins))
    proj, h0, c0, w = ins
    h0, c0 = h0.detach(), c0.detach()           # only proj and w_hh need gradients
    R.lstm_sequence(proj, h0, c0, w)[:, :, :2].sum().backward()
    p2, w2 = proj.detach().requires_grad_(), w.detach().requires_grad_()
    R.lstm_sequence_composite(p2, h0, c0, w2)[:, :, :2].sum().backward()
    np.testing.assert_allclose(proj.grad.numpy(), p2.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_sequence_bad_input():
    f = R.lstm_sequence
    z = em.zeros
    with pytest.raises(ValueError, match="lstm_sequence: expected proj"):
        f(z(3, 2, 7), z(2, 2), z(2, 2), z(8, 2))
    with pytest.raises(ValueError, match="lstm_sequence: expected proj"):
        f(z(3, 2, 8), z(2, 2), z(2, 2), z(2, 8))
    with pytest.raises(ValueError, match="lstm_sequence: expected proj"):
        f(z(2, 8), z(2, 2), z(2, 2), z(8, 2))
    with pytest.raises(ValueError, match="at least one step"):
        f(z(0, 2, 8), z(2, 2), z(2, 2), z(8, 2))
    with pytest.raises(TypeError, match="lstm_sequence: w_hh is"):
        f(z(3, 2, 8), z(2, 2), z(2, 2), z(8, 2, dtype=em.float64))
    with pytest.raises(TypeError, match="lstm_sequence: h0 must be a floating"):
        f(z(3, 2, 8), z(2, 2, dtype=em.int64), z(2, 2), z(8, 2))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_module_states_and_directions(bidirectional):
    """nn.LSTM's outputs, final states and the gradients of h0 and c0 (both directions)
    against the cell written out of ember ops."""
    em.manual_seed(1)
    dirs = 2 if bidirectional else 1
    lstm = em.nn.LSTM(3, 2, num_layers=1, bidirectional=bidirectional).double()
    x = em.randn(4, 2, 3, dtype=em.float64)
    h0 = em.randn(dirs, 2, 2, dtype=em.float64).requires_grad_()
    c0 = em.randn(dirs, 2, 2, dtype=em.float64).requires_grad_()
    out, (hn, cn) = lstm(x, (h0, c0))
    (out.sin().sum() + hn.square().sum() + (cn * 3).sum()).backward()
    ps = {k: v.detach().clone().requires_grad_() for k, v in lstm.named_parameters()}
    h0r, c0r = h0.detach().clone().requires_grad_(), c0.detach().clone().requires_grad_()
    outs, hs, cs = [], [], []
    for d in range(dirs):
        sfx = "_l0" + ("_reverse" if d else "")
        h, c, seq = h0r[d], c0r[d], [None] * 4
        for t in (range(3, -1, -1) if d else range(4)):
            gates = (x[t] @ ps["weight_ih" + sfx].T + ps["bias_ih" + sfx] +
                     h @ ps["weight_hh" + sfx].T + ps["bias_hh" + sfx])
            hc = R.lstm_cell_composite(gates, c)
            h, c = hc[:, :2], hc[:, 2:]
            seq[t] = h
        outs.append(em.stack(seq, 0))
        hs.append(h)
        cs.append(c)
    ref = em.cat(outs, -1)
    (ref.sin().sum() + em.stack(hs, 0).square().sum() + (em.stack(cs, 0) * 3).sum()).backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    for a, b in ((h0.grad, h0r.grad), (c0.grad, c0r.grad)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11, atol=1e-11)
    for k, p in lstm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ps[k].grad.numpy(), rtol=1e-11,
                                   atol=1e-11, err_msg=k)
