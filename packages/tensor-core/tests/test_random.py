"""Random numbers: Philox4x32-10 known answers, the documented word layout that lets
other devices reproduce every element, generator state, statistics, bad arguments.

Statistical tests use fixed seeds, so they are deterministic; their tolerances are
several standard errors wide.
"""
from __future__ import annotations

import bisect
import copy
import math
import pickle
import threading

import numpy as np
import pytest

import ember as em
from ember._C import random as philox
from ember.backends.base import Backend

FLOATS = [em.float16, em.float32, em.float64]
INTS = [em.uint8, em.int8, em.int16, em.int32, em.int64]


def np_of(t):
    return np.asarray(t.tolist(), dtype=np.float64)


# --------------------------------------------------------------- Philox known answers

@pytest.mark.parametrize("ctr, key, expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
])
def test_philox_known_answers(ctr, key, expected):
    # the test vectors of Random123 (kat_vectors, philox4x32_10)
    assert philox.philox4x32_10(ctr, key) == expected


def words(seed, offset, n):
    """The stream as the kernels' header defines it, from single Philox blocks."""
    out = []
    for p in range(offset, offset + n):
        b = p // 4
        block = philox.philox4x32_10((b & 0xffffffff, b >> 32, 0, 0),
                                     (seed & 0xffffffff, seed >> 32))
        out.append(block[p % 4])
    return out


@pytest.mark.parametrize("seed, offset", [(0, 0), (42, 3), (2 ** 40 + 7, 1001),
                                          (2 ** 64 - 1, 4 * 2 ** 32 - 5)])
def test_stream_is_philox_blocks(seed, offset):
    assert philox.stream_words(seed, offset, 11) == words(seed, offset, 11)


# ------------------------------------------------- the word layout, element by element

def generator_at(seed, offset=0):
    return em.Generator().manual_seed(seed).set_offset(offset)


def u24(w):
    return (w >> 8) * 2.0 ** -24


def u53(hi, lo):
    return ((hi << 21) | (lo >> 11)) * 2.0 ** -53


@pytest.mark.parametrize("dtype", [em.float16, em.float32])
def test_uniform_layout_single(dtype):
    w = words(7, 5, 9)
    got = em.rand(9, dtype=dtype, generator=generator_at(7, 5)).tolist()
    expected = np.array([u24(x) for x in w], dtype=np.float32).astype(
        np.float16 if dtype is em.float16 else np.float32)
    assert got == expected.tolist()


def test_uniform_layout_double():
    w = words(7, 5, 18)
    got = em.rand(9, dtype=em.float64, generator=generator_at(7, 5)).tolist()
    assert got == [u53(w[2 * i], w[2 * i + 1]) for i in range(9)]


def test_uniform_range_layout():
    w = words(3, 0, 4)
    got = em.empty(4).uniform_(-2.0, 6.0, generator=generator_at(3)).tolist()
    expected = np.float32(-2.0) + np.float32(8.0) * np.array([u24(x) for x in w], np.float32)
    assert got == expected.tolist()


def test_normal_layout():
    w = words(11, 2, 8)
    got32 = em.randn(4, generator=generator_at(11, 2)).tolist()
    got64 = em.randn(2, dtype=em.float64, generator=generator_at(11, 2)).tolist()
    for i in range(4):                     # float32: 2 words, computed in float
        u1, u2 = 1.0 - u24(w[2 * i]), u24(w[2 * i + 1])
        z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        assert got32[i] == pytest.approx(z, rel=1e-5, abs=1e-6)
    for i in range(2):                     # float64: 4 words
        u1 = 1.0 - u53(w[4 * i], w[4 * i + 1])
        u2 = u53(w[4 * i + 2], w[4 * i + 3])
        z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        assert got64[i] == pytest.approx(z, rel=1e-12, abs=1e-12)


def test_integer_layout():
    w = words(5, 1, 6)
    got = em.randint(-3, 10, (6,), generator=generator_at(5, 1)).tolist()
    assert got == [-3 + ((x * 13) >> 32) for x in w]
    # a range wider than 2**32 takes two words per element
    span = 2 ** 40
    w = words(5, 1, 6)
    got = em.randint(0, span, (3,), generator=generator_at(5, 1)).tolist()
    assert got == [((((w[2 * i] << 32) | w[2 * i + 1]) * span) >> 64) for i in range(3)]


def test_randperm_layout():
    n = 10
    w = words(9, 4, n - 1)
    perm = list(range(n))
    for k, i in enumerate(range(n - 1, 0, -1)):     # Fisher-Yates from the end
        j = (w[k] * (i + 1)) >> 32
        perm[i], perm[j] = perm[j], perm[i]
    assert em.randperm(n, generator=generator_at(9, 4)).tolist() == perm


