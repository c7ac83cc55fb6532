"""Where PyTorch defines each torch.nn class: ``torch.nn.modules.<submodule>.<Class>``.

PyTorch code imports classes from those submodules (``from torch.nn.modules.batchnorm
import _BatchNorm``, ``nn.modules.activation.MultiheadAttention``, ...). ember groups
its classes differently (BatchNorm lives in normalization.py, MultiheadAttention in
transformer.py, Flatten in linear.py), so:

* the submodules PyTorch has and ember has no file for (batchnorm, flatten,
  instancenorm, padding, pixelshuffle, upsampling, distance, fold, channelshuffle)
  are thin modules re-exporting ember's classes (``reexport``);
* the submodules both have get the classes PyTorch puts there that ember defines in
  another file (``complete``, run when ember.nn is imported).

The table lists PyTorch's classes; a class ember does not have (yet) is skipped, and
one added later anywhere in ember.nn.modules appears at its PyTorch path with no
change here.
"""
from __future__ import annotations

import sys

TORCH_PATHS = {
    "activation": ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid",
                   "Hardsigmoid", "Tanh", "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU",
                   "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
                   "Softshrink", "MultiheadAttention", "PReLU", "Softsign", "Tanhshrink",
                   "Softmin", "Softmax", "Softmax2d", "LogSoftmax"],
    "adaptive": ["AdaptiveLogSoftmaxWithLoss"],
    "batchnorm": ["_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                  "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"],
    "channelshuffle": ["ChannelShuffle"],
    "container": ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
                  "ParameterDict"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
             "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "_ConvNd"],
    "distance": ["PairwiseDistance", "CosineSimilarity"],
    "dropout": ["_DropoutNd", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                "AlphaDropout", "FeatureAlphaDropout"],
    "flatten": ["Flatten", "Unflatten"],
    "fold": ["Fold", "Unfold"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                     "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"],
    "linear": ["Identity", "Linear", "NonDynamicallyQuantizableLinear", "Bilinear",
               "LazyLinear"],
    "loss": ["_Loss", "_WeightedLoss", "L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss",
             "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss",
             "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss",
             "SoftMarginLoss", "CrossEntropyLoss", "MultiLabelSoftMarginLoss",
             "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss",
             "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss"],
    "module": ["Module"],
    "normalization": ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm",
                      "RMSNorm"],
    "padding": ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
                "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
                "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
                "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "pooling": ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
                "MaxUnpool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "FractionalMaxPool2d",
                "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
                "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
                "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"],
    "rnn": ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "transformer": ["TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                    "TransformerDecoderLayer", "Transformer"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
}

# the thin re-export modules of this folder (PyTorch's files ember has no file for)
ALIAS_MODULES = ("batchnorm", "channelshuffle", "distance", "flatten", "fold",
                 "instancenorm", "padding", "pixelshuffle", "upsampling")

_PREFIX = "ember.nn.modules."


def find(name):
    """ember's class `name` (PyTorch's torch.nn.modules class name), or None: from the
    ember.nn.modules namespace, else from any loaded ember.nn.modules submodule that
    defines it (the private bases, _BatchNorm, _Loss, ...)."""
    pkg = sys.modules["ember.nn.modules"]
    obj = getattr(pkg, name, None)
    if isinstance(obj, type):
        return obj
    for modname, mod in list(sys.modules.items()):
        if modname.startswith(_PREFIX) and mod is not None:
            obj = mod.__dict__.get(name)
            if isinstance(obj, type) and obj.__module__.startswith("ember.nn"):
                return obj
    return None


def reexport(namespace, submodule):
    """Fill the namespace of alias module `submodule` with the classes ember has of
    PyTorch's list for it; returns them as the module's __all__."""
    names = []
    for name in TORCH_PATHS[submodule]:
        obj = find(name)
        if obj is not None:
            namespace[name] = obj
            if not name.startswith("_"):
                names.append(name)
    return names


def complete():
    """Give each ember submodule that PyTorch also has the classes PyTorch defines
    there (nn.modules.activation.MultiheadAttention, ...); names it has stay."""
    for submodule, names in TORCH_PATHS.items():
        mod = sys.modules.get(_PREFIX + submodule)
        if mod is None or submodule in ALIAS_MODULES:
            continue
        for name in names:
            if name not in mod.__dict__:
                obj = find(name)
                if obj is not None:
                    setattr(mod, name, obj)
