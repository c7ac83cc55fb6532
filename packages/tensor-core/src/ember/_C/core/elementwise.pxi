"""Elementwise dispatch: `ew` runs an op-table row on tensors and Python scalars
(promotion, broadcasting, out=, autograd recording); the Python entry points over it."""

cdef inline int result_kind_dtype(int cur, int kind) noexcept:
    """Promote dtype `cur` (-1: none yet) with a weak Python scalar of `kind`: a
    complex scalar makes a float tensor the complex of its dtype (float32 * 1j is
    complex64), an integer one the complex of the default float."""
    if cur < 0:
        if kind == KIND_COMPLEX:
            return complex_of(DEFAULT_FLOAT)
        return BOOL if kind == KIND_BOOL else (INT64 if kind == KIND_INT else DEFAULT_FLOAT)
    if kind > KIND[cur]:
        if kind == KIND_COMPLEX:
            return complex_of(cur)
        return INT64 if kind == KIND_INT else DEFAULT_FLOAT
    return cur


cdef str describe(object x):
    if isinstance(x, TensorBase):
        return f"a tensor of shape {tuple((<TensorBase>x).shape)} and dtype {x.dtype!r}"
    return repr(x)


cdef object ew(int op, object x0, object x1, object x2, int nin, object out):
    """Run elementwise row `op` on up to three operands (tensors or Python scalars),
    into a new tensor or into `out` (in-place ops pass the first operand)."""
    if em_autocast_on and out is None and AC_EW[op]:
        return AUTOCAST_EW(op, x0, x1, x2, nin)
    cdef PyObject *args[3]
    args[0] = <PyObject *>x0
    args[1] = <PyObject *>x1
    args[2] = <PyObject *>x2
    cdef OpInfo info = OPS[op]
    cdef int k, d, j, first = 1 if info.is_where else 0
    cdef int compute = -1, scalar_kinds = -1, sk
    cdef TensorBase t, ref = None, res
    cdef Device device = None
    cdef int nd = 0
    cdef object a

    # 1. classify operands, check devices, promote dtypes (scalars are weak)
    for k in range(nin):
        a = <object>args[k]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            if ref is None:
                ref = t
                device = t._storage.device
            elif t._storage.device is not device and t._storage.device != device:
                raise RuntimeError(f"{OP_NAMES[op]}: expected all tensors on one device, got "
                                   f"{device} and {t._storage.device}")
            if t._ndim > nd:
                nd = t._ndim
            if k >= first:
                compute = t._dtype if compute < 0 else PROMOTE[compute][t._dtype]
        else:
            sk = scalar_kind(a)
            if sk < 0:
                if a is None or isinstance(a, (str, bytes, dict)):
                    return NotImplemented if out is None and nin == 2 else _bad_operand(op, a)
                try:
                    a = ASTENSOR(a)
                except Exception:
                    return NotImplemented if nin == 2 else _bad_operand(op, a)
                return ew(op, a if k == 0 else x0, a if k == 1 else x1, a if k == 2 else x2,
                          nin, out)
            if k >= first and sk > scalar_kinds:
                scalar_kinds = sk
    if ref is None:
        raise TypeError(f"{OP_NAMES[op]}: expected at least one tensor operand")
    if op == OP_POW and x0 is ref and KIND[ref._dtype] != KIND_FLOAT and \
            scalar_kind(x1) == KIND_INT and x1 < 0:
        # PyTorch's (and NumPy's) rule for a scalar exponent; integer tensor
        # exponents compute (1 ** -n is 1, 2 ** -n truncates to 0)
        raise RuntimeError(f"pow: Integers to negative integer powers are not allowed "
                           f"(a {DTYPE_LIST[ref._dtype]!r} tensor to the power {x1})")
    if scalar_kinds >= 0:
        compute = result_kind_dtype(compute, scalar_kinds)
    if info.promote_float and KIND[compute] < KIND_FLOAT:
        compute = DEFAULT_FLOAT
    if not (info.kinds >> KIND[compute]) & 1:
        raise TypeError(_unsupported(op, compute))
    cdef int out_dtype = BOOL if info.out_bool else (REAL_OF[compute] if info.out_real else compute)

    # 2. broadcast
    cdef int64_t shape[MAXD]
    cdef int64_t s
    for d in range(nd):
        shape[d] = 1
    for k in range(nin):
        a = <object>args[k]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            for d in range(t._ndim):
                j = nd - t._ndim + d
                s = t._shape[d]
                if s != shape[j]:
                    if shape[j] == 1:
                        shape[j] = s
                    elif s != 1:
                        raise ValueError(_broadcast_error(op, args, nin))

    # 3. the output
    cdef TensorBase o
    cdef object inplace_attrs = None      # out=: what the recorder gets after the kernel
    if out is None:
        if (nd == 4 or nd == 5) and channels_last_operand(args, nin, first, nd, shape):
            o = new_channels_last(nd, shape, out_dtype, device)    # preserve_format
        else:
            o = new_tensor(nd, shape, out_dtype, device)
    else:
        if not isinstance(out, TensorBase):
            raise TypeError(f"{OP_NAMES[op]}: out must be a Tensor, got {type(out).__name__}")
        o = <TensorBase>out
        if o._ndim != nd or any_differ(nd, o._shape, shape):
            raise ValueError(f"{OP_NAMES[op]}: the result has shape {shape_str(nd, shape)} "
                             f"but the output tensor has shape {shape_str(o._ndim, o._shape)}")
        if o._storage.device != device:
            raise RuntimeError(f"{OP_NAMES[op]}: output is on {o._storage.device} but the "
                               f"inputs are on {device}")
        check_write(o, OP_NAMES[op] + "_" if o is x0 or o is x1 else OP_NAMES[op])
        if not em_grad_off and o._requires_grad:
            if RECORDER is None:
                raise RuntimeError(f"{OP_NAMES[op]}_: in-place op on a tensor that requires grad "
                                   f"needs ember-autograd")
        if not em_grad_off and RECORDER is not None and (o._requires_grad or
                                                         needs_record(None, x0, x1) or
                                                         needs_record(None, x2, None)):
            inplace_attrs = {"inplace": True}
            if o is x0 or o is x1 or o is x2:
                # the op overwrites one of its inputs: autograd keeps a copy of the old
                # value when its derivative needs it
                prepared = RECORDER(OP_NAMES[op], tuple([<object>args[k] for k in range(nin)]),
                                    o, {"inplace": True, "prepare": True})
                if prepared is not None:
                    inplace_attrs = prepared
        if o._dtype != out_dtype:
            if not can_cast_same_kind(out_dtype, o._dtype):
                raise TypeError(f"{OP_NAMES[op]}: result dtype {DTYPE_LIST[out_dtype]!r} can't "
                                f"be cast to the output dtype {DTYPE_LIST[o._dtype]!r}")
            with _no_record():
                res = ew(op, x0, x1, x2, nin, None)
            copy_into(o, res)
            o._storage.version += 1
            if inplace_attrs is not None:
                RECORDER(OP_NAMES[op], tuple([<object>args[k] for k in range(nin)]), o,
                         inplace_attrs)
            return o

    # 4. operands: pointers and byte strides over the broadcast shape (on another
    # device: the operands in the compute dtype, handed to its backend)
    cdef ScalarSlot slots[3]
    cdef char *ptrs[4]
    cdef int64_t strides[4 * MAXD]
    cdef int cd
    cdef object keep = None   # casted / de-aliased copies that must outlive the loop
    cdef list dev_operands
    if device.type_id != 0:
        dev_operands = []
        for k in range(nin):
            a = <object>args[k]
            cd = BOOL if (k == 0 and info.is_where) else compute
            if isinstance(a, TensorBase):
                t = <TensorBase>a
                if t._dtype != cd or (out is not None and t._storage is o._storage
                                      and not same_layout(t, o)):
                    t = cast_like(t, cd)
                a = t
            dev_operands.append(a)
        backend_for(device).elementwise(OP_NAMES[op], dev_operands, DTYPE_LIST[compute],
                                        DTYPE_LIST[out_dtype], o)
        return _ew_finish(op, o, out, x0, x1, x2, nin, inplace_attrs, args)
    ptrs[0] = o.ptr()
    for d in range(nd):
        strides[d] = o._strides[d] * o._itemsize
    for k in range(nin):
        a = <object>args[k]
        cd = BOOL if (k == 0 and info.is_where) else compute
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            if t._dtype != cd:
                t = cast_like(t, cd)    # in its own layout: a channels_last one stays so
                keep = (keep, t)
            elif out is not None and t._storage is o._storage and not same_layout(t, o):
                t = cast_copy(t, cd)   # partial overlap with the output: read a copy
                keep = (keep, t)
            ptrs[k + 1] = t.ptr()
            for d in range(nd):
                j = d - (nd - t._ndim)
                strides[(k + 1) * nd + d] = 0 if (j < 0 or t._shape[j] == 1) else \
                    t._strides[j] * t._itemsize
        else:
            write_scalar(slots[k].bytes, a, cd, OP_NAMES[op])
            ptrs[k + 1] = slots[k].bytes
            for d in range(nd):
                strides[(k + 1) * nd + d] = 0

    cdef em_loop_fn loop = em_elementwise_loop(op, compute)
    cdef int64_t n = o.numel_c()
    cdef int sizes[4]
    sizes[0] = ITEMSIZE[out_dtype]
    for k in range(nin):
        sizes[k + 1] = ITEMSIZE[BOOL if (k == 0 and info.is_where) else compute]
    if n >= NBIG:
        with nogil:
            em_iterate_sized(loop, nin + 1, ptrs, nd, shape, strides, sizes)
    else:
        em_iterate_sized(loop, nin + 1, ptrs, nd, shape, strides, sizes)

    return _ew_finish(op, o, out, x0, x1, x2, nin, inplace_attrs, args)