def test_bernoulli_layout():
    p = em.tensor([0.1, 0.5, 0.9, 0.5, 0.0, 1.0])
    w = words(4, 0, 6)
    u = np.array([u24(x) for x in w], np.float32)
    expected = (u < np.asarray(p.tolist(), np.float32)).astype(np.float32)
    assert em.bernoulli(p, generator=generator_at(4)).tolist() == expected.tolist()


def test_exponential_layout():
    w = words(6, 0, 5)
    got = em.empty(5).exponential_(2.0, generator=generator_at(6)).tolist()
    expected = [np.float32(-math.log1p(-float(np.float32(u24(x)))) / 2.0) for x in w]
    assert got == [float(e) for e in expected]


def test_multinomial_layout_with_replacement():
    probs = [0.2, 0.0, 0.5, 0.3]
    cdf = list(np.cumsum(probs))
    w = words(8, 0, 10)
    expected = [bisect.bisect_right(cdf, u53(w[2 * j], w[2 * j + 1]) * cdf[-1])
                for j in range(5)]
    got = em.multinomial(em.tensor(probs, dtype=em.float64), 5, True,
                         generator=generator_at(8)).tolist()
    assert got == expected


def test_multinomial_layout_without_replacement():
    probs = [0.2, 0.0, 0.5, 0.3]
    w = words(8, 0, 8)
    keys = [(math.inf if p == 0 else -math.log1p(-u53(w[2 * c], w[2 * c + 1])) / p, c)
            for c, p in enumerate(probs)]
    expected = [c for _, c in sorted(keys)][:3]
    got = em.multinomial(em.tensor(probs, dtype=em.float64), 3,
                         generator=generator_at(8)).tolist()
    assert got == expected


def test_elements_follow_logical_order_for_any_layout():
    a = em.empty(3, 4).T.uniform_(generator=generator_at(1))      # a (4, 3) view
    b = em.empty(4, 3).uniform_(generator=generator_at(1))
    assert a.tolist() == b.tolist()


# -------------------------------------------------------------------- generator state

@pytest.mark.parametrize("dtype, n, used", [
    (em.float32, 5, 5), (em.float16, 5, 5), (em.float64, 5, 10)])
def test_offset_advances_by_the_words_used(dtype, n, used):
    g = em.Generator().manual_seed(1)
    em.rand(n, dtype=dtype, generator=g)
    assert g.get_offset() == used
    em.randn(n, dtype=dtype, generator=g)
    assert g.get_offset() == used + 2 * used
    g.manual_seed(1)
    em.randint(0, 5, (n,), generator=g)
    em.randperm(n, generator=g)
    assert g.get_offset() == n + (n - 1)


def test_consecutive_calls_continue_the_stream():
    g = em.Generator().manual_seed(123)
    a = em.rand(3, generator=g).tolist() + em.rand(4, generator=g).tolist()
    b = em.rand(7, generator=g.manual_seed(123)).tolist()
    assert a == b


def test_same_seed_same_numbers():
    for fn in (lambda: em.rand(4, 5), lambda: em.randn(7, dtype=em.float64),
               lambda: em.randint(0, 100, (9,)), lambda: em.randperm(20),
               lambda: em.bernoulli(em.full((10,), 0.3)),
               lambda: em.multinomial(em.tensor([1., 2., 3.]), 2),
               lambda: em.normal(2.0, 3.0, (5,)), lambda: em.empty(6).exponential_()):
        em.manual_seed(2024)
        a = fn().tolist()
        em.manual_seed(2024)
        assert fn().tolist() == a


def test_different_seeds_and_offsets_give_independent_streams():
    a = np_of(em.rand(20000, generator=em.Generator().manual_seed(1)))
    b = np_of(em.rand(20000, generator=em.Generator().manual_seed(2)))
    c = np_of(em.rand(20000, generator=generator_at(1, 10 ** 6)))
    d = np_of(em.rand(20000, generator=generator_at(1, 1)))       # shifted by one word
    for x, y in [(a, b), (a, c), (a, d)]:
        assert not np.array_equal(x, y)
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.03
    assert np.array_equal(a[1:], d[:-1])


def test_default_generator_and_global_functions():
    g = em.manual_seed(77)
    assert g is em.default_generator
    assert em.initial_seed() == 77
    state = em.get_rng_state()
    assert state.dtype == em.uint8 and tuple(state.shape) == (16,)
    a = em.rand(5).tolist()
    em.set_rng_state(state)
    assert em.rand(5).tolist() == a
    assert em.default_generator.get_offset() == 5


