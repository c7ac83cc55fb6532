"""Complex numbers beyond the op table: construction (complex, polar), the parts as
views of the same storage (real, imag, view_as_real, view_as_complex), conjugation
and the predicates (is_complex, isreal is in ops/elementwise.py).

complex64 / complex128 are stored interleaved, (re, im) pairs as C99 and NumPy, so
the parts are strided views of float32 / float64 with twice the strides: writing
into ``x.real`` writes into ``x``.

Conjugation is eager: ``conj(x)`` of a complex tensor is a new tensor computed by
the ``conj_physical`` row, never a lazily conjugated view, so ``is_conj()`` is always
False and ``resolve_conj`` / ``resolve_neg`` return their input (the issue allows
this; PyTorch's conj is a view with a conjugate bit instead).

Autograd runs through all of them with PyTorch's convention (the gradient of a complex
tensor is the conjugate Wirtinger derivative): each part view and ``complex`` is
recorded (rows "real", "imag", "view_as_real", "view_as_complex", "complex" of
ember/autograd/formulas.py) and ``polar`` is composed of recorded ops. An in-place op
on a part view of a tensor that requires grad is refused (do it out of place).
"""
from __future__ import annotations

from ember._args import tensor_arg, tensor_input
from ember._C import core as _core
from ember._registry import tensor_method

__all__ = ["complex", "polar", "real", "imag", "view_as_real", "view_as_complex", "conj",
           "resolve_conj", "resolve_neg", "is_conj", "is_neg", "is_complex"]

_record = _core.record
_ew = _core.elementwise


def _part(input, which, op):
    storage, dtype, shape, strides, offset = input._layout()
    return _record(op, (input,), _core.as_strided_from(
        storage, dtype.to_real(), shape, tuple(2 * s for s in strides), 2 * offset + which))


@tensor_input
def real(input):
    """The real part: of a complex tensor a view of its storage (float32 for complex64;
    writable: ``x.real[0] = 1`` writes into x); a real tensor itself (torch.real)."""
    if not input.is_complex():
        return input
    return _part(input, 0, "real")


@tensor_input
def imag(input):
    """The imaginary part of a complex tensor, a writable view of its storage; a
    RuntimeError for real tensors, as torch.imag."""
    if not input.is_complex():
        raise RuntimeError(f"imag: not implemented for tensors with non-complex dtypes "
                           f"(got {input.dtype!r})")
    return _part(input, 1, "imag")


@tensor_method
@tensor_input
def view_as_real(input):
    """A complex tensor's storage as real numbers with a last dim of 2 (re, im): shape
    (*, 2), strides doubled plus a last stride of 1; no copy (torch.view_as_real)."""
    if not input.is_complex():
        raise RuntimeError(f"view_as_real: only supported for complex tensors, got a tensor "
                           f"of dtype {input.dtype!r}")
    storage, dtype, shape, strides, offset = input._layout()
    return _record("view_as_real", (input,), _core.as_strided_from(
        storage, dtype.to_real(), tuple(shape) + (2,), tuple(2 * s for s in strides) + (1,),
        2 * offset))


