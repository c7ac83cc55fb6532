"""The tensor: TensorBase (the C half of ember.Tensor), its constructors (new_tensor,
view_of) and the creation primitives over them (empty, empty_strided, _iota)."""

cdef object TENSOR_TYPE = None   # ember.Tensor, the Python subclass that carries the methods


def _set_tensor_type(cls):
    global TENSOR_TYPE
    TENSOR_TYPE = cls


cdef inline TensorBase alloc_tensor_object():
    return <TensorBase>(<PyTypeObject_new *>TENSOR_TYPE).tp_new(TENSOR_TYPE, (), NULL)


cdef TensorBase new_tensor(int ndim, const int64_t *shape, int dtype, Device device):
    cdef TensorBase t = alloc_tensor_object()
    cdef int64_t n = 1, nbytes
    cdef int i
    cdef int itemsize = ITEMSIZE[dtype]
    cdef bint empty = False
    for i in range(ndim):
        if shape[i] < 0:
            raise ValueError(f"empty: negative dimension {shape[i]} in shape "
                             f"{shape_str(ndim, shape)}")
        empty = empty or shape[i] == 0
    for i in range(ndim - 1, -1, -1):
        t._shape[i] = shape[i]
        t._strides[i] = n
        # the row-major strides (size-0 dims count as 1, as in PyTorch); the last one
        # times its size is the element count
        if em_mul_ovf(n, shape[i] if shape[i] else 1, &n):
            raise ValueError(f"empty: shape {shape_str(ndim, shape)} is too large: its "
                             f"element count or strides overflow int64 (numel: integer "
                             f"multiplication overflow)")
    if empty:
        n = 0
    if em_mul_ovf(n, itemsize, &nbytes):
        raise MemoryError(f"empty: cannot allocate {n * <object>itemsize} bytes for shape "
                          f"{shape_str(ndim, shape)} of dtype {DTYPE_LIST[dtype]!r}")
    t._ndim = ndim
    t._dtype = dtype
    t._itemsize = itemsize
    t._offset = 0
    t._storage = alloc_storage(nbytes, device)
    return t


cdef TensorBase view_of(TensorBase base, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset):
    cdef TensorBase t = alloc_tensor_object()
    cdef int i
    for i in range(ndim):
        t._shape[i] = shape[i]
        t._strides[i] = strides[i]
    t._ndim = ndim
    t._dtype = base._dtype
    t._itemsize = base._itemsize
    t._offset = offset
    t._storage = base._storage
    return t


cdef em_tensor_view tensor_view(TensorBase t):
    cdef em_tensor_view v
    v.data = t._storage.data
    v.offset = t._offset
    v.dtype = t._dtype
    v.itemsize = t._itemsize
    v.ndim = t._ndim
    v.device_type = t._storage.device.type_id
    v.device_index = t._storage.device.index
    v.shape = t._shape
    v.strides = t._strides
    return v


def tensor_view_dict(TensorBase t not None):
    """The C view of t as a dict (for tests of the C header's contract)."""
    cdef em_tensor_view v = tensor_view(t)
    return {"data": <uintptr_t>v.data, "offset": v.offset, "dtype": v.dtype,
            "itemsize": v.itemsize, "ndim": v.ndim, "device_type": v.device_type,
            "shape": tuple([v.shape[i] for i in range(v.ndim)]),
            "strides": tuple([v.strides[i] for i in range(v.ndim)])}


def empty(shape, dtype=None, device=None):
    """A new contiguous tensor with uninitialised values."""
    cdef int64_t sh[MAXD]
    cdef int n = shape_from(shape, sh, "empty")
    cdef int d = DEFAULT_FLOAT if dtype is None else as_dtype_num(dtype, "empty")
    return new_tensor(n, sh, d, as_device(device))


def empty_strided(size, stride, dtype=None, device=None):
    """A new tensor of the given layout over a storage just big enough for it."""
    cdef int64_t sh[MAXD]
    cdef int64_t st[MAXD]
    cdef int64_t lo, hi, span[1]
    cdef int n = layout_from(size, stride, sh, st, "empty_strided")
    cdef int d = DEFAULT_FLOAT if dtype is None else as_dtype_num(dtype, "empty_strided")
    check_numel(n, sh, "empty_strided")
    span[0] = 0
    if layout_reach(n, sh, st, 0, &lo, &hi, "empty_strided"):
        if lo < 0:
            raise ValueError(f"empty_strided: negative strides {shape_str(n, st)} are not "
                             f"supported")
        if em_add_ovf(hi, 1, &span[0]):
            raise MemoryError(f"empty_strided: the layout {shape_str(n, sh)} with strides "
                              f"{shape_str(n, st)} needs a storage of 2**63 elements")
    cdef TensorBase base = new_tensor(1, span, d, as_device(device))
    return view_of(base, n, sh, st, 0)


