"""ember.onnx.export: each layer family exported, checked by onnx.checker, run in
onnxruntime and compared with ember's own output; dynamic axes run at another batch
size; the op table's elementwise rows and the reductions; PyTorch's keyword arguments;
ops that cannot be exported and bad arguments raise naming them."""
import io
import math
import os
import sys

import numpy as np
import pytest

import ember as em
import ember.nn.functional as F
from ember import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ember.onnx import UnsupportedOperatorError  # noqa: E402
from ember.ops.table import ELEMENTWISE, POLYNOMIALS  # noqa: E402


def _outputs(obj):
    if isinstance(obj, em.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _outputs(o)]
    return []


def export_bytes(model, args, **kw):
    buf = io.BytesIO()
    em.onnx.export(model, args, buf, **kw)
    data = buf.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


def run_onnx(data, arrays):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), arrays)})


def check(model, *args, rtol=1e-5, atol=1e-5, **kw):
    """Export, run in onnxruntime, compare with ember; returns the ModelProto."""
    if isinstance(model, nn.Module):
        model.eval()
    data = export_bytes(model, args, **kw)
    got = run_onnx(data, [a.numpy() for a in args if isinstance(a, em.Tensor)])
    with em.no_grad():
        ref = _outputs(model(*args))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == tuple(r.shape)
        np.testing.assert_allclose(g, r.numpy(), rtol=rtol, atol=atol, equal_nan=True)
    return onnx.load_from_string(data)


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


def randn(*shape):
    return em.randn(*shape)


@pytest.fixture(autouse=True)
def _seed():
    em.manual_seed(0)


# layers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    p = check(nn.Linear(4, 3, bias=bias), randn(2, 4))
    assert "MatMul" in op_types(p)
    assert "Transpose" not in op_types(p)      # do_constant_folding: the weight's transpose
    check(nn.Linear(4, 3, bias=bias), randn(5, 2, 4))


def test_parameters_are_named_initializers_without_folding():
    p = check(nn.Sequential(nn.Linear(4, 3), nn.ReLU()), randn(2, 4), do_constant_folding=False)
    names = {i.name for i in p.graph.initializer}
    assert {"0.weight", "0.bias"} <= names
    assert "Transpose" in op_types(p)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2),
                                dict(groups=2, padding=2, bias=False)])
def test_conv2d(kw):
    p = check(nn.Conv2d(4, 6, 3, **kw), randn(2, 4, 9, 9))
    assert "Conv" in op_types(p)


def test_conv1d():
    check(nn.Conv1d(3, 4, 3, stride=2, padding=1), randn(2, 3, 11))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, output_padding=1), dict(padding=1)])
def test_conv_transpose2d(kw):
    p = check(nn.ConvTranspose2d(3, 4, 3, **kw), randn(2, 3, 5, 5))
    assert "ConvTranspose" in op_types(p)


@pytest.mark.parametrize("layer", [
    nn.MaxPool2d(2), nn.MaxPool2d(3, stride=2, padding=1), nn.MaxPool2d(3, ceil_mode=True),
    nn.MaxPool2d(2, dilation=2), nn.AvgPool2d(2), nn.AvgPool2d(3, stride=2, padding=1),
    nn.AvgPool2d(3, padding=1, count_include_pad=False), nn.AdaptiveAvgPool2d(1),
    nn.AdaptiveAvgPool2d((2, 4)), nn.AdaptiveMaxPool2d(1), nn.AdaptiveMaxPool2d(2),
], ids=repr)
def test_pool2d(layer):
    check(layer, randn(2, 3, 8, 8))


@pytest.mark.parametrize("layer", [nn.MaxPool1d(2), nn.MaxPool1d(3, 2, 1), nn.AvgPool1d(3),
                                   nn.AdaptiveAvgPool1d(1), nn.AdaptiveMaxPool1d(2)],
                         ids=repr)
def test_pool1d(layer):
    check(layer, randn(2, 3, 8))


@pytest.mark.parametrize("layer", [nn.Conv3d(2, 3, 2, padding=1), nn.MaxPool3d(2),
                                   nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(1)], ids=repr)
