"""The FFT family over real tensors (kernels: the `fft` family, ember._C.fft on the CPU),
the window functions and the frequency helpers.

A complex signal is given here as a float tensor whose last dim is (re, im), of size 2:
what `ember.view_as_real` gives of a complex tensor. The transforms are

- `fft_c2c(x, dim, n, norm, forward)`: complex -> complex,
- `fft_r2c(x, dim, n, norm, onesided)`: real -> complex (forward; the n // 2 + 1 entries
  of the Hermitian half when onesided, else all n),
- `fft_c2r(x, dim, n, norm)`: Hermitian complex (its first n // 2 + 1 entries) -> real
  (backward),

with `n` (zero-pad or trim the input along dim to n; c2r's default is 2 * (m - 1)),
`dim` (any dim of the complex shape, negative counted from the end, not counting the
(re, im) dim) and `norm` ("backward": the forward transform unscaled and the backward
one scaled by 1/n; "forward": the other way round; "ortho": 1/sqrt(n) both ways) as in
PyTorch's torch.fft. Several dims (`fftn_c2c`, `fftn_r2c`, `fftn_c2r`) are successive
1-D passes; the Hermitian-input transforms (`fft_hfft*`, `fft_ihfft*`) are c2r / r2c of
the conjugate with the norm's direction swapped, as NumPy defines them.

Each 1-D transform is recorded ("fft_c2c", "fft_r2c", "fft_c2r" with dim, n, scale,
the input length m): their derivatives are `fft_c2c_backward` (the opposite transform
with the same scale), `fft_r2c_backward` (the adjoint c2c of the zero-padded half,
real part) and `fft_c2r_backward` (r2c with the conjugate-symmetric entries doubled),
PyTorch's formulas. ember.fft is the public module over complex tensors.
"""
from __future__ import annotations

import math
import numbers

from ember._args import int_arg, number_arg, tensor_arg
from ember._C import core as _core
from ember._dtypes import as_dtype
from ember._registry import tensor_method
from ember.backends import kernel

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]

_float32 = _core._dtype_by_name("float32")
_float64 = _core._dtype_by_name("float64")
_NORMS = ("backward", "ortho", "forward")


# --------------------------------------------------------------------- arguments

def _norm_arg(norm, op):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'{op}: Invalid normalization mode: "{norm}" (expected '
                           f'"backward", "ortho" or "forward")')
    return norm


