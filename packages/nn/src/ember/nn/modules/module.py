"""Module: the base class of every layer and model, as PyTorch users know it."""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import ember as em
from ember._args import tensor_args
from ember.autograd.graph import HookTable, RemovableHandle
from ember.nn.parameter import Buffer, Parameter

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for neural-network modules. Subclasses set parameters, buffers and
    submodules as attributes in __init__ and implement forward(); calling the module
    runs forward with its hooks.

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x).relu()
    """

    training: bool
    _version = 1
    # forward parameters of ember's own layers that take tensors (None where that is
    # their default); a layer whose forward takes anything (Sequential) sets ()
    _forward_tensors = ("input", "input1", "input2", "target", "query", "key", "value",
                        "key_padding_mask", "attn_mask", "src", "src_mask",
                        "src_key_padding_mask", "mask")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ember's layers: forward(5) is "BatchNorm2d: argument 'input' must be a
        # Tensor, got int 5", not "'int' object has no attribute 'ndim'"; each class
        # wraps the plain forward (not its base's wrapper) to name itself
        if cls.__module__.startswith("ember.nn.") and cls._forward_tensors:
            forward = getattr(cls.forward, "__wrapped__", cls.forward)
            cls.forward = tensor_args(forward, cls._forward_tensors, op=cls.__name__)

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments; "
                            f"Module.__init__ takes none")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = HookTable()
        d["_forward_hooks"] = HookTable()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_pre_hooks_with_kwargs"] = set()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} is missing the required "
                                  f"\"forward\" function")

    # calling -------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks:
            for key, hook in tuple(self._forward_pre_hooks.items()):
                if key in self._forward_pre_hooks_with_kwargs:
                    r = hook(self, args, kwargs)
                    if r is not None:
                        args, kwargs = r
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for key, hook in tuple(self._forward_hooks.items()):
                r = hook(self, args, kwargs, out) if key in self._forward_hooks_with_kwargs \
                    else hook(self, args, out)
                if r is not None:
                    out = r
        return out

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args, before forward (with_kwargs:
        hook(module, args, kwargs) -> None or (args, kwargs))."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs,
                              self._forward_pre_hooks_with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args, output) -> None or a new output, after forward."""
        return self._add_hook(self._forward_hooks, hook, prepend, with_kwargs,
                              self._forward_hooks_with_kwargs)

    @staticmethod
    def _add_hook(table, hook, prepend, with_kwargs, kw_set):
        h = RemovableHandle(table)
        if prepend:
            rest = list(table.items())
            table.clear()
            table[h.id] = hook
            table.update(rest)
        else:
            table[h.id] = hook
        if with_kwargs:
            kw_set.add(h.id)
        return h

    # registration ----------------------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter "
                                f"'{name}' (nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            d["_modules"][name] = value
            return
        modules = d.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module "
                                f"'{name}' (nn.Module or None expected)")
            modules[name] = None
            return
        if isinstance(value, Buffer):
            self._forget(name)
            self.register_buffer(name, value.detach(), value.persistent)
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, em.Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer '{name}' "
                                f"(a Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name):
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            d[key].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            table = d.get(key)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d.get(key, ()):
                del d[key][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{what} name cannot contain \".\" or be empty, got {name!r}")
        if name in self.__dict__ and name not in self._parameters and \
                name not in self._buffers and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Add a parameter (a Parameter, or None for an optional one such as a bias)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"cannot assign a non-leaf tensor to parameter '{name}'; make it "
                             f"a leaf with .detach()")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: state that is not a parameter (BatchNorm's running_mean).
        Persistent buffers are part of state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, em.Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} object to buffer "
                            f"'{name}' (a Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule '{item}' "
                                     f"(looking up '{target}')")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter '{name}'")
        return mod._parameters[name]

    # traversal -------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in get(mod):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # state ------------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name (detached unless keep_vars)."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        extra = getattr(type(self), "get_extra_state", None)
        if extra is not None:
            destination[prefix + "_extra_state"] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict. Returns (missing_keys,
        unexpected_keys); with strict, any of them is an error listing them. A shape
        mismatch is always an error naming the key and both shapes."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict, got "
                            f"{type(state_dict).__name__}")
        missing, unexpected, errors = [], [], []
        expected = set()
        for mod_prefix, mod in self.named_modules():    # Lazy* modules not yet called
            lazy = getattr(mod, "_lazy_load_state_dict", None)
            if lazy is not None:
                lazy(state_dict, mod_prefix + "." if mod_prefix else "")
        for mod_prefix, mod in self.named_modules():
            prefix = mod_prefix + "." if mod_prefix else ""
            local = [(n, p) for n, p in mod._parameters.items() if p is not None]
            local += [(n, b) for n, b in mod._buffers.items()
                      if b is not None and n not in mod._non_persistent_buffers_set]
            for name, target in local:
                key = prefix + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                value = state_dict[key]
                if not isinstance(value, em.Tensor):
                    errors.append(f"for '{key}': expected a tensor, got "
                                  f"{type(value).__name__}")
                    continue
                if tuple(value.shape) != tuple(target.shape):
                    errors.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{tuple(value.shape)} from checkpoint, the shape in the "
                                  f"current model is {tuple(target.shape)}")
                    continue
                if assign:
                    new = Parameter(value, target.requires_grad) \
                        if isinstance(target, Parameter) else value
                    setattr(mod, name, new)
                else:
                    with em.no_grad():
                        target.copy_(value)
            if hasattr(type(mod), "set_extra_state"):
                key = prefix + "_extra_state"
                expected.add(key)
                if key in state_dict:
                    mod.set_extra_state(state_dict[key])
                else:
                    missing.append(key)
        unexpected = [k for k in state_dict if k not in expected]
        if strict and (missing or unexpected):
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # modes and conversions ---------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        """Replace every parameter's and buffer's data with fn(tensor), in place of the
        objects (so optimizers holding the parameters keep working)."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is None:
                    continue
                with em.no_grad():
                    new = fn(p)
                if new is not p:
                    p.data = new
                if p.grad is not None:
                    p.grad = fn(p.grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: to(device), to(dtype),
        to(device, dtype), to(tensor), to(memory_format=ember.channels_last) (4-D and 5-D
        parameters and buffers take that layout). Only floating point tensors change
        dtype."""
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        fmt = kwargs.get("memory_format")
        if fmt is not None and fmt not in (em.channels_last, em.channels_last_3d,
                                           em.contiguous_format, em.preserve_format):
            raise TypeError(f"nn.Module.to: memory_format must be an ember.memory_format, "
                            f"got {fmt!r}")
        for a in args:
            if isinstance(a, em.dtype):
                dtype = a
            elif isinstance(a, em.Tensor):
                device, dtype = a.device, a.dtype
            elif a is not None:
                device = a
        if dtype is not None and dtype.kind != "float":
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, got {dtype}")

        def convert(t):
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            if device is not None:
                t = t.to(device)
            if fmt is not None and t.dim() in (4, 5) and fmt is not em.preserve_format:
                want = fmt if t.dim() == 4 or fmt is not em.channels_last else None
                if want is em.channels_last_3d and t.dim() != 5:
                    want = None
                if want is not None:
                    t = t.contiguous(memory_format=want)
            return t
        return self._apply(convert)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self):
        return self.to(em.float32)

    def double(self):
        return self.to(em.float64)

    def half(self):
        return self.to(em.float16)

    def bfloat16(self):
        """Cast the floating point parameters and buffers to bfloat16 (in place, as
        PyTorch's Module.bfloat16); returns self."""
        return self.to(em.bfloat16)

    def type(self, dst_type):
        return self.to(dst_type)

    def share_memory(self):
        """Move parameters and buffers to shared memory (ember.multiprocessing)."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            t.share_memory_()
        return self

    # printing ---------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        children = [f"({name}): " + _addindent(repr(m), 2)
                    for name, m in self._modules.items() if m is not None]
        head = self._get_name() + "("
        if not children:
            return head + (lines[0] if len(lines) == 1 else "\n  " + "\n  ".join(lines) + "\n"
                           if lines else "") + ")"
        body = lines + children
        return head + "\n  " + "\n  ".join(body) + "\n)"

    def __dir__(self):
        keys = set(super().__dir__())
        keys.update(self._parameters, self._buffers, self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    # pickling (ember.multiprocessing, copy.deepcopy) ---------------------------------------
    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)
