"""Issue 16 item 20: arguments of the wrong type are rejected at the public entry of
every nn layer (constructor and forward), optimizer, lr scheduler, nn.utils and nn.init
function, with a TypeError (a bad value: ValueError) that names the class or function
and the argument, not `'str' object has no attribute 'shape'` from inside."""
from __future__ import annotations

import inspect
import math
import numbers

import pytest

import ember as em
from ember import nn, optim
from ember.nn import functional as F, init, utils
from ember.optim import lr_scheduler

# values of the wrong type for every checked argument (ints, reals, tuples of ints,
# tensors, modules, iterables, callables)
WRONG = [object(), em.int16, "a"]
# arguments where a string is meaningful (so "a" is a bad value, a ValueError)
STRING_OK = {"padding", "activation"}


def _tel():
    return nn.TransformerEncoderLayer(4, 2, 8)


def _tdl():
    return nn.TransformerDecoderLayer(4, 2, 8)


_CONV = ({"in_channels": 2, "out_channels": 4, "kernel_size": 3},
         ["in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
          "groups"])
_RNN = ({"input_size": 3, "hidden_size": 4}, ["input_size", "hidden_size", "num_layers",
                                              "dropout"])
_CELL = ({"input_size": 3, "hidden_size": 4}, ["input_size", "hidden_size"])
_BN = ({"num_features": 3}, ["num_features", "eps", "momentum"])
_MAXPOOL = ({"kernel_size": 2}, ["kernel_size", "stride", "padding", "dilation"])
_AVGPOOL = ({"kernel_size": 2}, ["kernel_size", "stride", "padding"])
_ADAPTIVE = ({"output_size": 2}, ["output_size"])

