"""ember.save / ember.load: checkpoints of any picklable object, PyTorch's format included.

    em.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.pt")
    ckpt = em.load("ckpt.pt")                      # weights_only=True: runs no code
    em.save(model, "model.pt")                     # a whole module, pickled by reference
    model = em.load("model.pt", weights_only=False)

Two formats; `save(..., format=)` picks one:

* "safetensors" (what format="auto", the default, writes for plain data: tensors,
  dtypes, devices, numbers, strings and containers of them, with no two distinct
  tensors sharing memory, no tensor subclasses): described below; no pickle at all.
* "torch": PyTorch's zip archive (`torch.save`'s format since PyTorch 1.6, see
  ember/serialization/_torch.py): what "auto" writes for everything else (modules,
  optimizers, NumPy arrays, sets, views sharing a storage, ...); PyTorch's torch.load
  reads the tensors, containers and numbers of such a file, and ember reads
  PyTorch's. Tensors viewing one storage are saved once and load as views of one
  storage; device tensors are saved from a host copy and load on their device (or
  where map_location says).

load() tells the formats apart by their first bytes. A torch archive is unpickled
with weights_only=True by default: only tensors, storages, dtypes, devices, containers,
numbers, strings, OrderedDict, NumPy arrays and dtypes, PyTorch's tensor rebuild
functions (mapped onto ember: torch need not be installed) and what
add_safe_globals / safe_globals allowed can be named by the file; any other global
raises pickle.UnpicklingError naming it. weights_only=False unpickles anything (it runs
whatever the file asks for: only for files you trust). PyTorch's legacy format (before
1.6, or _use_new_zipfile_serialization=False) is refused with a hint to re-save it.

The safetensors format:

What can be saved: tensors, ember dtypes and devices, None, bool, int, float, str, and
dict / OrderedDict / Counter / list / tuple / ember.Size containers of them (dict keys
of any of the scalar kinds or tuples of them).

The file is a safetensors file, so other tools (the `safetensors` library, for one)
read its tensors:

    8 bytes     N, the header's length (unsigned little-endian)
    N bytes     JSON: {name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
                       "__metadata__": {"format": "ember", "ember_version": "1",
                                        "ember_structure": "<JSON of the container>"}}
                (padded with spaces to a multiple of 8 bytes)
    the rest    each tensor's bytes, row-major, little-endian, at [b, e) of this part;
                tensors are laid out largest itemsize first, so each is aligned

The container structure is JSON in the metadata, with each tensor replaced by a
reference to its name (a dict of tensors with string keys uses the keys as names,
nested ones the dotted path). A tensor object that appears several times is stored
once and loads as one object; different tensors sharing memory (views of one another)
are stored separately, each as its own contiguous copy, and load as separate tensors.
Tensors on other devices are copied to the CPU; `requires_grad` and the device are
recorded and restored.

Checksums: safetensors has none, so ember records its own in the metadata:
"ember_crc32" (JSON {tensor name: CRC-32 of its bytes in the file}) and
"ember_header_crc32" (the CRC-32 of the header's canonical JSON, sorted keys and no
spaces, without that one entry). Loading verifies them where present and names the
tensor whose bytes changed; files without them (other writers, older ember) load
unverified. CRC-32 finds every burst of up to 32 flipped bits and misses random damage
with odds of 2^-32; it is no defence against deliberate tampering (the checksum is
rewritten as easily as the data). Other safetensors readers ignore these entries.
The cost is one zlib.crc32 pass over the data on save and on load (1.2-2.4 GB/s on a
busy x86 core: a 100 MB file from the page cache loads in ~90 ms instead of ~30, and
saves ~85 ms slower; a read from disk or a save's fsync is usually slower than that).

Loading never runs code from the file: it parses JSON and copies bytes. The header is
checked before any tensor is made (sizes, offsets inside the file and covering the data
exactly, known dtype names, shapes of at most 16 non-negative dims whose contiguous
strides fit int64 and that match the byte counts), the decoded structure is checked
(containers, dict keys, Size elements, dtypes and devices are the kinds save writes),
and a truncated or corrupted file raises ValueError naming the file and the problem.
A file without ember's metadata (written by another safetensors writer) loads as a dict
of tensors.

Saving to a path is atomic (either format): the data goes to a temporary file
`.<name>.ember-tmp-<host>-<pid>-<random>` in the same directory, is flushed to disk
(fsync) and then renamed over the target, so a crash or an error (a full disk) mid-save
leaves the previous file intact and no temporary file. A save killed outright (SIGKILL,
power loss) leaves its temporary file; the next save to the same path on that host
removes those whose process is gone.
"""
from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import socket
import struct
import sys
import tempfile
import zlib
from collections import Counter, OrderedDict