def test_generator_is_independent_of_the_default():
    em.manual_seed(5)
    a = em.rand(3).tolist()
    em.manual_seed(5)
    em.rand(3, generator=em.Generator().manual_seed(99))
    assert em.rand(3).tolist() == a


def test_get_state_set_state():
    g = em.Generator().manual_seed(2 ** 63 + 5)
    em.rand(7, generator=g)
    state = g.get_state()
    assert bytes(state.tolist()) == (2 ** 63 + 5).to_bytes(8, "little") + (7).to_bytes(8, "little")
    a = em.randn(4, generator=g).tolist()
    h = em.Generator().set_state(state)
    assert h.initial_seed() == 2 ** 63 + 5
    assert em.randn(4, generator=h).tolist() == a
    with pytest.raises(ValueError, match="set_state"):
        g.set_state(em.zeros(16))
    with pytest.raises(ValueError, match="set_state"):
        g.set_state(em.zeros(8, dtype=em.uint8))
    with pytest.raises(TypeError, match="set_state"):
        g.set_state(b"0" * 16)


def test_seeds():
    g = em.Generator()
    assert g.initial_seed() == 67280421310721        # PyTorch's default seed
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.device == em.device("cpu")
    s1, s2 = g.seed(), em.Generator().seed()
    assert s1 != s2 and 0 <= s1 < 2 ** 64 and g.initial_seed() == s1
    s = em.seed()
    assert em.initial_seed() == s
    with pytest.raises(ValueError, match="manual_seed"):
        em.manual_seed(2 ** 64)
    with pytest.raises(TypeError, match="manual_seed"):
        em.manual_seed(1.5)
    assert em.manual_seed(np.int64(3)).initial_seed() == 3


def test_generator_pickles_and_copies():
    g = em.Generator().manual_seed(31)
    em.rand(3, generator=g)
    for h in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert isinstance(h, em.Generator) and h.get_offset() == 3
        assert em.rand(4, generator=h).tolist() == em.rand(4, generator=copy.deepcopy(g)).tolist()
    assert "seed=31" in repr(g) and "offset=3" in repr(g)


def test_threads_never_share_words():
    g = em.Generator().manual_seed(8)
    chunks = []

    def work():
        for _ in range(50):
            chunks.append(tuple(em.rand(64, generator=g).tolist()))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream = em.rand(8 * 50 * 64, generator=g.manual_seed(8)).tolist()
    expected = {tuple(stream[i:i + 64]) for i in range(0, len(stream), 64)}
    assert set(chunks) == expected and len(chunks) == 400


# ------------------------------------------------------------------------- factories

