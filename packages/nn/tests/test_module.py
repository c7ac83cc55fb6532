"""Module: registration, traversal, state_dict, hooks, modes, conversions, repr;
containers; Parameter."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember as em
from ember import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("steps", em.zeros(()))
        self.register_buffer("scratch", em.zeros(2), persistent=False)
        self.scale = nn.Parameter(em.ones(1))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc1.weight", "fc1.bias",
                                                      "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert net.fc2.bias is None
    assert net.get_submodule("fc1") is net.fc1
    assert net.get_parameter("fc1.weight") is net.fc1.weight
    shared = nn.Sequential(net.fc1, net.fc1)
    assert len(list(shared.parameters())) == 2          # deduplicated


def test_assignment_rules():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'scale'"):
        net.scale = em.ones(1)
    net.scale = None
    assert "scale" not in dict(net.named_parameters())
    with pytest.raises(TypeError, match="cannot assign int as child module 'fc1'"):
        net.fc1 = 3
    del net.fc2
    assert not hasattr(net, "fc2")
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope  # noqa: B018
    with pytest.raises(KeyError, match="cannot contain"):
        net.register_buffer("a.b", em.zeros(1))


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert not sd["fc1.weight"].requires_grad
    assert b.load_state_dict(sd) is not None
    x = em.randn(5, 4)
    assert np.array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    bad = OrderedDict(sd)
    bad["fc1.weight"] = em.zeros(5, 4)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param "
                                           r"with shape \(5, 4\) from checkpoint, the shape "
                                           r"in the current model is \(3, 4\)"):
        b.load_state_dict(bad)
    partial = OrderedDict(sd)
    del partial["fc1.bias"]
    partial["extra"] = em.zeros(1)
    with pytest.raises(RuntimeError, match=r'(?s)Missing key\(s\) in state_dict: "fc1.bias"'
                                           r'.*Unexpected key\(s\) in state_dict: "extra"'):
        b.load_state_dict(partial)
    result = b.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra"]


def test_load_state_dict_keeps_parameter_objects():
    net = Net()
    w = net.fc1.weight
    net.load_state_dict(Net().state_dict())
    assert net.fc1.weight is w


def test_train_eval_zero_grad_requires_grad_apply():
    net = Net()
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net(em.randn(2, 4)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(em.randn(2, 4)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Net"]


def test_to_dtype_keeps_parameter_identity():
    net = Net()
    w = net.fc1.weight
    net.to(em.float64)
    assert net.fc1.weight is w and w.dtype is em.float64
    assert net.steps.dtype is em.float64
    with pytest.raises(TypeError, match="floating point"):
        net.to(em.int32)
    net.double().float()
    assert w.dtype is em.float32


def test_bfloat16_casts_floating_parameters_and_buffers():
    """Module.bfloat16 (PyTorch's): floating point parameters and buffers become
    bfloat16 in place; integer buffers stay; the forward runs in bfloat16."""
    net = Net()
    net.register_buffer("count", em.zeros(2, dtype=em.int64))
    w = net.fc1.weight
    want = w.detach().bfloat16()
    assert net.bfloat16() is net
    assert net.fc1.weight is w and w.dtype is em.bfloat16
    assert w.detach().view(em.int16).tolist() == want.view(em.int16).tolist()
    assert net.steps.dtype is em.bfloat16 and net.count.dtype is em.int64
    out = net(em.randn(2, 4).bfloat16())
    assert out.dtype is em.bfloat16
    net.float()
    assert w.dtype is em.float32


def test_forward_hooks():
    net = Net()
    calls = []
    h1 = net.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = net.register_forward_hook(lambda m, args, out: calls.append(tuple(out.shape)) or out + 1)
    out = net(em.randn(2, 4))
    assert calls == [(2, 2)]
    np.testing.assert_allclose(out.detach().numpy(), net.fc2(net.act(net.fc1(em.zeros(2, 4))))
                               .detach().numpy() * net.scale.item() + 1, rtol=1e-6)
    h1.remove()
    h2.remove()
    net(em.randn(2, 4))
    assert len(calls) == 1


def test_repr_prints_the_tree():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 1), nn.Tanh()))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=1, bias=True)\n"
        "    (1): Tanh()\n"
        "  )\n"
        ")")


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert isinstance(seq[0:2], nn.Sequential) and len(seq[0:2]) == 2
    assert seq[-1] is seq[2]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    d = OrderedDict(first=nn.Linear(2, 2), second=nn.ReLU())
    named = nn.Sequential(d)
    assert [n for n, _ in named.named_children()] == ["first", "second"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Linear(1, 2)
    assert list(md.keys()) == ["a", "b"] and "b" in md
    pl = nn.ParameterList([em.ones(2), nn.Parameter(em.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pd = nn.ParameterDict({"w": em.ones(2)})
    holder = nn.Module()
    holder.pl, holder.pd = pl, pd
    assert [n for n, _ in holder.named_parameters()] == ["pl.0", "pl.1", "pd.w"]
    with pytest.raises(IndexError, match="out of range"):
        ml[10]


def test_parameter():
    p = nn.Parameter(em.ones(2, 2))
    assert p.requires_grad and p.is_leaf and isinstance(p, em.Tensor)
    assert repr(p).startswith("Parameter containing:")
    q = nn.Parameter(em.ones(2), requires_grad=False)
    assert not q.requires_grad
    y = p * 2
    assert type(y) is em.Tensor
    c = copy.deepcopy(p)
    assert isinstance(c, nn.Parameter) and c is not p and c.requires_grad
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.tolist() == p.tolist()


def test_deepcopy_module():
    net = Net()
    clone = copy.deepcopy(net)
    assert clone.fc1.weight is not net.fc1.weight
    x = em.randn(3, 4)
    np.testing.assert_allclose(clone(x).detach().numpy(), net(x).detach().numpy())


def test_linear_bad_input_names_the_layer():
    with pytest.raises(ValueError, match=r"Linear\(in_features=784, out_features=10, "
                                         r"bias=True\) got input with last dimension 100"):
        nn.Linear(784, 10)(em.randn(2, 100))
