"""Build of ember-tensor-core: Cython core + hand-written C kernels + kernels
generated from the op table.

Environment:
  USE_CUDA=auto|0|1    CUDA backend (auto: when nvcc is found). 1 fails without nvcc.
  CUDA_ARCHS="80 90"   the GPUs nvcc builds machine code for (plus PTX of the last one).
  USE_OPENCL=auto|0|1  OpenCL backend (auto: on; it needs pyopencl at run time only).
  EMBER_DEBUG=1        -O0 -g, for debugging kernels.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent.resolve()
SRC = HERE / "src" / "ember"


def load_ops(module):
    """ember/ops/<module>.py (render, gpu_programs) without importing ember, which
    isn't built yet: the ember.ops package loaded by path, under another name."""
    if "_ember_ops" not in sys.modules:
        ops = SRC / "ops"
        spec = importlib.util.spec_from_file_location(
            "_ember_ops", ops / "__init__.py", submodule_search_locations=[str(ops)])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["_ember_ops"] = pkg
        spec.loader.exec_module(pkg)
    return importlib.import_module(f"_ember_ops.{module}")


def generate_kernels():
    """Render the op table's CPU loops (a build output; never committed)."""
    out = SRC / "kernels" / "cpu" / "generated" / "ember_cpu_ops.c"
    out.parent.mkdir(exist_ok=True)
    text = load_ops("render").render_c()
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
    nvcc = find_nvcc()
    if use_cuda == "1" and not nvcc:
        sys.exit("USE_CUDA=1 but nvcc was not found (set CUDA_HOME or PATH)")
    config = {
        "use_cuda": use_cuda,
        "use_opencl": use_opencl,
        "nvcc": nvcc,
        "cuda": bool(nvcc) and use_cuda != "0",
        "cuda_archs": cuda_archs() if nvcc and use_cuda != "0" else [],
        "opencl": use_opencl != "0",
    }
    (SRC / "_build_config.py").write_text(
        f"# Written by setup.py at build time.\nBUILD_CONFIG = {config!r}\n")
    return config


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_home(nvcc):
    """The toolkit folder (include/, lib64/) of an nvcc, asked of nvcc itself (it may
    be a wrapper script outside the toolkit)."""
    out = subprocess.run([nvcc, "--dryrun", "-c", "probe.cu", "-o", "probe.o"],
                         capture_output=True, text=True)
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("#$ TOP="):
            return Path(os.path.realpath(line.split("=", 1)[1].strip()))
    return Path(os.path.realpath(nvcc)).parent.parent


def cuda_archs():
    archs = os.environ.get("CUDA_ARCHS", "80 90").replace(",", " ").split()
    if not archs or not all(a.isdigit() for a in archs):
        sys.exit(f"CUDA_ARCHS must list compute capabilities such as '80 90', got {archs!r}")
    return archs


# CUDA: every device source (kernels/cuda/*.cu, the shared kernels/gpu/programs/ and the
# op table's rendered GPU kernels) is compiled by nvcc as its own translation unit, in
# parallel, with a generated tail that lists its kernels (kernels/cuda/kernel_table.h);
# the objects are linked into ember._C.cuda with the static CUDA runtime.
KERNEL_NAME = re.compile(
    r"(?:EM_KERNEL|__global__)\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(")


def cuda_sources():
    """(stem, source text, kernel names) of every compile unit nvcc builds: the shared
    GPU programs (the op table's rendered rows and kernels/gpu/programs/<family>.h per
    dtype, as ember/ops/gpu_programs.py lists them: the very text OpenCL compiles) and
    kernels/cuda/*.cu."""
    programs = load_ops("gpu_programs")
    units = [(name, programs.program_source(name), list(programs.program_kernels(name)))
             for name in programs.program_names()]
    for p in sorted((SRC / "kernels" / "cuda").glob("*.cu")):
        units.append((p.stem, f'#include "{p}"\n', KERNEL_NAME.findall(p.read_text())))
    return units


def nvcc_flags(archs):
    # nvcc's -O is the host compiler's level: the host side here is launch stubs, so it
    # stays at -O0 (a third of the build time saved); device code is optimised anyway.
    # 186: "pointless comparison of unsigned integer with zero" in generated code
    flags = ["-std=c++17", "-Xcompiler", "-fPIC", "-lineinfo", "--threads", "0",
             "-Wno-deprecated-gpu-targets", "-diag-suppress", "186",
             f"-I{SRC / 'kernels' / 'cuda'}",
             f"-I{SRC / 'kernels' / 'gpu'}", f"-I{SRC / 'include'}"]
    for a in archs:
        flags += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    # PTX of the newest arch: newer GPUs JIT it at load time
    flags += ["-gencode", f"arch=compute_{archs[-1]},code=compute_{archs[-1]}"]
    if DEBUG:
        flags.append("-g")
    return flags


