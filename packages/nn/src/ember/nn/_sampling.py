"""interpolate, grid_sample and affine_grid, composed from tensor-core ops.

Every mode computes its source coordinates as tensors on the input's device (in
float64 for a float64 input, else in float32: the precision PyTorch computes in),
turns them into int64 taps and weights, and gathers the taps with index_select
(interpolate, one spatial dim at a time: every mode here is separable) or gather
(grid_sample) before a weighted sum. So they run on every device and autograd
differentiates them, w.r.t. the input and (grid_sample) the grid. 'area' is
adaptive_avg_pool{1,2,3}d.
"""
from __future__ import annotations

import math
import operator
import struct
import warnings

import ember as em
from ember._C.core import TensorBase

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "grid_sample", "affine_grid"]

_RANKS = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
          "linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,)}
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_CUBIC_A = -0.75          # PyTorch's bicubic (Keys' kernel with A = -0.75)
_AA_CUBIC_A = -0.5        # its antialiased bicubic (PIL's, A = -0.5)


def _f32(x):
    """x rounded to float32, to follow PyTorch's float32 index arithmetic."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _check_output(op, input, shape):
    shape = tuple(shape)
    numel = math.prod(shape)
    nbytes = numel * input.element_size()
    if nbytes >= 2**63:
        raise MemoryError(f"{op}: the output of shape {shape} would have {numel} elements "
                          f"({nbytes} bytes), more than any allocation can hold")


def _per_dim(value, nd, name, op, spatial):
    if isinstance(value, (list, tuple)):
        if len(value) != nd:
            raise ValueError(f"{op}: {name} {tuple(value)} must have one entry per spatial "
                             f"dim; the input's spatial dims are {spatial}")
        return tuple(value)
    return (value,) * nd


# coordinates (PyTorch's UpSample.h rules) ---------------------------------------------------

def _scale(n, o, align_corners, scale_factor, rnd):
    """area_pixel_compute_scale: (n - 1) / (o - 1) with align_corners, else 1 / scale_factor
    when given, else n / o."""
    if align_corners:
        return rnd((n - 1) / (o - 1)) if o > 1 else 0.0
    return rnd(1.0 / scale_factor if scale_factor else n / o)


def _source(o, scale, align_corners, cubic, dtype, device):
    """area_pixel_compute_source_index over dst = 0..o-1: dst * scale with align_corners,
    else (dst + 0.5) * scale - 0.5, clamped at 0 unless cubic."""
    d = em.arange(o, dtype=dtype, device=device)
    if align_corners:
        return d * scale
    src = (d + 0.5) * scale - 0.5
    return src if cubic else src.clamp(min=0.0)


def _nearest_taps(n, o, scale_factor, exact, shortcuts, device):
    """'nearest': min(floor(dst * scale), n - 1) in float32, o = n and o = 2n exactly on a
    4-d input (PyTorch's upsample_nearest2d has those shortcuts, its 1-d and 3-d kernels
    not); 'nearest-exact': min(floor((dst + 0.5) * scale), n - 1). None for a copy."""
    if not exact and shortcuts:
        if o == n:
            return None
        if o == 2 * n:
            return em.arange(o, device=device) // 2
    scale = _f32(1.0 / scale_factor if scale_factor else n / o)
    d = em.arange(o, dtype=em.float32, device=device)
    src = ((d + 0.5) if exact else d) * scale
    return src.floor().clamp(max=n - 1).to(em.int64)


def _linear_taps(n, o, scale_factor, align_corners, dtype, device):
    rnd = float if dtype == em.float64 else _f32
    src = _source(o, _scale(n, o, align_corners, scale_factor, rnd), align_corners, False,
                  dtype, device)
    i0 = src.floor().clamp(max=n - 1)
    w1 = (src - i0).clamp(0.0, 1.0)
    i0 = i0.to(em.int64)
    return [(i0, 1 - w1), (i0 + (i0 < n - 1).to(em.int64), w1)]


def _cubic1(x, a):
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic2(x, a):
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _cubic_weights(t, a=_CUBIC_A):
    """The four weights of taps floor(src) - 1 .. + 2 at fraction t."""
    return [_cubic2(t + 1, a), _cubic1(t, a), _cubic1(1 - t, a), _cubic2(2 - t, a)]


def _cubic_taps(n, o, scale_factor, align_corners, dtype, device):
    rnd = float if dtype == em.float64 else _f32
    src = _source(o, _scale(n, o, align_corners, scale_factor, rnd), align_corners, True,
                  dtype, device)
    i = src.floor()
    ws = _cubic_weights(src - i)
    i = i.to(em.int64)
    return [((i + (k - 1)).clamp(0, n - 1), w) for k, w in enumerate(ws)]


def _aa_taps(n, o, scale_factor, align_corners, cubic, dtype, device):
    """The antialiased (PIL-style) separable filter: a triangle (bilinear) or A = -0.5
    cubic stretched by the scale when downsampling, taps [xmin, xmax) around the centre
    scale * (dst + 0.5), weights normalised to sum 1."""
    rnd = float if dtype == em.float64 else _f32
    scale = _scale(n, o, align_corners, scale_factor, rnd)
    half = 2.0 if cubic else 1.0
    support = half * scale if scale >= 1.0 else half
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    taps = int(math.ceil(support)) * 2 + 1
    center = (em.arange(o, dtype=dtype, device=device) + 0.5) * scale
    xmin = (center - support + 0.5).trunc().clamp(min=0.0)
    xmax = (center + support + 0.5).trunc().clamp(max=float(n))
    out, total = [], None
    for j in range(taps):
        pos = xmin + j
        x = ((pos - center + 0.5) * inv).abs()
        if cubic:
            w = em.where(x < 1.0, _cubic1(x, _AA_CUBIC_A),
                         em.where(x < 2.0, _cubic2(x, _AA_CUBIC_A), em.zeros_like(x)))
        else:
            w = (1.0 - x).clamp(min=0.0)
        w = em.where(pos < xmax, w, em.zeros_like(w))
        total = w if total is None else total + w
        out.append((pos.clamp(max=n - 1).to(em.int64), w))
    total = em.where(total == 0, em.ones_like(total), total)
    return [(i, w / total) for i, w in out]


def _apply_taps(x, dim, taps, nd, k, dtype):
    """sum over taps of x.index_select(dim, index) * weight, the weights broadcast along
    the spatial dims after dim."""
    out = None
    for index, w in taps:
        w = w.to(dtype).reshape((w.shape[0],) + (1,) * (nd - 1 - k))
        term = x.index_select(dim, index) * w
        out = term if out is None else out + term
    return out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dims of an (N, C, W), (N, C, H, W) or (N, C, D, H, W) input
    to `size` or by `scale_factor`, as PyTorch: 'nearest' (source floor(dst * scale);
    on a 4-d input a size kept or doubled is copied or repeated exactly, as in PyTorch),
    'nearest-exact' (floor((dst + 0.5) * scale)), 'linear' (3-d), 'bilinear' (4-d),
    'bicubic' (4-d, A = -0.75, taps clamped at the border), 'trilinear' (5-d) with the
    align_corners conventions, 'area' (adaptive_avg_pool); antialias=True (bilinear and
    bicubic) filters with PyTorch's antialiasing kernels. recompute_scale_factor=True
    uses the output size, not scale_factor, in the coordinates. Built from index_select
    and elementwise ops (area: adaptive average pooling), so it runs on every device and
    autograd differentiates it."""
    op = "interpolate"
    if not isinstance(mode, str) or mode not in _RANKS:
        raise NotImplementedError(f"{op}: mode {mode!r} is not supported (one of "
                                  f"{', '.join(repr(m) for m in _RANKS)})")
    if not isinstance(input, TensorBase):
        raise TypeError(f"{op}: expected a tensor input, got {type(input).__name__}")
    if input.ndim not in _RANKS[mode]:
        raise ValueError(f"{op}: mode {mode!r} needs a "
                         f"{' or '.join(f'{r}-d' for r in _RANKS[mode])} input (N, C, ...), "
                         f"got shape {tuple(input.shape)}")
    if mode not in ("nearest", "nearest-exact") and not input.is_floating_point():
        raise TypeError(f"{op}: mode {mode!r} needs a floating-point input, got {input.dtype!r}")
    if mode not in _INTERPOLATING and align_corners is not None:
        raise ValueError(f"{op}: align_corners can only be set with the interpolating modes "
                         f"'linear', 'bilinear', 'bicubic' and 'trilinear', not {mode!r}")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(f"{op}: antialias=True is restricted to the modes 'bilinear' and "
                         f"'bicubic' on a 4-d input, got mode {mode!r} and shape "
                         f"{tuple(input.shape)}")
    spatial = tuple(input.shape[2:])
    nd = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: exactly one of size and scale_factor must be given, got "
                         f"size={size} and scale_factor={scale_factor}")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(f"{op}: recompute_scale_factor is not meaningful with an "
                             f"explicit size")
        try:
            out_size = tuple(operator.index(s) for s in _per_dim(size, nd, "size", op,
                                                                 spatial))
        except TypeError:
            raise TypeError(f"{op}: size must be an int or a tuple of ints, got "
                            f"{size!r}") from None
        scales = (None,) * nd
    else:
        scales = _per_dim(scale_factor, nd, "scale_factor", op, spatial)
        if not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scales):
            raise TypeError(f"{op}: scale_factor must be a number or a tuple of numbers, got "
                            f"{scale_factor!r}")
        scales = tuple(float(s) for s in scales)
        if not all(math.isfinite(s) and s > 0 for s in scales):
            raise ValueError(f"{op}: scale_factor must be positive and finite, got "
                             f"{scale_factor!r}")
        out_size = tuple(math.floor(n * s) for n, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * nd
    if min(spatial + out_size) <= 0:
        raise ValueError(f"{op}: input and output sizes must be greater than 0, got input "
                         f"{spatial} and output {out_size}")
    _check_output(op, input, tuple(input.shape[:2]) + out_size)
    if mode == "area":
        pool = (em.adaptive_avg_pool1d, em.adaptive_avg_pool2d, em.adaptive_avg_pool3d)[nd - 1]
        return pool(input, out_size)
    align = bool(align_corners)
    wdtype = em.float64 if input.dtype == em.float64 else em.float32
    out = input
    for k, (n, o, s) in enumerate(zip(spatial, out_size, scales)):
        dim = 2 + k
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_taps(n, o, s, mode == "nearest-exact", nd == 2, input.device)
            if index is not None:
                out = out.index_select(dim, index)
            continue
        if o == n and mode != "bicubic":
            continue        # PyTorch copies a dim whose size is kept, whatever the scale
        if antialias:
            taps = _aa_taps(n, o, s, align, mode == "bicubic", wdtype, input.device)
        elif mode == "bicubic":
            taps = _cubic_taps(n, o, s, align, wdtype, input.device)
        else:
            taps = _linear_taps(n, o, s, align, wdtype, input.device)
        out = _apply_taps(out, dim, taps, nd, k, input.dtype)
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The deprecated alias of interpolate (PyTorch's F.upsample; warns as it does)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(..., mode='nearest') (PyTorch's deprecated F.upsample_nearest; warns as
    it does)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(..., mode='bilinear', align_corners=True) (PyTorch's deprecated
    F.upsample_bilinear; warns as it does)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# grid_sample --------------------------------------------------------------------------------

def _default_align(align_corners, stacklevel=3):
    """align_corners=None is False, with PyTorch's warning."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", UserWarning, stacklevel=stacklevel)
        return False
    return bool(align_corners)


def _unnormalize(coord, size, align_corners):
    """[-1, 1] to pixel coordinates: -1 and 1 are the centres of the corner pixels with
    align_corners, else their outer edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    """PyTorch's reflect_coordinates: x mirrored into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return x * 0
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    x = (x - lo).abs()
    extra = em.fmod(x, span)
    flips = (x / span).floor()
    even = em.remainder(flips, 2.0) == 0
    return em.where(even, extra + lo, span - extra + lo)


def _pad_coord(x, size, padding_mode, align_corners):
    """compute_coordinates: border clips into [0, size - 1], reflection mirrors (at the
    corner centres with align_corners, else at the edges) and clips."""
    if padding_mode == "border":
        return x.clamp(0.0, size - 1.0)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else \
            _reflect(x, -1, 2 * size - 1)
        return x.clamp(0.0, size - 1.0)
    return x


def _gather_taps(flat, sizes, coords):
    """flat (N, C, prod(sizes)) read at integer coordinates coords (per spatial dim, from
    the first, each (N, P) int64), zero where any coordinate is outside its size."""
    n, c = flat.shape[0], flat.shape[1]
    valid, lin = None, None
    for size, co in zip(sizes, coords):
        ok = (co >= 0) & (co < size)
        valid = ok if valid is None else valid & ok
        co = co.clamp(0, size - 1)
        lin = co if lin is None else lin * size + co
    p = lin.shape[1]
    vals = flat.gather(2, lin.unsqueeze(1).expand(n, c, p))
    return vals * valid.unsqueeze(1).to(flat.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) at grid (N, Ho, Wo, 2) or input (N, C, D, H, W) at grid
    (N, Do, Ho, Wo, 3), grid[..., 0] the x (W) coordinate in [-1, 1] (then y, z), as
    PyTorch: mode 'bilinear' (trilinear on 5-d), 'nearest' (round half to even) or
    'bicubic' (4-d only, A = -0.75); padding_mode 'zeros', 'border' or 'reflection';
    align_corners (None: False, with PyTorch's warning) puts -1 and 1 at the corner pixels'
    centres instead of their edges. Composed from gather and elementwise ops:
    differentiable w.r.t. input and grid ('nearest' is piecewise constant in the grid: no
    gradient reaches the grid, where PyTorch's is zero), on every device."""
    op = "grid_sample"
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{op}: expected {name} to be a tensor, got {type(t).__name__}")
    if not isinstance(mode, str) or mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"{op}: mode must be 'bilinear', 'nearest' or 'bicubic', got "
                         f"{mode!r}")
    if not isinstance(padding_mode, str) or \
            padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"{op}: padding_mode must be 'zeros', 'border' or 'reflection', got "
                         f"{padding_mode!r}")
    if input.ndim not in (4, 5):
        raise ValueError(f"{op}: expected a 4-d or 5-d input, got shape {tuple(input.shape)}")
    nd = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != nd:
        raise ValueError(f"{op}: a {input.ndim}-d input needs a {input.ndim}-d grid whose last "
                         f"dim is {nd}, got input {tuple(input.shape)} and grid "
                         f"{tuple(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise ValueError(f"{op}: grid and input must have the same batch size, got input "
                         f"{tuple(input.shape)} and grid {tuple(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"{op}: mode 'bicubic' needs a 4-d input, got shape "
                         f"{tuple(input.shape)}")
    if not input.is_floating_point() or grid.dtype != input.dtype:
        raise TypeError(f"{op}: input and grid must have one floating-point dtype, got "
                        f"{input.dtype!r} and {grid.dtype!r}")
    if grid.device != input.device:
        raise RuntimeError(f"{op}: expected input and grid on one device, got {input.device} "
                           f"and {grid.device}")
    if 0 in tuple(input.shape[2:]):
        raise ValueError(f"{op}: the input's spatial dims must be non-empty, got shape "
                         f"{tuple(input.shape)}")
    align = _default_align(align_corners)
    n, c = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    if n == 0 or c == 0 or 0 in out_spatial:
        return em.zeros((n, c) + out_spatial, dtype=input.dtype, device=input.device)
    flat = input.reshape(n, c, math.prod(sizes))
    g = grid.reshape(n, math.prod(out_spatial), nd)
    # grid's last dim is (x, y[, z]): reversed spatial order
    raw = [_unnormalize(g.select(2, nd - 1 - k), sizes[k], align) for k in range(nd)]
    if mode == "bicubic":
        out = None
        base = [r.floor() for r in raw]
        ws = [_cubic_weights(r - b) for r, b in zip(raw, base)]
        for i in range(4):
            for j in range(4):
                coords = [_pad_coord(b + (t - 1), size, padding_mode, align)
                          for b, t, size in zip(base, (i, j), sizes)]
                coords = [co.to(em.int64) for co in coords]
                term = _gather_taps(flat, sizes, coords) * \
                    (ws[0][i] * ws[1][j]).unsqueeze(1)
                out = term if out is None else out + term
        return out.reshape((n, c) + out_spatial)
    src = [_pad_coord(r, size, padding_mode, align) for r, size in zip(raw, sizes)]
    if mode == "nearest":
        coords = [s.round().to(em.int64) for s in src]
        return _gather_taps(flat, sizes, coords).reshape((n, c) + out_spatial)
    lo = [s.floor() for s in src]
    frac = [s - f for s, f in zip(src, lo)]
    lo = [f.to(em.int64) for f in lo]
    out = None
    for corner in range(2 ** nd):
        bits = [(corner >> (nd - 1 - k)) & 1 for k in range(nd)]
        w = None
        for k, b in enumerate(bits):
            wk = frac[k] if b else 1 - frac[k]
            w = wk if w is None else w * wk
        coords = [lo[k] + bits[k] for k in range(nd)]
        term = _gather_taps(flat, sizes, coords) * w.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape((n, c) + out_spatial)


