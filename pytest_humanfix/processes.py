"""Signalling and stopping processes the harness started: the sandbox's executions and its
warm executor, and the model engines of --humanfix-serve. Each runs in its own process group
(the sandbox's in a session of its own), so that stopping it stops everything it started that
stayed in the group, the leader gone first or not (docs/sandbox.md#stopping-a-process-group)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Collection
from pathlib import Path

POLL_SECONDS = 0.05
# How long the group may take to end after SIGKILL (a process in uninterruptible sleep, in a
# GPU driver, ends when the call returns) before `stop_group` gives up and names what is left.
KILL_WAIT = 30.0


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


def group_members(pgid: int) -> list[int]:
    """The live processes of the group: zombies, dead and holding nothing, are not counted
    (one whose parent died waits for init, which in a container may never reap it)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended while the folder was read
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _wait_group(process: subprocess.Popen[bytes], seconds: float,
                spared: Collection[int] = ()) -> bool:
    """Reaps `process` once it ends and waits until the group has no live process but the
    `spared`; False if some remain `seconds` later."""
    deadline = time.monotonic() + seconds
    while True:
        process.poll()
        if not set(group_members(process.pid)) - set(spared):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def stop_group(process: subprocess.Popen[bytes], grace: float = 0.0,
               spared: Collection[int] = ()) -> list[int]:
    """Ends every process of the group that `process` leads, whether the leader is running,
    dead or already reaped, reaps `process`, and waits until no process of the group remains.
    With a grace period the group gets SIGTERM first, and SIGKILL if any of it is still there
    `grace` seconds later; the `spared` (an engine's watchdog, which ignores SIGTERM) are not
    waited for then. Returns the pids besides the `spared` still in the group KILL_WAIT seconds
    after SIGKILL (none unless one is stuck in the kernel)."""
    if process.returncode is not None and not group_members(process.pid):
        # Reaped with nothing of its group left: the pid may lead another group by now.
        return []
    stopped = grace > 0 and signal_group(process.pid, signal.SIGTERM) \
        and _wait_group(process, grace, spared)
    if not stopped:
        signal_group(process.pid, signal.SIGKILL)
        _wait_group(process, KILL_WAIT)
    left = [pid for pid in group_members(process.pid) if pid not in spared]
    if process.pid not in left:
        process.wait()  # dead: a zombie at most, reaped at once
    return left
