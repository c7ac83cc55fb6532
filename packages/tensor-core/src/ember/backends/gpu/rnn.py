"""GPUBackend's LSTM cell: composed from the device's own ember ops
(ember.ops.rnn's composite forms), the CPU's fused kernels' results."""
from __future__ import annotations

from ember.ops.rnn import lstm_cell_composite, lstm_cell_composite_backward


class RNNKernels:
    """Mixed into GPUBackend."""

    def lstm_cell(self, gates, c):
        return lstm_cell_composite(gates, c)

    def lstm_cell_backward(self, grad, gates, c, hc):
        return lstm_cell_composite_backward(grad, gates, c, hc)
