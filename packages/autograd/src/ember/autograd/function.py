"""Custom differentiable ops: subclass Function with forward(ctx, ...) and
backward(ctx, *grads), as in PyTorch.

    class Exp(em.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    Exp.apply(x)
"""
from __future__ import annotations

import functools

import ember as em
from ember._C import core as _core
from ember.autograd import graph as _graph

_TB = _core.TensorBase


class FunctionCtx:
    """The `ctx` of forward/backward: saved tensors and flags."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _TB):
                raise TypeError(f"save_for_backward: expected tensors or None, got "
                                f"{type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        node = self._node
        if node is None:
            return tuple(getattr(self, "_to_save", ()))
        if node.freed:
            node._unpack(False)           # raises the "second time" error
        saved, versions = node.saved, node.versions
        for i, t in enumerate(saved):
            if t is not None and t._version != versions[i]:
                node._modified(f"saved tensor {i}", t, versions[i])
        return saved


class FunctionNode(_graph.Node):
    """The graph node of one Function.apply call."""

    __slots__ = ("cls", "ctx", "out_metas")

    def name(self):
        return f"{self.cls.__name__}Backward"


def _run_function_backward(node, grads):
    cls, ctx = node.cls, node.ctx
    grads = list(grads) if node.num_outputs > 1 else [grads]
    if ctx.materialize_grads:
        # outputs that received no gradient get zeros (PyTorch's default)
        for i, g in enumerate(grads):
            if g is None and node.out_metas[i] is not None:
                shape, dtype, device = node.out_metas[i]
                grads[i] = em.zeros(shape, dtype=dtype, device=device)
    out = cls.backward(ctx, *grads)
    if not isinstance(out, tuple):
        out = (out,)
    n = len(node.edges)
    if len(out) > n and all(g is None for g in out[n:]):
        out = out[:n]
    if len(out) != n:
        raise RuntimeError(f"{cls.__name__}.backward returned {len(out)} gradients but "
                           f"forward took {n} inputs")
    for i, g in enumerate(out):
        if g is not None and not isinstance(g, _TB):
            raise TypeError(f"{cls.__name__}.backward: gradient {i} must be a tensor or None, "
                            f"got {type(g).__name__}")
    # a gradient for an input that doesn't need one is dropped
    return tuple(g if e is not None else None for g, e in zip(out, node.edges))


class Function:
    """Base class of custom ops; call them through `apply`. Either
    forward(ctx, *args) or forward(*args) plus setup_context(ctx, inputs, output)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("Function subclasses must implement forward(ctx, ...)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function subclasses must implement backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx._node = None
        ctx.materialize_grads = True
        ctx.needs_input_grad = tuple(isinstance(a, _TB) and a.requires_grad for a in args)
        recording = _core.is_grad_enabled() and any(ctx.needs_input_grad)
        prev = _core._set_grad_enabled(False)
        try:
            if cls.setup_context is not Function.setup_context:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _core._set_grad_enabled(prev)
        if not recording:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        dirty = {id(t) for t in getattr(ctx, "_dirty", ())}
        non_diff = {id(t) for t in getattr(ctx, "_non_differentiable", ())}
        edges, metas = [], []
        for a in args:
            if isinstance(a, _TB) and a.requires_grad:
                if id(a) in dirty and a.is_leaf:
                    raise RuntimeError(f"{cls.__name__}: a leaf tensor that requires grad is "
                                       f"being modified in place (mark_dirty)")
                edges.append(_graph.edge_of(a))
                metas.append((tuple(a.shape), a.dtype))
            else:
                edges.append(None)
                metas.append(None)
        node = FunctionNode(cls.__name__, _run_function_backward, edges, metas, None,
                            num_outputs=len(outs))
        node.cls, node.ctx = cls, ctx
        node.out_metas = [(t.shape, t.dtype, t.device) if isinstance(t, _TB) else None
                          for t in outs]
        ctx._node = node
        saved = tuple(getattr(ctx, "_to_save", ()))
        node.saved = saved
        node.versions = [t._version if t is not None else None for t in saved]
        if _graph.anomaly["enabled"]:
            node.stack = _graph.user_stack()
        result = []
        input_ids = {id(a) for a in args if isinstance(a, _TB)}
        for i, t in enumerate(outs):
            if not isinstance(t, _TB):
                result.append(t)
                continue
            if id(t) in input_ids and id(t) not in dirty:
                t = t.detach()     # an input returned as is: a new tensor in the graph
            if id(t) in non_diff or not t.is_floating_point():
                result.append(t)
                continue
            t._set_autograd(node, True)
            _graph.state(t).output_nr = i
            result.append(t)
        return result[0] if single else tuple(result)


def once_differentiable(backward):
    """Mark a backward that is not itself differentiable: it runs without recording,
    and under create_graph=True differentiating its result raises a clear error."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        prev = _core._set_grad_enabled(False)
        try:
            out = backward(ctx, *grads)
        finally:
            _core._set_grad_enabled(prev)
        if not prev:
            return out
        tracked = [g for g in grads if isinstance(g, _TB) and g.requires_grad]
        if not tracked:
            return out
        single = not isinstance(out, tuple)
        result = []
        for g in ((out,) if single else out):
            if isinstance(g, _TB) and g.is_floating_point():
                g = g.detach()
                node = _graph.Node("once_differentiable", _delayed_error,
                                   [_graph.edge_of(t) for t in tracked],
                                   [(tuple(t.shape), t.dtype) for t in tracked], None)
                g._set_autograd(node, True)
            result.append(g)
        return result[0] if single else tuple(result)
    return wrapper


def _delayed_error(node, grad):
    raise RuntimeError("trying to differentiate a backward marked @once_differentiable; "
                       "it is not differentiable twice")
