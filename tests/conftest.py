"""Suite-wide setup: SIGINT reaches the suite's Ctrl-C tests however the suite is started."""

from __future__ import annotations

import signal


def pytest_configure(config):
    # Started from a background job or nohup, the suite inherits SIGINT ignored, and so would every program it
    # starts (an ignored signal stays ignored across exec): the Ctrl-C tests would send SIGINT to processes that
    # never see it. Python's own handler, taken back here, becomes the default action in each child, where
    # Python installs its handler again.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
