"""The tracer behind ember.onnx.export: a recorder that turns each recorded op into ONNX
nodes as the model runs (while its tensors are alive and hold the values of that
moment), and the writing of the model."""
from __future__ import annotations

import io
import os
import tempfile

import ember as em
from ember._C import core as _core
from ember.onnx import (
    _EXPORTING,
    OnnxExporterError,
    OperatorExportTypes,
    TrainingMode,
    UnsupportedOperatorError,
)

_MIN_OPSET = 17
_DEFAULT_OPSET = 17
_PROTOBUF_LIMIT = 2**31 - 2**24      # a protobuf message is at most 2 GiB (with the graph)


def _need_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ember.onnx.export needs the onnx package: pip install "
                          "ember-nn[onnx] (or pip install onnx)") from None
    return onnx


def _check_names(what, names):
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"ember.onnx.export: {what} must be a list of strings, got "
                        f"{names!r:.80}")
    names = list(names)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"ember.onnx.export: {what} has duplicate names {sorted(dup)}")
    return names


def _check_dynamic_axes(dynamic_axes, known):
    """{name: {axis: dim_name}} from PyTorch's two spellings (a list of axes gets
    PyTorch's generated names `<name>_dynamic_axes_<k>`)."""
    if dynamic_axes is None:
        return {}
    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"ember.onnx.export: dynamic_axes must be a dict of name -> "
                        f"{{axis: name}} or [axes], got {type(dynamic_axes).__name__}")
    out = {}
    for name, axes in dynamic_axes.items():
        if name not in known:
            raise ValueError(f"ember.onnx.export: dynamic_axes names {name!r}, which is not "
                             f"one of the input_names or output_names {sorted(known)}")
        if isinstance(axes, dict):
            items = list(axes.items())
        elif isinstance(axes, (list, tuple)):
            items = [(a, f"{name}_dynamic_axes_{k + 1}") for k, a in enumerate(axes)]
        else:
            raise TypeError(f"ember.onnx.export: dynamic_axes[{name!r}] must be a dict "
                            f"{{axis: name}} or a list of axes, got {axes!r:.60}")
        d = {}
        for a, n in items:
            if isinstance(a, bool) or not isinstance(a, int) or not isinstance(n, str):
                raise TypeError(f"ember.onnx.export: dynamic_axes[{name!r}] must map int "
                                f"axes to string names, got {a!r}: {n!r}")
            d[a] = n
        out[name] = d
    return out


def _flatten(obj, path="output"):
    """The tensors of a (nested) output, in order; anything else is refused."""
    if isinstance(obj, em.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for k, o in enumerate(obj) for t in _flatten(o, f"{path}[{k}]")]
    if isinstance(obj, dict):
        return [t for k, o in obj.items() for t in _flatten(o, f"{path}[{k!r}]")]
    if obj is None:
        return []
    raise OnnxExporterError(f"ember.onnx.export: the model returned {type(obj).__name__} "
                            f"at {path}; only tensors and lists/tuples/dicts of them can "
                            f"be graph outputs")


