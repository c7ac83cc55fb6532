"""ember.autocast: PyTorch's automatic mixed precision regions.

Inside ``with ember.autocast(device_type, dtype)`` the ops on autocast's lists
(ember/amp/_policy.py, PyTorch's CPU and CUDA lists) cast their floating-point
arguments on that device type: matmul, linear, conv, ... run in the low dtype;
losses, softmax (CUDA list), sums, ... in float32; a few (cat, addcmul, ...) promote to
the widest input. Other ops run in the dtype of their inputs. The casts are ordinary
recorded ``to`` ops, so autograd differentiates through them and a parameter's
gradient arrives in the parameter's dtype.

The state is per thread, as PyTorch's: for each device type an enabled flag and a
dtype, plus the cache flag and the nesting depth. While any device type is enabled in
a thread, one C flag of ember._C.core is on; every listed entry checks it and calls
straight through when it is off. A listed op runs its body with that flag off, so the
ops it is written with are not cast again (PyTorch excludes the autocast keys there).

The weight cache: within the outermost region, the low-precision cast of a float32
leaf that requires grad (a parameter) is made once and reused; leaving the outermost
region (nesting back to 0) empties it.
"""
from __future__ import annotations

import functools
import threading
import warnings

import ember as _em
from ember._C import core as _core

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "custom_fwd", "custom_bwd"]

DEVICE_TYPES = ("cpu", "cuda", "opencl")
# the low dtypes autocast can run in per device type (PyTorch: CPU bf16/fp16, CUDA fp16/bf16)


def _low_dtypes():
    bf16 = getattr(_em, "bfloat16", None)
    return (_em.float16,) if bf16 is None else (_em.float16, bf16)


def _default_dtype(device_type):
    """PyTorch's defaults: bfloat16 on the CPU, float16 on CUDA (and on OpenCL)."""
    if device_type == "cpu":
        bf16 = getattr(_em, "bfloat16", None)
        if bf16 is None:
            raise RuntimeError(
                "autocast: the CPU's default autocast dtype is bfloat16, which this ember "
                "build does not have yet; pass dtype=ember.float16 (autocast('cpu', "
                "dtype=ember.float16)) or set it with set_autocast_dtype('cpu', ember.float16)")
        return bf16
    return _em.float16


class _State(threading.local):
    def __init__(self):
        self.enabled = dict.fromkeys(DEVICE_TYPES, False)
        self.dtype = dict.fromkeys(DEVICE_TYPES)    # None: the device type's default
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}                            # id(leaf) -> (leaf, its low cast)


_state = _State()


def _refresh_flag():
    """The C flag: on while any device type is enabled (the exclusion inside a listed op
    sets it off for that op's body and restores it)."""
    _core._autocast_set_flag(1 if any(_state.enabled.values()) else 0)


def _device_type(device_type, op):
    if isinstance(device_type, _core.Device):
        device_type = device_type.type
    if not isinstance(device_type, str):
        raise TypeError(f"{op}: device_type must be a str such as 'cuda' or 'cpu', got "
                        f"{type(device_type).__name__}")
    dt = device_type.split(":")[0]
    if dt not in DEVICE_TYPES:
        raise RuntimeError(f"{op}: device_type must be one of {', '.join(DEVICE_TYPES)}, got "
                           f"{device_type!r}")
    return dt


