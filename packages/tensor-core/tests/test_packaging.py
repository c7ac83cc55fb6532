"""tensor-core as a package: it imports without NumPy, names the package to install
for the components that live elsewhere, and its namespace exposes what the design
promises."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ember as em

PKG = Path(__file__).resolve().parents[1]


def _python(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)


def test_import_does_not_import_numpy():
    r = _python("import sys, ember as em\n"
                "x = em.arange(6, dtype=em.float32).reshape(2, 3)\n"
                "y = (x.T * 2 + 1).sum(0)\n"
                "print(y.tolist(), sorted(m for m in sys.modules\n"
                "                         if m == 'numpy' or m.startswith('numpy.')))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("[]"), f"numpy was imported: {r.stdout}"


def test_import_works_when_numpy_is_missing():
    """NumPy is optional: with it unimportable, ember imports and computes; interop
    says what is missing."""
    r = _python("import sys\n"
                "sys.modules['numpy'] = None   # import numpy -> ImportError\n"
                "import ember as em\n"
                "print(em.ones(3).sum().item())\n"
                "try:\n    em.ones(2).numpy()\n"
                "except ImportError as e:\n    print('ImportError')\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3.0", "ImportError"]


@pytest.mark.parametrize("name,dist", sorted({
    "autograd": "ember-autograd", "nn": "ember-nn", "optim": "ember-nn",
    "data": "ember-data", "multiprocessing": "ember-mp", "distributed": "ember-mp"}.items()))
def test_missing_components_name_their_package(name, dist):
    if importlib.util.find_spec(f"ember.{name}") is not None:
        pytest.skip(f"ember.{name} is installed here")
    with pytest.raises(ModuleNotFoundError, match=re.escape(f"pip install {dist}")) as info:
        getattr(em, name)
    assert info.value.name == f"ember.{name}"
    assert f"ember.{name}" in str(info.value)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = em.no_such_thing
    assert not hasattr(em, "no_such_thing")


def test_version_matches_pyproject():
    text = (PKG / "pyproject.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if m is None:     # dynamic version: read from ember/_version.py
        assert re.fullmatch(r"\d+\.\d+\.\d+.*", em.__version__)
    else:
        assert em.__version__ == m.group(1)


def test_public_namespace():
    for name in ("Tensor", "Size", "dtype", "device", "tensor", "zeros", "ones", "full",
                 "empty", "arange", "linspace", "eye", "from_numpy", "as_tensor", "asarray",
                 "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
                 "result_type", "promote_types", "can_cast", "finfo", "iinfo",
                 "get_default_dtype", "set_default_dtype", "float32", "int64", "bool",
                 "sum", "mean", "var", "std", "argmax", "logsumexp", "norm", "where",
                 "reshape", "permute", "transpose", "narrow", "expand", "e", "pi", "inf", "nan"):
        assert hasattr(em, name), name
    assert em.device("cpu") == "cpu"
    assert isinstance(em.ones(1), em.Tensor)


def test_star_import_is_clean():
    r = _python("from ember import *\nprint(tensor([1, 2]).tolist(), float32)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[1,", "2]", "ember.float32"]


def test_import_is_fast():
    r = _python("import time\nt = time.perf_counter()\nimport ember\n"
                "print(time.perf_counter() - t)")
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) < 2.0, f"import ember took {r.stdout.strip()} s"


def test_extension_files_ship_in_the_wheel():
    """`cimport ember` and the C headers need every public .pxd and header in the wheel:
    the package-data globs cover them, and they sit beside the imported ember (the
    installed copy when the suite runs against an install, as in CI)."""
    tomllib = pytest.importorskip("tomllib")
    src = PKG / "src" / "ember"
    config = tomllib.loads((PKG / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["ember"]
    shipped = {p for g in globs for p in src.glob(g)}
    needed = set(src.rglob("*.pxd")) | set((src / "include").rglob("*.h"))
    assert needed and needed <= shipped, sorted(map(str, needed - shipped))
    installed = Path(em.__file__).parent
    for f in needed:
        assert (installed / f.relative_to(src)).is_file(), f"{f.relative_to(src)} not installed"