def _iota(int64_t n, device=None):
    """0, 1, ..., n-1 as int64 (the base of arange and index construction)."""
    cdef int64_t sh[1]
    sh[0] = n
    cdef TensorBase t = new_tensor(1, sh, INT64, CPU)
    cdef int64_t *p = <int64_t *>t.ptr()
    cdef int64_t i
    for i in range(n):
        p[i] = i
    if device is not None and as_device(device).type_id != 0:
        return backend_for(as_device(device)).from_cpu(t, as_device(device))
    return t


@cython.binding(False)   # methods check that self is a tensor (Tensor.numel(3) raises)
cdef class TensorBase:
    """The C half of ember.Tensor: layout, dtype, device and the arithmetic fast path.
    Users see ember.Tensor, which adds the Python-level methods."""

    def __cinit__(self):
        # An empty float tensor until its creator gives it a layout: what
        # Tensor.__new__ alone makes (nn.Parameter, unpickling) is a valid tensor,
        # never one over no storage.
        self._storage = NO_DATA
        self._dtype = DEFAULT_FLOAT
        self._itemsize = ITEMSIZE[DEFAULT_FLOAT]
        self._ndim = 1
        self._shape[0] = 0
        self._strides[0] = 1
        self._offset = 0

    # layout ---------------------------------------------------------------------
    @property
    def shape(self):
        # tuple.__new__: the ints are a tensor's own, so Size's argument checks are skipped
        return tuple.__new__(SIZE_TYPE, [self._shape[i] for i in range(self._ndim)])

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self._shape[wrap_dim(dim, self._ndim, "size")]

    def stride(self, dim=None):
        if dim is None:
            return tuple([self._strides[i] for i in range(self._ndim)])
        return self._strides[wrap_dim(dim, self._ndim, "stride")]

    @property
    def ndim(self):
        return self._ndim

    def dim(self):
        return self._ndim

    def ndimension(self):
        return self._ndim

    cdef int64_t numel_c(self):
        cdef int64_t n = 1
        for i in range(self._ndim):
            n *= self._shape[i]
        return n

    def numel(self):
        return self.numel_c()

    @property
    def size_(self):
        return self.numel_c()

    def storage_offset(self):
        return self._offset

    @property
    def dtype(self):
        return DTYPE_LIST[self._dtype]

    @property
    def device(self):
        cdef Device d = self._storage.device
        return d

    @property
    def is_cpu(self):
        return self._storage.device.type_id == 0

    @property
    def is_cuda(self):
        return self._storage.device.type_id == 1

    @property
    def itemsize(self):
        return self._itemsize

    def element_size(self):
        return self._itemsize

    @property
    def nbytes(self):
        return self.numel_c() * <object>self._itemsize   # a big expand() may exceed int64

    def data_ptr(self):
        return <uintptr_t>self.ptr()

    def untyped_storage(self):
        return self._storage

    @property
    def _version(self):
        return self._storage.version

    def _bump_version(self):
        self._storage.version += 1

    def is_floating_point(self):
        return KIND[self._dtype] == KIND_FLOAT

    def is_complex(self):
        return KIND[self._dtype] == KIND_COMPLEX

    cdef bint contiguous_c(self):
        cdef int64_t expected = 1
        cdef int i
        for i in range(self._ndim):
            if self._shape[i] == 0:
                return True      # no elements: any strides describe them (as NumPy, PyTorch)
        for i in range(self._ndim - 1, -1, -1):
            if self._shape[i] != 1 and self._strides[i] != expected:
                return False
            expected *= self._shape[i]
        return True

    def is_contiguous(self, memory_format=None):
        """Row-major (memory_format None / contiguous_format), or dense in another
        memory format (ember.channels_last, channels_last_3d: ember._layout_formats)."""
        if memory_format is None or memory_format is CONTIGUOUS_FORMAT:
            return self.contiguous_c()
        return IS_IN_FORMAT(self, memory_format)

    def _layout(self):
        """(storage, dtype, shape, strides, offset): what a view function needs."""
        return (self._storage, DTYPE_LIST[self._dtype],
                tuple([self._shape[i] for i in range(self._ndim)]),
                tuple([self._strides[i] for i in range(self._ndim)]), self._offset)

    def _view(self, shape, strides, offset, str op="view"):
        """A view of this tensor's storage with a new layout (elements), checked to
        stay inside the storage; errors name `op`. Not recorded for autograd:
        callers record."""
        return checked_view(self._storage, self._dtype, shape, strides, offset, op)

    def _shares_storage(self, TensorBase other not None):
        return self._storage is other._storage

    # autograd fields ------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, bint value):
        if value and KIND[self._dtype] != KIND_FLOAT and KIND[self._dtype] != KIND_COMPLEX:
            raise RuntimeError(f"requires_grad: only tensors of floating point and complex "
                               f"dtype can require gradients, got {DTYPE_LIST[self._dtype]!r}")
        if not value and self._grad_fn is not None:
            raise RuntimeError("requires_grad: you can only change requires_grad of leaf "
                               "tensors; use .detach() to get a tensor that does not "
                               "require grad")
        self._requires_grad = value

    def requires_grad_(self, bint requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, TensorBase):
                raise TypeError(f"grad: expected a Tensor or None, got {type(value).__name__}")
            if (<TensorBase>value).shape != self.shape:
                raise RuntimeError(f"grad: assigned grad has shape {tuple(value.shape)} but "
                                   f"the tensor has shape {tuple(self.shape)}")
            if (<TensorBase>value)._dtype != self._dtype:
                raise RuntimeError(f"grad: assigned grad has dtype {value.dtype!r} but the "
                                   f"tensor has dtype {self.dtype!r}")
        self._grad = value

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self):
        return self._grad_fn is None

    def _set_autograd(self, grad_fn, bint requires_grad):
        """For ember.autograd: make this tensor the output of node `grad_fn`."""
        self._grad_fn = grad_fn
        self._requires_grad = requires_grad

    def detach(self):
        """A tensor sharing this one's storage, outside any graph."""
        cdef TensorBase t = view_of(self, self._ndim, self._shape, self._strides, self._offset)
        return t

    def detach_(self):
        if self._grad_fn is not None and self._autograd is not None and \
                getattr(self._autograd, "is_view", False):
            raise RuntimeError("detach_: cannot detach a view in place; use detach()")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, TensorBase other not None):
        """Swap in another tensor's storage and layout (PyTorch's `p.data = t`)."""
        self._storage = other._storage
        self._dtype = other._dtype
        self._itemsize = other._itemsize
        self._ndim = other._ndim
        self._offset = other._offset
        for i in range(other._ndim):
            self._shape[i] = other._shape[i]
            self._strides[i] = other._strides[i]

    # arithmetic fast path (the op table's rows through `ew`). With the C-API binop
    # convention each __op__ gets the operands in their written order, whichever
    # side the tensor is on, so there are no __rop__ methods.
    def __add__(x, y):
        return ew(OP_ADD, x, y, None, 2, None)

    def __iadd__(self, other):
        return ew(OP_ADD, self, other, None, 2, self)

    def __sub__(x, y):
        return ew(OP_SUB, x, y, None, 2, None)

    def __isub__(self, other):
        return ew(OP_SUB, self, other, None, 2, self)

    def __mul__(x, y):
        return ew(OP_MUL, x, y, None, 2, None)

    def __imul__(self, other):
        return ew(OP_MUL, self, other, None, 2, self)

    def __truediv__(x, y):
        return ew(OP_DIV, x, y, None, 2, None)

    def __itruediv__(self, other):
        return ew(OP_DIV, self, other, None, 2, self)

    def __floordiv__(x, y):
        return ew(OP_FLOORDIV, x, y, None, 2, None)

    def __ifloordiv__(self, other):
        return ew(OP_FLOORDIV, self, other, None, 2, self)

    def __mod__(x, y):
        return ew(OP_MOD, x, y, None, 2, None)

    def __imod__(self, other):
        return ew(OP_MOD, self, other, None, 2, self)

    def __and__(x, y):
        return ew(OP_AND, x, y, None, 2, None)

    def __iand__(self, other):
        return ew(OP_AND, self, other, None, 2, self)

    def __or__(x, y):
        return ew(OP_OR, x, y, None, 2, None)

    def __ior__(self, other):
        return ew(OP_OR, self, other, None, 2, self)

    def __xor__(x, y):
        return ew(OP_XOR, x, y, None, 2, None)

    def __ixor__(self, other):
        return ew(OP_XOR, self, other, None, 2, self)

    def __lshift__(x, y):
        return ew(OP_SHL, x, y, None, 2, None)

    def __ilshift__(self, other):
        return ew(OP_SHL, self, other, None, 2, self)

    def __rshift__(x, y):
        return ew(OP_SHR, x, y, None, 2, None)

    def __irshift__(self, other):
        return ew(OP_SHR, self, other, None, 2, self)

    def __pow__(x, y, mod):
        return ew(OP_POW, x, y, None, 2, None)

    def __ipow__(self, other):
        return ew(OP_POW, self, other, None, 2, self)

    def __neg__(self):
        return ew(OP_NEG, self, None, None, 1, None)

    def __pos__(self):
        return self

    def __abs__(self):
        return ew(OP_ABS, self, None, None, 1, None)

    def __invert__(self):
        return ew(OP_INVERT, self, None, None, 1, None)

    def __richcmp__(self, other, int cmp):
        # 0 <, 1 <=, 2 ==, 3 !=, 4 >, 5 >=
        if other is None or not (isinstance(other, (TensorBase, int, float, bool, complex))):
            try:
                other = ASTENSOR(other)
            except Exception:
                return NotImplemented
        return ew(CMP_OPS[cmp], self, other, None, 2, None)

    def __hash__(self):
        return id(self)

    # buffer protocol (CPU tensors): NumPy, memoryview, array.array read it -------
    def __getbuffer__(self, Py_buffer *buf, int flags):
        if self._storage.device.type_id != 0:
            raise BufferError(f"buffer protocol: tensor is on {self._storage.device}; "
                              f"call .cpu() first")
        cdef bint contiguous = self.contiguous_c()
        if not contiguous and ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS or
                               (flags & PyBUF_STRIDES) != PyBUF_STRIDES):
            raise BufferError(f"buffer protocol: the tensor (shape {tuple(self.shape)}, strides "
                              f"{self.stride()}) is not contiguous; call .contiguous() first")
        buf.buf = self.ptr()
        buf.obj = self
        buf.len = self.numel_c() * self._itemsize
        buf.readonly = 0
        buf.itemsize = self._itemsize
        buf.format = BUFFER_FORMATS[self._dtype] if (flags & PyBUF_FORMAT) else NULL
        buf.ndim = self._ndim
        buf.shape = <Py_ssize_t *>self._shape if (flags & PyBUF_ND) == PyBUF_ND else NULL
        buf.suboffsets = NULL
        # Py_buffer strides are in bytes: hand out a byte copy, freed on release
        buf.strides = NULL
        buf.internal = NULL
        if self._ndim and (flags & PyBUF_STRIDES) == PyBUF_STRIDES:
            bstrides = <Py_ssize_t *>em_host_alloc(sizeof(Py_ssize_t) * self._ndim)
            for i in range(self._ndim):
                bstrides[i] = self._strides[i] * self._itemsize
            buf.strides = bstrides
            buf.internal = <void *>bstrides

    def __releasebuffer__(self, Py_buffer *buf):
        if buf.internal != NULL:
            em_host_free(buf.internal, sizeof(Py_ssize_t) * self._ndim)