# every layer class of ember.nn: (valid constructor arguments, the arguments checked)
LAYERS = {
    "AdaptiveAvgPool1d": _ADAPTIVE, "AdaptiveAvgPool2d": _ADAPTIVE,
    "AdaptiveMaxPool1d": _ADAPTIVE, "AdaptiveMaxPool2d": _ADAPTIVE,
    "AvgPool1d": _AVGPOOL, "AvgPool2d": _AVGPOOL,
    "MaxPool1d": _MAXPOOL, "MaxPool2d": _MAXPOOL,
    "AdaptiveAvgPool3d": _ADAPTIVE, "AdaptiveMaxPool3d": _ADAPTIVE, "AvgPool3d": _AVGPOOL,
    "MaxPool3d": _MAXPOOL, "Conv3d": _CONV,
    "ConvTranspose3d": (_CONV[0], _CONV[1] + ["output_padding"]),
    "Upsample": ({"scale_factor": 2}, ["size", "scale_factor"]),
    "UpsamplingNearest2d": ({"scale_factor": 2}, ["size", "scale_factor"]),
    "UpsamplingBilinear2d": ({"scale_factor": 2}, ["size", "scale_factor"]),
    "BCELoss": ({}, ["weight"]),
    "BCEWithLogitsLoss": ({}, ["weight", "pos_weight"]),
    "BatchNorm1d": _BN, "BatchNorm2d": _BN, "BatchNorm3d": _BN,
    "Bilinear": ({"in1_features": 2, "in2_features": 3, "out_features": 4},
                 ["in1_features", "in2_features", "out_features"]),
    "CELU": ({}, ["alpha"]), "ELU": ({}, ["alpha"]),
    "Conv1d": _CONV, "Conv2d": _CONV,
    "ConvTranspose1d": (_CONV[0], _CONV[1] + ["output_padding"]),
    "ConvTranspose2d": (_CONV[0], _CONV[1] + ["output_padding"]),
    "CrossEntropyLoss": ({}, ["weight", "ignore_index", "label_smoothing"]),
    "Dropout": ({}, ["p"]), "Dropout1d": ({}, ["p"]), "Dropout2d": ({}, ["p"]),
    "Embedding": ({"num_embeddings": 5, "embedding_dim": 3},
                  ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                   "_weight"]),
    "Flatten": ({}, ["start_dim", "end_dim"]),
    "GELU": ({}, []),
    "GLU": ({}, ["dim"]),
    "GRU": _RNN, "LSTM": _RNN, "RNN": _RNN,
    "GRUCell": _CELL, "LSTMCell": _CELL, "RNNCell": _CELL,
    "GroupNorm": ({"num_groups": 2, "num_channels": 4}, ["num_groups", "num_channels", "eps"]),
    "Hardsigmoid": ({}, []), "Hardswish": ({}, []), "Mish": ({}, []), "ReLU": ({}, []),
    "ReLU6": ({}, []), "SELU": ({}, []), "SiLU": ({}, []),
    "LogSigmoid": ({}, []), "Sigmoid": ({}, []), "Softsign": ({}, []), "Tanh": ({}, []),
    "Tanhshrink": ({}, []),
    "Hardtanh": ({}, ["min_val", "max_val"]),
    "HuberLoss": ({}, ["delta"]),
    "KLDivLoss": ({}, []), "L1Loss": ({}, []), "MSELoss": ({}, []),
    "LayerNorm": ({"normalized_shape": 4}, ["normalized_shape", "eps"]),
    "LeakyReLU": ({}, ["negative_slope"]),
    "Linear": ({"in_features": 3, "out_features": 4}, ["in_features", "out_features"]),
    "LogSoftmax": ({}, ["dim"]), "Softmax": ({}, ["dim"]), "Softmin": ({}, ["dim"]),
    "ModuleDict": ({}, ["modules"]), "ModuleList": ({}, ["modules"]),
    "ParameterDict": ({}, ["parameters"]), "ParameterList": ({}, ["values"]),
    "MultiheadAttention": ({"embed_dim": 4, "num_heads": 2},
                           ["embed_dim", "num_heads", "dropout", "kdim", "vdim"]),
    "NLLLoss": ({}, ["weight", "ignore_index"]),
    "SmoothL1Loss": ({}, ["beta"]),
    "Softplus": ({}, ["beta", "threshold"]),
    "Threshold": ({"threshold": 0.1, "value": 0.0}, ["threshold", "value"]),
    "TransformerEncoder": ({"encoder_layer": _tel, "num_layers": 2},
                           ["encoder_layer", "num_layers", "norm"]),
    "TransformerEncoderLayer": ({"d_model": 4, "nhead": 2, "dim_feedforward": 8},
                                ["d_model", "nhead", "dim_feedforward", "dropout",
                                 "activation", "layer_norm_eps"]),
    "TransformerDecoder": ({"decoder_layer": _tdl, "num_layers": 2},
                           ["decoder_layer", "num_layers", "norm"]),
    "TransformerDecoderLayer": ({"d_model": 4, "nhead": 2, "dim_feedforward": 8},
                                ["d_model", "nhead", "dim_feedforward", "dropout",
                                 "activation", "layer_norm_eps"]),
    "Transformer": ({"d_model": 4, "nhead": 2, "num_encoder_layers": 1,
                     "num_decoder_layers": 1, "dim_feedforward": 8},
                    ["d_model", "nhead", "num_encoder_layers", "num_decoder_layers",
                     "dim_feedforward", "dropout", "activation", "custom_encoder",
                     "custom_decoder", "layer_norm_eps"]),
    "InstanceNorm1d": _BN, "InstanceNorm2d": _BN, "InstanceNorm3d": _BN,
    "RMSNorm": ({"normalized_shape": 4}, ["normalized_shape", "eps"]),
    "LocalResponseNorm": ({"size": 2}, ["size", "alpha", "beta", "k"]),
    "PReLU": ({}, ["num_parameters", "init"]),
    "RReLU": ({}, ["lower", "upper"]),
    "Hardshrink": ({}, ["lambd"]), "Softshrink": ({}, ["lambd"]),
    "Softmax2d": ({}, []),
    "PixelShuffle": ({"upscale_factor": 2}, ["upscale_factor"]),
    "PixelUnshuffle": ({"downscale_factor": 2}, ["downscale_factor"]),
    "ChannelShuffle": ({"groups": 2}, ["groups"]),
    "Fold": ({"output_size": 4, "kernel_size": 2},
             ["output_size", "kernel_size", "dilation", "padding", "stride"]),
    "Unfold": ({"kernel_size": 2}, ["kernel_size", "dilation", "padding", "stride"]),
    **{f"{kind}Pad{n}d": ({"padding": 1}, ["padding"])
       for kind in ("Zero", "Reflection", "Replication", "Circular") for n in (1, 2, 3)},
    **{f"ConstantPad{n}d": ({"padding": 1, "value": 0.5}, ["padding", "value"])
       for n in (1, 2, 3)},
    "EmbeddingBag": ({"num_embeddings": 5, "embedding_dim": 3},
                     ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "padding_idx",
                      "_weight"]),
    "CosineSimilarity": ({}, ["dim", "eps"]),
    "PairwiseDistance": ({}, ["p", "eps"]),
    "AlphaDropout": ({}, ["p"]), "FeatureAlphaDropout": ({}, ["p"]), "Dropout3d": ({}, ["p"]),
    "LazyLinear": ({"out_features": 3}, ["out_features"]),
    **{name: ({"out_channels": 4, "kernel_size": 3},
              ["out_channels", "kernel_size", "stride", "padding", "dilation", "groups"])
       for name in ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                    "LazyConvTranspose2d", "LazyConvTranspose3d")},
    **{f"LazyBatchNorm{n}d": ({}, ["eps", "momentum"]) for n in (1, 2, 3)},
    **{f"LazyInstanceNorm{n}d": ({}, ["eps", "momentum"]) for n in (1, 2, 3)},
    "LPPool1d": ({"norm_type": 2, "kernel_size": 2}, ["norm_type", "kernel_size", "stride"]),
    "LPPool2d": ({"norm_type": 2, "kernel_size": 2}, ["norm_type", "kernel_size", "stride"]),
    "MaxUnpool1d": ({"kernel_size": 2}, ["kernel_size", "stride", "padding"]),
    "MaxUnpool2d": ({"kernel_size": 2}, ["kernel_size", "stride", "padding"]),
    "MaxUnpool3d": ({"kernel_size": 2}, ["kernel_size", "stride", "padding"]),
    "CTCLoss": ({}, ["blank"]),
    "PoissonNLLLoss": ({}, ["eps"]),
    "GaussianNLLLoss": ({}, ["eps"]),
    "MarginRankingLoss": ({}, ["margin"]), "HingeEmbeddingLoss": ({}, ["margin"]),
    "CosineEmbeddingLoss": ({}, ["margin"]),
    "TripletMarginLoss": ({}, ["margin", "p", "eps"]),
    "TripletMarginWithDistanceLoss": ({}, ["distance_function", "margin"]),
    "MultiMarginLoss": ({}, ["p", "margin", "weight"]),
    "MultiLabelMarginLoss": ({}, []), "MultiLabelSoftMarginLoss": ({}, ["weight"]),
    "SoftMarginLoss": ({}, []),
    "Unflatten": ({"dim": 1, "unflattened_size": (2, 2)}, ["dim", "unflattened_size"]),
}
# layers that take anything (or nothing) as their forward's input
ANY_INPUT = {"Identity", "Sequential", "ModuleDict", "ModuleList", "ParameterDict",
             "ParameterList"}


