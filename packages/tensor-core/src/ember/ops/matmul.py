"""Matrix products: matmul and its family (mm, bmm, mv, dot, vdot, inner, outer,
tensordot, einsum, addmm), and the CPU thread-count switch.

The one kernel underneath is ember._C.matmul.matmul (kernels/cpu/gemm.c): NumPy's
matmul rules with batch broadcasting, operands read through their own strides.
mm, bmm, mv and dot are checked spellings of it and are recorded for autograd
as "matmul" (one derivative row covers them all); tensordot and einsum lower onto
permute / reshape / diagonal / sum / matmul, each recorded on its own, so autograd
differentiates them through their parts.
"""
from __future__ import annotations

import numbers

from ember._C import core as _core, matmul as _lin
from ember._registry import METHODS as _METHODS, tensor_method

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "tensordot",
           "einsum", "addmm", "vecdot", "set_num_threads", "get_num_threads"]

_TensorBase = _core.TensorBase
set_num_threads = _lin.set_num_threads
get_num_threads = _lin.get_num_threads


def _mm(a, b, op="matmul"):
    """ember._C.matmul.matmul, which multiplies complex CPU tensors itself (em_gemm's
    complex64/complex128: one real GEMM, gemm_complex.c). A real operand beside a
    complex one, and complex tensors on a device (whose GEMM is real), take the parts:
    with a = ar + i ai and b = br + i bi (strided views, no copies), a @ b = (ar @ br -
    ai @ bi) + i (ar @ bi + ai @ br), four real GEMMs (two with a real operand) into
    the interleaved result."""
    if not (isinstance(a, _TensorBase) and isinstance(b, _TensorBase)) or not (
            a.is_complex() or b.is_complex()) or (
            a.is_complex() and b.is_complex() and a.device.type == "cpu"):
        return _lin.matmul(a, b, op)
    from ember.ops.complex import complex as make_complex, imag as im, real as re
    ct = _core.promote_types(a.dtype, b.dtype)
    rt = ct.to_real()
    a = a if a.dtype is ct or a.is_complex() is False else a.to(ct)
    b = b if b.dtype is ct or b.is_complex() is False else b.to(ct)
    ar, br = re(a).to(rt), re(b).to(rt)
    if not a.is_complex():      # real @ complex: two GEMMs
        return make_complex(_lin.matmul(ar, br, op), _lin.matmul(ar, im(b), op))
    if not b.is_complex():
        return make_complex(_lin.matmul(ar, br, op), _lin.matmul(im(a), br, op))
    ai, bi = im(a), im(b)
    real_part = _core.elementwise("sub", _lin.matmul(ar, br, op), _lin.matmul(ai, bi, op))
    imag_part = _core.elementwise("add", _lin.matmul(ar, bi, op), _lin.matmul(ai, br, op))
    return make_complex(real_part, imag_part)


def _tensor(x, op):
    if isinstance(x, _TensorBase):
        return x
    from ember.ops.creation import as_tensor
    try:
        return as_tensor(x)
    except Exception:
        raise TypeError(f"{op}: expected a tensor, got {type(x).__name__}") from None


def _shape(x):
    return "(" + "x".join(str(s) for s in x.shape) + ")"


def _write_out(result, out, op):
    if out is None:
        return result
    if not isinstance(out, _TensorBase):
        raise TypeError(f"{op}: out must be a tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, the result has shape "
                         f"{tuple(result.shape)}")
    if out.dtype is not result.dtype:
        raise TypeError(f"{op}: out has dtype {out.dtype!r}, the result has dtype "
                        f"{result.dtype!r}")
    _core.copy_(out, result)
    return out


@tensor_method
def matmul(input, other, *, out=None):
    """Matrix product with NumPy's rules: 1-d @ 1-d is a dot product (0-d); a 1-d
    left operand is a row and a 1-d right operand a column (that dim is removed
    from the result); dims before the last two are batch dims and broadcast."""
    r = _mm(input, other)
    return r if out is None else _write_out(r, out, "matmul")


@tensor_method
def mm(input, mat2, *, out=None):
    """(n x m) @ (m x p) for 2-d tensors only."""
    a, b = _tensor(input, "mm"), _tensor(mat2, "mm")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: expected 2-d tensors, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return matmul(a, b, out=out) if out is not None else _mm(a, b, "mm")