cdef bint is_channels_last(TensorBase t):
    """t's strides are channels_last's (4-D: NHWC order; 5-D: NDHWC), size-1 dims free."""
    cdef int64_t expected = 1
    cdef int k, d, nd = t._ndim
    for k in range(nd):
        d = 1 if k == 0 else (0 if k == nd - 1 else nd - k)   # C, W, H, (D,) N
        if t._shape[d] != 1:
            if t._strides[d] != expected:
                return False
            expected *= t._shape[d]
    return True


cdef bint channels_last_operand(PyObject **args, int nin, int first, int nd,
                                const int64_t *shape):
    """PyTorch's preserve_format for an elementwise result: the first tensor operand of
    the result's shape decides; channels_last when it is that and not also contiguous."""
    cdef int k
    cdef object a
    cdef TensorBase t
    for k in range(first, nin):
        a = <object>args[k]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            if t._ndim == nd and not any_differ(nd, t._shape, shape):
                return is_channels_last(t) and not t.contiguous_c()
    return False


cdef TensorBase new_channels_last(int nd, const int64_t *shape, int dtype, Device device):
    """A new (N, C, H, W[, D]) tensor stored as N(D)HWC: an NHWC block viewed back."""
    cdef int64_t pshape[5]
    cdef int64_t strides[5]
    cdef int k, d
    pshape[0] = shape[0]
    for k in range(2, nd):
        pshape[k - 1] = shape[k]
    pshape[nd - 1] = shape[1]
    cdef TensorBase base = new_tensor(nd, pshape, dtype, device)
    cdef int64_t s = 1
    for k in range(nd - 1, -1, -1):          # permuted order: N, (D,) H, W, C
        d = 0 if k == 0 else (1 if k == nd - 1 else k + 1)
        strides[d] = s
        s *= pshape[k]
    return view_of(base, nd, shape, strides, 0)


