"""``flambeau.array_api.fft``: the standard's FFT extension over ``flambeau.fft``.

The standard spells PyTorch's ``dim`` as ``axis``/``axes``; the transforms are the same.
"""

from __future__ import annotations


def _fft():
    import flambeau_core.fft as fft

    return fft


def _transform(name: str):
    return getattr(_fft(), name)


def _one(name: str):
    def fn(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
        return _transform(name)(x, n=n, dim=axis, norm=norm)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The standard's ``fft.{name}``: ``flambeau.fft.{name}`` with ``axis`` for ``dim``."
    return fn


def _many(name: str):
    def fn(x, /, *, s=None, axes=None, norm: str = "backward"):
        return _transform(name)(x, s=s, dim=axes, norm=norm)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The standard's ``fft.{name}``: ``flambeau.fft.{name}`` with ``axes`` for ``dim``."
    return fn


fft = _one("fft")
ifft = _one("ifft")
rfft = _one("rfft")
irfft = _one("irfft")
hfft = _one("hfft")
ihfft = _one("ihfft")
fftn = _many("fftn")
ifftn = _many("ifftn")
rfftn = _many("rfftn")
irfftn = _many("irfftn")


def fftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None):
    return _fft().fftfreq(n, d=d, dtype=dtype)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None):
    return _fft().rfftfreq(n, d=d, dtype=dtype)


def fftshift(x, /, *, axes=None):
    return _fft().fftshift(x, dim=axes)


def ifftshift(x, /, *, axes=None):
    return _fft().ifftshift(x, dim=axes)
