"""The docstring examples of every public module, and the README's code blocks, run."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

MODULES = [
    "flambeau_nn",
    "flambeau_nn.parameter",
    "flambeau_nn.functional",
    "flambeau_nn.functional._base",
    "flambeau_nn.functional._conv",
    "flambeau_nn.functional._pooling",
    "flambeau_nn.functional._normalization",
    "flambeau_nn.functional._loss",
    "flambeau_nn.functional._activation",
    "flambeau_nn.functional._ctc",
    "flambeau_nn.functional._attention",
    "flambeau_nn.init",
    "flambeau_nn.serialization",
    "flambeau_nn.modules.module",
    "flambeau_nn.modules.container",
    "flambeau_nn.modules.linear",
    "flambeau_nn.modules.activation",
    "flambeau_nn.modules.dropout",
    "flambeau_nn.modules.batchnorm",
    "flambeau_nn.modules.normalization",
    "flambeau_nn.modules.instancenorm",
    "flambeau_nn.modules.sparse",
    "flambeau_nn.modules.loss",
    "flambeau_nn.optim",
    "flambeau_nn.optim.optimizer",
    "flambeau_nn.optim.sgd",
    "flambeau_nn.optim.adam",
    "flambeau_nn.optim.rmsprop",
    "flambeau_nn.optim.lr_scheduler",
    "flambeau_nn.utils",
    "flambeau_nn.utils.clip_grad",
    "flambeau_nn.utils.convert_parameters",
    "flambeau_nn.utils.parametrize",
    "flambeau_nn.utils.parametrizations",
    "flambeau_nn.utils.weight_norm",
    "flambeau_nn.utils.spectral_norm",
    "flambeau_nn.utils.prune",
    "flambeau_nn.utils.checkpoint",
    "flambeau_nn.utils.fusion",
    "flambeau_nn.utils.memory_format",
    "flambeau_nn.utils.init",
    "flambeau_nn.utils.stateless",
    "flambeau_nn.utils.rnn",
    "flambeau_nn.modules.adaptive",
    "flambeau_nn.modules.linear_cross_entropy_options",
    "flambeau_nn.functional._linear_cross_entropy",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.failed == 0


def test_readme_code_blocks(tmp_path, monkeypatch):
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    assert readme.exists(), "the package README must sit next to its tests (packages/nn/README.md)"
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert len(blocks) >= 3
    for code in blocks:
        exec(compile(code, str(readme), "exec"), {})
