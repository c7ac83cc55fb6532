"""Memory formats (torch.memory_format): how a tensor's dimensions are laid out in its
storage. contiguous_format: row-major (NCHW); channels_last: a 4-D (N, C, H, W) tensor
stored as NHWC (strides (H*W*C, 1, W*C, C)); channels_last_3d: a 5-D NCDHW one stored
as NDHWC; preserve_format: a result laid out like its input (the default of clone,
*_like and elementwise results)."""
from __future__ import annotations

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format"]


class memory_format:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