def test_factory_arguments():
    assert tuple(em.rand(2, 3).shape) == (2, 3)
    assert tuple(em.rand((2, 3)).shape) == (2, 3)
    assert tuple(em.rand([4]).shape) == (4,)
    assert tuple(em.randn(size=(1, 2)).shape) == (1, 2)
    assert tuple(em.rand(em.Size([3, 1])).shape) == (3, 1)
    assert em.rand(()).ndim == 0
    assert em.rand(0, 3).numel() == 0
    assert em.rand(2).dtype == em.float32
    assert em.randn(2, dtype=em.float64).dtype == em.float64
    assert em.randint(5, (3,)).dtype == em.int64
    assert em.randint(0, 5, (3,), dtype=em.uint8).dtype == em.uint8
    assert em.randint(low=2, high=5, size=(3,)).min().item() >= 2
    assert em.randperm(5, dtype=em.int32).dtype == em.int32
    assert sorted(em.randperm(5, dtype=em.float32).tolist()) == [0., 1., 2., 3., 4.]
    assert em.randperm(0).tolist() == [] and em.randperm(1).tolist() == [0]
    assert em.normal(0.0, 1.0, (3,), dtype=em.float64).dtype == em.float64
    x = em.rand(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert em.randn(2, device="cpu").device == em.device("cpu")


def test_like_factories():
    x = em.zeros(2, 3, dtype=em.float64)
    for t in (em.rand_like(x), em.randn_like(x)):
        assert tuple(t.shape) == (2, 3) and t.dtype == em.float64
    assert em.rand_like(x, dtype=em.float16).dtype == em.float16
    r = em.randint_like(x, 10)
    assert r.dtype == em.float64 and 0 <= r.min().item() and r.max().item() < 10
    r = em.randint_like(em.zeros(50, dtype=em.int32), 3, 6)
    assert r.dtype == em.int32 and set(r.tolist()) == {3, 4, 5}
    g1, g2 = em.Generator().manual_seed(4), em.Generator().manual_seed(4)
    assert em.rand_like(x, generator=g1).tolist() == em.rand(2, 3, dtype=em.float64,
                                                             generator=g2).tolist()


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_stays_below_to(dtype):
    # float16 rounds 1 - 2**-12 and above up to 1: those are clamped below `to`
    g = em.Generator().manual_seed(1)
    v = np_of(em.rand(50000, dtype=dtype, generator=g))
    assert v.min() >= 0 and v.max() < 1
    v = np_of(em.empty(50000, dtype=dtype).uniform_(1.0, 2.0, generator=g))
    assert v.min() >= 1 and v.max() < 2 if dtype is not em.float32 else v.max() <= 2
    v = np_of(em.empty(5, dtype=dtype).uniform_(3.0, 3.0, generator=g))
    assert np.all(v == 3.0)


def test_float16_uniform_is_the_rounded_float32_value():
    a = em.rand(1000, dtype=em.float16, generator=em.Generator().manual_seed(4))
    b = em.rand(1000, dtype=em.float32, generator=em.Generator().manual_seed(4))
    expected = np.minimum(np.asarray(b.tolist(), np.float32), np.float32(1 - 2 ** -11))
    assert a.tolist() == expected.astype(np.float16).tolist()


@pytest.mark.parametrize("dtype", INTS + [em.float32, em.float64])
def test_randint_stays_in_range(dtype):
    v = em.randint(3, 9, (5000,), dtype=dtype, generator=em.Generator().manual_seed(2))
    assert set(v.tolist()) == set(range(3, 9)) if dtype.kind == "int" else \
        set(v.tolist()) == {float(i) for i in range(3, 9)}


def test_randint_extreme_ranges():
    v = em.randint(-2 ** 63, 2 ** 63 - 1, (1000,), generator=em.Generator().manual_seed(3))
    vals = v.tolist()
    assert min(vals) < -2 ** 61 and max(vals) > 2 ** 61
    assert em.randint(0, 1, (4,)).tolist() == [0, 0, 0, 0]


def test_random_():
    g = em.Generator().manual_seed(9)
    assert set(em.empty(4000, dtype=em.uint8).random_(generator=g).tolist()) == set(range(256))
    assert set(em.empty(100, dtype=em.bool).random_(generator=g).tolist()) == {False, True}
    assert set(em.empty(200, dtype=em.int8).random_(-3, 3, generator=g).tolist()) == \
        set(range(-3, 3))
    assert set(em.empty(200).random_(4, generator=g).tolist()) == {0., 1., 2., 3.}
    assert set(em.empty(200).random_(to=2, generator=g).tolist()) == {0., 1.}
    assert set(em.empty(300, dtype=em.int16).random_(**{"from": 5}, to=8,
                                                        generator=g).tolist()) == {5, 6, 7}
    big = np_of(em.empty(1000).random_(generator=g))       # [0, 2**24] for float32
    assert big.min() >= 0 and big.max() <= 2 ** 24 and big.max() > 2 ** 22
    assert np.all(big == np.round(big))
    i64 = em.empty(100, dtype=em.int64).random_(generator=g).tolist()
    assert min(i64) >= 0 and max(i64) > 2 ** 60


def test_inplace_fills_bump_the_version_and_return_self():
    x = em.empty(5)
    for fill in (lambda: x.uniform_(), lambda: x.normal_(), lambda: x.bernoulli_(),
                 lambda: x.random_(10), lambda: x.exponential_()):
        v = x._version
        assert fill() is x
        assert x._version > v


def test_inplace_on_views_writes_only_the_view():
    base = em.zeros(4, 6)
    view = base._view((4, 3), (6, 2), 0)         # base[:, ::2]
    view.uniform_(1.0, 2.0)
    a = np.asarray(base.tolist())
    assert np.all(a[:, ::2] >= 1.0) and np.all(a[:, 1::2] == 0.0)


def test_inplace_on_leaf_requiring_grad():
    x = em.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="uniform_: a leaf tensor that requires grad"):
        x.uniform_()
    with em.no_grad():
        x.normal_()
        x.uniform_(-1, 1)
    assert x.requires_grad and x.min().item() >= -1


def test_float16_fills():
    g = em.Generator().manual_seed(12)
    for t in (em.empty(1000, dtype=em.float16).uniform_(generator=g),
              em.empty(1000, dtype=em.float16).normal_(generator=g),
              em.empty(1000, dtype=em.float16).exponential_(generator=g),
              em.randn(1000, dtype=em.float16, generator=g)):
        assert t.dtype == em.float16 and np.isfinite(np_of(t)).all()


