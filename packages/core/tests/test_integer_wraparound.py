"""Integer arithmetic at the dtype limits wraps modulo 2**bits, as PyTorch and NumPy
(Note [Integer wrap-around] in src/cpu/elementwise/wrapping.h): int64 max + 1 is int64 min,
-int_min and abs(int_min) are int_min. The kernels compute in the unsigned type,
so none of this is C++ undefined behaviour (the sanitized build's UBSan run checks
that; `nox -s tests` runs this file under it). Every result is compared with
PyTorch on the same inputs.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch

# Signed dtypes overflow in C++ (undefined); uint8 is here for its wrap-around below 0.
DTYPES = ["int8", "int16", "int32", "int64", "uint8"]


def _limits(name: str) -> np.ndarray:
    info = np.iinfo(name)
    values = [info.min, info.min + 1, info.max - 1, info.max, 0, 1, 2, 3]
    if info.min < 0:
        values += [-1, -2, -3]
    return np.array(values, dtype=name)


def _pairs(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) of the limit values: the overflowing sums, differences and products."""
    v = _limits(name)
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel().copy(), b.ravel().copy()


def _fc(a: np.ndarray) -> fc.Tensor:
    return fc.tensor(a)


def _np(t: fc.Tensor) -> np.ndarray:
    return np.array(memoryview(t))


def _check(result: fc.Tensor, expected: torch.Tensor) -> None:
    assert str(result.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(result), expected.numpy())


@pytest.mark.parametrize("name", DTYPES)
def test_add_sub_mul_wrap_as_torch(name):
    a, b = _pairs(name)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    _check(fc.add(_fc(a), _fc(b)), ta + tb)
    _check(fc.sub(_fc(a), _fc(b)), ta - tb)
    _check(fc.mul(_fc(a), _fc(b)), ta * tb)
    _check(fc.add(_fc(a), _fc(b), alpha=3), torch.add(ta, tb, alpha=3))
    _check(fc.sub(_fc(a), _fc(b), alpha=2), torch.sub(ta, tb, alpha=2))


@pytest.mark.parametrize("name", DTYPES)
def test_in_place_and_scalar_forms_wrap(name):
    a, b = _pairs(name)
    x = _fc(a)
    x += _fc(b)
    _check(x, torch.from_numpy(a) + torch.from_numpy(b))
    _check(_fc(a) + 1, torch.from_numpy(a) + 1)
    _check(_fc(a) * 2, torch.from_numpy(a) * 2)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64"])
def test_neg_abs_of_int_min(name):
    v = _limits(name)
    t = torch.from_numpy(v)
    _check(fc.neg(_fc(v)), torch.neg(t))
    _check(fc.abs(_fc(v)), torch.abs(t))
    info = np.iinfo(name)
    assert _np(fc.neg(_fc(v)))[0] == info.min and _np(fc.abs(_fc(v)))[0] == info.min


@pytest.mark.parametrize("name", DTYPES)
def test_sum_cumsum_prod_cumprod_wrap(name):
    v = _limits(name)
    t = torch.from_numpy(v)
    # Integer inputs reduce in int64 (so only int64 wraps there) ...
    _check(fc.sum(_fc(v)), torch.sum(t))
    _check(fc.cumsum(_fc(v), 0), torch.cumsum(t, 0))
    big = np.repeat(v[[1, 2, 3]], 5)  # large factors: the product overflows int64
    _check(fc.prod(_fc(big)), torch.prod(torch.from_numpy(big)))
    _check(fc.cumprod(_fc(big), 0), torch.cumprod(torch.from_numpy(big), 0))
    # ... and in their own dtype when asked to.
    dt, tdt = getattr(fc, name), getattr(torch, name)
    _check(fc.cumsum(_fc(v), 0, dtype=dt), torch.cumsum(t, 0, dtype=tdt))
    _check(fc.cumprod(_fc(big), 0, dtype=dt), torch.cumprod(torch.from_numpy(big), 0, dtype=tdt))
    _check(fc.prod(_fc(big), 0, dtype=dt), torch.prod(torch.from_numpy(big), 0, dtype=tdt))


def test_int64_sum_along_dims_wraps():
    v = np.full((3, 40000), np.iinfo(np.int64).max, dtype=np.int64)  # the long-row and the chunked paths
    t = torch.from_numpy(v)
    _check(fc.sum(_fc(v)), torch.sum(t))
    _check(fc.sum(_fc(v), 1), torch.sum(t, 1))
    _check(fc.sum(_fc(v), 0), torch.sum(t, 0))
    _check(fc.sum(_fc(v.T.copy()), 0), torch.sum(torch.from_numpy(v.T.copy()), 0))


@pytest.mark.parametrize("name", DTYPES)
def test_pow_matmul_wrap(name):
    v = _limits(name)
    t = torch.from_numpy(v)
    _check(fc.pow(_fc(v), 3), torch.pow(t, 3))
    _check(fc.pow(_fc(v), _fc(np.full_like(v, 2))), torch.pow(t, torch.full_like(t, 2)))
    m = v[:8].reshape(2, 4)
    _check(fc.matmul(_fc(m), _fc(m.T.copy())), torch.matmul(torch.from_numpy(m), torch.from_numpy(m.T.copy())))


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64"])
def test_division_of_int_min_by_minus_one(name):
    v = _limits(name)
    minus_one = np.full_like(v, -1)
    t, tm = torch.from_numpy(v), torch.from_numpy(minus_one)
    _check(fc.floor_divide(_fc(v), _fc(minus_one)), torch.floor_divide(t, tm))
    # PyTorch's own trunc division stops there with SIGFPE: x / -1 is -x (wrapped) instead.
    _check(fc.div(_fc(v), _fc(minus_one), rounding_mode="trunc"), torch.neg(t))
    _check(fc.remainder(_fc(v), _fc(minus_one)), torch.remainder(t, tm))


@pytest.mark.parametrize("name", DTYPES)
def test_scatter_add_and_index_put_accumulate_wrap(name):
    v = _limits(name)
    index = np.zeros(len(v), dtype=np.int64)
    base = np.full(1, np.iinfo(name).max, dtype=name)
    expected = torch.from_numpy(base).scatter_add(0, torch.from_numpy(index), torch.from_numpy(v))
    _check(fc.scatter_add(_fc(base), 0, _fc(index), _fc(v)), expected)
    expected = torch.from_numpy(base).index_put((torch.from_numpy(index),), torch.from_numpy(v), accumulate=True)
    _check(fc.index_put(_fc(base), (_fc(index),), _fc(v), accumulate=True), expected)
