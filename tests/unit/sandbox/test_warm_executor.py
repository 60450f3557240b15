"""The warm executor gives each execution what a fresh interpreter would: nothing one child
changes reaches the next, and it falls back to fresh interpreters, saying so, where it cannot
start."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from pytest_humanfix.sandbox import choose as sandbox_setup, fresh
from pytest_humanfix.sandbox.environment import Limits, SandboxError
from sandbox_jobs import script_job
from pytest_humanfix.sandbox.choose import make_sandbox

SPOIL = """
import os, numpy, math
open("leak.txt", "w").write("x")
open("../leak.txt", "w").write("x")  # the executor's shared folder, one level up
numpy.leak = math.pi = 3
os.environ["LEAK"] = "1"
print(os.getcwd())
"""

CHECK = """
import os, numpy, math
assert not os.path.exists("leak.txt") and not os.path.exists("../leak.txt")
assert not hasattr(numpy, "leak") and math.pi != 3 and "LEAK" not in os.environ
print(os.getcwd())
"""


@pytest.mark.parametrize("layer", ["bwrap", "process"])
def test_nothing_one_child_changes_reaches_the_next(layer: str) -> None:
    choice = make_sandbox(layer, "warm", Limits(timeout=5))
    assert choice.sandbox.executor == "warm"
    first = choice.sandbox.run(script_job(SPOIL))
    second = choice.sandbox.run(script_job(CHECK))
    assert first.passed and first.executor == "warm", first.stderr
    assert second.passed, second.stderr
    assert first.stdout != second.stdout, "two executions shared a working folder"


def test_an_unstarted_warm_executor_starts_at_its_first_execution() -> None:
    """What an xdist controller gets: no server until it has something to run."""
    choice = make_sandbox("auto", "warm", Limits(timeout=5), start="first-run")
    assert choice.sandbox.executor == "warm" and choice.sandbox.server_pids == set()
    assert choice.sandbox.run(script_job("print(1)")).passed
    assert choice.sandbox.server_pids


def test_warm_falls_back_to_fresh_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_start(self) -> None:
        raise SandboxError("the server could not import the prelude")

    monkeypatch.setattr(sandbox_setup.WarmSandbox, "start", cannot_start)
    choice = make_sandbox("auto", "auto", Limits(timeout=5))
    assert choice.sandbox.executor == "fresh"
    assert any("warm executor unavailable: the server could not import the prelude" in note
               for note in choice.notes)
    assert choice.sandbox.run(script_job("print(1)")).passed
    with pytest.raises(SandboxError, match="--humanfix-executor warm: the server could not"):
        make_sandbox("auto", "warm", Limits(timeout=5))


def test_an_interrupted_execution_does_not_confuse_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-timeout or Ctrl-C may interrupt the harness while a child runs."""
    import signal

    warm = make_sandbox("auto", "warm", Limits(timeout=10)).sandbox

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            warm.run(script_job("import time\ntime.sleep(5)\nprint('late')"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    after = warm.run(script_job("print('next')"))
    assert after.passed and after.stdout == "next\n"


def test_execution_folders_live_in_memory_and_stale_ones_are_removed(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(fresh, "SHM", shm)
    choice = make_sandbox("auto", "warm", Limits(timeout=10), start="first-run")
    try:
        assert choice.sandbox.executor == "warm"
        assert choice.sandbox.home.parent == shm
        assert choice.sandbox.run(script_job("print('in memory')")).stdout == "in memory\n"
    finally:
        choice.sandbox.shutdown()
    # A folder of a harness that died (no such pid) goes at the next start; a live one stays.
    dead, live = shm / "humanfix-warm-999999999-x", shm / f"humanfix-warm-{os.getpid()}-y"
    dead.mkdir()
    live.mkdir()
    fresh.remove_stale_folders()
    assert not dead.exists() and live.exists()
    monkeypatch.setattr(fresh, "SHM", tmp_path / "no-shm")  # none: the temporary folder
    assert fresh.memory_folder() is None
    elsewhere = fresh.temp_folder("warm", fresh.memory_folder())
    elsewhere.rmdir()
    assert elsewhere.parent == Path(tempfile.gettempdir())


def test_a_launched_warm_executor_is_waited_for_before_the_first_task() -> None:
    """What an xdist worker gets: the server imports the prelude while the worker collects."""
    choice = make_sandbox("auto", "warm", Limits(timeout=5), start="launch")
    try:
        assert choice.sandbox.executor == "warm" and choice.sandbox.starting
        choice.ready()
        assert not choice.sandbox.starting and choice.sandbox.server_pids
        assert choice.sandbox.run(script_job("print(1)")).stdout == "1\n"
    finally:
        choice.sandbox.shutdown()


def test_a_launched_warm_executor_that_cannot_start_gives_way_to_fresh(tmp_path) -> None:
    # An interpreter that exits at once: the server never says "ready".
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    choice = make_sandbox("process", "auto", Limits(timeout=5), python=str(python),
                          start="launch")
    assert choice.sandbox.executor == "warm"
    choice.ready()
    assert choice.sandbox.executor == "fresh"
    assert ("warm executor unavailable: the warm executor's candidate server did not start"
            in choice.notes[-1])


def waiting_children(sandbox) -> set[int]:
    """The servers' children that are not part of the chains that hold them: one each."""
    return sandbox.resident_pids - sandbox.server_pids


def test_the_next_child_is_forked_ahead_and_only_after_the_last_execution_is_gone() -> None:
    choice = make_sandbox("auto", "warm", Limits(timeout=5))
    sandbox = choice.sandbox
    try:
        # A candidate that leaves a detached process behind: it is killed with the execution's
        # cgroup before the next child is asked for.
        left = sandbox.run(script_job("import os, time\nif os.fork() == 0:\n"
                                             "    os.setsid()\n    time.sleep(30)\n"))
        assert left.passed, left.stderr
        deadline = time.monotonic() + 5
        while len(waiting_children(sandbox)) != 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        # One for the candidate and one for the tests, forked before they are needed.
        children = waiting_children(sandbox)
        assert len(children) == 2
        second = sandbox.run(script_job("import os\nprint(os.getpid() > 0)"))
        assert second.passed and second.stdout == "True\n"
        assert not children & waiting_children(sandbox)  # those ran the second execution
    finally:
        sandbox.shutdown()


def test_a_link_a_candidate_plants_at_a_later_executions_name_leads_nowhere(tmp_path) -> None:
    """Execution folders are numbered in the shared mount, where the candidate's working folder
    is one of them: links planted at the next numbers go with the execution that planted them,
    so the harness never writes through them."""
    target = tmp_path / "outside"
    target.mkdir()
    choice = make_sandbox("auto", "warm", Limits(timeout=5))
    try:
        plant = choice.sandbox.run(script_job((
            "import os\n"
            "for n in range(1, 6):\n"
            f"    os.symlink({str(target)!r}, os.path.join('..', str(n)))\n")))
        assert plant.passed, plant.stderr
        for _ in range(3):
            after = choice.sandbox.run(script_job("print('inside')"))
            assert after.passed and after.stdout == "inside\n", after.stderr
    finally:
        choice.sandbox.shutdown()
    assert list(target.iterdir()) == []