@tensor_method
@tensor_input
def view_as_complex(input):
    """A float32 / float64 tensor of shape (*, 2) as complex64 / complex128 of shape
    (*): no copy, so the last dim must have stride 1 and the other strides and the
    storage offset must be even (PyTorch's rules and messages)."""
    storage, dtype, shape, strides, offset = input._layout()
    if dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"view_as_complex: only supported for float32 and float64 tensors "
                           f"(ember has no complex32), got a tensor of dtype {dtype!r}")
    if not shape:
        raise RuntimeError("view_as_complex: input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension of size 2, "
                           f"got shape {tuple(shape)}")
    if strides[-1] != 1:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension with stride 1, "
                           f"got strides {tuple(strides)}")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError(f"view_as_complex: Tensor must have a stride divisible by 2 for all "
                           f"but last dimension, got strides {tuple(strides)}")
    if offset % 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a storage_offset divisible by "
                           f"2, got {offset}")
    return _record("view_as_complex", (input,), _core.as_strided_from(
        storage, dtype.to_complex(), tuple(shape[:-1]), tuple(s // 2 for s in strides[:-1]),
        offset // 2))


def complex(real, imag, *, out=None):  # noqa: A001 - torch.complex
    """The complex tensor real + i imag: both float32 (-> complex64) or both float64
    (-> complex128) tensors of one dtype, broadcast together (torch.complex). Written
    through view_as_real of the result, two strided copies."""
    tensor_arg(real, "complex", "real")
    tensor_arg(imag, "complex", "imag")
    if real.dtype.name not in ("float32", "float64") or imag.dtype.name not in ("float32",
                                                                              "float64"):
        raise TypeError(f"complex: expected both inputs to be float32 or float64 tensors, "
                        f"got {real.dtype!r} and {imag.dtype!r}")
    if real.dtype is not imag.dtype:
        raise TypeError(f"complex: real and imag must have one dtype, got {real.dtype!r} "
                        f"and {imag.dtype!r}")
    if real.device != imag.device:
        raise RuntimeError(f"complex: expected both inputs on one device, got {real.device} "
                           f"and {imag.device}")
    from ember._layout import broadcast_shape
    shape = tuple(broadcast_shape((tuple(real.shape), tuple(imag.shape)), "complex"))
    r = _core.empty(shape, real.dtype.to_complex(), real.device)
    with _core._no_record():
        parts = view_as_real(r)
        _core.copy_into(_select_last(parts, 0), real)
        _core.copy_into(_select_last(parts, 1), imag)
    _record("complex", (real, imag), r)
    return r if out is None else _write(r, out, "complex")


def polar(abs, angle, *, out=None):  # noqa: A002 - torch.polar
    """abs * (cos(angle) + i sin(angle)) (torch.polar): float32 or float64 tensors of
    one dtype; composed of the cos / sin / mul rows and complex()."""
    tensor_arg(abs, "polar", "abs")
    tensor_arg(angle, "polar", "angle")
    if abs.dtype is not angle.dtype or abs.dtype.name not in ("float32", "float64"):
        raise TypeError(f"polar: expected abs and angle float32 or float64 tensors of one "
                        f"dtype, got {abs.dtype!r} and {angle.dtype!r}")
    r = complex(_ew("mul", abs, _ew("cos", angle)), _ew("mul", abs, _ew("sin", angle)))
    return r if out is None else _write(r, out, "polar")


def _select_last(t, i):
    storage, dtype, shape, strides, offset = t._layout()
    return _core.as_strided_from(storage, dtype, shape[:-1], strides[:-1], offset + i * strides[-1])


def _write(r, out, op):
    if not isinstance(out, _core.TensorBase):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(r.shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, the result has shape "
                         f"{tuple(r.shape)}")
    _core.copy_(out, r)
    return out


@tensor_method(names=("conj",))
@tensor_input
def conj(input):
    """The complex conjugate: a new tensor for complex inputs (eager, computed by the
    conj_physical row: ember has no lazy conjugate bit, so is_conj() stays False); a
    real tensor itself, as torch.conj."""
    if not input.is_complex():
        return input
    return _ew("conj_physical", input)


@tensor_method(names=("resolve_conj", "resolve_neg"))
@tensor_input
def resolve_conj(input):
    """input itself: ember conjugates eagerly, so there is never a conjugate (or
    negative) bit to resolve."""
    return input


resolve_neg = resolve_conj


@tensor_method
@tensor_input
def is_conj(input):
    """False: ember's conj computes the conjugate (no lazy conjugate bit)."""
    return False


@tensor_method
@tensor_input
def is_neg(input):
    """False: ember has no lazily negated views."""
    return False


def is_complex(input):
    """Whether input's dtype is complex64 or complex128."""
    return tensor_arg(input, "is_complex").is_complex()


def _install_properties(cls):
    """Tensor.real / Tensor.imag: the part views, assignable (x.real = y copies y in)."""
    def set_real(self, value):
        _core.copy_(real(self), value if isinstance(value, _core.TensorBase) else
                    _full_like(self.real, value))

    def set_imag(self, value):
        _core.copy_(imag(self), value if isinstance(value, _core.TensorBase) else
                    _full_like(self.imag, value))

    cls.real = property(real, set_real, doc=real.__doc__)
    cls.imag = property(imag, set_imag, doc=imag.__doc__)


def _full_like(t, value):
    return _core.empty(tuple(t.shape), t.dtype, t.device).fill_(value)