@tensor_method
def bmm(input, mat2, *, out=None):
    """(b x n x m) @ (b x m x p): 3-d tensors with the same batch size (no broadcasting)."""
    a, b = _tensor(input, "bmm"), _tensor(mat2, "bmm")
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"bmm: expected 3-d tensors, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: batch sizes {a.shape[0]} and {b.shape[0]} differ (shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)})")
    r = _mm(a, b, "bmm")
    return r if out is None else _write_out(r, out, "bmm")


@tensor_method
def mv(input, vec, *, out=None):
    """(n x m) @ (m,) -> (n,)."""
    a, v = _tensor(input, "mv"), _tensor(vec, "mv")
    if a.ndim != 2 or v.ndim != 1:
        raise ValueError(f"mv: expected a 2-d matrix and a 1-d vector, got shapes "
                         f"{tuple(a.shape)} and {tuple(v.shape)}")
    r = _mm(a, v, "mv")
    return r if out is None else _write_out(r, out, "mv")


@tensor_method
def dot(input, other, *, out=None):
    """The dot product of two 1-d tensors (0-d result). For other ranks NumPy's dot:
    a 0-d operand multiplies, up to 2-d it is matmul, beyond it sums over the last
    dim of input and the second-to-last of other."""
    a, b = _tensor(input, "dot"), _tensor(other, "dot")
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise ValueError(f"dot: 1-d tensors of sizes {a.shape[0]} and {b.shape[0]} "
                             f"differ")
        r = _mm(a, b, "dot")
    elif a.ndim == 0 or b.ndim == 0:
        r = _core.elementwise("mul", a, b)
    elif b.ndim <= 2 and a.ndim <= 2 or b.ndim == 1:
        r = _mm(a, b, "dot")
    else:
        r = tensordot(a, b, ([a.ndim - 1], [b.ndim - 2]))
    return r if out is None else _write_out(r, out, "dot")


@tensor_method
def vdot(input, other, *, out=None):
    """The dot product of the two tensors flattened, the first conjugated: sum of
    conj(input) * other (no conjugation for real dtypes)."""
    a, b = _tensor(input, "vdot"), _tensor(other, "vdot")
    if a.numel() != b.numel():
        raise ValueError(f"vdot: tensors of {a.numel()} and {b.numel()} elements differ "
                         f"in size")
    if a.is_complex():
        a = _core.elementwise("conj_physical", a)
    r = _mm(a.reshape(-1), b.reshape(-1), "vdot")
    return r if out is None else _write_out(r, out, "vdot")


@tensor_method
def inner(input, other, *, out=None):
    """Sum over the last dims of both: result shape input.shape[:-1] + other.shape[:-1]
    (a 0-d operand multiplies)."""
    a, b = _tensor(input, "inner"), _tensor(other, "inner")
    if a.ndim == 0 or b.ndim == 0:
        r = _core.elementwise("mul", a, b)
    else:
        if a.shape[-1] != b.shape[-1]:
            raise ValueError(f"inner: last dimensions {a.shape[-1]} and {b.shape[-1]} differ "
                             f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
        r = tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))
    return r if out is None else _write_out(r, out, "inner")


@tensor_method(names=("outer", "ger"))
def outer(input, vec2, *, out=None):
    """Outer product input[i] * vec2[j] (n-d operands are flattened, as in NumPy)."""
    a, b = _tensor(input, "outer"), _tensor(vec2, "outer")
    r = _core.elementwise("mul", a.reshape(-1, 1), b.reshape(1, -1))
    return r if out is None else _write_out(r, out, "outer")


ger = outer


def _dims_list(d, ndim, op):
    if isinstance(d, numbers.Integral):
        d = [d]
    return [_core.normalize_dim(int(x), ndim, op) for x in d]


