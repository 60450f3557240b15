"""Kills an engine's whole process group once the controller is gone, however it went. It runs
in the engine's group and blocks on a pipe whose other end only the controller holds, which the
kernel closes when the controller exits, by any signal, and the controller after a stop. It
ignores a stop's SIGTERM, to watch on through the engine's grace period, and says so on
READY_FD: a stop sent before would end it and leave the group unwatched. Standard library only:
it runs as a file, with no import path of the package.

    python -I pytest_humanfix/models/engines/watchdog.py PIPE_FD READY_FD

See docs/models.md, "OpenAI-compatible servers and a shared engine".
"""

from __future__ import annotations

import os
import signal
import sys


def watch(lifeline: int, ready: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.write(ready, b"1")
    os.close(ready)
    while os.read(lifeline, 1):  # nothing is ever written: only the end comes
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]), int(sys.argv[2]))
