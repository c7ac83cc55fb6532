"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, initial
states, LSTM's proj_size, PackedSequence input) with PyTorch's parameter names, shapes,
gate order and initialisation.

Each layer and direction projects the whole input sequence at once (one matmul),
then steps through time with the hidden-to-hidden matmul only. A PackedSequence is
run on its packed data directly: at step t only the batch_sizes[t] sequences still
running are updated (the others keep their state), so each sequence's output and
final state are those of running it alone."""
from __future__ import annotations

import math

import ember as em
from ember.nn import functional as F, init
from ember.nn._checks import checked, positive, real, size, tensor
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence
from ember.ops.rnn import lstm_cell_pointwise, lstm_sequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_cell(x_proj, h, w_hh, b_hh, relu):
    pre = x_proj + h @ w_hh.T
    if b_hh is not None:
        pre = pre + b_hh
    return em.relu(pre) if relu else em.tanh(pre)


def _lstm_cell(x_proj, state, w_hh, b_hh, w_hr=None):
    """One step: b_hh may be None with it already in x_proj (nn.LSTM adds both biases
    to the whole sequence's input projection at once)."""
    h, c = state
    gates = x_proj + h @ w_hh.T
    if b_hh is not None:
        gates = gates + b_hh
    # the pointwise part in one fused op: hc = [h | c]
    hc = lstm_cell_pointwise(gates, c)
    H = c.shape[-1]
    h, c = hc[:, :H], hc[:, H:]
    if w_hr is not None:          # proj_size: h_t = W_hr (o * tanh(c_t))
        h = h @ w_hr.T
    return h, c


def _gru_cell(x_proj, h, w_hh, b_hh):
    hh = h @ w_hh.T
    if b_hh is not None:
        hh = hh + b_hh
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = hh.chunk(3, -1)
    r = em.sigmoid(xr + hr)
    z = em.sigmoid(xz + hz)
    n = em.tanh(xn + r * hn)
    return (1 - z) * n + z * h


class RNNBase(Module):
    # forward takes a Tensor or a PackedSequence: it checks its arguments itself
    _forward_tensors = ()

    @checked(input_size=size, hidden_size=positive, num_layers=positive, dropout=real())
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if isinstance(proj_size, bool) or not isinstance(proj_size, int):
            raise TypeError(f"{name}: proj_size must be an int, got "
                            f"{type(proj_size).__name__}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1], got {dropout}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gates = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                layer_in = input_size if layer == 0 else real_hidden * dirs
                names = [("weight_ih" + suffix, (gates, layer_in)),
                         ("weight_hh" + suffix, (gates, real_hidden))]
                if bias:
                    names += [("bias_ih" + suffix, (gates,)), ("bias_hh" + suffix, (gates,))]
                if proj_size:
                    names.append(("weight_hr" + suffix, (proj_size, hidden_size)))
                for name_, shape in names:
                    self.register_parameter(name_, Parameter(em.empty(shape, device=device,
                                                                      dtype=dtype)))
                    self._flat_weights_names.append(name_)
        self.reset_parameters()

    def reset_parameters(self):
        # every weight (weight_hr too) from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self):
        """PyTorch packs the weights into one cuDNN buffer here. ember's weights are
        always separate contiguous tensors used as they are, so there is nothing to do:
        a documented no-op, as in PyTorch without cuDNN."""

    @property
    def _flat_weights(self):
        return [self._parameters.get(n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction: [[w_ih, w_hh, b_ih, b_hh(, w_hr)], ...]."""
        per = len(self._flat_weights_names) // (self.num_layers *
                                                 (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = self._parameters.get
        return (get("weight_ih" + suffix), get("weight_hh" + suffix), get("bias_ih" + suffix),
                get("bias_hh" + suffix), get("weight_hr" + suffix))

    def _check_input(self, input, hx_shape_fn):
        name = type(self).__name__
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: expected input of 2 (unbatched) or 3 dimensions, got "
                             f"shape {tuple(input.shape)}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {input.shape[-1]}")

    def forward(self, input, hx=None):
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            data = tensor(name, "input.data", input.data)
            if data.ndim != 2 or data.shape[-1] != self.input_size:
                raise ValueError(f"{name}: input.size(-1) must be equal to input_size. "
                                 f"Expected {self.input_size}, got shape {tuple(data.shape)}")
            batch_sizes = [int(b) for b in input.batch_sizes.tolist()]
            seq_len, batch = len(batch_sizes), (batch_sizes[0] if batch_sizes else 0)
            x, unbatched = data, False
        else:
            if not isinstance(input, em.Tensor):
                raise TypeError(f"{name}: argument 'input' must be a Tensor or a "
                                f"PackedSequence, got {type(input).__name__} {input!r:.60}")
            self._check_input(input, None)
            unbatched = input.ndim == 2
            x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first
                                                      else input)
            seq_len, batch = x.shape[0], x.shape[1]
            batch_sizes = None
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"

        def initial(h, what, size):
            shape = (self.num_layers * dirs, batch, size)
            if h is None:
                return em.zeros(shape, dtype=x.dtype, device=x.device)
            tensor(name, what, h)
            if unbatched:
                if h.ndim != 2:
                    raise ValueError(f"{name}: for unbatched 2-D input, {what} should also be "
                                     f"2-D but got a {h.ndim}-D tensor")
                h = h.unsqueeze(1)
            if tuple(h.shape) != shape:
                raise ValueError(f"{name}: expected {what} size {shape}, got "
                                 f"{tuple(h.shape)}")
            if packed and input.sorted_indices is not None:
                h = h.index_select(1, input.sorted_indices)    # the user's order -> sorted
            return h

        if lstm:
            h0, c0 = (None, None) if hx is None else _pair_of_states(name, hx)
            h0, c0 = initial(h0, "hx[0]", real_hidden), initial(c0, "hx[1]", self.hidden_size)
        else:
            h0 = initial(hx, "hx", self.hidden_size)
        if packed:
            offsets = [0]
            for bs in batch_sizes:
                offsets.append(offsets[-1] + bs)
        h_n, c_n = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                k = layer * dirs + d
                proj = layer_input @ w_ih.T
                if b_ih is not None and lstm:
                    # both biases once over the sequence, not b_hh at every step
                    proj = proj + (b_ih + b_hh)
                    b_hh = None
                elif b_ih is not None:
                    proj = proj + b_ih
                if lstm and not packed and w_hr is None and seq_len:
                    # the whole recurrence as one op (ember.ops.rnn.lstm_sequence)
                    y = lstm_sequence(proj.flip(0) if d else proj, h0[k], c0[k], w_hh)
                    H = self.hidden_size
                    out = y[:, :, :H]
                    outs.append(out.flip(0) if d else out)
                    h_n.append(y[-1, :, :H])
                    c_n.append(y[-1, :, H:])
                    continue
                steps = range(seq_len - 1, -1, -1) if d else range(seq_len)
                h = h0[k]
                c = c0[k] if lstm else None
                seq = [None] * seq_len
                for t in steps:
                    if packed:
                        bs = batch_sizes[t]
                        p_t = proj[offsets[t]:offsets[t + 1]]
                        h_t = h[:bs] if bs < batch else h
                        c_t = (c[:bs] if bs < batch else c) if lstm else None
                    else:
                        bs, p_t, h_t, c_t = batch, proj[t], h, c
                    if lstm:
                        h_t, c_t = _lstm_cell(p_t, (h_t, c_t), w_hh, b_hh, w_hr)
                    elif self.mode == "GRU":
                        h_t = _gru_cell(p_t, h_t, w_hh, b_hh)
                    else:
                        h_t = _rnn_cell(p_t, h_t, w_hh, b_hh, self.mode == "RNN_RELU")
                    seq[t] = h_t
                    # the sequences not running at t keep their state
                    h = em.cat([h_t, h[bs:]], 0) if bs < batch else h_t
                    if lstm:
                        c = em.cat([c_t, c[bs:]], 0) if bs < batch else c_t
                outs.append(em.cat(seq, 0) if packed else em.stack(seq, 0))
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            layer_input = outs[0] if dirs == 1 else em.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input
        h_n = em.stack(h_n, 0)
        if lstm:
            c_n = em.stack(c_n, 0)
        if packed:
            if input.unsorted_indices is not None:
                h_n = h_n.index_select(1, input.unsorted_indices)
                if lstm:
                    c_n = c_n.index_select(1, input.unsorted_indices)
            output = PackedSequence(output, input.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
        elif unbatched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            if lstm:
                c_n = c_n.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        if lstm:
            return output, (h_n, c_n)
        return output, h_n


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; use 'tanh' or "
                             f"'relu'")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args,
                         **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """LSTM with PyTorch's gate order (input, forget, cell, output). proj_size > 0
    (< hidden_size) projects each h_t with weight_hr_l{k} (proj_size x hidden_size):
    h and the outputs have proj_size features, c keeps hidden_size."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU with PyTorch's gate order (reset, update, new)."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


def _pair_of_states(op, hx):
    """An LSTM's hx: a pair (h, c) of tensors."""
    if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
        raise TypeError(f"{op}: hx must be a tuple (h_0, c_0) of two Tensors, got "
                        f"{type(hx).__name__} {hx!r:.60}")
    return tensor(op, "hx[0]", hx[0]), tensor(op, "hx[1]", hx[1])


class _CellBase(Module):
    @checked(input_size=size, hidden_size=positive)
    def __init__(self, input_size, hidden_size, bias, gates, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(em.empty(gates * hidden_size, input_size, device=device,
                                            dtype=dtype))
        self.weight_hh = Parameter(em.empty(gates * hidden_size, hidden_size, device=device,
                                            dtype=dtype))
        if bias:
            self.bias_ih = Parameter(em.empty(gates * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(em.empty(gates * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")

    def _prepare(self, input, hx):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: expected input to be 1-D or 2-D, got "
                             f"{input.ndim}-D")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input has {input.shape[-1]} features, "
                             f"expected input_size={self.input_size}")
        if hx is not None:
            _pair_of_states(type(self).__name__, hx) if isinstance(self, LSTMCell) else \
                tensor(type(self).__name__, "hx", hx)
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        proj = x @ self.weight_ih.T
        if self.bias_ih is not None:
            proj = proj + self.bias_ih
        zeros = em.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        return unbatched, proj, zeros


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; use 'tanh' or "
                             f"'relu'")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        unbatched, proj, zeros = self._prepare(input, hx)
        h = zeros if hx is None else (hx.unsqueeze(0) if unbatched else hx)
        h = _rnn_cell(proj, h, self.weight_hh, self.bias_hh, self.nonlinearity == "relu")
        return h.squeeze(0) if unbatched else h


class LSTMCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        unbatched, proj, zeros = self._prepare(input, hx)
        if hx is None:
            h, c = zeros, zeros
        else:
            h, c = (t.unsqueeze(0) for t in hx) if unbatched else hx
        h, c = _lstm_cell(proj, (h, c), self.weight_hh, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        unbatched, proj, zeros = self._prepare(input, hx)
        h = zeros if hx is None else (hx.unsqueeze(0) if unbatched else hx)
        h = _gru_cell(proj, h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h