class Tracer:
    """Builds the ONNX graph while the model runs: `record` is the recorder."""

    def __init__(self, onnx, opset, do_constant_folding, export_params):
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.fold = do_constant_folding and export_params
        self.names = {}           # id(tensor) -> value name now holding its value
        self.keep = []            # every tensor named: ids stay unique while we trace
        self.dyn = set()          # value names that depend on a graph input
        self.nodes = []
        self.initializers = {}    # name -> numpy array
        self.const_ids = {}       # (id, version) -> initializer name of a captured tensor
        self.param_names = {}     # id(param or buffer) -> state_dict name
        self.aliases = {}         # memory and layout -> value name (detach() is the value)
        self.counter = 0
        self.suppress = 0         # > 0 inside a module exported whole (RNN, LSTM, GRU)
        self.current_op = None
        self.op_log = []          # (op, None) per recorded op, to compare two traces
        self.origin = {}          # value or initializer name -> the op that made it
        self.reshapes = []        # (target initializer, input shape, output shape)

    # names ---------------------------------------------------------------------------
    def fresh(self, base):
        self.counter += 1
        return f"/{base}_{self.counter}"

    def bind(self, t, name, dyn):
        self.names[id(t)] = name
        self.keep.append(t)
        self.aliases[_layout_key(t)] = name
        if dyn:
            self.dyn.add(name)

    def lookup(self, x):
        """The value name of a traced tensor, or of a tensor over the same memory with
        the same layout (x.detach(), x.data: the same value)."""
        name = self.names.get(id(x))
        if name is None:
            name = self.aliases.get(_layout_key(x))
        return name

    def is_dyn(self, x):
        return isinstance(x, em.Tensor) and self.lookup(x) in self.dyn

    def const(self, array, base="const"):
        name = self.fresh(base)
        self.initializers[name] = array
        self.origin[name] = self.current_op
        return name

    def value(self, x, dtype=None):
        """The value name of a tensor (a captured constant if the trace has not seen
        it), a Python number (a constant of `dtype`) or None ('')."""
        import numpy as np
        if x is None:
            return ""
        if isinstance(x, em.Tensor):
            name = self.lookup(x)
            if name is not None:
                return name
            key = (id(x), x._version)
            name = self.const_ids.get(key)
            if name is None:
                arr = _to_numpy(x)
                pname = self.param_names.get(id(x))
                if pname is not None and pname not in self.initializers:
                    name = pname
                    self.initializers[name] = arr
                else:
                    name = self.const(arr)
                self.const_ids[key] = name
                self.keep.append(x)
            return name
        if isinstance(x, (bool, int, float)):
            np_dtype = np.float32 if dtype is None else _np_dtype(dtype)
            return self.const(np.array(x, dtype=np_dtype))
        raise OnnxExporterError(f"ember.onnx.export: cannot make a constant of "
                                f"{type(x).__name__} {x!r:.60}")

    def node(self, op_type, inputs, n_out=1, base=None, **attrs):
        outs = [self.fresh(base or op_type) for _ in range(n_out)]
        for o in outs:
            self.origin[o] = self.current_op
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs,
                                                name=self.fresh("n" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def ints(self, values):
        import numpy as np
        return self.const(np.array(list(values), dtype=np.int64), "ints")

    def cast(self, name, from_dtype, to_dtype):
        if from_dtype == to_dtype:
            return name
        return self.node("Cast", [name], to=_onnx_dtype(to_dtype))

    def operand(self, x, dtype):
        """x (tensor or number) as a value of `dtype` (a Cast where it differs)."""
        if isinstance(x, em.Tensor):
            return self.cast(self.value(x), x.dtype, dtype)
        return self.value(x, dtype)

    # the recorder --------------------------------------------------------------------
    def record(self, op, inputs, output, attrs):
        if attrs is not None and attrs.get("prepare"):
            return None
        if self.suppress:
            return None
        from ember.onnx._symbolic import SYMBOLICS
        self.current_op = op
        self.op_log.append((op, None))
        if attrs is not None and attrs.get("inplace"):
            self._check_inplace(op, output)
        attrs = attrs or {}
        tensors = [x for x in inputs if isinstance(x, em.Tensor)] + \
            [v for v in attrs.values() if isinstance(v, em.Tensor)] + \
            [v for vs in attrs.values() if isinstance(vs, tuple)
             for v in vs if isinstance(v, em.Tensor)]
        dyn = any(self.is_dyn(t) for t in tensors)
        if not dyn and self.fold:
            # every operand is a parameter, buffer or constant: the value is a constant
            self.bind(output, self._fold(output), False)
            output._set_autograd(TRACED, True)
            return None
        for t in tensors + [output]:
            if isinstance(t, em.Tensor) and t.dtype.is_complex:
                raise UnsupportedOperatorError(
                    f"ember.onnx.export: op '{op}' on a {t.dtype.name} tensor cannot be "
                    f"exported: ember.onnx exports real dtypes (ONNX Runtime has no complex "
                    f"kernels); work on view_as_real(x) instead")
        fn = SYMBOLICS.get(op)
        if fn is None:
            raise UnsupportedOperatorError(
                f"ember.onnx.export: op '{op}' has no ONNX translation (ember.onnx exports "
                f"{', '.join(sorted(SYMBOLICS))})")
        name = fn(self, inputs, output, attrs)
        self.bind(output, name, dyn)
        output._set_autograd(TRACED, True)
        return None

    def _fold(self, output):
        return self.const(_to_numpy(output), "folded")

    def _check_inplace(self, op, output):
        for t in self.keep:
            if t is not output and isinstance(t, em.Tensor) and id(t) in self.names and \
                    t._shares_storage(output):
                raise UnsupportedOperatorError(
                    f"ember.onnx.export: op '{op}_' writes in place into a tensor that "
                    f"shares its memory with another traced tensor (a view or its base); "
                    f"the exported graph would not see the write: use the out-of-place "
                    f"'{op}'")


def _layout_key(t):
    return (t.data_ptr(), tuple(t.shape), t.stride(), t.storage_offset(), t.dtype.name,
            str(t.device))


class _Traced:
    """The grad_fn of the tensors the trace made: they are not leaves (so in-place ops
    on them are allowed, as on any intermediate result) and require grad (so the ops
    that use them are recorded)."""
    __slots__ = ()

    def __repr__(self):
        return "<ember.onnx traced value>"


TRACED = _Traced()


def _np_dtype(dtype):
    import numpy as np
    return np.dtype(dtype.name)


def _onnx_dtype(dtype):
    import numpy as np

    from onnx import helper
    if dtype.name == "bool":
        return helper.np_dtype_to_tensor_dtype(np.dtype(bool))
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype.name))


