"""The torch.save format: a zip archive holding a pickle and one raw record per storage.

    archive/data.pkl                 the object, pickled (protocol 2); each storage is a
                                     persistent id ('storage', <torch.FloatStorage-style
                                     type>, key, location, numel)
    archive/byteorder                "little"
    archive/data/<key>               the storage's bytes, little-endian, stored (not
                                     compressed), aligned to 64 bytes in the file
    archive/version                  "3"
    archive/.format_version, archive/.storage_alignment, archive/.data/serialization_id

Writing: tensors are pickled the way PyTorch pickles its own
(`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())`, parameters through `torch._utils._rebuild_parameter`), ember dtypes,
devices and Size as `torch.float32`, `torch.device(...)`, `torch.Size(...)`: so PyTorch
loads the tensors, dicts and numbers of a file ember wrote, and ember loads PyTorch's.
Everything else is pickled by reference as pickle does (modules, optimizers, ...).
Tensors viewing one storage share one record and load as views of one storage.

Reading: the names PyTorch's files use are mapped onto ember (torch need not be
installed); with weights_only=True (the default) only the allowed globals (see
`_allowed()` and add_safe_globals) can be named by the pickle, so loading runs no code
from the file.
"""
from __future__ import annotations

import _compat_pickle
import contextlib
import ctypes
import importlib
import io
import os
import pickle
import struct
import sys
import zipfile
from collections import Counter, OrderedDict, defaultdict

from ember._C import core as _core
from ember._tensor import Size, Tensor

_ALIGN = 64
_FORMAT_VERSION = b"3\n"
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"

# torch storage class name -> ember dtype name (None: a dtype ember lacks)
_STORAGE_TYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
    "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
    "BFloat16Storage": "bfloat16", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
}
_EMBER_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                 "float64", "complex64", "complex128", "bfloat16", "uint16", "uint32", "uint64")
_EMBER_STORAGE = {v: k for k, v in _STORAGE_TYPES.items() if v in _EMBER_DTYPES}
# torch dtype attribute -> ember dtype name (or the torch name of a dtype ember lacks)
_TORCH_DTYPES = {**{n: n for n in _EMBER_DTYPES}, "float": "float32", "double": "float64",
                 "half": "float16", "long": "int64", "int": "int32", "short": "int16",
                 "cfloat": "complex64", "cdouble": "complex128"}
_MISSING_DTYPES = ("complex32", "chalf",
                   "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                   "float8_e8m0fnu", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
                   "bits8", "bits16")


def _no_dtype(name):
    return pickle.UnpicklingError(f"load: the file holds a tensor of dtype torch.{name}, "
                                  f"which ember does not have (ember has "
                                  f"{', '.join(_EMBER_DTYPES)}); convert it in PyTorch "
                                  f"first, e.g. tensor.float()")


# safe globals chosen by the user ------------------------------------------------------

_user_globals = {}      # "module.qualname" -> object


def _qualified_name(obj):
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(f"add_safe_globals: {obj!r:.80} has no __module__/__qualname__; "
                        f"pass (object, 'module.name') for it")
    return f"{module}.{name}"


def add_safe_globals(safe_globals):
    """Allow these globals (classes, functions) in pickles loaded with weights_only=True:
    each item is an object (named by its __module__ and __qualname__) or a pair
    (object, "module.name") naming it as the file does."""
    if isinstance(safe_globals, (str, bytes)) or not hasattr(safe_globals, "__iter__"):
        raise TypeError(f"add_safe_globals: expected a list of objects, got "
                        f"{type(safe_globals).__name__}")
    entries = []
    for g in safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2 or not isinstance(g[1], str):
                raise TypeError(f"add_safe_globals: a tuple item must be (object, "
                                f"'module.name'), got {g!r:.80}")
            entries.append((g[1], g[0]))
        else:
            entries.append((_qualified_name(g), g))
    _user_globals.update(entries)


def get_safe_globals():
    """The globals add_safe_globals allowed (objects, or (object, name) pairs)."""
    out = []
    for name, obj in _user_globals.items():
        try:
            plain = _qualified_name(obj) == name
        except TypeError:
            plain = False
        out.append(obj if plain else (obj, name))
    return out


