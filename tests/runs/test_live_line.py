"""The live progress line on a pseudo-terminal: the control on a few tasks, in one process and
under xdist, rewrites one line in place (carriage returns, no newline between updates) with
the run's figures, stands in for pytest's letters, and is cleared before the summary. In a log,
the closing line stands on a line of its own."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LINE = re.compile(r"\rhumanfix (\d+)/(\d+) tasks \| fixed (\d+), pass@1 [\d.]+% \[[\d.]+%, "
                  r"[\d.]+%\] \| errors (\d+) \| \d+ tok/s \| (?:\d+m\d\ds left|done)")


def on_a_terminal(folder: Path, *args: str) -> str:
    """What `pytest ARGS` writes to a pseudo-terminal of 120 columns, colour codes dropped."""
    controller, terminal = pty.openpty()
    os.set_blocking(controller, True)
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                               cwd=folder, env=env, stdin=terminal, stdout=terminal,
                               stderr=terminal, close_fds=True)
    os.close(terminal)
    written = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end closed: the run is over
            break
        if not chunk:
            break
        written += chunk
    os.close(controller)
    assert process.wait(timeout=300) == 0, written.decode(errors="replace")[-3000:]
    return ANSI.sub("", written.decode(errors="replace"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_live_line_updates_in_place_on_a_terminal(humanfix_pytester, workers):
    output = on_a_terminal(humanfix_pytester.path, "--humanfix-model", "canonical",
                           "--humanfix-max", "4", *workers)
    run = output[output.index("collected" if not workers else "created:"):
                 output.index("humanfix summary")]
    updates = LINE.findall(run)
    assert updates, run
    done = [int(found[0]) for found in updates]
    assert {found[1] for found in updates} == {"4"} and {found[3] for found in updates} == {"0"}
    assert done == sorted(done) and done[0] >= 1 and len(set(done)) >= 2, updates
    # One line: between the first update and the last no newline, and no letter of pytest's.
    first, last = run.index("\rhumanfix "), run.rindex("\rhumanfix ")
    assert "\n" not in run[first:last]
    assert "...." not in run
    # Cleared at the end: the last update is overwritten with blanks before the summary.
    assert re.search(r"\r {60,}\r", run[last:]), repr(run[last:])
    assert "4 passed" in output


def test_in_a_log_the_closing_line_stands_on_its_own_line(humanfix_pytester):
    """Not a terminal: pytest's letters stay, and the plain line never runs on after them."""
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model=canonical",
                                                    "--humanfix-max=4", "-p", "no:cacheprovider")
    lines = result.outlines
    closing = [line for line in lines if "humanfix 4/4 tasks" in line]
    assert len(closing) == 1, lines
    assert closing[0].startswith("humanfix 4/4 tasks | fixed 4, pass@1 100.0%"), closing
    assert any(re.search(r"\.\.\.\.\s+\[100%\]$", line) for line in lines), lines
