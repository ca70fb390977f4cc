"""flambeau.accelerator (accelerator.py) without an accelerator, against torch on a CPU-only machine.

Run in a fresh process: other tests of the session register the simulated device, which then is
the accelerator (that case: packages/flambeau/tests/test_accelerator.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CALLS = {
    "current_device_index": "A.current_device_index()",
    "set_device_index": "A.set_device_index(0)",
    "synchronize": "A.synchronize()",
    "synchronize0": "A.synchronize(0)",
    "current_stream": "A.current_stream()",
    "memory_allocated": "A.memory_allocated()",
    "reset_accumulated_memory_stats": "A.reset_accumulated_memory_stats()",
    "empty_cache": "A.empty_cache()",
    "empty_host_cache": "A.empty_host_cache()",
    "get_memory_info": "A.get_memory_info()",
    "get_device_capability": "A.get_device_capability()",
    "device_index": "A.device_index(0).__enter__()",
}

SCRIPT = """
import json, sys
import flambeau_core as fc
import torch
out = {}
for lib, A in (("flambeau", fc.accelerator), ("torch", torch.accelerator)):
    plugin = fc._C._plugin_device_name()
    r = {
        "present": fc._C._device_count("cuda") > 0 or bool(plugin and fc._C._device_count(plugin) > 0),
        "current": repr(A.current_accelerator()),
        "current_checked": repr(A.current_accelerator(check_available=True)),
        "available": A.is_available(),
        "count": A.device_count(),
    }
    with A.device_index(None):
        pass
    for name, call in json.loads(sys.argv[1]).items():
        try:
            eval(call)
            r[name] = None
        except Exception as e:
            r[name] = [type(e).__name__, isinstance(e, RuntimeError), str(e)]
    out[lib] = r
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def answers():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(CALLS)], capture_output=True, text=True, timeout=300, check=True
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    if out["flambeau"]["present"]:
        pytest.skip("this machine has an accelerator (a CUDA GPU)")
    return out


def test_answers_as_torch_on_a_cpu_only_machine(answers):
    ours, theirs = answers["flambeau"], answers["torch"]
    assert ours["current"] == theirs["current"] == "None"
    assert ours["current_checked"] == "None"
    assert ours["available"] is theirs["available"] is False
    assert ours["count"] == theirs["count"] == 0


@pytest.mark.parametrize("name", CALLS)
def test_device_functions_raise_without_accelerator(answers, name):
    ours, theirs = answers["flambeau"][name], answers["torch"][name]
    assert ours is not None and ours[1], ours  # a RuntimeError (FlambeauError)
    assert f"[accelerator.{name.rstrip('0')}]" in ours[2]
    assert "when none is available" in ours[2]
    assert theirs is not None and theirs[1] and "when none is available" in theirs[2]
