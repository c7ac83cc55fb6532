"""Bad input: every mistake is a clear Python exception (IndexError, ValueError,
TypeError, RuntimeError or OverflowError) whose message names the op and the
offending values; nothing crashes the interpreter.

The targeted tests draw invalid shapes, dims, sizes, dtypes and values with
Hypothesis; test_fuzz_api.py throws hostile arguments at the whole API in a child
process, so a segfault is a test failure instead of a dead run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ember as em
from ember._C import core as _core
from ember.ops import table
from ember_testing import (
    DTYPES,
    INT_DTYPES,
    fewer_examples,
    other_devices,
    row_input_dtypes,
    shapes,
)

ERRORS = (IndexError, ValueError, TypeError, RuntimeError, OverflowError)


def _mentions(message, *values):
    """Whether message names every value (shapes as tuples, dims as ints, dtypes by
    name)."""
    for v in values:
        if isinstance(v, (tuple, list)):
            text = str(tuple(v))
        elif isinstance(v, em.dtype):
            text = v.name
        else:
            text = str(v)
        if text not in message:
            return False
    return True


def raises_naming(exc, op, *values):
    """pytest.raises(exc) that also checks the message names `op` and `values`."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *a):
            r = self.ctx.__exit__(*a)
            msg = str(self.info.value)
            assert re.search(rf"\b{re.escape(op)}", msg), f"message does not name {op!r}: {msg!r}"
            assert _mentions(msg, *values), f"message does not name {values}: {msg!r}"
            return r
    return _Check()


def _broadcastable(*shapes_):
    try:
        np.broadcast_shapes(*shapes_)
        return True
    except ValueError:
        return False


BINARY = [row for row in table.ELEMENTWISE if row.arity == 2]
TERNARY = [row for row in table.ELEMENTWISE if row.arity == 3]


# ----------------------------------------------------------------------------- shapes

@given(data=st.data())
@settings(max_examples=fewer_examples(1))
def test_non_broadcastable_shapes(data, device):
    row = data.draw(st.sampled_from(BINARY + TERNARY))
    n = row.arity
    shp = [data.draw(shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)) for _ in range(n)]
    assume(not _broadcastable(*shp))
    d = data.draw(st.sampled_from(row_input_dtypes(row)))
    args = [em.zeros(s, dtype=em.bool if (row.name == "where" and k == 0) else d, device=device)
            for k, s in enumerate(shp)]
    with raises_naming(ValueError, row.name, *shp):
        getattr(em, row.name)(*args)


@given(data=st.data())
@settings(max_examples=fewer_examples(2))
def test_out_with_the_wrong_shape(data, device):
    row = data.draw(st.sampled_from(BINARY))
    a = data.draw(shapes(max_dims=3, max_side=3))
    b = data.draw(shapes(max_dims=3, max_side=3))
    assume(_broadcastable(a, b))
    result = np.broadcast_shapes(a, b)
    wrong = data.draw(shapes(max_dims=3, max_side=3))
    assume(tuple(wrong) != tuple(result))
    d = data.draw(st.sampled_from(row_input_dtypes(row)))
    out = em.zeros(wrong, dtype=em.bool if row.out == "bool" else d, device=device)
    x, y = em.zeros(a, dtype=d, device=device), em.zeros(b, dtype=d, device=device)
    with raises_naming(ValueError, row.name, tuple(result), tuple(wrong)):
        getattr(em, row.name)(x, y, out=out)
    if row.inplace and tuple(a) != tuple(result):
        # in place: the result must fit the tensor itself
        with raises_naming(ValueError, row.name):
            getattr(x, row.name + "_")(y)


@given(shape=shapes(min_dims=2, max_dims=4, min_side=2, max_side=4), data=st.data())
@settings(max_examples=fewer_examples(2))
def test_view_on_non_contiguous_raises(shape, data, device):
    x = em.zeros(shape, device=device).transpose(0, -1)
    with raises_naming(RuntimeError, "view", (int(np.prod(shape)),)):
        x.view(-1)
    assert x.reshape(-1).shape == (int(np.prod(shape)),)


@given(shape=shapes(max_dims=3), new=shapes(max_dims=3))
@settings(max_examples=fewer_examples(2))
def test_reshape_to_a_different_number_of_elements(shape, new, device):
    assume(int(np.prod(shape)) != int(np.prod(new)))
    x = em.zeros(shape, device=device)
    for op in ("reshape", "view"):
        with raises_naming(ValueError, op, tuple(new), int(np.prod(shape))):
            getattr(x, op)(*new) if new else getattr(x, op)(())