def clear_safe_globals():
    """Forget every global add_safe_globals allowed."""
    _user_globals.clear()


class safe_globals(contextlib.ContextDecorator):
    """`with safe_globals([MyClass]): ember.load(f)`: allow these globals while inside."""

    def __init__(self, safe_globals):
        self.globals = list(safe_globals)

    def __enter__(self):
        self.saved = dict(_user_globals)
        add_safe_globals(self.globals)
        return self

    def __exit__(self, *exc):
        _user_globals.clear()
        _user_globals.update(self.saved)
        return False


# writing ------------------------------------------------------------------------------

class _Global:
    """A global (module, name) written into the pickle without importing the module."""

    _cache = {}

    def __new__(cls, module, name):
        g = cls._cache.get((module, name))
        if g is None:
            g = cls._cache[(module, name)] = object.__new__(cls)
            g.module, g.name = module, name
        return g

    def __call__(self, *args):      # the pickler wants a reduce function to be callable
        raise TypeError(f"{self.module}.{self.name} is a name for PyTorch's loader")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")


class _SavedStorage:
    __slots__ = ("key", "storage", "dtype", "numel")


def _parameter_type():
    """ember.nn.Parameter if ember.nn is loaded (only then can a tensor be one)."""
    mod = sys.modules.get("ember.nn.parameter")
    return getattr(mod, "Parameter", None)


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, which lets save_global write torch's names."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol=protocol)
        self.storages = {}      # (id(storage), dtype name) -> _SavedStorage
        self.parameter = _parameter_type()

    def persistent_id(self, obj):
        if type(obj) is _SavedStorage:
            location = str(obj.storage.device)
            if location.endswith(":-1"):
                location = location[:-3]
            name = _EMBER_STORAGE.get(obj.dtype.name)
            if name is None:    # uint16/32/64 have no typed storage: bytes, as PyTorch
                return ("storage", _UNTYPED_STORAGE, obj.key, location,
                        obj.numel * obj.dtype.itemsize)
            return ("storage", _Global("torch", name), obj.key, location, obj.numel)
        return None

    def save_global(self, obj, name=None):
        if type(obj) is _Global:
            module, name = obj.module, obj.name
        elif type(obj) is _core.DType:
            module, name = "torch", obj.name
        else:
            return super().save_global(obj, name)
        self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + name.encode("utf-8")
                   + b"\n")
        self.memoize(obj)

    def reducer_override(self, obj):
        t = type(obj)
        if t is _Global or t is _core.DType:
            return "global"                 # -> save_global
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if t is _core.Device:
            if obj.index is None or obj.index < 0:
                return (_TORCH_DEVICE, (obj.type,))
            return (_TORCH_DEVICE, (obj.type, obj.index))
        if t is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        return NotImplemented

    def _storage(self, t):
        storage, dtype, _, _, _ = t._layout()
        key = (id(storage), dtype.name)
        s = self.storages.get(key)
        if s is None:
            s = _SavedStorage()
            s.key, s.storage, s.dtype = str(len(self.storages)), storage, dtype
            s.numel = storage.nbytes // dtype.itemsize
            self.storages[key] = s
        return s

    def _reduce_tensor(self, obj):
        state = getattr(obj, "__dict__", None) or {}
        if self.parameter is not None and isinstance(obj, self.parameter):
            data = obj.detach()
            if type(obj) is self.parameter and not state:
                return (_REBUILD_PARAMETER, (data, obj.requires_grad, OrderedDict()))
            if type(obj) is self.parameter:
                return (_REBUILD_PARAMETER_STATE, (data, obj.requires_grad, OrderedDict(),
                                                   state))
        _, _, shape, strides, offset = obj._layout()
        args = (self._storage(obj), offset, tuple(shape), tuple(strides),
                bool(obj.requires_grad), OrderedDict())
        rebuild = _REBUILD_TENSOR
        if obj.dtype.name not in _EMBER_STORAGE:     # an untyped storage and the dtype
            rebuild, args = _REBUILD_TENSOR_V3, args + (obj.dtype,)
        if type(obj) is Tensor and not state:
            return (rebuild, args)
        return (_REBUILD_FROM_TYPE, (rebuild, type(obj), args, state))


