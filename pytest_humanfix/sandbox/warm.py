"""The warm executor: one long-lived interpreter per worker, inside the sandbox layer, that has
imported the prelude (numpy included) once and forks a fresh child for every execution, which
gets what a fresh interpreter gets (folder, session, limits, network isolation, nonce proof).
The harness puts each child in its own cgroup before it runs a candidate statement, so the
harness, never code the candidate could tamper with, counts, bounds and kills what it starts;
without writable cgroups, `make_sandbox` keeps fresh interpreters.
See docs/sandbox.md#the-warm-executor.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..processes import stop_group
from .cgroup import Cgroup
from .environment import ExecutionLost, Layer, Limits, SandboxError, Verdict
from .fresh import SAFE_ENV, Execution, memory_folder, temp_folder
from .inside import program
from .program import PRELUDE

START_SECONDS = 60.0  # importing the prelude on a cold disk
REPLY_SECONDS = 10.0  # for a reply that does not wait on candidate code

# The code every execution runs before the candidate, then the fork server (see inside/).
SERVER = program("child.py", "warm_server.py")


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


class WarmSandbox:
    """Same interface and verdicts as `FreshSandbox`; one server per harness process."""

    executor = "warm"

    def __init__(self, layer: Layer, limits: Limits, cgroups: Cgroup,
                 python: str = sys.executable) -> None:
        self.layer = layer
        self.limits = limits
        self.cgroups = cgroups
        self.python = python
        self.home = temp_folder("warm", memory_folder() if cgroups.bounds_memory else None)
        # The only folder the layer makes writable: the executions' folders live in it.
        self.mount = self.home / "humanfix-mount"
        self.mount.mkdir()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False  # the server said "ready" (see `launch`)
        self._child_asked = False  # "fork" sent, its "forked" not read yet
        self._chain: list[int] = []  # harness-side pids from the child we started to the server
        self._buffer = b""
        self._count = itertools.count()
        atexit.register(self.shutdown)

    @property
    def network(self) -> str:
        return self.layer.network

    @property
    def server_pids(self) -> set[int]:
        """The server and what holds it (bwrap and its init): the processes that stay."""
        return set(self._chain) if self._proc is not None else set()

    @property
    def resident_pids(self) -> set[int]:
        """What stays between executions: the server, what holds it, and the child it forked
        for the next execution once it has."""
        if self._proc is None or not self._chain:
            return set()
        return set(self._chain) | set(_children(self._chain[-1]))

    def start(self) -> None:
        """Start the server and wait until it has imported the prelude; SandboxError if not."""
        self.launch()
        self.await_ready()

    def launch(self) -> None:
        """Start the server without waiting for it: it imports the prelude while the harness
        goes on (an xdist worker collects meanwhile). `await_ready`, or the first `run`, waits."""
        deathsig = "pdeathsig" if self.layer.name == "process" else "bwrap"
        argv = self.layer.command(
            [self.python, "-I", "-c", SERVER, self.layer.network, deathsig, PRELUDE],
            self.mount, self.mount)
        self._buffer = b""
        self._ready = False
        with (self.home / "server.log").open("wb") as log:
            try:
                # Its own session: Ctrl-C reaches the harness, which then stops the server.
                self._proc = subprocess.Popen(
                    argv, cwd=self.mount,
                    env=dict(SAFE_ENV, HOME=self.layer.inside(self.mount, self.mount)),
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    start_new_session=True)
            except OSError as exc:
                raise SandboxError(f"cannot start the warm executor: {exc}") from exc

    @property
    def launched(self) -> bool:
        """A server was started and has not gone (it may still be importing the prelude)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def starting(self) -> bool:
        """A server was launched and has not said "ready" yet, nor been waited for."""
        return self._proc is not None and not self._ready

    def await_ready(self) -> None:
        """Waits for the launched server's "ready"; SandboxError, the server stopped, if not."""
        if self._ready:
            return
        if self._read_line(START_SECONDS) != "ready":
            log_text = (self.home / "server.log").read_text(errors="replace").strip()
            self.close()
            raise SandboxError(f"the warm executor did not start: {log_text[-500:] or '?'}")
        self._chain = self._find_server()
        self._ready = True
        self._ask_for_child()

    def _ask_for_child(self) -> None:
        """Has the server fork the next execution's child now, without waiting for it."""
        try:
            self._send("fork")
            self._child_asked = True
        except OSError:
            self.close()  # gone: the next execution starts a new server

    def _waiting_child(self) -> int:
        """The child forked for this execution, waiting for its configuration."""
        if self._proc is None:
            raise SandboxError("the server has stopped")
        if not self._child_asked:
            self._send("fork")
        self._child_asked = False
        if self._read_line(REPLY_SECONDS) != "forked":
            raise SandboxError("the server did not fork a child")
        children = _children(self._chain[-1])
        if len(children) != 1:
            raise SandboxError(f"the server has {len(children)} children, not 1")
        return children[0]

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

    def _read_line(self, timeout: float) -> str | None:
        """The server's next reply line, or None on timeout or when it has gone."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def _send(self, text: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(text.encode() + b"\n")
        self._proc.stdin.flush()

    def run(self, program: str, timeout: float | None = None) -> Verdict:
        limits = self.limits if timeout is None else replace(self.limits, timeout=timeout)
        if not self.launched:
            self.start()
        self.await_ready()
        if self._proc is None:  # it went while the next child was asked for
            self.start()
        execution = Execution(self.mount / str(next(self._count)), self.mount)
        group = self.cgroups.child(self.limits.processes, self.limits.memory_bytes)
        try:
            try:
                execution.prepare(program)
            except OSError as exc:  # a full /dev/shm, say: the harness's fault, not a verdict
                raise SandboxError(f"cannot write the program: {exc}") from exc
            verdict = self._run(execution, group, limits)
        except ExecutionLost:
            raise  # the server answered for the lost child: it serves the next execution
        except BaseException:
            # Interrupted (pytest-timeout, Ctrl-C) mid-conversation: the server's next replies
            # belong to this execution, so it must not serve another one.
            self.close()
            raise
        finally:
            group.kill()
            group.remove()
            execution.close()
            # Anything a candidate left in the shared folder goes, not only its own folder: a
            # link it planted at a later execution's name would lead the harness outside it.
            for entry in self.mount.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        # Everything of this execution is gone: the next child may be forked.
        if self._proc is not None:
            self._ask_for_child()
        return verdict

    def _run(self, execution: Execution, group: Cgroup, limits: Limits) -> Verdict:
        box = execution.inside(self.layer, execution.box)
        config = execution.config(self.layer, limits.rlimits())
        config.update(cwd=box, env=dict(SAFE_ENV, HOME=box, TMPDIR=box),
                      stdout=execution.inside(self.layer, execution.stdout),
                      stderr=execution.inside(self.layer, execution.stderr))
        child = None
        try:
            child = self._waiting_child()
            group.add(child)
            started = time.monotonic()
            self._send(json.dumps(config))
        except (OSError, SandboxError) as exc:
            lost = child is not None and _vanished(child)  # before close() ends every child
            self.close()
            if lost:
                raise ExecutionLost(f"warm executor: its child {child} vanished before the "
                                    f"program started ({exc})") from exc
            raise SandboxError(f"warm executor: {exc}") from exc
        reply = self._read_line(limits.timeout)
        timed_out = reply is None and self._proc is not None and self._proc.poll() is None
        if reply is None:
            group.kill()
            reply = self._read_line(REPLY_SECONDS) if timed_out else None
        seconds = time.monotonic() - started
        if reply is None:
            # The server is gone (the candidate may kill its parent): start anew next time,
            # and judge this execution as killed; it proved nothing.
            self.close()
            code: int | None = -signal.SIGKILL
        else:
            code = None if timed_out else json.loads(reply)["exit_code"]
        return execution.verdict(code, timed_out, seconds, limits, self.layer,
                                 self.executor)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = self._child_asked = False
        if proc is not None:
            stop_group(proc)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def shutdown(self) -> None:
        self.close()
        shutil.rmtree(self.home, ignore_errors=True)
