"""Devices: ember.device (Device), the CPU singleton and the conversions of a device
argument (as_device, resolve_device)."""

cdef dict DEVICE_TYPES = {"cpu": 0, "cuda": 1, "opencl": 2}

cdef class Device:
    """A device: ember.device("cpu"), ember.device("cuda:1"), ember.device("opencl", 0)."""

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            self.type, self.index = (<Device>type).type, (<Device>type).index
            self.type_id = (<Device>type).type_id
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

    def __enter__(self):
        """`with ember.device("opencl"):` makes this the default device of the factory
        functions inside the block (ember.set_default_device's stack)."""
        from ember._default_device import _push
        _push(self)
        return self

    def __exit__(self, *exc):
        from ember._default_device import _pop
        _pop()
        return False


cdef Device CPU = Device("cpu")


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