def _valid(name):
    return {k: v() if callable(v) else v for k, v in LAYERS[name][0].items()}


def _layer_classes():
    return sorted(n for n in dir(nn) if inspect.isclass(getattr(nn, n)) and
                  issubclass(getattr(nn, n), nn.Module) and n not in ("Module", "RNNBase"))


def test_issue16_item20_every_layer_class_is_enumerated():
    # a new layer must say here which of its arguments are checked
    assert set(_layer_classes()) == set(LAYERS) | {"Identity", "Sequential"}


@pytest.mark.parametrize("name,arg,bad", [
    (n, a, b) for n in sorted(LAYERS) for a in LAYERS[n][1] for b in WRONG
    if not (a in STRING_OK and isinstance(b, str))])
def test_issue16_item20_layer_constructor_wrong_type(name, arg, bad):
    kwargs = _valid(name)
    kwargs[arg] = bad
    with pytest.raises(TypeError) as e:
        getattr(nn, name)(**kwargs)
    assert name in str(e.value) and arg in str(e.value), str(e.value)


# sizes and counts below their minimum: a ValueError naming the layer and the argument
@pytest.mark.parametrize("name,arg,bad", [
    ("Linear", "in_features", -1), ("Bilinear", "out_features", -2),
    ("Conv2d", "in_channels", -1), ("Conv1d", "groups", 0), ("ConvTranspose2d", "kernel_size", -1),
    ("Embedding", "num_embeddings", -1), ("BatchNorm2d", "num_features", -3),
    ("GroupNorm", "num_groups", 0), ("LayerNorm", "normalized_shape", (2, -1)),
    ("LSTM", "hidden_size", 0), ("GRU", "num_layers", 0), ("RNNCell", "hidden_size", 0),
    ("MultiheadAttention", "num_heads", 0), ("MultiheadAttention", "dropout", 1.5),
    ("TransformerEncoderLayer", "dim_feedforward", -1), ("TransformerEncoder", "num_layers", -1),
    ("Dropout", "p", 1.5), ("Dropout2d", "p", -0.1), ("Dropout1d", "p", math.nan),
    ("Conv1d", "kernel_size", (3, 3)), ("MaxPool2d", "kernel_size", (2, 2, 2)),
])
def test_issue16_item20_layer_constructor_bad_value(name, arg, bad):
    kwargs = _valid(name)
    kwargs[arg] = bad
    with pytest.raises(ValueError) as e:
        getattr(nn, name)(**kwargs)
    msg = str(e.value)
    assert name in msg and (arg in msg or "probability" in msg), msg


def test_issue16_item20_layer_sizes_past_int64():
    # the fuzzer's BatchNorm1d(2**63): an OverflowError that names the layer
    for name, arg in (("BatchNorm1d", "num_features"), ("Linear", "out_features")):
        kwargs = _valid(name)
        kwargs[arg] = 2 ** 63
        with pytest.raises(OverflowError, match=f"{name}: {arg}="):
            getattr(nn, name)(**kwargs)


