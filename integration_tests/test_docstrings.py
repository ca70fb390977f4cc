"""Every public name of `import flambeau as fb` has a docstring with an example, and the examples run.

The public names are docs/public_api.py's (what the API reference documents). The names that still lack
a docstring or an example are listed in docs/docstring_baseline.json, per module: that list may only
shrink. A new public function, class or method without both fails here; after documenting listed names,
`python docs/public_api.py --update` rewrites the list. Every example that exists runs as a doctest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs"))
import public_api  # noqa: E402

ENTRIES = public_api.entries()
WITH_EXAMPLES = [e for e in ENTRIES if public_api.has_example(public_api.docstring(e.obj))]


def test_no_new_name_without_docstring_or_example():
    new = public_api.new_names(public_api.missing())
    assert not new, (
        f"{len(new)} public names lack a docstring or an example (PyTorch-style, with a short >>> example; "
        "docs/design/documentation.md):\n  " + "\n  ".join(new)
    )


def test_public_modules_are_found():
    """The reference's pages: the listed modules, and any public module added since, but not flambeau_core's
    helper modules that the meta-package's star import may copy."""
    documented = public_api.modules()
    assert documented[: len(public_api.MODULES)] == tuple(public_api.MODULES)
    assert "flambeau.testing" not in documented and "flambeau.run" not in documented


def test_baseline_names_modules_that_exist():
    """The list is keyed by documented module; a misspelt key would let that module's names through."""
    assert set(public_api.load_baseline()) <= set(public_api.modules())


def test_public_api_is_found():
    """The walk finds the API: the reference would otherwise be silently empty."""
    names = {e.name for e in ENTRIES}
    for name in [
        "flambeau.add",
        "flambeau.Tensor.add",
        "flambeau.nn.Conv2d",
        "flambeau.nn.Module.forward",
        "flambeau.utils.data.DataLoader",
        "flambeau.optim.SGD.step",
        "flambeau.linalg.solve",
    ]:
        assert name in names
    assert len(ENTRIES) > 1500
    assert len(WITH_EXAMPLES) > 300


@pytest.fixture(scope="module")
def example_reports(tmp_path_factory):
    """Every example's doctest report, from one child process: examples change global state (the current
    allocator, registered devices, the RNG) that the integration tests after these must not inherit."""
    out = tmp_path_factory.mktemp("doctests") / "reports.json"
    proc = subprocess.run(
        [sys.executable, public_api.__file__, "--run-examples", str(out)], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("entry", WITH_EXAMPLES, ids=[e.name for e in WITH_EXAMPLES])
def test_example_runs(entry, example_reports):
    assert entry.name in example_reports, "the child process found other public names than this one"
    report = example_reports[entry.name]
    assert not report, report
