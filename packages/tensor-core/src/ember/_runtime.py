"""Process-wide settings and small runtime names PyTorch has at the top of `torch`:
the default device, float32 matmul precision, thread counts, flushing denormals,
anomaly mode, inference tensors, device modules, DLPack export, the legacy default
tensor type, and the exception classes ember raises (OutOfMemoryError,
AcceleratorError)."""
from __future__ import annotations

import importlib

from ember._C import core as _core
from ember._default_device import get_default_device, set_default_device  # noqa: F401
from ember._errors import AcceleratorError, OutOfMemoryError  # noqa: F401

__all__ = ["get_default_device", "set_default_device", "get_float32_matmul_precision",
           "set_float32_matmul_precision", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "set_flush_denormal",
           "is_anomaly_enabled", "set_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "is_inference", "get_device_module", "to_dlpack", "set_default_tensor_type",
           "OutOfMemoryError", "AcceleratorError"]


# float32 matmul precision ---------------------------------------------------------------

_PRECISIONS = ("highest", "high", "medium")
_precision = ["highest"]


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: "highest" (full float32 products), "high"
    (TF32 allowed) or "medium" (PyTorch would also allow bfloat16 products). ember
    honours it in the CUDA GEMM: "high" and "medium" both set
    ember.backends.cuda.matmul.allow_tf32 (ember never computes float32 products in
    bfloat16, so "medium" computes as "high"), "highest" clears it. The CPU and OpenCL
    GEMMs always compute in full float32: there is no lower-precision path for them to
    take."""
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of "
                         f"{', '.join(map(repr, _PRECISIONS))}, got {precision!r}")
    from ember.backends.cuda import matmul
    _precision[0] = precision
    matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    """The current float32 matmul precision (follows allow_tf32 when it was set
    directly, as PyTorch: True reads as "high")."""
    from ember.backends.cuda import matmul
    if not matmul.allow_tf32:
        return "highest"
    return _precision[0] if _precision[0] != "highest" else "high"


# threads --------------------------------------------------------------------------------

_interop = [None]


def get_num_interop_threads():
    """Threads for inter-op parallelism. ember runs one op at a time on its calling
    thread (with the intra-op pool of get_num_threads for large ops), so this is a
    setting it records for PyTorch's API; it defaults to the intra-op count."""
    if _interop[0] is None:
        from ember.ops.matmul import get_num_threads
        return get_num_threads()
    return _interop[0]


def set_num_interop_threads(nthreads):
    """Record the inter-op thread count (see get_num_interop_threads: ember has no
    inter-op pool, so it changes no scheduling). Like PyTorch, it can be set once."""
    from ember._args import int_arg
    n = int_arg(nthreads, "nthreads", "set_num_interop_threads")
    if n < 1:
        raise ValueError(f"set_num_interop_threads: expected a positive number of threads, "
                         f"got {n}")
    if _interop[0] is not None:
        raise RuntimeError("set_num_interop_threads: the number of interop threads can only "
                           "be set once (as in PyTorch)")
    _interop[0] = n


def init_num_threads():
    """Initialise the calling thread for ember's CPU kernels (torch.init_num_threads):
    applies the thread-count and flush-denormal settings; ember's pool reads them at
    each parallel call, so there is nothing more to do."""
    from ember.ops.matmul import get_num_threads, set_num_threads
    set_num_threads(get_num_threads())
    _core._set_flush_denormal(_core._get_flush_denormal())


def set_flush_denormal(mode):
    """Flush denormal floats to zero on the CPU (torch.set_flush_denormal): on x86 sets
    MXCSR's FTZ and DAZ bits, on the calling thread and on every thread of ember's CPU
    pool, and returns True; on other CPUs returns False and changes nothing. Affects
    float32/float64 arithmetic on the CPU only."""
    return _core._set_flush_denormal(bool(mode))


# anomaly mode ---------------------------------------------------------------------------

def _anomaly():
    try:
        return importlib.import_module("ember.autograd.anomaly_mode")
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("ember.autograd"):
            return None
        raise


def is_anomaly_enabled():
    """Whether ember.autograd's anomaly mode is on (False without ember-autograd)."""
    m = _anomaly()
    return bool(m and m.is_anomaly_enabled())


def is_anomaly_check_nan_enabled():
    m = _anomaly()
    return bool(m and m.is_anomaly_check_nan_enabled())


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn ember.autograd's anomaly mode on or off (torch.set_anomaly_enabled; the
    same switch as ember.autograd.set_detect_anomaly)."""
    m = _anomaly()
    if m is None:
        from ember._components import missing
        raise missing("ember.autograd", "autograd")
    m.set_detect_anomaly(bool(enabled), bool(check_nan))


# tensors --------------------------------------------------------------------------------

def is_inference(input):
    """Whether input is an inference tensor: its memory was allocated inside
    ember.inference_mode() (views of it are too; a view made there of a normal tensor
    is not), as torch.is_inference."""
    from ember._args import tensor_arg
    return bool(tensor_arg(input, "is_inference").untyped_storage().inference)


_DEVICE_MODULES = {"cpu": "ember.cpu", "cuda": "ember.cuda", "opencl": "ember.opencl"}


def get_device_module(device=None):
    """The module of a device type (torch.get_device_module): ember.cuda for "cuda",
    ember.opencl for "opencl", ember.cpu for "cpu"; None means the current
    accelerator's (ember.cpu when there is none)."""
    if device is None:
        from ember import accelerator
        acc = accelerator.current_accelerator()
        name = "cpu" if acc is None else acc.type
    elif isinstance(device, str) and ":" not in device and device in _DEVICE_MODULES:
        name = device
    else:
        try:
            name = _core.as_device(device).type
        except (TypeError, ValueError):
            raise RuntimeError(f"get_device_module: device {device!r} is not a device type "
                               f"ember knows ({', '.join(_DEVICE_MODULES)})") from None
    return importlib.import_module(_DEVICE_MODULES[name])


def to_dlpack(tensor):
    """A DLPack capsule of tensor's memory (torch.to_dlpack; tensor.__dlpack__())."""
    from ember._args import tensor_arg
    return tensor_arg(tensor, "to_dlpack").__dlpack__()


_LEGACY_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                 "BFloat16Tensor": "bfloat16"}


def set_default_tensor_type(t):
    """The legacy torch.set_default_tensor_type: ember.FloatTensor, DoubleTensor or
    HalfTensor (or their names, "torch.FloatTensor" and "ember.DoubleTensor" alike)
    set the default floating dtype, as ember.set_default_dtype; "torch.cuda.X" forms
    also set the default device to cuda. Integer types raise TypeError, as PyTorch."""
    if isinstance(t, str):
        name = t
    elif isinstance(t, type):
        name = f"{getattr(t, 'device_type', 'cpu')}.{t.__name__}"
    else:
        raise TypeError(f"set_default_tensor_type: expected a tensor type or its name, got "
                        f"{type(t).__name__}")
    parts = name.split(".")
    base = parts[-1]
    cuda = "cuda" in parts[:-1]
    if base not in _LEGACY_TYPES:
        raise TypeError(f"set_default_tensor_type: only floating-point types are supported "
                        f"as the default type, got {t!r}")
    from ember._dtypes import set_default_dtype
    set_default_dtype(_core._dtype_by_name(_LEGACY_TYPES[base]))
    set_default_device("cuda" if cuda else None)
