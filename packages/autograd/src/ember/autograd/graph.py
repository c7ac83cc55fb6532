"""The tape: graph nodes, the recorder that tensor-core calls after each op, and the
engine that replays the nodes backward.

Recording (the hot path; it runs once per op on tensors that require grad): the
node keeps its inputs' edges (the node that produced each input and which of its
outputs it was), their shapes and dtypes (the engine reduces broadcast gradients
back to them), and only the tensors its formula asks for, each with the version it
had when saved. Nothing else: no stack capture unless anomaly mode is on.

Ownership is one-way: a tensor owns its grad_fn node, a node owns the nodes of its
inputs and the tensors it saved. A saved output is kept as a detached alias (the
node must not own the tensor that owns it), and a leaf's AccumulateGrad node is
only weakly referenced from the leaf. So a graph is freed by reference counting as
soon as its output dies, without waiting for the cycle collector.
"""
from __future__ import annotations

import heapq
import itertools
import traceback
import weakref

from ember._C import core as _core

_TB = _core.TensorBase
_seq = itertools.count()
_ACC_SEQ = 1 << 62         # AccumulateGrad runs as soon as it is ready (frees grads early)

# anomaly mode (ember.autograd.anomaly_mode switches it)
anomaly = {"enabled": False, "check_nan": True}


class TensorState:
    """Per-tensor autograd state, in TensorBase._autograd (created on first use)."""

    __slots__ = ("hooks", "post_accumulate_hooks", "acc", "retains_grad", "output_nr")

    def __init__(self):
        self.hooks = None                  # {handle id: fn} of register_hook
        self.post_accumulate_hooks = None  # leaves only
        self.acc = None                    # weakref to the leaf's AccumulateGrad
        self.retains_grad = False
        self.output_nr = 0


def state(t):
    s = t._autograd
    if s is None:
        s = t._autograd = TensorState()
    return s


