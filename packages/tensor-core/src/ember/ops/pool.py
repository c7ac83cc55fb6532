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

from ember import _layout_formats as _fmt
from ember._args import tensor_arg
from ember._C import core as _core
from ember._dtypes import bfloat16, float32, float64, iinfo, int64
from ember.backends import kernel
from ember.ops._kernel_args import _work_dtype
from ember.ops.creation import arange, tensor
from ember.ops.shape import cat

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool3d",
           "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]


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


def _planes(x, shape4, work, like=None):
    """x as the (N, C, H, W) tensor of dtype `work` that the kernels take: contiguous,
    or channels_last as it is (the NHWC kernels read that storage; the result keeps
    it; the CPU's take bfloat16 as it is too). like: take that tensor's layout instead
    (indices beside their gradient)."""
    if tuple(x.shape) != shape4:
        x = x.reshape(shape4)
    if _fmt._channels_last_input(x if like is None else like):
        if not (x.dtype is bfloat16 and work is float32 and x.device.type == "cpu"):
            x = x if x.dtype is work else x.to(work)
        return _fmt.to_format(x, _fmt.channels_last, "pool")
    x = x if x.dtype is work else x.to(work)
    return x.contiguous()


def _finish(y, lead, sd, dtype):
    """A kernel's (N, C, OH, OW) result in the input's layout and dtype."""
    shape = lead + tuple(y.shape)[4 - sd:]
    if len(shape) != 4 or sd != 2:
        y = y.reshape(shape)
    return y.to(dtype) if y.dtype is not dtype else y


def _grad_like(dx, input):
    """The input gradient in a channels_last input's layout (as PyTorch's): a grad_output
    stored both ways, such as (N, C, 1, 1), gives the kernels no layout to follow, and a
    gradient in the other layout would make every later elementwise op transpose."""
    if _fmt._channels_last_input(input) and not _fmt._channels_last_input(dx):
        return _fmt.to_format(dx, _fmt.channels_last, "pool")
    return dx


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
    # the window geometry is for ember.onnx (the backward needs only the indices)
    y = _core.record(op, (input,), y, {"indices": ix, "kernel_size": k, "stride": s,
                                       "padding": p, "dilation": d, "ceil_mode": bool(ceil_mode)})
    return (y, ix) if return_indices else y


@_fmt.keeps_channels_last
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
        i4 = _planes(indices, _as4d(gshape, sd), int64, g4)
        dx = kernel("max_pool2d_backward", op, grad_output)(g4, i4, _as4d(shape, sd))
        return _grad_like(_finish(dx, shape[:-sd], sd, dtype), input)


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


@_fmt.keeps_channels_last
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
        return _grad_like(_finish(dx, shape[:-sd], sd, dtype), input)


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


@_fmt.keeps_channels_last
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


@_fmt.keeps_channels_last
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
        return _grad_like(_finish(dx, shape[:-sd], sd, dtype), input)


def adaptive_avg_pool2d_backward(grad_output, input):
    """Gradient w.r.t. the input (a tensor or its shape) of adaptive_avg_pool2d; the
    output size is grad_output's."""
    return _adaptive_avg_backward("adaptive_avg_pool2d_backward", 2, grad_output, input)


def adaptive_avg_pool1d_backward(grad_output, input):
    """Gradient w.r.t. the input (a tensor or its shape) of adaptive_avg_pool1d."""
    return _adaptive_avg_backward("adaptive_avg_pool1d_backward", 1, grad_output, input)


# 3-d, composed from the 2-d kernels --------------------------------------------------------
#
# A 3-d window is a product of intervals, and max and mean (with a divisor that is the
# product of per-dim counts) are separable over it: the 2-d op pools (H, W) with the depth
# folded into the batch, then a reduction over the depth windows (unfold views, amax /
# sum) finishes. Autograd differentiates the composition through the 2-d backward; the
# indices are recomputed as flat d * H * W + h * W + w, PyTorch's, first maximum in
# (d, h, w) order.

def _input3d(input, op):
    """input as (N, C, D, H, W) and whether it was batched."""
    tensor_arg(input, op)
    shape = tuple(input.shape)
    if len(shape) not in (4, 5):
        raise ValueError(f"{op}: expected a 4-d (unbatched) or 5-d (batched) input, got shape "
                         f"{shape}")
    if 0 in shape[-4:]:
        raise ValueError(f"{op}: expected an input with non-empty channel and spatial dims "
                         f"(only the batch dim may be 0), got shape {shape}")
    return (input if len(shape) == 5 else input.unsqueeze(0)), len(shape) == 5


def _fold_depth(x):
    """(N, C, D, H, W) -> (N * C * D, 1, H, W) planes for a 2-d op."""
    n, c, d, h, w = x.shape
    return x.reshape(n * c * d, 1, h, w)


def _depth_windows(y, k, s, p, d, od, fill):
    """y (N, C, D, OH, OW) padded along the depth with `fill` and cut into the od windows
    of k taps (stride s, dilation d): (N, C, od, OH, OW, k)."""
    n, c, depth, oh, ow = y.shape
    span = d * (k - 1) + 1
    after = max((od - 1) * s + span - depth - p, 0)
    parts = []
    for amount in (p, after):
        if amount:
            parts.append(y.new_full((n, c, amount, oh, ow), fill))
        else:
            parts.append(None)
    if parts[0] is not None or parts[1] is not None:
        y = cat([t for t in (parts[0], y, parts[1]) if t is not None], 2)
    win = y.unfold(2, span, s).narrow(2, 0, od)
    return win[..., ::d] if d > 1 else win


def _finish3d(y, batched):
    return y if batched else y.squeeze(0)


