"""Shared test helpers: move values between flambeau and PyTorch (the oracle) by copy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import torch
from flambeau_core.testing import to_host

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
}


def to_numpy(t: fc.Tensor) -> np.ndarray:
    """A NumPy copy of a flambeau tensor (through the buffer protocol).

    A result of an ``on_devices`` case must be on its device (flambeau_core.testing.to_host),
    and is copied to the cpu first."""
    return np.array(memoryview(to_host(t.detach())))


def to_torch(t: fc.Tensor) -> torch.Tensor:
    return torch.from_numpy(to_numpy(t))


def from_torch(x: torch.Tensor) -> fc.Tensor:
    return fc.tensor(x.detach().numpy().copy())


def assert_close(ours: fc.Tensor, theirs: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert ours is not None, "flambeau value is None"
    a = to_numpy(ours)
    b = theirs.detach().numpy()
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def copy_params(ours, theirs) -> None:
    """Copies a torch module's parameters into the flambeau module with the same structure."""
    import flambeau_autograd as fa

    their_params = dict(theirs.named_parameters())
    with fa.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(from_torch(their_params[name]))
