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

import ember as em
from ember.distributed._check import _Invalid, _check, _displs, _key
from ember.distributed._groups import _group
from ember.distributed._mpi import _STATE, _mpi
from ember.distributed._staging import (_chain, _desc, _divide, _spec, _stack, _Staged,
                                        _tensor, _unstack)
from ember.distributed._work import _Done, _run


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
    MPI = _mpi()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be an ember.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        raise _Invalid(f"ReduceOp.AVG needs a floating-point tensor, got {dtype.name}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise _Invalid(f"ReduceOp.{op.name} needs an integer or bool tensor, got "
                       f"{dtype.name}")
    if dtype == em.bool:
        return {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _root(rank, group, name):
    """A global rank -> its rank in `group`."""
    try:
        return group.ranks.index(int(rank))
    except ValueError:
        raise _Invalid(f"{name}={rank} is not a rank of the group {group.ranks}") from None


def _same_tensors(ts, like, name, op):
    """None when every tensor of the list `ts` has `like`'s shape and dtype, else why not."""
    for i, t in enumerate(ts):
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            return f"{name}[{i}] is {_desc(t)} but the tensor is {_desc(like)}"
    return None


def _list(ts, name, op):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(ts).__name__}")
    return [_tensor(t, f"{name}[{i}]", op) for i, t in enumerate(ts)]


def _mixed_devices(tensors):
    """Why the tensors can't go together (None when they can), reported to every rank."""
    devs = {str(t.device) for t in tensors}
    return f"the tensors are on different devices: {sorted(devs)}" if len(devs) > 1 else None


def _reduce_call(tensor, op, group, async_op, check, dst=None, what="all_reduce"):
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        mop = _mpi_op(op, tensor.dtype, what)
        root = None if dst is None else _root(dst, g, "dst")
    except _Invalid as e:
        err = str(e)
    key = [what, _key(tensor), op.name] + ([] if dst is None else [f"dst={dst}"])
    _check(g, what, err, key, check)
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
    return _reduce_call(tensor, op, group, async_op, _STATE.check)


