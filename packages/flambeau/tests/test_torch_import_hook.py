"""flambeau.torch_import_hook: the torch -> flambeau module table, its docs page, and `import flambeau as torch`."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import flambeau
import pytest
from flambeau import torch_import_hook as hook

DOCS = Path(__file__).parents[3] / "docs" / "running-pytorch-programs.md"
BEGIN, END = "<!-- torch modules: begin (flambeau-run --modules) -->", "<!-- torch modules: end -->"

# What a program reaches as attributes of `torch` (rather than only by import): with
# `import flambeau as torch` these must be the very objects flambeau-run maps them to.
NAMESPACES = [
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.nn.utils.rnn",
    "torch.nn.parallel",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.utils",
    "torch.utils.data",
    "torch.autograd",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.distributions",
    "torch.linalg",
    "torch.fft",
    "torch.sparse",
    "torch.cuda",
    "torch.backends",
    "torch.serialization",
    "torch.utils.checkpoint",
    "torch.utils.tensorboard",
    "torch.hub",
    "torch.onnx",
    "torch.profiler",
    "torch.autograd.profiler",
    "torch.amp",
    "torch.cpu",
    "torch.cpu.amp",
]


def test_docs_page_shows_the_table():
    text = DOCS.read_text()
    assert BEGIN in text and END in text, f"{DOCS} must hold the table between {BEGIN} and {END}"
    shown = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert shown == hook.module_table_markdown().strip(), "regenerate it: flambeau-run --modules"


@pytest.mark.parametrize("torch_name", [n for n in hook.TORCH_MODULES if not n.endswith(".*")])
def test_every_mapped_module_is_there(torch_name):
    target = hook.TORCH_MODULES[torch_name][0]
    assert hook._resolve(target) is not None


@pytest.mark.parametrize("torch_name", NAMESPACES)
def test_import_flambeau_as_torch_reaches_the_same_objects(torch_name):
    torch = flambeau
    obj = torch
    for part in torch_name.split(".")[1:]:
        obj = getattr(obj, part)
    assert obj is hook._resolve(hook.TORCH_MODULES[torch_name][0])


def test_import_flambeau_as_torch_for_a_training_step():
    import flambeau as torch

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 3), torch.zeros(4, 1)))
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == 0.05


def test_wildcard_entries_map_submodules_by_name():
    assert hook._target_of("torch.nn.modules.activation") == "flambeau_nn.modules.activation"
    assert hook._target_of("torch.nn.modules._private") is None
    assert hook._target_of("torch.jit") is None


def test_install_refuses_when_the_real_torch_is_imported():
    import torch  # noqa: F401  (the oracle, imported by this process's other tests too)

    with pytest.raises(RuntimeError, match=r"\[flambeau.torch_import_hook\] the real torch is imported already"):
        hook.install()
    assert not hook.installed()


def test_views_in_a_fresh_interpreter():
    code = textwrap.dedent(
        """
        import sys
        import flambeau
        from flambeau import torch_import_hook as hook
        hook.install()
        import torch, torch.nn.modules.activation as act
        from torch.nn import functional as F
        import torch.optim.lr_scheduler as sched
        import flambeau_nn
        # Binding the views as submodules left flambeau's own modules alone.
        assert flambeau.nn is flambeau_nn and flambeau_nn.modules is sys.modules["flambeau_nn.modules"]
        assert act.ReLU is flambeau.nn.ReLU and F is torch.nn.functional
        assert sched.StepLR is flambeau.optim.lr_scheduler.StepLR
        assert "Linear" in dir(torch.nn)
        assert torch.nn.Linear is flambeau.nn.Linear and torch.nn.Linear is flambeau.nn.Linear  # kept
        torch.nn.Linear = "patched"  # a program patching torch patches flambeau's module
        assert flambeau.nn.Linear == "patched" and torch.nn.Linear == "patched"
        del torch.nn.Linear
        assert not hasattr(flambeau.nn, "Linear")
        try:
            import torch.nn.modules.not_a_module
        except ModuleNotFoundError as e:
            assert "its flambeau counterpart flambeau_nn.modules.not_a_module is not there" in str(e), e
        assert hook.missing() == ["import torch.nn.modules.not_a_module"], hook.missing()
        hook.uninstall()
        assert "torch" not in sys.modules
        print("ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_module_table_targets_are_importable_modules_or_namespace_attributes():
    for target, _ in hook.TORCH_MODULES.values():
        module = target.partition(":")[0].removesuffix(".*")
        importlib.import_module(module)


def test_docstring_examples():
    # In a fresh interpreter: the example installs the hook, which this process (torch imported) refuses.
    code = (
        "import doctest, flambeau.torch_import_hook as m; r = doctest.testmod(m); "
        "assert r.attempted > 0 and r.failed == 0, r"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