def _to_numpy(t):
    return t.detach().cpu().numpy().copy()


def _split_args(args, kwargs):
    if isinstance(args, em.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        raise TypeError(f"ember.onnx.export: args must be a tensor or a tuple of "
                        f"arguments, got {type(args).__name__}")
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kw.update(args[-1])
        args = args[:-1]
    return args, kw


def _patch_rnns(model, tracer):
    from ember.nn.modules.rnn import RNNBase
    from ember.onnx._symbolic import rnn_module
    patched = []
    if not isinstance(model, em.nn.Module):
        return patched
    for qual, m in model.named_modules():
        if isinstance(m, RNNBase) and "forward" not in m.__dict__:
            original = m.forward

            def forward(input, hx=None, _m=m, _orig=original, _qual=qual):
                return rnn_module(tracer, _m, _qual, _orig, input, hx)
            object.__setattr__(m, "forward", forward)
            patched.append(m)
    return patched


def run_export(model, args, f, *, kwargs, export_params, verbose, training, input_names,
               output_names, operator_export_type, opset_version, do_constant_folding,
               dynamic_axes, keep_initializers_as_inputs, custom_opsets,
               export_modules_as_functions, autograd_inlining, dynamo, external_data,
               dynamo_only, optimize, artifacts_dir):
    onnx = _need_onnx()
    from ember import nn
    if not isinstance(model, nn.Module) and not callable(model):
        raise TypeError(f"ember.onnx.export: model must be an nn.Module or a callable, got "
                        f"{type(model).__name__}")
    for k, (v, default) in dynamo_only.items():
        if v is not default and v != default:
            raise ValueError(f"ember.onnx.export: {k}= is an option of PyTorch's dynamo "
                             f"exporter, which ember does not have (ember traces the model "
                             f"as torch.onnx.export(..., dynamo=False) does)")
    if f is None:
        raise TypeError("ember.onnx.export: f must be a path or a binary file object (ember "
                        "has no ONNXProgram to return)")
    if operator_export_type not in (OperatorExportTypes.ONNX, 0):
        raise ValueError(f"ember.onnx.export: operator_export_type={operator_export_type!r}: "
                         f"ember exports plain ONNX only (OperatorExportTypes.ONNX)")
    if custom_opsets:
        raise ValueError("ember.onnx.export: custom_opsets: ember exports standard ONNX ops "
                         "only (the ai.onnx domain)")
    if not autograd_inlining:
        raise ValueError("ember.onnx.export: autograd_inlining=False is not supported: the "
                         "ops of an autograd.Function's forward are exported inline")
    if export_modules_as_functions:
        raise ValueError("ember.onnx.export: export_modules_as_functions=True is not "
                         "supported: ember inlines every module")
    try:
        training = TrainingMode(training)
    except ValueError:
        raise ValueError(f"ember.onnx.export: training must be a TrainingMode (EVAL, "
                         f"PRESERVE, TRAINING), got {training!r}") from None
    newest = onnx.defs.onnx_opset_version()
    if opset_version is None:
        opset_version = _DEFAULT_OPSET
    if isinstance(opset_version, bool) or not isinstance(opset_version, int) or \
            not _MIN_OPSET <= opset_version <= newest:
        raise ValueError(f"ember.onnx.export: opset_version must be an int from {_MIN_OPSET} "
                         f"to {newest} (the newest the installed onnx knows), got "
                         f"{opset_version!r}")
    input_names = _check_names("input_names", input_names)
    output_names = _check_names("output_names", output_names)
    args, kw = _split_args(args, kwargs)

    n_tensors = sum(isinstance(a, em.Tensor) for a in list(args) + list(kw.values()))
    if len(input_names) > n_tensors:
        raise ValueError(f"ember.onnx.export: {len(input_names)} input_names for "
                         f"{n_tensors} tensor inputs")

    import numpy as np

    def trace(args, kw):
        return _trace(onnx, model, args, kw, input_names, opset_version, do_constant_folding,
                      export_params, training)
    tracer, graph_inputs, out = trace(args, kw)
    outs = _flatten(out)
    if len(output_names) > len(outs):
        raise ValueError(f"ember.onnx.export: {len(output_names)} output_names for "
                         f"{len(outs)} outputs")
    axes = _check_dynamic_axes(dynamic_axes, set(input_names) | set(output_names) |
                               {n for n, _ in graph_inputs})
    for name, t in graph_inputs:
        for a in axes.get(name, {}):
            if not -t.ndim <= a < t.ndim:
                raise ValueError(f"ember.onnx.export: dynamic_axes[{name!r}] names axis {a} "
                                 f"of a {t.ndim}-d tensor")
    _check_values(tracer, trace, args, kw)
    if any(name in axes for name, _ in graph_inputs):
        _check_dynamic(tracer, trace, args, kw, graph_inputs, axes)
    helper = onnx.helper

    def info(name, t):
        dims = list(t.shape)
        for a, dn in axes.get(name, {}).items():
            if not -len(dims) <= a < len(dims):
                raise ValueError(f"ember.onnx.export: dynamic_axes[{name!r}] names axis {a} "
                                 f"of a {len(dims)}-d tensor")
            dims[a] = dn
        return helper.make_tensor_value_info(name, _onnx_dtype(t.dtype), dims)

    out_infos = []
    for k, t in enumerate(outs):
        name = output_names[k] if k < len(output_names) else f"output_{k}"
        tracer.nodes.append(helper.make_node("Identity", [tracer.output_values[k]], [name],
                                             name=tracer.fresh("nOutput")))
        out_infos.append(info(name, t))
    in_infos = [info(n, t) for n, t in graph_inputs]

    # keep only the initializers some node reads
    read = {i for n in tracer.nodes for i in n.input}
    size = sum(a.nbytes for name, a in tracer.initializers.items() if name in read)
    if size >= _PROTOBUF_LIMIT:
        raise OnnxExporterError(
            f"ember.onnx.export: the initializers hold {size / 2**30:.1f} GiB; a model file "
            f"of 2 GiB or more needs ONNX's external data, which ember does not write "
            f"(export_params=False makes the parameters graph inputs instead)")
    inits = [onnx.numpy_helper.from_array(np.array(a, order="C"), name)
             for name, a in tracer.initializers.items() if name in read]
    if keep_initializers_as_inputs:
        in_infos += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                     for i in inits]
    graph = helper.make_graph(tracer.nodes, type(model).__name__ if isinstance(
        model, nn.Module) else getattr(model, "__name__", "graph"), in_infos, out_infos,
        initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)],
                              producer_name="ember", producer_version=_version())
    proto.ir_version = min(proto.ir_version, _ir_version(onnx, opset_version))
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    _write(proto.SerializeToString(), f)
    return None


