"""LazyModuleMixin: modules whose input size is inferred at the first call.

A lazy layer (LazyLinear, LazyConv2d, LazyBatchNorm1d, ...) is built with its size
arguments set to 0 and zero-size parameters; a forward pre-hook reads the input size at
the first call, materialises the parameters in place (the same Parameter objects, so an
optimizer made before the first call keeps them), initialises them as the real class
does, and turns the module into that class (`cls_to_become`), as PyTorch's do. Loading a
state dict into a module not yet called needs that first call (a dry run) in ember.
"""
from __future__ import annotations

import ember as em

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__["_lazy_uninitialized"] = True
        self.__dict__["_initialize_hook"] = self.register_forward_pre_hook(
            LazyModuleMixin._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        """Whether the first call, which sizes the parameters, is still to come."""
        return self.__dict__.get("_lazy_uninitialized", False)

    def initialize_parameters(self, *args, **kwargs):
        """Size the parameters from the first call's input (each lazy class defines it)."""
        raise NotImplementedError(f"{type(self).__name__}: initialize_parameters is defined "
                                  f"by each lazy class")

    def _materialize(self, name, shape):
        """Give the zero-size parameter or buffer `name` its real shape, in place."""
        t = getattr(self, name, None)
        if t is None:
            return
        with em.no_grad():
            t.data = em.empty(shape, dtype=t.dtype, device=t.device)

    @staticmethod
    def _infer_parameters(module, args, kwargs):
        first = args[0] if args else next(iter(kwargs.values()), None)
        if not isinstance(first, em.Tensor):
            return None         # forward's argument check says what is wrong
        module.initialize_parameters(*args, **kwargs)
        module.__dict__["_lazy_uninitialized"] = False
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
