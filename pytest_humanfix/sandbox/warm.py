"""The warm executor: two long-lived interpreters per worker, each inside a layer of its own, that
have imported the prelude (numpy included) once and fork a fresh child for every execution: one
for the candidates' processes, one for the tests'. A child gets what a fresh interpreter gets
(folder, session, limits, network isolation, its descriptors). The harness puts each child in
its own cgroup before it runs a statement of its program, so the harness, never code the
candidate could tamper with, counts, bounds and kills what it starts; without writable cgroups,
`make_sandbox` keeps fresh interpreters. See docs/sandbox.md#the-warm-executor.
"""

from __future__ import annotations

import atexit
import itertools
import json
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..processes import signal_group, stop_group
from .cgroup import Cgroup
from .environment import ROLES, ExecutionLost, Job, Layer, Limits, SandboxError, Verdict
from .fresh import CANDIDATE_GRACE, ROLE_PROGRAMS, SAFE_ENV, Execution, memory_folder, temp_folder
from .inside import program
from .program import PRELUDE

START_SECONDS = 60.0  # importing the prelude on a cold disk
REPLY_SECONDS = 10.0  # for a reply that does not wait on candidate code

# The code every process of an execution runs before its program, the roles' programs, then
# the fork server (see inside/).
SERVER = program(*ROLE_PROGRAMS, "warm_server.py")


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _vanished(pid: int) -> bool:
    """The process is gone, or dead and not yet waited for (a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])


class ForkServer:
    """One fork server, inside `layer`, with `mount` its only writable folder: it forks a child
    per execution for one role."""

    def __init__(self, layer: Layer, python: str, home: Path, role: str) -> None:
        self.layer = layer
        self.python = python
        self.role = role
        self.log = home / f"{role}-server.log"
        self.mount = home / f"{role}-mount"
        self.mount.mkdir()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._ready = False  # the server said "ready" (see `launch`)
        self._child_asked = False  # "fork" sent, its "forked" not read yet
        self._chain: list[int] = []  # harness-side pids from the process we started to it

    @property
    def pids(self) -> set[int]:
        """The server and what holds it (bwrap and its init): the processes that stay."""
        return set(self._chain) if self._proc is not None else set()

    @property
    def resident_pids(self) -> set[int]:
        """The server, what holds it, and the child it forked for the next execution."""
        if self._proc is None or not self._chain:
            return set()
        return set(self._chain) | set(_children(self._chain[-1]))

    @property
    def launched(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def starting(self) -> bool:
        return self._proc is not None and not self._ready

    def launch(self) -> None:
        deathsig = "pdeathsig" if self.layer.name == "process" else "bwrap"
        argv = self.layer.command(
            [self.python, "-I", "-c", SERVER, self.layer.network, deathsig, PRELUDE],
            self.mount, self.mount)
        self._ready = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with self.log.open("wb") as log:
            try:
                # Its own session: Ctrl-C reaches the harness, which then stops the server.
                self._proc = subprocess.Popen(
                    argv, cwd=self.mount,
                    env=dict(SAFE_ENV, HOME=self.layer.inside(self.mount, self.mount)),
                    stdin=theirs.fileno(), stdout=log, stderr=log, start_new_session=True)
            except OSError as exc:
                ours.close()
                raise SandboxError(f"cannot start the warm executor: {exc}") from exc
            finally:
                theirs.close()
        self._control = ours

    def await_ready(self) -> None:
        if self._ready:
            return
        if self._receive(START_SECONDS) != b"ready":
            log_text = self.log.read_text(errors="replace").strip()
            self.close()
            raise SandboxError(f"the warm executor's {self.role} server did not start: "
                               f"{log_text[-500:] or '?'}")
        self._chain = self._find_server()
        self._ready = True
        self.ask_for_child()

    def ask_for_child(self) -> None:
        """Has the server fork the next execution's child now, without waiting for it."""
        try:
            self._send(b"fork")
            self._child_asked = True
        except OSError:
            self.close()  # gone: the next execution starts a new server

    def waiting_child(self) -> int:
        """The child forked for this execution, waiting for its configuration."""
        if self._proc is None:
            raise SandboxError("the server has stopped")
        if not self._child_asked:
            self._send(b"fork")
        self._child_asked = False
        if self._receive(REPLY_SECONDS) != b"forked":
            raise SandboxError(f"the {self.role} server did not fork a child")
        children = _children(self._chain[-1])
        if len(children) != 1:
            raise SandboxError(f"the {self.role} server has {len(children)} children, not 1")
        return children[0]

    def send_config(self, config: dict, fds: list[int]) -> None:
        assert self._control is not None
        socket.send_fds(self._control, [json.dumps(config).encode()], fds)

    def _find_server(self) -> list[int]:
        assert self._proc is not None
        paths = [[self._proc.pid]]
        while paths:
            path = paths.pop(0)
            if _cmdline(path[-1])[:3] == [self.python, "-I", "-c"]:
                return path
            paths.extend(path + [child] for child in _children(path[-1]))
        self.close()
        raise SandboxError("the warm executor started but its process cannot be found")

    def fileno(self) -> int:
        assert self._control is not None
        return self._control.fileno()

    def _receive(self, timeout: float) -> bytes | None:
        """The server's next packet, or None on timeout or when it has gone."""
        if self._control is None:
            return None
        if not select.select([self._control], [], [], max(timeout, 0))[0]:
            return None
        try:
            return self._control.recv(4096) or None
        except OSError:
            return None

    def exit_code(self, timeout: float) -> int | None:
        """The child's exit status from the server's answer, None if none came in time."""
        reply = self._receive(timeout)
        return None if reply is None else json.loads(reply)["exit_code"]

    def _send(self, data: bytes) -> None:
        if self._control is None:
            raise OSError("the server has stopped")
        self._control.send(data)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        control, self._control = self._control, None
        self._ready = self._child_asked = False
        if proc is not None:
            stop_group(proc)
        if control is not None:
            control.close()


