"""ember.onnx: export a Module to an ONNX file, as ``torch.onnx.export`` does.

``export(model, args, f, input_names=..., output_names=..., dynamic_axes=...,
opset_version=...)`` runs the model once on ``args`` with a tracing recorder in place of
autograd's (``ember._C.core.set_recorder``): every op ember records becomes one or a few
ONNX nodes (the table in ``ember.onnx._symbolic``), parameters and buffers become
initializers named as in ``state_dict()``, tensors made inside forward become constants.
RNN, LSTM and GRU modules are exported whole, as ONNX RNN/LSTM/GRU nodes; everything
else (attention included) as the primitives it runs. Writing the file needs the ``onnx``
package: ``pip install ember-nn[onnx]``. This is PyTorch's TorchScript-style
(``dynamo=False``) exporter: the graph is the trace of one run, so Python control flow
is frozen at the branch that run took.
"""
from __future__ import annotations

import enum

__all__ = ["export", "is_in_onnx_export", "TrainingMode", "OperatorExportTypes",
           "UnsupportedOperatorError", "OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    """An export that cannot be done (torch.onnx.errors.OnnxExporterError)."""


class UnsupportedOperatorError(OnnxExporterError):
    """The model ran an op that has no ONNX translation; the message names the op."""


class TrainingMode(enum.IntEnum):
    """torch.onnx.TrainingMode: EVAL exports the model in eval mode (the default),
    PRESERVE in the mode it is in, TRAINING in training mode."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """torch.onnx.OperatorExportTypes; ember exports plain ONNX only."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


_EXPORTING = [False]


def is_in_onnx_export():
    """True while ember.onnx.export is tracing a model."""
    return _EXPORTING[0]


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=None,
           training=TrainingMode.EVAL, input_names=None, output_names=None,
           operator_export_type=OperatorExportTypes.ONNX, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=False,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           dynamo=False, external_data=True, dynamic_shapes=None,
           custom_translation_table=None, report=False, optimize=True, verify=False,
           profile=False, dump_exported_program=False, artifacts_dir=".", fallback=False):
    """Trace ``model(*args, **kwargs)`` once and write the ONNX graph to ``f``.

    model: an ``nn.Module`` (or a function of tensors). args: a tensor or a tuple of
    arguments (a trailing dict is taken as keyword arguments, as PyTorch does); tensors
    become graph inputs named by ``input_names``, other values are constants of the
    trace. f: a path (written atomically: a temporary file renamed over it) or a binary
    file object. output_names: names of the flattened outputs. dynamic_axes:
    ``{name: {axis: "dim_name"}}`` or ``{name: [axis, ...]}`` for inputs and outputs.
    opset_version: 17 (the default) to the newest the installed ``onnx`` knows.
    export_params=False makes parameters graph inputs instead of initializers;
    keep_initializers_as_inputs also lists the initializers as inputs;
    do_constant_folding computes ops on parameters alone (a weight's transpose) at
    export time; training: ``TrainingMode`` (EVAL switches the model to eval mode for
    the trace and back after). verbose prints the graph.

    The model runs once more on the inputs' elements shuffled, and with dynamic_axes
    once more with those axes one longer (or shorter): a value the trace froze although
    it depends on the input (the result of an op nobody records, such as sort's indices;
    control flow on the data; with dynamic_axes a slice bound, a count or a tensor made
    from a size) makes the graphs differ and raises OnnxExporterError naming the op;
    Reshape targets follow the dynamic dims. If the model cannot run on those inputs, a
    UserWarning says the check was not done.

    dynamo: ember has one exporter, this tracer, whichever value is given; the options
    only dynamo has (dynamic_shapes, custom_translation_table, report, verify,
    profile, dump_exported_program, fallback) and operator_export_type other than ONNX,
    custom_opsets, export_modules_as_functions, autograd_inlining=False raise ValueError.
    optimize, external_data and artifacts_dir are options of the dynamo exporter that
    PyTorch's dynamo=False exporter ignores, and so does ember's (it writes one file and
    refuses models of 2 GiB or more, which would need external data). An op with no ONNX
    translation raises UnsupportedOperatorError naming it. Returns None.
    """
    from ember.onnx._export import run_export
    return run_export(
        model, args, f, kwargs=kwargs, export_params=export_params, verbose=verbose,
        training=training, input_names=input_names, output_names=output_names,
        operator_export_type=operator_export_type, opset_version=opset_version,
        do_constant_folding=do_constant_folding, dynamic_axes=dynamic_axes,
        keep_initializers_as_inputs=keep_initializers_as_inputs, custom_opsets=custom_opsets,
        export_modules_as_functions=export_modules_as_functions,
        autograd_inlining=autograd_inlining, dynamo=dynamo, external_data=external_data,
        dynamo_only={"dynamic_shapes": (dynamic_shapes, None),
                     "custom_translation_table": (custom_translation_table, None),
                     "report": (report, False), "verify": (verify, False),
                     "profile": (profile, False),
                     "dump_exported_program": (dump_exported_program, False),
                     "fallback": (fallback, False)},
        optimize=optimize, artifacts_dir=artifacts_dir)
