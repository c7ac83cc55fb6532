"""Pooling (max, average, adaptive) over 1-d and 2-d inputs with PyTorch's semantics,
over the hand-written kernels of kernels/cpu/pool.c.

Every op views its input as (N, C, H, W) planes (an unbatched input gets N = 1, a
1-d input H = 1), validates its arguments here before any kernel runs, and records
itself for autograd with attrs that are exactly the keyword arguments of its
backward function: `<op>_backward(grad_output, input, **attrs)`.

    op                    backward                       attrs
    max_pool2d            max_pool2d_backward            indices
    adaptive_max_pool2d   max_pool2d_backward            indices
    max_pool1d            max_pool1d_backward            indices
    adaptive_max_pool1d   max_pool1d_backward            indices
    avg_pool2d            avg_pool2d_backward            kernel_size, stride, padding,
                                                         ceil_mode, count_include_pad,
                                                         divisor_override
    avg_pool1d            avg_pool1d_backward            the same less divisor_override
    adaptive_avg_pool2d   adaptive_avg_pool2d_backward   (none)
    adaptive_avg_pool1d   adaptive_avg_pool1d_backward   (none)

Max-pool indices are int64, flat h * W + w (or w) within each plane, like PyTorch's.
A window lying wholly in the padding (possible only with dilation) gives -inf and
index -1 (PyTorch gives an index outside the window there); the backward skips -1.
"""
from __future__ import annotations

import operator

from ember._args import tensor_arg
from ember._C import core as _core
from ember._dtypes import float64, int64
from ember.backends import kernel
from ember.ops._kernel_args import _work_dtype

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d"]


# arguments ------------------------------------------------------------------------

def _ints(value, n, name, op, allow_none=False):
    """An int, or a tuple/list of 1 or n ints (None kept where allowed), as n-tuple."""
    if type(value) is int:
        return (value,) * n
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if len(items) == 1:
        items = items * n
    try:
        if len(items) != n or any(isinstance(v, bool) for v in items):
            raise TypeError
        return tuple(v if v is None and allow_none else operator.index(v) for v in items)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got "
                        f"{value!r}") from None


def _input(input, sd, op):
    """The (N, C, H, W) shape the kernels see input as, and input's leading dims."""
    tensor_arg(input, op)
    shape = tuple(input.shape)
    if len(shape) not in (sd + 1, sd + 2):
        raise ValueError(f"{op}: expected a {sd + 1}-d (unbatched) or {sd + 2}-d (batched) "
                         f"input, got shape {shape}")
    if 0 in shape[-sd - 1:]:
        raise ValueError(f"{op}: expected an input with non-empty channel and spatial dims "
                         f"(only the batch dim may be 0), got shape {shape}")
    return _as4d(shape, sd), shape[:-sd]


def _as4d(shape, sd):
    """(N, C, H, W) for an input shape (an unbatched input has N = 1, a 1-d one H = 1)."""
    lead = shape[:-sd]
    return (1,) * (2 - len(lead)) + lead + _hw(shape[-sd:], sd)


def _float_dtype(x, op, what="input"):
    if x.dtype.kind != "float":
        raise TypeError(f"{op}: expected a floating point {what}, got {x.dtype!r}")
    return _work_dtype(x.dtype)


