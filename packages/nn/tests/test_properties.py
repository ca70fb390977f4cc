"""Property-based checks over shapes (hypothesis): Linear and the losses agree with PyTorch for any shape."""

from __future__ import annotations

import flambeau_nn as nn
import flambeau_nn.functional as F
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nn_testing import assert_close, copy_params, from_torch

small = st.integers(min_value=1, max_value=6)


@settings(max_examples=25, deadline=None)
@given(batch=st.lists(small, min_size=0, max_size=3), fin=small, fout=small, bias=st.booleans())
def test_linear_any_batch_shape(batch, fin, fout, bias):
    theirs = torch.nn.Linear(fin, fout, bias=bias)
    ours = nn.Linear(fin, fout, bias=bias)
    copy_params(ours, theirs)
    x = torch.randn(*batch, fin)
    xo = from_torch(x).requires_grad_(True)
    xt = x.clone().requires_grad_(True)
    yo, yt = ours(xo), theirs(xt)
    assert_close(yo, yt, rtol=1e-4, atol=1e-5)
    yo.sum().backward()
    yt.sum().backward()
    assert_close(xo.grad, xt.grad, rtol=1e-4, atol=1e-5)
    assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(
    n=small,
    c=st.integers(min_value=2, max_value=6),
    extra=st.lists(small, min_size=0, max_size=2),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    smoothing=st.sampled_from([0.0, 0.1]),
)
def test_cross_entropy_any_shape(n, c, extra, reduction, smoothing):
    x = torch.randn(n, c, *extra) * 3
    t = torch.randint(0, c, (n, *extra))
    xo = from_torch(x).requires_grad_(True)
    xt = x.clone().requires_grad_(True)
    lo = F.cross_entropy(xo, from_torch(t), reduction=reduction, label_smoothing=smoothing)
    lt = torch.nn.functional.cross_entropy(xt, t, reduction=reduction, label_smoothing=smoothing)
    assert_close(lo, lt, rtol=1e-4, atol=1e-5)
    lo.sum().backward()
    lt.sum().backward()
    assert_close(xo.grad, xt.grad, rtol=1e-4, atol=1e-5)
