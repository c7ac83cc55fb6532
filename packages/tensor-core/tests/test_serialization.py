"""em.save / em.load: round trips of nested containers and every dtype/layout, the
safetensors layout read back by hand, corrupted and truncated files (always a clear
ValueError naming the file), atomic saving, and refusing pickle payloads."""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import struct
from collections import Counter, OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings

import ember as em
from ember import serialization
from ember_testing import DTYPES, fewer_examples, np_dtype, tensors, to_numpy

CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
         "int64": "I64", "float16": "F16", "float32": "F32", "float64": "F64"}


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
    back = _roundtrip(obj)
    assert back["a"] is back["b"][0]                      # one object stays one object
    assert back["a"].requires_grad and back["a"].is_leaf
    assert not back["b"][1].requires_grad
    view_back = back["b"][1]
    np.testing.assert_array_equal(to_numpy(view_back), to_numpy(view))
    view_back.fill_(0)                                    # views are materialised copies
    assert bool((back["a"].detach()[1:3] != 0).any())
    np.testing.assert_array_equal(to_numpy(back["c"].detach()), to_numpy(w.detach()).T)


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
    (lambda h: h["w"].update(dtype="BF16"), "unsupported dtype 'BF16'"),
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
             "does not load pickle")
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
    with pytest.raises(TypeError, match=match):
        em.save(obj, io.BytesIO())


def test_cycles_and_bad_targets(tmp_path):
    a = []
    a.append({"self": a})
    with pytest.raises(ValueError, match=r"reference cycle \(at \[0\]\['self'\]\)"):
        em.save(a, io.BytesIO())
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
