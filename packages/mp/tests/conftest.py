import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # ember_mp_testhelpers

import ember.multiprocessing as mp  # noqa: E402


@pytest.fixture
def strategy():
    """Restores the sharing strategy (and its environment variable) after a test."""
    before = mp.get_sharing_strategy()
    env = os.environ.get("EMBER_SHARING_STRATEGY")
    yield mp.set_sharing_strategy
    mp.set_sharing_strategy(before)
    if env is None:
        os.environ.pop("EMBER_SHARING_STRATEGY", None)
    else:
        os.environ["EMBER_SHARING_STRATEGY"] = env

