"""The in-place view ops, set_ and resize_ on tensors autograd tracks: PyTorch's refusals for a leaf that
requires grad, a clear refusal where flambeau does not record (an in-place view of a tensor with a history),
and no refusal under no_grad."""

import flambeau_core as fc
import pytest
from flambeau_autograd import no_grad


def test_a_leaf_that_requires_grad_is_refused():
    x = fc.zeros(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match=r"^\[t_\] a leaf Variable that requires grad is being used in an in-place"):
        x.t_()
    with pytest.raises(RuntimeError, match=r"^\[set_\] a leaf Variable that requires grad"):
        x.set_(fc.zeros(4))
    with pytest.raises(RuntimeError, match=r"^\[resize_\] cannot resize variables that require grad"):
        x.resize_(3, 2)
    assert tuple(x.shape) == (2, 3)


def test_a_tensor_with_history_is_refused_with_the_op_to_use():
    y = fc.zeros(2, 3).requires_grad_() * 2
    with pytest.raises(NotImplementedError, match=r"^\[transpose_\] .* use the out-of-place transpose\(\)"):
        y.transpose_(0, 1)
    assert tuple(y.shape) == (2, 3)


def test_no_grad_allows_set_on_a_leaf():
    # As PyTorch: under no_grad a leaf may be pointed at new memory (swapping parameters' storage).
    x = fc.zeros(2, 3).requires_grad_()
    with no_grad():
        x.set_(fc.ones(4))
        x.unsqueeze_(0)
    assert tuple(x.shape) == (1, 4)
    assert x.requires_grad
