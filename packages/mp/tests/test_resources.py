"""Resources: nothing left in /dev/shm (also when processes are killed), a full
/dev/shm gives a clear error, and running out of file descriptors is handled."""
import errno
import gc
import os
import signal
import subprocess
import sys
import textwrap
from multiprocessing.reduction import ForkingPickler

import pytest

import ember as em
import ember.multiprocessing as mp
import ember_mp_testhelpers as H


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def memfd_count():
    """This process's fds on ember's memfds: the file_descriptor strategy's storages
    (other fds, e.g. a pipe a finished worker thread closes, can come and go meanwhile)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:ember_")
        except OSError:         # closed since the listing
            pass
    return n


def test_file_descriptor_strategy_never_touches_dev_shm(strategy):
    strategy("file_descriptor")
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=H.hold_and_wait, args=("file_descriptor", inbox, outbox, 2))
    p.start()
    ts = [em.ones(4096).share_memory_() for _ in range(3)]
    inbox.put(ts)
    pid, shared, theirs = outbox.get(timeout=60)
    assert all(shared) and theirs.is_shared()
    assert H.ember_segments(os.getpid(), pid) == []
    os.kill(pid, signal.SIGKILL)
    p.join()
    assert theirs.tolist() == [1.0] * 1024       # still mapped here after the child died
    assert H.ember_segments(os.getpid(), pid) == []


def test_file_system_segments_go_when_their_holders_die(strategy):
    strategy("file_system")
    me = os.getpid()
    before = H.ember_segments(me)
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=H.hold_and_wait, args=("file_system", inbox, outbox, 3))
    p.start()
    ours = [em.zeros(4096).share_memory_() for _ in range(2)]
    our_keys = {t.untyped_storage().owner.key for t in ours}
    inbox.put(ours)
    pid, shared, theirs = outbox.get(timeout=60)      # the child created 3, sent us 1
    assert all(shared) and theirs.is_shared()
    their_key = theirs.untyped_storage().owner.key
    assert set(H.ember_segments(me)) - set(before) == our_keys
    assert len(H.ember_segments(pid)) == 3 and their_key in H.ember_segments(pid)
    os.kill(pid, signal.SIGKILL)                     # mid-way: it holds 3 + our 2
    p.join()
    # the 2 that only the child held are unlinked; ours and the one we received stay
    assert H.wait_until(lambda: H.ember_segments(pid) == [their_key])
    assert set(H.ember_segments(me)) - set(before) == our_keys
    theirs[0] = 5.0
    assert theirs[0].item() == 5.0
    del ours, theirs, inbox, outbox
    assert H.wait_until(lambda: H.ember_segments(me, pid) == before)


TREE = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {helpers!r})
    import ember as em, ember.multiprocessing as mp
    import ember_mp_testhelpers as H

    if __name__ == "__main__":
        mp.set_sharing_strategy("file_system")
        ctx = mp.get_context({method!r})
        ts = [em.zeros(1000).share_memory_() for _ in range(3)]
        inbox, outbox = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=H.hold_and_wait, args=("file_system", inbox, outbox, 2))
        p.start()
        inbox.put(ts)
        child_pid, _, _ = outbox.get()
        print(mp._shared._daemon_pid(), child_pid, flush=True)
        time.sleep(120)
""")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_killing_the_whole_tree_leaves_nothing(tmp_path, method):
    """The root and its child are SIGKILLed: the cleanup daemon unlinks everything."""
    script = tmp_path / "tree.py"
    script.write_text(TREE.format(helpers=os.path.dirname(H.__file__), method=method))
    env = dict(os.environ)
    env.pop("EMBER_SHM_DAEMON", None)        # its own daemon, as a fresh program gets
    root = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env)
    daemon_pid, child_pid = map(int, root.stdout.readline().split())
    assert len(H.ember_segments(root.pid)) == 3 and len(H.ember_segments(child_pid)) == 2
    os.kill(child_pid, signal.SIGKILL)
    root.kill()
    root.wait()
    root.stdout.close()
    assert H.wait_until(lambda: H.ember_segments(root.pid, child_pid) == [])

    def daemon_gone():
        try:
            os.kill(daemon_pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{daemon_pid}/stat") as f:      # exited, not reaped yet
            return f.read().split(") ")[1].startswith("Z")
    assert H.wait_until(daemon_gone)


# a full /dev/shm ----------------------------------------------------------------------------

class FakeStatvfs:
    f_frsize = 4096
    f_bavail = 16        # 64 KiB free
    f_blocks = 16384     # of 64 MiB


def test_full_dev_shm_file_system(strategy, monkeypatch):
    strategy("file_system")
    before = H.ember_segments()
    monkeypatch.setattr(os, "statvfs", lambda path: FakeStatvfs())
    t = em.ones(1 << 20)
    with pytest.raises(mp.SharedMemoryError, match=r"out of shared memory: a tensor storage "
                       r"of 4,194,304 bytes \(4.0 MiB\) was asked for and /dev/shm has "
                       r"65,536 bytes \(64.0 KiB\) free of 67,108,864 bytes"):
        t.share_memory_()
    assert not t.is_shared() and t.sum().item() == 1 << 20
    assert H.ember_segments() == before


@pytest.mark.parametrize("strat", ["file_descriptor", "file_system"])
def test_a_full_segment_is_an_error_not_a_sigbus(strategy, monkeypatch, strat):
    """The segment's pages are allocated by writing the data (not by touching a
    mapping): a full /dev/shm fails that write with ENOSPC, which becomes the error."""
    strategy(strat)
    before, fds = H.ember_segments(), fd_count()
    real_pwrite = os.pwrite

    def pwrite_until_full(fd, data, offset):
        if offset == 0:
            return real_pwrite(fd, memoryview(data)[:4096], offset)     # then it's full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "pwrite", pwrite_until_full)
    t = em.ones(3, 1000)
    with pytest.raises(mp.SharedMemoryError, match=r"12,000 bytes .*was asked for and "
                       r"/dev/shm has .* free of .*No space left on device"):
        ForkingPickler.dumps(t[1:])         # sending moves it to shared memory first
    assert not t.is_shared() and t.tolist() == [[1.0] * 1000] * 3
    gc.collect()
    assert fd_count() == fds and H.ember_segments() == before


# file descriptors -------------------------------------------------------------------------

def run_child(target, *args):
    ctx = mp.get_context("spawn")         # a fresh fd table, not pytest's
    out = ctx.Queue()
    p = ctx.Process(target=target, args=args + (out,))
    p.start()
    return p, out


def test_soft_fd_limit_is_raised_automatically():
    p, out = run_child(H.create_under_fd_limit, 64, 4096, 300)
    result = out.get(timeout=60)
    p.join()
    assert result[0] == "ok" and result[1] == 300 and result[2] > 64


def test_fd_exhaustion_says_what_to_do():
    p, out = run_child(H.create_under_fd_limit, 64, 64, 300)
    result = out.get(timeout=60)
    p.join()
    assert result[0] == "error" and result[1] == "FileDescriptorLimitError", result
    assert "soft limit 64, hard limit 64" in result[2]
    assert "set_sharing_strategy('file_system')" in result[2]
    assert 20 < result[3] < 64


def test_receiving_many_fds_raises_the_soft_limit(strategy):
    strategy("file_descriptor")
    ctx = mp.get_context("spawn")
    inbox, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=H.receive_under_fd_limit, args=(64, 4096, inbox, out))
    p.start()
    ts = [em.ones(16) for _ in range(200)]
    for t in ts:
        inbox.put(t)
    inbox.put(None)
    result = out.get(timeout=60)
    p.join()
    assert result == ("ok", 200, True, result[3]) and result[3] > 64


