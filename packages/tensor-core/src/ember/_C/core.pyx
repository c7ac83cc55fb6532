# kernels: iterator.c alloc.c threads.c gemm.c cpu_api.c
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True, c_api_binop_methods=True
"""ember's core: dtypes, devices, storage, the strided Tensor, and dispatch of the
op table's elementwise and reduction rows to the device kernels.

Everything per-op that is hot lives here in C-level Cython: an `a + b` on small
tensors is dtype promotion, broadcasting, one allocation and one call into the
generated loop, with no Python objects built on the way. Everything else (shape
functions, indexing, creation, printing) is Python over the primitives exported
here, in the sibling modules of the `ember` package.
"""
cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_STRIDES, PyBUF_FORMAT, PyBUF_ND
from libc.stdint cimport int64_t, uint64_t, uintptr_t, uint8_t, int8_t, int16_t, int32_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport calloc
from libc.math cimport isfinite

import operator as _operator

cdef extern from "ember_cpu.h" nogil:
    ctypedef void (*em_loop_fn)(char **ptrs, const int64_t *strides, int64_t n)
    ctypedef void (*em_reduce_inner_fn)(char *out, const char *inp, int64_t stride, int64_t n)
    ctypedef void (*em_reduce_outer_fn)(char *out, int64_t os, const char *inp, int64_t s, int64_t n)
    ctypedef void (*em_reduce_init_fn)(char *out, int64_t n)
    int em_num_elementwise_ops()
    em_loop_fn em_elementwise_loop(int op, int dtype)
    em_loop_fn em_cast_loop(int src, int dst)
    em_reduce_inner_fn em_reduce_inner(int op, int dtype)
    em_reduce_outer_fn em_reduce_outer(int op, int dtype)
    em_reduce_init_fn em_reduce_init(int op, int dtype)
    void em_iterate(em_loop_fn loop, int nop, char **ptrs, int ndim, const int64_t *shape,
                    const int64_t *strides)
    void em_iterate_sized(em_loop_fn loop, int nop, char **ptrs, int ndim,
                          const int64_t *shape, const int64_t *strides, const int *itemsizes)
    void em_reduce(em_reduce_inner_fn inner, em_reduce_outer_fn outer, em_reduce_init_fn init,
                   em_reduce_inner_fn fold_inner, em_reduce_outer_fn fold_outer,
                   int out_itemsize, char *out, const int64_t *out_strides,
                   const char *inp, const int64_t *in_strides, int ndim, const int64_t *shape)
    void em_fill(char *out, int64_t n, const char *value, int itemsize)
    void *em_host_alloc(size_t nbytes)
    void em_host_free(void *ptr, size_t nbytes)
    void em_host_empty_cache()
    size_t em_host_cached_bytes()

cdef extern from *:
    """
    /* Grad mode is per OS thread, as in PyTorch; a C thread-local costs nothing. */
    static __thread int em_grad_off = 0;
    static __thread int em_inference_on = 0;
    static void em_store_f16(char *p, double v) { *(_Float16 *)p = (_Float16)v; }
    static double em_load_f16(const char *p) { return (double)*(const _Float16 *)p; }
    /* int64 arithmetic that reports overflow (nonzero) instead of wrapping: layouts
       come from users, and a wrapped size or reach would pass any bounds check. */
    static int em_mul_ovf(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }
    static int em_add_ovf(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
    """
    int em_grad_off
    int em_inference_on
    void em_store_f16(char *p, double v)
    double em_load_f16(const char *p)
    bint em_mul_ovf(int64_t a, int64_t b, int64_t *r) nogil
    bint em_add_ovf(int64_t a, int64_t b, int64_t *r) nogil

cdef extern from "cpu_api.h":
    const void *em_cpu_api_table()

from cpython.pycapsule cimport PyCapsule_New
# The thread pool and GEMM that every ember extension shares (cpu_api.h).
_cpu_api = PyCapsule_New(<void *>em_cpu_api_table(), b"ember._C.core._cpu_api", NULL)

cdef extern from "Python.h":
    ctypedef object (*newfunc)(object, object, PyObject *)
    ctypedef struct PyTypeObject_new "PyTypeObject":
        newfunc tp_new

DEF MAXD = 16
DEF NBIG = 1 << 16      # release the GIL above this many elements

# dtypes -------------------------------------------------------------------------

cdef enum:
    BOOL = 0
    UINT8 = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    NDTYPES = 9

cdef enum:
    KIND_BOOL = 0
    KIND_INT = 1
    KIND_FLOAT = 2

cdef int KIND[NDTYPES]
cdef int ITEMSIZE[NDTYPES]
cdef int PROMOTE[NDTYPES][NDTYPES]
cdef int DEFAULT_FLOAT = FLOAT32

cdef class DType:
    """An element type: ember.float32, ember.int64, ... (singletons; compare with ==)."""

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    @property
    def is_floating_point(self):
        return self.kind == "float"

    @property
    def is_complex(self):
        return False

    @property
    def bits(self):
        return self.itemsize * 8


cdef list DTYPE_LIST = []
_DTYPE_NAMES = {}

cdef DType dtype_object(int num):
    return <DType>DTYPE_LIST[num]


def _dtype_by_name(str name):
    return _DTYPE_NAMES[name]


cdef _make_dtypes():
    from ember.ops.render import DTYPES
    kinds = {"bool": KIND_BOOL, "int": KIND_INT, "float": KIND_FLOAT}
    cdef DType d
    for i, info in enumerate(DTYPES):
        d = DType.__new__(DType)
        d.num = i
        d.name = info.name
        d.itemsize = info.itemsize
        d.kind = info.kind
        d.is_signed = info.signed
        DTYPE_LIST.append(d)
        _DTYPE_NAMES[info.name] = d
        KIND[i] = kinds[info.kind]
        ITEMSIZE[i] = info.itemsize
    # Array API promotion; mixed int/float takes the float (PyTorch's choice where
    # the standard leaves it open); bool joins any other dtype as that dtype.
    order_int = {UINT8: (8, False), INT8: (8, True), INT16: (16, True), INT32: (32, True),
                 INT64: (64, True)}
    cdef int a, b
    for a in range(NDTYPES):
        for b in range(NDTYPES):
            if a == b:
                r = a
            elif a == BOOL or b == BOOL:
                r = b if a == BOOL else a
            elif KIND[a] == KIND_FLOAT and KIND[b] == KIND_FLOAT:
                r = a if ITEMSIZE[a] >= ITEMSIZE[b] else b
            elif KIND[a] == KIND_FLOAT or KIND[b] == KIND_FLOAT:
                r = a if KIND[a] == KIND_FLOAT else b
            else:
                (ba, sa), (bb, sb) = order_int[a], order_int[b]
                if sa == sb:
                    r = a if ba >= bb else b
                else:
                    bits = max(ba if sa else 2 * ba, bb if sb else 2 * bb)
                    r = {8: INT8, 16: INT16, 32: INT32, 64: INT64}[min(bits, 64)]
            PROMOTE[a][b] = r

