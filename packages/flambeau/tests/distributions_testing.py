"""Helpers shared by the flambeau.distributions tests: the same numbers as float64 tensors of both libraries."""

import flambeau as fb
import numpy as np
import torch


def fbt(a, requires_grad=False):
    """A float64 flambeau tensor of ``a``."""
    return fb.tensor(np.asarray(a, dtype=np.float64), dtype=fb.float64, requires_grad=requires_grad)


def tht(a, requires_grad=False):
    """A float64 torch tensor of ``a``."""
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=torch.float64, requires_grad=requires_grad)


def to_np(x):
    """A float64 NumPy array of a tensor of either library (detached)."""
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach().tolist() if isinstance(x, fb.Tensor) else x, dtype=np.float64)


def close(a, b, rtol=1e-9, atol=1e-10):
    """Asserts two tensors (of either library) are equal within float64 tolerances, NaN equal to NaN."""
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=rtol, atol=atol, equal_nan=True)
