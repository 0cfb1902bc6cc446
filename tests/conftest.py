"""Suite-wide setup: SIGINT reaches the suite's Ctrl-C tests however the suite is started, and the suite builds its
solutions in a cache of its own."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile

_OWN_CACHE: list[str] = []


def pytest_configure(config):
    # Started from a background job or nohup, the suite inherits SIGINT ignored, and so would every program it
    # starts (an ignored signal stays ignored across exec): the Ctrl-C tests would send SIGINT to processes that
    # never see it. Python's own handler, taken back here, becomes the default action in each child, where
    # Python installs its handler again.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # What the machine's cache holds must not change what a test sees: with the two-player solution built there
    # (python -m yacht_env.duel build), the coach's odds are exact where the tests expect the win agent's estimate.
    # The suite builds what it needs in a folder of its own (as on a fresh machine), which YACHT_RL_CACHE_DIR may
    # name instead; the programs the tests start inherit it.
    if "YACHT_RL_CACHE_DIR" not in os.environ:
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="yacht-rl-test-cache-"))
        os.environ["YACHT_RL_CACHE_DIR"] = _OWN_CACHE[0]


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