def _trace(onnx, model, args, kw, input_names, opset_version, do_constant_folding,
           export_params, training):
    """Run model(*args, **kw) once under a Tracer: (tracer, graph inputs, output)."""
    from ember import nn
    tracer = Tracer(onnx, opset_version, bool(do_constant_folding), bool(export_params))
    modes = []
    flags = []
    if isinstance(model, nn.Module):
        modes = [(m, m.training) for m in model.modules()]
        if training == TrainingMode.EVAL:
            model.eval()
        elif training == TrainingMode.TRAINING:
            model.train()
        seen = set()
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if id(t) not in seen:
                seen.add(id(t))
                tracer.param_names[id(t)] = name
        for p in model.parameters():
            if not p.requires_grad and p.dtype.is_floating_point:
                flags.append(p)
                p.requires_grad_(True)

    # graph inputs: the tensors among args and kwargs, in order
    graph_inputs = []        # (name, tensor)

    def as_input(a):
        if not isinstance(a, em.Tensor):
            return a
        t = a.detach()
        k = len(graph_inputs)
        name = input_names[k] if k < len(input_names) else f"input_{k}"
        graph_inputs.append((name, t))
        tracer.bind(t, name, True)
        t._set_autograd(TRACED, True)
        return t
    targs = tuple(as_input(a) for a in args)
    tkw = {k: as_input(v) for k, v in kw.items()}
    if not export_params and isinstance(model, nn.Module):
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if id(t) in tracer.param_names and id(t) not in tracer.names:
                graph_inputs.append((name, t))
                tracer.bind(t, name, True)

    patched = _patch_rnns(model, tracer)
    had_detach = "detach" in em.Tensor.__dict__

    def detach(self):
        # x.detach() in a trace is the value of x, and the ops on it are recorded
        r = _core.TensorBase.detach(self)
        name = tracer.lookup(self)
        if name is not None and not tracer.suppress:
            tracer.bind(r, name, name in tracer.dyn)
            r._set_autograd(TRACED, True)
        return r
    if not had_detach:
        em.Tensor.detach = detach
    prev = _core.set_recorder(tracer.record)
    prev_grad = _core._set_grad_enabled(True)
    prev_inf = _core._set_inference_mode(False)
    _EXPORTING[0] = True
    try:
        out = model(*targs, **tkw)
    finally:
        _EXPORTING[0] = False
        _core._set_inference_mode(prev_inf)
        _core._set_grad_enabled(prev_grad)
        _core.set_recorder(prev)
        if not had_detach:
            del em.Tensor.detach
        for m in patched:
            object.__delattr__(m, "forward")
        for p in flags:
            p.requires_grad_(False)
        for m, mode in modes:
            m.training = mode
        for t in tracer.keep:
            if t._grad_fn is TRACED:
                t._set_autograd(None, False)
    # the outputs' values (a constant for an output the trace did not see computed)
    tracer.current_op = None
    tracer.output_values = [tracer.value(t) for t in _flatten(out)]
    return tracer, graph_inputs, out


