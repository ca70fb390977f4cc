"""masked_fill and index_fill with a 0-d tensor value (PyTorch's .Tensor overloads): the value gets the
sum of the gradient over the filled places, input the rest; against PyTorch 2.13.0 and gradcheck."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 5))
MASK = RNG.random((4, 5)) < 0.4


def test_masked_fill_with_a_tensor_value():
    fb_mask, th_mask = fc.tensor(MASK.tolist()), torch.tensor(MASK)
    compare_with_torch(
        lambda x, v: x.masked_fill(fb_mask, v), lambda x, v: x.masked_fill(th_mask, v), [X, np.array(2.5)]
    )


def test_masked_fill_with_a_broadcast_mask():
    row = MASK[:1]
    fb_mask, th_mask = fc.tensor(row.tolist()), torch.tensor(row)
    compare_with_torch(
        lambda x, v: fc.masked_fill(x, fb_mask, v), lambda x, v: torch.masked_fill(x, th_mask, v), [X, np.array(-1.0)]
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_fill_with_a_tensor_value(dim):
    fb_index, th_index = fc.tensor([0, 2]), torch.tensor([0, 2])
    compare_with_torch(
        lambda x, v: x.index_fill(dim, fb_index, v), lambda x, v: x.index_fill(dim, th_index, v), [X, np.array(0.5)]
    )


def test_in_place_fills_with_a_tensor_value():
    v = fb_tensor(np.array(3.0), requires_grad=True)
    x = fb_tensor(X, requires_grad=True)
    y = x * 1.0
    y.masked_fill_(fc.tensor(MASK.tolist()), v)
    y.index_fill_(1, fc.tensor([4]), v)
    y.sum().backward()
    filled = MASK.copy()
    filled[:, 4] = True
    assert v.grad.item() == filled.sum()
    np.testing.assert_array_equal(np.array(x.grad.tolist()), (~filled).astype(float))


def test_the_value_is_cast_to_the_input_dtype():
    got = fc.zeros(3, dtype=fc.int64).masked_fill(fc.tensor([True, False, True]), fc.tensor(1.5))
    want = torch.zeros(3, dtype=torch.int64).masked_fill(torch.tensor([True, False, True]), torch.tensor(1.5))
    assert got.tolist() == want.tolist() and got.dtype == fc.int64


@pytest.mark.parametrize("name", ["masked_fill", "index_fill"])
def test_a_value_with_dims_is_refused(name):
    x = fc.zeros(3)
    args = (fc.tensor([True, False, True]),) if name == "masked_fill" else (0, fc.tensor([1]))
    with pytest.raises(ValueError, match=rf"\[{name}\] expected a 0-dimensional value tensor, got one of shape \(2,\)"):
        getattr(x, name)(*args, fc.tensor([1.0, 2.0]))