def _all_reduce_unchecked(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce without the metadata check, for callers that verified the layout
    once (DistributedDataParallel's buckets)."""
    return _reduce_call(tensor, op, group, async_op, False)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group into rank `dst`'s tensor (the others keep theirs)."""
    return _reduce_call(tensor, op, group, async_op, _STATE.check, dst=dst, what="reduce")


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s tensor into every rank's `tensor`."""
    what = "broadcast"
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        root = _root(src, g, "src")
    except _Invalid as e:
        err = str(e)
    _check(g, what, err, [what, _key(tensor), f"src={src}"], _STATE.check)
    s = _Staged(tensor, fill=(g.rank() == root))
    req = g.comm.Ibcast(_spec(s.buf, g), root)
    return _run(what, g, [req], s.back, async_op, (tensor,))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's `input_tensor` along dim 0 into `output_tensor` (shape
    (world * n, ...) or (world, n...) with input's numel per rank)."""
    what = "all_gather_into_tensor"
    out, inp = _tensor(output_tensor, "output_tensor", what), _tensor(input_tensor,
                                                                         "input_tensor", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = _mixed_devices([out, inp])
    if err is None and (out.dtype != inp.dtype or out.numel() != inp.numel() * g.size()):
        err = (f"output_tensor {_desc(out)} must hold {g.size()} (the group's size) times "
               f"the input {_desc(inp)}")
    _check(g, what, err, [what, _key(inp)], _STATE.check)
    si, so = _Staged(inp), _Staged(out, fill=False)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(so.buf, g))
    return _run(what, g, [req], so.back, async_op, (out,))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's `tensor`, on every rank."""
    what = "all_gather"
    _tensor(tensor, "tensor", what)
    ts = _list(tensor_list, "tensor_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    if len(ts) != g.size():
        err = f"tensor_list has {len(ts)} tensors, expected {g.size()} (the group's size)"
    else:
        err = _same_tensors(ts, tensor, "tensor_list", what)
    _check(g, what, err, [what, _key(tensor)], _STATE.check)
    si = _Staged(tensor)
    # one contiguous receive buffer; scattered into the list afterwards
    buf = em.empty((g.size(),) + tuple(tensor.shape), dtype=tensor.dtype)
    req = g.comm.Iallgather(_spec(si.buf, g), _spec(buf, g))
    return _run(what, g, [req], _unstack(buf, ts), async_op, tuple(ts))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (world * n elements) across ranks; rank i gets the i-th block of n
    in `output`."""
    what = "reduce_scatter_tensor"
    _tensor(output, "output", what), _tensor(input, "input", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = _mixed_devices([output, input])
    try:
        mop = _mpi_op(op, output.dtype, what)
    except _Invalid as e:
        err = str(e)
    if err is None and (output.dtype != input.dtype or
                        input.numel() != output.numel() * g.size()):
        err = (f"input {_desc(input)} must hold {g.size()} (the group's size) times the "
               f"output {_desc(output)}")
    _check(g, what, err, [what, _key(output), op.name], _STATE.check)
    si, so = _Staged(input, reduce=True), _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(si.buf, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce input_list[i] across ranks into rank i's `output`."""
    what = "reduce_scatter"
    _tensor(output, "output", what)
    ts = _list(input_list, "input_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    err = None
    try:
        mop = _mpi_op(op, output.dtype, what)
    except _Invalid as e:
        err = str(e)
    if err is not None:
        pass
    elif len(ts) != g.size():
        err = f"input_list has {len(ts)} tensors, expected {g.size()} (the group's size)"
    else:
        err = _same_tensors(ts, output, "input_list", what)
    _check(g, what, err, [what, _key(output), op.name], _STATE.check)
    work_dtype = em.float32 if output.dtype == em.float16 else output.dtype
    send = _stack(ts, work_dtype)
    so = _Staged(output, reduce=True, fill=False)
    req = g.comm.Ireduce_scatter_block(_spec(send, g), _spec(so.buf, g), mop)
    steps = [so.back]
    if op is ReduceOp.AVG:
        steps.insert(0, _divide(so, g.size()))
    return _run(what, g, [req], _chain(*steps), async_op, (output,))


def _rooted(tensor, tensors, root_rank, root_name, group, list_name, what):
    """The start of gather and scatter: (group, root, tensors) after the metadata
    check, or None on a rank outside the group. The root passes one tensor like
    `tensor` per rank of the group, the other ranks pass None."""
    _tensor(tensor, "tensor", what)
    g = _group(group, what)
    if g is None:
        return None
    err, root, ts = _rooted_list(tensor, tensors, root_rank, root_name, g, list_name, what)
    _check(g, what, err, [what, _key(tensor), f"{root_name}={root_rank}"], _STATE.check)
    return g, root, ts


def _rooted_list(tensor, tensors, root_rank, root_name, g, list_name, what):
    """(error or None, root, tensors) of gather's and scatter's arguments."""
    try:
        root = _root(root_rank, g, root_name)
    except _Invalid as e:
        return str(e), -1, []
    if g.rank() != root:
        return ((f"{list_name} must be None or empty on ranks other than "
                 f"{root_name}={root_rank}") if tensors else None), root, []
    if tensors is None:
        side = "destination" if root_name == "dst" else "source"
        return f"{list_name} is required on the {side} rank {root_rank}", root, []
    ts = _list(tensors, list_name, what)
    if len(ts) != g.size():
        return (f"{list_name} has {len(ts)} tensors, expected {g.size()} (the group's size)",
                root, ts)
    return _same_tensors(ts, tensor, list_name, what), root, ts


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """gather_list[i] = rank i's `tensor`, on rank `dst` only (the others pass None)."""
    what = "gather"
    start = _rooted(tensor, gather_list, dst, "dst", group, "gather_list", what)
    if start is None:
        return _Done() if async_op else None
    g, root, ts = start
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
    start = _rooted(tensor, scatter_list, src, "src", group, "scatter_list", what)
    if start is None:
        return _Done() if async_op else None
    g, root, ts = start
    so = _Staged(tensor, fill=False)
    send = _spec(_stack(ts, tensor.dtype), g) if g.rank() == root else None
    req = g.comm.Iscatter(send, _spec(so.buf, g), root)
    return _run(what, g, [req], so.back, async_op, (tensor,))


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    what = "barrier"
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
    # the check's exchange also catches a rank that called another collective here
    _check(g, what, None, [what], _STATE.check)
    return _run(what, g, [g.comm.Ibarrier()], None, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank j's output_tensor_list[i] = rank i's input_tensor_list[j]; the tensors may
    have different sizes per pair (all of one dtype)."""
    what = "all_to_all"
    outs = _list(output_tensor_list, "output_tensor_list", what)
    ins = _list(input_tensor_list, "input_tensor_list", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
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
    extra = _check(g, what, err, [what, dtype.name], _STATE.check, sizes)
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
    _tensor(output, "output", what), _tensor(input, "input", what)
    g = _group(group, what)
    if g is None:
        return _Done() if async_op else None
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
    extra = _check(g, what, err, [what, input.dtype.name, str(list(input.shape[1:]))],
                   _STATE.check, [ins, outs])
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
