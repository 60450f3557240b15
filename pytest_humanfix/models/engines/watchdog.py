"""Kills an engine's whole process group once the controller is gone, however it went: vLLM's
server starts an engine core and workers of its own, which outlived a controller killed
outright when only the server had a death signal. It runs in the engine's group and blocks on
a pipe whose other end only the controller holds; the kernel closes that end when the
controller exits, from any thread, by any signal. A stop of the group ends it with the engine.
Standard library only: it runs as a file, with no import path of the package.

    python -I pytest_humanfix/models/engines/watchdog.py PIPE_FD

See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import os
import signal
import sys


def watch(lifeline: int) -> None:
    while os.read(lifeline, 1):  # nothing is ever written: only the end comes
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