from ember._C import core as _core
from ember._tensor import Size, Tensor
from ember.serialization import _torch
from ember.serialization._torch import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

# ember dtype name <-> safetensors dtype code
_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
          "int64": "I64", "float16": "F16", "float32": "F32", "float64": "F64",
          "complex64": "C64", "bfloat16": "BF16", "uint16": "U16", "uint32": "U32",
          "uint64": "U64"}
# safetensors defines C64 but no complex128: a complex128 tensor is stored as its
# view_as_real (F64, a last dim of 2), marked "complex" in the structure
_DTYPES = {code: name for name, code in _CODES.items()}
_LACKING = {"C128": "complex128", "F8_E4M3": "float8_e4m3fn",
            "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "F4": "float4",
            "F6_E2M3": "float6_e2m3", "F6_E3M2": "float6_e3m2"}
_MAX_HEADER = 100_000_000   # the safetensors library's limit
_MAX_DIMS = 16
_INT64_MAX = 2 ** 63 - 1
_READ_CHUNK = 1 << 20
_VERSION = "1"
_PICKLE_HINT = ("ember does not load pickle streams outside the zip format that torch.save "
                "writes since PyTorch 1.6: re-save it with a recent PyTorch "
                "(torch.save(torch.load(old), new)), or convert it to safetensors")


# saving ------------------------------------------------------------------------------

class _Encoder:
    """Turns an object into its JSON structure, collecting the tensors by name."""

    def __init__(self):
        self.tensors = {}      # name -> CPU tensor (contiguous)
        self.by_id = {}        # id(tensor) -> name (one tensor object stored once; the
                               # object being saved keeps every id valid meanwhile)
        self.active = set()    # ids of the containers being encoded (cycle check)
        self.storages = set()  # ids of the storages the saved tensors view
        self.shared = False    # two distinct tensors view one storage
        self.subclass = False  # a tensor of a subclass (nn.Parameter, ...) is saved

    def encode(self, obj, path):
        t = type(obj)
        if obj is None or t is bool or t is int or t is str:
            return obj
        if t is float:
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if t is _core.DType:
            return {"dtype": obj.name}
        if t is _core.Device:
            return {"device": str(obj)}
        tags = {list: None, tuple: "tuple", Size: "size", dict: "dict",
                OrderedDict: "odict", Counter: "counter"}
        if t not in tags:
            raise TypeError(f"save: cannot save an object of type {t.__name__} (at "
                            f"{_where(path)}); ember saves tensors, dtypes, devices, None, "
                            f"bool, int, float, str and dict/OrderedDict/Counter/list/tuple "
                            f"containers of them")
        if t is Size and not all(_is_dim(d) for d in obj):
            raise ValueError(f"save: an ember.Size holds non-negative ints, got {obj!r:.100} "
                             f"(at {_where(path)})")
        if id(obj) in self.active:
            raise ValueError(f"save: the object contains a reference cycle (at {_where(path)})")
        self.active.add(id(obj))
        if t in (dict, OrderedDict, Counter):
            value = [[self._key(k, path), self.encode(v, path + (k,))] for k, v in obj.items()]
        else:
            value = [self.encode(v, path + (i,)) for i, v in enumerate(obj)]
        self.active.discard(id(obj))
        tag = tags[t]
        return value if tag is None else {tag: value}

    def _key(self, k, path):
        t = type(k)
        if k is None or t in (bool, int, str, float):
            return self.encode(k, path)
        if t is tuple:
            return {"tuple": [self._key(x, path) for x in k]}
        raise TypeError(f"save: cannot save a dict key of type {t.__name__} (in "
                        f"{_where(path)}); keys may be None, bool, int, float, str or tuples "
                        f"of them")

    def _tensor(self, t, path):
        name = self.by_id.get(id(t))
        if name is None:
            name = self._name(path)
            storage = t._layout()[0]
            self.subclass = self.subclass or type(t) is not Tensor
            self.shared = self.shared or id(storage) in self.storages
            self.storages.add(id(storage))
            data = t.detach()
            if data.device.type != "cpu":
                data = data.cpu()
            if not data.is_contiguous():
                data = _core.contiguous_copy(data)
            if data.dtype.name == "complex128":
                from ember.ops.complex import view_as_real
                data = view_as_real(data)
            self.tensors[name] = data
            self.by_id[id(t)] = name
        ref = {"tensor": name}
        if t.dtype.name == "complex128":
            ref["complex"] = True
        if t.requires_grad:
            ref["requires_grad"] = True
        if t.device.type != "cpu":
            ref["device"] = str(t.device)
        return ref

    def _name(self, path):
        base = ".".join(str(k) for k in path) or "tensor"
        name, n = base, 0
        while name in self.tensors or name == "__metadata__":
            n += 1
            name = f"{base}#{n}"
        return name