def tensordot(a, b, dims=2, *, axes=None, out=None):
    """Sum of products over dims: an int n contracts the last n dims of a with the
    first n of b; a pair (dims_a, dims_b) names them (lists or ints)."""
    a, b = _tensor(a, "tensordot"), _tensor(b, "tensordot")
    if axes is not None:
        dims = axes
    if isinstance(dims, _TensorBase):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        n = int(dims)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: cannot contract {n} dims of tensors of shapes "
                             f"{tuple(a.shape)} and {tuple(b.shape)}")
        da, db = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        try:
            da, db = dims
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: dims must be an int or a pair of dim lists, got "
                             f"{dims!r}") from None
        da, db = _dims_list(da, a.ndim, "tensordot"), _dims_list(db, b.ndim, "tensordot")
    if len(da) != len(db):
        raise ValueError(f"tensordot: {len(da)} dims of a but {len(db)} dims of b to contract")
    if len(set(da)) != len(da) or len(set(db)) != len(db):
        raise ValueError(f"tensordot: repeated dim in {da} or {db}")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise ValueError(f"tensordot: dim {x} of a (size {a.shape[x]}) and dim {y} of b "
                             f"(size {b.shape[y]}) differ; shapes {tuple(a.shape)} and "
                             f"{tuple(b.shape)}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    sa, sb = list(a.shape), list(b.shape)
    m = _prod(sa[d] for d in fa)
    n = _prod(sb[d] for d in fb)
    k = _prod(sa[d] for d in da)
    a2 = _permute_reshape(a, fa + da, [m, k])
    b2 = _permute_reshape(b, db + fb, [k, n])
    r = _mm(a2, b2, "tensordot").reshape([sa[d] for d in fa] + [sb[d] for d in fb])
    return r if out is None else _write_out(r, out, "tensordot")


def _prod(it):
    p = 1
    for v in it:
        p *= v
    return p


def _permute_reshape(x, order, shape):
    if order != list(range(x.ndim)):
        x = x.permute(order)
    if list(x.shape) != list(shape):
        x = x.reshape(shape)
    return x


@tensor_method
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to the result. With
    beta == 0, input is ignored (NaN in it does not propagate)."""
    x, a, b = _tensor(input, "addmm"), _tensor(mat1, "addmm"), _tensor(mat2, "addmm")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"addmm: expected 2-d matrices, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"addmm: {_shape(a)} @ {_shape(b)}: inner dimensions {a.shape[1]} "
                         f"and {b.shape[0]} differ")
    shape = (a.shape[0], b.shape[1])
    from ember._dtypes import result_type
    dt = result_type(x, a, b)
    fused = (dt.kind in ("float", "complex") and x.device.type == "cpu" and
             a.device.type == "cpu" and b.device.type == "cpu" and
             not _core.any_requires_grad((x, a, b)) and
             isinstance(alpha, numbers.Real) and isinstance(beta, numbers.Real))
    if fused:
        c = _core.empty(shape, dt)
        if beta != 0:
            try:
                _core.copy_(c, x)
            except ValueError:
                raise ValueError(f"addmm: input of shape {tuple(x.shape)} cannot be "
                                 f"broadcast to {shape}") from None
        a = a if a.dtype is dt else a.to(dt)
        b = b if b.dtype is dt else b.to(dt)
        r = _lin.gemm_(c, a, b, float(alpha), float(beta))
    else:
        prod = _mm(a, b, "addmm")
        if alpha != 1:
            prod = _core.elementwise("mul", prod, alpha)
        if beta == 0:
            r = prod
            if tuple(r.shape) != shape:
                r = r.expand(shape)
        else:
            r = _core.elementwise("add", prod, x if beta == 1 else
                                  _core.elementwise("mul", x, beta))
        if tuple(r.shape) != shape:
            raise ValueError(f"addmm: input of shape {tuple(x.shape)} cannot be broadcast "
                             f"to {shape}")
    return r if out is None else _write_out(r, out, "addmm")


def vecdot(x1, x2, /, *, axis=None, dim=None):
    """Dot products of the vectors along dim (default the last), the other dims
    broadcast (Array API: the result has the operands' promoted dtype); x1 is
    conjugated, sum(conj(x1) * x2), as torch.linalg.vecdot and the standard say."""
    x1, x2 = _tensor(x1, "vecdot"), _tensor(x2, "vecdot")
    d = dim if dim is not None else (axis if axis is not None else -1)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("vecdot: expected tensors of at least 1 dim")
    n1 = x1.shape[_core.normalize_dim(d, x1.ndim, "vecdot")]
    n2 = x2.shape[_core.normalize_dim(d, x2.ndim, "vecdot")]
    if n1 != n2:
        raise ValueError(f"vecdot: sizes {n1} and {n2} of dim {d} differ (shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)})")
    if x1.dtype.kind == "complex":
        x1 = _core.elementwise("conj_physical", x1)
    p = _core.elementwise("mul", x1, x2)
    return _sum(p, (_core.normalize_dim(d, p.ndim, "vecdot"),))


# einsum ------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_term(term, ndim, where, eq):
    """Labels of one operand's subscripts: letters as themselves, the ellipsis's dims
    as ints -1, -2, ... counted from the right (so they broadcast NumPy-style)."""
    if term.count("...") > 1 or term.replace("...", "").count(".") > 0:
        raise ValueError(f"einsum: bad ellipsis in {where} subscripts {term!r} of {eq!r}")
    for ch in term.replace("...", ""):
        if ch not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript {ch!r} in {eq!r} (use letters a-z, "
                             f"A-Z and '...')")
    if "..." in term:
        left, right = term.split("...")
        ne = ndim - len(left) - len(right)
        if ne < 0:
            raise ValueError(f"einsum: {where} subscripts {term!r} name more dims than the "
                             f"operand's {ndim}")
        return list(left) + [-(ne - i) for i in range(ne)] + list(right), ne
    if len(term) != ndim:
        raise ValueError(f"einsum: {where} has {ndim} dims but subscripts {term!r} name "
                         f"{len(term)}")
    return list(term), 0


def _sublist_equation(args):
    """einsum(op0, [0, 1], op1, [1, 2], [0, 2]) -> ("ab,bc->ac", [op0, op1])."""
    ops, terms = [], []
    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = args.pop()

    def term(sub):
        if not isinstance(sub, (list, tuple)):
            raise TypeError(f"einsum: expected an equation string or the sublist form "
                            f"einsum(op0, [0, 1], ...), got {type(sub).__name__} {sub!r:.60}")
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            elif isinstance(v, numbers.Integral) and 0 <= v < len(_LETTERS):
                s += _LETTERS[v]
            else:
                raise ValueError(f"einsum: sublist entries must be ints in [0, 52) or ..., "
                                 f"got {v!r}")
        return s

    for i in range(0, len(args), 2):
        ops.append(args[i])
        terms.append(term(args[i + 1]))
    eq = ",".join(terms)
    if out is not None:
        eq += "->" + term(out)
    return eq, ops


def einsum(equation, *operands):
    """Einstein summation: "ij,jk->ik", "bij,bjk->bik", "ii->i", "ii", "...ij,...jk",
    implicit outputs (the labels seen once, in alphabetical order, after the
    ellipsis dims), repeated labels (diagonals), broadcasting of size-1 dims.
    Also the sublist form einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    ops = [_tensor(x, "einsum") for x in operands]
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"einsum: more than one '->' in {equation!r}")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise ValueError(f"einsum: {equation!r} has subscripts for {len(terms)} operands but "
                         f"{len(ops)} were given")
    labels, max_ell = [], 0
    for i, (t, x) in enumerate(zip(terms, ops)):
        lab, ne = _parse_term(t, x.ndim, f"operand {i}", equation)
        labels.append(lab)
        max_ell = max(max_ell, ne)
    ell = [-(max_ell - i) for i in range(max_ell)]
    counts = {}
    for lab in labels:
        for s in lab:
            counts[s] = counts.get(s, 0) + 1
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ValueError(f"einsum: bad ellipsis in the output of {equation!r}")
        out_labels = []
        for part_i, part in enumerate(rhs.split("...")):
            if part_i == 1:
                out_labels += ell
            for ch in part:
                if ch not in _LETTERS:
                    raise ValueError(f"einsum: invalid output subscript {ch!r} in {equation!r}")
                if ch not in counts:
                    raise ValueError(f"einsum: output subscript {ch!r} does not appear in the "
                                     f"inputs of {equation!r}")
                if ch in out_labels:
                    raise ValueError(f"einsum: output subscript {ch!r} appears more than once "
                                     f"in {equation!r}")
                out_labels.append(ch)
    else:
        out_labels = ell + sorted((s for s in counts if isinstance(s, str) and counts[s] == 1),
                                  key=_LETTERS.index)

    # sizes: equal, or 1 (broadcast)
    size = {}
    for i, (lab, x) in enumerate(zip(labels, ops)):
        for s, n in zip(lab, x.shape):
            if s not in size or size[s] == 1:
                size[s] = n
            elif n != size[s] and n != 1:
                name = repr(s) if isinstance(s, str) else "'...'"
                raise ValueError(f"einsum: subscript {name} has size {n} in operand {i} but "
                                 f"size {size[s]} elsewhere ({equation!r} on shapes "
                                 f"{', '.join(str(tuple(o.shape)) for o in ops)})")

    # one dtype for all
    if len(ops) > 1:
        from ember._dtypes import result_type
        dt = result_type(*ops)
        ops = [x if x.dtype is dt else x.to(dt) for x in ops]
    as_bool = ops[0].dtype.kind == "bool"
    if as_bool:
        ops = [x.to(_core._dtype_by_name("int64")) for x in ops]

    # per operand: take diagonals of repeated labels, sum labels used nowhere else
    for i in range(len(ops)):
        x, lab = ops[i], list(labels[i])
        for s in list(dict.fromkeys(lab)):
            while lab.count(s) > 1:
                d1 = lab.index(s)
                d2 = lab.index(s, d1 + 1)
                if x.shape[d1] != x.shape[d2]:
                    raise ValueError(f"einsum: repeated subscript {s!r} of operand {i} covers "
                                     f"dims of sizes {x.shape[d1]} and {x.shape[d2]}")
                x = x.diagonal(0, d1, d2)
                lab = [v for j, v in enumerate(lab) if j not in (d1, d2)] + [s]
        others = set(out_labels)
        for j, other in enumerate(labels):
            if j != i:
                others.update(other)
        drop = [d for d, s in enumerate(lab) if s not in others]
        if drop:
            x = _sum(x, drop)
            lab = [s for d, s in enumerate(lab) if d not in drop]
        ops[i], labels[i] = x, lab

    # contract left to right
    x, lab = ops[0], labels[0]
    for i in range(1, len(ops)):
        keep = set(out_labels)
        for other in labels[i + 1:]:
            keep.update(other)
        x, lab = _contract(x, lab, ops[i], labels[i], keep, size)

    drop = [d for d, s in enumerate(lab) if s not in out_labels]
    if drop:
        x = _sum(x, drop)
        lab = [s for d, s in enumerate(lab) if d not in drop]
    order = [lab.index(s) for s in out_labels]
    if order != list(range(len(order))):
        x = x.permute(order)
    if [x.shape[d] for d in range(x.ndim)] != [size[s] for s in out_labels]:
        x = x.expand([size[s] for s in out_labels])
    if as_bool:
        x = _core.elementwise("ne", x, 0)
    return x


def _sum(x, dims):
    """Sum over dims keeping x's dtype (integer sums come back as int64)."""
    from ember.ops.reduction import sum as _s
    r = _s(x, tuple(dims))
    return r if r.dtype is x.dtype else r.to(x.dtype)


def _contract(a, la, b, lb, keep, size):
    """Multiply operands with labels la, lb, summing the shared labels not in keep:
    one batched matmul of (batch, a-only, shared) by (batch, shared, b-only)."""
    sb = set(lb)
    sa = set(la)
    batch = [s for s in la if s in sb and s in keep]
    summed = [s for s in la if s in sb and s not in keep]
    a_only = [s for s in la if s not in sb]
    b_only = [s for s in lb if s not in sa]
    gone_a = [d for d, s in enumerate(la) if s not in sb and s not in keep]
    if gone_a:
        a = _sum(a, gone_a)
        la = [s for d, s in enumerate(la) if d not in gone_a]
        a_only = [s for s in a_only if s in keep]
    gone_b = [d for d, s in enumerate(lb) if s not in sa and s not in keep]
    if gone_b:
        b = _sum(b, gone_b)
        lb = [s for d, s in enumerate(lb) if d not in gone_b]
        b_only = [s for s in b_only if s in keep]
    full = [size[s] for s in batch]
    shared = set(batch) | set(summed)
    a = _arrange(a, la, batch + a_only + summed, size, shared)
    b = _arrange(b, lb, batch + summed + b_only, size, shared)
    a_sizes = list(a.shape[len(batch):len(batch) + len(a_only)])
    b_sizes = list(b.shape[len(batch) + len(summed):])
    m, n, k, nb = _prod(a_sizes), _prod(b_sizes), _prod(size[s] for s in summed), _prod(full)
    if nb == 1:
        r = _mm(a.reshape([m, k]), b.reshape([k, n]), "einsum")
    else:
        r = _mm(a.reshape([nb, m, k]), b.reshape([nb, k, n]), "einsum")
    return r.reshape(full + a_sizes + b_sizes), batch + a_only + b_only


def _arrange(x, lab, order, size, shared):
    """x permuted to the label order given, its shared (batch and summed) dims
    expanded to their full size (size-1 dims broadcast against the other operand)."""
    perm = [lab.index(s) for s in order]
    if perm != list(range(len(perm))):
        x = x.permute(perm)
    want = [size[s] if s in shared else n for s, n in zip(order, x.shape)]
    if want != list(x.shape):
        x = x.expand(want)
    return x


import ember.linalg  # noqa: E402,F401  (the ember.linalg namespace, em.linalg)

# the add-a-product family (issue 18): beta * input + alpha * (product) -------------------

def _scaled_sum(x, prod, beta, alpha, shape, op):
    """beta * x + alpha * prod, x broadcast to prod's shape; beta == 0 ignores x (NaN in
    it does not propagate), as PyTorch."""
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a number, got {type(v).__name__} {v!r:.60}")
    from ember._layout import broadcast_shape
    try:
        if tuple(broadcast_shape((tuple(x.shape), shape), op)) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"{op}: input of shape {tuple(x.shape)} cannot be broadcast to "
                         f"{tuple(shape)}") from None
    if alpha != 1:
        prod = _core.elementwise("mul", prod, alpha)
    if beta == 0:
        from ember._dtypes import result_type
        dt = result_type(x, prod)
        return (prod if prod.dtype is dt else prod.to(dt)).expand(shape) \
            if tuple(prod.shape) != tuple(shape) else (prod if prod.dtype is dt else prod.to(dt))
    return _core.elementwise("add", prod, x if beta == 1 else _core.elementwise("mul", x, beta))


