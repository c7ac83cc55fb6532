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
    "data": "ember-data", "multiprocessing": "ember-mp", "distributed": "ember-mp",
    "onnx": "ember-nn"}.items()))
def test_missing_components_name_their_package(name, dist):
    if any((Path(p) / name).is_dir() for p in em.__path__):
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


# ---- one package alone: every spelling of a missing component says what to install

COMPONENT_DIRS = ("autograd", "nn", "optim", "data", "multiprocessing", "distributed")


def _python_with_only(tmp_path, keep, code):
    """Run code where ember is the installed ember minus the component folders not in
    `keep`: a copy of its top level (symlinks) alone on the path, site-packages off
    (-S), as when only ember-tensor-core (and `keep`'s packages) are installed."""
    installed = Path(em.__file__).parent
    root = tmp_path / "site"
    (root / "ember").mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name in COMPONENT_DIRS and entry.name not in keep:
            continue
        (root / "ember" / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(root)
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)


_SPELLINGS = """
import importlib, ember as em
def check(name, dist, stmt):
    try:
        exec(stmt, {})
    except ModuleNotFoundError as e:
        want = f"{name} needs the {dist} package: pip install {dist}"
        assert str(e) == want and e.name == name, (stmt, str(e), e.name)
    else:
        raise AssertionError(f"{stmt} did not raise")
for comp, dist in COMPONENTS:
    name = "ember." + comp
    check(name, dist, f"import {name}")
    check(name, dist, f"from ember import {comp}")
    check(name, dist, f"import ember as em; em.{comp}")
    check(name, dist, f"import importlib; importlib.import_module({name!r})")
    check(name, dist, f"import {name}.something")
print("ok")
"""


@pytest.mark.parametrize("keep", [(), ("autograd",), ("autograd", "nn", "optim"),
                                  ("autograd", "data")], ids=["tensor-core", "+autograd",
                                                              "+autograd+nn", "+autograd+data"])
def test_every_spelling_of_a_missing_component_names_its_package(tmp_path, keep):
    dists = {"autograd": "ember-autograd", "nn": "ember-nn", "optim": "ember-nn",
             "data": "ember-data", "multiprocessing": "ember-mp",
             "distributed": "ember-mp"}
    missing = [(c, d) for c, d in dists.items() if c not in keep]
    code = f"COMPONENTS = {missing!r}\n" + _SPELLINGS
    if "data" not in keep:
        code += ("check('ember.utils.data', 'ember-data', 'import ember.utils.data')\n"
                 "check('ember.utils.data', 'ember-data', "
                 "'from ember.utils.data import DataLoader')\n")
    if "autograd" not in keep:
        code += ("check('ember.utils.checkpoint', 'ember-autograd', "
                 "'import ember.utils.checkpoint')\n")
    # what is installed works, and nothing else was loaded for the missing ones
    code += ("x = em.ones(2, requires_grad=%r)\n" % ("autograd" in keep)
             + "print((x * 3).sum().item())\n")
    if "autograd" in keep:
        code += ("from ember.utils.checkpoint import checkpoint\n"
                 "y = checkpoint(lambda t: (t * t).sum(), x); y.backward()\n"
                 "print(x.grad.tolist())\n")
    if "data" in keep:
        code += "import ember.utils.data as d, ember.data; print(d is ember.data)\n"
    r = _python_with_only(tmp_path, keep, code)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert out[0] == "ok" and out[1] == "6.0", r.stdout
    if "autograd" in keep:
        assert out[2] == "[2.0, 2.0]"
    if "data" in keep:
        assert out[-2] == "True"


def test_the_finder_answers_only_for_missing_components():
    """Installed components load normally; other missing ember modules keep Python's
    own message; the finder is not consulted for names outside ember."""
    from ember import _components
    assert _components._MissingComponentFinder.find_spec("numpy") is None
    assert _components._MissingComponentFinder.find_spec("ember.no_such_module") is None
    assert _components._AliasFinder.find_spec("ember.nn") is None
    with pytest.raises(ModuleNotFoundError, match="No module named 'ember.no_such_module'"):
        importlib.import_module("ember.no_such_module")