def _scale(norm, n, forward):
    """The factor a transform of length n in direction `forward` is multiplied by."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "backward") == bool(forward):
        return 1.0
    return 1.0 / n


def _swap(norm):
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


def _n_arg(n, op, what="n"):
    n = int_arg(n, what, op)
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _work(dtype):
    """The kernels' dtype: float64 stays, every other dtype computes in float32 (ints
    and bool in the default float dtype, as PyTorch promotes them)."""
    if dtype is _float64:
        return _float64
    if dtype.kind == "float":
        return _float32
    if dtype.kind in ("bool", "int", "uint"):
        return _core.get_default_dtype()
    raise TypeError(f"fft: unsupported dtype {dtype!r}")


def _real_input(x, op):
    tensor_arg(x, op)
    w = _work(x.dtype)
    return x if x.dtype is w else x.to(w)


def _complex_input(x, op):
    """x ([..., 2]) in a kernel dtype with (re, im) adjacent."""
    tensor_arg(x, op)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"{op}: a complex signal is a tensor whose last dim is (re, im) "
                         f"of size 2, got shape {tuple(x.shape)}")
    w = _work(x.dtype)
    if x.dtype is not w:
        x = x.to(w)
    if x.stride(-1) != 1:
        x = x.contiguous()
    return x


def _dim(dim, ndim, op):
    if ndim == 0:
        raise IndexError(f"{op}: the input must have at least one dim")
    return _core.normalize_dim(int_arg(dim, "dim", op), ndim, op)


def _sized(x, d, m):
    """x along d trimmed or zero-padded to m (a view when trimmed; recorded ops)."""
    have = x.shape[d]
    if have == m:
        return x
    if have > m:
        return x.narrow(d, 0, m)
    from ember.ops.creation import zeros
    from ember.ops.shape import cat
    shape = list(x.shape)
    shape[d] = m - have
    return cat([x, zeros(shape, dtype=x.dtype, device=x.device)], d)


# ------------------------------------------------------------ the 1-D transforms

def _c2c(x, d, n, forward, scale):
    shape = list(x.shape)
    m = shape[d]
    shape[d] = n
    with _core._no_record():
        out = _core.empty(shape, x.dtype, x.device)
        kernel("fft_c2c", "fft", x)(x, out, d, bool(forward), float(scale))
    return _core.record("fft_c2c", (x,), out,
                        {"dim": d, "n": n, "m": m, "forward": bool(forward),
                         "scale": float(scale)})


def _r2c(x, d, n, scale, onesided=True):
    shape = list(x.shape)
    m = shape[d]
    shape[d] = n // 2 + 1 if onesided else n
    shape.append(2)
    with _core._no_record():
        out = _core.empty(shape, x.dtype, x.device)
        kernel("fft_r2c", "rfft", x)(x, out, d, n, float(scale))
    return _core.record("fft_r2c", (x,), out,
                        {"dim": d, "n": n, "m": m, "scale": float(scale),
                         "onesided": bool(onesided)})


def _c2r(x, d, n, scale):
    shape = list(x.shape[:-1])
    m = shape[d]
    shape[d] = n
    with _core._no_record():
        out = _core.empty(shape, x.dtype, x.device)
        kernel("fft_c2r", "irfft", x)(x, out, d, float(scale))
    return _core.record("fft_c2r", (x,), out,
                        {"dim": d, "n": n, "m": m, "scale": float(scale)})


def fft_c2c(x, dim=-1, n=None, norm=None, forward=True):
    """The 1-D DFT of the complex signal x ([..., 2]) along dim (of the complex shape):
    forward (exp(-2 pi i jk / n)) or backward (exp(+2 pi i jk / n)), scaled per norm."""
    op = "fft" if forward else "ifft"
    x = _complex_input(x, op)
    d = _dim(dim, x.ndim - 1, op)
    n = x.shape[d] if n is None else _n_arg(n, op)
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return _c2c(x, d, n, forward, _scale(_norm_arg(norm, op), n, forward))


def fft_r2c(x, dim=-1, n=None, norm=None, onesided=True):
    """The forward DFT of the real signal x along dim: the n // 2 + 1 entries of the
    Hermitian half (onesided) or all n, as a complex [..., 2] tensor."""
    op = "rfft"
    x = _real_input(x, op)
    d = _dim(dim, x.ndim, op)
    n = x.shape[d] if n is None else _n_arg(n, op)
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return _r2c(x, d, n, _scale(_norm_arg(norm, op), n, True), onesided)


def fft_c2r(x, dim=-1, n=None, norm=None):
    """The backward DFT along dim of the Hermitian signal whose first n // 2 + 1 entries
    x ([..., 2]) holds: n real values (n defaults to 2 * (m - 1))."""
    op = "irfft"
    x = _complex_input(x, op)
    d = _dim(dim, x.ndim - 1, op)
    n = 2 * (x.shape[d] - 1) if n is None else _n_arg(n, op)
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return _c2r(x, d, n, _scale(_norm_arg(norm, op), n, False))


def _conj(x):
    """The conjugate of a [..., 2] tensor."""
    from ember.ops.creation import tensor
    return x * tensor([1.0, -1.0], dtype=x.dtype, device=x.device)


def fft_hfft(x, dim=-1, n=None, norm=None):
    """The forward DFT of a Hermitian time signal given by its first half ([..., 2]):
    real; irfft of the conjugate with the norm's direction swapped."""
    return fft_c2r(_conj(_complex_input(x, "hfft")), dim, n, _swap(_norm_arg(norm, "hfft")))


def fft_ihfft(x, dim=-1, n=None, norm=None):
    """The inverse of hfft: the conjugate of rfft with the norm's direction swapped
    (the n // 2 + 1 entries of the half)."""
    return _conj(fft_r2c(x, dim, n, _swap(_norm_arg(norm, "ihfft"))))


# ----------------------------------------------------------- several dims

