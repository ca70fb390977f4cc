"""Module API: registration, iteration, modes, zero_grad, hooks, state_dict, repr."""

from __future__ import annotations

import copy

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import assert_close, to_numpy


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2)
        self.register_buffer("running", fc.zeros(2))
        self.register_buffer("scratch", fc.ones(1), persistent=False)
        self.scale = 2.0

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(4, 2)
        self.register_buffer("running", torch.zeros(2))
        self.register_buffer("scratch", torch.ones(1), persistent=False)


# ---- Parameter ----
def test_parameter_shares_storage_and_requires_grad():
    data = fc.zeros(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, fc.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and not data.requires_grad
    assert p.data_ptr() == data.data_ptr()
    assert tuple(p.shape) == (2, 3)
    assert not nn.Parameter(fc.zeros(1), requires_grad=False).requires_grad


def test_parameter_repr_and_errors():
    p = nn.Parameter(fc.zeros(2))
    assert repr(p).startswith("Parameter containing:\n")
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Parameter([1.0, 2.0])
    assert tuple(nn.Parameter().shape) == (0,)


def test_parameter_deepcopy_is_independent():
    p = nn.Parameter(fc.ones(3))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    assert q.data_ptr() != p.data_ptr()
    assert q.tolist() == [1.0, 1.0, 1.0]


# ---- registration ----
def test_registration_matches_torch_names():
    ours, theirs = Net(), TorchNet()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    assert len(list(ours.parameters())) == 4 and len(list(ours.children())) == 3
    assert len(list(ours.modules())) == 4
    assert ours.scale == 2.0 and "scale" not in ours._parameters


def test_setattr_routes_and_rejects():
    m = nn.Module()
    m.w = nn.Parameter(fc.zeros(2))
    assert "w" in m._parameters and "w" not in m.__dict__
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = fc.zeros(2)
    m.w = None
    assert m.w is None and list(m.parameters()) == []
    m.sub = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="child module 'sub'"):
        m.sub = 3
    m.register_buffer("b", fc.zeros(1))
    m.b = fc.ones(1)
    assert m._buffers["b"].tolist() == [1.0]
    with pytest.raises(TypeError, match="buffer 'b'"):
        m.b = 5
    with pytest.raises(KeyError, match="attribute 'sub' already exists"):
        m.register_buffer("sub", fc.zeros(1))
    with pytest.raises(KeyError, match="cannot contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="Parameter or None required"):
        m.register_parameter("q", fc.zeros(1))
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        _ = m.nothing
    del m.sub
    assert "sub" not in m._modules


def test_assign_before_init_fails():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(fc.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_shared_parameter_counted_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert len(list(seq.modules())) == 2


def test_get_submodule_and_parameter():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1)))
    assert model.get_submodule("1.0") is model[1][0]
    assert model.get_parameter("1.0.bias") is model[1][0].bias
    with pytest.raises(AttributeError, match="no submodule `7`"):
        model.get_submodule("7")


def test_add_module_type_check():
    with pytest.raises(TypeError, match="is not a Module subclass"):
        nn.Module().add_module("x", 3)


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(fc.zeros(1))


# ---- modes, grads ----
def test_train_eval_propagates():
    m = Net()
    assert m.training and m.fc1.training
    assert m.eval() is m
    assert not m.training and not m.fc1.training and not m.act.training
    m.train()
    assert m.fc2.training
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")


def test_zero_grad_and_requires_grad_():
    m = nn.Linear(3, 2)
    m(fc.ones(4, 3)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert to_numpy(m.weight.grad).sum() == 0 and tuple(m.weight.grad.shape) == (2, 3)
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m
    assert not m.weight.requires_grad and not m.bias.requires_grad


def test_apply_visits_children_first():
    seen = []
    model = nn.Sequential(nn.Linear(1, 1), nn.ReLU())
    assert model.apply(lambda mod: seen.append(type(mod).__name__)) is model
    assert seen == ["Linear", "ReLU", "Sequential"]


def test_to_dtype_converts_parameters_and_float_buffers():
    m = Net()
    m.register_buffer("count", fc.zeros(1, dtype=fc.int64))
    before = to_numpy(m.fc1.weight)
    assert m.to(fc.float64) is m
    assert m.fc1.weight.dtype == fc.float64 and isinstance(m.fc1.weight, nn.Parameter)
    assert m.fc1.weight.requires_grad
    assert m.running.dtype == fc.float64 and m.count.dtype == fc.int64
    assert (to_numpy(m.fc1.weight) == before.astype("float64")).all()
    m.to("cpu")
    m.float()
    assert m.fc2.bias.dtype == fc.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(fc.int64)
    with pytest.raises(TypeError, match="dtype or a device"):
        m.to(3)


# ---- hooks ----
def test_forward_hooks_modify_and_remove():
    m = nn.Identity()
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] * 2,)

    def post(mod, args, out):
        calls.append("post")
        return out + 1

    h1 = m.register_forward_pre_hook(pre)
    h2 = m.register_forward_hook(post)
    assert m(fc.ones(2)).tolist() == [3.0, 3.0]
    assert calls == ["pre", "post"]
    h1.remove()
    assert m(fc.ones(2)).tolist() == [2.0, 2.0]
    with h2:
        pass
    assert m(fc.ones(2)).tolist() == [1.0, 1.0]