def test_3d_layers(layer):
    check(layer, randn(1, 2, 4, 4, 4))          # composed of 2-d kernels and unfold


def test_pool_unbatched_input():
    check(nn.MaxPool2d(2), randn(3, 8, 8))


def test_adaptive_pool_that_does_not_divide_raises():
    with pytest.raises(UnsupportedOperatorError, match="adaptive_avg_pool2d"):
        export_bytes(nn.AdaptiveAvgPool2d(3), (randn(1, 2, 8, 8),))


@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (4, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (2, 3, 4, 4))])
def test_batch_norm_eval(cls, shape):
    m = cls(3)
    m.train()
    for _ in range(3):                       # non-trivial running statistics
        m(randn(*shape) * 2 + 1)
    p = check(m, randn(*shape))
    assert "BatchNormalization" in op_types(p)
    names = {i.name for i in p.graph.initializer}
    assert {"running_mean", "running_var", "weight", "bias"} <= names


def test_batch_norm_training_mode_raises():
    m = nn.BatchNorm1d(3)
    with pytest.raises(UnsupportedOperatorError, match="batch_norm"):
        export_bytes(m, (randn(4, 3),), training=em.onnx.TrainingMode.TRAINING)


def test_layer_norm_and_group_norm():
    p = check(nn.LayerNorm(4), randn(2, 3, 4))
    assert "LayerNormalization" in op_types(p)
    check(nn.LayerNorm((3, 4), elementwise_affine=False), randn(2, 3, 4))
    check(nn.GroupNorm(2, 4), randn(2, 4, 3))
    check(nn.GroupNorm(2, 4), randn(2, 4, 3, 3))


_ACTIVATIONS = [nn.ReLU(), nn.GELU(), nn.GELU(approximate="tanh"), nn.SiLU(), nn.Tanh(),
                nn.Sigmoid(), nn.LeakyReLU(), nn.LeakyReLU(0.2), nn.ELU(), nn.SELU(),
                nn.CELU(), nn.Softplus(), nn.Softsign(), nn.Hardtanh(), nn.ReLU6(),
                nn.Hardsigmoid(), nn.Hardswish(), nn.Mish(), nn.Tanhshrink(),
                nn.Softmax(-1), nn.Softmax(1), nn.LogSoftmax(-1), nn.LogSigmoid(),
                nn.Hardshrink(), nn.Softshrink(), nn.Threshold(0.1, 20.0), nn.GLU()]


@pytest.mark.parametrize("act", _ACTIVATIONS, ids=repr)
def test_activation(act):
    check(act, randn(3, 4, 6) * 3)


@pytest.mark.parametrize("padding_idx", [None, 0])
def test_embedding(padding_idx):
    p = check(nn.Embedding(10, 4, padding_idx=padding_idx), em.tensor([[1, 2, 0], [3, 9, 4]]))
    assert op_types(p)[0] == "Gather"
    assert p.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64


# recurrent layers: one ONNX node per layer ----------------------------------------------

_RNN_ONNX = {nn.LSTM: "LSTM", nn.GRU: "GRU", nn.RNN: "RNN"}


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
def test_rnn_family(cls, batch_first, layers, bidirectional):
    m = cls(4, 5, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    p = check(m, randn(3, 2, 4), rtol=1e-4, atol=1e-5)
    assert op_types(p).count(_RNN_ONNX[cls]) == layers
    assert "MatMul" not in op_types(p)      # the module whole, not its steps


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_rnn_with_initial_state_and_options(cls):
    dirs, layers = 2, 2
    m = cls(4, 5, num_layers=layers, bidirectional=True, bias=False)
    h0 = randn(layers * dirs, 3, 5)
    if cls is nn.LSTM:
        c0 = randn(layers * dirs, 3, 5)

        class Wrap(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x, h, c):
                return self.m(x, (h, c))
        check(Wrap(), randn(6, 3, 4), h0, c0, rtol=1e-4)
    else:
        check(m, randn(6, 3, 4), h0, rtol=1e-4)
    check(cls(4, 5), randn(6, 4), rtol=1e-4)     # unbatched


def test_rnn_relu():
    check(nn.RNN(4, 5, nonlinearity="relu", num_layers=2), randn(3, 2, 4), rtol=1e-4)


def test_lstm_proj_size_raises():
    with pytest.raises(UnsupportedOperatorError, match="LSTM.*proj_size"):
        export_bytes(nn.LSTM(4, 5, proj_size=3), (randn(3, 2, 4),))


def test_rnn_module_restored_after_export():
    m = nn.LSTM(4, 5)
    export_bytes(m, (randn(3, 2, 4),))
    assert "forward" not in m.__dict__
    out, _ = m(randn(3, 2, 4))
    assert out.grad_fn is not None


# attention, transformer, small models ---------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention(batch_first):
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q, k, v = randn(3, 2, 8), randn(4, 2, 8), randn(4, 2, 8)
    if batch_first:
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    check(m, q, k, v)


def test_multihead_attention_self_with_mask():
    m = nn.MultiheadAttention(8, 2)
    mask = nn.Transformer.generate_square_subsequent_mask(3)

    class Self(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x, x, x, attn_mask=mask, need_weights=False)[0]
    check(Self(), randn(3, 2, 8))


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, norm_first=True),
                                dict(activation="gelu")])
