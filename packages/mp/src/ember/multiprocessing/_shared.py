"""Shared memory segments for ember storages, and the two sharing strategies.

A shared storage is an ordinary ember Storage whose memory is an mmap of a shared
segment; its `owner` is a `_Segment`, which keeps the mapping (and, for the
file_descriptor strategy, the segment's fd) alive and is how `is_shared` knows.

* ``file_descriptor`` (the default): the segment is an anonymous memfd
  (``os.memfd_create``); it never has a name, so nothing can ever be left in
  /dev/shm. A handle is the fd itself, passed over a unix socket
  (``multiprocessing.reduction.DupFd``: the resource sharer, or the spawning
  Popen while a child starts). Each process keeps one fd per shared storage it
  holds, so holding thousands of storages needs a high RLIMIT_NOFILE: the soft
  limit is raised toward the hard one on demand.
* ``file_system``: the segment is a file in /dev/shm, opened by name; no fd stays
  open. A cleanup daemon (``_shm_daemon.py``, one per process tree) counts which
  processes hold each name and how many handles are in flight, and unlinks a
  name when nobody holds it, also when processes are killed.

Each segment has a key (its memfd name, or its file name) that is unique across
processes; every process maps a segment at most once: received handles whose key
is already mapped return the storage already there (a WeakValueDictionary).
"""
from __future__ import annotations

import atexit
import collections
import ctypes
import errno
import itertools
import mmap
import os
import resource
import secrets
import socket
import subprocess
import sys
import threading
import weakref

from ember._C import core as _core

SHM_DIR = "/dev/shm"
PREFIX = "ember_"
_DAEMON_ENV = "EMBER_SHM_DAEMON"
_STRATEGY_ENV = "EMBER_SHARING_STRATEGY"
_STRATEGIES = ("file_descriptor", "file_system")


class SharedMemoryError(RuntimeError):
    """Shared memory could not be allocated (a full /dev/shm, or out of memory)."""


class FileDescriptorLimitError(RuntimeError):
    """The process ran out of file descriptors while sharing tensors."""


# sharing strategy ------------------------------------------------------------------------

def _initial_strategy():
    s = os.environ.get(_STRATEGY_ENV, "file_descriptor")
    return s if s in _STRATEGIES else "file_descriptor"


_strategy = _initial_strategy()


def get_all_sharing_strategies():
    """The sharing strategies this system supports: {'file_descriptor', 'file_system'}."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The strategy new shared segments use ('file_descriptor' unless set)."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Choose how storages are shared from now on: 'file_descriptor' (fd passing, the
    default) or 'file_system' (named segments in /dev/shm, no fd kept per storage).
    Segments already shared keep their strategy. Child processes started afterwards
    inherit the choice (through the EMBER_SHARING_STRATEGY environment variable)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: unknown strategy {new_strategy!r}; choose "
                         f"one of {', '.join(map(repr, _STRATEGIES))}")
    _strategy = new_strategy
    os.environ[_STRATEGY_ENV] = new_strategy


# errors: full shared memory, file descriptors ----------------------------------------------

def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n:,} bytes ({n / size:.1f} {unit})"
    return f"{n:,} bytes"


def _shm_free():
    """(free, total) bytes of /dev/shm, or (None, None) when it can't be read."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None, None
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize


def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _shm_full_error(nbytes, strategy, cause=None):
    free, total = _shm_free()
    if free is None:
        where = f"{SHM_DIR} could not be read"
    else:
        where = f"{SHM_DIR} has {_fmt_bytes(free)} free of {_fmt_bytes(total)}"
    msg = (f"ember.multiprocessing: out of shared memory: a tensor storage of "
           f"{_fmt_bytes(nbytes)} was asked for and {where}")
    if strategy == "file_descriptor":
        avail = _mem_available()
        msg += (" (file_descriptor segments are memfds, which draw on RAM"
                + (f": {_fmt_bytes(avail)} available" if avail is not None else "") + ")")
    if cause is not None:
        msg += f" [{os.strerror(cause.errno) if cause.errno else cause}]"
    msg += (". Send smaller batches, free shared tensors you no longer need, or give the "
            f"machine/container more shared memory (Docker: --shm-size=2g; or remount "
            f"{SHM_DIR} with a larger size=)")
    if strategy == "file_system":
        msg += "; the 'file_descriptor' strategy does not use /dev/shm's quota"
    return SharedMemoryError(msg + ".")


