"""Failures never hang: a worker's exception comes back with its id and traceback; a
killed or crashed worker is reported; timeout is honoured; stopping early, deleting
the iterator or the loader, and the death of the main process all stop the workers;
a missing __main__ guard under spawn says so. Each finishes in seconds."""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ember as em  # noqa: F401
from ember.data import DataLoader, Dataset, IterableDataset, TensorDataset

# child interpreters import ember from wherever this one did (the venv in CI, the
# source tree when PYTHONPATH points there)
SRC = os.pathsep.join(p for p in sys.path if p)


class Numbers(Dataset):
    def __init__(self, n=40, fail_at=None, exc=ValueError, sleep=0.0, crash_at=None):
        self.n, self.fail_at, self.exc, self.sleep = n, fail_at, exc, sleep
        self.crash_at = crash_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise self.exc(f"bad sample {i}")
        if i == self.crash_at:
            import ctypes
            ctypes.string_at(0)         # a segfault
        if self.sleep:
            time.sleep(self.sleep)
        return i


def alive(pid):
    """Running (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, limit=5.0):
    t0 = time.monotonic()
    while any(alive(p) for p in pids) and time.monotonic() - t0 < limit:
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


def test_worker_exception_is_reraised_with_worker_id_and_traceback():
    it = iter(DataLoader(Numbers(fail_at=5), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(ValueError) as err:
        next(it)                                  # batch [4, 5], worker 0
    msg = str(err.value)
    assert "Caught ValueError in DataLoader worker process 0 (pid" in msg
    assert "Traceback (most recent call last)" in msg and "bad sample 5" in msg
    assert 'test_failures.py", line' in msg       # the worker's own frames
    assert next(it).tolist() == [6, 7]            # the loader goes on, as PyTorch's
    del it


def test_key_error_keeps_its_message_readable():
    with pytest.raises(KeyError) as err:
        list(DataLoader(Numbers(fail_at=1, exc=KeyError), batch_size=2, num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0" in str(err.value)
    assert "\\n" not in str(err.value)


def test_exception_types_that_cannot_cross_become_runtime_errors():
    class Local(Exception):
        pass
    with pytest.raises(RuntimeError, match="Caught Local in DataLoader worker process 0"):
        list(DataLoader(Numbers(fail_at=0, exc=Local), batch_size=2, num_workers=1))


def test_worker_init_fn_exception():
    def bad_init(worker_id):
        raise ValueError(f"init of {worker_id} failed")
    with pytest.raises(ValueError, match="init of 0 failed"):
        list(DataLoader(Numbers(), batch_size=2, num_workers=1, worker_init_fn=bad_init))


def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="could not be sent to the main process"):
        list(DataLoader(Numbers(4), batch_size=2, num_workers=1,
                        collate_fn=lambda b: (lambda: b)))
    assert time.monotonic() - t0 < 5


def test_killed_worker_is_reported():
    it = iter(DataLoader(Numbers(sleep=0.02), batch_size=2, num_workers=2))
    next(it)
    pid = it._workers[1].pid
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker 1 \(pid {pid}\) exited "
                                           r"unexpectedly: killed by signal 9"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 5
    assert wait_gone([w.pid for w in it._workers]) == []


def test_crashed_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker 0 \(pid \d+\) exited "
                                           r"unexpectedly: killed by signal 11 \(SIGSEGV\)"):
        list(DataLoader(Numbers(crash_at=2), batch_size=2, num_workers=1))


def test_worker_that_exits_is_reported():
    class Exits(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            os._exit(3)
    with pytest.raises(RuntimeError, match=r"exited unexpectedly: exit code 3"):
        list(DataLoader(Exits(), batch_size=2, num_workers=1))


def test_timeout():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Numbers(4, sleep=3), batch_size=1, num_workers=1, timeout=0.3))
    assert time.monotonic() - t0 < 3
    # a batch that comes in time is fine
    assert len(list(DataLoader(Numbers(4), batch_size=2, num_workers=1, timeout=5))) == 2


def test_breaking_early_and_deleting_the_iterator_stops_the_workers():
    loader = DataLoader(Numbers(400, sleep=0.01), batch_size=2, num_workers=2)
    it = iter(loader)
    for i, _ in enumerate(it):
        if i == 2:
            break
    pids = [w.pid for w in it._workers]
    assert all(alive(p) for p in pids)
    t0 = time.monotonic()
    del it
    assert time.monotonic() - t0 < 3
    assert wait_gone(pids) == []


def test_for_loop_break_stops_the_workers():
    seen = []

    class Pids(Dataset):
        def __len__(self):
            return 100

        def __getitem__(self, i):
            return os.getpid()
    for b in DataLoader(Pids(), batch_size=2, num_workers=2):
        seen += b.tolist()
        if len(seen) >= 4:
            break
    gc.collect()
    assert wait_gone(set(seen)) == []


def test_deleting_a_loader_with_persistent_workers_stops_them():
    loader = DataLoader(Numbers(8), batch_size=2, num_workers=2, persistent_workers=True)
    list(loader)
    list(loader)
    pids = [w.pid for w in loader._iterator._workers]
    assert all(alive(p) for p in pids)
    del loader
    gc.collect()
    assert wait_gone(pids) == []


def test_exhausted_iterable_workers_exit():
    class Short(IterableDataset):
        def __iter__(self):
            from ember.data import shard_for_worker
            return shard_for_worker(range(6), block=2)
    it = iter(DataLoader(Short(), batch_size=2, num_workers=2))
    pids = [w.pid for w in it._workers]
    assert [b.tolist() for b in it] == [[0, 1], [2, 3], [4, 5]]
    assert wait_gone(pids) == []


def run_script(body, tmp_path, timeout=60, wait=True):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not wait:
        return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PDEATHSIG")
def test_workers_die_with_the_main_process(tmp_path):
    proc = run_script("""
        import sys, time
        from ember.data import DataLoader, Dataset

        class Slow(Dataset):
            def __len__(self):
                return 1000

            def __getitem__(self, i):
                time.sleep(0.05)
                return i

        if __name__ == "__main__":
            it = iter(DataLoader(Slow(), batch_size=1, num_workers=2))
            next(it)
            print(" ".join(str(w.pid) for w in it._workers), flush=True)
            time.sleep(60)
        """, tmp_path, wait=False)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert wait_gone(pids) == []


def test_missing_main_guard_under_spawn_is_explained(tmp_path):
    res = run_script("""
        import ember as em
        from ember.data import DataLoader, TensorDataset
        ds = TensorDataset(em.arange(10))
        for b in DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn"):
            pass
        """, tmp_path)
    assert res.returncode != 0
    assert "if __name__ == '__main__':" in res.stderr
    assert "DataLoader worker 0 (pid" in res.stderr and "exit code 1" in res.stderr


def test_unpicklable_dataset_under_spawn_is_explained():
    ds = TensorDataset(em.arange(4))
    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn",
                        collate_fn=lambda b: b)
    with pytest.raises(RuntimeError, match="must be defined at module level"):
        list(loader)
