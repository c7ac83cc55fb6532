"""ember.distributed and DistributedDataParallel under real MPI jobs.

Each job runs ember_dist_worker.py under `mpiexec -n N` once (module-scoped fixtures:
one launch for all cases of a world size) and every test reads its case's outcome on
every rank. The cases compare each collective with the result computed on one process,
for 2 and 3 ranks (odd sizes), over random shapes, dtypes and non-contiguous layouts."""
import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("mpi4py", reason="ember.distributed needs mpi4py: "
                                     "pip install 'ember-mp[distributed]'")

import ember as em  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember.distributed import run as launcher  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "ember_dist_worker.py")
sys.path.insert(0, HERE)
import ember_dist_worker as worker_module  # noqa: E402  (for the list of cases only)

CASES = sorted(worker_module.CASES)
MPIEXEC = launcher.find_mpiexec()


def child_env():
    env = dict(os.environ)
    # child interpreters import ember from wherever this one did
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("EMBER_NUM_THREADS", None)
    return env


def mpirun(n, suite, tmp, *extra, timeout=120):
    out = tmp / suite
    out.mkdir()
    cmd = [MPIEXEC, *extra, "-n", str(n), sys.executable, WORKER, suite, str(out)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=child_env(), stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    results = {}
    for r in range(n):
        f = out / f"rank{r}.json"
        results[r] = json.loads(f.read_text()) if f.exists() else None
    return proc, results, took


@pytest.fixture(scope="module", params=[2, 3], ids=["2ranks", "3ranks"])
def job(request, tmp_path_factory):
    n = request.param
    proc, results, _ = mpirun(n, "collectives", tmp_path_factory.mktemp(f"dist{n}"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert all(results[r] is not None for r in range(n)), proc.stderr[-3000:]
    return n, results


def outcomes(job, case):
    n, results = job
    got = [results[r][case] for r in range(n)]
    bad = [f"rank {r}:\n{msg}" for r, (ok, msg) in enumerate(got) if not ok]
    assert not bad, "\n".join(bad)
    return [msg for _, msg in got]


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith(("mismatch", "ddp_"))
                                  and c != "bad_arguments"])
def test_collective_matches_one_process(job, case):
    outcomes(job, case)


@pytest.mark.parametrize("case", ["mismatch_shape", "mismatch_dtype", "mismatch_op",
                                  "mismatch_barrier", "mismatch_bad_on_one_rank",
                                  "mismatch_list_length", "mismatch_all_to_all_sizes"])
def test_mismatch_raises_the_same_error_on_every_rank(job, case):
    msgs = outcomes(job, case)
    if case in ("mismatch_op", "mismatch_barrier"):  # each names its op, then the same text
        first, rest = {"mismatch_op": ("all_reduce", "broadcast"),
                       "mismatch_barrier": ("barrier", "all_reduce")}[case]
        assert [m.split(":")[0] for m in msgs] == [first] + [rest] * (job[0] - 1)
        msgs = [m.split(":", 1)[1] for m in msgs]
    assert len(set(msgs)) == 1, msgs
    expected = {"mismatch_shape": r"all_reduce: the ranks' calls do not match: rank 0 called "
                                  r"all_reduce\(\[3\] float32, SUM\), rank 1 called "
                                  r"all_reduce\(\[4\] float32, SUM\)",
                "mismatch_dtype": r"broadcast: .* float64",
                "mismatch_op": r"^ the ranks' calls do not match: rank 0 called all_reduce\(.*"
                               r"rank 1 called broadcast\(\[3\] float32, src=0\)",
                "mismatch_barrier": r"^ the ranks' calls do not match: rank 0 called barrier\(\), "
                                    r"rank 1 called all_reduce\(\[1\] float32, SUM\)",
                "mismatch_bad_on_one_rank": r"^all_reduce: rank 0: ReduceOp.AVG needs a "
                                            r"floating-point tensor, got int64$",
                "mismatch_list_length": r"all_gather: rank 0: tensor_list has \d tensors, "
                                        r"expected \d \(the group's size\)",
                "mismatch_all_to_all_sizes": r"all_to_all: rank 0 sends \[1, 2\] to rank 0, "
                                             r"whose output_tensor_list\[0\] is \[2, 2\]"}
    import re
    assert re.search(expected[case], msgs[0]), msgs[0]


def test_recv_into_a_tensor_of_another_shape_raises(job):
    msgs = outcomes(job, "mismatch_recv")
    assert msgs[1] == "recv: rank 0 sent (2, 3) float32 but the receiving tensor is (3, 2) float32"


def test_bad_arguments_name_the_op_and_values(job):
    msg = outcomes(job, "bad_arguments")[0]
    n = job[0]
    # found by each rank alone, reported by all (every rank lists them the same way)
    assert "all_reduce: rank 0: ReduceOp.AVG needs a floating-point tensor, got int32; " \
           "rank 1: ReduceOp.AVG" in msg
    assert f"broadcast: rank 0: src={n} is not a rank of the group {list(range(n))}" in msg
    assert "all_reduce: tensor must be an ember Tensor, got ndarray" in msg
    assert "all_reduce: op must be an ember.distributed.ReduceOp, got 'sum'" in msg


@pytest.mark.parametrize("case", ["ddp_matches_single_process", "ddp_gradient_as_bucket_view",
                                  "ddp_over_mpi_messages", "ddp_shared_buckets",
                                  "ddp_full_shm_falls_back_to_messages",
                                  "ddp_on_opencl",
                                  "ddp_no_sync_accumulates", "ddp_unused_after_no_sync",
                                  "ddp_find_unused_parameters"])
def test_ddp(job, case):
    outcomes(job, case)


def test_ddp_unused_parameter_without_the_flag_raises(job):
    msg = outcomes(job, "ddp_unused_without_flag_raises")[0]
    assert "did not produce gradients for ['b.weight', 'b.bias', 'never.weight', " \
           "'never.bias']" in msg and "find_unused_parameters=True" in msg


def test_ddp_second_backward_through_one_forward_raises(job):
    msg = outcomes(job, "ddp_second_backward_raises")[0]
    assert "DistributedDataParallel: a second backward through the same forward" in msg


def test_ddp_different_models_raise_on_every_rank(job):
    msgs = outcomes(job, "ddp_different_models_raise")
    assert len(set(msgs)) == 1
    assert "DistributedDataParallel: the model differs across ranks: rank 1 has 0.weight " \
           "(5, 3) float32 where rank 0 has 0.weight (4, 3) float32" in msgs[0]


# faults: they must finish in seconds -----------------------------------------------------

@pytest.mark.parametrize("suite,extra", [("dead", ["-disable-auto-cleanup"]), ("stuck", [])])
def test_survivors_raise_within_the_timeout(suite, extra, tmp_path):
    if launcher.flavour(MPIEXEC) != "mpich" and extra:
        pytest.skip("-disable-auto-cleanup is MPICH's")
    proc, results, took = mpirun(3, suite, tmp_path, *extra, timeout=60)
    assert took < 20, took
    for r in (0, 2):
        assert results[r] is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
        ok, msg = results[r][suite]
        assert ok, msg
        waited, err, after = msg.split(" | ")
        assert 1.5 <= float(waited) < 6, waited
        assert err.startswith("all_reduce: timed out after 1.5 s waiting for the other ranks "
                              "of the group [0, 1, 2]"), err
        assert "the process groups are unusable after an earlier failure (all_reduce timed " \
               "out)" in after, after
    if suite == "dead":
        assert results[1] is None and proc.returncode == 17


def test_collectives_before_init_say_so():
    assert not dist.is_initialized()
    for fn in (lambda: dist.all_reduce(em.ones(2)), lambda: dist.barrier(),
               lambda: dist.get_rank(), lambda: dist.new_group([0])):
        with pytest.raises(RuntimeError, match=r"the default process group is not "
                                               r"initialized; call ember\.distributed\."
                                               r"init_process_group\(\) first"):
            fn()
    from ember.nn.parallel import DistributedDataParallel
    with pytest.raises(RuntimeError, match="DistributedDataParallel: the default process "
                                           "group is not initialized"):
        DistributedDataParallel(em.nn.Linear(2, 2))


def test_missing_mpi4py_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)       # as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"ember.distributed needs mpi4py: pip "
                                                  r"install 'ember-mp\[distributed\]'"):
        dist.init_process_group("mpi")
    assert not dist.is_available() and not dist.is_initialized()


