"""Issue 16 item 20: ember.autograd's entry points reject arguments of the wrong type
with a TypeError naming the function, not "'str' object is not callable"."""
from __future__ import annotations

import pytest

import ember as em
from ember import autograd


@pytest.mark.parametrize("bad", ["sum", 3, None, em.float64, (1,)])
@pytest.mark.parametrize("op", ["gradcheck", "gradgradcheck"])
def test_issue16_item20_gradcheck_func_must_be_callable(op, bad):
    x = em.ones(2, dtype=em.float64, requires_grad=True)
    with pytest.raises(TypeError, match=rf"^{op}: func must be callable, got "
                                        rf"{type(bad).__name__}"):
        getattr(autograd, op)(bad, (x,))


def test_issue16_item20_grad_and_backward_need_tensors():
    x = em.ones(2, requires_grad=True)
    y = (x * 2).sum()
    for call in (lambda: autograd.grad(y, None), lambda: autograd.grad(None, x),
                 lambda: autograd.grad(y, 3)):
        with pytest.raises(TypeError, match="^grad: expected a tensor or a sequence of "
                                            "tensors, got"):
            call()
    with pytest.raises(TypeError, match="^backward: expected a tensor or a sequence of "
                                        "tensors, got NoneType"):
        autograd.backward(None)
    assert autograd.grad(y, x)[0].tolist() == [2.0, 2.0]
