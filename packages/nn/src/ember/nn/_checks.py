"""Argument checks at the public entry of the nn layers, nn.functional, nn.init,
nn.utils, the optimizers and the lr schedulers.

A layer that does `in_channels % groups` on a str raises `unsupported operand type(s)
for %` from deep inside; `checked` makes a function check its parameters by name first
and say which class or function and which argument instead ("Conv2d: in_channels must
be an int, got str 'a'"): a TypeError for a wrong type, a ValueError for a bad value,
as in PyTorch. Tensor parameters of whole modules are ember._args's.

A check is `check(op, name, value) -> value` (normalised: ints as int, int tuples as
tuples); the factories below make them.
"""
from __future__ import annotations

import functools
import inspect
import numbers

from ember._C.core import TensorBase


def _got(v):
    return f"{type(v).__name__} {v!r:.60}"


def checked(**checks):
    """Decorator: run checks[name] on each parameter named in `checks` that the call
    passes (defaults are trusted). The op in messages is type(self).__name__ for a
    method (a subclass's name from its base's __init__), else the function's name."""
    def decorate(fn):
        params = inspect.signature(fn).parameters
        names = list(params)
        method = names[:1] == ["self"]
        where = []
        for name, check in checks.items():
            p = params[name]   # a KeyError here is a misspelt check, at import
            positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            where.append((name, names.index(name) if positional else None, check))

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            op = type(args[0]).__name__ if method and args else fn.__name__
            args = list(args)
            for name, pos, check in where:
                if pos is not None and pos < len(args):
                    args[pos] = check(op, name, args[pos])
                elif name in kwargs:
                    kwargs[name] = check(op, name, kwargs[name])
            return fn(*args, **kwargs)
        return wrapper
    return decorate


def optional(check):
    """check, with None allowed."""
    def optional_check(op, name, v):
        return None if v is None else check(op, name, v)
    return optional_check


def integer(min=None):
    """An int (bool and NumPy ints too, as in PyTorch), at least `min`."""
    what = {None: "an int", 0: "a non-negative int", 1: "a positive int"}.get(
        min, f"an int >= {min}")

    def check(op, name, v):
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"{op}: {name} must be {what}, got {_got(v)}")
        if min is not None and v < min:
            raise ValueError(f"{op}: {name} must be {what}, got {v}")
        if not -2 ** 63 <= v < 2 ** 63:
            raise OverflowError(f"{op}: {name}={v} does not fit in int64")
        return int(v)
    return check


size = integer(0)        # a number of features, channels, layers ...: 0 is allowed
positive = integer(1)
index = integer()        # a dim or an index: negative counts from the end


def real(lo=None, hi=None, lo_open=False, hi_open=False):
    """A real number (int, float, bool, NumPy scalar) in the range given, if any
    (NaN is outside every range)."""
    def check(op, name, v):
        if not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a real number, got {_got(v)}")
        low_ok = lo is None or (v > lo if lo_open else v >= lo)
        high_ok = hi is None or (v < hi if hi_open else v <= hi)
        if not (low_ok and high_ok):
            range_ = ("(" if lo_open else "[") + f"{'-inf' if lo is None else lo}, " \
                f"{'inf' if hi is None else hi}" + (")" if hi_open or hi is None else "]")
            raise ValueError(f"{op}: {name} must be in {range_}, got {v}")
        return v
    return check


def real_or_tensor(op, name, v):
    """A real number or a one-element Tensor (an optimizer's lr, a total norm)."""
    if isinstance(v, TensorBase):
        if v.numel() != 1:
            raise ValueError(f"{op}: Tensor {name} must be 1-element, got shape "
                             f"{tuple(v.shape)}")
        return v
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a float or a Tensor, got {_got(v)}")
    return v


def norm_order(op, name, v):
    """A norm's order: a real number, or a string of one ('inf'), as float() takes."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise ValueError(f"{op}: {name} must be a real number or 'inf', got {v!r}") \
                from None
    return real()(op, name, v)


def ints(min=None):
    """A sequence of ints (any length) as a tuple."""
    item = integer(min)

    def check(op, name, v):
        if isinstance(v, (str, bytes, TensorBase)) or not _iterable(v):
            raise TypeError(f"{op}: {name} must be a sequence of ints, got {_got(v)}")
        v = tuple(v)
        for x in v:
            if not isinstance(x, numbers.Integral):
                raise TypeError(f"{op}: {name} must be a sequence of ints, got {v!r:.60}")
        return tuple(item(op, name, x) for x in v)
    return check


def int_tuple(op, name, v, n, min=None, none_ok=False):
    """An int or a sequence of n ints, as a tuple of n ints (PyTorch's _pair and
    _ntuple, checked); none_ok: entries may be None (adaptive pooling's sizes)."""
    what = f"an int or a tuple of {n} ints"
    if isinstance(v, numbers.Integral) or (none_ok and v is None):
        v = (v,) * n
    elif isinstance(v, (str, bytes, TensorBase)) or not _iterable(v):
        raise TypeError(f"{op}: {name} must be {what}, got {_got(v)}")
    v = tuple(v)
    if not all(isinstance(x, numbers.Integral) or (none_ok and x is None) for x in v):
        raise TypeError(f"{op}: {name} must be {what}, got {v!r:.60}")
    if len(v) != n:
        raise ValueError(f"{op}: {name} must be {what}, got {v!r:.60}")
    item = integer(min)
    return tuple(x if x is None else item(op, name, x) for x in v)


def int_or_ints(min=None):
    """An int or a sequence of ints, as a tuple (LayerNorm's normalized_shape)."""
    seq = ints(min)

    def check(op, name, v):
        return (integer(min)(op, name, v),) if isinstance(v, numbers.Integral) else \
            seq(op, name, v)
    return check


def instance(cls, what):
    """An instance of cls."""
    def check(op, name, v):
        if not isinstance(v, cls):
            raise TypeError(f"{op}: {name} must be {what}, got {_got(v)}")
        return v
    return check


tensor = instance(TensorBase, "a Tensor")


def function(op, name, v):
    if not callable(v):
        raise TypeError(f"{op}: {name} must be callable, got {_got(v)}")
    return v


def iterable_of(cls, what):
    """An iterable of instances of cls, as a list."""
    def check(op, name, v):
        if isinstance(v, (str, bytes)) or not _iterable(v):
            raise TypeError(f"{op}: {name} must be an iterable of {what}, got {_got(v)}")
        v = list(v)
        for i, x in enumerate(v):
            if not isinstance(x, cls):
                raise TypeError(f"{op}: {name} must be an iterable of {what}, but item {i} "
                                f"is {_got(x)}")
        return v
    return check


def tensors(none_ok=False):
    """A Tensor or an iterable of Tensors (parameters, gradients), as a list;
    none_ok: items may be None (and are dropped)."""
    def check(op, name, v):
        if isinstance(v, TensorBase):
            return [v]
        what = "a Tensor or an iterable of Tensors"
        if isinstance(v, (str, bytes)) or not _iterable(v):
            raise TypeError(f"{op}: {name} must be {what}, got {_got(v)}")
        v = list(v)
        for i, t in enumerate(v):
            if not isinstance(t, TensorBase) and not (none_ok and t is None):
                raise TypeError(f"{op}: {name} must be {what}, but item {i} is {_got(t)}")
        return [t for t in v if t is not None]
    return check


def _iterable(v):
    try:
        iter(v)
    except TypeError:
        return False
    return True