cdef object _ew_finish(int op, TensorBase o, object out, object x0, object x1, object x2,
                       int nin, object inplace_attrs, PyObject **args):
    """After the kernel: bump the version of an in-place output, record for autograd."""
    if out is not None:
        o._storage.version += 1
        if inplace_attrs is not None:
            RECORDER(OP_NAMES[op], tuple([<object>args[k] for k in range(nin)]), o,
                     inplace_attrs)
        return o
    if needs_record(None, x0, x1) or (nin == 3 and needs_record(None, x2, None)):
        RECORDER(OP_NAMES[op], tuple([<object>args[k] for k in range(nin)]), o, None)
    return o


cdef bint any_differ(int n, const int64_t *a, const int64_t *b):
    for i in range(n):
        if a[i] != b[i]:
            return True
    return False


cdef bint same_layout(TensorBase a, TensorBase b):
    if a._offset != b._offset or a._ndim != b._ndim:
        return False
    for i in range(a._ndim):
        if a._shape[i] != b._shape[i] or (a._strides[i] != b._strides[i] and a._shape[i] != 1):
            return False
    return True


cdef bint can_cast_same_kind(int src, int dst):
    return KIND[src] <= KIND[dst]


cdef str _unsupported(int op, int dtype):
    name = OP_NAMES[op]
    hint = ""
    if dtype == BOOL and name in ("sub", "neg"):
        hint = "; for bool tensors use logical_xor / logical_not (~) instead"
    elif KIND[dtype] >= KIND_FLOAT and name.startswith("bitwise"):
        hint = "; bitwise ops need bool or integer tensors"
    elif KIND[dtype] == KIND_COMPLEX:
        hint = ("; Unlike NumPy, sign is not intended to support complex numbers: use sgn "
                "instead" if name == "sign" else "; it is not defined for complex numbers")
    return f"{name}: not supported for dtype {DTYPE_LIST[dtype]!r}{hint}"


