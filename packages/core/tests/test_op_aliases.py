"""PyTorch's alias names (arcsin, absolute, multiply, greater, clip, fix, ...) and the in-place forms of the
comparisons and of pow: each alias is its op under another name (the function, method, in-place form and out=),
checked against PyTorch 2.13's alias on the same inputs."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

X = [[0.25, -0.5, 0.75], [1.5, -2.0, 0.0]]
Y = [[0.5, -0.5, 2.0], [1.0, 3.0, -1.0]]
ABOVE_ONE = [[1.25, 2.0, 3.0], [1.0, 5.0, 10.0]]

# alias -> (op, has in-place form, inputs)
UNARY = {
    "arcsin": ("asin", X),
    "arccos": ("acos", X),
    "arctan": ("atan", X),
    "arcsinh": ("asinh", X),
    "arccosh": ("acosh", ABOVE_ONE),
    "arctanh": ("atanh", X),
    "absolute": ("abs", X),
    "fix": ("trunc", X),
    "negative": ("neg", X),
}
BINARY = {
    "arctan2": "atan2",
    "multiply": "mul",
    "subtract": "sub",
    "divide": "div",
    "true_divide": "div",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
}


def assert_same(got, expected):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(got, widen=True), expected.numpy(), rtol=1e-6)


def pair(values, dtype=torch.float32):
    return fc.tensor(values, dtype=getattr(fc, str(dtype).split(".")[-1])), torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize("alias", list(UNARY))
def test_unary_alias(alias):
    op, values = UNARY[alias]
    f, t = pair(values)
    expected = getattr(torch, alias)(t)
    assert_same(getattr(fc, alias)(f), expected)
    assert_same(getattr(fc, op)(f), expected)
    assert_same(getattr(f, alias)(), expected)
    out = fc.empty(0)
    assert getattr(fc, alias)(f, out=out) is out
    assert_same(out, expected)
    target = f.clone()
    assert getattr(target, alias + "_")() is target
    assert_same(target, getattr(t.clone(), alias + "_")())


@pytest.mark.parametrize("alias", list(BINARY))
def test_binary_alias(alias):
    (fx, tx), (fy, ty) = pair(X), pair(Y)
    expected = getattr(torch, alias)(tx, ty)
    assert_same(getattr(fc, alias)(fx, fy), expected)
    assert_same(getattr(fc, BINARY[alias])(fx, fy), expected)
    assert_same(getattr(fx, alias)(fy), expected)
    if alias != "arctan2":  # atan2 takes tensors only
        assert_same(getattr(fx, alias)(2), getattr(tx, alias)(2))
    target = fx.clone()
    assert getattr(target, alias + "_")(fy) is target
    assert_same(target, getattr(tx.clone(), alias + "_")(ty))


def test_keyword_arguments_of_aliases():
    (fx, tx), (fy, ty) = pair(X), pair(Y)
    assert_same(fc.subtract(fx, fy, alpha=3), torch.subtract(tx, ty, alpha=3))
    assert_same(fx.subtract_(fy, alpha=2), tx.subtract_(ty, alpha=2))
    assert_same(fc.divide(fx, fy, rounding_mode="floor"), torch.divide(tx, ty, rounding_mode="floor"))
    assert_same(fc.clip(fx, -0.3, 0.6), torch.clip(tx, -0.3, 0.6))
    assert_same(fx.clip(min=0.0), tx.clip(min=0.0))
    lo, hi = pair([-0.1, -1.0, 0.0])[0], pair([0.1, 1.0, 0.5])[0]
    assert_same(fc.clip(fx, lo, hi), torch.clip(tx, torch.tensor([-0.1, -1.0, 0.0]), torch.tensor([0.1, 1.0, 0.5])))
    target = fx.clone()
    assert target.clip_(-0.3, 0.6) is target
    assert_same(target, tx.clone().clip_(-0.3, 0.6))
    assert_same(fc.row_stack([fx, fy]), torch.row_stack([tx, ty]))


def test_integer_true_divide_gives_float():
    fi, ti = pair([[1, 2], [3, 4]], torch.int64)
    assert_same(fc.true_divide(fi, 2), torch.true_divide(ti, 2))
    assert_same(fc.divide(fi, 2), torch.divide(ti, 2))


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_inplace_comparisons_write_self_dtype(name, dtype):
    (fx, tx), (fy, ty) = pair([[1, 2, 3], [4, 5, 6]], dtype), pair([3, 2, 1], dtype)
    target = fx.clone()
    assert getattr(target, name + "_")(fy) is target
    assert_same(target, getattr(tx.clone(), name + "_")(ty))
    target = fx.clone()
    assert_same(getattr(target, name + "_")(2), getattr(tx.clone(), name + "_")(2))


def test_inplace_comparison_cannot_broadcast_self():
    f, t = pair([1.0, 2.0])
    with pytest.raises(RuntimeError):
        t.clone().lt_(torch.ones(2, 2))
    with pytest.raises(fc.FlambeauError):
        f.clone().lt_(fc.ones(2, 2))


def test_pow_inplace():
    (fx, tx), (fy, ty) = pair([[1.0, 2.0], [3.0, 0.5]]), pair([2.0, -1.0])
    assert fx.pow_(fy) is fx
    assert_same(fx, tx.pow_(ty))
    assert_same(fx.pow_(2), tx.pow_(2))
    fi, ti = pair([1, 2, 3], torch.int64)
    with pytest.raises(RuntimeError):
        ti.pow_(0.5)
    with pytest.raises(TypeError, match=r"can't be cast"):
        fi.pow_(0.5)


def test_aliases_are_documented_as_aliases():
    assert fc.arcsin.__doc__.splitlines()[2] == "Alias for `asin`."
    assert "Alias for `mul`." in fc.Tensor.multiply.__doc__
