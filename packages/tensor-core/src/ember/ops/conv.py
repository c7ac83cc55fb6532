"""Convolutions with PyTorch's semantics (conv1d, conv2d, conv_transpose1d,
conv_transpose2d) over the CPU kernels of kernels/cpu/conv.c, and their backward
functions for the derivative table.

Everything runs on the 2-d kernels: a 1-d convolution is the 2-d one over views
with a height of 1, so it records "conv2d" (between "view" records) and needs no
derivative of its own; conv1d_backward and conv_transpose1d_backward are thin
wrappers for callers that hold 1-d tensors. "conv2d" and "conv_transpose2d" record
(input, weight, bias) with bias possibly None, and attrs that are the keyword
arguments of conv2d_backward / conv_transpose2d_backward (less output_mask).
"""
from __future__ import annotations

from ember import _layout_formats as _fmt
from ember._args import tensor_arg
from ember._C import core as _core
from ember._dtypes import bfloat16 as _bfloat16
from ember.backends import run as _run
from ember.ops._kernel_args import _cast_back, _work, _work_dtype
from ember.ops.creation import arange
from ember.ops.shape import cat

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]

_AXES = ("height", "width")
_INT64_MAX = 2**63 - 1


# arguments ---------------------------------------------------------------------------

def _ints(value, nd, name, op, minimum):
    """An int or a sequence of nd ints, each >= minimum, as a tuple of nd ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        t = (value,) * nd
    elif isinstance(value, (tuple, list)) and len(value) == nd and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        t = tuple(value)
    else:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {nd} ints, got {value!r}")
    if any(v < minimum for v in t):
        what = "positive" if minimum > 0 else "non-negative"
        raise ValueError(f"{op}: {name} must be {what}, got {value!r}")
    if any(v > _INT64_MAX for v in t):
        raise OverflowError(f"{op}: {name} {value!r} does not fit in int64")
    return t


def _fits(op, what, sizes, args):
    """sizes (ints the kernels compute with) as a tuple, OverflowError when any exceeds
    int64, naming the arguments that made it."""
    if any(v > _INT64_MAX for v in sizes):
        raise OverflowError(f"{op}: the {what} {tuple(sizes)} overflows int64 ({args})")
    return tuple(sizes)


def _kstride(stride, conv_out):
    """The stride the kernels get: 1 along a dim whose (non-transposed) convolution has
    one output, where the stride is never applied (a stride beyond the input is legal
    and gives that one output; the kernels' buffers and index arithmetic need not see
    it)."""
    return tuple(1 if o == 1 else s for s, o in zip(stride, conv_out))


def _tensors(op, nd, input, weight, bias):
    """Check types, dtypes, devices and ranks; returns the float dtype the result has."""
    tensor_arg(input, op)
    tensor_arg(weight, op, "weight")
    if bias is not None:
        tensor_arg(bias, op, "bias")
    if input.dtype.kind != "float":
        raise TypeError(f"{op}: expected a floating point input, got {input.dtype!r}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype is not input.dtype:
            raise TypeError(f"{op}: the input is {input.dtype!r} but the {name} is {t.dtype!r}; "
                            f"convert them to one dtype")
        if t is not None and t.device != input.device:
            raise RuntimeError(f"{op}: expected all tensors on one device, got the input on "
                               f"{input.device} and the {name} on {t.device}")
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: expected a {nd + 2}-d (batched) or {nd + 1}-d (unbatched) "
                         f"input, got shape {tuple(input.shape)}")
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: expected a {nd + 2}-d weight, got shape {tuple(weight.shape)}")
    if any(s < 1 for s in weight.shape):
        raise ValueError(f"{op}: the weight must have no zero-size dim, got shape "
                         f"{tuple(weight.shape)}")
    return input.dtype


def _groups(groups, op):
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    if groups < 1:
        raise ValueError(f"{op}: groups must be positive, got {groups}")
    return groups


def _bias_shape(op, bias, channels, weight):
    if bias is not None and tuple(bias.shape) != (channels,):
        raise ValueError(f"{op}: expected a bias of shape ({channels},) for the weight "
                         f"{tuple(weight.shape)}, got {tuple(bias.shape)}")


def _conv_args(op, nd, input, weight, bias, stride, padding, dilation, groups):
    """Validate a convolution's arguments (input batched or not, nd spatial dims).
    Returns (stride, pads, dilation, groups, out_size, padding attr) with pads a tuple
    of (before, after) per spatial dim."""
    _tensors(op, nd, input, weight, bias)
    stride = _ints(stride, nd, "stride", op, 1)
    dilation = _ints(dilation, nd, "dilation", op, 1)
    groups = _groups(groups, op)
    ksize = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
            # the extra pad of an even total goes after (bottom/right), as in PyTorch
            pads = tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for d, k in zip(dilation, ksize))
        else:
            raise ValueError(f"{op}: padding must be an int, a tuple of ints, 'valid' or "
                             f"'same', got {padding!r}")
    else:
        pads = tuple((p, p) for p in _ints(padding, nd, "padding", op, 0))
    shape = tuple(input.shape) if input.ndim == nd + 2 else (1,) + tuple(input.shape)
    channels, oc = shape[1], weight.shape[0]
    if channels % groups:
        raise ValueError(f"{op}: groups={groups} does not divide the input's {channels} "
                         f"channels (input {tuple(input.shape)})")
    if oc % groups:
        raise ValueError(f"{op}: groups={groups} does not divide the weight's {oc} output "
                         f"channels (weight {tuple(weight.shape)})")
    if weight.shape[1] * groups != channels:
        raise ValueError(f"{op}: the weight {tuple(weight.shape)} with groups={groups} expects "
                         f"{weight.shape[1] * groups} input channels, but the input "
                         f"{tuple(input.shape)} has {channels}")
    _bias_shape(op, bias, oc, weight)
    args = f"input {tuple(input.shape)}, weight {tuple(weight.shape)}, padding {padding!r}, " \
           f"dilation {dilation}"
    out = []
    for i in range(nd):
        padded, span = _fits(op, "padded input size and kernel span",
                             (shape[2 + i] + sum(pads[i]), dilation[i] * (ksize[i] - 1) + 1),
                             args)
        if span > padded:
            axis = (_AXES if nd == 2 else ("depth",) + _AXES)[i] if nd > 1 else "length"
            raise ValueError(f"{op}: the kernel {ksize} with dilation {dilation} spans {span} "
                             f"along the {axis}, more than the padded input's {padded} "
                             f"(input {tuple(input.shape)}, padding {padding!r})")
        out.append((padded - span) // stride[i] + 1)
    sym = all(a == b for a, b in pads)
    attr = tuple(a for a, _ in pads) if sym else "same"
    return stride, pads, dilation, groups, tuple(out), attr


def _transpose_args(op, nd, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    """Validate a transposed convolution's arguments. Returns (stride, padding,
    output_padding, dilation, groups, out_size)."""
    _tensors(op, nd, input, weight, bias)
    stride = _ints(stride, nd, "stride", op, 1)
    dilation = _ints(dilation, nd, "dilation", op, 1)
    groups = _groups(groups, op)
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a tuple of ints, got {padding!r}")
    padding = _ints(padding, nd, "padding", op, 0)
    output_padding = _ints(output_padding, nd, "output_padding", op, 0)
    if any(o >= max(s, d) for o, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(f"{op}: output_padding {output_padding} must be smaller than the "
                         f"stride {stride} or the dilation {dilation}")
    shape = tuple(input.shape) if input.ndim == nd + 2 else (1,) + tuple(input.shape)
    channels = shape[1]
    if channels % groups:
        raise ValueError(f"{op}: groups={groups} does not divide the input's {channels} "
                         f"channels (input {tuple(input.shape)})")
    if weight.shape[0] != channels:
        raise ValueError(f"{op}: the weight {tuple(weight.shape)} expects {weight.shape[0]} "
                         f"input channels, but the input {tuple(input.shape)} has {channels}")
    _bias_shape(op, bias, weight.shape[1] * groups, weight)
    ksize = tuple(weight.shape[2:])
    out = tuple((shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ksize[i] - 1)
                + output_padding[i] + 1 for i in range(nd))
    _fits(op, "output size", out, f"input {tuple(input.shape)}, weight {tuple(weight.shape)}, "
          f"stride {stride}, padding {padding}, dilation {dilation}")
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: the output size {out} would be less than 1 (input "
                         f"{tuple(input.shape)}, weight {tuple(weight.shape)}, stride {stride}, "
                         f"padding {padding}, dilation {dilation})")
    return stride, padding, output_padding, dilation, groups, out


# kernels ----------------------------------------------------------------------------

def _kernel_dtype(dtype, ts):
    """The kernels' dtype: float16 runs in float32, bfloat16 too but on the CPU, whose
    kernels take it as it is (float32 accumulation inside, no float32 copies)."""
    cpu = all(t is None or t.device.type == "cpu" for t in ts)
    return dtype if dtype is _bfloat16 and cpu else _work_dtype(dtype)


def _operands(dtype, *ts):
    """The tensors in the kernels' dtype, contiguous."""
    work = _kernel_dtype(dtype, ts)
    return [_work(t, work) for t in ts]


