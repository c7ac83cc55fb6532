"""Interop: NumPy (zero copy), the buffer protocol, DLPack both ways (zero copy, the
deleter called exactly once), pickling, tolist/item."""
from __future__ import annotations

import copy
import gc
import pickle
import struct
import weakref

import numpy as np
import pytest

import ember as em
from ember._C import dlpack as _dl

DTYPES = [em.bool, em.uint8, em.int8, em.int16, em.int32, em.int64, em.float16, em.float32,
          em.float64, em.uint16, em.uint32, em.uint64]
NP = {em.bool: np.bool_, em.uint8: np.uint8, em.int8: np.int8, em.int16: np.int16,
      em.int32: np.int32, em.int64: np.int64, em.float16: np.float16, em.float32: np.float32,
      em.float64: np.float64, em.uint16: np.uint16, em.uint32: np.uint32, em.uint64: np.uint64}


def sample(dtype, shape=(3, 4)):
    a = (np.arange(int(np.prod(shape))) % 7 - 2).reshape(shape)
    return a.astype(NP[dtype])


def same_memory(t, a):
    return t.data_ptr() == a.__array_interface__["data"][0]


@pytest.fixture
def no_leaks():
    """Every managed tensor ember exports is deleted by the end of the test."""
    gc.collect()
    before = _dl.live_exports()
    yield
    gc.collect()
    assert _dl.live_exports() == before


# ----------------------------------------------------------------------------- NumPy

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_shares_memory(dtype):
    a = sample(dtype)
    t = em.from_numpy(a)
    assert t.dtype == dtype and tuple(t.shape) == a.shape and same_memory(t, a)
    b = t.numpy()
    assert b.dtype == a.dtype and np.shares_memory(a, b)
    assert np.array_equal(np.asarray(t), a)
    assert t.tolist() == a.tolist()


def test_numpy_writes_are_seen_both_ways():
    a = np.zeros((2, 3), np.float32)
    t = em.from_numpy(a)
    a[0, 1] = 5
    assert t.tolist()[0][1] == 5
    t.fill_(2)
    assert np.all(a == 2)
    n = t.numpy()
    n[1, 2] = -1
    assert a[1, 2] == -1


def test_numpy_of_views_keeps_strides():
    t = em.arange(24, dtype=em.float64).reshape(4, 6)
    for v in (t.T, t._view((2, 3), (12, 2), 1), t._view((6,), (-1,), 5)):
        a = v.numpy()
        assert a.strides == tuple(s * 8 for s in v.stride())
        assert a.tolist() == v.tolist()
        assert np.shares_memory(a, t.numpy())


def test_from_numpy_views_and_negative_strides():
    a = np.arange(20.).reshape(4, 5)
    for v in (a[::2, 1:], a.T, a[::-1, ::-2], a[1:2, 3:3]):
        t = em.from_numpy(v)
        assert t.tolist() == v.tolist() and tuple(t.shape) == v.shape
        if v.size:
            assert t.data_ptr() == v.__array_interface__["data"][0]


def test_numpy_requires_grad_and_array_dtype():
    x = em.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="numpy: can't call numpy"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1., 1., 1.]
    t = em.arange(4, dtype=em.int32)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    with pytest.raises(ValueError):            # numpy reads the buffer: its own message
        np.asarray(t, dtype=np.float64, copy=False)
    with pytest.raises(ValueError, match="needs a copy"):
        t.__array__(np.float64, copy=False)
    assert np.shares_memory(t.__array__(copy=False), t.numpy())
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        em.from_numpy([1, 2])
    with pytest.raises(TypeError, match="from_numpy: numpy dtype float128"):
        em.from_numpy(np.zeros(2, np.longdouble))


# -------------------------------------------------------------------- buffer protocol

@pytest.mark.parametrize("dtype, fmt", [(em.bool, "?"), (em.uint8, "B"), (em.int8, "b"),
                                        (em.int16, "h"), (em.int32, "i"), (em.int64, "q"),
                                        (em.float16, "e"), (em.float32, "f"),
                                        (em.float64, "d")])
def test_memoryview(dtype, fmt):
    t = em.from_numpy(sample(dtype)).clone()
    m = memoryview(t)
    assert m.format == fmt and m.itemsize == dtype.itemsize
    assert m.shape == (3, 4) and m.strides == (4 * dtype.itemsize, dtype.itemsize)
    assert m.ndim == 2 and not m.readonly and m.c_contiguous
    assert np.asarray(m).tolist() == t.tolist()     # (memoryview.tolist lacks 'e')
    assert m.tobytes() == sample(dtype).tobytes()


