"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

import operator
from collections import OrderedDict

import ember as em
from ember.nn._checks import checked, iterable_of
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(i, n, what):
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"{what}: index {i} is out of range for {n} items")
    return i + n if i < 0 else i


class _ModuleSequence(Module):
    """The list operations Sequential and ModuleList share; submodules are numbered
    0, 1, ... (Sequential may also name them)."""

    _forward_tensors = ()     # Sequential passes on whatever its first module takes

    def _renumber(self, modules):
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def __delitem__(self, idx):
        modules = list(self._modules.values())
        del modules[idx]
        self._renumber(modules)           # contiguous numbering, as PyTorch

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    @checked(modules=iterable_of(Module, "Modules"))
    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)
        return self


class Sequential(_ModuleSequence):
    """Modules run in order: Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)),
    or Sequential(OrderedDict(name=module, ...)). Slicing gives a Sequential."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            self.extend(args)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)


class _NamedTable(Module):
    """The dict operations ModuleDict and ParameterDict share, over one of the
    module's tables (_modules or _parameters)."""

    _table = "_modules"

    def _entries(self):
        return self.__dict__[self._table]

    def __getitem__(self, key):
        return self._entries()[key]

    def __delitem__(self, key):
        del self._entries()[key]

    def __len__(self):
        return len(self._entries())

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key):
        return key in self._entries()

    def keys(self):
        return self._entries().keys()

    def values(self):
        return self._entries().values()

    def items(self):
        return self._entries().items()

    def pop(self, key):
        return self._entries().pop(key)

    def clear(self):
        self._entries().clear()

    def update(self, entries):
        """From a mapping or an iterable of (key, value) pairs."""
        op, what = type(self).__name__, self._table[1:]      # 'modules', 'parameters'
        pairs = entries.items() if hasattr(entries, "items") else entries
        try:
            pairs = list(pairs)
        except TypeError:
            raise TypeError(f"{op}: {what} must be a mapping or an iterable of key/value "
                            f"pairs, got {type(entries).__name__} {entries!r:.60}") from None
        for j, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)):
                raise TypeError(f"{op}: {what} element #{j} should be a key/value pair, got "
                                f"{type(pair).__name__} {pair!r:.60}")
            if len(pair) != 2:
                raise ValueError(f"{op}: {what} element #{j} has length {len(pair)}; 2 is "
                                 f"required")
        for k, v in pairs:
            self[k] = v


class ModuleDict(_NamedTable):
    """An ordered dict of modules whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)


class ParameterList(Module):
    """A list of parameters (tensors are wrapped in Parameter)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _wrap(self, value):
        return value if isinstance(value, Parameter) else Parameter(value)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), self._wrap(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self.register_parameter(str(self._size), self._wrap(value))
        self._size += 1
        return self

    @checked(values=iterable_of(em.Tensor, "Tensors"))
    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter containing: [{p.dtype.name} of size "
                         f"{'x'.join(map(str, p.shape))}]" for i, p in enumerate(self))


class ParameterDict(_NamedTable):
    """An ordered dict of parameters (tensors are wrapped in Parameter)."""

    _table = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{p.dtype.name} of size "
                         f"{'x'.join(map(str, p.shape))}]" for k, p in self.items())
