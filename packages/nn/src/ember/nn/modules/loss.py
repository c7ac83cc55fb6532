"""Loss modules: thin layers over ember.nn.functional's losses."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, index, optional, real, tensor
from ember.nn.modules.module import Module

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss"]


class _Loss(Module):
    _reductions = ("none", "mean", "sum")

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = F._reduction(size_average, reduce, reduction, type(self).__name__,
                                      self._reductions)

    def extra_repr(self):
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class _WeightedLoss(_Loss):
    """A loss with a per-class weight, kept as a buffer so it follows .to() and state_dict."""

    @checked(weight=optional(tensor))
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    @checked(beta=real())
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    @checked(delta=real())
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    @checked(ignore_index=index)
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    @checked(ignore_index=index, label_smoothing=real())
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    @checked(weight=optional(tensor), pos_weight=optional(tensor))
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    _reductions = ("none", "mean", "sum", "batchmean")

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
