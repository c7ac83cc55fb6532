"""Tensor methods of PyTorch's legacy and introspection API: the Python-callable maps
(apply_, map_, map2_), new/resize/resize_as, set_/is_set_to, as_subclass,
const_data_ptr, dim_order, output_nr, is_meta, is_inference, record_stream, to_dense,
module_load. Each says what it means for ember where PyTorch's meaning involves a
feature ember lacks."""
from __future__ import annotations

import builtins
import numbers
import warnings

from ember._args import int_arg, sizes_arg, tensor_arg
from ember._C import core as _core
from ember._registry import tensor_method

_TB = _core.TensorBase

__all__ = []


# Python callables over the elements (CPU only, as PyTorch) ---------------------------

def _cpu_only(t, op):
    if t.device.type != "cpu":
        raise TypeError(f"{op}: only CPU tensors are supported (the function is a Python "
                        f"callable), got a tensor on {t.device}")


def _check_callable(fn, op):
    if not builtins.callable(fn):
        raise TypeError(f"{op}: callable must be a Python callable, got {type(fn).__name__}")


def _write_values(self, values, op):
    from ember.ops.creation import tensor
    new = tensor(values, dtype=self.dtype).reshape(self.shape)
    self.copy_(new)
    return self


@tensor_method
def apply_(self, callable):  # noqa: A002 - PyTorch's name
    """Replace each element x with callable(x), in place, in Python (CPU tensors only;
    slow, as in PyTorch)."""
    _cpu_only(self, "apply_")
    _check_callable(callable, "apply_")
    if self.requires_grad:
        raise RuntimeError("apply_: a tensor that requires grad cannot be changed in place "
                           "by a Python function")
    return _write_values(self, [callable(v) for v in self.reshape(-1).tolist()], "apply_")


@tensor_method
def map_(self, tensor, callable):  # noqa: A002
    """self[i] = callable(self[i], tensor[i]) in place, tensor broadcast to self's shape
    (CPU only)."""
    tensor = tensor_arg(tensor, "map_", "tensor")
    _cpu_only(self, "map_")
    _cpu_only(tensor, "map_")
    _check_callable(callable, "map_")
    other = tensor.expand(self.shape).reshape(-1).tolist()
    mine = self.reshape(-1).tolist()
    return _write_values(self, [callable(a, b) for a, b in zip(mine, other)], "map_")


@tensor_method
def map2_(self, x, y, callable):  # noqa: A002
    """self[i] = callable(self[i], x[i], y[i]) in place, x and y broadcast to self's
    shape (CPU only)."""
    x = tensor_arg(x, "map2_", "x")
    y = tensor_arg(y, "map2_", "y")
    for t in (self, x, y):
        _cpu_only(t, "map2_")
    _check_callable(callable, "map2_")
    xs = x.expand(self.shape).reshape(-1).tolist()
    ys = y.expand(self.shape).reshape(-1).tolist()
    mine = self.reshape(-1).tolist()
    return _write_values(self, [callable(a, b, c) for a, b, c in zip(mine, xs, ys)], "map2_")


# legacy constructors and resizes -----------------------------------------------------

@tensor_method
def new(self, *args, device=None):
    """The legacy Tensor.new: a tensor of self's dtype (and device unless given) made by
    the legacy constructor's rules: new() is empty, new(2, 3) / new(Size) uninitialised
    of that shape, new(sequence) / new(tensor) from the data."""
    from ember.ops.creation import empty, tensor
    dev = self.device if device is None else device
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return empty(*args, dtype=self.dtype, device=dev)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, _core.TensorBase):
            if a.dtype != self.dtype:
                raise TypeError(f"new: expected a tensor of dtype {self.dtype!r}, got "
                                f"{a.dtype!r}")
            return a if device is None or a.device == _core.as_device(device) else a.to(dev)
        if type(a).__name__ == "Size" or (isinstance(a, tuple) and a and all(
                isinstance(v, numbers.Integral) for v in a) and type(a) is not tuple):
            return empty(tuple(a), dtype=self.dtype, device=dev)
        return tensor(a, dtype=self.dtype, device=dev)
    raise TypeError(f"new: expected sizes, a Size, a sequence or a tensor, got "
                    f"{tuple(type(a).__name__ for a in args)}")


