"""The packages' layering (ARCHITECTURE.md, "Layering"): a package's Python code imports only
itself and the flambeau packages it declares as dependencies, even lazily inside a function.

An upper layer plugs into a lower one by registering itself when imported (interop registers its
DLPack importer into core's array_api, distributed its default process group into data's
DistributedSampler); the lower layer never imports it. This test reads each package's declared
dependencies from its pyproject.toml and every import statement of its sources, so a new lazy
import of an upper layer fails here, not in a user's install of one package alone.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

PACKAGES = Path(__file__).resolve().parent.parent / "packages"


def _import_name(dist: str) -> str:
    return "flambeau" if dist == "flambeau" else dist.replace("-", "_")


def _declared(pkg_dir: Path, *, extra: str | None = None) -> set[str]:
    """The flambeau packages (import names) pkg_dir's pyproject declares as runtime dependencies
    (and, with ``extra``, in that optional-dependency group too)."""
    meta = tomllib.loads((pkg_dir / "pyproject.toml").read_text())
    project = meta["project"]
    deps = list(project.get("dependencies", []))
    if extra is not None:
        deps += project.get("optional-dependencies", {}).get(extra, [])
    if "dependencies" in project.get("dynamic", []):
        deps += meta["tool"]["scikit-build"]["metadata"]["dependencies"].get("result", [])
    names = {re.split(r"[=<>\[ ;]", d, maxsplit=1)[0] for d in deps}
    return {_import_name(n) for n in names if n.startswith("flambeau")}


def _packages() -> list[tuple[str, Path]]:
    out = []
    for pkg_dir in sorted(PACKAGES.iterdir()):
        if not (pkg_dir / "pyproject.toml").is_file():
            continue
        name = _import_name(tomllib.loads((pkg_dir / "pyproject.toml").read_text())["project"]["name"])
        if (pkg_dir / name).is_dir():
            out.append((name, pkg_dir))
    return out


def _imports(source_dir: Path) -> list[tuple[str, int, str]]:
    """(file, line, top-level module) of every import of a flambeau package under source_dir."""
    found = []
    for path in sorted(source_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                if top.startswith("flambeau"):
                    found.append((str(path.relative_to(PACKAGES)), node.lineno, top))
    return found


@pytest.mark.parametrize(("name", "pkg_dir"), _packages(), ids=[n for n, _ in _packages()])
def test_a_package_imports_only_what_it_declares(name, pkg_dir):
    allowed = _declared(pkg_dir) | {name}
    if name == "flambeau":  # the meta-package composes everything, optional extras included
        return
    wrong = [f"{f}:{line} imports {mod}" for f, line, mod in _imports(pkg_dir / name) if mod not in allowed]
    assert not wrong, f"{name} may import only {sorted(allowed)}:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("name", "pkg_dir"), _packages(), ids=[n for n, _ in _packages()])
def test_a_package_s_tests_import_only_it_and_what_its_test_extra_declares(name, pkg_dir):
    """A package's tests run against that package installed alone with its test extra (ARCHITECTURE.md)."""
    if name == "flambeau" or not (pkg_dir / "tests").is_dir():
        return
    allowed = _declared(pkg_dir, extra="test") | {name}
    wrong = [f"{f}:{line} imports {mod}" for f, line, mod in _imports(pkg_dir / "tests") if mod not in allowed]
    assert not wrong, f"{name}'s tests may import only {sorted(allowed)} (its test extra):\n" + "\n".join(wrong)


def test_the_scan_sees_declared_dependencies():
    """The invariant the test above relies on: nn declares core and autograd, data declares core."""
    assert _declared(PACKAGES / "nn") == {"flambeau_core", "flambeau_autograd"}
    assert _declared(PACKAGES / "data") == {"flambeau_core"}
    assert _declared(PACKAGES / "cuda", extra="test") >= {"flambeau_nn", "flambeau_interop"}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_core_alone_names_interop_for_dlpack_and_interop_registers_it():
    r = _run(
        """
        import sys, numpy as np, flambeau_core as fc
        try:
            fc.array_api.from_dlpack(np.arange(3.0))
        except RuntimeError as e:
            print("ERR", e)
        assert "flambeau_interop" not in sys.modules
        import flambeau_interop
        print("OK", fc.array_api.from_dlpack(np.arange(3.0)).tolist())
        """
    )
    assert r.returncode == 0, r.stderr
    assert "ERR [from_dlpack] DLPack needs flambeau-interop" in r.stdout
    assert "OK [0.0, 1.0, 2.0]" in r.stdout


def test_distributed_sampler_asks_the_group_distributed_registers():
    r = _run(
        """
        import sys, flambeau_data as data
        try:
            data.DistributedSampler(range(10))
        except RuntimeError as e:
            print("ERR", e)
        assert "flambeau_distributed" not in sys.modules
        data.sampler.register_process_group_provider(lambda: (4, 3))
        s = data.DistributedSampler(range(10), shuffle=False)
        print("OK", s.num_replicas, s.rank, list(s))
        """
    )
    assert r.returncode == 0, r.stderr
    assert "ERR [DistributedSampler] no process group is initialized" in r.stdout
    assert "OK 4 3 [3, 7, 1]" in r.stdout  # padded to 12 = 3 per replica


def test_module_share_memory_without_data_names_it():
    r = _run(
        """
        import sys, flambeau_nn as nn
        m = nn.Linear(2, 2)
        try:
            m.share_memory()
        except RuntimeError as e:
            print("ERR", e)
        assert "flambeau_data" not in sys.modules
        import flambeau_data
        m.share_memory()
        print("OK", m.weight.is_shared())
        """
    )
    assert r.returncode == 0, r.stderr
    assert "ERR [Module.share_memory] needs flambeau-data" in r.stdout
    assert "OK True" in r.stdout
