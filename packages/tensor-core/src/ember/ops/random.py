"""Random numbers: ember.Generator, the random factories and the in-place fills.

Every device draws from one counter-based generator, Philox4x32-10
(kernels/cpu/random.c). A Generator is just (seed, offset): its stream of 32-bit
words w[0], w[1], ... is a pure function of the seed, and the offset counts the words
earlier calls used. Each call reserves exactly the words it needs, so

* the same seed gives the same numbers, on every device;
* element i of a call depends only on the seed and its own word position, so a CUDA
  or OpenCL kernel computes every element independently;
* calls never overlap: ``rand(3)`` then ``rand(3)`` gives the numbers of ``rand(6)``.

Words per element (formulas in random.c's header):

=========================================  ==========================================
uniform: rand, rand_like, uniform_          1 (float16, float32) or 2 (float64);
                                            float16 is the float32 value rounded,
                                            clamped to the last float16 below `to`
normal: randn, randn_like, normal, normal_  2 (float16, float32) or 4 (float64)
integers: randint, randint_like, random_    1 when high - low <= 2**32, else 2
bernoulli, bernoulli_                       one float32 uniform u (float64 for float64
                                            outputs); the result is 1 where u < p
exponential_                                one uniform u; -log1p(-u) / lambd
dropout (ember.ops.dropout)                 1 (a float32 uniform u, for every dtype);
                                            the element is dropped where u < p
randperm(n)                                 n - 1 (word k picks the swap of n-1-k)
multinomial                                 2 (a float64 uniform) per draw, or per
                                            category and row without replacement
=========================================  ==========================================

Elements are numbered in row-major order of the result, whatever its strides.

A Generator's numbers do not depend on the device, so any Generator can feed any
device; ``device`` is kept for PyTorch compatibility. A backend for another device
provides ``random(kind, out, seed, offset, *params)`` with ``kind`` one of
uniform/normal/integers/randperm/exponential/multinomial and the same parameters as
the functions of ember._C.random.
"""
from __future__ import annotations

import math
import operator
import os

from ember._args import int_arg, number_arg, shape_arg, tensor_arg
from ember._C import core as _core, random as _philox
from ember._dtypes import as_dtype, float32, float64, int64
from ember._layout import broadcast_shape
from ember._registry import tensor_method
from ember.backends import kernel

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "randint", "normal",
           "bernoulli", "randperm", "rand_like", "randn_like", "randint_like",
           "multinomial"]

_DEFAULT_SEED = 67280421310721      # PyTorch's default seed
_U64 = 1 << 64


# generators ---------------------------------------------------------------------

def _seed_value(seed, op):
    """A user's seed as a uint64: ints in [-2**63, 2**64), negatives wrap (as PyTorch)."""
    try:
        s = operator.index(seed)
    except TypeError:
        raise TypeError(f"{op}: seed must be an int, got {type(seed).__name__}") from None
    if not -(1 << 63) <= s < _U64:
        raise ValueError(f"{op}: seed must be in [-2**63, 2**64), got {s}")
    return s % _U64


def _fresh_seed():
    return int.from_bytes(os.urandom(8), "little")


class Generator(_philox.PhiloxGenerator):
    """A stream of random numbers: Philox4x32-10 at (seed, offset).

        g = ember.Generator().manual_seed(42)
        ember.rand(3, generator=g)

    The offset counts the 32-bit words used so far; get_state/set_state save and
    restore both as 16 bytes (a uint8 tensor)."""

    __module__ = "ember"

    def __init__(self, device="cpu"):
        self._device = _core.as_device(device)
        self._set(_DEFAULT_SEED, 0)

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        """Restart the stream from `seed`; returns the generator."""
        self._set(_seed_value(seed, "manual_seed"), 0)
        return self

    def seed(self):
        """Restart from a non-deterministic seed (from the OS) and return it."""
        s = _fresh_seed()
        self._set(s, 0)
        return s

    def initial_seed(self):
        """The seed the stream started from."""
        return self._get()[0]

    def get_offset(self):
        """How many 32-bit words of the stream have been used."""
        return self._get()[1]

    def set_offset(self, offset):
        offset = operator.index(offset)
        if not 0 <= offset < _U64:
            raise ValueError(f"set_offset: offset must be in [0, 2**64), got {offset}")
        self._set(self._get()[0], offset)
        return self

    def get_state(self):
        """(seed, offset) as a uint8 tensor of 16 bytes (two little-endian uint64)."""
        s, off = self._get()
        raw = s.to_bytes(8, "little") + off.to_bytes(8, "little")
        return _core._fill_from_bytes(_core.empty((16,), as_dtype("uint8")), raw)

    def set_state(self, new_state):
        """Restore a state from get_state(); returns the generator."""
        if not isinstance(new_state, _core.TensorBase):
            raise TypeError(f"set_state: expected a uint8 tensor, got "
                            f"{type(new_state).__name__}")
        if new_state.dtype.name != "uint8" or new_state.numel() != 16:
            raise ValueError(f"set_state: expected a uint8 tensor of 16 bytes (seed, offset), "
                             f"got dtype {new_state.dtype!r} and shape "
                             f"{tuple(new_state.shape)}")
        raw = bytes(new_state.reshape(-1).tolist())
        self._set(int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))
        return self

    def __repr__(self):
        s, off = self._get()
        return f"<ember.Generator device='{self._device}' seed={s} offset={off}>"

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device),) + tuple(self._get()))


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._set(seed, offset)
    return g


