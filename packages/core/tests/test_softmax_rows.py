"""softmax / log_softmax values (Note [Softmax rows]: the fused row kernels, the
strided path for other dims), dot's checks in C++ (composite _dot), and float32 elementwise
loops around the memory-bound grain (Note [Elementwise grain]), against PyTorch / NumPy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

INF, NAN = float("inf"), float("nan")
DT = {"float32": (fc.float32, np.float32, torch.float32), "float64": (fc.float64, np.float64, torch.float64)}
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}


def both(op: str, a: np.ndarray, dim: int):
    ours = to_numpy(getattr(fc, op)(fc.tensor(a), dim))
    theirs = getattr(torch, op)(torch.from_numpy(a.copy()), dim).numpy()
    return ours, theirs


SHAPES_DIMS = [
    ((128, 10), -1),
    ((7, 513), 1),
    ((20, 35), -1),
    ((1024, 1), -1),
    ((3, 1), 0),
    ((1, 17), -1),
    ((33,), 0),
    ((2, 3, 5), 0),
    ((2, 3, 5), 1),
    ((4, 3, 300), 1),  # strided dim, inner > one block of 256
    ((2, 5, 7), 2),
    ((5,), -1),
]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize(("shape", "dim"), SHAPES_DIMS)
def test_softmax_values_match_torch(op, dtype, shape, dim):
    a = (np.random.default_rng(len(shape) * 7 + dim).standard_normal(shape) * 3).astype(DT[dtype][1])
    ours, theirs = both(op, a, dim)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DT))
def test_softmax_large_rows_split_across_threads(op, dtype):
    # 300 rows of 3000: several chunks of parallel_for; 2 x 70000 along dim 0 (strided).
    a = np.random.default_rng(1).standard_normal((300, 3000)).astype(DT[dtype][1]) * 5
    ours, theirs = both(op, a, -1)
    np.testing.assert_allclose(ours, theirs, **TOL[dtype])
    b = np.random.default_rng(2).standard_normal((2, 70000)).astype(DT[dtype][1])
    ours, theirs = both(op, b, 0)
    np.testing.assert_allclose(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_non_contiguous_input(op, dtype, dim):
    base = np.random.default_rng(3).standard_normal((40, 23)).astype(DT[dtype][1])
    x = fc.tensor(base).t()  # (23, 40), transposed strides
    ours = to_numpy(getattr(fc, op)(x, dim))
    theirs = getattr(torch, op)(torch.from_numpy(base.copy()).t(), dim).numpy()
    np.testing.assert_allclose(ours, theirs, **TOL[dtype])
    y = fc.tensor(base)[::3, 1::2]  # sliced
    ours = to_numpy(getattr(fc, op)(y, dim))
    theirs = getattr(torch, op)(torch.from_numpy(base.copy())[::3, 1::2], dim).numpy()
    np.testing.assert_allclose(ours, theirs, **TOL[dtype])


SPECIAL_ROWS = [
    [-INF, -INF, -INF],  # all -inf: NaN (as torch)
    [-INF, 1.0, 2.0],
    [INF, 1.0, 2.0],
    [INF, INF, 0.0],
    [NAN, 1.0, 2.0],
    [1e4, -1e4, 0.0],  # large logits: no overflow
    [3e38, 3e38, -3e38],
    [88.0, 89.0, 90.0],
    [-100.0, -104.0, -110.0],
]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("width", [1, 16, 40])  # the special values padded with 0..: the vector body and the tail
def test_softmax_special_rows_as_torch(op, dtype, width):
    rows = np.array([r + [0.5] * (width - 1) for r in SPECIAL_ROWS], dtype=DT[dtype][1])
    if width == 1:
        rows = np.array(SPECIAL_ROWS, dtype=DT[dtype][1])[:, :1]
    for dim in (-1, 0):
        ours, theirs = both(op, rows, dim)
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_softmax_single_element_rows():
    a = np.array([[0.5], [-3.0], [INF], [-INF], [NAN]], dtype=np.float32)
    for op in ("softmax", "log_softmax"):
        ours, theirs = both(op, a, -1)
        np.testing.assert_array_equal(ours, theirs)


def test_softmax_dtype_argument_and_half():
    a = np.random.default_rng(4).standard_normal((6, 9)).astype(np.float32)
    ours = fc.softmax(fc.tensor(a), -1, dtype=fc.float64)
    assert ours.dtype == fc.float64
    np.testing.assert_allclose(to_numpy(ours), torch.softmax(torch.from_numpy(a).double(), -1).numpy(), rtol=1e-12)
    h = fc.tensor(a).to(fc.float16)
    got = fc.softmax(h, -1)
    assert got.dtype == fc.float16
    want = torch.softmax(torch.from_numpy(a).half().float(), -1).half().float().numpy()
    np.testing.assert_allclose(to_numpy(got.to(fc.float32)), want, rtol=2e-3, atol=1e-4)


def test_softmax_empty_and_scalar():
    assert fc.softmax(fc.zeros(0, 5), -1).shape == (0, 5)
    assert fc.log_softmax(fc.zeros(4, 0), -1).shape == (4, 0)
    assert fc.softmax(fc.tensor(2.5), 0).item() == 1.0
    assert fc.log_softmax(fc.tensor(2.5), -1).item() == 0.0


def test_softmax_errors():
    with pytest.raises(TypeError, match=r"softmax.*int64"):
        fc.softmax(fc.tensor([1, 2, 3]), 0)
    with pytest.raises(TypeError, match=r"log_softmax.*int64"):
        fc.log_softmax(fc.tensor([1, 2, 3]), 0)
    with pytest.raises(IndexError, match="softmax"):
        fc.softmax(fc.ones(2, 3), 2)
    with pytest.raises(IndexError, match="log_softmax"):
        fc.log_softmax(fc.ones(2, 3), -3)


# ---- dot: the checks run in C++ (composite _dot), with the messages they had in Python ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "float16", "bfloat16", "complex64"])
def test_dot_values_and_dtype_match_torch(dtype):
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 16), rng.integers(0, 4, 16)
    ta = torch.tensor(a).to(getattr(torch, dtype))
    tb = torch.tensor(b).to(getattr(torch, dtype))
    fa = fc.tensor(a).to(getattr(fc, dtype))
    fb_ = fc.tensor(b).to(getattr(fc, dtype))
    got = fc.dot(fa, fb_)
    want = torch.dot(ta, tb)
    assert str(got.dtype).split(".")[-1] == dtype and got.shape == ()
    assert complex(got.item()) == complex(want.item())
    assert complex(fa.dot(fb_).item()) == complex(want.item())


def test_dot_non_contiguous_and_out():
    a = np.arange(40, dtype=np.float64)
    x, y = fc.tensor(a)[::2], fc.tensor(a)[1::2]
    assert fc.dot(x, y).item() == float(np.dot(a[::2], a[1::2]))
    out = fc.zeros(())
    fc.dot(fc.ones(3), fc.ones(3), out=out)
    assert out.item() == 3.0


def test_dot_errors_keep_their_messages():
    with pytest.raises(
        fc.FlambeauError, match=r"dot: 1D tensors expected, but got 2D and 1D tensors \(shapes \(2, 2\) and \(4\)\)"
    ):
        fc.dot(fc.ones(2, 2), fc.ones(4))
    with pytest.raises(fc.FlambeauError, match=r"dot: 1D tensors expected, but got 1D and 0D"):
        fc.dot(fc.ones(4), fc.tensor(1.0))
    with pytest.raises(
        fc.FlambeauError,
        match=r"dot: inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number of "
        r"elements, but got 3 and 4 elements respectively",
    ):
        fc.dot(fc.ones(3), fc.ones(4))
    with pytest.raises(
        TypeError, match=r"dot: expected both vectors to have same dtype, but found flambeau.float32 and flambeau.fl"
    ):
        fc.dot(fc.ones(3), fc.ones(3, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"^\[dot\] is not implemented for dtype bool"):
        fc.dot(fc.tensor([True]), fc.tensor([True]))
    with pytest.raises(TypeError, match=r"dot: expected a Tensor for tensor, got list"):
        fc.dot(fc.ones(3), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"dot: expected a Tensor for input, got int"):
        fc.dot(3, fc.ones(3))


# ---- float32 elementwise loops around the grain: each chunk boundary right ----


GRAIN_SIZES = [(1 << 18) - 1, (1 << 18) + 1, (1 << 19) + 7, (1 << 20), (1 << 20) + 13, 3 * (1 << 20) + 5]


@pytest.mark.parametrize("n", GRAIN_SIZES)
def test_elementwise_around_memory_bound_grain(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = fc.tensor(a), fc.tensor(b)
    np.testing.assert_array_equal(to_numpy(x + y), a + b)
    np.testing.assert_array_equal(to_numpy(x * y), a * b)
    np.testing.assert_array_equal(to_numpy(fc.relu(x)), np.maximum(a, 0))
    np.testing.assert_array_equal(to_numpy(fc.threshold_backward(y, x, 0.0)), np.where(a > 0, b, 0))
    out = fc.zeros(n)
    out.copy_(x)
    np.testing.assert_array_equal(to_numpy(out), a)
    np.testing.assert_allclose(fc.sum(x).item(), float(a.astype(np.float64).sum()), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 4096, 4097, 100000])
@pytest.mark.parametrize("dtype", list(DT))
def test_dot_short_loop_and_blas_paths_match(n, dtype):
    # <= 4096 elements: the one-loop _dot_small; longer: matmul (BLAS). Strided views both ways.
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(2 * n).astype(DT[dtype][1]), rng.standard_normal(n).astype(DT[dtype][1])
    want = float(np.dot(a[::2].astype(np.float64), b.astype(np.float64)))
    got = fc.dot(fc.tensor(a)[::2], fc.tensor(b))
    assert got.dtype == DT[dtype][0] and got.shape == ()
    np.testing.assert_allclose(got.item(), want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-4)
