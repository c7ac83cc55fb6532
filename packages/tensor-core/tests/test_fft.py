"""The FFT family (ember.ops.fft over (re, im) [..., 2] tensors, the kernels of
kernels/cpu/fft.c and the device programs) against numpy.fft: every length 1..64,
random lengths up to 10^5 (primes, products of large primes, smooth lengths), strided
and transposed layouts, float32 (error bound eps * log2(n) * ||x||) and float64, every
norm, round trips, several dims; their derivatives gradchecked; the windows, frequency
helpers and shifts; the plan cache; bad input."""
import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as em
from ember.autograd import gradcheck
from ember.ops import fft as F
from ember_testing import fewer_examples

NORMS = (None, "backward", "ortho", "forward")
EPS = {em.float32: np.finfo(np.float32).eps, em.float64: np.finfo(np.float64).eps}
NP_DT = {em.float32: np.float32, em.float64: np.float64}


def _cpx(t):
    """A [..., 2] ember tensor as a complex NumPy array."""
    a = t.cpu().numpy().astype(np.float64)
    return a[..., 0] + 1j * a[..., 1]


def _ri(z, dtype=em.float64, device="cpu"):
    """A complex NumPy array as a [..., 2] ember tensor."""
    a = np.stack([z.real, z.imag], -1).astype(NP_DT[dtype])
    return em.tensor(a, device=device)


def _rand(shape, seed, cplx=True):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape)
    return z + 1j * rng.standard_normal(shape) if cplx else z


def _check(got, want, x_norm, n, dtype, scale=1.0, factor=6.0):
    """max |got - want| <= factor * eps * log2(2n) * ||x|| * scale (the DFT's error growth
    over log2 n passes of rounding; float64 references)."""
    err = np.max(np.abs(got - want)) if want.size else 0.0
    bound = factor * EPS[dtype] * math.log2(2 * n) * max(x_norm, 1e-300) * scale
    assert err <= bound, f"n={n} {dtype}: error {err:.3g} > bound {bound:.3g}"


def _nscale(norm, n, forward):
    return F._scale(F._norm_arg(norm, "t"), n, forward)


# --------------------------------------------------------------- c2c, all lengths

@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_c2c_every_length_to_64_every_norm(dtype):
    for n in range(1, 65):
        z = _rand(n, n)
        if dtype is em.float32:
            z = z.astype(np.complex64).astype(np.complex128)
        x = _ri(z, dtype)
        xn = np.linalg.norm(z)
        for norm in NORMS:
            got = _cpx(F.fft_c2c(x, norm=norm))
            _check(got, np.fft.fft(z, norm=norm), xn, n, dtype, _nscale(norm, n, True))
            got = _cpx(F.fft_c2c(x, norm=norm, forward=False))
            _check(got, np.fft.ifft(z, norm=norm), xn, n, dtype, _nscale(norm, n, False))


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_r2c_and_c2r_every_length_to_64(dtype):
    for n in range(1, 65):
        r = _rand(n, 100 + n, cplx=False)
        if dtype is em.float32:
            r = r.astype(np.float32).astype(np.float64)
        x = em.tensor(r.astype(NP_DT[dtype]))
        xn = np.linalg.norm(r)
        for norm in NORMS:
            _check(_cpx(F.fft_r2c(x, norm=norm)), np.fft.rfft(r, norm=norm), xn, n, dtype,
                   _nscale(norm, n, True))
            _check(_cpx(F.fft_r2c(x, norm=norm, onesided=False)), np.fft.fft(r, norm=norm),
                   xn, n, dtype, _nscale(norm, n, True))
            h = np.fft.rfft(r)
            got = F.fft_c2r(_ri(h, dtype), n=n, norm=norm).numpy()
            _check(got, np.fft.irfft(h, n=n, norm=norm), np.linalg.norm(h), n, dtype,
                   _nscale(norm, n, False) * 2)


def test_the_generic_butterflies_agree_with_numpy():
    from ember._C import fft as K
    K.force_generic(True)
    try:
        assert K.kernel_name() == "generic"
        for n in list(range(1, 40)) + [64, 243, 1000, 4096, 10007]:
            for dtype in (em.float32, em.float64):
                z = _rand(n, n).astype(np.complex64).astype(np.complex128)
                _check(_cpx(F.fft_c2c(_ri(z, dtype))), np.fft.fft(z), np.linalg.norm(z), n,
                       dtype)
                r = z.real
                _check(_cpx(F.fft_r2c(em.tensor(r.astype(NP_DT[dtype])))), np.fft.rfft(r),
                       np.linalg.norm(r), n, dtype)
                h = np.fft.rfft(r).astype(np.complex64).astype(np.complex128)
                _check(F.fft_c2r(_ri(h, dtype), n=n).numpy(), np.fft.irfft(h, n=n),
                       np.linalg.norm(h), n, dtype, 2 / n)
    finally:
        K.force_generic(False)


# ------------------------------------------------- large and awkward lengths

LARGE = [99991, 65537, 10007, 7919 * 11, 101 * 103, 211 * 223, 2 * 49999, 997 * 3 * 7,
         2 ** 16, 3 ** 10, 5 ** 6, 7 ** 5, 30030, 11 ** 4, 13 * 17 * 19 * 2, 61 * 64, 2 ** 17]


