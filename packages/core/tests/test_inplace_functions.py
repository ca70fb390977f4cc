"""The top-level in-place functions (flambeau_core/_inplace_functions.py: fc.sqrt_(x) is x.sqrt_()) against
PyTorch 2.13: every row of the table, values and identity, arguments by position and keyword, and errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core._inplace_functions import _UNARY, FUNCTIONS
from helpers import to_numpy

VALUES = [0.25, 0.5, 0.9, 1.5, 2.0, -0.75]
# positive and below 1 where the function's domain asks
DOMAIN = {"acosh_": [1.25, 2.0, 3.5], "arccosh_": [1.25, 2.0, 3.5]}

ARGS = {
    "addmv_": (lambda m: (m.ones(6, 3), m.arange(3.0)), {"beta": 0.5, "alpha": 2.0}),
    "clamp_": (lambda m: (0.3,), {"max": 1.0}),
    "clip_": (lambda m: (), {"min": -0.5, "max": 0.6}),
    "clamp_max_": (lambda m: (0.6,), {}),
    "clamp_min_": (lambda m: (0.6,), {}),
    "fill_": (lambda m: (3.5,), {}),
    "xlogy_": (lambda m: (m.tensor([2.0, 3.0, 0.5, 1.0, 4.0, 9.0]),), {}),
    "ldexp_": (lambda m: (m.tensor([1, 2, 3, 0, -1, 2]),), {}),
    "logit_": (lambda m: (), {"eps": 0.1}),
    "nan_to_num_": (lambda m: (), {"nan": 1.0, "posinf": 5.0}),
    "round_": (lambda m: (), {"decimals": 1}),
}


def test_the_table_covers_torch_functions():
    for name in FUNCTIONS:
        assert callable(getattr(torch, name)), name
        assert getattr(fc, name) is FUNCTIONS[name]


@pytest.mark.parametrize("name", _UNARY + [n for n in FUNCTIONS if n not in _UNARY and n not in ("gcd_", "lcm_")])
def test_float_functions_match_torch(name):
    values = DOMAIN.get(name, VALUES)
    make_args, kwargs = ARGS.get(name, (lambda m: (), {}))
    x, t = fc.tensor(values), torch.tensor(values)
    ours, theirs = getattr(fc, name)(x, *make_args(fc), **kwargs), getattr(torch, name)(t, *make_args(torch), **kwargs)
    assert ours is x and ours.dtype == fc.float32
    np.testing.assert_allclose(to_numpy(x), theirs.numpy(), rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", ["gcd_", "lcm_"])
def test_integer_functions_match_torch(name):
    a, b = [6, 9, 0, -4, 15], [4, 6, 5, 6, -10]
    x = fc.tensor(a)
    assert getattr(fc, name)(x, fc.tensor(b)) is x
    assert x.tolist() == getattr(torch, name)(torch.tensor(a), torch.tensor(b)).tolist()


def test_a_strided_view_is_written_through():
    base, tbase = fc.ones(4, 6), torch.ones(4, 6)
    fc.mul_(base[:, ::2], 3.0) if hasattr(fc, "mul_") else base[:, ::2].mul_(3.0)
    tbase[:, ::2].mul_(3.0)
    fc.sqrt_(base[1:, ::2])
    torch.sqrt_(tbase[1:, ::2])
    np.testing.assert_allclose(to_numpy(base), tbase.numpy(), rtol=1e-6)


def test_errors_are_worded_for_the_function():
    with pytest.raises(TypeError, match=r"\[sqrt_\] expected a Tensor as 'input', got list"):
        fc.sqrt_([1.0])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.sqrt_(torch.ones(2, dtype=torch.int64))
    # flambeau raises TypeError for a dtype that cannot hold the result (its rule for dtype errors)
    with pytest.raises(TypeError, match=r"^\[sqrt_\] result type float32 can't be cast to the desired output type"):
        fc.sqrt_(fc.ones(2, dtype=fc.int64))
    with pytest.raises(TypeError, match=r"^\[clamp_min_\] "):
        fc.clamp_min_(fc.ones(2))
    with pytest.raises(RuntimeError, match=r"^\[addmv_\] "):
        fc.addmv_(fc.ones(2), fc.ones(2, 3), fc.ones(4))