class WarmSandbox:
    """Same interface and verdicts as `FreshSandbox`; one server per role per harness
    process."""

    executor = "warm"

    def __init__(self, layer: Layer, limits: Limits, cgroups: Cgroup,
                 python: str = sys.executable) -> None:
        self.layer = layer
        self.limits = limits
        self.cgroups = cgroups
        self.python = python
        self.home = temp_folder("warm", memory_folder() if cgroups.bounds_memory else None)
        self.servers = {role: ForkServer(layer, python, self.home, role) for role in ROLES}
        self._count = itertools.count()
        atexit.register(self.shutdown)

    @property
    def network(self) -> str:
        return self.layer.network

    @property
    def mount(self) -> Path:
        """The candidates' only writable folder: their executions' folders live in it."""
        return self.servers["candidate"].mount

    @property
    def server_pids(self) -> set[int]:
        """The servers and what holds them (bwrap and its init): the processes that stay."""
        return set().union(*(server.pids for server in self.servers.values()))

    @property
    def resident_pids(self) -> set[int]:
        """What stays between executions: the servers, what holds them, and the children
        they forked for the next execution once they have."""
        return set().union(*(server.resident_pids for server in self.servers.values()))

    def start(self) -> None:
        """Start the servers and wait until they have imported the prelude; SandboxError if
        not."""
        self.launch()
        self.await_ready()

    def launch(self) -> None:
        """Start the servers without waiting for them: they import the prelude while the
        harness goes on (an xdist worker collects meanwhile). `await_ready`, or the first
        `run`, waits."""
        for server in self.servers.values():
            server.launch()

    @property
    def launched(self) -> bool:
        """Both servers were started and have not gone (they may still be importing)."""
        return all(server.launched for server in self.servers.values())

    @property
    def starting(self) -> bool:
        """A server was launched and has not said "ready" yet, nor been waited for."""
        return any(server.starting for server in self.servers.values())

    def await_ready(self) -> None:
        """Waits for the launched servers' "ready"; SandboxError, the servers stopped, if not."""
        try:
            for server in self.servers.values():
                server.await_ready()
        except SandboxError:
            self.close()
            raise

    def run(self, job: Job, timeout: float | None = None) -> Verdict:
        limits = self.limits if timeout is None else replace(self.limits, timeout=timeout)
        if not self.launched:
            self.close()
            self.start()
        self.await_ready()
        number = str(next(self._count))
        execution = Execution({role: self.servers[role].mount for role in ROLES},
                              {role: self.servers[role].mount / number for role in ROLES})
        # The candidate's process alone gets a cgroup: the tests' run nothing but the dataset's
        # code, start no process, and end with their group (`stop_child`).
        group = self.cgroups.child(self.limits.processes, self.limits.memory_bytes)
        try:
            try:
                execution.prepare(job, self.home)
            except OSError as exc:  # a full /dev/shm, say: the harness's fault, not a verdict
                raise SandboxError(f"cannot make the execution's folders: {exc}") from exc
            verdict = self._run(execution, job, group, limits)
        except ExecutionLost:
            raise  # the servers answered for the lost children: they serve the next execution
        except BaseException:
            # Interrupted (pytest-timeout, Ctrl-C) mid-conversation: the servers' next replies
            # belong to this execution, so they must not serve another one.
            self.close()
            raise
        finally:
            group.kill()
            group.remove()
            execution.close()
            # Anything a process left in its shared folder goes, not only its own folder: a
            # link it planted at a later execution's name would lead the harness outside it.
            for server in self.servers.values():
                for entry in server.mount.iterdir():
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        entry.unlink(missing_ok=True)
        # Everything of this execution is gone: the next children may be forked.
        for server in self.servers.values():
            if server.launched:
                server.ask_for_child()
        return verdict

    def _run(self, execution: Execution, job: Job, group: Cgroup, limits: Limits) -> Verdict:
        channel = execution.opened()
        children: dict[str, int] = {}
        try:
            for role in ROLES:
                server = self.servers[role]
                config = execution.config(self.layer, role, job, limits.rlimits())
                config["env"] = dict(SAFE_ENV, HOME=config["cwd"], TMPDIR=config["cwd"])
                children[role] = server.waiting_child()
                if role == "candidate":
                    group.add(children[role])
                server.send_config(config, channel.fds[role])
                channel.sent(role)
            started = time.monotonic()
        except (OSError, SandboxError) as exc:
            # Before close() ends every child.
            lost = [child for child in children.values() if _vanished(child)]
            self.close()
            if lost:
                raise ExecutionLost(f"warm executor: its child {lost[0]} vanished before its "
                                    f"program started ({exc})") from exc
            raise SandboxError(f"warm executor: {exc}") from exc
        codes: dict[str, int | None] = dict.fromkeys(ROLES)
        tests, candidate = self.servers["tests"], self.servers["candidate"]
        codes["tests"] = tests.exit_code(limits.timeout)
        timed_out = codes["tests"] is None and tests.launched
        seconds = time.monotonic() - started
        if codes["tests"] is None:
            signal_group(children["tests"], signal.SIGKILL)
            codes["tests"] = tests.exit_code(REPLY_SECONDS) if timed_out else None
            if codes["tests"] is None:
                # The server is gone: start anew next time; this execution proved nothing.
                tests.close()
                codes["tests"] = -signal.SIGKILL
        if not timed_out:
            codes["candidate"] = candidate.exit_code(CANDIDATE_GRACE)
        if codes["candidate"] is None:
            group.kill()
            code = candidate.exit_code(REPLY_SECONDS)
            if code is None:
                candidate.close()  # the candidate may kill its server: start anew next time
        return execution.verdict(job, codes, timed_out, seconds, limits, self.layer,
                                 self.executor)

    def close(self) -> None:
        for server in self.servers.values():
            server.close()

    def shutdown(self) -> None:
        self.close()
        shutil.rmtree(self.home, ignore_errors=True)