def test_issue16_item20_layer_constructor_normalises_ints():
    # NumPy ints and tuples are accepted as PyTorch accepts them, stored as Python ints
    np = pytest.importorskip("numpy")
    conv = nn.Conv2d(np.int64(2), 4, [3, np.int32(2)], stride=np.int64(2))
    assert conv.kernel_size == (3, 2) and conv.stride == (2, 2)
    assert type(conv.in_channels) is int
    assert nn.LayerNorm([2, 3]).normalized_shape == (2, 3)
    assert nn.MaxPool2d(3).kernel_size == 3        # pooling keeps what it was given


@pytest.mark.parametrize("name", sorted(set(LAYERS) - ANY_INPUT))
@pytest.mark.parametrize("bad", [5, "a", (1, 2)])
def test_issue16_item20_layer_forward_non_tensor(name, bad):
    m = getattr(nn, name)(**_valid(name))
    first = list(inspect.signature(type(m).forward).parameters)[1]
    with pytest.raises(TypeError) as e:
        m(bad)
    msg = str(e.value)
    assert name in msg and f"'{first}'" in msg, msg


def test_issue16_item20_layer_forward_other_tensor_arguments():
    x = em.ones(2, 3)
    with pytest.raises(TypeError, match="MSELoss: argument 'target' must be a Tensor"):
        nn.MSELoss()(x, 1.0)
    with pytest.raises(TypeError, match="MultiheadAttention: argument 'key' must be a Tensor"):
        nn.MultiheadAttention(4, 2)(em.ones(2, 1, 4), 0.5, em.ones(2, 1, 4))
    with pytest.raises(TypeError, match="Bilinear: argument 'input2' must be a Tensor"):
        nn.Bilinear(2, 3, 4)(em.ones(1, 2), [1, 2, 3])
    # the recurrent layers' initial state
    with pytest.raises(TypeError, match="GRU: hx must be a Tensor"):
        nn.GRU(3, 4)(em.ones(2, 1, 3), 5)
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\)"):
        nn.LSTM(3, 4)(em.ones(2, 1, 3), em.zeros(1, 1, 4))
    with pytest.raises(TypeError, match=r"LSTM: hx\[1\] must be a Tensor"):
        nn.LSTM(3, 4)(em.ones(2, 1, 3), (em.zeros(1, 1, 4), 0))
    with pytest.raises(TypeError, match="RNNCell: hx must be a Tensor"):
        nn.RNNCell(3, 4)(em.ones(3), "a")
    with pytest.raises(TypeError, match=r"LSTMCell: hx must be a tuple"):
        nn.LSTMCell(3, 4)(em.ones(3), 1.0)
    # layers that take anything keep doing so
    assert nn.Identity()(5) == 5
    assert nn.Sequential(nn.Identity())("a") == "a"


def test_issue16_item20_containers():
    with pytest.raises(TypeError, match="Sequential: modules must be an iterable of Modules, "
                                        "but item 1 is int"):
        nn.Sequential(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="ModuleList: modules must be an iterable of Modules, "
                                        "but item 0 is str"):
        nn.ModuleList(["a"])
    with pytest.raises(TypeError, match="ModuleDict: modules element #0 should be a key/value"):
        nn.ModuleDict([nn.ReLU()])
    with pytest.raises(ValueError, match="ModuleDict: modules element #0 has length 3"):
        nn.ModuleDict([("a", nn.ReLU(), 1)])
    with pytest.raises(TypeError, match="ParameterList: values must be an iterable of Tensors"):
        nn.ParameterList([1.0])


