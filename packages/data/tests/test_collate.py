"""default_collate and default_convert."""
import collections

import numpy as np
import pytest

import ember as em
from ember.data import default_collate, default_convert

Point = collections.namedtuple("Point", "x y")


def test_tensors_stack_on_a_new_dim():
    out = default_collate([em.ones(2, 3), em.zeros(2, 3)])
    assert tuple(out.shape) == (2, 2, 3) and out[0].sum().item() == 6
    with pytest.raises(ValueError, match="equal shape"):
        default_collate([em.ones(2), em.ones(3)])


def test_numbers_bools_strings():
    assert default_collate([1, 2, 3]).dtype is em.int64
    f = default_collate([1.5, 2.5])
    assert f.dtype is em.float64 and f.tolist() == [1.5, 2.5]
    b = default_collate([True, False])
    assert b.dtype is em.bool and b.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_numpy_arrays_and_scalars():
    out = default_collate([np.ones(3, dtype=np.float32), np.zeros(3, dtype=np.float32)])
    assert out.dtype is em.float32 and tuple(out.shape) == (2, 3)
    s = default_collate([np.float64(1.5), np.float64(2.0)])
    assert s.dtype is em.float64 and s.tolist() == [1.5, 2.0]
    i = default_collate([np.int32(1), np.int32(2)])
    assert i.dtype is em.int32
    with pytest.raises(TypeError, match="dtype <U1|dtype"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_mappings_namedtuples_sequences_nested():
    batch = [{"x": em.ones(2), "y": 1, "meta": {"name": "a", "w": 0.5}},
             {"x": em.zeros(2), "y": 2, "meta": {"name": "b", "w": 1.5}}]
    out = default_collate(batch)
    assert tuple(out["x"].shape) == (2, 2) and out["y"].tolist() == [1, 2]
    assert out["meta"]["name"] == ["a", "b"] and out["meta"]["w"].tolist() == [0.5, 1.5]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert type(od) is collections.OrderedDict and od["a"].tolist() == [1, 2]
    pts = default_collate([Point(1, em.ones(2)), Point(2, em.ones(2))])
    assert type(pts) is Point and pts.x.tolist() == [1, 2] and tuple(pts.y.shape) == (2, 2)
    pairs = default_collate([(1.5, em.ones(3)), (2.5, em.ones(3))])
    assert isinstance(pairs, list) and pairs[0].dtype is em.float64
    nested = default_collate([[1, [2, 3]], [4, [5, 6]]])
    assert nested[0].tolist() == [1, 4] and nested[1][1].tolist() == [3, 6]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])


def test_errors():
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])
    with pytest.raises(ValueError, match="empty"):
        default_collate([])


def test_default_convert():
    a = np.arange(3, dtype=np.float32)
    t = default_convert(a)
    assert isinstance(t, em.Tensor) and t.tolist() == [0.0, 1.0, 2.0]
    a[0] = 9                 # shares memory
    assert t[0].item() == 9
    out = default_convert({"a": np.ones(2), "b": "s", "c": (np.zeros(1), 3)})
    assert isinstance(out["a"], em.Tensor) and out["b"] == "s"
    assert isinstance(out["c"], list) and isinstance(out["c"][0], em.Tensor) and out["c"][1] == 3
    p = default_convert(Point(np.ones(1), 2))
    assert type(p) is Point and isinstance(p.x, em.Tensor)
    s = default_convert(np.float64(2.5))
    assert isinstance(s, em.Tensor) and s.dtype is em.float64
    strs = np.array(["a"])
    assert default_convert(strs) is strs
    x = em.ones(2)
    assert default_convert(x) is x and default_convert(5) == 5