def _storage_bytes(s):
    """The storage's bytes (a host copy for device storages), little-endian."""
    from ember.serialization import _byte_view
    flat = _core.as_strided_from(s.storage, s.dtype, (s.numel,), (1,), 0)
    if flat.device.type != "cpu":
        flat = flat.cpu()
    return _byte_view(flat) if s.numel else memoryview(b"")


def _padding(offset, name):
    """The extra field that puts a record's data at a multiple of _ALIGN (PyTorch's
    'FB' field)."""
    start = offset + 30 + len(name.encode("utf-8"))
    pad = -start % _ALIGN
    if pad == 0:
        return b""
    if pad < 4:
        pad += _ALIGN
    return b"FB" + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)


def write_archive(obj, f, protocol=2):
    """Write obj as a torch.save zip archive to the binary file object f."""
    if not isinstance(protocol, int) or not 2 <= protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"save: pickle_protocol must be an int in [2, "
                         f"{pickle.HIGHEST_PROTOCOL}], got {protocol!r:.40}")
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    records = [("data.pkl", buf.getbuffer()), (".format_version", b"1"),
               (".storage_alignment", str(_ALIGN).encode()), ("byteorder", b"little")]
    records += [(f"data/{s.key}", s) for s in pickler.storages.values()]
    records += [("version", _FORMAT_VERSION)]
    start = f.tell() if _seekable(f) else 0
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            if type(data) is _SavedStorage:
                data = _storage_bytes(data)
            data = memoryview(data).cast("B")
            full = f"archive/{name}"
            info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(data)
            zip64 = len(data) * 1.05 > zipfile.ZIP64_LIMIT
            if name.startswith("data/"):
                pos = zf.fp.tell() - start + (20 if zip64 else 0)
                info.extra = _padding(pos, full)
            with zf.open(info, "w", force_zip64=zip64) as out:
                out.write(data)


def _seekable(f):
    try:
        return f.seekable()
    except (AttributeError, OSError, ValueError):
        return False


# reading ------------------------------------------------------------------------------

class _StorageType:
    """What a torch.FloatStorage-style global loads as: its dtype, by name."""

    def __init__(self, torch_name, dtype_name):
        self.torch_name, self.dtype_name = torch_name, dtype_name

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError(f"load: constructing torch.{self.torch_name} is not "
                                     f"supported (only its use as a storage type)")

    def __repr__(self):
        return f"<storage type torch.{self.torch_name}>"


