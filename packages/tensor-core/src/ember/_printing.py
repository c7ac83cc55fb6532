"""Tensor.__repr__ / __str__, formatted exactly as PyTorch formats its tensors
(torch/_tensor_str.py), and the print options.

    >>> ember.tensor([[1., 2.], [3., 4.]])
    tensor([[1., 2.],
            [3., 4.]])

Above `threshold` elements only the `edgeitems` first and last entries of each
dimension are shown, and only those are read from the tensor: printing a huge tensor
costs a few small copies, never a pass over its data.
"""
from __future__ import annotations

import contextlib
import math

from ember._C import core as _core
from ember._registry import tensor_method

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]


class _PrintOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (the options of torch.set_printoptions).

    precision: digits after the point (4); threshold: element count above which a
    tensor is summarised with '...' (1000); edgeitems: items kept at each end of each
    summarised dimension (3); linewidth: characters per line (80); profile: 'default',
    'short' or 'full' sets all four first; sci_mode: True/False forces scientific
    notation on/off, None (the default) chooses per tensor."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of "
                             f"{', '.join(map(repr, _PROFILES))}, got {profile!r}")
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            if name != "threshold" and (not isinstance(value, int) or value < 0):
                raise ValueError(f"set_printoptions: {name} must be a non-negative int, "
                                 f"got {value!r}")
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options, as keyword arguments for set_printoptions."""
    return {k: getattr(PRINT_OPTS, k) for k in _PrintOptions.__slots__}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a `with` block only."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# reading the values to print -------------------------------------------------------

class _Ellipsis:
    """Where a summarised dimension skips its middle."""
    __slots__ = ()


_SKIP = _Ellipsis()


def _index0(t, i):
    """t[i] as a view (without going through indexing)."""
    _, _, shape, strides, offset = t._layout()
    return t._view(shape[1:], strides[1:], offset + i * strides[0])


def _slice0(t, start, stop):
    """t[start:stop] as a view."""
    _, _, shape, strides, offset = t._layout()
    return t._view((stop - start,) + shape[1:], strides, offset + start * strides[0])


def _values(t, summarize, edge):
    """Nested lists of the Python values that will be shown, with _SKIP where a
    summarised dimension leaves out its middle."""
    if not summarize or t.ndim == 0:
        return t.tolist()
    n = t.shape[0]
    if n <= 2 * edge:
        return t.tolist() if t.ndim == 1 else [_values(_index0(t, i), True, edge)
                                                for i in range(n)]
    if t.ndim == 1:
        return _slice0(t, 0, edge).tolist() + [_SKIP] + _slice0(t, n - edge, n).tolist()
    return ([_values(_index0(t, i), True, edge) for i in range(edge)] + [_SKIP]
            + [_values(_index0(t, i), True, edge) for i in range(n - edge, n)])


def _leaves(values, ndim, out):
    if ndim == 0:
        out.append(values)
        return out
    for v in values:
        if v is _SKIP:
            continue
        if ndim == 1:
            out.append(v)
        else:
            _leaves(v, ndim - 1, out)
    return out


# formatting ------------------------------------------------------------------------

class _Formatter:
    """Chooses one format for all of a tensor's shown values (PyTorch's rules):
    integers as is; floats with a '.' when all are whole numbers, else with
    `precision` digits, or in scientific notation when they span more than three
    orders of magnitude, exceed 1e8 or go below 1e-4. All are padded to one width."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not finite:
            return
        magnitudes = [abs(v) for v in finite]
        lo, hi = min(magnitudes), max(magnitudes)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        if self.sci_mode:
            width = max(len(f"{v:.{p}e}") for v in finite)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") for v in finite) + 1
        else:
            width = max(len(f"{v:.{p}f}") for v in finite)
        self.max_width = max(self.max_width, width)

    def format(self, v):
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{PRINT_OPTS.precision}f}"
        else:
            s = f"{v}"
        return (self.max_width - len(s)) * " " + s


class _ComplexFormatter:
    """PyTorch's complex format: the real parts formatted (and padded) as a float
    tensor of them, then the imaginary parts' own format, signed, unpadded, with 'j':
    tensor([  1.2346+1.j, 100.5000-2.j])."""

    def __init__(self, values):
        self.re = _Formatter([v.real for v in values], True)
        self.im = _Formatter([v.imag for v in values], True)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, v):
        imag = (self.im.format(v.imag) + "j").lstrip()
        return self.re.format(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _vector_str(values, indent, fmt):
    """One row, wrapped at linewidth."""
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    data = [" ..." if v is _SKIP else fmt.format(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values, ndim, indent, fmt):
    """Sub-blocks inside brackets, joined by ',' and ndim - 1 newlines (as PyTorch)."""
    if ndim == 0:
        return fmt.format(values)
    if ndim == 1:
        return _vector_str(values, indent, fmt)
    parts = ["..." if v is _SKIP else _nested_str(v, ndim - 1, indent + 1, fmt)
             for v in values]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _tensor_str(t, indent):
    """The bracketed values of t, indented to follow a prefix of `indent` characters."""
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        return "[...]"                   # (the size= suffix says what was left out)
    values = _values(t, summarize, edge)
    leaves = _leaves(values, t.ndim, [])
    fmt = _ComplexFormatter(leaves) if t.dtype.kind == "complex" else \
        _Formatter(leaves, t.dtype.kind == "float")
    return _nested_str(values, t.ndim, indent, fmt)


def _add_suffixes(text, suffixes, indent):
    """Append ', dtype=...' and friends, starting a new line past linewidth."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line = indent + len(s)
        else:
            parts.append(", " + s)
            last_line += len(s) + 2
    parts.append(")")
    return "".join(parts)


def _device_str(device):
    return f"{device.type}:{max(device.index, 0)}"


def _grad_fn_name(grad_fn):
    name = getattr(grad_fn, "name", None)
    name = name() if callable(name) else type(grad_fn).__name__
    return str(name).rsplit("::", 1)[-1]


def _is_plain(t):
    from ember._tensor import Tensor
    return type(t) is Tensor or type(t).__name__ == "Parameter"


@tensor_method(names=("__repr__", "__str__"))
def _repr(self, *, tensor_contents=None):
    """tensor([...], dtype=..., device=..., requires_grad=True), like PyTorch."""
    prefix = "tensor(" if _is_plain(self) else f"{type(self).__name__}("
    indent = len(prefix)
    suffixes = []
    device = self.device
    if device.type != "cpu":
        suffixes.append(f"device='{_device_str(device)}'")
    dtype = self.dtype
    default_float = _core.get_default_dtype()
    default_complex = default_float.to_complex()
    if self.numel() == 0:
        if self.ndim != 1:
            suffixes.append(f"size={tuple(self.shape)}")
        if dtype is not default_float and dtype is not default_complex:
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(self.shape)}")
        if dtype not in (default_float, default_complex, _core._dtype_by_name("int64"),
                         _core._dtype_by_name("bool")):
            suffixes.append(f"dtype={dtype!r}")
        body = None
    if tensor_contents is not None:
        body = tensor_contents
    elif body is None:
        body = _tensor_str(self.detach(), indent)
    grad_fn = self.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(grad_fn)}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
