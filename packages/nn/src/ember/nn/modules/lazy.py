"""LazyModuleMixin: modules whose input size is inferred at the first call.

A lazy layer (LazyLinear, LazyConv2d, LazyBatchNorm1d, ...) is built with its size
arguments set to 0 and zero-size parameters; a forward pre-hook reads the input size at
the first call, materialises the parameters in place (the same Parameter objects, so an
optimizer made before the first call keeps them), initialises them as the real class
does, and turns the module into that class (`cls_to_become`), as PyTorch's do.
`load_state_dict` into a module not yet called sizes it from the state dict's tensors
instead (then loads them), and it becomes the real class as well.
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
        """Size the parameters from the first call's input, materialise and initialise
        them (each lazy class says how with _sizes_from_input and _sizes_from_state)."""
        if self.has_uninitialized_params():
            self._sizes_from_input(*args, **kwargs)
            self._materialize_all()

    def _sizes_from_input(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: a lazy class defines "
                                  f"_sizes_from_input")

    def _materialize_all(self):
        for name, shape in self._lazy_shapes().items():
            self._materialize(name, shape)
        self.reset_parameters()

    def _materialize(self, name, shape):
        """Give the zero-size parameter or buffer `name` its real shape, in place."""
        t = getattr(self, name, None)
        if t is None:
            return
        with em.no_grad():
            t.data = em.empty(shape, dtype=t.dtype, device=t.device)

    def _lazy_load_state_dict(self, state_dict, prefix):
        """Called by Module.load_state_dict before it copies: size a module not yet
        called from the shapes of its tensors in state_dict."""
        if not self.has_uninitialized_params():
            return
        shapes = {}
        for name, t in list(self._parameters.items()) + list(self._buffers.items()):
            v = state_dict.get(prefix + name)
            if t is not None and t.numel() == 0 and isinstance(v, em.Tensor) and \
                    tuple(v.shape) != tuple(t.shape):
                shapes[name] = tuple(v.shape)
        if shapes and self._sizes_from_state(shapes):
            self._materialize_all()
            self._become()

    def _become(self):
        self.__dict__["_lazy_uninitialized"] = False
        hook = self.__dict__.pop("_initialize_hook", None)
        if hook is not None:
            hook.remove()
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    @staticmethod
    def _infer_parameters(module, args, kwargs):
        first = args[0] if args else next(iter(kwargs.values()), None)
        if not isinstance(first, em.Tensor):
            return None         # forward's argument check says what is wrong
        module.initialize_parameters(*args, **kwargs)
        module._become()
