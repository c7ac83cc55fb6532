"""Every ember.nn class is importable from the torch.nn.modules submodule PyTorch
defines it in (nn.modules.activation.MultiheadAttention, nn.modules.batchnorm.
BatchNorm2d, ...). PyTorch's mapping is written out here, independently of
ember.nn.modules._torch_paths."""
from __future__ import annotations

import importlib

import pytest

import ember as em
import ember.nn as nn

# torch.nn.modules.<submodule>: classes (PyTorch 2.x)
TORCH = {
    "activation": "Threshold ReLU RReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish "
                  "Hardswish ELU CELU SELU GLU GELU Hardshrink LeakyReLU LogSigmoid Softplus "
                  "Softshrink MultiheadAttention PReLU Softsign Tanhshrink Softmin Softmax "
                  "Softmax2d LogSoftmax",
    "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LazyBatchNorm1d "
                 "LazyBatchNorm2d LazyBatchNorm3d",
    "channelshuffle": "ChannelShuffle",
    "container": "Sequential ModuleList ModuleDict ParameterList ParameterDict",
    "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d "
            "LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d",
    "distance": "PairwiseDistance CosineSimilarity",
    "dropout": "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d "
                    "LazyInstanceNorm2d LazyInstanceNorm3d",
    "linear": "Identity Linear Bilinear LazyLinear",
    "loss": "L1Loss NLLLoss PoissonNLLLoss GaussianNLLLoss KLDivLoss MSELoss BCELoss "
            "BCEWithLogitsLoss HingeEmbeddingLoss MultiLabelMarginLoss SmoothL1Loss HuberLoss "
            "SoftMarginLoss CrossEntropyLoss MultiLabelSoftMarginLoss CosineEmbeddingLoss "
            "MarginRankingLoss MultiMarginLoss TripletMarginLoss "
            "TripletMarginWithDistanceLoss CTCLoss",
    "module": "Module",
    "normalization": "LocalResponseNorm CrossMapLRN2d LayerNorm GroupNorm RMSNorm",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d "
               "ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d "
               "ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d "
               "ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "pooling": "MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d AvgPool1d "
               "AvgPool2d AvgPool3d FractionalMaxPool2d FractionalMaxPool3d LPPool1d "
               "LPPool2d LPPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d "
               "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d",
    "rnn": "RNNBase RNN LSTM GRU RNNCell LSTMCell GRUCell",
    "sparse": "Embedding EmbeddingBag",
    "transformer": "TransformerEncoder TransformerDecoder TransformerEncoderLayer "
                   "TransformerDecoderLayer Transformer",
    "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d",
}

CASES = [(sub, name) for sub, names in sorted(TORCH.items()) for name in names.split()
         if hasattr(nn, name)]


@pytest.mark.parametrize("sub,name", CASES, ids=[f"{s}.{n}" for s, n in CASES])
def test_each_class_is_at_its_pytorch_path(sub, name):
    mod = importlib.import_module(f"ember.nn.modules.{sub}")
    assert getattr(mod, name) is getattr(nn, name)
    ns = {}
    exec(f"from ember.nn.modules.{sub} import {name}", ns)
    assert ns[name] is getattr(nn, name)


def test_the_classes_ember_has_are_many():
    """The mapping is exercised: ember has at least the layers it had before issue 18."""
    assert len(CASES) >= 70
    for must in ["activation.MultiheadAttention", "batchnorm.BatchNorm2d",
                 "normalization.LayerNorm", "sparse.Embedding", "module.Module",
                 "flatten.Flatten", "container.Sequential", "rnn.LSTM", "loss.MSELoss"]:
        assert tuple(must.split(".")) in CASES, must


def test_private_bases_pytorch_code_subclasses():
    from ember.nn.modules.batchnorm import _BatchNorm
    from ember.nn.modules.conv import _ConvNd
    from ember.nn.modules.dropout import _DropoutNd
    from ember.nn.modules.loss import _Loss, _WeightedLoss
    assert issubclass(nn.BatchNorm2d, _BatchNorm) and issubclass(nn.Conv2d, _ConvNd)
    assert issubclass(nn.Dropout, _DropoutNd) and issubclass(nn.MSELoss, _Loss)
    assert issubclass(nn.NLLLoss, _WeightedLoss)


def test_non_dynamically_quantizable_linear_is_a_linear():
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear as NDQ
    assert issubclass(NDQ, nn.Linear)
    em.manual_seed(0)
    layer = NDQ(4, 3, bias=True)
    x = em.randn(2, 4)
    assert em.allclose(layer(x), x @ layer.weight.T + layer.bias)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert repr(layer).startswith("NonDynamicallyQuantizableLinear(in_features=4")


def test_alias_modules_export_only_what_exists():
    import ember.nn.modules.batchnorm as bn
    assert set(bn.__all__) <= set(TORCH["batchnorm"].split())
    assert all(getattr(bn, n) is getattr(nn, n) for n in bn.__all__)
    assert "BatchNorm2d" in bn.__all__