class HookTable(dict):
    """{handle id: hook}; weakly referenced by the handles."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    _ids = itertools.count()

    def __init__(self, table):
        self.id = next(self._ids)
        self._table = weakref.ref(table)

    def remove(self):
        table = self._table()
        if table is not None:
            table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Node:
    """One recorded op. `grad_fn` of the tensors it produced.

    name() and next_functions are PyTorch's inspection API: next_functions holds,
    per input, (node that produced it, which of that node's outputs) or (None, 0)
    for inputs that don't require grad."""

    __slots__ = ("op", "formula", "edges", "metas", "saved", "versions", "attrs", "seq",
                 "num_outputs", "pre_hooks", "hooks", "stack", "out", "out_version",
                 "freed", "inputs", "output", "needs", "__weakref__")

    def __init__(self, op, formula, edges, metas, attrs, num_outputs=1):
        self.op = op
        self.formula = formula
        self.edges = edges
        self.metas = metas
        self.attrs = attrs
        self.seq = next(_seq)
        self.num_outputs = num_outputs
        self.saved = None
        self.versions = None
        self.out = None
        self.out_version = 0
        self.pre_hooks = None    # {output_nr: {id: fn}}: tensor hooks on this node's outputs
        self.hooks = None        # {id: fn(grad_inputs, grad_outputs)}
        self.stack = None
        self.freed = False
        self.inputs = self.output = self.needs = None   # filled while the formula runs

    # inspection ------------------------------------------------------------------
    def name(self):
        return "".join(p.capitalize() for p in self.op.split("_")) + "Backward0"

    def __repr__(self):
        return f"<{self.name()} object>"

    @property
    def next_functions(self):
        return tuple(e if e is not None else (None, 0) for e in self.edges)

    @property
    def metadata(self):
        return self.attrs if self.attrs is not None else {}

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after this node ran; may return new grad_inputs."""
        if self.hooks is None:
            self.hooks = HookTable()
        h = RemovableHandle(self.hooks)
        self.hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """fn(grad_outputs) before this node runs; may return new grad_outputs."""
        return self._tensor_hook(None, fn)

    def _tensor_hook(self, output_nr, fn):
        if self.pre_hooks is None:
            self.pre_hooks = {}
        table = self.pre_hooks.get(output_nr)
        if table is None:
            table = self.pre_hooks[output_nr] = HookTable()
        h = RemovableHandle(table)
        table[h.id] = fn
        return h

    # saved tensors -----------------------------------------------------------------
    def _unpack(self, create_graph):
        if self.freed:
            raise RuntimeError(
                f"{self.name()}: trying to backward through the graph a second time (or to "
                f"use saved tensors after they were freed). Saved tensors are freed after "
                f"backward(); pass retain_graph=True to the first backward() (or "
                f"autograd.grad()) to keep them.")
        saved = self.saved
        if saved is not None:
            versions = self.versions
            for i, t in enumerate(saved):
                if versions[i] is not None and t._version != versions[i]:
                    self._modified(f"input {i}", t, versions[i])
            self.inputs = saved
        if self.out is not None:
            out = self.out
            if out._version != self.out_version:
                self._modified("its output", out, self.out_version)
            if create_graph:
                # the output again as the differentiable result of this node
                out = out.detach()
                out._set_autograd(self, True)
            self.output = out

    def _modified(self, which, t, saved_version):
        raise RuntimeError(
            f"one of the tensors needed for gradient computation has been modified by an "
            f"in-place operation: {which} of {self.op} (shape {tuple(t.shape)}, dtype "
            f"{t.dtype.name}) was saved at version {saved_version} and is now at version "
            f"{t._version}. Use .clone() before the in-place op, or run the in-place op "
            f"after backward.{_where(self)}")

    def release(self):
        self.saved = self.versions = self.out = None
        self.inputs = self.output = None
        self.freed = True

    # run -------------------------------------------------------------------------------
    def apply(self, grads, create_graph):
        """Gradients w.r.t. the inputs, given the gradients w.r.t. the outputs."""
        self._unpack(create_graph)
        self.needs = tuple(e is not None for e in self.edges)
        g = grads[0] if self.num_outputs == 1 else grads
        try:
            result = self.formula(self, g)
        except Exception as e:
            if isinstance(e, RuntimeError) and str(e).startswith("one of the tensors needed"):
                raise
            raise type(e)(f"{self.name()} (the backward of {self.op}): {e}{_where(self)}") \
                if _plain_exception(e) else e
        finally:
            self.inputs = self.output = None
        if not isinstance(result, tuple):
            result = (result,)
        return result


def _plain_exception(e):
    try:
        type(e)("")
        return True
    except Exception:
        return False


def user_stack():
    """The current stack without ember's own frames at its end: it ends at the
    user's line that called the op."""
    import os
    import ember
    internal = tuple(os.path.join(os.path.abspath(p), "") for p in ember.__path__)
    stack = traceback.extract_stack()[:-1]
    while len(stack) > 1 and os.path.abspath(stack[-1].filename).startswith(internal):
        stack.pop()
    return stack


def _where(node):
    if node is None or node.stack is None:
        return ("" if anomaly["enabled"] else
                " (run with ember.autograd.detect_anomaly() to see where the forward op "
                "was called)")
    frame = node.stack[-1]
    trace = "".join(traceback.format_list(node.stack))
    return (f"\nThe forward op {node.op} was called at {frame.filename}:{frame.lineno}:\n"
            f"{trace}")


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds the incoming gradient to .grad."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        Node.__init__(self, "accumulate_grad", None, (), (), None)
        self.seq = _ACC_SEQ
        self.variable = variable

    def name(self):
        return "AccumulateGrad"


def accumulator(t):
    s = state(t)
    acc = s.acc() if s.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        s.acc = weakref.ref(acc)
    return acc


def edge_of(t):
    """(node, output_nr) that gradients for tensor t flow into."""
    fn = t._grad_fn
    if fn is None:
        return (accumulator(t), 0)
    s = t._autograd
    return (fn, 0 if s is None else s.output_nr)


# -----------------------------------------------------------------------------------
# recording
# -----------------------------------------------------------------------------------

def _missing_formula(op):
    def backward(node, grad):
        raise NotImplementedError(
            f"the derivative of {op} is not implemented in ember.autograd (it has no row "
            f"in ember/autograd/formulas.py)")
    return backward


class Formula:
    """A row of the derivative table: backward(node, grad) -> grads per input, and
    which tensors the node must save (input positions, the output)."""

    __slots__ = ("fn", "inputs", "output", "uses")

    def __init__(self, fn, inputs=(), output=False, uses=None):
        self.fn = fn
        self.inputs = inputs
        self.output = output
        # {input i: the inputs whose gradients need i's value}; None: all of them.
        # An input is then saved only when one of those needs a gradient.
        self.uses = uses


def make_recorder(formulas):
    """The function tensor-core calls as recorder(op, inputs, output, attrs)."""
    get = formulas.get
    missing = {}

    def record(op, inputs, output, attrs):
        f = get(op, missing)
        if f is None:                       # not differentiable: output stays a constant
            if attrs is not None and attrs.get("inplace") and output._grad_fn is not None:
                output._set_autograd(None, False)
            return
        if f is missing:
            f = formulas[op] = Formula(_missing_formula(op))
        edges = []
        metas = []
        for x in inputs:
            if isinstance(x, _TB) and x.requires_grad:
                fn = x._grad_fn
                if fn is None:
                    edges.append((accumulator(x), 0))
                else:
                    s = x._autograd
                    edges.append((fn, 0 if s is None else s.output_nr))
                metas.append((x.shape, x.dtype))
            else:
                edges.append(None)
                metas.append(None)
        node = Node(op, f.fn, edges, metas, attrs)
        if f.inputs:
            original = attrs.get("original") if attrs is not None else None
            saved = list(inputs)
            versions = [None] * len(saved)
            uses = f.uses
            for i in f.inputs:
                x = saved[i] if i < len(saved) else None
                if uses is not None and i in uses and \
                        not any(edges[j] is not None for j in uses[i]):
                    saved[i] = None
                    continue
                if isinstance(x, _TB):
                    if x is output and attrs is not None and attrs.get("inplace"):
                        # the value this formula needs was overwritten by the op itself
                        if original is None:
                            raise RuntimeError(
                                f"{op}_: in-place op on a tensor whose old value its gradient "
                                f"needs; use the out-of-place {op}")
                        x = saved[i] = original
                    versions[i] = x._version
            node.saved = tuple(saved)
            node.versions = versions
        if f.output:
            node.out = output.detach()
            node.out_version = output._version
        if anomaly["enabled"]:
            node.stack = user_stack()
        output._set_autograd(node, True)
        s = output._autograd
        if s is not None:
            s.output_nr = 0
    return record


# -----------------------------------------------------------------------------------
# the engine
# -----------------------------------------------------------------------------------

def _sum_to(g, shape):
    """Reduce a broadcast gradient back to an input's shape."""
    nd = len(shape)
    lead = g.ndim - nd
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and g.shape[lead + i] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
        if lead:
            g = g.reshape(shape)
    return g


def _fit(g, meta, node, i):
    shape, dtype = meta
    if g.shape != shape:
        try:
            g = _sum_to(g, shape)
        except Exception:
            g = None
        if g is None or g.shape != shape:
            raise RuntimeError(
                f"{node.name()}: the gradient computed for input {i} has shape "
                f"{tuple(g.shape) if g is not None else '?'} but the input has shape "
                f"{tuple(shape)}{_where(node)}")
    if g.dtype is not dtype:
        g = g.to(dtype)
    return g


class _Capture:
    """grad(): where to read each requested input's gradient."""

    def __init__(self, inputs):
        self.where = {}          # node -> list of (output_nr, index)
        self.grads = [None] * len(inputs)
        for k, t in enumerate(inputs):
            node, nr = edge_of(t)
            self.where.setdefault(node, []).append((nr, k))


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None,
                 accumulate=True):
    """Backpropagate from `tensors` (each with its gradient). With accumulate, leaf
    gradients go to .grad (only those in `inputs` when given); without, the
    gradients w.r.t. `inputs` are returned (autograd.grad)."""
    roots = []
    for t, g in zip(tensors, grad_tensors):
        node, nr = edge_of(t)
        roots.append((node, nr, g))

    capture = _Capture(inputs) if inputs is not None else None
    targets = set(capture.where) if capture is not None else None

    # the nodes that lead to a target, and how many edges from them each one waits for
    order = []
    seen = set()
    stack = [r[0] for r in roots]
    for n in stack:
        seen.add(n)
    while stack:
        n = stack.pop()
        order.append(n)
        for e in n.edges:
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
    # inputs are recorded before the ops that use them (leaves have no inputs)
    order.sort(key=lambda n: -1 if type(n) is AccumulateGrad else n.seq)
    needed = set()
    for n in order:
        if (targets is None and (type(n) is not AccumulateGrad or accumulate)) or \
                (targets is not None and n in targets) or \
                any(e is not None and e[0] in needed for e in n.edges):
            needed.add(n)
    deps = {}
    for n in needed:
        for e in n.edges:
            if e is not None and e[0] in needed:
                deps[e[0]] = deps.get(e[0], 0) + 1

    buffers = {}
    ready = []
    for node, nr, g in roots:
        if node not in needed:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    for node in buffers:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node.seq, id(node), node))

    executed = []
    prev_mode = _core._set_grad_enabled(bool(create_graph))
    try:
        while ready:
            node = heapq.heappop(ready)[2]
            buf = buffers.pop(node)
            if node.pre_hooks:
                _run_tensor_hooks(node, buf)
            if capture is not None and node in capture.where:
                for nr, k in capture.where[node]:
                    capture.grads[k] = buf[nr]
                if type(node) is AccumulateGrad:
                    continue
            if type(node) is AccumulateGrad:
                if buf[0] is not None and (targets is None or node in targets):
                    _accumulate(node.variable, buf[0], create_graph)
                continue
            if all(g is None for g in buf):
                grads = (None,) * len(node.edges)
            else:
                grads = node.apply(buf, create_graph)
                if node.hooks:
                    for fn in tuple(node.hooks.values()):
                        r = fn(grads, tuple(buf))
                        if r is not None:
                            grads = tuple(r)
                if anomaly["enabled"] and anomaly["check_nan"]:
                    _check_nan(node, grads)
            executed.append(node)
            edges = node.edges
            if len(grads) != len(edges):
                raise RuntimeError(f"{node.name()}: the backward returned {len(grads)} "
                                   f"gradients for {len(edges)} inputs")
            for i, e in enumerate(edges):
                if e is None:
                    continue
                child = e[0]
                if child not in needed:
                    continue
                g = grads[i]
                if g is not None:
                    g = _fit(g, node.metas[i], node, i)
                    cbuf = buffers.get(child)
                    if cbuf is None:
                        cbuf = buffers[child] = [None] * child.num_outputs
                    nr = e[1]
                    cbuf[nr] = g if cbuf[nr] is None else cbuf[nr] + g
                elif child not in buffers:
                    buffers[child] = [None] * child.num_outputs
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    heapq.heappush(ready, (-child.seq, id(child), child))
    finally:
        _core._set_grad_enabled(prev_mode)
        if not retain_graph:
            for n in executed:
                n.release()
    return capture.grads if capture is not None else None