def test_transformer_encoder_layer(kw):
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, **kw)
    check(m, randn(3, 2, 8), rtol=1e-4, atol=1e-5)


def test_transformer_encoder():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    check(nn.TransformerEncoder(layer, 2), randn(3, 2, 8), rtol=1e-4, atol=1e-5)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.features(x)
        x = em.flatten(x, 1)
        return F.log_softmax(self.fc(self.drop(x)), dim=1)


class TinyGPT(nn.Module):
    def __init__(self, vocab=11, d=8, heads=2, ctx=6):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight          # tied
        self.heads, self.d = heads, d
        self.register_buffer("mask", em.tril(em.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(em.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(self.d, dim=2)
        hd = self.d // self.heads
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        y = y + F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, self.d)
        x = x + self.proj(y)
        x = x + self.mlp(self.ln2(x))
        return self.head(self.lnf(x))


def test_small_cnn():
    p = check(SmallCNN(), randn(2, 1, 8, 8))
    assert "Dropout" not in op_types(p)


_DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


@pytest.mark.parametrize("device", _DEVICES)
def test_model_on_any_device(device):
    m = SmallCNN().to(device)
    m.eval()
    x = randn(2, 1, 8, 8).to(device)
    data = export_bytes(m, (x,))
    got = run_onnx(data, [x.cpu().numpy()])
    np.testing.assert_allclose(got[0], m(x).detach().cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_tiny_gpt():
    check(TinyGPT(), em.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]), rtol=1e-4, atol=1e-5)


# dynamic axes ---------------------------------------------------------------------------

def _dynamic(model, args, names, axes, other_args):
    model.eval()
    data = export_bytes(model, args, input_names=names, output_names=["out"],
                        dynamic_axes=axes)
    got = run_onnx(data, [a.numpy() for a in other_args])
    with em.no_grad():
        ref = _outputs(model(*other_args))
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-4, atol=1e-5)
    return onnx.load_from_string(data)


def test_dynamic_batch_cnn():
    p = _dynamic(SmallCNN(), (randn(2, 1, 8, 8),), ["x"], {"x": {0: "batch"}, "out": {0: "batch"}},
                 (randn(5, 1, 8, 8),))
    dim = p.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "batch"


def test_dynamic_batch_gpt_and_list_spelling():
    p = _dynamic(TinyGPT(), (em.tensor([[1, 2, 3]] * 2),), ["idx"],
                 {"idx": [0], "out": [0]}, (em.tensor([[4, 5, 6]] * 7),))
    assert p.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "idx_dynamic_axes_1"


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
def test_dynamic_batch_and_sequence_rnn(cls):
    m = cls(4, 5, num_layers=2, bidirectional=True, batch_first=True)

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn, self.fc = m, nn.Linear(10, 3)

        def forward(self, x):
            return self.fc(self.rnn(x)[0])
    _dynamic(Head(), (randn(2, 3, 4),), ["x"], {"x": {0: "b", 1: "t"}, "out": {0: "b", 1: "t"}},
             (randn(4, 7, 4),))


