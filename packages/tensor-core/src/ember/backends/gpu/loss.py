"""GPUBackend's losses with class targets (kernels/gpu/programs/loss.h), and the
deferred check of the targets."""
from __future__ import annotations

import math

from ember._C import core as _core


class LossKernels:
    """Mixed into GPUBackend, whose helpers (run, dense, empty, ...) it uses."""

    def check_targets(self, target, C, ignore_index, error):
        """Checked on the device without waiting (deferred_check): error(the first bad
        position) is raised at the next synchronizing read. The loss kernels skip a bad
        target's row meanwhile."""
        n = target.numel()
        if n == 0:
            return
        target = self.dense(target)
        key = (target.untyped_storage(), target._version, tuple(target.shape), C, ignore_index)
        if any(k[0] is key[0] and k[1:] == key[1:] for k in self._checked):
            return   # the backward re-checks the forward's targets: once is enough
        self._checked = (self._checked + [key])[-4:]
        self.deferred_check(target.device, "check_targets", n,
                            [n, self.handle(target), C, ignore_index], error)

    def _weights(self, w, like):
        """(buffer, has_w) of optional class weights (`like`'s buffer stands in)."""
        return (self.handle(like), 0) if w is None else (self.handle(self.dense(w)), 1)

    def cross_entropy(self, x, target, weight, ignore_index, label_smoothing):
        self._float_kernel(x, "cross_entropy", ("float32", "float64"))
        x, target = self.dense(x), self.dense(target)
        C = x.shape[-1]
        rows = x.numel() // C if C else 0
        wbuf, has_w = self._weights(weight, x)
        wtotal = float(C) if weight is None else self._wtotal(weight)
        loss = self.empty(x.shape[:-1], x.dtype, x.device)
        wrow = self.empty(x.shape[:-1], x.dtype, x.device)
        self.rows_launch(x.device, f"cross_entropy_{x.dtype.name}", rows,
                         [rows, C, self.handle(x), self.handle(target), wbuf, has_w,
                          self.handle(loss), self.handle(wrow), ignore_index,
                          float(label_smoothing), wtotal])
        return loss, wrow

    def _wtotal(self, weight):
        # the sum of the class weights is a kernel argument: one small read per call
        # with class weights (weights are few and rarely change)
        return float(_core.item(self.to_cpu(_core.reduce("sum", weight, None, False))))

    @staticmethod
    def _gstride(grad, n):
        """0 when one grad value serves all n positions, else 1."""
        return 0 if grad.numel() == 1 and n != 1 else 1

    def cross_entropy_backward(self, x, target, weight, grad, scale, ignore_index,
                               label_smoothing):
        self._float_kernel(x, "cross_entropy_backward", ("float32", "float64"))
        x, target, grad = self.dense(x), self.dense(target), self.dense(grad)
        C = x.shape[-1]
        rows = x.numel() // C if C else 0
        wbuf, has_w = self._weights(weight, x)
        wtotal = float(C) if weight is None else self._wtotal(weight)
        dx = self.empty(x.shape, x.dtype, x.device)
        self.rows_launch(x.device, f"cross_entropy_backward_{x.dtype.name}", rows,
                         [rows, C, self.handle(x), self.handle(target), wbuf, has_w,
                          self.handle(grad), self._gstride(grad, rows), float(scale),
                          self.handle(dx), ignore_index, float(label_smoothing), wtotal])
        return dx

    @staticmethod
    def _nll_dims(x):
        if x.ndim == 1:
            return 1, x.shape[0], 1
        return x.shape[0], x.shape[1], math.prod(x.shape[2:])

    def nll_loss(self, x, target, weight, ignore_index):
        self._float_kernel(x, "nll_loss", ("float32", "float64"))
        x, target = self.dense(x), self.dense(target)
        N, C, S = self._nll_dims(x)
        wbuf, has_w = self._weights(weight, x)
        loss = self.empty(target.shape, x.dtype, x.device)
        wrow = self.empty(target.shape, x.dtype, x.device)
        self.run(x.device, f"nll_loss_{x.dtype.name}", N * S,
                 [N, C, S, self.handle(x), self.handle(target), wbuf, has_w, self.handle(loss),
                  self.handle(wrow), ignore_index])
        return loss, wrow

    def nll_loss_backward(self, x, target, weight, grad, scale, ignore_index):
        self._float_kernel(x, "nll_loss_backward", ("float32", "float64"))
        target, grad = self.dense(target), self.dense(grad)
        N, C, S = self._nll_dims(x)
        wbuf, has_w = self._weights(weight, x)
        dx = self.empty(x.shape, x.dtype, x.device)
        self.fill(dx, 0)
        self.run(x.device, f"nll_loss_backward_{x.dtype.name}", N * S,
                 [N, C, S, self.handle(target), wbuf, has_w, self.handle(grad),
                  self._gstride(grad, N * S), float(scale), self.handle(dx), ignore_index])
        return dx