default_generator = Generator("cpu")
_device_defaults = {}       # default generators of other devices, made on first use
_last_seed = _DEFAULT_SEED


def _default_for(device):
    if device.type == "cpu":
        return default_generator
    key = (device.type, max(device.index, 0))
    g = _device_defaults.get(key)
    if g is None:
        g = _device_defaults[key] = Generator(device)
        g._set(_last_seed, 0)
    return g


def manual_seed(seed):
    """Seed the default generator of every device; returns ember.default_generator."""
    global _last_seed
    _last_seed = _seed_value(seed, "manual_seed")
    for g in (default_generator, *_device_defaults.values()):
        g._set(_last_seed, 0)
    return default_generator


def seed():
    """Seed every default generator from the OS and return that seed."""
    s = _fresh_seed()
    manual_seed(s)
    return s


def initial_seed():
    """The seed of the default CPU generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default CPU generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default CPU generator's state from get_rng_state()."""
    default_generator.set_state(new_state)


# ember.vmap(randomness="error") sets this to a message: random ops then refuse to run
_RANDOM_GUARD = [None]


def _generator(generator, device, op):
    if _RANDOM_GUARD[0] is not None:
        raise RuntimeError(f"{op}: {_RANDOM_GUARD[0]}")
    if generator is None:
        return _default_for(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be an ember.Generator, got "
                        f"{type(generator).__name__}")
    return generator


# running a kernel ----------------------------------------------------------------

def _words(kind, dtype, n, span=0):
    """How many stream words `kind` uses for n elements of dtype (see the table)."""
    if kind == "uniform" or kind == "exponential":
        return n * (2 if dtype is float64 else 1)
    if kind == "normal":
        return n * (4 if dtype is float64 else 2)
    if kind == "integers":
        return n * (2 if span > (1 << 32) else 1)
    if kind == "randperm":
        return 0 if n < 2 else (n - 1) * (2 if n - 1 >= (1 << 32) else 1)
    raise ValueError(kind)


def _run(kind, out, generator, op, *params, span=0):
    """Fill `out` with `kind` numbers from the generator's next words."""
    n = out.numel()
    gen = _generator(generator, out.device, op)
    words = _words(kind, out.dtype, n, span)
    seed_, offset = gen._reserve(words)
    kernel("random", op, out)(kind, out, seed_, offset, *params)
    return out


def _fill(kind, t, generator, op, a, b):
    """_run into t; a complex t gets its real and imaginary parts drawn as interleaved
    reals (its view_as_real), as PyTorch does."""
    if t.dtype.kind == "complex":
        from ember.ops.complex import view_as_real
        with _core._no_record():
            _run(kind, view_as_real(t), generator, op, a, b)
        return t
    return _run(kind, t, generator, op, a, b)


def _size(args, size, op):
    """rand(2, 3), rand((2, 3)), rand([2, 3]), rand(size=(2, 3)) all mean (2, 3)."""
    if size is not None:
        if args:
            raise TypeError(f"{op}: size given both positionally and as a keyword")
        args = (size,)
    return shape_arg(args, op)


def _float_dtype(dtype, op, complex_ok=False):
    d = _core.get_default_dtype() if dtype is None else as_dtype(dtype)
    if d.kind != "float" and not (complex_ok and d.kind == "complex"):
        raise TypeError(f"{op}: expected a floating point{' or complex' if complex_ok else ''} "
                        f"dtype, got {d!r}")
    return d


