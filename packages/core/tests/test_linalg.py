"""mm, bmm and matmul against NumPy: all layouts BLAS takes without a copy
(transposed views), layouts that need packing, integer fallback, errors."""

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg: no flambeau-cuda kernel yet")


def rng_array(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k, m", [(1, 1, 1), (2, 3, 4), (17, 33, 9), (64, 1, 64), (1, 50, 1), (5, 0, 3), (0, 4, 2)])
def test_mm_matches_numpy(dtype, n, k, m):
    a, b = rng_array((n, k), dtype, 1), rng_array((k, m), dtype, 2)
    got = fc.mm(fc.tensor(a), fc.tensor(b))
    assert got.shape == (n, m)
    np.testing.assert_allclose(to_numpy(got), a @ b, **tol(dtype))


@pytest.mark.parametrize("layout_a", ["c", "t", "step", "slice"])
@pytest.mark.parametrize("layout_b", ["c", "t", "step", "slice"])
def test_mm_operand_layouts(layout_a, layout_b):
    def make(shape, layout, seed):
        base = rng_array((shape[0] * 2 + 3, shape[1] * 2 + 3), np.float64, seed)
        t = fc.tensor(base)
        if layout == "c":
            return fc.tensor(base[: shape[0], : shape[1]].copy()), base[: shape[0], : shape[1]]
        if layout == "t":
            bt = base[: shape[1], : shape[0]]
            return fc.tensor(bt.copy()).T, bt.T
        if layout == "step":  # neither dim unit-stride: packed
            return t[: shape[0] * 2 : 2, : shape[1] * 2 : 2], base[: shape[0] * 2 : 2, : shape[1] * 2 : 2]
        return t[1 : shape[0] + 1, 2 : shape[1] + 2], base[1 : shape[0] + 1, 2 : shape[1] + 2]  # ld > cols

    ta, na = make((5, 7), layout_a, 1)
    tb, nb = make((7, 4), layout_b, 2)
    np.testing.assert_allclose(to_numpy(fc.mm(ta, tb)), na @ nb, rtol=1e-12)
    np.testing.assert_allclose(to_numpy(ta @ tb), na @ nb, rtol=1e-12)


def test_mm_expanded_and_broadcast_operands():
    row = fc.tensor([[1.0, 2.0, 3.0]])
    a = row.expand(4, 3)  # stride (0, 1)
    b = fc.tensor(rng_array((3, 2), np.float32))
    np.testing.assert_allclose(to_numpy(a @ b), np.broadcast_to(to_numpy(row), (4, 3)) @ to_numpy(b), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_mm_integer_fallback(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    b = np.arange(8, dtype=dtype).reshape(4, 2) - 3
    np.testing.assert_array_equal(to_numpy(fc.mm(fc.tensor(a), fc.tensor(b))), a @ b)
    np.testing.assert_array_equal(to_numpy(fc.mm(fc.tensor(a.T.copy()).T, fc.tensor(b))), a @ b)


def test_bmm():
    a, b = rng_array((3, 4, 5), np.float32, 1), rng_array((3, 5, 2), np.float32, 2)
    np.testing.assert_allclose(to_numpy(fc.bmm(fc.tensor(a), fc.tensor(b))), a @ b, rtol=1e-5, atol=1e-5)
    ta = fc.tensor(a.transpose(0, 2, 1).copy()).transpose(1, 2)
    np.testing.assert_allclose(to_numpy(ta.bmm(fc.tensor(b))), a @ b, rtol=1e-5, atol=1e-5)
    tp = fc.tensor(a.transpose(1, 0, 2).copy()).permute(1, 0, 2)  # batch stride not leading
    np.testing.assert_allclose(to_numpy(fc.bmm(tp, fc.tensor(b))), a @ b, rtol=1e-5, atol=1e-5)
    ai = np.arange(24).reshape(2, 3, 4)
    bi = np.arange(8).reshape(2, 4, 1)
    np.testing.assert_array_equal(to_numpy(fc.bmm(fc.tensor(ai), fc.tensor(bi))), ai @ bi)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((3,), (5, 3, 4)),
        ((5, 2, 3), (3,)),
        ((2, 3, 0), (0, 4)),
        ((2, 0, 3), (3, 4)),
        ((2, 1, 2, 3), (4, 3, 2)),
        ((1, 2, 3), (6, 3, 1)),
        ((4, 2, 3), (4, 3, 5)),
    ],
)
def test_matmul_numpy_semantics(sa, sb):
    a, b = rng_array(sa, np.float64, 1), rng_array(sb, np.float64, 2)
    got = fc.matmul(fc.tensor(a), fc.tensor(b))
    want = np.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-10)
    assert (fc.tensor(a) @ fc.tensor(b)).shape == want.shape
    assert fc.tensor(a).matmul(fc.tensor(b)).shape == want.shape


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    n=st.integers(1, 4),
    k=st.integers(1, 4),
    m=st.integers(1, 4),
    drop=st.lists(st.booleans(), min_size=2, max_size=2),
)
def test_matmul_property(batch, n, k, m, drop):
    sa = (*batch, n, k)
    sb = (k, m)
    if drop[0]:
        sa = (k,)
    if drop[1]:
        sb = (*batch, k, m) if not drop[0] else (k, m)
    a, b = rng_array(sa, np.float64, 3), rng_array(sb, np.float64, 4)
    np.testing.assert_allclose(to_numpy(fc.matmul(fc.tensor(a), fc.tensor(b))), np.matmul(a, b), rtol=1e-10)


def test_matmul_errors():
    a, b = fc.zeros(2, 3), fc.zeros(4, 5)
    with pytest.raises(ValueError, match=r"\[matmul\] shapes \(2, 3\) and \(4, 5\) cannot be multiplied: 3 != 4"):
        a @ b
    with pytest.raises(ValueError, match=r"\[mm\] shapes \(2, 3\) and \(4, 5\) cannot be multiplied: 3 != 4"):
        fc.mm(a, b)
    with pytest.raises(TypeError, match=r"\[mm\].*float32.*float64"):
        fc.mm(fc.zeros(2, 2), fc.zeros(2, 2, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[mm\].*float32.*int64"):
        fc.zeros(2, 2) @ fc.zeros(2, 2, dtype=fc.int64)
    with pytest.raises(ValueError, match=r"\[mm\] expected two 2-D tensors"):
        fc.mm(fc.zeros(3), fc.zeros(3, 3))
    with pytest.raises(ValueError, match=r"\[bmm\] expected two 3-D tensors"):
        fc.bmm(fc.zeros(3, 3), fc.zeros(3, 3))
    with pytest.raises(ValueError, match=r"\[bmm\] batch sizes differ"):
        fc.bmm(fc.zeros(2, 3, 3), fc.zeros(3, 3, 3))
    with pytest.raises(ValueError, match=r"\[matmul\] both arguments need at least 1 dimension"):
        fc.matmul(fc.tensor(1.0), fc.zeros(3))
    with pytest.raises(ValueError, match=r"\[matmul\] shapes \(3,\) and \(4,\) cannot be multiplied"):
        fc.zeros(3) @ fc.zeros(4)
    with pytest.raises(ValueError, match=r"\[matmul\] batch dims"):
        fc.zeros(2, 2, 3) @ fc.zeros(3, 3, 1)
    with pytest.raises(TypeError):
        fc.zeros(2, 2) @ [[1.0, 0.0], [0.0, 1.0]]
