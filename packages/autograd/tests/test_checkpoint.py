"""ember.utils.checkpoint (torch.utils.checkpoint): the recomputed backward gives the
plain run's gradients, restores the RNG, and keeps no activations alive."""
from __future__ import annotations

import gc
import weakref

import pytest

import ember as em
from ember.autograd import gradcheck

nn = pytest.importorskip("ember.nn")
from ember.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402


def test_the_module_paths_are_one_module():
    import ember.autograd.checkpoint as a
    import ember.utils.checkpoint as u
    assert a is u and em.utils.checkpoint is a
    assert u.__name__ == "ember.autograd.checkpoint"


def _net():
    em.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Dropout(0.3), nn.Linear(7, 7),
                         nn.GELU(), nn.Linear(7, 3))


def _grads(model, x):
    return [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]


def _run(model, x, call, seed=11):
    model.zero_grad()
    x.grad = None
    em.manual_seed(seed)
    out = call(model, x)
    (out * out).sum().backward()
    return out, _grads(model, x)


CALLS = {
    "module": lambda m, x: checkpoint(m, x, use_reentrant=False),
    "reentrant": lambda m, x: checkpoint(m, x, use_reentrant=True),
    "closure": lambda m, x: checkpoint(lambda t: m(t), x),
    "kwargs": lambda m, x: checkpoint(lambda t, scale: m(t) * scale, x, scale=2.0) / 2.0,
    "sequential_2": lambda m, x: checkpoint_sequential(m, 2, x, use_reentrant=False),
    "sequential_3": lambda m, x: checkpoint_sequential(list(m), 3, x),
    "sequential_many": lambda m, x: checkpoint_sequential(m, 10, x),
}


@pytest.mark.parametrize("how", sorted(CALLS))
def test_gradients_equal_the_plain_run(how):
    """Dropout inside: the recomputation draws the forward's mask (RNG restored)."""
    model = _net()
    x = em.randn(4, 5, requires_grad=True)
    ref_out, ref = _run(model, x, lambda m, t: m(t))
    out, got = _run(model, x, CALLS[how])
    assert em.allclose(out, ref_out, atol=1e-6)
    for a, b in zip(ref, got):
        assert em.allclose(a, b, atol=1e-6), how


def test_rng_after_checkpoint_is_as_after_the_plain_run():
    model = _net()
    x = em.randn(4, 5, requires_grad=True)
    em.manual_seed(5)
    model(x).sum().backward()
    after_plain = em.rand(3).tolist()
    em.manual_seed(5)
    checkpoint(model, x).sum().backward()       # backward re-draws, then puts it back
    assert em.rand(3).tolist() == after_plain


def test_without_preserve_rng_state_the_recomputation_draws_anew():
    em.manual_seed(0)
    x = em.ones(1000, requires_grad=True)
    y = checkpoint(lambda t: em.nn.functional.dropout(t, 0.5, True), x,
                   preserve_rng_state=False)
    y.sum().backward()
    mask = y.detach() != 0
    assert not em.equal(mask, x.grad != 0)       # another mask in the recomputation
    em.manual_seed(0)
    x.grad = None
    y = checkpoint(lambda t: em.nn.functional.dropout(t, 0.5, True), x)
    y.sum().backward()
    assert em.equal(y.detach() != 0, x.grad != 0)


def test_autograd_grad_reaches_a_modules_parameters():
    model = _net().eval()
    x = em.randn(2, 5)
    out = checkpoint(model, x)                # no input needs grad: the parameters do
    got = em.autograd.grad(out.sum(), list(model.parameters()))
    ref = em.autograd.grad(model(x).sum(), list(model.parameters()))
    for a, b in zip(ref, got):
        assert em.allclose(a, b, atol=1e-6)


def test_closure_parameters_get_gradients_without_grad_inputs():
    lin = nn.Linear(3, 2)
    x = em.randn(4, 3)                        # requires no grad
    y = checkpoint(lambda t: lin(t).relu(), x)
    assert y.requires_grad
    y.sum().backward()
    ref = em.autograd.grad(lin(x).relu().sum(), [lin.weight])[0]
    assert em.allclose(lin.weight.grad, ref, atol=1e-6)


def test_gradcheck_through_checkpoint():
    x = em.randn(3, 4, dtype=em.float64, requires_grad=True)
    w = em.randn(4, 2, dtype=em.float64, requires_grad=True)
    assert gradcheck(lambda a, b: checkpoint(lambda p, q: (p @ q).sin() * p.sum(), a, b),
                     (x, w))


def test_tuple_outputs_and_non_tensor_arguments():
    x = em.randn(3, requires_grad=True)
    a, b, tag = checkpoint(lambda t, k, s: (t * k, t.exp(), s), x, 3.0, "tag")
    assert tag == "tag"
    (a.sum() + b.sum()).backward()
    assert em.allclose(x.grad, 3.0 + x.detach().exp())


def test_intermediate_activations_are_not_kept():
    """Inside fn the activations are freed when it returns; the plain run keeps them
    for its backward."""
    kept = []

    def fn(t):
        h = (t * 2).sin()
        kept.append(weakref.ref(h))
        return h.cos()

    x = em.randn(64, requires_grad=True)
    y_plain = fn(x)
    gc.collect()
    assert kept[-1]() is not None             # saved by cos's backward
    y = checkpoint(fn, x)
    gc.collect()
    assert kept[-1]() is None                 # freed: not part of the graph
    y.sum().backward()                        # recomputes (a new h, freed again after)
    gc.collect()
    assert all(r() is None for r in kept[2:])
    ref = em.autograd.grad(y_plain.sum(), [x])[0]
    assert em.allclose(x.grad, ref, atol=1e-6)


def test_no_grad_runs_the_function_once():
    calls = []
    with em.no_grad():
        y = checkpoint(lambda t: calls.append(1) or t + 1, em.ones(2))
    assert calls == [1] and not y.requires_grad


def test_a_recomputation_that_differs_raises():
    state = {"n": 0}

    def fn(t):
        state["n"] += 1
        return t * 2 if state["n"] == 1 else (t * 2).sum()

    y = checkpoint(fn, em.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match="checkpoint: the recomputation"):
        y.sum().backward()


def test_bad_arguments():
    with pytest.raises(TypeError, match="checkpoint: expected a callable"):
        checkpoint(3, em.ones(1))
    with pytest.raises(ValueError, match="context_fn"):
        checkpoint(lambda t: t, em.ones(1), context_fn=lambda: None)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t, em.ones(1), determinism_check="strict")
    with pytest.raises(ValueError, match="segments must be >= 1"):
        checkpoint_sequential(nn.Sequential(nn.ReLU()), 0, em.ones(1))
    with pytest.raises(TypeError, match="unexpected keyword"):
        checkpoint_sequential(nn.Sequential(nn.ReLU()), 1, em.ones(1), bogus=1)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_on_each_device_dropout_mask_is_replayed(device):
    if device == "opencl" and not em.opencl.is_available():
        pytest.skip("no OpenCL device here")
    model = _net().to(device)
    x = em.randn(4, 5).to(device).requires_grad_()
    ref_out, ref = _run(model, x, lambda m, t: m(t))
    out, got = _run(model, x, CALLS["module"])
    assert em.allclose(out.cpu(), ref_out.cpu(), atol=1e-5)
    for a, b in zip(ref, got):
        assert em.allclose(a.cpu(), b.cpu(), atol=1e-5)
