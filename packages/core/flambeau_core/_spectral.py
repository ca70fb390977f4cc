"""Short-time Fourier transforms composed in Python: ``stft`` and ``istft`` (functions and Tensor methods).

``stft`` cuts the (padded) signal into frames with ``unfold``, multiplies each by the window (zero-padded to
``n_fft`` around its centre) and takes ``rfft``/``fft`` along the frame. ``istft`` inverts each frame with
``irfft``/``ifft``, multiplies by the window again and overlap-adds the frames with ``col2im``; dividing by the
overlap-added squared window (the envelope) undoes the windowing, which needs the envelope nonzero
everywhere (the NOLA condition). Gradients come from the ops composed. Without a gradient recorded, the
onesided stft of a real CPU signal is one kernel, ``_C._stft_r2c`` (Note [stft frames]: no padded copy, the
window applied while framing, one transform per chunk of frames).
"""

from __future__ import annotations

from flambeau_core import _C, _shape_composites, fft
from flambeau_core._composing import check_int, check_tensor
from flambeau_core._linalg_common import _needs_grad
from flambeau_core.amp.custom_functions import autocast_float32

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _describe(x: _C.Tensor) -> str:
    return f"{x.dtype} tensor of shape {tuple(x.shape)}"


def _frame_window(name: str, window: _C.Tensor | None, win_length: int, n_fft: int, like: _C.Tensor) -> _C.Tensor:
    """The window as ``n_fft`` values: ``win_length`` values of ``window`` (ones if None) centred in zeros."""
    if window is None:
        window = _C.ones(win_length, dtype=like.real.dtype if like.is_complex() else like.dtype, device=like.device)
    else:
        check_tensor(name, window, "window")
        if window.dim() != 1 or window.shape[0] != win_length:
            raise _C.FlambeauError(
                f"[{name}] expected a 1D window tensor of size equal to win_length={win_length}, "
                f"but got window with size {list(window.shape)}"
            )
    left = (n_fft - win_length) // 2
    if left or n_fft != win_length:
        window = _shape_composites.constant_pad_nd(window, [left, n_fft - win_length - left], 0.0)
    return window


def _check_lengths(name: str, n_fft: int, hop_length: int | None, win_length: int | None) -> tuple[int, int]:
    check_int(name, n_fft, "n_fft")
    hop_length = n_fft // 4 if hop_length is None else check_int(name, hop_length, "hop_length")
    win_length = n_fft if win_length is None else check_int(name, win_length, "win_length")
    return hop_length, win_length