cdef str _broadcast_error(int op, PyObject **args, int nin):
    shapes = []
    for k in range(nin):
        a = <object>args[k]
        if isinstance(a, TensorBase):
            shapes.append(str(tuple(a.shape)))
    return f"{OP_NAMES[op]}: shapes {' and '.join(shapes)} cannot be broadcast"


cdef object _bad_operand(int op, object a):
    raise TypeError(f"{OP_NAMES[op]}: unsupported operand {a!r} of type {type(a).__name__}")


def ew_call(int op, a, b, c, int nin, out):
    """Positional fast entry for the generated functions of ember.ops.elementwise."""
    r = ew(op, a, b, c, nin, out)
    if r is NotImplemented:
        raise TypeError(f"{OP_NAMES[op]}: unsupported operand types "
                        f"{type(a).__name__}, {type(b).__name__}")
    return r


def elementwise(str name, *args, out=None):
    """Apply op-table row `name` to tensors / Python scalars (broadcasting, promotion)."""
    cdef int op = OP_INDEX[name]
    cdef int nin = len(args)
    if nin != OPS[op].arity:
        raise TypeError(f"{name}: expected {OPS[op].arity} operands, got {nin}")
    r = ew(op, args[0], args[1] if nin > 1 else None, args[2] if nin > 2 else None, nin, out)
    if r is NotImplemented:
        raise TypeError(f"{name}: unsupported operand types "
                        f"{', '.join(type(a).__name__ for a in args)}")
    return r


def result_dtype(str name, *args):
    """The dtype `elementwise(name, *args)` computes in (Array API promotion)."""
    cdef int op = OP_INDEX[name]
    cdef int compute = -1, sk, kinds = -1
    for k, a in enumerate(args):
        if OPS[op].is_where and k == 0:
            continue
        if isinstance(a, TensorBase):
            compute = (<TensorBase>a)._dtype if compute < 0 else \
                PROMOTE[compute][(<TensorBase>a)._dtype]
        elif isinstance(a, DType):
            compute = (<DType>a).num if compute < 0 else PROMOTE[compute][(<DType>a).num]
        else:
            sk = scalar_kind(a)
            if sk > kinds:
                kinds = sk
    if kinds >= 0:
        compute = result_kind_dtype(compute, kinds)
    if OPS[op].promote_float and KIND[compute] < KIND_FLOAT:
        compute = DEFAULT_FLOAT
    return DTYPE_LIST[compute]


def weak_result_type(*args):
    """result_type over tensors, dtypes and Python scalars (scalars are weak)."""
    cdef int compute = -1, kinds = -1, sk
    for a in args:
        if isinstance(a, TensorBase):
            compute = (<TensorBase>a)._dtype if compute < 0 else \
                PROMOTE[compute][(<TensorBase>a)._dtype]
        elif isinstance(a, DType):
            compute = (<DType>a).num if compute < 0 else PROMOTE[compute][(<DType>a).num]
        else:
            sk = scalar_kind(a)
            if sk < 0:
                raise TypeError(f"result_type: expected tensors, dtypes or Python scalars, "
                                f"got {a!r}")
            if sk > kinds:
                kinds = sk
    if kinds >= 0:
        compute = result_kind_dtype(compute, kinds)
    if compute < 0:
        raise ValueError("result_type: at least one argument is required")
    return DTYPE_LIST[compute]