def test_memoryview_of_views_and_writes():
    t = em.arange(12, dtype=em.int32).reshape(3, 4)
    m = memoryview(t.T)
    assert m.shape == (4, 3) and m.strides == (4, 16) and not m.c_contiguous
    assert m.tolist() == t.T.tolist()
    memoryview(t)[1, 2] = 100
    assert t.tolist()[1][2] == 100
    a = np.asarray(memoryview(t))
    assert np.shares_memory(a, t.numpy())
    zero_d = em.tensor(2.5, dtype=em.float64)
    assert memoryview(zero_d).shape == () and memoryview(zero_d).tobytes() == struct.pack("d", 2.5)
    assert memoryview(em.zeros(0, 3)).shape == (0, 3)


def test_buffer_keeps_the_tensor_alive():
    t = em.arange(5, dtype=em.int64)
    ref = weakref.ref(t.untyped_storage())
    m = memoryview(t)
    del t
    gc.collect()
    assert ref() is not None and m.tolist() == [0, 1, 2, 3, 4]
    m.release()
    del m
    gc.collect()
    assert ref() is None


# ------------------------------------------------------------------------------ DLPack

def test_dlpack_device():
    assert em.zeros(2).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_consumes_ember(dtype, no_leaks):
    t = em.from_numpy(sample(dtype)).clone()
    a = np.from_dlpack(t)
    assert a.dtype == NP[dtype] and a.tolist() == t.tolist()
    assert a.__array_interface__["data"][0] == t.data_ptr()       # zero copy


