"""stft and istft (flambeau_core/_spectral.py) against PyTorch 2.13: values, dtypes and shapes over the
argument combinations, the round trip, and every error path."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(5)


def pair(a):
    """The same values as a flambeau tensor and a torch tensor."""
    return fc.tensor(a), torch.from_numpy(a)


def torch_quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def assert_same(ours, theirs, rtol=1e-10, atol=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=rtol, atol=atol)


STFT_CASES = [
    # shape, n_fft, kwargs
    ((20,), 8, dict(return_complex=True)),
    (
        (2, 33),
        8,
        dict(hop_length=3, win_length=6, window="hann", pad_mode="constant", normalized=True, return_complex=True),
    ),
    ((33,), 8, dict(hop_length=3, win_length=6, window="hann", center=False, onesided=False, return_complex=True)),
    ((2, 33), 9, dict(hop_length=2, window="hann", pad_mode="replicate", onesided=True, return_complex=False)),
    ((33,), 8, dict(hop_length=3, win_length=6, window="hann", pad_mode="circular", return_complex=False)),
    (
        (33,),
        8,
        dict(hop_length=3, win_length=6, window="hann", center=False, align_to_window=True, return_complex=True),
    ),
    (
        (33,),
        8,
        dict(hop_length=3, win_length=5, window="hann", center=False, align_to_window=False, return_complex=True),
    ),
    ((16,), 16, dict(center=False, return_complex=True)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("shape", "n_fft", "kwargs"), STFT_CASES)
def test_stft_matches_torch(shape, n_fft, kwargs, dtype):
    x, tx = pair(RNG.standard_normal(shape).astype(dtype))
    kw, tkw = dict(kwargs), dict(kwargs)
    if kwargs.get("window") == "hann":
        kw["window"], tkw["window"] = pair(np.hanning(kwargs.get("win_length", n_fft) + 1)[:-1].astype(dtype))
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    assert_same(fc.stft(x, n_fft, **kw), torch_quiet(torch.stft, tx, n_fft, **tkw), **tol)
    assert_same(x.stft(n_fft, **kw), torch_quiet(torch.stft, tx, n_fft, **tkw), **tol)


def test_stft_of_complex_input_and_window():
    x, tx = pair(RNG.standard_normal((2, 20)) + 1j * RNG.standard_normal((2, 20)))
    w, tw = pair(RNG.standard_normal(8) + 1j * RNG.standard_normal(8))
    assert_same(fc.stft(x, 8, window=w), torch_quiet(torch.stft, tx, 8, window=tw))
    r, tr = pair(RNG.standard_normal(20))
    assert_same(fc.stft(r, 8, window=w), torch_quiet(torch.stft, tr, 8, window=tw))


ISTFT_CASES = [
    # spectrum shape, n_fft, kwargs
    ((5, 11), 8, dict()),
    ((2, 5, 11), 8, dict(hop_length=3, win_length=6, normalized=True, length=30)),
    ((8, 11), 8, dict(hop_length=2, center=False)),  # two-sided spectrum read as Hermitian for a real signal
    ((8, 11), 8, dict(hop_length=2, length=7, return_complex=True)),
    ((5, 11), 8, dict(hop_length=2, length=18)),  # longer than the frames cover: zeros at the end
    ((8, 11), 8, dict(hop_length=2, onesided=False, center=False, length=40, return_complex=True)),
]


@pytest.mark.parametrize(("shape", "n_fft", "kwargs"), ISTFT_CASES)
def test_istft_matches_torch(shape, n_fft, kwargs):
    X, tX = pair(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))
    w, tw = pair(np.hanning(kwargs.get("win_length", n_fft) + 1)[:-1] + 0.1)
    assert_same(fc.istft(X, n_fft, window=w, **kwargs), torch_quiet(torch.istft, tX, n_fft, window=tw, **kwargs))
    assert_same(X.istft(n_fft, window=w, **kwargs), torch_quiet(torch.istft, tX, n_fft, window=tw, **kwargs))


def test_istft_inverts_stft():
    x = fc.tensor(RNG.standard_normal((3, 50)))
    w = fc.hann_window(16, dtype=fc.float64)
    y = fc.istft(fc.stft(x, 16, 4, window=w, return_complex=True), 16, 4, window=w, length=50)
    np.testing.assert_allclose(to_numpy(y), to_numpy(x), atol=1e-12)


X20, T20 = pair(RNG.standard_normal(20))
STFT_ERRORS = [
    (dict(n_fft=8), r"\[stft\] requires the return_complex parameter"),
    (dict(n_fft=30, center=False, return_complex=True), r"\[stft\] expected 0 < n_fft < 20, but got n_fft=30"),
    (dict(n_fft=0, return_complex=True), r"\[stft\] expected 0 < n_fft"),
    (dict(n_fft=8, hop_length=0, return_complex=True), r"\[stft\] expected hop_length > 0"),
    (dict(n_fft=8, win_length=9, return_complex=True), r"\[stft\] expected 0 < win_length <= n_fft"),
    (dict(n_fft=8, window=5, return_complex=True), r"\[stft\] expected 1D window tensor|\[stft\] expected a 1D window"),
    (dict(n_fft=8, return_complex=True, align_to_window=True), r"\[stft\] align_to_window should only be set"),
    (dict(n_fft=8, return_complex=True, onesided=True, window=1j), r"\[stft\] Cannot have onesided output"),
    (dict(n_fft=8, return_complex=True, pad_mode="bogus"), r"\[stft\] Unrecognised padding mode bogus"),
]


@pytest.mark.parametrize(("kwargs", "words"), STFT_ERRORS)
def test_stft_errors(kwargs, words):
    kw, tkw = dict(kwargs), dict(kwargs)
    if "window" in kwargs:
        n = kwargs["window"] if isinstance(kwargs["window"], int) else 8
        kw["window"], tkw["window"] = pair(np.ones(n) * (1j if kwargs["window"] == 1j else 1))
    with pytest.raises(Exception) as theirs:  # noqa: PT011
        torch_quiet(torch.stft, T20, **tkw)
    with pytest.raises((type(theirs.value), fc.FlambeauError), match=words):
        fc.stft(X20, **kw)


def test_stft_input_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[stft\] expected a 1D or 2D tensor"):
        fc.stft(fc.zeros(2, 2, 9), 4, return_complex=True)
    with pytest.raises(fc.FlambeauError, match=r"\[stft\] expected a tensor of floating point or complex"):
        fc.stft(fc.zeros(20, dtype=fc.int32), 8, return_complex=True)
    with pytest.raises(fc.FlambeauError, match=r"\[stft\] reflect padding of 4"):
        fc.stft(fc.zeros(3), 8, return_complex=True)
    with pytest.raises(TypeError, match=r"\[stft\] expected a Tensor"):
        fc.stft([1.0, 2.0], 1, return_complex=True)
    with pytest.raises(TypeError, match=r"\[stft\] expected an int 'n_fft'"):
        fc.stft(X20, 8.0, return_complex=True)


SPEC, TSPEC = pair(RNG.standard_normal((5, 11)) + 1j * RNG.standard_normal((5, 11)))
ISTFT_ERRORS = [
    (dict(n_fft=7), r"\[istft\] expected the frequency dimension .* n_fft / 2 \+ 1 when onesided=True, but got 5"),
    (dict(n_fft=8, onesided=False), r"\[istft\] expected the frequency dimension .* n_fft when onesided=False"),
    (dict(n_fft=8, hop_length=9), r"\[istft\] expected 0 < hop_length <= win_length"),
    (dict(n_fft=8, hop_length=4, win_length=2), r"\[istft\] expected 0 < hop_length <= win_length"),
    (dict(n_fft=8, window=0.0), r"\[istft\] window overlap add min"),
    (dict(n_fft=8, return_complex=True), r"\[istft\] Cannot have onesided output"),
    (dict(n_fft=8, window=1j), r"\[istft\] Complex windows are incompatible with return_complex=False"),
]


@pytest.mark.parametrize(("kwargs", "words"), ISTFT_ERRORS)
def test_istft_errors(kwargs, words):
    kw, tkw = dict(kwargs), dict(kwargs)
    if "window" in kwargs:
        kw["window"], tkw["window"] = pair(np.ones(8) * kwargs["window"])
    with pytest.raises(RuntimeError):
        torch_quiet(torch.istft, TSPEC, **tkw)
    with pytest.raises(fc.FlambeauError, match=words):
        fc.istft(SPEC, **kw)


def test_istft_input_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[istft\] requires a complex-valued input"):
        fc.istft(fc.view_as_real(SPEC), 8)
    with pytest.raises(fc.FlambeauError, match=r"\[istft\] expected a tensor with 3 or 4 dimensions"):
        fc.istft(SPEC[None, None], 8)
