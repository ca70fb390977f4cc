"""Parameter (parameter.py) and the modules holding them through copy.copy, copy.deepcopy and pickle,
against PyTorch 2.13: types kept or not, requires_grad, .grad, attributes, strides, tied weights,
and a model sent to a worker process through multiprocessing."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import flambeau_autograd  # noqa: F401  (requires_grad)
import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch


class TaggedParameter(nn.Parameter):
    """A module-level subclass (pickle finds classes by name)."""


class TorchTaggedParameter(torch.nn.Parameter):
    pass


LIBS = [(fc, nn, TaggedParameter), (torch, torch.nn, TorchTaggedParameter)]


def pickled(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("copier", [pickled, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_parameter_round_trip(requires_grad, copier):
    for lib, tnn, _ in LIBS:
        p = tnn.Parameter(lib.arange(6.0).reshape(2, 3).t(), requires_grad=requires_grad)
        p.grad = lib.ones(3, 2) if requires_grad else None
        q = copier(p)
        assert type(q) is tnn.Parameter and q.requires_grad is requires_grad and q.is_leaf
        assert q.tolist() == p.tolist() and tuple(q.stride()) == (1, 3)
        assert q.data_ptr() != p.data_ptr()
        assert q.grad is None  # neither copies a Parameter's grad, in PyTorch either


def test_subclass_and_attributes():
    for lib, tnn, Sub in LIBS:
        p = Sub(lib.ones(2))
        p.tag = {"group": 1}
        q, d = pickled(p), copy.deepcopy(p)
        assert type(q) is tnn.Parameter and q.tag == {"group": 1}  # pickle: a Parameter, with __dict__
        assert type(d) is Sub and not hasattr(d, "tag")  # deepcopy: type(self)(data, requires_grad)
        c = copy.copy(p)  # through __reduce_ex__ in PyTorch: a Parameter sharing memory and __dict__ values
        assert type(c) is tnn.Parameter and c.data_ptr() == p.data_ptr() and c.tag is p.tag and c.requires_grad


def build(lib, tnn):
    lib.manual_seed(0)
    model = tnn.Sequential(tnn.Linear(3, 4), tnn.ReLU(), tnn.Linear(4, 3))
    model[2].weight = model[0].weight.__class__(model[0].weight.detach().t().contiguous())
    model.add_module("tied", model[0])  # the same module twice
    model.register_buffer("steps", lib.tensor(5))
    model.eval()
    return model


@pytest.mark.parametrize("copier", [pickled, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_module_round_trip(copier):
    for lib, tnn, _ in LIBS:
        model = build(lib, tnn)
        x = lib.arange(6.0).reshape(2, 3)
        out = copier(model)
        assert type(out) is type(model) and out.training is False
        assert out(x).tolist() == model(x).tolist()
        assert out.tied is out[0]  # identity inside one copy is kept
        assert out.steps.item() == 5
        names = [n for n, _ in out.named_parameters()]
        assert names == [n for n, _ in model.named_parameters()]
        for p, q in zip(model.parameters(), out.parameters(), strict=True):
            assert type(q) is tnn.Parameter and q.requires_grad and q.data_ptr() != p.data_ptr()
        out[0].weight.detach().zero_()
        assert model[0].weight.abs().sum().item() > 0


def test_module_with_grads_deepcopy_drops_grads_as_torch():
    for lib, tnn, _ in LIBS:
        model = tnn.Linear(2, 2)
        model(lib.ones(1, 2)).sum().backward()
        assert model.weight.grad is not None
        assert copy.deepcopy(model).weight.grad is None
        assert pickled(model).weight.grad is None


def _forward_in_child(model, x, queue):
    queue.put(model(x).tolist())


def test_model_goes_to_a_spawned_process():
    model = build(fc, nn)
    x = fc.arange(6.0).reshape(2, 3)
    ctx = multiprocessing.get_context("spawn")  # everything crosses by pickle
    queue = ctx.Queue()
    proc = ctx.Process(target=_forward_in_child, args=(model, x, queue))
    proc.start()
    try:
        got = queue.get(timeout=120)
    finally:
        proc.join(timeout=60)
    assert proc.exitcode == 0
    assert got == model(x).tolist()


# ---- nn.Buffer and the lazy modules' placeholders ----


def _keys(m):
    return list(m.state_dict()), [n for n, _ in m.named_buffers()]


def test_buffer_assignment_registers_like_torch():
    ours, theirs = nn.Module(), torch.nn.Module()
    ours.a = nn.Buffer(fc.ones(2))
    ours.b = nn.Buffer(fc.zeros(3), persistent=False)
    theirs.a = torch.nn.Buffer(torch.ones(2))
    theirs.b = torch.nn.Buffer(torch.zeros(3), persistent=False)
    assert _keys(ours) == _keys(theirs) == (["a"], ["a", "b"])
    ours.b = nn.Buffer(fc.zeros(3))  # re-assigning with persistent=True makes it persistent
    theirs.b = torch.nn.Buffer(torch.zeros(3))
    assert _keys(ours) == _keys(theirs)
    assert tuple(ours.b.shape) == (3,)


def test_buffer_errors():
    with pytest.raises(TypeError, match=r"\[Buffer\] data must be a Tensor"):
        nn.Buffer([1.0])
    with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):

        class Early(nn.Module):
            def __init__(self):
                self.b = nn.Buffer(fc.ones(1))

        Early()


def test_uninitialized_placeholders():
    p = nn.UninitializedParameter()
    assert p.requires_grad and p.numel() == 0 and repr(p) == "<UninitializedParameter>"
    real = p.materialize((2, 3), dtype=fc.float64)
    assert type(real) is nn.Parameter and tuple(real.shape) == (2, 3) and real.dtype == fc.float64
    b = nn.UninitializedBuffer()
    assert tuple(b.materialize((4,)).shape) == (4,) and not b.requires_grad