def _dims_and_sizes(shape, s, dim, op, last_hermitian=False):
    """PyTorch's rules: dim None and s None: every dim; s without dim: the last len(s)
    dims; s[i] == -1 keeps that dim's size. Returns (dims, sizes or None entries)."""
    ndim = len(shape)
    if dim is None:
        dims = list(range(ndim)) if s is None else list(range(ndim - len(s), ndim))
        if s is not None and len(s) > ndim:
            raise ValueError(f"{op}: got shape with {len(s)} values but input tensor only "
                             f"has {ndim} dimensions")
    else:
        dim = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        dims = [_core.normalize_dim(int_arg(a, "dim", op), ndim, op) for a in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}: dims must be unique, got {tuple(dim)}")
    if s is not None:
        s = [s] if isinstance(s, numbers.Integral) else list(s)
        if len(s) != len(dims):
            raise ValueError(f"{op}: When given, dim and shape arguments must have the "
                             f"same length, got s={tuple(s)} and dim={tuple(dims)}")
        sizes = []
        for v in s:
            v = int_arg(v, "s", op)
            if v == -1:
                sizes.append(None)
            elif v < 1:
                raise RuntimeError(f"{op}: Invalid number of data points ({v}) specified")
            else:
                sizes.append(v)
    else:
        sizes = [None] * len(dims)
    if last_hermitian and not dims:
        raise ValueError(f"{op}: must transform at least one axis")
    return dims, sizes


def _c2c_passes(x, y, dims, sizes, forward, norm):
    """y after successive c2c passes along dims (x: the op's input). Past the first
    pass, a pass that keeps its length runs in place on the intermediate the previous
    one made, when nothing is recorded and it is on the CPU (whose kernels copy a block
    of lines out before writing it back): one allocation, no second pass over fresh
    pages."""
    inplace = x.device.type == "cpu" and not _core.any_requires_grad((x,))
    for d, n in zip(dims, sizes):
        n = y.shape[d] if n is None else n
        scale = _scale(norm, n, forward)
        if inplace and y is not x and n == y.shape[d]:
            kernel("fft_c2c", "fft", y)(y, y, d, bool(forward), float(scale))
        else:
            y = _c2c(y, d, n, forward, scale)
    return y


def fftn_c2c(x, s=None, dim=None, norm=None, forward=True):
    """The DFT over several dims of a complex [..., 2] signal (successive 1-D passes)."""
    op = "fftn" if forward else "ifftn"
    x = _complex_input(x, op)
    norm = _norm_arg(norm, op)
    dims, sizes = _dims_and_sizes(tuple(x.shape[:-1]), s, dim, op)
    return _c2c_passes(x, x, dims, sizes, forward, norm)


def fftn_r2c(x, s=None, dim=None, norm=None):
    """rfftn: r2c along the last of dims, then c2c (forward) along the others."""
    op = "rfftn"
    x = _real_input(x, op)
    norm = _norm_arg(norm, op)
    dims, sizes = _dims_and_sizes(tuple(x.shape), s, dim, op, True)
    n = x.shape[dims[-1]] if sizes[-1] is None else sizes[-1]
    y = _r2c(x, dims[-1], n, _scale(norm, n, True))
    return _c2c_passes(x, y, dims[:-1], sizes[:-1], True, norm)


def fftn_c2r(x, s=None, dim=None, norm=None):
    """irfftn: c2c (backward) along all but the last of dims, then c2r along it (its
    default length 2 * (m - 1))."""
    op = "irfftn"
    x = _complex_input(x, op)
    norm = _norm_arg(norm, op)
    dims, sizes = _dims_and_sizes(tuple(x.shape[:-1]), s, dim, op, True)
    x = _c2c_passes(x, x, dims[:-1], sizes[:-1], False, norm)
    d = dims[-1]
    n = 2 * (x.shape[d] - 1) if sizes[-1] is None else sizes[-1]
    if n < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return _c2r(x, d, n, _scale(norm, n, False))


def fftn_hfft(x, s=None, dim=None, norm=None):
    """hfftn: irfftn of the conjugate with the norm's direction swapped."""
    x = _complex_input(x, "hfftn")
    return fftn_c2r(_conj(x), s, dim, _swap(_norm_arg(norm, "hfftn")))


def fftn_ihfft(x, s=None, dim=None, norm=None):
    """ihfftn: the conjugate of rfftn with the norm's direction swapped."""
    return _conj(fftn_r2c(x, s, dim, _swap(_norm_arg(norm, "ihfftn"))))


# ------------------------------------------------------------- derivatives

def fft_c2c_backward(g, dim, m, forward, scale):
    """The gradient of fft_c2c w.r.t. its input (m entries along dim): the opposite
    transform with the same scale (the adjoint of the DFT), trimmed or zero-padded
    back to m."""
    g = _complex_input(g, "fft_backward")
    return _sized(_c2c(g, dim, g.shape[dim], not forward, scale), dim, m)


