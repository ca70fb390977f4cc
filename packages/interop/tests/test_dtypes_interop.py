"""The wider dtypes across DLPack (PyTorch) and NumPy: uint16/32/64 and complex64/128 share memory both
ways with the right dtype codes."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_interop as fi
import numpy as np
import pytest
import torch

NEW = [
    (fc.uint16, torch.uint16, np.uint16),
    (fc.uint32, torch.uint32, np.uint32),
    (fc.uint64, torch.uint64, np.uint64),
    (fc.complex64, torch.complex64, np.complex64),
    (fc.complex128, torch.complex128, np.complex128),
]


def values(np_dtype):
    x = np.arange(12).reshape(3, 4) % 50
    if np.dtype(np_dtype).kind == "c":
        return (x - 5 + 1j * (x % 7 - 3)).astype(np_dtype)
    return x.astype(np_dtype)


@pytest.mark.parametrize(("f", "t", "n"), NEW)
def test_dlpack_both_ways(f, t, n):
    src = torch.from_numpy(values(n))
    x = fi.from_dlpack(src)
    assert x.dtype == f
    assert x.data_ptr() == src.data_ptr()
    back = torch.from_dlpack(x)
    assert back.dtype == t and back.data_ptr() == src.data_ptr()
    assert torch.equal(back, src)


@pytest.mark.parametrize(("f", "t", "n"), NEW)
def test_numpy_both_ways(f, t, n):
    a = values(n)
    x = fi.from_numpy(a)
    assert x.dtype == f and x.data_ptr() == a.ctypes.data
    b = x.numpy()
    assert b.dtype == np.dtype(n)
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(np.asarray(x), a)


def test_complex_view_through_numpy():
    a = values(np.complex128)
    x = fi.from_numpy(a)
    r = fc.view_as_real(x).numpy()
    np.testing.assert_array_equal(r[..., 0], a.real)
    np.testing.assert_array_equal(r[..., 1], a.imag)
