"""F.interpolate in every mode, F.grid_sample and F.affine_grid against NumPy loops that
implement PyTorch's documented coordinate rules (half-pixel centres, align_corners,
bicubic A = -0.75 with clamped taps, the antialiasing filters, grid_sample's padding
modes), on every device, gradchecked in float64 (w.r.t. the input and the grid), and the
Upsample modules."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

DEVICES = ["cpu"] + [d for d in ("opencl", "cuda") if getattr(em, d).is_available()]


def T(a, device="cpu", grad=False):
    t = em.from_numpy(np.array(a, order="C")).to(device)
    return t.requires_grad_() if grad else t


def close(got, want, dtype=np.float64):
    tol = 1e-10 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=tol, atol=tol)


# interpolate references ----------------------------------------------------------------

def src_scale(n, o, align_corners, scale_factor):
    if align_corners:
        return (n - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / scale_factor if scale_factor else n / o


def source(dst, scale, align_corners, cubic):
    if align_corners:
        return dst * scale
    s = (dst + 0.5) * scale - 0.5
    return s if cubic else max(s, 0.0)


def nearest_matrix(n, o, scale_factor, exact, shortcuts):
    """One-hot rows: 'nearest' min(floor(dst * scale), n - 1) in float32 (o = n and
    o = 2n exactly on 4-d inputs: PyTorch's 2-d kernel, not its 1-d and 3-d ones),
    'nearest-exact' min(floor((dst + 0.5) * scale), n - 1)."""
    m = np.zeros((o, n))
    scale = np.float32(1.0 / scale_factor if scale_factor else n / o)
    for d in range(o):
        if not exact and shortcuts and o == n:
            i = d
        elif not exact and shortcuts and o == 2 * n:
            i = d // 2
        else:
            pos = np.float32(d) + np.float32(0.5) if exact else np.float32(d)
            i = min(int(math.floor(np.float32(pos * scale))), n - 1)
        m[d, i] = 1.0
    return m


def linear_matrix(n, o, align_corners, scale_factor):
    m = np.zeros((o, n))
    if o == n:
        return np.eye(n)        # PyTorch copies a kept size, whatever the scale
    scale = src_scale(n, o, align_corners, scale_factor)
    for d in range(o):
        s = source(d, scale, align_corners, False)
        i0 = min(int(math.floor(s)), n - 1)
        i1 = i0 + 1 if i0 < n - 1 else i0
        lam = s - i0
        m[d, i0] += 1 - lam
        m[d, i1] += lam
    return m


def cubic_w(t, a=-0.75):
    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def np_bicubic(x, out, align_corners, scales):
    """The 4 x 4 taps of every output pixel, each tap's index clamped into the input."""
    N, C, H, W = x.shape
    OH, OW = out
    res = np.zeros((N, C, OH, OW))
    sh = src_scale(H, OH, align_corners, scales[0])
    sw = src_scale(W, OW, align_corners, scales[1])
    for oy in range(OH):
        ry = source(oy, sh, align_corners, True)
        iy = math.floor(ry)
        wy = cubic_w(ry - iy)
        for ox in range(OW):
            rx = source(ox, sw, align_corners, True)
            ix = math.floor(rx)
            wx = cubic_w(rx - ix)
            acc = 0.0
            for a in range(4):
                yy = min(max(iy - 1 + a, 0), H - 1)
                for b in range(4):
                    xx = min(max(ix - 1 + b, 0), W - 1)
                    acc = acc + wy[a] * wx[b] * x[:, :, yy, xx]
            res[:, :, oy, ox] = acc
    return res


def aa_matrix(n, o, align_corners, scale_factor, cubic):
    """PyTorch's antialiasing filter (PIL's): a triangle or an A = -0.5 cubic, stretched
    by the scale when downsampling, centred at scale * (dst + 0.5), normalised."""
    m = np.zeros((o, n))
    if o == n:
        return np.eye(n)
    scale = src_scale(n, o, align_corners, scale_factor)
    support = (2.0 if cubic else 1.0) * (scale if scale >= 1 else 1.0)
    inv = 1.0 / scale if scale >= 1 else 1.0
    for d in range(o):
        c = scale * (d + 0.5)
        lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n)
        ws = []
        for j in range(lo, hi):
            t = abs((j - c + 0.5) * inv)
            if cubic:     # Keys' kernel, A = -0.5
                w = (1.5 * t - 2.5) * t * t + 1 if t < 1 else \
                    ((-0.5 * t + 2.5) * t - 4) * t + 2 if t < 2 else 0.0
            else:
                w = max(1 - t, 0.0)
            ws.append(w)
        total = sum(ws)
        for j, w in zip(range(lo, hi), ws):
            m[d, j] = w / total if total else 0.0
    return m