@pytest.mark.parametrize("n", LARGE)
def test_large_lengths_against_numpy(n):
    z = _rand(n, n)
    z32 = z.astype(np.complex64).astype(np.complex128)
    for dtype, zz in ((em.float64, z), (em.float32, z32)):
        xn = np.linalg.norm(zz)
        _check(_cpx(F.fft_c2c(_ri(zz, dtype))), np.fft.fft(zz), xn, n, dtype)
        _check(_cpx(F.fft_c2c(_ri(zz, dtype), forward=False)), np.fft.ifft(zz), xn, n, dtype,
               1 / n)
        r = zz.real
        _check(_cpx(F.fft_r2c(em.tensor(r.astype(NP_DT[dtype])))), np.fft.rfft(r),
               np.linalg.norm(r), n, dtype)
        h = np.fft.rfft(r)
        _check(F.fft_c2r(_ri(h, dtype), n=n).numpy(), r, np.linalg.norm(h), n, dtype, 2 / n)


@settings(max_examples=fewer_examples(4), deadline=None)
@given(st.integers(1, 100_000), st.integers(0, 2 ** 31))
def test_random_lengths_round_trip_and_match_numpy(n, seed):
    z = _rand(n, seed)
    x = _ri(z)
    y = F.fft_c2c(x, norm="ortho")
    _check(_cpx(y), np.fft.fft(z, norm="ortho"), np.linalg.norm(z), n, em.float64,
           1 / math.sqrt(n))
    back = F.fft_c2c(y, norm="ortho", forward=False)
    _check(_cpx(back), z, np.linalg.norm(z), n, em.float64, 1 / math.sqrt(n) * 4)
    r = em.tensor(z.real)
    rr = F.fft_c2r(F.fft_r2c(r), n=n)
    _check(rr.numpy(), z.real, np.linalg.norm(z.real), n, em.float64, 4)


@settings(max_examples=fewer_examples(2), deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.data())
def test_shapes_dims_lengths_norms_dtypes(shape, data):
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1), "dim")
    n = data.draw(st.none() | st.integers(1, 12), "n")
    norm = data.draw(st.sampled_from(NORMS), "norm")
    dtype = data.draw(st.sampled_from([em.float32, em.float64]), "dtype")
    transpose = data.draw(st.booleans(), "transposed") and nd > 1
    z = _rand(shape, nd * 100 + (n or 0)).astype(np.complex64).astype(np.complex128)
    x = _ri(z, dtype)
    if transpose:           # the same values through a transposed view
        x = _ri(z.swapaxes(0, -1).copy(), dtype).transpose(0, nd - 1)
    m = n or z.shape[d]
    xn = np.linalg.norm(z)
    _check(_cpx(F.fft_c2c(x, d, n, norm)), np.fft.fft(z, n, d, norm), xn, m, dtype,
           _nscale(norm, m, True), factor=12)
    _check(_cpx(F.fft_r2c(x.select(-1, 0), d, n, norm)), np.fft.rfft(z.real, n, d, norm), xn,
           m, dtype, _nscale(norm, m, True), factor=12)
    nn = n or 2 * (z.shape[d] - 1)
    if nn:
        _check(F.fft_c2r(x, d, n, norm).numpy(), np.fft.irfft(z, n, d, norm), xn * 2, nn,
               dtype, _nscale(norm, nn, False) * 2, factor=12)


# ------------------------------------------------------------------ layouts

@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_any_dim_of_strided_and_transposed_inputs(dtype):
    z = _rand((6, 7, 10), 3)
    if dtype is em.float32:
        z = z.astype(np.complex64).astype(np.complex128)
    base = _ri(z, dtype)
    views = {
        "contiguous": (base, z),
        "transposed": (base.transpose(0, 2), z.transpose(2, 1, 0)),
        "step-sliced": (base[::2, 1:, ::3], z[::2, 1:, ::3]),
        "permuted": (base.permute(1, 0, 2, 3), z.transpose(1, 0, 2)),
    }
    for _name, (t, zz) in views.items():
        for d in range(-3, 3):
            n = zz.shape[d]
            got = _cpx(F.fft_c2c(t, dim=d))
            _check(got, np.fft.fft(zz, axis=d), np.linalg.norm(zz), n, dtype, factor=20)
            rt = t.select(-1, 0)
            got = _cpx(F.fft_r2c(rt, dim=d))
            _check(got, np.fft.rfft(zz.real, axis=d), np.linalg.norm(zz), n, dtype, factor=20)
            got = F.fft_c2r(t, dim=d, n=2 * n - 1).numpy()
            _check(got, np.fft.irfft(zz, axis=d, n=2 * n - 1), np.linalg.norm(zz), n, dtype,
                   factor=20)


