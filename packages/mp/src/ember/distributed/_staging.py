"""Tensors as MPI buffers: argument checks, and the contiguous CPU copies that MPI reads
and writes when it can't use a tensor's own memory."""
import ember as em


def _tensor(t, name, op):
    if not isinstance(t, em.Tensor):
        raise TypeError(f"{op}: {name} must be an ember Tensor, got {type(t).__name__}")
    return t


def _list(ts, name, op):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(ts).__name__}")
    return [_tensor(t, f"{name}[{i}]", op) for i, t in enumerate(ts)]


def _desc(t):
    return f"{tuple(t.shape)} {t.dtype.name}"


class _Staged:
    """A contiguous CPU tensor MPI reads or writes for `t`: `t` itself when possible
    (zero copy), else a copy that `back()` writes into `t` afterwards."""
    __slots__ = ("t", "buf", "copied")

    def __init__(self, t, reduce=False, fill=True):
        self.t = t
        dt = em.float32 if reduce and t.dtype == em.float16 else t.dtype
        if t.device.type == "cpu" and t.is_contiguous() and dt == t.dtype:
            self.buf, self.copied = t.detach(), False
            return
        with em.no_grad():
            if fill:
                self.buf = t.detach().to(device="cpu", dtype=dt).contiguous()
                if self.buf.data_ptr() == t.data_ptr():
                    self.buf = self.buf.clone()
            else:
                self.buf = em.empty(tuple(t.shape), dtype=dt)
        self.copied = True

    def back(self):
        if self.copied:
            with em.no_grad():
                self.t.detach().copy_(self.buf.to(device=self.t.device))


def _spec(buf, group):
    """mpi4py's [buffer, datatype] for a contiguous CPU tensor (zero copy)."""
    return [buf, group._types[buf.dtype]]


def _chain(*fns):
    def run():
        for f in fns:
            f()
    return run


def _divide(staged, n):
    def run():
        with em.no_grad():
            staged.buf.div_(n)
    return run


def _unstack(buf, ts):
    def run():
        with em.no_grad():
            for i, t in enumerate(ts):
                t.detach().copy_(buf[i].to(device=t.device))
    return run


def _stack(ts, dtype):
    """The tensors of `ts` (same shape) in one contiguous CPU buffer."""
    with em.no_grad():
        return em.stack([t.detach().to(device="cpu", dtype=dtype) for t in ts])
