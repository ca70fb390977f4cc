"""Helpers shared by the tests of flambeau.func against torch.func (test_func.py, test_vmap.py)."""

from __future__ import annotations

import flambeau as fb
import numpy as np
import torch


def pair(rng: np.random.Generator, *shape: int) -> tuple[fb.Tensor, torch.Tensor]:
    """The same float64 values as a flambeau and a torch tensor."""
    a = rng.standard_normal(shape)
    return fb.tensor(a), torch.tensor(a)


def close(ours, theirs, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """Same pytree (tuples, lists, dicts) and the same values; a Tensor exactly where torch has one."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            close(ours[k], theirs[k], rtol, atol)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (type(ours), type(theirs))
        for a, b in zip(ours, theirs, strict=True):
            close(a, b, rtol, atol)
    else:
        assert isinstance(ours, fb.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
