"""Module API: registration, iteration, modes, zero_grad, hooks, state_dict, repr.
Against PyTorch: buffers, forward/backward hooks, in-place dtype conversion, ModuleDict /
ParameterList / ParameterDict / Unflatten, traversal helpers, bad input."""

from __future__ import annotations

import copy
import warnings

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from flambeau_core import FlambeauError
from flambeau_core.testing import devices
from nn_testing import assert_close, copy_params, from_torch, to_numpy, to_torch


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


# ---- buffers ----


class _WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("running", fc.zeros(2))
        self.register_buffer("scratch", fc.ones(3), persistent=False)
        self.register_buffer("count", fc.zeros((), dtype=fc.int64))
        self.register_buffer("absent", None)

    def forward(self, x):
        return self.lin(x) + self.running


class _TWithBuffers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.register_buffer("running", torch.zeros(2))
        self.register_buffer("scratch", torch.ones(3), persistent=False)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("absent", None)


def test_non_persistent_buffers_out_of_state_dict_as_torch():
    ours, theirs = _WithBuffers(), _TWithBuffers()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    # Loading a state dict never needs (nor accepts, when strict) the non-persistent buffer.
    sd = ours.state_dict()
    assert "scratch" not in sd
    assert ours.load_state_dict(sd).missing_keys == []
    with pytest.raises(RuntimeError, match='Unexpected key.*"scratch"'):
        ours.load_state_dict({**sd, "scratch": fc.ones(3)})
    # Re-registering as persistent brings it back.
    ours.register_buffer("scratch", fc.ones(3), persistent=True)
    assert "scratch" in ours.state_dict()


def test_buffer_registration_errors():
    m = nn.Module()
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'b'"):
        m.register_buffer("b", 3)
    with pytest.raises(KeyError, match="cannot contain"):
        m.register_buffer("a.b", fc.ones(1))
    m.x = 1
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("x", fc.ones(1))


def test_named_buffers_modules_get_submodule_apply_match_torch():
    ours = nn.Sequential(_WithBuffers(), nn.Sequential(nn.Linear(2, 2), _WithBuffers()))
    theirs = torch.nn.Sequential(_TWithBuffers(), torch.nn.Sequential(torch.nn.Linear(2, 2), _TWithBuffers()))
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_buffers(prefix="m", recurse=True)] == [
        n for n, _ in theirs.named_buffers(prefix="m", recurse=True)
    ]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_modules(prefix="root")] == [n for n, _ in theirs.named_modules(prefix="root")]
    assert type(ours.get_submodule("1.1.lin")).__name__ == "Linear"
    with pytest.raises(AttributeError, match="nope"):
        ours.get_submodule("1.nope")
    seen_o, seen_t = [], []
    ours.apply(lambda m: seen_o.append(type(m).__name__))
    theirs.apply(lambda m: seen_t.append(type(m).__name__.replace("_T", "_")))
    assert seen_o == seen_t


def test_zero_grad_set_to_none_and_zeros():
    m = nn.Linear(3, 2)
    m(fc.ones(1, 3)).sum().backward()
    g = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is g and g.tolist() == [[0.0] * 3] * 2
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


# ---- forward hooks ----


def _pair_linear():
    theirs = torch.nn.Linear(3, 2)
    ours = nn.Linear(3, 2)
    copy_params(ours, theirs)
    return ours, theirs


def test_forward_hooks_signatures_order_and_results_match_torch():
    ours, theirs = _pair_linear()
    logs = {"o": [], "t": []}

    def install(m, key):
        log = logs[key]
        m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)

        def pre_kw(mod, args, kwargs):
            log.append(("prekw", len(args), sorted(kwargs)))
            return (args[0] * 2,), kwargs

        m.register_forward_pre_hook(pre_kw, with_kwargs=True)

        def post(mod, args, out):
            log.append("post")
            return out + 1

        def post_kw(mod, args, kwargs, out):
            log.append(("postkw", sorted(kwargs)))

        m.register_forward_hook(post)
        m.register_forward_hook(post_kw, with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: log.append("post0"), prepend=True)

    install(ours, "o")
    install(theirs, "t")
    x = torch.randn(4, 3)
    assert_close(ours(from_torch(x)), theirs(x))
    assert logs["o"] == logs["t"]


