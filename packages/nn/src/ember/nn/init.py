"""Parameter initialisation, in place and without recording (PyTorch's nn.init)."""
from __future__ import annotations

import math
import warnings

import ember as em
from ember._args import check_tensor_args as _check_tensor_args
from ember.nn._checks import checked as _checked, real as _real, real_or_tensor as _real_or_tensor

_number = _real()

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "trunc_normal_", "dirac_", "sparse_"]
# (also here, outside __all__: the deprecated spellings without the underscore, uniform,
# normal, constant, xavier_*, kaiming_*, orthogonal, sparse, which warn FutureWarning)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table): 1 for linear, the
    convolutions and transposed convolutions (1d/2d/3d) and sigmoid; 5/3 for tanh;
    sqrt(2) for relu; sqrt(2 / (1 + negative_slope^2)) for leaky_relu (param, default
    0.01); 3/4 for selu."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor, op):
    if tensor.ndim < 2:
        raise ValueError(f"{op}: fan in and fan out can not be computed for a tensor with "
                         f"fewer than 2 dimensions (shape {tuple(tensor.shape)})")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


@_checked(a=_number, b=_number)
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with em.no_grad():
        return tensor.uniform_(a, b, generator=generator)


@_checked(mean=_number, std=_number)
def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with em.no_grad():
        return tensor.normal_(mean, std, generator=generator)


@_checked(val=_real_or_tensor)
def constant_(tensor, val):
    with em.no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-d tensors are supported, got shape {tuple(tensor.shape)}")
    with em.no_grad():
        tensor.copy_(em.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


@_checked(gain=_number)
def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    if tensor.numel() == 0:
        return tensor          # nothing to fill (and fans of 0 have no std)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


@_checked(gain=_number)
def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    if tensor.numel() == 0:
        return tensor
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity, op):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, op)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        return 0.0
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


@_checked(a=_number)
def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound, generator)


@_checked(a=_number)
def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"),
                   generator)


@_checked(gain=_number)
def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample (PyTorch's
    algorithm). ember.linalg has no qr yet, so the Q factor is computed by modified
    Gram-Schmidt over ember ops in float64, which gives QR's Q with R's diagonal
    positive (PyTorch's sign fix); then scaled by gain."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor          # PyTorch's no-op
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = em.randn(rows, cols, dtype=em.float64, generator=generator)
    a = flat.T if rows < cols else flat          # tall: orthonormalise its columns
    q = []
    for j in range(a.shape[1]):
        v = a[:, j].clone()
        for u in q:
            v = v - (u * v).sum() * u
        v = v / em.linalg.vector_norm(v)
        q.append(v)
    qm = em.stack(q, 1)
    if rows < cols:
        qm = qm.T
    with em.no_grad():
        tensor.copy_((qm * gain).reshape(tensor.shape))
    return tensor


@_checked(mean=_number, std=_number, a=_number, b=_number)
def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) values redrawn until they fall in [a, b]."""
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    with em.no_grad():
        out = em.empty(tensor.shape, dtype=em.float64).normal_(mean, std, generator=generator)
        for _ in range(100):
            bad = (out < a) | (out > b)
            if not bool(bad.any()):
                break
            fresh = em.empty(tensor.shape, dtype=em.float64).normal_(mean, std,
                                                                    generator=generator)
            out = em.where(bad, fresh, out)
        tensor.copy_(out.clamp(a, b))
    return tensor


def dirac_(tensor, groups=1):
    """The Dirac delta for {3, 4, 5}-d convolution weights: each output channel of each
    of `groups` groups passes one input channel through unchanged (a 1 at the kernel's
    centre), as many as min(out_channels / groups, in_channels); zeros elsewhere."""
    groups = _checked_int("dirac_", "groups", groups, 1)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError(f"dirac_: dim 0 must be divisible by groups (size {sizes[0]}, "
                         f"groups {groups})")
    per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    with em.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, sizes[1])):
                tensor[(g * per_group + d, d) + centre] = 1
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A sparse 2-d matrix (Martens, 2010): Normal(0, std) values with
    ceil(sparsity * rows) of each column's entries, chosen at random, set to zero."""
    sparsity = _number("sparse_", "sparsity", sparsity)
    std = _number("sparse_", "std", std)
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with em.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = em.randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
            tensor[zero_rows, col] = 0
    return tensor


def _checked_int(op, name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__} {v!r:.60}")
    if v < lo:
        raise ValueError(f"{op}: {name} must be at least {lo}, got {v}")
    return v


def _deprecated(new):
    old = new.__name__[:-1]

    def fn(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = old
    fn.__doc__ = f"Deprecated: {new.__name__} (warns FutureWarning)."
    return fn


# a clear TypeError naming the function when `tensor` is not a Tensor
_check_tensor_args(globals(), {"tensor"})

# (after the wrapping: the deprecated spellings call the checked functions)
uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
