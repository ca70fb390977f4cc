"""cat, stack, gather and scatter_add against NumPy / PyTorch."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st


def as_np(t):
    return np.asarray(memoryview(t))


def test_cat_matches_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(as_np(fc.cat([fc.tensor(a), fc.tensor(b)])), np.concatenate([a, b]))
    c = np.ones((2, 1), np.float32)
    np.testing.assert_array_equal(as_np(fc.cat((fc.tensor(a), fc.tensor(c)), dim=-1)), np.concatenate([a, c], 1))
    # non-contiguous input
    np.testing.assert_array_equal(as_np(fc.cat([fc.tensor(a).T, fc.tensor(a).T], 1)), np.concatenate([a.T, a.T], 1))
    # legacy: 1-D empty tensors are skipped
    assert fc.cat([fc.tensor(a), fc.zeros(0)]).shape == (2, 3)


def test_cat_promotes_dtypes_like_torch():
    got = fc.cat([fc.tensor([1, 2]), fc.tensor([0.5])])
    want = torch.cat([torch.tensor([1, 2]), torch.tensor([0.5])])
    assert got.dtype == fc.float32 and got.tolist() == want.tolist()
    assert fc.cat([fc.tensor([True]), fc.tensor([3])]).dtype == fc.int64


def test_cat_errors():
    with pytest.raises(ValueError, match=r"\[cat\] expected a non-empty list"):
        fc.cat([])
    with pytest.raises(ValueError, match=r"\[cat\] sizes must match except in dimension 0.*\(2, 3\).*\(2, 4\)"):
        fc.cat([fc.zeros(2, 3), fc.zeros(2, 4)])
    with pytest.raises(ValueError, match=r"\[cat\] tensors must have the same number of dims"):
        fc.cat([fc.zeros(2, 3), fc.zeros(3)])
    with pytest.raises(ValueError, match="zero-dimensional"):
        fc.cat([fc.tensor(1.0), fc.tensor(2.0)])
    with pytest.raises(TypeError, match=r"\[cat\].*element 1 is int"):
        fc.cat([fc.zeros(1), 3])
    with pytest.raises(TypeError, match=r"\[cat\] argument 'tensors' must be a list or tuple of Tensors, got Tensor"):
        fc.cat(fc.zeros(3))
    with pytest.raises(IndexError, match=r"\[cat\] dimension 2"):
        fc.cat([fc.zeros(2, 2)], 2)


def test_stack():
    xs = [np.full((2, 3), i, np.float32) for i in range(4)]
    for dim in (0, 1, 2, -1):
        np.testing.assert_array_equal(as_np(fc.stack([fc.tensor(x) for x in xs], dim)), np.stack(xs, dim))
    assert fc.stack([fc.tensor(1.0), fc.tensor(2.0)]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"\[stack\] all tensors must have the same shape.*tensor 1 has shape \(3,\)"):
        fc.stack([fc.zeros(2), fc.zeros(3)])
    with pytest.raises(ValueError, match=r"\[stack\] expected a non-empty list"):
        fc.stack([])
    with pytest.raises(IndexError, match=r"\[stack\] dimension 3"):
        fc.stack([fc.zeros(2)], 3)


def test_gather_matches_torch():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 3], [2, 2], [1, 0]])
    for dim in (0, 1):
        i = idx if dim == 1 else np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
        want = torch.gather(torch.from_numpy(a), dim, torch.from_numpy(i))
        got = fc.gather(fc.tensor(a), dim, fc.tensor(i))
        np.testing.assert_array_equal(as_np(got), want.numpy())
    # non-contiguous self
    t = fc.tensor(a).T
    want = torch.from_numpy(a).T.gather(1, torch.tensor([[0], [2], [1], [2]]))
    np.testing.assert_array_equal(as_np(t.gather(1, fc.tensor([[0], [2], [1], [2]]))), want.numpy())


def test_gather_errors():
    x = fc.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[gather\] index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, fc.tensor([[3], [0]]))
    with pytest.raises(IndexError, match=r"\[gather\] index -1 is out of bounds"):
        x.gather(1, fc.tensor([[-1], [0]]))
    with pytest.raises(TypeError, match=r"\[gather\] index must be an int64 tensor, got dtype float32"):
        x.gather(1, fc.zeros(2, 1))
    with pytest.raises(ValueError, match=r"\[gather\] index must have as many dims"):
        x.gather(1, fc.tensor([0, 1]))


def test_scatter_add_matches_torch():
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    idx = np.array([[0, 1, 2, 0], [2, 2, 2, 2]])
    src = np.arange(8, dtype=np.float64).reshape(2, 4) + 0.5
    want = torch.from_numpy(base).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(src))
    t = fc.tensor(base)
    got = fc.scatter_add(t, 0, fc.tensor(idx), fc.tensor(src))
    np.testing.assert_array_equal(as_np(got), want.numpy())
    np.testing.assert_array_equal(as_np(t), base)  # out of place
    idx1 = np.array([[3, 3], [0, 1], [1, 1]])
    src1 = np.ones((3, 2))
    want1 = torch.from_numpy(base).scatter_add(1, torch.from_numpy(idx1), torch.from_numpy(src1))
    np.testing.assert_array_equal(as_np(t.scatter_add(1, fc.tensor(idx1), fc.tensor(src1))), want1.numpy())


def test_scatter_add_errors():
    x = fc.zeros(3)
    with pytest.raises(IndexError, match=r"\[scatter_add\] index 3 is out of bounds for dimension 0 with size 3"):
        x.scatter_add(0, fc.tensor([3]), fc.ones(1))
    with pytest.raises(TypeError, match=r"\[scatter_add\] src dtype float64 must match self dtype float32"):
        x.scatter_add(0, fc.tensor([0]), fc.ones(1, dtype=fc.float64))
    with pytest.raises(ValueError, match=r"larger than src shape"):
        x.scatter_add(0, fc.tensor([0, 1]), fc.ones(1))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_gather_scatter_property(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.standard_normal(shape)
    ishape = [data.draw(st.integers(1, s)) if d != dim else data.draw(st.integers(1, 5)) for d, s in enumerate(shape)]
    idx = rng.integers(0, shape[dim], size=ishape)
    got = as_np(fc.gather(fc.tensor(a), dim, fc.tensor(idx)))
    np.testing.assert_array_equal(
        got,
        np.take_along_axis(a[tuple(slice(0, s) if d != dim else slice(None) for d, s in enumerate(ishape))], idx, dim),
    )
    src = rng.standard_normal(ishape)
    want = torch.from_numpy(a).scatter_add(dim, torch.from_numpy(idx), torch.from_numpy(src)).numpy()
    np.testing.assert_allclose(
        as_np(fc.scatter_add(fc.tensor(a), dim, fc.tensor(idx), fc.tensor(src))), want, rtol=1e-12
    )
