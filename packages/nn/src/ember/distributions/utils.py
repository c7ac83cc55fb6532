"""Helpers shared by the distributions (the names of torch.distributions.utils)."""
import functools
import math
import numbers

import ember as em

euler_constant = 0.57721566490153286060


def _dtype_device(values):
    tensors = [v for v in values if isinstance(v, em.Tensor)]
    if tensors:
        return tensors[0].dtype, tensors[0].device
    return em.get_default_dtype(), None


def broadcast_all(*values):
    """Tensors and numbers -> tensors of one broadcast shape (numbers take the dtype and
    device of the first tensor, or the default dtype)."""
    for v in values:
        if not isinstance(v, (em.Tensor, numbers.Number)):
            raise ValueError(f"broadcast_all: input arguments must all be instances of "
                             f"numbers.Number or ember.Tensor, got {type(v).__name__}")
    dtype, device = _dtype_device(values)
    ts = [v if isinstance(v, em.Tensor) else em.tensor(float(v), dtype=dtype, device=device)
          for v in values]
    return tuple(em.broadcast_tensors(*ts))


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def clamp_probs(probs):
    eps = em.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def softplus(x):
    """log(1 + exp(x)), stable for large |x|."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()


def sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:-dim], -1).sum(-1)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    idx = [(i, j) for i in range(n) for j in range(n) if j - i <= diag]
    return em.stack([mat[..., i, j] for i, j in idx], -1)


class lazy_property:
    """A property computed once per instance, on first access (as PyTorch's)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with em.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _standard_normal(shape, dtype, device):
    return em.randn(*shape, dtype=dtype, device=device) if len(shape) else \
        em.randn(1, dtype=dtype, device=device).reshape(())


def _uniform01(shape, dtype, device):
    return em.rand(*shape, dtype=dtype, device=device) if len(shape) else \
        em.rand(1, dtype=dtype, device=device).reshape(())


LOG_2PI = math.log(2 * math.pi)
