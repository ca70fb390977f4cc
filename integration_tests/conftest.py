"""Integration tests: several flambeau packages working together.

``standalone/`` holds scripts, not tests: the noxfile's isolation step runs each
one in a fresh venv holding only some packages (core alone; core + data), where
``import flambeau`` must fail. pytest must not collect them here.
"""

from __future__ import annotations

import gc

import pytest

collect_ignore = ["standalone"]


@pytest.fixture
def fb():
    """The meta-package, with the CPU allocator restored after the test."""
    import flambeau

    before = flambeau.memory.get_allocator("cpu")
    yield flambeau
    gc.collect()
    flambeau.memory.set_allocator(before)
