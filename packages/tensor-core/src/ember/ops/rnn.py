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


# the recurrence over a whole sequence ---------------------------------------------------

def _sequence_args(proj, h0, c0, w_hh, op):
    for what, t in (("proj", proj), ("h0", h0), ("c0", c0), ("w_hh", w_hh)):
        _float_tensor(t, op, what)
        if t.dtype is not proj.dtype or t.device != proj.device:
            raise TypeError(f"{op}: {what} is {t.dtype!r} on {t.device}, but proj is "
                            f"{proj.dtype!r} on {proj.device}")
    if proj.ndim != 3 or h0.ndim != 2:
        raise ValueError(f"{op}: expected proj (T, B, 4H) and h0 (B, H), got "
                         f"{tuple(proj.shape)} and {tuple(h0.shape)}")
    T, B, H = proj.shape[0], h0.shape[0], h0.shape[1]
    if (tuple(proj.shape) != (T, B, 4 * H) or tuple(c0.shape) != (B, H)
            or tuple(w_hh.shape) != (4 * H, H)):
        raise ValueError(f"{op}: expected proj (T, B, 4H), h0 and c0 (B, H), w_hh (4H, H); "
                         f"got {tuple(proj.shape)}, {tuple(h0.shape)}, {tuple(c0.shape)}, "
                         f"{tuple(w_hh.shape)}")
    return T, B, H


def lstm_sequence(proj, h0, c0, w_hh):
    """One LSTM layer (one direction) over a sequence as one recorded op: Y (T, B, 2H),
    Y[t] = [h_t | c_t], from the input projections proj (T, B, 4H) (x_t W_ih^T with
    both biases), the initial states h0, c0 (B, H) and w_hh (4H, H). Each step is one
    matmul and the fused cell. Its backward (lstm_sequence_backward) runs the steps in
    reverse, one matmul each, and forms grad w_hh in one matmul over the sequence: the
    step-by-step graph made a full-size zero gradient for every proj[t] it sliced and a
    weight gradient per step. Records "lstm_sequence" with attrs the gate
    pre-activations (T, B, 4H)."""
    import ember as em
    op = "lstm_sequence"
    T, B, H = _sequence_args(proj, h0, c0, w_hh, op)
    if T == 0:
        raise ValueError(f"{op}: expected a sequence of at least one step, got proj "
                         f"{tuple(proj.shape)}")
    with _core._no_record():
        wt = w_hh.T
        h, c = h0, c0
        gates, ys = [], []
        for t in range(T):
            g = em.addmm(proj[t], h, wt)
            hc = lstm_cell_pointwise(g, c)
            gates.append(g)
            ys.append(hc)
            h, c = hc[:, :H], hc[:, H:]
        y = em.stack(ys, 0)
        gates = em.stack(gates, 0)
    return _core.record(op, (proj, h0, c0, w_hh), y, {"gates": gates})


def lstm_sequence_backward(grad, proj, h0, c0, w_hh, y, gates, output_mask=(True,) * 4):
    """(grad_proj, grad_h0, grad_c0, grad_w_hh) of lstm_sequence from the gradient of its
    output y and the saved gate pre-activations; None where output_mask says False.
    Records nothing."""
    import ember as em
    T, H = y.shape[0], y.shape[2] // 2
    with _core._no_record():
        dgates = [None] * T
        carry = None            # [dh | dc] flowing into step t from step t + 1
        for t in range(T - 1, -1, -1):
            ghc = grad[t] if carry is None else grad[t] + carry
            dg, dc = lstm_cell_pointwise_backward(ghc, gates[t], c0 if t == 0 else y[t - 1, :, H:],
                                                  y[t])
            dgates[t] = dg
            carry = em.cat([dg @ w_hh, dc], 1)
        dgates = em.stack(dgates, 0)
        dw = None
        if output_mask[3]:
            h_prev = em.cat([h0.unsqueeze(0), y[:-1, :, :H]], 0).reshape(-1, H)
            dw = dgates.reshape(-1, 4 * H).T @ h_prev
        return (dgates if output_mask[0] else None, carry[:, :H] if output_mask[1] else None,
                carry[:, H:] if output_mask[2] else None, dw)


def lstm_sequence_composite(proj, h0, c0, w_hh):
    """lstm_sequence from ember ops step by step (the derivative table's
    twice-differentiable form and the tests' reference)."""
    import ember as em
    H = h0.shape[1]
    h, c, ys = h0, c0, []
    for t in range(proj.shape[0]):
        hc = lstm_cell_composite(proj[t] + h @ w_hh.T, c)
        ys.append(hc)
        h, c = hc[:, :H], hc[:, H:]
    return em.stack(ys, 0)