def compile_cuda(nvcc, archs, build_temp, jobs):
    """nvcc every device source (only those changed since the last build) and the
    table of tables; returns the object files."""
    from concurrent.futures import ThreadPoolExecutor
    out = Path(build_temp).resolve() / "cuda"
    out.mkdir(parents=True, exist_ok=True)
    flags = nvcc_flags(archs)
    headers = [p for d in ("cuda", "gpu", "gpu/programs", "common")
               for p in (SRC / "kernels" / d).glob("*.h")]
    newest_header = max((p.stat().st_mtime for p in headers), default=0)
    jobs_list, stems = [], []
    for stem, source, names in cuda_sources():
        wrapper = out / f"{stem}.cu"
        text = (source + '#include "kernel_table.h"\n'
                f'EM_KERNEL_TABLE({stem}, {" ".join(f"EM_TABLE_ENTRY({n})" for n in names)})\n')
        if not wrapper.exists() or wrapper.read_text() != text:
            wrapper.write_text(text)     # unchanged: keep the mtime, skip recompiling
        stems.append(stem)
        deps = [Path(m) for m in re.findall(r'#include "(/[^"]+)"', source)]
        jobs_list.append((wrapper, deps, out / f"{stem}.o"))
    tables = out / "ember_cuda_tables.cu"
    text = ('#include "kernel_table.h"\n' +
            "".join(f'extern "C" const em_cuda_kernel em_kernels_{s}[];\n' for s in stems) +
            'extern "C" const em_cuda_kernel *const em_cuda_tables[] = {' +
            "".join(f"em_kernels_{s}, " for s in stems) + "0};\n")
    if not tables.exists() or tables.read_text() != text:
        tables.write_text(text)
    jobs_list.append((tables, [], out / "ember_cuda_tables.o"))

    def build(job):
        source, deps, obj = job
        stamp = obj.with_suffix(".flags")
        inputs = [source] + deps
        newest = max(newest_header, *(p.stat().st_mtime for p in inputs))
        if (obj.exists() and stamp.exists() and stamp.read_text() == " ".join(flags)
                and obj.stat().st_mtime >= newest):
            return obj
        cmd = [nvcc, *flags, "-c", str(source), "-o", str(obj)]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        stamp.write_text(" ".join(flags))
        return obj

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(build, jobs_list))


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
        for ext in self.extensions:
            if ext.name == "ember._C.cuda":
                config = build_config()
                ext.extra_objects = compile_cuda(config["nvcc"], config["cuda_archs"],
                                                 self.build_temp, jobs)
                ext.depends = ext.depends + ext.extra_objects   # relink when one changes
        super().build_extensions()


DEBUG = os.environ.get("EMBER_DEBUG") == "1"
COMPILE_ARGS = (["-O0", "-g"] if DEBUG else ["-O3"]) + [
    "-std=gnu11", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
    "-Wno-unused-function", "-Wno-unreachable-code", "-Wno-maybe-uninitialized"]


def extensions():
    from Cython.Build import cythonize

    generated = generate_kernels()
    cpu = SRC / "kernels" / "cpu"

    def rel(p):
        return str(Path(p).relative_to(HERE))

    include = [rel(SRC / "include"), rel(cpu)]
    # Each _C/<name>.pyx names the hand-written C files it wraps in a first-lines
    # comment, "# kernels: index.c sort.c" (paths under kernels/cpu/).
    modules = {}
    config = build_config()
    for pyx in sorted((SRC / "_C").glob("*.pyx")):
        if pyx.stem == "cuda":
            continue
        sources = []
        for line in pyx.read_text().splitlines()[:5]:
            if line.startswith("# kernels:"):
                sources = [rel(cpu / f) for f in line.split(":", 1)[1].split()]
        modules[pyx.stem] = sources
    modules["core"].append(rel(generated))
    exts = [Extension(f"ember._C.{name}", [rel(SRC / "_C" / f"{name}.pyx")] + sources,
                      include_dirs=include)
            for name, sources in modules.items()]
    if config["cuda"]:
        # host C (the allocator, the runtime glue) by the C compiler; the device code
        # is added as objects by BuildExt. cudart_static: the extension imports where
        # no driver exists (the runtime loads libcuda.so when first used).
        home = cuda_home(config["nvcc"])
        cuda_dir = SRC / "kernels" / "cuda"
        exts.append(Extension(
            "ember._C.cuda",
            [rel(SRC / "_C" / "cuda.pyx")] + [rel(p) for p in sorted(cuda_dir.glob("*.c"))],
            include_dirs=include + [rel(cuda_dir), str(home / "include")],
            library_dirs=[str(home / "lib64"), str(home / "lib")],
            libraries=["cudart_static", "rt", "dl", "pthread", "stdc++"]))
    return cythonize(exts, compiler_directives={"language_level": 3},
                     nthreads=0, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
