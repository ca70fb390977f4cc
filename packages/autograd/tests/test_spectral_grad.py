"""Gradients of stft and istft (flambeau_core/_spectral.py, compositions of unfold, fft and col2im) against
PyTorch 2.13 in float64, and gradcheck."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, torch

RNG = np.random.default_rng(23)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(hop_length=3),
        dict(hop_length=2, win_length=6, center=False, normalized=True),
        dict(hop_length=3, pad_mode="constant", onesided=False),
    ],
)
def test_stft_grad(kwargs):
    window = np.hanning(kwargs.get("win_length", 8) + 1)[:-1]

    def run(lib, x, w):
        return lib.view_as_real(lib.stft(x, 8, window=w, return_complex=True, **kwargs))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_with_torch(
            lambda x, w: run(fc, x, w), lambda x, w: run(torch, x, w), [RNG.standard_normal((2, 20)), window]
        )


@pytest.mark.parametrize("kwargs", [dict(length=20), dict(center=False), dict(normalized=True, length=25)])
def test_istft_grad(kwargs):
    spec = RNG.standard_normal((5, 9, 2))
    window = np.hanning(9)[:-1] + 0.2

    def run(lib, s, w):
        return lib.istft(lib.view_as_complex(s), 8, 2, window=w, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_with_torch(lambda s, w: run(fc, s, w), lambda s, w: run(torch, s, w), [spec, window])


def test_stft_istft_round_trip_grad_is_identity():
    x = fb_tensor(RNG.standard_normal(30), requires_grad=True)
    w = fc.hann_window(8, dtype=fc.float64)
    y = fc.istft(fc.stft(x, 8, 2, window=w, return_complex=True), 8, 2, window=w, length=30)
    y.sum().backward()
    np.testing.assert_allclose(np.array(memoryview(x.grad)), np.ones(30), atol=1e-12)