def area_matrix(n, o):
    m = np.zeros((o, n))
    for d in range(o):
        a, b = d * n // o, -(-(d + 1) * n // o)
        m[d, a:b] = 1.0 / (b - a)
    return m


def apply_matrices(x, mats):
    for k, m in enumerate(mats):
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, 2 + k, 0), axes=(1, 0)), 0, 2 + k)
    return x


def out_and_scales(spatial, size, scale_factor, recompute):
    nd = len(spatial)
    if size is not None:
        return (tuple(size) if isinstance(size, tuple) else (size,) * nd), (None,) * nd
    sf = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * nd
    out = tuple(math.floor(n * s) for n, s in zip(spatial, sf))
    return out, ((None,) * nd if recompute else sf)


def np_interpolate(x, size, scale_factor, mode, align_corners, recompute, antialias):
    spatial = x.shape[2:]
    out, scales = out_and_scales(spatial, size, scale_factor, recompute)
    if mode == "bicubic" and not antialias:
        return np_bicubic(x, out, bool(align_corners), scales)
    mats = []
    for n, o, s in zip(spatial, out, scales):
        if mode in ("nearest", "nearest-exact"):
            mats.append(nearest_matrix(n, o, s, mode == "nearest-exact", len(spatial) == 2))
        elif mode == "area":
            mats.append(area_matrix(n, o))
        elif antialias:
            mats.append(aa_matrix(n, o, bool(align_corners), s, mode == "bicubic"))
        else:
            mats.append(linear_matrix(n, o, bool(align_corners), s))
    return apply_matrices(x, mats)


RANK = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
        "linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,)}


@st.composite
def interp_cases(draw):
    mode = draw(st.sampled_from(sorted(RANK)))
    nd = draw(st.sampled_from(RANK[mode])) - 2
    spatial = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    antialias = mode in ("bilinear", "bicubic") and draw(st.booleans())
    if draw(st.booleans()):
        size = tuple(draw(st.integers(1, 9)) for _ in range(nd))
        if draw(st.booleans()):
            size = size[0] if len(set(size)) == 1 else size
        scale_factor, recompute = None, None
    else:
        size = None
        sf = tuple(draw(st.sampled_from([0.5, 0.7, 1.0, 1.3, 2.0, 2.5, 3.0]))
                   for _ in range(nd))
        sf = tuple(max(f, 1.0 / n) for f, n in zip(sf, spatial))   # keep outputs >= 1
        scale_factor = sf[0] if len(set(sf)) == 1 else sf
        recompute = draw(st.sampled_from([None, False, True]))
    align = draw(st.sampled_from([None, False, True])) if mode in (
        "linear", "bilinear", "bicubic", "trilinear") else None
    return dict(mode=mode, shape=(2, 2) + spatial, size=size, scale_factor=scale_factor,
                recompute_scale_factor=recompute, align_corners=align, antialias=antialias)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=60, deadline=None)
@given(case=interp_cases(), dtype=st.sampled_from([np.float64, np.float32]),
       seed=st.integers(0, 2**16))
def test_interpolate_every_mode_matches_reference(device, case, dtype, seed):
    x = np.random.default_rng(seed).uniform(-2, 2, case["shape"]).astype(dtype)
    got = F.interpolate(T(x, device), size=case["size"], scale_factor=case["scale_factor"],
                        mode=case["mode"], align_corners=case["align_corners"],
                        recompute_scale_factor=case["recompute_scale_factor"],
                        antialias=case["antialias"])
    want = np_interpolate(x.astype(np.float64), case["size"], case["scale_factor"],
                          case["mode"], case["align_corners"],
                          case["recompute_scale_factor"], case["antialias"])
    assert got.dtype == em.from_numpy(x).dtype
    close(got, want, dtype)