def _options(kwargs, op):
    """The size= keyword of the factories; PyTorch's layout/pin_memory are accepted."""
    size = kwargs.pop("size", None)
    for ignored in ("layout", "pin_memory", "memory_format"):
        kwargs.pop(ignored, None)
    if kwargs:
        raise TypeError(f"{op}: unexpected keyword arguments {sorted(kwargs)}")
    return size


def _finish(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


# factories ------------------------------------------------------------------------

def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """Uniform numbers in [0, 1): rand(2, 3) or rand((2, 3)); complex dtypes draw the real
    and imaginary parts each from [0, 1), as PyTorch."""
    shape = _size(size, _options(kwargs, "rand"), "rand")
    t = _core.empty(shape, _float_dtype(dtype, "rand", True), device)
    return _finish(_fill("uniform", t, generator, "rand", 0.0, 1.0), requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """Standard normal numbers (mean 0, std 1). Complex dtypes: the real and imaginary
    parts each normal with variance 1/2 (so E|z|^2 = 1), as PyTorch."""
    shape = _size(size, _options(kwargs, "randn"), "randn")
    t = _core.empty(shape, _float_dtype(dtype, "randn", True), device)
    std = _SQRT_HALF if t.dtype.kind == "complex" else 1.0
    return _finish(_fill("normal", t, generator, "randn", 0.0, std), requires_grad)


_SQRT_HALF = math.sqrt(0.5)


def _dtype_bounds(dtype):
    """The inclusive range of integers dtype holds exactly."""
    if dtype.kind == "bool":
        return 0, 1
    if dtype.kind == "float":
        m = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]
        return -(1 << m), 1 << m
    bits = dtype.itemsize * 8
    if not dtype.is_signed:
        return 0, min((1 << bits) - 1, (1 << 63) - 1)   # the kernel draws in int64
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _fill_integers(out, low, high, generator, op):
    """Fill out with integers uniform in [low, high) (high exclusive)."""
    low, high = number_arg(low, "low", op), number_arg(high, "high", op)
    if isinstance(low, float) or isinstance(high, float):
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"{op}: low and high must be finite, got {low} and {high}")
        low, high = math.ceil(low), math.ceil(high)
    if low >= high:
        raise ValueError(f"{op}: low must be less than high, got low={low}, high={high}")
    lo, hi = _dtype_bounds(out.dtype)
    if low < lo or high - 1 > hi:
        raise ValueError(f"{op}: the range [{low}, {high}) does not fit in "
                         f"{out.dtype!r}, which holds [{lo}, {hi}]")
    span = min(high - low, _U64 - 1)
    return _run("integers", out, generator, op, low, span, span=span)


def randint(*args, size=None, generator=None, dtype=None, device=None,
            requires_grad=False, low=None, high=None):
    """Integers uniform in [low, high): randint(high, size) or randint(low, high, size).
    int64 unless dtype says otherwise."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint: missing the size argument")
        size = args.pop()
    if high is not None:
        args.append(high)
    if low is not None:
        args.insert(0, low)
    if len(args) == 1:
        args.insert(0, 0)
    if len(args) != 2:
        raise TypeError("randint: expected randint(high, size) or randint(low, high, size)")
    shape = _size((size,), None, "randint")
    d = int64 if dtype is None else as_dtype(dtype)
    t = _fill_integers(_core.empty(shape, d, device), args[0], args[1], generator, "randint")
    return _finish(t, requires_grad)


def _check_std(std, op):
    if isinstance(std, _core.TensorBase):
        bad = _core.reduce("any", _core.elementwise("lt", std.detach(), 0), None).item()
    else:
        bad = not std >= 0
    if bad:
        raise ValueError(f"{op}: std must be non-negative"
                         + ("" if isinstance(std, _core.TensorBase) else f", got {std}"))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal numbers. normal(mean, std, size) with numbers, or normal(mean, std) with
    tensors (broadcast together; the result is mean + std * z, differentiable in both)."""
    tm, ts = isinstance(mean, _core.TensorBase), isinstance(std, _core.TensorBase)
    if not (tm or ts):
        if size is None:
            raise TypeError("normal: size is required when mean and std are numbers")
        mean, std = number_arg(mean, "mean", "normal"), number_arg(std, "std", "normal")
        _check_std(std, "normal")
        t = _core.empty(_size((size,), None, "normal"), _float_dtype(dtype, "normal"), device)
        return _finish(_run("normal", t, generator, "normal", float(mean), float(std)),
                       requires_grad)
    if size is not None:
        raise TypeError("normal: size can't be given with tensor mean or std")
    mean = mean if tm else number_arg(mean, "mean", "normal")
    std = std if ts else number_arg(std, "std", "normal")
    ref = mean if tm else std
    for x in (mean, std):
        if isinstance(x, _core.TensorBase) and x.dtype.kind != "float":
            raise TypeError(f"normal: mean and std must be floating point tensors, got "
                            f"{x.dtype!r}")
    _check_std(std, "normal")
    out_dtype = as_dtype(dtype) if dtype is not None else _core.weak_result_type(mean, std)
    shape = broadcast_shape([mean.shape if tm else (), std.shape if ts else ()], "normal")
    z = _run("normal", _core.empty(shape, out_dtype, ref.device), generator, "normal", 0.0, 1.0)
    r = _core.elementwise("add", mean, _core.elementwise("mul", std, z))
    if r.dtype is not out_dtype:
        r = _core.astype(r, out_dtype, False)
    return _finish(r, requires_grad)