class _LoadedStorage:
    """A storage read from the archive (or mapped), placed on its device."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


def _as_storage(x, op):
    if type(x) is not _LoadedStorage:
        raise pickle.UnpicklingError(f"load: {op} expects a storage, got "
                                     f"{type(x).__name__}")
    return x


def _finish(t, requires_grad, op):
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError(f"load: {op}: requires_grad must be a bool")
    if requires_grad:
        if t.dtype.kind != "float":
            raise pickle.UnpicklingError(f"load: {op}: a {t.dtype.name} tensor cannot "
                                         f"require grad")
        t.requires_grad_()
    return t


def _view(storage, dtype, offset, size, stride, op):
    try:
        return _core.as_strided_from(storage.storage, dtype, tuple(size), tuple(stride),
                                     offset)
    except (TypeError, ValueError, OverflowError) as e:
        raise pickle.UnpicklingError(f"load: {op}: a tensor's layout does not fit its "
                                     f"storage ({e})") from None


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    s = _as_storage(storage, "_rebuild_tensor_v2")
    t = _view(s, s.dtype, storage_offset, size, stride, "_rebuild_tensor_v2")
    return _finish(t, requires_grad, "_rebuild_tensor_v2")


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    s = _as_storage(storage, "_rebuild_tensor_v3")
    if type(dtype) is not _core.DType:
        raise pickle.UnpicklingError("load: _rebuild_tensor_v3 expects a dtype")
    t = _view(s, dtype, storage_offset, size, stride, "_rebuild_tensor_v3")
    return _finish(t, requires_grad, "_rebuild_tensor_v3")


def _load_parameter_type():
    """ember.nn.Parameter when the ember-nn package is installed, else None (parameters
    then load as tensors that require grad)."""
    p = _parameter_type()
    if p is None:
        try:
            p = importlib.import_module("ember.nn.parameter").Parameter
        except ImportError:
            return None
    return p


def _set_state(obj, state, op):
    if not state:
        return obj
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
        for k, v in (slots or {}).items():
            setattr(obj, k, v)
    if isinstance(state, dict):
        for k, v in state.items():
            if type(k) is not str:
                raise pickle.UnpicklingError(f"load: {op}: attribute names must be str")
            obj.__dict__[k] = v
    elif state:
        raise pickle.UnpicklingError(f"load: {op}: unexpected state {type(state).__name__}")
    return obj


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("load: _rebuild_parameter expects a tensor")
    param = _load_parameter_type()
    if param is None:
        return _finish(data.detach(), requires_grad, "_rebuild_parameter")
    return param(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad), state,
                      "_rebuild_parameter_with_state")


class _ParameterMarker:
    """torch.nn.parameter.Parameter as a type named in _rebuild_from_type_v2."""


def _rebuild_from_type_v2(func, new_type, args, state):
    if not callable(func) or not isinstance(args, tuple):
        raise pickle.UnpicklingError("load: _rebuild_from_type_v2 expects (function, "
                                     "type, args, state)")
    ret = func(*args)
    if new_type is _ParameterMarker:
        new_type = _load_parameter_type()
        if new_type is None:
            return _set_state(ret, state, "_rebuild_from_type_v2")
        return _set_state(new_type(ret, ret.requires_grad), state, "_rebuild_from_type_v2")
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise pickle.UnpicklingError(f"load: _rebuild_from_type_v2: {new_type!r:.60} is not "
                                     f"a tensor type")
    if type(ret) is not new_type:
        sub = Tensor.__new__(new_type)
        sub.data = ret.detach()
        if ret.requires_grad:
            sub.requires_grad_()
        ret = sub
    return _set_state(ret, state, "_rebuild_from_type_v2")


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    from ember._interop import from_numpy
    t = from_numpy(data.copy()).to(dtype)
    if str(device) != "cpu":
        t = t.to(device)
    return _finish(t, requires_grad, "_rebuild_device_tensor_from_numpy")


def _unsupported(what):
    def rebuild(*args, **kwargs):
        raise pickle.UnpicklingError(f"load: the file holds {what}, which ember does not "
                                     f"have")
    return rebuild


def _torch_device(kind, index=None):
    if type(kind) is not str or (index is not None and type(index) is not int):
        raise pickle.UnpicklingError(f"load: invalid device ({kind!r:.40}, {index!r:.40})")
    text = kind if index is None or ":" in kind else f"{kind}:{index}"
    try:
        return _core.as_device(text)
    except (ValueError, TypeError) as e:
        raise pickle.UnpicklingError(f"load: the file names device {text!r:.40}, which "
                                     f"ember does not have ({e})") from None


def _latin1_encode(text, encoding="latin1"):
    """_codecs.encode, which protocol 2 pickles use for bytes: only latin-1."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("load: _codecs.encode is allowed only for "
                                     "(str, 'latin1')")
    return text.encode("latin1")


def _dtype_by_name(name):
    if type(name) is not str or name not in _EMBER_DTYPES:
        raise pickle.UnpicklingError(f"load: unknown ember dtype {name!r:.40}")
    return _core._dtype_by_name(name)


def _ember_device(kind, index=None):
    return _torch_device(kind, index)