def _cl_operands(dtype, *ts):
    """The 4-d tensors in the kernels' dtype, stored channels_last: the NHWC kernels
    read that storage as it is (a channels_last activation and weight are not copied;
    an operand in the other layout, such as a contiguous grad_output, is)."""
    work = _kernel_dtype(dtype, ts)
    return [_fmt.to_format(t if t.dtype is work else t.to(work), _fmt.channels_last, "conv2d")
            for t in ts]


def _layout_operands(cl, dtype, *ts):
    return (_cl_operands if cl else _operands)(dtype, *ts)


def _is_cl(x4, nd):
    """Whether a convolution runs on the NHWC kernels: a channels_last 2-d input."""
    return nd == 2 and _fmt._channels_last_input(x4)


def _bias_grad(gy):
    """grad_output summed over all but the channels; a channels_last one as the rows
    of its (N * H * W, C) storage (a reduction over dims 0, 2, 3 of its strides would
    walk it channel by channel)."""
    if _fmt._channels_last_input(gy):
        return gy.permute(0, 2, 3, 1).reshape(-1, gy.shape[1]).sum(0)
    if gy.dtype.itemsize < 4:
        return gy.sum(dim=(0, 2, 3))    # float16/bfloat16: rounded once, not per image
    # each plane's contiguous sum, then over the batch: 3x faster than one reduction
    # over dims (0, 2, 3) (the small CNN's (32, 16, 28, 28): 0.033 ms, not 0.097)
    return gy.sum(dim=(2, 3)).sum(0)