def _fd_counts():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        n_open = len(os.listdir("/proc/self/fd"))
    except OSError:
        n_open = None
    return soft, hard, n_open


def _raise_fd_limit():
    """Raise the soft RLIMIT_NOFILE toward the hard limit; False if it can't grow."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= hard:
        return False
    target = min(hard, max(2 * soft, soft + 1024))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1]))
    except (ValueError, OSError):
        return False
    return True


def _fd_limit_error(what):
    soft, hard, n_open = _fd_counts()
    opened = f", {n_open} open" if n_open is not None else ""
    return FileDescriptorLimitError(
        f"ember.multiprocessing: out of file descriptors while {what} (RLIMIT_NOFILE soft "
        f"limit {soft}, hard limit {hard}{opened}; the soft limit is already at the hard "
        f"one). The 'file_descriptor' sharing strategy keeps one descriptor open per shared "
        f"storage in every process that holds it. Call "
        f"ember.multiprocessing.set_sharing_strategy('file_system') (named segments, no "
        f"descriptor kept), hold fewer shared tensors at a time, or raise the hard limit "
        f"(ulimit -Hn / LimitNOFILE).")


def _with_fds(fn, what):
    """fn(); on EMFILE raise the soft fd limit and retry, else raise a clear error."""
    while True:
        try:
            return fn()
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if e.errno == errno.ENFILE or not _raise_fd_limit():
                raise _fd_limit_error(what) from e


def _ensure_fd_headroom(n=4):
    """Make sure `n` more fds can be opened: receiving an fd from the resource sharer
    takes a connection, a dup of it (socket.fromfd) and a free slot for the fd, which
    the kernel silently drops when it doesn't fit ("received 0 items of ancdata")."""
    def probe():
        fds = []
        try:
            for _ in range(n):
                fds.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
        finally:
            for fd in fds:
                os.close(fd)
    _with_fds(probe, "receiving a shared tensor")


# segments ---------------------------------------------------------------------------------

_counter = itertools.count()
_token = secrets.token_hex(4)


def _new_key():
    return f"{PREFIX}{os.getpid()}_{_token}_{next(_counter)}"


def _fill(fd, data, strategy):
    """Write `data` (a buffer) into the new segment. The kernel allocates each page as
    it copies: a full /dev/shm (or memory) fails the write with ENOSPC, here, rather
    than a SIGBUS when a page of a mapping is first touched; and it is one pass over
    the memory, where posix_fallocate + copying through the mapping take two (zeroing,
    then faulting every page in: 1.7x slower for 100 MB)."""
    view = memoryview(data).cast("B")
    n, done = len(view), 0
    try:
        while done < n:
            done += os.pwrite(fd, view[done:], done)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG, errno.EDQUOT):
            raise _shm_full_error(n, strategy, e) from None
        raise
    finally:
        view.release()


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map(fd, nbytes):
    """mmap through libc: Python's mmap.mmap keeps a dup of the fd open for as long as
    the mapping lives (until Python 3.13's trackfd=False), which would cost every
    shared storage an fd, also under file_system."""
    ptr = _libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if ptr is None or ptr == _MAP_FAILED:
        err = ctypes.get_errno()
        if err == errno.ENOMEM:
            raise _shm_full_error(nbytes, _strategy, OSError(err, os.strerror(err)))
        raise OSError(err, f"mmap of a shared segment of {nbytes} bytes: {os.strerror(err)}")
    return ptr


class _Segment:
    """Shared memory viewed by one Storage in this process (the Storage's owner); the
    mapping lives as long as this object (that is, as long as the Storage)."""

    strategy = None
    __slots__ = ("key", "nbytes", "ptr", "__weakref__")

    def __repr__(self):
        return f"<ember shared segment {self.key} ({self.strategy}, {self.nbytes} bytes)>"

    def _unmap(self, munmap=_libc.munmap):    # bound now: works at interpreter exit
        ptr, self.ptr = self.ptr, 0
        if ptr:
            munmap(ptr, self.nbytes)