_make_dtypes()


def promote_types(DType a not None, DType b not None):
    """The dtype both a and b are converted to in a binary op (Array API rules)."""
    return DTYPE_LIST[PROMOTE[a.num][b.num]]


def get_default_dtype():
    return DTYPE_LIST[DEFAULT_FLOAT]


def set_default_dtype(DType d not None):
    """Set the dtype of Python floats and of int -> float promotion (float32 by default)."""
    global DEFAULT_FLOAT
    if KIND[d.num] != KIND_FLOAT:
        raise TypeError(f"set_default_dtype: expected a floating point dtype, got {d!r}")
    DEFAULT_FLOAT = d.num


cdef int as_dtype_num(object d, str op) except -1:
    if isinstance(d, DType):
        return (<DType>d).num
    resolved = _resolve_dtype(d)
    if resolved is None:
        raise TypeError(f"{op}: {d!r} is not an ember dtype")
    return (<DType>resolved).num


def _resolve_dtype(d):
    """ember dtype for an ember dtype, a name ('float32'), a Python type or a NumPy dtype."""
    if isinstance(d, DType):
        return d
    if d is bool:
        return DTYPE_LIST[BOOL]
    if d is int:
        return DTYPE_LIST[INT64]
    if d is float:
        return DTYPE_LIST[DEFAULT_FLOAT]
    name = getattr(d, "name", None) if not isinstance(d, str) else d
    if name is None:
        name = getattr(getattr(d, "dtype", None), "name", None)  # numpy scalar types
    if isinstance(name, str):
        name = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                "int": "int32", "short": "int16", "bool_": "bool"}.get(name, name)
        return _DTYPE_NAMES.get(name)
    return None


# devices ------------------------------------------------------------------------

cdef dict DEVICE_TYPES = {"cpu": 0, "cuda": 1, "opencl": 2}

