"""The LSTM cell's pointwise part as one op (kernels: the `rnn` family, ember._C.rnn on
the CPU; GPU backends compose it from ember ops), for nn.LSTM and nn.LSTMCell: one
kernel forward and one backward per time step instead of ten ops each way.

Not a PyTorch name (torch.lstm_cell takes the input and the weights), so nothing is
exported into ember's namespace."""
from __future__ import annotations

from ember._C import core as _core
from ember.backends import kernel
from ember.ops._kernel_args import _cast_back, _float_tensor, _work, _work_dtype

__all__ = []


def lstm_cell_pointwise(gates, c):
    """hc (B, 2H) = [h' | c'] from the gate pre-activations gates (B, 4H) (PyTorch's
    order: input, forget, cell, output) and the cell state c (B, H):
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c').
    Records "lstm_cell_pointwise" (its formula calls lstm_cell_pointwise_backward)."""
    op = "lstm_cell_pointwise"
    _float_tensor(gates, op, "gates")
    _float_tensor(c, op, "c")
    if gates.dtype is not c.dtype:
        raise TypeError(f"{op}: gates are {gates.dtype!r} but c is {c.dtype!r}")
    if gates.device != c.device:
        raise RuntimeError(f"{op}: expected all tensors on one device, got gates on "
                           f"{gates.device} and c on {c.device}")
    if c.ndim != 2 or gates.ndim != 2 or tuple(gates.shape) != (c.shape[0], 4 * c.shape[1]):
        raise ValueError(f"{op}: expected gates of shape (B, 4H) and c of shape (B, H), got "
                         f"{tuple(gates.shape)} and {tuple(c.shape)}")
    work = _work_dtype(c.dtype)
    with _core._no_record():
        hc = kernel("lstm_cell", op, c)(_work(gates, work), _work(c, work))
        hc = _cast_back(hc, c.dtype)
    return _core.record(op, (gates, c), hc)


def lstm_cell_pointwise_backward(grad, gates, c, hc):
    """(grad_gates, grad_c) of lstm_cell_pointwise from the gradient of its output hc
    and the saved gates, c and hc. Records nothing."""
    work = _work_dtype(c.dtype)
    with _core._no_record():
        dg, dc = kernel("lstm_cell_backward", "lstm_cell_pointwise_backward", c)(
            _work(grad, work), _work(gates, work), _work(c, work), _work(hc, work))
        return _cast_back(dg, gates.dtype), _cast_back(dc, c.dtype)


def lstm_cell_composite(gates, c):
    """lstm_cell_pointwise from ember ops (the GPU backends' forward, the derivative
    table's twice-differentiable form and the tests' reference)."""
    import ember as em
    i, f, g, o = gates.chunk(4, 1)
    c2 = em.sigmoid(f) * c + em.sigmoid(i) * em.tanh(g)
    return em.cat([em.sigmoid(o) * em.tanh(c2), c2], 1)


def lstm_cell_composite_backward(grad, gates, c, hc):
    """lstm_cell_pointwise_backward from ember ops (the GPU backends' backward)."""
    import ember as em
    H = c.shape[1]
    i, f, g, o = (em.sigmoid(t) if k != 2 else em.tanh(t) for k, t in enumerate(gates.chunk(4, 1)))
    tc = em.tanh(hc[:, H:])
    dh = grad[:, :H]
    dc = grad[:, H:] + dh * o * (1 - tc * tc)
    dgates = em.cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g),
                     dh * tc * o * (1 - o)], 1)
    return dgates, dc * f