def test_issue16_item20_rnncell_nonlinearity():
    # was silently tanh for anything but 'relu'
    with pytest.raises(ValueError, match="RNNCell: unknown nonlinearity 'sigmoid'"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")


# ------------------------------------------------------------------------ optimizers

def _optimizers():
    return sorted(n for n in dir(optim) if inspect.isclass(getattr(optim, n)) and
                  issubclass(getattr(optim, n), optim.Optimizer) and n != "Optimizer")


def _real_defaults(fn, skip=()):
    """The parameters of fn whose default is a real number (not a flag)."""
    return [p.name for p in inspect.signature(fn).parameters.values()
            if isinstance(p.default, numbers.Real) and not isinstance(p.default, bool)
            and p.name not in skip]


def _param():
    return em.zeros(3, requires_grad=True)


def test_issue16_item20_every_optimizer_is_enumerated():
    assert _optimizers() == ["ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS",
                             "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"]


@pytest.mark.parametrize("name", _optimizers())
@pytest.mark.parametrize("bad", [5, None, slice(None), 1.5])
def test_issue16_item20_optimizer_params_not_iterable(name, bad):
    with pytest.raises(TypeError) as e:
        getattr(optim, name)(bad)
    msg = str(e.value)
    assert name in msg and "params argument given to the optimizer should be an iterable " \
        "of Tensors or dicts" in msg, msg


@pytest.mark.parametrize("name", _optimizers())
def test_issue16_item20_optimizer_param_not_tensor(name):
    with pytest.raises(TypeError, match=f"{name}: optimizer can only optimize Tensors, but one "
                                        f"of the params is int"):
        getattr(optim, name)([_param(), 3])


@pytest.mark.parametrize("name,arg,bad", [
    (n, a, b) for n in _optimizers() for a in _real_defaults(getattr(optim, n).__init__)
    for b in WRONG + [(1,)]])
def test_issue16_item20_optimizer_hyperparameter_wrong_type(name, arg, bad):
    with pytest.raises(TypeError) as e:
        getattr(optim, name)([_param()], **{arg: bad})
    msg = str(e.value)
    assert name in msg and arg in msg, msg


@pytest.mark.parametrize("name", _optimizers())
def test_issue16_item20_optimizer_lr(name):
    cls = getattr(optim, name)
    with pytest.raises(TypeError, match=f"{name}: lr must be a float or a Tensor, got DType"):
        cls([_param()], lr=em.int16)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):    # PyTorch's
        cls([_param()], lr=-1)
    with pytest.raises(ValueError, match=f"{name}: Tensor lr must be 1-element"):
        cls([_param()], lr=em.tensor([0.1, 0.2]))
    p = _param()                     # a one-element Tensor lr works, as in PyTorch
    opt = cls([p], lr=em.tensor(0.1))
    p.grad = em.ones(3)
    if name == "LBFGS":              # its step needs a closure (PyTorch's signature)
        def closure():
            opt.zero_grad()
            loss = (p * p).sum() - p.sum()
            loss.backward()
            return loss
        opt.step(closure)
    else:
        opt.step()
    assert p.tolist() != [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("bad", [0.9, (0.9,), "ab", ((0.9, 0.99), "a")])
def test_issue16_item20_optimizer_betas(name, bad):
    with pytest.raises(TypeError) as e:
        getattr(optim, name)([_param()], betas=bad)
    assert name in str(e.value) and "betas" in str(e.value), str(e.value)


# ------------------------------------------------------------------------ schedulers

def _schedulers():
    return sorted(n for n in dir(lr_scheduler) if inspect.isclass(getattr(lr_scheduler, n))
                  and n.endswith(("LR", "Plateau")) and n != "LRScheduler")


# SequentialLR's schedulers belong to an optimizer of their own (the type checks come
# before the check that they share the test's)
_SEQ_OPT = optim.SGD([em.zeros(3, requires_grad=True)], lr=0.1)
# required arguments of each scheduler, valid
SCHEDULERS = {
    "LambdaLR": {"lr_lambda": lambda e: 0.5 ** e}, "StepLR": {"step_size": 2},
    "MultiStepLR": {"milestones": [1, 3]}, "LinearLR": {}, "ExponentialLR": {"gamma": 0.9},
    "CosineAnnealingLR": {"T_max": 5}, "OneCycleLR": {"max_lr": 0.5, "total_steps": 10},
    "ReduceLROnPlateau": {}, "MultiplicativeLR": {"lr_lambda": lambda e: 0.9},
    "ConstantLR": {}, "PolynomialLR": {}, "CyclicLR": {"base_lr": 0.01, "max_lr": 0.1},
    "SequentialLR": {"schedulers": [lr_scheduler.ConstantLR(_SEQ_OPT),
                                    lr_scheduler.ExponentialLR(_SEQ_OPT, 0.9)],
                     "milestones": [2]},
}
# OneCycleLR's pct_start and total_steps: PyTorch itself raises ValueError for a
# non-float, a non-int (test_issue16_item20_onecyclelr_counts)
NOT_TYPE_CHECKED = {"pct_start", "total_steps"}
# arguments that take one value per param group: (1,) is a valid list of one
PER_GROUP = {"milestones", "max_lr", "base_momentum", "max_momentum", "min_lr", "base_lr"}


def _sgd():
    return optim.SGD([_param()], lr=0.1, momentum=0.9)


def test_issue16_item20_every_scheduler_is_enumerated():
    assert _schedulers() == sorted(SCHEDULERS)


@pytest.mark.parametrize("name,arg,bad", [
    (n, a, b) for n in sorted(SCHEDULERS)
    for a in [a for a in SCHEDULERS[n] if a not in NOT_TYPE_CHECKED] +
    _real_defaults(getattr(lr_scheduler, n).__init__, NOT_TYPE_CHECKED)
    for b in WRONG + [(1,)] if not (a in PER_GROUP and b == (1,))])
def test_issue16_item20_scheduler_wrong_type(name, arg, bad):
    kwargs = dict(SCHEDULERS[name])
    kwargs[arg] = bad
    with pytest.raises(TypeError) as e:
        getattr(lr_scheduler, name)(_sgd(), **kwargs)
    msg = str(e.value)
    assert name in msg and arg in msg, msg


@pytest.mark.parametrize("kwargs,arg", [
    ({"total_steps": "a"}, "total_steps"), ({"total_steps": 0}, "total_steps"),
    ({"epochs": 2.5, "steps_per_epoch": 3}, "epochs"),
    ({"epochs": 2, "steps_per_epoch": object()}, "steps_per_epoch"),
    ({"total_steps": 5, "pct_start": 1}, "pct_start"),
])
def test_issue16_item20_onecyclelr_counts(kwargs, arg):
    with pytest.raises(ValueError, match=f"OneCycleLR: Expected .*{arg}"):
        lr_scheduler.OneCycleLR(_sgd(), 0.5, **kwargs)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_issue16_item20_scheduler_not_an_optimizer(name):
    with pytest.raises(TypeError, match=f"{name}: list is not an Optimizer"):
        getattr(lr_scheduler, name)([_param()], **SCHEDULERS[name])


@pytest.mark.parametrize("name,kwargs", [
    ("StepLR", {"step_size": 0}), ("CosineAnnealingLR", {"T_max": 0}),
    ("CosineAnnealingLR", {"T_max": -1.0}), ("ReduceLROnPlateau", {"patience": -1}),
    ("MultiStepLR", {"milestones": [1, 2], "last_epoch": 2 ** 64}),
])
def test_issue16_item20_scheduler_bad_value(name, kwargs):
    kwargs = {**SCHEDULERS[name], **kwargs}
    with pytest.raises((ValueError, OverflowError), match=name):
        getattr(lr_scheduler, name)(_sgd(), **kwargs)


def test_issue16_item20_scheduler_per_group_values():
    opt = optim.SGD([{"params": [_param()]}, {"params": [_param()]}], lr=0.1)
    with pytest.raises(TypeError, match=r"LambdaLR: lr_lambda\[1\] must be callable"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0, "sum"])
    with pytest.raises(TypeError, match=r"ReduceLROnPlateau: min_lr\[0\] must be a real"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=["a", 0.0])
    with pytest.raises(TypeError, match=r"OneCycleLR: max_lr\[1\] must be a real"):
        lr_scheduler.OneCycleLR(opt, max_lr=[0.1, None], total_steps=5)
    # T_max may be a float, as PyTorch allows
    s = lr_scheduler.CosineAnnealingLR(opt, T_max=2.5)
    opt.step()
    s.step()
    assert 0 < s.get_last_lr()[0] < 0.1