def test_receiving_at_the_hard_fd_limit_says_what_to_do(strategy):
    from multiprocessing import resource_sharer
    strategy("file_descriptor")
    ctx = mp.get_context("spawn")
    inbox, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=H.receive_under_fd_limit, args=(48, 48, inbox, out))
    p.start()
    ts = [em.ones(16) for _ in range(100)]
    for t in ts:
        inbox.put(t)
    result = out.get(timeout=60)
    p.join()
    resource_sharer.stop()      # close our copies of the fds the child could not take
    assert result[0] == "error" and result[1] == "FileDescriptorLimitError", result
    assert "receiving a shared tensor" in result[2] and "file_system" in result[2]


def test_file_system_keeps_no_fd_per_storage(strategy):
    strategy("file_system")
    # earlier tests' garbage (queues, pipes) must not close its fds mid-count: that
    # made the count dip below the baseline (68 where 70 was expected) under load
    gc.collect()
    fds, memfds = fd_count(), memfd_count()
    ts = [em.ones(100).share_memory_() for _ in range(50)]
    assert all(t.is_shared() for t in ts) and fd_count() <= fds + 1   # + the daemon's
    assert memfd_count() == memfds
    strategy("file_descriptor")
    _held = [em.ones(100).share_memory_() for _ in range(50)]   # alive while counting
    assert memfd_count() == memfds + 50               # one memfd each, no more
    assert fd_count() <= fds + 51