def test_interpolate_known_values():
    """Values PyTorch gives (torch 2.13, written down here)."""
    x = T(np.arange(1.0, 26.0).reshape(1, 1, 5, 5))
    # bicubic keeps no shortcut for a kept size under a scale_factor
    got = F.interpolate(x, scale_factor=1.1, mode="bicubic")[0, 0, :, 0].numpy()
    np.testing.assert_allclose(got, [0.8136, 5.0128, 9.5931, 14.1808, 19.3493], atol=1e-4)
    close(F.interpolate(x, scale_factor=0.5, mode="area"), [[[[7.0, 9.0], [17.0, 19.0]]]])
    got = F.interpolate(x, scale_factor=1.5, mode="area")[0, 0, :, 0].numpy()
    np.testing.assert_allclose(got, [1.0, 3.5, 8.5, 11.0, 13.5, 18.5, 21.0])
    close(F.interpolate(x, size=(5, 5), mode="bicubic", align_corners=True), x.numpy())
    # 'nearest' copies a kept size (and repeats a doubled one) only on 4-d inputs
    close(F.interpolate(x, scale_factor=1.1)[0, 0, :, 0], [1.0, 6.0, 11.0, 16.0, 21.0])
    x3 = T(np.arange(1.0, 6.0).reshape(1, 1, 5))
    close(F.interpolate(x3, scale_factor=1.1)[0, 0], [1.0, 1.0, 2.0, 3.0, 4.0])
    x5 = T(np.arange(1.0, 6.0).reshape(1, 1, 5, 1, 1))
    close(F.interpolate(x5, scale_factor=(2.0001, 1, 1))[0, 0, :, 0, 0],
          [1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0])
    close(F.interpolate(x, scale_factor=1.1, mode="bilinear", antialias=True), x.numpy())


def test_interpolate_integer_nearest():
    x = em.arange(12).reshape(1, 1, 3, 4)
    y = F.interpolate(x, scale_factor=2)
    assert y.dtype == em.int64
    np.testing.assert_array_equal(y.numpy(), np.repeat(np.repeat(x.numpy(), 2, 2), 2, 3))
    np.testing.assert_array_equal(F.interpolate(x, size=(2, 3), mode="nearest-exact").numpy(),
                                  x.numpy()[:, :, [0, 2]][:, :, :, [0, 2, 3]])


@pytest.mark.parametrize("device", DEVICES)
def test_interpolate_gradcheck_every_mode(device):
    rng = np.random.default_rng(0)
    x3, x4, x5 = (T(rng.uniform(-1, 1, s), device, True)
                  for s in ((1, 2, 4), (1, 2, 3, 4), (1, 1, 2, 3, 3)))
    cases = [(x3, dict(mode="linear", size=7)), (x3, dict(mode="nearest-exact", size=6)),
             (x3, dict(mode="area", size=3)),
             (x4, dict(mode="bicubic", size=(5, 3))),
             (x4, dict(mode="bicubic", scale_factor=1.5, align_corners=True)),
             (x4, dict(mode="bilinear", size=(2, 3), antialias=True)),
             (x4, dict(mode="bicubic", size=(2, 2), antialias=True)),
             (x4, dict(mode="area", size=(2, 3))),
             (x5, dict(mode="trilinear", size=(3, 4, 2))),
             (x5, dict(mode="trilinear", scale_factor=1.5, align_corners=True)),
             (x5, dict(mode="area", size=(1, 2, 2))), (x5, dict(mode="nearest", size=(3, 2, 5)))]
    for x, kw in cases:
        assert gradcheck(lambda a: F.interpolate(a, **kw), (x,)), kw


def test_interpolate_more_bad_input():
    x = T(np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="antialias=True is restricted to the modes 'bilinear' "
                                         "and 'bicubic' on a 4-d input"):
        F.interpolate(T(np.zeros((1, 2, 3))), size=2, mode="linear", antialias=True)
    with pytest.raises(ValueError, match="align_corners can only be set with the interpolating "
                                         "modes"):
        F.interpolate(x, size=2, mode="area", align_corners=False)
    with pytest.raises(ValueError, match=r"mode 'bicubic' needs a 4-d input"):
        F.interpolate(T(np.zeros((1, 2, 3, 4, 5))), size=2, mode="bicubic")
    with pytest.raises(TypeError, match="mode 'area' needs a floating-point input"):
        F.interpolate(em.ones((1, 1, 4), dtype=em.int64), size=2, mode="area")
    with pytest.raises(ValueError, match="scale_factor must be positive and finite"):
        F.interpolate(x, scale_factor=-1.0)
    with pytest.raises(TypeError, match="interpolate: expected a tensor input"):
        F.interpolate(np.zeros((1, 1, 2)), size=3)


# Upsample modules ---------------------------------------------------------------------