def test_forward_pre_hook_returning_single_value_is_wrapped():
    ours, theirs = _pair_linear()
    ours.register_forward_pre_hook(lambda m, args: args[0] * 0)
    theirs.register_forward_pre_hook(lambda m, args: args[0] * 0)
    x = torch.randn(2, 3)
    assert_close(ours(from_torch(x)), theirs(x))


def test_forward_hook_always_call_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    calls = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(fc.ones(1))
    assert calls == [("always", None)]


def test_hook_handles_remove_and_context_manager():
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda *a: calls.append(1), with_kwargs=False, always_call=True)
    with m.register_forward_pre_hook(lambda *a: calls.append(0), with_kwargs=True):
        m(fc.ones(1, 2))
    m(fc.ones(1, 2))
    h.remove()
    h.remove()  # idempotent
    m(fc.ones(1, 2))
    assert calls == [0, 1, 1]
    assert not m._forward_hooks and not m._forward_hooks_always_called and not m._forward_pre_hooks_with_kwargs


def test_hook_bad_input():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="hook must be callable"):
        m.register_forward_hook(3)
    with pytest.raises(TypeError, match="hook must be callable"):
        m.register_full_backward_hook("x")
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
        m(fc.ones(1, 2))
    m2 = nn.Linear(2, 2)
    m2.register_forward_hook(lambda mod, args: None)  # wrong arity: Python's own TypeError
    with pytest.raises(TypeError):
        m2(fc.ones(1, 2))


# ---- backward hooks ----


class _Two(torch.nn.Module):
    def forward(self, a, b, scale):
        return a * b * scale, a + b


class _TwoOurs(nn.Module):
    def forward(self, a, b, scale):
        return a * b * scale, a + b


def _run_backward_hooks(mod, a, b, log, replace_input=False, replace_output=False):
    def pre(m, grad_output):
        log.append(("pre", [None if g is None else tuple(g.shape) for g in grad_output]))
        if replace_output:
            return tuple(None if g is None else g * 2 for g in grad_output)
        return None

    def full(m, grad_input, grad_output):
        log.append(
            (
                "full",
                [None if g is None else _np(g) for g in grad_input],
                [None if g is None else _np(g) for g in grad_output],
            )
        )
        if replace_input:
            return tuple(None if g is None else g * 10 for g in grad_input)
        return None

    mod.register_full_backward_pre_hook(pre)
    mod.register_full_backward_hook(full)
    y, z = mod(a, b, 3.0)
    (y.sum() + (z * z).sum()).backward()


# Not nn_testing.to_numpy: hook logs compared as lists rounded to 5 digits, of either framework's tensors.
def _np(t):
    return (t.detach().numpy() if isinstance(t, torch.Tensor) else to_torch(t).numpy()).round(5).tolist()


@pytest.mark.parametrize("replace_input", [False, True])
@pytest.mark.parametrize("replace_output", [False, True])
@pytest.mark.parametrize("b_requires_grad", [True, False])
def test_full_backward_hooks_match_torch(replace_input, replace_output, b_requires_grad):
    g = torch.Generator().manual_seed(0)
    ta = torch.randn(3, generator=g, requires_grad=True)
    tb = torch.randn(3, generator=g, requires_grad=b_requires_grad)
    oa, ob = from_torch(ta).requires_grad_(), from_torch(tb)
    if b_requires_grad:
        ob.requires_grad_()
    log_t, log_o = [], []
    _run_backward_hooks(_Two(), ta, tb, log_t, replace_input, replace_output)
    _run_backward_hooks(_TwoOurs(), oa, ob, log_o, replace_input, replace_output)
    assert log_o == log_t
    assert_close(oa.grad, ta.grad, rtol=1e-5)
    if b_requires_grad:
        assert_close(ob.grad, tb.grad, rtol=1e-5)