def _weight_grad_format(gw, weight):
    """The weight gradient in the weight's own layout (as PyTorch's)."""
    return gw if _fmt._channels_last_input(weight) else gw.contiguous()


def _as_2d(x, nd, batched):
    """An input of nd spatial dims (batched or not) as a 4-d view, recorded."""
    if not batched:
        x = x.unsqueeze(0)
    return x.unsqueeze(2) if nd == 1 else x


def _from_2d(y, nd, batched):
    if nd == 1:
        y = y.squeeze(2)
    return y if batched else y.squeeze(0)


def _pair2(t, nd, fill):
    return (fill,) + tuple(t) if nd == 1 else tuple(t)


# forward ------------------------------------------------------------------------------

def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    stride, pads, dilation, groups, out, attr = _conv_args(
        op, nd, input, weight, bias, stride, padding, dilation, groups)
    batched = input.ndim == nd + 2
    x4 = _as_2d(input, nd, batched)
    w4 = weight.unsqueeze(2) if nd == 1 else weight
    stride2, dil2 = _pair2(stride, nd, 1), _pair2(dilation, nd, 1)
    pads2 = ((0, 0),) + pads if nd == 1 else pads
    attr2 = attr if isinstance(attr, str) else _pair2(attr, nd, 0)
    dtype = input.dtype
    cl = _is_cl(x4, nd)
    with _core._no_record():
        x, w = _layout_operands(cl, dtype, x4, w4)
        b = _work(bias, _kernel_dtype(dtype, (x4,)))
        out2 = _pair2(out, nd, 1)
        y = _run("conv2d_forward", op, x, w, b, out2, _kstride(stride2, out2),
                    (pads2[0][0], pads2[1][0]), dil2, groups)
        y = _cast_back(y, dtype)
    y = _core.record("conv2d", (x4, w4, bias), y,
                     {"stride": stride2, "padding": attr2, "dilation": dil2, "groups": groups})
    return _from_2d(y, nd, batched)


