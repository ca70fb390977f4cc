"""empty_permuted (flambeau_core/_empty_permuted.py) against PyTorch 2.13: shape, strides, dtype, and
errors."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch


@pytest.mark.parametrize(
    ("size", "layout"),
    [((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((5,), (0,)), ((), ()), ((0, 3), (1, 0)), ((2, 3), (0, 1))],
)
def test_empty_permuted_matches_torch(size, layout):
    expected = torch.empty_permuted(size, layout, dtype=torch.float64)
    got = fc.empty_permuted(size, layout, dtype=fc.float64)
    assert tuple(got.shape) == tuple(expected.shape)
    assert tuple(got.stride()) == tuple(expected.stride())
    assert got.dtype == fc.float64
    assert fc.empty_permuted(list(size), list(layout)).dtype == fc.get_default_dtype()


def test_empty_permuted_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[empty_permuted\] Number of dimensions in size does not match"):
        fc.empty_permuted((2, 3, 4), (2, 0))
    with pytest.raises(fc.FlambeauError, match=r"\[empty_permuted\] Duplicate dim not allowed"):
        fc.empty_permuted((2, 3, 4), (2, 0, 0))
    with pytest.raises(IndexError, match=r"\[empty_permuted\] physical_layout \(3, 0, 1\) names a dim outside"):
        fc.empty_permuted((2, 3, 4), (3, 0, 1))
    # pin_memory as empty(...).pin_memory() in this installation (which pins where a device package can)
    try:
        fc.empty(2, 3).pin_memory()
    except RuntimeError:
        with pytest.raises(RuntimeError, match=r"\[empty_permuted\] no device is available to pin memory"):
            fc.empty_permuted((2, 3), (1, 0), pin_memory=True)
    else:
        assert fc.empty_permuted((2, 3), (1, 0), pin_memory=True).is_pinned()
    with pytest.raises(TypeError, match=r"\[empty_permuted\] expected 'size' to be a list or tuple of ints"):
        fc.empty_permuted(3, (0,))