def test_numpy_consumes_views_and_sees_writes(no_leaks):
    t = em.arange(24, dtype=em.float32).reshape(4, 6)
    v = t._view((3, 2), (1, 12), 2)                                    # odd strides
    a = np.from_dlpack(v)
    assert a.strides == (4, 48) and a.tolist() == v.tolist()
    t.fill_(7)
    assert np.all(a == 7)
    assert np.from_dlpack(em.tensor(3.0)).shape == ()
    assert np.from_dlpack(em.zeros(0, 2)).shape == (0, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ember_consumes_numpy(dtype):
    a = sample(dtype)
    t = em.from_dlpack(a)
    assert t.dtype == dtype and t.tolist() == a.tolist() and same_memory(t, a)
    a[0, 0] = 1
    assert t.tolist()[0][0] == a[0, 0]


def test_ember_consumes_numpy_views():
    a = np.arange(30.).reshape(5, 6)
    for v in (a[::2, 1::3], a.T, a[::-1], a[2], a[3, 4, ...], a[1:1]):
        t = em.from_dlpack(v)
        assert tuple(t.shape) == v.shape and t.tolist() == v.tolist()
        if v.size:
            assert t.data_ptr() == v.__array_interface__["data"][0]


def test_from_dlpack_keeps_the_producer_alive_and_releases_it_once():
    a = np.arange(10.)
    ref = weakref.ref(a)
    t = em.from_dlpack(a)
    view = t._view((5,), (2,), 0)
    del a
    gc.collect()
    assert ref() is not None                 # the capsule's owner keeps numpy's array
    del t
    gc.collect()
    assert ref() is not None and view.tolist() == [0., 2., 4., 6., 8.]
    del view
    gc.collect()
    assert ref() is None                     # the deleter ran


def test_ember_to_ember_through_capsules(no_leaks):
    x = em.arange(6, dtype=em.int16).reshape(2, 3)
    storage = weakref.ref(x.untyped_storage())
    for capsule in (x.__dlpack__(), x.__dlpack__(max_version=(1, 0))):
        y = em.from_dlpack(capsule)
        assert y.tolist() == x.tolist() and y.data_ptr() == x.data_ptr()
        with pytest.raises(ValueError, match="consumed only once"):
            em.from_dlpack(capsule)
        del y, capsule
    del x
    gc.collect()
    assert storage() is None


def test_from_ember_tensor_shares_storage():
    x = em.arange(4.)
    y = em.from_dlpack(x)
    assert y.untyped_storage() is x.untyped_storage()
    y.fill_(1)
    assert x.tolist() == [1., 1., 1., 1.]


def test_unconsumed_capsules_are_freed(no_leaks):
    x = em.ones(3)
    storage = weakref.ref(x.untyped_storage())
    c1, c2 = x.__dlpack__(), x.__dlpack__(max_version=(1, 2))
    assert _dl.live_exports() >= 2
    del x
    gc.collect()
    assert storage() is not None             # the capsules hold the storage
    del c1, c2
    gc.collect()
    assert storage() is None


class LegacyProducer:
    """A producer from before DLPack 1.0: __dlpack__ takes no keywords."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_legacy_producers(no_leaks):
    x = em.arange(5, dtype=em.uint8)
    y = em.from_dlpack(LegacyProducer(x))
    assert y.tolist() == [0, 1, 2, 3, 4] and y.data_ptr() == x.data_ptr()
    assert em.tensor(LegacyProducer(x)).tolist() == [0, 1, 2, 3, 4]      # via ember.tensor
    del y


def test_dlpack_copy_and_flags(no_leaks):
    x = em.arange(6.).reshape(2, 3).T
    f = _dl.open_capsule(x.__dlpack__(max_version=(1, 0), copy=True))
    assert f["copied"] and not f["read_only"] and f["data"] != x.data_ptr()
    assert f["strides"] == (2, 1)                    # a compact copy of the transpose
    f = _dl.open_capsule(x.__dlpack__(max_version=(1, 0)))
    assert not f["copied"] and f["strides"] == (1, 3) and f["data"] == x.data_ptr()
    del f
    y = em.from_dlpack(np.arange(3.), copy=True)
    assert y.tolist() == [0., 1., 2.]


def test_read_only_producers_are_copied():
    a = np.arange(4.)
    a.flags.writeable = False
    t = em.from_dlpack(a)
    assert t.tolist() == [0., 1., 2., 3.] and not same_memory(t, a)
    t.fill_(9)
    assert a.tolist() == [0., 1., 2., 3.]
    with pytest.raises(BufferError, match="read-only"):
        em.from_dlpack(a, copy=False)


def test_dlpack_errors(no_leaks):
    x = em.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="__dlpack__: can't export a tensor that requires"):
        x.__dlpack__()
    y = em.ones(2)
    with pytest.raises(ValueError, match="stream must be None"):
        y.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="DLPack device"):
        y.__dlpack__(dl_device=(2, 0))
    assert y.__dlpack__(dl_device=(1, 0)) is not None
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        em.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="needs a copy"):
        em.from_dlpack(np.zeros(2), device="cuda", copy=False)


class _Float128Producer:
    """A DLPack producer of a float128 array (NumPy exports no dtype ember lacks since
    uint16/32/64 landed): a legacy capsule over a DLManagedTensor built with ctypes."""

    def __init__(self):
        import ctypes as c

        class Tensor(c.Structure):
            _fields_ = [("data", c.c_void_p), ("device_type", c.c_int32),
                        ("device_id", c.c_int32), ("ndim", c.c_int32), ("code", c.c_uint8),
                        ("bits", c.c_uint8), ("lanes", c.c_uint16),
                        ("shape", c.POINTER(c.c_int64)), ("strides", c.c_void_p),
                        ("byte_offset", c.c_uint64), ("ctx", c.c_void_p),
                        ("deleter", c.c_void_p)]

        self.buf = (c.c_char * 48)()
        self.shape = (c.c_int64 * 1)(3)
        self.managed = Tensor(c.cast(self.buf, c.c_void_p), 1, 0, 1, 2, 128, 1, self.shape,
                              None, 0, None, None)
        new = c.pythonapi.PyCapsule_New
        new.restype, new.argtypes = c.py_object, [c.c_void_p, c.c_char_p, c.c_void_p]
        self.capsule = new(c.addressof(self.managed), b"dltensor", None)

    def __dlpack__(self, stream=None, **kw):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_unsupported_dtypes_do_not_leak():
    """A dtype ember lacks is refused before the capsule is consumed: its producer still
    owns it (the name stays 'dltensor', so its destructor would free it)."""
    import ctypes as c
    p = _Float128Producer()
    with pytest.raises(TypeError, match="from_dlpack: DLPack dtype float128 is not supported"):
        em.from_dlpack(p)
    valid = c.pythonapi.PyCapsule_IsValid
    valid.restype, valid.argtypes = c.c_int, [c.py_object, c.c_char_p]
    assert valid(p.capsule, b"dltensor") == 1


# ---------------------------------------------------------------------------- pickling

@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_round_trip(dtype, protocol):
    t = em.from_numpy(sample(dtype, (2, 3, 4))).clone()
    u = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert type(u) is em.Tensor and u.dtype == dtype
    assert tuple(u.shape) == (2, 3, 4) and u.stride() == t.stride()
    assert u.tolist() == t.tolist()
    assert u.data_ptr() != t.data_ptr()              # the bytes were copied


def test_pickle_keeps_strides_of_dense_layouts():
    t = em.arange(24, dtype=em.int32).reshape(2, 3, 4)
    for v in (t.T, t.permute(1, 2, 0), t._view((3, 1, 2), (2, 99, 1), 0)):
        u = pickle.loads(pickle.dumps(v))
        assert u.stride() == v.stride() and u.tolist() == v.tolist()


def test_views_pickle_as_compact_copies():
    big = em.arange(100_000, dtype=em.float64)
    small = big._view((10,), (1000,), 7)          # every 1000th element
    data = pickle.dumps(small)
    assert len(data) < 1000                       # not the 800 kB storage
    u = pickle.loads(data)
    assert u.tolist() == small.tolist() and u.stride() == (1,) and u.is_contiguous()
    head = big._view((3, 2), (2, 1), 50)          # contiguous, inside a big storage
    assert len(pickle.dumps(head)) < 1000
    assert pickle.loads(pickle.dumps(head)).tolist() == [[50., 51.], [52., 53.], [54., 55.]]
    expanded = em.arange(3.).expand(4, 3)
    u = pickle.loads(pickle.dumps(expanded))
    assert u.tolist() == expanded.tolist() and u.stride() == (3, 1)


def test_pickle_edge_cases():
    for t in (em.tensor(3.5), em.tensor(True), em.zeros(0, 4), em.zeros(2, 0, dtype=em.int8)):
        u = pickle.loads(pickle.dumps(t))
        assert u.tolist() == t.tolist() and u.shape == t.shape and u.dtype == t.dtype


def test_pickle_requires_grad():
    x = em.tensor([1., 2.], requires_grad=True)
    u = pickle.loads(pickle.dumps(x))
    assert u.requires_grad and u.is_leaf and u.grad is None
    assert not pickle.loads(pickle.dumps(em.ones(2))).requires_grad


def test_pickle_protocol_5_out_of_band():
    t = em.arange(1000, dtype=em.float32)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert len(data) < 500 and len(buffers) == 1
    u = pickle.loads(data, buffers=buffers)
    assert u.tolist() == t.tolist() and u.data_ptr() != t.data_ptr()


def test_deepcopy_and_copy():
    t = em.arange(6.).reshape(2, 3)
    for u in (copy.deepcopy(t), copy.copy(t)):
        assert u.tolist() == t.tolist() and u.data_ptr() != t.data_ptr()
    nested = copy.deepcopy({"w": t, "b": [t.T]})
    assert nested["b"][0].tolist() == t.T.tolist()


def test_dtype_device_size_pickle():
    for d in DTYPES:
        assert pickle.loads(pickle.dumps(d)) is d
    for dev in (em.device("cpu"), em.device("cuda:1"), em.device("opencl")):
        assert pickle.loads(pickle.dumps(dev)) == dev
    s = pickle.loads(pickle.dumps(em.zeros(2, 3).shape))
    assert s == (2, 3) and type(s) is em.Size


# ------------------------------------------------------------------------ tolist / item

def test_tolist_and_item():
    assert em.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert em.tensor(2.5).tolist() == 2.5
    assert em.tensor([True, False]).tolist() == [True, False]
    assert em.tensor([1.5], dtype=em.float16).tolist() == [1.5]
    assert em.zeros(2, 0).tolist() == [[], []]
    assert em.arange(6).reshape(2, 3).T.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert em.tensor(7, dtype=em.int8).item() == 7
    assert isinstance(em.tensor([3]).item(), int)
    assert isinstance(em.tensor([3.0]).item(), float)
    assert em.tensor([[True]]).item() is True
    with pytest.raises(ValueError, match="item: a tensor with 2 elements"):
        em.tensor([1, 2]).item()
