"""Argument checks at the public entry of a whole module's functions.

A function that does `input.shape` on a str raises `'str' object has no attribute
'shape'` from deep inside; `check_tensor_args` makes every public function of a module
check, by parameter name, that its tensor parameters got tensors, and say which op and
which argument otherwise (PyTorch: "conv2d(): argument 'input' must be Tensor, not str").
"""
from __future__ import annotations

import functools
import inspect

from ember._C.core import TensorBase

_MISSING = object()


def _tensor_params(fn, names):
    """[(position or None, name, None allowed)] of fn's parameters named in `names`."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    out = []
    for i, p in enumerate(params):
        if p.name in names and p.kind is not p.VAR_POSITIONAL and p.kind is not p.VAR_KEYWORD:
            pos = i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None
            out.append((pos, p.name, p.default is None))
    return out


def tensor_args(fn, names, op=None):
    """fn, checking that each parameter named in `names` is a Tensor (or None where
    that is its default)."""
    checks = _tensor_params(fn, names)
    if not checks:
        return fn
    op = op or fn.__name__

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for pos, name, optional in checks:
            v = args[pos] if pos is not None and pos < len(args) else kwargs.get(name, _MISSING)
            if v is _MISSING or (v is None and optional) or isinstance(v, TensorBase):
                continue
            raise TypeError(f"{op}: argument '{name}' must be a Tensor"
                            f"{' or None' if optional else ''}, got {type(v).__name__} "
                            f"{v!r:.60}")
        return fn(*args, **kwargs)
    return checked


def check_tensor_args(namespace, names):
    """Wrap every public function defined in the module whose dict is `namespace` with
    tensor_args(names)."""
    for name, fn in list(namespace.items()):
        if not name.startswith("_") and inspect.isfunction(fn) and \
                fn.__module__ == namespace["__name__"]:
            namespace[name] = tensor_args(fn, names)
