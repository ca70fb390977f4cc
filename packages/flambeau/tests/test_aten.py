"""flambeau.ops.aten against torch.ops.aten: the same names and overloads reach the same operators."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import pytest
import torch


def both(a):
    return fb.tensor(a), torch.tensor(a)


def same(ours, theirs):
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.numpy(), rtol=1e-12)
    assert tuple(ours.shape) == tuple(theirs.shape)


A = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize(
    "name, overload, args",
    [
        ("add", "Tensor", lambda t: (t, t)),
        ("mul", "Tensor", lambda t: (t, t)),
        ("sum", "dim_IntList", lambda t: (t, [1], False)),
        ("mm", "default", lambda t: (t[0], t[0].transpose(0, 1))),
        ("slice", "Tensor", lambda t: (t, 2, 1, 4, 2)),
        ("slice", "Tensor", lambda t: (t, 0)),
        ("select", "int", lambda t: (t, 1, -1)),
        ("exp", "default", lambda t: (t,)),
        ("transpose", "int", lambda t: (t, 0, 2)),
    ],
)
def test_aten_ops_match_torch(name, overload, args):
    fx, tx = both(A)
    same(
        getattr(getattr(fb.ops.aten, name), overload)(*args(fx)),
        getattr(getattr(torch.ops.aten, name), overload)(*args(tx)),
    )
    same(getattr(fb.ops.aten, name)(*args(fx)), getattr(torch.ops.aten, name)(*args(tx)))


def test_native_dropout_backward_matches_torch():
    g, mask = np.random.default_rng(0).standard_normal(6), np.array([True, False, True, True, False, False])
    ours = fb.ops.aten.native_dropout_backward(fb.tensor(g), fb.tensor(mask), 2.0)
    same(ours, torch.ops.aten.native_dropout_backward(torch.tensor(g), torch.tensor(mask), 2.0))


def test_max_pool2d_with_indices_backward_matches_torch():
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6))
    fx, tx = both(x)
    out, idx = fb.nn.functional.max_pool2d(fx, 3, 2, 1, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True)
    g = np.random.default_rng(2).standard_normal(tuple(tout.shape))
    ours = fb.ops.aten.max_pool2d_with_indices_backward(fb.tensor(g), fx, [3, 3], [2, 2], [1, 1], [1, 1], False, idx)
    theirs = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.tensor(g), tx, [3, 3], [2, 2], [1, 1], [1, 1], False, tidx
    )
    same(ours, theirs)


def test_max_pool2d_with_indices_backward_differentiates_as_torch():
    # double backward of max_pool2d: linear in grad_output, and a zero gradient (not none) for self
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 6))
    fx, tx = (t.requires_grad_() for t in both(x))
    _, idx = fb.nn.functional.max_pool2d(fx, 3, 2, 0, ceil_mode=True, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(tx, 3, 2, 0, ceil_mode=True, return_indices=True)
    g = np.random.default_rng(4).standard_normal(tuple(tout.shape))
    fg, tg = (t.requires_grad_() for t in both(g))
    ours = fb.ops.aten.max_pool2d_with_indices_backward(fg, fx, 3, 2, 0, 1, True, idx)
    theirs = torch.ops.aten.max_pool2d_with_indices_backward(tg, tx, [3, 3], [2, 2], [0, 0], [1, 1], True, tidx)
    same(ours, theirs.detach())
    w = np.random.default_rng(5).standard_normal(x.shape)
    (ours * fb.tensor(w)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()
    same(fx.grad, tx.grad)
    same(fg.grad, tg.grad)
    assert fb.autograd.gradcheck(
        lambda gr: fb.ops.aten.max_pool2d_with_indices_backward(gr, fx, 3, 2, 0, 1, True, idx),
        [fg.detach().requires_grad_()],
    )


def test_an_unknown_aten_op_and_bad_arguments_raise():
    with pytest.raises(AttributeError, match=r"flambeau has no built-in operator 'aten::no_such_op'"):
        fb.ops.aten.no_such_op  # noqa: B018
    with pytest.raises(IndexError, match=r"\[aten.slice\] dim 3 is out of range for a tensor of 3 dims"):
        fb.ops.aten.slice(fb.ones(2, 2, 2), 3)
    with pytest.raises(ValueError, match=r"\[aten.slice\] step must be positive, got 0"):
        fb.ops.aten.slice(fb.ones(2), 0, 0, 2, 0)


def test_aten_is_reserved_for_built_in_operators():
    def my_op(x: fb.Tensor) -> fb.Tensor:
        return x

    with pytest.raises(ValueError, match="aten"):
        fb.library.custom_op("aten::my_op", mutates_args=())(my_op)