# ------------------------------------------------------------------------ nn.utils

UTILS = {   # function: (valid arguments, the tensor-list argument)
    "clip_grad_norm_": ({"max_norm": 1.0}, "parameters"),
    "clip_grad_norm": ({"max_norm": 1.0}, "parameters"),     # deprecated: FutureWarning
    "clip_grad_value_": ({"clip_value": 1.0}, "parameters"),
    "clip_grads_with_norm_": ({"max_norm": 1.0, "total_norm": em.tensor(2.0)}, "parameters"),
    "get_total_norm": ({}, "tensors"),
    "parameters_to_vector": ({}, "parameters"),
    "vector_to_parameters": ({"vec": em.zeros(3)}, "parameters"),
}


# the functions of nn.utils that take modules or single tensors: (valid arguments,
# the arguments checked)
_BN = nn.BatchNorm2d(3).eval()
MODULE_UTILS = {
    "weight_norm": ({"module": nn.Linear(2, 3)}, ["module", "name", "dim"]),
    "remove_weight_norm": ({"module": nn.Linear(2, 3)}, ["module", "name"]),
    "spectral_norm": ({"module": nn.Linear(2, 3)},
                      ["module", "name", "n_power_iterations", "eps", "dim"]),
    "remove_spectral_norm": ({"module": nn.Linear(2, 3)}, ["module", "name"]),
    "fuse_conv_bn_eval": ({"conv": nn.Conv2d(2, 3, 1).eval(), "bn": _BN},
                          ["conv", "bn", "transpose"]),
    "fuse_linear_bn_eval": ({"linear": nn.Linear(2, 3).eval(), "bn": _BN}, ["linear", "bn"]),
    "fuse_conv_bn_weights": (
        {"conv_w": em.ones(3, 2, 1, 1), "conv_b": None, "bn_rm": em.zeros(3),
         "bn_rv": em.ones(3), "bn_eps": 1e-5, "bn_w": None, "bn_b": None},
        ["conv_w", "conv_b", "bn_rm", "bn_rv", "bn_eps", "bn_w", "bn_b", "transpose"]),
    "fuse_linear_bn_weights": (
        {"linear_w": em.ones(3, 2), "linear_b": None, "bn_rm": em.zeros(3),
         "bn_rv": em.ones(3), "bn_eps": 1e-5, "bn_w": None, "bn_b": None},
        ["linear_w", "linear_b", "bn_rm", "bn_rv", "bn_eps", "bn_w", "bn_b"]),
}