# affine_grid --------------------------------------------------------------------------------

def _base_coords(num, align_corners, dtype, device):
    """linspace(-1, 1, num), scaled by (num - 1) / num without align_corners (pixel
    centres); 0 for num = 1."""
    if num <= 1:
        return em.zeros(max(num, 0), dtype=dtype, device=device)
    r = em.linspace(-1.0, 1.0, num, dtype=dtype, device=device)
    return r if align_corners else r * ((num - 1) / num)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of grid_sample for the affine maps theta: (N, 2, 3) with size
    (N, C, H, W) gives (N, H, W, 2); (N, 3, 4) with size (N, C, D, H, W) gives
    (N, D, H, W, 3). Each output point is theta @ (x, y[, z], 1) over the normalised
    pixel centres (align_corners: the corners at -1 and 1; default False). A matmul over
    a base grid: differentiable w.r.t. theta, on every device."""
    op = "affine_grid"
    if not isinstance(theta, TensorBase):
        raise TypeError(f"{op}: expected theta to be a tensor, got {type(theta).__name__}")
    if not theta.is_floating_point():
        raise TypeError(f"{op}: expected a floating-point theta, got {theta.dtype!r}")
    try:
        size = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}: size must be a sequence of ints, got {size!r}") from None
    if len(size) not in (4, 5):
        raise ValueError(f"{op}: only 4-d (2-d affine) and 5-d (3-d affine) sizes are "
                         f"supported, got size {size}")
    nd = len(size) - 2
    want = (size[0], nd, nd + 1)
    if tuple(theta.shape) != want:
        raise ValueError(f"{op}: expected a theta of shape {want} for size {size}, got "
                         f"{tuple(theta.shape)}")
    if min(size[2:]) <= 0:
        raise ValueError(f"{op}: expected a size with non-empty spatial dims, got {size}")
    spatial = size[2:]
    dtype, device = theta.dtype, theta.device
    align = _default_align(align_corners)
    axes = [_base_coords(s, align, dtype, device) for s in spatial]
    # (x, y[, z], 1): x runs along the last spatial dim
    grids = em.meshgrid(*axes, indexing="ij")
    base = em.stack([grids[nd - 1 - k] for k in range(nd)] +
                    [em.ones(spatial, dtype=dtype, device=device)], -1)
    base = base.reshape(1, math.prod(spatial), nd + 1)
    out = em.matmul(base, theta.transpose(1, 2))
    return out.reshape((size[0],) + spatial + (nd,))
