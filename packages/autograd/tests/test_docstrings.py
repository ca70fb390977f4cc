"""The examples in flambeau_autograd's docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import flambeau_core as fc
import pytest

MODULES = [
    "flambeau_autograd",
    "flambeau_autograd.function",
    "flambeau_autograd.grad_mode",
    "flambeau_autograd.gradcheck",
    "flambeau_autograd.anomaly_mode",
    "flambeau_autograd.functional",
    "flambeau_autograd._detach",
    "flambeau_autograd._post_accumulate_hooks",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"flambeau_core": fc, "fc": fc})
    assert result.attempted > 0 and result.failed == 0
