"""The sandbox interface: what the agent and the runner need of any executor (`Sandbox`), what
one execution runs (`Job`: the candidate and the tests, two processes), where executions run
(`Layer`), the limits they run under and the verdict they give. Implementations sit beside this
module: `fresh` (a new interpreter per execution), `warm` (fork servers), the layers in `layers`,
and `choose`, which picks among them for a run (docs/sandbox.md).
"""

from __future__ import annotations

import re
import signal
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol


class SandboxError(Exception):
    """The sandbox could not run the program at all: a harness fault, never 'not fixed'."""


class ExecutionLost(SandboxError):
    """The execution's process vanished before the program started (killed from outside, or
    gone with its output files): nothing about the candidate is known, so it is run once more
    (`rerun.TaskSandbox`), as a timeout is; lost twice, it is a harness fault."""


@dataclass(frozen=True)
class Limits:
    timeout: float = 10.0
    memory_bytes: int = 2 << 30
    processes: int = 64
    file_bytes: int = 16 << 20
    output_bytes: int = 16 << 10  # of stdout and of stderr, kept for the report

    def rlimits(self) -> dict[str, tuple[int, int]]:
        cpu = int(self.timeout) + 1
        return {
            "RLIMIT_CPU": (cpu, cpu + 1),
            "RLIMIT_AS": (self.memory_bytes, self.memory_bytes),
            "RLIMIT_NPROC": (self.processes, self.processes),
            "RLIMIT_FSIZE": (self.file_bytes, self.file_bytes),
            "RLIMIT_CORE": (0, 0),
        }


# The two processes of an execution: the candidate answers the calls the tests make.
ROLES = ("candidate", "tests")


@dataclass(frozen=True)
class Side:
    """One process of an execution: the program it runs and the name its tracebacks give it.
    `steps` says the program is a toolchain's plan (JSON: files to write, commands to run; see
    `sandbox/toolchain.py`) rather than Python source run by the interpreter itself."""

    program: str
    name: str
    steps: bool = False


@dataclass(frozen=True)
class Job:
    """One execution: the candidate's program, which answers calls of `entry_point`, and the
    tests' program, which makes them, each in a process of its own that the other cannot
    reach; only plain data crosses between them (docs/sandbox.md#the-tests-and-the-candidate-apart).
    `silent`: any output of either process fails the tests (JavaScript's console.assert prints
    rather than throws, and BigCode judges it by the output)."""

    candidate: Side
    tests: Side
    entry_point: str
    silent: bool = False

    @property
    def roles(self) -> tuple[str, ...]:
        return ROLES

    def side(self, role: str) -> Side:
        return self.candidate if role == "candidate" else self.tests


@dataclass
class Verdict:
    """What one execution showed. `status` is passed, failed or timeout. `exit_code` is the
    candidate's process's; `stdout` and `stderr` hold the candidate's output, then the tests'."""

    status: str
    exit_code: int | None
    seconds: float
    stdout: str
    stderr: str
    network: str
    layer: str = "process"
    executor: str = "fresh"  # fresh interpreter, or a child of the warm executor
    output_limited: bool = False  # stdout or stderr reached the file size limit
    limit: float | None = None  # the wall-clock limit it ran under, in seconds
    rerun: bool = False  # it timed out once and this is its re-run, alone (sandbox/rerun)
    lost: str = ""  # why the execution before this re-run was lost (ExecutionLost), else ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def first_failure(self) -> str:
        return first_failure(self)

    def to_dict(self) -> dict:
        return asdict(self)


# The last line of a traceback: the exception's (possibly dotted) name.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b|^\w+Error")
# An assert of the tests explained inside the sandbox (agent/feedback, inside/explain.py), and
# how many of its message's lines after the first are kept.
EXPLAINED = "AssertionError: assert "
EXPLAINED_LINES = 6
SIGNAL_HINTS = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)",
                "SIGKILL": " (killed)", "SIGSEGV": " (crash, e.g. stack overflow)"}
# What the tests' process says when the candidate's ended before it answered a call
# (inside/tests.py): the harness, which saw how it ended, adds that.
ENDED = "the candidate's process ended before it answered"


def death(code: int | None) -> str:
    """How a process ended, from its exit status (negative: the signal that killed it)."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}{SIGNAL_HINTS.get(name, '')}"
    return f"exit status {code}"


def first_failure(verdict: Verdict) -> str:
    """One or two lines a person reads first: the failing statement and the exception."""
    if verdict.status == "timeout":
        limit = "sandbox wall-clock limit" + (f" {verdict.limit:g} s" if verdict.limit else "")
        again = "; re-run alone, it timed out again" if verdict.rerun else ""
        return f"timed out after {verdict.seconds:.1f} s ({limit}{again})"
    if verdict.output_limited:
        return ("the program's output reached the sandbox's file size limit and was cut "
                f"(exit status {verdict.exit_code})")
    lines = [line for line in verdict.stderr.splitlines() if line.strip()]
    exception = next((line for line in reversed(lines) if EXCEPTION_LINE.match(line)), None)
    code = verdict.exit_code
    if exception is None:
        if code is not None and code < 0:
            return death(code)
        return lines[-1] if lines else f"exit status {code} with no error output"
    index = len(lines) - 1 - lines[::-1].index(exception)
    if ENDED in exception and code is not None:
        exception += f" ({death(code)})"
    if exception.startswith(EXPLAINED):
        # An explained assert (agent/feedback): its message, on the lines after, holds the
        # assert as written, the values it compared and the calls that made them.
        return "\n".join([exception.removeprefix("AssertionError: "),
                          *lines[index + 1:index + 1 + EXPLAINED_LINES]])
    statement = ""
    for previous in reversed(lines[:index]):
        if previous.startswith("    ") and not previous.lstrip().startswith(("^", "~")):
            statement = previous.strip()
            break
        if previous.lstrip().startswith("File "):
            break
    return f"{statement}\n{exception}" if statement else exception


class Layer(Protocol):
    """Where executions run: `command` wraps an argv so it runs inside the layer, with `root`
    (a harness folder) as its only writable place, seen inside at `inside(root)`, and the
    harness folders `readable` (a worker's compile caches) visible read-only at their paths."""

    name: str
    network: str

    def command(self, argv: list[str], root: Path, cwd: Path,
                readable: tuple[Path, ...] = ()) -> list[str]: ...

    def inside(self, path: Path, root: Path) -> str: ...

    def exit_code(self, code: int) -> int: ...

    def describe(self) -> str: ...


class Sandbox(Protocol):
    """What the agent and the runner need of an executor: fresh, warm, under either layer."""

    @property
    def layer(self) -> Layer: ...

    def run(self, job: Job, timeout: float | None = None) -> Verdict: ...

    def shutdown(self) -> None: ...