def _uniform_dtype(dtype):
    """The uniforms bernoulli compares with p: float64 for float64, else float32."""
    return float64 if dtype is float64 else float32


def _check_probabilities(p, op):
    if isinstance(p, _core.TensorBase):
        if p.dtype.kind != "float":
            raise TypeError(f"{op}: probabilities must be a floating point tensor, got "
                            f"{p.dtype!r}")
        p = p.detach()
        inside = _core.elementwise("logical_and", _core.elementwise("ge", p, 0),
                                   _core.elementwise("le", p, 1))
        if not _core.reduce("all", inside, None).item():
            raise ValueError(f"{op}: p must be in [0, 1], but the tensor has values outside "
                             f"it (or NaN)")
    else:
        p = number_arg(p, "p", op)
        if not 0 <= p <= 1:
            raise ValueError(f"{op}: p must be in [0, 1], got {p}")
    return p


def _bernoulli_mask(shape, udtype, p, device, generator, op):
    u = _run("uniform", _core.empty(shape, udtype, device), generator, op, 0.0, 1.0)
    return _core.elementwise("lt", u, p)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability input[i] (or with probability p, in input's shape), else 0;
    the result has input's dtype."""
    tensor_arg(input, "bernoulli")
    if p is None:
        p = _check_probabilities(input, "bernoulli")
    else:
        p = _check_probabilities(p, "bernoulli")
    mask = _bernoulli_mask(tuple(input.shape), _uniform_dtype(input.dtype), p, input.device,
                           generator, "bernoulli")
    return _core.astype(mask, input.dtype, False)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0, 1, ..., n - 1 (int64 unless dtype says otherwise)."""
    n = int_arg(n, "n", "randperm")
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    d = int64 if dtype is None else as_dtype(dtype)
    if n > 0 and n - 1 > _dtype_bounds(d)[1]:
        raise ValueError(f"randperm: n={n} is too large for {d!r}")
    t = _run("randperm", _core.empty((n,), int64, device), generator, "randperm")
    return _finish(t if d is int64 else _core.astype(t, d, False), requires_grad)


def _like(input, dtype, device, op):
    tensor_arg(input, op)
    return (tuple(input.shape), input.dtype if dtype is None else as_dtype(dtype),
            input.device if device is None else device)


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
              memory_format=None, **_):
    """rand with input's shape, dtype and device (and layout: preserve_format)."""
    shape, d, dev = _like(input, dtype, device, "rand_like")
    return _in_format(rand(shape, generator=generator, dtype=d, device=dev), input,
                      memory_format, "rand_like").requires_grad_(requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
              memory_format=None, **_):
    """randn with input's shape, dtype and device (and layout: preserve_format)."""
    shape, d, dev = _like(input, dtype, device, "randn_like")
    return _in_format(randn(shape, generator=generator, dtype=d, device=dev), input,
                      memory_format, "randn_like").requires_grad_(requires_grad)


def _in_format(t, input, memory_format, op):
    from ember import _layout_formats as fmt
    f = fmt.like_format(input, memory_format or fmt.preserve_format, op)
    return t if f is fmt.contiguous_format else fmt.to_format(t, f, op)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad=False, memory_format=None, **_):
    """randint with input's shape, dtype and device: randint_like(x, high) or
    randint_like(x, low, high)."""
    if high is None:
        low, high = 0, low
    shape, d, dev = _like(input, dtype, device, "randint_like")
    return _in_format(randint(low, high, shape, generator=generator, dtype=d, device=dev),
                      input, memory_format, "randint_like").requires_grad_(requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Category indices drawn with the probabilities (any non-negative weights) in
    each row of input (1-d or 2-d); int64, shape (num_samples,) or (rows, num_samples)."""
    tensor_arg(input, "multinomial")
    if input.ndim not in (1, 2):
        raise ValueError(f"multinomial: expected a 1-d or 2-d tensor, got {input.ndim} dims")
    if input.dtype.kind != "float":
        raise TypeError(f"multinomial: expected floating point probabilities, got "
                        f"{input.dtype!r}")
    k = int_arg(num_samples, "num_samples", "multinomial")
    if k <= 0:
        raise ValueError(f"multinomial: num_samples must be positive, got {k}")
    n = input.shape[-1]
    if n == 0:
        raise ValueError("multinomial: the probabilities have no categories")
    if not replacement and k > n:
        raise ValueError(f"multinomial: cannot draw {k} samples without replacement from "
                         f"{n} categories")
    rows = 1 if input.ndim == 1 else input.shape[0]
    dev = input.device
    out = _core.empty((rows, k), int64, dev)
    gen = _generator(generator, dev, "multinomial")
    seed_, offset = gen._reserve(2 * rows * (k if replacement else n))
    if rows:
        kernel("random", "multinomial", input)("multinomial", input, out, seed_, offset,
                                               replacement)
    return out.reshape(k) if input.ndim == 1 else out


# in-place fills (Tensor methods) ---------------------------------------------------

def _inplace(self, op):
    """The checks PyTorch makes before writing into a tensor in place."""
    tensor_arg(self, op, "self")
    _core.check_inplace(self, op)


def _written(self, op):
    """Bump the version and tell autograd (non-leaf tensors that require grad)."""
    self._bump_version()
    _core.record(op, (self,), self, {"inplace": True})
    return self


def _from_to(args, kwargs, default, op):
    if len(args) > 2:
        raise TypeError(f"{op}: expected at most two positional arguments (from, to)")
    vals = list(args) + [None] * (2 - len(args))
    if "from_" in kwargs:
        vals[0] = kwargs.pop("from_")
    if "from" in kwargs:
        vals[0] = kwargs.pop("from")
    if "to" in kwargs:
        vals[1] = kwargs.pop("to")
    if kwargs:
        raise TypeError(f"{op}: unexpected keyword arguments {sorted(kwargs)}")
    return [d if v is None else v for v, d in zip(vals, default)]


@tensor_method
def uniform_(self, *args, generator=None, **kwargs):
    """Fill with numbers uniform in [from, to) (default [0, 1)): uniform_(a, b); a complex
    tensor's real and imaginary parts each (as PyTorch)."""
    _inplace(self, "uniform_")
    low, high = _from_to(args, kwargs, (0.0, 1.0), "uniform_")
    low = float(number_arg(low, "from", "uniform_"))
    high = float(number_arg(high, "to", "uniform_"))
    _float_dtype(self.dtype, "uniform_", True)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"uniform_: from and to must be finite, got {low} and {high}")
    if low > high:
        raise ValueError(f"uniform_: expected from <= to, got from={low}, to={high}")
    _fill("uniform", self, generator, "uniform_", low, high)
    return _written(self, "uniform_")


