"""Fixtures shared by core's tests."""

from __future__ import annotations

import flambeau_core as fc
import pytest


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    """Runs the test at 1, 2 and 3 intra-op threads (serial, one block per thread, more blocks than
    cores), restoring the count after."""
    old = fc.get_num_threads()
    fc.set_num_threads(request.param)
    yield request.param
    fc.set_num_threads(old)