def fft_r2c_backward(g, dim, n, m, scale, onesided):
    """The gradient of fft_r2c: the adjoint c2c (backward direction, same scale) of the
    output gradient zero-padded to n entries, its real part, sized back to m."""
    g = _complex_input(g, "rfft_backward")
    full = _c2c(g, dim, n, False, scale)
    return _sized(full.select(-1, 0), dim, m)


def fft_c2r_backward(g, dim, n, m, scale):
    """The gradient of fft_c2r: r2c of the output gradient (same scale) with the entries
    that stand for two (1 .. n - n // 2 - 1) doubled, sized back to m entries."""
    g = _real_input(g, "irfft_backward")
    gi = _r2c(g, dim, n, scale)
    h1 = n // 2 + 1
    double = n - h1
    if double > 0:
        w = [1.0] * h1
        for k in range(1, 1 + double):
            w[k] = 2.0
        shape = [1] * gi.ndim
        shape[dim] = h1
        from ember.ops.creation import tensor
        gi = gi * tensor(w, dtype=gi.dtype, device=gi.device).reshape(shape)
    return _sized(gi, dim, m)


# ------------------------------------------------ frequencies and shifts (real)

def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point DFT with sample spacing d:
    [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)."""
    n = int_arg(n, "n", "fftfreq")
    if n < 0:
        raise ValueError(f"fftfreq: n must be >= 0, got {n}")
    from ember.ops.creation import arange
    k = arange(n, dtype=_float64)
    k = k - (k >= (n + 1) // 2).to(_float64) * n
    d = float(number_arg(d, "d", "fftfreq"))
    return _finish(k / (d * n) if n else k, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft's n // 2 + 1 outputs: [0, 1, ..., n // 2] / (d * n)
    ([nan] for n = 0, as PyTorch)."""
    n = int_arg(n, "n", "rfftfreq")
    if n < 0:
        raise ValueError(f"rfftfreq: n must be >= 0, got {n}")
    from ember.ops.creation import arange
    k = arange(n // 2 + 1, dtype=_float64)
    d = float(number_arg(d, "d", "rfftfreq"))
    return _finish(k / (d * n) if n else k * math.nan, dtype, device, requires_grad)


def _finish(t, dtype, device, requires_grad):
    dtype = _core.get_default_dtype() if dtype is None else as_dtype(dtype)
    t = t.to(dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shift_dims(x, dim, op):
    if dim is None:
        return list(range(x.ndim))
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    return [_core.normalize_dim(int_arg(a, "dim", op), x.ndim, op) for a in dims]


def fftshift(input, dim=None):
    """Rolls the zero frequency to the middle: each of dims (all by default) by n // 2."""
    tensor_arg(input, "fftshift")
    dims = _shift_dims(input, dim, "fftshift")
    if not dims:
        return input.clone()
    return input.roll([input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift: each of dims rolled by -(n // 2)."""
    tensor_arg(input, "ifftshift")
    dims = _shift_dims(input, dim, "ifftshift")
    if not dims:
        return input.clone()
    return input.roll([-(input.shape[d] // 2) for d in dims], dims)


# --------------------------------------------------------------------- windows

def _window(op, window_length, periodic, dtype, layout, device, requires_grad, fn):
    """fn(k, N) of float64 k = 0 .. L - 1 (N = L + 1 when periodic: the symmetric window
    one longer, its last point dropped), made on the CPU in float64 and then brought
    to dtype and device."""
    L = int_arg(window_length, "window_length", op)
    if L < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got "
                           f"window_length={L}")
    if not isinstance(periodic, (bool, int)):
        raise TypeError(f"{op}: periodic must be a bool, got {type(periodic).__name__}")
    dtype = _core.get_default_dtype() if dtype is None else as_dtype(dtype)
    if dtype.kind != "float":
        raise ValueError(f"{op} expects floating point dtypes, got: {dtype!r}")
    from ember.ops.creation import arange, ones
    if L == 0:
        w = arange(0, dtype=_float64)
    elif L == 1:
        w = ones(1, dtype=_float64)
    else:
        N = L + 1 if periodic else L
        w = fn(arange(L, dtype=_float64), N)
    return _finish(w, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi k / (N - 1)) (PyTorch's hann_window; periodic: N = L + 1)."""
    return _window("hann_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, N: 0.5 - 0.5 * (k * (2 * math.pi / (N - 1))).cos())


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """alpha - beta cos(2 pi k / (N - 1))."""
    a = float(number_arg(alpha, "alpha", "hamming_window"))
    b = float(number_arg(beta, "beta", "hamming_window"))
    return _window("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, N: a - b * (k * (2 * math.pi / (N - 1))).cos())


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    def fn(k, N):
        t = k * (2 * math.pi / (N - 1))
        return 0.42 - 0.5 * t.cos() + 0.08 * (2 * t).cos()
    return _window("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """1 - |2k / (N - 1) - 1| (the triangle)."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, N: 1 - (k * (2 / (N - 1)) - 1).abs())


def _i0_ratio(x, beta):
    """I0(x) / I0(beta) for 0 <= x <= beta by the power series sum (x/2)^2k / (k!)^2,
    each term scaled by exp(-beta) (so large beta does not overflow)."""
    from ember.ops.creation import zeros_like
    total = zeros_like(x) + math.exp(-beta)
    ref = math.exp(-beta)
    lx = (x * 0.5).clamp(min=1e-300).log()
    kmax = int(math.ceil(beta)) + 60
    for k in range(1, kmax):
        c = 2 * math.lgamma(k + 1) + beta
        total = total + (lx * (2 * k) - c).exp()
        ref += math.exp(2 * k * math.log(beta / 2) - c) if beta > 0 else 0.0
    return total / ref


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """I0(beta sqrt(1 - ((k - M/2) / (M/2))^2)) / I0(beta), M = N - 1 (the series of I0
    summed in float64)."""
    b = float(number_arg(beta, "beta", "kaiser_window"))
    if b < 0:
        raise ValueError(f"kaiser_window: beta must be >= 0, got {b}")

    def fn(k, N):
        h = (N - 1) / 2
        r = (1 - ((k - h) / h) ** 2).clamp(min=0.0)
        return _i0_ratio(r.sqrt() * b, b)
    return _window("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn)


# ------------------------------------------------------------------ stft, istft

_PAD_MODES = ("reflect", "constant", "replicate", "circular")


def _pad_dim(x, d, p, mode, op):
    """x padded by p entries at both ends of dim d (PyTorch's pad modes), with ember's
    recorded views and cat (differentiable)."""
    if p == 0:
        return x
    from ember.ops.shape import cat
    L = x.shape[d]
    if mode == "reflect":
        if p >= L:
            raise RuntimeError(f"{op}: reflect padding of {p} needs an input longer than "
                               f"{p} along the signal dim, got {L}")
        left, right = x.narrow(d, 1, p).flip(d), x.narrow(d, L - 1 - p, p).flip(d)
    elif mode == "replicate":
        shape = list(x.shape)
        shape[d] = p
        left, right = x.narrow(d, 0, 1).expand(shape), x.narrow(d, L - 1, 1).expand(shape)
    elif mode == "circular":
        if p > L:
            raise RuntimeError(f"{op}: circular padding of {p} is more than the signal "
                               f"length {L}")
        left, right = x.narrow(d, L - p, p), x.narrow(d, 0, p)
    else:
        from ember.ops.creation import zeros
        shape = list(x.shape)
        shape[d] = p
        left = right = zeros(shape, dtype=x.dtype, device=x.device)
    return cat([left, x, right], d)


def _window_arg(window, win_length, n_fft, dtype, device, op):
    """The window (ones when None) centred in n_fft entries, as float [n_fft] or, for a
    complex window, [n_fft, 2]; and whether it is complex."""
    from ember.ops.creation import ones, zeros
    if window is None:
        w = ones(win_length, dtype=dtype, device=device)
    else:
        tensor_arg(window, op, "window")
        if window.ndim != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to "
                               f"win_length={win_length}, but got window with size "
                               f"{tuple(window.shape)}")
        w = window
    cplx = _is_complex_tensor(w)
    if cplx:
        w = _complex_view(w)
    elif w.dtype is not dtype:
        w = w.to(dtype)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        shape = [n_fft - win_length - left] + list(w.shape[1:])
        from ember.ops.shape import cat
        w = cat([zeros([left] + list(w.shape[1:]), dtype=w.dtype, device=w.device), w,
                 zeros(shape, dtype=w.dtype, device=w.device)], 0)
    return w, cplx


def _is_complex_tensor(t):
    kind = getattr(t.dtype, "kind", None)
    return kind == "complex" or getattr(t.dtype, "is_complex", False) is True


def _complex_view(t):
    import ember as em
    if not hasattr(em, "view_as_real"):
        raise RuntimeError("ember.fft needs complex dtypes (ember.complex64 / complex128), "
                           "which this build of ember does not have")
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    return em.view_as_real(t)


def _cmul(a, b):
    """The product of two [..., 2] tensors as complex numbers."""
    ar, ai, br, bi = a.select(-1, 0), a.select(-1, 1), b.select(-1, 0), b.select(-1, 1)
    from ember.ops.shape import stack
    return stack([ar * br - ai * bi, ar * bi + ai * br], -1)


def stft_ri(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
            pad_mode="reflect", normalized=False, onesided=None, x_complex=False):
    """stft over the real layer: x is a real (B, L) / (L) signal, or a complex one as
    [..., L, 2] when x_complex; returns (B, n_freq, n_frames, 2)."""
    op = "stft"
    n_fft = int_arg(n_fft, "n_fft", op)
    hop = n_fft // 4 if hop_length is None else int_arg(hop_length, "hop_length", op)
    win = n_fft if win_length is None else int_arg(win_length, "win_length", op)
    nd = x.ndim - (1 if x_complex else 0)
    if nd not in (1, 2):
        raise RuntimeError(f"{op}: expected a 1D or 2D tensor, got shape {tuple(x.shape)}")
    if pad_mode not in _PAD_MODES:
        raise RuntimeError(f"{op}: pad_mode must be one of {_PAD_MODES}, got {pad_mode!r}")
    x = _complex_input(x, op) if x_complex else _real_input(x, op)
    batched = nd == 2
    if not batched:
        x = x.unsqueeze(0)
    d = 1                                   # the signal dim
    if center:
        x = _pad_dim(x, d, n_fft // 2, pad_mode, op)
    L = x.shape[d]
    if n_fft <= 0 or n_fft > L:
        raise RuntimeError(f"{op}: expected 0 < n_fft <= {L}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    w, wc = _window_arg(window, win, n_fft, x.dtype, x.device, op)
    cplx = x_complex or wc
    if onesided is None:
        onesided = not cplx
    if onesided and cplx:
        raise RuntimeError(f"{op}: Cannot have onesided output if window or input is complex")
    frames = x.unfold(d, n_fft, hop)         # (B, F, [2,] n_fft)
    if x_complex:
        frames = frames.movedim(-1, -2)      # (B, F, n_fft, 2)
    norm = "ortho" if normalized else "backward"
    if not cplx:
        y = fft_r2c(frames * w, -1, None, norm, onesided=bool(onesided))
    else:
        if not x_complex:
            from ember.ops.shape import stack
            frames = stack([frames, frames * 0], -1)
        if not wc:
            w = w.unsqueeze(-1)
            y = frames * w
        else:
            y = _cmul(frames, w)
        y = fft_c2c(y, -1, None, norm, True)
    y = y.transpose(1, 2)                    # (B, n_freq, F, 2)
    return y if batched else y.squeeze(0)


def istft_ri(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
             normalized=False, onesided=None, length=None, return_complex=False):
    """istft over the real layer: x is (B, n_freq, n_frames, 2) or (n_freq, n_frames, 2);
    returns the real signal (B, T) / (T), or [..., T, 2] when return_complex."""
    op = "istft"
    x = _complex_input(x, op)
    n_fft = int_arg(n_fft, "n_fft", op)
    hop = n_fft // 4 if hop_length is None else int_arg(hop_length, "hop_length", op)
    win = n_fft if win_length is None else int_arg(win_length, "win_length", op)
    if x.ndim not in (3, 4):
        raise RuntimeError(f"{op}: expected a tensor with 2 or 3 dims of complex values, "
                           f"got shape {tuple(x.shape[:-1])}")
    batched = x.ndim == 4
    if not batched:
        x = x.unsqueeze(0)
    n_freq, n_frames = x.shape[1], x.shape[2]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError(f"{op}: expected the frequency dim (3rd to last) of the input "
                           f"to be n_fft / 2 + 1 = {n_fft // 2 + 1} when onesided=True, "
                           f"but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"{op}: expected the frequency dim to be n_fft = {n_fft} when "
                           f"onesided=False, but got {n_freq}")
    if hop <= 0 or win <= 0 or win > n_fft:
        raise RuntimeError(f"{op}: expected 0 < hop_length and 0 < win_length <= n_fft, got "
                           f"hop_length={hop}, win_length={win}")
    if n_frames < 1:
        raise RuntimeError(f"{op}: the input has no frames")
    w, wc = _window_arg(window, win, n_fft, x.dtype, x.device, op)
    norm = "ortho" if normalized else "backward"
    frames = x.transpose(1, 2)               # (B, F, n_freq, 2)
    if return_complex:
        if onesided:
            raise RuntimeError(f"{op}: Cannot have onesided output if window or input is "
                               f"complex")
        y = fft_c2c(frames, -1, n_fft, norm, False)          # (B, F, n_fft, 2)
        y = _cmul(y, w) if wc else y * w.unsqueeze(-1)
    else:
        if wc:
            raise RuntimeError(f"{op}: Complex windows are incompatible with "
                               f"return_complex=False")
        if not onesided:
            frames = frames.narrow(2, 0, n_fft // 2 + 1)
        y = fft_c2r(frames, -1, n_fft, norm) * w             # (B, F, n_fft)
    from ember.ops.creation import arange, zeros
    T = n_fft + hop * (n_frames - 1)
    pos = (arange(n_frames, device=x.device).unsqueeze(1) * hop
           + arange(n_fft, device=x.device).unsqueeze(0)).reshape(-1)
    B = y.shape[0]
    tail = [2] if return_complex else []
    flat = y.reshape([B, n_frames * n_fft] + tail)
    out = zeros([B, T] + tail, dtype=y.dtype, device=y.device).index_add(1, pos, flat)
    wsq = (w.select(-1, 0) ** 2 + w.select(-1, 1) ** 2) if wc else w * w
    env = zeros([T], dtype=wsq.dtype, device=wsq.device).index_add(
        0, pos, wsq.unsqueeze(0).expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    end = T - n_fft // 2 if center else T
    if length is not None:
        length = int_arg(length, "length", op)
        end = start + length
    stop = min(end, T)
    out = out.narrow(1, start, max(stop - start, 0))
    env = env.narrow(0, start, max(stop - start, 0))
    if env.numel() and float(env.abs().min()) < 1e-11:
        raise RuntimeError(f"{op}: window overlap add min: {float(env.abs().min()):.3g} "
                           f"(the window must overlap-add to a nonzero envelope: NOLA)")
    out = out / (env.unsqueeze(-1) if return_complex else env)
    if end > stop:
        out = _sized(out, 1, end - start)
    return out if batched else out.squeeze(0)


@tensor_method
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform, PyTorch's torch.stft: frames of n_fft samples
    hop_length apart (input padded by n_fft // 2 with pad_mode when center), each
    multiplied by the window (ones by default, centred in n_fft) and transformed;
    (B?, n_freq, n_frames) complex (return_complex=True), or its [..., 2] real view.
    onesided (the default for real input and window) keeps n_fft // 2 + 1 frequencies."""
    op = "stft"
    tensor_arg(input, op)
    if window is not None:
        tensor_arg(window, op, "window")
    x_complex = _is_complex_tensor(input)
    if return_complex is None:
        if not x_complex and not (window is not None and _is_complex_tensor(window)):
            raise RuntimeError("stft requires the return_complex parameter be given for "
                               "real inputs, and will further require that "
                               "return_complex=True in a future PyTorch release.")
        return_complex = True
    import ember as em
    if not hasattr(em, "view_as_complex"):
        raise RuntimeError("stft: ember.fft needs complex dtypes (ember.complex64 / "
                           "complex128), which this build of ember does not have")
    x = _complex_view(input) if x_complex else input
    y = stft_ri(x, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
                onesided, x_complex)
    return em.view_as_complex(y) if return_complex else y


@tensor_method
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft (PyTorch's torch.istft): each frame inverse-transformed,
    multiplied by the window and overlap-added, divided by the overlap-added squared
    window (which must not vanish: NOLA), trimmed by n_fft // 2 when center and to
    length when given."""
    op = "istft"
    tensor_arg(input, op)
    if window is not None:
        tensor_arg(window, op, "window")
    if not _is_complex_tensor(input):
        raise RuntimeError("istft requires a complex-valued input tensor")
    import ember as em
    y = istft_ri(_complex_view(input), n_fft, hop_length, win_length, window, center,
                 normalized, onesided, length, return_complex)
    return em.view_as_complex(y) if return_complex else y
