"""The default device of ember's factory functions: ember.set_default_device and the
`with ember.device(...)` stack (PyTorch's semantics: a factory function called without
`device=` makes its tensor there; an explicit device always wins)."""
from __future__ import annotations

import functools
import threading

from ember._C import core as _core

_state = threading.local()      # the `with device` stack is per thread, as PyTorch's modes
_global = [None]                # set_default_device: every thread
_active = [0]                   # `with device` blocks open in any thread, + 1 when _global is
#                                 set: 0 lets a factory call skip the lookup altogether


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def _push(device):
    _stack().append(device)
    _active[0] += 1


def _pop():
    _stack().pop()
    _active[0] -= 1


def current():
    """The device a factory call without device= uses, or None for the CPU default."""
    s = getattr(_state, "stack", None)
    if s:
        return s[-1]
    return _global[0]


def get_default_device():
    """The device factory functions use when given none: torch.get_default_device."""
    d = current()
    if d is None:
        return _core.as_device("cpu")
    if d.type != "cpu" and d.index < 0:
        # PyTorch names the current index of a bare "cuda"
        return _core.resolve_device(d)
    return d


def set_default_device(device):
    """Make `device` (a device, a string, an int for the current accelerator, or None
    for the CPU) the default of ember's factory functions (empty, zeros, ones, full,
    arange, linspace, logspace, eye, tensor, as_tensor, asarray, rand, randn, randint,
    randperm, range, scalar_tensor, tril_indices, triu_indices,
    empty_strided, empty_permuted): a call without `device=` makes its tensor there.
    Like PyTorch's, this costs a check per factory call and is not used by ember's own
    kernels for their temporaries."""
    if device is None:
        if _global[0] is not None:
            _active[0] -= 1
        _global[0] = None
        return
    if isinstance(device, int) and not isinstance(device, bool):
        from ember import accelerator
        acc = accelerator.current_accelerator()
        if acc is None:
            raise RuntimeError(f"set_default_device: the int {device} names an accelerator "
                               f"device, but none is available")
        device = f"{acc.type}:{device}"
    d = _core.as_device(device)
    new = None if d.type == "cpu" else d
    _active[0] += (new is not None) - (_global[0] is not None)
    _global[0] = new


def wrap_factory(fn, device_pos=None):
    """fn with `device` defaulting to the current default device."""
    @functools.wraps(fn)
    def factory(*args, **kwargs):
        if not _active[0]:
            return fn(*args, **kwargs)                  # no default set: the plain call
        if kwargs.get("device") is None:
            d = current()
            if d is not None and (device_pos is None or len(args) <= device_pos):
                kwargs["device"] = d
        return fn(*args, **kwargs)
    factory.__wrapped_factory__ = fn
    return factory


FACTORIES = ("empty", "zeros", "ones", "full", "arange", "linspace", "logspace", "eye",
             "tensor", "as_tensor", "asarray", "rand", "randn", "randint", "randperm",
             "range", "scalar_tensor", "tril_indices", "triu_indices", "empty_strided",
             "empty_permuted")
# positional index of `device` where a factory takes it positionally
_DEVICE_POS = {"as_tensor": 2}


def install(namespace):
    """Wrap ember's factory functions in `namespace` (ember's globals)."""
    for name in FACTORIES:
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "__wrapped_factory__"):
            namespace[name] = wrap_factory(fn, _DEVICE_POS.get(name))