@_fmt.keeps_channels_last
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over kernel_size windows of an (N, C, D, H, W) or (C, D, H, W) input, the
    padding counting as -inf; with return_indices, also the flat d * H * W + h * W + w
    index of each maximum in its volume. Composed from max_pool2d (over H, W with the
    depth folded into the batch) and a max over the depth windows, so it runs on every
    device and autograd differentiates it."""
    op = "max_pool3d"
    x, batched = _input3d(input, op)
    k, s, p, d, out = _geometry(op, tuple(input.shape), 3, kernel_size, stride, padding,
                                dilation, ceil_mode)
    _max_dtype(input, op)
    n, c, depth, h, w = x.shape
    y, ix = max_pool2d(_fold_depth(x), k[1:], s[1:], p[1:], d[1:], ceil_mode, True)
    oh, ow = out[1], out[2]
    y = y.reshape(n, c, depth, oh, ow)
    ix = ix.reshape(n, c, depth, oh, ow)
    fill = float("-inf") if input.dtype.kind == "float" else iinfo(input.dtype).min
    win = _depth_windows(y, k[0], s[0], p[0], d[0], out[0], fill)
    vals, tap = win.max(dim=5)
    if not return_indices:
        return _finish3d(vals, batched)
    with _core._no_record():
        start = arange(out[0], device=x.device).reshape(1, 1, out[0], 1, 1) * s[0] - p[0]
        dsrc = start + tap * d[0]
        hw = ix.gather(2, dsrc.clamp(0, depth - 1))
        flat = dsrc * (h * w) + hw
        flat = flat.masked_fill((dsrc < 0) | (dsrc >= depth) | (hw < 0), -1)
    return _finish3d(vals, batched), _finish3d(flat, batched)


@_fmt.keeps_channels_last
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over kernel_size windows of an (N, C, D, H, W) or (C, D, H, W) input. The
    divisor is the window clipped to the padded input (count_include_pad) or to the
    input, or divisor_override. Composed from avg_pool2d over (H, W) and a sum over the
    depth windows divided by the depth's count, so it runs on every device and autograd
    differentiates it."""
    op = "avg_pool3d"
    x, batched = _input3d(input, op)
    attrs, out = _avg_args(op, tuple(input.shape), 3, kernel_size, stride, padding,
                           ceil_mode, count_include_pad, divisor_override)
    _float_dtype(input, op)
    k, s, p = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    n, c, depth, h, w = x.shape
    # the (H, W) means with the 2-d divisor, or plain sums under a divisor_override
    y = avg_pool2d(_fold_depth(x), k[1:], s[1:], p[1:], ceil_mode, count_include_pad,
                   1 if divisor_override is not None else None)
    y = y.reshape(n, c, depth, out[1], out[2])
    sums = _depth_windows(y, k[0], s[0], p[0], 1, out[0], 0.0).sum(dim=5)
    if divisor_override is not None:
        return _finish3d(sums / divisor_override, batched)
    counts = []
    for o in range(out[0]):
        start = o * s[0] - p[0]
        end = min(start + k[0], depth + p[0])
        if not count_include_pad:
            start, end = max(start, 0), min(end, depth)
        counts.append(float(end - start))
    div = tensor(counts, dtype=sums.dtype, device=x.device).reshape(out[0], 1, 1)
    return _finish3d(sums / div, batched)


@_fmt.keeps_channels_last
def adaptive_avg_pool3d(input, output_size):
    """Mean over the windows [floor(i * D / OD), ceil((i + 1) * D / OD)) (and likewise in
    H and W) of an (N, C, D, H, W) or (C, D, H, W) input; output_size an int or a triple
    whose None entries keep the input's size. Composed from adaptive_avg_pool2d and
    adaptive_avg_pool1d, so it runs on every device and autograd differentiates it."""
    op = "adaptive_avg_pool3d"
    x, batched = _input3d(input, op)
    out = _adaptive_size(op, tuple(input.shape), 3, output_size)
    _float_dtype(input, op)
    n, c, depth, h, w = x.shape
    y = adaptive_avg_pool2d(_fold_depth(x), out[1:]).reshape(n, c, depth, out[1] * out[2])
    y = adaptive_avg_pool1d(y.transpose(2, 3).reshape(n, c * out[1] * out[2], depth), out[0])
    y = y.reshape(n, c, out[1] * out[2], out[0]).transpose(2, 3)
    return _finish3d(y.reshape(n, c, out[0], out[1], out[2]), batched)


@_fmt.keeps_channels_last
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over adaptive_avg_pool3d's windows; with return_indices, also the flat
    d * H * W + h * W + w index of each maximum. Composed from adaptive_max_pool2d and
    adaptive_max_pool1d, so it runs on every device and autograd differentiates it."""
    op = "adaptive_max_pool3d"
    x, batched = _input3d(input, op)
    out = _adaptive_size(op, tuple(input.shape), 3, output_size)
    _max_dtype(input, op)
    n, c, depth, h, w = x.shape
    m = out[1] * out[2]
    y, ix = adaptive_max_pool2d(_fold_depth(x), out[1:], True)
    y = y.reshape(n, c, depth, m).transpose(2, 3).reshape(n, c * m, depth)
    vals, dix = adaptive_max_pool1d(y, out[0], True)
    vals = vals.reshape(n, c, m, out[0]).transpose(2, 3).reshape(n, c, *out)
    if not return_indices:
        return _finish3d(vals, batched)
    with _core._no_record():
        dix = dix.reshape(n, c, m, out[0]).transpose(2, 3)      # (N, C, OD, m)
        hw = ix.reshape(n, c, depth, m).gather(2, dix)
        flat = (dix * (h * w) + hw).reshape(n, c, *out)
    return _finish3d(vals, batched), _finish3d(flat, batched)
