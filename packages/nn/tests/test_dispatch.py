"""torch.nn.functional's helper names (boolean_dispatch, assert_int_or_pair, has_torch_function*,
handle_torch_function, Tensor) behave as PyTorch's do for tensors without overrides."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn.functional as F
import pytest
import torch.nn.functional as TF


def test_boolean_dispatch_matches_torch():
    def twice(x, flag=False):
        """Twice."""
        return 2 * x

    def once(x, flag=False):
        return x

    ours = F.boolean_dispatch("flag", 1, False, twice, once, "mod", "f")
    theirs = TF.boolean_dispatch("flag", 1, False, twice, once, "mod", "f")
    for args, kwargs in (((3,), {}), ((3, True), {}), ((3,), {"flag": True})):
        assert ours(*args, **kwargs) == theirs(*args, **kwargs)
    assert ours.__name__ == "f" and ours.__doc__ == "Twice."


def test_helpers():
    F.assert_int_or_pair(3, "k", "{} must be int or pair")
    with pytest.raises(AssertionError, match="k must be int or pair"):
        F.assert_int_or_pair((1, 2, 3), "k", "{} must be int or pair")
    x = fc.ones(2)
    assert not F.has_torch_function((x,)) and not F.has_torch_function_unary(x)
    assert not F.has_torch_function_variadic(x, x)
    assert F.Tensor is fc.Tensor
    with pytest.raises(NotImplementedError, match=r"\[handle_torch_function\]"):
        F.handle_torch_function(F.relu, (x,), x)
