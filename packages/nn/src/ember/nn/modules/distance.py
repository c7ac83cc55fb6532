"""CosineSimilarity and PairwiseDistance over ember.nn.functional."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, index, real
from ember.nn.modules.module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along dim."""

    _forward_tensors = ("x1", "x2")

    @checked(dim=index, eps=real())
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self):
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p over the last dim."""

    _forward_tensors = ("x1", "x2")

    @checked(p=real(), eps=real())
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self):
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"