def test_upsample_modules():
    x = T(np.random.default_rng(1).uniform(-1, 1, (1, 2, 3, 4)))
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    close(up(x), np_interpolate(x.numpy(), None, 2, "bilinear", False, None, False))
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.Upsample(size=(5, 6))) == "Upsample(size=(5, 6), mode='nearest')"
    close(nn.UpsamplingNearest2d(size=(5, 7))(x),
          np_interpolate(x.numpy(), (5, 7), None, "nearest", None, None, False))
    close(nn.UpsamplingBilinear2d(scale_factor=2)(x),
          np_interpolate(x.numpy(), None, 2, "bilinear", True, None, False))
    close(nn.Upsample(size=(2, 3, 4), mode="trilinear")(T(np.ones((1, 1, 3, 3, 3)))),
          np.ones((1, 1, 2, 3, 4)))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        close(F.upsample_bilinear(x, scale_factor=2),
              nn.UpsamplingBilinear2d(scale_factor=2)(x).numpy())
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        close(F.upsample_nearest(x, size=5), nn.UpsamplingNearest2d(size=5)(x).numpy())
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        close(F.upsample(x, size=5, mode="bicubic"),
              F.interpolate(x, 5, mode="bicubic").numpy())
    assert nn.modules.upsampling.Upsample is nn.Upsample
    m = nn.Upsample(scale_factor=(2, 1), mode="nearest-exact", recompute_scale_factor=True)
    assert tuple(m(x).shape) == (1, 2, 6, 4)


# grid_sample references -----------------------------------------------------------------

def unnormalize(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    x = abs(x - lo)
    extra = math.fmod(x, span)
    flips = math.floor(x / span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def pad_coord(x, size, padding, align):
    if padding == "border":
        return min(max(x, 0.0), size - 1.0)
    if padding == "reflection":
        x = reflect(x, 0, 2 * (size - 1)) if align else reflect(x, -1, 2 * size - 1)
        return min(max(x, 0.0), size - 1.0)
    return x


def np_grid_sample(x, grid, mode, padding, align):
    """A loop over every output point and every tap."""
    N, C = x.shape[:2]
    sizes = x.shape[2:]
    nd = len(sizes)
    out_sp = grid.shape[1:-1]
    out = np.zeros((N, C) + out_sp)

    def read(n, pos):
        if all(0 <= p < s for p, s in zip(pos, sizes)):
            return x[(n, slice(None)) + tuple(pos)]
        return np.zeros(C)
    for n in range(N):
        for o in itertools.product(*(range(s) for s in out_sp)):
            g = grid[(n,) + o]
            raw = [unnormalize(g[nd - 1 - k], sizes[k], align) for k in range(nd)]
            if mode == "bicubic":
                base = [math.floor(r) for r in raw]
                ws = [cubic_w(r - b) for r, b in zip(raw, base)]
                acc = np.zeros(C)
                for i in range(4):
                    for j in range(4):
                        pos = [int(pad_coord(b + t - 1, s, padding, align))
                               for b, t, s in zip(base, (i, j), sizes)]
                        acc = acc + ws[0][i] * ws[1][j] * read(n, pos)
                out[(n, slice(None)) + o] = acc
                continue
            src = [pad_coord(r, s, padding, align) for r, s in zip(raw, sizes)]
            if mode == "nearest":
                out[(n, slice(None)) + o] = read(n, [int(np.rint(s)) for s in src])
                continue
            lo = [math.floor(s) for s in src]
            acc = np.zeros(C)
            for bits in itertools.product((0, 1), repeat=nd):
                w = 1.0
                for k, b in enumerate(bits):
                    w *= (src[k] - lo[k]) if b else (1 - (src[k] - lo[k]))
                acc = acc + w * read(n, [lo[k] + bits[k] for k in range(nd)])
            out[(n, slice(None)) + o] = acc
    return out


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=40, deadline=None)
@given(nd=st.sampled_from([2, 3]), mode=st.sampled_from(["bilinear", "nearest", "bicubic"]),
       padding=st.sampled_from(["zeros", "border", "reflection"]),
       align=st.sampled_from([None, False, True]),
       sizes=st.tuples(*(st.integers(1, 4) for _ in range(3))),
       outs=st.tuples(*(st.integers(1, 3) for _ in range(3))),
       dtype=st.sampled_from([np.float64, np.float32]), seed=st.integers(0, 2**16))
def test_grid_sample_matches_reference(device, nd, mode, padding, align, sizes, outs, dtype,
                                       seed):
    if mode == "bicubic":
        nd = 2
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (2, 3) + sizes[:nd]).astype(dtype)
    grid = rng.uniform(-1.6, 1.6, (2,) + outs[:nd] + (nd,)).astype(dtype)
    if align is None:
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            got = F.grid_sample(T(x, device), T(grid, device), mode, padding, align)
    else:
        got = F.grid_sample(T(x, device), T(grid, device), mode, padding, align)
    want = np_grid_sample(x.astype(np.float64), grid.astype(np.float64), mode, padding,
                          bool(align))
    assert got.dtype == em.from_numpy(x).dtype
    close(got, want, dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_grid_sample_gradcheck_input_and_grid(device):
    rng = np.random.default_rng(5)
    for nd, mode, padding, align in [(2, "bilinear", "zeros", False),
                                     (2, "bilinear", "border", True),
                                     (2, "bilinear", "reflection", False),
                                     (2, "bicubic", "zeros", True),
                                     (2, "bicubic", "reflection", False),
                                     (2, "nearest", "zeros", False),
                                     (3, "bilinear", "zeros", True),
                                     (3, "bilinear", "reflection", True),
                                     (3, "nearest", "border", False)]:
        x = T(rng.uniform(-1, 1, (1, 2) + (3,) * nd), device, True)
        grid = T(rng.uniform(-1.3, 1.3, (1,) + (2,) * nd + (nd,)), device, True)
        assert gradcheck(lambda a, g: F.grid_sample(a, g, mode, padding, align), (x, grid)), \
            (nd, mode, padding, align)


def test_grid_sample_identity_and_nearest_grid_gradient():
    x = T(np.random.default_rng(2).uniform(-1, 1, (2, 3, 4, 5)))
    theta = T(np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1)))
    for align in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align)
        close(F.grid_sample(x, grid, align_corners=align), x.numpy())
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        grid = F.affine_grid(theta, (2, 3, 4, 5))
    close(grid, F.affine_grid(theta, (2, 3, 4, 5), align_corners=False).numpy())
    # 'nearest' is piecewise constant in the grid: no gradient flows to it (PyTorch's is 0)
    g = T(np.random.default_rng(3).uniform(-1, 1, (2, 2, 2, 2)), grad=True)
    x.requires_grad_()
    F.grid_sample(x, g, mode="nearest", align_corners=False).sum().backward()
    assert g.grad is None or not g.grad.numpy().any()
    assert x.grad is not None


