"""Stopping a process group: everything in it ends, politely first when there is a grace
period, and a group that is gone already is no error."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_humanfix.processes import signal_group, signal_process, stop_group

# Starts a grandchild in the same group, prints its pid, then waits; ignores SIGTERM if told.
LEADER = """
import signal, subprocess, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
time.sleep(60)
"""


def start(mode: str) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen([sys.executable, "-c", LEADER, mode], stdout=subprocess.PIPE,
                               start_new_session=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie its new parent has not reaped yet."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return not signal_process(pid, 0)
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def test_a_group_that_obeys_sigterm_ends_within_the_grace_period() -> None:
    process, grandchild = start("polite")
    began = time.monotonic()
    stop_group(process, grace=10)
    assert process.returncode == -signal.SIGTERM and time.monotonic() - began < 5
    assert gone(grandchild)


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    process, grandchild = start("stubborn")
    stop_group(process, grace=0.5)
    assert process.returncode == -signal.SIGKILL
    assert gone(grandchild)


def test_without_grace_the_group_is_killed_at_once() -> None:
    process, grandchild = start("polite")
    stop_group(process)
    assert process.returncode == -signal.SIGKILL
    assert gone(grandchild)


def test_signalling_a_group_that_is_gone_is_no_error() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait()
    assert signal_group(process.pid, signal.SIGKILL) is False
    stop_group(process, grace=1)  # already reaped: nothing to do, nothing raised
    assert process.returncode == 0
