"""Build helpers for extension authors (DESIGN.md, "Extension authoring").

Ahead of time, in a setup.py::

    from setuptools import setup
    from ember.utils.extension import Extension, BuildExtension
    setup(ext_modules=[Extension("mypkg._ops", ["mypkg/_ops.pyx", "mypkg/kernels.c"])],
          cmdclass={"build_ext": BuildExtension})

Just in time::

    from ember.utils.extension import load
    ops = load("my_ops", ["ops.pyx", "kernels.c"], extra_cflags=["-march=native"])

Sources: one .pyx (Cython; `cimport ember` works), C (.c) and C++ (.cpp, .cc) files, and
CUDA (.cu) files compiled by nvcc. Building needs setuptools, and Cython for .pyx
sources: `pip install ember-tensor-core[extension]`. Plain `import ember` needs neither,
so this module imports them only when something is built.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

# BuildExtension comes from the module __getattr__ (it subclasses a setuptools class)
__all__ = ["get_include", "Extension", "BuildExtension", "load",  # noqa: F822
           "ExtensionBuildError"]

NEEDS_CYTHON = ("ember.utils.extension: building .pyx sources needs Cython: "
                "pip install 'ember-tensor-core[extension]'")
NEEDS_SETUPTOOLS = ("ember.utils.extension: building extensions needs setuptools: "
                    "pip install 'ember-tensor-core[extension]'")
# ember's own kernel flags (no -ffast-math: NaN/inf stay correct)
DEFAULT_CFLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math"]
SOURCE_TYPES = (".pyx", ".c", ".cpp", ".cc", ".cxx", ".cu")
# files beside the sources that a build reads: a change to them rebuilds
HEADER_TYPES = (".h", ".hpp", ".cuh", ".pxd", ".pxi")


class ExtensionBuildError(RuntimeError):
    """Compiling an extension failed; the message holds the command and its output."""


def get_include() -> list[str]:
    """Include directories for C/Cython code that uses ember: the public C headers
    (`#include "ember/tensor.h"`) and the folder holding the `ember` package, whose
    .pxd files `cimport ember` reads."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(here, "include"), os.path.dirname(here)]


def find_nvcc():
    """nvcc from $CUDA_HOME/bin, else the PATH; None when absent."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            path = os.path.join(os.environ[var], "bin", "nvcc")
            if os.access(path, os.X_OK):
                return path
    return shutil.which("nvcc")


def cuda_home():
    """The toolkit folder (with include/cuda_runtime.h) that nvcc belongs to."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = find_nvcc()
    if nvcc:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates.append("/usr/local/cuda")
    for c in candidates:
        if c and os.path.exists(os.path.join(c, "include", "cuda_runtime.h")):
            return c
    return None


def no_nvcc_message(cu_sources):
    return (f"ember.utils.extension: {', '.join(map(os.path.basename, cu_sources))} "
            f"{'is' if len(cu_sources) == 1 else 'are'} CUDA source but nvcc was not found "
            f"(put it on the PATH or set CUDA_HOME)")


def Extension(name, sources, *, include_dirs=(), extra_compile_args=(), extra_link_args=(),
              extra_cuda_args=(), **kwargs):
    """A setuptools Extension that builds against ember: get_include() and the sources'
    folders on the include paths, ember's optimisation flags, and for .cu sources the
    CUDA runtime (linked statically). Build it with `cmdclass={"build_ext":
    BuildExtension}`. extra_cuda_args go to nvcc only; other keywords to setuptools."""
    try:
        from ember.utils import _build
    except ImportError as e:
        if getattr(e, "name", "") == "setuptools":
            raise ImportError(NEEDS_SETUPTOOLS) from None
        raise
    return _build.make_extension(name, sources, include_dirs=include_dirs,
                                 extra_compile_args=extra_compile_args,
                                 extra_link_args=extra_link_args,
                                 extra_cuda_args=extra_cuda_args, **kwargs)


def __getattr__(name):
    if name == "BuildExtension":       # a setuptools class: import setuptools on first use
        try:
            from ember.utils._build import BuildExtension
        except ImportError as e:
            if getattr(e, "name", "") == "setuptools":
                raise ImportError(NEEDS_SETUPTOOLS) from None
            raise
        return BuildExtension
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# just in time -------------------------------------------------------------------------