def test_full_backward_hook_on_linear_with_no_input_grad_matches_torch():
    ours, theirs = _pair_linear()
    log_o, log_t = [], []
    ours.register_full_backward_hook(lambda m, gi, go: log_o.append((gi, _np(go[0]))))
    theirs.register_full_backward_hook(lambda m, gi, go: log_t.append((gi, _np(go[0]))))
    x = torch.randn(2, 3)
    ours(from_torch(x)).pow(2).sum().backward()
    theirs(x).pow(2).sum().backward()
    assert log_o == log_t and log_o[0][0] == (None,)
    assert_close(ours.weight.grad, theirs.weight.grad)


def test_backward_hook_bad_return():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    x = fc.ones(1, 2).requires_grad_()
    with pytest.raises(RuntimeError, match="invalid number of grad_inputs, got 2, but expected 1"):
        m(x).sum().backward()


def test_no_hooks_fast_path_builds_no_graph_nodes_of_its_own():
    m = nn.Linear(2, 2)
    y = m(fc.ones(1, 2))
    assert y.grad_fn.name() == "LinearBackward0"


# ---- to() / double() / float() / half(): in place ----


def test_to_double_converts_in_place_and_keeps_optimizer_working():
    m = nn.Sequential(_WithBuffers(), nn.Linear(2, 2))
    params = list(m.parameters())
    ids = [id(p) for p in params]
    m(fc.ones(1, 2)).sum().backward()
    grads = [p.grad for p in params]
    opt = nn.optim.SGD(m.parameters(), lr=0.1)
    assert m.double() is m
    assert [id(p) for p in m.parameters()] == ids
    for p, g in zip(m.parameters(), grads, strict=True):
        assert p.dtype == fc.float64 and isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
        assert p.grad is g and g.dtype == fc.float64
    assert m[0].running.dtype == fc.float64 and m[0].count.dtype == fc.int64 and m[0].absent is None
    before = m[1].weight.detach().clone()
    opt.step()
    assert not fc.equal(before, m[1].weight) if hasattr(fc, "equal") else before.tolist() != m[1].weight.tolist()
    opt.zero_grad()
    m(fc.ones(1, 2, dtype=fc.float64)).sum().backward()
    assert m[1].weight.grad.dtype == fc.float64
    m.float()
    assert m[1].weight.dtype == fc.float32 and [id(p) for p in m.parameters()] == ids


def test_to_forms_and_reduced_precision():
    m = nn.Linear(2, 3)
    w = m.weight
    m.to(fc.float64)
    assert m.weight is w and w.dtype == fc.float64 and m.bias.dtype == fc.float64
    m.to("cpu", fc.float32)
    assert w.dtype == fc.float32
    m.to(fc.ones(1, dtype=fc.float64))
    assert w.dtype == fc.float64
    m.to(device="cpu", dtype=fc.float32, non_blocking=True)
    assert w.dtype == fc.float32
    for convert, dtype in ((m.half, fc.float16), (m.bfloat16, fc.bfloat16)):
        try:
            convert()
        except TypeError as e:  # core cannot cast to this dtype yet: a clear error, nothing changed
            assert "not supported" in str(e)
            assert w.dtype == fc.float32 and m.bias.dtype == fc.float32
        else:
            assert w.dtype == dtype and m.weight is w
            m.float()


def test_to_bad_input_as_torch():
    m = nn.Linear(2, 3)
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes, but got desired dtype"):
        m.to(fc.int64)
    with pytest.raises(TypeError, match="expects a dtype or a device"):
        m.to(3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        m.to(colour="red")
    with pytest.raises(TypeError):
        torch.nn.Linear(2, 3).to(torch.int64)


@devices(types=("sim", "cuda"))
def test_cpu_moves_parameters_buffers_and_grads_back(device):
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    want = {k: v.tolist() for k, v in m.state_dict().items()}
    weight = m[0].weight
    m.to(device)
    m(fc.ones(4, 3, device=device)).sum().backward()
    assert weight.device.type == device and weight.grad.device.type == device
    assert m.cpu() is m
    assert all(t.device.type == "cpu" for t in [*m.parameters(), *m.buffers()])
    assert m[0].weight is weight and weight.grad.device.type == "cpu"  # the same Parameter, as torch's cpu()
    got = m.state_dict()
    assert {k: got[k].tolist() for k in ("0.weight", "0.bias")} == {k: want[k] for k in ("0.weight", "0.bias")}
    assert int(got["1.num_batches_tracked"]) == 1  # the forward on the device updated the statistics


def test_cuda_argument_errors_as_torch():
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"\[Module.cuda\] expects a CUDA device, got cpu"):
        m.cuda("cpu")
    with pytest.raises(TypeError, match=r"\[Module.cuda\] expects a device index or a device, got float"):
        m.cuda(1.5)
    if not fc.device_module("cuda").is_available():
        with pytest.raises(Exception, match="cuda|CUDA"):
            m.cuda()
        assert m.weight.device.type == "cpu"  # a failed move leaves the module as it was


