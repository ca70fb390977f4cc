"""msort and array_api.sort use the values-only kernel only when no
gradient is recorded; with one, sort's indices carry it (values and gradients
against PyTorch, gradcheck in float64)."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, make_inputs, torch
from flambeau_core import array_api as xp
from flambeau_core.testing import kernel_trace


def trace(fn):
    with kernel_trace() as rows:
        fn()
    return [r[0] for r in rows]


@pytest.mark.parametrize("shape", [(5,), (4, 3), (3, 1, 6), (1001,)])
def test_msort_grad(shape):
    (a,) = make_inputs([shape], seed=len(shape))
    compare_with_torch(fc.msort, torch.msort, [a], gradcheck=shape != (1001,))


@pytest.mark.parametrize("desc", [False, True])
def test_array_api_sort_grad(desc):
    (a,) = make_inputs([(3, 7)], seed=2)
    compare_with_torch(
        lambda t: xp.sort(t, axis=0, descending=desc),
        lambda t: torch.sort(t, dim=0, descending=desc, stable=True).values,
        [a],
    )


def test_ties_route_the_gradient_stably():
    a = np.array([[1.0, 0.0, 1.0, -0.0, 1.0]]).T
    compare_with_torch(fc.msort, torch.msort, [a], gradcheck=False)


def test_values_kernel_only_without_grad():
    x = fb_tensor(np.random.default_rng(0).standard_normal((4, 9)), requires_grad=True)
    assert "sort" in trace(lambda: fc.msort(x)) and "_sort_values" not in trace(lambda: fc.msort(x))
    assert fc.msort(x).grad_fn is not None and xp.sort(x).grad_fn is not None
    with ag.no_grad():
        assert "_sort_values" in trace(lambda: fc.msort(x))
        assert "_sort_values" in trace(lambda: xp.sort(x))
        assert fc.msort(x).grad_fn is None
    y = x.detach()
    assert "_sort_values" in trace(lambda: xp.sort(y))
    np.testing.assert_array_equal(np.array(fc.msort(y).tolist()), np.sort(np.array(y.tolist()), axis=0))