@given(shape=shapes(max_dims=3), target=shapes(max_dims=4))
@settings(max_examples=fewer_examples(2))
def test_expand_to_an_incompatible_shape(shape, target, device):
    ok = len(target) >= len(shape) and all(
        s == t or s == 1 for s, t in zip(shape[::-1], target[::-1]))
    assume(not ok)
    with raises_naming(ValueError, "expand", tuple(target)):
        em.zeros(shape, device=device).expand(*target) if target else \
            em.zeros(shape, device=device).expand(())


def test_negative_and_huge_sizes(device):
    for fn in ("zeros", "ones", "empty"):
        with raises_naming(ValueError, fn, -1):
            getattr(em, fn)(2, -1, device=device)
    with raises_naming(ValueError, "full", -3):
        em.full((-3,), 1.0)
    with raises_naming(ValueError, "reshape", -2):
        em.zeros(6).reshape(-2, 3)
    with raises_naming(ValueError, "reshape"):
        em.zeros(6).reshape(-1, -1)
    with raises_naming(ValueError, "empty", 17):
        em.empty([1] * 17)


def _run_isolated(code, device):
    """Run `code` in a fresh interpreter (ember imported as em, x = ones(2)); returns
    the CompletedProcess, so a segfault fails one test instead of the whole run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    prog = f"import ember as em\nx = em.ones(2, device={str(device)!r})\n" + code
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          timeout=60, env=env)


def _how(proc):
    if proc.returncode < 0:
        return f"the interpreter died (signal {-proc.returncode})"
    return f"exited with status {proc.returncode} (an exception of another type)"


HUGE = ["em.empty(2 ** 40, 2 ** 40).T.contiguous()", "em.zeros(2 ** 32, 2 ** 32)",
        "em.empty((2 ** 62, 4)).fill_(1)", "em.eye(2 ** 62)", "em.ones(3, 2 ** 62).sum(0)",
        "em.full((2 ** 31, 2 ** 31, 4), 1.0)"]


@pytest.mark.parametrize("code", HUGE)
def test_huge_shapes_are_rejected(code, device):
    """Sizes whose element count overflows int64 are a ValueError (or MemoryError),
    never a 0-byte tensor that crashes when touched."""
    r = _run_isolated("try:\n    " + code + "\nexcept (ValueError, MemoryError) as e:\n"
                      "    print(type(e).__name__, e)\n", device)
    assert r.returncode == 0, f"{code}: {_how(r)}\n{r.stderr[-1500:]}"
    assert r.stdout.startswith(("ValueError", "MemoryError")), f"{code}: no error ({r.stdout!r})"


# ---------------------------------------------------------------- issue 16: layouts

def test_issue16_item1_legacy_tensor_constructor(device):
    """em.Tensor(...) follows torch.Tensor: data is copied into the default float dtype,
    ints (or a Size) are sizes, and it never yields a tensor over no memory."""
    t = em.Tensor([-4.0], device=device)
    assert (t.dtype, tuple(t.shape), t.tolist()) == (em.float32, (1,), [-4.0])
    assert t.double().tolist() == [-4.0] and repr(t.cpu()) == "tensor([-4.])"
    assert em.Tensor([[1, 2], [3, 4]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert em.Tensor((2, 3)).tolist() == [2.0, 3.0]            # a tuple is data
    for args, shape in [((3,), (3,)), ((2, 3), (2, 3)), ((em.Size([2, 3]),), (2, 3)),
                        ((), (0,)), ((0,), (0,)), ((np.int64(2), 1), (2, 1))]:
        u = em.Tensor(*args, device=device)
        assert (u.dtype, tuple(u.shape), u.device.type) == (em.float32, shape, device.type)
        assert u.fill_(1.5).sum().item() == 1.5 * int(np.prod(shape))
    src = em.arange(3, device=device)
    alias = em.Tensor(src)                                   # shares memory, any dtype
    assert alias.dtype == em.int64 and alias.data_ptr() == src.data_ptr()
    with raises_naming(TypeError, "Tensor", "float"):
        em.Tensor(2.5)
    with raises_naming(TypeError, "Tensor"):
        em.Tensor(2, "a")
    with raises_naming(ValueError, "empty", -1):
        em.Tensor(2, -1)
    prev = em.get_default_dtype()
    em.set_default_dtype(em.float64)
    try:
        assert em.Tensor([1]).dtype == em.float64 and em.Tensor(2).dtype == em.float64
    finally:
        em.set_default_dtype(prev)


def test_issue16_item1_every_way_of_making_a_tensor_object_is_valid():
    """Tensor.__new__ alone (what nn.Parameter and unpickling call) and em.Storage()
    give an empty tensor on real memory, which prints and converts."""
    for t in (em.Tensor.__new__(em.Tensor), em.Tensor()):
        assert (tuple(t.shape), t.dtype, t.device.type) == ((0,), em.float32, "cpu")
        assert t.tolist() == [] and t.double().tolist() == [] and repr(t) == "tensor([])"
    s = em.Storage()
    assert (s.nbytes, str(s.device)) == (0, "cpu")
    assert _core.as_strided_from(s, em.float32, (0,), (1,), 0).tolist() == []
    r = _run_isolated("print(em.Tensor([-4.0]), em.Tensor([-4.0]).double(), em.Tensor(3).shape, "
                      "em.Tensor.__new__(em.Tensor).double())", "cpu")
    assert r.returncode == 0, f"{_how(r)}\n{r.stderr[-1500:]}"


# (call, op named in the message): views whose layout overflows int64 or leaves the
# storage, from every function that makes a view from sizes, strides and an offset
_OUT_OF_STORAGE = [
    ("x.as_strided((3,), (3 * 2 ** 61,))", "as_strided"),
    ("x.as_strided((3,), (2 ** 62,))", "as_strided"),
    ("x.as_strided((3,), (2 ** 63 - 1,))", "as_strided"),
    ("x.as_strided((3,), (-2 ** 63,), 2)", "as_strided"),
    ("x.as_strided((2,), (2 ** 31,))", "as_strided"),
    ("x.as_strided((3,), (1,), 2 ** 63 - 1)", "as_strided"),
    ("x.as_strided((3,), (1,), 2 ** 63 - 2)", "as_strided"),
    ("x.as_strided((3,), (1,), 2 ** 62)", "as_strided"),
    ("x.as_strided((3,), (1,), 2 ** 31)", "as_strided"),
    ("x.as_strided((3,), (1,), -1)", "as_strided"),
    ("x.as_strided((3,), (1,), -2 ** 63)", "as_strided"),
    ("x.as_strided((3,), (-1,), 1)", "as_strided"),
    ("x.as_strided((2, 2), (2 ** 62, 2 ** 62))", "as_strided"),
    ("x.as_strided((2 ** 32, 2 ** 32), (2 ** 31, 2 ** 31))", "as_strided"),
    ("x.as_strided((3,), (1,), 2 ** 64)", "as_strided"),
    ("x.as_strided((3,), (2 ** 64,))", "as_strided"),
    ("x._view((3,), (2 ** 62,), 0)", "view"),
    ("x._view((2,), (1,), 2 ** 63 - 1)", "view"),
    ("em._C.core.as_strided_from(x.untyped_storage(), x.dtype, (3,), (2 ** 62,), 0)",
     "as_strided"),
    ("em._C.core.as_strided_from(x.untyped_storage(), x.dtype, (3,), (1,), 2 ** 63 - 1)",
     "as_strided"),
    ("x.unfold(0, 2, 2 ** 62).as_strided((2, 2), (2 ** 62, 1))", "as_strided"),
    ("em.empty_strided((3,), (2 ** 62,), device=dev)", "empty_strided"),
    ("em.empty_strided((2, 2), (2 ** 63 - 1, 1), device=dev)", "empty_strided"),
    ("em.empty_strided((3,), (-1,), device=dev)", "empty_strided"),
]


def test_issue16_item3_view_layouts_use_checked_arithmetic(device):
    """stride * (size - 1) and offset + reach are computed in checked int64: a layout
    that overflows, or reaches outside the storage, is a clear error (ValueError, or
    OverflowError for a number that is no int64), never a read or write elsewhere."""
    prog = "dev = x.device\nx = em.tensor([1., 2, 3], device=dev)\nfor code, op in CASES:\n" \
           "    try:\n        r = eval(code)\n        r.fill_(9.0)\n" \
           "        print('NO ERROR', code, r.tolist())\n" \
           "    except (ValueError, OverflowError) as e:\n" \
           "        assert str(e).startswith(op + ':'), (code, str(e))\n"
    r = _run_isolated(f"CASES = {_OUT_OF_STORAGE!r}\n" + prog, device)
    assert r.returncode == 0 and not r.stdout, f"{_how(r)}\n{r.stdout}{r.stderr[-1500:]}"
    x = em.tensor([1., 2, 3], device=device)
    with raises_naming(ValueError, "as_strided", "overflowed", (3,), (2 ** 62,)):
        x.as_strided((3,), (2 ** 62,))
    with raises_naming(ValueError, "as_strided", "offset", -1):
        x.as_strided((3,), (1,), -1)
    # the legitimate layouts next to them still work
    assert x.as_strided((3,), (-1,), 2).tolist() == [3.0, 2.0, 1.0]
    assert x.as_strided((2, 2), (1, 1)).tolist() == [[1.0, 2.0], [2.0, 3.0]]
    assert x.as_strided((1,), (2 ** 63 - 1,), 2).tolist() == [3.0]   # size 1: never stepped
    assert x.as_strided((0,), (2 ** 63 - 1,), 3).tolist() == []
    assert tuple(x.unfold(0, 2, 2 ** 62).shape) == (1, 2)
    assert tuple(em.empty_strided((2, 3), (1, 2), device=device).stride()) == (1, 2)
    assert em.empty_strided((0, 2 ** 62), (2 ** 62, 1), device=device).numel() == 0


def test_issue16_item4_shape_and_strides_must_pair_up(device):
    """Sizes and strides copied into C arrays must have one length and be ints."""
    x = em.zeros(24, device=device)
    for make, op in [(lambda sh, st: em.empty_strided(sh, st, device=device), "empty_strided"),
                     (lambda sh, st: x.as_strided(sh, st), "as_strided"),
                     (lambda sh, st: x._view(sh, st, 0), "view")]:
        with raises_naming(ValueError, op, (2, 3, 4), (12, 4)):
            make((2, 3, 4), (12, 4))
        with raises_naming(ValueError, op, (2,), (1, 1, 1)):
            make((2,), (1, 1, 1))
        with raises_naming(ValueError, op, (2, 3, 4), ()):
            make((2, 3, 4), ())
        with raises_naming(TypeError, op, 1.0):
            make((2, 3), (3, 1.0))
        with raises_naming(TypeError, op):
            make((2, 3), None)
        with raises_naming(ValueError, op, -1):
            make((2, -1), (1, 1))
        assert tuple(make((2, 3), (3, 1)).shape) == (2, 3)
    r = _run_isolated("try:\n    em.empty_strided((2, 3, 4), (12, 4))\nexcept ValueError as e:\n"
                      "    print(e)", device)
    assert r.returncode == 0 and "empty_strided" in r.stdout, f"{_how(r)}\n{r.stderr[-1500:]}"


@pytest.mark.parametrize("code,shape", [
    ("em.tensor([1., 2, 3], device=dev).expand(2 ** 62, 4, 3)", (2 ** 62, 4, 3)),
    ("em.zeros(3, device=dev).as_strided((3, 2 ** 62), (1, 0))", (3, 2 ** 62)),
    ("em.zeros(1, device=dev).expand(2 ** 31, 2 ** 31, 2 ** 2)", (2 ** 31, 2 ** 31, 4)),
    ("em.zeros(1, device=dev).expand(2 ** 63 - 1, 2)", (2 ** 63 - 1, 2)),
    ("em.zeros(1, 1, device=dev).expand(2 ** 32, 2 ** 31)", (2 ** 32, 2 ** 31)),
])
def test_issue16_item7_numel_always_fits_int64(code, shape, device):
    """A view whose element count overflows int64 is refused when made (it used to
    report numel 0 or a negative one, and tolist() then hung)."""
    op = "expand" if "expand" in code else "as_strided"
    r = _run_isolated(f"dev = x.device\ntry:\n    t = {code}\n    print('NO ERROR', t.numel())\n"
                      f"except ValueError as e:\n    print(e)\n", device)
    assert r.returncode == 0, f"{_how(r)}\n{r.stderr[-1500:]}"
    assert r.stdout.startswith(f"{op}: numel: integer multiplication overflow") and \
        str(shape) in r.stdout, r.stdout


def test_issue16_item7_big_but_valid_views_and_impossible_allocations(device):
    """Zero-stride views may have up to 2**63 - 1 elements (numel and nbytes exact);
    an allocation that can't be made fails at once with a MemoryError giving the
    bytes asked for."""
    big = em.zeros(1, device=device).expand(2 ** 40, 2 ** 20)
    assert big.numel() == 2 ** 60 and big.nbytes == 2 ** 62
    assert em.zeros(1, device=device).expand(2 ** 63 - 1).numel() == 2 ** 63 - 1
    for size, dtype, nbytes in [((2 ** 40, 2 ** 20), em.float32, 2 ** 62),
                                ((2 ** 61,), em.float64, 2 ** 64),
                                ((2 ** 62, 1), em.uint8, 2 ** 62),
                                ((2 ** 31, 2 ** 31), em.float32, 2 ** 64)]:
        start = time.perf_counter()
        with pytest.raises(MemoryError, match=str(nbytes)):
            em.empty(size, dtype=dtype, device=device)
        assert time.perf_counter() - start < 5


_INPLACE_WRITES = {
    # name: an in-place write into t (a float tensor), as a user would make it
    "add_": lambda t: t.add_(1), "mul_ (op)": lambda t: t.mul_(2),
    "sigmoid_": lambda t: t.sigmoid_(), "clamp_": lambda t: t.clamp_(0, 1),
    "relu_": lambda t: t.relu_(), "neg_": lambda t: t.neg_(),
    "copy_": lambda t: t.copy_(em.ones(tuple(t.shape), device=t.device)),
    "out=": lambda t: em.add(em.ones(tuple(t.shape), device=t.device), 1, out=t),
    "+=": lambda t: t.__iadd__(1), "lerp_": lambda t: t.lerp_(em.ones_like(t), 0.5),
    "tril_": lambda t: t.tril_(), "cumsum_": lambda t: t.cumsum_(0),
    "uniform_": lambda t: t.uniform_(), "normal_": lambda t: t.normal_(),
    "masked_fill_": lambda t: t.masked_fill_(em.ones(tuple(t.shape), dtype=em.bool,
                                                     device=t.device), 2.0),
    "index_put_": lambda t: t.index_put_((em.tensor([0], device=t.device),),
                                         em.tensor(5.0, device=t.device)),
    "setitem": lambda t: t.__setitem__(em.tensor([0, 1], device=t.device), 5.0),
    "index_fill_": lambda t: t.index_fill_(1, em.tensor([0], device=t.device), 1.0),
    "scatter_": lambda t: t.scatter_(0, em.zeros(1, 4, dtype=em.int64, device=t.device), 1.0),
}


@pytest.mark.parametrize("name", sorted(_INPLACE_WRITES))
def test_issue16_item19_in_place_writes_into_overlapping_memory(name, device):
    """An in-place op on a tensor whose elements share memory (a zero stride on a
    dim of size > 1) would update each location once per alias: it raises, as PyTorch,
    instead of adding 3 where 1 was asked."""
    write = _INPLACE_WRITES[name]
    for t in (em.zeros(1, 4, device=device).expand(3, 4),
              em.arange(4., device=device).as_strided((3, 4), (0, 1))):
        with pytest.raises(RuntimeError, match=r"more than one element of the written-to "
                                               r"tensor \(shape \(3, 4\), strides \(0, 1\)\) "
                                               r"refers to a single memory location. Please "
                                               r"clone\(\) the tensor"):
            write(t)
    write(em.zeros(3, 4, device=device))      # the same write without aliases works
    write(em.zeros(12, device=device).as_strided((3, 4), (4, 1)))


def test_issue16_item19_aliases_are_fine_where_they_do_no_harm(device):
    """Reading an expanded tensor, filling it (one value: fill_ and zero_ are allowed in
    PyTorch too) and writing a non-overlapping view of it (x[0] = ...) still work."""
    base = em.zeros(1, 4, device=device)
    a = base.expand(3, 4)
    assert (a + 1).sum().item() == 12.0
    assert em.add(a, 1, out=em.zeros(3, 4, device=device)).sum().item() == 12.0
    a.fill_(2.0)
    assert base.tolist() == [[2.0] * 4]
    a.zero_()
    a[0] = 1.0                                # a[0] has no aliases of its own
    a[1, 2:] = em.tensor([5.0, 6.0], device=device)
    assert base.tolist() == [[1.0, 1.0, 5.0, 6.0]]
    # a zero stride on a dim of size 1, or in an empty tensor, aliases nothing
    assert em.zeros(0, 2, device=device).as_strided((0, 2), (0, 0)).add_(1).numel() == 0
    assert em.zeros(3, device=device).as_strided((3, 1), (1, 0)).add_(1).tolist() == [[1.0]] * 3
    r = em.arange(4., device=device).as_strided((3,), (0,))
    with raises_naming(RuntimeError, "sigmoid_", "single memory location"):
        r.sigmoid_()
    assert r.clone().sigmoid_().tolist() == pytest.approx([0.5] * 3)


# ----------------------------------------------------------------------------- dims

DIM_OPS = {
    # name: (call, valid dims for a tensor of n dims)
    "sum": (lambda x, d: em.sum(x, d), lambda n: n),
    "prod": (lambda x, d: em.prod(x, d), lambda n: n),
    "amax": (lambda x, d: em.amax(x, d), lambda n: n),
    "amin": (lambda x, d: em.amin(x, d), lambda n: n),
    "all": (lambda x, d: em.all(x, d), lambda n: n),
    "any": (lambda x, d: em.any(x, d), lambda n: n),
    "mean": (lambda x, d: em.mean(x, d), lambda n: n),
    "var": (lambda x, d: em.var(x, d), lambda n: n),
    "std": (lambda x, d: em.std(x, d), lambda n: n),
    "argmax": (lambda x, d: em.argmax(x, d), lambda n: n),
    "argmin": (lambda x, d: em.argmin(x, d), lambda n: n),
    "max": (lambda x, d: em.max(x, d), lambda n: n),
    "min": (lambda x, d: em.min(x, d), lambda n: n),
    "logsumexp": (lambda x, d: em.logsumexp(x, d), lambda n: n),
    "norm": (lambda x, d: em.norm(x, 2, d), lambda n: n),
    "count_nonzero": (lambda x, d: em.count_nonzero(x, d), lambda n: n),
    "transpose": (lambda x, d: x.transpose(0 if x.ndim else d, d), lambda n: n),
    "squeeze": (lambda x, d: x.squeeze(d), lambda n: n),
    "unsqueeze": (lambda x, d: x.unsqueeze(d), lambda n: n + 1),
    "narrow": (lambda x, d: x.narrow(d, 0, 0), lambda n: n),
    "unfold": (lambda x, d: x.unfold(d, 0, 1), lambda n: n),
    "movedim": (lambda x, d: x.movedim(d, 0), lambda n: n),
    "flatten": (lambda x, d: x.flatten(d), lambda n: n),
    "size": (lambda x, d: x.size(d), lambda n: n),
    "stride": (lambda x, d: x.stride(d), lambda n: n),
    "diagonal": (lambda x, d: x.diagonal(0, d, 0 if d != 0 else 1), lambda n: n),
}


@pytest.mark.parametrize("op", sorted(DIM_OPS))
@given(shape=shapes(max_dims=3, min_side=1), data=st.data())
@settings(max_examples=fewer_examples(8))
def test_out_of_range_dims(op, shape, data, device):
    call, valid = DIM_OPS[op]
    if op == "diagonal" and len(shape) < 2:
        shape = (2, 2)
    n = max(valid(len(shape)), 1)
    dim = data.draw(st.one_of(st.integers(n, n + 5), st.integers(-n - 5, -n - 1)))
    x = em.ones(shape, device=device)
    with raises_naming(IndexError, op, dim):
        call(x, dim)
    with raises_naming(TypeError, op, 1.5):
        call(x, 1.5)


def test_repeated_dims(device):
    x = em.ones(2, 3, device=device)
    with raises_naming(ValueError, "sum", (0, 0)):
        x.sum((0, -2))
    with raises_naming(ValueError, "permute"):
        x.permute(1, 1)
    with raises_naming(ValueError, "permute", 1, 2):
        x.permute(0)
    with raises_naming(ValueError, "diagonal", 1):
        x.diagonal(0, 1, -1)
    with raises_naming(ValueError, "movedim"):
        x.movedim((0, 0), (0, 1))


# ----------------------------------------------------------------------------- index values

@given(size=st.integers(0, 5), start=st.integers(-10, 10), length=st.integers(-3, 10))
@settings(max_examples=fewer_examples(1))
def test_narrow_out_of_range(size, start, length, device):
    s0 = start + size if start < 0 else start
    assume(s0 < 0 or length < 0 or s0 + length > size)
    with raises_naming(IndexError, "narrow", length):
        em.zeros(size, device=device).narrow(0, start, length)


@given(size=st.integers(0, 5), window=st.integers(-2, 8), step=st.integers(-2, 3))
@settings(max_examples=fewer_examples(1))
def test_unfold_out_of_range(size, window, step, device):
    assume(window < 0 or window > size or step <= 0)
    with raises_naming(ValueError, "unfold", window if (window < 0 or window > size) else step):
        em.zeros(size, device=device).unfold(0, window, step)


@pytest.mark.parametrize("call,op,value", [
    (lambda x: x.narrow(0, 0.5, 1), "narrow", 0.5),
    (lambda x: x.narrow(0, 0, 1.5), "narrow", 1.5),
    (lambda x: x.reshape(2.5, 2), "reshape", 2.5),
    (lambda x: x.view(3.0, 2), "view", 3.0),
    (lambda x: x.expand(2.5, 3), "expand", 2.5),
    (lambda x: x.unfold(0, 1.5, 1), "unfold", 1.5),
    (lambda x: x.diagonal(0.5), "diagonal", 0.5),
    (lambda x: x.movedim(0.0, 1), "movedim", 0.0),
    (lambda x: x.unflatten(1, (1.5, 2)), "unflatten", 1.5),
    (lambda x: em.zeros(2.5), "zeros", 2.5),
    (lambda x: em.ones((2, 1.5)), "ones", 1.5),
    (lambda x: em.full((2.0,), 1), "full", 2.0),
    (lambda x: em.empty(1.5), "empty", 1.5),
    (lambda x: em.eye(2.5), "eye", 2.5),
    (lambda x: em.linspace(0, 1, 2.5), "linspace", 2.5),
    (lambda x: x.sum(0.0), "sum", 0.0),
    (lambda x: x.transpose(0, 1.0), "transpose", 1.0),
    (lambda x: x.size(1.5), "size", 1.5),
], ids=lambda v: v if isinstance(v, str) else "")
def test_float_where_int_is_required(call, op, value, device):
    x = em.zeros(2, 3, device=device)
    with raises_naming(TypeError, op, value):
        call(x)


def test_item_bool_len_index(device):
    x = em.ones(2, 3, device=device)
    with raises_naming(ValueError, "item", 6):
        x.item()
    with raises_naming(RuntimeError, "bool", 6):
        bool(x)
    with pytest.raises(TypeError, match="len"):
        len(em.tensor(1.0))
    with pytest.raises(TypeError, match="integer"):
        [1, 2][em.tensor(1.0)]


# ----------------------------------------------------------------------------- dtypes

def _unsupported():
    for row in table.ELEMENTWISE:
        if row.promote == "float" or row.name == "where":
            continue
        for d in DTYPES:
            if d.kind not in row.body:
                yield pytest.param(row, d, id=f"{row.name}-{d.name}")


@pytest.mark.parametrize("row,dtype", list(_unsupported()))
def test_unsupported_dtype(row, dtype, device):
    """sub / neg on bool, bitwise ops on floats, fmax on ints, ... name op and dtype."""
    args = [em.ones(2, dtype=dtype, device=device) for _ in range(row.arity)]
    with raises_naming(TypeError, row.name, dtype):
        getattr(em, row.name)(*args)


def test_unsupported_reduction_dtype(device):
    """A reduction row run on a kind it has no loop for (none today) names op and dtype."""
    for row in table.REDUCTIONS:
        for d in DTYPES:
            if d.kind not in row.kinds:
                with raises_naming(TypeError, row.name, d):
                    getattr(em, row.name)(em.ones(2, dtype=d, device=device))


def test_result_of_a_higher_kind_into_an_integer_output(device):
    x = em.ones(3, dtype=em.int32, device=device)
    with raises_naming(TypeError, "add", em.float32, em.int32):
        x.add_(1.5)
    with raises_naming(TypeError, "div", em.int32):
        x /= 2
    with raises_naming(TypeError, "sqrt", em.int32):
        em.sqrt(x, out=x)
    with raises_naming(TypeError, "mean", em.int32):
        x.mean()


@pytest.mark.parametrize("bad", ["float8_e4m3fn", "float128", object(), 3, "int"])
def test_unknown_dtypes(bad):
    if bad == "int":   # PyTorch's spelling of int32: valid
        assert em.zeros(1, dtype=bad).dtype is em.int32
        return
    with pytest.raises(TypeError, match="dtype"):
        em.zeros(2, dtype=bad)
    with pytest.raises((TypeError, ValueError)):
        em.ones(2).to(bad)


def test_non_numbers(device):
    x = em.ones(2, device=device)
    with pytest.raises(TypeError, match="str"):
        em.tensor("abc")
    with raises_naming(TypeError, "tensor", "object"):
        em.tensor([1, object()])
    with raises_naming(TypeError, "tensor", "dict"):
        em.tensor({1: 2})
    for bad in ("a", None, [1, "a"], {1: 2}, object()):
        with pytest.raises(TypeError):
            x + bad
    with raises_naming(TypeError, "fill_", "'a'"):
        x.fill_("a")
    with raises_naming(TypeError, "add"):
        em.add(x, "a")
    with raises_naming(TypeError, "add"):
        em.add(1, 2)


_NONE_CALLS = {
    "copy_": "x.copy_(None)",
    "data": "x.data = None",
    "add": "x + None",
    "clone": "em.clone(None)",
    "sum": "em.sum(None)",
    "reshape": "em.reshape(None, 2)",
    "view_as": "x.view_as(None)",
    "zeros_like": "em.zeros_like(None)",
    "where": "em.where(x > 0, None, x)",
}


@pytest.mark.parametrize("name", sorted(_NONE_CALLS))
def test_none_where_a_tensor_belongs(name, device):
    """A TypeError, never a crash: run in a subprocess, so a segfault fails one test."""
    proc = _run_isolated(f"try:\n    {_NONE_CALLS[name]}\nexcept TypeError as e:\n"
                         f"    print('TypeError', e)\n", device)
    assert proc.returncode == 0, f"{_NONE_CALLS[name]}: {_how(proc)}\n{proc.stderr[-1500:]}"
    assert proc.stdout.startswith("TypeError"), f"{_NONE_CALLS[name]}: {proc.stdout!r}"


# ----------------------------------------------------------------------------- values

@st.composite
def ragged(draw):
    """A nested list with at least one inconsistency in its lengths or depths."""
    depth = draw(st.integers(2, 3))

    def build(level):
        n = draw(st.integers(1, 3))
        if level == depth:
            return [draw(st.integers(-5, 5)) for _ in range(n)]
        return [build(level + 1) for _ in range(n)]

    data = build(1)
    # break it: change one sublist's length, or put a scalar where a list belongs
    path = data
    while isinstance(path[0], list) and draw(st.booleans()):
        path = path[0]
    if isinstance(path[0], list):
        if draw(st.booleans()):
            path[0] = path[0] + [0]
        else:
            path[0] = 7
    else:
        path.append([1, 2])
    return data


@given(data=ragged())
@settings(max_examples=fewer_examples(1))
def test_ragged_nested_lists(data):
    try:
        np.array(data, dtype=np.int64)
        assume(False)   # NumPy found it regular after all
    except ValueError:
        pass
    with raises_naming(ValueError, "tensor", "ragged"):
        em.tensor(data)


@given(dtype=st.sampled_from(INT_DTYPES + (em.bool,)), data=st.data())
@settings(max_examples=fewer_examples(1))
def test_python_int_overflow_into_small_dtypes(dtype, data, device):
    if dtype.kind == "bool":
        dtype = em.uint8
    info = np.iinfo(dtype.name)
    v = data.draw(st.one_of(st.integers(int(info.max) + 1, int(info.max) + 2 ** 70),
                            st.integers(int(info.min) - 2 ** 70, int(info.min) - 1)))
    x = em.zeros(3, dtype=dtype, device=device)
    op, call = data.draw(st.sampled_from([
        ("add", lambda: x + v), ("add", lambda: v + x), ("mul", lambda: x * v),
        ("sub", lambda: v - x), ("eq", lambda: x == v), ("maximum", lambda: em.maximum(x, v)),
        ("add", lambda: x.add_(v)), ("fill_", lambda: x.fill_(v)),
        ("tensor", lambda: em.tensor([1, v], dtype=dtype)),
        ("full", lambda: em.full((2,), v, dtype=dtype)),
        ("where", lambda: em.where(x > 0, x, v)),
        ("clamp", lambda: x.clamp(0, v)),
    ]))
    with raises_naming(OverflowError, op, v, dtype):
        call()


def test_mixing_devices(device):
    others = other_devices(device)
    if not others:
        pytest.skip("only one device is usable here")
    other = others[0]
    a, b = em.ones(2, device=device), em.ones(2, device=other)
    with raises_naming(RuntimeError, "add", str(device), str(other)):
        a + b
    with raises_naming(RuntimeError, "add"):
        em.add(a, a, out=b)


def test_unavailable_devices_are_clear_errors():
    usable = {d.type for d in other_devices(em.device("cpu"))}
    for name in ("cuda", "opencl"):
        if name in usable:
            continue
        with pytest.raises((RuntimeError, NotImplementedError), match=name):
            em.ones(2, device=name)
    with raises_naming(ValueError, "device", "'tpu'"):
        em.ones(2, device="tpu")
    with raises_naming(TypeError, "device", 0):
        em.ones(2, device=0)
