"""RNN, LSTM, GRU and their cells against NumPy references that use the modules'
own weights; gradients by gradcheck; an LSTM learns to copy a sequence."""
import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        return sig(o) * np.tanh(c), c
    if mode == "GRU":
        xr, xz, xn = np.split(gi, 3, -1)
        hr, hz, hn = np.split(gh, 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (np.maximum(pre, 0) if mode == "RNN_RELU" else np.tanh(pre)), None


def np_forward(m, x, h0, c0):
    """x: (L, N, H_in); h0/c0: (layers*dirs, N, H)."""
    dirs = 2 if m.bidirectional else 1
    params = {n: p.detach().numpy() for n, p in m.named_parameters()}
    layer_in, hn, cn = x, [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [params[k + sfx] if k + sfx in params else 0.0
                 for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h, c = h0[layer * dirs + d], c0[layer * dirs + d] if c0 is not None else None
            seq = [None] * len(x)
            for t in (reversed(range(len(x))) if d else range(len(x))):
                h, c = np_step(m.mode, layer_in[t], h, c, *w)
                seq[t] = h
            outs.append(np.stack(seq))
            hn.append(h)
            cn.append(c)
        layer_in = np.concatenate(outs, -1)
    return layer_in, np.stack(hn), (np.stack(cn) if c0 is not None else None)


@pytest.mark.parametrize("cls,kw", [
    (nn.RNN, {}), (nn.RNN, {"nonlinearity": "relu"}), (nn.GRU, {}), (nn.LSTM, {}),
    (nn.LSTM, {"num_layers": 2, "bidirectional": True}),
    (nn.GRU, {"num_layers": 2, "batch_first": True}),
    (nn.RNN, {"bidirectional": True, "bias": False}),
])
def test_matches_numpy(cls, kw):
    em.manual_seed(0)
    m = cls(3, 4, **kw).double()
    rng = np.random.default_rng(0)
    L, N = 5, 2
    dirs = 2 if m.bidirectional else 1
    x = rng.normal(size=(L, N, 3))
    h0 = rng.normal(size=(m.num_layers * dirs, N, 4))
    c0 = rng.normal(size=h0.shape) if cls is nn.LSTM else None
    xin = em.from_numpy(x.transpose(1, 0, 2).copy() if m.batch_first else x)
    hx = (em.from_numpy(h0), em.from_numpy(c0)) if c0 is not None else em.from_numpy(h0)
    out, state = m(xin, hx)
    want_out, want_h, want_c = np_forward(m, x, h0, c0)
    got_out = out.detach().numpy()
    if m.batch_first:
        got_out = got_out.transpose(1, 0, 2)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-10, atol=1e-12)
    h = state[0] if cls is nn.LSTM else state
    np.testing.assert_allclose(h.detach().numpy(), want_h, rtol=1e-10, atol=1e-12)
    if cls is nn.LSTM:
        np.testing.assert_allclose(state[1].detach().numpy(), want_c, rtol=1e-10, atol=1e-12)


def test_unbatched_and_default_state():
    m = nn.GRU(3, 4, num_layers=2)
    x = em.randn(6, 3)
    out, h = m(x)
    assert tuple(out.shape) == (6, 4) and tuple(h.shape) == (2, 4)
    batched, hb = m(x.unsqueeze(1))
    np.testing.assert_allclose(batched.squeeze(1).detach().numpy(), out.detach().numpy(),
                               rtol=1e-6)


def test_parameter_names_shapes_and_repr():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0_reverse"] == (80, 20)
    assert shapes["weight_ih_l1"] == (80, 40) and shapes["bias_hh_l1_reverse"] == (80,)
    assert repr(m) == "LSTM(10, 20, num_layers=2, bidirectional=True)"


def test_gradcheck_small_lstm_and_gru():
    for cls in (nn.LSTM, nn.GRU):
        m = cls(2, 3).double()
        x = em.randn(3, 1, 2, dtype=em.float64, requires_grad=True)
        assert gradcheck(lambda t: m(t)[0], (x,))
        w = m.weight_hh_l0
        assert gradcheck(lambda w_: _with_weight(m, w_, x), (w.detach().clone()
                                                             .requires_grad_(),))


def _with_weight(m, w, x):
    saved = m._parameters["weight_hh_l0"]
    m._parameters["weight_hh_l0"] = w
    try:
        return m(x)[0]
    finally:
        m._parameters["weight_hh_l0"] = saved


def test_cells_match_one_step_of_the_layers():
    em.manual_seed(1)
    for cell_cls, layer_cls in ((nn.RNNCell, nn.RNN), (nn.LSTMCell, nn.LSTM),
                                (nn.GRUCell, nn.GRU)):
        cell = cell_cls(3, 4)
        layer = layer_cls(3, 4)
        layer.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
        x = em.randn(2, 3)
        out, _ = layer(x.unsqueeze(0))
        got = cell(x)
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got.detach().numpy(), out[0].detach().numpy(), rtol=1e-6)


def test_bad_input():
    m = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="input.size\\(-1\\) must be equal to input_size. "
                                         "Expected 3, got 5"):
        m(em.randn(2, 1, 5))
    with pytest.raises(ValueError, match=r"expected hx\[0\] size \(1, 1, 4\), got \(1, 2, 4\)"):
        m(em.randn(2, 1, 3), (em.zeros(1, 2, 4), em.zeros(1, 2, 4)))


def test_lstm_learns_to_copy_a_short_sequence():
    em.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm = nn.LSTM(4, 32, batch_first=True)
    head = nn.Linear(32, 4)
    params = list(lstm.parameters()) + list(head.parameters())

    def batch(n=32):
        seq = rng.integers(0, 4, size=(n, 5))
        onehot = np.eye(4, dtype=np.float32)[seq]
        return em.from_numpy(onehot), em.from_numpy(seq)

    lr = 0.05
    for _ in range(300):
        x, y = batch()
        out, _ = lstm(x)
        logits = head(out)
        loss = -(em.log_softmax(logits, -1) * em.from_numpy(
            np.eye(4, dtype=np.float32)[y.numpy()])).sum(-1).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with em.no_grad():
            for p in params:
                p -= lr * 10 * p.grad
    x, y = batch(256)
    pred = head(lstm(x)[0]).argmax(-1)
    assert float((pred == y).float().mean()) > 0.95