def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    stride, padding, output_padding, dilation, groups, out = _transpose_args(
        op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation)
    batched = input.ndim == nd + 2
    x4 = _as_2d(input, nd, batched)
    w4 = weight.unsqueeze(2) if nd == 1 else weight
    stride2, pad2 = _pair2(stride, nd, 1), _pair2(padding, nd, 0)
    opad2, dil2 = _pair2(output_padding, nd, 0), _pair2(dilation, nd, 1)
    dtype = input.dtype
    cl = _is_cl(x4, nd)
    with _core._no_record():
        x, w = _layout_operands(cl, dtype, x4, w4)
        b = _work(bias, _kernel_dtype(dtype, (x4,)))
        y = _run("conv2d_backward_input", op, x, w, b, _pair2(out, nd, 1),
                    _kstride(stride2, x.shape[2:]), pad2, dil2, groups)
        y = _cast_back(y, dtype)
    y = _core.record("conv_transpose2d", (x4, w4, bias), y,
                     {"stride": stride2, "padding": pad2, "output_padding": opad2,
                      "groups": groups, "dilation": dil2})
    return _from_2d(y, nd, batched)


@_fmt.keeps_channels_last
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation, as in PyTorch) of input (N, C, H, W) or
    (C, H, W) with weight (OC, C / groups, kH, kW), plus bias (OC,). padding: an int,
    a pair, 'valid' (none) or 'same' (output size = input size; stride 1 only)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of input (N, C, L) or (C, L) with weight (OC, C / groups, k)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@_fmt.keeps_channels_last
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed 2-d convolution (the gradient of conv2d w.r.t. its input) of input
    (N, C, H, W) or (C, H, W) with weight (C, OC / groups, kH, kW), plus bias (OC,).
    output_padding adds rows/columns at the bottom/right of the output."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed 1-d convolution of input (N, C, L) or (C, L) with weight
    (C, OC / groups, k)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# backward -----------------------------------------------------------------------------

def _grad_out(op, grad_output, expected, dtype):
    tensor_arg(grad_output, op, "grad_output")
    if tuple(grad_output.shape) != tuple(expected):
        raise ValueError(f"{op}: grad_output has shape {tuple(grad_output.shape)}, but the "
                         f"output has shape {tuple(expected)}")
    if grad_output.dtype is not dtype:
        raise TypeError(f"{op}: grad_output is {grad_output.dtype!r} but the input is "
                        f"{dtype!r}")


def _conv_backward(op, nd, grad_output, input, weight, stride, padding, dilation, groups,
                   output_mask):
    stride, pads, dilation, groups, out, _ = _conv_args(
        op, nd, input, weight, None, stride, padding, dilation, groups)
    batched = input.ndim == nd + 2
    oc = weight.shape[0]
    _grad_out(op, grad_output, ((input.shape[0],) if batched else ()) + (oc,) + out,
              input.dtype)
    stride2, dil2 = _pair2(stride, nd, 1), _pair2(dilation, nd, 1)
    pads2 = ((0, 0),) + pads if nd == 1 else pads
    tl = (pads2[0][0], pads2[1][0])
    dtype = input.dtype
    x4 = _as_2d(input, nd, batched)
    with _core._no_record():
        gy, x, w = _layout_operands(_is_cl(x4, nd), dtype, _as_2d(grad_output, nd, batched), x4,
                                    weight.unsqueeze(2) if nd == 1 else weight)
        stride2 = _kstride(stride2, gy.shape[2:])
        gx = gw = gb = None
        if output_mask[0]:
            gx = _run("conv2d_backward_input", op, gy, w, None,
                         tuple(x.shape[2:]), stride2, tl, dil2, groups)
            gx = _cast_back(_from_2d(gx, nd, batched), dtype)
        if output_mask[1]:
            gw = _run("conv2d_backward_weight", op, x, gy, tuple(w.shape[2:]),
                         stride2, tl, dil2, groups)
            gw = _cast_back(gw.squeeze(2) if nd == 1 else _weight_grad_format(gw, weight),
                            dtype)
        if output_mask[2]:
            gb = _cast_back(_bias_grad(gy), dtype)
    return gx, gw, gb


