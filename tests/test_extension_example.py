"""examples/extension (a fused bias + GELU in Cython + C with its own backward) built the
two ways users build extensions: just in time through ember.utils.extension.load (two
processes at once, then a cache hit) and ahead of time by pip in a temporary venv. The
op matches ember's own gelu, passes gradcheck, trains inside an nn.Module, and rejects
bad input with its own errors."""
import importlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ember as em
from ember.utils import extension

pytest.importorskip("Cython")
pytest.importorskip("ember.nn", reason="the example's layer needs ember-nn")
F = pytest.importorskip("ember.nn.functional")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "extension"


def _env(**extra):
    """The environment of a child Python that imports what this process imports."""
    env = dict(os.environ, **{k: str(v) for k, v in extra.items()})
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    """Two processes import the example from its source folder at once, with an empty
    cache: each compiles it just in time unless the other holds the build lock."""
    cache = tmp_path_factory.mktemp("ext-cache")
    code = ("import ember.utils.extension as x, ember_fused\n"
            "print(x.builds, ember_fused.kernels.__file__)")
    env = _env(EMBER_EXTENSIONS_DIR=cache)
    env["PYTHONPATH"] = os.pathsep.join([str(EXAMPLE), env["PYTHONPATH"]])
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    results = [(p.wait(timeout=600),) + p.communicate() for p in procs]
    return cache, results


def test_two_processes_load_at_once(jit):
    cache, results = jit
    for rc, _, err in results:
        assert rc == 0, err
    builds = [int(out.split()[0]) for _, out, _ in results]
    files = {out.split()[1] for _, out, _ in results}
    assert sorted(builds) == [0, 1], "exactly one process compiles; the other waits for it"
    assert len(files) == 1 and files.pop().startswith(str(cache))
    # one finished build folder and its lock; no half-built temporary folder is left
    entries = sorted(p.name for p in cache.iterdir())
    assert len(entries) == 2 and entries[1] == entries[0] + ".lock", entries
    # and nothing (such as the generated .c) is written beside the sources
    assert sorted(p.name for p in (EXAMPLE / "ember_fused").iterdir()
                  if p.name != "__pycache__") == [
        "__init__.py", "_ops.pyx", "bias_gelu.c", "bias_gelu.h"]


@pytest.fixture(scope="module")
def fused(jit):
    """The example imported here, from the source folder: load() finds the build the
    two processes made."""
    cache, results = jit
    old = os.environ.get("EMBER_EXTENSIONS_DIR")
    os.environ["EMBER_EXTENSIONS_DIR"] = str(cache)
    sys.path.insert(0, str(EXAMPLE))
    try:
        before = extension.builds
        built = results[0][1].split()[1]
        mtime = os.stat(built).st_mtime_ns
        mod = importlib.import_module("ember_fused")
        # the cache hit: nothing compiled, the same file, untouched
        assert extension.builds == before
        assert mod.kernels.__file__ == built and os.stat(built).st_mtime_ns == mtime
        yield mod
    finally:
        sys.path.remove(str(EXAMPLE))
        if old is None:
            del os.environ["EMBER_EXTENSIONS_DIR"]
        else:
            os.environ["EMBER_EXTENSIONS_DIR"] = old


def test_second_load_hits_the_cache(fused):
    before = extension.builds
    again = extension.load("ember_fused_ops", [EXAMPLE / "ember_fused" / "_ops.pyx",
                                               EXAMPLE / "ember_fused" / "bias_gelu.c"])
    assert again is fused.kernels and extension.builds == before


def reference(x, b):
    return F.gelu(x + b)


@given(st.lists(st.integers(1, 9), min_size=1, max_size=3),
       st.sampled_from([em.float32, em.float64]), st.booleans(), st.integers(0, 2**31 - 1))
def test_forward_matches_ember(fused, shape, dtype, transpose, seed):
    em.manual_seed(seed)
    x = em.randn(*shape, dtype=dtype) * 3
    if transpose and len(shape) > 1:      # a non-contiguous input
        x = x.transpose(0, -1)
    b = em.randn(x.shape[-1], dtype=dtype)
    y = fused.bias_gelu(x, b)
    assert y.dtype == dtype and tuple(y.shape) == tuple(x.shape)
    tol = 1e-6 if dtype == em.float32 else 1e-13
    np.testing.assert_allclose(y.numpy(), reference(x, b).numpy(), rtol=tol, atol=tol)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.integers(0, 2**31 - 1))
