"""Core's buffer protocol refuses a tensor that requires grad (writes would bypass autograd), as PyTorch's numpy()."""

import pickle

import flambeau_autograd  # noqa: F401  (registers autograd)
import flambeau_core as fc
import pytest


def test_memoryview_of_a_tensor_requiring_grad_is_refused_with_the_reason():
    t = fc.ones(3).requires_grad_()
    with pytest.raises(BufferError) as info:
        memoryview(t)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "requires grad" in str(info.value.__cause__) and "detach()" in str(info.value.__cause__)
    assert memoryview(t.detach()).tolist() == [1.0, 1.0, 1.0]


def test_pickling_a_tensor_requiring_grad_keeps_values_and_flag():
    t = fc.tensor([1.0, 2.0]).requires_grad_()
    out = pickle.loads(pickle.dumps(t))
    assert out.tolist() == [1.0, 2.0] and out.requires_grad
