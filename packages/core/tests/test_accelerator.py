"""flambeau.accelerator (accelerator.py) without an accelerator, against torch on a CPU-only machine.
(With the simulated device as the accelerator: packages/flambeau/tests/test_accelerator.py.)"""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


def no_accelerator_here() -> bool:
    plugin = fc._C._plugin_device_name()
    return fc._C._device_count("cuda") == 0 and not (plugin and fc._C._device_count(plugin) > 0)


@pytest.fixture(autouse=True)
def cpu_only():
    # Checked when each test runs: another test of the session may register the simulated device.
    if not no_accelerator_here():
        pytest.skip("an accelerator is present (a GPU or a registered plug-in device)")


def test_answers_as_torch_on_a_cpu_only_machine():
    A, TA = fc.accelerator, torch.accelerator
    assert TA.current_accelerator() is None  # the oracle is the CPU wheel
    assert A.current_accelerator() is None and A.current_accelerator(check_available=True) is None
    assert A.is_available() is TA.is_available() is False
    assert A.device_count() == TA.device_count() == 0
    with A.device_index(None):  # no-op, as torch's
        pass


@pytest.mark.parametrize(
    "call",
    [
        lambda A: A.current_device_index(),
        lambda A: A.set_device_index(0),
        lambda A: A.synchronize(),
        lambda A: A.synchronize(0),
        lambda A: A.current_stream(),
        lambda A: A.memory_allocated(),
        lambda A: A.reset_accumulated_memory_stats(),
        lambda A: A.empty_cache(),
        lambda A: A.device_index(0).__enter__(),
    ],
    ids=[
        "current_device_index",
        "set_device_index",
        "synchronize",
        "synchronize0",
        "current_stream",
        "memory_allocated",
        "reset_accumulated_memory_stats",
        "empty_cache",
        "device_index",
    ],
)
def test_device_functions_raise_without_accelerator(call):
    with pytest.raises(RuntimeError) as info:
        call(fc.accelerator)
    assert "[accelerator." in str(info.value) and "when none is available" in str(info.value)
    with pytest.raises(RuntimeError, match="when none is available"):
        call(torch.accelerator)
