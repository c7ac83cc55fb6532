"""ember.fft: discrete Fourier transforms over complex tensors, PyTorch's torch.fft.

fft, ifft, fft2, ifft2, fftn, ifftn (complex <-> complex), rfft, irfft, rfft2, irfft2,
rfftn, irfftn (real <-> the Hermitian half), hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn
(a Hermitian time signal <-> real), fftfreq, rfftfreq, fftshift, ifftshift, with
PyTorch's signatures: `n` / `s` (zero-pad or trim the input along each transformed
dim), `dim`, `norm` ("backward" default, "ortho", "forward"), `out`.

Each function is the real layer of ember.ops.fft (float tensors whose last dim is
(re, im)) between `view_as_real` and `view_as_complex`, both zero copy: the kernels
are the `fft` family (hand-written mixed-radix and Bluestein C on the CPU), the
derivatives ember.ops.fft's. A real input to fft / ifft / fftn runs the real-input
transform (about half the work) and fills in the Hermitian rest, as PyTorch does.

The transforms need complex dtypes (ember.complex64 / complex128); in a build without
them each call raises RuntimeError("ember.fft needs complex dtypes ...") (fftfreq,
rfftfreq, fftshift and ifftshift are real and always work).
"""
from __future__ import annotations

import ember as _em
from ember.ops import fft as _F
from ember.ops.fft import fftfreq as _fftfreq, fftshift, ifftshift, rfftfreq as _rfftfreq

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _need_complex(op):
    if not (hasattr(_em, "view_as_real") and hasattr(_em, "view_as_complex")
            and hasattr(_em, "complex64")):
        raise RuntimeError(f"ember.fft.{op}: ember.fft needs complex dtypes "
                           f"(ember.complex64 / complex128), which this build of ember "
                           f"does not have")


def _is_complex(x):
    return _em.is_complex(x)


def _ri(x, op):
    """A complex tensor as its [..., 2] real view (a lazily conjugated one resolved)."""
    if hasattr(x, "resolve_conj"):
        x = x.resolve_conj()
    return _em.view_as_real(x)


def _real(x, op):
    from ember._args import tensor_arg
    tensor_arg(x, op)
    if _is_complex(x):
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype!r}")
    return x


def _c(y):
    return _em.view_as_complex(y)


def _finish(r, out, op):
    if out is None:
        return r
    from ember._args import tensor_arg
    tensor_arg(out, op, "out")
    if tuple(out.shape) != tuple(r.shape):
        out.resize_(tuple(r.shape))
    out.copy_(r)
    return out


def _c2c_any(x, dim, n, norm, forward, op):
    """fft / ifft of any input: complex through c2c; real through r2c with all n outputs
    (conjugated for the backward direction: the DFT of a real signal is Hermitian)."""
    from ember._args import tensor_arg
    tensor_arg(x, op)
    if _is_complex(x):
        return _c(_F.fft_c2c(_ri(x, op), dim, n, norm, forward))
    if forward:
        return _c(_F.fft_r2c(x, dim, n, norm, onesided=False))
    # ifft(x) = conj(fft(x)) with the backward scale, for real x
    norm = _F._norm_arg(norm, op)
    return _c(_F._conj(_F.fft_r2c(x, dim, n, _F._swap(norm), onesided=False)))


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along dim: X_k = sum_j x_j exp(-2 pi i jk / n)."""
    _need_complex("fft")
    return _finish(_c2c_any(input, dim, n, norm, True, "fft"), out, "fft")


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft (1/n by default)."""
    _need_complex("ifft")
    return _finish(_c2c_any(input, dim, n, norm, False, "ifft"), out, "ifft")


def _c2cn(input, s, dim, norm, forward, op):
    from ember._args import tensor_arg
    tensor_arg(input, op)
    if not _is_complex(input):
        input = input.to(_complex_of(input.dtype))
    return _c(_F.fftn_c2c(_ri(input, op), s, dim, norm, forward))


def _complex_of(dtype):
    return _em.complex128 if dtype is _em.float64 else _em.complex64


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform over dim (every dim by default; the last len(s) with s alone)."""
    _need_complex("fftn")
    return _finish(_c2cn(input, s, dim, norm, True, "fftn"), out, "fftn")


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    _need_complex("ifftn")
    return _finish(_c2cn(input, s, dim, norm, False, "ifftn"), out, "ifftn")


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """fftn over the last two dims."""
    _need_complex("fft2")
    return _finish(_c2cn(input, s, dim, norm, True, "fft2"), out, "fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _need_complex("ifft2")
    return _finish(_c2cn(input, s, dim, norm, False, "ifft2"), out, "ifft2")


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a real signal: its n // 2 + 1 non-negative frequencies."""
    _need_complex("rfft")
    return _finish(_c(_F.fft_r2c(_real(input, "rfft"), dim, n, norm)), out, "rfft")


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n (default 2 * (m - 1)) real values from the Hermitian half."""
    _need_complex("irfft")
    x = _complex_in(input, "irfft")
    return _finish(_F.fft_c2r(_ri(x, "irfft"), dim, n, norm), out, "irfft")


def _complex_in(x, op):
    from ember._args import tensor_arg
    tensor_arg(x, op)
    return x if _is_complex(x) else x.to(_complex_of(x.dtype))


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """rfft along the last of dim, fft along the others."""
    _need_complex("rfftn")
    return _finish(_c(_F.fftn_r2c(_real(input, "rfftn"), s, dim, norm)), out, "rfftn")


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn (the last of dim is the Hermitian one)."""
    _need_complex("irfftn")
    x = _complex_in(input, "irfftn")
    return _finish(_F.fftn_c2r(_ri(x, "irfftn"), s, dim, norm), out, "irfftn")


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _need_complex("rfft2")
    return _finish(_c(_F.fftn_r2c(_real(input, "rfft2"), s, dim, norm)), out, "rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _need_complex("irfft2")
    x = _complex_in(input, "irfft2")
    return _finish(_F.fftn_c2r(_ri(x, "irfft2"), s, dim, norm), out, "irfft2")


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian time signal given by its first half: real."""
    _need_complex("hfft")
    x = _complex_in(input, "hfft")
    return _finish(_F.fft_hfft(_ri(x, "hfft"), dim, n, norm), out, "hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the Hermitian half of the inverse transform of a real signal."""
    _need_complex("ihfft")
    return _finish(_c(_F.fft_ihfft(_real(input, "ihfft"), dim, n, norm)), out, "ihfft")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    _need_complex("hfftn")
    x = _complex_in(input, "hfftn")
    return _finish(_F.fftn_hfft(_ri(x, "hfftn"), s, dim, norm), out, "hfftn")


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    _need_complex("ihfftn")
    return _finish(_c(_F.fftn_ihfft(_real(input, "ihfftn"), s, dim, norm)), out, "ihfftn")


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _need_complex("hfft2")
    x = _complex_in(input, "hfft2")
    return _finish(_F.fftn_hfft(_ri(x, "hfft2"), s, dim, norm), out, "hfft2")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    _need_complex("ihfft2")
    return _finish(_c(_F.fftn_ihfft(_real(input, "ihfft2"), s, dim, norm)), out, "ihfft2")


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """The sample frequencies of an n-point DFT: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    return _finish(_fftfreq(n, d, dtype=dtype, device=device, requires_grad=requires_grad),
                   out, "fftfreq")


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The sample frequencies of rfft: [0, 1, ..., n // 2] / (d n)."""
    return _finish(_rfftfreq(n, d, dtype=dtype, device=device, requires_grad=requires_grad),
                   out, "rfftfreq")
