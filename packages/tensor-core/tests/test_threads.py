"""The thread pool under the op table's loops (kernels/cpu/iterator.c) and the
hand-written kernels that share it: large elementwise ops, casts, copies and
reductions give the same answer at every thread count (reductions bit for bit),
small ops never start a thread, and a process forked after threaded work does not
hang."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as em

# Above two grains (2 x 131072 elements; 2 x 262144 for reductions) the iterator
# shares work out; these shapes are a few grains, odd-sized, so chunks start and
# end inside rows.
BIG = (517, 769)
BIG_RED = (1031, 771)
COUNTS = (1, 2, 3)


@pytest.fixture
def threads():
    """Run a function at each thread count; restores the setting afterwards."""
    saved = em.get_num_threads()

    def at_each(fn):
        out = []
        for n in COUNTS:
            em.set_num_threads(n)
            out.append(fn())
        return out

    yield at_each
    em.set_num_threads(saved)


def rand(shape, dtype=np.float32, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * (hi - lo) + lo).astype(dtype)


def same_at_every_count(results):
    first = results[0].numpy()
    for r in results[1:]:
        np.testing.assert_array_equal(r.numpy(), first)
    return first


def layouts_of(a):
    """a (2-d) as a contiguous, transposed, step-sliced and broadcast operand, with the
    matching NumPy array."""
    t = em.from_numpy(a)
    yield t, a
    yield em.from_numpy(np.ascontiguousarray(a.T)).T, a                 # transposed strides
    yield em.from_numpy(np.repeat(a, 2, axis=1))[:, ::2], a             # step-sliced
    yield t[:1].expand(*a.shape), np.broadcast_to(a[:1], a.shape)       # zero strides


@pytest.mark.parametrize("kind", range(4))
def test_elementwise_matches_numpy_at_every_thread_count(threads, kind):
    a = rand(BIG, seed=1)
    b = rand(BIG, seed=2)
    ta, na = list(layouts_of(a))[kind]
    tb = em.from_numpy(b)
    got = same_at_every_count(threads(lambda: ta * tb + ta))
    np.testing.assert_array_equal(got, na * b + na)
    got = same_at_every_count(threads(lambda: em.exp(ta)))
    np.testing.assert_allclose(got, np.exp(na), rtol=3e-7)


def test_transposed_operand_through_tiles(threads):
    a = rand((700, 450), seed=3)
    b = rand((450, 700), seed=4)
    ta, tb = em.from_numpy(a), em.from_numpy(b)
    got = same_at_every_count(threads(lambda: ta.T + tb))
    np.testing.assert_array_equal(got, a.T + b)
    # a batch of transposed matrices: chunks of row tiles across the batch dim
    a3 = rand((3, 400, 260), seed=5)
    t3 = em.from_numpy(a3)
    got = same_at_every_count(threads(lambda: t3.transpose(1, 2) - 1.5))
    np.testing.assert_array_equal(got, a3.transpose(0, 2, 1) - np.float32(1.5))


def test_casts_copies_and_fill(threads):
    a = rand(BIG, seed=6, lo=-300, hi=300)
    t = em.from_numpy(a)
    got = same_at_every_count(threads(lambda: t.to(em.int32)))
    np.testing.assert_array_equal(got, a.astype(np.int64).astype(np.int32))
    got = same_at_every_count(threads(lambda: t.T.to(em.float64)))
    np.testing.assert_array_equal(got, a.T.astype(np.float64))
    got = same_at_every_count(threads(lambda: t.T.contiguous()))
    np.testing.assert_array_equal(got, a.T)

    def filled():
        z = em.empty(BIG, dtype=em.float64)
        z.fill_(2.5)
        return z
    assert (same_at_every_count(threads(filled)) == 2.5).all()

    def copied():
        z = em.zeros((BIG[1], BIG[0]))
        z.copy_(t.T)
        return z
    np.testing.assert_array_equal(same_at_every_count(threads(copied)), a.T)


def test_full_float32_sum_is_the_same_at_every_thread_count(threads):
    a = rand(1_234_567, seed=7)
    t = em.from_numpy(a)
    got = same_at_every_count(threads(lambda: t.sum()))
    want = a.astype(np.float64).sum()
    assert abs(float(got) - want) <= 1e-6 * np.abs(a).sum()
    got = same_at_every_count(threads(lambda: t.mean()))
    assert abs(float(got) - want / a.size) <= 1e-6 * np.abs(a).mean()


@pytest.mark.parametrize("dim", [0, 1])
def test_sum_over_one_dim_of_a_matrix(threads, dim):
    a = rand(BIG_RED, seed=8)
    t = em.from_numpy(a)
    got = same_at_every_count(threads(lambda: t.sum(dim=dim)))
    np.testing.assert_allclose(got, a.astype(np.float64).sum(axis=dim), rtol=1e-5, atol=1e-4)
    got = same_at_every_count(threads(lambda: t.T.sum(dim=dim)))
    np.testing.assert_allclose(got, a.T.astype(np.float64).sum(axis=dim), rtol=1e-5,
                               atol=1e-4)


def test_few_outputs_split_the_reduced_dim(threads):
    # 3 outputs over 200000 rows: too few to share out, so the rows are cut
    a = rand((200_001, 3), seed=9)
    t = em.from_numpy(a)
    got = same_at_every_count(threads(lambda: t.sum(dim=0)))
    np.testing.assert_allclose(got, a.astype(np.float64).sum(axis=0), rtol=1e-5)
    got = same_at_every_count(threads(lambda: t.amax(dim=0)))
    np.testing.assert_array_equal(got, a.max(axis=0))
    a64 = rand((5, 60_000, 3), np.float64, seed=10)
    t64 = em.from_numpy(a64)
    got = same_at_every_count(threads(lambda: t64.sum(dim=(0, 1))))
    np.testing.assert_allclose(got, a64.sum(axis=(0, 1)), rtol=1e-12)


def test_other_reductions_and_dtypes(threads):
    a = rand(BIG_RED, seed=11)
    a[100, 200] = np.nan
    t = em.from_numpy(a)
    assert np.isnan(same_at_every_count(threads(lambda: t.amax())))
    got = same_at_every_count(threads(lambda: t.amin(dim=1)))
    np.testing.assert_array_equal(got, a.min(axis=1))
    ints = np.random.default_rng(12).integers(-1000, 1000, size=BIG_RED).astype(np.int32)
    ti = em.from_numpy(ints)
    assert int(same_at_every_count(threads(lambda: ti.sum()))) == int(ints.sum(dtype=np.int64))
    got = same_at_every_count(threads(lambda: (ti > 0).any(dim=0)))
    np.testing.assert_array_equal(got, (ints > 0).any(axis=0))
    p = rand(700_000, np.float64, seed=13, lo=0.999, hi=1.001)
    got = same_at_every_count(threads(lambda: em.from_numpy(p).prod()))
    np.testing.assert_allclose(got, np.prod(p), rtol=1e-10)
    h = rand(700_000, np.float16, seed=14, lo=0, hi=0.08)   # sum < float16 max
    got = same_at_every_count(threads(lambda: em.from_numpy(h).sum()))
    np.testing.assert_allclose(float(got), h.astype(np.float64).sum(), rtol=1e-3)


def np_softmax(x, log):
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        z = x - x.max(axis=-1, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=-1, keepdims=True))
        return z - lse if log else np.exp(z - lse)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_on_threads(threads, dtype, log):
    from ember.ops.softmax import softmax_backward
    # 1037 columns: the 16- and 32-lane loops have tails; values down to -90 reach
    # exp's underflow to 0
    x = rand((300, 1037), dtype, seed=15, lo=-90, hi=5)
    x[5, 3] = np.nan                      # a NaN row stays NaN
    x[7] = -np.inf                        # softmax 0/0: NaN, as PyTorch
    x[9, :4] = [1e30, -1e30, 1e30, 0]     # large values: stable
    x[11, 10] = -np.inf                   # one -inf entry: 0 (log: -inf)
    t = em.from_numpy(x)
    f = em.log_softmax if log else em.softmax
    got = same_at_every_count(threads(lambda: f(t, -1)))
    want = np_softmax(x, log)
    assert np.isnan(got[5]).all() and np.isnan(got[7]).all()
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), ~ok)
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-6 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if log else 1e-30)
    g = rand(x.shape, dtype, seed=16)
    y = f(t, -1)
    dx = same_at_every_count(threads(lambda: softmax_backward(em.from_numpy(g), y, -1, log)))
    yn = y.numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        want = (g - np.exp(yn) * g.sum(-1, keepdims=True) if log else
                yn * (g - (g * yn).sum(-1, keepdims=True)))
    np.testing.assert_allclose(dx, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_is_the_same_at_every_thread_count(threads, dtype, transposed):
    # several row blocks and column strips: the strips share one packed A, each
    # block packed by whichever thread needs it first
    a = rand((700, 530), dtype, seed=17)
    b = rand((530, 650), dtype, seed=18)
    ta = em.from_numpy(np.ascontiguousarray(a.T)).T if transposed else em.from_numpy(a)
    tb = em.from_numpy(b)
    got = same_at_every_count(threads(lambda: ta @ tb))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-3 if dtype == np.float32 else 1e-10)


def _run(code, timeout=120):
    env = dict(os.environ, EMBER_NUM_THREADS="2")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_small_ops_start_no_thread_and_large_ones_do():
    r = _run("""
        import os, ember as em
        tasks = lambda: len(os.listdir("/proc/self/task"))
        a = em.ones(50_000)
        before = tasks()
        for _ in range(10):
            (a + a).sum()
        small = tasks()
        b = em.ones(1_000_000)
        (b + b).sum()
        print(before, small, tasks())
    """)
    assert r.returncode == 0, r.stderr
    before, small, large = map(int, r.stdout.split())
    assert small == before
    assert large > before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_after_threaded_ops_does_not_hang():
    r = _run("""
        import os, sys, ember as em
        a = em.ones(1_000_000)
        assert float((a + a).sum()) == 2_000_000
        pid = os.fork()
        if pid == 0:   # the child: the parent's workers do not exist here
            ok = float((a * 3).sum()) == 3_000_000 and float((a + a).amax()) == 2
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert float((a - a).sum()) == 0
        sys.exit(os.waitstatus_to_exitcode(status))
    """, timeout=60)
    assert r.returncode == 0, r.stderr