def _allowed():
    """"module.name" -> what it loads as, for weights_only=True (and the torch names
    for either mode)."""
    from ember import _interop
    table = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
        "collections.defaultdict": defaultdict,
        "builtins.set": set, "builtins.frozenset": frozenset, "builtins.slice": slice,
        "builtins.complex": complex, "builtins.bytearray": bytearray,
        "builtins.range": range, "builtins.bytes": bytes, "builtins.int": int,
        "builtins.float": float, "builtins.bool": bool, "builtins.str": str,
        "builtins.list": list, "builtins.tuple": tuple, "builtins.dict": dict,
        "_codecs.encode": _latin1_encode,
        "ember._interop._rebuild_tensor": _interop._rebuild_tensor,
        "ember._C.core._dtype_by_name": _dtype_by_name,
        "ember._C.core.Device": _ember_device,
        "ember._tensor.Size": Size, "ember.Size": Size,
        "ember._tensor.Tensor": Tensor, "ember.Tensor": Tensor,
        "ember.nn.parameter._rebuild_parameter": _rebuild_parameter,
    }
    table.update(_torch_table())
    return table


_TORCH_UNSUPPORTED = {
    "_rebuild_qtensor": "a quantized tensor", "_rebuild_sparse_tensor": "a sparse tensor",
    "_rebuild_sparse_csr": "a sparse tensor", "_rebuild_nested_tensor": "a nested tensor",
    "_rebuild_meta_tensor_no_storage": "a tensor on the meta device",
    "_rebuild_wrapper_subclass": "a wrapper tensor subclass",
    "_rebuild_xla_tensor": "an XLA tensor", "_rebuild_mlc_tensor": "an MLC tensor",
}


def _torch_table():
    table = {
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_device_tensor_from_numpy": _rebuild_device_tensor_from_numpy,
        "torch.Size": Size, "torch.device": _torch_device, "torch.Tensor": Tensor,
        "torch._tensor.Tensor": Tensor,
        "torch.nn.parameter.Parameter": _ParameterMarker,
        "torch.UntypedStorage": _StorageType("UntypedStorage", "uint8"),
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage", "uint8"),
    }
    for name, what in _TORCH_UNSUPPORTED.items():
        table[f"torch._utils.{name}"] = _unsupported(what)
    for cls, dtype in _STORAGE_TYPES.items():
        table[f"torch.{cls}"] = _StorageType(cls, dtype)
    for attr, name in _TORCH_DTYPES.items():
        table[f"torch.{attr}"] = _core._dtype_by_name(name)
    return table


def _numpy_global(full):
    """The NumPy globals that pickled arrays, scalars and dtypes use (NumPy 1 and 2)."""
    if full not in ("numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct",
                    "numpy._core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
                    "numpy._core.multiarray.scalar") and not full.startswith("numpy.dtypes."):
        return None
    try:
        import numpy as np
    except ImportError:
        return None
    if full == "numpy.ndarray":
        return np.ndarray
    if full == "numpy.dtype":
        return np.dtype
    if full.endswith("._reconstruct"):
        def _reconstruct(cls, shape, dtype):
            if cls is not np.ndarray:
                raise pickle.UnpicklingError("load: numpy _reconstruct is allowed only for "
                                             "numpy.ndarray")
            return np.ndarray.__new__(np.ndarray, shape, dtype)
        return _reconstruct
    if full.endswith(".scalar"):
        def _scalar(dtype, data=None):
            if not isinstance(dtype, np.dtype) or dtype.hasobject:
                raise pickle.UnpicklingError("load: numpy scalar is allowed only for "
                                             "non-object dtypes")
            return np.frombuffer(data, dtype, 1)[0] if data is not None else dtype.type()
        return _scalar
    cls = getattr(getattr(np, "dtypes", None), full[len("numpy.dtypes."):], None)
    return cls if isinstance(cls, type) and issubclass(cls, np.dtype) else None


