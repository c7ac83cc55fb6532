"""Functions the tests run in child processes. They live in an importable module
(the tests put this folder on sys.path, which spawn and forkserver children inherit):
pytest imports test files under names children could not import."""
import gc
import os
import resource
import signal
import sys
import time

import ember as em
import ember.multiprocessing as mp


def ember_segments(*pids):
    """ember's named segments in /dev/shm created by these processes (this one when
    none given): /dev/shm is shared with whatever else runs on the machine."""
    pids = {str(p) for p in pids or (os.getpid(),)}
    return sorted(n for n in os.listdir("/dev/shm")
                  if n.startswith("ember_") and n.split("_")[1] in pids)


def wait_until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def describe(t):
    return {"values": t.tolist(), "shape": tuple(t.shape), "stride": tuple(t.stride()),
            "offset": t.storage_offset(), "dtype": t.dtype.name, "type": type(t).__name__,
            "requires_grad": t.requires_grad, "shared": t.is_shared(),
            "data_ptr": t.data_ptr(), "storage_ptr": t.untyped_storage().data_ptr(),
            "storage_id": id(t.untyped_storage())}


def serve(inbox, outbox):
    """A child that runs commands: (name, args) -> outbox.put(result); None stops.
    Received tensors can be kept under a key (so the storage stays mapped)."""
    kept = {}

    def keep(key, value):
        kept[key] = value
        return True

    def info(key):
        v = kept[key]
        return [describe(t) for t in v] if isinstance(v, (list, tuple)) else describe(v)

    def fill(key, value):
        kept[key].fill_(value)
        return True

    def echo(key):
        return kept[key]

    def drop(key):
        kept.pop(key, None)
        return True

    def segments():
        return mp._shared.live_segments()

    def make_shared(key, n, strategy):
        mp.set_sharing_strategy(strategy)
        kept[key] = em.full((n,), 7.0).share_memory_()
        return kept[key]

    def pid():
        return os.getpid()

    def sleep(seconds):
        time.sleep(seconds)
        return True

    commands = dict(keep=keep, info=info, fill=fill, echo=echo, drop=drop, pid=pid,
                    segments=segments, make_shared=make_shared, sleep=sleep)
    while True:
        msg = inbox.get()
        if msg is None:
            break
        name, args = msg
        try:
            outbox.put(("ok", commands[name](*args)))
        except Exception as e:      # reported to the test, which fails with it
            outbox.put(("error", f"{type(e).__name__}: {e}"))


# holders for the leak tests ------------------------------------------------------------------

def hold_and_wait(strategy, inbox, outbox, n_own):
    """Map what the parent sends, create `n_own` segments of its own, report, sleep."""
    mp.set_sharing_strategy(strategy)
    got = inbox.get()
    mine = [em.ones(1024).share_memory_() for _ in range(n_own)]
    outbox.put((os.getpid(), [t.is_shared() for t in got], mine[0] if mine else None))
    time.sleep(120)


# file descriptor limits ------------------------------------------------------------------------

def create_under_fd_limit(soft, hard, n, outbox):
    """Lower RLIMIT_NOFILE, then share `n` tensors (each keeps a memfd open)."""
    mp.set_sharing_strategy("file_descriptor")
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    kept = []
    try:
        for _ in range(n):
            kept.append(em.ones(16).share_memory_())
        outbox.put(("ok", len(kept), resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    except Exception as e:
        outbox.put(("error", type(e).__name__, str(e), len(kept)))


def receive_under_fd_limit(soft, hard, inbox, outbox):
    """Lower RLIMIT_NOFILE, then receive (and keep) tensors until None."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    kept = []
    try:
        while True:
            t = inbox.get()
            if t is None:
                break
            kept.append(t)
        ok = all(float(t.sum()) == 16.0 for t in kept)
        outbox.put(("ok", len(kept), ok, resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    except Exception as e:
        outbox.put(("error", type(e).__name__, str(e), len(kept)))


# spawn() targets -------------------------------------------------------------------------------

def write_rank(i, out):
    out[i] = i + 1


def raise_in_one(i, bad):
    if i == bad:
        raise ValueError(f"bad value in process {i}")
    time.sleep(30)      # stopped by the parent once the other one failed


def kill_self(i):
    if i == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(30)


def exit_with(i, code):
    sys.exit(code)


def resend_inherited(inherited, go, outbox):
    """A forked child: wait until the parent dropped `inherited`, then send it back."""
    go.wait(30)
    outbox.put(inherited)
    time.sleep(0.5)


def backward_in_child(i, out):
    """Autograd and the CPU thread pool in a forked child whose parent used both."""
    x = em.ones(512, 512, requires_grad=True)      # big enough for the thread pool
    ((x * 2).sin() @ x).sum().backward()
    out[i] = x.grad.sum()


def send_and_exit(strategy, outbox):
    mp.set_sharing_strategy(strategy)
    outbox.put(em.full((100,), 3.0))
    outbox.close()
    outbox.join_thread()        # the handle is in the pipe; then this process is gone


def receive_and_drop(inbox, outbox):
    """Receive tensors and drop them; report this process's fd count before and after."""
    first = inbox.get()
    fds = len(os.listdir("/proc/self/fd"))
    n, ok = 0, first.sum().item() == 10.0
    del first
    while True:
        t = inbox.get()
        if t is None:
            break
        ok = ok and t.sum().item() == 10.0
        n += 1
        del t
    gc.collect()
    outbox.put((n, ok, fds, len(os.listdir("/proc/self/fd"))))