def test_ddp_without_ember_mp_says_what_to_install(monkeypatch):
    from ember.nn.parallel import DistributedDataParallel
    monkeypatch.setitem(sys.modules, "ember.distributed", None)
    with pytest.raises(ModuleNotFoundError, match=r"DistributedDataParallel needs "
                                                  r"ember.distributed from the ember-mp "
                                                  r"package: pip install"):
        DistributedDataParallel(em.nn.Linear(2, 2))


def test_init_refuses_other_backends():
    with pytest.raises(ValueError, match="init_process_group: backend 'ucc' is not "
                                         "available; ember.distributed runs on MPI: "
                                         "backend='mpi', 'gloo' or 'nccl'"):
        dist.init_process_group("ucc")
    with pytest.raises(ValueError, match="timeout must be positive"):
        dist.init_process_group("mpi", timeout=0)
    with pytest.raises(ValueError, match="init_method must be 'env://', 'tcp://HOST:PORT' "
                                         "or 'file://PATH' .MPI does the rendezvous"):
        dist.init_process_group("gloo", init_method="udp://x")
    with pytest.raises(ValueError, match="pg_options are options of PyTorch's NCCL/Gloo "
                                         "process groups; ember's MPI backend takes none"):
        dist.init_process_group("gloo", pg_options={"x": 1})
    with pytest.raises(TypeError, match="device_id must be an ember.device or a device "
                                        "index, got 'cuda:0'"):
        dist.init_process_group("gloo", device_id="cuda:0")
    assert not dist.is_initialized()


