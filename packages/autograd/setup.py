"""Build of ember-autograd: the tape (ember/autograd/graph.pyx) is a Cython extension
that cimports tensor-core's public declarations (ember/_C/core.pxd), so recording
an op reads a tensor's fields in C. It is built against the installed
ember-tensor-core, whose minor version it then requires (the C layout of a tensor
may change between minor versions)."""
from pathlib import Path

from setuptools import Extension, setup


def extensions():
    from Cython.Build import cythonize

    import ember
    from ember.utils.extension import get_include
    here = Path(__file__).parent
    ext = Extension("ember.autograd.graph", [str(Path("src/ember/autograd/graph.pyx"))],
                    include_dirs=get_include(), extra_compile_args=["-O2"])
    # tensor-core's .pxd files: from the installed package (or a source checkout)
    paths = [str(Path(p).parent) for p in ember.__path__]
    return cythonize([ext], include_path=paths, compiler_directives={"language_level": 3},
                     quiet=True, build_dir=str(here / "build" / "cython"))


setup(ext_modules=extensions())