@tensor_method
def resize(self, *sizes):
    """Deprecated out-of-place resize (PyTorch warns too): a tensor of the new shape
    holding self's elements in order (a view where self is contiguous and big
    enough, as PyTorch's; grown memory is uninitialised)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = sizes_arg(sizes, "resize")
    n = 1
    for s in shape:
        n *= s
    if self.is_contiguous() and n <= self.numel():
        return self.detach().reshape(-1)[:n].view(tuple(shape))
    return self.detach().clone().resize_(*shape)


@tensor_method
def resize_as(self, tensor):
    """Deprecated out-of-place resize_as: resize(tensor.shape) (PyTorch warns too)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    tensor = tensor_arg(tensor, "resize_as", "tensor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, *tensor.shape)


# storage identity ----------------------------------------------------------------------

@tensor_method
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self view other memory, in place: set_() an empty storage, set_(tensor)
    the same storage, offset, shape and strides as tensor, set_(storage, offset, size,
    stride) a view of an ember.Storage (stride contiguous when not given)."""
    if self.requires_grad and not self.is_leaf:
        raise RuntimeError("set_: cannot change the storage of a non-leaf tensor that "
                           "requires grad")
    if source is None:
        if size is not None or storage_offset:
            raise TypeError("set_: size and storage_offset need a source")
        new = _core.empty((0,), self.dtype, self.device)
    elif isinstance(source, _TB):
        if source.dtype != self.dtype:
            raise TypeError(f"set_: expected a source of dtype {self.dtype!r}, got "
                            f"{source.dtype!r}")
        storage, _, shape, strides, offset = source._layout()
        new = _core.as_strided_from(storage, self.dtype, list(shape), list(strides), offset)
    elif isinstance(source, _core.Storage):
        if source.device.type != self.device.type:
            raise TypeError(f"set_: the storage is on {source.device}, the tensor on "
                            f"{self.device}")
        offset = int_arg(storage_offset, "storage_offset", "set_")
        if size is None:
            n = len(source) // self.dtype.itemsize - offset
            shape = [max(n, 0)]
        else:
            shape = list(sizes_arg(size, "set_"))
        if stride is None:
            strides, step = [], 1
            for s in reversed(shape):
                strides.append(step)
                step *= max(s, 1)
            strides = strides[::-1]
        else:
            strides = list(sizes_arg(stride, "set_", "stride"))
            if len(strides) != len(shape):
                raise ValueError(f"set_: size {tuple(shape)} and stride {tuple(strides)} "
                                 f"have different lengths")
        if offset < 0:
            raise ValueError(f"set_: storage_offset must be non-negative, got {offset}")
        need = offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides)) \
            if all(shape) else 0
        if need * self.dtype.itemsize > len(source):
            raise ValueError(f"set_: size {tuple(shape)}, stride {tuple(strides)} and offset "
                             f"{offset} need {need * self.dtype.itemsize} bytes, the storage "
                             f"has {len(source)}")
        new = _core.as_strided_from(source, self.dtype, shape, strides, offset)
    else:
        raise TypeError(f"set_: expected a tensor or an ember.Storage, got "
                        f"{type(source).__name__}")
    self.data = new
    self._bump_version()
    return self


@tensor_method
def is_set_to(self, tensor):
    """True when self and tensor view the same storage with the same offset, shape
    and strides (and dtype)."""
    tensor = tensor_arg(tensor, "is_set_to", "tensor")
    a, b = self._layout(), tensor._layout()
    return a[0] is b[0] and a[1] == b[1] and a[2:] == b[2:]


@tensor_method
def const_data_ptr(self):
    """data_ptr() for reading (PyTorch's const_data_ptr; ember has no copy-on-write
    storages, so it is the same address)."""
    return self.data_ptr()


@tensor_method
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (torch.Tensor.dim_order): dims
    sorted by decreasing stride, ties kept in dim order. ambiguity_check=True raises
    where two dims of size > 1 share a stride (the order is then not unique)."""
    strides = self.stride()
    order = sorted(range(self.ndim), key=lambda d: -strides[d])
    if ambiguity_check:
        seen = {}
        for d in range(self.ndim):
            if self.shape[d] > 1:
                if strides[d] in seen:
                    raise RuntimeError("dim_order: the tensor's dim order is ambiguous "
                                       "(two dims share a stride)")
                seen[strides[d]] = d
    return tuple(order)


@tensor_method
def as_subclass(self, cls):
    """self as an instance of cls, a subclass of ember.Tensor, sharing its memory (no
    copy; the autograd graph is shared too), as torch.Tensor.as_subclass."""
    from ember._tensor import Tensor
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of ember.Tensor, got {cls!r}")
    out = self.view(tuple(self.shape))     # a view: recorded, so gradients flow to self
    out.__class__ = cls
    return out


@tensor_method
def record_stream(self, stream):
    """Tell the allocator that `stream` uses this tensor's memory (PyTorch: the memory is
    not reused before the stream's work is done). ember's CUDA allocator puts every
    device's work on one stream per device, and freed blocks are reused only in that
    stream's order, so there is nothing to record: ember checks the stream's device
    and returns. A stream of another device raises."""
    dev = getattr(stream, "device", None)
    if dev is not None and _core.as_device(dev).type != self.device.type:
        raise RuntimeError(f"record_stream: the stream is on {dev}, the tensor on "
                           f"{self.device}")


@tensor_method
def to_dense(self, dtype=None, *, masked_grad=None):
    """self for a strided (dense) tensor, as PyTorch (ember has no sparse layouts);
    dtype converts."""
    return self if dtype is None else self.to(dtype)


@tensor_method
def module_load(self, other, assign=False):
    """How nn.Module.load_state_dict turns `other` into the value for self (PyTorch's
    default): other.detach() with assign=True, else self.copy_(other).detach(). Both
    results are new tensor objects."""
    other = tensor_arg(other, "module_load", "other")
    from ember._grad_mode import no_grad
    if assign:
        return other.detach()
    with no_grad():
        return self.copy_(other).detach()


def _output_nr(self):
    s = self._autograd
    return 0 if s is None else int(getattr(s, "output_nr", 0))


def _is_meta(self):
    return False


def _is_inference(self):
    return bool(self.untyped_storage().inference)


def _get_grad_dtype(self):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    s = self._autograd
    if s is not None and getattr(s, "has_grad_dtype", False):
        return s.grad_dtype
    return self.dtype


def _set_grad_dtype(self, value):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None:
        from ember._dtypes import as_dtype
        try:
            value = as_dtype(value)
        except (TypeError, ValueError):
            raise TypeError(f"grad_dtype: expected an ember dtype or None, got "
                            f"{value!r:.60}") from None
    try:
        from ember.autograd.graph import state
    except ModuleNotFoundError:
        from ember._components import missing
        raise missing("ember.autograd", "autograd") from None
    st = state(self)
    st.grad_dtype = value
    st.has_grad_dtype = True


def _get_volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _set_volatile(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with ember.no_grad():` "
                  "instead.", UserWarning, stacklevel=2)


@tensor_method
def reinforce(self, reward):
    """Removed from PyTorch (it raises there too): use ember.distributions and a
    log-prob loss instead."""
    raise RuntimeError("reinforce() was removed.\nUse ember.distributions instead: "
                       "m = ember.distributions.Categorical(probs); action = m.sample(); "
                       "loss = -m.log_prob(action) * reward; loss.backward()")


def _install_properties(cls):
    cls.output_nr = property(_output_nr, doc="Which output of its grad_fn this tensor is "
                             "(0 for leaves and single-output ops).")
    cls.is_meta = property(_is_meta, doc="False: ember has no meta tensors.")
    cls.is_maia = property(_is_meta, doc="False: ember has no MAIA devices.")
    cls.volatile = property(_get_volatile, _set_volatile, doc=(
        "Removed in PyTorch: always False, with PyTorch's warning; setting it only warns "
        "(use ember.no_grad())."))
    cls.grad_dtype = property(_get_grad_dtype, _set_grad_dtype, doc=(
        "The dtype autograd casts this leaf's incoming gradients to before accumulating "
        "them in .grad: its own dtype unless set; None accepts any dtype (PyTorch's "
        "Tensor.grad_dtype)."))


tensor_method(_is_inference, names=("is_inference",))
