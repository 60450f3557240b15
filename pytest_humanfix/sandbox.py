"""Run a candidate program against a task's tests, isolated from the harness.

Every execution is a fresh `python -I` process in its own temporary folder and process group,
with stdin closed, an environment that carries no secrets, rlimits set by a bootstrap before any
candidate code runs, output captured to a cap, and no network: a new network namespace where the
kernel lets us make one, else a guard that makes `socket` refuse to connect.

The verdict needs proof that the test code ran to its end: the bootstrap writes a one-time nonce
to a file after the program returns, so exiting with status 0 early is never a pass. (Code that
sets out to forge that proof from inside the same process can; the bwrap layer is the answer.)
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

# The imports the BigCode evaluation harness puts before every Python candidate (IMPORT_HELPER).
PRELUDE = "\n".join([
    "import math",
    "import re",
    "import sys",
    "import copy",
    "import datetime",
    "import itertools",
    "import collections",
    "import heapq",
    "import statistics",
    "import functools",
    "import hashlib",
    "import numpy",
    "import numpy as np",
    "import string",
    "from typing import *",
    "from collections import *",
])

PROGRAM_NAME = "program.py"
DONE_NAME = ".humanfix-done"
SANDBOX_FAULT_EXIT = 113  # the bootstrap could not set up isolation: a harness fault

# Runs first in the sandboxed interpreter, before any candidate code.
BOOTSTRAP = r"""
import json, os, resource, sys
with os.fdopen(int(sys.argv[1]), encoding="utf-8") as _pipe:
    cfg = json.load(_pipe)
del sys.argv[1:]
def _fault(message):
    sys.stderr.write("humanfix sandbox: " + message + "\n")
    os._exit(%(fault)d)
if cfg["network"] == "namespace":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0 and libc.unshare(0x10000000 | 0x40000000) != 0:
        _fault("cannot create a network namespace (errno %%d)" %% ctypes.get_errno())
else:
    import socket
    def _refuse(*args, **kwargs):
        raise OSError(101, "network is disabled in the humanfix sandbox")
    for _name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, _name, _refuse)
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse
for _name, (_soft, _hard) in cfg["rlimits"].items():
    try:
        resource.setrlimit(getattr(resource, _name), (_soft, _hard))
    except (ValueError, OSError) as exc:
        _fault("cannot set %%s: %%s" %% (_name, exc))
_done, _nonce = cfg["done"], cfg["nonce"]
del cfg
with open(%(program)r, encoding="utf-8") as _f:
    _code = compile(_f.read(), %(program)r, "exec")
exec(_code, {"__name__": "__main__", "__builtins__": __builtins__})
with open(_done, "w") as _f:
    _f.write(_nonce)
""" % {"fault": SANDBOX_FAULT_EXIT, "program": PROGRAM_NAME}

# Variables the candidate sees; nothing else of the harness's environment crosses over.
_SAFE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class SandboxError(Exception):
    """The sandbox could not run the program at all: a harness fault, never 'not fixed'."""


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


@dataclass
class Verdict:
    """What one execution showed. `status` is passed, failed, timeout or exited_early."""

    status: str
    exit_code: int | None
    seconds: float
    stdout: str
    stderr: str
    network: str
    layer: str = "process"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def first_failure(self) -> str:
        return first_failure(self)

    def to_dict(self) -> dict:
        return asdict(self)


def first_failure(verdict: Verdict) -> str:
    """One or two lines a person reads first: the failing statement and the exception."""
    if verdict.status == "timeout":
        return f"timed out after {verdict.seconds:.1f} s (sandbox wall-clock limit)"
    if verdict.status == "exited_early":
        return ("the program exited with status 0 before the tests ran to their end "
                "(sys.exit or os._exit in the candidate?)")
    lines = [line for line in verdict.stderr.splitlines() if line.strip()]
    exception = next((l for l in reversed(lines) if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b|^\w+Error", l)), None)
    if exception is None:
        code = verdict.exit_code
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            hint = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)",
                    "SIGKILL": " (killed)", "SIGSEGV": " (crash, e.g. stack overflow)"}.get(name, "")
            return f"killed by {name}{hint}"
        return lines[-1] if lines else f"exit status {code} with no error output"
    index = lines.index(exception)
    statement = ""
    for previous in reversed(lines[:index]):
        if previous.startswith("    ") and not previous.lstrip().startswith(("^", "~")):
            statement = previous.strip()
            break
        if previous.lstrip().startswith("File "):
            break
    return f"{statement}\n{exception}" if statement else exception


def build_program(code: str, test: str, test_setup: str = "") -> str:
    """The program the BigCode harness runs: prelude, candidate, then the task's test."""
    candidate = (PRELUDE + "\n" + code).strip()
    return candidate + "\n" + (test_setup + "\n" if test_setup else "") + test + "\n"


