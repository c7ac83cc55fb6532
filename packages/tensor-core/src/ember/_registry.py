"""Tensor methods are plain functions, registered where they are written:

    @tensor_method                      # Tensor.flip(self, ...)
    def flip(input, dims): ...

    @tensor_method(names=("permute", "permute_dims"))   # under several names
    def permute(input, *dims): ...

ember/__init__.py installs them all on ember.Tensor once every module is imported,
so a topic module (shape, indexing, random, ...) never edits the Tensor class.
"""
from __future__ import annotations

METHODS: dict = {}


def tensor_method(fn=None, *, names=None):
    """Register fn as a Tensor method under its own name (or under `names`)."""
    def register(f):
        for n in (names or (f.__name__,)):
            if n in METHODS and METHODS[n] is not f:
                raise RuntimeError(f"ember: Tensor.{n} registered twice "
                                   f"({METHODS[n].__module__} and {f.__module__})")
            METHODS[n] = f
        return f
    return register(fn) if fn is not None else register


def install(cls):
    for name, fn in METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, fn)
