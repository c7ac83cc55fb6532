"""InstanceNorm1d/2d/3d (PyTorch's defaults: affine=False, track_running_stats=False),
over ember.nn.functional.instance_norm."""
from __future__ import annotations

import warnings

from ember.nn import functional as F
from ember.nn._checks import checked, optional, real
from ember.nn.modules.normalization import _LazyNormMixin, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _spatial = 1          # spatial dims: the input is (N, C, *spatial) or (C, *spatial)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    def forward(self, input):
        name, unbatched = type(self).__name__, self._spatial + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise ValueError(f"{name}: expected {unbatched}D or {unbatched + 1}D input, got "
                             f"shape {tuple(input.shape)}")
        channels = input.shape[input.ndim - unbatched]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(f"{name}: expected input's size at dim "
                                 f"{input.ndim - unbatched} to match num_features "
                                 f"({self.num_features}), but got: {channels}")
            warnings.warn(f"{name}: input's size at dim {input.ndim - unbatched} ({channels}) "
                          f"does not match num_features ({self.num_features}); as affine is "
                          f"False, num_features is unused", UserWarning, stacklevel=2)
        x = input.unsqueeze(0) if input.ndim == unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        # as PyTorch's: momentum=None leaves the running stats as they are, and
        # num_batches_tracked is kept (for state dicts) but not counted
        momentum = self.momentum if self.momentum is not None else 0.0
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats, momentum, self.eps)
        return out.squeeze(0) if input.ndim == unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """(N, C, L) or (C, L)."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """(N, C, H, W) or (C, H, W)."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """(N, C, D, H, W) or (C, D, H, W)."""
    _spatial = 3


class _LazyInstanceNorm(_LazyNormMixin):
    @checked(eps=real(), momentum=optional(real()))
    def __init__(self, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype)


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    cls_to_become = InstanceNorm1d
    _unbatched_ndim = 2


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    cls_to_become = InstanceNorm2d
    _unbatched_ndim = 3


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    cls_to_become = InstanceNorm3d
    _unbatched_ndim = 4