def _where(path):
    return "the top level" if not path else "".join(f"[{k!r}]" for k in path)


def _byte_view(t):
    """The tensor's bytes, little-endian (without a copy on little-endian hosts)."""
    flat = memoryview(t.reshape(-1)).cast("B")
    if sys.byteorder == "little" or t.dtype.itemsize == 1:
        return flat
    import array
    swapped = array.array({2: "H", 4: "I", 8: "Q"}[t.dtype.itemsize], flat.tobytes())
    swapped.byteswap()
    return memoryview(swapped).cast("B")


def _serialize(obj, enc=None):
    """(the header with its length prefix, the tensors in file order)."""
    enc = _Encoder() if enc is None else enc
    structure = enc.encode(obj, ())
    # largest itemsize first, so every tensor starts at a multiple of its itemsize
    order = sorted(enc.tensors.items(), key=lambda kv: -kv[1].dtype.itemsize)
    meta = {"format": "ember", "ember_version": _VERSION,
            "ember_structure": json.dumps(structure, separators=(",", ":"), allow_nan=False),
            "ember_crc32": json.dumps({name: zlib.crc32(_byte_view(t)) for name, t in order},
                                      separators=(",", ":"))}
    header = {"__metadata__": meta}
    offset = 0
    for name, t in order:
        n = t.numel() * t.dtype.itemsize
        header[name] = {"dtype": _CODES[t.dtype.name], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    meta["ember_header_crc32"] = str(_header_crc(header))
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-(8 + len(raw)) % 8)
    return struct.pack("<Q", len(raw)) + raw, [t for _, t in order]


def _header_crc(header):
    """The CRC-32 of the header's canonical form, without its own entry: any change to
    what the header says changes it (padding and key order do not)."""
    meta = {k: v for k, v in header["__metadata__"].items() if k != "ember_header_crc32"}
    canonical = json.dumps(dict(header, __metadata__=meta), sort_keys=True,
                           separators=(",", ":"))
    return zlib.crc32(canonical.encode("utf-8"))


def _write_payload(f, header, tensors):
    for part in [header, *(_byte_view(t) for t in tensors if t.numel())]:
        view = memoryview(part)
        while view:
            # a raw file (FileIO) may write part, as write(2) does when the disk fills;
            # BufferedWriter and most file objects write all or raise (some return None)
            n = f.write(view)
            if type(n) is not int or n >= len(view):
                break
            if n <= 0:
                raise OSError(errno.EIO, f"save: {type(f).__name__}.write wrote no bytes")
            view = view[n:]


_FORMATS = ("auto", "safetensors", "torch")
_write_archive = _torch.write_archive