def is_autocast_available(device_type):
    """Whether autocast can run on `device_type` (cpu, cuda, opencl)."""
    return isinstance(device_type, str) and device_type.split(":")[0] in DEVICE_TYPES


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` in this thread (no argument: CUDA's, as
    torch.is_autocast_enabled())."""
    return _state.enabled[_device_type("cuda" if device_type is None else device_type,
                                       "is_autocast_enabled")]


def set_autocast_enabled(device_type, enabled=None):
    """set_autocast_enabled(device_type, enabled), or the legacy set_autocast_enabled(enabled)
    for CUDA."""
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled: enabled must be a bool, got {enabled!r}")
    _state.enabled[_device_type(device_type, "set_autocast_enabled")] = enabled
    _refresh_flag()


def get_autocast_dtype(device_type):
    """The dtype the lower-precision ops of `device_type` run in."""
    dt = _device_type(device_type, "get_autocast_dtype")
    d = _state.dtype[dt]
    return _default_dtype(dt) if d is None else d


def set_autocast_dtype(device_type, dtype):
    dt = _device_type(device_type, "set_autocast_dtype")
    if not isinstance(dtype, _core.DType):
        raise TypeError(f"set_autocast_dtype: dtype must be an ember dtype, got {dtype!r}")
    _state.dtype[dt] = dtype


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop the casts of the weight cache (autocast does it leaving the outermost region)."""
    _state.cache.clear()


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    _state.nesting -= 1
    return _state.nesting


# PyTorch's per-device legacy spellings
def is_autocast_cpu_enabled():
    return _state.enabled["cpu"]


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


class autocast:
    """A region where the ops on autocast's lists run in mixed precision on `device_type`:

        with ember.autocast("cuda", dtype=ember.float16):
            loss = loss_fn(model(x), y)     # matmuls in float16, the loss in float32
        loss.backward()                     # outside the region, as PyTorch recommends

    dtype: the lower precision (None: float16 on cuda/opencl, bfloat16 on the CPU);
    enabled=False makes a region where autocast is off (also inside another);
    cache_enabled: reuse each weight's cast within the outermost region. Also a
    decorator: ``@autocast("cpu", dtype=ember.float16)``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_type(device_type, "autocast")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {enabled!r}")
        if dtype is not None and not isinstance(dtype, _core.DType):
            raise TypeError(f"autocast: dtype must be an ember dtype, got {dtype!r}")
        self.fast_dtype = dtype
        self._enabled = enabled
        self._cache_enabled = cache_enabled
        self._saved = []
        if enabled:
            fast = get_autocast_dtype(self.device) if dtype is None else dtype
            if fast not in _low_dtypes():
                names = ", ".join(repr(d) for d in _low_dtypes())
                warnings.warn(f"In {self.device} autocast, but the target dtype {fast!r} is "
                              f"not supported ({names} are). Disabling autocast.", stacklevel=2)
                self._enabled = False
            self.fast_dtype = fast

    def __enter__(self):
        st = _state
        self._saved.append((st.enabled[self.device], st.dtype[self.device], st.cache_enabled))
        st.enabled[self.device] = self._enabled
        if self._enabled:
            st.dtype[self.device] = self.fast_dtype
        if self._cache_enabled is not None:
            st.cache_enabled = bool(self._cache_enabled)
        st.nesting += 1
        _refresh_flag()
        return self

    def __exit__(self, *exc):
        st = _state
        st.nesting -= 1
        if st.nesting == 0:
            st.cache.clear()
        st.enabled[self.device], st.dtype[self.device], st.cache_enabled = self._saved.pop()
        _refresh_flag()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorated

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype!r}, "
                f"enabled={self._enabled})")


# -- the casts -------------------------------------------------------------------------

def _eligible(t, device_type):
    """A floating tensor on device_type that autocast may cast (float64 never is)."""
    d = t.dtype
    return d.kind == "float" and d is not _em.float64 and t.device.type == device_type


def _cast_low(t, dtype, device_type):
    if t.dtype is dtype or not _eligible(t, device_type):
        return t
    st = _state
    # a cast made under no_grad has no graph: caching it would cut the parameter off
    # from a later backward in the same region
    if st.cache_enabled and t.dtype is _em.float32 and t.requires_grad and t.is_leaf and \
            _core.is_grad_enabled():
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype is dtype:
            return hit[1]
        c = t.to(dtype)
        st.cache[id(t)] = (t, c)      # holds t: the id stays its own while cached
        return c
    return t.to(dtype)


def _cast_fp32(t, device_type):
    if t.dtype is not _em.float32 and t.dtype.kind == "float" and t.dtype is not _em.float64 \
            and t.device.type == device_type:
        return t.to(_em.float32)
    return t


def _map(x, f):
    if isinstance(x, _core.TensorBase):
        return f(x)
    if isinstance(x, (list, tuple)) and x and any(isinstance(v, (_core.TensorBase, list, tuple))
                                                  for v in x):
        return type(x)(_map(v, f) for v in x)
    return x


def _tensors(x, out):
    if isinstance(x, _core.TensorBase):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, out)
    return out


def _first_device_type(args, kwargs):
    for a in args:
        ts = _tensors(a, [])
        if ts:
            return ts[0].device.type
    for a in kwargs.values():
        ts = _tensors(a, [])
        if ts:
            return ts[0].device.type
    return None


def _widest(args, kwargs, device_type, low):
    """PyTorch's promote policy: the autocast dtype promoted with every eligible input."""
    wide = low
    for t in _tensors(list(args) + list(kwargs.values()), []):
        if _eligible(t, device_type) and t.dtype is not wide:
            wide = _em.promote_types(wide, t.dtype)
    return wide


def _cast_args(policy, args, kwargs, device_type):
    if policy == "lower":
        low = get_autocast_dtype(device_type)

        def f(t):
            return _cast_low(t, low, device_type)
    elif policy == "fp32":
        if kwargs.get("dtype") is not None:     # an explicit dtype= wins (fp32_set_opt_dtype)
            return args, kwargs

        def f(t):
            return _cast_fp32(t, device_type)
    elif policy == "promote":
        wide = _widest(args, kwargs, device_type, get_autocast_dtype(device_type))

        def f(t):
            return t.to(wide) if _eligible(t, device_type) and t.dtype is not wide else t
    else:
        return args, kwargs
    return (tuple(_map(a, f) for a in args),
            {k: _map(v, f) for k, v in kwargs.items()} if kwargs else kwargs)


def _policy_for(entry_policy, device_type):
    return entry_policy[0] if device_type == "cpu" else entry_policy[1]


def _banned(name):
    raise RuntimeError(
        f"{name} and the matching Module are unsafe to autocast. Many models use a sigmoid "
        f"layer right before the binary cross entropy layer. In this case, combine the two "
        f"layers using ember.nn.functional.binary_cross_entropy_with_logits or "
        f"ember.nn.BCEWithLogitsLoss, which are safe to autocast.")


def _call(entry, args, kwargs):
    """An AutocastOp called while the flag is on: cast by the policy of the tensors'
    device type (when autocast is enabled there), run the op with the flag off."""
    dt = _first_device_type(args, kwargs)
    prev = _core._autocast_set_flag(0)
    try:
        if dt is not None and _state.enabled.get(dt):
            policy = _policy_for(entry.policy, dt)
            if policy == "banned":
                _banned(f"ember.nn.functional.{entry.__name__}")
            args, kwargs = _cast_args(policy, args, kwargs, dt)
        return entry.fn(*args, **kwargs)
    finally:
        _core._autocast_set_flag(prev)


_EW_POLICY = {}      # op-table row index -> (cpu policy, device policy)
_ew_call = _core.ew_call


def _ew(op, x0, x1, x2, nin):
    """An op-table row with a policy, called while the flag is on (from the C `ew`)."""
    args = (x0, x1, x2)[:nin]
    dt = _first_device_type(args, {})
    prev = _core._autocast_set_flag(0)
    try:
        if dt is not None and _state.enabled.get(dt):
            policy = _policy_for(_EW_POLICY[op], dt)
            args, _ = _cast_args(policy, args, {}, dt)
            args = args + (None,) * (3 - nin)
            return _ew_call(op, args[0], args[1], args[2], nin, None)
        return _ew_call(op, x0, x1, x2, nin, None)
    finally:
        _core._autocast_set_flag(prev)


def wrap(fn, policy):
    """fn as an autocast entry with policy (cpu policy, cuda/opencl policy), each None,
    "lower", "fp32", "promote" or "banned"."""
    if isinstance(fn, _core.AutocastOp):
        fn = fn.fn
    return _core.AutocastOp(fn, policy)


# -- custom autograd Functions ---------------------------------------------------------

def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """Decorator for an autograd Function's forward (PyTorch's torch.amp.custom_fwd):
    cast_inputs=None runs forward as autocast finds it and lets custom_bwd run backward in
    the same state; cast_inputs=dtype runs forward with autocast off, its floating
    tensors on device_type cast to dtype when autocast was on."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    dt = _device_type(device_type, "custom_fwd")

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._fwd_used_autocast = is_autocast_enabled(dt)
        ctx._dtype = get_autocast_dtype(dt) if ctx._fwd_used_autocast else None
        if cast_inputs is None:
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(dt)
        ctx._fwd_used_autocast = False
        if autocast_context:
            def f(t):
                return t.to(cast_inputs) if _eligible(t, dt) else t
            with autocast(dt, enabled=False):
                return fwd(*(_map(a, f) for a in args),
                           **{k: _map(v, f) for k, v in kwargs.items()})
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type="cuda"):
    """Decorator for an autograd Function's backward: runs it with the autocast state its
    forward (decorated with custom_fwd) ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    dt = _device_type(device_type, "custom_bwd")

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        used = getattr(ctx, "_fwd_used_autocast", False)
        dtype = getattr(ctx, "_dtype", None)
        if used:
            with autocast(dt, dtype=dtype):
                return bwd(*args, **kwargs)
        with autocast(dt, enabled=False):
            return bwd(*args, **kwargs)
    return decorate_bwd
