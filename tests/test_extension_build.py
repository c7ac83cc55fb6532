"""ember.utils.extension's build machinery: what a rebuild depends on, build errors that
carry the compiler's output and command line, CUDA sources with and without nvcc, and
plain `import ember` staying free of the build tools."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import ember as em
from ember.utils import extension

pytest.importorskip("Cython")


def _fingerprint(files, **spec):
    base = {"name": "m", "cflags": [], "ldflags": [], "cuda_cflags": [], "include_dirs": []}
    base.update(spec)
    return extension._fingerprint("m", [str(f) for f in files], base)


def test_fingerprint_follows_sources_headers_flags_and_version(tmp_path, monkeypatch):
    src, hdr = tmp_path / "m.c", tmp_path / "m.h"
    src.write_text("int f(void) { return 1; }\n")
    hdr.write_text("#define A 1\n")
    first = _fingerprint([src])
    assert _fingerprint([src]) == first                       # stable
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(src, moved / "m.c")
    shutil.copy(hdr, moved / "m.h")
    assert _fingerprint([moved / "m.c"]) == first               # contents, not paths
    assert _fingerprint([src], cflags=["-O1"]) != first        # flags
    assert _fingerprint([src], ldflags=["-lm"]) != first
    hdr.write_text("#define A 2\n")                            # a header beside the source
    second = _fingerprint([src])
    assert second != first
    src.write_text("int f(void) { return 2; }\n")              # the source
    third = _fingerprint([src])
    assert third != second
    monkeypatch.setattr(em, "__version__", em.__version__ + ".post1")   # ember's version
    assert _fingerprint([src]) != third


def test_bad_arguments(tmp_path):
    c = tmp_path / "m.c"
    c.write_text("")
    with pytest.raises(ValueError, match="load: name must be a Python identifier"):
        extension.load("my-ext", [c], build_directory=tmp_path)
    with pytest.raises(FileNotFoundError, match="load: source .*nope.c.* does not exist"):
        extension.load("m", [tmp_path / "nope.c"], build_directory=tmp_path)
    with pytest.raises(ValueError, match="not a source file of a known kind"):
        extension.load("m", [tmp_path / "m.txt"], build_directory=tmp_path)
    with pytest.raises(ValueError, match="load: extension 'm' has no sources"):
        extension.load("m", [], build_directory=tmp_path)
    (tmp_path / "a.pyx").write_text("")
    (tmp_path / "b.pyx").write_text("")
    with pytest.raises(ValueError, match="one .pyx per extension .*got 2: a.pyx, b.pyx"):
        extension.load("m", [tmp_path / "a.pyx", tmp_path / "b.pyx"], build_directory=tmp_path)


def test_c_compile_error_shows_compiler_output_and_command(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("int broken(void) {\n    return undeclared_name;\n}\n")
    cache = tmp_path / "cache"
    with pytest.raises(extension.ExtensionBuildError) as info:
        extension.load("broken", [src], build_directory=cache)
    msg = str(info.value)
    assert "load: building extension 'broken' failed" in msg
    assert "undeclared_name" in msg and "error" in msg            # the compiler's message
    command = next(line for line in msg.splitlines() if line.startswith("command: "))
    assert "broken.c" in command and " -c " in command             # the compile command
    # nothing half-built is left to be picked up by the next load
    assert sorted(p.name for p in cache.iterdir()) == [
        p.name for p in cache.iterdir() if p.name.endswith(".lock")]


def test_cython_error_shows_cythons_message(tmp_path):
    src = tmp_path / "badpyx.pyx"
    src.write_text("cimport ember\n"
                   "def f(ember.TensorBase t):\n    return ember.no_such_accessor(t)\n")
    with pytest.raises(extension.ExtensionBuildError) as info:
        extension.load("badpyx", [src], build_directory=tmp_path / "cache")
    msg = str(info.value)
    assert "command: cythonize" in msg and "badpyx.pyx" in msg
    assert "no_such_accessor" in msg


def test_cuda_source_without_nvcc_is_a_clear_error(tmp_path, monkeypatch):
    cu = tmp_path / "kern.cu"
    cu.write_text("__global__ void k() {}\n")
    monkeypatch.setenv("PATH", str(tmp_path))       # no nvcc on it
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(RuntimeError, match="kern.cu is CUDA source but nvcc was not found"):
        extension.load("kern", [cu], build_directory=tmp_path / "cache")
    with pytest.raises(RuntimeError, match="kern.cu is CUDA source but nvcc was not found"):
        _setup_py_build(tmp_path, ["kern.cu"], env=dict(os.environ))


def _setup_py_build(folder, sources, env):
    """`python setup.py build_ext --inplace` with Extension + BuildExtension."""
    (folder / "setup.py").write_text(textwrap.dedent(f"""
        from setuptools import setup
        from ember.utils.extension import BuildExtension, Extension
        setup(ext_modules=[Extension("kern", {sources!r})],
              cmdclass={{"build_ext": BuildExtension}},
              script_args=["build_ext", "--inplace", "-q"])
    """))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "setup.py"], cwd=folder, env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stdout + r.stderr)
    return r


@pytest.mark.skipif(extension.find_nvcc() is None, reason="needs nvcc")
def test_cuda_source_builds_with_nvcc(tmp_path):
    """A .pyx calling a .cu kernel through ember's C view: it compiles with nvcc, links
    the CUDA runtime statically and imports (on a machine without a GPU too)."""
    (tmp_path / "scale.cu").write_text(textwrap.dedent("""
        #include <cuda_runtime.h>
        #include "ember/tensor.h"
        __global__ void scale_kernel(double *p, int64_t n, double a) {
            int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
            if (i < n) p[i] *= a;
        }
        /* Scale a contiguous float64 CPU tensor on the GPU: 0, or a CUDA error code. */
        extern "C" int scale_on_gpu(em_tensor_view v, double a) {
            int64_t n = em_numel(&v);
            double *dev;
            cudaError_t e = cudaMalloc(&dev, n * sizeof(double));
            if (e != cudaSuccess) return (int)e;
            cudaMemcpy(dev, em_data(&v), n * sizeof(double), cudaMemcpyHostToDevice);
            scale_kernel<<<(unsigned)((n + 255) / 256), 256>>>(dev, n, a);
            e = cudaMemcpy(em_data(&v), dev, n * sizeof(double), cudaMemcpyDeviceToHost);
            cudaFree(dev);
            return (int)e;
        }
        extern "C" int device_count(void) {
            int n = 0;
            return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
        }
    """))
    (tmp_path / "cuscale.pyx").write_text(textwrap.dedent("""
        cimport ember
        cdef extern from *:
            int scale_on_gpu(ember.em_tensor_view v, double a)
            int device_count()
        def scale_(ember.TensorBase t, double a):
            if ember.dtype(t) != ember.EM_FLOAT64 or not ember.is_contiguous(t):
                raise TypeError("scale_: expected a contiguous float64 tensor")
            rc = scale_on_gpu(ember.tensor_view(t), a)
            if rc:
                raise RuntimeError(f"scale_: CUDA error {rc}")
        def gpus():
            return device_count()
    """))
    mod = extension.load("cuscale", [tmp_path / "cuscale.pyx", tmp_path / "scale.cu"],
                         build_directory=tmp_path / "cache")
    if mod.gpus() == 0:
        pytest.skip("built and imported; no GPU to run the kernel on")
    x = em.arange(1000, dtype=em.float64)
    mod.scale_(x, 2.0)
    assert x.tolist() == [2.0 * i for i in range(1000)]


def test_import_ember_needs_no_build_tools():
    code = ("import sys, ember, ember.utils.extension\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('Cython', 'setuptools', 'distutils')))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_verbose_load_prints_the_build(tmp_path, capfd):
    src = tmp_path / "hello.c"
    src.write_text(textwrap.dedent("""
        #include <Python.h>
        static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "hello", NULL, -1, NULL};
        PyMODINIT_FUNC PyInit_hello(void) {
            PyObject *mod = PyModule_Create(&m);
            if (mod) PyModule_AddIntConstant(mod, "answer", 42);
            return mod;
        }
    """))
    # the temporary folder of a build that was killed half-way
    spec = {"name": "hello", "sources": [str(src)], "cflags": [], "ldflags": [],
            "cuda_cflags": [], "include_dirs": []}
    stale = tmp_path / "cache" / f"hello-{extension._fingerprint('hello', [str(src)], spec)}.tmp-x"
    (stale / "build").mkdir(parents=True)
    mod = extension.load("hello", [src], build_directory=tmp_path / "cache", verbose=True)
    assert mod.answer == 42
    assert not stale.exists(), "the next build of the same hash removes it"
    assert [p.name for p in (tmp_path / "cache").iterdir() if ".tmp-" in p.name] == []
    err = capfd.readouterr().err
    assert "building hello in" in err and "hello.c" in err
    assert extension.load("hello", [src], build_directory=tmp_path / "cache",
                          verbose=True) is mod
    assert "using the build in" in capfd.readouterr().err


# issue 16 item 6: a damaged cache entry is rebuilt, never imported ---------------------------

CACHED_C = textwrap.dedent("""
    #include <Python.h>
    static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "cached", NULL, -1, NULL};
    PyMODINIT_FUNC PyInit_cached(void) {
        PyObject *mod = PyModule_Create(&m);
        if (mod) PyModule_AddIntConstant(mod, "answer", 42);
        return mod;
    }