def test_issue16_item20_every_nn_utils_function_is_enumerated():
    names = {n for n in dir(utils) if not n.startswith("_") and
             inspect.isfunction(getattr(utils, n))}
    assert names == set(UTILS) | set(MODULE_UTILS)


@pytest.mark.parametrize("name,arg", [(n, a) for n in sorted(MODULE_UTILS)
                                      for a in MODULE_UTILS[n][1]])
@pytest.mark.parametrize("bad", [object(), em.int16, (1.0,)])
def test_issue18_nn_utils_module_functions_wrong_type(name, arg, bad):
    kwargs = {**MODULE_UTILS[name][0], arg: bad}
    with pytest.raises(TypeError) as e:
        getattr(utils, name)(**kwargs)
    assert name in str(e.value) and arg in str(e.value), str(e.value)


@pytest.mark.parametrize("name", sorted(UTILS))
@pytest.mark.parametrize("bad", [None, 1.5, slice(None), "ab", [_param(), 3]])
def test_issue16_item20_nn_utils_tensors_wrong_type(name, bad):
    kwargs, arg = UTILS[name]
    with pytest.raises(TypeError) as e:
        getattr(utils, name)(**{arg: bad}, **kwargs)
    msg = str(e.value)
    assert name in msg and arg in msg and "a Tensor or an iterable of Tensors" in msg, msg


@pytest.mark.parametrize("name,arg", [
    (n, a) for n in sorted(UTILS) for a in list(UTILS[n][0]) + _real_defaults(getattr(utils, n))
    if a != "vec"])
@pytest.mark.parametrize("bad", [object(), em.int16, (1.0,)])
def test_issue16_item20_nn_utils_numbers_wrong_type(name, arg, bad):
    p = _param()
    p.grad = em.ones(3)
    kwargs = {**UTILS[name][0], arg: bad}
    with pytest.raises(TypeError) as e:
        getattr(utils, name)(**{UTILS[name][1]: [p]}, **kwargs)
    assert name in str(e.value) and arg in str(e.value), str(e.value)


def test_issue16_item20_nn_utils_accepts_what_pytorch_does():
    p = _param()
    p.grad = em.full((3,), 4.0)
    # a single tensor, a generator, None gradients in get_total_norm, 'inf' as a string
    assert utils.get_total_norm((g for g in [p.grad, None]), 1).item() == 12.0
    assert utils.clip_grad_norm_(p, 1.0, norm_type="inf").item() == 4.0
    assert utils.parameters_to_vector(iter([p])).shape == (3,)
    with pytest.raises(ValueError, match="clip_grad_norm_: norm_type must be a real number or "
                                         "'inf', got 'cpu'"):
        utils.clip_grad_norm_(p, 1.0, norm_type="cpu")
    with pytest.raises(TypeError, match="vector_to_parameters: expected ember.Tensor, but got: "
                                        "list"):
        utils.vector_to_parameters([1.0], [p])


# ------------------------------------------------------------------------ nn.init

def _init_functions():
    return sorted(n for n in init.__all__ if n != "calculate_gain")


def test_issue16_item20_init_numbers_enumerated():
    cases = [(n, a) for n in _init_functions() for a in _real_defaults(getattr(init, n))]
    assert ("trunc_normal_", "b") in cases and ("xavier_uniform_", "gain") in cases


@pytest.mark.parametrize("name,arg", [
    (n, a) for n in _init_functions() for a in _real_defaults(getattr(init, n))] +
    [("constant_", "val")])
@pytest.mark.parametrize("bad", ["a", object(), (1.0,), em.float32])
def test_issue16_item20_init_wrong_type(name, arg, bad):
    kwargs = {"val": 0.5} if name == "constant_" else {"sparsity": 0.5} \
        if name == "sparse_" else {}
    kwargs[arg] = bad
    with pytest.raises(TypeError) as e:
        getattr(init, name)(em.empty(3, 4), **kwargs)
    assert name in str(e.value) and arg in str(e.value), str(e.value)


@pytest.mark.parametrize("name", ["xavier_uniform_", "xavier_normal_", "orthogonal_",
                                  "kaiming_uniform_"])
@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (0, 2, 2)])
def test_issue16_item20_init_zero_elements(name, shape):
    # was ZeroDivisionError; nothing to fill is a no-op, as PyTorch's orthogonal_
    t = em.empty(shape)
    assert getattr(init, name)(t) is t


# ------------------------------------------------------------------------ functional

