"""Run an execution, the candidate and the tests in two processes, isolated from the harness and
from each other, each a fresh interpreter (the warm executor's children reuse this path's
folders, limits and verdict). Each process gets its own folder, mount and process group, stdin
closed, an environment without secrets, rlimits before any program, capped output and no
network; they share only the two pipes of the calls, and a pass is the tests' own word, written
where only the harness reads (docs/sandbox.md#the-tests-and-the-candidate-apart).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..processes import signal_group
from .cgroup import Cgroup
from .environment import ROLES, ExecutionLost, Job, Layer, Limits, SandboxError, Verdict
from .inside import program
from .layers import ProcessLayer
from .outputs import Channel

# What a process writes on its status pipe (inside/child.py): once its program may begin, and,
# the tests only, once their last line has run.
STARTED, PASSED = b"started\n", b"passed\n"

# What every process of an execution runs: the code before any program, the calls' wire, each
# role's program, then (in a fresh interpreter) the bootstrap that reads its configuration from
# a pipe (see inside/).
ROLE_PROGRAMS = ("descriptors.py", "child.py", "wire.py", "answer.py", "tests.py",
                 "toolchain.py")
BOOTSTRAP = program(*ROLE_PROGRAMS, "bootstrap.py")
# How long the candidate's process may take to end once the tests have ended (it reads the end
# of their calls and returns); then it is killed.
CANDIDATE_GRACE = 0.5

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
    """One execution's folders on the harness's side: each role's `mount` (the folder its layer
    makes writable) and working folder `box` in it, and the descriptors of `channel`."""

    mounts: dict[str, Path]
    boxes: dict[str, Path]
    channel: Channel | None = None

    @classmethod
    def under(cls, root: Path) -> Execution:
        """A fresh interpreter's folders: a mount of its own for each role, in `root`."""
        mounts = {role: root / role for role in ROLES}
        return cls(mounts, {role: mounts[role] / "box" for role in ROLES})

    def inside(self, layer: Layer, role: str, path: Path) -> str:
        return layer.inside(path, self.mounts[role])

    def prepare(self, job: Job, folder: Path | None = None) -> None:
        # Made here, never through a link or a file left at its name (mkdir refuses anything
        # already there).
        for role in job.roles:
            self.mounts[role].mkdir(exist_ok=True)
            self.boxes[role].mkdir()
        self.channel = Channel(job, folder)

    def opened(self) -> Channel:
        if self.channel is None:
            raise SandboxError("the execution's descriptors were never made (prepare)")
        return self.channel

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()

    def config(self, layer: Layer, role: str, job: Job, rlimits: dict) -> dict:
        """What the code before a role's program needs, paths as seen inside the layer."""
        side = job.side(role)
        return {"network": layer.network, "rlimits": rlimits,
                "role": role, "name": side.name,
                "steps": side.steps, "entry_point": job.entry_point,
                "cwd": self.inside(layer, role, self.boxes[role])}

    def verdict(self, job: Job, codes: dict[str, int | None], timed_out: bool, seconds: float,
                limits: Limits, layer: Layer, executor: str) -> Verdict:
        channel = self.opened()
        roles = job.roles
        started = {role: channel.status(role) for role in roles}
        passed = started[roles[-1]] == STARTED + PASSED
        for role in roles:
            # A process that never began its program was lost, or its layer failed: nothing
            # about the candidate is known. Once the candidate began, all that follows is its
            # doing; a pass needs the tests to have begun and ended.
            if not started[role].startswith(STARTED) and not passed:
                raise self.not_started(role, codes[role], timed_out, limits, layer, executor)
        cap = limits.output_bytes
        stdout = {role: channel.text(role, "stdout", cap) for role in ("candidate", "tests")
                  if role in roles}
        stderr = {role: channel.text(role, "stderr", cap) for role in ("tests", "candidate")
                  if role in roles}
        if timed_out:
            status = "timeout"
        elif passed and job.silent and any([*stdout.values(), *stderr.values()]):
            status = "failed"
            stderr["tests"] = _joined(stderr["tests"], "AssertionError: the program wrote "
                                      "output, which fails the tests (any output is a failed "
                                      "console.assert)\n")
        else:
            status = "passed" if passed else "failed"
        # The tests' stderr first: what the candidate raised or said last is shown first.
        return Verdict(status=status, exit_code=codes["candidate"], seconds=round(seconds, 4),
                       stdout=_joined(*stdout.values()), stderr=_joined(*stderr.values()),
                       network=layer.network, layer=layer.name, executor=executor,
                       limit=limits.timeout, output_limited=max(
                           channel.size(role, stream) for role in roles
                           for stream in ("stdout", "stderr")) >= limits.file_bytes)

    def not_started(self, role: str, code: int | None, timed_out: bool, limits: Limits,
                    layer: Layer, executor: str) -> SandboxError:
        """Why the process of `role` never began its program. The layer or the bootstrap
        saying so (an exit status of its own, a message) is a harness fault as it stands; a
        process killed by a signal, out of time before it began, or gone without a word of
        output was lost to something outside it (`ExecutionLost`: run once more)."""
        stderr = self.opened().text(role, "stderr", limits.output_bytes).strip()
        where = f"{layer.name} sandbox ({executor} executor), {role} process,"
        if code is not None and code > 0:
            return SandboxError(f"{where} did not start: {stderr or f'exit status {code}'}")
        if timed_out:
            why = f"it had not started when the {limits.timeout:g} s limit ran out"
        elif code is not None and code < 0:
            why = f"it was killed by {_signal_name(-code)} before its program began"
        else:
            why = f"it ended (exit status {code}) before its program began"
        if not stderr:
            why += ", and left no output"
        return ExecutionLost(f"{where} was lost: {why}" + (f"; it wrote: {stderr}" if stderr
                                                            else ""))