def _grown(t, dims, by):
    """t with each of dims longer by `by` (> 0: its first entries repeated, so indices
    stay valid) or shorter."""
    for a in dims:
        if by > 0:
            t = em.cat([t, t.narrow(a, 0, by)], a)
        else:
            t = t.narrow(a, 0, t.shape[a] + by)
    return t


def _check_dynamic(tracer, trace, args, kw, graph_inputs, axes):
    """Trace again with the dynamic axes one longer (or shorter) and compare the two
    graphs: the Reshape targets are mended where a dim changed, and anything else that
    differs (a slice end, a pooling window, a constant made from a size) is a value the
    trace froze, refused by name."""
    import warnings

    import numpy as np
    by_name = {n: a for n, a in axes.items()}
    k = 0

    def resized(by):
        nonlocal k
        k = 0

        def grow(a):
            nonlocal k
            if not isinstance(a, em.Tensor):
                return a
            name = graph_inputs[k][0]
            k += 1
            dims = [d % a.ndim for d in by_name.get(name, {})]
            if by < 0 and any(a.shape[d] < 2 for d in dims):
                raise ValueError("too small to shrink")
            return _grown(a.detach(), dims, by)
        return tuple(grow(a) for a in args), {n: grow(v) for n, v in kw.items()}

    other = None
    errors = []
    for by in (1, -1):
        try:
            a2, kw2 = resized(by)
            other = trace(a2, kw2)[0]
            break
        except UnsupportedOperatorError:
            raise
        except Exception as e:     # the model refuses that size: try the other
            errors.append(f"{type(e).__name__}: {e}")
    if other is None:
        warnings.warn("ember.onnx.export: could not check the dynamic axes (the model failed "
                      "when they were one longer and one shorter: " + "; ".join(errors) +
                      "); the graph's shapes were traced at the given sizes", stacklevel=3)
        return
    _same_ops(tracer, other, "with other sizes of the dynamic axes")
    # Reshape targets: a dim that changed keeps its place (0) or is the one inferred (-1)
    for (name, in1, out1), (_, in2, out2) in zip(tracer.reshapes, other.reshapes):
        target = []
        for i, (s1, s2) in enumerate(zip(out1, out2)):
            if s1 == s2:
                target.append(s1)
            elif i < len(in1) and in1[i] == s1 and in2[i] == s2:
                target.append(0)
            else:
                target.append(-1)
        if target.count(-1) > 1:
            op = tracer.origin.get(name, "view")
            raise OnnxExporterError(
                f"ember.onnx.export: op '{op}' reshapes {tuple(in1)} to {tuple(out1)}, and "
                f"more than one of the new dims follows the dynamic axes; ember's tracer can "
                f"keep one (mark fewer axes dynamic, or reshape with the dynamic dims in "
                f"place)")
        tracer.initializers[name] = np.array(target, dtype=np.int64)
        other.initializers[name] = tracer.initializers[name]
    _same_graph(tracer, other, "the size of a dynamic axis", "keep that axis static")