cdef class Device:
    """A device: ember.device("cpu"), ember.device("cuda:1"), ember.device("opencl", 0)."""

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            self.type, self.index, self.type_id = (<Device>type).type, (<Device>type).index, (<Device>type).type_id
            return
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {type!r}")
        name = type
        if ":" in name:
            if index is not None:
                raise ValueError(f"device: index given twice in {name!r} and index={index}")
            name, _, idx = name.partition(":")
            if not idx.isdigit():
                raise ValueError(f"device: invalid device string {type!r}")
            index = int(idx)
        if name not in DEVICE_TYPES:
            raise ValueError(f"device: unknown device type {name!r}; expected one of "
                             f"{', '.join(DEVICE_TYPES)}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise ValueError(f"device: index must be a non-negative int, got {index!r}")
        self.type = name
        self.type_id = DEVICE_TYPES[name]
        self.index = -1 if index is None else index

    def __repr__(self):
        if self.index < 0:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index < 0 else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except (ValueError, TypeError):
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type_id == (<Device>other).type_id and self.index == (<Device>other).index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (Device, (self.type, None if self.index < 0 else self.index))

    # `with ember.device("opencl"):` would need a default-device stack: a later issue.


cdef Device CPU = Device("cpu")

# A backend for each non-CPU device type, registered by the backend's module (see
# ember/backends/base.py for the interface). The CPU is served here directly.
cdef dict BACKENDS = {}


def register_backend(str device_type, backend):
    BACKENDS[device_type] = backend


# Modules that register a backend when first needed (so `import ember` doesn't pay
# for importing pyopencl).
cdef dict LAZY_BACKENDS = {"opencl": "ember.opencl"}


cpdef object backend_for(Device device):
    b = BACKENDS.get(device.type)
    if b is None and device.type in LAZY_BACKENDS:
        import importlib
        importlib.import_module(LAZY_BACKENDS[device.type])._get()
        b = BACKENDS.get(device.type)
    if b is None:
        raise RuntimeError(
            f"device {device}: ember was built without a {device.type} backend "
            f"({'rebuild with USE_CUDA=1 where nvcc and a GPU are present' if device.type == 'cuda' else 'install pyopencl and an OpenCL driver'})")
    return b


cpdef Device resolve_device(Device device):
    """The numbered device a bare type means ("cuda": the current one, "opencl": 0).
    Storages always record it, so "cuda" and "cuda:0" tensors meet in one op, as in
    PyTorch."""
    if device.type_id == 0 or device.index >= 0:
        return device
    return Device(device.type, backend_for(device).default_index(device))


cpdef Device as_device(object d):
    if d is None:
        return CPU
    if isinstance(d, Device):
        return <Device>d
    if isinstance(d, int):
        raise TypeError(f"device: expected a device string such as 'cpu', got the int {d}")
    return Device(d)


# storage ------------------------------------------------------------------------

cdef class Storage:
    """One allocation on one device, shared by every tensor that views it."""

    def __cinit__(self):
        self.device = CPU     # em.Storage() is an empty CPU storage, not one on no device

    def __dealloc__(self):
        if self.owns_data and self.data != NULL and self.device is not None \
                and self.device.type_id == 0:
            em_host_free(self.data, self.nbytes)
            self.data = NULL

    def data_ptr(self):
        return <uintptr_t>self.data

    def size(self):
        return self.nbytes

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        return f"<ember.Storage {self.nbytes} bytes on {self.device}>"


cdef Storage alloc_storage(Py_ssize_t nbytes, Device device):
    cdef Storage s = Storage.__new__(Storage)
    s.nbytes = nbytes
    s.device = device
    if device.type_id == 0:
        s.data = <char *>em_host_alloc(<size_t>nbytes)
        if s.data == NULL:
            raise MemoryError(f"ember: out of memory allocating {nbytes} bytes on the CPU")
        s.owns_data = True
    else:
        s.device = device = resolve_device(device)
        s.handle = backend_for(device).allocate(nbytes, device)
        s.data = <char *><uintptr_t>getattr(s.handle, "ptr", 0)
        s.owns_data = False   # the handle frees itself
    return s


cdef Storage NO_DATA = alloc_storage(0, CPU)   # the storage of a tensor not yet laid out


def storage_from_pointer(uintptr_t ptr, Py_ssize_t nbytes, object owner, device=None):
    """Wrap memory that `owner` keeps alive (a NumPy array, a DLPack capsule, a shared
    memory mapping) as a Storage, without copying."""
    if nbytes < 0:
        raise ValueError(f"storage_from_pointer: negative size {nbytes}")
    cdef Storage s = Storage.__new__(Storage)
    s.data = <char *>ptr
    s.nbytes = nbytes
    s.owner = owner
    s.device = as_device(device)
    s.owns_data = False
    return s


def storage_move_to(Storage storage not None, uintptr_t ptr, object owner, bint copy=True):
    """Copy a CPU `storage`'s bytes into the buffer at `ptr` (at least storage.nbytes
    long, kept alive by `owner`, e.g. a shared memory mapping) and make the storage use
    that buffer from now on, in place: every tensor viewing the storage sees the new
    memory. copy=False: the caller has put the bytes there already. The old buffer is
    freed if the storage owned it (views of the old memory taken through the buffer
    protocol must be gone). For ember.multiprocessing."""
    if storage.device is None or storage.device.type_id != 0:
        raise ValueError(f"storage_move_to: only CPU storages can move, not {storage.device}")
    cdef char *old = storage.data
    cdef char *new = <char *>ptr
    cdef size_t n = <size_t>storage.nbytes
    if copy and n and old != NULL and new != old:
        if ptr == 0:
            raise ValueError("storage_move_to: NULL destination for a non-empty storage")
        with nogil:
            memcpy(new, old, n)
    if storage.owns_data and old != NULL and new != old:
        em_host_free(old, n)
    storage.data = new
    storage.owner = owner
    storage.owns_data = False


def storage_from_handle(object handle, Py_ssize_t nbytes, device):
    """Wrap a backend's buffer object (for devices without raw host-visible pointers)."""
    if nbytes < 0:
        raise ValueError(f"storage_from_handle: negative size {nbytes}")
    cdef Storage s = Storage.__new__(Storage)
    s.handle = handle
    s.nbytes = nbytes
    s.device = as_device(device)
    s.data = <char *><uintptr_t>getattr(handle, "ptr", 0)
    s.owns_data = False
    return s


def empty_cache():
    """Return the CPU allocator's cached large blocks to the OS."""
    em_host_empty_cache()


def cached_bytes():
    return em_host_cached_bytes()


# the recorder hook ---------------------------------------------------------------

# ember.autograd installs a callable here: recorder(op_name, inputs, output, attrs).
# tensor-core calls it after an op when grad mode is on and an input requires grad.
cdef object RECORDER = None


def set_recorder(fn):
    """Install (or with None, remove) the autograd recorder. Returns the previous one."""
    global RECORDER
    prev = RECORDER
    RECORDER = fn
    return prev


def get_recorder():
    return RECORDER


class _no_record:
    """Suspend recording around internal steps of an op that records itself."""

    def __enter__(self):
        global em_grad_off
        self.prev = em_grad_off
        em_grad_off = 1

    def __exit__(self, *exc):
        global em_grad_off
        em_grad_off = self.prev


def is_grad_enabled():
    return not em_grad_off


def _set_grad_enabled(bint mode):
    """Set grad mode for this thread; returns the previous mode."""
    global em_grad_off
    prev = not em_grad_off
    em_grad_off = 0 if mode else 1
    return prev


def is_inference_mode_enabled():
    return bool(em_inference_on)


def _set_inference_mode(bint mode):
    global em_inference_on
    prev = bool(em_inference_on)
    em_inference_on = 1 if mode else 0
    return prev


cdef inline bint needs_record(TensorBase a, object b, object c):
    if em_grad_off or RECORDER is None:
        return False
    if a is not None and a._requires_grad:
        return True
    if isinstance(b, TensorBase) and (<TensorBase>b)._requires_grad:
        return True
    return isinstance(c, TensorBase) and (<TensorBase>c)._requires_grad


def record(str op, tuple inputs, output, dict attrs=None):
    """Called by ops written in Python (views, shape functions): hand the op to the
    autograd recorder when grad mode is on and an input requires grad."""
    if em_grad_off or RECORDER is None:
        return output
    for x in inputs:
        if isinstance(x, TensorBase) and (<TensorBase>x)._requires_grad:
            RECORDER(op, inputs, output, attrs)
            break
    return output


def any_requires_grad(tuple inputs):
    if em_grad_off or RECORDER is None:
        return False
    for x in inputs:
        if isinstance(x, TensorBase) and (<TensorBase>x)._requires_grad:
            return True
    return False


# the tensor ---------------------------------------------------------------------

cdef object TENSOR_TYPE = None   # ember.Tensor, the Python subclass that carries the methods


def _set_tensor_type(cls):
    global TENSOR_TYPE
    TENSOR_TYPE = cls


cdef inline TensorBase alloc_tensor_object():
    return <TensorBase>(<PyTypeObject_new *>TENSOR_TYPE).tp_new(TENSOR_TYPE, (), NULL)


cdef str shape_str(int ndim, const int64_t *shape):
    if ndim == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join([str(shape[i]) for i in range(ndim)]) + ")"


cdef TensorBase new_tensor(int ndim, const int64_t *shape, int dtype, Device device):
    cdef TensorBase t = alloc_tensor_object()
    cdef int64_t n = 1, nbytes
    cdef int i
    cdef int itemsize = ITEMSIZE[dtype]
    cdef bint empty = False
    for i in range(ndim):
        if shape[i] < 0:
            raise ValueError(f"empty: negative dimension {shape[i]} in shape {shape_str(ndim, shape)}")
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


cdef int64_t int64_arg(object v, str what, str op) except? -1:
    """v (anything with __index__) as an int64; TypeError / OverflowError naming op."""
    if type(v) is int and -(1 << 63) <= <object>v < (1 << 63):
        return v          # the common case, without the general path's conversions
    try:
        v = _operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int, got {v!r}") from None
    if not (-(1 << 63) <= v < (1 << 63)):
        raise OverflowError(f"{op}: {what} {v} does not fit in int64")
    return v


cdef int shape_from(object shape, int64_t *out, str op) except -1:
    """Parse a shape given as a tuple/list/Size of ints (or a single int)."""
    cdef int n
    if isinstance(shape, int):
        shape = (shape,)
    try:
        n = len(shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if n > MAXD:
        raise ValueError(f"{op}: {n} dimensions requested; ember supports at most {MAXD}")
    for i in range(n):
        v = shape[i]
        if type(v) is int and 0 <= <object>v < (1 << 63):
            out[i] = v    # the common case
            continue
        if isinstance(v, TensorBase):
            v = v.item()
        try:
            v = _operator.index(v)
        except TypeError:
            raise TypeError(f"{op}: shape must contain ints, got {shape!r}") from None
        if v < 0:
            raise ValueError(f"{op}: negative dimension {v} in shape {tuple(shape)}")
        out[i] = int64_arg(v, "size", op)
    return n


cdef int layout_from(object shape, object strides, int64_t *sh, int64_t *st,
                     str op) except -1:
    """Parse a (shape, strides) pair into C arrays of MAXD: as many strides as sizes,
    all ints (a float stride is a TypeError, not truncated)."""
    cdef int n = shape_from(shape, sh, op)
    try:
        ns = len(strides)
    except TypeError:
        raise TypeError(f"{op}: strides must be a sequence of ints, got {strides!r}") from None
    if ns != n:
        # the sizes as parsed (`shape` may be a bare int); the strides as given
        shown = tuple(strides) if isinstance(strides, (tuple, list)) else f"{strides!r:.200}"
        raise ValueError(f"{op}: {n} sizes {shape_str(n, sh)} but {ns} strides {shown}; "
                         f"they must have the same length")
    for i in range(n):
        st[i] = int64_arg(strides[i], "stride", op)
    return n


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


def as_strided_from(Storage storage not None, DType dtype not None, shape, strides, offset):
    """A tensor viewing `storage` with the given layout (elements); bounds-checked."""
    return checked_view(storage, dtype.num, shape, strides, offset, "as_strided")


cdef TensorBase checked_view(Storage storage, int dtype, object shape, object strides,
                             object offset, str op):
    """A tensor viewing `storage` with a layout given from Python (in elements): every
    view of a user's or a Python module's making comes through here, so every one is
    validated the same way (internal C code uses view_of on layouts it derived)."""
    cdef int64_t sh[MAXD]
    cdef int64_t st[MAXD]
    cdef int n = layout_from(shape, strides, sh, st, op)
    cdef int64_t off = int64_arg(offset, "storage offset", op)
    check_numel(n, sh, op)
    check_bounds(storage.nbytes // ITEMSIZE[dtype], n, sh, st, off, op)
    cdef TensorBase t = alloc_tensor_object()
    for i in range(n):
        t._shape[i] = sh[i]
        t._strides[i] = st[i]
    t._ndim = n
    t._dtype = dtype
    t._itemsize = ITEMSIZE[dtype]
    t._offset = off
    t._storage = storage
    return t


cdef int check_numel(int ndim, const int64_t *shape, str op) except -1:
    """A tensor's element count must fit in int64, so that numel() never wraps (a
    zero-stride view can have many more elements than its storage)."""
    cdef int64_t n = 1
    cdef int i
    for i in range(ndim):
        if shape[i] == 0:
            return 0
    for i in range(ndim):
        if em_mul_ovf(n, shape[i], &n):
            raise ValueError(f"{op}: numel: integer multiplication overflow: shape "
                             f"{shape_str(ndim, shape)} has more than 2**63 - 1 elements")
    return 0


cdef int layout_reach(int ndim, const int64_t *shape, const int64_t *strides,
                      int64_t offset, int64_t *lo, int64_t *hi, str op) except -1:
    """The lowest and highest element a layout touches, [lo, hi] (from the storage's
    start), in checked int64 arithmetic: a wrapped stride * (size - 1) would pass any
    bounds check. Returns 0 when the layout has no elements (lo and hi unset), else 1."""
    cdef int64_t step
    cdef int i
    for i in range(ndim):
        if shape[i] < 0:
            raise ValueError(f"{op}: negative dimension {shape[i]} in shape "
                             f"{shape_str(ndim, shape)}")
        if shape[i] == 0:
            return 0
    lo[0] = hi[0] = offset
    for i in range(ndim):
        if em_mul_ovf(strides[i], shape[i] - 1, &step) or \
                (em_add_ovf(hi[0], step, hi) if step > 0 else em_add_ovf(lo[0], step, lo)):
            raise ValueError(f"{op}: storage size calculation overflowed with sizes "
                             f"{shape_str(ndim, shape)}, strides {shape_str(ndim, strides)} "
                             f"and offset {offset}")
    return 1


cdef int check_bounds(int64_t capacity, int ndim, const int64_t *shape,
                      const int64_t *strides, int64_t offset, str op) except -1:
    """The one bounds check of a layout over a storage of `capacity` elements (views,
    strided creation, the indexing loops): every element inside, offset >= 0."""
    cdef int64_t lo, hi
    if offset < 0:
        raise ValueError(f"{op}: negative storage offset {offset}")
    if layout_reach(ndim, shape, strides, offset, &lo, &hi, op) and \
            (lo < 0 or hi >= capacity):
        raise ValueError(f"{op}: a view of shape {shape_str(ndim, shape)} with strides "
                         f"{shape_str(ndim, strides)} and offset {offset} reaches elements "
                         f"[{lo}, {hi}] outside the storage of {capacity} elements")
    return 0


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
        return False

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
        return self.contiguous_c()

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
        if value and KIND[self._dtype] != KIND_FLOAT:
            raise RuntimeError(f"requires_grad: only tensors of floating point dtype can "
                               f"require gradients, got {DTYPE_LIST[self._dtype]!r}")
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
        if other is None or not (isinstance(other, (TensorBase, int, float, bool))):
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
BUFFER_FORMATS[:] = [b"?", b"B", b"b", b"h", b"i", b"q", b"e", b"f", b"d"]

SIZE_TYPE = tuple        # replaced by ember.Size
ASTENSOR = None          # replaced by ember.as_tensor


def _set_python_types(size_type, as_tensor):
    global SIZE_TYPE, ASTENSOR
    SIZE_TYPE = size_type
    ASTENSOR = as_tensor


cdef int wrap_dim(object dim, int ndim, str op) except -1:
    try:
        d = _operator.index(dim)   # a Python int: 2**63 is out of range, not a C overflow
    except TypeError:
        raise TypeError(f"{op}: dim must be an int, got {dim!r}") from None
    cdef int n = ndim if ndim > 0 else 1
    if d < -n or d >= n:
        raise IndexError(f"{op}: dim {d} is out of range for a tensor of {ndim} dims "
                         f"(expected {-n}..{n - 1})")
    return <int>(d + n if d < 0 else d)


def normalize_dim(dim, int ndim, str op="op"):
    """dim in [-ndim, ndim) -> [0, ndim); IndexError naming the op otherwise."""
    return wrap_dim(dim, ndim, op)


# the op table at run time --------------------------------------------------------

cdef struct OpInfo:
    int arity
    bint out_bool
    bint promote_float
    int kinds            # bit k set: the row has a body for kind k
    bint is_where

cdef OpInfo *OPS = NULL
cdef list OP_NAMES = []
OP_INDEX = {}
cdef int OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_AND, OP_OR, OP_XOR
cdef int OP_SHL, OP_SHR, OP_NEG, OP_ABS, OP_INVERT
cdef int CMP_OPS[6]

cdef list RED_NAMES = []
RED_INDEX = {}
cdef int RED_OUT[32][NDTYPES]   # output dtype of reduction r over dtype d (-1: unsupported)
cdef bint RED_WIDE[32]           # the row accumulates float16/float32 in float64


cdef _load_table():
    global OPS, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_AND, OP_OR
    global OP_XOR, OP_SHL, OP_SHR, OP_NEG, OP_ABS, OP_INVERT
    from ember.ops import table, render
    n = len(table.ELEMENTWISE)
    if n != em_num_elementwise_ops():
        raise ImportError("ember: the compiled kernels do not match ember/ops/table.py; "
                          "rebuild the package")
    OPS = <OpInfo *>calloc(n, sizeof(OpInfo))
    bits = {"bool": 1, "int": 2, "float": 4}
    for i, row in enumerate(table.ELEMENTWISE):
        OPS[i].arity = row.arity
        OPS[i].out_bool = row.out == "bool"
        OPS[i].promote_float = row.promote == "float"
        OPS[i].kinds = sum(bits[k] for k in row.body)
        OPS[i].is_where = row.name == "where"
        OP_NAMES.append(row.name)
        OP_INDEX[row.name] = i
    OP_ADD, OP_SUB, OP_MUL, OP_DIV = OP_INDEX["add"], OP_INDEX["sub"], OP_INDEX["mul"], OP_INDEX["div"]
    OP_FLOORDIV, OP_MOD, OP_POW = OP_INDEX["floor_divide"], OP_INDEX["remainder"], OP_INDEX["pow"]
    OP_AND, OP_OR, OP_XOR = OP_INDEX["bitwise_and"], OP_INDEX["bitwise_or"], OP_INDEX["bitwise_xor"]
    OP_SHL, OP_SHR = OP_INDEX["bitwise_left_shift"], OP_INDEX["bitwise_right_shift"]
    OP_NEG, OP_ABS, OP_INVERT = OP_INDEX["neg"], OP_INDEX["abs"], OP_INDEX["bitwise_not"]
    for k, name in enumerate(["lt", "le", "eq", "ne", "gt", "ge"]):
        CMP_OPS[k] = OP_INDEX[name]
    for r, row in enumerate(table.REDUCTIONS):
        RED_NAMES.append(row.name)
        RED_INDEX[row.name] = r
        RED_WIDE[r] = render.reduction_types(row, render.BY_NAME["float32"])[0] == "double"
        for d, info in enumerate(render.DTYPES):
            RED_OUT[r][d] = -1
            if info.kind in row.kinds:
                RED_OUT[r][d] = render.DTYPES.index(render.BY_NAME[render.reduction_types(row, info)[1]])

_load_table()


# scalars ------------------------------------------------------------------------

cdef int scalar_kind(object x):
    """Kind of a Python scalar operand (weak in promotion), or -1 if not one."""
    if isinstance(x, bool):
        return KIND_BOOL
    if isinstance(x, int):
        return KIND_INT
    if isinstance(x, float):
        return KIND_FLOAT
    return -1


cdef int write_scalar(char *dst, object value, int dtype, str op) except -1:
    """Store a Python scalar as one element of `dtype`; integers must fit."""
    cdef int k = KIND[dtype]
    cdef double f
    cdef int64_t i
    if k == KIND_FLOAT:
        f = value
        if dtype == FLOAT32:
            (<float *>dst)[0] = <float>f
        elif dtype == FLOAT64:
            (<double *>dst)[0] = f
        else:
            em_store_f16(dst, f)
        return 0
    if k == KIND_BOOL:
        (<uint8_t *>dst)[0] = 1 if value else 0
        return 0
    if isinstance(value, float):
        raise TypeError(f"{op}: cannot store the float {value!r} in a {DTYPE_LIST[dtype]!r} operand")
    lo, hi = INT_RANGES[dtype]
    if not (lo <= value <= hi):
        raise OverflowError(f"{op}: Python integer {value} is out of bounds for "
                            f"{DTYPE_LIST[dtype]!r}")
    i = value
    if dtype == INT64:
        (<int64_t *>dst)[0] = i
    elif dtype == INT32:
        (<int32_t *>dst)[0] = <int32_t>i
    elif dtype == INT16:
        (<int16_t *>dst)[0] = <int16_t>i
    elif dtype == INT8:
        (<int8_t *>dst)[0] = <int8_t>i
    else:
        (<uint8_t *>dst)[0] = <uint8_t>i
    return 0


INT_RANGES = {UINT8: (0, 255), INT8: (-128, 127), INT16: (-32768, 32767),
              INT32: (-2**31, 2**31 - 1), INT64: (-2**63, 2**63 - 1)}


cdef object read_scalar(const char *src, int dtype):
    if dtype == FLOAT32:
        return (<const float *>src)[0]
    if dtype == FLOAT64:
        return (<const double *>src)[0]
    if dtype == FLOAT16:
        return em_load_f16(src)
    if dtype == BOOL:
        return (<const uint8_t *>src)[0] != 0
    if dtype == INT64:
        return (<const int64_t *>src)[0]
    if dtype == INT32:
        return (<const int32_t *>src)[0]
    if dtype == INT16:
        return (<const int16_t *>src)[0]
    if dtype == INT8:
        return (<const int8_t *>src)[0]
    return (<const uint8_t *>src)[0]


# elementwise dispatch --------------------------------------------------------------

cdef union ScalarSlot:
    double f64
    int64_t i64
    char bytes[8]


cdef inline int result_kind_dtype(int cur, int kind) noexcept:
    """Promote dtype `cur` (-1: none yet) with a weak Python scalar of `kind`."""
    if cur < 0:
        return BOOL if kind == KIND_BOOL else (INT64 if kind == KIND_INT else DEFAULT_FLOAT)
    if kind > KIND[cur]:
        return INT64 if kind == KIND_INT else DEFAULT_FLOAT
    return cur


cdef str describe(object x):
    if isinstance(x, TensorBase):
        return f"a tensor of shape {tuple((<TensorBase>x).shape)} and dtype {x.dtype!r}"
    return repr(x)


cdef object ew(int op, object x0, object x1, object x2, int nin, object out):
    """Run elementwise row `op` on up to three operands (tensors or Python scalars),
    into a new tensor or into `out` (in-place ops pass the first operand)."""
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
    if info.promote_float and KIND[compute] != KIND_FLOAT:
        compute = DEFAULT_FLOAT
    if not (info.kinds >> KIND[compute]) & 1:
        raise TypeError(_unsupported(op, compute))
    cdef int out_dtype = BOOL if info.out_bool else compute

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
                    t = cast_copy(t, cd)
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
                t = cast_copy(t, cd)
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
    elif KIND[dtype] == KIND_FLOAT and name.startswith("bitwise"):
        hint = "; bitwise ops need bool or integer tensors"
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
    """Positional fast entry for the generated functions of ember._elementwise."""
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
            compute = (<TensorBase>a)._dtype if compute < 0 else PROMOTE[compute][(<TensorBase>a)._dtype]
        elif isinstance(a, DType):
            compute = (<DType>a).num if compute < 0 else PROMOTE[compute][(<DType>a).num]
        else:
            sk = scalar_kind(a)
            if sk > kinds:
                kinds = sk
    if kinds >= 0:
        compute = result_kind_dtype(compute, kinds)
    if OPS[op].promote_float and KIND[compute] != KIND_FLOAT:
        compute = DEFAULT_FLOAT
    return DTYPE_LIST[compute]


def weak_result_type(*args):
    """result_type over tensors, dtypes and Python scalars (scalars are weak)."""
    cdef int compute = -1, kinds = -1, sk
    for a in args:
        if isinstance(a, TensorBase):
            compute = (<TensorBase>a)._dtype if compute < 0 else PROMOTE[compute][(<TensorBase>a)._dtype]
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


# copies and casts ---------------------------------------------------------------

cdef TensorBase cast_copy(TensorBase src, int dtype):
    """A new contiguous tensor holding src converted to dtype."""
    cdef TensorBase o = new_tensor(src._ndim, src._shape, dtype, src._storage.device)
    copy_into(o, src)
    return o


cpdef TensorBase copy_into(TensorBase dst, TensorBase src):
    """dst[...] = src, broadcasting src and converting dtype; returns dst."""
    if dst is None or src is None:
        raise TypeError(f"copy_: expected tensors, got {'None' if src is None else src!r} "
                        f"as the source" if src is None else "copy_: the destination is None")
    cdef int nd = dst._ndim, d, j
    if src._ndim > nd:
        raise ValueError(f"copy_: cannot copy a tensor of shape {tuple(src.shape)} into one "
                         f"of shape {tuple(dst.shape)}")
    for d in range(src._ndim):
        j = nd - src._ndim + d
        if src._shape[d] != dst._shape[j] and src._shape[d] != 1:
            raise ValueError(f"copy_: shape {tuple(src.shape)} cannot be broadcast to "
                             f"{tuple(dst.shape)}")
    if dst._storage.device.type_id != 0 or src._storage.device.type_id != 0:
        return _device_copy(dst, src)
    if src._storage is dst._storage and not same_layout(src, dst):
        src = cast_copy(src, src._dtype)
    cdef char *ptrs[2]
    cdef int64_t strides[2 * MAXD]
    ptrs[0] = dst.ptr()
    ptrs[1] = src.ptr()
    for d in range(nd):
        strides[d] = dst._strides[d] * dst._itemsize
        j = d - (nd - src._ndim)
        strides[nd + d] = 0 if (j < 0 or src._shape[j] == 1) else src._strides[j] * src._itemsize
    cdef em_loop_fn loop = em_cast_loop(src._dtype, dst._dtype)
    cdef int sizes[2]
    sizes[0] = dst._itemsize
    sizes[1] = src._itemsize
    if dst.numel_c() >= NBIG:
        with nogil:
            em_iterate_sized(loop, 2, ptrs, nd, dst._shape, strides, sizes)
    else:
        em_iterate_sized(loop, 2, ptrs, nd, dst._shape, strides, sizes)
    return dst


cdef TensorBase _device_copy(TensorBase dst, TensorBase src):
    cdef Device dd = dst._storage.device, sd = src._storage.device
    if dd.type_id != 0:
        backend_for(dd).copy(dst, src)
    else:
        backend_for(sd).copy(dst, src)
    return dst


cdef int check_write(TensorBase x, str op, bint overlap=True) except -1:
    """The checks of a tensor that an op writes into in place (in-place methods, out=,
    copy_, the indexing writes), on every device; all of them call this.
    A leaf that requires grad can't be written while grad mode is on (PyTorch's rule).
    And no two of its elements may share a memory location: the op would update it
    once per alias (sigmoid applied three times). As PyTorch's has_internal_overlap,
    this refuses the case that is certain and cheap to decide, a zero stride on a dim
    of size > 1 (expand, as_strided); other self-overlapping strides, such as
    as_strided((3, 2), (1, 1)), are not looked for (PyTorch: "too hard"). Writes that
    aliases can't harm pass overlap=False: fill_ stores one value (PyTorch allows it)."""
    cdef int d
    if not em_grad_off and x._requires_grad and x._grad_fn is None:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad is being used in an "
                           f"in-place operation; wrap it in ember.no_grad() or use .detach()")
    if overlap and x.numel_c():
        for d in range(x._ndim):
            if x._strides[d] == 0 and x._shape[d] > 1:
                raise RuntimeError(
                    f"{op}: unsupported operation: more than one element of the written-to "
                    f"tensor (shape {shape_str(x._ndim, x._shape)}, strides "
                    f"{shape_str(x._ndim, x._strides)}) refers to a single memory location. "
                    f"Please clone() the tensor before performing the operation.")
    return 0


def check_inplace(TensorBase x not None, str op, bint overlap=True):
    """check_write for the ops written in Python."""
    check_write(x, op, overlap)


def copy_(TensorBase dst not None, src):
    """In-place copy with broadcasting and dtype conversion; bumps dst's version."""
    if not isinstance(src, TensorBase):   # PyTorch: src must be a Tensor
        raise TypeError(f"copy_: src must be a Tensor, got {type(src).__name__}")
    cdef TensorBase source = src
    check_write(dst, "copy_")
    copy_into(dst, source)
    dst._storage.version += 1
    if not em_grad_off and RECORDER is not None and (dst._requires_grad or source._requires_grad):
        RECORDER("copy_", (dst, source), dst, {"inplace": True})
    return dst


def astype(TensorBase x not None, dtype, bint copy=True):
    """x converted to dtype (a new contiguous tensor; x itself if the dtype matches
    and copy is False)."""
    cdef int d = as_dtype_num(dtype, "to")
    if d == x._dtype and not copy:
        return x
    return cast_copy(x, d)


def contiguous_copy(TensorBase x not None):
    return cast_copy(x, x._dtype)


def fill_(TensorBase x not None, value):
    """Write one value into every element of x; bumps its version."""
    cdef ScalarSlot slot
    cdef char *ptrs[2]
    cdef int64_t strides[2 * MAXD]
    if isinstance(value, TensorBase):
        if (<TensorBase>value).numel_c() != 1:
            raise ValueError(f"fill_: expected a scalar or a one-element tensor, got a tensor "
                             f"of shape {tuple(value.shape)}")
        value = value.item()
    if scalar_kind(value) < 0:
        raise TypeError(f"fill_: expected a number, got {value!r}")
    check_write(x, "fill_", overlap=False)
    if KIND[x._dtype] == KIND_INT and isinstance(value, float):
        if not isfinite(value):   # PyTorch: "cannot be converted ... without overflow"
            raise OverflowError(f"fill_: value {value} cannot be converted to "
                                f"{DTYPE_LIST[x._dtype]!r} without overflow")
        value = int(value)
    if x._storage.device.type_id != 0:
        backend_for(x._storage.device).fill(x, value)
        x._storage.version += 1
        if not em_grad_off and RECORDER is not None and x._requires_grad:
            RECORDER("fill_", (x,), x, {"inplace": True})
        return x
    write_scalar(slot.bytes, value, x._dtype, "fill_")
    cdef int64_t n = x.numel_c()
    cdef char *data = x.ptr()
    if x.contiguous_c():
        with nogil:
            em_fill(data, n, slot.bytes, x._itemsize)
        x._storage.version += 1
        if not em_grad_off and RECORDER is not None and x._requires_grad:
            RECORDER("fill_", (x,), x, {"inplace": True})
        return x
    ptrs[0] = x.ptr()
    ptrs[1] = slot.bytes
    for d in range(x._ndim):
        strides[d] = x._strides[d] * x._itemsize
        strides[x._ndim + d] = 0
    cdef em_loop_fn loop = em_cast_loop(x._dtype, x._dtype)
    if x.numel_c() >= NBIG:
        with nogil:
            em_iterate(loop, 2, ptrs, x._ndim, x._shape, strides)
    else:
        em_iterate(loop, 2, ptrs, x._ndim, x._shape, strides)
    x._storage.version += 1
    if not em_grad_off and RECORDER is not None and x._requires_grad:
        RECORDER("fill_", (x,), x, {"inplace": True})
    return x


def item(TensorBase x not None):
    """The one element of x as a Python number."""
    if x.numel_c() != 1:
        raise ValueError(f"item: a tensor with {x.numel_c()} elements cannot be converted "
                         f"to a Python scalar (shape {tuple(x.shape)})")
    if x._storage.device.type_id != 0:
        return backend_for(x._storage.device).item(x)
    return read_scalar(x.ptr(), x._dtype)


def tolist(TensorBase x not None):
    """Nested Python lists of the elements (a scalar for a 0-d tensor)."""
    if x._storage.device.type_id != 0:
        x = backend_for(x._storage.device).to_cpu(x)
    if x._ndim == 0:
        return read_scalar(x.ptr(), x._dtype)
    return _tolist(x.ptr(), x, 0)


cdef list _tolist(char *p, TensorBase x, int d):
    cdef int64_t i, n = x._shape[d], step = x._strides[d] * x._itemsize
    if d == x._ndim - 1:
        return [read_scalar(p + i * step, x._dtype) for i in range(n)]
    return [_tolist(p + i * step, x, d + 1) for i in range(n)]


# reductions ---------------------------------------------------------------------

def reduce(str name, TensorBase x not None, dims, bint keepdim=False):
    """Reduction row `name` over `dims` (a tuple of normalized dims, or None = all)."""
    cdef int r = RED_INDEX[name]
    cdef int nd = x._ndim, d, i
    cdef bint reduced[MAXD]
    for d in range(nd):
        reduced[d] = dims is None
    if dims is not None:
        for dim in dims:
            d = wrap_dim(dim, nd, name)
            if nd == 0:
                continue
            if reduced[d]:
                raise ValueError(f"{name}: dim {d} appears more than once in {tuple(dims)}")
            reduced[d] = True
    cdef int out_dtype = RED_OUT[r][x._dtype]
    if out_dtype < 0:
        raise TypeError(f"{name}: not supported for dtype {DTYPE_LIST[x._dtype]!r}")
    cdef int nreduced = 0
    for d in range(nd):
        if reduced[d] and x._shape[d] > 1:
            nreduced += 1
    if RED_WIDE[r] and KIND[x._dtype] == KIND_FLOAT and x._dtype != FLOAT64 and \
            x._storage.device.type_id == 0 and (nreduced > 1 or not x.contiguous_c()):
        # The reduced elements don't form one run per output, so partial results
        # would round to the output dtype between runs: reduce in float64 instead.
        with _no_record():
            narrowed = cast_copy(reduce(name, cast_copy(x, FLOAT64), dims, keepdim), out_dtype)
        if needs_record(x, None, None):
            RECORDER(name, (x,), narrowed,
                     {"dim": tuple([d for d in range(nd) if reduced[d]]), "keepdim": keepdim})
        return narrowed
    cdef int64_t oshape[MAXD]
    cdef int64_t ostrides[MAXD]
    cdef int64_t istrides[MAXD]
    for d in range(nd):
        oshape[d] = 1 if reduced[d] else x._shape[d]
        if reduced[d] and x._shape[d] == 0 and name in ("amax", "amin"):
            raise ValueError(f"{name}: cannot reduce over dim {d} of size 0 (shape "
                             f"{tuple(x.shape)}): the maximum of nothing is undefined")
    cdef TensorBase o = new_tensor(nd, oshape, out_dtype, x._storage.device)
    cdef int64_t n_out = o.numel_c()
    if x._storage.device.type_id != 0:
        # the device's kernels accumulate float16/float32 sums wide in one pass
        backend_for(x._storage.device).reduce(
            name, x, tuple([d for d in range(nd) if reduced[d]]), o)
        return _reduce_finish(name, x, o, nd, reduced, keepdim)
    em_reduce_init(r, x._dtype)(o.ptr(), n_out)
    for d in range(nd):
        ostrides[d] = 0 if reduced[d] else o._strides[d] * o._itemsize
        istrides[d] = x._strides[d] * x._itemsize
    cdef em_reduce_inner_fn inner = em_reduce_inner(r, x._dtype)
    cdef em_reduce_outer_fn outer = em_reduce_outer(r, x._dtype)
    cdef em_reduce_init_fn init = em_reduce_init(r, x._dtype)
    cdef char *op_ = o.ptr()
    cdef char *ip = x.ptr()
    cdef int osize = o._itemsize
    # Partial results of a split reduction are stored in the output dtype and folded
    # by the reduction over that dtype: fine for float32 (its leaves already add in
    # float32), too coarse for float16 sums, which never split.
    cdef em_reduce_inner_fn fold_inner = NULL
    cdef em_reduce_outer_fn fold_outer = NULL
    if not (RED_WIDE[r] and x._dtype == FLOAT16):
        fold_inner = em_reduce_inner(r, o._dtype)
        fold_outer = em_reduce_outer(r, o._dtype)
    if x.numel_c() >= NBIG:
        with nogil:
            em_reduce(inner, outer, init, fold_inner, fold_outer, osize, op_, ostrides, ip,
                      istrides, nd, x._shape)
    else:
        em_reduce(inner, outer, init, fold_inner, fold_outer, osize, op_, ostrides, ip,
                  istrides, nd, x._shape)
    return _reduce_finish(name, x, o, nd, reduced, keepdim)


cdef object _reduce_finish(str name, TensorBase x, TensorBase o, int nd, bint *reduced,
                           bint keepdim):
    """The keepdim=False view of a reduction's output, recorded for autograd."""
    cdef int64_t oshape[MAXD]
    cdef int64_t ostrides[MAXD]
    cdef int d
    cdef TensorBase result = o
    cdef int m = 0
    if not keepdim:
        for d in range(nd):
            if not reduced[d]:
                oshape[m] = o._shape[d]
                ostrides[m] = o._strides[d]
                m += 1
        result = view_of(o, m, oshape, ostrides, 0)
    if needs_record(x, None, None):
        RECORDER(name, (x,), result,
                 {"dim": tuple([d for d in range(nd) if reduced[d]]), "keepdim": keepdim})
    return result


def reduction_names():
    return list(RED_NAMES)


def elementwise_names():
    return list(OP_NAMES)


def tensor_view_dict(TensorBase t not None):
    """The C view of t as a dict (for tests of the C header's contract)."""
    cdef em_tensor_view v = tensor_view(t)
    return {"data": <uintptr_t>v.data, "offset": v.offset, "dtype": v.dtype,
            "itemsize": v.itemsize, "ndim": v.ndim, "device_type": v.device_type,
            "shape": tuple([v.shape[i] for i in range(v.ndim)]),
            "strides": tuple([v.strides[i] for i in range(v.ndim)])}


def _fill_from_bytes(TensorBase t not None, const unsigned char[::1] data):
    """Copy raw bytes into a new contiguous CPU tensor (creation from Python data)."""
    cdef Py_ssize_t n = t.numel_c() * t._itemsize
    if not t.contiguous_c() or t._storage.device.type_id != 0 or data.shape[0] != n:
        raise ValueError(f"_fill_from_bytes: {data.shape[0]} bytes for a tensor of {n} bytes")
    if n:
        memcpy(t.ptr(), &data[0], n)
    return t


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