def test_forward_hook_returning_none_keeps_output():
    seen = []
    m = nn.ReLU()
    m.register_forward_hook(lambda mod, args, out: seen.append(out.tolist()))
    m.register_forward_pre_hook(lambda mod, args: None)
    assert m(fc.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert seen == [[0.0, 2.0]]


# ---- state dict ----
def test_state_dict_shares_memory_and_excludes_nonpersistent():
    m = Net()
    sd = m.state_dict()
    assert "scratch" not in sd and "running" in sd
    assert sd["fc1.weight"].data_ptr() == m.fc1.weight.data_ptr()
    assert not sd["fc1.weight"].requires_grad
    assert isinstance(m.state_dict(keep_vars=True)["fc1.weight"], nn.Parameter)


def test_load_state_dict_round_trip_from_torch():
    theirs = TorchNet()
    theirs.running.fill_(3.0)
    ours = Net()
    from nn_testing import from_torch

    result = ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for k, v in theirs.state_dict().items():
        assert_close(ours.state_dict()[k], v)
    # copied, not aliased
    ptr = ours.fc1.weight.data_ptr()
    assert ptr == ours.state_dict()["fc1.weight"].data_ptr()


def test_load_state_dict_strict_errors_list_every_key():
    m = Net()
    sd = dict(m.state_dict())
    del sd["fc1.bias"]
    sd["extra.weight"] = fc.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert "Error(s) in loading state_dict for Net" in msg
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra.weight"]


def test_load_state_dict_shape_mismatch_raises_even_non_strict_and_changes_nothing():
    m = Net()
    before = to_numpy(m.fc2.weight)
    sd = dict(m.state_dict())
    sd["fc1.weight"] = fc.zeros(5, 3)
    sd["fc2.weight"] = fc.zeros(2, 4)
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape \(5, 3\)"):
            m.load_state_dict(sd, strict=strict)
    assert (to_numpy(m.fc2.weight) == before).all()


def test_load_state_dict_type_errors():
    m = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])
    with pytest.raises(RuntimeError, match="expected Tensor-like object"):
        m.load_state_dict({"weight": 1.0, "bias": fc.zeros(1)})


def test_load_state_dict_does_not_record_graph():
    m = nn.Linear(2, 1)
    m.load_state_dict({"weight": fc.ones(1, 2), "bias": fc.zeros(1)})
    assert m.weight.tolist() == [[1.0, 1.0]]
    assert m.weight.requires_grad and m.weight.grad_fn is None


# ---- repr ----
def test_repr_matches_torch():
    ours = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 2, bias=False), nn.Tanh()))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 2, bias=False), torch.nn.Tanh())
    )
    assert repr(ours) == repr(theirs)
    assert repr(nn.Dropout(0.25)) == repr(torch.nn.Dropout(0.25))
    assert repr(nn.Flatten()) == repr(torch.nn.Flatten())
    assert repr(nn.CrossEntropyLoss()) == repr(torch.nn.CrossEntropyLoss())


# ---- containers ----
def test_sequential_indexing():
    a, b, c = nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1)
    seq = nn.Sequential(a, b, c)
    assert seq[0] is a and seq[-1] is c
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    with pytest.raises(IndexError, match="out of range"):
        seq[3]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    del seq[1]
    assert [k for k, _ in seq.named_children()] == ["0", "1", "2"] and seq[1] is c
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert [n for n, _ in named.named_parameters()] == ["first.weight", "first.bias"]


def test_modulelist():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
    layers.append(nn.Linear(2, 3))
    layers += [nn.ReLU()]
    layers.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in layers] == ["Tanh", "Linear", "Linear", "Linear", "ReLU"]
    assert len(list(layers.parameters())) == 6
    assert [n for n, _ in layers.named_parameters()][0] == "1.weight"
    del layers[0]
    assert isinstance(layers[0], nn.Linear)
    with pytest.raises(NotImplementedError):
        layers(fc.zeros(1))
    with pytest.raises(TypeError, match="iterable"):
        layers.extend(3)


def test_deepcopy_module_copies_parameters():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    clone = copy.deepcopy(model)
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight.requires_grad
    assert clone[0].weight.data_ptr() != model[0].weight.data_ptr()
    assert clone[0].weight.tolist() == model[0].weight.tolist()
    x = fc.ones(1, 2)
    assert clone(x).tolist() == model(x).tolist()
