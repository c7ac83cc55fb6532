"""ember.autograd: tape-based reverse-mode differentiation over every tensor-core op.

Importing this package (which `import ember` does when it is installed) installs the
recorder that tensor-core calls after each op on tensors that require grad; the
derivative of each op is a row of ember/autograd/formulas.py.

    x = em.randn(3, requires_grad=True)
    (x * x).sum().backward()
    x.grad                     # 2 * x
"""
from __future__ import annotations

from ember._C import core as _core
from ember._grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd import (
    graph,  # noqa: F401  (ember.autograd.graph: Node, hooks)
    graph as _graph,
)
from ember.autograd._version import __version__  # noqa: F401
from ember.autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from ember.autograd.formulas import FORMULAS, NOT_DIFFERENTIABLE  # noqa: F401
from ember.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401

_TB = _core.TensorBase

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "detect_anomaly", "set_detect_anomaly", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode"]


def _as_list(x, what, required=False):
    """x (a tensor or a sequence of them) as a list; None stays None unless required."""
    if x is None and not required:
        return None
    if isinstance(x, _TB):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{what}: expected a tensor or a sequence of tensors, got "
                    f"{type(x).__name__}")


def _root_grads(op, tensors, grad_tensors):
    import ember as em
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise ValueError(f"{op}: got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    out = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, _TB):
            raise TypeError(f"{op}: expected tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{op}: tensor {i} (shape {tuple(t.shape)}) does not require "
                               f"grad and has no grad_fn: nothing to differentiate (did you "
                               f"forget requires_grad=True, or compute it under no_grad?)")
        if g is None:
            if t.is_complex():
                fn = t.grad_fn
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for real scalar outputs; "
                    f"tensor {i} is {t.dtype.name} of shape {tuple(t.shape)}"
                    f"{f' (the result of {fn.op})' if fn is not None else ''}: "
                    f"differentiate a real scalar function of it (e.g. out.abs().sum()), "
                    f"or pass gradient= (the gradient of the loss w.r.t. it, complex)")
            if t.numel() != 1:
                raise RuntimeError(
                    f"{op}: grad can be created implicitly only for scalar outputs; tensor "
                    f"{i} has shape {tuple(t.shape)}, so pass gradient= (a tensor of that "
                    f"shape, e.g. ember.ones_like(out))")
            g = em.ones_like(t)
        else:
            if not isinstance(g, _TB):
                g = em.as_tensor(g, dtype=t.dtype, device=t.device)
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"{op}: gradient {i} has shape {tuple(g.shape)} but the "
                                   f"tensor has shape {tuple(t.shape)}")
            if g.device != t.device:
                raise RuntimeError(f"{op}: gradient {i} is on {g.device} but the tensor is on "
                                   f"{t.device}")
            if g.dtype is not t.dtype:
                # a real gradient of a complex output is fine (imaginary part 0); a
                # complex one of a real output is not (PyTorch refuses it too)
                if g.dtype.kind not in ("float", "complex") or \
                        (g.dtype.kind == "complex" and not t.is_complex()):
                    raise RuntimeError(f"{op}: gradient {i} has dtype {g.dtype.name} but the "
                                       f"tensor has dtype {t.dtype.name}")
                g = g.to(t.dtype)
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' .grad (only those in
    `inputs` when given). The graph is freed unless retain_graph=True."""
    tensors = _as_list(tensors, "backward", required=True)
    grad_tensors = _as_list(grad_tensors, "backward")
    inputs = _as_list(inputs, "backward")
    if inputs is not None:
        if not inputs:
            raise RuntimeError("backward: inputs= is an empty sequence")
        for t in inputs:
            if not isinstance(t, _TB) or not t.requires_grad:
                raise RuntimeError("backward: every tensor in inputs= must require grad")
    grads = _root_grads("backward", tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        targets = inputs
        captured = _graph.run_backward(tensors, grads, retain_graph, create_graph,
                                       inputs=targets, accumulate=True)
        for t, g in zip(targets, captured):
            if g is not None:
                _graph.accumulate(t, g, create_graph) if t.is_leaf else \
                    _accumulate_nonleaf(t, g)
        return
    _graph.run_backward(tensors, grads, retain_graph, create_graph)


def _accumulate_nonleaf(t, g):
    t.grad = g if t.grad is None else t.grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs w.r.t. inputs, returned (not accumulated in .grad)."""
    outputs = _as_list(outputs, "grad", required=True)
    single = isinstance(inputs, _TB)
    inputs = _as_list(inputs, "grad", required=True)
    grad_outputs = _as_list(grad_outputs, "grad")
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True is not supported")
    for i, t in enumerate(inputs):
        if not isinstance(t, _TB):
            raise TypeError(f"grad: inputs[{i}] is {type(t).__name__}, not a tensor")
        if not t.requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] (shape {tuple(t.shape)}) does not require "
                               f"grad")
    grads = _root_grads("grad", outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    result = _graph.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                                 accumulate=False)
    for i, g in enumerate(result):
        if g is None:
            if materialize_grads:
                import ember as em
                result[i] = em.zeros_like(inputs[i])
            elif not allow_unused:
                raise RuntimeError(
                    f"grad: inputs[{i}] (shape {tuple(inputs[i].shape)}) was not used to "
                    f"compute the outputs (pass allow_unused=True to get None for it)")
    return tuple(result) if not single else (result[0],)


# ------------------------------------------------------------------------------------
# the Tensor methods that need the tape
# ------------------------------------------------------------------------------------

def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, None if gradient is None else [gradient], retain_graph, create_graph,
             inputs)


def _register_hook(self, hook):
    """hook(grad) runs when the gradient w.r.t. this tensor is computed; it may return
    a replacement. Returns a handle whose remove() unregisters it."""
    if not self.requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                           "require grad")
    if self.grad_fn is None:
        s = _graph.state(self)
        if s.hooks is None:
            s.hooks = _graph.HookTable()
        h = _graph.RemovableHandle(s.hooks)
        s.hooks[h.id] = hook
        return h
    nr = 0 if self._autograd is None else self._autograd.output_nr
    return self.grad_fn._tensor_hook(nr, hook)


def _register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) after the gradient was accumulated into this leaf's .grad."""
    if not self.requires_grad or self.grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook: only leaf tensors that "
                           "require grad accumulate gradients")
    s = _graph.state(self)
    if s.post_accumulate_hooks is None:
        s.post_accumulate_hooks = _graph.HookTable()
    h = _graph.RemovableHandle(s.post_accumulate_hooks)
    s.post_accumulate_hooks[h.id] = hook
    return h


def _retain_grad(self):
    """Keep .grad for this non-leaf tensor after backward."""
    if not self.requires_grad:
        raise RuntimeError("retain_grad: the tensor does not require grad")
    if self.grad_fn is None:
        return            # leaves keep their grad anyway
    s = _graph.state(self)
    if s.retains_grad:
        return
    s.retains_grad = True
    import weakref
    ref = weakref.ref(self)

    def keep(g):
        t = ref()
        if t is not None:
            t._grad = g.detach().clone() if t._grad is None else t._grad + g
    self.grad_fn._tensor_hook(s.output_nr, keep)


def _retains_grad(self):
    s = self._autograd
    return bool(s is not None and s.retains_grad)


def _install():
    from ember import Tensor
    Tensor.backward = _tensor_backward
    Tensor.register_hook = _register_hook
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
    Tensor.retain_grad = _retain_grad
    Tensor.retains_grad = property(_retains_grad)
    _core.set_recorder(_graph.make_recorder(FORMULAS))


_install()
