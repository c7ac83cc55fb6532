"""nn.utils.rnn (PackedSequence and friends) with PyTorch's documented examples; RNN /
LSTM / GRU on packed input equal to running each sequence alone; LSTM's proj_size
against the documented equations; flatten_parameters."""
from __future__ import annotations

import numpy as np
import pytest

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn.utils import rnn as R


def _np(t):
    return t.detach().numpy()


def test_pack_sequence_documented_example():
    # PyTorch's docs: pack_sequence([a, b, c]) with a=[1,2,3], b=[4,5], c=[6]
    a, b, c = em.tensor([1, 2, 3]), em.tensor([4, 5]), em.tensor([6])
    p = R.pack_sequence([a, b, c])
    assert p.data.tolist() == [1, 4, 6, 2, 5, 3]
    assert p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert p.batch_sizes.dtype == em.int64 and p.batch_sizes.device.type == "cpu"
    assert [t.tolist() for t in R.unpack_sequence(p)] == [[1, 2, 3], [4, 5], [6]]


def test_pack_padded_and_back_unsorted():
    # PyTorch's pad_packed_sequence example: seq [[1,2,0],[3,0,0],[4,5,6]], lens [2,1,3]
    seq = em.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    p = R.pack_padded_sequence(seq, [2, 1, 3], batch_first=True, enforce_sorted=False)
    assert p.data.tolist() == [4, 1, 3, 5, 2, 6]
    assert p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices.tolist() == [2, 0, 1]
    assert p.unsorted_indices.tolist() == [1, 2, 0]
    padded, lens = R.pad_packed_sequence(p, batch_first=True)
    assert padded.tolist() == [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
    assert lens.tolist() == [2, 1, 3]
    padded, _ = R.pad_packed_sequence(p, batch_first=False, padding_value=-1, total_length=4)
    assert padded.shape == (4, 3)
    assert padded[:, 1].tolist() == [3, -1, -1, -1]
    with pytest.raises(ValueError, match="total_length to be at least"):
        R.pad_packed_sequence(p, total_length=2)


def test_pad_sequence_and_unpad():
    a, b, c = em.ones(25, 300), em.ones(22, 300), em.ones(15, 300)
    assert R.pad_sequence([a, b, c]).shape == (25, 3, 300)     # PyTorch's doc example
    x = [em.tensor([1.0, 2.0]), em.tensor([3.0])]
    assert R.pad_sequence(x, batch_first=True).tolist() == [[1, 2], [3, 0]]
    assert R.pad_sequence(x, batch_first=True, padding_value=9,
                          padding_side="left").tolist() == [[1, 2], [9, 3]]
    padded = R.pad_sequence(x)
    assert [t.tolist() for t in R.unpad_sequence(padded, em.tensor([2, 1]))] == [[1, 2], [3]]
    with pytest.raises(ValueError, match="padding_side"):
        R.pad_sequence(x, padding_side="middle")
    with pytest.raises(ValueError, match="trailing shape"):
        R.pad_sequence([em.ones(2, 3), em.ones(2, 4)])


def test_pack_errors():
    x = em.zeros(3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        R.pack_padded_sequence(x, [1, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(x, [2, 0])
    with pytest.raises(ValueError, match="batch_size"):
        R.pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(TypeError, match="PackedSequence"):
        R.pad_packed_sequence(x)


def test_packed_gradients():
    x = em.randn(4, 3, 2, dtype=em.float64, requires_grad=True)

    def f(x):
        p = R.pack_padded_sequence(x, [4, 2, 1])
        return R.pad_packed_sequence(p)[0] * 2
    assert gradcheck(f, (x,))


@pytest.mark.parametrize("cls,kw", [(nn.RNN, {}), (nn.RNN, dict(nonlinearity="relu")),
                                    (nn.GRU, {}), (nn.LSTM, {}),
                                    (nn.LSTM, dict(proj_size=2))])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_equals_each_sequence_alone(cls, kw, bidirectional):
    em.manual_seed(0)
    m = cls(3, 4, num_layers=2, bidirectional=bidirectional, **kw).double()
    seqs = [em.randn(n, 3, dtype=em.float64) for n in (2, 5, 3, 5)]
    lstm = cls is nn.LSTM
    out_size = (kw.get("proj_size") or 4) * (2 if bidirectional else 1)
    h_size = kw.get("proj_size") or 4
    h0 = em.randn(2 * (2 if bidirectional else 1), 4, h_size, dtype=em.float64)
    c0 = em.randn(2 * (2 if bidirectional else 1), 4, 4, dtype=em.float64)
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    out, hn = m(packed, (h0, c0) if lstm else h0)
    assert isinstance(out, R.PackedSequence) and out.data.shape == (15, out_size)
    assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    outs = R.unpack_sequence(out)
    for i, s in enumerate(seqs):
        state = (h0[:, i], c0[:, i]) if lstm else h0[:, i]
        o1, h1 = m(s, state)
        np.testing.assert_allclose(_np(outs[i]), _np(o1), rtol=1e-12, atol=1e-14)
        if lstm:
            np.testing.assert_allclose(_np(hn[0][:, i]), _np(h1[0]), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(_np(hn[1][:, i]), _np(h1[1]), rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_allclose(_np(hn[:, i]), _np(h1), rtol=1e-12, atol=1e-14)


def test_packed_backward():
    m = nn.GRU(2, 3).double()
    seqs = [em.randn(n, 2, dtype=em.float64, requires_grad=True) for n in (3, 1)]
    out, _ = m(R.pack_sequence(seqs))
    out.data.sum().backward()
    assert seqs[0].grad.shape == (3, 2) and seqs[1].grad.shape == (1, 2)
    assert m.weight_hh_l0.grad is not None


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_lstm_proj_size_equations():
    em.manual_seed(1)
    m = nn.LSTM(3, 5, proj_size=2, batch_first=True).double()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert m.weight_hh_l0.shape == (20, 2) and m.weight_hr_l0.shape == (2, 5)
    x = em.randn(2, 4, 3, dtype=em.float64)
    out, (hn, cn) = m(x)
    assert out.shape == (2, 4, 2) and hn.shape == (1, 2, 2) and cn.shape == (1, 2, 5)
    w_ih, w_hh, b_ih, b_hh, w_hr = (_np(p) for p in m.parameters())
    xs = _np(x)
    h, c = np.zeros((2, 2)), np.zeros((2, 5))
    for t in range(4):
        g = xs[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, gg, o = np.split(g, 4, -1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
        h = (_sigmoid(o) * np.tanh(c)) @ w_hr.T
        np.testing.assert_allclose(_np(out[:, t]), h, rtol=1e-12)
    np.testing.assert_allclose(_np(cn[0]), c, rtol=1e-12)
    # two layers: the second layer's input is proj_size wide
    assert nn.LSTM(3, 5, num_layers=2, proj_size=2).weight_ih_l1.shape == (20, 2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(3, 5, proj_size=5)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(3, 5, proj_size=2)
    with pytest.raises(ValueError, match="positive integer or zero"):
        nn.LSTM(3, 5, proj_size=-1)


def test_flatten_parameters_is_a_noop():
    m = nn.LSTM(2, 3)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    assert m.flatten_parameters() is None
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, m.parameters()))
    assert len(m.all_weights) == 1 and len(m.all_weights[0]) == 4
