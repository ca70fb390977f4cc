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


KERNEL_CASES = [
    # shape, n_fft, kwargs: real float32/float64 onesided transforms, computed by _C._stft_r2c (Note [stft frames])
    ((3, 1600), 400, dict(hop_length=160)),
    ((1600,), 400, dict(hop_length=160, normalized=True)),
    ((2, 1000), 256, dict(hop_length=100, pad_mode="constant")),
    ((2, 1000), 255, dict(hop_length=64, pad_mode="replicate", win_length=200)),
    ((2, 300), 64, dict(hop_length=16, pad_mode="circular")),
    ((2, 300), 64, dict(hop_length=70, center=False, return_complex=False)),  # hop longer than a frame
    ((5, 33), 32, dict(hop_length=1, win_length=31)),  # reflect pad 16 of 33 samples: frames read both ends
    ((1, 9), 16, dict(hop_length=4, pad_mode="constant")),  # every frame overlaps both ends
    ((1, 8), 16, dict(hop_length=4, pad_mode="circular")),  # a circular pad as long as the signal
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("shape", "n_fft", "kwargs"), KERNEL_CASES)
def test_stft_one_kernel_matches_torch(shape, n_fft, kwargs, dtype):
    x, tx = pair(RNG.standard_normal(shape).astype(dtype))
    win = kwargs.get("win_length", n_fft)
    w, tw = pair(np.hanning(win + 1)[:-1].astype(dtype) + 0.1)
    kw = {"return_complex": True, **kwargs}
    expected = torch_quiet(torch.stft, tx, n_fft, window=tw, **kw)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=1e-4, atol=2e-4)
    got = fc.stft(x, n_fft, window=w, **kw)
    assert_same(got, expected, **tol)
    assert_same(fc.stft(x, n_fft, **kw), torch_quiet(torch.stft, tx, n_fft, **kw), **tol)  # no window: ones
    if len(shape) == 2 and "win_length" not in kwargs:  # a strided signal
        assert_same(fc.stft(x[:, ::2], n_fft // 2, **kw), torch_quiet(torch.stft, tx[:, ::2], n_fft // 2, **kw), **tol)


def test_stft_one_kernel_layout_and_empty_batch():
    """The result is the transposed view PyTorch returns (frames contiguous); an empty batch gives an empty
    result."""
    x, tx = pair(RNG.standard_normal((2, 500)).astype(np.float32))
    got, expected = fc.stft(x, 64, 16, return_complex=True), torch.stft(tx, 64, 16, return_complex=True)
    assert tuple(got.stride()) == tuple(expected.stride())
    one = torch.stft(tx[:1], 64, 16, return_complex=True)  # PyTorch's MKL refuses an empty batch: its shape
    empty = fc.stft(x[:0], 64, 16, return_complex=True)
    assert tuple(empty.shape) == (0, *one.shape[1:]) and empty.dtype == fc.complex64


def test_stft_with_gradient_takes_the_composite_form_with_the_same_values():
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    a = RNG.standard_normal((2, 300))
    w = np.hanning(64)
    plain = fc.stft(fc.tensor(a), 64, 16, window=fc.tensor(w), return_complex=True)
    x = fc.tensor(a, requires_grad=True)
    tracked = fc.stft(x, 64, 16, window=fc.tensor(w), return_complex=True)
    assert tracked.requires_grad
    np.testing.assert_allclose(to_numpy(tracked.detach()), to_numpy(plain), rtol=1e-12, atol=1e-12)


def test_stft_r2c_kernel_errors():
    x, w = fc.zeros(2, 20), fc.ones(8)
    with pytest.raises(TypeError, match=r"^\[stft\] expected a float32 or float64 signal and window of its dtype"):
        fc._C._stft_r2c(x, w.double(), 8, 2, 4, "reflect", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] expected a \(B, L\) signal and a window of n_fft"):
        fc._C._stft_r2c(x, fc.ones(7), 8, 2, 4, "reflect", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] expected a \(B, L\) signal"):
        fc._C._stft_r2c(x, w, 8, 0, 4, "reflect", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] Unrecognised padding mode bogus"):
        fc._C._stft_r2c(x, w, 8, 2, 4, "bogus", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] reflect padding of 20 needs a signal longer"):
        fc._C._stft_r2c(x, w, 8, 2, 20, "reflect", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] circular padding of 21 needs a signal of at least"):
        fc._C._stft_r2c(x, w, 8, 2, 21, "circular", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] expected 0 < n_fft < 20, but got n_fft=30"):
        fc._C._stft_r2c(x, fc.ones(30), 30, 2, 0, "constant", False)
    with pytest.raises(fc.FlambeauError, match=r"^\[stft\] padding of \d+ samples is too long"):
        fc._C._stft_r2c(x, w, 8, 2, 2**62, "constant", False)


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
