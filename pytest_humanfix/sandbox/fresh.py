"""Run a candidate program against a task's tests, isolated from the harness, in a fresh
interpreter per execution (the warm executor's children reuse this path's folder, limits and
verdict). Every execution gets its own folder and process group, stdin closed, an environment
without secrets, rlimits before any candidate code, capped output and no network; a pass needs
a one-time nonce written after the tests returned, so an early exit with status 0 is never one.
What that proof does not stop: docs/sandbox.md#the-proof-that-the-tests-ran.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..processes import signal_group
from .cgroup import Cgroup
from .environment import ExecutionLost, Layer, Limits, SandboxError, Verdict
from .inside import program
from .layers import ProcessLayer
from .outputs import STDERR_NAME, STDOUT_NAME, Outputs

PROGRAM_NAME = "program.py"
DONE_NAME = ".humanfix-done"
STARTED_NAME = ".humanfix-started"
# The most the done file may hold: the nonce, and room to spare.
DONE_BYTES = 256
# What a fresh interpreter runs: the code every execution runs before the candidate, then the
# bootstrap that reads its configuration from a pipe (see inside/).
BOOTSTRAP = program("child.py", "bootstrap.py")

# Variables the candidate sees; nothing else of the harness's environment crosses over.
SAFE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


# A RAM-backed tmpfs, where the system has one, and the room it must have free to be used.
SHM = Path("/dev/shm")
MEMORY_FOLDER_FREE = 1 << 30


def memory_folder() -> Path | None:
    """The tmpfs for the warm executor's execution folders, None where there is none we can
    write or it has less than MEMORY_FOLDER_FREE free (Docker's default is 64 MiB, shared by
    every worker). Each execution writes its program and outputs and removes them within
    milliseconds: on tmpfs that touches no disk (what it saves: docs/benchmarks.md#fixed-costs).
    Only executions in a memory cgroup use it: what a candidate writes there is charged
    to that cgroup, so its memory limit bounds it."""
    try:
        usable = os.access(SHM, os.W_OK | os.X_OK) and SHM.is_dir()
        stats = os.statvfs(SHM) if usable else None
    except OSError:
        return None
    if stats is None or stats.f_bavail * stats.f_frsize < MEMORY_FOLDER_FREE:
        return None
    return SHM


def temp_folder(kind: str, root: Path | None = None) -> Path:
    """A new private folder named for this process, so a later run can tell it is stale; in
    `root`, else the system's temporary folder."""
    return Path(tempfile.mkdtemp(prefix=f"humanfix-{kind}-{os.getpid()}-",
                                 dir=str(root) if root is not None else None))


def remove_stale_folders() -> None:
    """Folders of harness processes that died without cleaning up (SIGKILL, a crashed worker)."""
    roots = dict.fromkeys([Path(tempfile.gettempdir()), memory_folder()])
    for root in filter(None, roots):
        for folder in root.glob("humanfix-*-*-*"):
            pid = folder.name.split("-")[2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Execution:
    """One execution's files on the harness's side; `box` is the candidate's working folder."""

    root: Path
    mount: Path  # the folder the layer makes writable: root itself, or the warm executor's
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))
    outputs: Outputs | None = None  # opened by `prepare`, closed by `close`

    def inside(self, layer: Layer, path: Path) -> str:
        return layer.inside(path, self.mount)

    @property
    def box(self) -> Path:
        return self.root / "box"

    @property
    def stdout(self) -> Path:
        return self.root / STDOUT_NAME

    @property
    def stderr(self) -> Path:
        return self.root / STDERR_NAME

    def prepare(self, program: str) -> None:
        # A fresh interpreter's folder is new already; the warm executor's is made here, never
        # through a link or file left at its name (mkdir refuses anything already there).
        if self.root.is_symlink() or not self.root.is_dir():
            self.root.mkdir()
        self.box.mkdir()
        (self.box / PROGRAM_NAME).write_text(program, encoding="utf-8")
        # The output files exist, opened by the harness, before the candidate runs: what it
        # leaves at their names later is never read (sandbox/outputs).
        self.outputs = Outputs(self.root, self.box)

    def opened(self) -> Outputs:
        if self.outputs is None:
            raise SandboxError("the execution's output files were never opened (prepare)")
        return self.outputs

    def close(self) -> None:
        if self.outputs is not None:
            self.outputs.close()

    def config(self, layer: Layer, rlimits: dict) -> dict:
        """What the code before the candidate needs, with paths as seen inside the layer."""
        return {"network": layer.network, "rlimits": rlimits, "nonce": self.nonce,
                "program": PROGRAM_NAME,
                "started": self.inside(layer, self.box / STARTED_NAME),
                "done": self.inside(layer, self.box / DONE_NAME)}

    def verdict(self, code: int | None, timed_out: bool, seconds: float, limits: Limits,
                layer: Layer, executor: str) -> Verdict:
        outputs = self.opened()
        if outputs.small_file(STARTED_NAME, 0) is None and not outputs.attacks:
            # The candidate never ran: checked before any output is read, since a process
            # that vanished may have written none.
            raise self.not_started(code, timed_out, limits, layer, executor)
        proven = outputs.small_file(DONE_NAME, DONE_BYTES) == self.nonce
        outputs.check_replaced()
        attack = "; ".join(outputs.attacks)
        if timed_out:
            status = "timeout"
        elif attack:
            status = "failed"  # whatever it proved, it tampered with what proves it
        elif code == 0:
            status = "passed" if proven else "exited_early"
        else:
            status = "failed"
        return Verdict(status=status, exit_code=code, seconds=round(seconds, 4),
                       stdout=outputs.text(outputs.stdout, limits.output_bytes, tail=False),
                       stderr=outputs.text(outputs.stderr, limits.output_bytes, tail=True),
                       network=layer.network, layer=layer.name,
                       executor=executor, limit=limits.timeout, output_limited=max(
                           outputs.size(outputs.stdout),
                           outputs.size(outputs.stderr)) >= limits.file_bytes, attack=attack)

    def not_started(self, code: int | None, timed_out: bool, limits: Limits, layer: Layer,
                    executor: str) -> SandboxError:
        """Why the program never started. The layer or the bootstrap saying so (an exit status
        of its own, a message) is a harness fault as it stands; a process killed by a signal,
        out of time before it started, or gone without a word of output was lost to something
        outside it (`ExecutionLost`: run once more)."""
        outputs = self.opened()
        stderr = outputs.text(outputs.stderr, limits.output_bytes, tail=True).strip()
        where = f"{layer.name} sandbox ({executor} executor)"
        if code is not None and code > 0:
            return SandboxError(f"{where} did not start: {stderr or f'exit status {code}'}")
        if timed_out:
            why = f"it had not started when the {limits.timeout:g} s limit ran out"
        elif code is not None and code < 0:
            why = f"its process was killed by {_signal_name(-code)} before the program started"
        else:
            why = f"its process ended (exit status {code}) before the program started"
        if not stderr:
            why += ", and left no output"
        return ExecutionLost(f"{where} lost the execution: {why}"
                             + (f"; it wrote: {stderr}" if stderr else ""))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class FreshSandbox:
    """A fresh interpreter per execution inside `layer`; see the module docstring."""

    executor = "fresh"

    def __init__(self, layer: Layer, limits: Limits | None = None,
                 cgroups: Cgroup | None = None, python: str = sys.executable) -> None:
        self.layer = layer
        self.limits = limits or Limits()
        self.cgroups = cgroups
        self.python = python
        self.readable: tuple[Path, ...] = ()  # harness folders executions read (caches)

    @property
    def network(self) -> str:
        return self.layer.network

    def shutdown(self) -> None:
        """Nothing outlives an execution here; present so every Sandbox can be shut down."""

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        limits = self.limits if timeout is None else replace(self.limits, timeout=timeout)
        root = temp_folder("run")
        execution = Execution(root, root)
        group = self.cgroups.child(self.limits.processes, self.limits.memory_bytes) \
            if self.cgroups else None
        try:
            self.prepare(execution, program)
            return self._run(execution, group, limits)
        finally:
            if group is not None:
                group.kill()
                group.remove()
            execution.close()
            shutil.rmtree(execution.root, ignore_errors=True)

    def prepare(self, execution: Execution, program: str) -> None:
        execution.prepare(program)

    def environment(self, box: str) -> dict[str, str]:
        """The variables the execution sees (`box`: its working folder inside the layer)."""
        return dict(SAFE_ENV, HOME=box, TMPDIR=box)

    def _run(self, execution: Execution, group: Cgroup | None, limits: Limits) -> Verdict:
        config = json.dumps(execution.config(self.layer, limits.rlimits())).encode()
        # The nonce travels through a pipe, not argv, so /proc/self/cmdline does not show it.
        read_end, write_end = os.pipe()
        os.write(write_end, config)
        os.close(write_end)
        box = execution.inside(self.layer, execution.box)
        env = self.environment(box)
        argv = self.layer.command([self.python, "-I", "-c", BOOTSTRAP, str(read_end)],
                                  execution.mount, execution.box, self.readable)
        started = time.monotonic()
        outputs = execution.opened()
        try:
            proc = subprocess.Popen(
                argv, cwd=execution.box, env=env, stdin=subprocess.DEVNULL,
                stdout=outputs.stdout, stderr=outputs.stderr, process_group=0,
                pass_fds=(read_end,),
                # Joined before exec, so nothing the candidate starts is outside the group.
                preexec_fn=(lambda: group.add(os.getpid())) if group else None)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
        finally:
            os.close(read_end)
        try:
            code: int | None = self.layer.exit_code(proc.wait(timeout=limits.timeout))
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
        finally:
            # Also reaps children the candidate left behind in its process group.
            signal_group(proc.pid, signal.SIGKILL)
            if group is not None:
                group.kill()
            proc.wait()
        return execution.verdict(code, timed_out, time.monotonic() - started, limits,
                                 self.layer, self.executor)


class ProcessSandbox(FreshSandbox):
    """A fresh interpreter in the process layer, without cgroups: the harness's first sandbox,
    kept for callers that build one directly."""

    def __init__(self, limits: Limits | None = None, python: str = sys.executable) -> None:
        super().__init__(ProcessLayer(python), limits, None, python)
