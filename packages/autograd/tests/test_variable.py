"""flambeau_autograd.Variable against torch.autograd.Variable: an alias of the data, requires_grad as
given, isinstance true of every tensor, the volatile warning and the error for non-tensors."""

from __future__ import annotations

import warnings

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch
from torch.autograd import Variable as TorchVariable


@pytest.mark.parametrize("source_requires_grad", [False, True])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_detached_alias_as_torch(source_requires_grad, requires_grad):
    x = fc.ones(3, requires_grad=source_requires_grad)
    t = torch.ones(3, requires_grad=source_requires_grad)
    v, tv = ag.Variable(x, requires_grad=requires_grad), TorchVariable(t, requires_grad=requires_grad)
    assert v is not x and v.data_ptr() == x.data_ptr()
    assert (v.requires_grad, v.is_leaf, v.grad_fn is None) == (tv.requires_grad, tv.is_leaf, tv.grad_fn is None)
    if requires_grad:
        (v * 2).sum().backward()
        assert v.grad.tolist() == [2.0, 2.0, 2.0]


def test_isinstance_and_empty_variable():
    assert isinstance(fc.zeros(1), ag.Variable) and not isinstance([1.0], ag.Variable)
    assert tuple(ag.Variable().shape) == tuple(TorchVariable().shape) == (0,)


def test_volatile_warns_and_non_tensors_raise():
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        ag.Variable(fc.ones(1), volatile=True)
    assert "volatile was removed and now has no effect" in str(ours[0].message)
    with pytest.raises(TypeError, match=r"\[Variable\] Variable data has to be a tensor, but got list"):
        ag.Variable([1, 2])