def test_dynamic_batch_transformer():
    m = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    _dynamic(m, (randn(2, 3, 8),), ["x"], {"x": {0: "b"}, "out": {0: "b"}}, (randn(5, 3, 8),))


def test_dynamic_sequence_and_batch_attention():
    m = nn.MultiheadAttention(8, 2)

    class Self(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x, x, x)[0]
    _dynamic(Self(), (randn(3, 2, 8),), ["x"], {"x": {0: "L", 1: "B"}, "out": {0: "L", 1: "B"}},
             (randn(5, 4, 8),))


def test_dynamic_reduction_over_a_static_axis():
    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(1) + x.sum(1)
    _dynamic(Mean(), (randn(2, 4),), ["x"], {"x": [0], "out": [0]}, (randn(6, 4),))


def test_values_frozen_from_a_dynamic_size_are_refused():
    # the positions em.arange(T) are a constant of the trace: T cannot be dynamic
    with pytest.raises(em.onnx.OnnxExporterError, match="'embedding'.*dynamic axis"):
        export_bytes(TinyGPT(), (em.tensor([[1, 2, 3]] * 2),), input_names=["idx"],
                     dynamic_axes={"idx": {0: "b", 1: "t"}})
    # a mean over the dynamic axis divides by its traced length
    with pytest.raises(em.onnx.OnnxExporterError, match="'div'"):
        export_bytes(lambda x: x.mean(0), (randn(2, 4),), input_names=["x"],
                     dynamic_axes={"x": [0]})
    with pytest.raises(em.onnx.OnnxExporterError, match="'mul'"):
        export_bytes(lambda x: x * x.shape[1], (randn(2, 4),), input_names=["x"],
                     dynamic_axes={"x": [1]})


def test_dynamic_axes_that_cannot_be_checked_warn():
    def fixed(x):                     # only runs at batch 2
        return x.reshape(2, 2, 2)
    with pytest.warns(UserWarning, match="could not check the dynamic axes"):
        export_bytes(fixed, (randn(2, 4),), input_names=["x"], dynamic_axes={"x": [0]})


# the op table and reductions --------------------------------------------------------------

_NO_ONNX = {"bitwise_left_shift", "bitwise_right_shift"}   # ONNX BitShift is unsigned only
# special functions ONNX has no operator for (and no short exact composition): refused by name
_NO_ONNX |= {"lgamma", "digamma", "erfinv", "i0", "igamma", "igammac", "special_polygamma",
             "special_zeta", "special_erfcx", "special_ndtr", "special_ndtri",
             "special_log_ndtr", "special_i0e", "special_i1", "special_i1e",
             "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
             "special_modified_bessel_k0", "special_modified_bessel_k1",
             "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
             "special_spherical_bessel_j0", "special_airy_ai"}
_NO_ONNX |= {f"special_{name}" for name, _ in POLYNOMIALS}   # the orthogonal polynomials
# the derivative rows behind gelu's formula (backward only, never in a traced forward)
_NO_ONNX |= {"_gelu_grad", "_gelu_tanh_grad", "_relu_grad"}


def _row_inputs(row, kind, rng):
    def floats():
        a = rng.uniform(-3, 3, (3, 4))
        if row.domain == "positive" or row.name == "pow":
            a = np.abs(a) + 0.1
        elif row.domain == "unit":
            a = np.clip(a / 3.5, -0.99, 0.99)
        elif row.domain == "ge1":
            a = np.abs(a) + 1
        elif row.domain == "nonzero":
            a = np.where(np.abs(a) < 0.1, 1.0, a)
        return em.tensor(a.astype(np.float32))
    low = 1 if row.name in ("floor_divide", "remainder", "fmod", "pow") else -5
    if row.name in ("special_polygamma", "special_zeta"):
        return [em.tensor(np.full((3, 4), 2.0, np.float32)),
                em.tensor(rng.uniform(0.5, 3, (3, 4)).astype(np.float32))]
    make = {"float": floats,
            "complex": lambda: em.complex(floats(), floats()),
            "int": lambda: em.tensor(rng.integers(low, 6, (3, 4))),
            "bool": lambda: em.tensor(rng.uniform(size=(3, 4)) > 0.5)}[kind]
    xs = [make() for _ in range(row.arity)]
    if row.name == "where":
        xs[0] = em.tensor(rng.uniform(size=(3, 4)) > 0.5)
    return xs


