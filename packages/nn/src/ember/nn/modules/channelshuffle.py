"""ChannelShuffle (ShuffleNet's channel permutation)."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn._checks import checked, positive
from ember.nn.modules.module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """(N, C, *): the channels, seen as (groups, C / groups), transposed."""

    @checked(groups=positive)
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