@functools.cache
def network_mode(python: str = sys.executable) -> str:
    """'namespace' if this machine lets a process make its own network namespace, else 'guard'."""
    probe = ("import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
             "sys.exit(0 if libc.unshare(0x40000000) == 0 "
             "or libc.unshare(0x10000000 | 0x40000000) == 0 else 1)")
    try:
        done = subprocess.run([python, "-I", "-c", probe], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "guard"
    return "namespace" if done.returncode == 0 else "guard"


def _read_capped(path: Path, cap: int, tail: bool) -> str:
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size <= cap:
            handle.seek(0)
            data = handle.read()
            return data.decode("utf-8", "replace")
        handle.seek(size - cap if tail else 0)
        data = handle.read(cap).decode("utf-8", "replace")
    marker = f"[... {size - cap} bytes cut ...]"
    return f"{marker}\n{data}" if tail else f"{data}\n{marker}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ProcessSandbox:
    """Fresh interpreter per execution; see the module docstring for what it isolates."""

    layer = "process"

    def __init__(self, limits: Limits | None = None, python: str = sys.executable) -> None:
        self.limits = limits or Limits()
        self.python = python
        self.network = network_mode(python)

    def describe(self) -> str:
        net = ("own network namespace" if self.network == "namespace"
               else "socket guard (no network namespace allowed here)")
        return f"{self.layer} sandbox, network: {net}"

    def run(self, program: str) -> Verdict:
        workdir = Path(tempfile.mkdtemp(prefix="humanfix-"))
        try:
            return self._run_in(workdir, program)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run_in(self, workdir: Path, program: str) -> Verdict:
        box = workdir / "box"
        box.mkdir()
        (box / PROGRAM_NAME).write_text(program, encoding="utf-8")
        nonce = secrets.token_hex(16)
        config = json.dumps({"network": self.network, "rlimits": self.limits.rlimits(),
                             "done": str(box / DONE_NAME), "nonce": nonce}).encode()
        # The nonce travels through a pipe, not argv, so /proc/self/cmdline does not show it.
        read_end, write_end = os.pipe()
        os.write(write_end, config)
        os.close(write_end)
        env = dict(_SAFE_ENV, HOME=str(box), TMPDIR=str(box))
        out_path, err_path = workdir / "stdout", workdir / "stderr"
        started = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                proc = subprocess.Popen(
                    [self.python, "-I", "-c", BOOTSTRAP, str(read_end)], cwd=box, env=env,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, process_group=0,
                    pass_fds=(read_end,))
            except OSError as exc:
                raise SandboxError(f"cannot start {self.python}: {exc}") from exc
            finally:
                os.close(read_end)
            try:
                code: int | None = proc.wait(timeout=self.limits.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                code = None
            finally:
                # Also reaps children the candidate left behind in its process group.
                _kill_group(proc.pid)
                proc.wait()
        seconds = time.monotonic() - started
        stderr = _read_capped(err_path, self.limits.output_bytes, tail=True)
        if code == SANDBOX_FAULT_EXIT and "humanfix sandbox:" in stderr:
            raise SandboxError(stderr.strip())
        done = box / DONE_NAME
        proven = done.is_file() and done.read_text(errors="replace") == nonce
        if timed_out:
            status = "timeout"
        elif code == 0:
            status = "passed" if proven else "exited_early"
        else:
            status = "failed"
        return Verdict(status=status, exit_code=code, seconds=round(seconds, 4),
                       stdout=_read_capped(out_path, self.limits.output_bytes, tail=False),
                       stderr=stderr, network=self.network, layer=self.layer)
