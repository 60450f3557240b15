"""Stopping a process group: everything in it ends, politely first when there is a grace
period, and a group that is gone already is no error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_humanfix.processes import group_members, signal_group, signal_process, stop_group

# Starts a grandchild in the same group, prints its pid, then waits; ignores SIGTERM if told.
LEADER = """
import signal, subprocess, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
time.sleep(60)
"""


# Starts a child in its own group that ignores SIGTERM (vLLM's workers, say), prints the child's
# pid once the child ignores it, and exits: the group outlives its leader.
ORPHANING_LEADER = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                          "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          "print('ignoring', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
assert child.stdout is not None and child.stdout.readline() == b"ignoring\\n"
print(child.pid, flush=True)
"""


def orphaning_leader() -> tuple[subprocess.Popen[bytes], int]:
    """A group whose leader has exited, leaving a child that ignores SIGTERM."""
    process = subprocess.Popen([sys.executable, "-c", ORPHANING_LEADER],
                               stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.stdout.close()
    return process, child


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


def test_a_spared_member_is_neither_waited_for_nor_killed_in_the_grace_period() -> None:
    """An engine's watchdog, which ignores SIGTERM and is ended after the stop."""
    # A group of this session, as an engine's is, so that a process may join it: a leader that
    # exits, leaving a child that ignores SIGTERM, and a polite member.
    process = subprocess.Popen([sys.executable, "-c", ORPHANING_LEADER], stdout=subprocess.PIPE,
                               process_group=0)
    assert process.stdout is not None
    int(process.stdout.readline())
    process.stdout.close()
    process.wait()
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              process_group=process.pid)
    try:
        spared = [pid for pid in group_members(process.pid) if pid != polite.pid]
        assert len(spared) == 1
        assert stop_group(process, grace=60, spared=spared) == []  # not 60 s, nor SIGKILL
        assert polite.wait(10) == -signal.SIGTERM
        assert not gone(spared[0])
    finally:
        signal_group(process.pid, signal.SIGKILL)


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


def test_a_reaped_leader_whose_group_is_empty_is_not_signalled(monkeypatch) -> None:
    """Its pid may by then lead another process group, which would get SIGTERM and SIGKILL."""
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait()
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    assert stop_group(process, grace=1) == []
    assert sent == [] and process.returncode == 0


@pytest.mark.parametrize("reaped", [True, False], ids=["leader reaped", "leader a zombie"])
def test_a_group_whose_leader_died_first_is_killed_to_its_last_process(reaped: bool) -> None:
    """Before, stop_group returned once the leader had ended: the child that ignores SIGTERM
    kept running (and, in an engine, its GPU and port)."""
    process, child = orphaning_leader()
    if reaped:
        process.wait()
    else:
        while group_members(process.pid) != [child]:  # the leader ended, not yet waited for
            time.sleep(0.01)
    assert group_members(process.pid) == [child]
    assert stop_group(process, grace=0.5) == []
    assert group_members(process.pid) == [] and gone(child)
    assert process.returncode == 0


def test_the_group_members_are_its_live_processes_only() -> None:
    process, grandchild = start("stubborn")
    assert sorted(group_members(process.pid)) == sorted([process.pid, grandchild])
    signal_process(grandchild, signal.SIGKILL)  # a zombie until its parent waits: not counted
    assert gone(grandchild) and group_members(process.pid) == [process.pid]
    stop_group(process)
    assert group_members(process.pid) == []
