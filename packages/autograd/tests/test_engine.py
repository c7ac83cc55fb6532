"""The tape's semantics: leaves and non-leaves, graph lifetime, higher-order
gradients, grad modes, in-place safety, hooks, custom Functions, anomaly mode,
dynamic graphs, and the errors for bad input."""
import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import Function, gradcheck, once_differentiable


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return em.from_numpy(rng.uniform(-1, 1, size=shape)).requires_grad_()


def np_of(t):
    return t.detach().numpy()


# leaves, non-leaves, accumulation ------------------------------------------------------

def test_leaf_gradients_accumulate_and_nonleaf_grads_are_not_kept():
    x = leaf(3)
    y = x * 2
    z = (y * y).sum()
    z.backward(retain_graph=True)
    np.testing.assert_allclose(np_of(x.grad), 8 * np_of(x))
    assert y.grad is None and not y.is_leaf and x.is_leaf
    z.backward()
    np.testing.assert_allclose(np_of(x.grad), 16 * np_of(x))


def test_retain_grad_on_a_nonleaf():
    x = leaf(2, 3)
    y = x.exp()
    y.retain_grad()
    assert y.retains_grad
    (y * 3).sum().backward()
    np.testing.assert_allclose(np_of(y.grad), 3.0)


def test_grads_of_broadcast_inputs_are_reduced_to_their_shape():
    x, b = leaf(4, 3), leaf(3, seed=1)
    c = leaf(4, 1, seed=2)
    ((x + b) * c).sum().backward()
    assert b.grad.shape == (3,) and c.grad.shape == (4, 1)
    np.testing.assert_allclose(np_of(b.grad), np_of(c).sum() * np.ones(3))
    np.testing.assert_allclose(np_of(c.grad), (np_of(x) + np_of(b)).sum(1, keepdims=True))


