"""F.pdist against torch.pdist: values and gradients for every p, float32 and float64, gradcheck, errors."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import pytest
import torch
from nn_testing import TOLERANCES, compare_forward_backward


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
@pytest.mark.parametrize("n", [1, 2, 6])
def test_pdist(n, p, dtype):
    x = torch.randn(n, 4, dtype=dtype)
    compare_forward_backward(lambda x: F.pdist(x, p), lambda x: torch.pdist(x, p), [x], **TOLERANCES[dtype])


def test_pdist_equal_rows_have_zero_gradient_as_torch():
    x = torch.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], dtype=torch.float64)
    compare_forward_backward(lambda x: F.pdist(x), lambda x: torch.pdist(x), [x])


def test_gradcheck_and_errors():
    x = fc.randn(4, 3, dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(lambda x: F.pdist(x, 3.0), (x,))
    with pytest.raises(fc.FlambeauError, match=r"\[pdist\] only supports 2D tensors"):
        F.pdist(fc.ones(2, 2, 2))
    with pytest.raises(fc.FlambeauError, match=r"\[pdist\] only supports non-negative p"):
        F.pdist(fc.ones(2, 2), -1.0)