def test_n_pads_and_trims():
    z = _rand((3, 9), 4)
    x = _ri(z)
    for n in (1, 4, 9, 16, 31):
        np.testing.assert_allclose(_cpx(F.fft_c2c(x, n=n)), np.fft.fft(z, n=n), atol=1e-12)
        np.testing.assert_allclose(_cpx(F.fft_c2c(x, n=n, dim=0)), np.fft.fft(z, n=n, axis=0),
                                   atol=1e-12)
        np.testing.assert_allclose(_cpx(F.fft_r2c(x.select(-1, 0), n=n)),
                                   np.fft.rfft(z.real, n=n), atol=1e-12)
        np.testing.assert_allclose(F.fft_c2r(x, n=n).numpy(), np.fft.irfft(z, n=n), atol=1e-12)
    np.testing.assert_allclose(F.fft_c2r(x).numpy(), np.fft.irfft(z), atol=1e-12)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_strided_lines_with_adjacent_neighbours(dtype):
    """Lines along an outer dim whose neighbours are adjacent (the kernel gathers blocks of
    them), padded, trimmed and scaled, beside lines far apart."""
    z = _rand((20, 11, 13), 12)
    if dtype is em.float32:
        z = z.astype(np.complex64).astype(np.complex128)
    x = _ri(z, dtype)
    for d in (0, 1):
        for n in (7, z.shape[d], 24):
            for norm in ("backward", "ortho", "forward"):
                _check(_cpx(F.fft_c2c(x, dim=d, n=n, norm=norm)),
                       np.fft.fft(z, n=n, axis=d, norm=norm), np.linalg.norm(z), n, dtype,
                       _nscale(norm, n, True), factor=20)
    big = _rand((2, 4, 3), 13)
    t = _ri(np.broadcast_to(big, (2, 4, 3)).copy(), dtype)
    _check(_cpx(F.fft_c2c(t, dim=0)), np.fft.fft(big, axis=0), np.linalg.norm(big), 2, dtype)


def _generic(on):
    from ember._C import fft as K
    K.force_generic(on)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
@pytest.mark.parametrize("generic", [False, True])
def test_outer_dim_lines_batched_every_length_to_64(dtype, generic):
    """Lines along an outer dim whose neighbours are adjacent run B at a time through the
    batched passes (vector ones for B a multiple of the vector length, scalar ones for
    the rest): every length 1..64 (every radix, the generic odd one), with 1..9 and 33
    neighbours, both directions, through a strided view too."""
    _generic(generic)
    try:
        for n in range(1, 65):
            inner = (1, 2, 3, 4, 5, 8, 9, 33)[n % 8]
            z = _rand((n, 2, inner), 500 + n).astype(np.complex64).astype(np.complex128)
            x = _ri(z, dtype)
            xn = np.linalg.norm(z)
            for forward in (True, False):
                want = np.fft.fft(z, axis=0) if forward else np.fft.ifft(z, axis=0)
                _check(_cpx(F.fft_c2c(x, dim=0, forward=forward)), want, xn, n, dtype,
                       factor=12)
            if inner > 2:
                zs, xs = z[:, :, 1:], x[:, :, 1:]
                _check(_cpx(F.fft_c2c(xs, dim=0)), np.fft.fft(zs, axis=0),
                       np.linalg.norm(zs), n, dtype, factor=12)
    finally:
        _generic(False)


