# Ahead-of-time build: `pip install .` (or `python setup.py build_ext --inplace`).
# Extension puts ember's headers and .pxd files on the include paths; BuildExtension
# runs Cython on the .pyx (and nvcc on .cu sources, had we any).
from setuptools import setup

from ember.utils.extension import BuildExtension, Extension

setup(
    ext_modules=[Extension("ember_fused._ops",
                           ["ember_fused/_ops.pyx", "ember_fused/bias_gelu.c"],
                           depends=["ember_fused/bias_gelu.h"])],   # rebuilds, and the sdist
    cmdclass={"build_ext": BuildExtension},
)