def _refusal(full):
    return pickle.UnpicklingError(
        f"load: weights_only=True refuses the global {full} (loading it could run code "
        f"from the file). If you trust this file, allow it with "
        f"ember.serialization.add_safe_globals([{full}]) or within "
        f"`with ember.serialization.safe_globals([{full}]):`, or load with "
        f"weights_only=False (which runs whatever the file's pickle asks for)")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, reader, weights_only, **kwargs):
        super().__init__(data, **kwargs)
        self.reader, self.weights_only = reader, weights_only
        self.table = _allowed() if weights_only else _torch_table()

    def find_class(self, module, name):
        # protocol 2 pickles use Python 2's names (__builtin__.set, ...): map them back
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        dtype_name = name if module == "torch" else None
        if full in self.table:
            return self.table[full]
        if dtype_name in _MISSING_DTYPES:
            raise _no_dtype(dtype_name)
        if full in _user_globals:
            return _user_globals[full]
        if not self.weights_only:
            return super().find_class(module, name)
        g = _numpy_global(full)
        if g is not None:
            return g
        raise _refusal(full)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"load: unknown persistent id {pid!r:.100}")
        _, stype, key, location, numel = pid
        if type(stype) is not _StorageType:
            raise pickle.UnpicklingError(f"load: unknown storage type {stype!r:.60}")
        if stype.dtype_name not in _EMBER_DTYPES:
            raise _no_dtype(stype.dtype_name)
        if type(key) is not str or type(location) is not str or type(numel) is not int \
                or numel < 0:
            raise pickle.UnpicklingError(f"load: malformed storage id {pid!r:.100}")
        return self.reader.storage(key, _core._dtype_by_name(stype.dtype_name), numel,
                                   location)


class _Reader:
    """Reads (or maps) the storage records of an open archive, once each."""

    def __init__(self, zf, prefix, name, map_location, mapping, swap, size):
        self.zf, self.prefix, self.name, self.size = zf, prefix, name, size
        self.map_location, self.mapping, self.swap = map_location, mapping, swap
        self.loaded = {}

    def error(self, problem):
        from ember.serialization import _bad_file
        return _bad_file(self.name, problem)

    def storage(self, key, dtype, numel, location):
        s = self.loaded.get(key)
        if s is not None:
            return _LoadedStorage(s, dtype)
        record = f"{self.prefix}/data/{key}"
        try:
            info = self.zf.getinfo(record)
        except KeyError:
            raise self.error(f"the pickle refers to storage {key!r:.40} but the archive has "
                             f"no record {record!r:.80}") from None
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise self.error(f"record {record!r}: {numel} {dtype.name} elements need "
                             f"{nbytes} bytes but it holds {info.file_size}")
        # before allocating: the record's bytes must be in the file (a crafted directory
        # could claim any size); deflate expands at most ~1032 times
        stored = info.compress_type == zipfile.ZIP_STORED
        if info.header_offset + info.compress_size > self.size or \
                (stored and info.compress_size != nbytes) or \
                (not stored and nbytes > 1100 * max(info.compress_size, 1)):
            raise self.error(f"record {record!r} claims {nbytes} bytes that the file "
                             f"({self.size} bytes) cannot hold: it is truncated or corrupted")
        storage = self._mapped(info, nbytes, dtype) if self.mapping is not None else None
        if storage is None:
            flat = _core.empty((nbytes,), _core._dtype_by_name("uint8"))
            self._read(info, memoryview(flat).cast("B") if nbytes else None)
            storage = flat._layout()[0]
        if self.swap and dtype.itemsize > 1 and nbytes:
            _swap_in_place(storage, dtype, numel)
        storage = self._place(storage, dtype, numel, location)
        self.loaded[key] = storage
        return _LoadedStorage(storage, dtype)

    def _read(self, info, view):
        try:
            with self.zf.open(info) as r:
                got = 0
                while view is not None and got < len(view):
                    n = r.readinto(view[got:])
                    if not n:
                        raise self.error(f"record {info.filename!r} ended early (the file "
                                         f"is truncated)")
                    got += n
                r.read(1)           # reaches the end: zipfile checks the CRC-32 there
        except zipfile.BadZipFile as e:
            raise self.error(f"record {info.filename!r} is corrupted ({e})") from None

    def _mapped(self, info, nbytes, dtype):
        """A storage over the record's bytes in the mapping (copy-on-write), or None when
        the record cannot be mapped (compressed, misaligned, byte-swapped, empty)."""
        mm = self.mapping
        if info.compress_type != zipfile.ZIP_STORED or nbytes == 0 or self.swap:
            return None
        head = mm[info.header_offset:info.header_offset + 30]
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise self.error(f"record {info.filename!r}: bad local header")
        n, m = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + n + m
        if start + nbytes > len(mm):
            raise self.error(f"record {info.filename!r} runs past the end of the file "
                             f"(truncated)")
        if start % dtype.itemsize:
            return None
        buf = (ctypes.c_char * nbytes).from_buffer(mm, start)
        return _core.storage_from_pointer(ctypes.addressof(buf), nbytes, buf, None)

    def _place(self, storage, dtype, numel, location):
        from ember.serialization import _place_storage
        return _place_storage(storage, dtype, numel, location, self.map_location)