class _EmptySegment(_Segment):
    """A storage of 0 bytes: nothing to map; shared trivially."""

    strategy = "empty"
    __slots__ = ()

    def __init__(self, key=None):
        self.key = key or _new_key()
        self.nbytes = 0
        self.ptr = 0


class _FdSegment(_Segment):
    strategy = "file_descriptor"
    __slots__ = ("fd",)

    def __init__(self, key, nbytes, fd):
        self.key, self.nbytes, self.fd, self.ptr = key, nbytes, fd, 0

    @classmethod
    def create(cls, data):
        """A new segment holding a copy of `data` (a buffer)."""
        key = _new_key()
        nbytes = memoryview(data).nbytes
        fd = _with_fds(lambda: os.memfd_create(key, os.MFD_CLOEXEC),
                       "creating a shared memory segment")
        seg = cls(key, nbytes, fd)      # closes fd when dropped, also on error below
        _fill(fd, data, cls.strategy)
        seg.ptr = _map(fd, nbytes)
        return seg

    @classmethod
    def attach(cls, key, nbytes, fd):
        os.set_inheritable(fd, False)
        seg = cls(key, nbytes, fd)
        seg.ptr = _map(fd, nbytes)
        return seg

    def __del__(self):
        self._unmap()
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


class _FileSegment(_Segment):
    strategy = "file_system"
    __slots__ = ("daemon",)

    def __init__(self, key, nbytes, daemon):
        self.key, self.nbytes, self.daemon, self.ptr = key, nbytes, daemon, 0

    @classmethod
    def create(cls, data):
        """A new segment holding a copy of `data` (a buffer)."""
        key = _new_key()
        nbytes = memoryview(data).nbytes
        free, _ = _shm_free()
        if free is not None and free < nbytes:
            raise _shm_full_error(nbytes, cls.strategy)
        daemon = _own_daemon()
        daemon.send(f"H {key}\n")     # before the file exists: the daemon can clean up
        seg = cls(key, nbytes, daemon)  # releases the name when dropped, also on error
        path = os.path.join(SHM_DIR, key)
        fd = _with_fds(lambda: os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                                       0o600), "creating a shared memory segment")
        try:
            _fill(fd, data, cls.strategy)
            seg.ptr = _map(fd, nbytes)
        except BaseException:
            os.unlink(path)
            raise
        finally:
            os.close(fd)
        return seg

    @classmethod
    def attach(cls, key, nbytes, daemon):
        """Map `key` by name (called with an in-flight handle counted for us)."""
        daemon.send(f"H {key}\nD {key}\n")
        seg = cls(key, nbytes, daemon)
        try:
            fd = _with_fds(lambda: os.open(os.path.join(SHM_DIR, key),
                                           os.O_RDWR | os.O_CLOEXEC),
                           "opening a shared memory segment")
        except FileNotFoundError:
            raise RuntimeError(f"ember.multiprocessing: the shared memory segment {key} is "
                               f"gone from {SHM_DIR}: every process holding it exited "
                               f"before this one received it") from None
        try:
            seg.ptr = _map(fd, nbytes)
        finally:
            os.close(fd)
        return seg

    def __del__(self):
        self._unmap()
        daemon, self.daemon = self.daemon, None
        if daemon is not None:
            daemon.release(self.key)


# the cleanup daemon's clients (file_system) -------------------------------------------------

class _DaemonClient:
    """This process's connection to one cleanup daemon. Writes are fire-and-forget
    lines; releases from finalizers are queued and flushed without blocking."""

    def __init__(self, address):
        self.address = address
        self.pid = os.getpid()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.set_inheritable(False)
        self.sock.connect(_addr_bytes(address))
        self.lock = threading.Lock()
        self.pending = collections.deque()

    def _flush_locked(self, msg):
        while self.pending:
            msg += f"R {self.pending.popleft()}\n"
        if msg:
            self.sock.sendall(msg.encode())

    def send(self, msg):
        with self.lock:
            self._flush_locked(msg)
        if self.pending:
            self.release(None)

    def release(self, key):
        if key is not None:
            self.pending.append(key)
        if self.pid != os.getpid():
            return          # a forked child's copy: the parent's connection, not ours
        if self.lock.acquire(blocking=False):
            try:
                self._flush_locked("")
            except OSError:
                pass
            finally:
                self.lock.release()