@pytest.mark.skipif(em.cuda.is_available(), reason="CUDA is available: nccl is accepted")
def test_nccl_without_cuda_says_why():
    with pytest.raises(RuntimeError, match="init_process_group: backend 'nccl': 'nccl' is "
                                           "for CUDA tensors and CUDA is not available here; "
                                           "use 'gloo'"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


@pytest.mark.parametrize("case", ["issue18_torchrun_env", "issue18_backend_gloo",
                                  "issue18_backend_gloo_tcp", "issue18_backend_device_map",
                                  "issue18_backend_nccl"])
def test_torchrun_env_and_backend_names_under_mpiexec(job, case):
    msgs = outcomes(job, case)
    if case == "issue18_backend_nccl" and not em.cuda.is_available():
        assert msgs == ["no CUDA here"] * job[0]
        pytest.skip("nccl needs CUDA tensors: no CUDA here")
    if case.startswith("issue18_backend"):
        assert msgs[0].startswith("ProcessGroup(backend="), msgs


# the launcher -----------------------------------------------------------------------------

def test_launcher_command():
    args = launcher.parser().parse_args(["--nproc-per-node", "4", "--nnodes", "2", "--hostfile",
                                         "hosts", "train.py", "--lr", "0.1"])
    args = launcher.resolve(args)
    cmd = launcher.build_command(args, "/x/mpiexec", "mpich")
    # every rank runs the script through _rank_main, which sets RANK, LOCAL_RANK, ...
    assert cmd == ["/x/mpiexec", "-n", "8", "-f", "hosts", "-ppn", "4", sys.executable,
                   "-m", "ember.distributed._rank_main", "train.py", "--lr", "0.1"]
    cmd = launcher.build_command(args, "/x/mpiexec", "openmpi")
    assert cmd[3:7] == ["--hostfile", "hosts", "--map-by", "ppr:4:node"]
    assert cmd[7:9] == ["-x", "WORLD_SIZE"]         # Open MPI forwards named variables only
    args = launcher.resolve(launcher.parser().parse_args(
        ["--nproc-per-node", "2", "--no-auto-cleanup", "-m", "pkg.train"]))
    assert launcher.build_command(args, "mpiexec", "mpich") == [
        "mpiexec", "-n", "2", "-disable-auto-cleanup", sys.executable, "-m",
        "ember.distributed._rank_main", "-m", "pkg.train"]
    with pytest.raises(SystemExit, match="--no-auto-cleanup needs MPICH's mpiexec"):
        launcher.build_command(args, "mpiexec", "openmpi")
    with pytest.raises(SystemExit, match="--nproc-per-node must be at least 1"):
        launcher.main(["--nproc-per-node", "0", "train.py"])


def test_launcher_runs_the_script(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("import sys\n"
                      "import ember.distributed as dist\n"
                      "dist.init_process_group()\n"
                      "with open(f'{sys.argv[1]}/rank{dist.get_rank()}', 'w') as f:\n"
                      "    f.write(f'{dist.get_world_size()} {sys.argv[2]}')\n")
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node",
                           "2", str(script), str(tmp_path), "--flag"], capture_output=True,
                          text=True, timeout=60, env=child_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [(tmp_path / f"rank{r}").read_text() for r in (0, 1)] == ["2 --flag"] * 2


# torchrun's arguments (issue 18) -------------------------------------------------------------

def test_launcher_accepts_torchrun_arguments():
    parse = launcher.parser().parse_args
    args = launcher.resolve(parse(["--nnodes", "1:1", "--nproc_per_node", "3", "--node_rank",
                                   "0", "--rdzv_backend", "c10d", "--rdzv_endpoint",
                                   "10.0.0.5:1234", "--rdzv_id", "job7", "--max_restarts",
                                   "2", "--monitor_interval", "1", "train.py", "-x"]))
    assert (args.nproc_per_node, args.nnodes, args.script, args.script_args) == \
        (3, 1, "train.py", ["-x"])
    assert launcher.job_env(args, restart=1) == {
        "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3", "MASTER_ADDR": "10.0.0.5",
        "MASTER_PORT": "1234", "TORCHELASTIC_RUN_ID": "job7",
        "TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_MAX_RESTARTS": "2"}
    args = launcher.resolve(parse(["--master-addr", "host0", "--master-port", "4321",
                                   "--nproc-per-node", "cpu", "t.py"]))
    assert (args.master_addr, args.master_port) == ("host0", 4321)
    assert args.nproc_per_node == (os.cpu_count() or 1)
    args = launcher.resolve(parse(["--standalone", "t.py"]))
    assert args.master_addr == "127.0.0.1" and 1024 <= args.master_port < 65536
    args = launcher.resolve(parse(["t.py"]))
    assert (args.master_addr, args.master_port) == ("127.0.0.1", 29500)


@pytest.mark.parametrize("argv,message", [
    (["--nnodes", "1:4", "t.py"], "elastic jobs .a range of machines. are not supported"),
    (["--nnodes", "2", "--node-rank", "1", "t.py"], "--node-rank 1: with MPI the job is "
                                                    "started once, from one machine"),
    (["--rdzv-backend", "etcd", "t.py"], "--rdzv-backend 'etcd' is not supported: MPI does "
                                         "the rendezvous"),
    (["--standalone", "--nnodes", "2", "t.py"], "--standalone is for one machine"),
    (["--nproc-per-node", "many", "t.py"], "must be a number, cpu, gpu or auto"),
    (["--max-restarts", "-1", "t.py"], "--max-restarts must be at least 0"),
])
def test_launcher_refuses_what_mpi_cannot_do(argv, message):
    with pytest.raises(SystemExit, match=message):
        launcher.main(argv)


TORCHRUN_SCRIPT = """
import os, sys
import ember as em
env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                  "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                                  "TORCHELASTIC_RESTART_COUNT")}   # before ember.distributed
import ember.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = em.tensor([float(env["RANK"]) + 1.0])
dist.all_reduce(t)
with open(os.path.join(sys.argv[1], "rank" + env["RANK"]), "w") as f:
    f.write(repr((env, dist.get_rank(), t.item(), sys.argv[2:], __name__)))
restart = int(env["TORCHELASTIC_RESTART_COUNT"])
dist.destroy_process_group()
sys.exit(3 if "--fail-first" in sys.argv and restart == 0 else 0)
"""


def launch(argv, tmp_path):
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", *argv],
                          capture_output=True, text=True, timeout=90, env=child_env(),
                          stdin=subprocess.DEVNULL, cwd=tmp_path)


