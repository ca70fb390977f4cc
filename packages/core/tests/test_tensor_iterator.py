"""The TensorIterator's row walk over broadcast shapes split across threads (short rows, thread
chunks starting inside a row), against NumPy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy

RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    "sa,sb",
    [((40, 1, 200, 1), (1, 13, 1, 11)), ((3, 1, 5), (1, 4, 1)), ((700, 1, 3), (1, 1000, 3)), ((2, 3), (3,))],
)
def test_iterator_rows_over_threads(sa, sb):
    """Broadcast shapes whose rows are short and whose thread chunks start inside a row."""
    prev = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
        np.testing.assert_array_equal(to_numpy(fc.add(fc.tensor(a), fc.tensor(b))), a + b)
        np.testing.assert_allclose(to_numpy(fc.atan2(fc.tensor(a), fc.tensor(b))), np.arctan2(a, b), rtol=1e-6)
        x = fc.tensor(np.broadcast_to(a, np.broadcast_shapes(sa, sb)).copy())
        x.mul_(fc.tensor(b))
        np.testing.assert_array_equal(to_numpy(x), a * b)
    finally:
        fc.set_num_threads(prev)