def test_normal_with_tensors_broadcasts():
    mean = em.tensor([0., 100., -100.])
    std = em.tensor([[1.], [0.]])
    r = em.normal(mean, std, generator=em.Generator().manual_seed(3))
    assert tuple(r.shape) == (2, 3) and r.dtype == em.float32
    v = np_of(r)
    assert np.all(v[1] == [0., 100., -100.])
    assert np.all(np.abs(v[0] - [0., 100., -100.]) < 6)
    r = em.normal(mean, 2.0)
    assert tuple(r.shape) == (3,)
    r = em.normal(1.0, em.ones(4, dtype=em.float64))
    assert r.dtype == em.float64 and tuple(r.shape) == (4,)
    # the same z as randn: mean + std * randn
    z = em.randn(3, generator=em.Generator().manual_seed(5)).tolist()
    r = em.normal(em.full((3,), 1.0), em.full((3,), 2.0),
                  generator=em.Generator().manual_seed(5)).tolist()
    assert r == [np.float32(1 + np.float32(2 * np.float32(x))) for x in z]


def test_bernoulli_variants():
    g = em.Generator().manual_seed(1)
    p = em.tensor([[0., 1.], [1., 0.]], dtype=em.float64)
    r = em.bernoulli(p, generator=g)
    assert r.dtype == em.float64 and r.tolist() == [[0., 1.], [1., 0.]]
    assert p.bernoulli(generator=g).tolist() == [[0., 1.], [1., 0.]]
    r = em.bernoulli(em.zeros(1000, dtype=em.int32), 0.25, generator=g)
    assert r.dtype == em.int32 and 150 < sum(r.tolist()) < 350
    x = em.empty(2, 3, dtype=em.bool).bernoulli_(em.tensor([0., 1., 0.]), generator=g)
    assert x.tolist() == [[False, True, False]] * 2


def test_multinomial_shapes_and_rules():
    g = em.Generator().manual_seed(2)
    w = em.tensor([[1., 0., 0., 0.], [0., 0., 5., 5.]])
    r = em.multinomial(w, 2, replacement=True, generator=g)
    assert r.dtype == em.int64 and tuple(r.shape) == (2, 2)
    assert r.tolist()[0] == [0, 0] and set(r.tolist()[1]) <= {2, 3}
    r = (w + em.tensor([0., 1., 0., 0.])).multinomial(2, generator=g)   # no replacement
    assert sorted(r.tolist()[0]) == [0, 1] and sorted(r.tolist()[1]) == [2, 3]
    perm = em.multinomial(em.ones(50), 50, generator=g).tolist()
    assert sorted(perm) == list(range(50))
    assert em.multinomial(em.tensor([0., 3.], dtype=em.float16), 1).tolist() == [1]


# ---------------------------------------------------------------------------- statistics

def chi_square(counts, expected):
    return float(np.sum((np.asarray(counts) - expected) ** 2 / expected))


# chi-square critical values at p = 0.001 (tolerant: the seeds are fixed anyway)
CHI2_999 = {9: 27.88, 19: 43.82, 4: 18.47, 5: 20.52}


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_statistics(dtype):
    n = 200_000
    v = np_of(em.rand(n, dtype=dtype, generator=em.Generator().manual_seed(100)))
    assert abs(v.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(v.var() - 1 / 12) < 0.002
    counts, _ = np.histogram(v, bins=10, range=(0, 1))
    assert chi_square(counts, n / 10) < CHI2_999[9]


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_statistics(dtype):
    n = 200_000
    v = np_of(em.randn(n, dtype=dtype, generator=em.Generator().manual_seed(101)))
    assert abs(v.mean()) < 5 / math.sqrt(n)
    assert abs(v.var() - 1) < 0.02
    assert abs(np.mean(np.abs(v) < 1) - 0.6827) < 0.005
    # Kolmogorov-Smirnov distance to the normal CDF
    s = np.sort(v)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(s / math.sqrt(2)))
    ks = np.max(np.abs(cdf - np.arange(1, n + 1) / n))
    assert ks < 1.95 / math.sqrt(n) + (0.002 if dtype is em.float16 else 0)


def test_normal_mean_std():
    v = np_of(em.normal(3.0, 2.0, (100_000,), generator=em.Generator().manual_seed(5)))
    assert abs(v.mean() - 3.0) < 0.03 and abs(v.std() - 2.0) < 0.03
    v = np_of(em.empty(100_000, dtype=em.float64).normal_(-1.0, 0.5,
                                                         generator=em.Generator().manual_seed(6)))
    assert abs(v.mean() + 1.0) < 0.01 and abs(v.std() - 0.5) < 0.01


def test_randint_statistics():
    n = 100_000
    v = em.randint(0, 20, (n,), generator=em.Generator().manual_seed(7)).tolist()
    counts = np.bincount(v, minlength=20)
    assert chi_square(counts, n / 20) < CHI2_999[19]


