"""flambeau-run (flambeau.run): a PyTorch script runs unchanged, as `python script.py` would run it.

Each test writes a small script and runs it in a subprocess, through the
console script and through `python -m flambeau.run`, and checks what the
script saw (argv, __name__, __file__, sys.path, torch resolved to flambeau),
its exit code and what flambeau-run printed to stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONSOLE = Path(sys.executable).with_name("flambeau-run")
RUNNERS = {"console": [str(CONSOLE)], "module": [sys.executable, "-m", "flambeau.run"]}
REPORT = "flambeau-run: the program reached PyTorch features flambeau lacks:"


def _run(tmp_path: Path, source: str, *args: str, runner: str = "console") -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [*RUNNERS[runner], str(script), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path.parent
    )


def test_console_script_is_installed():
    assert CONSOLE.exists(), "packages/flambeau/pyproject.toml [project.scripts] flambeau-run"


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_script_sees_what_python_script_py_gives_it(tmp_path, runner):
    proc = _run(
        tmp_path,
        """
        import json, os, sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        import flambeau

        print(json.dumps({
            "argv": sys.argv, "name": __name__, "file": __file__, "path0": sys.path[0],
            "torch_is_flambeau": torch.Tensor is flambeau.Tensor and nn.Module is flambeau.nn.Module,
            "functional": F.relu is flambeau.nn.functional.relu and torch.nn.functional is F,
            "loader": DataLoader is flambeau.utils.data.DataLoader,
            "main_module": sys.modules["__main__"].__file__ == __file__,
        }))
        """,
        "--epochs",
        "3",
        runner=runner,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    script = str(tmp_path / "script.py")
    assert seen["argv"] == [script, "--epochs", "3"]
    assert seen["name"] == "__main__" and seen["file"] == script and seen["main_module"]
    assert seen["path0"] == str(tmp_path.resolve())
    assert seen["torch_is_flambeau"] and seen["functional"] and seen["loader"]
    assert REPORT not in proc.stderr


def test_exit_codes_pass_through(tmp_path):
    assert _run(tmp_path, "import sys\nsys.exit(3)\n").returncode == 3
    assert _run(tmp_path, "raise SystemExit('bye')\n").returncode == 1
    assert _run(tmp_path, "import torch\n").returncode == 0
    proc = _run(tmp_path, "raise KeyError('boom')\n")
    assert proc.returncode == 1 and proc.stderr.rstrip().endswith("KeyError: 'boom'")


def test_missing_feature_is_reported_once_then_the_error_is_reraised(tmp_path):
    proc = _run(
        tmp_path,
        """
        import torch
        has_compile = hasattr(torch, "compile_me_not")
        try:
            import torch.jit_like_thing
        except ImportError as e:
            print("caught:", e)
        torch.nn.functional.no_such_function(torch.ones(2))
        """,
    )
    assert proc.returncode == 1
    assert "caught: No module named 'torch.jit_like_thing' (flambeau-run: flambeau has no counterpart" in proc.stdout
    err = proc.stderr
    assert err.count(REPORT) == 1
    listed = err[err.index(REPORT) : err.index("Traceback")]
    assert "  - torch.compile_me_not\n" in listed
    assert "  - import torch.jit_like_thing\n" in listed
    assert "  - torch.nn.functional.no_such_function\n" in listed
    # The script's own error follows, as `python script.py` prints it.
    assert (
        err.rstrip()
        .splitlines()[-1]
        .startswith(  # (Python may add "Did you mean ...?")
            "AttributeError: module 'torch.nn.functional' has no attribute 'no_such_function' "
            "(flambeau-run: flambeau_nn.functional has no 'no_such_function': a PyTorch feature flambeau lacks)"
        )
    )


def test_a_missing_tensor_method_ending_the_script_is_reported(tmp_path):
    proc = _run(tmp_path, "import torch\ntorch.ones(2).no_such_method()\n")
    assert proc.returncode == 1
    assert REPORT in proc.stderr
    assert "  - AttributeError: " in proc.stderr and "no_such_method" in proc.stderr


def test_report_at_a_normal_exit(tmp_path):
    proc = _run(tmp_path, "import torch\nprint(getattr(torch, 'not_in_flambeau', 'fallback'))\n")
    assert proc.returncode == 0 and proc.stdout == "fallback\n"
    assert REPORT in proc.stderr and "  - torch.not_in_flambeau\n" in proc.stderr


def test_torchvision_is_out_of_scope(tmp_path):
    proc = _run(tmp_path, "import torch\nimport torchvision.transforms\n")
    assert proc.returncode == 1
    assert "ModuleNotFoundError: No module named 'torchvision' (flambeau-run: torchvision is not in " in proc.stderr
    assert "  - import torchvision (torchvision is not in flambeau's scope" in proc.stderr


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_spawned_children_resolve_torch_to_flambeau_too(tmp_path, method):
    proc = _run(
        tmp_path,
        f"""
        import sys
        import torch
        import torch.multiprocessing as mp

        def child(q):
            import flambeau
            q.put((__name__, torch.Tensor is flambeau.Tensor, torch.ones(2).tolist()))
            torch.child_only_missing_feature  # reported by the child at its exit

        if __name__ == "__main__":
            getattr(torch, "parent_only_feature", None)
            ctx = mp.get_context("{method}")
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start()
            print(q.get(timeout=120))
            p.join()
            sys.exit(10 + p.exitcode)
        """,
    )
    assert proc.returncode == 11, proc.stderr  # the child failed on the missing attribute: exit code 1
    name = "__main__" if method == "fork" else "__mp_main__"
    assert proc.stdout.strip() == f"('{name}', True, [1.0, 1.0])"
    child_report = proc.stderr[proc.stderr.index("flambeau-run (process ") :]
    assert "  - torch.child_only_missing_feature" in child_report
    # Each process lists what it reached itself: a forked child does not repeat the parent's list.
    assert proc.stderr.count("  - torch.parent_only_feature") == 1


def test_no_script_is_a_usage_error():
    proc = subprocess.run([str(CONSOLE)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "usage: flambeau-run script.py" in proc.stderr
    proc = subprocess.run([str(CONSOLE), "no/such/script.py"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "can't open file 'no/such/script.py'" in proc.stderr
