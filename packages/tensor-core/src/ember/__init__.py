"""ember: NumPy-like tensors with GPU acceleration, the core of the ember framework.

    import ember as em
    x = em.arange(6, dtype=em.float32).reshape(2, 3)
    (x.T @ x).sum()

This package (ember-tensor-core) is complete on its own; ember.autograd, ember.nn,
ember.optim, ember.data and ember.multiprocessing come from their own packages and
install into this namespace.
"""
from __future__ import annotations

# ember.autograd, ember.nn, ... are installed into this package by their own
# distributions, possibly from other folders (a source checkout on PYTHONPATH).
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from ember._version import __version__  # noqa: F401
from ember._C import core as _core
from ember._C.core import DType as dtype, Device as device, Storage  # noqa: F401
from ember._dtypes import (  # noqa: F401
    bool, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128,
    bfloat16, uint16, uint32, uint64, cfloat, cdouble,
    half, float, double, short, int, long,
    finfo, iinfo, result_type, can_cast, promote_types, get_default_dtype, set_default_dtype,
)
from ember._tensor import Tensor, Size  # noqa: F401
from ember._grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)
from ember.ops.elementwise import *  # noqa: F401,F403
from ember.ops.foreach import *  # noqa: F401,F403
from ember.ops.reduction import *  # noqa: F401,F403
from ember.ops.creation import *  # noqa: F401,F403
from ember.ops.views import *  # noqa: F401,F403
from ember.ops.conversion import *  # noqa: F401,F403
from ember.ops.complex import *  # noqa: F401,F403
from ember._interop import *  # noqa: F401,F403
from ember.ops.shape import *  # noqa: F401,F403
from ember.ops.index import *  # noqa: F401,F403
from ember.ops.sort import *  # noqa: F401,F403
from ember.ops.scan import *  # noqa: F401,F403
from ember.ops.random import *  # noqa: F401,F403
from ember._printing import *  # noqa: F401,F403
from ember.ops.matmul import *  # noqa: F401,F403
from ember.ops.softmax import *  # noqa: F401,F403
from ember.ops.norm import *  # noqa: F401,F403
from ember.ops.loss import *  # noqa: F401,F403
from ember.ops.dropout import *  # noqa: F401,F403
from ember.ops.embedding import *  # noqa: F401,F403
from ember.ops.conv import *  # noqa: F401,F403
from ember.ops.pool import *  # noqa: F401,F403
from ember.ops.legacy import *  # noqa: F401,F403
from ember.ops.linalg import *  # noqa: F401,F403
from ember.ops.linalg import (  # noqa: F401  (PyTorch's legacy forms, see ops/linalg.py)
    cholesky_legacy as cholesky, lu_legacy as lu, lu_solve_legacy as lu_solve, qr_legacy as qr,
    svd_legacy as svd)
from ember.ops.lowrank import *  # noqa: F401,F403
from ember.ops.special import *  # noqa: F401,F403
from ember.ops.fft import *  # noqa: F401,F403
from ember import _registry, _interop, _components
from ember.ops import views as _views, creation as _creation, legacy as _legacy_methods

_core._set_python_types(Size, _creation.as_tensor)
_views._install_properties(Tensor)
_legacy_methods._install_properties(Tensor)
_interop._install_dunders(Tensor)
_registry.install(Tensor)

from ember import cpu, cuda, opencl  # noqa: E402,F401
from ember import accelerator, jit  # noqa: E402,F401
from ember import special  # noqa: E402,F401
from ember.backends import cudnn as _cudnn  # noqa: E402,F401  (em.backends.cudnn)
from ember._legacy import *  # noqa: E402,F401,F403  (em.FloatTensor, em.LongTensor, ...)
from ember._deterministic import *  # noqa: E402,F401,F403
from ember.array_api import astype, isdtype  # noqa: E402,F401
from ember import fft  # noqa: E402,F401  (ember.fft, as torch.fft)
from ember.serialization import save, load  # noqa: E402,F401
from ember._runtime import *  # noqa: E402,F401,F403  (default device, settings, errors)
from ember import func  # noqa: E402,F401
from ember.func import cond, vmap, while_loop  # noqa: E402,F401
from ember import _default_device  # noqa: E402

_default_device.install(globals())   # factories honour set_default_device / with device

from ember import amp  # noqa: E402,F401
from ember.amp.autocast_mode import (  # noqa: E402,F401
    autocast, is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype,
    is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache,
    autocast_increment_nesting, autocast_decrement_nesting, is_autocast_cpu_enabled,
    set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype,
    get_autocast_gpu_dtype, set_autocast_gpu_dtype,
)
from ember.amp import _policy as _amp_policy  # noqa: E402
from ember._layout_formats import (  # noqa: E402,F401
    memory_format, contiguous_format, channels_last, channels_last_3d, preserve_format,
)

_amp_policy.install(globals())      # autocast's listed entries (x.sum(), x @ w included)
from ember import _layout_formats as _layout_formats_module  # noqa: E402
_layout_formats_module._install()   # Tensor.is_contiguous(memory_format=...)

empty_cache = _core.empty_cache
e = 2.718281828459045
pi = 3.141592653589793
inf = __builtins__["float"]("inf") if isinstance(__builtins__, dict) else 1e309
nan = inf - inf
newaxis = None


# Components that live in other distributions: `em.nn`, `import ember.nn` and
# `from ember import nn` work once ember-nn is installed and name the package to
# install otherwise; ember.utils.data is ember.data (ember._components' finders).
_components.install()


def __getattr__(name):
    if name in _components.PACKAGES:
        import importlib
        return importlib.import_module(f"ember.{name}")
    if name in _components.NN_FUNCTIONS:     # torch.celu & co: ember-nn's code
        fn = globals()[name] = _components.nn_function(name)
        return fn
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _components.NN_FUNCTIONS)


try:        # the tape records from the first op on, so it is installed at import
    import ember.autograd  # noqa: E402,F401
except ModuleNotFoundError as _e:
    if _e.name != "ember.autograd":
        raise