@settings(max_examples=fewer_examples(4), deadline=None)
@given(st.integers(1, 100_000), st.integers(1, 12), st.integers(0, 2 ** 31))
def test_outer_dim_lines_random_lengths_match_numpy(n, inner, seed):
    """Random lengths to 10^5 (Bluestein ones take the line-at-a-time path) along dim 0
    of [n, inner] and dim 1 of [2, n, inner]."""
    inner = max(1, min(inner, 400_000 // n))
    z = _rand((n, inner), seed)
    _check(_cpx(F.fft_c2c(_ri(z), dim=0)), np.fft.fft(z, axis=0), np.linalg.norm(z), n,
           em.float64, factor=12)
    z3 = np.stack([z, z[::-1]])
    _check(_cpx(F.fft_c2c(_ri(z3), dim=1, forward=False, norm="forward")),
           np.fft.ifft(z3, axis=1, norm="forward"), np.linalg.norm(z3), n, em.float64,
           factor=12)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_odd_length_real_lines_in_pairs(dtype):
    """r2c / c2r of odd n: primes run two lines per complex transform (odd and even batch
    counts: the last line alone), composites by real radix passes; every odd
    length to 65 and some large ones (Bluestein too), onesided or not, padded and
    trimmed, along an inner and an outer dim."""
    for n in list(range(1, 66, 2)) + [243, 1001, 10007, 99991]:
        for batch in (2, 3) if n < 100 else (3,):
            r = _rand((batch, n), 700 + n, cplx=False)
            if dtype is em.float32:
                r = r.astype(np.float32).astype(np.float64)
            x = em.tensor(r.astype(NP_DT[dtype]))
            rn = np.linalg.norm(r)
            _check(_cpx(F.fft_r2c(x)), np.fft.rfft(r), rn, n, dtype)
            _check(_cpx(F.fft_r2c(x, onesided=False)), np.fft.fft(r), rn, n, dtype)
            _check(_cpx(F.fft_r2c(x.t(), dim=0)), np.fft.rfft(r, axis=1).T, rn, n, dtype)
            if n > 2:
                _check(_cpx(F.fft_r2c(x, n=n - 2)), np.fft.rfft(r, n=n - 2), rn, n, dtype)
                _check(_cpx(F.fft_r2c(x, n=n + 2)), np.fft.rfft(r, n=n + 2), rn, n, dtype)
            h = np.fft.rfft(r)
            h = h + 0.5j * np.random.default_rng(n).standard_normal(h.shape)  # Im h[0] unused
            if dtype is em.float32:
                h = h.astype(np.complex64).astype(np.complex128)
            hn = np.linalg.norm(h)
            xh = _ri(h, dtype)
            for m in (n, n + 2, max(1, n - 2)):
                _check(F.fft_c2r(xh, n=m).numpy(), np.fft.irfft(h, n=m), hn, m, dtype,
                       2 / m)
            _check(F.fft_c2r(_ri(h.T.copy(), dtype), dim=0, n=n).numpy(),
                   np.fft.irfft(h, n=n).T, hn, n, dtype, 2 / n)


SPLIT = [3 ** 7, 5 ** 5, 7 ** 5, 3 ** 10, 3 * 5 * 7 * 11 * 13, 11 * 13 * 17, 13 ** 3, 3 * 10007,
         5 * 101 * 103, 4099]


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
@pytest.mark.parametrize("generic", [False, True])
def test_odd_composite_real_lines_by_real_passes(dtype, generic):
    """r2c / c2r of an odd composite n by real radix passes over halfcomplex spectra
    (P = 3, 5, 7 unrolled, the general 11, 13, 17; short spectra a few lines at a time,
    long ones a few frequencies at a time; 3^10: the float32 error still grows like
    log n), after a leaf of Bluestein factors (3 * 10007, 5 * 101 * 103: their lines in
    complex pairs, the last by a half Bluestein plan; 4099: that plan alone): a single
    line, strided, padded, every norm, onesided or not, the Hermitian transforms, both
    kernels."""
    from ember._C import fft as K
    K.force_generic(generic)
    try:
        for n in SPLIT:
            r = _rand(n, 900 + n, cplx=False)
            if dtype is em.float32:
                r = r.astype(np.float32).astype(np.float64)
            rn = np.linalg.norm(r)
            x = em.tensor(r.astype(NP_DT[dtype]))
            norm = NORMS[n % 4]
            _check(_cpx(F.fft_r2c(x, norm=norm)), np.fft.rfft(r, norm=norm), rn, n, dtype,
                   _nscale(norm, n, True))
            _check(_cpx(F.fft_r2c(x, onesided=False)), np.fft.fft(r), rn, n, dtype)
            w = em.tensor(np.stack([r, -r], 1).astype(NP_DT[dtype]))     # stride 2
            _check(_cpx(F.fft_r2c(w, dim=0)), np.fft.rfft(np.stack([r, -r], 1), axis=0), rn,
                   n, dtype)
            _check(_cpx(F.fft_r2c(x[: n - 4], n=n)), np.fft.rfft(r[: n - 4], n=n), rn, n,
                   dtype)
            h = np.fft.rfft(r) + 0.5j * np.eye(1, n // 2 + 1)[0]     # Im h[0] unused
            if dtype is em.float32:
                h = h.astype(np.complex64).astype(np.complex128)
            hn = np.linalg.norm(h)
            _check(F.fft_c2r(_ri(h, dtype), n=n, norm=norm).numpy(),
                   np.fft.irfft(h, n=n, norm=norm), hn, n, dtype, _nscale(norm, n, False) * 2)
            hs = _ri(np.stack([h, 2 * h], 1), dtype)                    # strided both ways
            _check(F.fft_c2r(hs, n=n, dim=0).numpy(), np.fft.irfft(np.stack([h, 2 * h], 1),
                   n=n, axis=0), 2 * hn, n, dtype, 2 / n)
            _check(F.fft_hfft(_ri(h, dtype), n=n).numpy(), np.fft.hfft(h, n=n), hn, n, dtype,
                   2)
            _check(_cpx(F.fft_ihfft(x)), np.fft.ihfft(r), rn, n, dtype, 1 / n)
            back = F.fft_c2r(F.fft_r2c(x), n=n).numpy()
            _check(back, r, rn, n, dtype, 2)
    finally:
        K.force_generic(False)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_odd_length_real_lines_of_unlike_norms_keep_their_own_accuracy(dtype):
    """Lines are paired only when their norms are within 8x and finite: a zero line beside
    a large one transforms to exact zeros, each line is within its own error bound, and
    an inf or NaN in one line does not reach the next."""
    n = 241                                  # a prime: paired lines
    r = _rand((5, n), 31, cplx=False)
    r[0] = 0
    r[2] *= 1e6
    r[4] *= 1e-6
    if dtype is em.float32:
        r = r.astype(np.float32).astype(np.float64)
    got = _cpx(F.fft_r2c(em.tensor(r.astype(NP_DT[dtype]))))
    want = np.fft.rfft(r)
    assert np.all(got[0] == 0)
    for i in range(1, 5):
        _check(got[i], want[i], np.linalg.norm(r[i]), n, dtype)
    back = F.fft_c2r(_ri(want, dtype), n=n).numpy()
    assert np.all(back[0] == 0)
    for i in range(1, 5):
        _check(back[i], r[i], np.linalg.norm(want[i]), n, dtype, 2 / n)
    bad = _rand((4, n), 32, cplx=False)
    bad[1, 5] = np.inf
    bad[3, 7] = np.nan
    got = _cpx(F.fft_r2c(em.tensor(bad.astype(NP_DT[dtype]))))
    for i in (0, 2):
        _check(got[i], np.fft.rfft(bad[i].astype(NP_DT[dtype]).astype(np.float64)),
               np.linalg.norm(bad[i]), n, dtype)


def test_several_dims_in_place_passes_leave_the_input_and_match_numpy():
    """fftn / rfftn / irfftn run their later passes in place on their own intermediate
    when nothing is recorded: the input is left as it was, results match NumPy and the
    recorded (out-of-place) path."""
    z = _rand((3, 16, 12, 5), 21)
    x = _ri(z)
    before = x.numpy().copy()
    dims = (1, 2, 0)
    got = F.fftn_c2c(x, dim=dims)
    np.testing.assert_array_equal(x.numpy(), before)
    np.testing.assert_allclose(_cpx(got), np.fft.fftn(z, axes=dims), atol=1e-10)
    np.testing.assert_allclose(_cpx(F.fftn_c2c(x, s=(16, 7, 3), dim=dims, forward=False)),
                               np.fft.ifftn(z, s=(16, 7, 3), axes=dims),
                               atol=1e-10)
    xg = _ri(z)
    xg.requires_grad_(True)
    np.testing.assert_allclose(F.fftn_c2c(xg, dim=dims).detach().numpy(), got.numpy(),
                               atol=1e-12)
    r = z.real
    np.testing.assert_allclose(_cpx(F.fftn_r2c(em.tensor(r), dim=(0, 1, 3))),
                               np.fft.rfftn(r, axes=(0, 1, 3)), atol=1e-10)
    h = np.fft.rfftn(r, axes=(1, 2))
    xh = _ri(h)
    hb = xh.numpy().copy()
    np.testing.assert_allclose(F.fftn_c2r(xh, dim=(0, 1, 2), s=(3, 16, 12)).numpy(),
                               np.fft.irfftn(h, axes=(0, 1, 2), s=(3, 16, 12)), atol=1e-10)
    np.testing.assert_array_equal(xh.numpy(), hb)


def test_batches_are_spread_over_threads_with_the_same_result():
    z = _rand((64, 300), 5)
    x = _ri(z)
    old = em.get_num_threads()
    try:
        em.set_num_threads(1)
        one = F.fft_c2c(x, dim=-1).numpy()
        em.set_num_threads(2)
        two = F.fft_c2c(x, dim=-1).numpy()
    finally:
        em.set_num_threads(old)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_blocked_and_paired_lines_do_not_depend_on_the_block_or_the_threads(dtype):
    """A line along an outer dim gives the same bits whichever block of neighbours it is
    transformed in (any count, padded to whole vectors) and with 1 or 2 threads; odd-n
    real lines are paired the same way with 1 or 2 threads."""
    z = _rand((240, 9), 40)
    x = _ri(z, dtype)
    whole = F.fft_c2c(x, dim=0).numpy()
    for w in range(1, 9):
        np.testing.assert_array_equal(F.fft_c2c(x[:, :w], dim=0).numpy(), whole[:, :w])
        np.testing.assert_array_equal(F.fft_c2c(x[:, 9 - w:].contiguous(), dim=0).numpy(),
                                      whole[:, 9 - w:])
    big = _ri(_rand((256, 300), 41), dtype)      # 300 lines: chunks of 127 on 2 threads
    r = em.tensor(_rand((301, 263), 42, cplx=False).astype(NP_DT[dtype]))  # grain 124
    old = em.get_num_threads()
    try:
        em.set_num_threads(1)
        one = F.fft_c2c(big, dim=0).numpy(), F.fft_r2c(r).numpy()
        em.set_num_threads(2)
        two = F.fft_c2c(big, dim=0).numpy(), F.fft_r2c(r).numpy()
    finally:
        em.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_integer_and_float16_inputs_compute_in_float():
    r = em.arange(8)
    np.testing.assert_allclose(_cpx(F.fft_r2c(r)), np.fft.rfft(np.arange(8.0)), atol=1e-5)
    assert F.fft_r2c(r).dtype is em.get_default_dtype()
    h = em.ones(6, dtype=em.float16)
    assert F.fft_r2c(h).dtype is em.float32


# ------------------------------------------------------------- several dims

@pytest.mark.parametrize("norm", NORMS)
def test_fftn_rfftn_irfftn_match_numpy(norm):
    z = _rand((4, 5, 6), 6)
    x = _ri(z)
    np.testing.assert_allclose(_cpx(F.fftn_c2c(x, norm=norm)), np.fft.fftn(z, norm=norm),
                               atol=1e-10)
    np.testing.assert_allclose(_cpx(F.fftn_c2c(x, norm=norm, forward=False)),
                               np.fft.ifftn(z, norm=norm), atol=1e-10)
    np.testing.assert_allclose(_cpx(F.fftn_c2c(x, s=(3, 8), norm=norm)),
                               np.fft.fftn(z, s=(3, 8), axes=(1, 2), norm=norm), atol=1e-10)
    np.testing.assert_allclose(_cpx(F.fftn_c2c(x, dim=(0, 2), norm=norm)),
                               np.fft.fftn(z, axes=(0, 2), norm=norm), atol=1e-10)
    r = z.real
    np.testing.assert_allclose(_cpx(F.fftn_r2c(em.tensor(r), norm=norm)),
                               np.fft.rfftn(r, norm=norm), atol=1e-10)
    np.testing.assert_allclose(_cpx(F.fftn_r2c(em.tensor(r), s=(4, 7), dim=(2, 0), norm=norm)),
                               np.fft.rfftn(r, s=(4, 7), axes=(2, 0), norm=norm), atol=1e-10)
    np.testing.assert_allclose(F.fftn_c2r(x, norm=norm).numpy(), np.fft.irfftn(z, norm=norm),
                               atol=1e-10)
    np.testing.assert_allclose(F.fftn_c2r(x, s=(3, 9), norm=norm).numpy(),
                               np.fft.irfftn(z, s=(3, 9), axes=(1, 2), norm=norm), atol=1e-10)
    np.testing.assert_allclose(F.fftn_c2c(x, s=(-1, 4), dim=(0, 1)).shape, (4, 4, 6, 2))


@pytest.mark.parametrize("norm", NORMS)
def test_hermitian_transforms_match_numpy(norm):
    z = _rand((3, 7), 7)
    x = _ri(z)
    for n in (None, 6, 13):
        np.testing.assert_allclose(F.fft_hfft(x, n=n, norm=norm).numpy(),
                                   np.fft.hfft(z, n=n, norm=norm), atol=1e-10)
        np.testing.assert_allclose(_cpx(F.fft_ihfft(x.select(-1, 0), n=n, norm=norm)),
                                   np.fft.ihfft(z.real, n=n, norm=norm), atol=1e-12)
    # the n-d forms: the last dim Hermitian, as irfftn / rfftn of the conjugate
    want = np.fft.irfftn(np.conj(z), norm=F._swap(F._norm_arg(norm, "t")))
    np.testing.assert_allclose(F.fftn_hfft(x, norm=norm).numpy(), want, atol=1e-10)
    want = np.conj(np.fft.rfftn(z.real, norm=F._swap(F._norm_arg(norm, "t"))))
    np.testing.assert_allclose(_cpx(F.fftn_ihfft(x.select(-1, 0), norm=norm)), want, atol=1e-10)


# ---------------------------------------------------------------- derivatives

def _leaf(shape, seed):
    return em.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=em.float64,
                     requires_grad=True)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_c2c_gradcheck(norm):
    for n, m in ((None, 5), (8, 5), (3, 5)):
        x = _leaf((2, m, 2), 1)
        assert gradcheck(lambda t: F.fft_c2c(t, dim=1, n=n, norm=norm), (x,))
        assert gradcheck(lambda t: F.fft_c2c(t, dim=0, n=n, norm=norm, forward=False), (x,))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_r2c_gradcheck(norm):
    for n, m in ((None, 6), (None, 7), (9, 6), (4, 7)):
        x = _leaf((3, m), 2)
        assert gradcheck(lambda t: F.fft_r2c(t, n=n, norm=norm), (x,))
        assert gradcheck(lambda t: F.fft_r2c(t, dim=0, n=n, norm=norm, onesided=False), (x,))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_c2r_gradcheck(norm):
    for n, m in ((None, 4), (7, 4), (6, 4), (3, 4), (12, 4)):
        x = _leaf((2, m, 2), 3)
        assert gradcheck(lambda t: F.fft_c2r(t, n=n, norm=norm), (x,))


def test_multi_dim_gradcheck_and_double_backward():
    x = _leaf((3, 4, 2), 4)
    assert gradcheck(lambda t: F.fftn_c2c(t, s=(5, 3)), (x,))
    assert gradcheck(lambda t: F.fftn_c2r(t, s=(3, 5)), (x,))
    r = _leaf((3, 5), 5)
    assert gradcheck(lambda t: F.fftn_r2c(t, norm="ortho"), (r,))
    assert gradcheck(lambda t: F.fft_hfft(t, n=6), (x,))
    from ember.autograd import gradgradcheck
    assert gradgradcheck(lambda t: F.fft_c2r(F.fft_r2c(t * t)), (r,))


# ------------------------------------------------------- frequencies, shifts

def test_fftfreq_rfftfreq_fftshift_ifftshift():
    assert F.fftfreq(0).shape == (0,) and np.isnan(F.rfftfreq(0).numpy()).all()
    for n in range(1, 12):
        for d in (1.0, 0.25):
            np.testing.assert_allclose(F.fftfreq(n, d, dtype=em.float64).numpy(),
                                       np.fft.fftfreq(n, d))
            np.testing.assert_allclose(F.rfftfreq(n, d, dtype=em.float64).numpy(),
                                       np.fft.rfftfreq(n, d))
    assert F.fftfreq(5).dtype is em.get_default_dtype()
    a = np.arange(4 * 7 * 5.0).reshape(4, 7, 5)
    t = em.tensor(a)
    for dim in (None, 0, -1, (0, 2), [1]):
        axes = dim if dim is None or not isinstance(dim, list) else tuple(dim)
        np.testing.assert_array_equal(F.fftshift(t, dim).numpy(), np.fft.fftshift(a, axes))
        np.testing.assert_array_equal(F.ifftshift(t, dim).numpy(), np.fft.ifftshift(a, axes))
        np.testing.assert_array_equal(F.ifftshift(F.fftshift(t, dim), dim).numpy(), a)


# --------------------------------------------------------------------- windows

def _sym_or_periodic(fn, L, periodic):
    if L == 0:
        return np.zeros(0)
    if L == 1:
        return np.ones(1)
    return fn(L + 1)[:-1] if periodic else fn(L)


@pytest.mark.parametrize("L", [0, 1, 2, 3, 8, 17, 64])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_their_formulas(L, periodic):
    def np_hamming(a, b):
        return lambda N: a - b * np.cos(2 * np.pi * np.arange(N) / (N - 1))
    cases = [
        (em.hann_window(L, periodic, dtype=em.float64), np.hanning),
        (em.hamming_window(L, periodic, dtype=em.float64), np.hamming),
        (em.hamming_window(L, periodic, 0.5, 0.4, dtype=em.float64), np_hamming(0.5, 0.4)),
        (em.blackman_window(L, periodic, dtype=em.float64), np.blackman),
        (em.bartlett_window(L, periodic, dtype=em.float64), np.bartlett),
        (em.kaiser_window(L, periodic, dtype=em.float64), lambda N: np.kaiser(N, 12.0)),
        (em.kaiser_window(L, periodic, 3.5, dtype=em.float64), lambda N: np.kaiser(N, 3.5)),
    ]
    for got, fn in cases:
        want = _sym_or_periodic(fn, L, periodic)
        assert got.shape == (L,)
        np.testing.assert_allclose(got.numpy(), want, atol=1e-13, rtol=1e-12)


def test_window_dtypes_devices_and_errors():
    assert em.hann_window(4).dtype is em.get_default_dtype()
    assert em.hann_window(4, dtype=em.float64).dtype is em.float64
    w = em.hann_window(4, requires_grad=True)
    assert w.requires_grad
    k = em.kaiser_window(50, False, beta=600.0, dtype=em.float64).numpy()
    np.testing.assert_allclose(k, np.kaiser(50, 600.0), rtol=1e-11, atol=1e-300)
    with pytest.raises(RuntimeError, match="hann_window requires non-negative"):
        em.hann_window(-1)
    with pytest.raises(ValueError, match="floating point"):
        em.hamming_window(4, dtype=em.int64)
    with pytest.raises(TypeError, match="window_length"):
        em.blackman_window(2.5)


# -------------------------------------------------------------- the plan cache

def test_the_plan_cache_is_bounded_and_thread_safe():
    from ember._C import fft as K
    old = K.plan_cache_capacity()
    try:
        K.set_plan_cache_capacity(5)
        for n in range(100, 130):
            F.fft_c2c(_ri(_rand(n, n)))
        assert K.plan_cache_size() <= 5
        K.clear_plan_cache()
        assert K.plan_cache_size() == 0
        lengths = [97, 128, 1000, 4099, 360, 97 * 101]
        data = {n: _rand((4, n), n) for n in lengths}
        errors = []

        def work(i):
            for j in range(12):
                n = lengths[(i + j) % len(lengths)]
                got = _cpx(F.fft_c2c(_ri(data[n])))
                if np.max(np.abs(got - np.fft.fft(data[n]))) > 1e-8 * n:
                    errors.append(n)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and K.plan_cache_size() <= 5
    finally:
        K.set_plan_cache_capacity(old)
    with pytest.raises(ValueError, match="capacity"):
        K.set_plan_cache_capacity(-1)


# ------------------------------------------------------------------ bad input

def test_bad_input_names_the_op_and_the_value():
    x = em.zeros(4, 2)
    with pytest.raises(RuntimeError, match=r'fft: Invalid normalization mode: "bogus"'):
        F.fft_c2c(x, norm="bogus")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        F.fft_c2c(x, n=0)
    with pytest.raises(RuntimeError, match=r"irfft: Invalid number of data points \(0\)"):
        F.fft_c2r(em.zeros(1, 2))
    with pytest.raises(IndexError):
        F.fft_c2c(x, dim=1)
    with pytest.raises(ValueError, match=r"\(re, im\)"):
        F.fft_c2c(em.zeros(4, 3))
    with pytest.raises(TypeError, match="input must be a Tensor"):
        F.fft_r2c([1.0, 2.0])
    with pytest.raises(TypeError, match="n must be an int"):
        F.fft_r2c(em.zeros(4), n=2.5)
    with pytest.raises(ValueError, match="same length"):
        F.fftn_c2c(em.zeros(2, 3, 2), s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="unique"):
        F.fftn_c2c(em.zeros(2, 3, 2), dim=(0, 0))


# ----------------------------------------------------- stft / istft (real layer)

def _np_stft(x, n_fft, hop, window, center, pad_mode, normalized, onesided):
    """The reference: frames of the padded signal, windowed, DFT'd (NumPy)."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)],
                   mode={"reflect": "reflect", "constant": "constant", "replicate": "edge",
                         "circular": "wrap"}[pad_mode])
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., f * hop:f * hop + n_fft] for f in range(n_frames)], -2)
    y = (np.fft.rfft if onesided else np.fft.fft)(frames * window, axis=-1,
                                                 norm="ortho" if normalized else None)
    return np.swapaxes(y, -1, -2)


@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate", "circular"])
@pytest.mark.parametrize("normalized", [False, True])
def test_stft_matches_a_numpy_reference(pad_mode, normalized):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 50))
    for n_fft, hop, win in ((16, 4, 16), (16, 5, 10), (9, 3, 9)):
        w = np.hanning(win + 2)[1:-1]
        left = (n_fft - win) // 2
        wp = np.pad(w, (left, n_fft - win - left))
        for onesided in (True, False):
            got = F.stft_ri(em.tensor(x), n_fft, hop, win, em.tensor(w), True, pad_mode,
                            normalized, onesided)
            want = _np_stft(x, n_fft, hop, wp, True, pad_mode, normalized, onesided)
            np.testing.assert_allclose(_cpx(got), want, atol=1e-12)
        got = F.stft_ri(em.tensor(x[0]), n_fft, hop, center=False)   # 1-D, no window
        want = _np_stft(x[0], n_fft, hop // 1 if hop else n_fft // 4, np.ones(n_fft), False,
                        pad_mode, False, True)
        np.testing.assert_allclose(_cpx(got), want, atol=1e-12)
    z = _rand((40,), 9)
    got = F.stft_ri(_ri(z), 8, 2, x_complex=True, pad_mode=pad_mode)
    np.testing.assert_allclose(_cpx(got), _np_stft(z, 8, 2, np.ones(8), True, pad_mode, False,
                                                   False), atol=1e-12)


def test_istft_inverts_stft():
    rng = np.random.default_rng(10)
    x = em.tensor(rng.standard_normal((3, 64)))
    for n_fft, hop, center in ((16, 4, True), (32, 8, True), (16, 4, False)):
        # without centring the ends are covered by one frame: a window nonzero there
        w = (em.hann_window if center else em.hamming_window)(n_fft, dtype=em.float64)
        y = F.stft_ri(x, n_fft, hop, window=w, center=center)
        back = F.istft_ri(y, n_fft, hop, window=w, center=center, length=64)
        np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-12)
    y = F.stft_ri(x, 16, 4, window=em.hann_window(16, dtype=em.float64), onesided=False)
    back = F.istft_ri(y, 16, 4, window=em.hann_window(16, dtype=em.float64), length=64)
    np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-12)
    # length past the frames' end: zeros after them (the centred frames end at 72)
    back = F.istft_ri(y, 16, 4, window=em.hann_window(16, dtype=em.float64), length=80,
                      return_complex=True)
    assert back.shape == (3, 80, 2)
    np.testing.assert_allclose(_cpx(back)[:, :64], x.numpy(), atol=1e-12)
    assert np.all(_cpx(back)[:, 72:] == 0) and np.any(_cpx(back)[:, 64:72] != 0)


def test_stft_gradcheck_and_errors():
    x = _leaf((20,), 11)
    w = em.hann_window(8, dtype=em.float64)
    assert gradcheck(lambda t: F.stft_ri(t, 8, 2, window=w), (x,))
    y = _leaf((5, 7, 2), 12)
    assert gradcheck(lambda t: F.istft_ri(t, 8, 2, window=w), (y,))
    with pytest.raises(RuntimeError, match="n_fft"):
        F.stft_ri(em.zeros(10), 32, center=False)
    with pytest.raises(RuntimeError, match="reflect padding"):
        F.stft_ri(em.zeros(4), 16)
    with pytest.raises(RuntimeError, match="win_length"):
        F.stft_ri(em.zeros(40), 8, window=em.ones(5))
    with pytest.raises(RuntimeError, match="overlap add"):
        F.istft_ri(em.zeros(5, 4, 2), 8, 8, window=em.hann_window(8, periodic=False),
                   center=False)
    with pytest.raises(RuntimeError, match="return_complex parameter"):
        em.stft(em.zeros(40), 8)
    with pytest.raises(TypeError, match="stft: window must be a Tensor"):
        em.zeros(40).stft(8, window=2)
    with pytest.raises(TypeError, match="kaiser_window: beta must be a number"):
        em.kaiser_window(8, beta="x")


# ------------------------------------------------------------- every device

DEVICE_LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 17, 30, 64, 97, 120, 243, 256, 1000, 1009]


@pytest.mark.parametrize("dtype", [em.float32, em.float64])
def test_transforms_on_every_device(device, dtype):
    if dtype is em.float64 and device.type != "cpu":
        from ember._C import core
        if not core.backend_for(device).has_fp64(device):
            pytest.skip(f"no float64 on {device}")
    for n in DEVICE_LENGTHS:
        z = _rand((3, n), n).astype(np.complex64).astype(np.complex128)
        x = _ri(z, dtype, device)
        xn = np.linalg.norm(z[0]) * 2
        for norm in ("backward", "ortho"):
            got = F.fft_c2c(x, norm=norm)
            assert got.device == x.device
            _check(_cpx(got), np.fft.fft(z, norm=norm), xn, n, dtype, _nscale(norm, n, True),
                   factor=12)
            _check(_cpx(F.fft_c2c(x, norm=norm, forward=False)), np.fft.ifft(z, norm=norm), xn,
                   n, dtype, _nscale(norm, n, False), factor=12)
        r = x.select(-1, 0)
        _check(_cpx(F.fft_r2c(r)), np.fft.rfft(z.real), xn, n, dtype, factor=12)
        _check(_cpx(F.fft_r2c(r, onesided=False, n=n + 3)), np.fft.fft(z.real, n=n + 3), xn,
               n + 3, dtype, factor=12)
        _check(F.fft_c2r(x, n=n).cpu().numpy(), np.fft.irfft(z, n=n), xn * 2, n, dtype,
               factor=12)
    # strided: the transformed dim in the middle of a transposed view, padded
    z = _rand((5, 6, 7), 1)
    t = _ri(z, dtype, device).transpose(0, 2)
    _check(_cpx(F.fft_c2c(t, dim=1, n=9)), np.fft.fft(z.transpose(2, 1, 0), n=9, axis=1),
           np.linalg.norm(z), 9, dtype, factor=30)
    _check(F.fft_c2r(t, dim=0, n=10).cpu().numpy(),
           np.fft.irfft(z.transpose(2, 1, 0), n=10, axis=0), np.linalg.norm(z), 10, dtype,
           factor=30)
