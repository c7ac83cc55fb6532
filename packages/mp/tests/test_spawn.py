"""spawn(): trainer processes, with failures reported in the parent."""
import signal

import pytest

import ember as em
import ember.multiprocessing as mp
import ember_mp_testhelpers as H


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_spawn_runs_fn_with_the_index_over_shared_memory(method):
    out = em.zeros(3).share_memory_()
    ctx = mp.spawn(H.write_rank, args=(out,), nprocs=3, start_method=method)
    assert out.tolist() == [1.0, 2.0, 3.0]
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 3
    assert all(p.exitcode == 0 for p in ctx.processes)


def test_an_exception_is_reraised_with_the_index_and_traceback():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(H.raise_in_one, args=(1,), nprocs=2, start_method="fork")
    e = info.value
    assert e.error_index == 1
    msg = str(e)
    assert msg.startswith("process 1 (pid ") and "raised ValueError: bad value in process 1" \
        in msg
    assert "-- traceback of process 1:" in msg and "in raise_in_one" in msg
    assert isinstance(e.__cause__, ValueError)


def test_a_child_killed_by_a_signal_is_reported():
    with pytest.raises(mp.ProcessExitedException, match="process 1 .* was killed by signal "
                       "SIGKILL") as info:
        mp.spawn(H.kill_self, nprocs=2, start_method="fork")
    assert info.value.signal_name == "SIGKILL" and info.value.exit_code == -signal.SIGKILL


def test_exit_code_and_join_false():
    ctx = mp.spawn(H.exit_with, args=(0,), nprocs=2, join=False, start_method="fork")
    while not ctx.join(timeout=10):
        pass
    with pytest.raises(mp.ProcessExitedException, match="exited with code 3") as info:
        mp.spawn(H.exit_with, args=(3,), nprocs=1, start_method="fork")
    assert info.value.exit_code == 3
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(H.exit_with, args=(0,), nprocs=0)


def test_autograd_and_threads_before_and_after_fork():
    """PyTorch #69839 / #32835: using autograd (and the thread pool) before forking."""
    x = em.ones(512, 512, requires_grad=True)
    ((x * 2).sin() @ x).sum().backward()
    expected = x.grad.sum().item()
    out = em.zeros(2).share_memory_()
    mp.spawn(H.backward_in_child, args=(out,), nprocs=2, start_method="fork")
    assert out.tolist() == pytest.approx([expected] * 2, rel=1e-4)
