"""Anomaly mode: each recorded node keeps the user's stack at the forward call, so an
error or a NaN in backward names the line of the forward op that caused it. Off by
default: recording then captures no stack."""
from __future__ import annotations

import functools

from ember.autograd.graph import anomaly


def is_anomaly_enabled():
    return anomaly["enabled"]


def is_anomaly_check_nan_enabled():
    return anomaly["check_nan"]


class set_detect_anomaly:
    """Turn anomaly mode on or off: as a call, a context manager or a decorator."""

    def __init__(self, mode, check_nan=True):
        self._prev = (anomaly["enabled"], anomaly["check_nan"])
        anomaly["enabled"] = bool(mode)
        anomaly["check_nan"] = bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        anomaly["enabled"], anomaly["check_nan"] = self._prev
        return False

    def __call__(self, fn):
        mode, check = anomaly["enabled"], anomaly["check_nan"]
        anomaly["enabled"], anomaly["check_nan"] = self._prev

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_detect_anomaly(mode, check):
                return fn(*args, **kwargs)
        return wrapper


class detect_anomaly(set_detect_anomaly):
    """with ember.autograd.detect_anomaly(): ... (also a decorator)."""

    def __init__(self, check_nan=True):
        super().__init__(True, check_nan)