@pytest.mark.parametrize("fn,args,kwargs,arg", [
    (F.leaky_relu, (), {"negative_slope": slice(None)}, "negative_slope"),
    (F.elu, (), {"alpha": em.int16}, "alpha"),
    (F.celu, (), {"alpha": object()}, "alpha"),
    (F.softplus, (), {"beta": "a"}, "beta"),
    (F.softplus, (), {"threshold": object()}, "threshold"),
    (F.hardtanh, (), {"min_val": em.device("cpu")}, "min_val"),
    (F.threshold, (None, 0.0), {}, "threshold"),
    (F.threshold, (0.5, Ellipsis), {}, "value"),
    (F.dropout, (), {"p": "a"}, "p"),
    (F.dropout1d, (), {"p": [1]}, "p"),
    (F.dropout2d, (), {"p": (0.5,)}, "p"),
    (F.glu, (), {"dim": "a"}, "dim"),
    (F.hardshrink, (), {"lambd": "a"}, "lambd"),
    (F.ctc_loss, (em.ones(2, dtype=em.int64), [1], [1]), {"blank": "a"}, "blank"),
    (F.poisson_nll_loss, (em.ones(2, 4),), {"eps": "a"}, "eps"),
    (F.gaussian_nll_loss, (em.ones(2, 4), "a"), {}, "var"),
    (F.margin_ranking_loss, (em.ones(2, 4), em.ones(2, 4)), {"margin": "a"}, "margin"),
    (F.hinge_embedding_loss, (em.ones(2, 4),), {"margin": object()}, "margin"),
    (F.cosine_embedding_loss, (em.ones(2, 4), em.ones(2)), {"margin": "a"}, "margin"),
    (F.triplet_margin_loss, (em.ones(2, 4), em.ones(2, 4)), {"p": "a"}, "p"),
    (F.multi_margin_loss, (em.ones(2, dtype=em.int64),), {"margin": "a"}, "margin"),
    (F.soft_margin_loss, ("a",), {}, "target"),
    (F.cosine_similarity, (em.ones(2, 4),), {"dim": "a"}, "dim"),
    (F.pairwise_distance, (em.ones(2, 4),), {"eps": object()}, "eps"),
    (F.alpha_dropout, (), {"p": "a"}, "p"),
    (F.feature_alpha_dropout, (), {"p": "a"}, "p"),
    (F.dropout3d, (), {"p": "a"}, "p"),
    (F.lp_pool1d, ("a", 2), {}, "norm_type"),
    (F.max_unpool2d, ("a", 2), {}, "indices"),
    (F.embedding_bag, (em.ones(3, 2),), {"padding_idx": "a"}, "padding_idx"),
    (F.pixel_shuffle, ("a",), {}, "upscale_factor"),
    (F.pixel_unshuffle, (1.5,), {}, "downscale_factor"),
    (F.channel_shuffle, (None,), {}, "groups"),
    (F.unfold, ("a",), {}, "kernel_size"),
    (F.fold, (4, object()), {}, "kernel_size"),
    (F.softshrink, (), {"lambd": object()}, "lambd"),
    (F.rrelu, (), {"lower": "a"}, "lower"),
    (F.prelu, (0.25,), {}, "weight"),
    (F.rms_norm, ("a",), {}, "normalized_shape"),
    (F.local_response_norm, (2.5,), {}, "size"),
    (F.softmin, (), {"dim": "reflect"}, "dim"),
    (F.normalize, (), {"dim": slice(0, 1)}, "dim"),
    (F.group_norm, (object(),), {}, "num_groups"),
    (F.huber_loss, (em.ones(2, 4),), {"delta": em.int16}, "delta"),
    (F.smooth_l1_loss, (em.ones(2, 4),), {"beta": "a"}, "beta"),
    (F.pad, (1,), {}, "pad"),
    (F.pad, (("a", 1),), {}, "pad"),
    (F.scaled_dot_product_attention, (em.ones(2, 4), 1.5), {}, "value"),
])
def test_issue16_item20_functional_wrong_type(fn, args, kwargs, arg):
    with pytest.raises(TypeError) as e:
        fn(em.ones(2, 4), *args, **kwargs)
    msg = str(e.value)
    assert fn.__name__ in msg and arg in msg, msg


def test_issue16_item20_functional_bad_shapes():
    # were IndexError: tuple index out of range / ValueError: not enough values to unpack
    with pytest.raises(ValueError, match="instance_norm: expected input of at least 2 dims"):
        F.instance_norm(em.ones(4))
    with pytest.raises(ValueError, match=r"linear: weight must be 1-D or 2-D, got shape \(\)"):
        F.linear(em.ones(2, 3), em.tensor(1.0))
    with pytest.raises(ValueError, match="glu: halving dimension must be even"):
        F.glu(em.ones(2, 3))
    with pytest.raises(IndexError, match=r"glu: dim -1 is out of range for an input of shape"):
        F.glu(em.tensor(1.0))
    with pytest.raises(ValueError, match="Bilinear"):
        nn.Bilinear(2, 3, 4)(em.tensor(1.0), em.ones(3))
    assert F.glu(em.ones(2, 4)).shape == (2, 2)
