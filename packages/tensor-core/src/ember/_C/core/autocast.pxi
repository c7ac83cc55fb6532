"""Autocast's C half (ember.amp has the rest): the per-thread flag that every listed op
checks, one thread-local int load when autocast is off; the wrapper type of the listed
Python entries; and the op-table rows that have a policy, which `ew` hands to ember.amp
when the flag is on."""

cdef extern from "Python.h":
    object PyMethod_New(object func, object self)

cdef extern from *:
    """
    /* On while an autocast region is enabled in this thread and the running op is not
       itself inside an autocast-dispatched op (PyTorch excludes the autocast keys there). */
    static __thread int em_autocast_on = 0;
    """
    int em_autocast_on

cdef object AUTOCAST_CALL = None    # ember.amp: (AutocastOp, args, kwargs) -> result
cdef object AUTOCAST_EW = None      # ember.amp: (row index, x0, x1, x2, nin) -> result
cdef unsigned char *AC_EW = NULL    # per op-table row: nonzero when the row has a policy


def _autocast_install(call, ew_hook, rows):
    """ember.amp installs its hooks and the elementwise rows that have a policy."""
    global AUTOCAST_CALL, AUTOCAST_EW, AC_EW
    cdef int n = len(OP_NAMES)
    if AC_EW == NULL:
        AC_EW = <unsigned char *>calloc(n, 1)
    for i in range(n):
        AC_EW[i] = 0
    for name in rows:
        AC_EW[<int>OP_INDEX[name]] = 1
    AUTOCAST_CALL = call
    AUTOCAST_EW = ew_hook


def _autocast_flag():
    """This thread's autocast flag (0: every listed op runs as written)."""
    return em_autocast_on


def _autocast_set_flag(int on):
    """Set this thread's autocast flag; returns the previous value."""
    global em_autocast_on
    cdef int prev = em_autocast_on
    em_autocast_on = on
    return prev


cdef class AutocastOp:
    """A Python op entry on autocast's lists: calls `fn` straight through when this
    thread's flag is off; otherwise ember.amp casts the arguments by `policy` and runs
    `fn` with the flag off (ops that `fn` calls are not cast again, as in PyTorch).
    Binds as a method like a function, and carries fn's name and docstring."""
    cdef readonly object fn
    cdef readonly object policy
    cdef dict __dict__

    def __init__(self, fn, policy):
        self.fn = fn
        self.policy = policy
        for a in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(self, a, getattr(fn, a))
            except AttributeError:
                pass
        setattr(self, "__wrapped__", fn)

    def __call__(self, *args, **kwargs):
        if not em_autocast_on:
            return self.fn(*args, **kwargs)
        return AUTOCAST_CALL(self, args, kwargs)

    def __get__(self, obj, objtype):
        if obj is None:
            return self
        return PyMethod_New(self, obj)

    def __repr__(self):
        return f"<autocast entry {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def __reduce__(self):
        return getattr(self, "__qualname__", "AutocastOp")


# memory formats (ember._layout_formats installs them): Tensor.is_contiguous's
# contiguous_format and its check for the others
cdef object CONTIGUOUS_FORMAT = None
cdef object IS_IN_FORMAT = None


def _set_memory_formats(contiguous_format, is_in_format):
    global CONTIGUOUS_FORMAT, IS_IN_FORMAT
    CONTIGUOUS_FORMAT = contiguous_format
    IS_IN_FORMAT = is_in_format