def test_shared_gradient_is_not_aliased_between_leaves():
    a, b = leaf(3), leaf(3, seed=1)
    (a + b).sum().backward()
    a.grad += 1            # must not change b.grad
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_an_exclusive_gradient_is_taken_without_a_copy():
    made = {}

    class Fresh(em.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            out = g * 3
            made["ptr"] = out.data_ptr()   # remembers the address, not the tensor
            return out

    x = leaf(4)
    Fresh.apply(x).sum().backward()
    assert x.grad.data_ptr() == made["ptr"]
    kept = []
    y = leaf(4)
    y.register_hook(lambda g: kept.append(g * 1) or kept[-1])
    (y * 2).sum().backward()
    assert y.grad.data_ptr() != kept[0].data_ptr()      # a hook's result is copied


def test_a_reduced_gradient_is_taken_without_a_copy():
    # the engine sums the broadcast (4, 3) gradient down to b's (3,): that sum is the
    # engine's own tensor, so b.grad is it (no copy), as for any exclusive gradient
    b = leaf(3)
    seen = []
    b.register_hook(lambda g: seen.append(g.data_ptr()))
    (em.ones(4, 3) * b).sum().backward()
    assert b.grad.data_ptr() == seen[0]
    assert b.grad.tolist() == [4.0, 4.0, 4.0]


def _keeping_function(kept):
    class Keep(em.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            out = g * 2
            kept.append(out)          # the user holds the gradient it returned
            return out
    return Keep


def test_accumulating_gradients_never_changes_a_tensor_held_elsewhere():
    # two gradients meet in h's buffer: the engine adds in place only into a tensor
    # nobody else holds; Keep's result (held by `kept`) arrives first, then second
    for first_kept in (True, False):
        kept = []
        keep = _keeping_function(kept)
        x = leaf(3)
        h = x * 1
        loss = ((h * 3) + keep.apply(h)).sum() if first_kept else \
            (keep.apply(h) + (h * 3)).sum()
        loss.backward()
        assert kept[0].tolist() == [2.0, 2.0, 2.0]
        assert x.grad.tolist() == [5.0, 5.0, 5.0]


def test_in_place_accumulation_never_writes_borrowed_memory():
    # a backward may return a tensor over memory it does not own (a NumPy array that
    # someone keeps): neither the buffer's in-place add nor .grad's may write into it
    arr = np.full(3, 2.0)

    class Borrowed(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return em.from_numpy(arr)

    for first in (True, False):
        x = leaf(3)
        h = x * 1
        loss = (Borrowed.apply(h) + h * 3) if first else (h * 3 + Borrowed.apply(h))
        loss.sum().backward()              # two gradients meet in h's buffer
        assert arr.tolist() == [2.0] * 3 and x.grad.tolist() == [5.0] * 3
    y = leaf(3)
    Borrowed.apply(y).sum().backward()     # the first is .grad's (not taken as is) ...
    Borrowed.apply(y).sum().backward()     # ... so this in-place add is .grad's own
    assert arr.tolist() == [2.0] * 3 and y.grad.tolist() == [4.0] * 3


def test_in_place_accumulation_leaves_what_hooks_and_retain_grad_hold():
    x = leaf(3)
    h = x * 1
    seen = []
    h.register_hook(seen.append)               # keeps h's (complete) gradient
    m = h * 1
    m.retain_grad()
    (m * 2 + m * 3).sum().backward()           # m's buffer adds in place
    assert m.grad.tolist() == [5.0] * 3 and seen[0].tolist() == [5.0] * 3
    held = x.grad
    (x * 2).sum().backward()                   # .grad accumulates in place, as PyTorch
    assert held is x.grad and held.tolist() == [7.0] * 3
    x.grad += 1
    assert m.grad.tolist() == [5.0] * 3 and seen[0].tolist() == [5.0] * 3


def test_create_graph_gradients_are_never_accumulated_in_place():
    x = leaf(3)
    xs = np_of(x)
    h = x * x
    (gx,) = em.autograd.grad((h * 2 + h * h).sum(), x, create_graph=True)  # h's buffer
    np.testing.assert_allclose(np_of(gx), 4 * xs + 4 * xs ** 3)
    (ggx,) = em.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(np_of(ggx), 4 + 12 * xs ** 2)
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad is not first
    np.testing.assert_allclose(np_of(first), 3 * xs ** 2)
    np.testing.assert_allclose(np_of(x.grad), 6 * xs ** 2)
    (gg,) = em.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(np_of(gg), 12 * xs)


def test_linear_weight_gradients_are_contiguous():
    w = leaf(4, 3)
    (em.randn(5, 3, dtype=em.float64) @ w.T).sum().backward()
    assert w.grad.is_contiguous()


def test_backward_inputs_accumulates_only_into_those():
    a, b = leaf(3), leaf(3, seed=1)
    (a * b).sum().backward(inputs=[a])
    assert b.grad is None
    np.testing.assert_allclose(np_of(a.grad), np_of(b))


def test_detach_and_requires_grad():
    x = leaf(3)
    y = (x * 2).detach()
    assert not y.requires_grad and y.grad_fn is None
    z = x * 2
    z.detach_()
    assert z.is_leaf and not z.requires_grad
    w = em.ones(2)
    assert w.requires_grad_() is w and w.requires_grad
    with pytest.raises(RuntimeError, match="only tensors of floating point"):
        em.arange(3).requires_grad_()


# graph lifetime ---------------------------------------------------------------------

def test_second_backward_through_a_freed_graph_is_a_clear_error():
    x = leaf(3)
    y = x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_graph_is_freed_when_the_output_dies_without_the_cycle_collector():
    gc.disable()
    try:
        x = leaf(8, 8)
        w = leaf(8, 8, seed=1)
        refs = []
        for _ in range(50):
            h = (x @ w).tanh()
            loss = (h * h).sum()
            refs.append(weakref.ref(loss.grad_fn))
            refs.append(weakref.ref(h))
            loss.backward()
            del h, loss
        assert all(r() is None for r in refs)
        # and without backward: dropping the output frees the graph too
        h = (x @ w).exp()
        r = weakref.ref(h.grad_fn)
        del h
        assert r() is None
    finally:
        gc.enable()


def test_a_long_training_loop_does_not_grow():
    import tracemalloc
    x, w = leaf(16, 8), leaf(8, 4, seed=1)

    def step():
        loss = ((x @ w).relu() if hasattr(em.Tensor, "relu") else (x @ w).clamp(min=0)).sum()
        loss.backward()
        with em.no_grad():
            w.sub_(0.001 * w.grad)
        w.grad = None

    def live():
        return sum(isinstance(o, (em.Tensor, em.autograd.graph.Node)) for o in gc.get_objects())

    for _ in range(500):
        step()
    tracemalloc.start()
    for _ in range(1500):   # fills CPython's free lists (they count as traced memory)
        step()
    before, objects = tracemalloc.get_traced_memory()[0], live()
    for _ in range(3000):
        step()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert live() <= objects
    assert after - before < 16 * 1024, f"grew by {after - before} bytes in 3000 steps"


# higher order --------------------------------------------------------------------------

def test_grad_returns_without_touching_dot_grad_and_hessian_vector_product():
    x = leaf(4)
    v = em.from_numpy(np.array([1.0, -1.0, 0.5, 2.0]))
    f = (x ** 3).sum()
    (g,) = em.autograd.grad(f, x, create_graph=True)
    np.testing.assert_allclose(np_of(g), 3 * np_of(x) ** 2)
    (hvp,) = em.autograd.grad((g * v).sum(), x)
    np.testing.assert_allclose(np_of(hvp), 6 * np_of(x) * v.numpy())
    assert x.grad is None


def test_gradient_of_gradient_through_backward_with_create_graph():
    x = leaf(3)
    y = (x.sin() * x).sum()
    y.backward(create_graph=True)
    gx = x.grad
    assert gx.requires_grad
    x.grad = None
    gx.sum().backward()
    xn = np_of(x)
    # d/dx of (cos x * x + sin x) = -sin x * x + 2 cos x
    np.testing.assert_allclose(np_of(x.grad), -np.sin(xn) * xn + 2 * np.cos(xn))


def test_grad_allow_unused_and_errors():
    a, b = leaf(2), leaf(2, seed=1)
    y = (a * 2).sum()
    with pytest.raises(RuntimeError, match=r"inputs\[1\] .* was not used"):
        em.autograd.grad(y, [a, b], retain_graph=True)
    ga, gb = em.autograd.grad(y, [a, b], allow_unused=True, retain_graph=True)
    assert gb is None and ga.tolist() == [2.0, 2.0]
    ga, gb = em.autograd.grad(y, [a, b], materialize_grads=True)
    assert gb.tolist() == [0.0, 0.0]


# bad input ---------------------------------------------------------------------------

def test_backward_errors_name_the_problem():
    x = leaf(2, 3)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"only for scalar outputs.*shape \(2, 3\)"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"gradient 0 has shape \(3,\) but the tensor has "
                                           r"shape \(2, 3\)"):
        y.backward(em.ones(3, dtype=em.float64))
    with pytest.raises(RuntimeError, match="does not require grad"):
        em.ones(3).sum().backward()
    with pytest.raises(RuntimeError, match="gradient 0 has dtype int64"):
        y.backward(em.ones((2, 3), dtype=em.int64))


def test_backward_without_autograd_names_the_package():
    import subprocess
    import sys
    code = ("import sys; sys.modules['ember.autograd'] = None\n"
            "import ember as em\n"
            "x = em.ones(2, requires_grad=True)\n"
            "try:\n"
            "    (x * 2).sum().backward()\n"
            "except ModuleNotFoundError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "pip install ember-autograd" in out.stdout, out.stderr


# grad modes ---------------------------------------------------------------------------

def test_grad_modes_context_decorator_and_thread_local():
    x = leaf(2)
    with em.no_grad():
        assert (x * 2).grad_fn is None
        with em.enable_grad():
            assert (x * 2).grad_fn is not None

    @em.no_grad()
    def f(t):
        return t * 2
    assert f(x).grad_fn is None

    @em.no_grad
    def g(t):
        return t * 2
    assert g(x).grad_fn is None
    with em.set_grad_enabled(False):
        assert not em.is_grad_enabled()
    assert em.is_grad_enabled()
    with em.inference_mode():
        assert (x * 2).grad_fn is None and em.is_inference_mode_enabled()

    seen = {}

    def other_thread():
        seen["enabled"] = em.is_grad_enabled()
        seen["records"] = (x * 2).grad_fn is not None

    with em.no_grad():
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen == {"enabled": True, "records": True}


# in-place safety ------------------------------------------------------------------------

def test_modifying_a_saved_tensor_in_place_is_reported_with_op_shape_and_versions():
    x = leaf(2, 3)
    y = x.exp()              # exp saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"its output of exp \(shape \(2, 3\), dtype "
                                           r"float64\) was saved at version \d+ and is now at "
                                           r"version \d+"):
        y.sum().backward()


def test_in_place_on_a_leaf_that_requires_grad_raises_unless_no_grad():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        x[0] = 2.0
    with em.no_grad():
        x.add_(1)
        x[0] = 2.0
    assert x.is_leaf


def test_in_place_ops_that_overwrite_a_needed_value_keep_a_copy():
    x = leaf(3)
    w = leaf(3, seed=1)
    y = x * 1.0
    y.mul_(w)                     # d/dw needs y's old value, which mul_ overwrites
    y.sin_()                      # and sin_'s derivative needs its input
    y.sum().backward()
    xn, wn = np_of(x), np_of(w)
    np.testing.assert_allclose(np_of(w.grad), np.cos(xn * wn) * xn)
    np.testing.assert_allclose(np_of(x.grad), np.cos(xn * wn) * wn)


def test_copy_into_a_leaf_that_requires_grad_is_an_error():
    x = leaf(3)
    with pytest.raises(RuntimeError, match="copy_: a leaf tensor that requires grad"):
        x.copy_(em.zeros(3, dtype=em.float64))
    with pytest.raises(RuntimeError, match="fill_: a leaf tensor that requires grad"):
        x.fill_(1.0)


def test_in_place_ops_on_nonleaves_are_differentiated():
    x = leaf(3)
    y = x * 2
    y.mul_(3)
    y.add_(x)
    y.sum().backward()
    np.testing.assert_allclose(np_of(x.grad), 7.0)
    z = leaf(4)
    w = z * 1.0
    w[1:3] = 0.0
    (w * w).sum().backward()
    np.testing.assert_allclose(np_of(z.grad), 2 * np_of(z) * np.array([1, 0, 0, 1]))


# hooks -----------------------------------------------------------------------------------

def test_tensor_hooks_may_replace_the_gradient_and_can_be_removed():
    x = leaf(3)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 2
    hy = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[20.0, 20.0, 20.0]]
    np.testing.assert_allclose(np_of(x.grad), 20.0)
    h.remove()
    hy.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(np_of(x.grad), 2.0)


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    x = leaf(2)
    got = []
    x.register_post_accumulate_grad_hook(lambda t: got.append(t.grad.tolist()))
    (x * 3).sum().backward()
    assert got == [[3.0, 3.0]]
    with pytest.raises(RuntimeError, match="only leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_grad_fn_is_inspectable():
    x = leaf(2)
    y = (x.exp() * 2).sum()
    assert y.grad_fn.name() == "SumBackward0"
    (mul, _), = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0"
    (exp, _), (none, _) = mul.next_functions
    assert exp.name() == "ExpBackward0" and none is None
    (acc, _), = exp.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x


# custom Functions --------------------------------------------------------------------

class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


def test_function_forward_backward_and_gradcheck():
    x = leaf(3)
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(np_of(x.grad), 6 * np_of(x) ** 2)
    assert gradcheck(lambda t: Cube.apply(t, 0.5), (leaf(2, 2),))
    assert em.autograd.gradgradcheck(lambda t: Cube.apply(t, 0.5), (leaf(2, 2),))


def test_function_ctx_flags():
    class Split(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.needs = ctx.needs_input_grad
            idx = em.argmax(x)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g * 2, None

    x, y = leaf(3), em.ones(3)
    out, idx = Split.apply(x, y)
    assert not idx.requires_grad and out.requires_grad
    out.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]

    class Scale_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    z = leaf(3)
    w = z * 1.0
    w2 = Scale_.apply(w)
    assert w2 is w
    w2.sum().backward()
    assert z.grad.tolist() == [2.0, 2.0, 2.0]


def test_function_setup_context_style_and_saved_tensor_versions():
    class Exp(Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = leaf(3)
    y = Exp.apply(x)
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(np_of(x.grad), np.exp(np_of(x)))
    with em.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_once_differentiable():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(3)
    (g,) = em.autograd.grad(Sq.apply(x).sum(), x)
    np.testing.assert_allclose(np_of(g), 2 * np_of(x))
    v = em.ones(3, dtype=em.float64, requires_grad=True)
    (g,) = em.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_function_backward_returning_the_wrong_count_is_an_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned 1 gradients but forward took 2 inputs"):
        Bad.apply(leaf(2), leaf(2, seed=1)).sum().backward()


# anomaly mode -------------------------------------------------------------------------

def test_anomaly_mode_names_the_forward_line_of_a_nan():
    x = em.tensor([0.0, 1.0], dtype=em.float64, requires_grad=True)
    with em.autograd.detect_anomaly():
        y = x.sqrt()          # the forward op: d sqrt / dx at 0 is inf, times 0 -> NaN
        z = (y * 0).sum()
        with pytest.raises(RuntimeError, match=r"(?s)returned NaN.*The forward op sqrt was "
                                               r"called at .*test_engine.py:\d+"):
            z.backward()
    assert not em.autograd.is_anomaly_enabled()


def test_errors_in_a_custom_backward_point_at_the_forward_call_under_anomaly_mode():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = leaf(2)
    with pytest.raises(ValueError, match="boom.*detect_anomaly"):
        Boom.apply(x).sum().backward()
    with em.autograd.detect_anomaly():
        y = Boom.apply(x)
    with pytest.raises(ValueError, match=r"(?s)boom.*called at .*test_engine.py"):
        y.sum().backward()


# dynamic graphs ------------------------------------------------------------------------

def test_data_dependent_control_flow_trains():
    rng = np.random.default_rng(0)
    w = em.from_numpy(rng.normal(size=(4, 4)) * 0.3).requires_grad_()
    x = em.from_numpy(rng.normal(size=4))
    target = em.from_numpy(rng.normal(size=4) * 0.1)

    def net(w):
        h = x
        steps = 1 + int(abs(float(x.sum())) * 3) % 4     # loop length from the data
        for _ in range(steps):
            h = (w @ h).tanh()
        return ((h - target) ** 2).sum()

    assert gradcheck(lambda w_: net(w_), (w.detach().requires_grad_(),))
    first = float(net(w))
    for _ in range(100):
        loss = net(w)
        w.grad = None
        loss.backward()
        with em.no_grad():
            w -= 0.1 * w.grad
    assert float(net(w)) < 0.1 * first


def test_recursion_over_a_tree():
    rng = np.random.default_rng(1)
    w = em.from_numpy(rng.normal(size=(3, 6)) * 0.5).requires_grad_()
    tree = ((em.ones(3), (em.zeros(3), em.ones(3) * 0.5)), em.ones(3) * -1)

    def encode(node, w):
        if isinstance(node, em.Tensor):
            return node
        left, right = (encode(c, w) for c in node)
        return (w @ em.cat([left, right])).tanh()

    assert gradcheck(lambda w_: encode(tree, w_).sum(), (w.detach().to(em.float64)
                                                        .requires_grad_(),))


# in-place ops on views ----------------------------------------------------------------

def test_in_place_on_a_view_updates_the_base_history():
    x = leaf(3, 4)

    def f(a):
        y = a * 1.0
        y[:, 1].mul_(3)             # a view of y, changed in place
        y.narrow(0, 1, 2).add_(a[1:] * a[1:])
        col = y.T[2]                # views of views
        col.sub_(5)
        return y * y
    assert gradcheck(f, (x,))
    assert em.autograd.gradgradcheck(f, (x,))


def test_in_place_on_a_view_of_a_leaf_that_requires_grad_is_an_error():
    x = leaf(3)
    v = x[1:]
    with pytest.raises(RuntimeError, match="view of a leaf tensor that requires grad"):
        v.mul_(2)


# narrow (split/chunk parts): the engine adds each part's gradient into one buffer -------

@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4), rows=st.integers(1, 3),
       dim=st.integers(0, 1), used=st.integers(1, 15), order=st.booleans(),
       dtype=st.sampled_from([em.float32, em.float64]), leaf_input=st.booleans(),
       seed=st.integers(0, 100))
@settings(max_examples=30, deadline=None)
def test_split_parts_gradients_match_the_padded_sum(sizes, rows, dim, used, order, dtype,
                                                    leaf_input, seed):
    """Parts of a split (some used, some not; the input also used directly, before or
    after the parts in the graph) give the gradient of the reference: each used part's
    gradient padded with zeros to the input's shape, summed, plus the direct use's."""
    rng = np.random.default_rng(seed)
    shape = [rows, rows]
    shape[dim] = sum(sizes)
    x0 = rng.standard_normal(shape)
    w = [rng.standard_normal([s if d == dim else shape[d] for d in range(2)])
         for s in sizes]
    parts_used = [i for i in range(len(sizes)) if used >> i & 1] or [0]
    x = em.from_numpy(x0).to(dtype).requires_grad_()
    src = x if leaf_input else x * 1.0
    if order:
        direct = (src * src).sum()           # recorded before the parts
    parts = src.split(sizes, dim)
    terms = [(parts[i] * em.from_numpy(w[i]).to(dtype)).sum() for i in parts_used]
    if not order:
        direct = (src * src).sum()           # after them
    loss = sum(terms, direct)
    loss.backward()
    want = 2 * x0
    bounds = np.cumsum([0] + sizes)
    for i in parts_used:
        sl = [slice(None)] * 2
        sl[dim] = slice(bounds[i], bounds[i + 1])
        want[tuple(sl)] += w[i]
    tol = 1e-5 if dtype is em.float32 else 1e-12
    np.testing.assert_allclose(x.grad.to(em.float64).numpy(), want, rtol=tol, atol=tol)


def test_split_parts_double_backward_hooks_and_second_backward():
    # create_graph, a hook on a part and retain_graph take the formula's path: same values
    x = leaf(6, 2)
    assert gradcheck(lambda a: (a.split(2)[0] * a.split(2)[2]).sum() + a.chunk(3)[1].sum(),
                     (x,))
    assert em.autograd.gradgradcheck(lambda a: (a.split([1, 5])[1] ** 2).sum(), (x,))
    y = x.detach().requires_grad_()
    a, b = y.split(3)
    a.register_hook(lambda g: g * 10)
    (a.sum() + b.sum()).backward(retain_graph=True)
    np.testing.assert_allclose(y.grad.numpy(), [[10, 10]] * 3 + [[1, 1]] * 3)
    loss = y.split(3)[1].sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
