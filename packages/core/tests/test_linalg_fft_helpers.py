"""flambeau_core.fft's real-valued helpers (fftfreq, rfftfreq, fftshift,
ifftshift) against PyTorch 2.13: values, dtypes, dims, odd and even sizes,
non-contiguous inputs, errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core.testing import assert_close_on, devices
from helpers import make_tensor, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg/FFT helpers: no flambeau-cuda kernel yet")


@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 11])
@pytest.mark.parametrize("d", [1.0, 0.1, 2.5])
@pytest.mark.parametrize("dtype", [(None, None), (fc.float64, torch.float64)])
def test_fftfreq_rfftfreq(n, d, dtype):
    kw_fc = {} if dtype[0] is None else {"dtype": dtype[0]}
    kw_th = {} if dtype[1] is None else {"dtype": dtype[1]}
    for fname in ("fftfreq", "rfftfreq"):
        got = getattr(fc.fft, fname)(n, d, **kw_fc)
        want = getattr(torch.fft, fname)(n, d, **kw_th)
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(1,), (5,), (6,), (3, 4), (2, 5, 3)])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, -1)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_fftshift_ifftshift(shape, dim, layout):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = make_tensor(a, layout)
    for fname in ("fftshift", "ifftshift"):
        got = getattr(fc.fft, fname)(x, dim)
        want = getattr(torch.fft, fname)(torch.from_numpy(a), dim)
        np.testing.assert_array_equal(to_numpy(got), want.numpy())
    # ifftshift undoes fftshift
    np.testing.assert_array_equal(to_numpy(fc.fft.ifftshift(fc.fft.fftshift(x, dim), dim)), a)


def test_fft_helper_errors():
    with pytest.raises(TypeError, match="n must be an int"):
        fc.fft.fftfreq(2.5)
    with pytest.raises(fc.FlambeauError, match="non-negative"):
        fc.fft.rfftfreq(-1)
    with pytest.raises(TypeError, match="float32 or float64 dtype"):
        fc.fft.fftfreq(4, dtype=fc.int64)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fc.fft.fftshift(fc.ones(3), 2)
    with pytest.raises(TypeError, match="expected a Tensor"):
        fc.fft.fftshift([1, 2, 3])


@devices
@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
def test_freq_helpers_honour_device(device, fn):
    # device= places the result (it was accepted and ignored).
    r = getattr(fc.fft, fn)(6, 0.5, device=device)
    expected = fc.tensor(getattr(np.fft, fn)(6, 0.5).astype(np.float32).tolist())
    assert_close_on(device, r, expected)
