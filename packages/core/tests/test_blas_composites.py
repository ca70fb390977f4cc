"""addmm, addmv, addr, baddbmm and addbmm (functions, methods, in-place forms, out=) against PyTorch 2.13:
values and dtypes with beta and alpha, input broadcast to the product's shape, beta=0 ignoring NaN in input,
and the errors for bad shapes and dtypes."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(7)


def arr(*shape):
    return RNG.standard_normal(shape)


# name -> (input shape (full), operand shapes, input shapes that broadcast)
CASES = {
    "addmm": ((3, 4), [(3, 5), (5, 4)], [(4,), (1, 4), (3, 1), ()]),
    "addmv": ((3,), [(3, 5), (5,)], [(1,), ()]),
    "addr": ((3, 4), [(3,), (4,)], [(4,), (3, 1), ()]),
    "baddbmm": ((2, 3, 4), [(2, 3, 5), (2, 5, 4)], [(3, 4), (1, 1, 4), ()]),
    "addbmm": ((3, 4), [(2, 3, 5), (2, 5, 4)], [(4,), (3, 1), ()]),
}
SCALARS = [{}, {"beta": 2.0, "alpha": 0.5}, {"beta": 0.0}, {"alpha": 0}, {"beta": -1, "alpha": 3}]


def both(shapes, dtype):
    arrays = [arr(*s) for s in shapes]
    ours = [fc.tensor(a, dtype=getattr(fc, dtype)) for a in arrays]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype)) for a in arrays]
    return ours, theirs


def assert_same(got, expected, rtol=1e-5):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(got, widen=True), expected.numpy(), rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scalars", SCALARS, ids=str)
def test_values_with_beta_alpha(name, dtype, scalars):
    full, operands, _ = CASES[name]
    ours, theirs = both([full, *operands], dtype)
    expected = getattr(torch, name)(*theirs, **scalars)
    assert_same(getattr(fc, name)(*ours, **scalars), expected)
    assert_same(getattr(ours[0], name)(*ours[1:], **scalars), expected)


@pytest.mark.parametrize("name", list(CASES))
def test_input_broadcasts_to_the_product(name):
    full, operands, small = CASES[name]
    for shape in small:
        ours, theirs = both([shape, *operands], "float64")
        assert_same(getattr(fc, name)(*ours, beta=0.5), getattr(torch, name)(*theirs, beta=0.5))


@pytest.mark.parametrize("name", list(CASES))
def test_beta_zero_ignores_nan_and_inf_in_input(name):
    full, operands, _ = CASES[name]
    ours, theirs = both([full, *operands], "float32")
    poison = np.full(full, np.nan)
    poison.flat[0] = np.inf
    ours[0], theirs[0] = fc.tensor(poison, dtype=fc.float32), torch.tensor(poison, dtype=torch.float32)
    got = getattr(fc, name)(*ours, beta=0)
    assert np.isfinite(to_numpy(got)).all()
    assert_same(got, getattr(torch, name)(*theirs, beta=0))


@pytest.mark.parametrize("name", list(CASES))
def test_inplace_and_out(name):
    full, operands, _ = CASES[name]
    ours, theirs = both([full, *operands], "float64")
    expected = getattr(torch, name)(*theirs, beta=0.5, alpha=2)
    target = ours[0].clone()
    assert getattr(target, name + "_")(*ours[1:], beta=0.5, alpha=2) is target
    assert_same(target, expected)
    out = fc.empty(0, dtype=fc.float64)
    assert getattr(fc, name)(*ours, beta=0.5, alpha=2, out=out) is out
    assert_same(out, expected)


@pytest.mark.parametrize("name", ["addmm", "addr"])
def test_inplace_needs_input_of_the_product_shape(name):
    _, operands, small = CASES[name]
    ours, theirs = both([small[0], *operands], "float64")
    with pytest.raises(RuntimeError):
        getattr(theirs[0], name + "_")(*theirs[1:])
    with pytest.raises(fc.FlambeauError):
        getattr(ours[0], name + "_")(*ours[1:])


def test_integer_matrices():
    a = [[1, 2], [3, 4]]
    for dt in ("int32", "int64"):
        ours = [fc.tensor(a, dtype=getattr(fc, dt)) for _ in range(3)]
        theirs = [torch.tensor(a, dtype=getattr(torch, dt)) for _ in range(3)]
        assert_same(fc.addmm(*ours, beta=2, alpha=3), torch.addmm(*theirs, beta=2, alpha=3))


def test_addr_promotes_like_torch():
    ours = fc.addr(fc.tensor([1, 2]), fc.tensor([1.0, 2.0], dtype=fc.float64), fc.tensor([3, 4]))
    theirs = torch.addr(torch.tensor([1, 2]), torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([3, 4]))
    assert_same(ours, theirs)


def test_empty_inner_and_batch_dims():
    ours, theirs = both([(3, 4), (3, 0), (0, 4)], "float32")
    assert_same(fc.addmm(*ours, beta=2), torch.addmm(*theirs, beta=2))
    ours, theirs = both([(3, 4), (0, 3, 5), (0, 5, 4)], "float32")
    assert_same(fc.addbmm(*ours), torch.addbmm(*theirs))


@pytest.mark.parametrize(
    ("name", "shapes", "words"),
    [
        ("addmm", [(3, 4), (3, 5), (6, 4)], "cannot be multiplied (3x5 and 6x4)"),
        ("addmm", [(3, 4), (3, 5, 1), (5, 4)], "expected mat1 to be 2-D"),
        ("addmm", [(2, 4), (3, 5), (5, 4)], "cannot be broadcast to the product's shape (3, 4)"),
        ("addmv", [(3,), (3, 5), (4,)], "size mismatch"),
        ("addmv", [(3,), (3, 5), (5, 1)], "expected vec to be 1-D"),
        ("addr", [(3, 4), (3, 1), (4,)], "expected vec1 to be 1-D"),
        ("baddbmm", [(2, 3, 4), (2, 3, 5), (3, 5, 4)], "same number of batches, got 2 and 3"),
        ("baddbmm", [(2, 3, 4), (2, 3, 5), (2, 6, 4)], "cannot be multiplied"),
        ("addbmm", [(3, 4), (3, 5), (5, 4)], "expected batch1 to be 3-D"),
    ],
)
def test_shape_errors(name, shapes, words):
    ours, theirs = both(shapes, "float32")
    with pytest.raises((RuntimeError, IndexError)):
        getattr(torch, name)(*theirs)
    with pytest.raises(fc.FlambeauError, match=rf"^\[{name}\].*{__import__('re').escape(words)}"):
        getattr(fc, name)(*ours)


@pytest.mark.parametrize("name", ["addmm", "baddbmm", "addbmm", "addmv"])
def test_mixed_dtypes_raise(name):
    full, operands, _ = CASES[name]
    ours, theirs = both([full, *operands], "float32")
    theirs[-1], ours[-1] = theirs[-1].double(), ours[-1].to(fc.float64)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(*theirs)
    with pytest.raises(TypeError, match=rf"^\[{name}\] expected input, .* to have the same dtype, got float32"):
        getattr(fc, name)(*ours)