def test_grid_sample_bad_input():
    x = T(np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="grid_sample: a 4-d input needs a 4-d grid whose "
                                         "last dim is 2"):
        F.grid_sample(x, T(np.zeros((1, 2, 2, 3))))
    with pytest.raises(ValueError, match="mode 'bicubic' needs a 4-d input"):
        F.grid_sample(T(np.zeros((1, 1, 2, 2, 2))), T(np.zeros((1, 1, 1, 1, 3))), "bicubic")
    with pytest.raises(ValueError, match="padding_mode must be 'zeros', 'border' or "
                                         "'reflection', got 'wrap'"):
        F.grid_sample(x, T(np.zeros((1, 2, 2, 2))), padding_mode="wrap")
    with pytest.raises(ValueError, match="same batch size"):
        F.grid_sample(x, T(np.zeros((2, 2, 2, 2))))
    with pytest.raises(TypeError, match="one floating-point dtype"):
        F.grid_sample(x, T(np.zeros((1, 2, 2, 2), np.float32)))


# affine_grid ---------------------------------------------------------------------------

def np_affine_grid(theta, size, align):
    N = size[0]
    spatial = size[2:]
    nd = len(spatial)

    def axis(n):
        if n <= 1:
            return np.zeros(max(n, 0))
        r = np.linspace(-1, 1, n)
        return r if align else r * (n - 1) / n
    axes = [axis(s) for s in spatial]
    out = np.zeros((N,) + tuple(spatial) + (nd,))
    for n in range(N):
        for idx in itertools.product(*(range(s) for s in spatial)):
            p = [axes[nd - 1 - k][idx[nd - 1 - k]] for k in range(nd)] + [1.0]
            out[(n,) + idx] = theta[n] @ np.array(p)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 3, 2, 4), (1, 2, 1, 1, 2)])
def test_affine_grid_matches_reference(device, align, size):
    nd = len(size) - 2
    rng = np.random.default_rng(sum(size))
    theta = rng.uniform(-1, 1, (size[0], nd, nd + 1))
    close(F.affine_grid(T(theta, device), size, align_corners=align),
          np_affine_grid(theta, size, align))
    th = T(theta, device, True)
    assert gradcheck(lambda t: F.affine_grid(t, size, align_corners=align), (th,))


def test_affine_grid_bad_input():
    with pytest.raises(ValueError, match=r"affine_grid: expected a theta of shape \(2, 2, 3\)"):
        F.affine_grid(T(np.zeros((2, 3, 4))), (2, 1, 3, 3))
    with pytest.raises(ValueError, match="only 4-d .* and 5-d .* sizes are supported"):
        F.affine_grid(T(np.zeros((2, 2, 3))), (2, 1, 3))
    with pytest.raises(TypeError, match="expected a floating-point theta"):
        F.affine_grid(em.zeros((1, 2, 3), dtype=em.int64), (1, 1, 2, 2))