def _addr_bytes(address):
    """Addresses are strings '@name' for Linux abstract sockets (no file to clean)."""
    return b"\0" + address[1:].encode() if address.startswith("@") else address.encode()


_clients = {}           # address -> _DaemonClient of this process
_own_address = None     # the daemon this process registers its own segments with
_daemon_proc = None     # its pid
_daemon_lock = threading.Lock()


def _client(address):
    with _daemon_lock:
        c = _clients.get(address)
        if c is None or c.pid != os.getpid():
            c = _clients[address] = _DaemonClient(address)
        return c


def _own_daemon():
    """The daemon of this process tree (started here if no ancestor started one)."""
    global _own_address, _daemon_proc
    if _own_address is not None:
        try:
            return _client(_own_address)
        except OSError:
            _own_address = None
    inherited = os.environ.get(_DAEMON_ENV)
    if inherited:
        try:
            c = _client(inherited)
            _own_address = inherited
            return c
        except OSError:
            pass
    with _daemon_lock:
        address = f"@ember-shm-{os.getpid()}-{secrets.token_hex(8)}"
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shm_daemon.py")
        debug = bool(os.environ.get("EMBER_SHM_DAEMON_DEBUG"))
        proc = subprocess.Popen(
            [sys.executable, "-I", script, _addr_bytes(address).hex(), SHM_DIR, PREFIX],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL, start_new_session=True)
        line = proc.stdout.readline()      # from the detached daemon process
        proc.stdout.close()
        proc.wait()                         # the launcher, which exits at once
        words = line.split()
        if len(words) != 2 or words[0] != b"ready":
            raise RuntimeError(f"ember.multiprocessing: the shared memory cleanup daemon "
                               f"failed to start (exit code {proc.returncode}); set "
                               f"EMBER_SHM_DAEMON_DEBUG=1 to see its errors")
        _daemon_proc = int(words[1])
    c = _client(address)
    _own_address = address
    os.environ[_DAEMON_ENV] = address      # children (spawn, forkserver) join this one
    return c


def _close_clients():
    """At exit: flush queued releases and close our daemon connections (the daemon
    treats the closed connection as 'holds nothing any more')."""
    for c in list(_clients.values()):
        if c.pid == os.getpid():
            try:
                with c.lock:
                    c._flush_locked("")
            except OSError:
                pass
            c.sock.close()


atexit.register(_close_clients)


def _daemon_pid():
    """The pid of the cleanup daemon this process started (None if it started none)."""
    return _daemon_proc


# storages ------------------------------------------------------------------------------------

_UINT8 = _core._dtype_by_name("uint8")
_lock = threading.RLock()
_storages = weakref.WeakValueDictionary()   # segment key -> the Storage mapping it here


def _segment_of(storage):
    owner = storage.owner
    return owner if isinstance(owner, _Segment) else None


def storage_is_shared(storage):
    return isinstance(storage.owner, _Segment)


def share_storage(storage):
    """Move `storage` into a new shared segment in place (no-op if already shared);
    returns its segment."""
    seg = _segment_of(storage)
    if seg is not None:
        return seg
    if storage.device.type != "cpu":
        raise RuntimeError(f"ember.multiprocessing: tensors on {storage.device} can't be "
                           f"shared between processes yet; move them with .cpu() first")
    with _lock:
        seg = _segment_of(storage)
        if seg is not None:
            return seg
        n = storage.nbytes
        if n == 0:
            seg = _EmptySegment()
        else:
            data = _core.as_strided_from(storage, _UINT8, (n,), (1,), 0)   # its bytes
            cls = _FileSegment if _strategy == "file_system" else _FdSegment
            seg = cls.create(data)
        _core.storage_move_to(storage, seg.ptr, seg, copy=False)
        _storages[seg.key] = storage
        return seg