def test_bernoulli_statistics():
    n = 100_000
    for p in (0.01, 0.3, 0.5, 0.97):
        v = np_of(em.bernoulli(em.full((n,), p), generator=em.Generator().manual_seed(8)))
        assert abs(v.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_exponential_statistics():
    n = 100_000
    v = np_of(em.empty(n, dtype=em.float64).exponential_(4.0,
                                                        generator=em.Generator().manual_seed(9)))
    assert v.min() >= 0
    assert abs(v.mean() - 0.25) < 5 * 0.25 / math.sqrt(n)
    assert abs(np.mean(v > 0.25) - math.exp(-1)) < 0.005


def test_multinomial_statistics():
    n = 50_000
    p = np.array([0.1, 0.2, 0.3, 0.4])
    draws = em.multinomial(em.tensor(p.tolist()), n, True,
                           generator=em.Generator().manual_seed(10)).tolist()
    assert chi_square(np.bincount(draws, minlength=4), n * p) < CHI2_999[4]
    # without replacement the first draw follows p too
    rows = em.multinomial(em.tensor([p.tolist()] * 20000), 2,
                          generator=em.Generator().manual_seed(11)).tolist()
    first = [r[0] for r in rows]
    assert chi_square(np.bincount(first, minlength=4), 20000 * p) < CHI2_999[4]
    assert all(a != b for a, b in rows)


def test_randperm_statistics():
    n, trials = 6, 12_000
    g = em.Generator().manual_seed(12)
    counts = np.zeros((n, n))
    for _ in range(trials):
        perm = em.randperm(n, generator=g).tolist()
        assert sorted(perm) == list(range(n))
        counts[np.arange(n), perm] += 1
    for row in counts:           # every value equally likely at every position
        assert chi_square(row, trials / n) < CHI2_999[5]


def test_large_fills_release_the_gil_and_agree():
    g = em.Generator().manual_seed(13)
    big = em.rand(300_000, generator=g)
    assert big.tolist()[-5:] == em.rand(300_000, generator=g.manual_seed(13)).tolist()[-5:]
    assert np.all(np.diff(np_of(em.randperm(200_000))) != 0)


# ------------------------------------------------------------------------ bad arguments

@pytest.mark.parametrize("call, match", [
    (lambda: em.randint(5, 5, (3,)), "randint: low must be less than high"),
    (lambda: em.randint(5, 2, (3,)), "randint: low must be less than high"),
    (lambda: em.randint(0, 300, (3,), dtype=em.uint8), "randint: the range"),
    (lambda: em.randint(-1, 3, (3,), dtype=em.bool), "randint: the range"),
    (lambda: em.rand(2, -1), "rand: negative dimension -1"),
    (lambda: em.randn(-3), "randn: negative dimension -3"),
    (lambda: em.randint(0, 3, (2, -2)), "randint: negative dimension -2"),
    (lambda: em.normal(0.0, 1.0, (-1,)), "normal: negative dimension"),
    (lambda: em.normal(0.0, -1.0, (2,)), "normal: std must be non-negative"),
    (lambda: em.normal(em.zeros(2), -em.ones(2)), "normal: std must be non-negative"),
    (lambda: em.empty(2).normal_(0, -2), "normal_: std must be non-negative"),
    (lambda: em.bernoulli(em.tensor([0.5, 1.5])), r"bernoulli: p must be in \[0, 1\]"),
    (lambda: em.bernoulli(em.tensor([-0.1])), r"bernoulli: p must be in \[0, 1\]"),
    (lambda: em.bernoulli(em.tensor([float("nan")])), r"bernoulli: p must be in \[0, 1\]"),
    (lambda: em.bernoulli(em.zeros(2), 2.0), r"bernoulli: p must be in \[0, 1\]"),
    (lambda: em.empty(2).bernoulli_(-0.5), r"bernoulli_: p must be in \[0, 1\]"),
    (lambda: em.empty(2).bernoulli_(em.tensor([0.5, 3.0])), r"bernoulli_: p must be in"),
    (lambda: em.randperm(-1), "randperm: n must be non-negative"),
    (lambda: em.randperm(3000, dtype=em.float16), "randperm: n=3000 is too large"),
    (lambda: em.empty(2).uniform_(1.0, 0.0), "uniform_: expected from <= to"),
    (lambda: em.empty(2).uniform_(0.0, float("inf")), "uniform_: from and to must be finite"),
    (lambda: em.empty(2).exponential_(0.0), "exponential_: lambd must be positive"),
    (lambda: em.empty(2).exponential_(-1.0), "exponential_: lambd must be positive"),
    (lambda: em.empty(2).random_(5, 5), "random_: low must be less than high"),
    (lambda: em.empty(2, dtype=em.uint8).random_(0, 257), "random_: the range"),
    (lambda: em.multinomial(em.tensor([1., 2.]), 0), "multinomial: num_samples must be"),
    (lambda: em.multinomial(em.tensor([1., 2.]), 3), "multinomial: cannot draw 3"),
    (lambda: em.multinomial(em.tensor([1., 0., 0.]), 2), "multinomial: cannot draw 2"),
    (lambda: em.multinomial(em.tensor([1., -2.]), 1), "multinomial: probabilities must be"),
    (lambda: em.multinomial(em.tensor([1., float("inf")]), 1), "multinomial: probabilities"),
    (lambda: em.multinomial(em.zeros(3), 1, True), "multinomial: row 0 .* sums to 0"),
    (lambda: em.multinomial(em.zeros(2, 2, 2), 1), "multinomial: expected a 1-d or 2-d"),
])
def test_bad_values_raise_value_error_naming_the_op(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: em.rand(3, dtype=em.int32), "rand: expected a floating point or complex dtype"),
    (lambda: em.randn(3, dtype=em.bool), "randn: expected a floating point or complex dtype"),
    (lambda: em.empty(3, dtype=em.int64).uniform_(), "uniform_: expected a floating point"),
    (lambda: em.empty(3, dtype=em.int64).normal_(), "normal_: expected a floating point"),
    (lambda: em.empty(3, dtype=em.int8).exponential_(), "exponential_: expected a floating"),
    (lambda: em.rand(2, generator=42), "rand: generator must be an ember.Generator"),
    (lambda: em.rand("a"), "rand: size must be ints"),
    (lambda: em.rand(2.5), "rand: size must be ints"),
    (lambda: em.multinomial(em.tensor([1, 2]), 1), "multinomial: expected floating point"),
    (lambda: em.bernoulli(em.tensor([1, 0])), "bernoulli: probabilities must be a floating"),
    (lambda: em.normal(0.0, 1.0), "normal: size is required"),
    (lambda: em.normal(em.tensor([1, 2]), 1.0), "normal: mean and std must be floating"),
    (lambda: em.rand(2, out=em.empty(2)), "rand: unexpected keyword arguments"),
    (lambda: em.randint(3), "randint: expected randint"),
])
def test_bad_types_raise_type_error_naming_the_op(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_requires_grad_on_integer_factories_is_rejected():
    with pytest.raises(RuntimeError, match="requires_grad"):
        em.randint(0, 3, (2,), requires_grad=True)


class FakeBackend(Backend):
    """A device backend that allocates nothing and records random() calls."""

    def __init__(self, with_random=True):
        self.calls = []
        if with_random:
            self.random = lambda *args: self.calls.append(args)

    def allocate(self, nbytes, device):
        return None


@pytest.fixture
def fake_cuda():
    from ember._C import core
    try:
        previous = core.backend_for(em.device("cuda"))
    except RuntimeError:
        previous = None
    backend = FakeBackend()
    core.register_backend("cuda", backend)
    yield backend
    core.register_backend("cuda", previous)


def test_other_devices_get_the_same_seed_and_offsets(fake_cuda):
    em.manual_seed(5)
    t = em.rand(2, 3, device="cuda")
    em.randn(4, dtype=em.float64, device="cuda")
    g = em.Generator().manual_seed(9)
    em.randint(0, 7, (5,), device="cuda", generator=g)
    (k1, out1, s1, o1, *p1), (k2, _, s2, o2, *p2), (k3, _, s3, o3, *p3) = fake_cuda.calls
    assert (k1, s1, o1, p1) == ("uniform", 5, 0, [0.0, 1.0]) and out1 is t
    assert (k2, s2, o2, p2) == ("normal", 5, 6, [0.0, 1.0])
    assert (k3, s3, o3, p3) == ("integers", 9, 0, [0, 7])
    assert em.default_generator.get_offset() == 0         # the cpu stream is untouched
    em.manual_seed(5)
    em.rand(1, device="cuda")
    assert fake_cuda.calls[-1][2:4] == (5, 0)             # manual_seed reset cuda too


def test_a_backend_without_random_kernels_says_so(fake_cuda):
    from ember._C import core
    core.register_backend("cuda", FakeBackend(with_random=False))
    with pytest.raises(NotImplementedError, match=r"rand: no kernel for cuda:0 \(float32\)"):
        em.rand(3, device="cuda")


def usable_device(name):
    try:
        d = em.device(name)
        em.zeros(2, device=d).cpu()
        return d
    except (RuntimeError, ValueError, NotImplementedError, ImportError):
        return None


@pytest.mark.parametrize("name", ["cuda", "opencl"])
def test_every_device_draws_the_cpu_numbers(name):
    """A seed gives the same numbers on every device (skipped where a backend is absent)."""
    d = usable_device(name)
    if d is None:
        pytest.skip(f"no {name} device in this build")
    for dtype in FLOATS:
        for draw in (lambda g, dev: em.rand(999, dtype=dtype, device=dev, generator=g),
                     lambda g, dev: em.randn(999, dtype=dtype, device=dev, generator=g)):
            here = draw(em.Generator().manual_seed(3), "cpu")
            there = draw(em.Generator().manual_seed(3), d).cpu()
            np.testing.assert_allclose(np_of(there), np_of(here), rtol=1e-6, atol=1e-6)
    for draw in (lambda g, dev: em.randint(-5, 1000, (999,), device=dev, generator=g),
                 lambda g, dev: em.randperm(999, device=dev, generator=g)):
        assert draw(em.Generator().manual_seed(4), d).cpu().tolist() == \
            draw(em.Generator().manual_seed(4), "cpu").tolist()


# ------------------------------------------------------------------- complex dtypes

@pytest.mark.parametrize("dtype", [em.complex64, em.complex128], ids=lambda d: d.name)
def test_complex_draws_are_the_real_stream_interleaved(dtype, device):
    # PyTorch's layout: a complex tensor's view_as_real filled as a real tensor, so the
    # parts are the real draws in order (re0, im0, re1, ...), randn's scaled by sqrt(1/2)
    real = em.float32 if dtype is em.complex64 else em.float64
    em.manual_seed(7)
    z = em.randn(3, 5, dtype=dtype, device=device)
    em.manual_seed(7)
    r = em.randn(3, 5, 2, dtype=real, device=device)
    assert z.dtype is dtype and tuple(z.shape) == (3, 5)
    np.testing.assert_allclose(em.view_as_real(z).cpu().numpy(), r.cpu().numpy() * math.sqrt(0.5),
                               rtol=1e-6)
    em.manual_seed(7)
    u = em.rand(4, dtype=dtype, device=device)
    em.manual_seed(7)
    np.testing.assert_array_equal(em.view_as_real(u).cpu().numpy(),
                                  em.rand(4, 2, dtype=real, device=device).cpu().numpy())
    em.manual_seed(7)
    again = em.randn(3, 5, dtype=dtype, device=device)
    assert again.cpu().numpy().tolist() == z.cpu().numpy().tolist()


@pytest.mark.parametrize("dtype", [em.complex64, em.complex128], ids=lambda d: d.name)
def test_complex_statistics(dtype, device):
    n = 200_000
    em.manual_seed(11)
    g = None
    se = 1 / math.sqrt(n)
    z = em.randn(n, dtype=dtype, device=device, generator=g).cpu().numpy()
    for part in (z.real, z.imag):                   # each N(0, 1/2): E|z|^2 = 1
        assert abs(part.mean()) < 5 * se * math.sqrt(0.5)
        assert abs(part.var() - 0.5) < 5 * se
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 5 * se * 2
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 5 * se
    u = em.rand(n, dtype=dtype, device=device, generator=g).cpu().numpy()
    for part in (u.real, u.imag):                   # each U[0, 1)
        assert part.min() >= 0 and part.max() < 1
        assert abs(part.mean() - 0.5) < 5 * se * math.sqrt(1 / 12)
        assert abs(part.var() - 1 / 12) < 5 * se * 0.1
    x = em.empty(n, dtype=dtype, device=device).normal_(1.0, 2.0, generator=g).cpu().numpy()
    for part in (x.real, x.imag):                   # mean on both parts, std / sqrt 2 each
        assert abs(part.mean() - 1) < 5 * se * math.sqrt(2)
        assert abs(part.std() - math.sqrt(2)) < 5 * se * 2
    y = em.empty(n, dtype=dtype, device=device).uniform_(-2.0, 3.0, generator=g).cpu().numpy()
    for part in (y.real, y.imag):
        assert part.min() >= -2 and part.max() < 3
        assert abs(part.mean() - 0.5) < 5 * se * 5 / math.sqrt(12)


def test_complex_like_factories(device):
    for dtype in (em.complex64, em.complex128):
        z = em.zeros(2, 3, dtype=dtype, device=device)
        for f in (em.randn_like, em.rand_like):
            r = f(z)
            assert r.dtype is dtype and tuple(r.shape) == (2, 3) and r.device == z.device
            assert (r.cpu().numpy().imag != 0).all()
    assert em.randn_like(em.zeros(2), dtype=em.complex64).dtype is em.complex64
    with pytest.raises(TypeError, match="randn: expected a floating point or complex dtype"):
        em.randn(2, dtype=em.int64)
