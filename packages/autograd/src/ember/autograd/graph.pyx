# cython: language_level=3
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
import heapq
import itertools
import traceback
import weakref

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from ember._C.core cimport TensorBase, DType, Storage, dtype_object, view_of

from ember._C import core as _core

_TB = _core.TensorBase
cdef long long _next_seq = 0
cdef long long _ACC_SEQ = 1LL << 62   # AccumulateGrad runs as soon as it is ready
cdef object _heappush = heapq.heappush
cdef object _heappop = heapq.heappop


cdef inline tuple shape_of(TensorBase t):
    cdef tuple r = PyTuple_New(t._ndim)
    cdef int i
    cdef object v        # a Python object: the tuple steals the reference given it
    for i in range(t._ndim):
        v = t._shape[i]
        Py_INCREF(v)
        PyTuple_SET_ITEM(r, i, v)
    return r


cdef inline bint same_shape(TensorBase t, tuple shape):
    if t._ndim != len(shape):
        return False
    for i in range(t._ndim):
        if t._shape[i] != <long long>shape[i]:
            return False
    return True

# anomaly mode (ember.autograd.anomaly_mode switches it)
anomaly = {"enabled": False, "check_nan": True}
cdef dict _anomaly = anomaly       # the same dict, read from C


cdef class TensorState:
    """Per-tensor autograd state, in TensorBase._autograd (created on first use)."""

    cdef public object hooks                  # HookTable of register_hook
    cdef public object post_accumulate_hooks  # leaves only
    cdef public object acc                    # weakref to the leaf's AccumulateGrad
    cdef public bint retains_grad
    cdef public int output_nr
    cdef public object base                   # views: the tensor whose storage they view
    cdef public bint has_grad_dtype           # Tensor.grad_dtype was set (leaves)
    cdef public object grad_dtype             # then: the dtype .grad gets (None: any)


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


cdef class Node:
    """One recorded op. `grad_fn` of the tensors it produced.

    name() and next_functions are PyTorch's inspection API: next_functions holds,
    per input, (node that produced it, which of that node's outputs) or (None, 0)
    for inputs that don't require grad."""

    cdef public str op
    cdef public object formula
    cdef public list edges          # per input: (node, output_nr) or None
    cdef public list metas          # per input: (shape, dtype) or None
    cdef public tuple saved
    cdef public list versions
    cdef public object attrs
    cdef public long long seq
    cdef public int num_outputs
    cdef public dict pre_hooks      # {output_nr: HookTable}: tensor hooks on the outputs
    cdef public object hooks        # HookTable of fn(grad_inputs, grad_outputs)
    cdef public object stack
    cdef public TensorBase out
    cdef public long long out_version
    cdef public bint freed
    cdef public object inputs
    cdef public object output
    cdef public tuple needs
    # no __dict__: a dict per recorded op costs an allocation on the hot path (Python
    # subclasses, Function nodes, get their own); PyTorch's nodes take no new attributes
    cdef object __weakref__

    def __init__(self, op, formula, edges, metas, attrs, int num_outputs=1):
        edges = list(edges)
        self._init(op, formula, edges, list(metas), attrs, num_outputs,
                   tuple([e is not None for e in edges]))

    cdef _init(self, str op, object formula, list edges, list metas, object attrs,
               int num_outputs, tuple needs):
        # the one constructor body: record() calls it on Node.__new__(Node) directly,
        # skipping __init__'s Python-level argument parsing on every recorded op
        global _next_seq
        self.op = op
        self.formula = formula
        self.edges = edges
        self.metas = metas
        self.attrs = attrs
        self.seq = _next_seq
        _next_seq += 1
        self.num_outputs = num_outputs
        self.needs = needs

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
    cpdef _unpack(self, bint create_graph):
        if self.freed:
            raise RuntimeError(
                f"{self.name()}: trying to backward through the graph a second time (or to "
                f"use saved tensors after they were freed). Saved tensors are freed after "
                f"backward(); pass retain_graph=True to the first backward() (or "
                f"autograd.grad()) to keep them.")
        cdef tuple saved = self.saved
        cdef list versions
        cdef Py_ssize_t i
        if saved is not None:
            versions = self.versions
            for i in range(len(saved)):
                v = versions[i]
                if v is not None:
                    t = saved[i]
                    if (<TensorBase>t)._storage.version != <long long>v:
                        self._modified(f"input {i}", t, v)
            self.inputs = saved
        cdef TensorBase out = self.out
        if out is not None:
            if out._storage.version != self.out_version:
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
        self._release()

    cdef _release(self):
        self.saved = self.versions = self.out = None
        self.inputs = self.output = None
        self.freed = True

    # run -------------------------------------------------------------------------------
    def apply(self, list grads, bint create_graph):
        """Gradients w.r.t. the inputs, given the gradients w.r.t. the outputs."""
        return self._apply(grads, create_graph)

    cdef tuple _apply(self, list grads, bint create_graph):
        # the engine calls this directly (no Python method lookup per node)
        self._unpack(create_graph)
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


