"""conv3d and conv_transpose3d (composed from the 2-d kernels) against NumPy references
written here (a gather over the kernel taps; a scatter for the transpose), on every
device, gradchecked in float64, and bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck
from ember_testing import fewer_examples


def ref_conv3d(x, w, b, stride, pads, dilation, groups):
    """x (N, C, D, H, W), w (OC, C/g, kd, kh, kw); pads ((before, after),) * 3."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    oc, cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    out = np.zeros((n, oc) + tuple(out_sp))
    ocg = oc // groups
    for g in range(groups):
        for a in range(k[0]):
            for bb in range(k[1]):
                for cc in range(k[2]):
                    sl = tuple(slice(t * dilation[i], t * dilation[i] +
                                     stride[i] * (out_sp[i] - 1) + 1, stride[i])
                               for i, t in enumerate((a, bb, cc)))
                    patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
                    out[:, g * ocg:(g + 1) * ocg] += np.einsum(
                        "ncdhw,oc->nodhw", patch, w[g * ocg:(g + 1) * ocg, :, a, bb, cc])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None, None]
    return out


def ref_conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter every input voxel times the kernel into the uncropped output, then crop."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, cin = x.shape[:2]
    sp = x.shape[2:]
    ocg = w.shape[1]
    k = w.shape[2:]
    cig = cin // groups
    full = np.zeros((n, ocg * groups) + tuple(
        (sp[i] - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 + output_padding[i]
        for i in range(3)))
    for g in range(groups):
        for a in range(k[0]):
            for bb in range(k[1]):
                for cc in range(k[2]):
                    sl = tuple(slice(t * dilation[i], t * dilation[i] +
                                     stride[i] * (sp[i] - 1) + 1, stride[i])
                               for i, t in enumerate((a, bb, cc)))
                    full[(slice(None), slice(g * ocg, (g + 1) * ocg)) + sl] += np.einsum(
                        "ncdhw,co->nodhw", x[:, g * cig:(g + 1) * cig],
                        w[g * cig:(g + 1) * cig, :, a, bb, cc])
    osz = [(sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) +
           output_padding[i] + 1 for i in range(3)]
    out = full[(slice(None), slice(None)) +
               tuple(slice(padding[i], padding[i] + osz[i]) for i in range(3))]
    if b is not None:
        out = out + b.astype(np.float64)[None, :, None, None, None]
    return out


def check(got, want, dtype):
    assert got.dtype.name == dtype
    assert tuple(got.shape) == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    tol = 1e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want, rtol=tol,
                               atol=tol * scale)


@st.composite
def conv3d_configs(draw):
    groups = draw(st.sampled_from([1, 1, 2]))
    cg = draw(st.integers(1, 2))
    ocg = draw(st.integers(1, 3))
    k = tuple(draw(st.integers(1, 3)) for _ in range(3))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(3))
    kind = draw(st.sampled_from(["int", "tuple", "same", "valid"]))
    stride = (1, 1, 1) if kind == "same" else tuple(draw(st.integers(1, 3)) for _ in range(3))
    if kind == "same":
        padding = "same"
        pads = tuple((d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2)
                     for kk, d in zip(k, dilation))
    elif kind == "valid":
        padding, pads = "valid", ((0, 0),) * 3
    elif kind == "int":
        p = draw(st.integers(0, 2))
        padding, pads = p, ((p, p),) * 3
    else:
        p = tuple(draw(st.integers(0, 2)) for _ in range(3))
        padding, pads = p, tuple((q, q) for q in p)
    sp = []
    for i in range(3):
        lo = max(1, dilation[i] * (k[i] - 1) + 1 - sum(pads[i]))
        sp.append(draw(st.integers(lo, lo + 4)))
    n = draw(st.integers(1, 2))
    batched = draw(st.booleans())
    return dict(x=((n,) if batched else ()) + (cg * groups,) + tuple(sp),
                w=(ocg * groups, cg) + k, stride=stride, padding=padding, pads=pads,
                dilation=dilation, groups=groups, bias=draw(st.booleans()))


