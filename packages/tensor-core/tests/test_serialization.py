"""em.save / em.load: round trips of nested containers and every dtype/layout, the
safetensors layout read back by hand, corrupted and truncated files (always a clear
ValueError naming the file), atomic saving, and refusing pickle payloads."""
from __future__ import annotations

import errno
import io
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections import Counter, OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember import serialization
from ember_testing import DTYPES, fewer_examples, np_dtype, tensors, to_numpy

CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
         "int64": "I64", "float16": "F16", "float32": "F32", "float64": "F64", "uint16": "U16",
         "uint32": "U32", "uint64": "U64"}


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    em.save(obj, buf)
    buf.seek(0)
    return em.load(buf, **load_kw)


def _same(a, b):
    """Structural equality, tensors compared by dtype, shape and values (NaN == NaN)."""
    assert type(a) is type(b), f"{type(a).__name__} != {type(b).__name__}"
    if isinstance(a, em.Tensor):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(to_numpy(a.detach()), to_numpy(b.detach()))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


# round trips -------------------------------------------------------------------------------

def test_nested_containers():
    obj = {
        "model": OrderedDict([("fc.weight", em.randn(3, 4)), ("fc.bias", em.zeros(3))]),
        "optim": {"state": {0: {"step": em.tensor(3.0), "exp_avg": em.ones(2, 2)}},
                  "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1],
                                    "foreach": None, "nesterov": False}]},
        "milestones": Counter([3, 5, 5]),
        "numbers": [0, -1, 2 ** 70, 1.5, -0.0, math.inf, -math.inf, math.nan, 1e-300, True],
        "text": "naïve ✓ \"quoted\" \\ \n",
        "empty": [{}, [], ()],
        "keys": {1: "int", 2.5: "float", None: "none", (1, "a"): "tuple", "s": "str"},
        "bool keys": {True: 1, False: 0},
        "ember": (em.float16, em.int64, em.device("cpu"), em.Size([2, 3])),
        "__metadata__": em.arange(3),     # the safetensors header's reserved name
    }
    _same(obj, _roundtrip(obj))


@pytest.mark.parametrize("dtype", DTYPES, ids=[d.name for d in DTYPES])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (5,), (2, 3, 4)])
def test_every_dtype_and_shape(dtype, shape):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal(shape) * 50).astype(np_dtype(dtype))
    t = em.from_numpy(values)
    back = _roundtrip({"t": t})["t"]
    assert back.dtype == dtype and tuple(back.shape) == shape and back.is_contiguous()
    np.testing.assert_array_equal(to_numpy(back), values)


@settings(max_examples=fewer_examples(2))
@given(tensors())
def test_any_layout_round_trips(case):
    t, expected = case        # contiguous, transposed, strided, expanded, offset views
    back = _roundtrip([t])[0]
    assert back.dtype == t.dtype and back.is_contiguous()
    np.testing.assert_array_equal(to_numpy(back), expected)


def test_identity_sharing_views_and_grad():
    w = em.randn(4, 4).requires_grad_()
    view = w.detach()[1:3]
    obj = {"a": w, "b": [w, view], "c": w.T}
    for fmt, views in (("safetensors", False), ("auto", True), ("torch", True)):
        buf = io.BytesIO()
        em.save(obj, buf, format=fmt)
        assert (buf.getvalue()[:4] == b"PK\x03\x04") == views    # auto: views -> archive
        buf.seek(0)
        back = em.load(buf)
        assert back["a"] is back["b"][0]                  # one object stays one object
        assert back["a"].requires_grad and back["a"].is_leaf
        assert not back["b"][1].requires_grad
        view_back = back["b"][1]
        np.testing.assert_array_equal(to_numpy(view_back), to_numpy(view))
        np.testing.assert_array_equal(to_numpy(back["c"].detach()), to_numpy(w.detach()).T)
        view_back.fill_(0)
        if views:       # restored as views of one storage, as PyTorch's torch.load does
            assert not bool((back["a"].detach()[1:3] != 0).any())
            assert back["c"].stride() == (1, 4) and back["b"][1].storage_offset() == 4
            assert bool((back["c"].detach()[:, 1:3] == 0).all())
        else:           # safetensors: views are materialised copies
            assert bool((back["a"].detach()[1:3] != 0).any())


def test_bare_tensor_and_scalars():
    t = em.arange(6).reshape(2, 3)
    _same(t, _roundtrip(t))
    for obj in (None, 3, "x", 2.5, [], {}):
        _same(obj, _roundtrip(obj))


def test_paths_and_file_objects(tmp_path):
    obj = {"x": em.arange(5, dtype=em.float64), "n": 1}
    for target in (tmp_path / "a.ember", str(tmp_path / "b.ember"),
                   os.fsencode(tmp_path / "c.ember")):
        em.save(obj, target)
        _same(obj, em.load(target))
    with open(tmp_path / "d.ember", "wb") as f:
        em.save(obj, f)
    with open(tmp_path / "d.ember", "rb") as f:
        _same(obj, em.load(f))
    assert sorted(os.listdir(tmp_path)) == ["a.ember", "b.ember", "c.ember", "d.ember"]


def test_several_records_in_one_stream_and_unseekable_streams():
    buf = io.BytesIO()
    em.save({"a": em.ones(2)}, buf)
    em.save([em.zeros(3, dtype=em.int8), "second"], buf)
    buf.seek(0)
    assert em.load(buf)["a"].tolist() == [1.0, 1.0]
    second = em.load(buf)
    assert second[0].tolist() == [0, 0, 0] and second[1] == "second"

    class Stream(io.RawIOBase):
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    assert em.load(io.BufferedReader(Stream(buf.getvalue())))["a"].tolist() == [1.0, 1.0]


def test_map_location():
    obj = {"w": em.ones(2)}
    assert _roundtrip(obj, map_location="cpu")["w"].device == em.device("cpu")
    assert _roundtrip(obj, map_location=em.device("cpu"))["w"].tolist() == [1.0, 1.0]
    assert _roundtrip(obj, map_location={"cpu": "cpu"})["w"].tolist() == [1.0, 1.0]
    seen = []
    out = _roundtrip(obj, map_location=lambda t, saved: seen.append(saved) or t * 2)
    assert seen == ["cpu"] and out["w"].tolist() == [2.0, 2.0]
    assert _roundtrip(obj, weights_only=False)["w"].tolist() == [1.0, 1.0]


# the file format ----------------------------------------------------------------------------

def _parse(raw):
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:], n


def test_file_is_safetensors():
    a = em.arange(12, dtype=em.float32).reshape(3, 4)
    obj = {"layer": {"w": a.T, "b": em.tensor([1, -2], dtype=em.int16)},
           "flag": em.tensor([True, False]), "h": em.ones(3, dtype=em.float16), "step": 7}
    buf = io.BytesIO()
    em.save(obj, buf)
    raw = buf.getvalue()
    header, data, n = _parse(raw)
    assert (8 + n) % 8 == 0
    meta = header.pop("__metadata__")
    assert meta["format"] == "ember" and all(isinstance(v, str) for v in meta.values())
    assert set(header) == {"layer.w", "layer.b", "flag", "h"}
    expected = {"layer.w": np.arange(12, dtype=np.float32).reshape(3, 4).T,
                "layer.b": np.array([1, -2], np.int16), "flag": np.array([True, False]),
                "h": np.ones(3, np.float16)}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        arr = expected[name]
        start, stop = info["data_offsets"]
        assert start == end and info["dtype"] == CODES[arr.dtype.name]
        assert info["shape"] == list(arr.shape)
        assert start % arr.dtype.itemsize == 0                     # aligned
        assert data[start:stop] == np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"),
                                                                    copy=False).tobytes()
        end = stop
    assert end == len(data)


