"""Helpers for extension authors (see DESIGN.md, "Extension authoring")."""
from __future__ import annotations

import os


def get_include() -> list[str]:
    """Include directories for C/Cython code that uses ember: the public C headers
    (`#include "ember/tensor.h"`) and the folder holding the `ember` package, whose
    .pxd files `cimport ember` reads."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(here, "include"), os.path.dirname(here)]