def save(obj, f, pickle_module=None, pickle_protocol=2, *, format="auto"):
    """Save obj to f, a path or a binary file object, as torch.save does.

    format="auto" writes plain data (tensors, dtypes, devices, None, bool, int, float,
    str and dict/OrderedDict/Counter/list/tuple/Size containers of them, no two
    distinct tensors sharing memory, no tensor subclasses such as nn.Parameter) as a
    safetensors file, anything else picklable as
    PyTorch's zip archive; "torch" always writes the zip archive (for PyTorch's
    torch.load), "safetensors" only safetensors (TypeError for what it cannot hold).
    See the module doc for both formats. pickle_protocol (2 to 5) is the zip
    archive's (PyTorch's weights_only loader reads protocol 2 only, its default too);
    pickle_module must be None or the pickle module.

    Writing to a path is atomic: an error (a full disk, say) leaves the previous file
    and no temporary file, and re-raises."""
    import pickle
    if format not in _FORMATS:
        raise ValueError(f"save: format must be one of {', '.join(_FORMATS)}, got "
                         f"{format!r:.40}")
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("save: pickle_module must be None or the pickle module (ember "
                        "writes PyTorch's pickle records itself)")
    payload = None
    if format != "torch":
        enc = _Encoder()
        try:
            payload = _serialize(obj, enc)
        except (TypeError, ValueError):
            if format == "safetensors":
                raise
        if format == "auto" and (enc.shared or enc.subclass):
            payload = None      # the archive keeps views views and Parameters Parameters

    def write(out):
        if payload is not None:
            _write_payload(out, *payload)
        else:
            _write_archive(obj, out, pickle_protocol)

    if not isinstance(f, (str, bytes, os.PathLike)):
        if isinstance(f, io.TextIOBase) or not hasattr(f, "write"):
            raise TypeError(f"save: f must be a path or a binary file object, got "
                            f"{type(f).__name__}")
        write(f)
        if hasattr(f, "flush"):     # report a full disk now, not at the caller's close
            f.flush()
        return
    path = os.path.abspath(os.fsdecode(f))
    directory, base = os.path.split(path)
    prefix = _temp_prefix(base)
    _remove_stale_temporaries(directory, prefix)
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
            os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if os.name == "posix":      # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _temp_prefix(base):
    """Temporary files of saves to `base` from this host: `.<base>.ember-tmp-<host>-`,
    then `<pid>-<random>`. The host (hashed: a name safe in a file name) keeps a save on
    one machine from judging the processes of another sharing the folder (NFS)."""
    host = zlib.crc32(socket.gethostname().encode("utf-8", "replace"))
    return f".{base}.ember-tmp-{host:08x}-"


def _remove_stale_temporaries(directory, prefix):
    """Delete the temporary files that saves killed before they could clean up left
    (their process is gone); those of a running save (this process's too) stay."""
    try:
        names = os.listdir(directory)
    except OSError:
        return              # mkstemp reports a missing or unreadable folder
    for name in names:
        m = re.fullmatch(r"(\d+)-\w+", name[len(prefix):]) if name.startswith(prefix) else None
        if m and int(m[1]) != os.getpid() and not _process_exists(int(m[1])):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass        # another save removed it first, or no permission: harmless


def _process_exists(pid):
    if os.name != "posix":
        return True         # Windows' os.kill(pid, 0) would end the process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True         # another user's process (or no way to tell): keep its file
    return True


