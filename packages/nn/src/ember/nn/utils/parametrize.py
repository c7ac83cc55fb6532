"""Parametrizations (torch.nn.utils.parametrize): make a module's parameter or buffer
the output of a function of other tensors, recomputed at each access.

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT
    parametrize.register_parametrization(layer, "weight", Symmetric())
    layer.weight            # Symmetric()(layer.parametrizations.weight.original)

As in PyTorch: the module's class is replaced by a subclass ("ParametrizedLinear") with
a property for the tensor; the unconstrained tensor lives at
module.parametrizations[name].original (original0, original1, ... when the
parametrization's right_inverse returns several); assigning module.<name> = value goes
through right_inverse; state_dict keys are "parametrizations.<name>.original".
"""
from __future__ import annotations

import collections.abc
import contextlib

import ember as em
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once, at its first
    access, and reused (e.g. a weight used at every step of an RNN)."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_data(original, new):
    """original takes new's values (and shape), keeping its identity (PyTorch's set_)."""
    original.data = new.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the unconstrained
    tensor(s) they start from (`original`, or `original0`, `original1`, ...)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with em.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, em.Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, em.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            with em.no_grad():
                if new is not original:
                    _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, em.Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(originali).__name__}.")
                originali = originali.detach()
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, em.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError(f"Registering a parametrization may not change the shape of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value):
        """Set the original tensor(s) so that the parametrization gives `value`
        (each parametrization's right_inverse, last to first)."""
        with em.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, em.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_data(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, em.Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                         f"Got element {i} of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{tensor.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    _set_data(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through "
                           "state_dict(). See: https://pytorch.org/tutorials/beginner/"
                           "saving_loading_models.html#saving-loading-a-general-checkpoint-"
                           "for-inference-and-or-resuming-training")

    def deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        import copy
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return replica

    dct = {"__getstate__": getstate, "__module__": cls.__module__}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise RuntimeError(f"register_parametrization: '{tensor_name}' still exists on the "
                           f"module")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = parametrization()
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> (a parameter or buffer) parametrization(original); a
    second call on the same name chains parametrizations. The parametrization is a
    Module whose forward takes the original tensor(s); its optional right_inverse(X)
    gives the original(s) for a value X (used at registration and on assignment).
    unsafe=True allows a parametrization that changes the shape or dtype. Returns the
    module."""
    if not isinstance(module, Module):
        raise TypeError(f"register_parametrization: module must be a Module, got "
                        f"{type(module).__name__}")
    if not isinstance(tensor_name, str):
        raise TypeError(f"register_parametrization: tensor_name must be a str, got "
                        f"{type(tensor_name).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be a Module, "
                        f"got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, em.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of "
                                 f"the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ValueError(f"Registering a parametrization may not change the shape of "
                                 f"the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.shape: {y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {x.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, em.Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a "
                                         f"tensor. Got: {type(z).__name__}")
                    if z.dtype != y.dtype or z.shape != y.shape:
                        raise ValueError(f"The tensor returned by parametrization."
                                         f"right_inverse must have the same dtype and shape "
                                         f"as module.{tensor_name}, unless the `unsafe` flag "
                                         f"is enabled.\nmodule.{tensor_name}: {y.dtype} "
                                         f"{tuple(y.shape)}\nreturned: {z.dtype} "
                                         f"{tuple(z.shape)}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"register_parametrization: module.{tensor_name} is None")
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether module has a parametrization (on tensor_name, if given)."""
    if not isinstance(module, Module):
        raise TypeError(f"is_parametrized: module must be a Module, got {type(module).__name__}")
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Remove the parametrizations of module.<tensor_name>: it becomes a plain
    parameter (or buffer) again, holding the parametrized value (leave_parametrized)
    or the original tensor. The module gets its class back when none are left."""
    if not isinstance(module, Module):
        raise TypeError(f"remove_parametrizations: module must be a Module, got "
                        f"{type(module).__name__}")
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with em.no_grad():
                t = getattr(module, tensor_name)
                _set_data(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before parametrizations were registered on it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Give to_module the parametrizations (and their original tensors) of
    from_module: all of them, or tensor_name's. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not is_parametrized(from_module, name):
            raise ValueError(f"transfer_parametrizations_and_params: {name} is not "
                             f"parametrized on the source module")
        src = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            to_module.register_parameter(
                name, Parameter(getattr(from_module, name).detach().clone()))
        for p in src:
            if not is_parametrized(to_module, name) or \
                    p not in list(to_module.parametrizations[name]):
                register_parametrization(to_module, name, p)
        dst = to_module.parametrizations[name]
        with em.no_grad():
            if src.is_tensor:
                _set_data(dst.original, src.original)
            else:
                for i in range(src.ntensors):
                    _set_data(getattr(dst, f"original{i}"), getattr(src, f"original{i}"))
    return to_module