def test_a_forked_child_keeps_the_names_it_inherited(strategy):
    """Under fork the child inherits mappings it never received: they stay valid by
    name after the parent drops them, so the child can still send them on."""
    strategy("file_system")
    ctx = mp.get_context("fork")
    t = em.arange(10, dtype=em.float32).share_memory_()
    key = t.untyped_storage().owner.key
    go, out = ctx.Event(), ctx.Queue()
    p = ctx.Process(target=H.resend_inherited, args=(t, go, out))
    p.start()
    del t
    gc.collect()            # our hold is released: only the child holds the name now
    go.set()
    back = out.get(timeout=30)
    p.join()
    assert back.tolist() == list(range(10)) and back.untyped_storage().owner.key == key
    del back
    assert H.wait_until(lambda: key not in H.ember_segments(os.getpid()))


def test_file_system_handles_outlive_their_sender(strategy):
    strategy("file_system")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=H.send_and_exit, args=("file_system", out))
    p.start()
    p.join()
    assert p.exitcode == 0
    t = out.get(timeout=30)         # the sender is dead; the name was kept for us
    assert t.tolist() == [3.0] * 100 and t.is_shared()
    key = t.untyped_storage().owner.key
    assert H.ember_segments(p.pid) == [key]
    del t
    assert H.wait_until(lambda: H.ember_segments(p.pid) == [])


def test_file_descriptor_handles_need_a_live_sender(strategy):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=H.send_and_exit, args=("file_descriptor", out))
    p.start()
    p.join()
    with pytest.raises(RuntimeError, match="the process that sent it has exited.*file_system"):
        out.get(timeout=30)


@pytest.mark.parametrize("strat", ["file_descriptor", "file_system"])
def test_many_sends_leak_no_fds_and_no_segments(strategy, strat):
    strategy(strat)
    ctx = mp.get_context("spawn")
    inbox, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=H.receive_and_drop, args=(inbox, out))
    p.start()
    inbox.put(em.ones(10))
    fds = fd_count()
    for _ in range(300):
        inbox.put(em.ones(10))      # a new segment each time, dropped here once sent
    inbox.put(None)
    n, ok, child_before, child_after = out.get(timeout=60)
    p.join()
    assert n == 300 and ok
    assert child_after <= child_before + 2
    assert H.wait_until(lambda: fd_count() <= fds + 2)
    assert H.wait_until(lambda: H.ember_segments(os.getpid(), p.pid) == [])
