"""What every collective does before any data moves: its arguments checked on this rank
(_begin), then across the ranks (_check, the metadata check: the ranks exchange a short
description of their call, and a bad argument on any rank or a mismatch raises the same
ValueError on every rank)."""
import array
import json
import time

from ember.distributed._groups import _group
from ember.distributed._mpi import _STATE, _mpi
from ember.distributed._staging import _list, _tensor
from ember.distributed._work import _Done, _poll


def _begin(what, group, tensors=(), lists=()):
    """The first step of every collective and point-to-point call: the arguments' types,
    checked on this rank alone (a TypeError at once: a bug in this rank's code, nothing
    the ranks need to agree on), then the group. `tensors` and `lists` are (name, value)
    pairs. Returns the group, None on a rank outside it (where the call does nothing,
    see _skip), and the lists of tensors as lists."""
    for name, t in tensors:
        _tensor(t, name, what)
    lists = [_list(ts, name, what) for name, ts in lists]
    return _group(group, what), lists


def _skip(async_op):
    """What a collective returns on a rank outside its group."""
    return _Done() if async_op else None


def _exchange(group, mine, what):
    """Every rank's JSON-able `mine`, in group-rank order, on the group's metadata
    communicator."""
    return [json.loads(b) for b in
            _allgather_bytes(group, group.meta, json.dumps(mine).encode(), what)]


def _allgather_bytes(group, comm, data, what):
    """Every rank's bytes `data`, in group-rank order (two small allgathers on `comm`,
    one of the group's communicators, polled against the deadline like the data)."""
    MPI = _mpi()
    n = group.size()
    deadline = time.monotonic() + group.timeout
    lengths = array.array("q", [0] * n)
    _poll([comm.Iallgather([array.array("q", [len(data)]), MPI.INT64_T],
                           [lengths, MPI.INT64_T])], deadline, what, group, True)
    displs = _displs(lengths)
    out = bytearray(sum(lengths))
    _poll([comm.Iallgatherv([data, MPI.BYTE], [out, (list(lengths), displs), MPI.BYTE])],
          deadline, what, group, True)
    return [bytes(out[d:d + k]) for d, k in zip(displs, lengths)]


def _check(group, what, key, *errors, extra=None, enabled=True):
    """Raise the same ValueError on every rank when any rank's call is bad (the first of
    its own `errors` that is not None) or its `key` (op name, shapes, dtypes, roots...)
    differs. `extra` (per-rank data) is returned for op-specific checks such as
    all_to_all's sizes. Off (`enabled` False or set_metadata_check(False)), each rank
    raises its own error alone."""
    local_error = next((e for e in errors if e), None)
    if not (enabled and _STATE.check):
        if local_error:
            raise ValueError(f"{what}: {local_error}")
        return None
    everyone = _exchange(group, [local_error, key, extra], what)
    errors = [(r, e) for r, (e, _, _) in enumerate(everyone) if e]
    if errors:
        raise ValueError(f"{what}: " + "; ".join(f"rank {group.ranks[r]}: {e}"
                                                  for r, e in errors))
    keys = [k for _, k, _ in everyone]
    if any(k != keys[0] for k in keys):
        lines = ", ".join(f"rank {group.ranks[r]} called {_fmt(k)}" for r, k in enumerate(keys))
        raise ValueError(f"{what}: the ranks' calls do not match: {lines}")
    return [x for _, _, x in everyone]


def _fmt(key):
    name, *args = key
    return f"{name}({', '.join(str(a) for a in args)})"


def _key(t):
    return f"{list(t.shape)} {t.dtype.name}"


def _displs(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out