@tensor_method
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal numbers of the given mean and std. A complex tensor: the real and
    imaginary parts each normal with that mean and std / sqrt(2) (so E|z - mean(1+1j)|^2 =
    std^2), as PyTorch."""
    _inplace(self, "normal_")
    mean, std = number_arg(mean, "mean", "normal_"), number_arg(std, "std", "normal_")
    _check_std(std, "normal_")
    _float_dtype(self.dtype, "normal_", True)
    if self.dtype.kind == "complex":
        std = std * _SQRT_HALF
    _fill("normal", self, generator, "normal_", float(mean), float(std))
    return _written(self, "normal_")


@tensor_method
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability p (a number or a tensor broadcast to self), else 0."""
    _inplace(self, "bernoulli_")
    p = _check_probabilities(p, "bernoulli_")
    mask = _bernoulli_mask(tuple(self.shape), _uniform_dtype(self.dtype), p, self.device,
                           generator, "bernoulli_")
    if mask.shape != self.shape:
        raise ValueError(f"bernoulli_: p of shape {tuple(p.shape)} can't be broadcast to "
                         f"the tensor's shape {tuple(self.shape)}")
    _core.copy_into(self, mask)
    return _written(self, "bernoulli_")


@tensor_method
def random_(self, *args, generator=None, **kwargs):
    """Fill with integers: random_() in [0, max] (floats: [0, 2**mantissa]),
    random_(to) in [0, to), random_(from, to) in [from, to)."""
    _inplace(self, "random_")
    hi = _dtype_bounds(self.dtype)[1]
    if len(args) == 1 and "to" not in kwargs:
        args = (0, args[0])
    low, high = _from_to(args, kwargs, (0, None), "random_")
    high = hi + 1 if high is None else high
    _fill_integers(self, low, high, generator, "random_")
    return _written(self, "random_")


