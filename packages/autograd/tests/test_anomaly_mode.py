"""set_anomaly_enabled / is_anomaly_check_nan_enabled (flambeau_autograd/anomaly_mode.py) against PyTorch
2.13: the mode and the recorded check_nan flag, the NaN check they switch, and the errors."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch


@pytest.fixture
def restored():
    yield
    ag.set_anomaly_enabled(False, True)
    torch.set_anomaly_enabled(False, True)


def test_flags_follow_torch(restored):
    for lib in (ag, torch):
        assert (lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()) == (False, True)
    for enabled, check_nan in ((True, True), (True, False), (False, False), (False, True)):
        ag.set_anomaly_enabled(enabled, check_nan)
        torch.set_anomaly_enabled(enabled, check_nan)
        ours = (ag.is_anomaly_enabled(), ag.is_anomaly_check_nan_enabled())
        assert ours == (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == (enabled, check_nan)
    ag.set_anomaly_enabled(True)
    assert ag.is_anomaly_check_nan_enabled()


def test_the_mode_switches_the_nan_check(restored):
    x = fc.tensor([0.0], requires_grad=True)
    (x.sqrt() * 0.0).sum().backward()  # off: the NaN gradient passes
    ag.set_anomaly_enabled(True)
    with pytest.raises(RuntimeError, match="SqrtBackward0"):
        (x.sqrt() * 0.0).sum().backward()
    ag.set_anomaly_enabled(False)
    (x.sqrt() * 0.0).sum().backward()


def test_set_anomaly_enabled_wants_bools(restored):
    with pytest.raises(TypeError):
        torch.set_anomaly_enabled(1)
    with pytest.raises(TypeError, match=r"\[set_anomaly_enabled\] expected bools enabled and check_nan, got int"):
        ag.set_anomaly_enabled(1)
