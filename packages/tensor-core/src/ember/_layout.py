"""Shape and stride arithmetic shared by the op modules and the device backends
(Python tuples in, tuples out): NumPy's broadcast rule, and the strides that read a
tensor contiguously or broadcast. The C core has its own copy of the broadcast rule
for the op table's fast path (_C/core/elementwise.pxi)."""
from __future__ import annotations


def broadcast_shape(shapes, op, what=None, err=ValueError):
    """The shape the given shapes broadcast to (NumPy rules), or `err` naming op and the
    shapes; with `what`, NumPy's wording ("shape mismatch: indexing arrays could not be
    broadcast together with shapes ...") as subscripts raise it."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for j, n in enumerate(s, nd - len(s)):
            if n != out[j]:
                if out[j] == 1:
                    out[j] = n
                elif n != 1:
                    listed = [str(tuple(s)) for s in shapes]
                    raise err(f"{op}: shape mismatch: {what} could not be broadcast together "
                              f"with shapes {', '.join(listed)}" if what else
                              f"{op}: shapes {' and '.join(listed)} cannot be broadcast")
    return tuple(out)


def contiguous_strides(shape):
    """The strides of a C-contiguous tensor of `shape` (in elements)."""
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


def broadcast_strides(t, nd):
    """Strides (elements) that read tensor t broadcast to nd dims: 0 on new leading
    dims and on size-1 dims."""
    _, _, shape, strides, _ = t._layout()
    lead = nd - len(shape)
    return (0,) * lead + tuple(0 if n == 1 else st for n, st in zip(shape, strides))
