# kernels: iterator.c alloc.c threads.c gemm.c gemm_complex.c cpu_api.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True, c_api_binop_methods=True
"""ember's core: dtypes, devices, storage, the strided Tensor, and dispatch of the
op table's elementwise and reduction rows to the device kernels.

Everything per-op that is hot lives here in C-level Cython: an `a + b` on small
tensors is dtype promotion, broadcasting, one allocation and one call into the
generated loop, with no Python objects built on the way. Everything else (shape
functions, indexing, creation, printing) is Python over the primitives exported
here, in the sibling modules of the `ember` package.

The code is in core/*.pxi, one concern each. An include is textual: they compile
into this one extension module, so a call from one to another costs what it did in
one file. Functions may call into any of them; code that runs at import uses only
the files included before its own.
"""
cimport cython
# (some cimports are used only in the .pxi files, which cython-lint reads apart)
from cpython.object cimport PyObject, PyTypeObject  # no-cython-lint
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_STRIDES, PyBUF_FORMAT, PyBUF_ND
from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport int64_t, uint64_t, uintptr_t, uint8_t, int8_t, int16_t, int32_t, uint16_t, uint32_t  # no-cython-lint
from libc.string cimport memcpy, memset  # no-cython-lint
from libc.stdlib cimport calloc
from libc.math cimport isfinite

import operator as _operator

include "core/c_declarations.pxi"
include "core/dtypes.pxi"
include "core/devices.pxi"
include "core/backends.pxi"
include "core/storage.pxi"
include "core/recorder.pxi"
include "core/tensor.pxi"
include "core/layout.pxi"
include "core/views.pxi"
include "core/op_table.pxi"
include "core/autocast.pxi"
include "core/scalars.pxi"
include "core/elementwise.pxi"
include "core/copy.pxi"
include "core/reduce.pxi"


cdef extern from "threads.h" nogil:
    int em_set_flush_denormal(int on)
    int em_get_flush_denormal()


def _set_flush_denormal(bint mode):
    """Set x86's MXCSR FTZ+DAZ on this thread and ember's CPU pool; False (nothing
    changed) where the CPU has no such control."""
    return bool(em_set_flush_denormal(1 if mode else 0))


def _get_flush_denormal():
    return bool(em_get_flush_denormal())


cdef extern from *:
    """
    /* The CPU's instruction sets (x86 with GCC/clang: CPUID through the compiler's
       runtime; elsewhere nothing is reported). Bit k = feature k of _CPU_FEATURES. */
    static unsigned long long em_cpu_features(void) {
        unsigned long long f = 0;
    #if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        f |= (unsigned long long)(__builtin_cpu_supports("sse") != 0) << 0;
        f |= (unsigned long long)(__builtin_cpu_supports("sse2") != 0) << 1;
        f |= (unsigned long long)(__builtin_cpu_supports("sse3") != 0) << 2;
        f |= (unsigned long long)(__builtin_cpu_supports("ssse3") != 0) << 3;
        f |= (unsigned long long)(__builtin_cpu_supports("sse4.1") != 0) << 4;
        f |= (unsigned long long)(__builtin_cpu_supports("sse4.2") != 0) << 5;
        f |= (unsigned long long)(__builtin_cpu_supports("avx") != 0) << 6;
        f |= (unsigned long long)(__builtin_cpu_supports("avx2") != 0) << 7;
        f |= (unsigned long long)(__builtin_cpu_supports("fma") != 0) << 8;
        f |= (unsigned long long)(__builtin_cpu_supports("avx512f") != 0) << 9;
        f |= (unsigned long long)(__builtin_cpu_supports("avx512bw") != 0) << 10;
        f |= (unsigned long long)(__builtin_cpu_supports("avx512vl") != 0) << 11;
        f |= (unsigned long long)(__builtin_cpu_supports("avx512vnni") != 0) << 12;
        f |= (unsigned long long)(__builtin_cpu_supports("avx512bf16") != 0) << 13;
        f |= (unsigned long long)(__builtin_cpu_supports("popcnt") != 0) << 14;
        f |= (unsigned long long)(__builtin_cpu_supports("bmi") != 0) << 15;
        f |= (unsigned long long)(__builtin_cpu_supports("bmi2") != 0) << 16;
    #endif
        return f;
    }
    """
    unsigned long long em_cpu_features()


# PyTorch's names (torch.cpu.get_capabilities) of em_cpu_features' bits, in order
_CPU_FEATURES = ("sse", "sse2", "sse3", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma3",
                 "avx512_f", "avx512_bw", "avx512_vl", "avx512_vnni", "avx512_bf16",
                 "popcnt", "bmi", "bmi2")


def _cpu_features():
    """{feature name: bool} of the CPU's instruction sets (all False off x86)."""
    cdef unsigned long long f = em_cpu_features()
    return {name: bool((f >> k) & 1) for k, name in enumerate(_CPU_FEATURES)}