def _run_tensor_hooks(node, buf):
    for nr, table in node.pre_hooks.items():
        if not table:
            continue
        if nr is None:       # Node.register_prehook: sees all output grads
            for fn in tuple(table.values()):
                r = fn(tuple(buf))
                if r is not None:
                    buf[:] = list(r)
            continue
        if buf[nr] is None:
            continue
        for fn in tuple(table.values()):
            r = fn(buf[nr])
            if r is not None:
                buf[nr] = r


def _accumulate(t, g, create_graph):
    s = t._autograd
    if s is not None and s.hooks:
        for fn in tuple(s.hooks.values()):
            r = fn(g)
            if r is not None:
                g = r
    if g.shape != t.shape:
        raise RuntimeError(f"AccumulateGrad: gradient of shape {tuple(g.shape)} for a leaf of "
                           f"shape {tuple(t.shape)}")
    if g.dtype is not t.dtype:
        g = g.to(t.dtype)
    old = t._grad
    if old is None:
        # the engine's gradients may be shared (an add passes one tensor to both inputs,
        # a user's hook may keep one): .grad gets its own copy unless created here
        t._grad = g if create_graph else g.detach().clone()
    elif create_graph or _core.is_grad_enabled():
        t._grad = old + g
    else:
        old += g
    if s is not None and s.post_accumulate_hooks:
        for fn in tuple(s.post_accumulate_hooks.values()):
            fn(t)


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and g.dtype.kind == "float" and bool(g.isnan().any()):
            raise RuntimeError(f"{node.name()} returned NaN values in its gradient for "
                               f"input {i}{_where(node)}")
