"""Memory formats (torch.memory_format): how a tensor's dimensions are laid out in its
storage. contiguous_format: row-major (NCHW); channels_last: a 4-D (N, C, H, W) tensor
stored as NHWC (strides (H*W*C, 1, W*C, C)); channels_last_3d: a 5-D NCDHW one stored
as NDHWC; preserve_format: a result laid out like its input (the default of clone,
*_like and elementwise results)."""
from __future__ import annotations

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format"]


class memory_format:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}      # the dims from fastest to slowest
_NDIM = {"channels_last": 4, "channels_last_3d": 5}


def as_format(fmt, op, allow_preserve=True):
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}: memory_format must be an ember.memory_format (ember."
                        f"channels_last, ...), got {fmt!r}")
    if fmt is preserve_format and not allow_preserve:
        raise RuntimeError(f"{op}: preserve memory format is unsupported by the contiguous "
                           f"operator")
    return fmt


def _strided_like(shape, strides, order):
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_in_format(x, fmt):
    """x.is_contiguous(memory_format=fmt): its strides are fmt's dense strides."""
    if fmt is contiguous_format or fmt is None:
        return x.is_contiguous()
    if not isinstance(fmt, memory_format):
        raise TypeError(f"is_contiguous: memory_format must be an ember.memory_format, got "
                        f"{fmt!r}")
    if fmt is preserve_format:
        raise RuntimeError("is_contiguous: preserve memory format is unsupported by the "
                           "contiguous operator")
    n = _NDIM[fmt._name]
    if x.ndim != n:
        return False
    return _strided_like(tuple(x.shape), x.stride(), _ORDER[n])


def format_of(x):
    """The memory format preserve_format keeps: channels_last(_3d) when x is stored so
    and not also row-major, else contiguous_format."""
    if x.ndim == 4 and is_in_format(x, channels_last) and not x.is_contiguous():
        return channels_last
    if x.ndim == 5 and is_in_format(x, channels_last_3d) and not x.is_contiguous():
        return channels_last_3d
    return contiguous_format


def _check_rank(fmt, ndim, op):
    n = _NDIM.get(fmt._name)
    if n is not None and ndim != n:
        raise RuntimeError(f"{op}: required rank {n} tensor to use {fmt._name} format, got "
                           f"{ndim} dims")


def to_format(x, fmt, op="contiguous"):
    """x laid out in fmt (x itself when it already is): a recorded permute + copy."""
    fmt = as_format(fmt, op)
    if fmt is preserve_format:
        fmt = format_of(x)
    if fmt is contiguous_format:
        return x.contiguous()
    _check_rank(fmt, x.ndim, op)
    if is_in_format(x, fmt):
        return x
    n = x.ndim
    last = (0,) + tuple(range(2, n)) + (1,)            # N(D)HWC
    back = (0, n - 1) + tuple(range(1, n - 1))
    return x.permute(*last).contiguous().permute(*back)


def empty_in_format(shape, fmt, make):
    """make(shape) laid out in fmt: channels_last makes the N(D)HWC block and views it."""
    if fmt is contiguous_format or fmt is preserve_format:
        return make(tuple(shape))
    _check_rank(fmt, len(shape), "empty")
    n = len(shape)
    pshape = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return make(pshape).permute(0, n - 1, *range(1, n - 1))


def like_format(input, fmt, op):
    fmt = as_format(fmt, op)
    return format_of(input) if fmt is preserve_format else fmt


def _channels_last_input(x):
    return getattr(x, "ndim", 0) == 4 and not x.is_contiguous() and \
        _strided_like(tuple(x.shape), x.stride(), _ORDER[4])


def _input_format(x):
    """channels_last / channels_last_3d for an input stored so (and not also
    row-major), else None."""
    n = getattr(x, "ndim", 0)
    if n in _ORDER and not x.is_contiguous() and _strided_like(tuple(x.shape), x.stride(),
                                                               _ORDER[n]):
        return channels_last if n == 4 else channels_last_3d
    return None


def keeps_channels_last(fn):
    """For the convolutions and poolings: a channels_last (channels_last_3d) input gives
    a result in that layout, as PyTorch's. The CPU's 2-d kernels read and write NHWC
    themselves, so their results pass through as they are; the 3-d ops (composed
    from the 2-d ones over folded views) and the GPU kernels, which read NCHW, get
    their results laid out here."""
    import functools

    @functools.wraps(fn)
    def entry(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        fmt = _input_format(input)
        if fmt is None:
            return out
        nd = input.ndim
        if isinstance(out, tuple):
            return type(out)(to_format(o, fmt, fn.__name__) if o.ndim == nd else o
                             for o in out)
        return to_format(out, fmt, fn.__name__) if out.ndim == nd else out
    return entry


def _install():
    from ember._C import core
    core._set_memory_formats(contiguous_format, is_in_format)