@autocast_float32
def stft(
    input: _C.Tensor,  # noqa: A002
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: _C.Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> _C.Tensor:
    """stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect',
    normalized=False, onesided=None, return_complex=None, align_to_window=None) -> Tensor

    Short-time Fourier transform of a 1-D signal ``(L)`` or a batch ``(B, L)``: the DFT of every frame of
    ``n_fft`` samples, frames ``hop_length`` apart (default ``n_fft // 4``), each multiplied by ``window``
    (``win_length`` values, default ``n_fft``; ones if None; zero-padded to ``n_fft`` around its centre).

    ``center=True`` pads the signal by ``n_fft // 2`` on both sides with ``pad_mode`` first, so frame ``t``
    is centred at sample ``t * hop_length``. ``normalized`` scales by ``n_fft ** -0.5``; ``onesided``
    (default: True for a real input and window) keeps the ``n_fft // 2 + 1`` non-negative frequencies.
    The result has shape ``(B?, N, T)`` (complex; ``return_complex`` must be given for a real input) or
    ``(B?, N, T, 2)`` with ``return_complex=False``. ``align_to_window`` (only with ``center=False``) takes
    the frames where the window sits rather than ``n_fft`` samples from each frame's start.

    Example:
        >>> import flambeau_core as fc
        >>> spec = fc.stft(fc.ones(16), n_fft=8, window=fc.hann_window(8), return_complex=True)
        >>> spec.shape
        flambeau.Size([5, 9])
    """
    check_tensor("stft", input)
    hop_length, win_length = _check_lengths("stft", n_fft, hop_length, win_length)
    if center and align_to_window is not None:
        raise _C.FlambeauError("[stft] align_to_window should only be set when center = false")
    if input.dim() not in (1, 2):
        raise _C.FlambeauError(f"[stft] expected a 1D or 2D tensor, got a {_describe(input)}")
    if not (input.is_floating_point() or input.is_complex()):
        raise _C.FlambeauError(f"[stft] expected a tensor of floating point or complex values, got {input.dtype}")
    complex_window = window is not None and isinstance(window, _C.Tensor) and window.is_complex()
    if return_complex is None:
        if not (input.is_complex() or complex_window):
            raise _C.FlambeauError(
                "[stft] requires the return_complex parameter be given for real inputs, and will further "
                "require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    pad = 0
    if center:
        if pad_mode not in _PAD_MODES:
            raise NotImplementedError(f"[stft] Unrecognised padding mode {pad_mode}")
        pad = n_fft // 2
        if pad_mode == "reflect" and pad >= input.shape[-1]:
            raise _C.FlambeauError(
                f"[stft] reflect padding of {pad} needs a signal longer than {pad} samples, got {input.shape[-1]}"
            )
    length = input.shape[-1] + 2 * pad
    if not 0 < n_fft <= length:
        raise _C.FlambeauError(f"[stft] expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise _C.FlambeauError(f"[stft] expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise _C.FlambeauError(f"[stft] expected 0 < win_length <= n_fft, but got win_length={win_length}")
    win = _frame_window("stft", window, win_length, n_fft, input)
    if _framed_in_one_kernel(input, win, onesided, align_to_window, pad, pad_mode):
        # Padding, framing, window and onesided transforms in one CPU kernel (Note [stft frames]).
        spectrum = _C._stft_r2c(input.reshape(-1, input.shape[-1]), win, n_fft, hop_length, pad, pad_mode, normalized)
        spectrum = spectrum.transpose(-1, -2)
        if input.dim() == 1:
            spectrum = spectrum.squeeze(0)
        return spectrum if return_complex else _C.view_as_real(spectrum)
    if pad:
        signal_dim = input.dim()
        padded = _padded(input.reshape([1] * (3 - signal_dim) + list(input.shape)), pad, pad_mode)
        input = padded.reshape(padded.shape[3 - signal_dim :])  # noqa: A001
    length = input.shape[-1]
    if align_to_window and win_length < n_fft:
        # Frames start where the window starts: shift the signal so the window's left zeros fall before it.
        left = (n_fft - win_length) // 2
        usable = (length - win_length) // hop_length * hop_length + n_fft
        signal = (
            _shape_composites.constant_pad_nd(input, [left, usable - length - left])
            if usable > length + left
            else input
        )
        frames = signal.unfold(-1, n_fft, hop_length)[..., : (length - win_length) // hop_length + 1, :]
    else:
        frames = input.unfold(-1, n_fft, hop_length)
    frames = frames * win
    if onesided is None:
        onesided = not (frames.is_complex())
    elif onesided and frames.is_complex():
        raise _C.FlambeauError("[stft] Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = fft.rfft(frames, norm=norm) if onesided else fft.fft(frames, norm=norm)
    spectrum = spectrum.transpose(-1, -2)
    return spectrum if return_complex else _C.view_as_real(spectrum)


def istft(
    input: _C.Tensor,  # noqa: A002
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: _C.Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> _C.Tensor:
    """istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
    onesided=None, length=None, return_complex=False) -> Tensor

    Inverse short-time Fourier transform: the signal whose ``stft`` (with the same arguments) is ``input``,
    a complex ``(B?, N, T)`` tensor. Each frame is inverted (``irfft`` when ``onesided``, the default when
    ``N != n_fft``), multiplied by the window, overlap-added ``hop_length`` apart and divided by the
    overlap-added squared window; that envelope must be nonzero over the whole output (the NOLA
    condition), else it is an error. ``center=True`` trims the ``n_fft // 2`` padding ``stft`` added;
    ``length`` trims (or zero-pads) the result to that many samples. ``return_complex=True`` returns the
    complex signal (not onesided).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.arange(16.0)
        >>> w = fc.hann_window(8)
        >>> y = fc.istft(fc.stft(x, 8, window=w, return_complex=True), 8, window=w, length=16)
        >>> fc.allclose(y, x, atol=1e-5)
        True
    """
    check_tensor("istft", input)
    hop_length, win_length = _check_lengths("istft", n_fft, hop_length, win_length)
    if not input.is_complex():
        raise _C.FlambeauError(
            "[istft] requires a complex-valued input tensor matching the output from stft with return_complex=True."
        )
    if input.dim() not in (2, 3):
        raise _C.FlambeauError(
            f"[istft] expected a tensor with 3 or 4 dimensions (as real), but got {input.dim() + 1}: {_describe(input)}"
        )
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    onesided = n_freq != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != n_freq:
        raise _C.FlambeauError(
            "[istft] expected the frequency dimension (3rd to the last) of the input tensor to match "
            f"n_fft / 2 + 1 when onesided=True, but got {n_freq}"
        )
    if not onesided and n_fft != n_freq:
        raise _C.FlambeauError(
            "[istft] expected the frequency dimension (3rd to the last) of the input tensor to match "
            f"n_fft when onesided=False, but got {n_freq}"
        )
    if not 0 < hop_length <= win_length:
        raise _C.FlambeauError(f"[istft] expected 0 < hop_length <= win_length, got {hop_length} and {win_length}")
    if not 0 < win_length <= n_fft:
        raise _C.FlambeauError(f"[istft] expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if length is not None:
        check_int("istft", length, "length")
    win = _frame_window("istft", window, win_length, n_fft, spec)
    if return_complex:
        if onesided:
            raise _C.FlambeauError("[istft] Cannot have onesided output if window or input is complex")
    elif win.is_complex():
        raise _C.FlambeauError("[istft] Complex windows are incompatible with return_complex=False")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)
    if return_complex:
        frames = fft.ifft(frames, n=n_fft, norm=norm)
    else:  # a real signal: the spectrum is read as Hermitian, its non-negative half alone (as PyTorch)
        frames = fft.irfft(frames[..., : n_fft // 2 + 1], n=n_fft, norm=norm)
    frames = frames * win  # (B, T, n_fft)
    signal_len = n_fft + hop_length * (n_frames - 1)
    signal = _overlap_add(frames, signal_len, hop_length)
    envelope = _overlap_add((win * win.conj()).real.expand(1, n_frames, n_fft), signal_len, hop_length)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = signal_len - n_fft // 2 if center else signal_len
    stop = min(end, signal_len)
    signal, envelope = signal[..., start:stop], envelope[..., start:stop]
    if envelope.numel() and bool((envelope.abs() < 1e-11).any()):
        raise _C.FlambeauError(
            f"[istft] window overlap add min: {envelope.abs().min().item():g} (the squared window, overlap-added "
            f"{hop_length} apart, must be nonzero everywhere; NOLA): use a window with no zeros in its overlaps"
        )
    signal = signal / envelope
    if end > signal_len:
        signal = _shape_composites.constant_pad_nd(signal, [0, end - max(start, signal_len)], 0.0)
    return signal if batched else signal.squeeze(0)


def _framed_in_one_kernel(input, win, onesided, align_to_window, pad, pad_mode) -> bool:  # noqa: A002
    """Whether ``_C._stft_r2c`` computes this stft: real float32/float64 CPU tensors of one dtype, onesided,
    no gradient recorded, frames from each frame's start, and a pad its index map reads (a circular pad
    longer than the signal is refused by the composite form's padding)."""
    return (
        type(input) is _C.Tensor
        and type(win) is _C.Tensor
        and input.dtype in (_C.float32, _C.float64)
        and win.dtype == input.dtype
        and input.device.type == "cpu"
        and win.device.type == "cpu"
        and onesided in (None, True)
        and not align_to_window
        and not (pad_mode == "circular" and pad > input.shape[-1])
        and not _needs_grad(input, win)
    )


def _padded(x: _C.Tensor, pad: int, mode: str) -> _C.Tensor:
    if x.is_complex():  # _pad_nd takes real tensors: pad both parts
        return _C.complex(_padded(x.real, pad, mode), _padded(x.imag, pad, mode))
    return _C._pad_nd(x, [pad, pad], mode)


def _overlap_add(frames: _C.Tensor, signal_len: int, hop_length: int) -> _C.Tensor:
    """(B, T, n) frames summed into a (B, signal_len) signal, frame t starting at t * hop_length."""
    if frames.is_complex():
        re = _overlap_add(frames.real, signal_len, hop_length)
        return _C.complex(re, _overlap_add(frames.imag, signal_len, hop_length))
    n_fft = frames.shape[-1]
    columns = frames.transpose(-1, -2)  # (B, n, T): col2im's (N, C * kh * kw, L)
    out = _C.col2im(columns, [1, signal_len], [1, n_fft], [1, 1], [0, 0], [1, hop_length])
    return out.reshape(frames.shape[0], signal_len)


def install() -> None:
    import flambeau_core

    flambeau_core.stft = stft
    flambeau_core.istft = istft
    _C.Tensor.stft = stft
    _C.Tensor.istft = istft
