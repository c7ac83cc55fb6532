"""The collectives, on MPI through mpi4py.

How a collective runs: validate the arguments, stage the tensors that MPI can't read in
place (non-contiguous ones, other devices, float16 under a reduction), exchange a small
description of every rank's call (the metadata check), start the non-blocking MPI call
on the tensors' own memory and poll it against the group's deadline. Polling instead of
blocking is what lets a survivor raise when a peer died or never joins: MPICH's blocking
calls would wait forever, and MPI_Abort would kill the survivors instead of telling them.
"""
import enum
import math
import pickle

import ember as em
from ember.distributed._check import _allgather_bytes, _begin, _check, _displs, _key, _skip
from ember.distributed._mpi import _mpi
from ember.distributed._staging import (
    _chain,
    _desc,
    _divide,
    _list,
    _spec,
    _stack,
    _Staged,
    _unstack,
)
from ember.distributed._work import _run


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"ReduceOp.{self.name}"


def _mpi_op(op, dtype, what):
    """(MPI's op for `op` on `dtype`, None) or (None, why `op` can't reduce `dtype`)."""
    MPI = _mpi()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be an ember.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        return None, f"ReduceOp.AVG needs a floating-point tensor, got {dtype.name}"
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        return None, f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype.name}"
    if dtype == em.bool:
        return {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}[op], None
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op], None


def _root(rank, group, name):
    """(a global rank's rank in `group`, None) or (None, why it has none)."""
    try:
        return group.ranks.index(int(rank)), None
    except ValueError:
        return None, f"{name}={rank} is not a rank of the group {group.ranks}"


def _same_tensors(ts, like, g, name):
    """None when the list `ts` has one tensor of `like`'s shape and dtype per rank of the
    group `g`, else why not."""
    if len(ts) != g.size():
        return f"{name} has {len(ts)} tensors, expected {g.size()} (the group's size)"
    for i, t in enumerate(ts):
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            return f"{name}[{i}] is {_desc(t)} but the tensor is {_desc(like)}"
    return None


def _mixed_devices(tensors):
    """Why the tensors can't go together (None when they can), reported to every rank."""
    devs = {str(t.device) for t in tensors}
    return f"the tensors are on different devices: {sorted(devs)}" if len(devs) > 1 else None