@tensor_method
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential numbers of rate lambd: -log1p(-u) / lambd."""
    _inplace(self, "exponential_")
    lambd = float(number_arg(lambd, "lambd", "exponential_"))
    if not lambd > 0:
        raise ValueError(f"exponential_: lambd must be positive, got {lambd}")
    _float_dtype(self.dtype, "exponential_")
    _run("exponential", self, generator, "exponential_", lambd)
    return _written(self, "exponential_")


tensor_method(bernoulli)
tensor_method(multinomial)


# the other distributions of PyTorch's in-place samplers (issue 18), from uniform_ and
# normal_ by the inverse CDF --------------------------------------------------------------

def _sample_into(self, values, op):
    _core.copy_into(self, values)
    return _written(self, op)


@tensor_method
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std)) (log-normal numbers)."""
    _inplace(self, "log_normal_")
    mean, std = number_arg(mean, "mean", "log_normal_"), number_arg(std, "std", "log_normal_")
    if not std > 0:
        raise ValueError(f"log_normal_: std must be positive, got {std}")
    _float_dtype(self.dtype, "log_normal_")
    with _core._no_record():
        z = _core.empty(tuple(self.shape), self.dtype, self.device)
        normal_(z, mean, std, generator=generator)
        v = _core.elementwise("exp", z)
    return _sample_into(self, v, "log_normal_")


@tensor_method
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy numbers: median + sigma * tan(pi * (u - 1/2))."""
    _inplace(self, "cauchy_")
    median = number_arg(median, "median", "cauchy_")
    sigma = number_arg(sigma, "sigma", "cauchy_")
    if not sigma > 0:
        raise ValueError(f"cauchy_: sigma must be positive, got {sigma}")
    _float_dtype(self.dtype, "cauchy_")
    with _core._no_record():
        u = _core.empty(tuple(self.shape), _core._dtype_by_name("float64"), self.device)
        uniform_(u, generator=generator)
        ew = _core.elementwise
        v = ew("add", median, ew("mul", sigma, ew("tan", ew("mul", math.pi, ew("sub", u, 0.5)))))
    return _sample_into(self, v, "cauchy_")


@tensor_method
def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...):
    ceil(log(1 - u) / log(1 - p))."""
    _inplace(self, "geometric_")
    p = number_arg(p, "p", "geometric_")
    if not 0 < p < 1:
        raise ValueError(f"geometric_: p must be in (0, 1), got {p}")
    with _core._no_record():
        u = _core.empty(tuple(self.shape), _core._dtype_by_name("float64"), self.device)
        uniform_(u, generator=generator)
        ew = _core.elementwise
        k = ew("maximum", ew("ceil", ew("div", ew("log1p", ew("neg", u)), math.log1p(-p))), 1)
    return _sample_into(self, k, "geometric_")


# Poisson and binomial samplers -------------------------------------------------------
# Composed of ember ops over whole tensors (so they run on every device): each step of
# a sampler's loop is elementwise, and the loop ends when no element is left to draw.
# The uniforms come from the generator (reproducible with manual_seed and generator=).

_LOG_SQRT_2PI = 0.9189385332046727


def _lgamma_ge1(x):
    """log Gamma(x) for x >= 1 (float64 tensors): Stirling's series at x + 6, shifted
    back by the recurrence (absolute error below 1e-9)."""
    ew = _core.elementwise
    z = ew("add", x, 6.0)
    zi = ew("reciprocal", z)
    zi2 = ew("mul", zi, zi)
    series = ew("mul", zi, ew("sub", 1.0 / 12, ew("mul", zi2, ew("sub", 1.0 / 360,
                                                                  ew("mul", zi2, 1.0 / 1260)))))
    lg = ew("add", ew("sub", ew("mul", ew("sub", z, 0.5), ew("log", z)), z),
            ew("add", series, _LOG_SQRT_2PI))
    prod = x
    for i in (1.0, 2.0, 3.0, 4.0, 5.0):
        prod = ew("mul", prod, ew("add", x, i))
    return ew("sub", lg, ew("log", prod))


def _uniforms(shape, device, generator, op):
    return _run("uniform", _core.empty(shape, float64, device), generator, op, 0.0, 1.0)


