"""Custom Functions written in Python."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch


class Exp(ag.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_exp_function_matches_builtin_and_gradcheck():
    x = fb_tensor([0.1, -0.5, 1.2], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    assert not ag.is_grad_enabled() or y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.exp([0.1, -0.5, 1.2]))
    assert ag.gradcheck(Exp.apply, (fb_tensor([0.3, 0.7], requires_grad=True),), check_forward_ad=False)  # no jvp


def test_forward_runs_without_grad_and_no_graph_without_inputs_requiring_grad():
    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mode = ag.is_grad_enabled()
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    y = Probe.apply(fb_tensor([1.0]))
    assert not y.requires_grad and y.grad_fn is None
    x = fb_tensor([1.0], requires_grad=True)
    y = Probe.apply(x)
    assert y.requires_grad
    with ag.no_grad():
        assert not Probe.apply(x).requires_grad


def test_needs_input_grad_and_non_tensor_args():
    captured = {}

    class Scale(ag.Function):
        @staticmethod
        def forward(ctx, x, w, factor):
            ctx.save_for_backward(x, w)
            ctx.factor = factor
            captured["needs"] = ctx.needs_input_grad
            return x * w * factor

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g * w * ctx.factor if ctx.needs_input_grad[0] else None
            gw = g * x * ctx.factor if ctx.needs_input_grad[1] else None
            return gx, gw, None

    x = fb_tensor([1.0, 2.0], requires_grad=True)
    w = fb_tensor([3.0, 4.0])
    Scale.apply(x, w, 2.0).sum().backward()
    assert captured["needs"] == (True, False, False)
    assert x.grad.tolist() == [6.0, 8.0] and w.grad is None


def test_mark_dirty():
    class AddOneInplace(ag.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = fb_tensor([1.0, 2.0], requires_grad=True)
    b = a * 2.0
    c = AddOneInplace.apply(b)
    assert c is b and b.grad_fn.name() == "AddOneInplaceBackward"
    (c * c).sum().backward()
    assert a.grad.tolist() == [12.0, 20.0]  # d/da (2a+1)^2 = 4(2a+1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOneInplace.apply(fb_tensor([1.0], requires_grad=True))


def test_mark_non_differentiable_and_multiple_outputs():
    class SortLike(ag.Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = x.max(0)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            ctx.shape = tuple(x.shape)
            return values, idx

        @staticmethod
        def backward(ctx, g_values, g_idx):
            (idx,) = ctx.saved_tensors
            return fc.zeros(*ctx.shape, dtype=g_values.dtype).scatter_add(0, idx.unsqueeze(0), g_values.unsqueeze(0))

    x = fb_tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
    v, i = SortLike.apply(x)
    assert v.requires_grad and not i.requires_grad
    v.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_input_returned_unchanged_gets_its_own_history():
    class Identity(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    x = fb_tensor([1.0], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [3.0]


def test_saved_tensor_version_check_and_second_backward():
    x = fb_tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = Exp.apply(h)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[ExpBackward\] saved version 0, now at version 1"):
        y.sum().backward()
    y = Exp.apply(x * 1.0)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_backward_errors():
    class BadCount(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return fc.ones(5, dtype=fc.float64)

    class Raises(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("custom failure")

    x = fb_tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="returned 2 gradients"):
        BadCount.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0.*\(5,\).*\(2,\)"):
        BadShape.apply(x).sum().backward()
    with pytest.raises(ValueError, match="custom failure"):
        Raises.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="apply"):
        Exp()


def test_custom_function_in_a_torch_checked_chain():
    vals = [0.2, -0.4, 0.9]
    x = fb_tensor(vals, requires_grad=True)
    tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    (Exp.apply(x * x).tanh()).sum().backward()
    ((tx * tx).exp().tanh()).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10)
