# cython: language_level=3, boundscheck=False, wraparound=False
"""DLPack (https://dmlc.github.io/dlpack/latest/): tensors in and out of capsules.

Export: `to_capsule(t, versioned, copied)` wraps t's memory in a "dltensor" (legacy
DLManagedTensor) or "dltensor_versioned" (DLPack 1.x DLManagedTensorVersioned)
capsule. The managed tensor holds a reference to t's Storage; its deleter drops it.
A capsule that no consumer renamed to "used_..." calls the deleter when collected.

Import: `open_capsule(capsule)` checks a capsule, marks it used and returns its
fields plus an owner object that calls the producer's deleter exactly once, when the
last ember tensor viewing that memory is freed. ember/_interop.py builds the tensor.
"""
from cpython.pycapsule cimport (PyCapsule_New, PyCapsule_IsValid, PyCapsule_GetPointer,
                                PyCapsule_SetName)
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free

from ember._C.core cimport TensorBase, Storage

# dlpack.h, version 1.0 ---------------------------------------------------------------

cdef struct DLDevice:
    int32_t device_type       # DLDeviceType (a C enum: int)
    int32_t device_id

cdef struct DLDataType:
    uint8_t code
    uint8_t bits
    uint16_t lanes

cdef struct DLTensor:
    void *data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t *shape
    int64_t *strides          # in elements; NULL means compact row-major
    uint64_t byte_offset

cdef struct DLManagedTensor:
    DLTensor dl_tensor
    void *manager_ctx
    void (*deleter)(DLManagedTensor *) noexcept nogil

cdef struct DLPackVersion:
    uint32_t major
    uint32_t minor

cdef struct DLManagedTensorVersioned:
    DLPackVersion version
    void *manager_ctx
    void (*deleter)(DLManagedTensorVersioned *) noexcept nogil
    uint64_t flags
    DLTensor dl_tensor

DEF FLAG_READ_ONLY = 1
DEF FLAG_IS_COPIED = 2
DEF DLPACK_MAJOR = 1
DEF DLPACK_MINOR = 0

# DLDeviceType codes
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL = 1, 2, 3, 4
DEVICE_CODES = {"cpu": KDL_CPU, "cuda": KDL_CUDA, "opencl": KDL_OPENCL}

# ember dtype number -> DLDataType (code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2,
# kDLBfloat 4, kDLComplex 5 (bits of the whole (re, im) pair), kDLBool 6
cdef uint8_t DL_CODE[15]
cdef uint8_t DL_BITS[15]
DL_CODE[:] = [6, 1, 0, 0, 0, 0, 2, 2, 2, 5, 5, 4, 1, 1, 1]
DL_BITS[:] = [8, 8, 8, 16, 32, 64, 16, 32, 64, 64, 128, 16, 16, 32, 64]
DTYPE_NAMES = {(6, 8): "bool", (1, 8): "uint8", (0, 8): "int8", (0, 16): "int16",
               (0, 32): "int32", (0, 64): "int64", (2, 16): "float16", (2, 32): "float32",
               (2, 64): "float64", (5, 64): "complex64", (5, 128): "complex128",
               (4, 16): "bfloat16", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64"}
DL_KIND_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat",
                 5: "complex", 6: "bool"}

cdef Py_ssize_t LIVE_EXPORTS = 0     # managed tensors exported and not yet deleted


# export --------------------------------------------------------------------------------

cdef struct ExportCtx:
    DLManagedTensor legacy
    DLManagedTensorVersioned versioned
    PyObject *storage             # a strong reference, dropped by the deleter
    int64_t shape[16]
    int64_t strides[16]


cdef void release(ExportCtx *ctx) noexcept nogil:
    global LIVE_EXPORTS
    with gil:
        Py_XDECREF(ctx.storage)
        LIVE_EXPORTS -= 1
    free(ctx)


cdef void delete_legacy(DLManagedTensor *m) noexcept nogil:
    release(<ExportCtx *>m.manager_ctx)


cdef void delete_versioned(DLManagedTensorVersioned *m) noexcept nogil:
    release(<ExportCtx *>m.manager_ctx)


cdef void unused_legacy_capsule(object capsule) noexcept:
    """A "dltensor" capsule is collected: if no consumer took it, delete it here."""
    cdef PyObject *t
    cdef PyObject *v
    cdef PyObject *tb
    cdef DLManagedTensor *m
    if PyCapsule_IsValid(capsule, b"dltensor"):
        PyErr_Fetch(&t, &v, &tb)
        m = <DLManagedTensor *>PyCapsule_GetPointer(capsule, b"dltensor")
        if m != NULL and m.deleter != NULL:
            m.deleter(m)
        PyErr_Restore(t, v, tb)


cdef void unused_versioned_capsule(object capsule) noexcept:
    cdef PyObject *t
    cdef PyObject *v
    cdef PyObject *tb
    cdef DLManagedTensorVersioned *m
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        PyErr_Fetch(&t, &v, &tb)
        m = <DLManagedTensorVersioned *>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        if m != NULL and m.deleter != NULL:
            m.deleter(m)
        PyErr_Restore(t, v, tb)


