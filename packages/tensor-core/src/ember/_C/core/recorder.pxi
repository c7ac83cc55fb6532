"""Grad mode (per thread, with inference mode) and the autograd recorder hook: whether an
op is recorded, and the call that records it."""

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


@cython.final
cdef class _no_record:
    """Suspend recording around internal steps of an op that records itself (a C
    class: every hand-written op's entry enters one)."""

    cdef int prev

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
