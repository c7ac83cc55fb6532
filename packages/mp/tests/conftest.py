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



_HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(items):
    # Python 3.12+ warns (DeprecationWarning, an error under this repo's pytest
    # settings) when a process with threads forks; forking with threads alive (the
    # Queue feeder, ember's thread pool) is what these tests check is safe.
    for item in items:
        if str(item.fspath).startswith(_HERE):
            item.add_marker(pytest.mark.filterwarnings(
                "ignore:This process .* is multi-threaded:DeprecationWarning"))
