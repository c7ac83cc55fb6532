"""Argument checks at the public entry of ember's functions.

A function that does `input.shape` on a str raises `'str' object has no attribute
'shape'` from deep inside; `check_tensor_args` makes every public function of a module
check, by parameter name, that its tensor parameters got tensors, and say which op and
which argument otherwise (PyTorch: "conv2d(): argument 'input' must be Tensor, not str").
"""
from __future__ import annotations

import functools
import inspect
import itertools
import numbers
import operator

from ember._C.core import DType, TensorBase

_MISSING = object()
_INT64 = (-2 ** 63, 2 ** 63 - 1)


def _got(value):
    return f"{type(value).__name__} {value!r:.60}"


def tensor_arg(value, op, what="input"):
    """value, checked to be a Tensor (a TypeError naming op, the argument and what it got:
    the one wording of every "is it a tensor" check)."""
    if not isinstance(value, TensorBase):
        raise TypeError(f"{op}: {what} must be a Tensor, got {_got(value)}")
    return value


def tensor_input(fn):
    """fn, with tensor_arg's check of its first argument (the module-level functions whose
    Tensor methods need no check: their self is always a Tensor)."""
    op = fn.__name__
    first = fn.__code__.co_varnames[0]

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        x = args[0] if args else kwargs.get(first, _MISSING)
        if not isinstance(x, TensorBase):
            tensor_arg(None if x is _MISSING else x, op, first)
        return fn(*args, **kwargs)
    return checked


def int_arg(value, name, op):
    """value as a Python int: an int, anything with __index__ (a NumPy integer, a 0-d
    integer tensor); 2.5 is an error, not 2. A TypeError naming op and the argument
    otherwise, and an OverflowError outside int64 (PyTorch's ints are int64)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {_got(value)}") from None
    if not _INT64[0] <= v <= _INT64[1]:
        raise OverflowError(f"{op}: {name} {v} is out of the int64 range")
    return v


def _is_int(v):
    return type(v) is int or isinstance(v, numbers.Integral) or \
        (isinstance(v, TensorBase) and v.ndim == 0)


def _plain_ints(seq, limit):
    """seq as a list when it is a short tuple or list of in-range Python ints (what
    nearly every call passes, so the general conversions below are skipped), else None."""
    if (type(seq) is tuple or type(seq) is list) and len(seq) <= limit:
        for a in seq:
            if type(a) is not int or not _INT64[0] <= a <= _INT64[1]:
                return None
        return list(seq)
    return None


# More entries than any sizes or dims argument can have: ember has at most 16 dims (more
# are refused later with that reason); the long lists (split sizes, tensor_split
# indices) pass their own limit. Counted before converting, so a huge expanded tensor
# or range is refused at once instead of being turned into a Python list.
SIZES_LIMIT = 64


def sizes_arg(args, op, name="size", limit=SIZES_LIMIT):
    """The ints of a sizes or dims argument given as f(2, 3), f((2, 3)), f([2, 3]),
    f(Size), f(2), or a 1-d integer tensor -> [2, 3] (each item as int_arg); at most
    `limit` of them."""
    if len(args) == 1 and (type(args[0]) in (tuple, list) or not _is_int(args[0])):
        args = args[0]
    fast = _plain_ints(args, limit)
    if fast is not None:
        return fast
    if isinstance(args, TensorBase) and args.ndim == 1:
        if args.numel() > limit:
            raise ValueError(f"{op}: {name} has {args.numel()} entries, more than {limit}")
        args = args.tolist()
    if _is_int(args):
        args = (args,)
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise TypeError(f"{op}: {name} must be ints or a sequence of ints, got "
                        f"{_got(args)}")
    try:
        count = len(args)              # a sized sequence is counted, not listed
    except OverflowError:
        count = limit + 1
    except TypeError:
        count = None
    if count is not None and count > limit:
        raise ValueError(f"{op}: {name} has more than {limit} entries")
    items = list(itertools.islice(args, limit + 1))
    if len(items) > limit:
        raise ValueError(f"{op}: {name} has more than {limit} entries")
    return [int_arg(a, name, op) for a in items]


def shape_arg(args, op, name="size"):
    """sizes_arg for the shape of a new tensor: a tuple of non-negative ints."""
    shape = tuple(sizes_arg(args, op, name))
    for s in shape:
        if s < 0:
            raise ValueError(f"{op}: negative dimension {s} in {name} {shape}")
    return shape


def tensors_arg(seq, op, *, nonempty=True, same_device=True):
    """A list of the tensors in a sequence argument (cat([a, b]) and cat((a, b)))."""
    if isinstance(seq, TensorBase):
        raise TypeError(f"{op}: expected a sequence of tensors, got a single Tensor; "
                        f"wrap it in a list")
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
        raise TypeError(f"{op}: expected a sequence of tensors, got {_got(seq)}")
    tensors = list(seq)
    if nonempty and not tensors:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{op}: expected a sequence of tensors, but item {i} is a "
                            f"{_got(t)}")
        if same_device and t.device != tensors[0].device:
            raise RuntimeError(f"{op}: expected all tensors on one device, got "
                               f"{tensors[0].device} and {t.device} (item {i})")
    return tensors


def number_arg(value, name, op):
    """value as a real Python number (a one-element tensor gives its item)."""
    if isinstance(value, TensorBase):
        if value.numel() != 1:
            raise TypeError(f"{op}: {name} must be a number, got a tensor of shape "
                            f"{tuple(value.shape)}")
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number, got {_got(value)}")
    return value


def dtype_arg(value, name, op):
    """value, checked to be an ember dtype."""
    if not isinstance(value, DType):
        raise TypeError(f"{op}: {name} must be an ember dtype, got {_got(value)}")
    return value


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
