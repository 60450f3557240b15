"""The warm executor's fork server, run after `child.py` in the same program, inside the layer.

Arguments: the network mode, "pdeathsig" when the server must die with the harness (the process
layer; bwrap's --die-with-parent does it otherwise), and the prelude, imported once here so that
every child starts with it loaded. The line protocol with the harness is `serve`'s; why it forks
ahead: docs/sandbox.md#the-warm-executor.
"""

import atexit
import ctypes
import json
import os
import signal
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .child import isolate_network, limit, run

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def read_config(fd: int) -> dict[str, Any]:
    """The execution's configuration, sent once the harness has put this process in its cgroup
    (nothing at all when the harness went away first)."""
    with open(fd, "rb") as pipe:
        config: dict[str, Any] = json.loads(pipe.read())
    return config


def child(config_fd: int) -> NoReturn:
    code = 1
    try:
        cfg = read_config(config_fd)
        os.setsid()
        os.chdir(cfg["cwd"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, cfg["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, cfg["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            new = os.open(path, flags, 0o600)
            os.dup2(new, fd)
            os.close(new)
        os.closerange(3, 1 << 16)  # the control pipes above all
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        os.environ.clear()
        os.environ.update(cfg.pop("env"))
        limit(cfg.pop("rlimits"))
        run(cfg)
        code = 0
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        # What an interpreter does at its end: wait for the threads, run the exit handlers.
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # private, not in typeshed
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def serve(requests: TextIO, replies: TextIO) -> None:
    """One line each way: the server says "ready"; the harness asks for a child ("fork"); the
    server forks one, which waits for its configuration, and says "forked". The harness puts the
    child in the execution's cgroup and sends its configuration (JSON), which the server hands
    to the child, then answers {"exit_code": N} once the child has ended."""
    replies.write("ready\n")
    replies.flush()
    while requests.readline() == "fork\n":
        config_read, config_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            os.close(config_write)
            child(config_read)
        os.close(config_read)
        replies.write("forked\n")
        replies.flush()
        line = requests.readline()
        try:
            with open(config_write, "wb") as pipe:
                pipe.write(line.encode())
        except BrokenPipeError:
            pass  # the child was killed before it read: its exit status below says so
        line = ""  # the next child starts from this frame: nothing of this execution stays
        status = os.waitpid(pid, 0)[1]
        replies.write(json.dumps({"exit_code": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


isolate_network(sys.argv[1])
prctl = ctypes.CDLL(None).prctl
if sys.argv[2] == "pdeathsig":
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # die with the harness
# Not dumpable: a candidate without CAP_SYS_PTRACE cannot read or write this process's memory
# through ptrace or /proc/<pid>/mem, so it cannot tamper with the executions after its own.
prctl(PR_SET_DUMPABLE, 0)
exec(sys.argv[3], {})
atexit._clear()  # the children run the candidate's exit handlers, never ours
del sys.argv[1:]
requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
serve(requests, replies)
