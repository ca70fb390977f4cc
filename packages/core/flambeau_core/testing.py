"""Test support shared by every package's tests: one parametrisation over devices.

An op test written once runs on every device flambeau can reach here::

    from flambeau_core.testing import devices, assert_close_on

    @devices
    def test_exp(device):
        x = fc.tensor([0.0, 1.0], device=device)
        assert_close_on(device, x.exp(), fc.tensor([0.0, 1.0]).exp())

The devices are ``"cpu"``; ``"sim"``, the simulated device of flambeau-alloc
(Note [Simulated device]; registered on first use, skipped with the reason
"flambeau-alloc not installed" only where that package is missing); and
``"cuda"`` (skipped with "flambeau-cuda not installed" or "no CUDA GPU").
Each case's id is its device type (``-k "not sim"`` deselects one). The
module imports pytest, so import it from tests only; it is a plain module
(not a conftest), so packages' conftests never collide over it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import flambeau_core

__all__ = ["DEVICE_TYPES", "assert_close_on", "device_params", "devices", "skip_reason"]

#: The device types of the parametrisation, in order.
DEVICE_TYPES = ("cpu", "sim", "cuda")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def skip_reason(device_type: str) -> str | None:
    """Why tests on ``device_type`` cannot run in this process, or None if they can."""
    if device_type == "cpu":
        return None
    if device_type == "sim":
        if not _installed("flambeau_alloc"):
            return "flambeau-alloc not installed"
        from flambeau_alloc import sim

        if not sim.is_registered():
            sim.register(num_devices=2)
        return None
    if device_type == "cuda":
        if not _installed("flambeau_cuda"):
            return "flambeau-cuda not installed"
        import flambeau_cuda  # noqa: F401  (registers the CUDA backend)

        if not flambeau_core.cuda.is_available():
            return "no CUDA GPU"
        return None
    raise ValueError(f"[device_params] unknown device type {device_type!r}; expected one of {DEVICE_TYPES}")


def device_params(types: tuple[str, ...] = DEVICE_TYPES) -> list[Any]:
    """``pytest.param`` per device type (the value is the device string), skipped with a reason where unavailable."""
    params = []
    for t in types:
        reason = skip_reason(t)
        marks = [pytest.mark.skip(reason=reason)] if reason is not None else []
        params.append(pytest.param(t, id=t, marks=marks))
    return params


def devices(fn: Any = None, *, types: tuple[str, ...] = DEVICE_TYPES) -> Any:
    """Decorator: parametrises a test's ``device`` argument over ``types`` (default: cpu, sim, cuda)."""
    mark = pytest.mark.parametrize("device", device_params(types))
    return mark(fn) if fn is not None else mark


def _as_device(device: Any) -> Any:
    return device if isinstance(device, flambeau_core.device) else flambeau_core.device(device)


def _synchronize(device: Any) -> None:
    d = _as_device(device)
    if d.type != "cpu":
        flambeau_core.device_module(d.type).synchronize()


def assert_close_on(device: Any, result: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """``result`` (computed on ``device``) is on that device and matches ``expected`` (computed on the cpu).

    Tensors, and tuples/lists of them, are compared by device, shape, dtype and
    value (NaNs compare equal); anything else by equality.
    """
    import numpy as np

    if isinstance(expected, (tuple, list)):
        assert isinstance(result, (tuple, list)) and len(result) == len(expected), (result, expected)
        for r, e in zip(result, expected, strict=True):
            assert_close_on(device, r, e, rtol=rtol, atol=atol)
        return
    if not isinstance(expected, flambeau_core.Tensor):
        assert result == expected, (result, expected)
        return
    assert isinstance(result, flambeau_core.Tensor), type(result)
    want = _as_device(device)
    got = result.device
    assert got.type == want.type and (want.index is None or got.index == want.index), (
        f"result on {got}, expected {want}"
    )
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert tuple(result.shape) == tuple(expected.shape), (tuple(result.shape), tuple(expected.shape))
    _synchronize(got)
    r, e = result.cpu(), expected.cpu()
    if r.dtype.is_complex:
        rv, ev = np.array(r.tolist(), dtype=complex), np.array(e.tolist(), dtype=complex)
    else:
        rv, ev = np.array(r.tolist(), dtype=np.float64), np.array(e.tolist(), dtype=np.float64)
    np.testing.assert_allclose(rv, ev, rtol=rtol, atol=atol, equal_nan=True)