def _joined(*texts: str) -> str:
    """The texts one after the other, each on lines of its own."""
    joined = ""
    for text in texts:
        joined += ("\n" if joined and text and not joined.endswith("\n") else "") + text
    return joined


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class FreshSandbox:
    """A fresh interpreter for each process of each execution inside `layer`; see the module
    docstring."""

    executor = "fresh"

    def __init__(self, layer: Layer, limits: Limits | None = None,
                 cgroups: Cgroup | None = None, python: str = sys.executable) -> None:
        self.layer = layer
        self.limits = limits or Limits()
        self.cgroups = cgroups
        self.python = python
        self.readable: tuple[Path, ...] = ()  # harness folders executions read (caches)
        # Harness folders only the tests' processes read (what the harness built from them).
        self.tests_readable: tuple[Path, ...] = ()

    @property
    def network(self) -> str:
        return self.layer.network

    def shutdown(self) -> None:
        """Nothing outlives an execution here; present so every Sandbox can be shut down."""

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        limits = self.limits if timeout is None else replace(self.limits, timeout=timeout)
        root = temp_folder("run")
        execution = Execution.under(root)
        # The candidate's process alone gets a cgroup: the tests' run nothing but the dataset's
        # code, start no process, and end with their process group.
        groups = {role: self.cgroups.child(self.limits.processes, self.limits.memory_bytes)
                  if self.cgroups and role == "candidate" else None for role in job.roles}
        try:
            self.prepare(execution, job)
            return self._run(execution, job, groups, limits)
        finally:
            for group in groups.values():
                if group is not None:
                    group.kill()
                    group.remove()
            execution.close()
            shutil.rmtree(root, ignore_errors=True)

    def prepare(self, execution: Execution, job: Job) -> None:
        execution.prepare(job, execution.mounts["tests"].parent)

    def environment(self, box: str) -> dict[str, str]:
        """The variables a process sees (`box`: its working folder inside the layer)."""
        return dict(SAFE_ENV, HOME=box, TMPDIR=box)

    def _start(self, execution: Execution, job: Job, role: str, group: Cgroup | None,
               limits: Limits) -> subprocess.Popen[bytes]:
        channel = execution.opened()
        fds = channel.fds[role]
        config = execution.config(self.layer, role, job, limits.rlimits())
        config["fds"] = [1, 2, *fds[2:]]
        read_end, write_end = os.pipe()
        os.write(write_end, json.dumps(config).encode())
        os.close(write_end)
        box = execution.boxes[role]
        readable = self.readable + (self.tests_readable if role == "tests" else ())
        argv = self.layer.command([self.python, "-I", "-c", BOOTSTRAP, str(read_end)],
                                  execution.mounts[role], box, readable)
        try:
            return subprocess.Popen(
                argv, cwd=box, env=self.environment(config["cwd"]), stdin=subprocess.DEVNULL,
                stdout=fds[0], stderr=fds[1], process_group=0, pass_fds=(read_end, *fds[2:]),
                # Joined before exec, so nothing the process starts is outside the group.
                preexec_fn=(lambda: group.add(os.getpid())) if group else None)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
        finally:
            os.close(read_end)
            channel.sent(role)

    def _run(self, execution: Execution, job: Job, groups: dict[str, Cgroup | None],
             limits: Limits) -> Verdict:
        started = time.monotonic()
        procs: dict[str, subprocess.Popen[bytes]] = {}
        codes: dict[str, int | None] = dict.fromkeys(job.roles)
        judge = job.roles[-1]  # the process whose end is the tests' end
        timed_out = False
        try:
            for role in job.roles:
                procs[role] = self._start(execution, job, role, groups[role], limits)
            try:
                codes[judge] = self.layer.exit_code(procs[judge].wait(timeout=limits.timeout))
            except subprocess.TimeoutExpired:
                timed_out = True
            seconds = time.monotonic() - started
            if not timed_out and judge != "candidate":
                try:
                    codes["candidate"] = self.layer.exit_code(
                        procs["candidate"].wait(timeout=CANDIDATE_GRACE))
                except subprocess.TimeoutExpired:
                    pass  # its answers are all the tests wanted of it
        finally:
            for role, proc in procs.items():
                # Also reaps what the process left behind in its process group.
                signal_group(proc.pid, signal.SIGKILL)
                group = groups[role]
                if group is not None:
                    group.kill()
                proc.wait()
        return execution.verdict(job, codes, timed_out, seconds, limits, self.layer,
                                 self.executor)


class ProcessSandbox(FreshSandbox):
    """A fresh interpreter in the process layer, without cgroups: the harness's first sandbox,
    kept for callers that build one directly."""

    def __init__(self, limits: Limits | None = None, python: str = sys.executable) -> None:
        super().__init__(ProcessLayer(python), limits, None, python)
