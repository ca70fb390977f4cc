"""The default device (fc.set_default_device / get_default_device / `with fc.device(d):`, as PyTorch's)
and flambeau_core.testing's on_devices marker, which runs whole op test modules on every device with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import device_params, devices, skip_reason, to_host

SIM = pytest.mark.skipif(skip_reason("sim") is not None, reason=str(skip_reason("sim")))


def _factories():
    """Every factory that follows the default device, called without device=."""
    return {
        "tensor": fc.tensor([1.0, 2.0]),
        "zeros": fc.zeros(2, 3),
        "ones": fc.ones((2,)),
        "empty": fc.empty(4),
        "full": fc.full((2,), 3.0),
        "rand": fc.rand(3),
        "randn": fc.randn(3),
        "arange": fc.arange(5),
        "linspace": fc.linspace(0, 1, 4),
        "logspace": fc.logspace(0, 1, 4),
        "eye": fc.eye(3),
        "randint": fc.randint(0, 5, (3,)),
        "randperm": fc.randperm(4),
        "normal": fc.normal(0.0, 1.0, (3,)),
        "empty_strided": fc.empty_strided((2, 2), (1, 2)),
        "tril_indices": fc.tril_indices(3, 3),
        "triu_indices": fc.triu_indices(3, 3),
        "fftfreq": fc.fft.fftfreq(4),
        "rfftfreq": fc.fft.rfftfreq(4),
    }


def test_default_is_cpu_as_in_torch():
    assert fc.get_default_device() == fc.device("cpu")
    assert str(torch.get_default_device()) == str(fc.get_default_device())
    assert all(t.device.type == "cpu" for t in _factories().values())


@SIM
def test_with_device_makes_factories_on_it_and_restores():
    with fc.device("sim") as d:
        assert d == fc.device("sim")
        assert fc.get_default_device() == fc.device("sim:0")  # the current sim device, as torch
        made = _factories()
        for name, t in made.items():
            assert t.device.type == "sim", name
        # an explicit device wins; *_like follow their input; from the host stays there
        assert fc.zeros(2, device="cpu").device.type == "cpu"
        cpu = fc.ones(2, device="cpu")
        assert fc.zeros_like(cpu).device.type == "cpu" and fc.full_like(cpu, 2).device.type == "cpu"
        assert fc.frombuffer(bytearray(8), dtype=fc.float32).device.type == "cpu"
        with fc.device("cpu"):  # nested: the inner one, then the outer one again
            assert fc.zeros(1).device.type == "cpu"
        assert fc.zeros(1).device.type == "sim"
        with fc.device("sim:1"):
            assert fc.zeros(1).device == fc.device("sim:1")
        assert fc.arange(3).device == fc.device("sim:0")
    assert fc.get_default_device() == fc.device("cpu") and fc.zeros(1).device.type == "cpu"
    # the values are the cpu's
    with fc.device("sim"):
        x = fc.arange(6, dtype=fc.float64).reshape(2, 3)
        np.testing.assert_array_equal(np.array(to_host(x.exp()).tolist()), np.exp(np.arange(6.0).reshape(2, 3)))


@SIM
def test_set_default_device_and_errors_restore():
    try:
        fc.set_default_device("sim")
        assert fc.tensor(1.0).device.type == "sim"
        fc.set_default_device(None)
        assert fc.tensor(1.0).device.type == "cpu"
        fc.set_default_device(fc.device("sim", 1))
        assert fc.get_default_device() == fc.device("sim:1")
    finally:
        fc.set_default_device(None)
    with pytest.raises(ValueError, match="boom"), fc.device("sim"):
        raise ValueError("boom")
    assert fc.get_default_device().type == "cpu"


@SIM
def test_default_device_is_per_thread():
    seen = []
    with fc.device("sim"):
        t = threading.Thread(target=lambda: seen.append(fc.zeros(1).device.type))
        t.start()
        t.join()
        assert fc.zeros(1).device.type == "sim"
    assert seen == ["cpu"]


def test_bad_default_devices_raise():
    with pytest.raises(TypeError, match="set_default_device"):
        fc.set_default_device(3)
    if not fc.cuda.is_available():  # the error a user sees for a missing device, at once
        with pytest.raises(RuntimeError, match=r"\[set_default_device\] cannot use cuda"):
            fc.set_default_device("cuda")
        with pytest.raises(RuntimeError, match="cannot use cuda"), fc.device("cuda"):
            pass
    assert fc.get_default_device().type == "cpu"


@devices(types=("sim",))
def test_to_host_checks_the_device(device):
    with fc.device(device):
        assert to_host(fc.ones(2)).device.type == "cpu"
        with pytest.raises(AssertionError, match="expected it on sim"):
            to_host(fc.ones(2, device="cpu"))
    assert to_host(3) == 3


PLUGIN_TESTS = """
import flambeau_core as fc
import pytest
from hypothesis import given, settings, strategies as st
from flambeau_core.testing import current_device, devices

pytestmark = pytest.mark.on_devices
RUNS = []


def test_on_every_device():
    RUNS.append(current_device())
    assert fc.zeros(1).device.type == current_device()


@pytest.mark.parametrize("n", [1, 2])
def test_with_params(n):
    assert fc.ones(n).device.type == current_device()


@pytest.mark.on_devices(types=("cpu",))
def test_cpu_only():
    assert current_device() == "cpu"


@pytest.mark.on_devices(not_on_cuda="no kernel yet")
def test_not_on_cuda():
    assert fc.ones(1).device.type == current_device()


@devices(types=("sim",))
def test_own_device_param(device):
    assert fc.get_default_device().type == "cpu" and device == "sim"


EXAMPLES = {}


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 100))
def test_fuzz(i):
    EXAMPLES[current_device()] = EXAMPLES.get(current_device(), 0) + 1


def test_zz_counts():
    assert EXAMPLES["cpu"] == 50 and EXAMPLES.get("sim", 10) == 10, EXAMPLES
"""


def test_on_devices_marker_runs_a_module_on_every_device(tmp_path):
    (tmp_path / "test_plugin.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    sim = skip_reason("sim") is None
    for test in ("test_on_every_device", "test_not_on_cuda", "test_fuzz"):
        assert f"{test}[cpu] PASSED" in out, out
        assert (f"{test}[sim] PASSED" in out) == sim, out
        assert f"{test}[cuda] " in out, out  # skipped with a reason here, or run where a GPU is
    assert "test_with_params[cpu-1] PASSED" in out and "test_with_params[cpu-2] PASSED" in out, out
    assert "test_cpu_only[cpu] PASSED" in out and "test_cpu_only[sim]" not in out, out
    assert "test_own_device_param[sim]" in out and "test_own_device_param[cpu]" not in out, out
    if not fc.cuda.is_available():
        assert "SKIPPED" in out and ("no CUDA GPU" in r.stdout or "flambeau-cuda not installed" in out), out


def test_not_on_cuda_expects_not_implemented_error_on_cuda_only():
    params = {p.id: p for p in device_params(("cpu", "sim", "cuda"), not_on_cuda="conv")}
    xfails = {i: [m for m in p.marks if m.name == "xfail"] for i, p in params.items()}
    assert xfails["cpu"] == [] and xfails["sim"] == []
    (mark,) = xfails["cuda"]
    assert mark.kwargs["raises"] is NotImplementedError and "not yet implemented on CUDA: conv" in mark.kwargs["reason"]
    skips = [m for m in params["cuda"].marks if m.name == "skip"]
    assert bool(skips) == (skip_reason("cuda") is not None)  # no GPU here: skipped with the reason too