cdef const char *BUFFER_FORMATS[NDTYPES]
# bfloat16 has no struct-module code: its buffer holds the bits as uint16 ("H"), so
# memoryview and byte copies work; t.numpy() makes them ml_dtypes.bfloat16 (_interop.py)
BUFFER_FORMATS[:] = [b"?", b"B", b"b", b"h", b"i", b"q", b"e", b"f", b"d", b"Zf", b"Zd", b"H",
                     b"H", b"I", b"Q"]

cdef extern from *:
    """
    /* ember.Size's base: a tuple whose slices are of the slicer's type, with indexing
       left in C (a Python-level __getitem__ cost each x.shape[i] a Python call). */
    static PyObject *em_size_subscript(PyObject *self, PyObject *key) {
        PyObject *r = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
        if (r == NULL || !PySlice_Check(key)) return r;
        PyObject *args = PyTuple_Pack(1, r);
        Py_DECREF(r);
        if (args == NULL) return NULL;
        r = PyTuple_Type.tp_new(Py_TYPE(self), args, NULL);
        Py_DECREF(args);
        return r;
    }
    static PyMappingMethods em_size_mapping;
    static PyTypeObject em_size_base_type;
    static PyObject *em_size_base(void) {
        if (em_size_base_type.tp_name == NULL) {
            em_size_mapping = *PyTuple_Type.tp_as_mapping;
            em_size_mapping.mp_subscript = em_size_subscript;
            em_size_base_type.tp_name = "ember._C.core._SizeBase";
            em_size_base_type.tp_basicsize = PyTuple_Type.tp_basicsize;
            em_size_base_type.tp_itemsize = PyTuple_Type.tp_itemsize;
            em_size_base_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
            em_size_base_type.tp_base = &PyTuple_Type;
            em_size_base_type.tp_as_mapping = &em_size_mapping;
            em_size_base_type.tp_doc = "A tuple whose slices keep its type (ember.Size's base).";
            if (PyType_Ready(&em_size_base_type) < 0) return NULL;
        }
        Py_INCREF(&em_size_base_type);
        return (PyObject *)&em_size_base_type;
    }
    """
    object em_size_base()


_SizeBase = em_size_base()
SIZE_TYPE = tuple        # replaced by ember.Size
ASTENSOR = None          # replaced by ember.as_tensor


def _set_python_types(size_type, as_tensor):
    global SIZE_TYPE, ASTENSOR
    SIZE_TYPE = size_type
    ASTENSOR = as_tensor