def _max_dtype(x, op):
    """The dtype a max pooling computes in: floats as usual; integers exactly in float64
    (the -inf of the padding is never chosen)."""
    if x.dtype.kind == "float":
        return _work_dtype(x.dtype)
    if x.dtype.kind != "int":
        raise TypeError(f"{op}: expected a float or integer input, got {x.dtype!r}")
    if x.dtype is int64 and x.numel() and (x.min().item() < -2**53 or x.max().item() > 2**53):
        raise ValueError(f"{op}: int64 input with values beyond +-2**53 is not supported "
                         f"(integers are pooled exactly in float64)")
    return float64


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: with ceil_mode the last window must start inside
    the input or the left padding."""
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _geometry(op, shape, sd, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, dilation, output size) as sd-tuples, validated."""
    k = _ints(kernel_size, sd, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _ints(stride, sd, "stride", op)
    p = _ints(padding, sd, "padding", op)
    d = _ints(dilation, sd, "dilation", op)
    if not isinstance(ceil_mode, (bool, int)):
        raise TypeError(f"{op}: ceil_mode must be a bool, got {ceil_mode!r}")
    ceil_mode = bool(ceil_mode)
    for name, v in (("kernel_size", k), ("stride", s), ("dilation", d)):
        if min(v) <= 0:
            raise ValueError(f"{op}: {name} must be positive, got {name}={v}")
    if min(p) < 0:
        raise ValueError(f"{op}: padding must be non-negative, got padding={p}")
    for name, v in (("kernel_size", k), ("stride", s), ("padding", p), ("dilation", d)):
        if max(v) > 2**63 - 1:
            raise OverflowError(f"{op}: {name}={v} does not fit in int64")
    out = []
    for i in range(sd):
        if p[i] > k[i] // 2:
            raise ValueError(f"{op}: pad should be at most half of kernel size, got "
                             f"padding={p} for kernel_size={k}")
        out.append(_out_size(shape[i - sd], k[i], s[i], p[i], d[i], ceil_mode))
    out = tuple(out)
    if min(out) < 1:
        raise ValueError(f"{op}: kernel larger than padded input: input {shape} with "
                         f"kernel_size={k}, stride={s}, padding={p}, dilation={d} gives "
                         f"output size {out}")
    return k, s, p, d, out


def _hw(t, sd, fill=1):
    """An sd-tuple as the kernels' (H, W) pair (1-d: H = 1, padding 0)."""
    return t if sd == 2 else (fill,) + t


def _planes(x, shape4, work):
    """x as the contiguous (N, C, H, W) tensor of dtype `work` that the kernels take."""
    if tuple(x.shape) != shape4:
        x = x.reshape(shape4)
    return (x if x.dtype is work else x.to(work)).contiguous()


def _finish(y, lead, sd, dtype):
    """A kernel's (N, C, OH, OW) result in the input's layout and dtype."""
    shape = lead + tuple(y.shape)[4 - sd:]
    if len(shape) != 4 or sd != 2:
        y = y.reshape(shape)
    return y.to(dtype) if y.dtype is not dtype else y


def _grad_args(op, sd, grad_output, input):
    """(input shape, result dtype, work dtype) for a backward function whose `input` is
    the forward's input or its shape."""
    tensor_arg(grad_output, op, "grad_output")
    if isinstance(input, _core.TensorBase):
        shape = tuple(input.shape)
        dtype = input.dtype if input.dtype.kind == "float" else grad_output.dtype
    elif isinstance(input, (tuple, list)):
        shape, dtype = tuple(input), grad_output.dtype
    else:
        raise TypeError(f"{op}: input must be the forward's input or its shape, got "
                        f"{type(input).__name__}")
    if len(shape) not in (sd + 1, sd + 2) or 0 in shape[-sd - 1:]:
        raise ValueError(f"{op}: expected the shape of a non-empty {sd + 1}-d or {sd + 2}-d "
                         f"input, got {shape}")
    return shape, dtype, _float_dtype(grad_output, op, "grad_output")


# max pooling ----------------------------------------------------------------------

def _max_pool(op, input, sd, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    shape4, lead = _input(input, sd, op)
    k, s, p, d, out = _geometry(op, tuple(input.shape), sd, kernel_size, stride, padding,
                                dilation, ceil_mode)
    work = _max_dtype(input, op)
    with_indices = bool(return_indices) or _core.any_requires_grad((input,))
    with _core._no_record():
        fn = kernel("max_pool2d", op, input)
        y, ix = fn(_planes(input, shape4, work), _hw(k, sd), _hw(s, sd),
                   _hw(p, sd, 0), _hw(d, sd), _hw(out, sd), with_indices)
        y = _finish(y, lead, sd, input.dtype)
        if ix is not None:
            ix = _finish(ix, lead, sd, int64)
    y = _core.record(op, (input,), y, {"indices": ix})
    return (y, ix) if return_indices else y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over kernel_size windows of an (N, C, H, W) or (C, H, W) input, the padding
    counting as -inf; NaN in a window gives NaN. With return_indices, also the flat
    h * W + w index of each maximum in its plane."""
    return _max_pool("max_pool2d", input, 2, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """max_pool2d over the last dim of an (N, C, L) or (C, L) input."""
    return _max_pool("max_pool1d", input, 1, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _max_backward(op, sd, grad_output, input, indices):
    shape, dtype, work = _grad_args(op, sd, grad_output, input)
    if not isinstance(indices, _core.TensorBase):
        raise TypeError(f"{op}: indices must be a tensor, got {type(indices).__name__}")
    gshape = tuple(grad_output.shape)
    if tuple(indices.shape) != gshape or gshape[:-sd] != shape[:-sd]:
        raise ValueError(f"{op}: grad_output {gshape} and indices {tuple(indices.shape)} do "
                         f"not match an input of shape {shape}")
    if indices.dtype is not int64:
        raise TypeError(f"{op}: indices must be int64, got {indices.dtype!r}")
    with _core._no_record():
        g4 = _planes(grad_output, _as4d(gshape, sd), work)
        i4 = _planes(indices, _as4d(gshape, sd), int64)
        dx = kernel("max_pool2d_backward", op, grad_output)(g4, i4, _as4d(shape, sd))
        return _finish(dx, shape[:-sd], sd, dtype)


def max_pool2d_backward(grad_output, input, indices):
    """Gradient w.r.t. the input (a tensor or its shape) of max_pool2d and
    adaptive_max_pool2d: grad_output added at the indices the forward returned."""
    return _max_backward("max_pool2d_backward", 2, grad_output, input, indices)


def max_pool1d_backward(grad_output, input, indices):
    """max_pool2d_backward for max_pool1d and adaptive_max_pool1d."""
    return _max_backward("max_pool1d_backward", 1, grad_output, input, indices)


# average pooling ------------------------------------------------------------------

def _avg_args(op, shape, sd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    k, s, p, _, out = _geometry(op, shape, sd, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int):
            raise TypeError(f"{op}: divisor_override must be an int, got {divisor_override!r}")
        if divisor_override == 0:
            raise ValueError(f"{op}: divisor_override must be nonzero")
        if not -2**63 <= divisor_override < 2**63:
            raise OverflowError(f"{op}: divisor_override={divisor_override} does not fit in "
                                f"int64")
    attrs = {"kernel_size": k, "stride": s, "padding": p, "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad)}
    if sd == 2:
        attrs["divisor_override"] = divisor_override
    return attrs, out


def _avg_pool(op, input, sd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    shape4, lead = _input(input, sd, op)
    attrs, out = _avg_args(op, tuple(input.shape), sd, kernel_size, stride, padding,
                           ceil_mode, count_include_pad, divisor_override)
    work = _float_dtype(input, op)
    with _core._no_record():
        y = kernel("avg_pool2d", op, input)(
            _planes(input, shape4, work), _hw(attrs["kernel_size"], sd),
            _hw(attrs["stride"], sd), _hw(attrs["padding"], sd, 0), _hw(out, sd),
            attrs["count_include_pad"], divisor_override or 0)
        y = _finish(y, lead, sd, input.dtype)
    return _core.record(op, (input,), y, attrs)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over kernel_size windows of an (N, C, H, W) or (C, H, W) input. The divisor
    is the window clipped to the padded input (count_include_pad) or to the input, or
    divisor_override."""
    return _avg_pool("avg_pool2d", input, 2, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """avg_pool2d over the last dim of an (N, C, L) or (C, L) input."""
    return _avg_pool("avg_pool1d", input, 1, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def _check_grad_shape(op, grad_output, shape, sd, out):
    want = shape[:-sd] + tuple(out)
    if tuple(grad_output.shape) != want:
        raise ValueError(f"{op}: grad_output has shape {tuple(grad_output.shape)}, the "
                         f"forward's output for input {shape} has shape {want}")


def _avg_backward(op, sd, grad_output, input, kernel_size, stride, padding, ceil_mode,
                  count_include_pad, divisor_override):
    shape, dtype, work = _grad_args(op, sd, grad_output, input)
    attrs, out = _avg_args(op, shape, sd, kernel_size, stride, padding, ceil_mode,
                           count_include_pad, divisor_override)
    _check_grad_shape(op, grad_output, shape, sd, out)
    with _core._no_record():
        g4 = _planes(grad_output, _as4d(tuple(grad_output.shape), sd), work)
        dx = kernel("avg_pool2d_backward", op, grad_output)(
            g4, _as4d(shape, sd), _hw(attrs["kernel_size"], sd),
            _hw(attrs["stride"], sd), _hw(attrs["padding"], sd, 0),
            attrs["count_include_pad"], divisor_override or 0)
        return _finish(dx, shape[:-sd], sd, dtype)


def avg_pool2d_backward(grad_output, input, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient w.r.t. the input (a tensor or its shape) of avg_pool2d."""
    return _avg_backward("avg_pool2d_backward", 2, grad_output, input, kernel_size, stride,
                         padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d_backward(grad_output, input, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True):
    """Gradient w.r.t. the input (a tensor or its shape) of avg_pool1d."""
    return _avg_backward("avg_pool1d_backward", 1, grad_output, input, kernel_size, stride,
                         padding, ceil_mode, count_include_pad, None)


# adaptive pooling -----------------------------------------------------------------

def _adaptive_size(op, shape, sd, output_size):
    out = _ints(output_size, sd, "output_size", op, allow_none=True)
    out = tuple(n if o is None else o for o, n in zip(out, shape[-sd:]))
    if min(out) <= 0:
        raise ValueError(f"{op}: output_size must be positive, got {output_size!r} for input "
                         f"{shape}")
    if max(out) > 2**63 - 1:
        raise OverflowError(f"{op}: output_size={out} does not fit in int64")
    return out


def _adaptive(op, name, input, sd, output_size, float_only):
    shape4, lead = _input(input, sd, op)
    out = _adaptive_size(op, tuple(input.shape), sd, output_size)
    work = _float_dtype(input, op) if float_only else _max_dtype(input, op)
    with _core._no_record():
        r = kernel(name, op, input)(_planes(input, shape4, work), _hw(out, sd))
        if float_only:
            return _finish(r, lead, sd, input.dtype)
        y = _finish(r[0], lead, sd, input.dtype)
        return y, _finish(r[1], lead, sd, int64)


def adaptive_avg_pool2d(input, output_size):
    """Mean over the windows [floor(i * H / OH), ceil((i + 1) * H / OH)) (and likewise in
    W) that split an (N, C, H, W) or (C, H, W) input into output_size (an int, or a
    pair whose None entries keep the input's size)."""
    y = _adaptive("adaptive_avg_pool2d", "adaptive_avg_pool2d", input, 2, output_size, True)
    return _core.record("adaptive_avg_pool2d", (input,), y, {})


def adaptive_avg_pool1d(input, output_size):
    """adaptive_avg_pool2d over the last dim of an (N, C, L) or (C, L) input."""
    y = _adaptive("adaptive_avg_pool1d", "adaptive_avg_pool2d", input, 1, output_size, True)
    return _core.record("adaptive_avg_pool1d", (input,), y, {})


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive_avg_pool2d's windows (NaN wins); with return_indices, also the
    flat h * W + w index of each maximum."""
    y, ix = _adaptive("adaptive_max_pool2d", "adaptive_max_pool2d", input, 2, output_size,
                      False)
    y = _core.record("adaptive_max_pool2d", (input,), y, {"indices": ix})
    return (y, ix) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """adaptive_max_pool2d over the last dim of an (N, C, L) or (C, L) input."""
    y, ix = _adaptive("adaptive_max_pool1d", "adaptive_max_pool2d", input, 1, output_size,
                      False)
    y = _core.record("adaptive_max_pool1d", (input,), y, {"indices": ix})
    return (y, ix) if return_indices else y


def _adaptive_avg_backward(op, sd, grad_output, input):
    shape, dtype, work = _grad_args(op, sd, grad_output, input)
    gshape = tuple(grad_output.shape)
    if len(gshape) != len(shape) or gshape[:-sd] != shape[:-sd] or 0 in gshape[-sd:]:
        raise ValueError(f"{op}: grad_output {gshape} does not match an input of shape "
                         f"{shape}")
    with _core._no_record():
        g4 = _planes(grad_output, _as4d(gshape, sd), work)
        dx = kernel("adaptive_avg_pool2d_backward", op, grad_output)(g4, _as4d(shape, sd))
        return _finish(dx, shape[:-sd], sd, dtype)


def adaptive_avg_pool2d_backward(grad_output, input):
    """Gradient w.r.t. the input (a tensor or its shape) of adaptive_avg_pool2d; the
    output size is grad_output's."""
    return _adaptive_avg_backward("adaptive_avg_pool2d_backward", 2, grad_output, input)


def adaptive_avg_pool1d_backward(grad_output, input):
    """Gradient w.r.t. the input (a tensor or its shape) of adaptive_avg_pool1d."""
    return _adaptive_avg_backward("adaptive_avg_pool1d_backward", 1, grad_output, input)