cdef class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds the incoming gradient to .grad."""

    cdef public TensorBase variable

    def __init__(self, variable):
        Node.__init__(self, "accumulate_grad", None, (), (), None)
        self.seq = _ACC_SEQ
        self.variable = variable

    def name(self):
        return "AccumulateGrad"


cpdef AccumulateGrad accumulator(TensorBase t):
    s = t._autograd
    if s is None:
        s = t._autograd = TensorState()
    acc = s.acc() if s.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        s.acc = weakref.ref(acc)
    return acc


cpdef tuple edge_of(TensorBase t):
    """(node, output_nr) that gradients for tensor t flow into."""
    fn = t._grad_fn
    if fn is None:
        return (accumulator(t), 0)
    s = t._autograd
    return (fn, 0 if s is None else (<TensorState>s).output_nr)


# -----------------------------------------------------------------------------------
# recording
# -----------------------------------------------------------------------------------

def _missing_formula(op):
    def backward(node, grad):
        raise NotImplementedError(
            f"the derivative of {op} is not implemented in ember.autograd (it has no row "
            f"in ember/autograd/formulas.py)")
    return backward


cdef class Formula:
    """A row of the derivative table: backward(node, grad) -> grads per input, and
    which tensors the node must save (input positions, the output)."""

    cdef public object fn
    cdef public tuple inputs
    cdef public bint output
    # {input i: the inputs whose gradients need i's value}; None: all of them. An
    # input is then saved only when one of those needs a gradient.
    cdef public dict uses

    def __init__(self, fn, inputs=(), output=False, uses=None):
        self.fn = fn
        self.inputs = tuple(inputs)
        self.output = output
        self.uses = uses


cdef dict FORMULAS = {}


def make_recorder(dict formulas):
    """The function tensor-core calls as recorder(op, inputs, output, attrs)."""
    global FORMULAS
    FORMULAS = formulas
    return record


def record(str op, tuple inputs, TensorBase output, attrs):
    cdef object f = FORMULAS.get(op, _MISSING)
    if attrs is not None and attrs.get("prepare"):
        return _prepare_inplace(f, inputs, output)
    if f is None:                       # not differentiable: output stays a constant
        if attrs is not None and attrs.get("inplace") and output._grad_fn is not None:
            output._set_autograd(None, False)
        return
    if f is _MISSING:
        f = FORMULAS[op] = Formula(_missing_formula(op))
    cdef Formula row = <Formula>f
    cdef Py_ssize_t n_in = len(inputs)
    cdef list edges = [None] * n_in
    cdef list metas = [None] * n_in
    cdef tuple needs = PyTuple_New(n_in)
    cdef TensorBase t
    cdef Py_ssize_t i
    cdef object flag     # a Python object: the tuple steals the reference given it
    for i in range(n_in):
        x = inputs[i]
        if isinstance(x, TensorBase) and (<TensorBase>x)._requires_grad:
            t = <TensorBase>x
            fn = t._grad_fn
            if fn is None:
                edges[i] = (accumulator(t), 0)
            else:
                s = t._autograd
                edges[i] = (fn, 0 if s is None else (<TensorState>s).output_nr)
            metas[i] = (shape_of(t), dtype_object(t._dtype))
            flag = True
        else:
            flag = False
        Py_INCREF(flag)
        PyTuple_SET_ITEM(needs, i, flag)
    cdef Node node = Node.__new__(Node)
    node._init(op, row.fn, edges, metas, attrs, 1, needs)
    cdef list saved = None          # made only when an input is left out or replaced
    cdef list versions
    cdef dict uses
    cdef bint used
    if row.inputs:
        inplace = attrs is not None and attrs.get("inplace")
        versions = [None] * n_in
        uses = row.uses
        for i in row.inputs:
            if i >= n_in:
                continue
            if uses is not None and i in uses:
                # saved only when an input whose gradient needs it requires grad
                used = False
                for j in uses[i]:
                    if edges[j] is not None:
                        used = True
                        break
                if not used:
                    if saved is None:
                        saved = list(inputs)
                    saved[i] = None
                    continue
            x = inputs[i]
            if isinstance(x, TensorBase):
                if x is output and inplace:
                    # the value this formula needs was overwritten by the op itself
                    original = attrs.get("original")
                    if original is None:
                        raise RuntimeError(
                            f"{op}_: in-place op on a tensor whose old value its gradient "
                            f"needs; use the out-of-place {op}")
                    if saved is None:
                        saved = list(inputs)
                    x = saved[i] = original
                versions[i] = (<TensorBase>x)._storage.version
        node.saved = inputs if saved is None else tuple(saved)
        node.versions = versions
    if row.output:
        # output.detach() without the Python method call
        node.out = view_of(output, output._ndim, output._shape, output._strides,
                           output._offset)
        node.out_version = output._storage.version
    if _anomaly["enabled"]:
        node.stack = user_stack()
    cdef TensorState vs
    if op in _VIEW_OPS:
        # remember the base, so that an in-place op on this view updates its history
        x = inputs[0]
        s = (<TensorBase>x)._autograd
        vs = TensorState()
        vs.base = x if s is None or (<TensorState>s).base is None else (<TensorState>s).base
        output._autograd = vs
    elif attrs is not None and output._autograd is not None and \
            (<TensorState>output._autograd).base is not None and attrs.get("inplace"):
        _rebase_view(node, inputs, output)
        return
    output._grad_fn = node
    output._requires_grad = True
    s = output._autograd
    if s is not None:
        (<TensorState>s).output_nr = 0


VIEW_OPS = frozenset(["view", "permute", "expand", "narrow", "diagonal", "unfold",
                      "as_strided", "index_view", "real", "imag", "view_as_real",
                      "view_as_complex"])
cdef frozenset _VIEW_OPS = VIEW_OPS


class CopySlices(Node):
    """An in-place op on a view, as a change of the view's base: the base's gradient
    passes through unchanged outside the view and through the op inside it."""

    def release(self):
        Node.release(self)
        self.attrs["fn"].release()


def _rebase_view(Node op_node, tuple inputs, TensorBase view):
    cdef TensorState vs = <TensorState>view._autograd
    base = vs.base
    if base.dtype is not view.dtype:
        raise RuntimeError(
            f"{op_node.op}_: an in-place op on a {view.dtype.name} view of a "
            f"{base.dtype.name} tensor that requires grad (.real, .imag, view_as_real, "
            f"view_as_complex) is not differentiable in ember; do it on a clone, or "
            f"out of place (e.g. ember.complex(new_real, z.imag))")
    if base.is_leaf and base.requires_grad:
        raise RuntimeError(
            f"{op_node.op}_: a view of a leaf tensor that requires grad (shape "
            f"{tuple(base.shape)}) was modified in place; do it under ember.no_grad() or "
            f"on a clone")
    k = next((i for i, x in enumerate(inputs) if x is view), None)
    keep = [i for i in range(len(inputs)) if i != k]
    edges = [edge_of(base) if base.requires_grad else None] + [op_node.edges[i] for i in keep]
    metas = [(tuple(base.shape), base.dtype)] + [op_node.metas[i] for i in keep]
    geometry = (tuple(view.shape), tuple(view.stride()), view.storage_offset())
    copy = CopySlices("copy_slices", _copy_slices_backward, edges, metas,
                      {"fn": op_node, "k": k, "keep": keep, "view": geometry,
                       "base": (tuple(base.shape), tuple(base.stride()),
                                base.storage_offset())})
    copy.seq = op_node.seq
    base._set_autograd(copy, True)
    # the view is now a view of the updated base
    size, stride, offset = geometry
    node = Node("as_strided", FORMULAS["as_strided"].fn, [(copy, 0)],
                [(tuple(base.shape), base.dtype)],
                {"size": size, "stride": stride, "storage_offset": offset})
    node.saved = (base.detach(),)
    node.versions = [None]
    view._grad_fn = node
    view._requires_grad = True


def _positions(shape, strides, offset):
    import ember as em
    p = em.full((), offset, dtype=em.int64)
    for n, st in zip(shape, strides):
        p = p.unsqueeze(-1) + em.arange(n) * st
    return p.reshape(-1)


def _copy_slices_backward(node, g):
    import ember as em
    a = node.attrs
    fn, k = a["fn"], a["k"]
    # where the view's elements sit among the base's (both over one storage)
    base_pos = _positions(*a["base"])
    view_pos = _positions(*a["view"])
    extent = 1 + max(int(base_pos.max()), int(view_pos.max()))
    where = em.zeros(extent, dtype=em.int64).index_put((base_pos,), em.arange(base_pos.numel()))
    inside = where[view_pos].to(g.device)
    flat = g.reshape(-1)
    grads = fn.apply([flat[inside].reshape(a["view"][0])], _core.is_grad_enabled())
    through = grads[k] if k is not None else None
    if through is None:
        through = em.zeros(a["view"][0], dtype=g.dtype, device=g.device)
    through = _sum_to(through, a["view"][0]) if tuple(through.shape) != a["view"][0] else through
    result = flat.index_put((inside,), through.reshape(-1).to(g.dtype)).reshape(g.shape)
    return (result,) + tuple(grads[i] for i in a["keep"])


_MISSING = object()


cdef object _prepare_inplace(object f, tuple inputs, TensorBase output):
    """Before an in-place op overwrites `output`, one of its inputs: the attrs to record
    it with, holding a copy of the old value when the derivative needs that value."""
    if f is None or f is _MISSING:
        return None
    cdef Formula row = <Formula>f
    for i in row.inputs:
        if i >= len(inputs) or inputs[i] is not output:
            continue
        users = range(len(inputs)) if row.uses is None or i not in row.uses else row.uses[i]
        if any([isinstance(inputs[j], TensorBase) and (<TensorBase>inputs[j])._requires_grad
                for j in users]):
            return {"inplace": True, "original": output.detach().clone()}
    return None


# -----------------------------------------------------------------------------------
# the engine
# -----------------------------------------------------------------------------------

def _sum_to(g, shape):
    """Reduce a broadcast gradient back to an input's shape."""
    nd = len(shape)
    lead = g.ndim - nd
    inner = tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    if lead and not inner:
        return g.sum(tuple(range(lead)))      # a bias: its shape without a reshape
    dims = tuple(range(lead)) + inner
    if dims:
        g = g.sum(dims, keepdim=True)
        if lead:
            g = g.reshape(shape)
    return g


