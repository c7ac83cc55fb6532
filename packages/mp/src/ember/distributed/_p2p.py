"""Point to point: send, recv, isend, irecv.

A header (shape, dtype) travels ahead of the data on the metadata communicator when the
check is on, so a receive into a tensor of another shape or dtype raises on the receiver
instead of truncating or misreading the bytes."""
import json
import math

import ember as em
from ember.distributed._check import _begin
from ember.distributed._collectives import _root
from ember.distributed._mpi import _STATE, _mpi
from ember.distributed._staging import _desc, _spec, _Staged
from ember.distributed._work import Work, _Done, _poll


def _p2p_peer(peer, g, name, what):
    if peer is None:
        return _mpi().ANY_SOURCE
    r, err = _root(peer, g, name)
    if err:
        raise ValueError(f"{what}: {err}")
    if r == g.rank():
        raise ValueError(f"{what}: {name}={peer} is this rank itself")
    return r


def isend(tensor, dst, group=None, tag=0):
    """Start sending `tensor` to rank `dst`; returns a Work."""
    what = "isend"
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _Done()
    peer = _p2p_peer(dst, g, "dst", what)
    reqs = []
    if _STATE.check:
        header = json.dumps([list(tensor.shape), tensor.dtype.name]).encode()
        reqs.append(g.meta.Isend([header, _mpi().BYTE], peer, tag))
    s = _Staged(tensor)
    reqs.append(g.comm.Isend(_spec(s.buf, g), peer, tag))
    return Work(f"{what} to rank {dst}", g, reqs, None, (tensor,))


def send(tensor, dst, group=None, tag=0):
    """Send `tensor` to rank `dst` (returns when the data left this buffer)."""
    isend(tensor, dst, group, tag).wait()


class _RecvWork(Work):
    """irecv's handle: with the check on it first receives the header (and learns the
    sender when src is None), then posts the data receive from that sender."""

    def __init__(self, g, tensor, src, tag, what):
        self._t, self._tag, self._group = tensor, tag, g
        self._s = _Staged(tensor, fill=False)
        self._header = _STATE.check
        if self._header:
            self._hbuf = bytearray(4096)
            req = g.meta.Irecv([self._hbuf, _mpi().BYTE], src, tag)
        else:
            req = self._data_request(src)
        super().__init__(what, g, [req], None, (tensor,))
        self._statuses = [_mpi().Status()]

    def _data_request(self, src):
        return self._group.comm.Irecv(_spec(self._s.buf, self._group), src, self._tag)

    def _complete(self):
        st = self._statuses[0]
        peer = st.Get_source()
        if not self._header:
            self._done, self._requests = True, None
            self._s.back()
            self._value = self._group.ranks[peer]
            return
        self._header = False
        shape, dtype = json.loads(bytes(self._hbuf[:st.Get_count(_mpi().BYTE)]))
        if shape != list(self._t.shape) or dtype != self._t.dtype.name:
            self._done, self._requests = True, None
            # take the data message anyway so that the channel stays in step
            drain = self._group.comm.Irecv([bytearray(math.prod(shape) * _itemsize(dtype)),
                                            _mpi().BYTE], peer, self._tag)
            _poll([drain], self._deadline, self._what, self._group, True)
            raise ValueError(f"recv: rank {self._group.ranks[peer]} sent {tuple(shape)} "
                             f"{dtype} but the receiving tensor is {_desc(self._t)}")
        self._requests = [self._data_request(peer)]


def _itemsize(name):
    return getattr(em, name).itemsize


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns a
    Work (its wait() then tells nothing; recv() returns the sender)."""
    what = "irecv"
    g, _ = _begin(what, group, [("tensor", tensor)])
    if g is None:
        return _Done()
    peer = _p2p_peer(src, g, "src", what)
    return _RecvWork(g, tensor, peer, tag, f"{what} from rank {'any' if src is None else src}")


def recv(tensor, src=None, group=None, tag=0):
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's
    rank."""
    w = irecv(tensor, src, group, tag)
    if isinstance(w, _Done):
        return -1
    w.wait()
    return w._source()
