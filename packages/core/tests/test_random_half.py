"""bernoulli_ / bernoulli on float16 / bfloat16 (src/cpu/random/random.cpp): 0 and 1 in the 16-bit dtype,
drawn as every dtype draws them (the same positions as float32's from the same seed), with a number or a
tensor of probabilities, as PyTorch 2.13 takes these dtypes (F.alpha_dropout and feature_alpha_dropout
fill such a mask)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import from_torch, to_numpy, torch_values

DTYPES = ["float16", "bfloat16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_number_p(dtype):
    x = fc.empty(200, 50, dtype=getattr(fc, dtype))
    fc.manual_seed(3)
    x.bernoulli_(0.3)
    f = fc.empty(200, 50)
    fc.manual_seed(3)
    f.bernoulli_(0.3)
    assert x.dtype == getattr(fc, dtype)
    np.testing.assert_array_equal(to_numpy(x), to_numpy(f))
    assert set(np.unique(to_numpy(x))) <= {0.0, 1.0}
    assert abs(to_numpy(x).mean() - 0.3) < 0.03
    # torch takes the 16-bit dtypes too
    assert torch.empty(3, dtype=getattr(torch, dtype)).bernoulli_(0.3).dtype == getattr(torch, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_tensor_p(dtype):
    p = torch_values(dtype, (300, 40), 1, low=0.0)
    fc.manual_seed(4)
    ours = fc.bernoulli(from_torch(p))
    fc.manual_seed(4)
    ref = fc.bernoulli(from_torch(p).float())
    assert ours.dtype == getattr(fc, dtype)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(ref))
    assert abs(to_numpy(ours).mean() - to_numpy(from_torch(p)).mean()) < 0.02
    assert torch.bernoulli(p).dtype == p.dtype
