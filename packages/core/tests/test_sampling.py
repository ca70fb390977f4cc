"""multinomial against PyTorch: the distribution of the draws (with and without replacement, compared with
torch's own draws), zero weights, distinct draws without replacement, the generator, out=, and errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

WEIGHTS = [[0.2, 0.3, 0.5, 0.0], [4.0, 1.0, 0.0, 3.0]]  # unnormalised, with zeros
N = 20_000


def frequencies(draws: np.ndarray, categories: int) -> np.ndarray:
    """How often each (first, second) pair of categories was drawn, per row of weights."""
    pairs = draws[..., 0] * categories + draws[..., 1]
    return np.stack([np.bincount(row, minlength=categories**2) / row.size for row in pairs])


@pytest.mark.parametrize("replacement", [True, False])
def test_draws_follow_torchs_distribution(replacement):
    # N draws of 2 per row: the joint frequencies of (first, second) against torch's, within sampling noise.
    ours_w = fc.tensor(WEIGHTS).unsqueeze(1).expand(2, N, 4).reshape(2 * N, 4)
    theirs_w = torch.tensor(WEIGHTS).unsqueeze(1).expand(2, N, 4).reshape(2 * N, 4)
    torch.manual_seed(0)
    fc.manual_seed(0)
    ours = to_numpy(fc.multinomial(ours_w, 2, replacement=replacement)).reshape(2, N, 2)
    theirs = torch.multinomial(theirs_w, 2, replacement=replacement).numpy().reshape(2, N, 2)
    assert ours.dtype == np.int64
    np.testing.assert_allclose(frequencies(ours, 4), frequencies(theirs, 4), atol=0.015)
    if not replacement:
        assert (ours[..., 0] != ours[..., 1]).all()
    else:  # a zero weight is never drawn while another weight is positive
        assert not (ours[0] == 3).any() and not (ours[1] == 2).any()


def test_without_replacement_uses_zero_weights_last():
    for weights in ([1.0, 0.0, 0.0], [0.0, 2.0, 0.0, 1.0]):
        draws = fc.multinomial(fc.tensor(weights), len(weights)).tolist()
        positive = [i for i, w in enumerate(weights) if w > 0]
        assert sorted(draws) == list(range(len(weights)))
        assert sorted(draws[: len(positive)]) == positive


def test_shapes_method_generator_out():
    weights = fc.tensor(WEIGHTS)
    assert fc.multinomial(weights[0], 5, replacement=True).shape == tuple(
        torch.multinomial(torch.ones(4), 5, True).shape
    )
    assert weights.multinomial(3).shape == (2, 3)
    generator = fc.Generator().manual_seed(11)
    first = fc.multinomial(weights, 3, generator=generator)
    generator.manual_seed(11)
    assert fc.multinomial(weights, 3, generator=generator).tolist() == first.tolist()
    out = fc.zeros(0, dtype=fc.int64)
    assert fc.multinomial(weights, 2, True, out=out) is out and out.shape == (2, 2)
    assert fc.multinomial(fc.tensor([0.0, 5.0], dtype=fc.float64), 3, True).tolist() == [1, 1, 1]


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        ((fc.tensor([0.0, 0.0]), 1), fc.FlambeauError, "got a row whose weights sum to 0"),
        ((fc.tensor([1.0, -1.0]), 1), fc.FlambeauError, "got weights that are inf, nan or < 0"),
        ((fc.tensor([1.0, float("nan")]), 1), fc.FlambeauError, "got weights that are inf, nan or < 0"),
        ((fc.tensor([1.0, float("inf")]), 1), fc.FlambeauError, "got weights that are inf, nan or < 0"),
        ((fc.tensor([1.0, 1.0]), 3), fc.FlambeauError, "cannot draw 3 samples without replacement from 2"),
        ((fc.ones(2, 2, 2), 1), fc.FlambeauError, r"expected 1-D or 2-D weights, got shape \(2, 2, 2\)"),
        ((fc.tensor([1, 2]), 1), TypeError, "expected floating-point weights, got dtype .*int64"),
        ((fc.ones(2), 0), fc.FlambeauError, "expected num_samples > 0, got 0"),
        ((fc.ones(2), 1.0), TypeError, "expected an int num_samples, got float"),
        (([0.5, 0.5], 1), TypeError, "expected a Tensor as 'input', got list"),
    ],
)
def test_errors(args, error, words):
    with pytest.raises(error, match=r"\[multinomial\] .*" + words):
        fc.multinomial(*args)


class Rows:
    """A tensor-like (flambeau.overrides) holding weights, as vmap's batched tensors do: multinomial hands its
    override the draw as one op, named multinomial, which the override runs on the weights it holds."""

    def __init__(self, weights):
        self.weights = weights
        self.dtype, self.shape = weights.dtype, weights.shape

    def dim(self):
        return self.weights.dim()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Rows.seen.append(func.__name__)
        return func(*[a.weights if isinstance(a, Rows) else a for a in args], **(kwargs or {}))


def test_a_tensor_like_gets_the_draw_as_one_op():
    Rows.seen = []
    draws = fc.multinomial(Rows(fc.tensor(WEIGHTS)), 3)
    assert Rows.seen == ["multinomial"] and draws.shape == (2, 3)
    assert [sorted(row) for row in draws.tolist()] == [[0, 1, 2], [0, 1, 3]]  # each row's positive categories
    with pytest.raises(fc.FlambeauError, match=r"\[multinomial\] expected finite non-negative weights"):
        fc.multinomial(Rows(fc.tensor([1.0, -1.0])), 1)  # the draw checks the values it is given
    with pytest.raises(fc.FlambeauError, match=r"\[multinomial\] expected 1-D or 2-D weights"):
        fc.multinomial(Rows(fc.ones(2, 2, 2)), 1)  # the shape is the tensor-like's own, checked before
