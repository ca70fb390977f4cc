"""Tensor.resize / resize_as (flambeau_core/_legacy_resize.py), PyTorch's deprecated out-of-place
resizes, against PyTorch 2.13: shapes, values, the warning, gradients, and the element-count error."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


@pytest.mark.parametrize("sizes", [(2, 3), (6,), (1, 6, 1)])
def test_resize_matches_torch(sizes):
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        ours = fc.arange(6.0).reshape(3, 2).resize(*sizes)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        theirs = torch.arange(6.0).reshape(3, 2).resize(*sizes)
    assert ours.tolist() == theirs.tolist()


def test_resize_as_matches_torch():
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        ours = fc.arange(4).resize_as(fc.zeros(2, 2))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        theirs = torch.arange(4).resize_as(torch.zeros(2, 2))
    assert ours.tolist() == theirs.tolist() and ours.dtype == fc.int64


@pytest.mark.filterwarnings("ignore:non-inplace")
def test_resize_is_differentiable():
    if not hasattr(fc.Tensor, "backward"):
        pytest.skip("gradients need flambeau-autograd")
    x = fc.arange(6.0, requires_grad=True)
    (x.resize(2, 3) * fc.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.filterwarnings("ignore:non-inplace")
def test_resize_keeps_the_element_count():
    with pytest.raises(RuntimeError, match="can only change the shape of a given tensor"):
        torch.arange(6).resize(4)
    with pytest.raises(fc.FlambeauError, match=r"\[resize\] requested resize to \(4,\) \(4 elements in total\)"):
        fc.arange(6).resize(4)
    with pytest.raises(fc.FlambeauError, match=r"\[resize_as\] requested resize to \(3,\)"):
        fc.arange(6).resize_as(fc.zeros(3))
    with pytest.raises(TypeError, match=r"\[resize\] expected a size of ints"):
        fc.arange(6).resize(2.0, 3)
