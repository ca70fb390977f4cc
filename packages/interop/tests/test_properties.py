"""Property-based: any non-negative-stride view of any supported NumPy array
crosses NumPy -> flambeau -> NumPy / PyTorch without a copy and without
changing a value."""

from __future__ import annotations

import flambeau_interop as fi
import numpy as np
import torch
from conftest import NUMPY_DTYPES, sample
from hypothesis import given, settings
from hypothesis import strategies as st


@st.composite
def strided_views(draw):
    _, np_dtype = draw(st.sampled_from(NUMPY_DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=4)))
    a = sample(np_dtype, shape)
    # positive-step slices per dim, then an optional permutation
    index = tuple(
        slice(draw(st.integers(0, 2)), draw(st.one_of(st.none(), st.integers(0, 6))), draw(st.integers(1, 3)))
        for _ in shape
    )
    view = a[(*index, Ellipsis)]  # the Ellipsis keeps a 0-d result an array
    perm = draw(st.permutations(range(view.ndim)))
    return view.transpose(perm)


def addr(a):
    return a.__array_interface__["data"][0]


@settings(max_examples=60, deadline=None)
@given(strided_views())
def test_views_cross_without_copy(a):
    t = fi.from_numpy(a)
    assert t.shape == a.shape
    back = t.numpy()
    np.testing.assert_array_equal(back, a)
    d = fi.from_dlpack(a)
    np.testing.assert_array_equal(d.numpy(), a)
    u = torch.from_dlpack(t)
    assert tuple(u.shape) == a.shape
    if a.size:
        assert addr(back) == addr(a) == t.data_ptr() == d.data_ptr() == u.data_ptr()
        assert back.strides == a.strides
        np.testing.assert_array_equal(u.numpy(), a)
    n = np.from_dlpack(t)
    np.testing.assert_array_equal(n, a)