def test_to_matches_torch_values():
    ours, theirs = _pair_linear()
    ours.double()
    theirs.double()
    x = torch.randn(4, 3, dtype=torch.float64)
    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-12)


# ---- containers ----


def test_moduledict_matches_torch():
    ours = nn.ModuleDict({"b": nn.Linear(2, 2), "a": nn.ReLU()})
    theirs = torch.nn.ModuleDict({"b": torch.nn.Linear(2, 2), "a": torch.nn.ReLU()})
    assert list(ours.keys()) == list(theirs.keys())
    ours.update([("c", nn.Linear(2, 1))])
    theirs.update([("c", torch.nn.Linear(2, 1))])
    ours["d"] = nn.Tanh()
    theirs["d"] = torch.nn.Tanh()
    assert list(ours) == list(theirs) and len(ours) == len(theirs) == 4
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert type(ours.pop("a")).__name__ == "ReLU" and "a" not in ours
    del ours["d"]
    assert list(ours.keys()) == ["b", "c"]
    with pytest.raises(TypeError, match="is not a Module subclass"):
        ours["x"] = 3
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        ours.update(5)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        ours.update([("x", nn.ReLU(), 1)])
    assert repr(nn.ModuleDict({"l": nn.Linear(2, 2)})) == repr(torch.nn.ModuleDict({"l": torch.nn.Linear(2, 2)}))


def test_parameterlist_matches_torch():
    ours = nn.ParameterList([nn.Parameter(fc.zeros(2)), fc.ones(3)])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2)), torch.ones(3)])
    assert isinstance(ours[1], nn.Parameter) and ours[1].requires_grad
    ours.append(nn.Parameter(fc.ones(1, 2)))
    theirs.append(torch.nn.Parameter(torch.ones(1, 2)))
    ours.extend([fc.zeros(4)])
    theirs.extend([torch.zeros(4)])
    assert len(ours) == len(theirs) == 4
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours[-1] is ours[3]
    assert len(ours[1:3]) == 2
    ours[0] = fc.full((2,), 5.0)
    assert ours[0].tolist() == [5.0, 5.0] and isinstance(ours[0], nn.Parameter)
    assert [tuple(p.shape) for p in ours] == [(2,), (3,), (1, 2), (4,)]
    with pytest.raises(IndexError, match="out of range"):
        ours[4]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ours.extend(5)
    with pytest.raises(RuntimeError, match="should not be called"):
        ours(1)
    # PyTorch stores non-tensor objects as they are (not parameters).
    ours.append("note")
    theirs.append("note")
    assert ours[4] == theirs[4] == "note"
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 4
    assert ours.extra_repr().splitlines()[0] == "(0): Parameter containing: [flambeau.float32 of size 2]"


