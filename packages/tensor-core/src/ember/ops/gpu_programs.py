"""The GPU program catalogue: which programs (compile units) exist, their portable
source, and the kernels each defines with their parameter lists.

A program is either generated from the op table (ops/render.py: ew_<dtype>,
cast_<dtype>, reduce_<dtype>) or hand-written, kernels/gpu/programs/<family>.h,
compiled once per dtype of its `// dtypes:` line (program <family>_<dtype>) and,
when the line says `none`, once without a dtype (program <family>: the file's
plain-named kernels; see the dialect rules in kernels/gpu/ember_device.h). The same
text is compiled by nvcc at build time (setup.py) and by OpenCL at run time
(ember.backends.opencl), so kernel names and parameter lists agree everywhere; the
hosts type their arguments from `signature(kernel)`.

This module must import without ember being built (setup.py loads the ember.ops
package by path), so it imports nothing of ember but its sibling render.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from . import render

GPU_DIR = Path(__file__).resolve().parent.parent / "kernels" / "gpu"
PROGRAMS_DIR = GPU_DIR / "programs"

_DTYPES_LINE = re.compile(r"^//\s*dtypes:\s*(.*)$", re.MULTILINE)
_KERNEL = re.compile(r"EM_KERNEL\s+void\s+(EM_NAME\s*\(\s*\w+\s*\)|\w+)\s*"
                     r"\(((?:[^()]|\([^()]*\))*)\)")
# EM_SLOTS16(T, x) in a parameter list: `T x0, ..., T x15` (programs/optim.h's macro)
_SLOTS = re.compile(r"EM_SLOTS(\d+)\(([^,()]+),\s*(\w+)\)")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.MULTILINE)


@functools.cache
def hand_written_files() -> dict:
    """programs/<family>.h -> the dtypes it is compiled for (None: the compile without
    a dtype), from its `// dtypes: float32 float64` (`none` for None) line."""
    files = {}
    for path in sorted(PROGRAMS_DIR.glob("*.h")):
        m = _DTYPES_LINE.search(path.read_text())
        names = m.group(1).split() if m else ["none"]
        files[path.stem] = [None if n == "none" else n for n in names]
    return files


@functools.cache
def _hand_written_programs() -> dict:
    """program name -> (family, dtype name or None) of every hand-written program."""
    return {family if d is None else f"{family}_{d}": (family, d)
            for family, dtypes in hand_written_files().items() for d in dtypes}


def program_names() -> list:
    """Every GPU program (compile unit): the generated ones, then the hand-written."""
    return render.gpu_generated_programs() + list(_hand_written_programs())


@functools.cache
def program_source(name: str) -> str:
    """The portable source of program `name`, with its #include lines (nvcc compiles
    it as is with -I kernels/gpu; run-time compilers take `inlined_source`)."""
    if name in render.gpu_generated_programs():
        return render.render_gpu_program(name)
    if name in _hand_written_programs():
        family, d = _hand_written_programs()[name]
        dt = None if d is None else render.BY_NAME[d]
        return render.gpu_prelude(dt) + f'#include "programs/{family}.h"\n'
    raise KeyError(f"no GPU program {name!r}")


@functools.cache
def inlined_source(name: str) -> str:
    """program_source with every #include replaced by the file (once each; a path is
    relative to the including file, the program's own lines to kernels/gpu)."""
    seen = set()

    def expand(text, base):
        def one(m):
            path = (base / m.group(1)).resolve()
            if path in seen:
                return ""
            seen.add(path)
            return expand(path.read_text(), path.parent)
        return _INCLUDE.sub(one, text)
    return expand(program_source(name), GPU_DIR)


# kernel signatures ------------------------------------------------------------------

# C type of a parameter -> struct code of the value the host passes ("P": a buffer,
# "L": an em_layout by value)
_CTYPES = {"em_int64": "q", "long": "q", "int": "i", "em_int32": "i", "em_uint32": "I",
           "uint": "I", "float": "f", "em_float32": "f", "double": "d", "em_float64": "d",
           "em_bool": "B", "em_uint8": "B", "uchar": "B", "em_int8": "b", "em_int16": "h",
           "em_uint16": "H", "ushort": "H", "em_uint64": "Q", "ulong": "Q",
           "em_layout": "L", "em_complex64": "F", "em_complex128": "D"}


def _param_code(param: str, dt) -> str:
    if "*" in param:
        return "P"
    words = param.replace("const", " ").split()
    ctype = " ".join(words[:-1])
    if dt is not None:
        ctype = {"EM_CT": dt.compute, "EM_T": dt.storage}.get(ctype, ctype)
    if ctype not in _CTYPES:
        raise TypeError(f"GPU kernels: unsupported parameter type {ctype!r} in {param!r}")
    return _CTYPES[ctype]


@functools.cache
def program_kernels(name: str) -> dict:
    """kernel name -> parameter codes, for every kernel of program `name`."""
    text = _COMMENTS.sub(" ", inlined_source(name))
    dname = re.search(r"#define EM_DT (\w+)", text)
    dt = render.BY_NAME[dname.group(1)] if dname else None
    hand_written = name in _hand_written_programs()
    out = {}
    for m in _KERNEL.finditer(text):
        kname = m.group(1)
        per_dtype = kname.startswith("EM_NAME")
        if hand_written and per_dtype != (dt is not None):
            continue   # the file's other half (#ifdef EM_DT), compiled in its other programs
        if per_dtype:
            kname = re.sub(r"EM_NAME\s*\(\s*(\w+)\s*\)", lambda g: f"{g.group(1)}_{dt.name}", kname)
        plist = _SLOTS.sub(lambda s: ", ".join(f"{s.group(2)} {s.group(3)}{i}"
                                               for i in range(int(s.group(1)))), m.group(2))
        params = [p.strip() for p in plist.split(",") if p.strip()]
        out[kname] = tuple(_param_code(p, dt) for p in params)
    return out


@functools.cache
def _hand_written_index() -> dict:
    return {k: prog for prog in _hand_written_programs() for k in program_kernels(prog)}


def program_of(kernel: str) -> str:
    """The program that defines `kernel` (KeyError: none does)."""
    prog = render.gpu_program_of(kernel)
    if prog is None:
        prog = _hand_written_index().get(kernel)
    if prog is None:
        raise KeyError(kernel)
    return prog


def signature(kernel: str) -> tuple:
    """The parameter codes of `kernel` (see _CTYPES)."""
    prog = program_of(kernel)
    sig = program_kernels(prog).get(kernel)
    if sig is None:
        raise KeyError(kernel)
    return sig


def all_kernels() -> dict:
    """Every kernel name -> (program, parameter codes): what a CUDA build compiles."""
    return {k: (p, sig) for p in program_names() for k, sig in program_kernels(p).items()}