def _conv_transpose_backward(op, nd, grad_output, input, weight, stride, padding,
                             output_padding, groups, dilation, output_mask):
    stride, padding, output_padding, dilation, groups, out = _transpose_args(
        op, nd, input, weight, None, stride, padding, output_padding, groups, dilation)
    batched = input.ndim == nd + 2
    oc = weight.shape[1] * groups
    _grad_out(op, grad_output, ((input.shape[0],) if batched else ()) + (oc,) + out,
              input.dtype)
    stride2, pad2 = _pair2(stride, nd, 1), _pair2(padding, nd, 0)
    dil2 = _pair2(dilation, nd, 1)
    dtype = input.dtype
    x4 = _as_2d(input, nd, batched)
    with _core._no_record():
        gy, x, w = _layout_operands(_is_cl(x4, nd), dtype, _as_2d(grad_output, nd, batched), x4,
                                    weight.unsqueeze(2) if nd == 1 else weight)
        stride2 = _kstride(stride2, x.shape[2:])
        gx = gw = gb = None
        if output_mask[0]:
            # the transpose's input gradient is the ordinary convolution of grad_output
            gx = _run("conv2d_forward", op, gy, w, None, tuple(x.shape[2:]),
                         stride2, pad2, dil2, groups)
            gx = _cast_back(_from_2d(gx, nd, batched), dtype)
        if output_mask[1]:
            # roles swapped: grad_output is the convolution's input, input its output
            gw = _run("conv2d_backward_weight", op, gy, x, tuple(w.shape[2:]),
                         stride2, pad2, dil2, groups)
            gw = _cast_back(gw.squeeze(2) if nd == 1 else _weight_grad_format(gw, weight),
                            dtype)
        if output_mask[2]:
            gb = _cast_back(_bias_grad(gy), dtype)
    return gx, gw, gb


def conv2d_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                    output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of conv2d; an entry is None where
    output_mask is False. Records nothing."""
    return _conv_backward("conv2d_backward", 2, grad_output, input, weight, stride, padding,
                          dilation, groups, output_mask)


def conv1d_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                    output_mask=(True, True, True)):
    """conv2d_backward for conv1d's 1-d tensors (conv1d itself records conv2d)."""
    return _conv_backward("conv1d_backward", 1, grad_output, input, weight, stride, padding,
                          dilation, groups, output_mask)