def _new_storage(seg):
    s = _core.storage_from_pointer(seg.ptr, seg.nbytes, seg)
    _storages[seg.key] = s
    return s


def rebuild_empty_storage(key):
    with _lock:
        s = _storages.get(key)
        return s if s is not None else _new_storage(_EmptySegment(key))


def rebuild_fd_storage(key, nbytes, dupfd):
    """Unpickle a file_descriptor handle: the storage already mapped here under `key`,
    or a new mapping of the fd that came with the handle."""
    _ensure_fd_headroom()
    try:
        fd = _with_fds(dupfd.detach, "receiving a shared tensor")
    except (FileNotFoundError, ConnectionError) as e:
        raise RuntimeError(
            f"ember.multiprocessing: could not receive a shared tensor ({e}): the process "
            f"that sent it has exited. With the 'file_descriptor' sharing strategy the "
            f"sender passes the memory's file descriptor when the receiver unpickles, so it "
            f"must stay alive until then; the 'file_system' strategy "
            f"(set_sharing_strategy('file_system')) has no such rule") from e
    with _lock:
        s = _storages.get(key)
        if s is not None:
            os.close(fd)
            return s
        try:
            seg = _FdSegment.attach(key, nbytes, fd)
        except BaseException:
            os.close(fd)
            raise
        return _new_storage(seg)


def rebuild_file_storage(key, nbytes, address):
    """Unpickle a file_system handle: map /dev/shm/key unless mapped already."""
    daemon = _client(address)
    with _lock:
        s = _storages.get(key)
        if s is not None:
            daemon.send(f"D {key}\n")
            return s
        return _new_storage(_FileSegment.attach(key, nbytes, daemon))


def reduce_storage(storage):
    """Pickle a Storage for another process: move it into shared memory if needed and
    send a handle (an fd, or a name)."""
    from multiprocessing.reduction import DupFd
    seg = share_storage(storage)
    if isinstance(seg, _FdSegment):
        dupfd = _with_fds(lambda: DupFd(seg.fd), "sending a shared tensor")
        return rebuild_fd_storage, (seg.key, seg.nbytes, dupfd)
    if isinstance(seg, _FileSegment):
        daemon = seg.daemon
        if daemon.pid != os.getpid():       # inherited through fork, missed at the fork
            daemon = _client(daemon.address)
            daemon.send(f"H {seg.key}\n")
            seg.daemon = daemon
        daemon.send(f"I {seg.key}\n")
        return rebuild_file_storage, (seg.key, seg.nbytes, daemon.address)
    return rebuild_empty_storage, (seg.key,)


def live_segments():
    """Keys of the segments this process maps now, by strategy (for tests, debugging)."""
    out = {s: [] for s in _STRATEGIES}
    for key, st in list(_storages.items()):
        seg = _segment_of(st)
        if seg is not None and seg.strategy in out:
            out[seg.strategy].append(key)
    return out


# fork: the child gets its own daemon connections and keeps the names it inherited --------

_fork_handover = []


def _before_fork():
    _fork_handover.clear()
    for st in list(_storages.values()):
        seg = _segment_of(st)
        if isinstance(seg, _FileSegment) and seg.daemon is not None:
            try:
                seg.daemon.send(f"I {seg.key}\n")   # kept alive until the child holds it
                _fork_handover.append(seg)
            except OSError:
                pass


def _after_fork_child():
    global _lock, _daemon_lock, _daemon_proc
    _lock = threading.RLock()
    _daemon_lock = threading.Lock()
    _daemon_proc = None
    old = list(_clients.values())
    _clients.clear()
    for c in old:
        try:
            c.sock.close()
        except OSError:
            pass
    for seg in _fork_handover:
        try:
            c = _client(seg.daemon.address)
            c.send(f"H {seg.key}\nD {seg.key}\n")
            seg.daemon = c
        except OSError:
            pass
    _fork_handover.clear()


def _after_fork_parent():
    _fork_handover.clear()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_child,
                    after_in_parent=_after_fork_parent)
