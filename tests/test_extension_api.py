"""A Cython extension written against ember's public .pxd and C header builds and
reads tensor memory without copying (DESIGN.md, "Extension authoring")."""
import subprocess
import sys
import textwrap

import pytest

import ember as em
from ember.utils.extension import get_include

PYX = textwrap.dedent("""
    # cython: language_level=3
    cimport ember

    def strided_sum(ember.TensorBase t):
        '''Sum a float64 tensor of any layout through the C view (no copy).'''
        cdef ember.em_tensor_view v = ember.tensor_view(t)
        cdef double *base = <double *>v.data + v.offset
        cdef long long idx[16]
        cdef long long n = 1, k, off
        cdef int d
        cdef double total = 0
        for d in range(v.ndim):
            n *= v.shape[d]
            idx[d] = 0
        for k in range(n):
            off = 0
            for d in range(v.ndim):
                off += idx[d] * v.strides[d]
            total += base[off]
            d = v.ndim - 1
            while d >= 0:
                idx[d] += 1
                if idx[d] < v.shape[d]:
                    break
                idx[d] = 0
                d -= 1
        return total

    def view_info(ember.TensorBase t):
        cdef ember.em_tensor_view v = ember.tensor_view(t)
        return v.ndim, v.dtype, v.itemsize, v.offset
""")

SETUP = textwrap.dedent("""
    from setuptools import setup, Extension
    from Cython.Build import cythonize
    from ember.utils.extension import get_include
    setup(ext_modules=cythonize([Extension("emext", ["emext.pyx"], include_dirs=get_include())],
                                include_path=get_include(), quiet=True),
          script_args=["build_ext", "--inplace", "-q"])
""")


@pytest.fixture(scope="module")
def emext(tmp_path_factory):
    pytest.importorskip("Cython")
    d = tmp_path_factory.mktemp("ext")
    (d / "emext.pyx").write_text(PYX)
    (d / "setup.py").write_text(SETUP)
    import os
    env = dict(os.environ)   # the build imports ember: let it find this one
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(em.__file__)), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "setup.py"], cwd=d, capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    sys.path.insert(0, str(d))
    try:
        import emext
        yield emext
    finally:
        sys.path.remove(str(d))


def test_c_view_reads_strided_tensor(emext):
    x = em.arange(24, dtype=em.float64).reshape(2, 3, 4)
    y = x.permute(2, 0, 1).narrow(0, 1, 2)       # non-contiguous, with an offset
    assert emext.strided_sum(y) == y.sum().item()
    assert emext.view_info(y) == (3, em.float64.num, 8, 1)


def test_include_dirs_exist():
    import os
    inc = get_include()
    assert os.path.exists(os.path.join(inc[0], "ember", "tensor.h"))
    assert os.path.exists(os.path.join(inc[1], "ember", "__init__.pxd"))
