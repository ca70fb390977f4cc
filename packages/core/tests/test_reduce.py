"""Reductions (sum, mean, max, max over a dim, argmax) against NumPy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from helpers import LAYOUTS, assert_matches, make_tensor, random_array
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

pytestmark = pytest.mark.on_devices

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (4, 1, 6), (0, 3)]


def dim_cases(ndim: int):
    cases = [None]
    for d in range(ndim):
        cases += [d, -1 - d]
    if ndim >= 2:
        cases += [(0, ndim - 1), tuple(range(ndim))]
    return cases


def np_sum(x: np.ndarray, dim, keepdim: bool, dtype=None) -> np.ndarray:
    out_dtype = dtype or (np.int64 if x.dtype.kind in "biu" else x.dtype)
    return np.asarray(
        np.sum(x.astype(np.float64) if out_dtype != np.int64 else x.astype(np.int64), axis=dim, keepdims=keepdim)
    ).astype(out_dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
def test_sum_matches_numpy(shape, dtype):
    rng = np.random.default_rng(0)
    x = random_array(shape, dtype, rng)
    for layout in LAYOUTS:
        t = make_tensor(x, layout)
        for dim in dim_cases(len(shape)):
            for keepdim in (False, True):
                assert_matches(t.sum(dim, keepdim), np_sum(x, dim, keepdim))
    assert_matches(fc.sum(make_tensor(x)), np_sum(x, None, False))


def test_sum_dtype_argument():
    x = np.arange(6).reshape(2, 3)
    t = fc.tensor(x)
    assert_matches(t.sum(dtype=fc.float64), np.float64(15.0))
    assert_matches(t.sum(1, dtype=fc.float32), x.sum(1).astype(np.float32))
    assert_matches(fc.tensor([1.5, 2.5]).sum(dtype=fc.float64), np.float64(4.0))
    assert fc.tensor([True, True, False]).sum().item() == 2
    # A float input summed into an integer dtype is cast first, as PyTorch (it was refused).
    assert fc.tensor([1.5, 2.5]).sum(dtype=fc.int64).item() == 3


def test_float32_sum_is_accurate():
    rng = np.random.default_rng(1)
    for n in (1_000_003, 4097, 100):
        x = (rng.random(n) + 1e3).astype(np.float32)
        got = fc.tensor(x).sum().item()
        np.testing.assert_allclose(got, x.astype(np.float64).sum(), rtol=1e-6)
    x = (rng.random((2000, 300)) + 1e3).astype(np.float32)
    for dim in (0, 1):
        for layout in ("contiguous", "transposed"):
            got = np.asarray(make_tensor(x, layout).sum(dim).tolist())
            np.testing.assert_allclose(got, x.astype(np.float64).sum(dim), rtol=1e-6)


def test_sum_thread_count_does_not_change_the_result():
    x = np.random.default_rng(2).standard_normal(3_000_000).astype(np.float32)
    t = fc.tensor(x)
    n = fc.get_num_threads()
    try:
        fc.set_num_threads(1)
        one = t.sum().item()
        fc.set_num_threads(max(2, n))
        assert t.sum().item() == one
    finally:
        fc.set_num_threads(n)


@settings(max_examples=40, deadline=None)
@given(
    shape=array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
    data=st.data(),
    dtype=st.sampled_from(["int64", "float64"]),
    layout=st.sampled_from(LAYOUTS),
)
def test_sum_property(shape, data, dtype, layout):
    ndim = len(shape)
    dims = data.draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim)) if ndim else []
    keepdim = data.draw(st.booleans())
    x = random_array(shape, dtype, np.random.default_rng(0))
    t = make_tensor(x, layout)
    axis = tuple(dims) if dims else None
    assert_matches(t.sum(tuple(dims) if dims else None, keepdim), np_sum(x, axis, keepdim))


def test_sum_errors():
    t = fc.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[sum\] dimension 2 out of range"):
        t.sum(2)
    with pytest.raises(ValueError, match=r"\[sum\] dim 1 appears multiple times"):
        t.sum((1, -1))
    with pytest.raises(TypeError, match=r"\[sum\]"):
        t.sum("a")


def test_mean():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5))
    for layout in LAYOUTS:
        t = make_tensor(x.astype(np.float32), layout)
        assert_matches(t.mean(), np.float32(x.astype(np.float32).astype(np.float64).mean()), rtol=1e-5)
        assert_matches(t.mean(1), x.astype(np.float32).mean(1), rtol=1e-5, atol=1e-6)
        assert_matches(
            fc.mean(t, (0, 2), keepdim=True), x.astype(np.float32).mean((0, 2), keepdims=True), rtol=1e-5, atol=1e-6
        )
    assert_matches(fc.tensor(x).mean(-1), x.mean(-1))
    assert fc.tensor([1, 2]).mean(dtype=fc.float32).item() == 1.5
    with pytest.raises(TypeError, match=r"\[mean\].*floating point.*int64"):
        fc.tensor([1, 2]).mean()
    assert np.isnan(fc.zeros(0).mean().item())


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
def test_max_and_argmax_match_numpy(dtype):
    rng = np.random.default_rng(4)
    for shape in [(), (7,), (3, 4), (2, 3, 4), (5, 1, 3)]:
        x = random_array(shape, dtype, rng)
        for layout in LAYOUTS:
            t = make_tensor(x, layout)
            assert_matches(t.max(), np.asarray(x.max()))
            if dtype != "bool":  # argmax of bool raises, as PyTorch (test_structured_reductions.py)
                assert_matches(fc.argmax(t), np.asarray(np.argmax(x), dtype=np.int64))
            for dim in range(-len(shape), len(shape)):
                for keepdim in (False, True):
                    values, indices = t.max(dim, keepdim)
                    r = fc.max(t, dim=dim, keepdim=keepdim)
                    assert r.values.tolist() == values.tolist() and r.indices.tolist() == indices.tolist()
                    assert_matches(values, np.max(x, axis=dim, keepdims=keepdim))
                    expected_idx = np.argmax(x, axis=dim)
                    if keepdim:
                        expected_idx = np.expand_dims(expected_idx, dim)
                    assert_matches(indices, expected_idx.astype(np.int64))
                    if dtype != "bool":
                        assert_matches(t.argmax(dim, keepdim), expected_idx.astype(np.int64))


def test_max_ties_nan_and_keepdim_without_dim():
    t = fc.tensor([[1, 3, 3], [2, 2, 0]])
    assert t.max(1).indices.tolist() == [1, 0]
    assert t.argmax().item() == 1
    assert t.argmax(keepdim=True).shape == (1, 1)
    n = fc.tensor([1.0, float("nan"), 5.0, float("nan")])
    assert np.isnan(n.max().item())
    assert n.argmax().item() == 1
    assert n.max(0).indices.item() == 1


def test_max_errors():
    with pytest.raises(RuntimeError, match=r"\[max\].*empty"):
        fc.zeros(0).max()
    with pytest.raises(RuntimeError, match=r"\[argmax\].*empty"):
        fc.zeros(0, 2).argmax()
    with pytest.raises(IndexError, match=r"\[max\].*size 0"):
        fc.zeros(2, 0).max(1)
    with pytest.raises(IndexError, match=r"\[max\] dimension 3 out of range"):
        fc.zeros(2, 2).max(3)
    assert fc.zeros(0, 2).max(1).values.shape == (0,)


def test_large_sums_over_a_dim_match_numpy():
    # exercises the threaded path (one accumulator per output element)
    x = np.random.default_rng(6).standard_normal((512, 4100))
    for layout in ("contiguous", "transposed"):
        t = make_tensor(x, layout)
        assert_matches(t.sum(1), x.sum(1), rtol=1e-10)
        assert_matches(t.sum(0, keepdim=True), x.sum(0, keepdims=True), rtol=1e-10, atol=1e-12)


def test_sum_to():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4))
    t = fc.tensor(x)
    assert_matches(fc._C._sum_to(t, (3, 4)), x.sum(0))
    assert_matches(fc._C._sum_to(t, (3, 1)), x.sum((0, 2))[:, None])
    assert_matches(fc._C._sum_to(t, (1, 1, 4)), x.sum((0, 1), keepdims=True))
    assert_matches(fc._C._sum_to(t, ()), np.asarray(x.sum()))
    assert fc._C._sum_to(t, (2, 3, 4)) is t
    with pytest.raises(ValueError, match=r"\[sum_to\] cannot sum shape \(2, 3, 4\) to shape \(2, 4\)"):
        fc._C._sum_to(t, (2, 4))
    with pytest.raises(ValueError, match=r"\[sum_to\]"):
        fc._C._sum_to(t, (1, 2, 3, 4))


def test_max_of_two_tensors_is_maximum():
    assert fc.max(fc.tensor([1, 5]), fc.tensor([3, 2])).tolist() == [3, 5]


def test_max_argmax_long_rows_with_nan_and_ties():
    rng = np.random.default_rng(8)
    for dtype in ("float32", "float64", "int64", "int32", "int8"):
        x = random_array((3, 5000), dtype, rng)
        if dtype.startswith("float"):
            x[1, 1234] = np.nan
            x[1, 4000] = np.nan
        t = fc.tensor(x)
        assert_matches(t.max(1).values, x.max(1))
        assert_matches(t.argmax(1), np.argmax(x, 1).astype(np.int64))
        assert t.argmax().item() == np.argmax(x)
        np.testing.assert_equal(t.max().item(), x.max())
    assert fc.tensor([False, True, True]).max().item() is True
    assert fc.tensor([False, True, True]).max(0).indices.item() == 1  # argmax of bool raises, as PyTorch
