"""spawn(fn, args, nprocs): start trainer processes and watch them (like
torch.multiprocessing.spawn). Process i runs fn(i, *args). When one fails, the
others are stopped and the parent raises: ProcessRaisedException (the child's
exception type, message and traceback, naming the process index) or
ProcessExitedException (a non-zero exit code, or the signal that killed it)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import tempfile
import time
import traceback

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A process started by spawn() failed."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """fn raised in process `error_index`; the message holds the child's traceback and
    __cause__ the exception itself when it could be pickled."""


class ProcessExitedException(ProcessException):
    """Process `error_index` exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_file):
    """Runs in the child: fn(i, *args); an exception is written to error_file."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass        # the parent stops us after another process failed
    except Exception as e:
        mod = type(e).__module__
        name = type(e).__qualname__ if mod == "builtins" else f"{mod}.{type(e).__qualname__}"
        record = {"type": name,
                  "message": str(e), "traceback": traceback.format_exc()}
        try:
            record["exception"] = pickle.dumps(e)
        except Exception:
            pass
        with open(error_file, "wb") as f:
            pickle.dump(record, f)
        raise SystemExit(1) from None


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class ProcessContext:
    """The processes spawn() started: join() watches them; pids() lists them."""

    def __init__(self, processes, error_files):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None, grace_period=5.0):
        """Wait up to `timeout` seconds (None: until something happens). True when every
        process has exited successfully, False if some are still running; raises when
        one failed, after stopping the others (SIGTERM, then SIGKILL after
        grace_period seconds)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                failed = index
                break
        if failed is None:
            if not self.sentinels:
                self._cleanup()
                return True
            return False
        self._stop_others(grace_period)
        exc = self._failure(failed)
        self._cleanup()
        raise exc

    def _stop_others(self, grace_period):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + grace_period
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()

    def _failure(self, index):
        p = self.processes[index]
        record = None
        try:
            with open(self.error_files[index], "rb") as f:
                data = f.read()
            if data:
                record = pickle.loads(data)
        except (OSError, EOFError, pickle.UnpicklingError):
            pass
        if record is not None:
            exc = ProcessRaisedException(
                f"process {index} (pid {p.pid}) raised {record['type']}: "
                f"{record['message']}\n\n-- traceback of process {index}:\n"
                f"{record['traceback']}", index, p.pid)
            if "exception" in record:
                try:
                    exc.__cause__ = pickle.loads(record["exception"])
                except Exception:
                    pass
            return exc
        if p.exitcode < 0:
            name = _signal_name(-p.exitcode)
            return ProcessExitedException(
                f"process {index} (pid {p.pid}) was killed by signal {name}", index, p.pid,
                p.exitcode, name)
        return ProcessExitedException(
            f"process {index} (pid {p.pid}) exited with code {p.exitcode}", index, p.pid,
            p.exitcode)

    def _cleanup(self):
        for path in self.error_files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.error_files = []


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start `nprocs` processes running fn(i, *args) with the given start method
    ('spawn', 'fork' or 'forkserver'). join=True waits for all of them (raising if one
    fails); the ProcessContext is returned either way."""
    if nprocs < 1:
        raise ValueError(f"spawn: nprocs must be at least 1, got {nprocs}")
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="ember-spawn-", suffix=".err")
        os.close(fd)
        error_files.append(path)
        p = ctx.Process(target=_wrap, args=(fn, i, tuple(args), path), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, error_files)
    if join:
        while not context.join():
            pass
    return context


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start `nprocs` processes running fn(i, *args) (i = 0 .. nprocs - 1), like
    torch.multiprocessing.spawn. With join=True, wait until all exit; an exception in
    a child is re-raised here as ProcessRaisedException naming the process index with
    the child's traceback, and a child killed by a signal as ProcessExitedException.
    Returns the ProcessContext (its join() and pids())."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
