"""What the harness makes for one execution before either process starts, and reads back after:
the two pipes between the tests and the candidate, a status pipe each, each process's program
and its stdout and stderr. None of it has a name in any folder: the output files are unlinked
temporary files and the programs memory files, handed to each process as descriptors, so no
process can reach the other's, and the harness reads nothing a candidate could have put at a
name (docs/sandbox.md#what-the-harness-reads-back).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .environment import Job

# The most a status pipe holds: "started", then the tests' "passed".
STATUS_BYTES = 64


def _file_text(fd: int, cap: int, tail: bool) -> str:
    size = os.fstat(fd).st_size
    if size <= cap:
        return os.pread(fd, size, 0).decode("utf-8", "replace")
    data = os.pread(fd, cap, size - cap if tail else 0).decode("utf-8", "replace")
    marker = f"[... {size - cap} bytes cut ...]"
    return f"{marker}\n{data}" if tail else f"{data}\n{marker}"


def _unnamed_file(folder: Path | None) -> int:
    """A temporary file that no name leads to (O_TMPFILE where the file system has it)."""
    with tempfile.TemporaryFile(dir=folder) as handle:
        return os.dup(handle.fileno())


def _memory_file(text: str) -> int:
    fd = os.memfd_create("humanfix-program")
    data = memoryview(text.encode("utf-8"))
    while data:
        data = data[os.write(fd, data):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class Channel:
    """The descriptors of one execution (see the module docstring); `fds(role)` lists what the
    process of `role` gets, in the order `inside/child.py` puts them at (stdout, stderr, calls
    in, calls out, status, program). `sent(role)` closes the harness's copies once that process
    has them; `close` closes the rest."""

    def __init__(self, job: Job, folder: Path | None = None) -> None:
        self.fds: dict[str, list[int]] = {}
        self.kept: dict[str, dict[str, int]] = {}
        opened: list[int] = []
        try:
            calls = os.pipe()  # the tests write, the candidate reads
            answers = os.pipe()  # the candidate writes, the tests read
            opened += [*calls, *answers]
            ends = {"candidate": (calls[0], answers[1]), "tests": (answers[0], calls[1])}
            for role in job.roles:
                status_read, status_write = os.pipe()
                opened += [status_read, status_write]
                stdout, stderr = _unnamed_file(folder), _unnamed_file(folder)
                program = _memory_file(job.side(role).program)
                opened += [stdout, stderr, program]
                self.fds[role] = [stdout, stderr, *ends[role], status_write, program]
                self.kept[role] = {"stdout": stdout, "stderr": stderr, "status": status_read}
        except BaseException:
            for fd in opened:
                os.close(fd)
            raise
        self._open = set(opened)

    def sent(self, role: str) -> None:
        """The process of `role` holds its descriptors: the harness keeps only what it reads."""
        keep = set(self.kept[role].values())
        for fd in self.fds[role]:
            if fd not in keep and fd in self._open:
                os.close(fd)
                self._open.discard(fd)

    def status(self, role: str) -> bytes:
        """What the process of `role` wrote on its status pipe; every writer must be gone."""
        fd = self.kept[role]["status"]
        os.set_blocking(fd, False)
        data = b""
        try:
            while len(data) < STATUS_BYTES:
                chunk = os.read(fd, STATUS_BYTES - len(data))
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass  # a writer still holds it (a process that outlived its group): what came
        return data

    def text(self, role: str, stream: str, cap: int) -> str:
        """The process's stdout or stderr, cut to `cap` bytes (stderr keeps its end)."""
        return _file_text(self.kept[role][stream], cap, tail=stream == "stderr")

    def size(self, role: str, stream: str) -> int:
        return os.fstat(self.kept[role][stream]).st_size

    def close(self) -> None:
        for fd in self._open:
            os.close(fd)
        self._open = set()
