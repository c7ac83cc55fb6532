"""dropout and dropout_ (kernels: the `dropout` family, ember._C.dropout on the CPU):
the mask comes from the Philox stream of the generator, so a seed drops the same
elements on every device. dropout_backward is the derivative table's."""
from __future__ import annotations

from ember._C import core as _core
from ember.backends import kernel
from ember.ops._kernel_args import _cast_back, _float_tensor, _number, _work, _work_dtype

__all__ = ['dropout', 'dropout_']


# dropout -------------------------------------------------------------------------------

def _dropout_args(input, p, op):
    _float_tensor(input, op)
    p = _number(p, op, "p")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    return p


def _dropout(input, p, generator, op):
    """(y, mask) from the generator's next input.numel() words (see dropout.c)."""
    from ember.ops.random import _generator
    gen = _generator(generator, input.device, op)
    seed, offset = gen._reserve(input.numel())
    work = _work_dtype(input.dtype)
    with _core._no_record():
        y, mask = kernel("dropout", op, input)(_work(input, work), p, seed, offset)
        return _cast_back(y, input.dtype), mask


def dropout(input, p=0.5, train=True, *, generator=None):
    """Zero each element with probability p and scale the others by 1 / (1 - p)
    (torch.dropout's arguments; nn.functional.dropout's `training` is `train`).
    With train=False or p=0 the input itself is returned. Element i (row-major) is
    dropped when the float32 uniform of the generator's next word i is below p, so
    em.manual_seed(s) gives the same mask on every device. Records "dropout" with
    attrs p and the bool mask (True = kept)."""
    op = "dropout"
    p = _dropout_args(input, p, op)
    if not train or p == 0:
        return input
    y, mask = _dropout(input, p, generator, op)
    return _core.record(op, (input,), y, {"p": p, "mask": mask})


def dropout_(input, p=0.5, train=True, *, generator=None):
    """dropout in place (the same numbers as dropout)."""
    from ember.ops.index import _check_inplace
    op = "dropout_"
    p = _dropout_args(input, p, op)
    _check_inplace(input, op)
    if not train or p == 0:
        return input
    y, mask = _dropout(input, p, generator, op)
    with _core._no_record():
        input.copy_(y)
    return _core.record("dropout", (input,), input, {"p": p, "mask": mask, "inplace": True})


def dropout_backward(grad, mask, p):
    """grad * mask / (1 - p) (0 where p = 1)."""
    op = "dropout_backward"
    work = _work_dtype(grad.dtype)
    scale = 1.0 / (1.0 - p) if p < 1 else 0.0
    with _core._no_record():
        dx = kernel("dropout_backward", op, grad)(_work(grad, work), mask.contiguous(), scale)
        return _cast_back(dx, grad.dtype)


def native_dropout(input, p, train):
    """ATen's native_dropout: (output, mask), mask the bool tensor of kept elements;
    train=None counts as True (as PyTorch); with train=False (or p=0) the output is a
    copy of input and the mask is all True. The output is dropout's (recorded for
    autograd the same way)."""
    op = "native_dropout"
    p = _dropout_args(input, p, op)
    if train is not None and not isinstance(train, bool):
        raise TypeError(f"{op}: train must be a bool or None, got {type(train).__name__}")
    if train is False or p == 0:
        keep = _core.empty(tuple(input.shape), _core._dtype_by_name("bool"),
                           input.device).fill_(True)
        return input.clone(), keep
    y, mask = _dropout(input, p, None, op)
    return _core.record("dropout", (input,), y, {"p": p, "mask": mask}), mask


__all__ += ["native_dropout"]
