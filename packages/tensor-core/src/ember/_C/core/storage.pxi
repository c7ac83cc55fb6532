"""Storage: one allocation on one device; the CPU allocator and wrapping memory that
others own (pointers, backend handles)."""

cdef class Storage:
    """One allocation on one device, shared by every tensor that views it."""

    def __cinit__(self):
        self.device = CPU     # em.Storage() is an empty CPU storage, not one on no device
        self.inference = em_inference_on != 0   # made under inference_mode: its tensors
        #                                         (and their views) are inference tensors

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