def _ndim_check(op, **tensors):
    for name, (t, n) in tensors.items():
        if t.ndim != n:
            raise ValueError(f"{op}: {name} must be {n}-d, got shape {tuple(t.shape)}")


@tensor_method
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (batch1 @ batch2) per batch: batch1 (b, n, m), batch2
    (b, m, p), input broadcast to (b, n, p)."""
    x, a, b = (_tensor(t, "baddbmm") for t in (input, batch1, batch2))
    _ndim_check("baddbmm", batch1=(a, 3), batch2=(b, 3))
    prod = bmm(a, b)
    return _write_out(_scaled_sum(x, prod, beta, alpha, tuple(prod.shape), "baddbmm"), out,
                      "baddbmm")


@tensor_method
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum over the batch of batch1[i] @ batch2[i]."""
    x, a, b = (_tensor(t, "addbmm") for t in (input, batch1, batch2))
    _ndim_check("addbmm", batch1=(a, 3), batch2=(b, 3))
    prod = bmm(a, b).sum(0)
    return _write_out(_scaled_sum(x, prod, beta, alpha, tuple(prod.shape), "addbmm"), out,
                      "addbmm")


@tensor_method
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec): mat (n, m), vec (m,), input broadcast to (n,)."""
    x, a, v = (_tensor(t, "addmv") for t in (input, mat, vec))
    prod = mv(a, v)
    return _write_out(_scaled_sum(x, prod, beta, alpha, tuple(prod.shape), "addmv"), out,
                      "addmv")


@tensor_method
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    x, a, b = (_tensor(t, "addr") for t in (input, vec1, vec2))
    _ndim_check("addr", vec1=(a, 1), vec2=(b, 1))
    prod = outer(a, b)
    return _write_out(_scaled_sum(x, prod, beta, alpha, tuple(prod.shape), "addr"), out,
                      "addr")


def _inplace_product(f, name):
    def inplace(self, a, b, *, beta=1, alpha=1):
        r = f(self, a, b, beta=beta, alpha=alpha)
        if tuple(r.shape) != tuple(self.shape):
            raise ValueError(f"{name}: the result's shape {tuple(r.shape)} differs from "
                             f"self's {tuple(self.shape)}")
        return _core.copy_(self, r)
    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place {f.__name__}: writes beta * self + alpha * (product) into self."
    return inplace


for _f in (addmm, baddbmm, addbmm, addmv, addr):
    _METHODS[_f.__name__ + "_"] = _inplace_product(_f, _f.__name__ + "_")
addmv_ = _METHODS["addmv_"]


def kron(input, other, *, out=None):
    """The Kronecker product: a block tensor whose block i is input[i] * other (the
    operand with fewer dims gets leading 1s), composed of an outer product and a
    reshape."""
    a, b = _tensor(input, "kron"), _tensor(other, "kron")
    n = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (n - b.ndim) + tuple(b.shape))
    # a[i0, .., in-1, 1, .., 1] * b[1, .., 1, j0, .., jn-1], then interleave the dims
    p = _core.elementwise("mul", a.reshape(tuple(a.shape) + (1,) * n),
                          b.reshape((1,) * n + tuple(b.shape)))
    order = [d for k in range(n) for d in (k, n + k)]
    shape = tuple(a.shape[k] * b.shape[k] for k in range(n))
    return _write_out(p.permute(order).reshape(shape), out, "kron")


tensor_method(kron)


def chain_matmul(*matrices, out=None):
    """The product of 2-d matrices, left to right (deprecated in PyTorch for
    linalg.multi_dot)."""
    if not matrices:
        raise ValueError("chain_matmul: expected at least one matrix")
    ms = [_tensor(m, "chain_matmul") for m in matrices]
    for i, m in enumerate(ms):
        if m.ndim != 2:
            raise ValueError(f"chain_matmul: matrix {i} must be 2-d, got shape {tuple(m.shape)}")
    r = ms[0]
    for m in ms[1:]:
        r = mm(r, m)
    return _write_out(r if len(ms) > 1 else r.clone(), out, "chain_matmul")


def _cross_dim(a, b, dim, op):
    from ember._layout import broadcast_shape
    try:
        shape = tuple(broadcast_shape((tuple(a.shape), tuple(b.shape)), op))
    except ValueError:
        raise ValueError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not "
                         f"broadcast") from None
    if not shape:
        raise ValueError(f"{op}: needs tensors with a dim of size 3, got 0-d tensors")
    if dim is None:         # torch.cross: the first dim of size 3 (deprecated default)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise ValueError(f"{op}: no dim of size 3 in shape {shape}")
    d = _core.normalize_dim(dim, len(shape), op)
    if shape[d] != 3:
        raise ValueError(f"{op}: dim {dim} has size {shape[d]}, needs 3 (shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)})")
    return a.expand(shape), b.expand(shape), d


@tensor_method
def cross(input, other, dim=None, *, out=None):
    """The cross product of 3-vectors along dim (broadcasting); dim None takes the
    first dim of size 3, as torch.cross. Composed of index_select, mul, sub, cat."""
    a, b = _tensor(input, "cross"), _tensor(other, "cross")
    a, b, d = _cross_dim(a, b, dim, "cross")
    from ember.ops.shape import cat

    def c(x, i):
        return x.narrow(d, i, 1)
    ew = _core.elementwise
    r = cat([ew("sub", ew("mul", c(a, 1), c(b, 2)), ew("mul", c(a, 2), c(b, 1))),
             ew("sub", ew("mul", c(a, 2), c(b, 0)), ew("mul", c(a, 0), c(b, 2))),
             ew("sub", ew("mul", c(a, 0), c(b, 1)), ew("mul", c(a, 1), c(b, 0)))], d)
    return _write_out(r, out, "cross")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Batched p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M):
    (..., P, R). p = 2 uses |a|^2 + |b|^2 - 2 a.b (a matmul) when compute_mode allows
    and a row count exceeds 25 (PyTorch's rule), else the difference tensor."""
    a, b = _tensor(x1, "cdist"), _tensor(x2, "cdist")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"cdist: x1 and x2 must have at least 2 dims, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: x1 and x2 must have the same number of columns, got "
                         f"{a.shape[-1]} and {b.shape[-1]}")
    if a.dtype.kind != "float" or b.dtype.kind != "float":
        raise TypeError(f"cdist: needs floating point tensors, got {a.dtype!r} and "
                        f"{b.dtype!r}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not p >= 0:
        raise ValueError(f"cdist: p must be a non-negative number, got {p!r}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
             "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"cdist: compute_mode must be one of {modes}, got {compute_mode!r}")
    ew = _core.elementwise
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                         (compute_mode == modes[0] and (a.shape[-2] > 25 or b.shape[-2] > 25)))
    if use_mm:
        aa = ew("mul", a, a).sum(-1, keepdim=True)
        bb = ew("mul", b, b).sum(-1, keepdim=True)
        d2 = ew("add", ew("sub", aa, ew("mul", matmul(a, b.mT), 2)), bb.mT)
        return ew("sqrt", ew("maximum", d2, 0))
    diff = ew("sub", a.unsqueeze(-2), b.unsqueeze(-3))      # (..., P, R, M)
    from ember.ops.reduction import norm
    return norm(diff, p, dim=-1)


__all__ += ["baddbmm", "addbmm", "addmv", "addmv_", "addr", "kron", "chain_matmul", "cross",
            "cdist"]
