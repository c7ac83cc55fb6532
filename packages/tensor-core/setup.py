"""Build of ember-tensor-core: Cython core + hand-written C kernels + kernels
generated from the op table.

Environment:
  USE_CUDA=auto|0|1    CUDA backend (auto: when nvcc is found). 1 fails without nvcc.
  USE_OPENCL=auto|0|1  OpenCL backend (auto: on; it needs pyopencl at run time only).
  EMBER_DEBUG=1        -O0 -g, for debugging kernels.
"""
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent.resolve()
SRC = HERE / "src" / "ember"


def load_ops():
    """Import ember/ops/render.py without importing ember (which isn't built yet)."""
    ops = SRC / "ops"
    spec = importlib.util.spec_from_file_location(
        "_ember_ops", ops / "__init__.py", submodule_search_locations=[str(ops)])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["_ember_ops"] = pkg
    spec.loader.exec_module(pkg)
    return importlib.import_module("_ember_ops.render")


def generate_kernels():
    """Render the op table's CPU loops (a build output; never committed)."""
    out = SRC / "kernels" / "cpu" / "generated" / "ember_cpu_ops.c"
    out.parent.mkdir(exist_ok=True)
    text = load_ops().render_c()
    if not out.exists() or out.read_text() != text:   # unchanged: keep the mtime, skip recompiling
        out.write_text(text)
    return out


def flag(name):
    value = os.environ.get(name, "auto").strip().lower()
    if value not in ("auto", "0", "1"):
        sys.exit(f"{name} must be auto, 0 or 1, got {value!r}")
    return value


def build_config():
    use_cuda, use_opencl = flag("USE_CUDA"), flag("USE_OPENCL")
    nvcc = shutil.which("nvcc") or (os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc")
                                    if os.environ.get("CUDA_HOME") else None)
    if use_cuda == "1" and not nvcc:
        sys.exit("USE_CUDA=1 but nvcc was not found (set CUDA_HOME or PATH)")
    config = {
        "use_cuda": use_cuda,
        "use_opencl": use_opencl,
        "nvcc": nvcc,
        # The CUDA and OpenCL backends land in later releases; the toggles are read
        # now so build scripts written today keep working.
        "cuda": False,
        "opencl": use_opencl != "0",
    }
    (SRC / "_build_config.py").write_text(
        "# Written by setup.py at build time.\nBUILD_CONFIG = %r\n" % config)
    return config


class BuildExt(build_ext):
    """Compile every C file of every extension in parallel, with ember's flags."""

    def build_extensions(self):
        if self.compiler.compiler_type == "unix":
            for ext in self.extensions:
                ext.extra_compile_args = COMPILE_ARGS
        compile_one_file_at_a_time = self.compiler.compile
        jobs = int(os.environ.get("EMBER_BUILD_JOBS", os.cpu_count() or 1))

        def compile_in_parallel(sources, *args, **kwargs):
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(jobs) as pool:
                objects = pool.map(lambda s: compile_one_file_at_a_time([s], *args, **kwargs),
                                   sources)
                return [o for objs in objects for o in objs]

        self.compiler.compile = compile_in_parallel
        if self.parallel is None:
            self.parallel = jobs
        super().build_extensions()


DEBUG = os.environ.get("EMBER_DEBUG") == "1"
COMPILE_ARGS = (["-O0", "-g"] if DEBUG else ["-O3"]) + [
    "-std=gnu11", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
    "-Wno-unused-function", "-Wno-unreachable-code", "-Wno-maybe-uninitialized"]


def extensions():
    from Cython.Build import cythonize

    generated = generate_kernels()
    build_config()
    cpu = SRC / "kernels" / "cpu"
    rel = lambda p: str(Path(p).relative_to(HERE))
    include = [rel(SRC / "include"), rel(cpu)]
    # Each _C/<name>.pyx names the hand-written C files it wraps in a first-lines
    # comment, "# kernels: index.c sort.c" (paths under kernels/cpu/).
    modules = {}
    for pyx in sorted((SRC / "_C").glob("*.pyx")):
        sources = []
        for line in pyx.read_text().splitlines()[:5]:
            if line.startswith("# kernels:"):
                sources = [rel(cpu / f) for f in line.split(":", 1)[1].split()]
        modules[pyx.stem] = sources
    modules["core"].append(rel(generated))
    exts = [Extension(f"ember._C.{name}", [rel(SRC / "_C" / f"{name}.pyx")] + sources,
                      include_dirs=include)
            for name, sources in modules.items()]
    return cythonize(exts, compiler_directives={"language_level": 3},
                     nthreads=0, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
