"""use_deterministic_algorithms and its readers (_determinism.py) against torch."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


@pytest.fixture(autouse=True)
def restore():
    yield
    fc.use_deterministic_algorithms(False)
    torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("mode, warn_only", [(True, False), (True, True), (False, False), (False, True)])
def test_set_and_read_back(mode, warn_only):
    for lib in (fc, torch):
        lib.use_deterministic_algorithms(mode, warn_only=warn_only)
    assert fc.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled() == mode
    assert fc.is_deterministic_algorithms_warn_only_enabled() == torch.is_deterministic_algorithms_warn_only_enabled()
    assert fc.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()


@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2])
def test_debug_mode(mode):
    fc.set_deterministic_debug_mode(mode)
    torch.set_deterministic_debug_mode(mode)
    assert fc.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    assert fc.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()


def test_bad_arguments():
    for bad in (1, "x", None):
        with pytest.raises(TypeError, match=r"\[use_deterministic_algorithms\] mode must be a bool"):
            fc.use_deterministic_algorithms(bad)
        with pytest.raises(TypeError):
            torch.use_deterministic_algorithms(bad)
    with pytest.raises(TypeError, match="warn_only must be a bool"):
        fc.use_deterministic_algorithms(True, warn_only=1)
    assert not fc.are_deterministic_algorithms_enabled()
    with pytest.raises(ValueError, match=r"\[set_deterministic_debug_mode\] expected one of"):
        fc.set_deterministic_debug_mode("loud")
    with pytest.raises(RuntimeError):
        torch.set_deterministic_debug_mode("loud")
    with pytest.raises(ValueError, match="expected 0, 1 or 2"):
        fc.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="expected a str or int"):
        fc.set_deterministic_debug_mode(1.0)