builds = 0          # extensions this process compiled (a cache hit compiles none)
MANIFEST = "ember-build.json"   # in a build folder: the module file's name, size and sha256


def default_build_root():
    """$EMBER_EXTENSIONS_DIR, else $XDG_CACHE_HOME/ember/extensions (~/.cache/...)."""
    if os.environ.get("EMBER_EXTENSIONS_DIR"):
        return os.environ["EMBER_EXTENSIONS_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ember", "extensions")


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _fingerprint(name, sources, spec):
    """Everything the compiled module depends on: the sources and the headers beside
    them, the flags, ember's version and public .pxd/.h files, the Python ABI and the
    Cython version."""
    import ember
    parts = {"name": name, "spec": {k: v for k, v in spec.items() if k != "sources"},
             # contents, not paths: a moved checkout or a temporary copy reuses the build
             "sources": [(os.path.basename(s), _digest(s)) for s in sources],
             "ember": ember.__version__,
             "python": sys.version, "abi": sysconfig.get_config_var("EXT_SUFFIX")}
    headers = []
    for d in sorted({os.path.dirname(s) for s in sources}):
        for f in sorted(os.listdir(d)):
            if f.endswith(HEADER_TYPES):
                headers.append((f, _digest(os.path.join(d, f))))
    parts["headers"] = headers
    # ember's own public declarations too: a development checkout changes them without
    # a new version number
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts["ember_headers"] = [
        (os.path.relpath(os.path.join(d, f), pkg), _digest(os.path.join(d, f)))
        for d in (pkg, os.path.join(pkg, "_C"), os.path.join(pkg, "include", "ember"))
        for f in sorted(os.listdir(d)) if f.endswith((".pxd", ".h"))]
    if any(s.endswith(".pyx") for s in sources):
        try:
            import Cython
        except ImportError:
            raise ImportError(NEEDS_CYTHON) from None
        parts["cython"] = Cython.__version__
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _check_sources(name, sources):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"load: name must be a Python identifier (the module's name), "
                         f"got {name!r}")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    sources = [os.path.abspath(os.fspath(s)) for s in sources]
    if not sources:
        raise ValueError(f"load: extension {name!r} has no sources")
    for s in sources:
        if not s.endswith(SOURCE_TYPES):
            raise ValueError(f"load: {s!r} is not a source file of a known kind "
                             f"({', '.join(SOURCE_TYPES)})")
        if not os.path.isfile(s):
            raise FileNotFoundError(f"load: source {s!r} of extension {name!r} does not exist")
    pyx = [s for s in sources if s.endswith(".pyx")]
    if len(pyx) > 1:
        raise ValueError(f"load: one .pyx per extension (it becomes the module {name!r}), "
                         f"got {len(pyx)}: {', '.join(map(os.path.basename, pyx))}")
    cu = [s for s in sources if s.endswith(".cu")]
    if cu and find_nvcc() is None:
        raise RuntimeError(no_nvcc_message(cu))
    return sources


def load(name, sources, *, extra_cflags=None, extra_ldflags=None, extra_cuda_cflags=None,
         extra_include_paths=None, build_directory=None, verbose=False):
    """Compile an extension module from `sources` (one .pyx and/or .c/.cpp/.cu files; a
    module without a .pyx defines PyInit_<name> in C) and import it as `name`.

    The result is cached under `build_directory` (default: default_build_root()) in a
    folder named by a hash of the sources, the headers beside them, the flags and
    ember's version: a second load, in this process or another, imports without
    compiling, and any change rebuilds. Two processes loading at once build it once
    (a file lock) and never see a half-written module (built aside, then renamed).
    The folder records the module file's size and sha256, checked before each import:
    a truncated or damaged file (a killed build, a full disk) is rebuilt, never
    imported (loading a damaged shared library can crash the interpreter).
    A failed build raises ExtensionBuildError with the command line and the compiler's
    output; `verbose=True` also prints the output of successful builds."""
    global builds
    sources = _check_sources(name, sources)
    spec = {"name": name, "sources": sources,
            "cflags": list(extra_cflags or ()), "ldflags": list(extra_ldflags or ()),
            "cuda_cflags": list(extra_cuda_cflags or ()),
            "include_dirs": [os.path.abspath(p) for p in extra_include_paths or ()]}
    root = os.path.abspath(build_directory or default_build_root())
    folder = os.path.join(root, f"{name}-{_fingerprint(name, sources, spec)}")
    target = os.path.join(folder, name + sysconfig.get_config_var("EXT_SUFFIX"))
    if not _complete(folder, target):
        _make_root(root, "build_directory" if build_directory else
                   "$EMBER_EXTENSIONS_DIR" if os.environ.get("EMBER_EXTENSIONS_DIR") else
                   "the default cache folder")
        with _FileLock(folder + ".lock") as lock:
            if not _complete(folder, target):   # another process may have built it meanwhile
                _build_into(folder, target, spec, verbose, clean=lock.fd is not None)
                builds += 1
    elif verbose:
        print(f"ember.utils.extension: {name}: using the build in {folder}", file=sys.stderr)
    return _import(name, target)


