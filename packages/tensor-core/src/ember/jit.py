"""ember.jit: the parts of torch.jit that are plain Python when a program is not
being scripted, so PyTorch code that decorates with them runs unchanged.

ember has no TorchScript (no compiler of Python to a graph IR): ``script`` and
``trace`` raise NotImplementedError saying so. Programs call them to speed up or to
export a model; on ember run the module itself (eager is the only mode), and save
its weights with ``ember.save(model.state_dict(), f)``.

* ``is_scripting()`` and ``is_tracing()`` are False (ember never scripts or traces);
* ``ignore``, ``unused``, ``export`` return the function they decorate, unchanged
  (``@ignore`` and ``@ignore(drop=True)`` alike): outside TorchScript they are that;
* ``Final`` is ``typing.Final``, ``Attribute(value, type)`` returns value, and
  ``annotate(type, value)`` returns value, as in eager PyTorch.
"""
from __future__ import annotations

import typing

__all__ = ["is_scripting", "is_tracing", "ignore", "unused", "export", "Final",
           "Attribute", "annotate", "script", "trace", "script_if_tracing"]

Final = typing.Final


def is_scripting() -> bool:
    """False: ember code always runs as Python (there is no TorchScript)."""
    return False


def is_tracing() -> bool:
    """False: ember has no tracer of TorchScript graphs."""
    return False


def _decorator(name, fn, kwargs):
    for k in kwargs:
        if k != "drop":
            raise TypeError(f"ember.jit.{name}: unexpected keyword argument {k!r}")
    if fn is None:                       # @ignore(drop=True)
        return lambda f: f
    if not callable(fn):
        raise TypeError(f"ember.jit.{name}: expected a function, got {type(fn).__name__}")
    return fn


def ignore(drop=False, **kwargs):
    """@ignore / @ignore(drop=True): the function, unchanged."""
    if callable(drop):
        return drop
    return _decorator("ignore", None, kwargs)


def unused(fn):
    """@unused: the function (or method), unchanged."""
    return _decorator("unused", fn, {})


def export(fn):
    """@export: the method, unchanged."""
    return _decorator("export", fn, {})


def script_if_tracing(fn):
    """The function, unchanged (ember never traces)."""
    return _decorator("script_if_tracing", fn, {})


def Attribute(value, type=None):  # noqa: N802 (PyTorch's name)
    """value itself, as torch.jit.Attribute is outside TorchScript."""
    return value


def annotate(the_type, the_value):
    """the_value itself, as torch.jit.annotate is outside TorchScript."""
    return the_value


_NO_TORCHSCRIPT = ("ember has no TorchScript: there is no compiler of Python code to a "
                   "graph, so ember.jit.{op} cannot {what}. Run the module or function "
                   "itself (ember is always eager), and save a model with "
                   "ember.save(model.state_dict(), path)")


def script(obj=None, *args, **kwargs):
    """Raises NotImplementedError: ember has no TorchScript."""
    raise NotImplementedError(_NO_TORCHSCRIPT.format(op="script",
                                                     what=f"script {_what(obj)}"))


def trace(func=None, *args, **kwargs):
    """Raises NotImplementedError: ember has no TorchScript."""
    raise NotImplementedError(_NO_TORCHSCRIPT.format(op="trace",
                                                     what=f"trace {_what(func)}"))


def _what(obj):
    return getattr(obj, "__name__", None) or type(obj).__name__
