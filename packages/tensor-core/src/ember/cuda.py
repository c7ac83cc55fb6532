"""ember.cuda: the NVIDIA backend's public face.

The CUDA backend is built when nvcc is found (USE_CUDA=auto|0|1 at build time);
until it is compiled in, and on machines without a driver or GPU, is_available()
is False and device_count() is 0.
"""
from __future__ import annotations

from ember._build_config import BUILD_CONFIG


def is_available() -> bool:
    if not BUILD_CONFIG.get("cuda"):
        return False
    from ember._C import cuda as _cuda  # pragma: no cover - built only with CUDA
    return _cuda.device_count() > 0


def device_count() -> int:
    return 0 if not is_available() else __import__("ember._C.cuda").device_count()


def is_built() -> bool:
    return bool(BUILD_CONFIG.get("cuda"))


def _unavailable(*_, **__):
    raise RuntimeError("ember.cuda: no CUDA device is available (ember was built "
                       f"{'with' if is_built() else 'without'} CUDA support)")


current_device = get_device_name = set_device = _unavailable


def synchronize(device=None):
    if is_available():  # pragma: no cover
        from ember._C import cuda as _cuda
        _cuda.synchronize()


def manual_seed(seed: int):
    """Seed the CUDA generators (they share the CPU's Philox stream definition)."""
    import ember
    ember.manual_seed(seed)