def _reduce_call(tensor, op, group, async_op, check=True, dst=None, what="all_reduce"):
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _skip(async_op)
    mop, err = _mpi_op(op, tensor.dtype, what)
    root, root_err = (None, None) if dst is None else _root(dst, g, "dst")
    key = [what, _key(tensor), op.name] + ([] if dst is None else [f"dst={dst}"])
    _check(g, what, key, err, root_err, enabled=check)
    s = _Staged(tensor, reduce=True)
    MPI = _mpi()
    if root is None:
        req = g.comm.Iallreduce(MPI.IN_PLACE, _spec(s.buf, g), mop)
    elif g.rank() == root:
        req = g.comm.Ireduce(MPI.IN_PLACE, _spec(s.buf, g), mop, root)
    else:
        # MPI writes nothing on non-roots; PyTorch leaves their tensor as it was
        req = g.comm.Ireduce(_spec(s.buf, g), None, mop, root)
        return _run(what, g, [req], None, async_op, (tensor,))
    steps = [s.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(s, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (tensor,))


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group, in place on every rank."""
    return _reduce_call(tensor, op, group, async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group into rank `dst`'s tensor (the others keep theirs)."""
    return _reduce_call(tensor, op, group, async_op, dst=dst, what="reduce")


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s tensor into every rank's `tensor`."""
    what = "broadcast"
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _skip(async_op)
    root, err = _root(src, g, "src")
    _check(g, what, [what, _key(tensor), f"src={src}"], err)
    s = _Staged(tensor, fill=(g.rank() == root))
    req = g.comm.Ibcast(_spec(s.buf, g), root)
    return _run(what, g, [req], s.back, async_op, (tensor,))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's `input_tensor` along dim 0 into `output_tensor` (shape
    (world * n, ...) or (world, n...) with input's numel per rank)."""
    what = "all_gather_into_tensor"
    out, inp = output_tensor, input_tensor
    g, _ = _begin(what, group, [("output_tensor", out), ("input_tensor", inp)])
    if g is None:
        return _skip(async_op)
    size_err = None
    if out.dtype != inp.dtype or out.numel() != inp.numel() * g.size():
        size_err = (f"output_tensor {_desc(out)} must hold {g.size()} (the group's size) "
                    f"times the input {_desc(inp)}")
    _check(g, what, [what, _key(inp)], _mixed_devices([out, inp]), size_err)
    si, so = _Staged(inp), _Staged(out, fill=False)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(so.buf, g))
    return _run(what, g, [req], so.back, async_op, (out,))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's `tensor`, on every rank."""
    what = "all_gather"
    g, (ts,) = _begin(what, group, [("tensor", tensor)], [("tensor_list", tensor_list)])
    if g is None:
        return _skip(async_op)
    _check(g, what, [what, _key(tensor)], _same_tensors(ts, tensor, g, "tensor_list"))
    si = _Staged(tensor)
    # one contiguous receive buffer; scattered into the list afterwards
    buf = em.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(buf, g))
    return _run(what, g, [req], _unstack(buf, ts), async_op, tuple(ts))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (world * n elements) across ranks; rank i gets the i-th block of n
    in `output`."""
    what = "reduce_scatter_tensor"
    g, _ = _begin(what, group, [("output", output), ("input", input)])
    if g is None:
        return _skip(async_op)
    mop, err = _mpi_op(op, output.dtype, what)
    size_err = None
    if output.dtype != input.dtype or input.numel() != output.numel() * g.size():
        size_err = (f"input {_desc(input)} must hold {g.size()} (the group's size) times "
                    f"the output {_desc(output)}")
    _check(g, what, [what, _key(output), op.name], err, _mixed_devices([output, input]),
           size_err)
    si, so = _Staged(input, reduce=True), _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(si.buf, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce input_list[i] across ranks into rank i's `output`."""
    what = "reduce_scatter"
    g, (ts,) = _begin(what, group, [("output", output)], [("input_list", input_list)])
    if g is None:
        return _skip(async_op)
    mop, err = _mpi_op(op, output.dtype, what)
    _check(g, what, [what, _key(output), op.name], err,
           _same_tensors(ts, output, g, "input_list"))
    work_dtype = em.float32 if output.dtype == em.float16 else output.dtype
    send = _stack(ts, work_dtype)
    so = _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(send, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def _rooted_list(tensor, tensors, root_rank, root_name, g, list_name, what):
    """(error or None, root, tensors) of gather's and scatter's arguments: the root
    passes one tensor like `tensor` per rank of the group, the other ranks pass None."""
    root, err = _root(root_rank, g, root_name)
    if err:
        return err, -1, []
    if g.rank() != root:
        return ((f"{list_name} must be None or empty on ranks other than "
                 f"{root_name}={root_rank}") if tensors else None), root, []
    if tensors is None:
        side = "destination" if root_name == "dst" else "source"
        return f"{list_name} is required on the {side} rank {root_rank}", root, []
    ts = _list(tensors, list_name, what)
    return _same_tensors(ts, tensor, g, list_name), root, ts


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """gather_list[i] = rank i's `tensor`, on rank `dst` only (the others pass None)."""
    what = "gather"
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _skip(async_op)
    err, root, ts = _rooted_list(tensor, gather_list, dst, "dst", g, "gather_list", what)
    _check(g, what, [what, _key(tensor), f"dst={dst}"], err)
    si = _Staged(tensor)
    if g.rank() == root:
        buf = em.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
        req = g.comm.Igather(_spec(si.buf, g), _spec(buf, g), root)
        return _run(what, g, [req], _unstack(buf, ts), async_op, tuple(ts))
    req = g.comm.Igather(_spec(si.buf, g), None, root)
    return _run(what, g, [req], None, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank i's `tensor` = scatter_list[i] of rank `src` (the others pass None)."""
    what = "scatter"
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _skip(async_op)
    err, root, ts = _rooted_list(tensor, scatter_list, src, "src", g, "scatter_list", what)
    _check(g, what, [what, _key(tensor), f"src={src}"], err)
    so = _Staged(tensor, fill=False)
    send = _spec(_stack(ts, tensor.dtype), g) if g.rank() == root else None
    req = g.comm.Iscatter(send, _spec(so.buf, g), root)
    return _run(what, g, [req], so.back, async_op, (tensor,))


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    what = "barrier"
    g, _ = _begin(what, group)
    if g is None:
        return _skip(async_op)
    # the check's exchange also catches a rank that called another collective here
    _check(g, what, [what])
    return _run(what, g, [g.comm.Ibarrier()], None, async_op)


def all_gather_object(object_list, obj, group=None):
    """object_list[i] = rank i's `obj` (any picklable object), on every rank; object_list
    is a list with one entry per rank of the group. Like PyTorch's, it unpickles what the
    other ranks sent: call it only among processes you trust."""
    what = "all_gather_object"
    g, _ = _begin(what, group)
    if g is None:
        return None
    err = data = None
    if not isinstance(object_list, list) or len(object_list) != g.size():
        got = f"{len(object_list)} entries" if isinstance(object_list, list) \
            else type(object_list).__name__
        err = f"object_list must be a list of {g.size()} (the group's size), got {got}"
    try:
        data = pickle.dumps(obj)
    except Exception as e:      # what pickle raises for an object it can't take varies
        err = err or f"obj can't be pickled: {type(e).__name__}: {e}"
    _check(g, what, [what], err)
    for i, b in enumerate(_allgather_bytes(g, g.comm, data, what)):
        object_list[i] = pickle.loads(b)
    return None


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank j's output_tensor_list[i] = rank i's input_tensor_list[j]; the tensors may
    have different sizes per pair (all of one dtype)."""
    what = "all_to_all"
    g, (outs, ins) = _begin(what, group, lists=[("output_tensor_list", output_tensor_list),
                                                 ("input_tensor_list", input_tensor_list)])
    if g is None:
        return _skip(async_op)
    n = g.size()
    err = None
    if len(outs) != n or len(ins) != n:
        err = (f"output_tensor_list and input_tensor_list need {n} tensors each (the "
               f"group's size), got {len(outs)} and {len(ins)}")
    elif len({t.dtype for t in outs + ins}) > 1:
        err = f"the tensors must have one dtype, got {sorted({t.dtype.name for t in outs + ins})}"
    dtype = (outs + ins)[0].dtype if outs + ins else em.float32
    sizes = [[list(t.shape) for t in ins], [list(t.shape) for t in outs]] \
        if err is None else None
    extra = _check(g, what, [what, dtype.name], err, extra=sizes)
    if extra is not None:
        _pairs(g, extra, what, lambda i, j, sent, want: (
            f"rank {g.ranks[i]} sends {sent} to rank {g.ranks[j]}, whose "
            f"output_tensor_list[{i}] is {want}"))
    scount = [t.numel() for t in ins]
    rcount = [t.numel() for t in outs]
    with em.no_grad():
        send = em.cat([t.detach().reshape(-1).to(device="cpu") for t in ins]) \
            if sum(scount) else em.empty((0,), dtype=dtype)
    recv = em.empty((sum(rcount),), dtype=dtype)
    req = g.comm.Ialltoallv([send, (scount, _displs(scount)), g._types[dtype]],
                            [recv, (rcount, _displs(rcount)), g._types[dtype]])

    def finish():
        with em.no_grad():
            off = 0
            for t, c in zip(outs, rcount):
                t.detach().copy_(recv[off:off + c].reshape(tuple(t.shape)).to(device=t.device))
                off += c
    return _run(what, g, [req], finish, async_op, tuple(outs))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """all_to_all on dim-0 blocks of one tensor each: `input` is cut into
    input_split_sizes rows (equal blocks when None) sent to ranks 0..n-1; `output`
    receives the blocks of every rank in rank order. Zero copy for contiguous CPU tensors."""
    what = "all_to_all_single"
    g, _ = _begin(what, group, [("output", output), ("input", input)])
    if g is None:
        return _skip(async_op)
    n = g.size()

    def splits(t, given, name):
        rows = t.shape[0] if t.ndim else 1
        if given is None:
            if rows % n:
                return None, f"{name}'s {rows} rows don't split into {n} equal blocks"
            return [rows // n] * n, None
        given = [int(x) for x in given]
        if len(given) != n or sum(given) != rows or min(given) < 0:
            return None, (f"{name}_split_sizes {given} must be {n} non-negative sizes "
                          f"adding up to its {rows} rows")
        return given, None
    ins, err = splits(input, input_split_sizes, "input")
    outs, err2 = splits(output, output_split_sizes, "output")
    err = err or err2
    if err is None and (input.dtype != output.dtype or tuple(input.shape[1:]) !=
                        tuple(output.shape[1:])):
        err = f"input {_desc(input)} and output {_desc(output)} differ past dim 0"
    extra = _check(g, what, [what, input.dtype.name, str(list(input.shape[1:]))], err,
                   extra=[ins, outs])
    if extra is not None:
        _pairs(g, extra, what, lambda i, j, sent, want: (
            f"rank {g.ranks[i]} sends {sent} rows to rank {g.ranks[j]}, which expects {want}"))
    row = math.prod(input.shape[1:]) if input.ndim else 1
    si, so = _Staged(input), _Staged(output, fill=False)
    sc, rc = [k * row for k in ins], [k * row for k in outs]
    t = g._types[input.dtype]
    req = g.comm.Ialltoallv([si.buf, (sc, _displs(sc)), t], [so.buf, (rc, _displs(rc)), t])
    return _run(what, g, [req], so.back, async_op, (output,))


def _pairs(g, extra, what, message):
    """all_to_all's check, run alike on every rank: what rank i sends to rank j
    (extra[i][0][j]) must be what j expects from i (extra[j][1][i])."""
    for i in range(g.size()):
        for j in range(g.size()):
            if extra[i][0][j] != extra[j][1][i]:
                raise ValueError(f"{what}: " + message(i, j, extra[i][0][j], extra[j][1][i]))
