"""ember.array_api.fft: the Array API standard's fft extension (2023.12) over ember.fft:
`axis` / `axes` instead of dim, norm="backward" by default, fftfreq / rfftfreq with d,
dtype and device keywords, fftshift / ifftshift with axes."""
from __future__ import annotations

import ember.fft as _fft

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
           "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.fft(x, n, axis, norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.ifft(x, n, axis, norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    return _fft.fftn(x, s, axes, norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    return _fft.ifftn(x, s, axes, norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.rfft(x, n, axis, norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.irfft(x, n, axis, norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _fft.rfftn(x, s, axes, norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _fft.irfftn(x, s, axes, norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.hfft(x, n, axis, norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _fft.ihfft(x, n, axis, norm)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _fft.fftfreq(n, d, dtype=dtype, device=device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _fft.rfftfreq(n, d, dtype=dtype, device=device)


def fftshift(x, /, *, axes=None):
    return _fft.fftshift(x, axes)


def ifftshift(x, /, *, axes=None):
    return _fft.ifftshift(x, axes)
