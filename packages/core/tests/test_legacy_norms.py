"""nuclear_norm / frobenius_norm / matrix_rank (flambeau_core/_legacy_norms.py), torch's deprecated
top-level spellings, against PyTorch 2.13: values, shapes, keepdim, the warnings and the errors."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(31)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def pair(shape, dtype="float64"):
    a = RNG.standard_normal(shape).astype(dtype)
    return fc.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("dim", [(), (0,), 1, (0, 2), (-1, 0), (2,)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_frobenius_norm_matches_torch(dim, keepdim):
    x, t = pair((2, 3, 4))
    ours, theirs = fc.frobenius_norm(x, dim, keepdim), torch.frobenius_norm(t, dim, keepdim)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == fc.float64
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-12)


def test_frobenius_norm_of_complex_is_real():
    z = np.array([[1 + 2j, 3 - 1j]], dtype=np.complex64)
    ours, theirs = fc.frobenius_norm(fc.tensor(z), (1,)), torch.frobenius_norm(torch.tensor(z), (1,))
    assert ours.dtype == fc.float32
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nuclear_norm(x),
        lambda m, x: m.nuclear_norm(x, True),
        lambda m, x: m.nuclear_norm(x, (0, 2)),
        lambda m, x: m.nuclear_norm(x, (1, 2), keepdim=True),
    ],
)
def test_nuclear_norm_matches_torch(call):
    x, t = pair((2, 3, 4))
    ours, theirs = call(fc, x), call(torch, t)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-10)


def test_the_norms_warn_that_they_are_deprecated():
    x = fc.eye(2)
    with pytest.warns(UserWarning, match=r"\[nuclear_norm\] nuclear_norm is deprecated; use linalg.matrix_norm"):
        fc.nuclear_norm(x)
    with pytest.warns(UserWarning, match=r"\[frobenius_norm\] frobenius_norm is deprecated; use linalg.vector_norm"):
        fc.frobenius_norm(x, (0, 1))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.frobenius_norm(m.ones(2, 3, 4), (0, 1, 2)), fc.FlambeauError, "Expected at most 2 dimensions"),
        (lambda m: m.frobenius_norm(m.ones(2, 3), (0, 0)), fc.FlambeauError, "dim 0 appears multiple times"),
        (lambda m: m.frobenius_norm(m.arange(3), (0,)), TypeError, "input dtype should be either floating point"),
        (lambda m: m.nuclear_norm(m.arange(6).reshape(2, 3)), TypeError, "floating point"),
    ],
)
def test_norm_errors_match_torch(call, error, message):
    with pytest.raises(RuntimeError, match=message):
        call(torch)
    with pytest.raises(error, match=r"^\[(frobenius|nuclear)_norm\] .*" + message):
        call(fc)


def test_matrix_rank_is_removed_as_in_torch():
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        torch.matrix_rank(torch.eye(2))
    with pytest.raises(fc.FlambeauError, match=r"\[matrix_rank\] This function was deprecated since version 1.9"):
        fc.matrix_rank(fc.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fc.linalg.matrix_rank(fc.eye(3)).item() == 3
