"""Signalling and stopping processes the harness started: the sandbox's executions and its
warm executor, and the model engines of --humanfix-serve. Each runs in its own process group
(session), so that stopping it stops everything it started (docs/sandbox.md)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable


def _send(send: Callable[[int, int], None], target: int, sig: int) -> bool:
    try:
        send(target, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_process(pid: int, sig: int) -> bool:
    """Sends `sig` to one process; False when it is gone already or no longer ours."""
    return _send(os.kill, pid, sig)


def signal_group(pgid: int, sig: int) -> bool:
    """Sends `sig` to every process in a group; False when the group is gone already."""
    return _send(os.killpg, pgid, sig)


def stop_group(process: subprocess.Popen[bytes], grace: float = 0.0) -> None:
    """Ends the group that `process` leads and reaps `process`. With a grace period the group
    gets SIGTERM first, and SIGKILL only if `process` is still running `grace` seconds later."""
    if grace > 0 and signal_group(process.pid, signal.SIGTERM):
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            pass
    signal_group(process.pid, signal.SIGKILL)
    process.wait()