def test_parameterdict_matches_torch():
    ours = nn.ParameterDict({"b": nn.Parameter(fc.zeros(2)), "a": fc.ones(3)})
    theirs = torch.nn.ParameterDict({"b": torch.nn.Parameter(torch.zeros(2)), "a": torch.ones(3)})
    assert list(ours.keys()) == list(theirs.keys())  # a plain dict: keys sorted, as PyTorch
    assert isinstance(ours["a"], nn.Parameter)
    ours["c"] = nn.Parameter(fc.ones(1))
    theirs["c"] = torch.nn.Parameter(torch.ones(1))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "a" in ours and len(ours) == 3
    assert tuple(ours.pop("a").shape) == (3,) and "a" not in ours
    assert ours.get("zz", 7) == 7
    assert tuple(ours.setdefault("d", fc.zeros(5)).shape) == (5,)
    merged = ours | nn.ParameterDict({"e": fc.zeros(1)})
    assert list(merged.keys()) == ["b", "c", "d", "e"]
    with pytest.raises(KeyError):
        ours["missing"]
    with pytest.raises(TypeError, match="not a string"):
        ours[3] = fc.ones(1)
    with pytest.raises(RuntimeError, match="should not be called"):
        ours()
    cp = copy.deepcopy(ours)
    assert list(cp.keys()) == list(ours.keys()) and cp["b"] is not ours["b"]


def test_unflatten_and_flatten_match_torch():
    x = torch.randn(3, 12, 2)
    for dim, sizes in [(1, (3, 4)), (1, (2, -1)), (-1, (1, 2)), (0, [3, 1])]:
        assert_close(nn.Unflatten(dim, sizes)(from_torch(x)), torch.nn.Unflatten(dim, sizes)(x))
    assert repr(nn.Unflatten(1, (3, 4))) == repr(torch.nn.Unflatten(1, (3, 4)))
    assert repr(nn.Flatten()) == repr(torch.nn.Flatten())
    assert repr(nn.Identity()) == repr(torch.nn.Identity())
    seq_o = nn.Sequential(nn.Flatten(), nn.Unflatten(1, (4, 6)))
    seq_t = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Unflatten(1, (4, 6)))
    assert_close(seq_o(from_torch(x)), seq_t(x))
    assert_close(nn.Flatten(0, 1)(from_torch(x)), torch.nn.Flatten(0, 1)(x))
    y = from_torch(x).requires_grad_()
    nn.Unflatten(1, (3, 4))(y).sum().backward()
    assert y.grad.tolist() == torch.ones(3, 12, 2).tolist()


def test_unflatten_bad_input():
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float"):
        nn.Unflatten(1, (2, 2.5))
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 4)
    with pytest.raises(RuntimeError, match="does not match the size 12"):
        nn.Unflatten(1, (5, 3))(fc.ones(2, 12))
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.Unflatten(3, (2, 6))(fc.ones(2, 12))


def test_state_dict_of_containers_loads_into_torch():
    ours = nn.ModuleDict({"p": nn.ParameterList([fc.ones(2)]), "d": nn.ParameterDict({"w": fc.zeros(3)})})
    theirs = torch.nn.ModuleDict(
        {"p": torch.nn.ParameterList([torch.zeros(2)]), "d": torch.nn.ParameterDict({"w": torch.ones(3)})}
    )
    theirs.load_state_dict({k: to_torch(v) for k, v in ours.state_dict().items()})
    assert theirs["p"][0].tolist() == [1.0, 1.0]


def test_warnings_free_call_path():
    m = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fa.no_grad():
            m(fc.ones(1, 2))


def test_flambeau_error_type():
    assert issubclass(FlambeauError, RuntimeError) and issubclass(FlambeauError, ValueError)


@pytest.mark.parametrize(
    "name", ["flambeau_nn.modules.flatten", "flambeau_nn.modules._backward_hook", "flambeau_nn.init"]
)
def test_docstring_examples_of_new_modules(name):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(name), verbose=False).failed == 0


@pytest.mark.parametrize("dst", ["float64", "DoubleTensor", "torch.DoubleTensor", "HalfTensor"])
def test_type_takes_dtypes_legacy_types_and_names_as_torch(dst):
    def convert(lib, tnn):
        m = tnn.Linear(2, 2)
        m.register_buffer("n", lib.tensor(3))
        m.type(dst if dst.startswith("torch.") else getattr(lib, dst))
        return [str(t.dtype).rsplit(".", 1)[-1] for t in (m.weight, m.bias, m.n)], type(m.weight).__name__

    assert convert(fc, nn) == convert(torch, torch.nn)
    with pytest.raises(TypeError, match=r"\[Module.type\] expects a dtype, a tensor type or its name, got int"):
        nn.Linear(2, 2).type(3)