def _file_mode(path):
    """The permissions a plain open() would give a new file (an existing file keeps
    its own): mkstemp's 0600 would surprise other readers."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


# loading ------------------------------------------------------------------------------

class _Source:
    """A binary input with a known size: a file, or an unseekable stream read whole."""

    def __init__(self, f):
        if isinstance(f, (str, bytes, os.PathLike)):
            self.name = os.fsdecode(f)
            self.file = open(f, "rb")
            self.owned = True
        else:
            if isinstance(f, io.TextIOBase) or not hasattr(f, "read"):
                raise TypeError(f"load: f must be a path or a binary file object, got "
                                f"{type(f).__name__}")
            self.name = getattr(f, "name", None) or type(f).__name__
            self.owned = False
            seekable = getattr(f, "seekable", None)
            self.file = f if seekable is not None and seekable() else io.BytesIO(f.read())
        self.start = self.file.tell()
        self.size = self.file.seek(0, os.SEEK_END) - self.start
        self.file.seek(self.start)

    def error(self, problem):
        return ValueError(f"load: {self.name!r} is not a valid ember/safetensors file: "
                          f"{problem}")

    def read_into(self, pos, view):
        """Fill view from byte pos; returns the CRC-32 of the bytes, computed a chunk at
        a time while they are in the cache (a second pass over them costs twice)."""
        self.file.seek(self.start + pos)
        got = crc = 0
        while got < len(view):
            n = self.file.readinto(view[got:got + _READ_CHUNK])
            if not n:
                raise self.error(f"the file ended while reading tensor data at byte "
                                 f"{pos + got} (the file was truncated or changed while "
                                 f"loading)")
            crc = zlib.crc32(view[got:got + n], crc)
            got += n
        return crc

    def close(self):
        if self.owned:
            self.file.close()


def _read_header(src):
    if src.size < 8:
        raise src.error(f"it is {src.size} bytes long, too short for the 8-byte header length")
    first = src.file.read(8)
    (n,) = struct.unpack("<Q", first)
    if n > _MAX_HEADER or 8 + n > src.size:
        # PyTorch's files start with a zip or a pickle signature (a huge "length")
        if first[:1] == b"\x80":
            raise src.error("it looks like a PyTorch checkpoint in a legacy format or a "
                            "bare pickle; " + _PICKLE_HINT)
    if n > _MAX_HEADER:
        raise src.error(f"the header length {n} is larger than the limit of {_MAX_HEADER} "
                        f"bytes (a corrupted length, or not such a file)")
    if 8 + n > src.size:
        raise src.error(f"the header length {n} runs past the end of the file ({src.size} "
                        f"bytes): the file is truncated or corrupted")
    raw = src.file.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys,
                            parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise src.error(f"the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise src.error(f"the header is a JSON {type(header).__name__}, not an object")
    return header, 8 + n


def _unique_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _no_constants(name):
    raise ValueError(f"{name} is not allowed")


def _is_int(x):
    return type(x) is int


def _is_dim(x):
    return type(x) is int and 0 <= x <= _INT64_MAX


def _check_entries(src, header, data_size):
    """Validate each tensor entry; returns [(name, dtype, shape, start, end)] by offset.
    The data must cover [0, data_size) exactly (for a file object, only a prefix of
    what follows: the rest may be the next record in the stream)."""
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"tensor {name!r}"
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
            raise src.error(f"{where}: expected an object with dtype, shape and data_offsets, "
                            f"got {info!r:.200}")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str) or code not in _DTYPES:
            lacking = _LACKING.get(code) if isinstance(code, str) else None
            what = f", {lacking}, which ember does not have" if lacking else ""
            raise src.error(f"{where}: unsupported dtype {code!r:.40}{what} (ember reads "
                            f"{', '.join(_DTYPES)})")
        if not isinstance(shape, list) or len(shape) > _MAX_DIMS or \
                not all(_is_dim(s) for s in shape):
            raise src.error(f"{where}: the shape must be a list of at most {_MAX_DIMS} "
                            f"non-negative integers, got {shape!r:.200}")
        if not isinstance(offsets, list) or len(offsets) != 2 or \
                not all(_is_int(o) for o in offsets) or not 0 <= offsets[0] <= offsets[1]:
            raise src.error(f"{where}: data_offsets must be [start, end] with "
                            f"0 <= start <= end, got {offsets!r:.200}")
        dtype = _core._dtype_by_name(_DTYPES[code])
        # the strides of a contiguous tensor multiply the dims, zeros aside: with a
        # zero dim the tensor is empty, but (0, 2**62, 2**62) still has no int64 strides
        if math.prod(s for s in shape if s) * dtype.itemsize > _INT64_MAX:
            raise src.error(f"{where}: shape {tuple(shape)} of {code} is too large (its "
                            f"byte strides overflow int64)")
        nbytes = math.prod(shape) * dtype.itemsize
        if offsets[1] - offsets[0] != nbytes:
            raise src.error(f"{where}: shape {tuple(shape)} of {code} needs {nbytes} bytes but "
                            f"data_offsets {offsets} hold {offsets[1] - offsets[0]}")
        if offsets[1] > data_size:
            raise src.error(f"{where}: its data [{offsets[0]}, {offsets[1]}) runs past the end "
                            f"of the file ({data_size} bytes of tensor data): the file is "
                            f"truncated or corrupted")
        entries.append((name, dtype, shape, offsets[0], offsets[1]))
    entries.sort(key=lambda e: (e[3], e[4]))
    expected = 0
    for name, _, _, start, end in entries:
        if start != expected:
            raise src.error(f"tensor {name!r}: its data starts at byte {start} but the "
                            f"previous tensor ends at {expected} (overlapping or missing "
                            f"data)")
        expected = end
    if expected != data_size and src.owned:
        raise src.error(f"the tensors hold {expected} bytes but {data_size} bytes of data "
                        f"follow the header (trailing bytes: the file is corrupted)")
    return entries


def _checksums(src, meta, entries):
    """{tensor name: CRC-32} from the metadata, or None for a file without them."""
    raw = meta.get("ember_crc32")
    if raw is None:
        return None
    try:
        crcs = json.loads(raw, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        crcs = None
    if type(crcs) is not dict or not all(_is_int(c) and 0 <= c < 2 ** 32
                                         for c in crcs.values()):
        raise src.error(f"__metadata__ ember_crc32 must be a JSON object of CRC-32 values, "
                        f"got {raw!r:.100}")
    names = {e[0] for e in entries}
    if crcs.keys() != names:
        raise src.error(f"__metadata__ ember_crc32 lists the tensors "
                        f"{sorted(crcs)[:5]} but the file holds {sorted(names)[:5]}")
    return crcs


def _check_header_crc(src, header):
    saved = header.get("__metadata__", {}).get("ember_header_crc32")
    if saved is not None and saved != str(_header_crc(header)):
        raise src.error("the header does not match the checksum saved with it "
                        "(ember_header_crc32): the header is corrupted")


def _read_tensors(src, entries, base, crcs):
    tensors = {}
    for name, dtype, shape, start, end in entries:
        t = _core.empty(tuple(shape), dtype)
        crc = 0                     # zlib.crc32(b"")
        if end > start:
            crc = src.read_into(base + start, memoryview(t.reshape(-1)).cast("B"))
            if sys.byteorder != "little" and dtype.itemsize > 1:
                _byteswap_(t)
        if crcs is not None and crc != crcs[name]:
            raise src.error(f"tensor {name!r}: its bytes do not match the checksum saved "
                            f"with them (ember_crc32): the data or the header is corrupted")
        tensors[name] = t
    return tensors


def _byteswap_(t):
    swapped = _byte_view(t).tobytes()   # _byte_view swaps on big-endian hosts
    memoryview(t.reshape(-1)).cast("B")[:] = swapped


class _Corrupt(ValueError):
    """A problem in the saved structure (reported as a corrupted file)."""


def _saved_device(x):
    if type(x) is not str:
        raise _Corrupt(f"invalid device {x!r:.40}")
    try:
        return _core.as_device(x)
    except (ValueError, TypeError):
        raise _Corrupt(f"invalid device {x!r:.40}") from None


def _parse_structure(text):
    try:
        return json.loads(text, parse_constant=_no_constants)
    except ValueError as e:     # bad JSON, NaN, an int of over 4300 digits
        raise _Corrupt(str(e)) from None


class _Decoder:
    def __init__(self, tensors, map_location):
        self.tensors, self.map_location = tensors, map_location
        self.used = {}    # name -> the loaded tensor (one object per stored tensor)

    def decode(self, v):
        if v is None or type(v) in (bool, int, str, float):
            return v
        if type(v) is list:
            return [self.decode(x) for x in v]
        if type(v) is not dict or len(v) not in (1, 2, 3):
            raise _Corrupt(f"unexpected value {v!r:.100}")
        if "tensor" in v:
            return self._tensor(v)
        if len(v) != 1:
            raise _Corrupt(f"unexpected value {v!r:.100}")
        (tag, x), = v.items()
        if tag == "float" and x in ("inf", "-inf", "nan"):
            return float(x)
        if tag == "dtype" and type(x) is str and x in _CODES:
            return _core._dtype_by_name(x)
        if tag == "device":
            return _saved_device(x)
        if tag == "tuple" and type(x) is list:
            return tuple(self.decode(e) for e in x)
        if tag == "size" and type(x) is list:
            if not all(_is_dim(d) for d in x):
                raise _Corrupt(f"an ember.Size holds non-negative ints, got {x!r:.100}")
            return Size(x)
        if tag in ("dict", "odict", "counter") and type(x) is list:
            cls = {"dict": dict, "odict": OrderedDict, "counter": Counter}[tag]
            out = cls()
            for item in x:
                if type(item) is not list or len(item) != 2:
                    raise _Corrupt(f"a {tag} item must be a [key, value] pair, got "
                                     f"{item!r:.100}")
                out[self._key(item[0])] = self.decode(item[1])
            return out
        raise _Corrupt(f"unexpected value {v!r:.100}")

    def _key(self, k):
        """A dict key: the kinds _Encoder._key writes (scalars and tuples of them)."""
        if type(k) is dict and len(k) == 1 and type(k.get("tuple")) is list:
            return tuple(self._key(x) for x in k["tuple"])
        if type(k) is dict and len(k) == 1 and "float" in k:
            return self.decode(k)
        if k is None or type(k) in (bool, int, str, float):
            return k
        raise _Corrupt(f"unhashable dict key {k!r:.100}" if type(k) is list else
                       f"invalid dict key {k!r:.100}")

    def _tensor(self, v):
        name = v["tensor"]
        extra = set(v) - {"tensor", "requires_grad", "device", "complex"}
        if type(name) is not str or extra:
            raise _Corrupt(f"unexpected tensor reference {v!r:.100}")
        if name in self.used:
            return self.used[name]
        if name not in self.tensors:
            raise _Corrupt(f"the structure refers to tensor {name!r}, which the file does "
                             f"not hold")
        t = self.tensors[name]
        if v.get("complex", False) is True:
            if t.dtype.name != "float64" or not t.ndim or t.shape[-1] != 2:
                raise _Corrupt(f"tensor {name!r} is marked complex but is {t.dtype.name} of "
                               f"shape {tuple(t.shape)}")
            from ember.ops.complex import view_as_complex
            t = view_as_complex(t)
        grad = v.get("requires_grad", False)
        if type(grad) is not bool or type(v.get("device", "cpu")) is not str:
            raise _Corrupt(f"unexpected tensor reference {v!r:.100}")
        if grad and t.dtype.kind != "float":
            raise _Corrupt(f"tensor {name!r} of dtype {t.dtype.name} is marked requires_grad")
        t = _place(t, str(_saved_device(v.get("device", "cpu"))), self.map_location)
        if grad and not t.requires_grad:
            t.requires_grad_()
        self.used[name] = t
        return t


def _place(t, saved, map_location):
    """Move a loaded CPU tensor where map_location says (None: the device it was saved
    from)."""
    if map_location is None:
        target = saved
    elif callable(map_location):
        return map_location(t, saved)
    elif isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    else:
        target = map_location
    dev = _core.as_device(target)
    if dev.type == "cpu":
        return t
    try:
        return t.to(dev)
    except Exception as e:
        raise RuntimeError(f"load: a tensor saved from {saved} cannot be placed on {dev} "
                           f"({e}); pass map_location='cpu' to load it on the CPU") from e


def _bad_file(name, problem):
    return ValueError(f"load: {name!r} is not a valid checkpoint: {problem}")


def _check_map_location(map_location):
    if map_location is None or callable(map_location) or \
            isinstance(map_location, (str, dict, _core.Device)):
        return
    raise TypeError(f"load: map_location must be None, a device (or str), a dict or a "
                    f"callable, got {type(map_location).__name__}")


def _place_storage(storage, dtype, numel, location, map_location):
    """Where a storage read from a torch archive goes: map_location as torch.load reads
    it (a callable gets the storage as a 1-d tensor of its dtype and the location tag,
    and returns a tensor or a storage, or None for the default)."""
    flat = _core.as_strided_from(storage, dtype, (numel,), (1,), 0)
    target = location
    if callable(map_location) and not isinstance(map_location, _core.Device):
        out = map_location(flat, location)
        if out is not None:
            if type(out) is _core.Storage:
                return out
            if not isinstance(out, Tensor) or out.dtype != dtype or out.numel() != numel \
                    or not out.is_contiguous():
                raise TypeError(f"load: map_location returned {type(out).__name__}; it must "
                                f"return the storage it was given as a tensor (e.g. "
                                f"moved with .to(device)), a Storage or None")
            return out.detach()._layout()[0] if out._layout()[4] == 0 else \
                _core.contiguous_copy(out)._layout()[0]
    elif isinstance(map_location, dict):
        table = {str(k): v for k, v in map_location.items()}
        target = table.get(location, location)
    elif map_location is not None:
        target = map_location
    try:
        dev = _core.as_device(target if isinstance(target, _core.Device) else str(target))
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"load: a storage saved from {location!r} cannot be placed on "
                           f"{str(target)!r} ({e}); pass map_location='cpu' to load it on "
                           f"the CPU") from None
    if dev.type == "cpu":
        return storage
    try:
        return flat.to(dev)._layout()[0]
    except Exception as e:
        raise RuntimeError(f"load: a storage saved from {location} cannot be placed on {dev} "
                           f"({e}); pass map_location='cpu' to load it on the CPU") from e


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load what save() or torch.save wrote to f (a path or a binary file object), or a
    safetensors file (from another writer: a dict of tensors).

    weights_only=True (the default; None means the same) unpickles a torch archive with
    only the allowed globals (see the module doc and add_safe_globals): anything else
    raises pickle.UnpicklingError naming the global. weights_only=False runs the
    file's pickle as pickle.load does (only for files you trust). map_location: a
    device (or str) for every storage, a dict {saved location: location}, or a
    callable(storage as a 1-d tensor, saved location) returning the tensor (or Storage)
    to use, or None for the default; by default tensors return to the device they were
    saved from. mmap=True (torch archives; f a path or a real file): the storages are
    memory-mapped copy-on-write instead of read, CPU tensors view the mapping (writes
    to them stay in memory) and their CRC-32s are not checked; a safetensors file is
    read as without it. pickle_load_args
    (encoding=, errors=) go to the unpickler.

    The safetensors format's header and structure are validated and ember's CRC-32
    checksums (see the module doc) verified; a torch archive's records are checked by
    the zip format's CRC-32 and their sizes against the pickle. A truncated, corrupted
    or crafted file raises ValueError naming the file (and the tensor or record)."""
    import pickle
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("load: pickle_module must be None or the pickle module")
    if weights_only is None:
        weights_only = True
    if type(weights_only) is not bool:
        raise TypeError(f"load: weights_only must be a bool, got "
                        f"{type(weights_only).__name__}")
    _check_map_location(map_location)
    unknown = set(pickle_load_args) - {"encoding", "errors", "fix_imports"}
    if unknown:
        raise TypeError(f"load: unexpected keyword argument(s) {sorted(unknown)}")
    src = _Source(f)
    try:
        head = src.file.read(512)
        src.file.seek(src.start)
        if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
            mapping = None
            if mmap:
                mapping = _torch.mapping_for(f if src.owned or src.file is f else src.file)
            try:
                return _torch.read_archive(src.file, src.name, map_location, weights_only,
                                           mapping, pickle_load_args)
            finally:
                src.close()
        if _torch.is_legacy(head):
            raise src.error("it is a PyTorch checkpoint in the legacy format (written by "
                            "PyTorch before 1.6, or with _use_new_zipfile_serialization="
                            "False); " + _PICKLE_HINT)
    except BaseException:
        src.close()
        raise
    try:
        header, base = _read_header(src)
        meta = header.get("__metadata__", {})
        if not isinstance(meta, dict) or not all(type(v) is str for v in meta.values()):
            raise src.error("__metadata__ must be an object of string values")
        entries = _check_entries(src, header, src.size - base)
        structure = meta.get("ember_structure")
        if structure is not None and meta.get("ember_version") != _VERSION:
            raise src.error(f"it is in ember format version "
                            f"{meta.get('ember_version')!r:.20}, and this ember reads version "
                            f"{_VERSION} (a newer ember wrote it?)")
        tensors = _read_tensors(src, entries, base, _checksums(src, meta, entries))
        if not src.owned:     # leave a stream just after this record
            src.file.seek(src.start + base + (entries[-1][4] if entries else 0))
    finally:
        src.close()
    if structure is None:
        obj = {name: _place(t, "cpu", map_location) for name, t in tensors.items()}
    else:
        dec = _Decoder(tensors, map_location)
        try:
            obj = dec.decode(_parse_structure(structure))
        except (_Corrupt, RecursionError) as e:
            raise src.error(f"the saved structure is corrupted: {e}") from None
        unused = tensors.keys() - dec.used.keys()
        if unused:
            raise src.error(f"tensor(s) {sorted(unused)[:5]} are not referenced by the "
                            f"saved structure")
    # last: the checks above name a problem more precisely than a checksum can
    _check_header_crc(src, header)
    return obj