cdef object _fit(object g, tuple meta, Node node, Py_ssize_t i):
    shape, dtype = meta
    if not isinstance(g, TensorBase):
        raise TypeError(f"{node.name()}: the gradient computed for input {i} is a "
                        f"{type(g).__name__}, not a tensor{_where(node)}")
    if not same_shape(<TensorBase>g, shape):
        try:
            g = _sum_to(g, shape)
        except Exception:
            g = None
        if g is None or not same_shape(<TensorBase>g, shape):
            raise RuntimeError(
                f"{node.name()}: the gradient computed for input {i} has shape "
                f"{tuple(g.shape) if g is not None else '?'} but the input has shape "
                f"{tuple(shape)}{_where(node)}")
    if (<TensorBase>g)._dtype != (<DType>dtype).num:
        g = _cast_grad(g, dtype)
    return g


def _cast_grad(g, dtype):
    """g in an input's dtype. A complex gradient flowing into a real input keeps its
    real part (PyTorch's rule at a real -> complex boundary: the real input's gradient
    is the real part of the complex one, which is dL/dx for a real loss L)."""
    if g.dtype.kind == "complex" and dtype.kind != "complex":
        g = g.real
    return g.to(dtype)


class _Capture:
    """grad(): where to read each requested input's gradient."""

    def __init__(self, inputs):
        self.where = {}          # node -> list of (output_nr, index)
        self.grads = [None] * len(inputs)
        for k, t in enumerate(inputs):
            node, nr = edge_of(t)
            self.where.setdefault(node, []).append((nr, k))