def conv_transpose2d_backward(grad_output, input, weight, stride=1, padding=0,
                              output_padding=0, groups=1, dilation=1,
                              output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of conv_transpose2d. Records nothing."""
    return _conv_transpose_backward("conv_transpose2d_backward", 2, grad_output, input, weight,
                                    stride, padding, output_padding, groups, dilation,
                                    output_mask)


def conv_transpose1d_backward(grad_output, input, weight, stride=1, padding=0,
                              output_padding=0, groups=1, dilation=1,
                              output_mask=(True, True, True)):
    """conv_transpose2d_backward for conv_transpose1d's 1-d tensors."""
    return _conv_transpose_backward("conv_transpose1d_backward", 1, grad_output, input, weight,
                                    stride, padding, output_padding, groups, dilation,
                                    output_mask)


# 3-d, composed from the 2-d kernels ---------------------------------------------------------

def _depth_pad(x, before, after):
    """x (N, C, D, H, W) with `before` and `after` zero planes around the depth."""
    if not before and not after:
        return x
    parts = []
    for amount in (before, after):
        shape = list(x.shape)
        shape[2] = amount
        parts.append(x.new_zeros(tuple(shape)))
    return cat([parts[0], x, parts[1]], 2)


@_fmt.keeps_channels_last
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution (cross-correlation) of input (N, C, D, H, W) or (C, D, H, W) with
    weight (OC, C / groups, kD, kH, kW), plus bias (OC,); stride, padding (ints, a triple,
    'valid' or 'same'), dilation and groups as conv2d.

    Composed from conv2d: the kD depth taps of every output depth are unfolded into the
    channels (input (N * OD, groups * kD * C / groups, H, W), weight (OC, kD * C / groups,
    kH, kW)), so one 2-d convolution (the fast kernel of every device) does the work and
    autograd differentiates it through conv2d's backward and the views."""
    op = "conv3d"
    stride, pads, dilation, groups, out, _ = _conv_args(
        op, 3, input, weight, bias, stride, padding, dilation, groups)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    n = x.shape[0]
    oc, cg, kd = weight.shape[0], weight.shape[1], weight.shape[2]
    od, (sd, sh, sw), (dd, dh, dw) = out[0], stride, dilation
    x = _depth_pad(x, *pads[0])
    span = dd * (kd - 1) + 1
    h, w = x.shape[3], x.shape[4]
    # (N, C, OD, H, W, span) windows over the depth, their taps, then
    # (N, OD, groups, kD, C/groups, H, W) -> the 2-d input
    taps = x.unfold(2, span, sd)
    if dd > 1:
        taps = taps[..., ::dd]
    taps = taps.reshape(n, groups, cg, od, h, w, kd).permute(0, 3, 1, 6, 2, 4, 5)
    x2 = taps.reshape(n * od, groups * kd * cg, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(oc, kd * cg, weight.shape[3], weight.shape[4])
    hw_pad = "same" if padding == "same" else (pads[1][0], pads[2][0])
    y = conv2d(x2, w2, None, (sh, sw), hw_pad, (dh, dw), groups)
    y = y.reshape(n, od, oc, out[1], out[2]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        y = y + bias.reshape(oc, 1, 1, 1)
    else:
        y = y.contiguous()
    return y if batched else y.squeeze(0)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed 3-d convolution (the gradient of conv3d w.r.t. its input) of input
    (N, C, D, H, W) or (C, D, H, W) with weight (C, OC / groups, kD, kH, kW), plus bias
    (OC,); output_padding adds planes at the far end of each output dim.

    Composed from conv_transpose2d: the depth is folded into the batch and the kD depth
    taps into the output channels (one 2-d transposed convolution), then each tap's
    planes are added at depth a * dilation + stride * d (index_add) and the padding
    cropped; autograd differentiates it through conv_transpose2d's backward."""
    op = "conv_transpose3d"
    stride, padding, output_padding, dilation, groups, out = _transpose_args(
        op, 3, input, weight, bias, stride, padding, output_padding, groups, dilation)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    n, c, d, h, w = x.shape
    ocg, kd = weight.shape[1], weight.shape[2]
    oc = ocg * groups
    (sd, sh, sw), (pd, ph, pw) = stride, padding
    (dd, dh, dw), (opd, oph, opw) = dilation, output_padding
    x2 = x.permute(0, 2, 1, 3, 4).reshape(n * d, c, h, w)
    # weight (C, OC/g, kD, kH, kW) -> (C, kD * OC/g, kH, kW): group g's outputs are its
    # kD taps of OC/g channels
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(c, kd * ocg, weight.shape[3], weight.shape[4])
    y = conv_transpose2d(x2, w2, None, (sh, sw), (ph, pw), (oph, opw), groups, (dh, dw))
    oh, ow = y.shape[2], y.shape[3]
    # (N, D, g, kD, OC/g, OH, OW) -> (N, OC, D * kD, OH, OW), source depth d-major
    y = y.reshape(n, d, groups, kd, ocg, oh, ow).permute(0, 2, 4, 1, 3, 5, 6)
    y = y.reshape(n, oc, d * kd, oh, ow)
    full = (d - 1) * sd + dd * (kd - 1) + 1 + opd
    src = arange(d, device=x.device).reshape(d, 1) * sd + \
        arange(kd, device=x.device).reshape(1, kd) * dd
    acc = y.new_zeros((n, oc, full, oh, ow)).index_add(2, src.reshape(d * kd), y)
    acc = acc.narrow(2, pd, out[0])
    if bias is not None:
        acc = acc + bias.reshape(oc, 1, 1, 1)
    return acc if batched else acc.squeeze(0)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's generic convolution (torch.convolution): conv1d/2d/3d, or with transposed
    conv_transpose1d/2d/3d, chosen by weight's dims (3, 4 or 5), every argument given
    (stride, padding, dilation and output_padding as ints or one per spatial dim)."""
    op = "convolution"
    if not isinstance(weight, _core.TensorBase):
        raise TypeError(f"{op}: weight must be a tensor, got {type(weight).__name__}")
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"{op}: expected a weight of 3, 4 or 5 dims (1-d, 2-d or 3-d "
                         f"convolution), got shape {tuple(weight.shape)}")
    if not isinstance(transposed, bool):
        raise TypeError(f"{op}: transposed must be a bool, got {type(transposed).__name__}")
    if transposed:
        fn = (conv_transpose1d, conv_transpose2d, conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    if any(int(v) for v in ((output_padding,) if isinstance(output_padding, int)
                           else output_padding)):
        raise ValueError(f"{op}: output_padding {output_padding!r} is only used by a "
                         f"transposed convolution")
    fn = (conv1d, conv2d, conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


__all__ += ["convolution"]