def _any(mask):
    return bool(_core.reduce("any", mask, None).item())


def poisson(input, generator=None):
    """Samples of Poisson(input[i]) (torch.poisson): rates >= 0, a float result of
    input's dtype. Rates below 10 by inversion (sequential search), larger ones by
    Hörmann's transformed rejection PTRS (as NumPy and PyTorch), in float64."""
    op = "poisson"
    tensor_arg(input, op)
    if input.dtype.kind != "float":
        raise TypeError(f"{op}: rates must be a floating point tensor, got {input.dtype!r}")
    ew = _core.elementwise
    with _core._no_record():
        lam = _core.astype(input.detach(), float64, False)
        ok = ew("logical_and", ew("ge", lam, 0), ew("isfinite", lam))
        if lam.numel() and not bool(_core.reduce("all", ok, None).item()):
            raise ValueError(f"{op}: rates must be finite and non-negative, got values "
                             f"outside [0, inf) (or NaN)")
        shape, dev = tuple(lam.shape), lam.device
        out = _core.empty(shape, float64, dev).fill_(0)
        if not lam.numel():
            return _core.astype(out, input.dtype, False)
        small = ew("lt", lam, 10.0)
        if _any(small):
            u = _uniforms(shape, dev, generator, op)
            p = ew("exp", ew("neg", lam))
            cdf = p
            k = out
            for _ in range(400):
                active = ew("logical_and", small, ew("gt", u, cdf))
                if not _any(active):
                    break
                k = ew("add", k, _core.astype(active, float64, False))
                p = ew("where", active, ew("div", ew("mul", p, lam), k), p)
                cdf = ew("where", active, ew("add", cdf, p), cdf)
            out = ew("where", small, k, out)
        todo = ew("logical_not", small)
        if _any(todo):
            big = ew("where", todo, lam, 10.0)          # keeps the formulas finite
            slam, loglam = ew("sqrt", big), ew("log", big)
            b = ew("add", ew("mul", slam, 2.53), 0.931)
            a = ew("add", ew("mul", b, 0.02483), -0.059)
            log_invalpha = ew("log", ew("add", ew("div", 1.1328, ew("sub", b, 3.4)), 1.1239))
            vr = ew("sub", 0.9277, ew("div", 3.6224, ew("sub", b, 2.0)))
            while _any(todo):
                U = ew("sub", _uniforms(shape, dev, generator, op), 0.5)
                V = _uniforms(shape, dev, generator, op)
                us = ew("sub", 0.5, ew("abs", U))
                k = ew("floor", ew("add", ew("mul", ew("add", ew("div", ew("mul", a, 2.0), us),
                                                          b), U), ew("add", big, 0.43)))
                quick = ew("logical_and", ew("ge", us, 0.07), ew("le", V, vr))
                reject = ew("logical_or", ew("lt", k, 0),
                            ew("logical_and", ew("lt", us, 0.013), ew("gt", V, us)))
                kc = ew("where", ew("lt", k, 0), 0.0, k)
                lhs = ew("sub", ew("add", ew("log", V), log_invalpha),
                         ew("log", ew("add", ew("div", a, ew("mul", us, us)), b)))
                rhs = ew("sub", ew("sub", ew("mul", kc, loglam), big),
                         _lgamma_ge1(ew("add", kc, 1.0)))
                good = ew("logical_or", quick, ew("logical_and", ew("logical_not", reject),
                                                  ew("le", lhs, rhs)))
                acc = ew("logical_and", todo, good)
                out = ew("where", acc, kc, out)
                todo = ew("logical_and", todo, ew("logical_not", acc))
        return _core.astype(out, input.dtype, False)