def test_backward_matches_ember(fused, shape, seed):
    em.manual_seed(seed)
    x = (em.randn(*shape, dtype=em.float64) * 2).requires_grad_()
    b = em.randn(shape[-1], dtype=em.float64).requires_grad_()
    g = em.randn(*shape, dtype=em.float64)
    gx, gb = em.autograd.grad(fused.bias_gelu(x, b), (x, b), g)
    rx, rb = em.autograd.grad(reference(x, b), (x, b), g)
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), rb.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(1,), (5, 7), (2, 3, 4)])
def test_gradcheck(fused, shape):
    em.manual_seed(0)
    x = em.randn(*shape, dtype=em.float64, requires_grad=True)
    b = em.randn(shape[-1], dtype=em.float64, requires_grad=True)
    assert em.autograd.gradcheck(fused.bias_gelu, (x, b))
    # a non-contiguous incoming gradient (the backward makes it contiguous itself)
    assert em.autograd.gradcheck(lambda x, b: fused.bias_gelu(x, b).T, (x, b))


def test_module_trains(fused):
    em.manual_seed(0)
    x = em.randn(64, 4)
    target = (x[:, :1] * 2 - x[:, 1:2]).relu() + 0.5 * x[:, 2:3]
    model = em.nn.Sequential(fused.LinearGELU(4, 16), em.nn.Linear(16, 1))
    assert {n for n, _ in model.named_parameters()} == {
        "0.linear.weight", "0.bias", "1.weight", "1.bias"}
    opt = em.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(150):
        loss = F.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert model[0].bias.grad is not None and model[0].bias.grad.abs().sum().item() > 0
    assert losses[-1] < 0.1 * losses[0], losses[::25]


def test_wrong_dtype_gives_the_ops_error(fused):
    x = em.ones(4, 3, dtype=em.int64)
    with pytest.raises(TypeError, match=r"bias_gelu: x must be float32 or float64, got "
                                        r"int64 \(4, 3\) on cpu"):
        fused.bias_gelu(x, em.ones(3))
    with pytest.raises(TypeError, match=r"bias_gelu: bias is float64 \(3,\) on cpu but x is "
                                        r"float32 \(4, 3\) on cpu"):
        fused.bias_gelu(em.ones(4, 3), em.ones(3, dtype=em.float64))
    with pytest.raises(ValueError, match=r"bias_gelu: bias must have shape \(3,\) to match "
                                         r"x's last dim, got bias float32 \(4,\)"):
        fused.bias_gelu(em.ones(4, 3), em.ones(4))
    with pytest.raises(ValueError, match="bias_gelu: x must have at least one dimension"):
        fused.bias_gelu(em.ones(()), em.ones(1))
    with pytest.raises(TypeError, match="bias_gelu: x must be an ember tensor, got list"):
        fused.bias_gelu([1.0], em.ones(1))


def test_builds_ahead_of_time_in_a_venv(tmp_path):
    """pip install of the example (its setup.py: Extension + BuildExtension) into a fresh
    venv that sees this process's packages (ember, Cython, setuptools, pip)."""
    src = tmp_path / "src"       # a copy: pip writes build/ and egg-info beside the sources
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "*.so"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True, env=env).stdout.strip()
    Path(purelib, "_parent.pth").write_text(
        "\n".join(p for p in sys.path if os.path.isdir(p) and p != str(EXAMPLE)))
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--no-index", str(src)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    cache = tmp_path / "jit-cache"
    check = textwrap.dedent("""
        import ember as em, ember_fused
        print(ember_fused.kernels.__name__, ember_fused.kernels.__file__)
        x = em.linspace(-3, 3, 12).reshape(3, 4)
        b = em.tensor([0.5, -0.5, 1.0, 0.0])
        y = ember_fused.bias_gelu(x, b)
        z = 0.5 * (x + b) * (1 + em.erf((x + b) / 2 ** 0.5))
        print((y - z).abs().max().item())
    """)
    r = subprocess.run([py, "-c", check], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(env, EMBER_EXTENSIONS_DIR=str(cache)), timeout=120)
    assert r.returncode == 0, r.stderr
    name, path, err = r.stdout.split()
    assert name == "ember_fused._ops" and path.startswith(purelib), r.stdout
    assert float(err) < 1e-6
    assert not cache.exists(), "the installed package must not compile just in time"
