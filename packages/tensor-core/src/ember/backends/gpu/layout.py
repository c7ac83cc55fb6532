"""How GPUBackend describes tensors to its kernels: em_layout structs (the dims and
strides kernels/gpu/ember_device.h iterates, packed by pack_layout), strides of
dense and broadcast operands, and the size of 1-d launches."""
from __future__ import annotations

import array

from ember._layout import broadcast_strides, contiguous_strides  # noqa: F401 (re-exported)

MAXD = 8                 # EM_MAXD of ember_device.h
LAYOUT_WORDS = 4 + MAXD + 4 * MAXD + 4    # int64 words of an em_layout
GROUP = 256              # work-items per work-group of the 1-d kernels


def _merge(shape, strides_list, lo, hi):
    """Drop size-1 dims and merge neighbours that every operand steps through as one
    (within dims [lo, hi)). Returns (shape, strides_list)."""
    keep = [d for d in range(lo, hi) if shape[d] != 1]
    sh = [shape[d] for d in keep]
    st = [[s[d] for d in keep] for s in strides_list]
    d = len(sh) - 2
    while d >= 0:
        if all(s[d] == s[d + 1] * sh[d + 1] for s in st):
            sh[d] *= sh[d + 1]
            del sh[d + 1]
            for s in st:
                s[d] = s[d + 1]
                del s[d + 1]
        d -= 1
    return sh, st


def pack_layout(shape, operands, split=None, op="op"):
    """The em_layout bytes for iterating `shape` over operands [(strides or None for a
    scalar, offset)], operand 0 first. split: reduce the dims from `split` on (dims
    before it are kept): merging stays within each group."""
    tensor_ops = [k for k, (s, _) in enumerate(operands) if s is not None]
    strides_list = [list(operands[k][0]) for k in tensor_ops]
    if split is None:
        sh, st = _merge(shape, strides_list, 0, len(shape))
        nsplit = len(sh)
    else:
        sh1, st1 = _merge(shape, strides_list, 0, split)
        sh2, st2 = _merge(shape, strides_list, split, len(shape))
        sh, st = sh1 + sh2, [a + b for a, b in zip(st1, st2)]
        nsplit = len(sh1)
    if len(sh) > MAXD:
        raise NotImplementedError(f"{op}: the GPU kernels iterate at most {MAXD} dims after "
                                  f"merging, got shape {tuple(shape)}")
    contig = split is None and len(sh) <= 1 and all((not s) or s[0] == 1 for s in st)
    words = [len(sh), int(contig), sum(1 << k for k, (s, _) in enumerate(operands) if s is None),
             nsplit]
    words += sh + [0] * (MAXD - len(sh))
    full = {k: s for k, s in zip(tensor_ops, st)}
    for k in range(4):
        s = full.get(k, [])
        words += s + [0] * (MAXD - len(s))
    words += [operands[k][1] if k < len(operands) else 0 for k in range(4)]
    return array.array("q", words).tobytes()


def groups_for(n, group=GROUP, limit=4096):
    """Work-groups of a 1-d grid-stride launch over n items."""
    return max(1, min(limit, -(-n // group)))