def binomial(count, prob, generator=None):
    """Samples of Binomial(count[i], prob[i]) (torch.binomial): float tensors of one
    shape and dtype (counts >= 0, whole numbers; probabilities in [0, 1]), a result of
    that dtype. Mean count * prob below 10 by inversion, larger by Hörmann's BTRS (as
    PyTorch), in float64, using p <= 1/2 by symmetry."""
    op = "binomial"
    tensor_arg(count, op, "count")
    tensor_arg(prob, op, "prob")
    if count.dtype.kind != "float" or prob.dtype.kind != "float":
        raise TypeError(f"{op}: count and prob must be floating point tensors, got "
                        f"{count.dtype!r} and {prob.dtype!r}")
    if tuple(count.shape) != tuple(prob.shape):
        raise ValueError(f"{op}: count and prob must have one shape, got "
                         f"{tuple(count.shape)} and {tuple(prob.shape)}")
    if count.device != prob.device:
        raise ValueError(f"{op}: count is on {count.device}, prob on {prob.device}")
    ew = _core.elementwise
    with _core._no_record():
        n = _core.astype(count.detach(), float64, False)
        p = _core.astype(prob.detach(), float64, False)
        shape, dev = tuple(n.shape), n.device
        out = _core.empty(shape, float64, dev).fill_(0)
        if not n.numel():
            return _core.astype(out, count.dtype, False)
        okn = ew("logical_and", ew("ge", n, 0), ew("eq", ew("floor", n), n))
        if not bool(_core.reduce("all", ew("logical_and", okn, ew("isfinite", n)), None).item()):
            raise ValueError(f"{op}: count must hold finite non-negative whole numbers")
        if not bool(_core.reduce("all", ew("logical_and", ew("ge", p, 0), ew("le", p, 1)),
                                 None).item()):
            raise ValueError(f"{op}: prob must be in [0, 1] (and not NaN)")
        flip = ew("gt", p, 0.5)
        pp = ew("where", flip, ew("sub", 1.0, p), p)         # <= 1/2
        q = ew("sub", 1.0, pp)
        mean = ew("mul", n, pp)
        small = ew("lt", mean, 10.0)
        x = out
        if _any(small):
            u = _uniforms(shape, dev, generator, op)
            s = ew("div", pp, q)
            a = ew("mul", ew("add", n, 1.0), s)
            r = ew("pow", q, ew("where", small, n, 0.0))
            for _ in range(500):
                active = ew("logical_and", ew("logical_and", small, ew("gt", u, r)),
                            ew("lt", x, n))
                if not _any(active):
                    break
                u = ew("where", active, ew("sub", u, r), u)
                x = ew("add", x, _core.astype(active, float64, False))
                ratio = ew("sub", ew("div", a, ew("where", active, x, 1.0)), s)
                r = ew("where", active, ew("mul", r, ratio), r)
        todo = ew("logical_not", small)
        if _any(todo):
            nb = ew("where", todo, n, 40.0)                  # keeps the formulas finite
            pb = ew("where", todo, pp, 0.5)
            qb = ew("sub", 1.0, pb)
            spq = ew("sqrt", ew("mul", ew("mul", nb, pb), qb))
            b = ew("add", ew("mul", spq, 2.53), 1.15)
            a = ew("add", ew("add", ew("mul", b, 0.0248), ew("mul", pb, 0.01)), -0.0873)
            c = ew("add", ew("mul", nb, pb), 0.5)
            alpha = ew("mul", ew("add", ew("div", 5.1, b), 2.83), spq)
            vr = ew("sub", 0.92, ew("div", 4.2, b))
            lpq = ew("log", ew("div", pb, qb))
            m = ew("floor", ew("mul", ew("add", nb, 1.0), pb))
            h = ew("add", _lgamma_ge1(ew("add", m, 1.0)),
                   _lgamma_ge1(ew("add", ew("sub", nb, m), 1.0)))
            while _any(todo):
                U = ew("sub", _uniforms(shape, dev, generator, op), 0.5)
                V = _uniforms(shape, dev, generator, op)
                us = ew("sub", 0.5, ew("abs", U))
                k = ew("floor", ew("add", ew("mul", ew("add", ew("div", ew("mul", a, 2.0), us),
                                                          b), U), c))
                reject = ew("logical_or", ew("lt", k, 0), ew("gt", k, nb))
                kc = ew("where", ew("lt", k, 0), 0.0, k)
                kc = ew("minimum", kc, nb)
                quick = ew("logical_and", ew("ge", us, 0.07), ew("le", V, vr))
                vl = ew("log", ew("div", ew("mul", V, alpha),
                                  ew("add", ew("div", a, ew("mul", us, us)), b)))
                ub = ew("add", ew("sub", ew("sub", h, _lgamma_ge1(ew("add", kc, 1.0))),
                                  _lgamma_ge1(ew("add", ew("sub", nb, kc), 1.0))),
                        ew("mul", ew("sub", kc, m), lpq))
                good = ew("logical_and", ew("logical_not", reject),
                          ew("logical_or", quick, ew("le", vl, ub)))
                acc = ew("logical_and", todo, good)
                x = ew("where", acc, kc, x)
                todo = ew("logical_and", todo, ew("logical_not", acc))
        x = ew("where", flip, ew("sub", n, x), x)
        return _core.astype(x, count.dtype, False)


__all__ += ["poisson", "binomial"]
