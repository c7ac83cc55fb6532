"""The legacy hook-based spectral_norm (torch.nn.utils.spectral_norm): the parameter
<name>_orig, the power-method vectors in the buffers <name>_u and <name>_v, and a
forward pre-hook that sets module.<name> = <name>_orig / sigma before each forward
(one or more power-method steps first, in training mode)."""
from __future__ import annotations

import ember as em
from ember.nn import functional as F
from ember.nn._checks import checked, instance, optional, positive, real
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.parametrizations import _transposed_conv

_module = instance(Module, "a Module")
_name = instance(str, "a str")


def _int_dim(op, name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{op}: {name} must be an int or None, got {type(v).__name__} "
                        f"{v!r:.60}")
    return v

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of spectral_norm."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with em.no_grad():
                w = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    F.normalize(em.mv(w.mT, u), dim=0, eps=self.eps, out=v)
                    F.normalize(em.mv(w, v), dim=0, eps=self.eps, out=u)
            u, v = u.clone(), v.clone()
        sigma = em.dot(u, em.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with em.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module,
                                                       do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        if name not in module._parameters or module._parameters[name] is None:
            raise ValueError(f"spectral_norm: module has no parameter named '{name}'")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with em.no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = F.normalize(em.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1),
                            dim=0, eps=fn.eps)
            v = F.normalize(em.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1),
                            dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach() * 1)     # a plain tensor until the first call
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


@checked(module=_module, name=_name, n_power_iterations=positive, eps=real(),
         dim=optional(_int_dim))
def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization with the hook-based API (PyTorch's older one; see
    nn.utils.parametrizations.spectral_norm): module.<name> = W / sigma(W), sigma from
    the power method on W reshaped around `dim` (default 0, 1 for transposed
    convolutions). PyTorch's state_dict version hooks are not reproduced: the keys are
    <name>_orig, <name>_u, <name>_v as in PyTorch's saved dicts."""
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


@checked(module=_module, name=_name)
def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: module.<name> becomes a plain parameter with the current
    normalized value."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
