"""index_reduce, Tensor.index_reduce and index_reduce_ (flambeau_core/_index_reduce.py) against PyTorch
2.13 for every reduction, include_self, dims and dtypes, and the error paths."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(13)


def torch_index_reduce(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "index_reduce() is in beta"
        return torch.index_reduce(*args, **kwargs)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
@pytest.mark.parametrize(
    ("shape", "dim", "index"), [((5, 3), 0, [0, 4, 2, 0]), ((2, 4, 3), 1, [3, 3, 1]), ((4,), -1, [1, 1])]
)
def test_index_reduce_matches_torch(shape, dim, index, reduce, include_self, dtype):
    a = np.asarray((RNG.standard_normal(shape) * 5).astype(dtype))
    src_shape = list(shape)
    src_shape[dim] = len(index)
    s = np.asarray((RNG.standard_normal(src_shape) * 5).astype(dtype))
    idx = np.array(index, dtype=np.int64)
    expected = torch_index_reduce(
        torch.from_numpy(a), dim, torch.from_numpy(idx), torch.from_numpy(s), reduce, include_self=include_self
    )
    got = fc.index_reduce(fc.tensor(a), dim, fc.tensor(idx), fc.tensor(s), reduce, include_self=include_self)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-6)
    x = fc.tensor(a)
    assert x.index_reduce_(dim, fc.tensor(idx), fc.tensor(s), reduce, include_self=include_self) is x
    np.testing.assert_allclose(to_numpy(x), expected.numpy(), rtol=1e-6)
    method = fc.tensor(a).index_reduce(dim, fc.tensor(idx).int(), fc.tensor(s), reduce, include_self=include_self)
    np.testing.assert_allclose(to_numpy(method), expected.numpy(), rtol=1e-6)


Y, S, IDX = fc.ones(5, 3), fc.ones(4, 3), fc.tensor([0, 4, 2, 0])
ERRORS = [
    (lambda: fc.index_reduce(Y, 0, IDX, S, "sum"), fc.FlambeauError, r"\[index_reduce\] Expected reduce to be one of"),
    (lambda: fc.index_reduce(Y, 0, IDX.float(), S, "prod"), TypeError, r"\[index_reduce\] Expected dtype int32/int64"),
    (lambda: fc.index_reduce(Y, 0, fc.tensor([5]), S[:1], "prod"), IndexError, r"\[index_reduce\] index out of range"),
    (lambda: fc.index_reduce(Y, 0, fc.tensor([-1]), S[:1], "prod"), IndexError, r"\[index_reduce\] index out of range"),
    (lambda: fc.index_reduce(Y, 0, IDX, S[:3], "prod"), fc.FlambeauError, r"\[index_reduce\] Number of indices \(4\)"),
    (lambda: fc.index_reduce(Y, 0, IDX, S.double(), "mean"), TypeError, r"\[index_reduce\] self .* must have the same"),
    (lambda: fc.index_reduce(Y, 2, IDX, S, "mean"), IndexError, r"\[index_reduce\] Dimension out of range"),
    (lambda: fc.index_reduce(Y, 0, IDX, fc.ones(4, 2), "mean"), fc.FlambeauError, r"\[index_reduce\] source .* match"),
    (lambda: fc.index_reduce(Y, 0, IDX.reshape(2, 2), S, "mean"), IndexError, r"\[index_reduce\] Index is supposed"),
    (lambda: fc.index_reduce(Y, 0, [0], S, "mean"), TypeError, r"\[index_reduce\] expected a Tensor as 'index'"),
]


@pytest.mark.parametrize(("call", "exc", "words"), ERRORS)
def test_index_reduce_errors(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