def to_capsule(TensorBase t, bint versioned, bint copied=False):
    """A DLPack capsule viewing t's memory (no copy); `copied` sets IS_COPIED."""
    global LIVE_EXPORTS
    cdef Storage storage = t._storage
    code = DEVICE_CODES[storage.device.type]
    cdef ExportCtx *ctx = <ExportCtx *>calloc(1, sizeof(ExportCtx))
    if ctx == NULL:
        raise MemoryError("__dlpack__: out of memory")
    cdef DLTensor *dl = &ctx.versioned.dl_tensor if versioned else &ctx.legacy.dl_tensor
    dl.data = t.ptr()
    dl.device.device_type = code
    dl.device.device_id = max(storage.device.index, 0)
    dl.ndim = t._ndim
    dl.dtype.code = DL_CODE[t._dtype]
    dl.dtype.bits = DL_BITS[t._dtype]
    dl.dtype.lanes = 1
    for i in range(t._ndim):
        ctx.shape[i] = t._shape[i]
        ctx.strides[i] = t._strides[i]
    dl.shape = ctx.shape
    dl.strides = ctx.strides
    dl.byte_offset = 0
    Py_INCREF(storage)
    ctx.storage = <PyObject *>storage
    LIVE_EXPORTS += 1
    if versioned:
        ctx.versioned.version.major = DLPACK_MAJOR
        ctx.versioned.version.minor = DLPACK_MINOR
        ctx.versioned.manager_ctx = ctx
        ctx.versioned.deleter = delete_versioned
        ctx.versioned.flags = FLAG_IS_COPIED if copied else 0
        try:
            return PyCapsule_New(&ctx.versioned, b"dltensor_versioned",
                                 unused_versioned_capsule)
        except BaseException:
            delete_versioned(&ctx.versioned)
            raise
    ctx.legacy.manager_ctx = ctx
    ctx.legacy.deleter = delete_legacy
    try:
        return PyCapsule_New(&ctx.legacy, b"dltensor", unused_legacy_capsule)
    except BaseException:
        delete_legacy(&ctx.legacy)
        raise


def live_exports():
    """How many exported managed tensors have not been deleted yet (for leak tests)."""
    return LIVE_EXPORTS


# import --------------------------------------------------------------------------------

cdef class DLPackOwner:
    """Keeps an imported DLPack tensor alive; calls the producer's deleter once, when
    the last storage referring to it is freed."""
    cdef void *managed
    cdef bint versioned

    def __dealloc__(self):
        cdef void *m = self.managed
        self.managed = NULL
        if m == NULL:
            return
        if self.versioned:
            if (<DLManagedTensorVersioned *>m).deleter != NULL:
                (<DLManagedTensorVersioned *>m).deleter(<DLManagedTensorVersioned *>m)
        elif (<DLManagedTensor *>m).deleter != NULL:
            (<DLManagedTensor *>m).deleter(<DLManagedTensor *>m)


def open_capsule(capsule):
    """Consume a DLPack capsule: a dict of its fields (data pointer including
    byte_offset, device, dtype name, shape, strides in elements, read_only, copied)
    and `owner`, which must be kept alive as long as the memory is used."""
    cdef DLManagedTensorVersioned *mv = NULL
    cdef DLManagedTensor *ml = NULL
    cdef DLTensor *dl
    cdef uint64_t flags = 0
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        mv = <DLManagedTensorVersioned *>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        if mv.version.major != DLPACK_MAJOR:
            raise BufferError(f"from_dlpack: DLPack version {mv.version.major}."
                              f"{mv.version.minor} is not supported (ember reads 1.x)")
        dl = &mv.dl_tensor
        flags = mv.flags
    elif PyCapsule_IsValid(capsule, b"dltensor"):
        ml = <DLManagedTensor *>PyCapsule_GetPointer(capsule, b"dltensor")
        dl = &ml.dl_tensor
    else:
        raise ValueError("from_dlpack: expected an unused DLPack capsule (named 'dltensor' "
                         "or 'dltensor_versioned'); a capsule can be consumed only once")
    key = (dl.dtype.code, dl.dtype.bits)
    if dl.dtype.lanes != 1 or key not in DTYPE_NAMES:
        kind = DL_KIND_NAMES.get(dl.dtype.code, f"code {dl.dtype.code}")
        raise TypeError(f"from_dlpack: DLPack dtype {kind}{dl.dtype.bits}"
                        f"{'x%d' % dl.dtype.lanes if dl.dtype.lanes != 1 else ''} is not "
                        f"supported; ember supports {', '.join(DTYPE_NAMES.values())}")
    if dl.ndim < 0 or dl.ndim > 16:
        raise ValueError(f"from_dlpack: {dl.ndim} dimensions; ember supports at most 16")
    dev = dl.device.device_type
    if dev not in (KDL_CPU, KDL_CUDA_HOST, KDL_CUDA, KDL_OPENCL):
        raise BufferError(f"from_dlpack: DLPack device type {dev} is not supported "
                          f"(ember reads cpu, cuda and opencl memory)")
    shape = tuple([dl.shape[i] for i in range(dl.ndim)])
    strides = None if dl.strides == NULL else tuple([dl.strides[i] for i in range(dl.ndim)])
    fields = {
        "data": <uintptr_t>dl.data + dl.byte_offset,
        "device": "cpu" if dev in (KDL_CPU, KDL_CUDA_HOST) else
                  ("cuda" if dev == KDL_CUDA else "opencl") + f":{dl.device.device_id}",
        "dtype": DTYPE_NAMES[key],
        "shape": shape,
        "strides": strides,
        "read_only": bool(flags & FLAG_READ_ONLY),
        "copied": bool(flags & FLAG_IS_COPIED),
    }
    # consume: from here on the owner is responsible for calling the deleter
    cdef DLPackOwner owner = DLPackOwner.__new__(DLPackOwner)
    if mv != NULL:
        PyCapsule_SetName(capsule, b"used_dltensor_versioned")
        owner.managed = mv
        owner.versioned = True
    else:
        PyCapsule_SetName(capsule, b"used_dltensor")
        owner.managed = ml
    fields["owner"] = owner
    return fields
