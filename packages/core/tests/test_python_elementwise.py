"""Tensor.apply_ / map_ / map2_ (flambeau_core/_python_elementwise.py) against PyTorch 2.13: values, dtype
casts of the callable's results, broadcasting, strided views, and the errors."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_apply_matches_torch(dtype):
    ours = fc.arange(6).reshape(2, 3).to(getattr(fc, dtype))
    theirs = torch.arange(6).reshape(2, 3).to(getattr(torch, dtype))
    fn = (lambda v: not v) if dtype == "bool" else (lambda v: v * 2.7 + 1)
    assert ours.apply_(fn) is ours
    assert ours.reshape(-1).tolist() == pytest.approx(theirs.apply_(fn).reshape(-1).tolist())
    assert ours.dtype == getattr(fc, dtype)


def test_apply_on_a_view_and_on_nothing():
    base, tbase = fc.zeros(4, 6), torch.zeros(4, 6)
    base[:, ::2].apply_(lambda v: v + 3)
    tbase[:, ::2].apply_(lambda v: v + 3)
    assert base.tolist() == tbase.tolist()
    assert fc.zeros(0, 3).apply_(lambda v: 1 / 0).shape == (0, 3)
    assert fc.tensor(2.0).apply_(lambda v: v**3).item() == 8.0


def test_map_and_map2_match_torch():
    ours = fc.arange(4.0).reshape(2, 2).map_(fc.tensor([10.0, 20.0]), lambda a, b: a + b)
    theirs = torch.arange(4.0).reshape(2, 2).map_(torch.tensor([10.0, 20.0]), lambda a, b: a + b)
    assert ours.tolist() == theirs.tolist()
    ours = fc.ones(3).map2_(fc.tensor([1.0, 2.0, 3.0]), fc.tensor([2.0]), lambda a, b, c: a + b * c)
    theirs = torch.ones(3).map2_(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), lambda a, b, c: a + b * c)
    assert ours.tolist() == theirs.tolist()


def test_errors_match_torch():
    if hasattr(fc.Tensor, "backward"):  # requires_grad needs flambeau-autograd
        with pytest.raises(RuntimeError, match="Can't call apply_"):
            torch.ones(2, requires_grad=True).apply_(lambda v: v)
        with pytest.raises(fc.FlambeauError, match=r"\[apply_\] Can't call apply_\(\) on Variable that requires grad"):
            fc.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(TypeError):
        torch.ones(2).apply_(3)
    with pytest.raises(TypeError, match=r"\[apply_\] expected a callable, got int"):
        fc.ones(2).apply_(3)
    with pytest.raises(TypeError):
        torch.ones(2).apply_(lambda v: "a")
    with pytest.raises(TypeError, match=r"\[apply_\] the callable must return a number"):
        fc.ones(2).apply_(lambda v: "a")
    with pytest.raises(RuntimeError, match="expanded size"):
        torch.ones(2).map_(torch.ones(3), lambda a, b: a)
    with pytest.raises(fc.FlambeauError, match=r"\[map_\] 'tensor' of shape \(3,\) does not broadcast to self's"):
        fc.ones(2).map_(fc.ones(3), lambda a, b: a)
    with pytest.raises(TypeError, match="expected torch.FloatTensor"):
        torch.ones(2).map_(torch.ones(2, dtype=torch.int64), lambda a, b: a)
    with pytest.raises(TypeError, match=r"\[map_\] expected 'tensor' of dtype float32 on cpu, got int64"):
        fc.ones(2).map_(fc.ones(2, dtype=fc.int64), lambda a, b: a)
    with pytest.raises(TypeError, match=r"\[map2_\] expected a Tensor as 'y', got list"):
        fc.ones(2).map2_(fc.ones(2), [1.0], lambda a, b, c: a)
