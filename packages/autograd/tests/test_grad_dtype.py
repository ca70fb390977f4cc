"""Tensor.grad_dtype (Note [Gradient dtype]): a leaf's gradient dtype, against PyTorch 2.13 as oracle: the
default (the tensor's dtype), a set dtype the engine casts to (before a sum of several gradients, before the
leaf's hooks, for backward and autograd.grad), None (any dtype), the `.grad = g` check and the errors."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch


def pair(values, dtype="float32"):
    """The same leaf in flambeau and in torch."""
    return (
        fc.tensor(values, dtype=getattr(fc, dtype), requires_grad=True),
        torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True),
    )


def name(dtype) -> str | None:
    return None if dtype is None else str(dtype).split(".")[-1]


def assert_grad(x: fc.Tensor, t: torch.Tensor) -> None:
    assert name(x.grad.dtype) == name(t.grad.dtype)
    assert x.grad.tolist() == t.grad.tolist()  # exact: the same casts and sums


def test_default_is_the_tensor_dtype_and_not_a_grad_requirement():
    for dtype in ["float32", "bfloat16", "float64", "int64"]:
        x = fc.ones(2, dtype=getattr(fc, dtype))
        assert name(x.grad_dtype) == name(torch.ones(2, dtype=getattr(torch, dtype)).grad_dtype) == dtype
    x = fc.ones(2)  # settable without requires_grad, as torch's
    x.grad_dtype = fc.float64
    assert name(x.grad_dtype) == "float64"
    x.requires_grad_(True)
    x.requires_grad_(False)
    assert name(x.grad_dtype) == "float64"
    assert name(x.detach().grad_dtype) == "float32"  # a new tensor: the default again


@pytest.mark.parametrize("grad_dtype", ["float64", "float16", "bfloat16", "complex64"])
def test_backward_casts_to_the_set_dtype_and_accumulates_in_it(grad_dtype):
    x, t = pair([1.0, -2.5, 3.3])
    x.grad_dtype, t.grad_dtype = getattr(fc, grad_dtype), getattr(torch, grad_dtype)
    for _ in range(2):  # the second backward adds into the cast gradient
        (x * 0.1).sum().backward()
        (t * 0.1).sum().backward()
        assert_grad(x, t)


def test_a_16_bit_leaf_gets_a_float32_gradient():
    x, t = pair([1.0, 2.0, -7.0], "bfloat16")
    x.grad_dtype, t.grad_dtype = fc.float32, torch.float32
    (x * 3.3).sum().backward()
    (t * 3.3).sum().backward()
    assert_grad(x, t)  # computed in bfloat16 (3.296875), then widened


def test_each_producer_is_cast_before_the_sum():
    # Two paths into the leaf: torch casts each float32 gradient to float16, then adds them in float16.
    x, t = pair([1.0, 2.0, 3.0])
    x.grad_dtype, t.grad_dtype = fc.float16, torch.float16
    ((x * 0.1) + (x * 1e-4)).sum().backward()
    ((t * 0.1) + (t * 1e-4)).sum().backward()
    assert_grad(x, t)


def test_hooks_see_the_cast_gradient():
    x, t = pair([1.0, 2.0])
    x.grad_dtype, t.grad_dtype = fc.float64, torch.float64
    seen, seen_t = [], []
    x.register_hook(lambda g: seen.append(name(g.dtype)))
    t.register_hook(lambda g: seen_t.append(name(g.dtype)))
    (x * 2).sum().backward()
    (t * 2).sum().backward()
    assert seen == seen_t == ["float64"]


def test_autograd_grad_returns_the_grad_dtype():
    x, t = pair([1.0, 2.0])
    x.grad_dtype, t.grad_dtype = fc.float64, torch.float64
    (g,) = ag.grad((x * 2).sum(), x)
    (gt,) = torch.autograd.grad((t * 2).sum(), t)
    assert name(g.dtype) == name(gt.dtype) == "float64"
    assert g.tolist() == gt.tolist()


def test_create_graph_keeps_the_cast():
    x, t = pair([1.0, 2.0])
    x.grad_dtype, t.grad_dtype = fc.float64, torch.float64
    (x * x).sum().backward(create_graph=True)
    (t * t).sum().backward(create_graph=True)
    assert_grad(x, t)


def test_none_allows_any_dtype():
    x, t = pair([1.0, 2.0])
    x.grad_dtype, t.grad_dtype = None, None
    assert x.grad_dtype is None and t.grad_dtype is None
    x.grad, t.grad = fc.ones(2, dtype=fc.float64), torch.ones(2, dtype=torch.float64)
    (x * 2).sum().backward()  # a float32 gradient added into the float64 one
    (t * 2).sum().backward()
    assert_grad(x, t)
    x.grad, t.grad = None, None
    (x * 2).sum().backward()  # nothing to add into: the gradient keeps its own dtype
    (t * 2).sum().backward()
    assert_grad(x, t)


def test_none_keeps_a_function_gradient_dtype():
    # A custom Function whose backward returns float64 for a float32 input: cast to float32 by default, kept
    # with grad_dtype None, cast to the set dtype otherwise (torch's engine does the same).
    class Twice(ag.Function):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).to(fc.float64)

    class TwiceT(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).double()

    for grad_dtype in ["default", None, "float16"]:
        x, t = pair([1.0, 2.0])
        if grad_dtype != "default":
            x.grad_dtype = grad_dtype and getattr(fc, grad_dtype)
            t.grad_dtype = grad_dtype and getattr(torch, grad_dtype)
        Twice.apply(x).sum().backward()
        TwiceT.apply(t).sum().backward()
        assert_grad(x, t)


def test_assigned_grad_must_match():
    x, t = pair([1.0, 2.0])
    for leaf, lib in [(x, fc), (t, torch)]:
        with pytest.raises(RuntimeError, match="grad_dtype"):
            leaf.grad = lib.ones(2, dtype=lib.float64)
        leaf.grad_dtype = lib.float16
        with pytest.raises(RuntimeError, match="grad_dtype"):
            leaf.grad = lib.ones(2)  # its own dtype no longer
        leaf.grad = lib.ones(2, dtype=lib.float16)
        assert name(leaf.grad.dtype) == "float16"
    with pytest.raises(
        RuntimeError,
        match=r"\[grad\] assigned grad has dtype float32 but the tensor's grad_dtype is "
        r"float16",
    ):
        x.grad = fc.ones(2)


def test_changing_it_under_an_existing_gradient():
    x, t = pair([1.0, 2.0])
    (x * 2).sum().backward()
    (t * 2).sum().backward()
    for leaf, lib in [(x, fc), (t, torch)]:
        with pytest.raises(RuntimeError, match="already a gradient with dtype"):
            leaf.grad_dtype = lib.float64
        leaf.grad_dtype = lib.float32  # the gradient's own dtype is fine
        leaf.grad_dtype = None  # and so is None
        leaf.grad = None
        leaf.grad_dtype = lib.float64
    with pytest.raises(
        RuntimeError,
        match=r"\[grad_dtype\] cannot set grad_dtype to float16 because there is already a "
        "gradient with dtype float32",
    ):
        y = fc.ones(1, requires_grad=True)
        (y * 2).sum().backward()
        y.grad_dtype = fc.float16


def test_non_leaves_refuse_it():
    x, t = pair([1.0, 2.0])
    y, u = x * 2, t * 2
    for tensor in (y, u):
        with pytest.raises(RuntimeError, match="can only be accessed on leaf tensors"):
            tensor.grad_dtype  # noqa: B018
        for value in ((fc if tensor is y else torch).float64, None):
            with pytest.raises(RuntimeError, match="can only be set on leaf tensors"):
                tensor.grad_dtype = value
    with pytest.raises(RuntimeError, match=r"\(this one was made by MulBackward0\)"):
        y.grad_dtype  # noqa: B018


@pytest.mark.parametrize("bad", [3, "float64", 1.5])
def test_only_a_dtype_or_none(bad):
    x, t = pair([1.0])
    for leaf in (x, t):
        with pytest.raises(RuntimeError, match=f"must be a .*dtype or None, but got {type(bad).__name__}"):
            leaf.grad_dtype = bad
    assert name(x.grad_dtype) == "float32"