def _make_root(root, origin):
    try:
        os.makedirs(root, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise NotADirectoryError(
            f"load: the extension cache {root!r} (from {origin}) cannot be a folder: a "
            f"file of that name, or of a folder above it, is in the way; remove it or "
            f"choose another folder") from None


def _complete(folder, target):
    """Whether folder holds a finished build: the module file with the size and sha256
    its manifest recorded. A build killed mid-rename, a full disk or a damaged file
    fails this (and the size check spares hashing a truncated file)."""
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            manifest = json.load(f)
        return (type(manifest) is dict and manifest.get("file") == os.path.basename(target)
                and os.path.getsize(target) == manifest.get("size")
                and _digest(target) == manifest.get("sha256"))
    except (OSError, ValueError):
        return False


def _build_into(folder, target, spec, verbose, clean):
    """Build in a private folder, record the module's size and hash there, then rename
    it into place: the rename is atomic, so a reader sees either nothing or the whole
    build, and a damaged build folder fails _complete and is replaced."""
    prefix = os.path.basename(folder) + ".tmp-"
    parent = os.path.dirname(folder)
    if clean:   # we hold the lock: another build folder of this hash is a killed build's
        for stale in os.listdir(parent):
            if stale.startswith(prefix):
                shutil.rmtree(os.path.join(parent, stale), ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        child_spec = dict(spec, out=tmp)
        env = dict(os.environ)
        # the child imports this same ember (and Cython, setuptools) as we do
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        cmd = [sys.executable, "-m", "ember.utils._build", json.dumps(child_spec)]
        if verbose:
            print(f"ember.utils.extension: building {spec['name']} in {folder}", file=sys.stderr)
        r = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if verbose:
            print(r.stdout, file=sys.stderr, end="")
        if r.returncode != 0:
            raise ExtensionBuildError(_failure_message(spec, r.stdout))
        built = os.path.join(tmp, os.path.basename(target))
        with open(os.path.join(tmp, MANIFEST), "w") as f:
            json.dump({"file": os.path.basename(target), "size": os.path.getsize(built),
                       "sha256": _digest(built)}, f)
        if clean:       # we hold the lock: what is in the way is an incomplete build
            if os.path.isdir(folder) and not os.path.islink(folder):
                shutil.rmtree(folder)
            elif os.path.lexists(folder):
                os.unlink(folder)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not _complete(folder, target):   # not merely a racing builder without flock
                raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def _failure_message(spec, output):
    commands = [line[2:] for line in output.splitlines() if line.startswith("$ ")]
    lines = [line for line in output.splitlines() if not line.startswith("$ ")]
    return (f"load: building extension {spec['name']!r} failed\n"
            f"command: {commands[-1] if commands else '(none ran)'}\n"
            + "\n".join(lines).strip())


def _import(name, path):
    mod = sys.modules.get(name)
    if mod is not None and getattr(mod, "__file__", None) == path:
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


class _FileLock:
    """An exclusive lock on a file (fcntl.flock: released by the OS if the holder dies,
    so a killed build never leaves a stale lock). Without fcntl (Windows) the atomic
    rename alone keeps builds safe; two processes may then both compile."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:
            return self
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)      # closing releases the lock
            self.fd = None
