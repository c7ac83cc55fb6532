"""What every rank runs under mpiexec for test_distributed.py:

    mpiexec -n N python ember_dist_worker.py SUITE OUTDIR

Each case computes a collective on every rank and compares it with the result computed
on this one process from all ranks' inputs (every rank can regenerate every other rank's
random input from its seed). Each rank writes {case: [ok, message]} to OUTDIR/rank<r>.json
and the pytest side asserts on it. Cases run one after the other on all ranks; an
assertion fails after the collective, so one failed case does not desync the next."""
import datetime
import json
import os
import sys
import time
import traceback

import numpy as np

import ember as em
import ember.distributed as dist

SUITE = OUT = None      # set by main() from the command line
DTYPES = ["float32", "float64", "int32", "int64", "float16", "uint8", "bool"]
REDUCE = {"SUM": np.add, "PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum,
          "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}
EXAMPLES = 8     # random examples per case (shapes, dtypes, layouts)


def data(seed, rank, shape, dtype):
    """Rank `rank`'s input for example `seed`: small values so products stay exact."""
    g = np.random.default_rng([seed, rank, 7])
    if dtype == "bool":
        return g.random(shape) < 0.5
    if dtype in ("float16", "float32", "float64"):
        return g.uniform(-2, 2, shape).astype(dtype)
    lo = 0 if dtype == "uint8" else -3
    return g.integers(lo, 4, shape).astype(dtype)


def example(seed):
    """(shape, dtype, layout) drawn alike on every rank."""
    g = np.random.default_rng([seed, 1234])
    dims = [int(g.choice([1, 2, 3, 7, 63, 65])) for _ in range(int(g.integers(0, 3)))]
    layout = str(g.choice(["contiguous", "transposed", "strided"])) if len(dims) == 2 \
        else "contiguous"
    return tuple(dims), str(g.choice(DTYPES)), layout


def arr(a):
    """A copy of the NumPy array `a` as an ember tensor (em.tensor would turn a 0-d
    float64 array into float32)."""
    return em.from_numpy(np.array(a, copy=True))


def tensor(a, layout):
    """An ember tensor with a's values and the given memory layout."""
    if layout == "transposed":
        return arr(a.T).t()
    if layout == "strided":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        big[:, ::2] = a
        return arr(big)[:, ::2]
    return arr(a)


FAILS = []    # a case's failed comparisons: recorded, not raised, so that every rank
              # goes on with the same sequence of collectives


def same(t, want, dtype, what=""):
    try:
        assert t.dtype.name == dtype, (what, t.dtype.name, dtype)
        got = t.numpy() if t.dtype != em.float16 else t.float().numpy()
        assert tuple(t.shape) == tuple(want.shape), (what, tuple(t.shape), want.shape)
        if dtype in ("float16", "float32", "float64"):
            tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
            np.testing.assert_allclose(got, want.astype(got.dtype), rtol=tol, atol=tol,
                                       err_msg=what)
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)
    except AssertionError:
        FAILS.append(traceback.format_exc())


def reference(op, arrays, dtype):
    if op == "AVG":
        return (sum(a.astype(np.float64) for a in arrays) / len(arrays)).astype(dtype)
    if dtype == "bool":
        fn = {"SUM": np.logical_or, "MAX": np.logical_or, "BOR": np.logical_or,
              "PRODUCT": np.logical_and, "MIN": np.logical_and, "BAND": np.logical_and,
              "BXOR": np.logical_xor}[op]
    else:
        fn = REDUCE[op]
    if dtype == "float16":     # ember reduces float16 in float32
        out = arrays[0].astype(np.float32)
        for a in arrays[1:]:
            out = fn(out, a.astype(np.float32))
        return out.astype(np.float16)
    out = arrays[0]
    for a in arrays[1:]:
        out = fn(out, a)
    return out


def ops_for(dtype):
    ops = ["SUM", "PRODUCT", "MIN", "MAX"]
    if dtype in ("float16", "float32", "float64"):
        ops.append("AVG")
    else:
        ops += ["BAND", "BOR", "BXOR"]
    return ops


# the cases ------------------------------------------------------------------------------

