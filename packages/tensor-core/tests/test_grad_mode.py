"""Grad mode: no_grad / enable_grad / set_grad_enabled / inference_mode as context
managers and decorators, nesting and exceptions restore the mode, the mode is per
thread, and the autograd recorder is called exactly when grad mode is on and an
input requires grad."""
from __future__ import annotations

import threading

import pytest

import ember as em
from ember._C import core as _core


@pytest.fixture(autouse=True)
def _clean_mode():
    assert em.is_grad_enabled() and not em.is_inference_mode_enabled()
    yield
    assert em.is_grad_enabled(), "a test left grad mode off"
    assert not em.is_inference_mode_enabled(), "a test left inference mode on"


@pytest.fixture
def recorder():
    calls = []

    def record(op, inputs, output, attrs):
        calls.append(op)

    prev = _core.set_recorder(record)
    yield calls
    _core.set_recorder(prev)


def test_context_managers_nest_and_restore():
    with em.no_grad():
        assert not em.is_grad_enabled()
        with em.enable_grad():
            assert em.is_grad_enabled()
            with em.set_grad_enabled(False):
                assert not em.is_grad_enabled()
            assert em.is_grad_enabled()
        assert not em.is_grad_enabled()
        with em.no_grad():
            assert not em.is_grad_enabled()
        assert not em.is_grad_enabled()
    assert em.is_grad_enabled()


def test_exceptions_restore_the_mode():
    with pytest.raises(KeyError):
        with em.no_grad():
            raise KeyError("x")
    assert em.is_grad_enabled()
    with pytest.raises(ValueError):
        with em.inference_mode():
            raise ValueError
    assert em.is_grad_enabled() and not em.is_inference_mode_enabled()


@pytest.mark.parametrize("form", ["bare", "called"])
def test_decorators(form):
    def probe():
        return em.is_grad_enabled(), em.is_inference_mode_enabled()

    no_grad = em.no_grad(probe) if form == "bare" else em.no_grad()(probe)
    inference = em.inference_mode(probe) if form == "bare" else em.inference_mode()(probe)
    enable = em.enable_grad(probe) if form == "bare" else em.enable_grad()(probe)
    assert no_grad() == (False, False)
    assert inference() == (False, True)
    with em.no_grad():
        assert enable() == (True, False)
        assert em.set_grad_enabled(True)(probe)() == (True, False)
        assert not em.is_grad_enabled()
    assert em.set_grad_enabled(False)(probe)() == (False, False)
    assert em.inference_mode(False)(probe)() == (True, False)
    assert no_grad.__name__ == "probe"
    assert em.is_grad_enabled()


def test_decorated_function_raising_restores_the_mode():
    @em.no_grad()
    def boom():
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        boom()
    assert em.is_grad_enabled()


def test_decorators_are_reentrant():
    @em.no_grad()
    def inner(n):
        assert not em.is_grad_enabled()
        return 0 if n == 0 else 1 + inner(n - 1)

    assert inner(5) == 5
    assert em.is_grad_enabled()


def test_set_grad_enabled_as_a_function_call():
    em.set_grad_enabled(False)
    try:
        assert not em.is_grad_enabled()
    finally:
        em.set_grad_enabled(True)
    assert em.is_grad_enabled()


def test_inference_mode_false_keeps_grad():
    with em.inference_mode(False):
        assert em.is_grad_enabled() and not em.is_inference_mode_enabled()
    with em.inference_mode():
        assert not em.is_grad_enabled() and em.is_inference_mode_enabled()
        with em.inference_mode(False):
            assert not em.is_inference_mode_enabled()
        assert em.is_inference_mode_enabled()


def test_modes_are_per_thread():
    seen = {}
    go = threading.Event()
    done = threading.Event()

    def worker():
        seen["start"] = em.is_grad_enabled()      # the main thread is in no_grad
        with em.no_grad():
            seen["inside"] = em.is_grad_enabled()
            go.set()
            done.wait(5)
        seen["after"] = em.is_grad_enabled()

    with em.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        go.wait(5)
        assert not em.is_grad_enabled()
    # the worker is still inside its no_grad; this thread is back to grad mode
    assert em.is_grad_enabled()
    done.set()
    t.join(5)
    assert seen == {"start": True, "inside": False, "after": True}


def test_inference_mode_is_per_thread():
    seen = []
    with em.inference_mode():
        t = threading.Thread(target=lambda: seen.append(
            (em.is_grad_enabled(), em.is_inference_mode_enabled())))
        t.start()
        t.join(5)
    assert seen == [(True, False)]


def test_classes_cannot_be_decorated():
    with pytest.raises(TypeError, match="decorat"):
        em.no_grad()(type("C", (), {}))


def test_recorder_is_called_only_with_grad_on(recorder):
    x = em.ones(3).requires_grad_()
    y = em.ones(3)
    _ = x * 2
    _ = em.sum(x)
    _ = x.reshape(3, 1)
    n = len(recorder)
    assert n >= 3, recorder
    _ = y * 2                       # no input requires grad
    assert len(recorder) == n
    with em.no_grad():
        _ = x * 2
        _ = em.sum(x)
        _ = x.reshape(3, 1)
    assert len(recorder) == n
    with em.inference_mode():
        _ = x + 1
    assert len(recorder) == n

    @em.no_grad()
    def f():
        return x * 3

    f()
    assert len(recorder) == n
    with em.no_grad():
        with em.enable_grad():
            _ = x * 2
    assert len(recorder) == n + 1


def test_in_place_on_a_leaf_that_requires_grad(recorder):
    x = em.ones(3).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1)
    with em.no_grad():
        x.add_(1)                  # allowed: the classic `w -= lr * w.grad`
    assert x.tolist() == [2.0] * 3
    assert x.requires_grad and x.is_leaf