@pytest.mark.parametrize("row", ELEMENTWISE, ids=lambda r: r.name)
def test_op_table_rows(row):
    rng = np.random.default_rng(1)
    fn = getattr(em, row.name)
    for kind in row.kinds:
        xs = _row_inputs(row, kind, rng)
        if kind == "complex":        # ONNX Runtime has no complex kernels: refused by name
            with pytest.raises(UnsupportedOperatorError, match=rf"'{row.name}' on a complex64"):
                export_bytes(lambda *a: fn(*a), tuple(xs))
            continue
        if row.name == "clamp":
            lo, hi = (-1, 2) if kind == "int" else (-1.0, 2.0)
            model, xs = (lambda a: fn(a, lo, hi)), xs[:1]
        else:
            def model(*a):
                return fn(*a)
        if row.name in _NO_ONNX:
            with pytest.raises(UnsupportedOperatorError, match=row.name):
                export_bytes(model, tuple(xs))
            continue
        check(model, *xs, opset_version=18)
        if kind == "float" and row.arity == 2:       # with a Python scalar operand
            check(lambda a: fn(a, 2.0), xs[0], opset_version=18)


def test_integer_bitwise_needs_opset_18():
    with pytest.raises(UnsupportedOperatorError, match="bitwise_and.*opset_version >= 18"):
        export_bytes(lambda a, b: a & b, (em.tensor([1, 2]), em.tensor([3, 1])),
                     opset_version=17)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "mean", "var", "std",
                                  "logsumexp", "norm", "all", "any"])
def test_reductions(name, opset):
    fn = getattr(em, name)
    x = randn(3, 4) if name not in ("all", "any") else randn(3, 4) > 0
    for kw in ({}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"dim": 0, "keepdim": True}):
        if name == "logsumexp" and not kw:
            kw = {"dim": (0, 1)}
        check(lambda a: fn(a, **kw), x, opset_version=opset)


def test_views_indexing_and_shapes():
    idx = em.tensor([2, 0])

    def f(x):
        a = x[1:, ::2] + x[:2, 1::2].flip(0)
        b = x[..., None, 0].expand(3, 4)[:, 1] * 2
        c = em.cat([x.t().reshape(2, 6), x.reshape(2, 6)], 1).unsqueeze(0).squeeze()
        d = x[idx] - x.index_select(0, idx).sum(1, keepdim=True) + x[:, idx].sum()
        e = em.stack([x, x.abs()], -1).permute(2, 0, 1).narrow(1, 1, 2)
        g = x.gather(1, em.tensor([[0], [3], [1]])).cumsum(0)
        return (a, b, c, d, e, g, x.to(em.float64), x[-1], x.chunk(2, 1)[1].clone(),
                x.unfold(1, 2, 1), x.detach() * 2)
    check(f, randn(3, 4))


def test_constants_made_inside_forward():
    def f(x):
        return x + em.arange(4.0) * em.ones(3, 1)
    p = check(f, randn(3, 4))
    assert p.graph.initializer


# the arguments PyTorch's export takes -------------------------------------------------------

def test_path_is_written_atomically(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    m = nn.Linear(3, 2)
    em.onnx.export(m, (randn(1, 3),), str(path), input_names=["x"], output_names=["y"])
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["y"]
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]
    em.onnx.export(m, randn(1, 3), path)            # a PathLike and a bare tensor
    onnx.checker.check_model(onnx.load(str(path)))


def test_failed_export_leaves_the_file_alone(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    with pytest.raises(UnsupportedOperatorError):
        em.onnx.export(lambda x: em.erfinv(x), (randn(3) * 0.1,), path)
    assert path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]