def test_torchrun_style_launch_sets_the_variables_on_every_rank(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TORCHRUN_SCRIPT)
    proc = launch(["--standalone", "--nnodes", "1", "--nproc_per_node", "2", "--rdzv-id",
                   "t18", "--master_port", "29611", str(script), str(tmp_path), "--lr", "3"],
                  tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for r in (0, 1):
        env, rank, total, rest, name = eval((tmp_path / f"rank{r}").read_text())
        assert env == {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": "29611", "TORCHELASTIC_RUN_ID": "t18",
                       "TORCHELASTIC_RESTART_COUNT": "0"}
        assert (rank, total, rest, name) == (r, 3.0, ["--lr", "3"], "__main__")


def test_torchrun_style_launch_of_a_module_with_restarts(tmp_path):
    (tmp_path / "pkg18").mkdir()
    (tmp_path / "pkg18" / "__init__.py").write_text("")
    (tmp_path / "pkg18" / "train.py").write_text(TORCHRUN_SCRIPT)
    env = child_env()
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node",
                           "2", "--max-restarts", "1", "-m", "pkg18.train", str(tmp_path),
                           "--fail-first"], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(tmp_path) + os.pathsep +
                               env["PYTHONPATH"]}, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the job exited with status 3; starting it again (1 restart left)" in proc.stderr
    for r in (0, 1):
        env, rank, total, rest, name = eval((tmp_path / f"rank{r}").read_text())
        assert env["TORCHELASTIC_RESTART_COUNT"] == "1" and env["RANK"] == str(r)
        assert (rank, total, rest, name) == (r, 3.0, ["--fail-first"], "__main__")


def test_rank_env_from_each_mpi_launcher():
    from ember.distributed._rank_env import set_rank_env
    hydra = {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2",
             "RANK": "0", "MASTER_PORT": "5"}      # RANK inherited from a parent: replaced
    set_rank_env(hydra)
    assert {k: hydra[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                  "MASTER_ADDR", "MASTER_PORT")} == {
        "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "5"}
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    assert set_rank_env(ompi) == ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
    assert (ompi["RANK"], ompi["LOCAL_RANK"]) == ("3", "1") and "MASTER_ADDR" not in ompi
    assert set_rank_env({"PATH": "/bin"}) == []      # not under an MPI launcher
