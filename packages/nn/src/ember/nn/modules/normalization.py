"""BatchNorm1d/2d/3d, LayerNorm, GroupNorm over tensor-core's fused norm kernels;
RMSNorm and LocalResponseNorm composed from ember ops."""
from __future__ import annotations

import ember as em
from ember.nn import functional as F, init
from ember.nn._checks import checked, int_or_ints, optional, positive, real, size
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm",
           "LocalResponseNorm", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share (PyTorch's _NormBase): the affine parameters,
    the running statistics as buffers, their resets and the repr. The subclasses give
    PyTorch's defaults for affine and track_running_stats."""

    @checked(num_features=size, eps=real(), momentum=optional(real()))
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(em.ones(num_features, device=device, dtype=dtype))
            self.bias = Parameter(em.zeros(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", em.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", em.ones(num_features, device=device,
                                                        dtype=dtype))
            self.register_buffer("num_batches_tracked", em.zeros((), dtype=em.int64,
                                                                 device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _ranks = (2, 3)

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in self._ranks:
            raise ValueError(f"{name}: expected {' or '.join(f'{r}D' for r in self._ranks)} "
                             f"input, got shape {tuple(input.shape)}")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{name}({self.num_features}) got input with {input.shape[1]} "
                             f"channels (shape {tuple(input.shape)})")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with em.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:          # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or not self.track_running_stats
        return F.batch_norm(input,
                            self.running_mean if not self.training or
                            self.track_running_stats else None,
                            self.running_var if not self.training or
                            self.track_running_stats else None,
                            self.weight, self.bias, use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    _ranks = (5,)


class LayerNorm(Module):
    @checked(normalized_shape=int_or_ints(0), eps=real())
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = normalized_shape
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(em.ones(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(em.zeros(self.normalized_shape, device=device,
                                               dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    @checked(num_groups=positive, num_channels=size, eps=real())
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                             f"num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(em.ones(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(em.zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over normalized_shape) + eps) * weight (Zhang and Sennrich 2019);
    eps=None takes finfo(input.dtype).eps."""

    @checked(normalized_shape=int_or_ints(0), eps=optional(real()))
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = normalized_shape, eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(em.ones(normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Normalise each channel by the squares of its `size` neighbouring channels
    (AlexNet's LRN)."""

    @checked(size=positive, alpha=real(), beta=real(), k=real())
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _LazyNormMixin(LazyModuleMixin):
    """num_features from the first input's channel dim (dim 1; dim 0 for an unbatched
    instance-norm input)."""

    _unbatched_ndim = None

    def _sizes_from_input(self, input, *args, **kwargs):
        name, u = type(self).__name__, self._unbatched_ndim
        if u is not None and input.ndim not in (u, u + 1):
            raise ValueError(f"{name}: expected {u}D or {u + 1}D input, got shape "
                             f"{tuple(input.shape)}")
        if input.ndim < 2:
            raise ValueError(f"{name}: cannot infer num_features from an input of shape "
                             f"{tuple(input.shape)}")
        self.num_features = input.shape[0] if input.ndim == u else input.shape[1]

    def _sizes_from_state(self, shapes):
        one = [s for s in shapes.values() if len(s) == 1]
        if not one:
            return False
        self.num_features = one[0][0]
        return True

    def _lazy_shapes(self):
        return {name: (self.num_features,) for name in
                ("weight", "bias", "running_mean", "running_var")}


class _LazyBatchNorm(_LazyNormMixin):
    @checked(eps=real(), momentum=optional(real()))
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype)


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyBatchNorm, BatchNorm3d):
    cls_to_become = BatchNorm3d