def _safetensors_file(tensors, metadata=None):
    """A file written the way the safetensors format specifies, by hand."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": CODES[arr.dtype.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def test_loads_plain_safetensors_files(tmp_path):
    arrays = {"embed.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
              "ids": np.array([5, 6, 7], np.int64), "empty": np.zeros((0, 2), np.float16),
              "scalar": np.array(2.5)}
    for meta in (None, {"format": "pt"}):
        path = tmp_path / "model.safetensors"
        path.write_bytes(_safetensors_file(arrays, meta))
        out = em.load(path)
        assert list(out) == list(arrays)
        for name, arr in arrays.items():
            assert out[name].dtype.name == arr.dtype.name
            np.testing.assert_array_equal(to_numpy(out[name]), arr)


def test_the_safetensors_library_reads_ember_files(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    w = em.randn(3, 5)
    em.save(OrderedDict([("w", w), ("n", em.arange(4, dtype=em.int32))]), tmp_path / "m.st")
    out = st.load_file(str(tmp_path / "m.st"))
    np.testing.assert_array_equal(out["w"], to_numpy(w))
    np.testing.assert_array_equal(out["n"], np.arange(4, dtype=np.int32))
    st.save_file({"x": np.eye(2, dtype=np.float64)}, str(tmp_path / "x.st"))
    np.testing.assert_array_equal(to_numpy(em.load(tmp_path / "x.st")["x"]), np.eye(2))


# bad files -----------------------------------------------------------------------------------

def _saved(tmp_path, obj=None):
    obj = {"w": em.arange(6, dtype=em.float32).reshape(2, 3), "b": em.ones(4, dtype=em.int64),
           "meta": [1, "two"]} if obj is None else obj
    path = tmp_path / "ckpt.ember"
    em.save(obj, path)
    return path, path.read_bytes()


def _refused(path, data, match):
    path.write_bytes(data)
    with pytest.raises(ValueError, match=match) as info:
        em.load(path)
    assert str(path) in str(info.value)
    return info


def test_truncated_files(tmp_path):
    path, raw = _saved(tmp_path)
    for cut in sorted(set(range(0, 16)) | set(range(16, len(raw), 7)) | {len(raw) - 1}):
        _refused(path, raw[:cut], "not a valid ember/safetensors file")


def test_flipped_bytes_never_crash(tmp_path):
    path, raw = _saved(tmp_path)
    _, _, n = _parse(raw)
    outcomes = Counter()
    for pos in range(0, 8 + n):
        for bit in (0x01, 0x80):
            data = bytearray(raw)
            data[pos] ^= bit
            path.write_bytes(bytes(data))
            try:
                em.load(path)
                outcomes["loaded"] += 1     # e.g. a flipped padding space or a letter of a str
            except ValueError as e:
                assert str(path) in str(e)
                outcomes["refused"] += 1
    assert outcomes["refused"] > outcomes["loaded"]


@pytest.mark.parametrize("edit,match", [
    (lambda h: h["w"].update(dtype="F8_E5M2"), "unsupported dtype 'F8_E5M2'"),
    (lambda h: h["w"].update(dtype=7), "unsupported dtype 7"),
    (lambda h: h["w"].update(shape=[2, 2]), r"shape \(2, 2\) of F32 needs 16 bytes"),
    (lambda h: h["w"].update(shape=[2, -3]), "the shape must be a list"),
    (lambda h: h["w"].update(shape=[1] * 17), "at most 16"),
    (lambda h: h["w"].update(shape="2x3"), "the shape must be a list"),
    (lambda h: h["w"].update(data_offsets=[8, 4]), "data_offsets must be"),
    (lambda h: h["w"].update(data_offsets=[0, 2 ** 40]), "needs 24 bytes"),
    (lambda h: h.update(extra={"dtype": "F32", "shape": [1000],
                               "data_offsets": [56, 4056]}), "runs past the end"),
    (lambda h: h["b"].update(data_offsets=[8, 40]), "overlapping or missing"),
    (lambda h: h.pop("b"), "overlapping or missing"),
    (lambda h: h.pop("w"), "trailing bytes"),
    (lambda h: h.update(w=[1, 2]), "expected an object with dtype, shape and data_offsets"),
    (lambda h: h["__metadata__"].update(ember_version="99"),
     "ember format version '99', and this ember reads version 1"),
    (lambda h: h["__metadata__"].update(x=1), "__metadata__ must be an object of string"),
    (lambda h: h["__metadata__"].update(ember_structure="{"), "structure is corrupted"),
    (lambda h: h["__metadata__"].update(ember_structure='{"tensor":"nope"}'),
     "refers to tensor 'nope'"),
    (lambda h: h["__metadata__"].update(ember_structure='{"pickle":"x"}'), "unexpected value"),
    (lambda h: h["__metadata__"].update(ember_structure='{"dict":[[[1],2]]}'),
     "unhashable dict key"),
    (lambda h: h["__metadata__"].update(ember_structure='{"dict":[[1,2,3]]}'),
     r"\[key, value\] pair"),
    (lambda h: h["__metadata__"].update(ember_structure='{"tensor":"w"}'),
     r"\['b'\] are not referenced"),
    (lambda h: h["__metadata__"].update(ember_structure='[{"tensor":"w","device":"moon"},'
                                                        '{"tensor":"b"}]'),
     "invalid device 'moon'"),
    (lambda h: h["__metadata__"].update(ember_structure='[{"tensor":"w"},{"tensor":"b",'
                                                        '"requires_grad":true}]'),
     "tensor 'b' of dtype int64 is marked requires_grad"),
    (lambda h: h["__metadata__"].update(ember_structure='[{"tensor":"w","x":1},{"tensor":"b"}]'),
     "unexpected tensor reference"),
    (lambda h: h["__metadata__"].update(ember_structure="[" * 100000 + "]" * 100000),
     "structure is corrupted"),
])
def test_corrupted_headers(tmp_path, edit, match):
    path, raw = _saved(tmp_path)
    header, data, _ = _parse(raw)
    edit(header)
    h = json.dumps(header).encode()
    _refused(path, struct.pack("<Q", len(h)) + h + data, match)


@pytest.mark.parametrize("header,match", [
    (b"[1, 2]", "the header is a JSON list"),
    (b"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"),
    (b"{\"a\": NaN}", "NaN is not allowed"),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"{\"a\": ", "not valid JSON"),
])
def test_malformed_header_json(tmp_path, header, match):
    _refused(tmp_path / "f", struct.pack("<Q", len(header)) + header, match)


def test_header_lengths(tmp_path):
    path, raw = _saved(tmp_path)
    _refused(path, struct.pack("<Q", 2 ** 63) + raw[8:], "larger than the limit")
    _refused(path, struct.pack("<Q", len(raw)) + raw[8:], "runs past the end of the file")
    _refused(path, b"", "too short")
    _refused(path, raw + b"\0", "trailing bytes")


def test_pickle_payloads_are_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for payload in (pickle.dumps(Evil(), protocol=2), pickle.dumps({"w": [1.0]}, protocol=4)):
        _refused(tmp_path / "model.pt", payload, "PyTorch checkpoint.*does not load pickle")
    # a PyTorch zip checkpoint's first bytes
    _refused(tmp_path / "model.pt", b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + b"\0" * 64,
             "starts like a zip archive .*truncated or corrupted")
    assert not marker.exists()


# saving: errors and atomicity -----------------------------------------------------------------

@pytest.mark.parametrize("obj,match", [
    ({"s": {1, 2}}, r"type set \(at \['s'\]\)"),
    ([object()], r"type object \(at \[0\]\)"),
    ({"a": np.zeros(2)}, "type ndarray"),
    ({"x": np.float64(1.0)}, "type float64"),
    ({frozenset(): 1}, "dict key of type frozenset"),
    ({"x": lambda: 0}, "type function"),
])
def test_unsupported_objects(obj, match):
    """The safetensors format holds plain data only (format="auto" pickles the rest)."""
    with pytest.raises(TypeError, match=match):
        em.save(obj, io.BytesIO(), format="safetensors")


def test_cycles_and_bad_targets(tmp_path):
    a = []
    a.append({"self": a})
    with pytest.raises(ValueError, match=r"reference cycle \(at \[0\]\['self'\]\)"):
        em.save(a, io.BytesIO(), format="safetensors")
    back = _roundtrip(a)                  # the archive keeps the cycle, as pickle does
    assert back[0]["self"] is back
    with pytest.raises(TypeError, match="f must be a path or a binary file object"):
        em.save([], io.StringIO())
    with pytest.raises(TypeError, match="f must be a path or a binary file object"):
        em.load(io.StringIO("{}"))
    with pytest.raises(FileNotFoundError):
        em.load(tmp_path / "missing")


def test_interrupted_save_keeps_the_old_file(tmp_path, monkeypatch):
    path, _ = _saved(tmp_path, {"v": em.full((1000,), 1.0)})
    real = serialization._write_payload

    def crash_midway(f, header, tensors):
        f.write(header)
        f.write(b"\0" * 100)
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(serialization, "_write_payload", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        em.save({"v": em.full((1000,), 2.0)}, path)
    assert em.load(path)["v"].tolist() == [1.0] * 1000
    assert os.listdir(tmp_path) == ["ckpt.ember"]        # no temporary file left behind

    monkeypatch.setattr(serialization, "_write_payload", real)

    def failing_replace(src, dst):
        raise OSError("simulated rename failure")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="simulated rename failure"):
        em.save({"v": em.full((1000,), 3.0)}, path)
    assert em.load(path)["v"].tolist() == [1.0] * 1000
    assert os.listdir(tmp_path) == ["ckpt.ember"]
    monkeypatch.undo()
    em.save({"v": em.full((1000,), 4.0)}, path)
    assert em.load(path)["v"].tolist() == [4.0] * 1000


def test_saved_file_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        em.save([], tmp_path / "new")
        assert (os.stat(tmp_path / "new").st_mode & 0o777) == 0o644
        os.chmod(tmp_path / "new", 0o600)
        em.save([1], tmp_path / "new")                     # an existing file keeps its mode
        assert (os.stat(tmp_path / "new").st_mode & 0o777) == 0o600
    finally:
        os.umask(umask)


# issue 16: crafted headers, checksums, killed and failing saves ---------------------------

def _plain_file(entries, data=b""):
    """A safetensors file with the given header entries (no checksums)."""
    h = json.dumps(entries).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


@pytest.mark.parametrize("code,shape", [
    ("F32", [0, 2 ** 62, 2 ** 62]),
    ("F32", [2 ** 63 - 1] * 15 + [0]),
    ("F32", [0] + [2 ** 63 - 1] * 15),
    ("F32", [2 ** 31, 0, 2 ** 31, 2]),          # 2**63 bytes of strides
    ("F64", [2 ** 60, 0]),                      # 2**63 bytes: one past int64
    ("U8", [2 ** 63 - 1, 2, 0]),
])
def test_issue16_item8_empty_tensor_of_a_huge_shape_is_refused_at_once(tmp_path, code, shape):
    path = tmp_path / "crafted.safetensors"
    start = time.perf_counter()
    _refused(path, _plain_file({"t": {"dtype": code, "shape": shape, "data_offsets": [0, 0]}}),
             r"tensor 't': shape .* is too large \(its byte strides overflow int64\)")
    assert time.perf_counter() - start < 1


@pytest.mark.parametrize("code,shape", [
    ("F64", [2 ** 59, 0]), ("U8", [2 ** 61, 0, 3]), ("F32", [0, 2 ** 40]), ("I8", [0] * 16)])
def test_issue16_item8_empty_tensors_near_the_limit_load(tmp_path, code, shape):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(_plain_file({"t": {"dtype": code, "shape": shape, "data_offsets": [0, 0]}}))
    t = em.load(path)["t"]
    assert tuple(t.shape) == tuple(shape) and t.numel() == 0
    assert t.dtype.name == {"F64": "float64", "U8": "uint8", "F32": "float32",
                            "I8": "int8"}[code]


@pytest.mark.parametrize("info,match", [
    ({"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}, "the shape must be a list"),
    ({"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}, "the shape must be a list"),
    ({"dtype": "F32", "shape": [2 ** 63], "data_offsets": [0, 4]}, "the shape must be a list"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 4.0]}, "data_offsets must be"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0]}, "data_offsets must be"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}, "data_offsets must be"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 2 ** 64 + 4]}, "needs 4 bytes"),
    ({"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}, "unsupported dtype"),
    ({"dtype": "F32", "shape": {"a": 1}, "data_offsets": [0, 4]}, "the shape must be a list"),
])
def test_issue16_item8_every_header_entry_is_validated(tmp_path, info, match):
    _refused(tmp_path / "f", _plain_file({"t": info}, b"\0" * 4), rf"tensor 't': .*{match}")


def _checked(tmp_path):
    obj = {"w": em.arange(12, dtype=em.float32).reshape(3, 4), "b": em.arange(5, dtype=em.int64),
           "m": em.tensor([True, False, True]), "meta": [1, "two", em.Size([2, 3])]}
    path, raw = _saved(tmp_path, obj)
    return obj, path, raw


def test_issue16_item10_checksums_are_recorded(tmp_path):
    _, _, raw = _checked(tmp_path)
    header, data, _ = _parse(raw)
    meta = header["__metadata__"]
    crcs = json.loads(meta["ember_crc32"])
    assert set(crcs) == {"w", "b", "m"}
    for name, crc in crcs.items():
        start, stop = header[name]["data_offsets"]
        assert crc == zlib.crc32(data[start:stop])
    del meta["ember_header_crc32"]
    canonical = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    assert _parse(raw)[0]["__metadata__"]["ember_header_crc32"] == str(zlib.crc32(canonical))


def test_issue16_item10_every_flipped_data_byte_is_detected(tmp_path):
    _, path, raw = _checked(tmp_path)
    header, _, n = _parse(raw)
    owner = {}
    for name, info in header.items():
        if name != "__metadata__":
            owner.update(dict.fromkeys(range(*info["data_offsets"]), name))
    assert len(owner) == len(raw) - 8 - n
    for pos, name in owner.items():
        for bit in (0x01, 0x80):
            data = bytearray(raw)
            data[8 + n + pos] ^= bit
            info = _refused(path, bytes(data), "its bytes do not match the checksum")
            assert f"tensor {name!r}" in str(info.value)


def test_issue16_item10_flipped_header_bytes_load_the_same_or_are_refused(tmp_path):
    obj, path, raw = _checked(tmp_path)
    _, _, n = _parse(raw)
    outcomes = Counter()
    for pos in range(8 + n):
        for bit in (0x01, 0x80):
            data = bytearray(raw)
            data[pos] ^= bit
            path.write_bytes(bytes(data))
            try:
                back = em.load(path)
            except ValueError as e:
                assert str(path) in str(e)
                outcomes["refused"] += 1
                continue
            _same(obj, back)            # a flip that changes nothing that matters
            outcomes["same"] += 1
    # what loads: the padding, and the one entry no checksum covers (its own name)
    padding = n - len(raw[8:8 + n].rstrip(b" "))
    assert outcomes["same"] <= 2 * (padding + len("ember_header_crc32")), outcomes


def _without_checksums(raw):
    header, data, _ = _parse(raw)
    del header["__metadata__"]["ember_crc32"], header["__metadata__"]["ember_header_crc32"]
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def test_issue16_item10_files_without_checksums_still_load(tmp_path):
    obj, path, raw = _checked(tmp_path)
    path.write_bytes(_without_checksums(raw))     # as older ember wrote them
    _same(obj, em.load(path))


@pytest.mark.parametrize("value,match", [
    ("x", "ember_crc32 must be a JSON object of CRC-32 values"),
    ("[1]", "ember_crc32 must be a JSON object"),
    ('{"w": -1, "b": 0, "m": 0}', "ember_crc32 must be a JSON object"),
    ('{"w": 4294967296, "b": 0, "m": 0}', "ember_crc32 must be a JSON object"),
    ('{"w": "0", "b": 0, "m": 0}', "ember_crc32 must be a JSON object"),
    ('{"w": 0, "b": 0}', r"ember_crc32 lists the tensors \['b', 'w'\] but the file holds"),
    ('{"w": 0, "b": 0, "m": 0, "x": 0}', "ember_crc32 lists the tensors"),
])
def test_issue16_item10_malformed_checksums(tmp_path, value, match):
    _, path, raw = _checked(tmp_path)
    header, data, _ = _parse(raw)
    header["__metadata__"]["ember_crc32"] = value
    h = json.dumps(header).encode()
    _refused(path, struct.pack("<Q", len(h)) + h + data, match)


def test_issue16_item10_edited_header_fails_its_checksum(tmp_path):
    _, path, raw = _checked(tmp_path)
    header, data, _ = _parse(raw)
    header["__metadata__"]["note"] = "added"      # valid, but not what was saved
    h = json.dumps(header).encode()
    _refused(path, struct.pack("<Q", len(h)) + h + data,
             "the header does not match the checksum saved with it")
    header, data, _ = _parse(raw)                 # the structure renamed away: a plain file?
    meta = header["__metadata__"]
    meta["ember_structurE"] = meta.pop("ember_structure")
    h = json.dumps(header).encode()
    _refused(path, struct.pack("<Q", len(h)) + h + data, "header does not match the checksum")


@pytest.mark.parametrize("structure,match", [
    ('{"size":["a",-1]}', r"an ember.Size holds non-negative ints, got \['a', -1\]"),
    ('{"size":[-1]}', "an ember.Size holds non-negative ints"),
    ('{"size":[1.5]}', "an ember.Size holds non-negative ints"),
    ('{"size":[true]}', "an ember.Size holds non-negative ints"),
    ('{"size":[9223372036854775808]}', "an ember.Size holds non-negative ints"),
    ('{"size":[[1]]}', "an ember.Size holds non-negative ints"),
    ('{"dtype":[1]}', "unexpected value"),
    ('{"dtype":"float8_e4m3fn"}', "unexpected value"),
    ('{"device":5}', "invalid device 5"),
    ('{"device":"moon"}', "invalid device 'moon'"),
    ('{"tuple":5}', "unexpected value"),
    ('{"float":"1e5"}', "unexpected value"),
    ('{"dict":[[{"tensor":"w"},1]]}', "invalid dict key"),
    ('{"dict":[[{"size":[1]},1]]}', "invalid dict key"),
    ('{"odict":[[{"tuple":[[1]]},1]]}', "unhashable dict key"),
    ('{"counter":[1]}', r"\[key, value\] pair"),
    ('[{"tensor":"w","requires_grad":1},{"tensor":"b"}]', "unexpected tensor reference"),
    ('[{"tensor":"w","device":["cpu"]},{"tensor":"b"}]', "unexpected tensor reference"),
    ('[' + '1' * 5000 + ']', "integer string conversion"),
])
def test_issue16_item10_decoded_structures_are_validated(tmp_path, structure, match):
    path, raw = _saved(tmp_path)
    header, data, _ = _parse(raw)
    header["__metadata__"]["ember_structure"] = structure
    h = json.dumps(header).encode()
    _refused(path, struct.pack("<Q", len(h)) + h + data,
             "the saved structure is corrupted: .*" + match)


def test_issue16_item10_save_refuses_what_load_would(tmp_path):
    with pytest.raises(ValueError, match=r"save: an ember.Size holds non-negative ints"):
        em.save({"s": em.Size([-1])}, tmp_path / "s", format="safetensors")
    assert _roundtrip({"s": em.Size([-1])}) == {"s": em.Size([-1])}   # (the archive)
    with pytest.raises(TypeError, match="Size: expected a sequence of ints"):
        em.Size(["a"])                    # (issue 16 item 20: the constructor checks)
    assert type(em.Size([True])[0]) is int
    _same(em.Size([0, 2 ** 63 - 1]), _roundtrip(em.Size([0, 2 ** 63 - 1])))
    _same({(1, 2.5, math.inf, None): 1, -math.inf: 2}, _roundtrip({(1, 2.5, math.inf, None): 1,
                                                                 -math.inf: 2}))


@settings(max_examples=fewer_examples(1))
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=4),
       st.booleans())
def test_issue16_item10_fuzzed_files_load_the_same_or_are_refused(edits, plain):
    """Overwrite bytes anywhere in a saved file (header and data), with and without
    ember's checksums: the load gives the saved values or a ValueError naming the
    file, at once (never a crash, a hang or other values)."""
    obj = {"w": em.arange(6, dtype=em.float32).reshape(2, 3), "s": em.Size([2, 3]),
           "n": [em.tensor([1, -2], dtype=em.int16), 3.5]}
    buf = io.BytesIO()
    em.save(obj, buf)
    raw = buf.getvalue()
    data = bytearray(_without_checksums(raw) if plain else raw)
    for pos, value in edits:
        data[pos % len(data)] = value
    f = io.BytesIO(bytes(data))
    f.name = "fuzzed.ember"
    start = time.perf_counter()
    try:
        back = em.load(f)
    except ValueError as e:
        assert "fuzzed.ember" in str(e)
    else:
        if not plain:
            _same(obj, back)
    assert time.perf_counter() - start < 1


def test_issue16_item9_killed_save_leaves_a_temporary_the_next_save_removes(tmp_path):
    path, _ = _saved(tmp_path, {"v": em.full((1000,), 1.0)})
    code = ("import os, signal, sys, ember as em\n"
            "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"   # mid-save
            "em.save({'v': em.full((1000,), 2.0)}, sys.argv[1])\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert r.returncode == -signal.SIGKILL
    [left] = [p for p in os.listdir(tmp_path) if p != "ckpt.ember"]
    assert left.startswith(".ckpt.ember.ember-tmp-")
    assert em.load(path)["v"].tolist() == [1.0] * 1000            # the target is intact
    em.save({"v": em.full((1000,), 3.0)}, path)
    assert os.listdir(tmp_path) == ["ckpt.ember"]
    assert em.load(path)["v"].tolist() == [3.0] * 1000


def test_issue16_item9_only_temporaries_of_finished_processes_are_removed(tmp_path):
    path = tmp_path / "ckpt.ember"
    prefix = serialization._temp_prefix("ckpt.ember")
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, timeout=60)
        keep = [f"{prefix}{alive.pid}-abc123", f"{prefix}{os.getpid()}-abc123",  # running
                ".ckpt.ember.ember-tmp-0badc0de-1-x" if "0badc0de" not in prefix else
                ".ckpt.ember.ember-tmp-0badc0df-1-x",        # another host's save
                ".ckpt.ember.other", "ckpt.ember.bak", f"{prefix}notapid-x",
                serialization._temp_prefix("other.ember") + f"{gone.stdout.strip()}-x"]
        stale = f"{prefix}{gone.stdout.strip()}-abc123"
        for name in keep + [stale]:
            (tmp_path / name).write_bytes(b"partial")
        em.save([1], path)
        assert sorted(os.listdir(tmp_path)) == sorted(keep + ["ckpt.ember"])
    finally:
        alive.kill()
        alive.wait()
    em.save([2], path)          # now that process is gone too
    assert f"{prefix}{alive.pid}-abc123" not in os.listdir(tmp_path)
    assert em.load(path) == [2]


class _FullDisk(io.RawIOBase):
    """A file on a disk that fills after `room` bytes: short writes, then ENOSPC."""

    def __init__(self, inner, room):
        self.inner, self.room = inner, room

    def writable(self):
        return True

    def write(self, b):
        if self.room == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = min(len(b), self.room)
        self.room -= n
        return self.inner.write(bytes(b[:n]))

    def fileno(self):
        return self.inner.fileno()

    def close(self):
        self.inner.close()
        super().close()


@pytest.mark.parametrize("room", [0, 5, 1000, 3000])
def test_issue16_item9_full_disk_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch,
                                                                      room):
    path, _ = _saved(tmp_path, {"v": em.full((1000,), 1.0)})
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen",
                        lambda fd, mode: _FullDisk(real(fd, mode, buffering=0), room))
    with pytest.raises(OSError) as info:
        em.save({"v": em.full((1000,), 2.0)}, path)
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["ckpt.ember"]
    assert em.load(path)["v"].tolist() == [1.0] * 1000


def test_issue16_item9_full_disk_at_fsync(tmp_path, monkeypatch):
    path, _ = _saved(tmp_path, {"v": em.full((10,), 1.0)})

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left"):
        em.save({"v": em.full((10,), 2.0)}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["ckpt.ember"]
    assert em.load(path)["v"].tolist() == [1.0] * 10


def test_issue16_item9_file_objects_short_writes_and_full_devices(tmp_path):
    obj = {"v": em.arange(1000, dtype=em.float64), "n": "x"}

    class Trickle(io.RawIOBase):           # a raw stream that takes 7 bytes a call
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += bytes(b[:7])
            return min(len(b), 7)

    out = Trickle()
    em.save(obj, out)
    _same(obj, em.load(io.BytesIO(bytes(out.data))))
    with open(tmp_path / "raw", "wb", buffering=0) as f:    # FileIO
        em.save(obj, f)
    _same(obj, em.load(tmp_path / "raw"))
    if os.path.exists("/dev/full"):
        for buffering in (0, -1):
            with open("/dev/full", "wb", buffering=0) as raw:
                f = raw if buffering == 0 else io.BufferedWriter(raw)
                with pytest.raises(OSError) as info:
                    em.save(obj, f)             # flushed by save: the error is its own
                assert info.value.errno == errno.ENOSPC


# issue 18: arbitrary objects in PyTorch's zip format, safely ------------------------------

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


class _Checkpoint:
    """A user class: pickled by reference, loaded with weights_only=False or once allowed."""

    def __init__(self, weight, step):
        self.weight, self.step = weight, step


class _Tagged(em.Tensor):
    """A tensor subclass with an attribute (as nn.Parameter, nn.Buffer are)."""


def test_issue18_tensor_subclasses_keep_their_type():
    t = em.Tensor.__new__(_Tagged)
    t.data = em.arange(3, dtype=em.float32)
    t.note = "kept"
    buf = _archive({"t": t, "plain": em.ones(1)})          # auto: a subclass -> archive
    with pytest.raises(pickle.UnpicklingError, match=r"refuses the global .*_Tagged"):
        em.load(buf)
    buf.seek(0)
    back = em.load(buf, weights_only=False)
    assert type(back["t"]) is _Tagged and back["t"].note == "kept"
    assert back["t"].tolist() == [0, 1, 2] and type(back["plain"]) is em.Tensor
    buf.seek(0)
    with serialization.safe_globals([_Tagged]):
        assert type(em.load(buf)["t"]) is _Tagged


def _archive(obj, **save_kw):
    buf = io.BytesIO()
    em.save(obj, buf, **save_kw)
    assert buf.getvalue()[:4] == b"PK\x03\x04"
    buf.seek(0)
    return buf


def _globals_of(data_pkl):
    import pickletools
    return {arg for op, arg, _ in pickletools.genops(data_pkl) if op.name == "GLOBAL"}


def test_issue18_auto_format_pickles_what_safetensors_cannot_hold():
    obj = {"arr": np.arange(6, dtype=np.float32).reshape(2, 3), "np_f64": np.float64(2.5),
           "np_dtype": np.dtype("int16"), "set": {1, 2}, "frozen": frozenset({"a"}),
           "complex": 1 + 2j, "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"),
           "slice": slice(1, None, 2), "range": range(3),
           "counter": Counter("aab"), "odict": OrderedDict(b=1, a=2),
           "dd": __import__("collections").defaultdict(list, {"k": [1]}),
           "t": em.arange(4, dtype=em.int32), "keys": {frozenset({1}): "fk"}}
    back = _archive(obj)
    back.seek(0)
    back = em.load(back)                                 # weights_only=True: all allowed
    for k in ("np_f64", "np_dtype", "set", "frozen", "complex", "bytes", "bytearray",
              "slice", "range", "counter", "odict", "keys"):
        assert back[k] == obj[k] and type(back[k]) is type(obj[k]), k
    assert list(back["odict"]) == ["b", "a"] and back["dd"]["k"] == [1]
    assert back["dd"].default_factory is list
    np.testing.assert_array_equal(back["arr"], obj["arr"])
    assert back["arr"].dtype == np.float32
    assert back["t"].dtype == em.int32 and back["t"].tolist() == [0, 1, 2, 3]


def test_issue18_user_objects_need_weights_only_false_or_an_allowance():
    ckpt = _Checkpoint(em.ones(2, 2), 3)
    buf = _archive({"ckpt": ckpt, "step": 3})
    full = f"{_Checkpoint.__module__}._Checkpoint"
    for _ in range(2):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError,
                           match=rf"refuses the global {full}.*add_safe_globals"):
            em.load(buf)
    buf.seek(0)
    back = em.load(buf, weights_only=False)["ckpt"]
    assert type(back) is _Checkpoint and back.step == 3 and back.weight.tolist() == [[1, 1]] * 2
    try:
        serialization.add_safe_globals([_Checkpoint])
        assert _Checkpoint in serialization.get_safe_globals()
        buf.seek(0)
        assert type(em.load(buf)["ckpt"]) is _Checkpoint
        serialization.clear_safe_globals()
        assert serialization.get_safe_globals() == []
        with serialization.safe_globals([(_Checkpoint, full)]):
            buf.seek(0)
            assert em.load(buf)["ckpt"].step == 3
            assert serialization.get_safe_globals() == [_Checkpoint]
        assert serialization.get_safe_globals() == []
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError):
            em.load(buf)
    finally:
        serialization.clear_safe_globals()
    with pytest.raises(TypeError, match="add_safe_globals: expected a list"):
        serialization.add_safe_globals(_Checkpoint)
    with pytest.raises(TypeError, match=r"a tuple item must be \(object, 'module.name'\)"):
        serialization.add_safe_globals([(_Checkpoint,)])


class _Hostile:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


@pytest.mark.parametrize("func,args,name", [
    (os.system, ("touch {marker}",), r"(posix|nt|os)\.system"),
    (eval, ("open({marker!r}, 'w')",), r"builtins\.eval"),
    (getattr, ("text", "upper"), r"builtins\.getattr"),
    (subprocess.call, (["touch", "{marker}"],), r"subprocess\.call"),
    (open, ("{marker}", "w"), r"(io|builtins)\.open"),
])
def test_issue18_hostile_pickles_are_refused_without_running(tmp_path, func, args, name):
    marker = tmp_path / "pwned"
    args = tuple(a.format(marker=str(marker)) if isinstance(a, str) else
                 [x.format(marker=str(marker)) for x in a] if isinstance(a, list) else a
                 for a in args)
    path = tmp_path / "evil.pt"
    em.save({"w": em.ones(2), "payload": _Hostile(func, *args)}, path)
    with pytest.raises(pickle.UnpicklingError, match=rf"refuses the global {name}.*"
                                                     rf"add_safe_globals.*weights_only=False"):
        em.load(path)
    with pytest.raises(pickle.UnpicklingError):
        em.load(path, weights_only=None)               # None means the default, True
    assert not marker.exists()


@pytest.mark.parametrize("dtype", DTYPES, ids=[d.name for d in DTYPES])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (5,), (2, 3, 4)])
def test_issue18_every_dtype_and_shape_in_the_archive(dtype, shape):
    values = (np.random.default_rng(1).standard_normal(shape) * 50).astype(np_dtype(dtype))
    t = em.from_numpy(values)
    buf = _archive({"t": t}, format="torch")
    with __import__("zipfile").ZipFile(buf) as zf:
        record = zf.read("archive/data/0")
        info = zf.getinfo("archive/data/0")
        raw = buf.getvalue()
        n, m = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + n + m) % 64 == 0        # aligned as PyTorch's
    assert record == values.astype(values.dtype.newbyteorder("<")).tobytes()
    buf.seek(0)
    back = em.load(buf)["t"]
    assert back.dtype == dtype and tuple(back.shape) == shape
    np.testing.assert_array_equal(to_numpy(back), values)


@settings(max_examples=fewer_examples(2))
@given(tensors())
def test_issue18_any_layout_keeps_its_layout_in_the_archive(case):
    t, expected = case        # contiguous, transposed, strided, expanded, offset views
    back = em.load(io.BytesIO(_archive([t], format="torch").getvalue()))[0]
    assert back.dtype == t.dtype and back.stride() == t.stride()
    assert back.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(to_numpy(back), expected)


def test_issue18_archive_layout_is_pytorchs():
    w = em.arange(6, dtype=em.float32).reshape(2, 3).requires_grad_()
    obj = {"w": w, "row": w.detach()[1], "i": em.arange(2), "size": em.Size([2, 3]),
           "dtype": em.float16, "device": em.device("cpu"), "list": [1, (2.5, "x")]}
    buf = _archive(obj, format="torch")
    import zipfile
    with zipfile.ZipFile(buf) as zf:
        names = zf.namelist()
        assert names[0] == "archive/data.pkl" and names[-1] == "archive/version"
        assert set(names) == {"archive/data.pkl", "archive/.format_version",
                              "archive/.storage_alignment", "archive/byteorder",
                              "archive/data/0", "archive/data/1", "archive/version"}
        assert zf.read("archive/byteorder") == b"little"
        assert zf.read("archive/version") == b"3\n"
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        assert zf.read("archive/data/0") == np.arange(6, dtype="<f4").tobytes()   # w once
        data_pkl = zf.read("archive/data.pkl")
    assert _globals_of(data_pkl) == {"torch._utils _rebuild_tensor_v2", "torch FloatStorage",
                                     "torch LongStorage", "collections OrderedDict",
                                     "torch Size", "torch float16", "torch device"}
    assert b"ember" not in data_pkl          # nothing PyTorch's loader cannot resolve


def test_issue18_loads_a_file_pytorch_wrote():
    """tests/data/torch_objects.pt: written by torch.save (tests/data/make_torch_fixtures.py)."""
    obj = em.load(os.path.join(DATA, "torch_objects.pt"))
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(to_numpy(obj["w"]), w)
    np.testing.assert_array_equal(to_numpy(obj["t"]), w.T)
    np.testing.assert_array_equal(to_numpy(obj["cols"]), w[:, 1::2])
    obj["row"].fill_(-1)                   # views of one storage, as PyTorch saved them
    assert obj["w"][1].tolist() == [-1] * 4 and obj["t"][:, 1].tolist() == [-1] * 4
    assert obj["cols"][1].tolist() == [-1, -1]
    expected = {"f64": ([0, 0.25, 0.5], em.float64), "i32": ([-1, 0, 2 ** 31 - 1], em.int32),
                "i16": ([-7, 7], em.int16), "i8": ([-128, 127], em.int8),
                "u8": ([0, 255], em.uint8), "b": ([True, False], em.bool),
                "f16": ([0.5, -2.0], em.float16), "i64": (2 ** 40, em.int64)}
    for k, (values, dtype) in expected.items():
        assert obj[k].dtype == dtype and obj[k].tolist() == values, k
    assert obj["grad"].requires_grad and obj["grad"].is_leaf
    assert obj["param"].requires_grad and obj["param"].tolist() == [3.0, 3.0]
    meta = obj["meta"]
    assert type(meta) is OrderedDict and list(meta) == ["size", "dtype", "device", "nested"]
    assert meta["size"] == em.Size([2, 3]) and type(meta["size"]) is em.Size
    assert meta["dtype"] is em.float16 and meta["device"] == em.device("cpu")
    assert meta["nested"] == [1, (2.5, "x"), {"k": None}] and obj["set"] == {1, 2}


def test_issue18_loads_a_pytorch_state_dict():
    sd = em.load(os.path.join(DATA, "torch_linear_conv.pt"))
    shapes = {"0.weight": (3, 2, 3, 3), "0.bias": (3,), "1.weight": (3,), "1.bias": (3,),
              "1.running_mean": (3,), "1.running_var": (3,), "1.num_batches_tracked": (),
              "4.weight": (4, 12), "4.bias": (4,)}
    assert type(sd) is OrderedDict and list(sd) == list(shapes)
    for k, shape in shapes.items():
        assert tuple(sd[k].shape) == shape, k
        if k == "1.num_batches_tracked":
            assert sd[k].dtype == em.int64 and sd[k].item() == 7
            continue
        n = math.prod(shape)
        ref = np.linspace(-1, 1, n, dtype=np.float32)
        if k == "1.running_var":
            ref = np.abs(ref) + 0.5
        np.testing.assert_allclose(to_numpy(sd[k]).reshape(-1), ref, rtol=1e-6, atol=1e-7)
        assert not sd[k].requires_grad


def test_issue18_loads_a_hugging_face_safetensors_file():
    """tests/data/hf_model.safetensors: written by the safetensors library from torch."""
    obj = em.load(os.path.join(DATA, "hf_model.safetensors"), map_location="cpu")
    assert sorted(obj) == ["embed.weight", "ids", "mask", "scale"]
    assert obj["embed.weight"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert obj["embed.weight"].dtype == em.float32
    assert obj["ids"].dtype == em.int64 and obj["ids"].tolist() == [0, 1, 2]
    assert obj["scale"].dtype == em.float16 and obj["scale"].tolist() == [0.5, 2.0]
    assert obj["mask"].dtype == em.bool and obj["mask"].tolist() == [True, False]


def test_issue18_unsupported_pytorch_files_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match=r"PyTorch checkpoint in the legacy format.*re-save "
                                         r"it with a recent PyTorch"):
        em.load(os.path.join(DATA, "torch_legacy.pt"))
    header = json.dumps({"x": {"dtype": "F8_E5M2", "shape": [2], "data_offsets": [0, 2]}}).encode()
    _refused(tmp_path / "hf.safetensors", struct.pack("<Q", len(header)) + header + b"\0" * 2,
             r"unsupported dtype 'F8_E5M2', float8_e5m2, which ember does not have")


def test_unsigned_files_load(tmp_path):
    """PyTorch's uint16/32/64 (torch.save: _rebuild_tensor_v3 over an UntypedStorage) and
    safetensors U16/U32/U64 load as ember's dtypes of those names."""
    obj = em.load(os.path.join(DATA, "torch_uints.pt"))
    assert obj["u16"].dtype is em.uint16 and obj["u16"].tolist() == [1, 65535]
    assert obj["u32"].dtype is em.uint32 and obj["u32"].tolist() == [1, 2 ** 32 - 1]
    assert obj["u64"].dtype is em.uint64 and obj["u64"].tolist() == [1, 2 ** 63]
    header = json.dumps({"x": {"dtype": "U32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "hf.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<2I", 7, 2 ** 32 - 1))
    x = em.load(path)["x"]
    assert x.dtype is em.uint32 and x.tolist() == [7, 2 ** 32 - 1]


def test_issue21_bfloat16_files_load(tmp_path):
    """PyTorch's own bfloat16 file (torch.save of {"x": ones(2, bfloat16)}, a
    BFloat16Storage) and a safetensors BF16 tensor load as ember.bfloat16."""
    obj = em.load(os.path.join(DATA, "torch_bfloat16.pt"))
    assert obj["x"].dtype is em.bfloat16 and obj["x"].tolist() == [1.0, 1.0]
    header = json.dumps({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    path = tmp_path / "hf.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<2H", 0x3F80,
                                                                           0xC020))
    x = em.load(path)["x"]
    assert x.dtype is em.bfloat16 and x.tolist() == [1.0, -2.5]


def _rewrite_archive(buf, edit):
    """A copy of the archive with edit(name, bytes) -> bytes applied (CRCs recomputed)."""
    import zipfile
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = edit(info.filename, src.read(info.filename))
            if data is not None:
                dst.writestr(info.filename, data)
    out.seek(0)
    return out


def test_issue18_map_location_and_saved_locations(tmp_path):
    w = em.arange(6, dtype=em.float32)
    buf = _archive({"w": w, "v": w[2:]}, format="torch")
    targets = ("cpu", em.device("cpu"), {"cpu": "cpu"}, lambda s, loc: None,
               lambda s, loc: s, lambda s, loc: s.clone())
    for target in targets:
        buf.seek(0)
        back = em.load(buf, map_location=target)
        assert back["w"].device.type == "cpu" and back["v"].tolist() == [2, 3, 4, 5]
        back["v"].fill_(0)
        assert back["w"].tolist() == [0, 1, 0, 0, 0, 0]
    calls = []
    buf.seek(0)
    em.load(buf, map_location=lambda s, loc: calls.append((tuple(s.shape), s.dtype, loc)))
    assert calls == [((6,), em.float32, "cpu")]             # one storage, called once
    # a file saved from a GPU: back to it where it exists, else a clear error
    cuda = _rewrite_archive(buf, lambda n, d: d.replace(b"X\x03\x00\x00\x00cpu",
                                                        b"X\x06\x00\x00\x00cuda:0"))
    try:
        back = em.load(cuda)
        assert back["w"].device == em.device("cuda:0")
    except RuntimeError as e:
        assert "saved from cuda:0" in str(e) and "map_location='cpu'" in str(e)
    for target in ("cpu", {"cuda:0": "cpu"}, {em.device("cuda:0"): em.device("cpu")}):
        cuda.seek(0)
        back = em.load(cuda, map_location=target)
        assert back["w"].device.type == "cpu" and back["v"].tolist() == [2, 3, 4, 5]
    meta = _rewrite_archive(buf, lambda n, d: d.replace(b"X\x03\x00\x00\x00cpu",
                                                        b"X\x04\x00\x00\x00meta"))
    with pytest.raises(RuntimeError, match="saved from 'meta' cannot be placed"):
        em.load(meta)
    with pytest.raises(TypeError, match="map_location must be"):
        em.load(buf, map_location=3)
    buf.seek(0)
    with pytest.raises(TypeError, match="map_location returned int"):
        em.load(buf, map_location=lambda s, loc: 3)


def test_issue18_device_tensors_round_trip(device):
    w = em.arange(12, dtype=em.float32, device=device).reshape(3, 4)
    obj = {"w": w, "t": w.T, "row": w[1]}
    buf = _archive(obj, format="torch")
    for location in (None, "cpu"):
        buf.seek(0)
        back = em.load(buf, map_location=location)
        expected = device.type if location is None else "cpu"
        assert back["w"].device.type == expected and back["t"].device.type == expected
        np.testing.assert_array_equal(to_numpy(back["t"].cpu()), to_numpy(w.cpu()).T)
        back["row"].fill_(-1)                  # one storage on the device, views of it
        assert back["w"].cpu()[1].tolist() == [-1] * 4
        assert back["t"].cpu()[:, 1].tolist() == [-1] * 4


def test_issue18_mmap(tmp_path):
    path = tmp_path / "ckpt.pt"
    w = em.arange(1000, dtype=em.float64)
    em.save({"w": w, "half": w[500:], "i": em.arange(3, dtype=em.int16),
             "e": em.zeros(0)}, path, format="torch")
    before = path.read_bytes()
    for f in (path, str(path)):
        back = em.load(f, mmap=True)
        assert back["w"].tolist() == list(range(1000)) and back["i"].tolist() == [0, 1, 2]
        back["half"].fill_(-1)                 # copy-on-write: the file stays as it was
        assert back["w"][499:501].tolist() == [499, -1]
        assert back["e"].numel() == 0
    with open(path, "rb") as fh:
        assert em.load(fh, mmap=True)["w"][-1].item() == 999
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        em.load(io.BytesIO(before), mmap=True)


def test_issue18_corrupted_archives_are_clear_errors(tmp_path):
    path = tmp_path / "ckpt.pt"
    em.save({"w": em.arange(64, dtype=em.float32), "n": 3}, path, format="torch")
    raw = bytearray(path.read_bytes())
    import zipfile
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("archive/data/0")
    n, m = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    data_at = info.header_offset + 30 + n + m
    flipped = bytearray(raw)
    flipped[data_at + 5] ^= 0x10
    _refused(tmp_path / "f.pt", bytes(flipped), r"record 'archive/data/0' is corrupted "
                                                 r"\(Bad CRC-32")
    for cut in (10, len(raw) // 2, len(raw) - 10, len(raw) - 1):
        _refused(tmp_path / "f.pt", bytes(raw[:cut]), "truncated or corrupted")
    buf = io.BytesIO(bytes(raw))
    lying = _rewrite_archive(buf, lambda name, d: d.replace(b"K@t", b"K?t")
                             if name.endswith("data.pkl") else d)    # numel 64 -> 63
    with pytest.raises(ValueError, match=r"63 float32 elements need 252 bytes but it holds "
                                         r"256"):
        em.load(lying)
    buf.seek(0)
    missing = _rewrite_archive(buf, lambda name, d: None if name.endswith("data/0") else d)
    with pytest.raises(ValueError, match="no record 'archive/data/0'"):
        em.load(missing)
    buf.seek(0)
    no_pickle = _rewrite_archive(buf, lambda name, d: None if name.endswith("data.pkl") else d)
    with pytest.raises(ValueError, match="no <archive>/data.pkl record"):
        em.load(no_pickle)
    buf.seek(0)
    bad_pickle = _rewrite_archive(buf, lambda name, d: d[:len(d) // 2]
                                  if name.endswith("data.pkl") else d)
    with pytest.raises(ValueError, match="data.pkl is not a valid pickle"):
        em.load(bad_pickle)


@settings(max_examples=fewer_examples(2), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=4))
def test_issue18_fuzzed_archives_load_the_same_or_are_refused(edits):
    obj = {"w": em.arange(6, dtype=em.float32).reshape(2, 3), "s": em.Size([2, 3]),
           "t": [1, "x", (2.5, None)]}
    raw = bytearray(_archive(obj, format="torch").getvalue())
    for pos, value in edits:
        raw[pos % len(raw)] = value
    try:
        back = em.load(io.BytesIO(bytes(raw)))
    except (ValueError, pickle.UnpicklingError):
        return
    _same(obj, back)


def test_issue18_archive_writes_are_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    em.save({"v": em.full((100,), 1.0), "s": {1}}, path)
    real = serialization._write_archive

    def crash_midway(obj, f, protocol):
        real(obj, f, protocol)
        f.truncate(f.tell() // 2)
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(serialization, "_write_archive", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        em.save({"v": em.full((100,), 2.0), "s": {2}}, path)
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    assert em.load(path)["v"].tolist() == [1.0] * 100


def test_issue18_unseekable_streams_and_protocols():
    class Sink(io.RawIOBase):
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += bytes(b)
            return len(b)

    for protocol in (2, 4, 5):
        sink = Sink()
        em.save({"w": em.arange(3), "s": {1}}, sink, pickle_protocol=protocol)
        back = em.load(io.BytesIO(bytes(sink.data)))
        assert back["w"].tolist() == [0, 1, 2] and back["s"] == {1}


def test_issue18_argument_errors():
    with pytest.raises(ValueError, match="format must be one of auto, safetensors, torch"):
        em.save([], io.BytesIO(), format="pt")
    with pytest.raises(TypeError, match="pickle_module must be None or the pickle module"):
        em.save([], io.BytesIO(), pickle_module=json)
    with pytest.raises(ValueError, match=r"pickle_protocol must be an int in \[2, 5\]"):
        em.save({1}, io.BytesIO(), pickle_protocol=1)
    buf = _archive({1})
    with pytest.raises(TypeError, match="weights_only must be a bool"):
        em.load(buf, weights_only="yes")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['bogus'\]"):
        em.load(buf, bogus=1)
    with pytest.raises(TypeError, match="pickle_module must be None"):
        em.load(buf, pickle_module=json)


def test_issue18_a_record_claiming_more_than_the_file_holds_is_refused_before_allocating():
    buf = _archive({"w": em.arange(16, dtype=em.float32)}, format="torch")
    claim = 0xFFFFFFF0                  # 4 GiB - 16 of float32: numel 0x3FFFFFFC
    edited = _rewrite_archive(buf, lambda name, d: d.replace(b"K\x10t", b"J\xfc\xff\xff\x3ft")
                              if name.endswith("data.pkl") else d)
    raw = bytearray(edited.getvalue())
    entry = raw.index(b"PK\x01\x02")             # the central directory's entries
    while not raw[entry + 46:].startswith(b"archive/data/0"):
        entry = raw.index(b"PK\x01\x02", entry + 4)
    raw[entry + 20:entry + 28] = struct.pack("<II", claim, claim)
    with pytest.raises(ValueError, match=rf"record 'archive/data/0' claims {claim} bytes that "
                                         rf"the file \({len(raw)} bytes\) cannot hold"):
        em.load(io.BytesIO(bytes(raw)))


def test_issue18_big_endian_archives_and_legacy_tar_files(tmp_path):
    buf = _archive({"w": em.arange(5, dtype=em.float64), "i": em.arange(3, dtype=em.int16)},
                   format="torch")

    def to_big(name, data):
        if name.endswith("byteorder"):
            return b"big"
        if "/data/" in name:        # data/0 is the float64 storage, data/1 the int16 one
            return np.frombuffer(data, "<f8" if name.endswith("0") else "<i2").astype(
                ">f8" if name.endswith("0") else ">i2").tobytes()
        return data

    big = _rewrite_archive(buf, to_big)
    path = tmp_path / "big.pt"
    path.write_bytes(big.getvalue())
    for kw in ({}, {"mmap": True}):
        back = em.load(path, **kw)
        assert back["w"].tolist() == [0, 1, 2, 3, 4] and back["i"].tolist() == [0, 1, 2]
    import tarfile
    with tarfile.open(tmp_path / "old.pt", "w") as tar:
        info = tarfile.TarInfo("sys_info")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"\x80\x02N."))
    _refused(tmp_path / "old.pt", (tmp_path / "old.pt").read_bytes(),
             "PyTorch checkpoint in the legacy format.*re-save it")
