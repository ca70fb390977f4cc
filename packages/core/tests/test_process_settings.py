"""The recorded process settings (flambeau_core/_process_settings.py) against PyTorch 2.13: inter-op threads,
float32 matmul precision (and its link with backends.cuda.matmul.allow_tf32), warn-always, and errors."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from flambeau_core import _process_settings


@pytest.fixture
def restored():
    """Each test starts from the defaults and leaves them (the settings are process-wide)."""
    saved, tsaved = dict(_process_settings._state), torch.get_float32_matmul_precision()
    yield
    _process_settings._state.update(saved)
    fc.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision(tsaved)
    torch.backends.cuda.matmul.allow_tf32 = False


def test_matmul_precision_follows_torch(restored):
    assert fc.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    for precision in ("high", "medium", "highest", "medium"):
        fc.set_float32_matmul_precision(precision)
        torch.set_float32_matmul_precision(precision)
        assert fc.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == precision
        assert fc.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32
    # torch 2.13 (in a fresh process: it refuses to read the precision once both APIs were used) reports
    # "high" after allow_tf32 = True and "highest" after allow_tf32 = False
    fc.set_float32_matmul_precision("highest")
    for allow, expected in ((True, "high"), (False, "highest")):
        fc.backends.cuda.matmul.allow_tf32 = allow
        assert fc.get_float32_matmul_precision() == expected


def test_matmul_precision_ignores_an_unknown_name_with_a_warning(restored):
    fc.set_float32_matmul_precision("high")
    with pytest.warns(UserWarning, match="fast is not one of 'highest', 'high', or 'medium'"):
        fc.set_float32_matmul_precision("fast")
    assert fc.get_float32_matmul_precision() == "high"
    with pytest.raises(RuntimeError, match="expects a str"):
        torch.set_float32_matmul_precision(3)
    with pytest.raises(TypeError, match=r"\[set_float32_matmul_precision\] expects a str, but got int"):
        fc.set_float32_matmul_precision(3)


def test_matmul_precision_changes_nothing_on_cpu(restored):
    a, b = fc.randn(16, 16, dtype=fc.float32), fc.randn(16, 16, dtype=fc.float32)
    before = (a @ b).tolist()
    fc.set_float32_matmul_precision("medium")
    assert (a @ b).tolist() == before


def test_interop_threads_are_set_once(restored):
    assert fc.get_num_interop_threads() >= 1
    _process_settings._state["interop_threads"] = None
    fc.set_num_interop_threads(3)
    assert fc.get_num_interop_threads() == 3
    with pytest.raises(fc.FlambeauError, match=r"\[set_num_interop_threads\] Error: cannot set number of interop"):
        fc.set_num_interop_threads(2)


@pytest.mark.parametrize(
    "value, error, message",
    [(0, fc.FlambeauError, "expects a positive integer"), (2.0, TypeError, "expects an int, but got float")],
)
def test_interop_threads_errors_match_torch(restored, value, error, message):
    _process_settings._state["interop_threads"] = None
    with pytest.raises(RuntimeError, match=message):
        torch.set_num_interop_threads(value)
    with pytest.raises(error, match=r"\[set_num_interop_threads\] " + message):
        fc.set_num_interop_threads(value)


def test_warn_always(restored):
    assert fc.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    fc.set_warn_always(True)
    assert fc.is_warn_always_enabled() is True
    fc.set_warn_always(False)
    assert fc.is_warn_always_enabled() is False
    with pytest.raises(RuntimeError, match="expects a bool"):
        torch.set_warn_always(1)
    with pytest.raises(TypeError, match=r"\[set_warn_always\] expects a bool, but got int"):
        fc.set_warn_always(1)


def test_flush_denormal_is_unsupported_and_changes_nothing():
    tiny = fc.tensor([1e-40], dtype=fc.float32)  # a float32 subnormal
    assert fc.set_flush_denormal(True) is False
    assert (tiny * 1.0).item() != 0.0
    assert fc.set_flush_denormal(False) is False
    with pytest.raises(RuntimeError, match="flush_denormal expects a bool"):
        torch.set_flush_denormal(1)
    with pytest.raises(TypeError, match=r"\[set_flush_denormal\] flush_denormal expects a bool, but got int"):
        fc.set_flush_denormal(1)


def test_init_num_threads_keeps_the_process_count():
    import threading

    before = fc.get_num_threads()
    seen = []

    def worker():
        fc.init_num_threads()
        seen.append(fc.get_num_threads())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [before] and torch.init_num_threads() is None and fc.init_num_threads() is None
