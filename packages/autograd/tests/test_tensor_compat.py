"""Tensor.as_subclass, the removed Tensor.volatile and Tensor.name, against PyTorch 2.13."""

from __future__ import annotations

import warnings

import flambeau_autograd
import flambeau_core as fc
import pytest
import torch


def subclass_of(lib):
    return type("Tagged", (lib.Tensor,), {})


@pytest.mark.parametrize("requires_grad", [False, True])
def test_as_subclass_shares_memory_and_stays_in_the_graph(requires_grad):
    def run(lib, no_grad):
        cls = subclass_of(lib)
        x = lib.ones(3, requires_grad=requires_grad)
        base = x * 2 if requires_grad else x
        y = base.as_subclass(cls)
        out = [type(y) is cls, y is not base, y.data_ptr() == base.data_ptr(), y.requires_grad, y.is_leaf]
        if requires_grad:
            (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
            out.append(x.grad.tolist())
        with no_grad():
            base.mul_(5)  # the same memory: y sees it
        return [*out, y.tolist()]

    assert run(fc, flambeau_autograd.no_grad) == run(torch, torch.no_grad)


def test_as_subclass_of_a_leaf_and_of_tensor_itself():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x.as_subclass(subclass_of(lib))
        z = x.detach().as_subclass(lib.Tensor)
        return [y.is_leaf, y.requires_grad, y.grad_fn is not None, type(z) is lib.Tensor, z is not x]

    assert run(fc) == run(torch)


def test_as_subclass_errors():
    for lib in (fc, torch):
        with pytest.raises(TypeError, match=r"cls must be a type \(got int\)"):
            lib.ones(1).as_subclass(3)
        with pytest.raises(TypeError, match="from a class that does not inherit from Tensor is not possible"):
            lib.ones(1).as_subclass(int)


def test_volatile_is_false_and_warns_as_torch():
    for lib in (fc, torch):
        x = lib.ones(1)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert x.volatile is False
            x.volatile = True
            assert x.volatile is False
        messages = [str(w.message) for w in seen]
        assert all(w.category is UserWarning for w in seen)
        assert messages[0] == messages[2] == "volatile was removed (Variable.volatile is always False)"
        assert messages[1].startswith("volatile was removed and now has no effect. Use `with ")


def test_name_is_none_and_read_only():
    for lib in (fc, torch):
        x = lib.ones(1, requires_grad=True)
        assert x.name is None and (x * 2).name is None
        with pytest.raises(AttributeError):
            x.name = "a"


@pytest.mark.parametrize("assign", [False, True])
def test_module_load(assign):
    def run(lib):
        p, other = lib.zeros(3), lib.tensor([1.0, 2.0, 3.0])
        q = p.module_load(other, assign=assign)
        return [
            q is not p and q is not other,
            q.data_ptr() == (other if assign else p).data_ptr(),
            p.tolist(),
            q.tolist(),
            q.requires_grad,
        ]

    assert run(fc) == run(torch)


def test_module_load_of_a_leaf_that_requires_grad():
    for lib in (fc, torch):
        p = lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            p.module_load(lib.ones(2))
        q = p.module_load(lib.ones(2), assign=True)  # assign copies nothing
        assert not q.requires_grad and p.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="other must be a Tensor"):
        fc.zeros(2).module_load([1.0, 2.0])
