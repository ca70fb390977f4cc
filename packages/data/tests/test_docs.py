"""The docstring examples run (STYLE.md: docstrings carry runnable examples)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "flambeau_data",
    "flambeau_data.dataset",
    "flambeau_data.sampler",
    "flambeau_data.collate",
    "flambeau_data.dataloader",
    "flambeau_data._worker",
    "flambeau_data.multiprocessing",
    "flambeau_data._convert",
    "flambeau_data.datasets",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, no_leaks):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