def run_backward(tensors, grad_tensors, bint retain_graph, bint create_graph, inputs=None,
                 bint accumulate=True):
    """Backpropagate from `tensors` (each with its gradient). With accumulate, leaf
    gradients go to .grad (only those in `inputs` when given); without, the
    gradients w.r.t. `inputs` are returned (autograd.grad)."""
    cdef list roots = []
    for t, g in zip(tensors, grad_tensors):
        node, nr = edge_of(t)
        roots.append((node, nr, g))

    capture = _Capture(inputs) if inputs is not None else None
    targets = set(capture.where) if capture is not None else None

    # every node reachable from the roots, and how many edges each one waits for;
    # with targets (grad(), backward(inputs=)), only the nodes that lead to one
    cdef Node n, child
    cdef dict deps = {}
    cdef set seen = set()
    cdef list stack = []
    cdef list order = []
    for r in roots:
        if r[0] not in seen:
            seen.add(r[0])
            stack.append(r[0])
    while stack:
        n = stack.pop()
        order.append(n)
        for e in n.edges:
            if e is not None:
                child = (<tuple>e)[0]
                deps[child] = deps.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    cdef set needed = None
    if targets is not None or not accumulate:
        # inputs are recorded before the ops that use them (leaves have no inputs)
        order.sort(key=_topo_key)
        needed = set()
        for n in order:
            if (targets is not None and n in targets) or \
                    any([e is not None and (<tuple>e)[0] in needed for e in n.edges]):
                needed.add(n)
        deps = {}
        for n in needed:
            for e in n.edges:
                if e is not None and (<tuple>e)[0] in needed:
                    child = (<tuple>e)[0]
                    deps[child] = deps.get(child, 0) + 1

    cdef dict buffers = {}
    cdef list ready = []
    cdef list buf, cbuf
    for node, nr, g in roots:
        if needed is not None and node not in needed:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * (<Node>node).num_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    for node in buffers:
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-(<Node>node).seq, id(node), node))

    cdef list executed = []
    cdef tuple grads, e_
    cdef Py_ssize_t i, k
    cdef long left
    cdef bint check_nan = anomaly["enabled"] and anomaly["check_nan"]
    # the one ready node while the heap is empty: a chain (the common case) runs without
    # heap entries; a second ready node sends both to the heap
    cdef Node only = None
    if len(ready) == 1:
        only = <Node>(<tuple>ready.pop())[2]
    prev_mode = _core._set_grad_enabled(create_graph)
    try:
        while only is not None or ready:
            if only is not None:
                n = only
                only = None
            else:
                n = <Node>(<tuple>_heappop(ready))[2]
            buf = buffers.pop(n)
            if n.pre_hooks:
                _run_tensor_hooks(n, buf)
            if capture is not None and n in capture.where:
                for nr, k in capture.where[n]:
                    capture.grads[k] = buf[nr]
                if type(n) is AccumulateGrad:
                    continue
            if type(n) is AccumulateGrad:
                if buf[0] is not None and (targets is None or n in targets):
                    g = buf[0]
                    buf[0] = None         # so that _accumulate may take it as is
                    _accumulate((<AccumulateGrad>n).variable, g, create_graph)
                    g = None
                continue
            for g in buf:
                if g is not None:
                    break
            else:
                g = None
            if g is None:
                grads = (None,) * len(n.edges)
            elif not create_graph and not check_nan and type(n) is Node and \
                    n.op == "narrow" and not n.hooks and not n.freed and \
                    _narrow_into(n, <TensorBase>g, buffers, needed):
                # the slice's gradient went straight into its input's buffer: a split's
                # parts fill one zeroed tensor (one cat) instead of each padding its own
                grads = (None,)
            else:
                grads = n._apply(buf, create_graph)
                if n.hooks:
                    for fn in tuple(n.hooks.values()):
                        r = fn(grads, tuple(buf))
                        if r is not None:
                            grads = tuple(r)
                if check_nan:
                    _check_nan(n, grads)
            executed.append(n)
            if len(grads) != len(n.edges):
                raise RuntimeError(f"{n.name()}: the backward returned {len(grads)} "
                                   f"gradients for {len(n.edges)} inputs")
            for i in range(len(n.edges)):
                e = n.edges[i]
                if e is None:
                    continue
                e_ = <tuple>e
                child = <Node>e_[0]
                if needed is not None and child not in needed:
                    continue
                g = grads[i]
                cbuf = buffers.get(child)
                if cbuf is None:
                    cbuf = buffers[child] = [None] * child.num_outputs
                if g is not None:
                    g = _fit(g, <tuple>n.metas[i], n, i)
                    k = e_[1]
                    old = cbuf[k]
                    if old is None:
                        cbuf[k] = g
                    elif not create_graph and _engine_owned(old):
                        old += g      # nobody else sees it: add in place (as PyTorch's buffer)
                    else:
                        cbuf[k] = old + g
                    old = None
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    if only is None and not ready:
                        only = child
                    else:
                        if only is not None:
                            _heappush(ready, (-only.seq, id(only), only))
                            only = None
                        _heappush(ready, (-child.seq, id(child), child))
            # the engine holds no other reference to a gradient once it is passed on, so
            # that AccumulateGrad can tell an exclusive one (_sole_reference)
            grads = None
            buf = None
            g = None
    finally:
        _core._set_grad_enabled(prev_mode)
        if not retain_graph:
            for n in executed:
                if type(n) is Node:
                    n._release()
                else:
                    n.release()
    return capture.grads if capture is not None else None


