"""The legacy hook-based weight_norm (torch.nn.utils.weight_norm), deprecated in PyTorch
in favour of nn.utils.parametrizations.weight_norm: module.<name>_g and <name>_v are the
parameters and a forward pre-hook recomputes module.<name> before each forward."""
from __future__ import annotations

import warnings

from ember.nn._checks import checked, instance, optional
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.parametrizations import _norm_except_dim, _weight_norm

_module = instance(Module, "a Module")
_name = instance(str, "a str")


def _int_dim(op, name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{op}: {name} must be an int or None, got {type(v).__name__} "
                        f"{v!r:.60}")
    return v

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook of weight_norm."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if name not in module._parameters or module._parameters[name] is None:
            raise ValueError(f"weight_norm: module has no parameter named '{name}'")
        weight = module._parameters[name]
        if dim is not None and dim < 0:
            dim += weight.ndim
        fn = WeightNorm(name, dim)
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(_norm_except_dim(weight.detach(), fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


@checked(module=_module, name=_name, dim=optional(_int_dim))
def weight_norm(module, name="weight", dim=0):
    """Weight normalization with the parameters <name>_g (magnitude, norm over every
    dim but `dim`; dim=None: the whole tensor) and <name>_v (direction); module.<name>
    is recomputed before each forward. Deprecated (FutureWarning), as in PyTorch: use
    nn.utils.parametrizations.weight_norm."""
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of "
                  "torch.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


@checked(module=_module, name=_name)
def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: module.<name> becomes a plain parameter with the current
    normalized value."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
