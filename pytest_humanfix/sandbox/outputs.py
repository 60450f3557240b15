"""The files an execution leaves for the harness, read only through descriptors the harness
opened before the candidate started: its stdout and stderr files, and its working folder, in
which the started and done files are opened without following a link, never a named pipe nor
more bytes than asked. Whatever the candidate put at those names instead (a link, a pipe, a
socket, an oversized, unreadable or another file) is an attack on the harness, named in the
verdict's `attack` (docs/sandbox.md#files-the-harness-reads-back).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

STDOUT_NAME = "stdout"
STDERR_NAME = "stderr"
# Opened here, never through a link or at a name something already holds.
NEW_FILE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A pipe opened for reading would wait for a writer; non-blocking, it opens and fstat tells.
SMALL_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


class Outputs:
    """Made by `Execution.prepare` with the execution's folder `root` and working folder `box`
    in place: the candidate's stdout and stderr go to the files opened here."""

    def __init__(self, root: Path, box: Path) -> None:
        self.paths = {STDOUT_NAME: root / STDOUT_NAME, STDERR_NAME: root / STDERR_NAME,
                      "working folder": box}
        self.fds: dict[str, int] = {}
        self.attacks: list[str] = []
        try:
            for name in (STDOUT_NAME, STDERR_NAME):
                self.fds[name] = os.open(self.paths[name], NEW_FILE, 0o600)
            self.fds["working folder"] = os.open(box, FOLDER)
        except BaseException:
            self.close()
            raise

    @property
    def stdout(self) -> int:
        return self.fds[STDOUT_NAME]

    @property
    def stderr(self) -> int:
        return self.fds[STDERR_NAME]

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def text(self, fd: int, cap: int, tail: bool) -> str:
        """The file's text, cut to `cap` bytes, with a line saying how much was cut."""
        size = self.size(fd)
        if size <= cap:
            return os.pread(fd, size, 0).decode("utf-8", "replace")
        data = os.pread(fd, cap, size - cap if tail else 0).decode("utf-8", "replace")
        marker = f"[... {size - cap} bytes cut ...]"
        return f"{marker}\n{data}" if tail else f"{data}\n{marker}"

    def small_file(self, name: str, cap: int) -> str | None:
        """The text of the working folder's file `name`, None where there is none. A link, a
        pipe, anything but a regular file, one over `cap` bytes, or a name that cannot be
        opened at all (a socket there, the file or the folder made unreadable) is not read: an
        attack, since an error escaping here would drop the task from pass@1."""
        try:
            fd = os.open(name, SMALL_FILE, dir_fd=self.fds["working folder"])
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.attacks.append(f"{name} is a symbolic link" if exc.errno == errno.ELOOP
                                else f"{name} cannot be opened: {exc.strerror}")
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.attacks.append(f"{name} is {_kind(info.st_mode)}")
                return None
            if info.st_size > cap:
                self.attacks.append(f"{name} holds {info.st_size} bytes, more than the {cap} "
                                    "the harness reads")
                return None
            return os.pread(fd, cap, 0).decode("utf-8", "replace")
        finally:
            os.close(fd)

    def check_replaced(self) -> None:
        """An attack for each of the harness's files that its name no longer leads to (the
        harness reads its own descriptors whatever the name holds; gone is no attack)."""
        for name, fd in self.fds.items():
            try:
                now = os.lstat(self.paths[name])
            except FileNotFoundError:
                continue
            opened = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                self.attacks.append(f"its {name} was replaced with {_kind(now.st_mode)}")

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