cdef bint _narrow_into(Node n, TensorBase g, dict buffers, set needed) except -1:
    """The backward of a narrow node without padding: g added into the slice of its
    input's gradient buffer (made zero at the first part, or an engine-owned buffer
    already there). False where that cannot be done (g not of the input's dtype, a
    buffer someone else holds): the formula runs instead."""
    e = n.edges[0]
    if e is None:
        return True
    child = (<tuple>e)[0]
    if needed is not None and child not in needed:
        return True
    shape, dtype = <tuple>n.metas[0]
    if g._dtype != (<DType>dtype).num:
        return False
    cdef list cbuf = buffers.get(child)
    cdef Py_ssize_t k = (<tuple>e)[1]
    old = None if cbuf is None else cbuf[k]
    if old is not None and not (isinstance(old, TensorBase) and
                                _engine_owned(<TensorBase>old) and
                                same_shape(<TensorBase>old, shape) and
                                (<TensorBase>old)._dtype == g._dtype):
        return False
    a = n.attrs
    if old is None:
        import ember as em
        old = em.zeros(shape, dtype=dtype, device=g.device)
        if cbuf is None:
            cbuf = buffers[child] = [None] * (<Node>child).num_outputs
        cbuf[k] = old
    old.narrow(a["dim"], a["start"], a["length"]).add_(g)
    return True