def test_export_params_false_makes_parameters_inputs():
    m = nn.Linear(3, 2)
    data = export_bytes(m, (randn(1, 3),), export_params=False, input_names=["x"])
    proto = onnx.load_from_string(data)
    names = [i.name for i in proto.graph.input]
    assert names == ["x", "weight", "bias"]
    assert not [i for i in proto.graph.initializer if i.name in ("weight", "bias")]
    x = randn(1, 3)
    got = run_onnx(data, [x.numpy(), m.weight.detach().numpy(), m.bias.detach().numpy()])
    np.testing.assert_allclose(got[0], m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_keep_initializers_as_inputs():
    proto = onnx.load_from_string(export_bytes(nn.Linear(3, 2), (randn(1, 3),),
                                               keep_initializers_as_inputs=True,
                                               do_constant_folding=False))
    inputs = {i.name for i in proto.graph.input}
    assert {"weight", "bias"} <= inputs


def test_opset_versions_and_verbose(capsys):
    for opset in (17, 18, 20):
        proto = check(nn.Sequential(nn.Linear(3, 2), nn.GELU()), randn(1, 3),
                      opset_version=opset)
        assert proto.opset_import[0].version == opset
        assert ("Gelu" in op_types(proto)) == (opset >= 20)
    export_bytes(nn.Linear(3, 2), (randn(1, 3),), verbose=True)
    assert "MatMul" in capsys.readouterr().out


def test_training_mode_restored_and_dropout():
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    m.train()
    export_bytes(m, (randn(2, 3),))                       # EVAL: exported without dropout
    assert m.training and m[1].training
    with pytest.raises(UnsupportedOperatorError, match="dropout"):
        export_bytes(m, (randn(2, 3),), training=em.onnx.TrainingMode.PRESERVE)
    m.eval()
    export_bytes(m, (randn(2, 3),), training=em.onnx.TrainingMode.PRESERVE)
    assert not m.training


def test_dynamo_accepted_and_kwargs_argument():
    class Two(nn.Module):
        def forward(self, x, scale=None):
            return x * scale
    s = randn(3)
    data = export_bytes(Two(), (randn(2, 3), {"scale": s}), dynamo=True)
    assert len(onnx.load_from_string(data).graph.input) == 2
    data = export_bytes(Two(), (randn(2, 3),), kwargs={"scale": s})
    assert len(onnx.load_from_string(data).graph.input) == 2


def test_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(em.onnx.is_in_onnx_export())
            return x + 1
    export_bytes(M(), (randn(2),))
    # the trace, and the check on shuffled inputs
    assert seen == [True, True] and not em.onnx.is_in_onnx_export()


def test_grad_mode_and_recorder_restored():
    from ember._C import core
    before = core.get_recorder()
    with em.no_grad():
        export_bytes(nn.Linear(2, 2), (randn(1, 2),))
        assert not em.is_grad_enabled()
    assert core.get_recorder() is before
    x = randn(2).requires_grad_()
    (x * 2).sum().backward()
    assert x.grad is not None


# what cannot be exported, and bad arguments ------------------------------------------------

def test_unexportable_op_names_the_op():
    with pytest.raises(UnsupportedOperatorError, match="'erfinv'"):
        export_bytes(lambda x: em.erfinv(x), (randn(3) * 0.1,))
    with pytest.raises(UnsupportedOperatorError, match="'bitwise_left_shift'"):
        export_bytes(lambda x: x << 1, (em.tensor([1, 2]),))


def test_values_the_recorder_does_not_see_are_refused():
    # sort/topk pick their indices with ops nobody records: a second trace on the
    # inputs' elements shuffled finds the frozen indices
    with pytest.raises(em.onnx.OnnxExporterError, match="'gather'.*input values"):
        export_bytes(lambda x: x.topk(2, dim=1)[0], (randn(3, 4),))
    check(lambda x: x.argmax(1), randn(3, 4))           # composed of recorded ops


def test_control_flow_on_the_data_is_refused():
    def f(x):
        return x * 2 if x.sum().item() > 0 else x - 1
    x = em.tensor([[1.0, 2.0], [3.0, -7.0]])     # the shuffle flips no sign of the sum
    check(f, x)
    x = em.tensor([[5.0, -1.0, -1.0, -1.0]])

    def g(x):
        return x * 2 if x[0, 0].item() > 0 else x - 1
    with pytest.raises(em.onnx.OnnxExporterError, match="other ops|input values"):
        export_bytes(g, (x,))


def test_models_that_fail_on_shuffled_inputs_warn():
    def sorted_only(x):
        if not bool((x[1:] >= x[:-1]).all()):
            raise ValueError("x must be sorted")
        return x + 1
    with pytest.warns(UserWarning, match="could not check"):
        export_bytes(sorted_only, (em.arange(5.0),))


def test_inplace_copy_and_fill():
    def f(x):
        y = F.silu(x * 1, inplace=True)          # y.copy_(...)
        z = em.empty(2, 3).fill_(0.5)
        return y + z
    check(f, randn(2, 3))


def test_detach_is_the_value():
    def straight_through(x):            # VQ-style: forward value of q, gradient of x
        q = em.round(x * 2) / 2
        return x + (q - x).detach(), x.detach() * 2
    check(straight_through, randn(3, 4))
    assert "detach" not in em.Tensor.__dict__


def test_inplace_write_through_a_view_raises():
    def f(x):
        y = x * 1
        y[0].mul_(2)          # writes into y through a view
        return y
    with pytest.raises(UnsupportedOperatorError, match="in place"):
        export_bytes(f, (randn(2, 3),))


def test_inplace_ops_on_whole_tensors_are_exported():
    def f(x):
        y = x * 1
        y.add_(1).relu_()
        return y
    check(f, randn(2, 3))


@pytest.mark.parametrize("kw,err,match", [
    (dict(opset_version=13), ValueError, "opset_version"),
    (dict(opset_version="17"), ValueError, "opset_version"),
    (dict(input_names="x"), TypeError, "input_names"),
    (dict(input_names=["a", "b"]), ValueError, "input_names"),
    (dict(output_names=["y", "y"]), ValueError, "duplicate"),
    (dict(dynamic_axes={"nope": [0]}, input_names=["x"]), ValueError, "nope"),
    (dict(dynamic_axes={"x": 0}, input_names=["x"]), TypeError, "dynamic_axes"),
    (dict(dynamic_axes={"x": [5]}, input_names=["x"]), ValueError, "axis 5"),
    (dict(dynamic_shapes={"x": {0: "b"}}), ValueError, "dynamo"),
    (dict(report=True), ValueError, "dynamo"),
    (dict(operator_export_type=em.onnx.OperatorExportTypes.ONNX_ATEN), ValueError,
     "operator_export_type"),
    (dict(custom_opsets={"x": 1}), ValueError, "custom_opsets"),
    (dict(export_modules_as_functions=True), ValueError, "export_modules_as_functions"),
    (dict(autograd_inlining=False), ValueError, "autograd_inlining"),
    (dict(training=7), ValueError, "TrainingMode"),
])
def test_bad_arguments(kw, err, match):
    with pytest.raises(err, match=match):
        export_bytes(nn.Linear(3, 2), (randn(1, 3),), **kw)


def test_bad_f_model_and_args():
    with pytest.raises(TypeError, match="f must be"):
        em.onnx.export(nn.Linear(3, 2), (randn(1, 3),))
    with pytest.raises(TypeError, match="f must be"):
        em.onnx.export(nn.Linear(3, 2), (randn(1, 3),), io.StringIO())
    with pytest.raises(TypeError, match="model"):
        em.onnx.export(5, (randn(1, 3),), io.BytesIO())
    with pytest.raises(TypeError, match="args"):
        em.onnx.export(nn.Linear(3, 2), 5, io.BytesIO())
    with pytest.raises(em.onnx.OnnxExporterError, match="str"):
        em.onnx.export(lambda x: "no", (randn(1),), io.BytesIO())


def test_models_over_two_gib_are_refused(monkeypatch):
    from ember.onnx import _export
    monkeypatch.setattr(_export, "_PROTOBUF_LIMIT", 100)
    with pytest.raises(em.onnx.OnnxExporterError, match="external data"):
        export_bytes(nn.Linear(30, 30), (randn(1, 30),))


def test_without_onnx_installed(monkeypatch):
    import ember.onnx as eo
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert eo.TrainingMode.EVAL == 0            # the module itself imports
    with pytest.raises(ImportError, match=r"pip install ember-nn\[onnx\]"):
        eo.export(nn.Linear(2, 2), (randn(1, 2),), io.BytesIO())