def _swap_in_place(storage, dtype, numel):
    import array
    flat = _core.as_strided_from(storage, dtype, (numel,), (1,), 0)
    view = memoryview(flat).cast("B")
    a = array.array({2: "H", 4: "I", 8: "Q"}[dtype.itemsize], view.tobytes())
    a.byteswap()
    view[:] = memoryview(a).cast("B")


def is_legacy(head):
    return head.startswith(_LEGACY_MAGIC) or (len(head) > 262 and head[257:262] == b"ustar")


def read_archive(file, name, map_location, weights_only, mapping, pickle_kwargs):
    """Load the object of a torch.save archive from the seekable binary file."""
    from ember.serialization import _bad_file
    start = file.tell()
    size = file.seek(0, os.SEEK_END)
    file.seek(start)
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError,
            struct.error) as e:
        raise _bad_file(name, f"it starts like a zip archive (a torch.save file) but is "
                              f"not a readable one: it is truncated or corrupted "
                              f"({e})") from None
    with zf:
        names = zf.namelist()
        pickles = sorted((n for n in names if n.endswith("/data.pkl") and n.count("/") == 1),
                         key=len)
        if not pickles:
            raise _bad_file(name, "the zip archive has no <archive>/data.pkl record, so it "
                                  "is not a torch.save file")
        prefix = pickles[0][:-len("/data.pkl")]
        order = b"little"
        if f"{prefix}/byteorder" in names:
            order = _read_small(zf, f"{prefix}/byteorder", name).strip()
            if order not in (b"little", b"big"):
                raise _bad_file(name, f"unknown byteorder record {order!r:.20}")
        swap = order.decode() != sys.byteorder
        reader = _Reader(zf, prefix, name, map_location, mapping, swap, size)
        data = _read_small(zf, f"{prefix}/data.pkl", name)
        unpickler = _Unpickler(io.BytesIO(data), reader, weights_only, **pickle_kwargs)
        try:
            return unpickler.load()
        except Exception as e:
            if str(e).startswith("load: "):
                raise           # ember's own errors (refusals, dtypes, devices) as they are
            if isinstance(e, pickle.UnpicklingError) or isinstance(e, (EOFError,
                                                                         struct.error)):
                raise _bad_file(name, f"its data.pkl is not a valid pickle "
                                      f"({type(e).__name__}: {e})") from None
            if not weights_only or not isinstance(e, (IndexError, KeyError, TypeError,
                                                      ValueError, AttributeError,
                                                      RecursionError, OverflowError,
                                                      UnicodeDecodeError)):
                raise           # weights_only=False: the file's own code raised it
            raise _bad_file(name, f"its data.pkl is not a valid pickle "
                                  f"({type(e).__name__}: {e})") from None


def _read_small(zf, record, name):
    from ember.serialization import _bad_file
    try:
        return zf.read(record)
    except (zipfile.BadZipFile, OSError, EOFError, struct.error) as e:
        raise _bad_file(name, f"record {record!r} is corrupted ({e})") from None


def mapping_for(f):
    """A copy-on-write memory map of the file f (a path or a file object with a real
    file descriptor)."""
    import mmap
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    try:
        fd = f.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        raise ValueError("load: mmap=True needs a file path or a file object backed by a "
                         "real file (with fileno())") from None
    return mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
