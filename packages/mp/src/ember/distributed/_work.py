"""Waiting for MPI: polling requests against the group's deadline, and the Work handles
that async_op=True returns."""
import os
import time

from ember.distributed._groups import _seconds
from ember.distributed._mpi import _STATE, DistBackendError, DistTimeoutError, _mpi


def _fail(reason):
    _STATE.failure = reason


_SPIN = 5e-3        # waiting longer than this, yield the core between polls
_DOZE = 1.0         # waiting longer than this, sleep between polls
_BUSY_CALL = 10e-6  # a test that takes longer than this moved data: progress
_MAX_PAUSE = 1e-3


def _poll(requests, deadline, what, group, block, statuses=None):
    """Test `requests` until all are done (or once when not `block`); True when done.
    MPICH moves data only inside MPI calls, so the loop polls without pause, as MPI's
    own blocking calls do: sleeping between polls would stall a transfer in progress
    (each poll moves a little). After 5 ms without a slow (data-moving) test it yields
    the core between polls, so that a late peer on the same machine gets to run; after
    1 s (a peer busy evaluating or checkpointing) it sleeps, 20 us doubling to 1 ms."""
    MPI = _mpi()
    clock = time.perf_counter
    pause = 0.0
    active = clock()
    until = active + (deadline - time.monotonic())     # the deadline on this clock
    try:
        while True:
            t0 = clock()
            if MPI.Request.Testall(requests, statuses):
                return True
            if not block:
                return False
            t1 = clock()
            if t1 > until:
                break
            if t1 - t0 > _BUSY_CALL:
                active, pause = t1, 0.0
            elif t1 - active > _DOZE:
                pause = min(max(2 * pause, 20e-6), _MAX_PAUSE)
                time.sleep(pause)
            elif t1 - active > _SPIN:
                os.sched_yield()
    except MPI.Exception as e:
        _fail(f"{what}: MPI error: {e.Get_error_string()}")
        raise DistBackendError(f"{what} failed in MPI: {e.Get_error_string()} "
                               f"(group ranks {group.ranks})") from None
    _fail(f"{what} timed out")
    raise DistTimeoutError(
        f"{what}: timed out after {group.timeout:g} s waiting for the other ranks of the "
        f"group {group.ranks} (one may have died, hung, or not called {what.split()[0]}); "
        f"the process groups are now unusable")


class Work:
    """The handle of an operation started with async_op=True (and of isend/irecv).
    wait() blocks until it is done (raising DistTimeoutError past the group's timeout)
    and returns True; is_completed() asks without blocking."""

    def __init__(self, what, group, requests, finish=None, outputs=()):
        self._what = what
        self._group = group
        self._requests = requests
        self._finish = finish       # copies staged results back, divides for AVG, ...
        self._outputs = outputs
        self._deadline = time.monotonic() + group.timeout
        self._done = False
        self._value = None
        self._statuses = None

    def _complete(self):
        self._done = True
        self._requests = None
        if self._finish is not None:
            self._value = self._finish()
            self._finish = None

    def is_completed(self):
        while not self._done and _poll(self._requests, self._deadline, self._what,
                                       self._group, False, self._statuses):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        deadline = self._deadline
        if timeout is not None:
            deadline = min(deadline, time.monotonic() + _seconds(timeout, "Work.wait"))
        while not self._done:     # _complete may start a next step (irecv)
            _poll(self._requests, deadline, self._what, self._group, True, self._statuses)
            self._complete()
        return True

    def is_success(self):
        return self._done

    def result(self):
        """The output tensors."""
        self.wait()
        return list(self._outputs)

    def _source(self):
        return self._value

    def __repr__(self):
        return f"Work({self._what}, completed={self._done})"


class _Done(Work):
    """A finished no-op (a rank outside the group, an empty transfer)."""

    def __init__(self):
        self._done, self._outputs, self._value = True, (), None


def _run(what, group, requests, finish, async_op, outputs=()):
    w = Work(what, group, requests, finish, outputs)
    if async_op:
        return w
    w.wait()
    return None