@settings(max_examples=fewer_examples(2), deadline=None)
@given(cfg=conv3d_configs(), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_conv3d_matches_reference(device, cfg, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(cfg["x"]).astype(dtype)
    w = rng.standard_normal(cfg["w"]).astype(dtype)
    b = rng.standard_normal(cfg["w"][0]).astype(dtype) if cfg["bias"] else None
    got = em.conv3d(em.from_numpy(x).to(device), em.from_numpy(w).to(device),
                    None if b is None else em.from_numpy(b).to(device), cfg["stride"],
                    cfg["padding"], cfg["dilation"], cfg["groups"])
    xb = x if x.ndim == 5 else x[None]
    want = ref_conv3d(xb, w, b, cfg["stride"], cfg["pads"], cfg["dilation"], cfg["groups"])
    check(got, want if x.ndim == 5 else want[0], dtype)


@st.composite
def transpose3d_configs(draw):
    groups = draw(st.sampled_from([1, 1, 2]))
    cg = draw(st.integers(1, 2))
    ocg = draw(st.integers(1, 3))
    k = tuple(draw(st.integers(1, 3)) for _ in range(3))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(3))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(3))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(3))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1))
                           for s, d in zip(stride, dilation))
    sp = []
    for i in range(3):
        lo = 1
        while (lo - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + \
                output_padding[i] + 1 < 1:
            lo += 1
        sp.append(draw(st.integers(lo, lo + 3)))
    n = draw(st.integers(1, 2))
    batched = draw(st.booleans())
    return dict(x=((n,) if batched else ()) + (cg * groups,) + tuple(sp),
                w=(cg * groups, ocg) + k, stride=stride, padding=padding,
                output_padding=output_padding, dilation=dilation, groups=groups,
                bias=draw(st.booleans()))


@settings(max_examples=fewer_examples(2), deadline=None)
@given(cfg=transpose3d_configs(), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_conv_transpose3d_matches_reference(device, cfg, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(cfg["x"]).astype(dtype)
    w = rng.standard_normal(cfg["w"]).astype(dtype)
    b = rng.standard_normal(cfg["w"][1] * cfg["groups"]).astype(dtype) if cfg["bias"] else None
    got = em.conv_transpose3d(em.from_numpy(x).to(device), em.from_numpy(w).to(device),
                              None if b is None else em.from_numpy(b).to(device),
                              cfg["stride"], cfg["padding"], cfg["output_padding"],
                              cfg["groups"], cfg["dilation"])
    xb = x if x.ndim == 5 else x[None]
    want = ref_conv_transpose3d(xb, w, b, cfg["stride"], cfg["padding"],
                                cfg["output_padding"], cfg["groups"], cfg["dilation"])
    check(got, want if x.ndim == 5 else want[0], dtype)


def test_conv3d_is_the_adjoint_of_conv_transpose3d():
    """<conv3d(x, w), y> == <x, conv_transpose3d(y, w)> for the same geometry."""
    rng = np.random.default_rng(1)
    x = em.from_numpy(rng.standard_normal((2, 4, 5, 6, 7)))
    w = em.from_numpy(rng.standard_normal((6, 2, 2, 3, 2)))
    kw = dict(stride=(2, 1, 3), padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)
    y = em.conv3d(x, w, **kw)
    g = em.from_numpy(rng.standard_normal(tuple(y.shape)))
    back = em.conv_transpose3d(g, w, output_padding=(x.shape[2] - em.conv_transpose3d(
        g, w, **kw).shape[2], 0, x.shape[4] - em.conv_transpose3d(g, w, **kw).shape[4]), **kw)
    assert tuple(back.shape) == tuple(x.shape)
    np.testing.assert_allclose((y * g).sum().item(), (x * back).sum().item(), rtol=1e-10)


def test_conv3d_gradcheck(device):
    rng = np.random.default_rng(2)

    def t(*shape):
        return em.from_numpy(rng.standard_normal(shape)).to(device).requires_grad_()
    x, w, b = t(1, 2, 3, 4, 3), t(4, 1, 2, 2, 1), t(4)
    assert gradcheck(lambda a, c, d: em.conv3d(a, c, d, (1, 2, 1), (1, 0, 1), (2, 1, 1), 2),
                     (x, w, b))
    assert gradcheck(lambda a, c: em.conv3d(a, c, None, 1, "same", (1, 2, 1), 2), (x, w))
    xt, wt = t(1, 2, 2, 3, 2), t(2, 2, 2, 2, 2)
    assert gradcheck(lambda a, c, d: em.conv_transpose3d(a, c, d, (2, 1, 2), (1, 0, 0),
                                                         (1, 0, 0), 2, (1, 2, 1)),
                     (xt, wt, b))


def test_conv3d_float16_and_unbatched():
    x = em.randn(2, 3, 4, 5)
    w = em.randn(3, 2, 2, 2, 2)
    y = em.conv3d(x, w)
    assert tuple(y.shape) == (3, 2, 3, 4)
    h = em.conv3d(x.half(), w.half())
    assert h.dtype == em.float16
    np.testing.assert_allclose(h.float().numpy(), y.numpy(), rtol=2e-2, atol=2e-2)


def test_conv3d_bad_input():
    x, w = em.randn(1, 2, 3, 4, 5), em.randn(3, 2, 2, 2, 2)
    with pytest.raises(ValueError, match=r"conv3d: expected a 5-d \(batched\) or 4-d"):
        em.conv3d(em.randn(2, 3, 4), w)
    with pytest.raises(ValueError, match="conv3d: expected a 5-d weight"):
        em.conv3d(x, em.randn(3, 2, 2, 2))
    with pytest.raises(ValueError, match="conv3d: padding='same' needs stride 1"):
        em.conv3d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="spans 5 along the depth"):
        em.conv3d(x, em.randn(3, 2, 5, 1, 1))
    with pytest.raises(TypeError, match="conv3d: stride must be an int or a tuple of 3 ints"):
        em.conv3d(x, w, stride=(1, 1))
    with pytest.raises(ValueError, match="conv_transpose3d: output_padding"):
        em.conv_transpose3d(x, em.randn(2, 3, 2, 2, 2), stride=2, output_padding=2)
    with pytest.raises(TypeError, match="conv3d: expected a floating point input"):
        em.conv3d(em.ones((1, 2, 3, 4, 5), dtype=em.int64), w)