""")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One build of a tiny C extension: (its source, a pristine cache holding it)."""
    base = tmp_path_factory.mktemp("cached-ext")
    src = base / "cached.c"
    src.write_text(CACHED_C)
    r = _load_in_child(src, base / "cache")
    assert r.returncode == 0 and r.stdout.split() == ["1", "42"], r.stdout + r.stderr
    return src, base / "cache"


def _load_in_child(src, cache, wait=True):
    """load() in a fresh interpreter (a crash fails one test): prints builds, answer."""
    code = ("import sys, ember.utils.extension as x\n"
            "m = x.load('cached', [sys.argv[1]], build_directory=sys.argv[2])\n"
            "print(x.builds, m.answer)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    args = [sys.executable, "-c", code, str(src), str(cache)]
    if not wait:
        return subprocess.Popen(args, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def _copy_cache(built, tmp_path):
    """A copy of the built cache: (source, cache, build folder, module file)."""
    src, pristine = built
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    [folder] = [p for p in cache.iterdir() if p.is_dir()]
    [so] = [p for p in folder.iterdir() if p.name.startswith("cached.")]
    return src, cache, folder, so


def _truncate(at):
    return lambda so: so.write_bytes(so.read_bytes()[:at(len(so.read_bytes()))])


def _flip(at):
    def flip(so):
        data = bytearray(so.read_bytes())
        data[at(len(data))] ^= 0x40
        so.write_bytes(bytes(data))
    return flip


def _zero_tail(so):        # what a full disk or a crash before writeback leaves
    data = so.read_bytes()
    so.write_bytes(data[:len(data) // 3] + b"\0" * (len(data) - len(data) // 3))


def test_issue16_item6_damaged_entries_are_detected(built, tmp_path):
    """Without compiling: every kind of damage makes the entry incomplete."""
    src, cache, folder, so = _copy_cache(built, tmp_path)
    assert extension._complete(str(folder), str(so))
    good = so.read_bytes()
    damages = [_truncate(lambda n, k=k: n * k // 8) for k in range(8)] + \
              [_truncate(lambda n: n - 1), _zero_tail] + \
              [_flip(lambda n, k=k: n * k // 7) for k in range(7)] + [_flip(lambda n: n - 1)]
    for damage in damages:
        damage(so)
        assert not extension._complete(str(folder), str(so))
        so.write_bytes(good)
    so.write_bytes(good + b"\0")                      # grown
    assert not extension._complete(str(folder), str(so))
    so.write_bytes(good)
    manifest = folder / extension.MANIFEST
    saved = manifest.read_text()
    for text in ("", "{", "[]", json.dumps(dict(json.loads(saved), file="other.so")),
                 json.dumps(dict(json.loads(saved), size=str(len(good))))):
        manifest.write_text(text)
        assert not extension._complete(str(folder), str(so))
    manifest.unlink()                                 # an entry from before manifests
    assert not extension._complete(str(folder), str(so))
    manifest.write_text(saved)
    so.unlink()
    assert not extension._complete(str(folder), str(so))


@pytest.mark.parametrize("damage", ["truncated", "flipped, beside a stale temporary folder",
                                    "deleted"])
def test_issue16_item6_damaged_module_is_rebuilt_and_loads(built, tmp_path, damage):
    src, cache, folder, so = _copy_cache(built, tmp_path)
    if damage == "truncated":
        _truncate(lambda n: n // 2)(so)
    elif damage.startswith("flipped"):
        _flip(lambda n: n // 2)(so)
        (cache / (folder.name + ".tmp-killed") / "build").mkdir(parents=True)
    else:
        so.unlink()          # every later load recompiled, then raised ImportError
    r = _load_in_child(src, cache)
    assert r.returncode == 0 and r.stdout.split() == ["1", "42"], r.stdout + r.stderr
    assert extension._complete(str(folder), str(so))
    assert sorted(p.name for p in cache.iterdir()) == [folder.name, folder.name + ".lock"]
    r = _load_in_child(src, cache)                    # and then it is a cache hit
    assert r.returncode == 0 and r.stdout.split() == ["0", "42"], r.stdout + r.stderr


def test_issue16_item6_concurrent_loads_of_a_damaged_entry_build_once(built, tmp_path):
    src, cache, folder, so = _copy_cache(built, tmp_path)
    so.write_bytes(b"")
    procs = [_load_in_child(src, cache, wait=False) for _ in range(3)]
    outs = [(p.wait(timeout=300),) + p.communicate() for p in procs]
    assert all(rc == 0 for rc, _, _ in outs), outs
    assert sorted(out.split()[0] for _, out, _ in outs) == ["0", "0", "1"], outs
    assert all(out.split()[1] == "42" for _, out, _ in outs)


def test_issue16_item6_cache_folder_that_is_a_file(built, tmp_path, monkeypatch):
    src, _ = built
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("EMBER_EXTENSIONS_DIR", str(blocker))
    with pytest.raises(NotADirectoryError, match=r"load: the extension cache '.*not-a-folder' "
                       r"\(from \$EMBER_EXTENSIONS_DIR\) cannot be a folder: a file"):
        extension.load("cached", [src])
    with pytest.raises(NotADirectoryError, match=r"not-a-folder/below' \(from build_directory"):
        extension.load("cached", [src], build_directory=blocker / "below")