def _same_ops(tracer, other, when):
    if [o for o, _ in tracer.op_log] != [o for o, _ in other.op_log]:
        raise OnnxExporterError(
            f"ember.onnx.export: {when} the model runs other ops (Python control flow on "
            f"the data or a size?), so one trace does not describe it")


def _same_graph(tracer, other, what, advice):
    """The two traces built the same graph: same nodes, attributes and initializers
    (what differs is a value the trace froze although it depends on `what`)."""
    import numpy as np
    if len(tracer.nodes) != len(other.nodes):
        raise OnnxExporterError(f"ember.onnx.export: the graph traced with another {what} "
                                f"differs, so one trace does not describe the model")
    for n1, n2 in zip(tracer.nodes, other.nodes):
        if n1.op_type != n2.op_type or \
                [a.SerializeToString() for a in n1.attribute] != \
                [a.SerializeToString() for a in n2.attribute]:
            op = tracer.origin.get(n1.output[0], n1.op_type)
            raise OnnxExporterError(
                f"ember.onnx.export: op '{op}' ({n1.op_type}) has attributes that depend on "
                f"{what}, which the trace freezes; {advice}")
    for name, a1 in tracer.initializers.items():
        a2 = other.initializers.get(name)
        if a2 is None or a1.shape != a2.shape or a1.dtype != a2.dtype or \
                not np.array_equal(a1, a2, equal_nan=a1.dtype.kind == "f"):
            op = tracer.origin.get(name)
            what_uses = f"op '{op}' uses a value" if op else "an output of the model is a value"
            how = (f"shape {a1.shape}, {a2.shape} in the other trace" if a2 is not None and
                   a1.shape != a2.shape else "another value in the other trace")
            raise OnnxExporterError(
                f"ember.onnx.export: {what_uses} that depends on {what} ({how}): "
                f"a tensor the recorder did not see being computed (made inside forward, "
                f"random, or the result of an op ember records for no one, such as argmax or "
                f"sort's indices), a slice bound or a count, which the trace freezes; "
                f"{advice}")


def _permuted(t, rng):
    """t with its elements shuffled (the same values, so indices stay valid)."""
    n = t.numel()
    if n < 2:
        return t
    idx = em.tensor(rng.permutation(n).astype("int64"), device=t.device)
    return t.detach().reshape(-1)[idx].reshape(tuple(t.shape))


def _check_values(tracer, trace, args, kw):
    """Trace again with the inputs' elements shuffled: a value that changes is one the
    trace froze although it depends on the input (refused by name)."""
    import warnings

    import numpy as np
    rng = np.random.default_rng(20240518)

    def shuffle(a):
        return _permuted(a, rng) if isinstance(a, em.Tensor) else a
    try:
        other = trace(tuple(shuffle(a) for a in args), {n: shuffle(v) for n, v in kw.items()})[0]
    except UnsupportedOperatorError:
        raise
    except Exception as e:          # the model refuses shuffled inputs
        warnings.warn(f"ember.onnx.export: could not check that the graph does not freeze "
                      f"values computed from the inputs (the model failed on the inputs' "
                      f"elements shuffled: {type(e).__name__}: {e})", stacklevel=3)
        return
    _same_ops(tracer, other, "on other input values")
    _same_graph(tracer, other, "the input values", "export an op ember records instead")

def _version():
    try:
        from ember.nn._version import __version__
        return __version__
    except ImportError:         # pragma: no cover
        return ""


def _ir_version(onnx, opset):
    """The IR version that goes with the opset (onnxruntime refuses IR versions newer
    than it knows)."""
    table = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11, 24: 11}
    return table.get(opset, onnx.IR_VERSION)


def _write(data, f):
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".onnx-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return
    if isinstance(f, io.TextIOBase) or not hasattr(f, "write"):
        raise TypeError(f"ember.onnx.export: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    f.write(data)
