"""The setuptools half of ember.utils.extension (imported only when something is
built, so that `import ember` needs neither setuptools nor Cython)."""
from __future__ import annotations

import os
import shlex
import sys

from setuptools import Distribution, Extension as _SetuptoolsExtension
from setuptools.command.build_ext import build_ext as _build_ext

from ember.utils import extension as _api

CYTHON_SOURCES = (".pyx",)
CUDA_SOURCES = (".cu",)
# as ember's own CUDA code (DESIGN.md): A100 and H100 machine code, plus PTX that newer
# GPUs compile at load time; an -arch/-gencode in extra_cuda_args replaces these
DEFAULT_CUDA_ARCHS = ["-gencode=arch=compute_80,code=sm_80",
                      "-gencode=arch=compute_90,code=[sm_90,compute_90]"]
ARCH_FLAGS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code")


class BuildExtension(_build_ext):
    """`cmdclass={"build_ext": BuildExtension}` in setup.py: cythonizes .pyx sources
    with ember's .pxd files on the include path and compiles .cu sources with nvcc."""

    echo_commands = False      # load() turns it on so that errors can quote the command

    def build_extensions(self):
        self._cythonize()
        if any(s.endswith(CUDA_SOURCES) for ext in self.extensions for s in ext.sources):
            self._enable_nvcc()
        if self.echo_commands:
            # setuptools runs commands through Compiler.call (Compiler.spawn before 80)
            name = "call" if hasattr(self.compiler, "call") else "spawn"
            run = getattr(self.compiler, name)

            def echo_and_run(cmd, **kwargs):
                print("$ " + shlex.join(map(str, cmd)), flush=True)
                return run(cmd, **kwargs)
            setattr(self.compiler, name, echo_and_run)
        super().build_extensions()

    def _cythonize(self):
        pyx = [ext for ext in self.extensions
               if any(s.endswith(CYTHON_SOURCES) for s in ext.sources)]
        if not pyx:
            return
        try:
            from Cython.Build import cythonize
        except ImportError:
            raise ImportError(_api.NEEDS_CYTHON) from None
        for ext in pyx:
            if self.echo_commands:
                print("$ cythonize " + " ".join(s for s in ext.sources if s.endswith(".pyx")),
                      flush=True)
            # the generated .c goes to build_temp, not beside the user's .pyx; cythonize
            # returns a new Extension: keep ours (and its attributes) with the .c sources
            [done] = cythonize([ext], include_path=[*ext.include_dirs, *_api.get_include()],
                               compiler_directives={"language_level": 3},
                               build_dir=self.build_temp, force=self.force,
                               quiet=not self.echo_commands)
            ext.sources = done.sources

    def _enable_nvcc(self):
        nvcc = _api.find_nvcc()
        if nvcc is None:
            cu = [s for ext in self.extensions for s in ext.sources if s.endswith(CUDA_SOURCES)]
            raise RuntimeError(_api.no_nvcc_message(cu))
        compiler = self.compiler
        compiler.src_extensions = [*compiler.src_extensions, ".cu"]
        compile_c = compiler._compile
        builder = self

        def compile_any(obj, src, ext, cc_args, extra_postargs, pp_opts):
            if not src.endswith(".cu"):
                return compile_c(obj, src, ext, cc_args, extra_postargs, pp_opts)
            cuda_args = getattr(builder, "_cuda_args", [])
            if not any(a.startswith(ARCH_FLAGS) for a in cuda_args):
                cuda_args = [*DEFAULT_CUDA_ARCHS, *cuda_args]
            run = compiler.call if hasattr(compiler, "call") else compiler.spawn
            run([nvcc, "-c", src, "-o", obj, *pp_opts, "-O3", "-Xcompiler", "-fPIC", *cuda_args])
        compiler._compile = compile_any

    def build_extension(self, ext):
        self._cuda_args = getattr(ext, "extra_cuda_args", [])
        super().build_extension(ext)


def make_extension(name, sources, *, include_dirs=(), extra_compile_args=(),
                   extra_link_args=(), extra_cuda_args=(), **kwargs):
    sources = [os.fspath(s) for s in sources]
    source_dirs = []
    for s in sources:      # sources' own folders: their headers, and .pxd next to a .pyx
        d = os.path.dirname(os.path.abspath(s))
        if d not in source_dirs:
            source_dirs.append(d)
    libraries = list(kwargs.pop("libraries", []))
    library_dirs = list(kwargs.pop("library_dirs", []))
    if any(s.endswith(CUDA_SOURCES) for s in sources):
        home = _api.cuda_home()
        if home is not None:
            library_dirs += [os.path.join(home, d) for d in ("lib64", "lib")
                             if os.path.isdir(os.path.join(home, d))]
        # static runtime, as ember's own CUDA backend: imports without libcudart.so;
        # nvcc objects are C++ and the link is by the C compiler: add libstdc++
        libraries += ["cudart_static", "stdc++", "dl", "rt", "pthread"]
    ext = _SetuptoolsExtension(
        name, sources,
        include_dirs=[*_api.get_include(), *source_dirs, *map(os.fspath, include_dirs)],
        extra_compile_args=[*_api.DEFAULT_CFLAGS, *extra_compile_args],
        extra_link_args=list(extra_link_args), libraries=libraries,
        library_dirs=library_dirs, **kwargs)
    ext.extra_cuda_args = list(extra_cuda_args)
    return ext


def build(spec):
    """Compile one extension into spec["out"] (the child process of load())."""
    ext = make_extension(spec["name"], spec["sources"], include_dirs=spec["include_dirs"],
                         extra_compile_args=spec["cflags"], extra_link_args=spec["ldflags"],
                         extra_cuda_args=spec["cuda_cflags"])
    dist = Distribution({"name": spec["name"], "ext_modules": [ext],
                         "script_name": "ember-extension-load"})
    cmd = BuildExtension(dist)
    cmd.echo_commands = True
    cmd.build_lib = spec["out"]
    cmd.build_temp = os.path.join(spec["out"], "build")
    cmd.ensure_finalized()
    cmd.run()


if __name__ == "__main__":
    import json
    try:
        build(json.loads(sys.argv[1]))
    except Exception as e:        # the parent shows the output: one clean line, no traceback
        # a compiler's or Cython's failure: its messages and the command are printed above
        detail = "" if type(e).__name__ in ("CompileError", "LinkError") else f": {e}"
        print(f"error: {type(e).__name__}{detail}", file=sys.stderr)
        sys.exit(1)