def _topo_key(Node n):
    return -1 if type(n) is AccumulateGrad else n.seq


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


cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)


cdef bint _sole_reference(TensorBase g):
    """Only the engine's variable refers to g, only g to its storage, and the storage
    owns its memory (not a NumPy array's, a DLPack producer's or a shared mapping's,
    which others reach without a reference count here). The counts include the
    references this function's own expressions hold (checked by
    test_engine.py::test_an_exclusive_gradient_is_taken_without_a_copy); the hooks,
    retain_grad and create_graph cases are test_engine.py's test_in_place_*."""
    cdef Storage storage = g._storage
    return Py_REFCNT(g) == 2 and Py_REFCNT(storage) == 2 and storage.owner is None


cdef bint _engine_owned(TensorBase g):
    """_sole_reference, and g is contiguous: adding into it in place changes nothing
    anyone can see
    (test_engine.py::test_accumulating_gradients_never_changes_a_tensor_held_elsewhere
    fails with a looser count)."""
    # contiguous: no element written twice (an expanded gradient has stride 0)
    return _sole_reference(g) and g.contiguous_c()


cdef void _accumulate(TensorBase t, object grad, bint create_graph) except *:
    cdef object g = grad
    s = t._autograd
    if s is not None and s.hooks:
        for fn in tuple(s.hooks.values()):
            r = fn(g)
            if r is not None:
                g = r
    if not same_shape(<TensorBase>g, shape_of(t)):
        raise RuntimeError(f"AccumulateGrad: gradient of shape {tuple(g.shape)} for a leaf of "
                           f"shape {tuple(t.shape)}")
    if s is not None and (<TensorState>s).has_grad_dtype:
        want = (<TensorState>s).grad_dtype           # Tensor.grad_dtype: None keeps g's
        if want is not None and g.dtype != want:
            g = _cast_grad(g, want)
    elif (<TensorBase>g)._dtype != t._dtype:
        g = _cast_grad(g, t.dtype)
    old = t._grad
    if old is None:
        # .grad must not alias anything else (an add passes one tensor to both inputs;
        # a hook may keep what it returns), so it gets a copy unless this gradient is
        # referenced only from here (the caller's variable and `g`) and its storage
        # only by this tensor: then it is taken as is, as PyTorch does.
        if create_graph:
            t._grad = g
        elif g is grad and _sole_reference(g):
            t._grad = g
        else:
            t._grad = g.detach().clone()
    elif create_graph or _core.is_grad_enabled():
        t._grad = old + g
    else:
        old += g
    if s is not None and s.post_accumulate_hooks:
        for fn in tuple(s.post_accumulate_hooks.values()):
            fn(t)


def accumulate(t, g, create_graph):
    """Add g to leaf t's .grad (as backward does; for backward(inputs=...))."""
    _accumulate(t, g, create_graph)


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and g.dtype.kind in ("float", "complex") and bool(g.isnan().any()):
            raise RuntimeError(f"{node.name()} returned NaN values in its gradient for "
                               f"input {i}{_where(node)}")