def case_all_reduce(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        for k, op in enumerate(ops_for(dtype)):
            arrays = [data(seed * 10 + k, i, shape, dtype) for i in range(n)]
            t = tensor(arrays[r], layout)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            same(t, reference(op, arrays, dtype), dtype, f"{op} {shape} {dtype} {layout}")


def case_all_reduce_async(r, n):
    works, want = [], []
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        t = tensor(arrays[r], layout)
        works.append((dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True), t))
        want.append((reference("MAX", arrays, dtype), dtype))
    for (w, t), (ref, dtype) in zip(works, want):
        assert w.wait() is True and w.is_completed()
        same(t, ref, dtype)


def case_broadcast(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        src = seed % n
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        t = tensor(arrays[r], layout)
        w = dist.broadcast(t, src=src, async_op=seed % 2 == 1)
        if w is not None:
            w.wait()
        same(t, arrays[src], dtype)


def case_reduce(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        dst, op = seed % n, ops_for(dtype)[seed % 4]
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        t = tensor(arrays[r], layout)
        dist.reduce(t, dst=dst, op=getattr(dist.ReduceOp, op))
        same(t, reference(op, arrays, dtype) if r == dst else arrays[r], dtype)


def case_all_gather(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        outs = [tensor(np.zeros(shape, dtype), layout) for _ in range(n)]
        dist.all_gather(outs, tensor(arrays[r], layout))
        for i in range(n):
            same(outs[i], arrays[i], dtype)


def case_all_gather_into_tensor(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        shape = shape or (1,)
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        out = em.zeros((n * shape[0],) + shape[1:], dtype=getattr(em, dtype))
        dist.all_gather_into_tensor(out, tensor(arrays[r], layout))
        same(out, np.concatenate(arrays), dtype)
        stacked = em.zeros((n,) + shape, dtype=getattr(em, dtype))
        dist.all_gather_into_tensor(stacked, tensor(arrays[r], layout))
        same(stacked, np.stack(arrays), dtype)


def case_reduce_scatter(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        op = ops_for(dtype)[seed % 4]
        arrays = [[data(seed * 100 + j, i, shape, dtype) for j in range(n)] for i in range(n)]
        out = tensor(np.zeros(shape, dtype), layout)
        dist.reduce_scatter(out, [tensor(a, layout) for a in arrays[r]],
                            op=getattr(dist.ReduceOp, op))
        same(out, reference(op, [arrays[i][r] for i in range(n)], dtype), dtype)


def case_reduce_scatter_tensor(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, _ = example(seed)
        shape = shape or (1,)
        op = ops_for(dtype)[seed % 4]
        arrays = [data(seed, i, (n * shape[0],) + shape[1:], dtype) for i in range(n)]
        out = em.zeros(shape, dtype=getattr(em, dtype))
        dist.reduce_scatter_tensor(out, arr(arrays[r]), op=getattr(dist.ReduceOp, op))
        block = slice(r * shape[0], (r + 1) * shape[0])
        same(out, reference(op, [a[block] for a in arrays], dtype), dtype)


def case_gather(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        dst = (seed + 1) % n
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        outs = [tensor(np.zeros(shape, dtype), layout) for _ in range(n)] if r == dst else None
        dist.gather(tensor(arrays[r], layout), outs, dst=dst)
        if r == dst:
            for i in range(n):
                same(outs[i], arrays[i], dtype)


def case_scatter(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        src = seed % n
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        t = tensor(np.zeros(shape, dtype), layout)
        dist.scatter(t, [tensor(a, layout) for a in arrays] if r == src else None, src=src)
        same(t, arrays[r], dtype)


def case_all_to_all(r, n):
    for seed in range(EXAMPLES):
        _, dtype, _ = example(seed)
        # rank i sends rows(i, j) rows of 3 to rank j: sizes differ per pair
        rows = [[(i * 3 + j + seed) % 4 for j in range(n)] for i in range(n)]
        arrays = [[data(seed * 100 + j, i, (rows[i][j], 3), dtype) for j in range(n)]
                  for i in range(n)]
        outs = [em.zeros((rows[i][r], 3), dtype=getattr(em, dtype)) for i in range(n)]
        dist.all_to_all(outs, [arr(a) for a in arrays[r]])
        for i in range(n):
            same(outs[i], arrays[i][r], dtype)


def case_all_to_all_single(r, n):
    for seed in range(EXAMPLES):
        _, dtype, _ = example(seed)
        rows = [[(i + 2 * j + seed) % 3 for j in range(n)] for i in range(n)]
        arrays = [data(seed, i, (sum(rows[i]), 2), dtype) for i in range(n)]
        out = em.zeros((sum(rows[i][r] for i in range(n)), 2), dtype=getattr(em, dtype))
        dist.all_to_all_single(out, arr(arrays[r]), [rows[i][r] for i in range(n)],
                               rows[r])
        want = [arrays[i][sum(rows[i][:r]):sum(rows[i][:r + 1])] for i in range(n)]
        same(out, np.concatenate(want), dtype)
        # equal splits
        a = [data(seed + 50, i, (2 * n, 3), dtype) for i in range(n)]
        out = em.zeros((2 * n, 3), dtype=getattr(em, dtype))
        dist.all_to_all_single(out, arr(a[r]))
        same(out, np.concatenate([a[i][2 * r:2 * r + 2] for i in range(n)]), dtype)


def case_send_recv(r, n):
    for seed in range(EXAMPLES):
        shape, dtype, layout = example(seed)
        arrays = [data(seed, i, shape, dtype) for i in range(n)]
        nxt, prv = (r + 1) % n, (r - 1) % n
        t = tensor(np.zeros(shape, dtype), layout)
        if r % 2 == 0:
            dist.send(tensor(arrays[r], layout), dst=nxt)
            got = dist.recv(t, src=prv)
        else:
            got = dist.recv(t, src=prv)
            dist.send(tensor(arrays[r], layout), dst=nxt)
        assert got == prv, (got, prv)
        same(t, arrays[prv], dtype)


def case_isend_irecv_any_source(r, n):
    shape = (5, 3)
    if r == 0:
        outs = [em.zeros(shape) for _ in range(n - 1)]
        works = [dist.irecv(o, tag=3) for o in outs]
        for w in works:
            w.wait()
        senders = sorted(w._source() for w in works)
        assert senders == list(range(1, n)), senders
        got = sorted(float(o[0, 0]) for o in outs)
        assert got == [float(i) for i in range(1, n)], got
    else:
        w = dist.isend(em.full(shape, float(r)), dst=0, tag=3)
        w.wait()
        assert w.is_completed()


def case_barrier(r, n):
    dist.barrier()
    w = dist.barrier(async_op=True)
    w.wait()
    assert w.is_completed()


def case_new_group(r, n):
    members = [0, n - 1]
    g = dist.new_group(members)
    t = em.full((4,), float(r + 1))
    if r in members:
        assert dist.get_world_size(g) == 2 and dist.get_rank(g) == members.index(r)
        assert dist.get_process_group_ranks(g) == members
        dist.all_reduce(t, group=g)
        same(t, np.full(4, 1.0 + n, np.float32), "float32")
        b = em.full((2,), float(r))
        dist.broadcast(b, src=n - 1, group=g)      # src is a global rank
        same(b, np.full(2, n - 1.0, np.float32), "float32")
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
        assert dist.all_reduce(t, group=g) is None           # no-op outside the group
        same(t, np.full(4, r + 1.0, np.float32), "float32")
    dist.barrier()
    dist.destroy_process_group(g) if r in members else None


def case_distributed_sampler(r, n):
    """ember.data's DistributedSampler takes rank and world size from ember.distributed,
    and the shards of all ranks cover the dataset."""
    from ember.data import DistributedSampler
    sampler = DistributedSampler(list(range(11)), shuffle=True, seed=3)
    assert (sampler.rank, sampler.num_replicas) == (r, n)
    mine = em.tensor(list(sampler), dtype=em.int64)
    shards = [em.zeros(len(sampler), dtype=em.int64) for _ in range(n)]
    dist.all_gather(shards, mine)
    covered = sorted({int(i) for t in shards for i in t.tolist()})
    assert covered == list(range(11)), covered


def case_info(r, n):
    assert dist.is_initialized() and dist.get_rank() == r and dist.get_world_size() == n
    assert dist.get_backend() == "mpi"


# bad input: every rank raises the same ValueError, and the group still works after it ----

def expect_error(fn):
    try:
        fn()
    except ValueError as e:
        return str(e)
    raise AssertionError("no ValueError raised")


def then_still_works(n):
    t = em.ones(3)
    dist.all_reduce(t)
    same(t, np.full(3, float(n), np.float32), "float32")


def mismatch(fn):
    def case(r, n):
        msg = expect_error(lambda: fn(r, n))
        then_still_works(n)
        return msg
    return case


@mismatch
def case_mismatch_shape(r, n):
    dist.all_reduce(em.ones(3 + (r == 1)))


@mismatch
def case_mismatch_dtype(r, n):
    dist.broadcast(em.ones(3, dtype=em.float64 if r == n - 1 else em.float32), src=0)


@mismatch
def case_mismatch_op(r, n):
    if r == 0:
        dist.all_reduce(em.ones(3))
    else:
        dist.broadcast(em.ones(3), src=0)


@mismatch
def case_mismatch_barrier(r, n):
    if r == 0:
        dist.barrier()
    else:
        dist.all_reduce(em.ones(1))


@mismatch
def case_mismatch_bad_on_one_rank(r, n):
    # AVG is refused for rank 0's int tensor: the others must not wait for it
    dist.all_reduce(em.ones(2, dtype=em.int64 if r == 0 else em.float32),
                    op=dist.ReduceOp.AVG)


@mismatch
def case_mismatch_list_length(r, n):
    outs = [em.zeros(2) for _ in range(n + (r == 0))]
    dist.all_gather(outs, em.ones(2))


@mismatch
def case_mismatch_all_to_all_sizes(r, n):
    # rank 0 expects 2 rows from every rank; the others send 1 row to everyone
    outs = [em.zeros((2 if r == 0 else 1, 2)) for _ in range(n)]
    dist.all_to_all(outs, [em.zeros((1, 2)) for _ in range(n)])


def case_mismatch_recv(r, n):
    msg = None
    if r == 0:
        dist.send(em.ones((2, 3)), dst=1)
    elif r == 1:
        msg = expect_error(lambda: dist.recv(em.zeros((3, 2)), src=0))
    then_still_works(n)
    return msg


def case_check_off(r, n):
    """With the check off nothing is exchanged first; matching calls still work."""
    dist.set_metadata_check(False)
    try:
        t = em.full((3,), float(r))
        dist.all_reduce(t)
        same(t, np.full(3, n * (n - 1) / 2, np.float32), "float32")
        t = em.zeros((2, 2))
        src = dist.recv(t) if r == 1 else (dist.send(em.ones((2, 2)), 1) if r == 0 else None)
        if r == 1:
            assert src == 0
            same(t, np.ones((2, 2), np.float32), "float32")
    finally:
        dist.set_metadata_check(True)


def case_bad_arguments(r, n):
    """Errors that every rank finds alone (no exchange needed)."""
    msgs = []
    for fn, exc in [(lambda: dist.all_reduce(em.ones(2, dtype=em.int32), op=dist.ReduceOp.AVG),
                     ValueError),
                    (lambda: dist.broadcast(em.ones(2), src=n), ValueError),
                    (lambda: dist.all_reduce(np.ones(2)), TypeError),
                    (lambda: dist.all_reduce(em.ones(2), op="sum"), TypeError)]:
        try:
            fn()
        except exc as e:
            msgs.append(str(e))
        else:
            raise AssertionError("no error")
    return " | ".join(msgs)


# DistributedDataParallel -----------------------------------------------------------------

def mlp(seed):
    em.manual_seed(seed)
    nn = em.nn
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 3))


def global_batch(step, n):
    g = np.random.default_rng(step)
    x = g.standard_normal((4 * n, 6)).astype(np.float32)
    y = g.standard_normal((4 * n, 3)).astype(np.float32)
    return x, y


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def train(model, opt, batches, accumulate=1):
    for x, y in batches:
        out = model(em.tensor(x))
        loss = ((out - em.tensor(y)) ** 2).mean() / accumulate
        loss.backward()
        yield
        opt.step()
        opt.zero_grad()


def case_ddp_matches_single_process(r, n, views=False, shared=True):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ref = mlp(0)
    local = mlp(0 if r == 0 else r + 10)     # DDP must copy rank 0's start to all
    # a small bucket cap: several buckets, launched in order from the hooks
    ddp = DDP(local, bucket_cap_mb=0.0005, gradient_as_bucket_view=views)
    assert len(ddp._buckets) > 1
    # all ranks run here: the buckets are in shared memory unless told otherwise
    assert all(isinstance(b.reducer, dist._buckets._SharedBuckets) == shared
               for b in ddp._buckets)
    for a, b in zip(params(ref), params(local)):
        np.testing.assert_array_equal(a, b)
    opt_ref = em.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = em.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x, y = global_batch(step, n)
        for _ in train(ref, opt_ref, [(x, y)]):
            pass
        shard = slice(4 * r, 4 * r + 4)
        for _ in train(ddp, opt, [(x[shard], y[shard])]):
            pass
    for a, b in zip(params(ref), params(local)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    everyone = [em.zeros(sum(p.numel() for p in local.parameters())) for _ in range(n)]
    flat = em.cat([p.detach().reshape(-1) for p in local.parameters()])
    dist.all_gather(everyone, flat)
    for t in everyone[1:]:
        np.testing.assert_array_equal(t.numpy(), everyone[0].numpy())


def case_ddp_gradient_as_bucket_view(r, n):
    case_ddp_matches_single_process(r, n, views=True)


def case_ddp_over_mpi_messages(r, n):
    """The path for ranks on several machines: buckets all-reduced by MPI_Iallreduce."""
    backend = dist._buckets
    on_one_machine = backend._shared_buckets
    backend._shared_buckets = lambda *args, **kwargs: None
    try:
        case_ddp_matches_single_process(r, n, shared=False)
    finally:
        backend._shared_buckets = on_one_machine


def case_ddp_on_opencl(r, n):
    """A model on an OpenCL device (PoCL here): buckets in host memory, gradients back on
    the device, with and without gradient_as_bucket_view and an unused parameter."""
    from ember.nn.parallel import DistributedDataParallel as DDP
    if not em.opencl.is_available():
        return "no OpenCL device"
    for views in (False, True):
        ddp = DDP(Branchy().to("opencl"), find_unused_parameters=True,
                  gradient_as_bucket_view=views)
        opt = em.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            ddp(em.ones((2, 4), device="opencl") * (r + 1), r % 2 == 1).sum().backward()
            opt.step()
        for name, p in ddp.module.named_parameters():
            if p.grad is not None:
                assert p.grad.device == p.device, (views, name, p.grad.device)
        flat = em.cat([p.detach().reshape(-1) for p in ddp.module.parameters()]).cpu()
        everyone = [em.zeros_like(flat) for _ in range(n)]
        dist.all_gather(everyone, flat)
        for t in everyone[1:]:
            np.testing.assert_array_equal(t.numpy(), everyone[0].numpy())
    return "ok"


def case_ddp_full_shm_falls_back_to_messages(r, n):
    """/dev/shm without room for the buckets (MPI would map them anyway, and the first
    touch past the end would be SIGBUS): a warning, and the MPI path."""
    import warnings
    backend = dist._buckets
    free = backend._shm_free
    backend._shm_free = lambda: 1000 if r == n - 1 else free()   # full on one rank only
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            case_ddp_matches_single_process(r, n, shared=False)
    finally:
        backend._shm_free = free
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and \
        "/dev/shm has 1,000 free: averaging through MPI messages" in msgs[0], msgs
    # it points at the user's DistributedDataParallel(...) line, here in this file
    where = [w.filename for w in caught if issubclass(w.category, RuntimeWarning)]
    assert where == [__file__], where
    return msgs[0]


def case_ddp_shared_buckets(r, n):
    """DDP's buckets in MPI shared memory: an in-place sum (and average) over the ranks,
    for sizes whose chunks are empty on some ranks (fewer elements than 64-byte lines),
    reused round after round, two in flight at once and waited for in reverse order."""
    for dtype in ("float32", "float64", "float16", "int64"):
        for numel in (1, 5, 17, 1000, 4099):
            pair = dist._buckets._shared_buckets([(numel, getattr(em, dtype))] * 2)
            for round_ in range(2):
                arrays = [[data(round_ * 100 + numel + k, i, (numel,), dtype) for i in range(n)]
                          for k in range(2)]
                ops = ["SUM", "SUM" if dtype == "int64" else "AVG"]
                works = []
                for k, b in enumerate(pair):
                    b.tensor.copy_(arr(arrays[k][r]))
                    works.append(b.all_reduce(average=ops[k] == "AVG"))
                for w in reversed(works):
                    w.wait()
                for k, b in enumerate(pair):
                    same(b.tensor, reference(ops[k], arrays[k], dtype), dtype,
                         f"{ops[k]} {dtype} {numel} round {round_} bucket {k}")


def case_ddp_no_sync_accumulates(r, n):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ref, local = mlp(3), mlp(3)
    ddp = DDP(local)
    opt_ref = em.optim.SGD(ref.parameters(), lr=0.1)
    opt = em.optim.SGD(ddp.parameters(), lr=0.1)
    x0, y0 = global_batch(10, n)
    x1, y1 = global_batch(11, n)
    shard = slice(4 * r, 4 * r + 4)
    # reference: the mean over both global batches
    for x, y in ((x0, y0), (x1, y1)):
        (((ref(em.tensor(x)) - em.tensor(y)) ** 2).mean() / 2).backward()
    opt_ref.step()
    with ddp.no_sync():
        (((ddp(em.tensor(x0[shard])) - em.tensor(y0[shard])) ** 2).mean() / 2).backward()
    local_grad = local[0].weight.grad.numpy().copy()
    (((ddp(em.tensor(x1[shard])) - em.tensor(y1[shard])) ** 2).mean() / 2).backward()
    opt.step()
    for a, b in zip(params(ref), params(local)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    # inside no_sync the gradient was this rank's own
    g = [em.zeros(local_grad.shape) for _ in range(n)]
    dist.all_gather(g, em.tensor(local_grad))
    assert n == 1 or not np.allclose(g[0].numpy(), g[1].numpy())


class Branchy(em.nn.Module):
    """Uses `b` on odd ranks only: unused on some ranks, used on others."""

    def __init__(self):
        super().__init__()
        em.manual_seed(5)
        self.a = em.nn.Linear(4, 2)
        self.b = em.nn.Linear(4, 2)
        self.never = em.nn.Linear(4, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


def case_ddp_find_unused_parameters(r, n):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ref, local = Branchy(), Branchy()
    ddp = DDP(local, find_unused_parameters=True)
    x = np.random.default_rng(1).standard_normal((n, 4)).astype(np.float32)
    for i in range(n):
        (ref(em.tensor(x[i:i + 1]), i % 2 == 1).sum() / n).backward()
    for _ in range(2):
        ddp.zero_grad()
        ddp(em.tensor(x[r:r + 1]), r % 2 == 1).sum().backward()
        for name in ("a", "b"):
            for pn in ("weight", "bias"):
                want = getattr(getattr(ref, name), pn).grad
                got = getattr(getattr(local, name), pn).grad
                if n == 1 and name == "b":
                    assert got is None
                    continue
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        # unused on every rank: no gradient, as without DDP
        assert local.never.weight.grad is None


def case_ddp_unused_after_no_sync(r, n):
    """`b` gets gradients under no_sync, then is unused in the synced step: its
    accumulated gradients are averaged all the same."""
    from ember.nn.parallel import DistributedDataParallel as DDP
    ref, local = Branchy(), Branchy()
    ddp = DDP(local, find_unused_parameters=True)
    x = np.random.default_rng(2).standard_normal((n, 4)).astype(np.float32)
    for i in range(n):
        (ref(em.tensor(x[i:i + 1]), True).sum() / n).backward()
        (ref(em.tensor(x[i:i + 1]), False).sum() / n).backward()
    with ddp.no_sync():
        ddp(em.tensor(x[r:r + 1]), True).sum().backward()
    ddp(em.tensor(x[r:r + 1]), False).sum().backward()
    for name in ("a", "b"):
        for pn in ("weight", "bias"):
            np.testing.assert_allclose(getattr(getattr(local, name), pn).grad.numpy(),
                                       getattr(getattr(ref, name), pn).grad.numpy(),
                                       rtol=1e-5, atol=1e-6)


def case_ddp_unused_without_flag_raises(r, n):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(Branchy())
    ddp(em.ones((1, 4)), False).sum().backward()
    try:
        ddp(em.ones((1, 4)), False)
    except RuntimeError as e:
        return str(e)
    raise AssertionError("no error")


def case_ddp_second_backward_raises(r, n):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(mlp(0))
    loss = ddp(em.ones((2, 6))).sum()
    loss.backward(retain_graph=True)
    try:
        loss.backward()
    except RuntimeError as e:
        return str(e)
    raise AssertionError("no error")


def case_ddp_different_models_raise(r, n):
    from ember.nn.parallel import DistributedDataParallel as DDP
    nn = em.nn
    m = nn.Sequential(nn.Linear(3, 4 if r == 0 else 5))
    try:
        DDP(m)
    except ValueError as e:
        return str(e)
    raise AssertionError("no error")


def case_reinit(r, n):
    """destroy_process_group, then init_process_group again: a working default group."""
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group("mpi", timeout=60)
    t = em.ones(2)
    dist.all_reduce(t)
    same(t, np.full(2, float(n), np.float32), "float32")


def case_issue17_all_gather_object(r, n):
    """all_gather_object (what DistributedDataParallel compares models with): objects of
    different sizes per rank; a bad object_list on one rank raises on every rank."""
    everyone = [None] * n
    dist.all_gather_object(everyone, {"rank": r, "items": list(range(r * 50)), "t": (r, "x")})
    assert everyone == [{"rank": i, "items": list(range(i * 50)), "t": (i, "x")}
                        for i in range(n)], everyone
    try:
        dist.all_gather_object([None] * (1 if r == 0 else n), r)
    except ValueError as e:
        want = (f"all_gather_object: rank 0: object_list must be a list of {n} (the group's "
                f"size), got 1 entries")
        assert str(e) == want, str(e)
        return str(e)
    raise AssertionError("no error")


def case_issue17_new_buckets(r, n):
    """new_buckets, DistributedDataParallel's public way to its buckets: summed and
    averaged in shared memory (one machine) and through MPI messages alike; buckets
    that differ across ranks raise the same ValueError on every rank."""
    buckets = dist._buckets
    on_one_machine = buckets._shared_buckets
    for path in ("shared", "messages"):
        if path == "messages":
            buckets._shared_buckets = lambda *args, **kwargs: None
        try:
            pair = dist.new_buckets([(7, em.float32), (130, em.float64)])
        finally:
            buckets._shared_buckets = on_one_machine
        assert (type(pair[0]).__name__ == "_SharedBuckets") == (path == "shared"), path
        arrays = [[data(40 + k, i, (b.tensor.numel(),), b.tensor.dtype.name) for i in range(n)]
                  for k, b in enumerate(pair)]
        for k, b in enumerate(pair):
            same(b.tensor, np.zeros(b.tensor.numel(), b.tensor.dtype.name),
                 b.tensor.dtype.name, f"{path} {k} zero-filled")
            b.tensor.copy_(arr(arrays[k][r]))
        works = [b.all_reduce(average=k == 1) for k, b in enumerate(pair)]
        for w in works:
            w.wait()
        for k, b in enumerate(pair):
            dtype = b.tensor.dtype.name
            same(b.tensor, reference("AVG" if k else "SUM", arrays[k], dtype), dtype,
                 f"{path} bucket {k}")
    try:
        dist.new_buckets([(5 + r, em.float32)])
    except ValueError as e:
        assert str(e).startswith("new_buckets: the ranks' calls do not match: rank 0 called "
                                 "new_buckets(['5 ember.float32']), rank 1 called "
                                 "new_buckets(['6 ember.float32'])"), str(e)
        return str(e)
    raise AssertionError("no error")


def case_issue18_torchrun_env(r, n):
    """Under plain mpiexec, torchrun's variables come from MPI's ranks (set when
    ember.distributed was imported, and checked by init_process_group)."""
    env = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                          "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    assert env == {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(n),
                   "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": "29500"}, env


def reinit(r, n, backend, device="cpu", **kwargs):
    dist.destroy_process_group()
    dist.init_process_group(backend, timeout=60, **kwargs)
    try:
        assert dist.get_backend() == backend and dist.get_rank() == r
        t = (em.arange(3, dtype=em.float32) + r).to(device)
        dist.all_reduce(t)
        assert t.device.type == device, t.device
        same(t.cpu(), np.arange(3, dtype=np.float32) * n + sum(range(n)), "float32", backend)
        g = dist.new_group(list(range(n)))
        assert dist.get_backend(g) == backend, dist.get_backend(g)
        t = em.full((2,), float(r))
        dist.broadcast(t, src=n - 1, group=g)
        same(t, np.full(2, n - 1.0, np.float32), "float32", f"{backend} broadcast")
        return repr(g)
    finally:
        dist.destroy_process_group()
        dist.init_process_group("mpi", timeout=60)


def case_issue18_backend_gloo(r, n):
    """init_process_group("gloo", init_method="env://"): MPI underneath, same results."""
    return reinit(r, n, "gloo", init_method="env://", device_id=em.device("cpu"))


def case_issue18_backend_gloo_tcp(r, n):
    """tcp:// is accepted (MPI did the rendezvous); world_size and rank are checked."""
    return reinit(r, n, "gloo", init_method="tcp://127.0.0.1:29500", world_size=n, rank=r)


def case_issue18_backend_nccl(r, n):
    """init_process_group("nccl") with CUDA tensors (staged through host memory), where
    CUDA is available; elsewhere nccl is refused (test_nccl_without_cuda_says_why)."""
    if not em.cuda.is_available():
        return "no CUDA here"
    return reinit(r, n, "nccl", device="cuda", init_method="env://")


def case_issue18_backend_device_map(r, n):
    """The device-map spelling "cpu:gloo,cuda:nccl" runs CPU tensors as gloo would."""
    return reinit(r, n, "cpu:gloo,cuda:nccl")


CASES = {k[5:]: v for k, v in list(globals().items()) if k.startswith("case_")}


def run_cases(results):
    r, n = dist.get_rank(), dist.get_world_size()
    only = os.environ.get("EMBER_DIST_CASES")      # a comma-separated subset, for debugging
    for name, fn in CASES.items():
        if only and name not in only.split(","):
            continue
        FAILS.clear()
        try:
            msg = fn(r, n)
            results[name] = [not FAILS, "\n".join(FAILS) or msg]
        except Exception:
            results[name] = [False, traceback.format_exc()]
        dist.barrier()


def faults():
    """SUITE dead: rank 1 dies; SUITE stuck: rank 1 never joins. The others must raise
    DistTimeoutError after the 1.5 s timeout, and then refuse further collectives."""
    r = dist.get_rank()
    t = em.ones(4)
    dist.all_reduce(t)          # everyone is up
    if r == 1:
        if SUITE == "dead":
            os._exit(17)
        time.sleep(6)
        return {"stuck": [True, "slept"]}
    start = time.monotonic()
    try:
        dist.all_reduce(t)
    except dist.DistTimeoutError as e:
        took = time.monotonic() - start
        try:
            dist.barrier()
        except dist.DistError as e2:
            return {SUITE: [True, f"{took:.2f} | {e} | {e2}"]}
        return {SUITE: [False, "barrier after the timeout did not raise"]}
    return {SUITE: [False, "all_reduce did not raise"]}


def main():
    global SUITE, OUT
    SUITE, OUT = sys.argv[1], sys.argv[2]
    timeout = 1.5 if SUITE in ("dead", "stuck") else float(os.environ.get("EMBER_DIST_TIMEOUT",
                                                                           "60"))
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=timeout))
    results = {}
    try:
        if SUITE in ("dead", "stuck"):
            results.update(faults())
        else:
            run_cases(results)
    finally:    # what ran so far, also when a case broke the job
        with open(os.path.join(OUT, f"rank{dist.get_rank()}.json"), "w") as f:
            json.dump(results, f)
    if SUITE == "collectives":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
